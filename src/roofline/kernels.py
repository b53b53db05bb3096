"""Measured kernel times by shape: vectorised lookups in published kernel tables.

The tables (package data in roofline/kernels_data/, derived by scripts/derive_kernel_tables.py from NVIDIA
AIConfigurator's `aiconfigurator-core` 0.12.0 wheel, Apache-2.0; see kernels_data/NOTICE and
docs/kernels.md) hold latencies measured on real GPUs, one dense grid per (accelerator, kernel kind,
engine, framework version, dtype and other exact keys). Each lookup answers, broadcasting over NumPy arrays,

    KernelTime(seconds, covered, extrapolated, source, distance)

- seconds: the interpolated time (NaN where not covered);
- covered: a table exists for the exact keys (accelerator, engine, dtype, head_dim, MoE shape, …) and at
  least one measured grid corner surrounds the point;
- extrapolated: the point left the table's range on some axis, or a surrounding grid corner was not
  measured (then the measured corners' weights are renormalised);
- source: which table answered ("aiconfigurator-core 0.12.0 h100_sxm/gemm trtllm 1.3.0rc20 torch_flow bf16");
- distance: Σ over axes of |ln(x / x clamped to the table's range)|, 0 inside it.
fp16 is answered by the bf16 tables (the same tensor-core rate on every covered chip).

Interpolation (our own rule, not the source package's): log-log multilinear — ln t is interpolated linearly in ln x along
every axis, over the 2^d surrounding grid points. GEMM time is close to a power law in each of m, n, k
piecewise (flat at small sizes where latency dominates, linear where compute or bandwidth does), which
log-log interpolation follows exactly in either regime.
Extrapolation: below an axis's smallest measured value the time is held at that edge (a kernel does not
get faster than its smallest measured launch); above the largest, ln t continues the edge segment's
log-log slope, clipped to [0, p], where p is the axis's work exponent (1 for m, n, k, batch, heads,
tokens, bytes, KV length; 2 for a context-attention sequence, whose causal FLOPs grow as s²). Every such
point is flagged, and its distance outside the range (KernelTime.distance) lets callers widen intervals.
Attention grids were not measured at every large batch × long sequence (the collection harness's token
budget): where the surrounding cells are missing, the same sequences are looked up at half the batch
(repeatedly) and the time scaled by the batch ratio — attention kernels treat sequences independently, so
time is linear in batch once the GPU is full — flagged, with ln(ratio) added to the distance.

Ignores: kernels the tables do not hold (elementwise, norms, sampling), CUDA-graph vs eager launch gaps
beyond what each table's harness measured, clocks of a different SKU of the same chip, and overlap
between kernels (the engine composes them).
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from functools import cache, lru_cache
from importlib import resources
from typing import NamedTuple

import numpy as np

from .errors import InputError

ENGINES = ("trtllm", "sglang", "vllm")
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
TIERS = ("scale-up", "scale-out")
# Routing the MoE tables are read at: the power-law (exponent 1.01) token distribution over experts that NVIDIA
# AIConfigurator itself estimates with by default (ai-dynamo/aiconfigurator src/aiconfigurator/sdk/config.py,
# ModelConfig.workload_distribution = "power_law", which its model builders read as the "power_law_1.01" rows;
# commit ecb6adf9e1c0), not the perfectly balanced router the "balanced" rows time. Real routers are not balanced:
# at one EP rank the grouped GEMM runs uneven per-expert tile counts (1.03-1.26x the balanced time for Mixtral on
# H100/H200/B200), across EP ranks the busiest rank sets the layer's time (up to ~3.6x at EP 8).
MOE_ROUTING = "power_law_1.01"
MOE_DISTRIBUTIONS = ("balanced", "power_law_1.01")
# the catalog's fp4 names no table: FP4 GEMMs keep the factor model (reading the nvfp4 rows lost blind on serving
# set o; docs/kernels.md "Dtype names")
_DTYPE_ALIAS = {"fp16": "bf16", "bfloat16": "bf16", "float16": "bf16", "half": "bf16"}
# kinds whose first axis is a batch of independent sequences: time ∝ batch where the grid has no cell
_BATCH_LINEAR = ("context_attention", "generation_attention", "mla_context", "mla_generation")
_NCCL_OP = {"all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
            "all_to_all": "alltoall"}
# work exponent of each axis: the largest log-log slope an extrapolation may continue with
_WORK_EXPONENT = {"m": 1, "n": 1, "k": 1, "batch_size": 1, "isl": 2, "step": 1, "num_heads": 1,
                  "num_key_value_heads": 1, "num_tokens": 1, "moe_tp_size": 0, "moe_ep_size": 0,
                  "num_gpus": 1, "message_size": 1, "num_token": 1, "node_num": 1}


class KernelTime(NamedTuple):
    """One lookup: seconds, covered mask, extrapolated mask, the table's source id ('' if none), and the
    extrapolation distance Σ_axes |ln(x / x clamped to the table's range)| (0 inside the range)."""

    seconds: np.ndarray
    covered: np.ndarray
    extrapolated: np.ndarray
    source: str
    distance: np.ndarray


@lru_cache(maxsize=1)
def index() -> dict:
    """The tables' index (provenance, latency code, one record per table; kernels_data/index.json)."""
    return json.loads((resources.files("roofline") / "kernels_data" / "index.json").read_text())


@cache
def _by_kind(acc: str, kind: str) -> tuple:
    return tuple(t for t in index()["tables"] if t["accelerator"] == acc and t["kind"] == kind)


@cache
def _npz(acc: str):
    with resources.as_file(resources.files("roofline") / "kernels_data" / f"{acc}.npz") as path:
        return np.load(path)


@cache
def _grid(tid: int, acc: str):
    """(axes as ln values, ln t grid with NaN where not measured) of table `tid`."""
    z, code = _npz(acc), index()["latency_code"]
    n = len(index()["tables"][tid]["axes"])
    axes = tuple(np.log(z[f"{tid}/a{i}"]) for i in range(n))
    q = z[f"{tid}/q"]
    ln_t = np.where(q > 0, code["ln_t0"] + (q.astype(float) - 1.0) * code["ln_step"], np.nan)
    return axes, ln_t


def source_id(t: dict) -> str:
    """Human-readable provenance of table record `t`: package, system, kind, engine, version, kernel, keys."""
    s = index()["sources"][t["source"]]
    src = index()["source"]
    keys = " ".join(str(v) for v in t["keys"].values())
    return (f"{src['package']} {src['version']} {s['aic_system']}/{t['kind']} {s['engine']} "
            f"{s['framework_version']} {t['kernel_source'] or ''} {keys}").replace("  ", " ")


def accelerator_id(where) -> str:
    """Accelerator id of an Accelerator, a System (its accelerator) or a plain id string."""
    acc = getattr(where, "accelerator", where)
    return str(getattr(acc, "id", acc))


def _multilinear(tid: int, acc: str, x: np.ndarray):
    """Log-log multilinear interpolation of table `tid` at points x (N, d), each axis clamped to its range
    → (ln t, ok: some measured corner carries weight, gap: a weighted corner was not measured)."""
    axes, ln_t = _grid(tid, acc)
    lx = np.log(x)
    n_pts, d = lx.shape
    lo: list[np.ndarray] = []
    w: list = []  # per axis: interpolation weights, None where the axis has one value
    for ax, v in zip(axes, lx.T):
        if len(ax) == 1:  # one measured value: no interpolation along this axis
            lo.append(np.zeros(n_pts, int))
            w.append(None)
            continue
        vc = np.clip(v, ax[0], ax[-1])
        i = np.clip(np.searchsorted(ax, vc, side="right") - 1, 0, len(ax) - 2)
        lo.append(i)
        w.append((vc - ax[i]) / (ax[i + 1] - ax[i]))
    acc_v, acc_w, gap = np.zeros(n_pts), np.zeros(n_pts), np.zeros(n_pts, bool)
    for corner in range(1 << d):
        ups = [(corner >> j) & 1 for j in range(d)]
        if any(u and w[j] is None for j, u in enumerate(ups)):
            continue
        wc = np.ones(n_pts)
        for j, u in enumerate(ups):
            if w[j] is not None:
                wc = wc * (w[j] if u else 1.0 - w[j])
        val = ln_t[tuple(lo[j] + u for j, u in enumerate(ups))]
        good = np.isfinite(val)
        gap |= ~good & (wc > 1e-12)
        acc_v += np.where(good, wc * np.where(good, val, 0.0), 0.0)
        acc_w += np.where(good, wc, 0.0)
    ok = acc_w > 1e-9
    return np.where(ok, acc_v / np.where(ok, acc_w, 1.0), np.nan), ok, gap


def _interp(tid: int, acc: str, x: np.ndarray):
    """_multilinear plus the continuation above each axis's largest value (module docstring)
    → (ln t, ok, extrapolated, distance)."""
    axes, _ = _grid(tid, acc)
    names = index()["tables"][tid]["axes"]
    lx = np.log(x)
    out, ok, gap = _multilinear(tid, acc, x)
    extra = gap.copy()
    dist = np.zeros(len(x))
    for j, ax in enumerate(axes):
        extra |= (lx[:, j] < ax[0] - 1e-9) | (lx[:, j] > ax[-1] + 1e-9)
        dist += np.abs(lx[:, j] - np.clip(lx[:, j], ax[0], ax[-1]))
    clamped = np.exp(np.column_stack([np.clip(lx[:, j], ax[0], ax[-1]) for j, ax in enumerate(axes)]))
    for j, ax in enumerate(axes):
        over = lx[:, j] > ax[-1] + 1e-9
        if not over.any() or len(ax) < 2:
            continue
        p = _WORK_EXPONENT.get(names[j], 1)
        prev = clamped[over].copy()
        prev[:, j] = np.exp(ax[-2])
        edge = clamped[over].copy()
        edge[:, j] = np.exp(ax[-1])
        slope = (_multilinear(tid, acc, edge)[0] - _multilinear(tid, acc, prev)[0]) / (ax[-1] - ax[-2])
        slope = np.where(np.isfinite(slope), np.clip(slope, 0.0, p), p)
        out[over] = out[over] + slope * (lx[over, j] - ax[-1])
    return out, ok, extra, dist


def _pick(acc: str, kind: str, engine: str | None, keys: dict, kernel: str | None = None) -> dict | None:
    """The table of `kind` on `acc` whose keys equal `keys`, from `engine` (None: the first of ENGINES
    that has one; 'nccl' for NCCL tables). `kernel`: only tables whose kernel source contains it, from `engine`
    first, then from the other engines' collectors (one kernel measured by another engine's harness)."""
    if engine is not None and engine not in ENGINES + ("nccl",):
        raise InputError(f"unknown engine {engine!r}: expected one of {', '.join(ENGINES)}; pick one of those")
    order: tuple[str, ...] = (engine,) if engine else ENGINES + ("nccl",)
    if kernel:
        order = order + tuple(e for e in ENGINES if e not in order)
    for eng in order:
        for t in _by_kind(acc, kind):
            if (t["engine"] == eng and all(t["keys"].get(k) == v for k, v in keys.items())
                    and (not kernel or kernel in (t["kernel_source"] or ""))):
                return t
    return None


#: recent lookups and their results (a lookup is a pure function of its arguments: the tables are package data).
#: A simulation tabulates the same grid of passes once per variant (seeds, overhead corners) and the interval's
#: corners read every engine's tables at the points the central one read, so the repeats are answered from here.
#: Bounded (least recently used dropped); the cached arrays are read-only, so no caller can alter a later answer.
_MEMO: OrderedDict[tuple, KernelTime] = OrderedDict()
_MEMO_SIZE = 1024


def _lookup(acc, kind: str, engine, keys: dict, *coords, strict: bool = False, kernel: str | None = None) -> KernelTime:
    """`strict`: a point off an axis the table measured at one value only is not covered (else the table's
    value at that one point stands in for it, flagged extrapolated). The coordinates are broadcast together;
    along an axis where none of them varies (a step table's GEMM sizes along its context axis, for one) the
    points are looked up once and the answer broadcast back; a repeated lookup is answered from _MEMO."""
    acc = accelerator_id(acc)
    arrs = list(np.broadcast_arrays(*(np.asarray(c, dtype=float) for c in coords)))
    shape = arrs[0].shape
    for j in range(len(shape)):
        if shape[j] > 1 and all(np.array_equal(a, np.take(a, [0], axis=j).repeat(shape[j], axis=j)) for a in arrs):
            arrs = [np.take(a, [0], axis=j) for a in arrs]
    digest = hashlib.blake2b(digest_size=16)
    for a in arrs:
        digest.update(np.ascontiguousarray(a).tobytes())
    key = (acc, kind, engine, tuple(sorted(keys.items())), strict, kernel, arrs[0].shape, digest.digest())
    out = _MEMO.get(key)
    if out is None:
        out = _lookup_new(acc, kind, engine, keys, arrs, strict, kernel)
        for a in (out.seconds, out.covered, out.extrapolated, out.distance):
            a.flags.writeable = False
        _MEMO[key] = out
        if len(_MEMO) > _MEMO_SIZE:
            _MEMO.popitem(last=False)
    else:
        _MEMO.move_to_end(key)
    if out.seconds.shape == shape:
        return out
    return KernelTime(np.broadcast_to(out.seconds, shape), np.broadcast_to(out.covered, shape),
                      np.broadcast_to(out.extrapolated, shape), out.source, np.broadcast_to(out.distance, shape))


def _lookup_new(acc: str, kind: str, engine, keys: dict, arrs: list[np.ndarray], strict: bool,
                kernel: str | None = None) -> KernelTime:
    """_lookup of points not asked before (`arrs`: the coordinates broadcast together)."""
    shape = arrs[0].shape
    t = _pick(acc, kind, engine, keys, kernel)
    if t is None:
        nan = np.full(shape, np.nan)
        return KernelTime(nan, np.zeros(shape, bool), np.zeros(shape, bool), "", nan)
    if np.any(arrs[0] <= 0) or any(np.any(a <= 0) for a in arrs):
        raise InputError(f"{kind} lookup needs positive sizes, got a value <= 0; pass sizes >= 1")
    x = np.stack([a.ravel() for a in arrs], axis=1)
    ln_t, ok, extra, dist = _interp(t["id"], acc, x)
    if kind in _BATCH_LINEAR:  # grid cells not measured at large batch (the harness's token budget):
        for _ in range(12):    # the same sequences at half the batch, twice the time, until measured
            miss = ~ok & (x[:, 0] > 1)
            if not miss.any():
                break
            x[miss, 0] = np.maximum(np.floor(x[miss, 0] / 2), 1)
            l2, ok2, _, d2 = _interp(t["id"], acc, x[miss])
            ratio = arrs[0].ravel()[miss] / x[miss, 0]
            ln_t[miss] = l2 + np.log(ratio)
            ok[miss], extra[miss], dist[miss] = ok2, True, d2 + np.log(ratio)
    if strict:
        for ax, v in zip(_grid(t["id"], acc)[0], np.log(x).T):
            if len(ax) == 1:
                ok = ok & np.isclose(v, ax[0])
    sec = np.where(ok, np.exp(ln_t), np.nan).reshape(shape)
    return KernelTime(sec, ok.reshape(shape), (extra & ok).reshape(shape), source_id(t), dist.reshape(shape))


def _dt(dtype: str) -> str:
    d = str(dtype).lower()
    return _DTYPE_ALIAS.get(d, d)


def gemm_s(acc, dtype: str, m, n, k, engine: str | None = None) -> KernelTime:
    """Time of one GEMM C[m×n] = A[m×k]·B[k×n] (m: tokens, n: output features, k: input features) in
    `dtype` ('bf16', 'fp8' per-tensor scaled, 'fp8_block' DeepSeek-style block scaling), measured."""
    return _lookup(acc, "gemm", engine, {"gemm_dtype": _dt(dtype)}, m, n, k)


def context_attention_s(acc, batch, seq, heads, kv_heads, head_dim: int, *, dtype: str = "bf16",
                        kv_dtype: str = "bf16", engine: str | None = None) -> KernelTime:
    """Prefill (context) attention kernel over `batch` sequences of `seq` tokens each, with `heads` query
    and `kv_heads` KV heads on this GPU (already divided by TP), causal, full attention."""
    keys = {"attn_dtype": _dt(dtype), "kv_cache_dtype": _dt(kv_dtype), "head_dim": int(head_dim)}
    return _lookup(acc, "context_attention", engine, keys, batch, seq, heads, kv_heads)


def generation_attention_s(acc, batch, kv_len, heads, kv_heads, head_dim: int, *, kv_dtype: str = "bf16",
                           engine: str | None = None) -> KernelTime:
    """Decode (generation) attention kernel: one new token for each of `batch` sequences reading a KV cache
    of `kv_len` tokens, `heads`/`kv_heads` per GPU."""
    keys = {"attn_dtype": "bf16", "kv_cache_dtype": _dt(kv_dtype), "head_dim": int(head_dim)}
    return _lookup(acc, "generation_attention", engine, keys, batch, kv_len, heads, kv_heads)


def mla_s(acc, phase: str, batch, length, heads, *, kv_dtype: str = "bf16", engine: str | None = None) -> KernelTime:
    """DeepSeek MLA attention kernel (the attention core, without its projections; DeepSeek-V3 head
    sizes): phase 'prefill' → `batch` sequences of `length` tokens; 'decode' → one token per sequence
    over a cache of `length` tokens; `heads` query heads on this GPU (128/TP for DeepSeek-V3)."""
    if phase not in ("prefill", "decode"):
        raise InputError(f"phase must be prefill or decode, got {phase!r}")
    kind = "mla_context" if phase == "prefill" else "mla_generation"
    return _lookup(acc, kind, engine, {"mla_dtype": "bf16", "kv_cache_dtype": _dt(kv_dtype)}, batch, length, heads)


def attention_s(acc, phase: str, batch, length, heads, kv_heads, head_dim: int, *, mla: bool = False,
                dtype: str = "bf16", kv_dtype: str = "bf16", engine: str | None = None) -> KernelTime:
    """One entry for the engine: MLA or MHA/GQA attention, prefill or decode (see the functions above)."""
    if mla:
        return mla_s(acc, phase, batch, length, heads, kv_dtype=kv_dtype, engine=engine)
    if phase == "prefill":
        return context_attention_s(acc, batch, length, heads, kv_heads, head_dim, dtype=dtype,
                                   kv_dtype=kv_dtype, engine=engine)
    if phase == "decode":
        return generation_attention_s(acc, batch, length, heads, kv_heads, head_dim, kv_dtype=kv_dtype,
                                      engine=engine)
    raise InputError(f"phase must be prefill or decode, got {phase!r}")


#: Fused MoE kernels a launch can name (`moe_kernel`), each the marker its tables' kernel source carries. auto: the
#: engine's own rows (the first table of the engine with the shape and format). trtllm-gen: the TensorRT-LLM-gen fused
#: MoE kernels, which TensorRT-LLM runs with `moe_config: backend: TRTLLM` (TRTLLMGenFusedMoE) and FlashInfer ships as
#: trtllm_*_moe (SGLang's flashinfer_trtllm runner, vLLM's FlashInfer TRTLLM experts); AIConfigurator measured them
#: through its SGLang and vLLM collectors (kernel sources sglang_flashinfer_trtllm_moe, vllm_*_flashinfer_trtllm_*),
#: while its TensorRT-LLM rows time the default CUTLASS backend (DeepGEMM for block-scaled FP8 on Blackwell:
#: CutlassFusedMoE picks DeepSeekFP8BlockScalesFusedMoEMethodDeepGemm on SM100). docs/kernels.md "Naming the MoE kernel".
MOE_KERNELS = {"auto": None, "trtllm-gen": "flashinfer_trtllm"}


def moe_s(acc, dtype: str, tokens, *, hidden: int, inter: int, topk: int, experts: int, tp: int = 1,
          ep: int = 1, distribution: str | None = None, engine: str | None = None, strict: bool = False,
          kernel: str = "auto") -> KernelTime:
    """Grouped-GEMM MoE layer (gate/up, activation, down over the routed experts on one GPU) for `tokens`
    tokens entering the layer, model shape (hidden, inter = one expert's d_ff, topk, experts), sharded
    over moe tp × ep. Covered only for MoE shapes the tables measured (exact hidden/inter/topk/experts);
    the tokens per expert and experts per GPU follow from tokens·topk/experts and experts/ep. `distribution`:
    the router's token distribution the rows were measured with, "balanced" or "power_law_1.01" (default
    MOE_ROUTING, AIConfigurator's own default). `strict`: as _lookup (a moe tp or ep the table measured at
    one value only does not stand in for another). `kernel` (MOE_KERNELS): only the rows of that fused kernel,
    `engine`'s own first, else another engine's collector's."""
    distribution = MOE_ROUTING if distribution is None else distribution
    if distribution not in MOE_DISTRIBUTIONS:
        raise InputError(f"unknown MoE routing distribution {distribution!r}: expected one of "
                         f"{', '.join(MOE_DISTRIBUTIONS)}")
    if kernel not in MOE_KERNELS:
        raise InputError(f"unknown MoE kernel {kernel!r}: expected one of {', '.join(MOE_KERNELS)}; name the fused "
                         "MoE kernel the launch runs, or auto for the engine's own rows")
    keys = {"moe_dtype": _dt(dtype), "hidden_size": int(hidden), "inter_size": int(inter), "topk": int(topk),
            "num_experts": int(experts), "distribution": distribution}
    return _lookup(acc, "moe", engine, keys, tokens, tp, ep, strict=strict, kernel=MOE_KERNELS[kernel])


#: The MoE tables' formats: (bytes per weight, the tensor-core format whose peak the GEMMs run at). Scale factors
#: (one per 128×128 block, 32 or 16 weights) are left out of the bytes.
_MOE_FORMAT = {"bf16": (2.0, "bf16"), "fp8": (1.0, "fp8"), "fp8_block": (1.0, "fp8"), "int4_wo": (0.5, "bf16"),
               "w4a16_mxfp4": (0.5, "bf16"), "w4a8_mxfp4_mxfp8": (0.5, "fp8"), "nvfp4": (0.5, "fp4")}
#: The farthest measured MoE shape moe_transfer_s reads (Σ |ln ratio| over hidden, inter, topk and experts; 1.5 ≈ one
#: dimension 4.5× off). Chosen, not fitted.
MOE_TRANSFER_MAX_DISTANCE = 1.5


def moe_roofline_s(acc, dtype: str, tokens, *, hidden: int, inter: int, topk: int, experts: int, tp=1, ep=1):
    """The roofline time (on `acc`: a System, an Accelerator or a catalog id) of one GPU's routed experts in one MoE layer (the work moe_s's tables measured), with
    `tokens` the tables' num_tokens (tokens each of the ep ranks brings, T·ep in all) and balanced routing:

        pairs  P = T·k                                 (token-expert pairs per GPU)
        experts touched  u = E·(1 − (1 − k/E)^(T·ep)) / ep   (model.expected_distinct_experts)
        FLOPs  F = 2·P·3·H·I/tp                        (gate, up and down GEMMs; gated experts)
        bytes  W = u·3·H·(I/tp)·w + 2·P·H·2            (weights in the format, activations in and out in 16 bits)
        t = max(F / peak(format), W / HBM bandwidth)

    Ignores the routing kernels, the activation, scale factors and partial tiles. Broadcasts."""
    from .catalog import accelerator
    from .model import expected_distinct_experts

    wbytes, core = _MOE_FORMAT[_dt(dtype)]
    a = getattr(acc, "accelerator", acc)  # a System's accelerator, an Accelerator, or an id of the catalog's
    if not hasattr(a, "flops_per_s"):
        a = accelerator(accelerator_id(a))
    peak = a.flops_per_s.get(core) or a.flops_per_s["bf16"]
    T, tp, ep = (np.asarray(x, dtype=float) for x in (tokens, tp, ep))
    pairs, cols = T * topk, inter / tp
    touched = expected_distinct_experts(experts, topk, T * ep) / ep
    return np.maximum(6.0 * pairs * hidden * cols / peak,
                      (touched * 3.0 * hidden * cols * wbytes + 4.0 * pairs * hidden) / a.hbm_bytes_per_s)


def moe_transfer_s(acc, dtype: str, tokens, *, hidden: int, inter: int, topk: int, experts: int, tp=1, ep=1,
                   distribution: str | None = None, engine: str | None = None, strict: bool = False,
                   max_distance: float = MOE_TRANSFER_MAX_DISTANCE) -> KernelTime:
    """A MoE shape without rows of its own, read from the nearest measured shape of the same GPU, engine, format and
    routing: shape s' = (H', I', k', E') nearest by d = Σ |ln(x / x')| over (hidden, inter, topk, experts), at most
    `max_distance`; read at the same tokens per expert, T' = T·k·E' / (k'·E), and the same moe tp and ep; scaled by
    the two shapes' MoE rooflines (moe_roofline_s):

        t(s, T) = t_measured(s', T') · roofline(s, T) / roofline(s', T')

    so the fused kernel's measured efficiency at that load carries over to the new shape. A point the nearest shape
    does not cover is read from the next one. Extrapolated everywhere; distance = the table's own + d (which widens
    the interval, kernel_pass.WIDEN_PER_LN). An exact shape is moe_s's, not this."""
    distribution = MOE_ROUTING if distribution is None else distribution
    d = _dt(dtype)
    want = np.log([hidden, inter, topk, experts])
    cands = []
    for i, eng in enumerate((engine,) if engine else ENGINES):
        for t in _by_kind(accelerator_id(acc), "moe"):
            k = t["keys"]
            if t["engine"] != eng or k["moe_dtype"] != d or d not in _MOE_FORMAT or k["distribution"] != distribution:
                continue
            s = (k["hidden_size"], k["inter_size"], k["topk"], k["num_experts"])
            dist = float(np.abs(np.log(s) - want).sum())
            if 0 < dist <= max_distance:
                cands.append((dist, i, s, eng))
    T = np.asarray(tokens, dtype=float)
    shape = np.broadcast(T, np.asarray(tp, float), np.asarray(ep, float)).shape
    sec, dist_out = np.full(shape, np.nan), np.full(shape, np.nan)
    cov = np.zeros(shape, bool)
    sources: list[str] = []
    if not cands:  # no measured shape near enough, or a format no table has: not covered
        return KernelTime(sec, cov, cov.copy(), "", dist_out)
    own = moe_roofline_s(acc, d, T, hidden=hidden, inter=inter, topk=topk, experts=experts, tp=tp, ep=ep)
    for dist, _, (H2, I2, k2, E2), eng in sorted(cands):
        T2 = T * topk * E2 / (k2 * experts)
        r = moe_s(acc, d, np.maximum(T2, 1.0), hidden=H2, inter=I2, topk=k2, experts=E2, tp=tp, ep=ep,
                  distribution=distribution, engine=eng, strict=strict)
        new = np.broadcast_to(r.covered, shape) & ~cov
        if not new.any():
            continue
        theirs = moe_roofline_s(acc, d, np.maximum(T2, 1.0), hidden=H2, inter=I2, topk=k2, experts=E2, tp=tp, ep=ep)
        sec = np.where(new, r.seconds * own / theirs, sec)
        dist_out = np.where(new, r.distance + dist, dist_out)
        cov = cov | new
        sources.append(f"{r.source} scaled from shape {H2}x{I2} top-{k2} of {E2}")
        if cov.all():
            break
    return KernelTime(sec, cov, cov.copy(), "; ".join(sources), dist_out)


#: The collective tables' size axis `message_size` counts 16-bit ELEMENTS, not bytes: AIConfigurator's NCCL collector
#: logs nccl-tests' byte size // 2 for its fp16 rows (collector/network/collect_nccl.py, `size // bytes_per_element`)
#: and its custom all-reduce collector all-reduces bf16 tensors of `message_size` elements
#: (collector/network/collect_all_reduce.py; aic-core's communication.rs: "size = x * h (element count, not bytes)").
#: So a buffer of B bytes is read at B / 2. False: read at B, as every serving set up to af and the scenario rows were
#: registered (found post hoc on set ae: its 8,192-token passes, TP all-reduce at half the nccl-tests bus bandwidth).
COLLECTIVE_SIZE_IN_ELEMENTS = True
TABLE_ELEMENT_BYTES = 2


def collective_s(acc, kind: str, nbytes, n_gpus, tier: str = "scale-up", engine: str | None = None) -> KernelTime:
    """Collective of `kind` over `n_gpus` GPUs moving `nbytes` (nccl-tests' size: the per-rank buffer of an
    all-reduce, the full gathered buffer of all-gather/reduce-scatter, the per-rank send buffer of an
    all-to-all), read at nbytes / 2 on the tables' axis of 16-bit elements (COLLECTIVE_SIZE_IN_ELEMENTS).
    All-reduce uses the engine's own custom all-reduce table where one was measured, else NCCL's. The tables
    hold one scale-up domain only (NVLink: 2–8 GPUs, 2–4 on GB200/GB300 trays): a scale-out tier is never
    covered. One GPU: zero time, covered."""
    if kind not in COLLECTIVES:
        raise InputError(f"unknown collective {kind!r}: expected one of {', '.join(COLLECTIVES)}")
    if tier not in TIERS:
        raise InputError(f"unknown tier {tier!r}: expected one of {', '.join(TIERS)}")
    nb, g = np.broadcast_arrays(np.asarray(nbytes, float), np.asarray(n_gpus, float))
    if COLLECTIVE_SIZE_IN_ELEMENTS:
        nb = nb / TABLE_ELEMENT_BYTES  # the tables' message_size: elements of 2 bytes
    if tier == "scale-out":
        nan = np.full(nb.shape, np.nan)
        r = KernelTime(nan, np.zeros(nb.shape, bool), np.zeros(nb.shape, bool), "", nan)
    else:
        custom = None
        if kind == "all_reduce" and engine in ENGINES:
            custom = _lookup(acc, "custom_allreduce", engine, {"allreduce_dtype": "bf16"}, g, np.maximum(nb, 1))
        nccl = {"op_name": _NCCL_OP[kind], "nccl_dtype": "fp16"}
        r = (custom if custom is not None and custom.source
             else _lookup(acc, "nccl", "nccl", nccl, np.maximum(g, 2), np.maximum(nb, 1)))
    one = g <= 1
    return KernelTime(np.where(one, 0.0, r.seconds), r.covered | one, r.extrapolated & ~one, r.source,
                      np.where(one, 0.0, r.distance))


def ep_all_to_all_s(acc, phase: str, tokens, *, hidden: int, topk: int, experts: int, nodes=1, mode: str = "ll",
                    engine: str | None = None) -> KernelTime:
    """Expert-parallel all-to-all with DeepEP: `phase` 'dispatch' (tokens to their experts' GPUs) or 'combine'
    (results back), of `tokens` tokens per rank over `nodes` nodes of 8 GPUs (EP = 8·nodes; NVLink inside a
    node, RDMA across), `mode` 'll' (low-latency kernels, decode) or 'normal' (prefill); model shape
    (hidden, topk, experts) exact. Measured by SGLang's wide-EP benchmark on H100/H200 (1-8 nodes) and
    one node of the other systems: the only tables that cross nodes."""
    if phase not in ("dispatch", "combine"):
        raise InputError(f"phase must be dispatch or combine, got {phase!r}")
    if mode not in ("ll", "normal"):
        raise InputError(f"mode must be ll (low-latency) or normal, got {mode!r}")
    keys = {"op_name": mode, "hidden_size": int(hidden), "num_topk": int(topk), "num_experts": int(experts)}
    return _lookup(acc, f"ep_{phase}", engine, keys, tokens, nodes)


#: the engine families with measured tables (an engine row takes its family's: vllm-v0 -> vllm)
TABLE_ENGINES = ("trtllm", "sglang", "vllm")


def table_family(engine: str) -> str | None:
    """The engine family whose measured kernel tables an engine row takes (`vllm-v0` -> vllm), None for none."""
    return next((e for e in TABLE_ENGINES if str(engine).lower().startswith(e)), None)


def default_kernels(accelerator: str, engine: str, *, realistic: bool, expert_weights_dtype: str | None = None,
                    legacy_experts: bool = False) -> str:
    """`--kernels auto` (simulate, step, grid scenarios): "tables" for a realistic pass with an engine family
    (vLLM, SGLang or TensorRT-LLM rows) whose measured GEMM tables cover the accelerator; "factor" otherwise
    (the pure roofline, engine none, an accelerator without tables such as the MI300X). The rule the blind
    serving sets g to m were registered with; post hoc over the NVIDIA runs of sets a, e and f the tables took
    end-to-end mean APE from 56/36/57% to 40/27/44% (docs/simulator.md, "Measured kernels by default").
    Routed experts in their own format (--expert-weights-dtype) take the MoE table of that format
    (kernel_pass._moe_dtypes) since set x; `legacy_experts` gives the rule of sets g to w, "factor" whenever the
    experts have their own format (from before the tables were looked up in the experts' format)."""
    fam = table_family(engine)
    if not realistic or fam is None or (legacy_experts and expert_weights_dtype):
        return "factor"
    return "tables" if any(t["engine"] == fam for t in _by_kind(str(accelerator), "gemm")) else "factor"


def coverage() -> list[dict]:
    """One row per (accelerator, kind, engine): framework and versions, dtypes, tables and measured cells."""
    rows: dict[tuple, dict] = {}
    for t in index()["tables"]:
        s = index()["sources"][t["source"]]
        key = (t["accelerator"], t["kind"], t["engine"])
        r = rows.setdefault(key, {"accelerator": t["accelerator"], "kind": t["kind"], "engine": t["engine"],
                                  "framework": s["framework"], "framework_versions": set(),
                                  "aic_system": s["aic_system"], "dtypes": set(), "tables": 0, "cells_measured": 0})
        r["framework_versions"].add(s["framework_version"])
        r["dtypes"] |= {str(v) for k, v in t["keys"].items() if k.endswith("dtype")}
        r["tables"] += 1
        r["cells_measured"] += t["cells_measured"]
    return [dict(r, dtypes=sorted(r["dtypes"]), framework_versions=sorted(r["framework_versions"]))
            for r in rows.values()]
