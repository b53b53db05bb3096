"""Step times for the simulator: a small `StepModel` interface, built from the roofline pass, and a
table of it computed up front so the event loop does no heavy work per iteration.

A StepModel is any callable `step_model(batch, tokens, context) -> seconds` over broadcasting
arrays: `batch` sequences in the pass, `tokens` new tokens in the pass (decode: = batch; a mixed
pass adds prefill tokens), `context` mean tokens already cached per sequence. Provided:

- `EngineStep`: the pass engine (engine.step_time, step times only) as a pass of L = tokens/batch tokens
  per sequence on top of `context` cached tokens (L = 1 is exactly a decode step) for one replica of a
  layout, pure or realistic [S 00:02:37, 01:42:00]. `RooflineStep` (perfect sharding, explicit
  efficiency: what `roofline step` without a layout computes) and `EfficiencyModelStep` (the family's
  factors, the GPUs as one TP group: `roofline simulate --realistic`) are two ways to build one.
- `BoardStep`: the lecture's idealised board, lecture.step_time (KV, attention, MoE routing ignored
  unless given) — used to reproduce the lecture's fast-mode numbers (T15).
- `ConstantStep`: a fixed step time, the lecture's "pick B, the step takes 20 ms" (T05).

`tabulate()` evaluates a StepModel once, vectorised, on a grid batch × (tokens/batch) × context and
returns a `StepTable` whose scalar lookup interpolates linearly (the roofline is piecewise linear in
batch and context, so linear interpolation is exact away from the max() kink cells). What the table
ignores: a mixed pass is represented by its mean context and mean tokens per sequence (the same
approximation roofline.step makes for a prefill pass).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass, field, replace

import numpy as np

from .. import lecture
from .. import model as M
from ..efficiency import Efficiency
from ..engine import combine, step_time
from ..errors import DoesNotFitError, InputError, require_positive
from ..hardware import System
from ..hardware import usd_per_gpu_hour as resolve_price
from ..layout import Layout, check_tensor_parallel, sequence_slots, validate
from ..memory import DEFAULT_USABLE_MEMORY, kv_capacity_tokens


@dataclass(frozen=True)
class EngineStep:
    """The pass engine as a StepModel (engine.step_time: step seconds only, the table's path): a pass of
    L = tokens/batch tokens per sequence on `context` cached tokens (L = 1 is one decode loop) of one
    replica of `layout` (None: the lecture's perfect sharding over the system's GPUs), pure roofline with
    `efficiency` or the family's factors with `realistic`. With fewer sequences in a pass than the layout's
    sequence slots (dp·pp, times tp with attention sharded by batch: layout.sequence_slots) the busiest group
    still holds one, so the time is that of that many sequences (idle groups are not faster). Ignores uneven
    micro-batches (b not a multiple of the slots).

    `kernels="tables"` (realistic only): decode passes (tokens = batch) take their GEMM, attention, TP all-reduce
    and EP terms from the measured kernel tables of `kernel_engine` (kernel_pass: AIConfigurator's tables,
    docs/kernels.md), as `roofline step --kernels tables` composes them at the corner `which`; the simulator's
    passes that carry prompt tokens take theirs in MixedPass (one TP/EP group), while this step model's own
    prefill and mixed points (the step table's, used where there is no MixedPass) keep the factor model.
    Points outside every table keep the factor model's terms."""

    model: M.Model
    system: System
    layout: Layout | None = None
    efficiency: Efficiency | None = None
    realistic: bool = False
    which: str = "mid"
    weights_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    options: dict = field(default_factory=dict)
    kernels: str = "factor"
    kernel_engine: str = "trtllm"
    kernel_moe_activations: str = "auto"  # FP4 experts' activation format in the MoE tables (kernel_pass._moe_dtypes)
    kernel_fp8_scales: str = "auto"  # FP8 experts' scaling, per-tensor or block, in the MoE tables (kernel_pass.FP8_SCALES)
    kernel_moe: str = "auto"  # the fused MoE kernel the launch names, whose rows time the routed experts (kernels.MOE_KERNELS)

    def step_times(self, batch, tokens, context):
        """Step seconds only (nothing else of the pass result is computed)."""
        b = np.asarray(batch, dtype=float)
        n = np.asarray(tokens, dtype=float)
        lay = self.layout
        if lay is not None and not lay.perfect:
            b_eff = np.maximum(b, sequence_slots(lay))
            n, b = n / b * b_eff, b_eff
        t = step_time(self.model, self.system, b, n, context, layout=lay, efficiency=self.efficiency,
                      realistic=self.realistic, which=self.which, weights_dtype=self.weights_dtype,
                      kv_dtype=self.kv_dtype, **self.options)
        if self.kernels != "tables":
            return t
        decode = np.broadcast_to(np.isclose(n, b), np.shape(t))
        if not decode.any():
            return t
        return np.where(decode, self._decode_from_tables(b, context, np.shape(t)), t)

    def _decode_from_tables(self, b, context, shape):
        """Decode step seconds with the measured kernels' terms (requests/step.with_tables at one corner)."""
        bb = np.broadcast_to(b, shape)
        cc = np.broadcast_to(np.asarray(context, dtype=float), shape)
        return np.asarray(self.table_parts(bb, cc)[0], dtype=float)

    def table_parts(self, batch, context, phase: str = "decode", prompt=1):
        """(step seconds, the composed terms, the engine's PassResult) of passes of `batch` sequences on
        `context` cached tokens (`phase` prefill: `prompt` new tokens each) with the measured kernel tables of
        `kernel_engine` at the corner `which` in place of the factor model's terms wherever they cover the
        point (kernel_pass.apply: its terms dict holds gemm, attention, tp_comm, ep_comm and overhead)."""
        from ..engine import resolve_efficiency
        from ..engine import step as engine_step
        from ..kernel_pass import apply, corner_terms

        lay = self.layout or Layout(tp=self.system.chips)
        opts = {k: v for k, v in self.options.items() if k in ("moe_imbalance", "expert_weights_dtype")}
        res = engine_step(self.model, self.system, batch, context, layout=lay, phase=phase, prompt=prompt,
                          efficiency=self.efficiency, realistic=self.realistic, which=self.which,
                          weights_dtype=self.weights_dtype, kv_dtype=self.kv_dtype, details=False, check=False,
                          check_context=False, **opts)
        terms, scale = corner_terms(self.model, self.system, batch, context, which=self.which,
                                    engine=self.kernel_engine, phase=phase, prompt=prompt, tp=lay.tp, ep=lay.ep,
                                    pp=lay.pp, dp=lay.dp, moe_tp=lay.moe_tp, weights_dtype=self.weights_dtype,
                                    kv_dtype=self.kv_dtype, expert_weights_dtype=self.options.get("expert_weights_dtype"),
                                    moe_activations=self.kernel_moe_activations, fp8_scales=self.kernel_fp8_scales,
                                    moe_kernel=self.kernel_moe)
        eff = resolve_efficiency(self.system, self.weights_dtype, self.efficiency, self.realistic, self.which)
        step, _, parts = apply(res, terms, overlap_comm=eff.overlap_comm, scale=(scale, scale, scale))
        return step, parts, res

    __call__ = step_times


def RooflineStep(model: M.Model, system, chips: int | None = None, efficiency: Efficiency = Efficiency(),
                 weights_dtype: str = "bf16", kv_dtype: str = "bf16", options: dict | None = None) -> EngineStep:
    """The pure roofline on `chips` GPUs with perfect sharding (what `roofline step` without a layout
    computes), explicit efficiency; `options` are engine switches (attention_flops, distinct_experts, ...)."""
    return EngineStep(model, system, Layout.sharded(int(chips or system.chips)), efficiency, False, "mid",
                      weights_dtype, kv_dtype, dict(options or {}))


def EfficiencyModelStep(model: M.Model, system, tp: int, weights_dtype: str = "bf16", kv_dtype: str = "bf16",
                        which: str = "mid") -> EngineStep:
    """The realistic model for `tp` GPUs as one TP group (`roofline simulate --realistic`)."""
    return EngineStep(model, system, Layout(tp=int(tp)), None, True, which, weights_dtype, kv_dtype)


@dataclass(frozen=True)
class BoardStep:
    """lecture.step_time: t = max(B·L·W_active/F, W_total/BW + B·ctx·kv/BW) [S 00:02:37]."""

    w_total: float
    w_active: float
    F: float
    BW: float
    kv: float = 0.0

    def __call__(self, batch, tokens, context):
        b = np.asarray(batch, dtype=float)
        return lecture.step_time(b, context, self.w_total, self.w_active, self.kv, self.F, self.BW,
                                 len_pass=np.asarray(tokens, dtype=float) / b)


@dataclass(frozen=True)
class ConstantStep:
    """Every pass takes `step_s` seconds, whatever its batch (the lecture's fixed 20 ms step)."""

    step_s: float

    def __post_init__(self):
        require_positive("constant step time", self.step_s)

    def __call__(self, batch, tokens, context):
        return np.full(np.broadcast(np.asarray(batch), np.asarray(tokens), np.asarray(context)).shape, self.step_s)


@dataclass(frozen=True)
class Deployment:
    """One serving deployment: its step model, the GPUs it rents and their price, and KV capacity.

    kv_capacity_tokens: cached tokens the KV pool holds (inf = unlimited); kv_overhead_tokens: extra
    tokens' worth of KV every sequence holds regardless of length (sliding-window layers); kv_reserve_bytes: memory
    per GPU the engine kept from the pool besides the weights.
    """

    step: object
    gpus: int = 1
    usd_per_gpu_hour: float = 2.0
    kv_capacity_tokens: float = math.inf
    kv_overhead_tokens: float = 0.0
    kv_reserve_bytes: float = 0.0

    def __post_init__(self):
        if int(self.gpus) != self.gpus or self.gpus < 1:
            raise InputError(f"deployment gpus must be a whole number >= 1, got {self.gpus}")
        require_positive("usd per GPU-hour", self.usd_per_gpu_hour, allow_zero=True)
        if not self.kv_capacity_tokens > 0:
            raise InputError(f"KV capacity must be > 0 tokens, got {self.kv_capacity_tokens:g}; the weights fill "
                             f"the memory: use more GPUs or smaller weights")


def deployment(model: M.Model, system, layout: Layout | None = None, *, efficiency: Efficiency | None = None,
               realistic: bool = False, weights_dtype: str = "bf16", kv_dtype: str = "bf16",
               usd_per_gpu_hour: float | None = None, usable_memory: float = DEFAULT_USABLE_MEMORY,
               expert_weights_dtype: str | None = None, kv_memory_of: str = "total", kv_reserve_bytes: float = 0.0,
               **options) -> Deployment:
    """A Deployment of one replica of `layout` (None: the system's GPUs with perfect sharding): steps from
    EngineStep; KV capacity from memory.kv_capacity_tokens (the HBM the weights leave on each GPU, over each
    GPU's share of a token's KV: split over dp groups, TP KV-head shards and stages; `usable_memory` of the
    total HBM, or with kv_memory_of="free" of what the weights leave, as TensorRT-LLM's
    kv_cache_free_gpu_mem_fraction). `expert_weights_dtype`: the routed experts' format where it differs from
    `weights_dtype` (their bytes in memory and in every pass). `kv_reserve_bytes`: memory per GPU the engine keeps
    out of the KV pool besides the weights (memory.vllm_profile_peak_bytes: vLLM's profiled activation peak); 0
    ignores activation memory. Ignores block fragmentation."""
    lay = layout or Layout.sharded(system.chips)
    if not lay.perfect:
        lay = replace(lay, domains=max(lay.domains, math.ceil(lay.gpus / system.chips)))
        validate(model, system, lay)
    switches = [k for k in options if k != "moe_imbalance"]  # the routing's imbalance is not an efficiency factor
    if realistic and (efficiency is not None and not efficiency.is_ideal or switches):
        raise InputError("realistic steps use the efficiency model's own factors; drop the explicit "
                         f"efficiency{' and ' + ', '.join(switches) if switches else ''} or the realistic switch")
    capacity = float(kv_capacity_tokens(model, system, lay, weights_dtype=weights_dtype, kv_dtype=kv_dtype,
                                        expert_weights_dtype=expert_weights_dtype, usable_memory=usable_memory,
                                        of=kv_memory_of, activation_bytes_per_gpu=kv_reserve_bytes))
    if capacity <= 0:
        reserve = f" and {kv_reserve_bytes / 2**30:,.2f} GiB per GPU of reserve" if kv_reserve_bytes else ""
        raise DoesNotFitError(f"{model.id} weights ({M.weight_bytes(model, weights_dtype) / 1e9:,.0f} GB){reserve} leave "
                              f"no KV memory on {lay} of {system.accelerator.id}; use more GPUs or fp8/fp4 weights")
    per_tok = M.kv_bytes_per_token(model, kv_dtype)
    # sliding-window layers hold at most `window` tokens: a fixed per-sequence overhead past the window
    w = model.sliding_window or 0
    overhead = float(M.kv_bytes_per_sequence(model, w, kv_dtype) - per_tok * w) / per_tok if w else 0.0
    if expert_weights_dtype not in (None, weights_dtype):
        options = {**options, "expert_weights_dtype": expert_weights_dtype}
    steps = EngineStep(model, system, lay, efficiency, realistic, "mid", weights_dtype, kv_dtype, options)
    return Deployment(steps, int(lay.gpus), resolve_price(system, usd_per_gpu_hour), capacity, overhead,
                      float(kv_reserve_bytes))


def with_kernel_tables(dep: Deployment, engine: str = "trtllm", moe_activations: str = "auto",
                       fp8_scales: str = "auto", moe_kernel: str = "auto") -> Deployment:
    """`dep` with its passes from the measured kernel tables of `engine`'s family (an engine row such as
    `vllm-v0` or `sglang-v0.3` takes its family's tables; `none` takes TensorRT-LLM's, as `roofline step`):
    EngineStep(kernels="tables"). Only the realistic engine step has table terms. `moe_activations` (auto, bf16,
    fp8): the activation format the launch runs FP4 experts with (kernel_pass._moe_dtypes); `fp8_scales` (auto,
    tensor, block): how FP8 experts are scaled (kernel_pass.FP8_SCALES); `moe_kernel` (kernels.MOE_KERNELS): the
    fused MoE kernel the launch names (trtllm-gen: TensorRT-LLM's TRTLLM MoE backend)."""
    from ..kernel_pass import FP8_SCALES, MOE_ACTIVATIONS
    from ..kernels import MOE_KERNELS

    if moe_kernel not in MOE_KERNELS:
        raise InputError(f"moe kernel must be one of {', '.join(MOE_KERNELS)}, got {moe_kernel!r}; trtllm-gen where "
                         "the launch sets TensorRT-LLM's moe_config backend TRTLLM, else auto")

    if moe_activations not in MOE_ACTIVATIONS:
        raise InputError(f"moe activations must be one of {', '.join(MOE_ACTIVATIONS)}, got {moe_activations!r}; "
                         f"bf16 or fp8 where the launch sets the MoE kernel's activation format, else auto")
    if fp8_scales not in FP8_SCALES:
        raise InputError(f"fp8 scales must be one of {', '.join(FP8_SCALES)}, got {fp8_scales!r}; block for "
                         f"checkpoints whose config.json has weight_block_size, tensor for per-tensor ones, else auto")
    step = dep.step
    if not (isinstance(step, EngineStep) and (step.realistic or (step.efficiency is not None
                                                                 and not step.efficiency.is_ideal))):
        raise InputError("kernel tables replace terms of the realistic pass; add --realistic (the pure roofline "
                         "has no kernels to measure)")
    from ..kernels import table_family

    return replace(dep, step=replace(step, kernels="tables", kernel_engine=table_family(engine) or "trtllm",
                                     kernel_moe_activations=moe_activations, kernel_fp8_scales=fp8_scales,
                                     kernel_moe=moe_kernel))


def roofline_deployment(model: M.Model, system, *, chips: int | None = None, efficiency: Efficiency | None = None,
                        realistic: bool = False, **kw) -> Deployment:
    """`deployment` on `chips` GPUs of the system: perfect sharding for the pure roofline; one TP group of
    `chips` (which must be a valid TP degree) for the realistic model."""
    n = int(chips or system.chips)
    if realistic:
        check_tensor_parallel(model, system, n)
        return deployment(model, system, Layout(tp=n), efficiency=efficiency, realistic=True, **kw)
    return deployment(model, system, Layout.sharded(n), efficiency=efficiency, **kw)


def layout_deployment(model: M.Model, system, tp: int = 1, ep: int = 1, pp: int = 1, dp: int = 1, **kw) -> Deployment:
    """`deployment` of one replica of layout (tp, ep, pp, dp)."""
    return deployment(model, system, Layout(tp=int(tp), ep=int(ep), pp=int(pp), dp=int(dp)), **kw)


# ---- mixed passes ------------------------------------------------------------------------------
def _token_grid(max_tokens: float) -> list[float]:
    """Tokens in a pass: every integer to 64, then 2% geometric steps (GEMM efficiency and distinct
    experts are smooth in the tokens; the rest of a pass's non-attention terms is linear in them)."""
    small = np.arange(1, min(64, max_tokens) + 1, dtype=float)
    big = (np.geomspace(64, max_tokens, max(2, int(np.log(max_tokens / 64) / np.log(1.02)) + 2))
           if max_tokens > 64 else np.empty(0))
    return sorted(set(np.round(np.concatenate([small, big, [max_tokens]]), 6).tolist()))


def _interp(grid: list[float], floor: list[int], rows: list, x: float):
    """Linear interpolation of `rows` (one value or tuple per grid point) at x, cell found in O(1) through
    `floor` (a `_floor_index` table) where it can be."""
    i = floor[int(x)] if 0 <= x < len(floor) else -1
    if i < 0:
        i = min(max(bisect_right(grid, x) - 1, 0), len(grid) - 2)
    w = (x - grid[i]) / (grid[i + 1] - grid[i])
    return rows[i], rows[i + 1], w


class MixedPass:
    """A pass that carries decode tokens and prefill chunks together (chunked prefill, Sarathi-Serve OSDI
    2024; a continuous-batching pass of whole prompts), from the pass engine's own terms, each part's attention
    at its own context — not a pass of mean length at the mean context.

    The engine's terms per stage (engine.StageTerms) split into those set by the pass's token count n alone
    (GEMM compute and memory: weights, KV writes; elementwise; TP/EP collectives; pipeline sends; fixed
    overheads) and attention, which is a sum over the pass's sequences: compute per new token at its causal
    position, KV reads per sequence at its cached context. So

        t = combine(G(n), Σ_parts A_c, Σ_parts A_m)        (engine.combine: the same max/sum as every step)
        A_c = d·r·a_c(c_d + (r − 1)/2) + Σ_j c_j·a_c(x_j + (c_j − 1)/2)
        A_m = d·a_m(c_d) + Σ_j a_m(x_j)

    for d decoding sequences of r tokens (r = γ + 1 under speculation) at mean context c_d and chunks of c_j
    tokens on x_j cached tokens; a_c(x) = the attention compute of one token with x tokens before it, a_m(x) =
    the KV read of one sequence of x cached tokens, G(n) the non-attention terms of n tokens, each tabulated from
    the engine (G on 1..max_tokens in 2% steps, a_c and a_m on the step table's context grid) and interpolated
    linearly. With fewer sequences than the layout's sequence slots the busiest group still holds one (as
    EngineStep): every term is scaled by slots/sequences. The attention kernel stays one kernel per stage (varlen attention over the
    pass's sequences): its compute and memory are summed before the max. A decode-only pass equals the engine's
    decode step (tests/test_simulate_mixed.py). Ignores: the decoding sequences' spread of contexts around
    their mean (exact for attention without sliding windows, where a_c and a_m are linear); context
    parallelism (its K/V all-gather depends on the context: such layouts use the step table's mean pass).

    With `kernels="tables"` (one TP/EP group: pp = dp = cp = 1, attention by heads) a pass that carries prompt
    tokens takes its terms from the measured kernel tables, composed as kernel_pass.apply composes a pass
    (kernels summed, then the collectives, then the fixed overheads):

        t = busy(K_gemm(n) + Σ_parts A + ew(n), comm(n)) + overhead(n)
        A = K_gen(d, c_d) + Σ_j max(K_ctx(x_j + c_j) − K_ctx(x_j), K_ctx(c_j))

    K_gemm, comm (TP all-reduce + EP dispatch/combine, DeepEP's normal kernels) and the overhead from one
    n-token prompt's pass (GEMM rows = n; tabulated on the token grid), K_gen the generation-attention table for
    d sequences on c_d cached tokens (tabulated on batch × context), K_ctx(L) the context-attention table for
    one prompt of L tokens: a chunk of c_j tokens on x_j cached ones computes the rows of the whole prompt's
    causal attention, c_j·(x_j + c_j/2) query-key pairs, at the whole prompt's kernel efficiency, and never
    less than the chunk alone (a short prompt's kernel time is mostly fixed cost, which the difference would
    cancel); ew the factor model's elementwise term; points a table does not cover keep the factor
    model's term. Ignores, in this mode: the LM head of the pass's other sequences (one row counted: < 1% of an
    8,000-token pass), the kernels' dependence on how the tokens split into sequences beyond attention.
    A decode-only pass (no chunks) is the step model's own decode step; speculative passes (r > 1) keep the
    factor terms.
    """

    def __init__(self, step: "EngineStep", max_tokens: float, max_context: float):
        lay = step.layout or Layout.sharded(step.system.chips)
        kw = dict(layout=lay, efficiency=step.efficiency, realistic=step.realistic, which=step.which,
                  weights_dtype=step.weights_dtype, kv_dtype=step.kv_dtype, stage_terms=True, **step.options)
        # attention-DP ranks whose busiest sets a mixed pass (pipelines keep the slots scaling of every group)
        self.dp = 1 if lay.perfect or int(lay.pp) > 1 else int(lay.dp)
        self.N = _token_grid(max(2.0, float(max_tokens) * self.dp))
        n = np.asarray(self.N)
        g, eff = step_time(step.model, step.system, n, n, 0.0, **kw)
        moe_c, moe_m = np.asarray(g.moe_c, dtype=float), np.asarray(g.moe_m, dtype=float)
        cols = (g.gemm_c - moe_c, g.gemm_m - moe_m, moe_c, moe_m, g.ew, g.comm, g.pp_s)
        self._g = list(zip(*(np.broadcast_to(np.asarray(x, dtype=float), n.shape).tolist() for x in cols)))
        self.C = _context_grid(float(max_context))
        a, _ = step_time(step.model, step.system, 1.0, 1.0, np.asarray(self.C), **kw)
        c = np.asarray(self.C)
        self._a = list(zip(*(np.broadcast_to(np.asarray(x, dtype=float), c.shape).tolist() for x in (a.attn_c, a.attn_m))))
        self._nf, self._cf = _floor_index(self.N), _floor_index(self.C)
        self.overhead, self.pp, self.eff, self.perfect = float(g.overhead), float(np.max(g.pp)), eff, lay.perfect
        self.groups = 1 if lay.perfect else sequence_slots(lay)
        if not lay.perfect and lay.cp > 1:
            raise InputError("mixed passes under context parallelism depend on the context of the K/V gather; "
                             "use the step table's mean pass")
        self.step, self.kernel_tables = step, False
        if (step.kernels == "tables" and not lay.perfect and int(lay.pp) == int(lay.dp) == 1
                and sequence_slots(lay) == 1):
            self._tabulate_kernels(step, n, float(max_tokens))
        # `fast`: what the simulator calls, __call__ itself or, on one attention rank with the factor model's
        # terms, `_one_rank()`, the same arithmetic written out for the hot path (bit-identical results)
        self.fast = self._one_rank() if self.dp == 1 and not self.kernel_tables else self.__call__

    def _tabulate_kernels(self, step: "EngineStep", n: np.ndarray, max_batch: float) -> None:
        """The measured-kernel terms of the class docstring: per token count of the grid (K_gemm + ew,
        comm, overhead, K_ctx) and K_gen on batch × context."""
        from ..engine import resolve_efficiency

        one, zero = np.ones_like(n), np.zeros_like(n)
        _, parts, res = step.table_parts(one, zero, "prefill", n)
        gemm_ew = np.asarray(parts["gemm"] + res.elementwise_s, dtype=float)
        comm = np.asarray(parts["tp_comm"] + parts["ep_comm"], dtype=float)
        fixed = np.asarray(parts["overhead"] + res.pp_comm_s, dtype=float)
        cols = (gemm_ew, comm, fixed, np.asarray(parts["attention"], dtype=float))
        self._k = list(zip(*(np.broadcast_to(x, n.shape).tolist() for x in cols)))
        self.KB = _batch_grid(max(2.0, max_batch))
        bb, cc = np.meshgrid(np.asarray(self.KB), np.asarray(self.C), indexing="ij")
        _, dparts, _ = step.table_parts(bb, cc)
        self._kgen = np.broadcast_to(np.asarray(dparts["attention"], dtype=float), bb.shape).ravel().tolist()
        self._kbf = _floor_index(self.KB)
        self.overlap = resolve_efficiency(step.system, step.weights_dtype, step.efficiency, step.realistic,
                                          step.which).overlap_comm
        self.kernel_tables = True

    def _attn(self, x: float):
        lo, hi, w = _interp(self.C, self._cf, self._a, x)
        return lo[0] + w * (hi[0] - lo[0]), lo[1] + w * (hi[1] - lo[1])

    def __call__(self, decoding: float, r: float, decode_context_sum: float, chunks) -> float:
        """Step seconds of a pass of `decoding` sequences of r tokens each (their cached contexts summing to
        `decode_context_sum`) and `chunks`, a list of (tokens, cached tokens before them) prefill chunks.

        Under attention data parallelism (dp ranks) a prompt chunk runs whole on one rank while the decoding
        sequences spread evenly: the chunks go to ranks longest first, each to the least-loaded rank (LPT, the
        best balance an engine's scheduler can reach), and every term but the routed experts' is the busiest
        rank's (its decode share plus its chunks); the experts serve every rank's tokens (n in all)."""
        if self.kernel_tables and r == 1:
            if not chunks:  # a decode-only pass: the step model's own (measured-kernel) decode step
                c = decode_context_sum / decoding if decoding else 0.0
                return float(self.step(max(decoding, 1.0), max(decoding, 1.0), c))
            return self._from_kernels(decoding, decode_context_sum, chunks)
        n, ac, am, s, n_eq, ac_eq, am_eq = self.attention(decoding, r, decode_context_sum, chunks)
        lo, hi, w = _interp(self.N, self._nf, self._g, n_eq * s)
        dc, dm, _, _, ew, comm, pps = (a + w * (b - a) for a, b in zip(lo, hi))
        if n_eq != n:
            lo, hi, w = _interp(self.N, self._nf, self._g, n * s)
        ec, em = (lo[i] + w * (hi[i] - lo[i]) for i in (2, 3))
        return combine(dc + ec, dm + em, ac_eq * s, am_eq * s, ew, comm, pps, self.overhead, self.pp, self.eff,
                       self.perfect, mx=max)

    def _one_rank(self):
        """__call__ on one attention rank (dp = 1) without kernel tables, as a function whose tables and constants
        are bound once (closure cells, not attribute lookups) and whose `attention` and `_interp` lookups are
        written out inline: the same operands in the same order, so bit-identical (the simulator calls it about
        once per request; tests/test_simulate_mixed.py compares the two)."""
        C, cf, A, N, nf, G = self.C, self._cf, self._a, self.N, self._nf, self._g
        ncf, top, nnf, ntop = len(cf), len(C) - 2, len(nf), len(N) - 2
        groups, overhead, pp, eff, perfect, attn = self.groups, self.overhead, self.pp, self.eff, self.perfect, self._attn
        # engine.combine written out (its branches fixed here): the same operations in the same order
        per_kernel, overlap = bool(eff.per_kernel), bool(eff.overlap_comm)
        pp_one = pp == 1 if type(pp) is float or type(pp) is int else np.ndim(pp) == 0 and pp == 1

        def one_rank(decoding: float, r: float, decode_context_sum: float, chunks) -> float:
            ac = am = 0.0
            n = decoding * r
            if decoding:
                x = decode_context_sum / decoding + (r - 1) / 2.0
                i = cf[int(x)] if 0 <= x < ncf else -1
                if i < 0:
                    i = min(max(bisect_right(C, x) - 1, 0), top)
                lo, hi = A[i], A[i + 1]
                w = (x - C[i]) / (C[i + 1] - C[i])
                ac = decoding * r * (lo[0] + w * (hi[0] - lo[0]))
                m = attn(decode_context_sum / decoding)[1] if r != 1 else lo[1] + w * (hi[1] - lo[1])
                am = decoding * m
            for tok, x in chunks:
                y = x + (tok - 1) / 2.0
                i = cf[int(y)] if 0 <= y < ncf else -1
                if i < 0:
                    i = min(max(bisect_right(C, y) - 1, 0), top)
                lo, hi = A[i], A[i + 1]
                ac += tok * (lo[0] + (y - C[i]) / (C[i + 1] - C[i]) * (hi[0] - lo[0]))
                i = cf[int(x)] if 0 <= x < ncf else -1
                if i < 0:
                    i = min(max(bisect_right(C, x) - 1, 0), top)
                lo, hi = A[i], A[i + 1]
                am += lo[1] + (x - C[i]) / (C[i + 1] - C[i]) * (hi[1] - lo[1])
                n += tok
            seqs = decoding + len(chunks)
            s = groups / seqs if seqs < groups else 1.0
            x = n * s
            i = nf[int(x)] if 0 <= x < nnf else -1
            if i < 0:
                i = min(max(bisect_right(N, x) - 1, 0), ntop)
            lo, hi = G[i], G[i + 1]
            w = (x - N[i]) / (N[i + 1] - N[i])
            gc = (lo[0] + w * (hi[0] - lo[0])) + (lo[2] + w * (hi[2] - lo[2]))
            gm = (lo[1] + w * (hi[1] - lo[1])) + (lo[3] + w * (hi[3] - lo[3]))
            ac *= s
            am *= s
            ew = lo[4] + w * (hi[4] - lo[4])
            if per_kernel:
                k = max(gc, gm) + max(ac, am) + ew
            else:
                k = max(gc + ac, gm + am + ew)
            if not perfect:
                comm = lo[5] + w * (hi[5] - lo[5])
                k = max(k, comm) if overlap else k + comm
            return (k if pp_one else pp * k) + (lo[6] + w * (hi[6] - lo[6])) + overhead

        return one_rank

    def _from_kernels(self, decoding: float, decode_context_sum: float, chunks) -> float:
        """A pass with prompt tokens from the measured-kernel terms (class docstring)."""
        n = decoding + sum(tok for tok, _ in chunks)
        lo, hi, w = _interp(self.N, self._nf, self._k, n)
        gemm_ew, comm, fixed = (lo[i] + w * (hi[i] - lo[i]) for i in range(3))
        attn = 0.0
        if decoding:
            attn += self._gen(decoding, decode_context_sum / decoding)
        for tok, x in chunks:
            alone = self._ctx(tok)
            attn += max(self._ctx(x + tok) - self._ctx(x), alone) if x > 0 else alone
        kernels = gemm_ew + attn
        return (max(kernels, comm) if self.overlap else kernels + comm) + fixed

    def _ctx(self, length: float) -> float:
        """K_ctx(length): the context-attention term of one prompt of `length` tokens."""
        lo, hi, w = _interp(self.N, self._nf, self._k, length)
        return lo[3] + w * (hi[3] - lo[3])

    def _gen(self, d: float, c: float) -> float:
        """K_gen(d, c): the generation-attention term of d sequences on c cached tokens, bilinear on its grid."""
        B, C, nc = self.KB, self.C, len(self.C)
        bi = self._kbf[int(d)] if 0 <= d < len(self._kbf) else -1
        if bi < 0:
            bi = min(max(bisect_right(B, d) - 1, 0), len(B) - 2)
        ci = self._cf[int(c)] if 0 <= c < len(self._cf) else -1
        if ci < 0:
            ci = min(max(bisect_right(C, c) - 1, 0), len(C) - 2)
        wb, wc = (d - B[bi]) / (B[bi + 1] - B[bi]), (c - C[ci]) / (C[ci + 1] - C[ci])
        v, k = self._kgen, bi * nc + ci
        lo = v[k] + wc * (v[k + 1] - v[k])
        hi = v[k + nc] + wc * (v[k + nc + 1] - v[k + nc])
        return lo + wb * (hi - lo)

    def attention(self, decoding: float, r: float, decode_context_sum: float, chunks):
        """(tokens in the pass, Σ attention compute s, Σ KV-read s, the slots scale, and the same three as if
        every DP rank carried the busiest rank's load) of a pass (see __call__)."""
        ac = am = 0.0
        n = decoding * r
        if decoding:
            c, m = self._attn(decode_context_sum / decoding + (r - 1) / 2.0)
            ac = decoding * r * c
            m = self._attn(decode_context_sum / decoding)[1] if r != 1 else m
            am = decoding * m
        n_d, ac_d, am_d = n, ac, am
        parts = []
        for tok, x in chunks:
            c = tok * self._attn(x + (tok - 1) / 2.0)[0]
            mm = self._attn(x)[1]
            parts.append((tok, c, mm))
            ac += c
            am += mm
            n += tok
        seqs = decoding + len(chunks)
        scale = self.groups / seqs if seqs < self.groups else 1.0
        if self.dp == 1 or len(parts) == 0:
            return n, ac, am, scale, n, ac, am
        d = self.dp
        if decoding:  # the busiest rank holds ⌈decoding/dp⌉ of the decoding sequences
            up = math.ceil(decoding / d) * d / decoding
            n_d, ac_d, am_d = n_d * up, ac_d * up, am_d * up
        loads = [[0.0, 0.0, 0.0] for _ in range(min(d, len(parts)))]
        for tok, c, mm in sorted(parts, reverse=True):  # LPT: longest chunk to the least-loaded rank
            rank = min(loads, key=lambda x: x[0])
            rank[0] += tok
            rank[1] += c
            rank[2] += mm
        busy = max(loads, key=lambda x: x[0])
        # the busiest rank's chunks at full weight (the tabulated terms are per-rank means, 1/dp of a token); the
        # slots scaling is in the ⌈ ⌉ above and the chunks' placement
        return n, ac, am, 1.0, n_d + d * busy[0], ac_d + d * busy[1], am_d + d * busy[2]


def mixed_pass(step, max_tokens: float, max_context: float):
    """The MixedPass of a deployment's step model, with the overhead of a wrapped step model added (a wrapper
    exposes `.inner` and `overhead_s(batch)`, and may give `eager_floor_s`, the least time of a pass that
    runs outside CUDA graphs, and `graph_max_batch`, `schedulers`: simulate.overheads), or None where the step model is not the engine's (ConstantStep,
    BoardStep, a user's callable) or the layout is context-parallel: those keep the step table's mean pass."""
    inner, wrappers, eager, ungraphed = step, [], [], []
    while not isinstance(inner, EngineStep) and hasattr(inner, "inner"):
        wrappers.append(inner.overhead_s)
        if getattr(inner, "eager_floor_s", 0.0):  # (floor, most decoding sequences still graphed)
            eager.append((float(inner.eager_floor_s), float(inner.graph_max_batch) * inner.schedulers))
        if getattr(inner, "ungraphed_s", 0.0):  # (seconds, most tokens a graphed pass carries)
            ungraphed.append((float(inner.ungraphed_s), float(inner.graph_max_tokens)))
        inner = inner.inner
    if not isinstance(inner, EngineStep) or (inner.layout is not None and not inner.layout.perfect
                                             and inner.layout.cp > 1):
        return None
    mp = MixedPass(inner, max_tokens, max_context)
    fast = mp.fast
    if not wrappers:
        return fast

    def with_overhead(decoding, r, decode_context_sum, chunks):
        b = decoding + len(chunks)
        t = fast(decoding, r, decode_context_sum, chunks)
        for floor, graphed in eager:  # outside CUDA graphs: prompt tokens, or a batch above the graph limit
            if floor > t and (chunks or decoding > graphed):
                t = floor
        for extra, most in ungraphed:  # vLLM V1: more tokens than the largest graph (overheads.UNGRAPHED_PASSES)
            if decoding * r + sum(c for c, _ in chunks) > most:
                t += extra
        return t + sum(o(b) for o in wrappers)
    return with_overhead


# ---- the table ---------------------------------------------------------------------------------
def _batch_grid(max_batch: float, breaks=()) -> list[float]:
    """1..64 in steps of 1, then 5% steps to max_batch; and at each of `breaks` (a batch where the step time
    jumps, e.g. the largest CUDA-graphed batch: OverheadStep.batch_breaks) the batch itself and the next whole
    batch, so no cell straddles the jump (without them a batch of 128 under a 128 graph limit was read between
    125.9, graphed, and 132.1, eager)."""
    small = np.arange(1, min(64, max_batch) + 1, dtype=float)
    big = np.geomspace(64, max_batch, max(2, int(np.log(max_batch / 64) / np.log(1.05)) + 2)) if max_batch > 64 else np.empty(0)
    edges = [x for b in breaks for x in (math.floor(b), math.floor(b) + 1) if 1 <= x <= max_batch]
    return sorted(set(np.round(np.concatenate([small, big, [max_batch], edges]), 6).tolist()))


def _ratio_grid(max_ratio: float) -> list[float]:
    small = np.arange(1, min(16, max_ratio) + 1, dtype=float)
    big = np.geomspace(16, max_ratio, max(2, int(np.log(max_ratio / 16) / np.log(1.2)) + 2)) if max_ratio > 16 else np.empty(0)
    return sorted(set(np.round(np.concatenate([small, big, [max_ratio]]), 6).tolist()))


def _context_grid(max_context: float) -> list[float]:
    pts = np.concatenate([[0.0], np.geomspace(1, max(2.0, max_context), int(np.log(max(2.0, max_context)) / np.log(1.08)) + 2)])
    return sorted(set(np.round(pts, 6).tolist()))


def _floor_index(grid: list[float], limit: int = 1 << 16) -> list[int]:
    """For k = 0, 1, ...: the cell index StepTable._loc gives every x in [k, k + 1) (bisect_right − 1,
    clamped to 0 .. len(grid) − 2), or −1 where a grid point lies strictly inside (k, k + 1), so the
    cell depends on the fraction and the caller must bisect. Covers [0, min(grid[-1] + 1, limit))."""
    hi = len(grid) - 2
    g = np.asarray(grid, dtype=float)
    k = np.arange(int(min(grid[-1] + 1, limit)), dtype=float)
    j = np.searchsorted(g, k, side="right")  # first grid point > k (bisect_right)
    inside = (j < len(g)) & (g[np.minimum(j, len(g) - 1)] < k + 1)
    return np.where(inside, -1, np.clip(j - 1, 0, hi)).tolist()


# Points per call of the StepModel while tabulating: a full roofline.step result holds ~40 arrays of
# the call's shape, so evaluating 550,000 points at once peaked at ~150 MB; 32,768 at a time keeps
# that under ~10 MB at the same speed (the arithmetic is elementwise: the values are the same).
TABLE_CHUNK_POINTS = 32_768


def tabulate_step_times(step_model, B, R, C, chunk_points: int = TABLE_CHUNK_POINTS) -> np.ndarray:
    """Step seconds on the grid batch × tokens-per-sequence × context, shape (len B, len R, len C),
    evaluated a slab of batch values at a time (the step-time-only path: only `step_s` of each slab
    is kept). A StepModel with a `step_times(batch, tokens, context)` method is asked through it, so an
    engine that can skip everything but the time is used that way; otherwise it is called."""
    fn = getattr(step_model, "step_times", step_model)
    B, R, C = (np.asarray(x, dtype=float) for x in (B, R, C))
    out = np.empty((B.size, R.size, C.size))
    per_b = max(1, chunk_points // (R.size * C.size))
    for i in range(0, B.size, per_b):
        b, r, c = np.meshgrid(B[i:i + per_b], R, C, indexing="ij")
        out[i:i + per_b] = np.broadcast_to(np.asarray(fn(b, b * r, c), dtype=float), b.shape)
    return out


class StepTable:
    """A StepModel tabulated on batch × tokens-per-sequence × context, with fast scalar lookups.

    `t(b, n, c)` interpolates linearly in all three axes (pure Python on lists: ~2 µs a call).
    `decode_segment(b, r, c)` gives the pass time at context c for b sequences of r tokens each, its
    slope per token of context, and the context where that linear piece ends, so many decode
    iterations can be summed in closed form (t_j = t0 + slope·j while c + j stays in the piece).
    """

    def __init__(self, step_model, max_batch: float, max_ratio: float, max_context: float):
        require_positive("table max batch", max_batch)
        # every axis needs two points to interpolate (max_seqs = 1 gives a one-point batch grid): the
        # extra point lies beyond anything the simulation asks for, so it only closes the last cell
        self.B, self.R, self.C = (g if len(g) > 1 else g + [g[-1] + 1.0] for g in (
            _batch_grid(float(max_batch), getattr(step_model, "batch_breaks", ())), _ratio_grid(max(1.0, float(max_ratio))), _context_grid(float(max_context))))
        vals = tabulate_step_times(step_model, self.B, self.R, self.C)
        if not np.all(np.isfinite(vals)) or np.any(vals <= 0):
            raise InputError("the step model returned a non-positive or non-finite step time; check its inputs")
        self.values = vals
        self._v = vals.ravel().tolist()
        self._nr, self._nc = len(self.R), len(self.C)
        self._nrc = self._nr * self._nc  # stride of one batch index in _v
        # O(1) cell lookup: _bl[int(x)] is _loc's cell index for every x in [int(x), int(x) + 1)
        self._bl, self._rl, self._cl = _floor_index(self.B), _floor_index(self.R), _floor_index(self.C)
        self._nbl, self._nrl, self._ncl = len(self._bl), len(self._rl), len(self._cl)

    @staticmethod
    def _loc(grid, x):
        """(i, w): x lies in [grid[i], grid[i+1]] at fraction w (clamped to the end cells, so w may be
        < 0 or > 1 outside the grid). The reference for the inlined lookups in `t` and `decode_segment`."""
        i = bisect_right(grid, x) - 1
        if i < 0:
            i = 0
        elif i > len(grid) - 2:
            i = len(grid) - 2
        return i, (x - grid[i]) / (grid[i + 1] - grid[i])

    def _bc(self, bi, wb, ri, ci):
        """Value at grid (r index ri, c index ci) interpolated in batch (reference for the inlined code)."""
        v, nr, nc = self._v, self._nr, self._nc
        k = (bi * nr + ri) * nc + ci
        return v[k] + wb * (v[k + nr * nc] - v[k])

    # The two lookups below are the simulator's hot path (~150,000 calls for 100,000 requests), so
    # `_loc` and `_bc` are written out inline, with exactly the same arithmetic (same operands, same
    # order: bit-identical results), and the bisection is replaced by the O(1) `_floor_index` table
    # wherever it gives the same cell.

    def _cells(self, b: float, r: float, c: float) -> tuple[int, int, int]:
        """Cell indices in batch, ratio and context: the clamped bisection of `_loc`, via the O(1) floor
        tables wherever they know the cell."""
        B, R, C = self.B, self.R, self.C
        bi = self._bl[int(b)] if 0 <= b < self._nbl else -1
        if bi < 0:
            bi = min(max(bisect_right(B, b) - 1, 0), len(B) - 2)
        ri = self._rl[int(r)] if 0 <= r < self._nrl else -1
        if ri < 0:
            ri = min(max(bisect_right(R, r) - 1, 0), len(R) - 2)
        ci = self._cl[int(c)] if 0 <= c < self._ncl else -1
        if ci < 0:
            ci = min(max(bisect_right(C, c) - 1, 0), len(C) - 2)
        return bi, ri, ci

    def t(self, b: float, n: float, c: float) -> float:
        """Step seconds of a pass of b sequences, n tokens, mean cached context c."""
        v, nrc, nc = self._v, self._nrc, self._nc
        B, R, C = self.B, self.R, self.C
        x = n / b
        bi, ri, ci = self._cells(b, x, c)
        wb = (b - B[bi]) / (B[bi + 1] - B[bi])
        wc = (c - C[ci]) / (C[ci + 1] - C[ci])
        wr = (x - R[ri]) / (R[ri + 1] - R[ri])
        # bilinear in (batch, context) at ratio index ri, then ri + 1 if x is off the grid point
        k = (bi * self._nr + ri) * nc + ci
        lo = v[k] + wb * (v[k + nrc] - v[k])
        lo += wc * (v[k + 1] + wb * (v[k + 1 + nrc] - v[k + 1]) - lo)
        if wr == 0.0:
            return lo
        k += nc
        hi = v[k] + wb * (v[k + nrc] - v[k])
        hi += wc * (v[k + 1] + wb * (v[k + 1 + nrc] - v[k + 1]) - hi)
        return lo + wr * (hi - lo)

    def decode_segment(self, b: float, r: float, c: float):
        """(t at c, d t / d context, end of the linear piece in context) for b sequences of r tokens."""
        v, nrc, nc = self._v, self._nrc, self._nc
        B, R, C = self.B, self.R, self.C
        bi, ri, ci = self._cells(b, r, c)
        wb = (b - B[bi]) / (B[bi + 1] - B[bi])
        wr = (r - R[ri]) / (R[ri + 1] - R[ri])
        k = (bi * self._nr + ri) * nc + ci
        v0 = v[k] + wb * (v[k + nrc] - v[k])
        v1 = v[k + 1] + wb * (v[k + 1 + nrc] - v[k + 1])
        if wr != 0.0:
            k += nc
            v0 += wr * (v[k] + wb * (v[k + nrc] - v[k]) - v0)
            v1 += wr * (v[k + 1] + wb * (v[k + 1 + nrc] - v[k + 1]) - v1)
        c0, c1 = C[ci], C[ci + 1]
        slope = (v1 - v0) / (c1 - c0)
        end = c1 if ci + 2 < len(C) else math.inf
        return v0 + slope * (c - c0), slope, end
