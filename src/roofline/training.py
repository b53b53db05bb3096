"""Training step time for a layout (TP, PP, DP/ZeRO, EP), and time, GPU-hours and $ to train on D tokens
(lecture §3.4; Narayanan et al. 2021 "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM", arXiv:2104.04473).

Per step (global batch G sequences of s tokens, n = tp·pp·dp GPUs, peak P per GPU):

    FLOPs/token (model)     6·N_matmul + 3·attn_fwd(s)              2 forward + 4 backward per weight
    FLOPs/token (hardware)  model + recompute extra (selective: attn_fwd; full/reversible: one forward)
    t_compute  = G·s·FLOPs_hw / (n·P·η_compute)
    t_elementwise = G·s·E_fwd(tp)·(3 + r)·φ / (dp·pp·BW·η_mem)    norms, residuals, rotary, activation,
                                                          fp8 casts (model.elementwise_bytes_per_token, forward;
                                                          backward ≈ 2× forward; r = 1 with a recomputed forward)
    t_tp       = m·L_stage·k_tp·AR(b·s·h·2 bytes, tp)     k_tp = 4 all-reduces per layer (2 fwd, 2 bwd;
                                                          Shoeybi et al. 2019 §3), +2 with a recomputed forward
    t_ep       = m·L_moe,stage·k_ep·A2A(b·s·k·h·2/tp, ep)  dispatch + combine, forward and backward
    bubble     f = (P−1)/(v·m + P−1)                      GPipe and 1F1B (v = 1), interleaved 1F1B (v chunks)
                                                          (Huang et al. 2019; Narayanan et al. 2021 §2.2)
    t_pp       = 2·v·m·p2p(b·s·h·2/tp) · (1 − overlap_pp)  activations forward, gradients backward
    t_dp       = k_zero·AR(Ψ·2 bytes, dp) · (1 − overlap_dp)   k_zero = 1 (ZeRO 0–2), 1.5 (ZeRO-3/FSDP)
    t_opt      = Ψ_shard·28 bytes / HBM BW                Adam reads/writes fp32 states + bf16 copies
    t_step     = (t_compute + t_elementwise + t_tp + t_ep)/(1 − f) + t_pp + t_dp + t_opt

MFU = G·s·FLOPs_model/(t_step·n·P) (Chowdhery et al. 2022, PaLM, App. B); HFU counts recomputation
(Korthikanti et al. 2022 §6) — Megatron 2021's "163 TFLOP/s per GPU" is hardware FLOPs.
Time to train on D tokens = D/(tokens per s); GPU-hours = time·n/3600; $ = GPU-hours·price.

Elementwise bytes include unfused attention's softmax and dropout over the s² scores and the dropout
masks (model.attention_dropout_bytes_per_token) when `flash_attention` is false or `dropout` true.
Ignores: the zero-bubble
schedules (Qi et al. 2023, arXiv:2401.10241, which split the backward into input and weight gradients
to fill the bubble — see docs/training.md), load imbalance across experts and stages, stragglers,
restarts and evaluation (which separate running time from wall-clock GPU-hours), data loading.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from . import model as M
from . import network as NET
from .errors import InputError, require_fraction, require_positive
from .efficiency import LOW_PRECISION
from .hardware import System
from .parallel import check_tensor_parallel
from .training_memory import (RECOMPUTE_MODES, TrainLayout, TrainingMemory, check_layout,
                              forward_attention_flops_per_token, params_per_gpu,
                              recompute_extra_flops_per_token, stage_layers, training_memory)
from .units import SECONDS_PER_HOUR

#: Bytes Adam touches per parameter in its update: read fp32 master, m, v (12) and the bf16 grad (2);
#: write master, m, v (12) and the bf16 weight (2) (ZeRO §3.1 state sizes).
ADAM_UPDATE_BYTES = 28.0


@dataclass(frozen=True)
class TrainEfficiency:
    """Explicit efficiency inputs; None means "the accelerator family's cited default" (efficiency.py).

    compute: achieved fraction of dense peak for training matmuls (default: the family's large-GEMM
             factor for the training dtype, e.g. 0.75 for NVIDIA bf16, 0.70 fp8).
    memory: achieved fraction of HBM bandwidth of the memory-bound elementwise kernels (default: the
             family's 16-bit streaming factor, 0.85 for NVIDIA).
    elementwise: share of the unfused elementwise traffic that runs (default: the family's
             elementwise_traffic factor, 1.0 for NVIDIA: one kernel per operator).
    scale_up / scale_out: achieved fraction of per-direction link rate in collectives
             (default: family scale-up factor; scale-out 0.8, NCCL over InfiniBand/RoCE estimate).
    overlap_dp / overlap_pp / overlap_tp: fraction of that communication hidden behind compute
             (defaults 0: Megatron-LM 2021 reduces gradients after the pipeline flush and sends
             synchronously; modern FSDP/DDP overlap most of the DP term — pass it).
    """

    compute: float | None = None
    memory: float | None = None
    elementwise: float | None = None
    scale_up: float | None = None
    scale_out: float = 0.8
    overlap_dp: float = 0.0
    overlap_pp: float = 0.0
    overlap_tp: float = 0.0

    def resolve(self, system: System, dtype: str = "bf16") -> "TrainEfficiency":
        from .efficiency import family_for

        fam = family_for(system.accelerator)
        out = TrainEfficiency(
            compute=fam.gemm_max(dtype).value if self.compute is None else self.compute,
            memory=fam.weight_bandwidth.value if self.memory is None else self.memory,
            elementwise=fam.elementwise_traffic.value if self.elementwise is None else self.elementwise,
            scale_up=fam.scale_up_bandwidth.value if self.scale_up is None else self.scale_up,
            scale_out=self.scale_out, overlap_dp=self.overlap_dp, overlap_pp=self.overlap_pp,
            overlap_tp=self.overlap_tp)
        for name in ("compute", "memory", "scale_up", "scale_out"):
            require_fraction(f"{name} efficiency", getattr(out, name))
        require_positive("elementwise traffic share", out.elementwise)
        for name in ("overlap_dp", "overlap_pp", "overlap_tp"):
            v = getattr(out, name)
            if not 0.0 <= v <= 1.0:
                raise InputError(f"{name} must be a fraction in [0, 1], got {v:g}; 0 = not overlapped")
        return out


def bubble_fraction(pp, micro_batches, virtual_stages=1):
    """Idle fraction of a pipelined step: (P−1)/(v·m + P−1).

    GPipe (Huang et al. 2019, §2.3) and 1F1B (PipeDream-Flush; Narayanan et al. 2021 §2.2.1) both give
    (P−1)/(m+P−1) of the step (ideal time (P−1)/m); interleaving v model chunks per GPU divides the
    bubble time by v (Narayanan et al. 2021 §2.2.2). Broadcasts.
    """
    require_positive("pipeline stages", pp)
    require_positive("micro-batches", micro_batches)
    require_positive("virtual stages", virtual_stages)
    P = np.asarray(pp, dtype=float)
    vm = np.asarray(virtual_stages, dtype=float) * np.asarray(micro_batches, dtype=float)
    return (P - 1.0) / (vm + P - 1.0)


def training_flops_per_token(m: M.Model, seq_len, recompute="none", *, causal=True):
    """(model, hardware) FLOPs per token: 3·(2·N_matmul + attn_fwd), plus the recompute extra."""
    fwd = M.matmul_flops_per_token(m) + forward_attention_flops_per_token(m, seq_len, causal=causal)
    model = 3.0 * fwd
    return model, model + recompute_extra_flops_per_token(m, seq_len, recompute, causal=causal)


@dataclass(frozen=True)
class TrainStep:
    """One training step: times in s (arrays when seq_len was an array), rates, costs, memory."""

    compute_s: np.ndarray
    elementwise_s: np.ndarray  # memory-bound non-matmul kernels (norms, residuals, activation, casts)
    tp_comm_s: np.ndarray
    ep_comm_s: np.ndarray
    bubble_s: np.ndarray
    pp_comm_s: np.ndarray
    dp_comm_s: np.ndarray  # exposed part
    optimizer_s: np.ndarray
    step_s: np.ndarray
    bubble_fraction: float
    tokens_per_step: np.ndarray
    tokens_per_s: np.ndarray
    model_flops_per_token: np.ndarray
    hardware_flops_per_token: np.ndarray
    mfu: np.ndarray
    hfu: np.ndarray
    model_tflops_per_gpu: np.ndarray
    hardware_tflops_per_gpu: np.ndarray
    gpus: int
    memory: TrainingMemory
    fits: np.ndarray
    usd_per_gpu_hour: float

    def time_to_train_s(self, tokens):
        """D / tokens per second (running time: no restarts, evaluation or idle)."""
        require_positive("training tokens", tokens)
        return np.asarray(tokens, dtype=float) / self.tokens_per_s

    def gpu_hours(self, tokens):
        return self.time_to_train_s(tokens) * self.gpus / SECONDS_PER_HOUR

    def usd(self, tokens):
        return self.gpu_hours(tokens) * self.usd_per_gpu_hour

    def to_dict(self, tokens=None) -> dict:
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, TrainingMemory):
                out["memory"] = v.to_dict()
                continue
            out[f.name] = v.tolist() if isinstance(v, np.ndarray) else v
        if tokens is not None:
            out["train_tokens"] = float(tokens)
            out["time_to_train_s"] = _plain(self.time_to_train_s(tokens))
            out["gpu_hours"] = _plain(self.gpu_hours(tokens))
            out["usd"] = _plain(self.usd(tokens))
        return out


def _plain(v):
    return v.tolist() if isinstance(v, np.ndarray) else float(v)


def train_step(m: M.Model, system: System, layout: TrainLayout, seq_len, *, recompute="none",
               efficiency: TrainEfficiency = TrainEfficiency(), causal=True, dtype="bf16",
               flash_attention=True, dropout=False, usd_per_gpu_hour: float | None = None,
               grad_comm_bytes=2.0, attention_dtype="bf16", sequence_parallel: bool = True) -> TrainStep:
    """Step time, rates, MFU/HFU, memory per GPU of `layout` on domains of `system` (module docstring).

    Placement (Megatron rank order: TP innermost, then DP, then PP): TP uses the scale-up tier (an
    error if tp exceeds the domain); DP the scale-up tier when tp·dp fits in a domain, else a
    hierarchical all-reduce (scale-up inside, scale-out across); stage boundaries cross domains unless
    tp·pp·dp fits in one; EP all-to-all spans ceil(tp·ep/chips) domains.

    `dtype` sets the GEMMs' peak; the attention core (QKᵀ, PV; flash kernels) runs at the peak of
    `attention_dtype` (bf16: FP8 training recipes such as Transformer Engine's quantise the GEMMs
    only), so t_compute = (F_gemm/P_dtype + F_attn/P_attention_dtype)·tokens/(n·η). MFU and HFU stay
    relative to the peak of `dtype`. `sequence_parallel` (Megatron, Korthikanti et al. 2022) splits the
    d-wide elementwise operators (norms, residual adds) over the TP ranks; without it every rank runs them.
    """
    check_layout(m, layout)
    if recompute not in RECOMPUTE_MODES:
        raise InputError(f"recompute must be one of {', '.join(RECOMPUTE_MODES)}, got {recompute!r}")
    require_positive("sequence length", seq_len)
    check_tensor_parallel(m, system, layout.tp)
    eff = efficiency.resolve(system, dtype)
    up, out = NET.tiers(system, scale_up_efficiency=eff.scale_up, scale_out_efficiency=eff.scale_out)
    acc = system.accelerator
    peak = acc.peak_flops(dtype)
    s = np.asarray(seq_len, dtype=float)
    n = layout.gpus
    P, mb, v, b = layout.pp, layout.micro_batches, layout.virtual_stages, layout.micro_batch
    tokens = layout.global_batch * s
    f_model, f_hw = training_flops_per_token(m, s, recompute, causal=causal)
    # attention core: 1 forward + 2 backward, +1 forward when recomputed (selective, full, reversible)
    f_attn = (3.0 + (recompute != "none")) * forward_attention_flops_per_token(m, s, causal=causal)
    compute_s = tokens * ((f_hw - f_attn) / peak + f_attn / acc.peak_flops(attention_dtype)) / (n * eff.compute)
    # elementwise kernels: forward bytes per token on one TP rank, backward ≈ 2× forward, +1 forward if recomputed
    ew = M.elementwise_bytes_per_token(m, layout.tp, dtype.lower() in LOW_PRECISION,
                                       sequence_parallel=sequence_parallel)
    # dropout masks of the layer outputs (every pass of the layer) and, without a flash kernel, the softmax
    # and dropout over the scores, which selective recomputation also re-runs (it recomputes the attention core)
    masks = M.attention_dropout_bytes_per_token(m, s, layout.tp, dropout=dropout, sequence_parallel=sequence_parallel)
    scores = M.attention_dropout_bytes_per_token(m, s, layout.tp, flash_attention=flash_attention, dropout=dropout,
                                                 sequence_parallel=sequence_parallel) - masks
    passes = 3.0 + (recompute in ("full", "reversible"))
    ew_bytes = (ew + masks) * passes + scores * (3.0 + (recompute != "none"))
    elementwise_s = tokens * ew_bytes * eff.elementwise / (layout.dp * layout.pp * acc.hbm_bytes_per_s * eff.memory)

    act = 2.0  # bytes per activation element (bf16/fp16)
    h = m.d_model
    L_stage = stage_layers(m, layout)
    redo = recompute in ("full", "reversible")
    # TP: 2 all-reduces forward, 2 backward per layer (+2 for a recomputed forward); SP's RS+AG is the same volume
    tp_s = 0.0 * s
    if layout.tp > 1:
        per = NET.ring_all_reduce_s(b * s * h * act, layout.tp, up.bytes_per_s, up.latency_s, up.efficiency)
        tp_s = mb * L_stage * (6.0 if redo else 4.0) * per * (1.0 - eff.overlap_tp)
    # EP: dispatch + combine forward and backward (+2 with a recomputed forward) per MoE layer
    ep_s = 0.0 * s
    if m.moe and layout.ep > 1:
        moe_stage = L_stage * m.moe_layers / m.layers
        bytes_ = b * s * m.moe.active * h * act / layout.tp
        domains = -(-(layout.ep * layout.tp) // system.chips)
        if domains <= 1:
            a2a = NET.all_to_all_s(bytes_, layout.ep, up.bytes_per_s, up.latency_s, up.efficiency)
        else:
            a2a = NET.all_to_all_two_tier_s(bytes_, domains, layout.ep // domains, up.bytes_per_s, out.bytes_per_s,
                                            up.latency_s, out.latency_s, min(up.efficiency, out.efficiency)).time_s
        ep_s = mb * moe_stage * (6.0 if redo else 4.0) * a2a
    f_bubble = float(bubble_fraction(P, mb, v))
    busy = compute_s + elementwise_s + tp_s + ep_s
    bubble_s = busy * f_bubble / (1.0 - f_bubble)
    # PP: one activation (forward) and one gradient (backward) per micro-batch per model chunk
    pp_s = 0.0 * s
    if P > 1:
        tier = up if n <= system.chips else out
        send = NET.p2p_s(b * s * h * act / layout.tp, tier.bytes_per_s, tier.latency_s, tier.efficiency)
        pp_s = 2.0 * v * mb * send * (1.0 - eff.overlap_pp)
    # DP: gradient all-reduce (ZeRO-3: reduce-scatter + 2 all-gathers = 1.5x)
    dense, expert = params_per_gpu(m, layout)
    dp_s = 0.0 * s
    if layout.dp > 1:
        k_zero = 1.5 if layout.zero >= 3 else 1.0
        dp_s = dp_s + k_zero * _all_reduce(dense * grad_comm_bytes, layout.dp, layout.tp, system, up, out)
        if expert and layout.dp // layout.ep > 1:
            dp_s = dp_s + k_zero * _all_reduce(expert * grad_comm_bytes, layout.dp // layout.ep,
                                               layout.tp * layout.ep, system, up, out)
        dp_s = dp_s * (1.0 - eff.overlap_dp)
    shard_dense = dense / (layout.dp if layout.zero >= 1 else 1)
    shard_exp = expert / (max(layout.dp // layout.ep, 1) if layout.zero >= 1 else 1)
    opt_s = (shard_dense + shard_exp) * ADAM_UPDATE_BYTES / acc.hbm_bytes_per_s + 0.0 * s
    step_s = busy + bubble_s + pp_s + dp_s + opt_s

    mem = training_memory(m, layout, s, recompute, dropout=dropout, flash_attention=flash_attention)
    price = acc.usd_per_hour if usd_per_gpu_hour is None else usd_per_gpu_hour
    require_positive("usd per GPU-hour", price)
    achieved = tokens / (step_s * n)
    return TrainStep(
        compute_s=compute_s, elementwise_s=elementwise_s, tp_comm_s=tp_s, ep_comm_s=ep_s, bubble_s=bubble_s, pp_comm_s=pp_s, dp_comm_s=dp_s,
        optimizer_s=opt_s, step_s=step_s, bubble_fraction=f_bubble, tokens_per_step=tokens,
        tokens_per_s=tokens / step_s, model_flops_per_token=f_model, hardware_flops_per_token=f_hw,
        mfu=achieved * f_model / peak, hfu=achieved * f_hw / peak, model_tflops_per_gpu=achieved * f_model / 1e12,
        hardware_tflops_per_gpu=achieved * f_hw / 1e12, gpus=n, memory=mem,
        fits=mem.total <= acc.hbm_bytes, usd_per_gpu_hour=float(price),
    )


def _all_reduce(bytes_, group, stride, system, up, out):
    """All-reduce over `group` ranks spaced `stride` GPUs apart (Megatron rank order)."""
    per_domain = max(system.chips // stride, 1)
    if group * stride <= system.chips:
        return NET.ring_all_reduce_s(bytes_, group, up.bytes_per_s, up.latency_s, up.efficiency)
    if per_domain == 1 or group % per_domain:
        return NET.ring_all_reduce_s(bytes_, group, out.bytes_per_s, out.latency_s, out.efficiency)
    return NET.hierarchical_all_reduce_s(bytes_, per_domain, group // per_domain, up.bytes_per_s, out.bytes_per_s,
                                         up.latency_s, out.latency_s, min(up.efficiency, out.efficiency))


def train_time_from_rate(n_params, tokens, gpus, flops_per_gpu_per_s, flops_per_param_token=8.0):
    """Narayanan et al. 2021 eq. (4): end-to-end time ≈ 8·T·P/(n·X) with activation recomputation
    (6 without). A cross-check of `TrainStep.time_to_train_s` given an achieved per-GPU rate X."""
    require_positive("achieved FLOP/s per GPU", flops_per_gpu_per_s)
    return flops_per_param_token * np.asarray(tokens, dtype=float) * n_params / (gpus * flops_per_gpu_per_s)
