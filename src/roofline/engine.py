"""The pass engine: ONE forward pass of a model on a system under a Layout and an Efficiency.

Every command computes its pass here (step, sweep, plan, simulate's step table, validate, report, train):
the pure roofline is this engine with `Efficiency()` (every fraction 1, no fixed costs, one max over the
pass) and the realistic prediction is the same engine with the accelerator family's cited factors
(efficiency.realistic). Per pipeline stage and micro-batch, on one GPU (b = B/pp sequences, T = b·L tokens,
T_g = T/(dp·cp) on one GPU of a DP group's cp context ranks, T_e = T·moe_tp·ep/(tp·dp·cp) through one MoE
group, f = v·ceil(L/(pp·v))/L):

    GEMMs       F_g = f·[T_g·2·N_dense/tp + T_e·2·L_moe·k·N_e/(moe_tp·ep)·λ]       t = F_g/(P_w·η_gemm(T_g))
                W   = f·[W_dense_read(T_g)/tp + L_moe·D_{E+R}(T_e)·N_e/(moe_tp·ep)]·b_w  (+ KV writes) /(BW·η_w)
    attention   F_a = f·T_g·attn(ctx)/tp                                          t = F_a/(P_a·η_attn)
                KV  = f·(b/dp)·kv_seq(ctx)/kv_shard · G                          t = KV/(BW·η_kv)
    elementwise φ·f·T_g·E(tp)/(BW·η_ew)                       norms, residual adds, rotary, activation, casts
    TP          f·[(L + L_dense)·AR(T_g·D·b_a, tp) + L_moe·AR(T_g·D·b_a, moe_tp)]   best of ring/one-shot
                (a MoE group serving s = moe_tp·ep/tp > 1 attention groups with ep = 1: L_moe·[AG(T_e·D·b_a, s)
                + RS(T_e·D·b_a, s) + AR(T_g·D·b_a, tp)] in place of its all-reduce; layout.MOE_GATHERS_GROUPS)
                (+ f·L·A2A(T_g·N·(H_qk + H_v)·b_a/tp, tp) with attention sharded by batch, Pope et al. 2022)
    CP          f·L·AG(K,V of the sequences' ctx + len tokens / layer, cp)       context parallelism (prefill)
    EP          f·L_moe·2·A2A(T_e/(moe_tp·ep)·k·D·b_a·λ) on moe_tp·ep GPUs, scale-out share 1 − 1/n_domains
    PP          per loop: Σ_boundaries p2p(T·D·b_a/(tp·dp)) (decode: pp boundaries incl. wrap-around)

    kernels  = max(Σcompute, Σmemory)                                    (Efficiency.per_kernel False: lecture)
             = max(t_gemm_c, t_gemm_m) + max(t_attn_c, t_attn_m) + t_ew    (per_kernel True: each kernel class
                                                                           bound by its own resource)
    stage    = max(kernels, comm) (overlap_comm)  or  kernels + comm
    step     = pp·stage + t_pp + L·τ_layer + τ_pass          upper bound: every term added

D_E(T) = model.expected_distinct_experts: the experts T tokens touch (all E for a large batch, the
lecture's W_total [S 00:05:09]), over the E + R expert slots when R redundant copies are placed (EPLB); λ = MoE load imbalance (busiest GPU over the mean, EP only). Decode emits
B tokens per loop (TPOT = step, no bubble with pp micro-batches in flight, lecture §3.3); a prefill of B
prompts emits B·L. Sources: lecture [S 00:02:37–00:07:27] (decode roofline), [S 01:42:00–01:44:34] (pass of
length L); Pope et al. 2022 §2–3; Megatron-LM (Shoeybi 2019: 2 all-reduces per layer); network.py
(α–β collectives); efficiency.py (factors). The critical batch and the latency floor are found ON this
engine (where its compute and memory terms cross; its step at the smallest batch), so they agree with
the step it prints.

Ignores: overlap inside a stage beyond the two bounds, NVLink SHARP, expert replication (EPLB), the
shared expert's TP all-reduce under EP, embedding/head imbalance between stages, sampling and
detokenisation (inside τ_pass), KV of the pass's own tokens re-read inside attention (kept on chip).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from . import layout as LY
from . import model as M
from . import network as N
from .efficiency import LOW_PRECISION, Efficiency, gemm_efficiency, realistic
from .errors import DoesNotFitError, InputError, require_fraction, require_positive
from .hardware import System
from .hardware import usd_per_gpu_hour as resolve_price
from .layout import (
    Layout,
    domains_per_replica,
    gathered_group,
    kv_shard,
    off_domain_boundaries,
    stage_fraction,
    validate,
)
from .memory import DEFAULT_USABLE_MEMORY, memory_per_gpu
from .units import SECONDS_PER_HOUR, dtype_bytes

BOUNDS = ("compute", "memory", "network")  # the codes of PassResult.bound


@dataclass(frozen=True)
class PassResult:
    """One replica's decode loop or prefill pass. Times in s (loop totals over the pp stages), bytes,
    FLOP; arrays when any input was an array (broadcast shape). `bound` holds codes into BOUNDS."""

    gemm_compute_s: np.ndarray
    gemm_memory_s: np.ndarray  # weight reads + KV writes (streamed by the GEMM kernels)
    attention_compute_s: np.ndarray
    attention_memory_s: np.ndarray  # KV reads
    elementwise_s: np.ndarray
    compute_s: np.ndarray  # GEMMs + attention
    weight_read_s: np.ndarray
    kv_read_s: np.ndarray
    kv_write_s: np.ndarray
    memory_s: np.ndarray  # weights + KV reads + KV writes + elementwise
    gemm_s: np.ndarray  # max(GEMM compute, GEMM memory)
    attention_s: np.ndarray  # max(attention compute, KV reads)
    tp_comm_s: np.ndarray
    ep_comm_s: np.ndarray
    cp_comm_s: np.ndarray  # the K/V all-gathers of context parallelism
    pp_comm_s: np.ndarray
    comm_s: np.ndarray
    overhead_s: np.ndarray
    stage_s: np.ndarray  # one stage, one micro-batch
    step_s: np.ndarray  # the loop (= TPOT in decode, the pass latency in prefill)
    step_upper_s: np.ndarray  # every term added (no overlap)
    bound: np.ndarray  # int8 codes into BOUNDS
    tokens_per_s: np.ndarray  # one replica
    tokens_per_s_per_gpu: np.ndarray
    tokens_per_s_per_sequence: np.ndarray
    usd_per_million_tokens: np.ndarray
    mfu: np.ndarray
    bandwidth_utilization: np.ndarray
    flops: np.ndarray  # model FLOPs of the pass (all GPUs)
    bytes_read: np.ndarray  # HBM bytes read by all GPUs (weights + KV)
    memory_per_gpu_bytes: np.ndarray
    weights_per_gpu_bytes: np.ndarray
    kv_per_gpu_bytes: np.ndarray
    activations_per_gpu_bytes: np.ndarray
    fits: np.ndarray
    gpus: np.ndarray
    domains: np.ndarray
    usd_per_gpu_hour: float
    # filled by `step` for one layout (None from the array core)
    params_total: float | None = None
    params_active: float | None = None
    kv_bytes_per_token: float | None = None
    critical_batch: float | np.ndarray | None = None
    critical_batch_with_kv: np.ndarray | None = None
    latency_floor_s: float | None = None
    speculation: dict | None = None  # with speculative decoding / MTP: γ, α, draft cost, tokens per step, times
    layout: str = ""
    #: the parts of overhead_s that are GEMM and attention launch latencies (kernel_pass.apply removes them
    #: where a measured table, which includes its kernels' launches, replaces that term): the GEMMs with their
    #: input-quantisation kernels, the attention ops, and the fused MoE op's own kernels (top-k, permute,
    #: activation, finalize, quantisation: model.kernels_inside_measured_ops), removed where a MoE table times it
    launch_gemm_s: Any = 0.0
    launch_attention_s: Any = 0.0
    launch_moe_op_s: Any = 0.0
    efficiency: str = "ideal"

    @property
    def bound_name(self) -> np.ndarray:
        """The bound as names ('compute', 'memory', 'network')."""
        return np.asarray(BOUNDS)[self.bound]

    def to_dict(self) -> dict:
        """JSON-ready dict (floats/lists, SI units, bound as names; inf/nan → None). Keys: docs/roofline.md."""
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "bound":
                v = self.bound_name
            if isinstance(v, np.ndarray):
                v = v.tolist() if v.ndim else v.item()
            elif isinstance(v, np.generic):
                v = v.item()
            out[f.name] = _json_safe(v)
        out["memory_per_gpu_parts_bytes"] = {"weights": out["weights_per_gpu_bytes"], "kv": out["kv_per_gpu_bytes"],
                                             "activations": out["activations_per_gpu_bytes"]}
        return out


def _json_safe(v):
    """inf/nan are not JSON: infinite values (e.g. no critical batch exists) become None."""
    if isinstance(v, float) and not np.isfinite(v):
        return None
    if isinstance(v, list):
        return [_json_safe(x) for x in v]
    return v


def classify_bound(compute, memory, comm):
    """Codes into BOUNDS: 'network' where communication is the longest term, else 'compute' or 'memory'."""
    return np.where(comm >= np.maximum(compute, memory), np.int8(2),
                    np.where(compute >= memory, np.int8(0), np.int8(1))).astype(np.int8)


def check_moe_imbalance(moe_imbalance) -> None:
    """λ = busiest expert GPU's tokens over the mean: >= 1 (1 = uniform routing), or "sampling" (the sampling
    noise of a balanced router for each pass's tokens, model.sampling_imbalance)."""
    if isinstance(moe_imbalance, M.ExpertSkew):  # hot experts (model.ExpertSkew), on top of the sampling noise
        return
    if isinstance(moe_imbalance, str):
        if moe_imbalance != "sampling":
            raise InputError(f"MoE load imbalance must be a number >= 1 or 'sampling', got {moe_imbalance!r}")
        return
    require_positive("MoE load imbalance", moe_imbalance, fix="1.0 means uniform routing; use >= 1")
    if np.any(np.asarray(moe_imbalance) < 1):
        raise InputError(f"MoE load imbalance must be >= 1 (busiest GPU over the mean), got {moe_imbalance}")


#: A system row's `one_shot_all_reduce_max_gpus` caps the TP groups whose all-reduce may be one-shot (peer reads):
#: over PCIe without NVLink, vLLM's custom all-reduce refuses more than 2 GPUs (vllm 0.11.0
#: distributed/device_communicators/custom_all_reduce.py l.141-148: world size > 2 and not fully NVLink-connected),
#: so every all-reduce of a larger group is NCCL's ring, 2(n - 1) latency steps. False: one-shot on every fabric, as
#: every serving set up to cq was registered (post hoc on set cq: GLM-4.6-FP8 at TP 8 on eight RTX PRO 6000 over
#: PCIe, 42% too fast at concurrency 1).
PEER_ALL_REDUCE_LIMIT = True


def tiers(system: System, eff: Efficiency) -> tuple[N.Tier, N.Tier]:
    """(scale-up, scale-out) tiers: the system's per-GPU link rates, the efficiency's achieved fractions,
    and its step latencies (None: the system's catalog hop latencies). The one network model of every
    command, inference and training."""
    up_lat = system.scale_up_latency_s if eff.scale_up_latency_s is None else eff.scale_up_latency_s
    out_lat = system.scale_out_latency_s if eff.scale_out_latency_s is None else eff.scale_out_latency_s
    return (N.Tier("scale-up", system.scale_up_bytes_per_s, up_lat, eff.scale_up),
            N.Tier("scale-out", system.scale_out_bytes_per_s, out_lat, eff.scale_out))


@dataclass(frozen=True)
class SparseAttention:
    """Sparse attention: each query attends at most `c·√context` tokens ("sqrt", the lecture's form: DeepSeek's
    sparse-attention papers "put a square root in this term" [S 00:12:25–00:12:40], constant unstated) or
    `k` tokens ("topk": DeepSeek-V3.2's DSA selects 2,048 per query). Attention FLOPs and KV reads scale
    with the attended tokens; the cache still holds every token (memory unchanged). Ignores the selector's
    own cost (DSA's lightning indexer reads a small key cache of every token) and sliding-window layers'
    own cap (applied on top)."""

    kind: str  # "sqrt" | "topk"
    value: float  # c, or k tokens

    def __post_init__(self):
        if self.kind not in ("sqrt", "topk"):
            raise InputError(f"sparse attention must be sqrt:C or topk:K, got {self.kind!r}; e.g. topk:2048")
        require_positive(f"sparse attention {self.kind} parameter", self.value)

    @classmethod
    def parse(cls, text: str) -> "SparseAttention":
        """'sqrt:C' or 'topk:K' (the CLI's --sparse-attention)."""
        kind, _, val = str(text).partition(":")
        try:
            value = float(val)
        except ValueError:
            raise InputError(f"--sparse-attention must be sqrt:C or topk:K with a number, got {text!r}; "
                             "e.g. topk:2048 or sqrt:8") from None
        return cls(kind, value)


def attended(context, sparse: "SparseAttention | None"):
    """Tokens one query attends at `context` cached tokens: all of them, or min(context, c·√context) /
    min(context, k) under sparse attention. Broadcasts."""
    c = np.asarray(context, dtype=float)
    if sparse is None:
        return c
    cap = sparse.value * np.sqrt(c) if sparse.kind == "sqrt" else sparse.value
    return np.minimum(c, cap)


def busy(kernels, comm, overlap_comm: bool, mx=np.maximum):
    """The time a stage is busy: its kernels and its collectives overlapped (max) or one after the other
    (sum). The one place kernels and collectives are combined (`combine`; kernel_pass.apply combines measured
    terms with it)."""
    return mx(kernels, comm) if overlap_comm else kernels + comm


def combine(gemm_c, gemm_m, attn_c, attn_m, ew, comm, pp_s, overhead, pp, eff: Efficiency, perfect: bool,
            mx=np.maximum):
    """Step seconds from one stage's terms (the module docstring's `kernels`, `stage` and `step` lines): the one
    place a pass's terms become its time. Arrays (mx = np.maximum) or Python floats (mx = max: the simulator's
    mixed passes, whose attention terms are sums over the pass's parts)."""
    if eff.per_kernel:
        kernels = mx(gemm_c, gemm_m) + mx(attn_c, attn_m) + ew
    else:
        kernels = mx(gemm_c + attn_c, gemm_m + attn_m + ew)
    if not perfect:
        kernels = busy(kernels, comm, eff.overlap_comm, mx)
    one = pp == 1 if type(pp) is float or type(pp) is int else np.ndim(pp) == 0 and pp == 1  # (floats: no np.ndim)
    return (kernels if one else pp * kernels) + pp_s + overhead


@dataclass(frozen=True)
class StageTerms:
    """One pass's terms per pipeline stage, seconds (`core(..., stage_terms=True)`): GEMM compute and memory
    (weights, KV writes), attention compute and memory (KV reads), elementwise, the stage's collectives (TP, EP,
    CP), the pipeline's point-to-point sends per loop and the fixed overheads; `combine` makes them a step.
    `moe_c`, `moe_m`: the routed experts' share of gemm_c and gemm_m (their GEMMs and weight reads), which
    under attention data parallelism serve the tokens of every DP rank, where the rest serves one rank's."""

    gemm_c: Any
    gemm_m: Any
    attn_c: Any
    attn_m: Any
    ew: Any
    comm: Any
    pp_s: Any
    overhead: float
    pp: Any
    moe_c: Any = 0.0
    moe_m: Any = 0.0


def _pick(opt, default):
    return default if opt is None else opt


def core(model: M.Model, system: System, layout: Layout, batch, context, L, phase: str, *, b_w, b_kv, b_act,
         peak_w, peak_act, eff: Efficiency, low_precision=False, imbalance=1.0, price=1.0,
         usable_memory=DEFAULT_USABLE_MEMORY, attention_flops=True, distinct_experts=True, kv_writes=True,
         causal=True, sparse=None, times_only=False, terms_only=False, stage_terms=False, experts=None):
    """Array core of the engine (module docstring): every numeric argument and the layout's degrees may
    be NumPy arrays that broadcast (the planner passes its whole candidate grid). No validation here.
    Returns a PassResult, only the step times with `times_only` (the simulator's table), or the loop's
    (compute, memory) terms with `terms_only` (the critical batch's bisection), or the stage's StageTerms with
    `stage_terms` (the simulator's mixed passes, which sum attention over their parts). `causal=False`
    counts a prefill's attention over the full L×L square (Narayanan et al. 2021 eq. (3)'s convention).
    `sparse` (a SparseAttention) caps the tokens each query attends, for attention FLOPs and KV reads.
    `experts` = (bytes per weight, peak FLOP/s, low precision) of the routed experts when their format
    differs from the other weights' (an NVFP4/MXFP4 checkpoint keeps attention and dense layers in BF16/FP8);
    None: the experts are in the weights' format (their streaming fraction is Efficiency.memory_experts)."""
    m = model
    b_we, peak_we, lp_we = experts if experts is not None else (b_w, peak_w, None)
    mem_we = eff.memory_experts
    tp, ep, pp, dp = (np.asarray(x, dtype=float) for x in (layout.tp, layout.ep, layout.pp, layout.dp))
    B, ctx, L = (np.asarray(x, dtype=float) for x in (batch, context, L))
    moe_tp = np.asarray(layout.moe_tp, dtype=float)
    perfect = layout.perfect
    acc, chips = system.accelerator, system.chips
    cp = float(layout.cp)
    f = stage_fraction(m, pp, layout.virtual_stages)
    b = B / pp
    T = b * L
    Tg = T / dp / cp  # tokens one GPU's GEMMs see: a DP group's share, split over its cp context ranks
    Te = T * moe_tp * ep / (tp * dp * cp)  # tokens through one MoE group (moe_tp·ep GPUs)
    moe_l = m.moe_layers
    E, k, Ne = (m.moe.experts, m.moe.active, M.expert_params(m)) if m.moe else (1, 0, 0.0)
    slots = E + layout.redundant_experts  # expert slots: routed experts + redundant copies (EPLB)
    if isinstance(imbalance, str):  # "sampling": the busiest EP GPU of a balanced router, for this pass's tokens
        lam = M.sampling_imbalance(Te, k, E, ep, slots) if m.moe else np.ones_like(ep)
    elif isinstance(imbalance, M.ExpertSkew):  # hot experts as placed (static or EPLB), times the sampling noise
        lam = (imbalance.factor(ep, layout.redundant_experts) * M.sampling_imbalance(Te, k, E, ep, slots) if m.moe
               else np.ones_like(ep))
    else:
        lam = np.where(ep > 1, imbalance, 1.0)

    # FLOPs and compute times (model.py counts; attention at the activation dtype's peak when the
    # efficiency says the kernels compute in it)
    dense_mm = M.matmul_params_per_token(m) - moe_l * k * Ne
    attn = 0.0
    if attention_flops:
        if phase == "decode":
            attn = M.attention_flops_per_token(m, attended(ctx + 1, sparse))
        elif causal:
            attn = M.attention_flops_per_token(m, attended(ctx + (L + 1.0) / 2.0, sparse))  # mean causal position
        else:
            attn = M.attention_flops_per_token(m, attended(ctx + L, sparse))
    # weight-gathered (Pope et al. 2022 §3.2.3): each layer's weights all-gathered over g GPUs (g = tp: XYZ; g < tp: the
    # partial X/XY layouts), each of the g takes B/g sequences; the tp/g GPUs sharing one gathered slice run 1D
    g = np.asarray(gathered_group(layout), dtype=float) if not perfect else 1.0
    gathered = not perfect and str(layout.weight_stationary).startswith("gathered")
    rows = Tg / g if gathered else Tg  # GEMM rows per GPU: its B/g sequences on a g/tp slice of each matrix
    dense_flops = f * Tg * 2 * dense_mm / tp
    expert_flops = f * Te * 2 * moe_l * k * Ne / (moe_tp * ep) * lam
    attn_flops = f * Tg * attn / tp
    # an expert's GEMMs see only the tokens routed to it: Te·k over the experts hit (expected distinct of the
    # E + R slots; at least one row), λ× that on the busiest GPU (the tile-occupancy curve gemm_efficiency
    # applies per GEMM, so per expert, not to the pass's tokens)
    rows_e = (Te * k / np.maximum(M.expected_distinct_experts(slots, k, Te), 1.0) * lam) if m.moe else rows
    moe_c = expert_flops / (peak_we * gemm_efficiency(rows_e, eff))
    gemm_c = dense_flops / (peak_w * gemm_efficiency(rows, eff)) + moe_c
    attn_c = attn_flops / ((peak_act if eff.attention_at_activation_peak else peak_w) * _pick(eff.attention, eff.compute))

    # bytes and memory times: dense weights a DP group reads (1/tp each), distinct experts per GPU, KV
    if distinct_experts:
        def distinct(tokens):
            return M.expected_distinct_experts(E, k, tokens) if m.moe else 0.0 * tokens
        dense_read = M.weight_read_params(m, Tg) - moe_l * distinct(Tg) * Ne
        # a token's k experts land on k of the E + R slots (copies split a hot expert's tokens)
        expert_read = moe_l * M.expected_distinct_experts(slots, k, Te) * Ne / (moe_tp * ep) if m.moe else 0.0
    else:  # every weight once (the lecture's W_total)
        dense_read = M.dense_params(m) + 0.0 * Tg
        expert_read = moe_l * slots * Ne / (moe_tp * ep)
    bw = acc.hbm_bytes_per_s
    shard = kv_shard(m, tp, perfect, layout.attention)
    kv_scale = np.asarray(b_kv, dtype=float) / 2.0
    moe_m: Any = 0.0
    if gathered:  # the gathered g/tp slice of each layer is written to HBM ((g−1)/g of it) and read back
        dense_read = M.weight_read_params(m, rows)
        w_bytes = f * dense_read * (g / tp) * (2.0 - 1.0 / g) * b_w
        w_s = w_bytes / (bw * eff.memory)
    else:
        dense_w, expert_w = f * dense_read / tp * b_w, f * expert_read * b_we
        w_bytes = dense_w + expert_w
        moe_m = expert_w / (bw * (eff.memory if mem_we is None else mem_we))
        w_s = dense_w / (bw * eff.memory) + moe_m
    kvr_bytes = f * (b / dp) * M.kv_bytes_per_sequence(m, attended(ctx, sparse), "bf16") * kv_scale / (shard * cp)
    kvw_bytes = f * Tg * M.kv_bytes_per_token(m, "bf16") * kv_scale / shard * (1.0 if kv_writes else 0.0)
    kvw_s = kvw_bytes / (bw * eff.memory)
    kvr_s = kvr_bytes * eff.kv_read_multiplier / (bw * _pick(eff.kv_memory, eff.memory))
    gemm_m = w_s + kvw_s
    attn_m = kvr_s
    ew: Any = 0.0
    if np.any(np.asarray(eff.elementwise) > 0):
        ew_bytes = f * rows * M.elementwise_bytes_per_token(m, tp / g if gathered else tp, low_precision,
                                                            act_bytes=float(np.max(b_act)),
                                                          sequence_parallel=layout.sequence_parallel)
        ew = eff.elementwise * ew_bytes / (bw * _pick(eff.elementwise_memory, eff.memory))

    # communication on the tiers (none under perfect sharding)
    tp_s: Any = 0.0
    ep_s: Any = 0.0
    cp_s: Any = 0.0
    pp_s: Any = 0.0
    if not perfect:
        up, out = tiers(system, eff)
        up_bw, out_bw = up.effective_bytes_per_s, out.effective_bytes_per_s
        act = m.d_model * np.asarray(b_act, dtype=float)
        # groups the fabric cannot serve with one-shot peer reads take the ring (PEER_ALL_REDUCE_LIMIT)
        peer_max = system.one_shot_all_reduce_max_gpus if PEER_ALL_REDUCE_LIMIT else 0
        if gathered:  # Pope et al. 2022 §3.2.3: every layer all-gathers a g/tp slice of its matmul weights over g
            # GPUs, then the tp/g GPUs of a slice all-reduce their B/g sequences' activations (1D; none when g = tp)
            tp_s = f * m.layers * N.weight_gathered_s(dense_mm / m.layers * np.asarray(b_w, dtype=float), Tg * act, g, tp,
                                                      up_bw, up.latency_s, blocks=(m.layers + m.dense_mlp_layers) / m.layers)
        elif layout.weight_stationary == "2d":  # Pope et al. 2022 §3.2.2: each block's own X x tp/X grid
            b_a = np.asarray(b_act, dtype=float)
            qk, v = M.qk_v_dims(m)
            attn_in = m.heads * qk + m.kv_heads * (qk + v)  # q, k, v partial sums out of W_qkv
            tp_s = f * m.layers * N.weight_stationary_2d_s(Tg * act, Tg * attn_in * b_a, Tg * m.heads * v * b_a, tp,
                                                           up_bw, up.latency_s)
            if m.dense_mlp_layers:
                ff_in = (2 if m.gated_mlp else 1) * m.d_ff
                tp_s = tp_s + f * m.dense_mlp_layers * N.weight_stationary_2d_s(
                    Tg * act, Tg * ff_in * b_a, Tg * m.d_ff * b_a, tp, up_bw, up.latency_s)
        else:  # 1D (Megatron; Pope et al. §3.2.1): one all-reduce per attention block and per dense MLP
            ar = N.best_all_reduce_s(Tg * act, tp, up_bw, up.latency_s, one_shot_max=peer_max)
            tp_s = f * (m.layers + m.dense_mlp_layers) * ar
        if moe_l:
            naive, spans = LY.moe_gather_group(moe_tp, ep, tp)  # attention groups one MoE group serves
            if np.any(naive):  # their tokens all-gathered in, the expert outputs reduce-scattered back, then the
                # attention group's own all-reduce (vLLM's allgather_reducescatter dispatch, SGLang's DP attention)
                g_bw, g_lat = ((up_bw, up.latency_s) if np.all(moe_tp <= chips) else (out_bw, out.latency_s))
                gather = (N.all_gather_s(Te * act, spans, g_bw, g_lat) + N.reduce_scatter_s(Te * act, spans, g_bw, g_lat)
                          + N.best_all_reduce_s(Tg * act, tp, up_bw, up.latency_s, one_shot_max=peer_max))
            else:
                gather = 0.0
            tp_s = tp_s + f * moe_l * np.where(naive, gather, N.best_all_reduce_s(Tg * act, moe_tp, up_bw, up.latency_s, one_shot_max=peer_max))
        if layout.attention == "batch":  # Pope et al. 2022 §3.3: reshard q in, the output back, over the tp/g GPUs
            qk, v = M.qk_v_dims(m)        # that share the sequences (none when the whole layer is gathered, g = tp)
            per_gpu = Tg * m.heads * (qk + v) * np.asarray(b_act, dtype=float) / tp
            tp_s = tp_s + f * m.layers * N.all_to_all_s(per_gpu, tp / g, up_bw, up.latency_s)
        if moe_l and np.any(ep > 1):
            n_dom = np.ceil(moe_tp * ep / chips)
            a2a = N.all_to_all_two_tier_s(Te / (moe_tp * ep) * k * act * lam, n_dom, ep / n_dom, up_bw, out_bw,
                                          up.latency_s, out.latency_s)
            ep_s = np.where(ep > 1, 2 * f * moe_l * a2a.time_s, 0.0)
        if cp > 1:  # all-gather CP: each layer gathers its sequences' K and V (its heads) from the cp ranks
            tier_bw, tier_lat = (up_bw, up.latency_s) if np.all(tp * cp <= chips) else (out_bw, out.latency_s)
            layers = f * m.layers
            kv_all = f * (b / dp) * M.kv_bytes_per_sequence(m, ctx + L, "bf16") * kv_scale / shard
            cp_s = layers * N.all_gather_s(kv_all / layers, cp, tier_bw, tier_lat)
        if np.any(pp > 1):
            s = tp * dp * cp
            boundaries = pp if phase == "decode" else pp - 1
            n_out = np.minimum(off_domain_boundaries(s, pp, chips), boundaries)
            send = T * act / s
            pp_s = np.where(pp > 1, n_out * N.p2p_s(send, out_bw, out.latency_s)
                            + (boundaries - n_out) * N.p2p_s(send, up_bw, up.latency_s), 0.0)
    launch_gemm: Any = 0.0
    launch_attn: Any = 0.0
    launch_moe: Any = 0.0
    overhead = m.layers * eff.layer_overhead_s + eff.pass_overhead_s
    if eff.kernel_latency_s or eff.attention_latency_s:  # α per launch (model.kernels_per_pass)
        n_gemm, n_ew, n_attn = M.kernels_per_pass(m, low_precision, lp_we)
        n_quant, n_moe = M.kernels_inside_measured_ops(m, low_precision, lp_we)
        launch_gemm, launch_attn = (n_gemm + n_quant) * eff.kernel_latency_s, n_attn * eff.attention_latency_s
        launch_moe = n_moe * eff.kernel_latency_s
        overhead = overhead + n_gemm * eff.kernel_latency_s + n_ew * eff.kernel_latency_s + launch_attn
    loop = (lambda x: x) if pp.ndim == 0 and pp == 1 else (lambda x: pp * x)  # noqa: E731  stage → loop total

    stage_c = gemm_c + attn_c
    stage_m = gemm_m + attn_m + ew
    if terms_only:  # the critical batch's bisection: compute and memory only
        return loop(stage_c), loop(stage_m)
    comm_stage = tp_s + ep_s + cp_s
    if stage_terms:
        return StageTerms(gemm_c, gemm_m, attn_c, attn_m, ew, comm_stage, pp_s, overhead, pp, moe_c, moe_m)
    step_s = combine(gemm_c, gemm_m, attn_c, attn_m, ew, comm_stage, pp_s, overhead, pp, eff, perfect)
    if times_only:
        return step_s
    gemm_t, attn_t = np.maximum(gemm_c, gemm_m), np.maximum(attn_c, attn_m)
    kernels = gemm_t + attn_t + ew if eff.per_kernel else np.maximum(stage_c, stage_m)
    stage = kernels if perfect else busy(kernels, comm_stage, eff.overlap_comm)

    zero = np.zeros(np.broadcast_shapes(np.shape(Tg), np.shape(tp), np.shape(ep), np.shape(pp)))
    comm_loop = loop(comm_stage) + pp_s + zero
    compute_loop, memory_loop = loop(stage_c), loop(stage_m)
    upper = compute_loop + memory_loop + comm_loop + overhead
    bound = classify_bound(compute_loop, memory_loop, comm_loop)
    gpus = tp * dp * pp * cp
    tokens = B * L
    tok_s = tokens / step_s
    memory = memory_per_gpu(m, layout, B, ctx + L, bytes_per_weight=b_w, bytes_per_kv=b_kv, tokens_per_pass=L,
                            bytes_per_expert_weight=b_we,
                            activation_dtype="bf16")
    return PassResult(
        gemm_compute_s=loop(gemm_c), gemm_memory_s=loop(gemm_m), attention_compute_s=loop(attn_c),
        attention_memory_s=loop(attn_m), elementwise_s=loop(ew) + zero, compute_s=compute_loop,
        weight_read_s=loop(w_s), kv_read_s=loop(kvr_s), kv_write_s=loop(kvw_s), memory_s=memory_loop,
        gemm_s=loop(gemm_t), attention_s=loop(attn_t), tp_comm_s=loop(tp_s) + zero, ep_comm_s=loop(ep_s) + zero,
        cp_comm_s=loop(cp_s) + zero, pp_comm_s=pp_s + zero, comm_s=comm_loop, overhead_s=overhead + zero, stage_s=stage, step_s=step_s,
        step_upper_s=upper, bound=bound, tokens_per_s=tok_s, tokens_per_s_per_gpu=tok_s / gpus,
        tokens_per_s_per_sequence=L / step_s, usd_per_million_tokens=gpus * price / SECONDS_PER_HOUR / tok_s * 1e6,
        mfu=tokens * M.matmul_flops_per_token(m) / (step_s * peak_w * gpus),
        bandwidth_utilization=loop(w_bytes + kvr_bytes + kvw_bytes) / (step_s * bw),
        flops=tokens * (M.matmul_flops_per_token(m) + attn), bytes_read=gpus * (w_bytes + kvr_bytes),
        memory_per_gpu_bytes=memory.total_bytes, weights_per_gpu_bytes=memory.weights_bytes,
        kv_per_gpu_bytes=memory.kv_bytes, activations_per_gpu_bytes=memory.activations_bytes,
        fits=memory.total_bytes <= acc.hbm_bytes * usable_memory, gpus=gpus,
        domains=domains_per_replica(tp * dp * cp, pp, chips), usd_per_gpu_hour=float(np.max(price)),
        launch_gemm_s=launch_gemm + zero, launch_attention_s=launch_attn + zero, launch_moe_op_s=launch_moe + zero,
    )


def _flip_batch(evaluate, shape, lo=1e-3, hi=1e12, grid=96, iters=40):
    """Batch where the compute term first reaches the memory term, over an array of independent problems
    (`evaluate(B) -> (compute, memory)` broadcasting to `shape`): one pass over a log-spaced grid of
    `grid` batches brackets the first crossing, then `iters` bisection steps in log space narrow it (to
    ~1e-12 relative). inf where compute stays below memory up to `hi`."""
    g = np.geomspace(lo, hi, grid).reshape((grid,) + (1,) * len(shape))
    c, mem = evaluate(g)
    up = np.broadcast_to(c >= mem, (grid,) + tuple(shape))
    never = ~up.any(axis=0)
    first = np.argmax(up, axis=0)  # first grid batch that is compute-bound
    lo_a = np.log(g.ravel()[np.maximum(first - 1, 0)])
    hi_a = np.log(g.ravel()[first])
    lo_a = np.where(first == 0, np.log(lo) - 1.0, lo_a)
    for _ in range(iters):
        mid = 0.5 * (lo_a + hi_a)
        c, mem = evaluate(np.exp(mid))
        ok = c >= mem
        hi_a = np.where(ok, mid, hi_a)
        lo_a = np.where(ok, lo_a, mid)
    return np.where(never, np.inf, np.exp(hi_a))


def resolve_efficiency(system: System, weights_dtype, efficiency: Efficiency | None, realistic_: bool,
                       which: str = "mid", **options) -> Efficiency:
    """The Efficiency a command asked for: explicit, or the family's (`realistic`), never both."""
    if realistic_:
        if efficiency is not None and not efficiency.is_ideal:
            raise InputError("realistic predictions use the efficiency model's own factors; drop the explicit "
                             "efficiencies or the realistic switch")
        return realistic(system.accelerator, weights_dtype, which, **options)
    return efficiency if efficiency is not None else Efficiency()


def step(model: M.Model, system: System, batch, context, *, layout: Layout | None = None, gpus: int | None = None,
         phase: str = "decode", prompt=1, weights_dtype: str = "bf16", kv_dtype: str = "bf16",
         activation_dtype: str = "bf16", efficiency: Efficiency | None = None, realistic: bool = False,
         which: str = "mid", moe_imbalance: float | str = 1.0, usd_per_gpu_hour: float | None = None,
         usable_memory: float = DEFAULT_USABLE_MEMORY, attention_flops: bool = True, distinct_experts: bool = True,
         kv_writes: bool = True, check_context: bool = True, check_fit: bool = False, check: bool = True,
         details: bool = True, speculation=None, sparse_attention: SparseAttention | None = None,
         chips: int | None = None, expert_weights_dtype: str | None = None) -> PassResult:
    """Time, cost, bound and memory of one pass of `model` on `system` (module docstring formulas).

    batch: sequences per replica (B; all pp micro-batches in flight). context: tokens already cached per
    sequence (decode attends them; prefill adds `prompt` new tokens on top). phase 'decode' uses L = 1,
    'prefill' L = prompt. Batch, context and prompt broadcast.
    layout: None = the lecture's perfect sharding over `gpus` GPUs (default: the whole system), no
    communication. efficiency: None = the pure roofline; `realistic=True` = the family's cited factors at
    `which` ('mid', or the 'fast'/'slow' corners of their spread). `attention_flops=False,
    distinct_experts=False, kv_writes=False` with the pure roofline reproduces the lecture's board.
    `details=False` skips the critical batch and the latency floor (about 40 more passes of the engine on
    the context's shape), for callers that only need the pass. `speculation` (speculative.Speculation: γ
    draft tokens, acceptance α, draft cost f) turns a decode step into a verify pass of γ + 1 tokens per
    sequence plus γ draft steps, emitting E = (1 − α^(γ+1))/(1 − α) tokens per sequence (speculative.py;
    DeepSeek-V3's multi-token prediction is γ = 1 with an MTP module as the drafter); the time terms are the
    verify pass's, the rates count E tokens, and critical batch and floor stay those of plain decode.
    `sparse_attention` (SparseAttention) caps the tokens each query attends (c·√context or top-k).
    `chips` is the former name of `gpus`. `expert_weights_dtype`: the routed experts' format when it differs
    from `weights_dtype` (NVFP4/MXFP4 checkpoints keep attention and dense layers in BF16/FP8): their bytes,
    GEMM peak and weight-streaming factor; None = `weights_dtype`.
    """
    if phase not in ("decode", "prefill"):
        raise InputError(f"phase must be 'decode' or 'prefill', got {phase!r}")
    require_positive("batch", batch, fix="use at least one sequence")
    require_positive("context", context, allow_zero=True, fix="context counts cached tokens, 0 or more")
    require_positive("prompt", prompt, fix="a prefill pass needs at least one token")
    require_fraction("usable memory fraction", usable_memory)
    check_moe_imbalance(moe_imbalance)
    L = np.asarray(prompt, dtype=float) if phase == "prefill" else np.asarray(1.0)
    ctx = np.asarray(context, dtype=float)
    if check_context and model.max_context and np.any(ctx + L > model.max_context):
        worst = float(np.max(ctx + L))
        raise InputError(f"context {worst:,.0f} tokens exceeds {model.id}'s max_context {model.max_context:,}; use a "
                         f"context <= {model.max_context:,} or a model with a longer context")
    n = gpus if gpus is not None else chips
    if layout is None:
        layout = Layout.sharded(int(n or system.chips))
    elif check:
        validate(model, system, layout, batch)
    if layout.cp > 1 and phase == "decode":
        raise InputError(f"context parallelism (CP {layout.cp}) splits a prompt's tokens over GPUs: use it with "
                         "--phase prefill or in training; a decode step has one token per sequence, spread "
                         "sequences with DP instead")
    eff, experts = _experts_format(model, system, weights_dtype, expert_weights_dtype, efficiency, realistic, which)
    acc = system.accelerator
    price = resolve_price(system, usd_per_gpu_hour)
    kw: dict[str, Any] = dict(
              b_w=dtype_bytes(weights_dtype), b_kv=dtype_bytes(kv_dtype), b_act=dtype_bytes(activation_dtype),
              peak_w=acc.peak_flops(weights_dtype), peak_act=acc.peak_flops(activation_dtype), eff=eff,
              low_precision=weights_dtype.lower() in LOW_PRECISION, imbalance=moe_imbalance, price=price,
              usable_memory=usable_memory, attention_flops=attention_flops, distinct_experts=distinct_experts,
              kv_writes=kv_writes, sparse=sparse_attention)
    if experts:
        kw["experts"] = experts
    r = core(model, system, layout, batch, ctx, L, phase, **kw)
    if check_fit and not np.all(r.fits):
        i = np.unravel_index(np.argmax(r.memory_per_gpu_bytes), np.shape(r.memory_per_gpu_bytes))
        pick = lambda v: float(np.asarray(v)[i]) if np.ndim(v) else float(v)  # noqa: E731
        raise DoesNotFitError(
            f"{model.id} needs {pick(r.memory_per_gpu_bytes) / 1e9:,.1f} GB per GPU under {layout} on "
            f"{acc.id} ({usable_memory:.0%} of {acc.hbm_bytes / 1e9:,.0f} GB usable): weights "
            f"{pick(r.weights_per_gpu_bytes) / 1e9:,.1f} GB + KV {pick(r.kv_per_gpu_bytes) / 1e9:,.1f} GB; use more "
            f"GPUs or parallelism, a smaller batch or context, or fp8/fp4 weights and KV")

    spec = None
    if speculation is not None:
        if phase != "decode":
            raise InputError("speculative decoding (--spec-gamma) verifies drafted tokens in decode; drop it or use "
                             "--phase decode")
        r, spec = speculative_pass(model, system, layout, batch, ctx, r, speculation, kw)
    if not details:
        return replace(r, params_total=M.params_total(model), params_active=M.params_active(model),
                       kv_bytes_per_token=M.kv_bytes_per_token(model, kv_dtype), layout=str(layout),
                       efficiency=eff.family, speculation=spec)
    # critical batch and latency floor, on this engine: where its compute term reaches its memory term
    # (at this context, and at context 0), and its step at the smallest batch (one sequence per slot)
    def crossing(c):
        def evaluate(bb):
            return core(model, system, layout, bb, c, L, phase, terms_only=True, **kw)
        return _flip_batch(evaluate, np.broadcast_shapes(np.shape(c), np.shape(L)))

    b_kv_star = crossing(ctx)
    b_star = crossing(0.0)
    floor = core(model, system, layout, float(layout.dp * layout.pp), 0.0, 1.0, "decode", **kw).step_s
    return replace(r, params_total=M.params_total(model), params_active=M.params_active(model),
                 kv_bytes_per_token=M.kv_bytes_per_token(model, kv_dtype),
                 critical_batch=b_star if np.ndim(b_star) else float(b_star), critical_batch_with_kv=b_kv_star,
                 latency_floor_s=float(floor), layout=str(layout), efficiency=eff.family, speculation=spec)


def speculative_pass(model, system, layout, batch, ctx, decode: PassResult, sp, kw):
    """A speculative decode step (speculative.py's closed form on this engine): the verify pass of γ + 1
    tokens per sequence on the cached context plus γ draft steps of f decode steps each, emitting
    E tokens per sequence. Returns the verify pass with the step time and the rates of the whole step."""
    from .speculative import expected_tokens_per_step

    verify = core(model, system, layout, batch, ctx, float(sp.gamma + 1), "prefill", **kw)
    draft = sp.gamma * sp.draft_fraction * decode.step_s
    step_s = verify.step_s + draft
    e = float(expected_tokens_per_step(sp.alpha, sp.gamma))
    tokens = np.asarray(batch, dtype=float) * e
    tok_s = tokens / step_s
    gpus = verify.gpus
    info = {"gamma": int(sp.gamma), "alpha": float(sp.alpha), "draft_fraction": float(sp.draft_fraction),
            "tokens_per_step": e, "verify_s": _json_safe(np.asarray(verify.step_s).tolist()),
            "draft_s": _json_safe(np.asarray(draft).tolist()),
            "speed_up": _json_safe(np.asarray(e * decode.step_s / step_s).tolist())}
    return replace(verify, step_s=step_s, step_upper_s=verify.step_upper_s + draft, tokens_per_s=tok_s,
                   tokens_per_s_per_gpu=tok_s / gpus, tokens_per_s_per_sequence=e / step_s,
                   usd_per_million_tokens=gpus * verify.usd_per_gpu_hour / SECONDS_PER_HOUR / tok_s * 1e6,
                   mfu=verify.mfu * (e / (sp.gamma + 1)) * verify.step_s / step_s), info


def _experts_format(model: M.Model, system: System, weights_dtype: str, expert_weights_dtype: str | None,
                    efficiency: Efficiency | None, realistic: bool, which: str):
    """(the efficiency, core's `experts` triple or None) for routed experts stored as `expert_weights_dtype`
    where it differs from `weights_dtype` (MoE models only): bytes, GEMM peak and low-precision flag."""
    e_dtype = expert_weights_dtype if (expert_weights_dtype not in (None, weights_dtype) and model.moe) else None
    eff = resolve_efficiency(system, weights_dtype, efficiency, realistic, which,
                             **({"expert_weights_dtype": e_dtype} if e_dtype else {}))
    if not e_dtype:
        return eff, None
    return eff, (dtype_bytes(e_dtype), system.accelerator.peak_flops(e_dtype), e_dtype.lower() in LOW_PRECISION)


def step_time(model: M.Model, system: System, batch, tokens, context, *, layout: Layout | None = None,
              weights_dtype: str = "bf16", kv_dtype: str = "bf16", activation_dtype: str = "bf16",
              efficiency: Efficiency | None = None, realistic: bool = False, which: str = "mid",
              moe_imbalance: float = 1.0, attention_flops: bool = True, distinct_experts: bool = True,
              kv_writes: bool = True, stage_terms: bool = False, expert_weights_dtype: str | None = None):
    """Step seconds only, of a pass of `batch` sequences carrying `tokens` new tokens on `context` cached
    tokens each (tokens/batch per sequence; = batch is a decode step): the simulator's table. No checks
    beyond the efficiency's; no memory, bound or critical batch (a fraction of `step`'s work).
    `stage_terms=True` returns (StageTerms, the Efficiency used) instead: the terms `combine` adds up.
    `expert_weights_dtype`: the routed experts' format where it differs (as `step`)."""
    B = np.asarray(batch, dtype=float)
    layout = layout or Layout.sharded(system.chips)
    eff, experts = _experts_format(model, system, weights_dtype, expert_weights_dtype, efficiency, realistic, which)
    acc = system.accelerator
    out = core(model, system, layout, B, context, np.asarray(tokens, dtype=float) / B, "prefill",
               b_w=dtype_bytes(weights_dtype), b_kv=dtype_bytes(kv_dtype), b_act=dtype_bytes(activation_dtype),
               peak_w=acc.peak_flops(weights_dtype), peak_act=acc.peak_flops(activation_dtype), eff=eff,
               low_precision=weights_dtype.lower() in LOW_PRECISION, imbalance=moe_imbalance,
               attention_flops=attention_flops, distinct_experts=distinct_experts, kv_writes=kv_writes,
               times_only=not stage_terms, stage_terms=stage_terms, experts=experts)
    return (out, eff) if stage_terms else out
