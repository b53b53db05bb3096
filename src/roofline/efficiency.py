"""Efficiency model: achieved fractions of peak per accelerator family and regime, with sources.

The pure roofline (roofline.step with Efficiency() = 1.0) is an upper bound on speed. Real kernels reach
a fraction of peak that depends on the regime; this module makes each fraction an explicit, cited
factor with a (low, high) spread, and combines them into a predicted pass time:

    η_gemm(T)  = η_max · T / (T + T_½)                        GEMM efficiency vs rows T = tokens in pass
    t_compute  = F_matmul / (n·P·η_gemm(T)) + F_attn / (n·P·η_attn)
    t_memory   = W / (n·BW·η_w) + KV_read / (n·BW·η_kv) + KV_write / (n·BW·η_w)
    t_comm     = TP all-reduces + EP dispatch/combine + PP p2p    from parallel_step (tiers carry η, α)
    t_ew       = φ · E(tp) · B·L / (dp·pp·BW·η_w)     elementwise kernels (model.elementwise_bytes_per_token)
    t_kernels  = max(t_gemm_c, t_gemm_m) + max(t_attn_c, t_attn_m) + t_ew       per-kernel roofline
    t_pass     = t_kernels + t_comm + L·τ_layer + τ_pass

Sources of the shape: the saturating GEMM curve is the standard tile-occupancy argument (a GEMM with T
rows fills ⌈T/128⌉ of the 128-row output tiles of CUTLASS/cuBLAS kernels, so below ~128 rows the tensor
cores idle; NVIDIA "Matrix Multiplication Background User's Guide", §"Dimension quantization effects");
communication terms are parallel_step's (Megatron's 2 all-reduces per layer, EP all-to-all on the
scale-up or scale-out tier, stage boundaries); NVIDIA "Getting Started with CUDA
Graphs" (2019) for µs-scale per-kernel launch gaps. The per-kernel roofline (each kernel bound by its
own resource, kernels executed in sequence, so their times add) is Williams, Waterman & Patterson,
"Roofline" (CACM 2009) applied operator by operator, as LLM-Viewer (arXiv 2402.16363) and GenZ
(arXiv 2406.01698) do per layer; it is grouped here into the GEMMs, the attention kernels and the
memory-bound elementwise kernels. Each factor below names the microbenchmark or kernel-level figure it
comes from. NO factor was fitted to the end-to-end cases of roofline.validate.

Ignores: wave quantization at specific shapes, clock throttling under sustained load (folded into the
spread), communication/compute overlap unless the caller says the engine overlaps it (comm is added:
an upper-side choice), the K and N sizes of a GEMM.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from . import model as M
from .errors import InputError
from .hardware import Accelerator, System
from .roofline import Efficiency, step
from .units import dtype_bytes

WHICH = ("mid", "fast", "slow")  # central value; optimistic corner; pessimistic corner
LOW_PRECISION = ("fp8", "int8", "fp6", "fp4")  # formats whose GEMMs use the low-precision factor


@dataclass(frozen=True)
class Factor:
    """One efficiency factor: central value, spread (low, high) and where it comes from."""

    value: float
    low: float
    high: float
    source: str

    def __post_init__(self):
        if not (self.low <= self.value <= self.high):
            raise InputError(f"factor needs low <= value <= high, got {self.low}, {self.value}, {self.high}")

    def pick(self, which: str, faster_when_high: bool = True) -> float:
        """'mid' → value; 'fast' → the corner that makes the pass faster; 'slow' → the other one."""
        if which == "mid":
            return self.value
        if which not in WHICH:
            raise InputError(f"which must be one of {', '.join(WHICH)}, got {which!r}")
        want_high = (which == "fast") == faster_when_high
        return self.high if want_high else self.low


@dataclass(frozen=True)
class FamilyEfficiency:
    """The factors of one accelerator family (fractions of the catalog's datasheet peaks)."""

    family: str
    gemm: Factor  # large-GEMM fraction of dense 16-bit peak
    gemm_low_precision: Factor  # large-GEMM fraction of dense fp8/int8/fp4 peak
    gemm_half_tokens: Factor  # T_½: rows at which a GEMM reaches half of η_max
    weight_bandwidth: Factor  # fraction of peak HBM bandwidth when streaming 16-bit weights (GEMV/GEMM)
    weight_bandwidth_low_precision: Factor  # the same for fp8/int8/fp4 weights (scaling/dequant in the kernel)
    kv_bandwidth: Factor  # fraction of peak HBM bandwidth of decode-attention KV reads
    attention_compute: Factor  # fraction of dense peak reached by attention FLOPs (flash kernels)
    scale_up_bandwidth: Factor  # achieved fraction of per-direction scale-up link rate in collectives
    scale_up_step_latency_s: Factor  # α: latency of one algorithm step of a scale-up collective
    scale_out_bandwidth: Factor  # achieved fraction of per-direction scale-out (NIC) rate in collectives
    scale_out_step_latency_s: Factor  # α of one step across domains (NIC, switches)
    elementwise_traffic: Factor  # share of model.elementwise_bytes_per_token's unfused traffic that runs
    layer_overhead_s: Factor  # fixed time per layer per pass (kernel launch gaps, small kernels)
    pass_overhead_s: Factor  # fixed time per pass (sampling, scheduling, host work)
    #: Optional measured curve ((rows, η), ...) replacing η_max·T/(T+T_½) (calibrated profiles only:
    #: `roofline calibrate` measures it at the model's own GEMM shapes); log-linear interpolation in T.
    gemm_curve: tuple = ()

    def gemm_max(self, dtype: str) -> Factor:
        return self.gemm_low_precision if dtype.lower() in LOW_PRECISION else self.gemm

    def weight_stream(self, dtype: str) -> Factor:
        return self.weight_bandwidth_low_precision if dtype.lower() in LOW_PRECISION else self.weight_bandwidth


_CUDA_GRAPH = ("NVIDIA 'Getting Started with CUDA Graphs' (developer.nvidia.com blog, 2019): launch "
               "overhead of a few µs per kernel, ~1 µs gaps inside a graph; a Llama layer runs ~8-12 kernels")
_DEEPGEMM = ("DeepGEMM README, first release (github.com/deepseek-ai/DeepGEMM, 2025-02; H800, NVCC 12.8, FP8 "
             "with 1x128/128x128 block scaling)")
_UNFUSED = Factor(1.0, 0.5, 1.25, "operator count of model.elementwise_bytes_per_token, each operator its "
                 "own kernel (eager PyTorch, Megatron's unfused path; TensorRT-LLM v0.5's docs list SwiGLU as a "
                 "separate kernel); 0.5: pairs fused (residual+norm, activation+quantise); 1.25: extra "
                 "copies and transposes (estimate)")
_TILE = ("CUTLASS/cuBLAS 128-row output tiles: NVIDIA 'Matrix Multiplication Background' guide "
         "(docs.nvidia.com/deeplearning/performance), tile and wave quantization")

#: Families keyed by the catalog's `vendor` field (code never names a specific chip).
FAMILIES: dict[str, FamilyEfficiency] = {
    "nvidia": FamilyEfficiency(
        family="nvidia",
        gemm=Factor(0.75, 0.60, 0.82, "FlashAttention-3 (arXiv 2407.08608): 740 TFLOP/s = 75% of H100 "
                    "BF16 peak; cuBLAS large BF16 GEMMs reach ~0.7-0.8 of H100 peak"),
        gemm_low_precision=Factor(0.70, 0.50, 0.81, "cuBLASLt FP8 8192^3 GEMM 1,609 TFLOP/s on H100 = 0.81 "
                                  "(d-robotics test_gpu_scripts report, 2026-05-24); Azure ND GB200 v6 FP8 "
                                  "GEMM 2,744 of 5,000 TFLOP/s = 0.55 (Azure HPC blog 4399253, 2025); " + _DEEPGEMM
                                  + ": M=4096 at DeepSeek-V3 shapes with K >= 1536, 990-1,358 of 1,979 TFLOP/s "
                                  "= 0.50-0.69 (0.30 at K=512); tilelang FP8 benchmark on H800, M=N=8192, "
                                  "K=4096-16384: 1,378-1,541 = 0.70-0.78 (xwhzz/tilelang benchmark/matmul_fp8)"),
        gemm_half_tokens=Factor(64.0, 32.0, 128.0, _TILE),
        weight_bandwidth=Factor(0.85, 0.75, 0.92, "FlashMLA 3,000 of 3,350 GB/s on H800 = 0.90 (DeepSeek "
                                "FlashMLA README 2025); Azure GB200 HBM 7.35 TB/s = 0.92 (Azure HPC blog); "
                                "GEMV kernels a few points lower"),
        weight_bandwidth_low_precision=Factor(0.69, 0.45, 0.80, _DEEPGEMM + ": FP8 GEMMs with M=64 and "
                                              "M=128 rows (weight streaming) at 12 DeepSeek-V3 shapes reach "
                                              "1,509-2,668 of 3,350 GB/s = 0.45-0.80, median 2,300 = 0.69; "
                                              "its CUTLASS 3.6 baseline was 1.4-2.7x slower at those shapes"),
        kv_bandwidth=Factor(0.85, 0.70, 0.90, "FlashMLA decode, memory-bound: 3,000 GB/s of 3,350 on H800 "
                            "(0.90, best case); paged/GQA kernels lower"),
        attention_compute=Factor(0.65, 0.35, 0.75, "FlashAttention-3 forward 0.75 of H100 peak; FlashMLA "
                                 "compute-bound decode 660/989 = 0.67; FlashAttention-2 on H100 0.35 (FA3 paper)"),
        scale_up_bandwidth=Factor(0.80, 0.65, 0.90, "NCCL ring all-reduce bus bandwidth 365-370 of 450 GB/s on "
                                  "8x H100 NVLink (nccl issue #1455; sjeaugey in nccl-tests #212: '~20% protocol "
                                  "overhead'); DeepEP intranode EP8 153-158 of 200 GB/s on H800 = 0.77-0.79"),
        scale_up_step_latency_s=Factor(3e-6, 1.5e-6, 5e-6, "small-message all-reduce ~6 µs on 2x H100 NVLink "
                                       "with CUDA graphs (NVLSTree, NCCL 2.20, nccl issue #1259) = 2 steps of "
                                       "~3 µs; 4x H800 ring 1 KiB 3.5 µs without graphs (nccl issue #1984); "
                                       "one-shot custom all-reduce on H100 without graphs, 512 B: 3.7/4.8/5.9 "
                                       "µs at 2/4/8 GPUs (sgl-project/sglang PR #2904, 2025-01)"),
        scale_out_bandwidth=Factor(0.90, 0.78, 0.95, "DeepEP internode normal kernels 43-58 GB/s RDMA per "
                                   "H800 with a 50 GB/s CX7 NIC (DeepEP README legacy docs, 2025)"),
        scale_out_step_latency_s=Factor(10e-6, 5e-6, 25e-6, "DeepEP low-latency EP8 dispatch 77 µs for 128 "
                                        "tokens x 7 KiB (RDMA, mostly bandwidth); IB one-hop ~2-5 µs plus "
                                        "NCCL proxy: estimate"),
        elementwise_traffic=_UNFUSED,
        layer_overhead_s=Factor(10e-6, 5e-6, 25e-6, _CUDA_GRAPH),
        pass_overhead_s=Factor(100e-6, 30e-6, 500e-6, "estimate: sampling + scheduler + host sync per "
                               "step, 0.03-0.5 ms in TensorRT-LLM/vLLM traces"),
    ),
    "amd": FamilyEfficiency(
        family="amd",
        gemm=Factor(0.50, 0.40, 0.65, "SemiAnalysis MI300X vs H100 vs H200 Benchmark Part 1 (2024-12, as recalled, not re-read here): "
                    "MI300X BF16 GEMMs ~600-700 of 1,307 TFLOP/s"),
        gemm_low_precision=Factor(0.45, 0.35, 0.60, "same source, FP8 GEMMs a similar or lower fraction"),
        gemm_half_tokens=Factor(64.0, 32.0, 128.0, _TILE),
        weight_bandwidth=Factor(0.75, 0.65, 0.85, "MI300X achieved HBM ~4.0-4.3 of 5.3 TB/s (SemiAnalysis "
                                "2024-12; AMD ROCm bandwidth tests)"),
        weight_bandwidth_low_precision=Factor(0.75, 0.65, 0.85, "as 16-bit weights: no low-precision "
                                              "weight-streaming kernel figure for this family here"),
        kv_bandwidth=Factor(0.70, 0.55, 0.85, "as weight bandwidth, paged attention kernels lower"),
        attention_compute=Factor(0.45, 0.30, 0.60, "ROCm FlashAttention-2 / CK kernels, ~0.4-0.6 of peak "
                                 "(AMD ROCm blogs 2024)"),
        scale_up_bandwidth=Factor(0.70, 0.55, 0.85, "xGMI all-reduce bus bandwidth ~0.7 of link rate (RCCL "
                                  "tests as reported by SemiAnalysis 2024-12)"),
        scale_up_step_latency_s=Factor(4e-6, 2e-6, 10e-6, "RCCL all-reduce of 8 B-1 KiB over 16 MI250X "
                                       "GCDs, 25-31 µs before a one-shot path was added (ROCm/rccl PR #929, "
                                       "2023-10); MSCCL++ on 8x MI300X, fp16 1-16 KiB: 5.4-6.6 µs (microsoft/"
                                       "mscclpp PR #736, 2026-01); 2 steps of 4 µs sits between the two"),
        scale_out_bandwidth=Factor(0.85, 0.70, 0.95, "estimate: RoCE/IB NIC, as NVIDIA family"),
        scale_out_step_latency_s=Factor(10e-6, 5e-6, 25e-6, "estimate, as NVIDIA family"),
        elementwise_traffic=_UNFUSED,
        layer_overhead_s=Factor(15e-6, 8e-6, 40e-6, _CUDA_GRAPH + " (HIP graphs, similar)"),
        pass_overhead_s=Factor(200e-6, 50e-6, 1e-3, "estimate: vLLM scheduler + sampling per step"),
    ),
    "google": FamilyEfficiency(
        family="google",
        gemm=Factor(0.85, 0.70, 0.95, "estimate: large XLA matmuls on TPU MXUs run near peak "
                    "(scaling-book 'How to Scale Your Model', ch. 1-2)"),
        gemm_low_precision=Factor(0.80, 0.65, 0.92, "as bf16, int8 MXU path"),
        gemm_half_tokens=Factor(128.0, 64.0, 256.0, "128x128 MXU (v4): a matmul needs ~128 rows to fill it "
                                "(scaling-book ch. 2)"),
        weight_bandwidth=Factor(0.85, 0.75, 0.92, "estimate: HBM streaming on TPU ~0.8-0.9 (scaling-book)"),
        weight_bandwidth_low_precision=Factor(0.85, 0.75, 0.92, "as 16-bit weights: no low-precision "
                                              "weight-streaming kernel figure for this family here"),
        kv_bandwidth=Factor(0.80, 0.65, 0.90, "estimate: no TPU kernel-level figure in the reference data"),
        attention_compute=Factor(0.60, 0.40, 0.75, "estimate: Pallas flash attention"),
        scale_up_bandwidth=Factor(0.80, 0.65, 0.90, "estimate: ICI collectives"),
        scale_up_step_latency_s=Factor(2e-6, 1e-6, 5e-6, "estimate: ICI hop, no measured figure here"),
        scale_out_bandwidth=Factor(0.80, 0.60, 0.90, "estimate: data-centre network between pods"),
        scale_out_step_latency_s=Factor(20e-6, 10e-6, 50e-6, "estimate: DCN between pods"),
        elementwise_traffic=Factor(0.5, 0.25, 1.0, "estimate: XLA fuses chains of elementwise operators into "
                                   "one pass and often into the neighbouring matmul (scaling-book ch. on "
                                   "TPUs), so about half of the unfused operator traffic"),
        layer_overhead_s=Factor(5e-6, 2e-6, 15e-6, "estimate: XLA fuses a layer into few ops"),
        pass_overhead_s=Factor(100e-6, 30e-6, 500e-6, "estimate: no TPU kernel-level figure in the reference data"),
    ),
}

#: Used for a vendor with no family above (and for calibrated profiles before calibration fills it).
GENERIC = replace(FAMILIES["nvidia"], family="generic")


def family_for(acc: Accelerator) -> FamilyEfficiency:
    """The efficiency family of an accelerator (by its catalog vendor), GENERIC when unknown."""
    return FAMILIES.get(acc.vendor.lower(), GENERIC)


def _by_format(dtype, fn):
    """fn(name) for a format name, or elementwise for an array of names (once per distinct name)."""
    names, pos = np.unique(np.asarray(dtype, dtype=str), return_inverse=True)
    return np.array([fn(n) for n in names])[pos].reshape(np.shape(dtype))


def gemm_efficiency(tokens, fam: FamilyEfficiency, dtype="bf16", which: str = "mid"):
    """η_gemm(T) = η_max · T/(T + T_½): fraction of dense peak reached by a GEMM with T rows.

    Source: tile-occupancy argument (module docstring). Broadcasts over tokens, and over `dtype` when it
    is an array of format names (the planner's candidates). Ignores the K and N dimensions (assumed
    large: d_model and d_ff are thousands) and wave quantization.
    """
    t = np.asarray(tokens, dtype=float)
    low = _by_format(dtype, lambda n: n.lower() in LOW_PRECISION)
    eta = np.where(low, fam.gemm_low_precision.pick(which), fam.gemm.pick(which))
    if fam.gemm_curve:
        r, e = (np.asarray(c, dtype=float) for c in zip(*fam.gemm_curve))
        # eta is 1.0 at 'mid' for calibrated profiles; the corners scale the measured curve
        return eta * np.interp(np.log(np.maximum(t, 1e-9)), np.log(r), e)
    half = fam.gemm_half_tokens.pick(which, faster_when_high=False)
    return eta * t / (t + half)


def efficiency_for(acc: Accelerator, tokens: float, dtype: str = "bf16", which: str = "mid") -> Efficiency:
    """A roofline.Efficiency for step(): GEMM efficiency at `tokens` rows and weight-read bandwidth.

    step() takes one compute and one memory fraction; the attention and KV factors and the fixed
    overheads are not representable there — use predict_pass for those.
    """
    fam = family_for(acc)
    return Efficiency(compute=float(gemm_efficiency(tokens, fam, dtype, which)),
                      memory=fam.weight_stream(dtype).pick(which))


@dataclass(frozen=True)
class PassTime:
    """Predicted time of one pass (seconds), by term; arrays when inputs were arrays."""

    step_s: np.ndarray
    compute_s: np.ndarray
    memory_s: np.ndarray
    comm_s: np.ndarray
    overhead_s: np.ndarray
    gemm_s: np.ndarray  # the GEMM kernels: max(their compute, weight + KV-write streaming)
    attention_s: np.ndarray  # the attention kernels: max(their compute, KV reads)
    elementwise_s: np.ndarray  # norms, residual adds, rotary, activation, quantisation: memory-bound


def family_tiers(system: System, fam: FamilyEfficiency, which: str = "mid"):
    """(scale-up, scale-out) network.Tier with the family's achieved bandwidth and step latency."""
    from .network import Tier

    slow_high = dict(faster_when_high=False)
    up = Tier("scale-up", system.scale_up_bytes_per_s, fam.scale_up_step_latency_s.pick(which, **slow_high),
              fam.scale_up_bandwidth.pick(which))
    out = Tier("scale-out", system.scale_out_bytes_per_s, fam.scale_out_step_latency_s.pick(which, **slow_high),
               fam.scale_out_bandwidth.pick(which))
    return up, out


def predict_pass(model: M.Model, system: System, batch, context, *, phase: str = "decode", prompt=1,
                 weights_dtype: str = "bf16", kv_dtype: str = "bf16", activation_dtype: str = "bf16",
                 tp: int = 1, ep: int = 1, pp: int = 1, dp: int = 1, domains: int = 1,
                 overlap_comm: bool = False, moe_imbalance: float = 1.0, kv_per_query_head: bool = False,
                 fam: FamilyEfficiency | None = None, which: str = "mid") -> PassTime:
    """Pass time of one replica under layout (tp, ep, pp, dp) with the family's efficiency factors.

    The ideal terms and the communication come from parallel_step.parallel_step (its TP all-reduces,
    EP dispatch/combine on the right tiers and pipeline p2p), run with Efficiency() = 1 and network
    tiers carrying the family's achieved bandwidths and step latencies; this function divides each
    ideal term by its own factor (module docstring):

        t_compute = t_matmul/η_gemm(T_gpu) + t_attn/η_attn             T_gpu = B·len/(pp·dp) rows
                    (t_attn at the activation dtype's peak: flash kernels compute in bf16/fp16)
        t_memory  = (t_weights + t_kv_write)/η_w + t_kv_read/η_kv
        t_kernels = max(t_matmul/η_gemm, (t_weights + t_kv_write)/η_w) + max(t_attn/η_attn, t_kv_read/η_kv)
                    + φ·elementwise bytes/η_w                        (norms, residuals, rotary, activation, casts)
        t_pass    = t_kernels + t_comm + L·τ_layer + τ_pass            (overlap_comm False)
                  = max(t_kernels, t_comm) + L·τ_layer + τ_pass        (overlap_comm True: e.g.
                    DeepSeek's dual micro-batch overlap of EP communication with compute)

    Decode TP all-reduces are not overlapped by default (each layer waits for its all-reduce).

    kv_per_query_head: the decode-attention kernel does not pack the query heads of a GQA/MQA group
    into one tile; each query head's thread block loads its KV head from HBM on its own, so the KV
    read is G = heads/kv_heads times the cache (TensorRT-LLM's masked multi-head attention kernel
    before its XQA kernel, which NVIDIA's 'New XQA-kernel provides 2.4x more Llama-70B throughput'
    blog (2024-01-30, TensorRT-LLM v0.8) says reduces this data loading; FlashAttention's pack-GQA
    option exists to remove the same redundant K/V loads). The central value is G×; the optimistic
    corner is 1× (the group's blocks hitting in L2), the pessimistic corner G×. Not for MLA models.
    """
    from .parallel_step import parallel_step

    fam = fam or family_for(system.accelerator)
    r = parallel_step(model, system, batch, context, tp=tp, ep=ep, pp=pp, dp=dp, domains=domains, phase=phase,
                      prompt=prompt, weights_dtype=weights_dtype, kv_dtype=kv_dtype,
                      activation_dtype=activation_dtype, tiers=family_tiers(system, fam, which),
                      moe_imbalance=moe_imbalance, check=False)
    L = np.asarray(prompt, dtype=float) if phase == "prefill" else np.asarray(1.0)
    return refine(model, system.accelerator, r, phase, batch, context, L, tp, dp, pp, weights_dtype,
                  activation_dtype, fam, which, kv_per_query_head=kv_per_query_head, overlap_comm=overlap_comm)


def refine(model: M.Model, acc: Accelerator, r, phase: str, batch, context, L, tp, dp, pp, weights_dtype,
           activation_dtype, fam: FamilyEfficiency, which: str = "mid", *, kv_per_query_head: bool = False,
           overlap_comm: bool = False) -> PassTime:
    """The efficiency model applied to an ideal parallel step `r` (parallel_step / step_core run at
    Efficiency() = 1 with the family's tiers): predict_pass's formulas, broadcasting over arrays of
    layouts, batches and weight formats (`weights_dtype` may be an array of names: the planner's grid)."""
    B = np.asarray(batch, dtype=float)
    tp, dp, pp = (np.asarray(x, dtype=float) for x in (tp, dp, pp))
    rows = B * L / (pp * dp)  # GEMM rows on one GPU per micro-batch
    ctx = np.asarray(context, dtype=float)
    attn = (M.prefill_attention_flops_per_token(model, L, ctx) if phase == "prefill"
            else M.attention_flops_per_token(model, ctx + 1))
    # attention FLOPs per GPU per loop: every layer of the B·L tokens, split over tp·dp GPUs and pp stages.
    # parallel_step counts them at the weights' peak; flash-attention kernels compute in the activation
    # dtype (Q·Kᵀ and P·V in bf16/fp16, an fp8 KV cache dequantised on load), so they run at that peak here.
    attn_flops = B * L * attn / (tp * dp * pp)
    peak_w = _by_format(weights_dtype, acc.peak_flops)
    matmul_s = np.maximum(r.compute_s - attn_flops / peak_w, 0.0)
    attn_s = attn_flops / acc.peak_flops(activation_dtype)
    gemm_c = matmul_s / gemm_efficiency(rows, fam, weights_dtype, which)
    attn_c = attn_s / fam.attention_compute.pick(which)
    eta_w = _by_format(weights_dtype, lambda n: fam.weight_stream(n).pick(which))
    gemm_m = (r.weight_read_s + r.kv_write_s) / eta_w
    attn_m = r.kv_read_s * kv_read_multiplier(model, kv_per_query_head, which) / fam.kv_bandwidth.pick(which)
    compute, memory = gemm_c + attn_c, gemm_m + attn_m
    comm = r.tp_comm_s + r.ep_comm_s + r.pp_comm_s
    slow_high = dict(faster_when_high=False)
    overhead = (model.layers * fam.layer_overhead_s.pick(which, **slow_high)
                + fam.pass_overhead_s.pick(which, **slow_high)) + 0.0 * rows
    # per-kernel roofline: the GEMMs and the attention kernels run one after the other, each bound by
    # its own resource, so their times add (a pass is not max(Σcompute, Σmemory) when one is compute-
    # bound and the other memory-bound, as in large-batch decode: FP8 GEMMs vs KV reads)
    gemm_s, attention_s = np.maximum(gemm_c, gemm_m), np.maximum(attn_c, attn_m)
    # elementwise kernels: every token of the loop through this GPU's layers (B·L/dp tokens, layers/pp)
    low = _by_format(weights_dtype, lambda n: n.lower() in LOW_PRECISION)
    ew_bytes = B * L * M.elementwise_bytes_per_token(model, tp, low, act_bytes=dtype_bytes(activation_dtype)) / (dp * pp)
    elementwise_s = (ew_bytes * fam.elementwise_traffic.pick(which, **slow_high)
                     / (acc.hbm_bytes_per_s * fam.weight_bandwidth.pick(which)))
    kernels = gemm_s + attention_s + elementwise_s
    busy = np.maximum(kernels, comm) if overlap_comm else kernels + comm
    return PassTime(step_s=busy + overhead, compute_s=compute, memory_s=memory + elementwise_s, comm_s=comm,
                    overhead_s=overhead, gemm_s=gemm_s, attention_s=attention_s, elementwise_s=elementwise_s)


def kv_read_multiplier(model: M.Model, per_query_head: bool, which: str = "mid") -> float:
    """KV bytes actually read per cached byte by the decode-attention kernel (predict_pass docstring):
    1 for kernels that share a KV head across its query-head group; G = heads/kv_heads ('mid', 'slow')
    or 1 ('fast': perfect L2 reuse) for kernels that load it once per query head."""
    if not per_query_head:
        return 1.0
    if model.mla:
        raise InputError(f"{model.id} caches MLA latents: per-query-head decode attention applies to "
                         "MHA/GQA/MQA caches only; use shared")
    return 1.0 if which == "fast" else model.heads / model.kv_heads


def factor_table(fam: FamilyEfficiency) -> list[tuple[str, float, float, float, str]]:
    """(name, value, low, high, source) rows of a family, for docs and the CLI."""
    out = []
    for name in FamilyEfficiency.__dataclass_fields__:
        f = getattr(fam, name)
        if isinstance(f, Factor):
            out.append((name, f.value, f.low, f.high, f.source))
    return out
