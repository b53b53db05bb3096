"""Training step time for a layout (TP, PP, DP/ZeRO, EP), and time, GPU-hours and $ to train on D tokens
(lecture §3.4; Narayanan et al. 2021 "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM", arXiv:2104.04473).

The forward pass of one micro-batch on the busiest stage comes from the pass engine (engine.core: GEMMs,
attention, elementwise kernels, TP all-reduces and EP all-to-alls on their tiers, with the efficiency's
factors); training multiplies it by the passes a step runs and adds what only training has. Per step
(global batch G = dp·m·b sequences of s tokens, n = tp·pp·dp GPUs, peak P per GPU):

    FLOPs/token (model)     6·N_matmul + 3·attn_fwd(s)              2 forward + 4 backward per weight
    FLOPs/token (hardware)  model + recompute extra (selective: attn_fwd; full/reversible: one forward)
    t_compute  = m·[t_gemm,fwd·(3 + r_full) + t_attn,fwd·(3 + r_any)]     engine terms of one micro-batch
    t_elementwise = m·[t_ew,fwd·(3 + r_full) + extra]     extra: dropout masks, unfused softmax/dropout over
                                                          the s² scores (model.attention_dropout_bytes_per_token)
    t_tp       = m·t_tp,fwd·(2 + r_full)·(1 − overlap_tp)    2 all-reduces per layer each way (Shoeybi 2019 §3)
    t_ep       = m·t_ep,fwd·(2 + r_full)                     dispatch + combine, forward and backward
    t_cp       = m·t_cp,fwd·(2 + r_full)                     K/V all-gathers (CP), and the gradients' reduce-scatters
    bubble     f = (P−1)/(v·m + P−1)                      GPipe and 1F1B (v = 1), interleaved 1F1B (v chunks)
                                                          (Huang et al. 2019; Narayanan et al. 2021 §2.2)
    t_pp       = 2·v·m·p2p(b·s·h·2/tp) · (1 − overlap_pp)  activations forward, gradients backward
    t_dp       = k_zero·AR(Ψ·2 bytes, dp) · (1 − overlap_dp)   k_zero = 1 (ZeRO 0–2), 1.5 (ZeRO-3/FSDP)
    t_opt      = Ψ_shard·28 bytes / HBM BW                Adam reads/writes fp32 states + bf16 copies
    t_step     = (t_compute + t_elementwise + t_tp + t_ep + t_cp)/(1 − f) + t_pp + t_dp + t_opt

(r_full = 1 with a recomputed forward — full recomputation or reversible layers —, r_any = 1 with any
recomputation: selective re-runs the attention core.) Collectives use the one network model of every
command (engine.tiers: the system's links with the efficiency's achieved fractions and step latencies).
MFU = G·s·FLOPs_model/(t_step·n·P) (Chowdhery et al. 2022, PaLM, App. B); HFU counts recomputation
(Korthikanti et al. 2022 §6) — Megatron 2021's "163 TFLOP/s per GPU" is hardware FLOPs.
Time to train on D tokens = D/(tokens per s); GPU-hours = time·n/3600; $ = GPU-hours·price.

Ignores: the zero-bubble schedules (Qi et al. 2023, arXiv:2401.10241, which split the backward into input
and weight gradients to fill the bubble — see docs/training.md), load imbalance across experts and stages,
stragglers, restarts and evaluation (which separate running time from wall-clock GPU-hours), data loading.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from . import model as M
from . import network as NET
from .efficiency import LOW_PRECISION, Efficiency, realistic
from .engine import core, tiers
from .errors import InputError, require_positive
from .hardware import System
from .hardware import usd_per_gpu_hour as resolve_price
from .layout import RECOMPUTE_MODES, Layout, validate
from .memory import TrainingMemory, params_per_gpu, training_memory
from .units import SECONDS_PER_HOUR, dtype_bytes

#: Bytes Adam touches per parameter in its update: read fp32 master, m, v (12) and the bf16 grad (2);
#: write master, m, v (12) and the bf16 weight (2) (ZeRO §3.1 state sizes).
ADAM_UPDATE_BYTES = 28.0


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


def recompute_extra_flops_per_token(m: M.Model, seq_len, recompute="none", *, causal=True):
    """Extra forward FLOPs per token spent rematerialising activations:

        none 0;  selective: the attention core (QKᵀ and PV) once more (Korthikanti §5);
        full and reversible: one more forward pass, 2·N + attention (≈ 8ND instead of 6ND; lecture §6.3 [I]).
    """
    if recompute not in RECOMPUTE_MODES:
        raise InputError(f"recompute must be one of {', '.join(RECOMPUTE_MODES)}, got {recompute!r}")
    attn = forward_attention_flops_per_token(m, seq_len, causal=causal)
    if recompute == "none":
        return 0.0 * attn
    if recompute == "selective":
        return attn
    return M.matmul_flops_per_token(m) + attn


def forward_attention_flops_per_token(m: M.Model, seq_len, *, causal=True):
    """Score and value FLOPs per token of a training sequence: causal mean context (s+1)/2, or the
    full s×s square (`causal=False`, the convention of Narayanan et al. 2021 eq. (3))."""
    s = np.asarray(seq_len, dtype=float)
    if causal:
        return M.prefill_attention_flops_per_token(m, s)
    return M.attention_flops_per_token(m, s)


@dataclass(frozen=True)
class TrainStep:
    """One training step: times in s (arrays when seq_len was an array), rates, costs, memory."""

    compute_s: np.ndarray
    elementwise_s: np.ndarray  # memory-bound non-matmul kernels (norms, residuals, activation, casts)
    tp_comm_s: np.ndarray
    ep_comm_s: np.ndarray
    cp_comm_s: np.ndarray  # context parallelism's K/V all-gathers and their gradients' reduce-scatters
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
        out: dict = {}
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


def train_step(m: M.Model, system: System, layout: Layout, seq_len, *, efficiency: Efficiency | None = None,
               causal=True, dtype="bf16", flash_attention=True, dropout=False, usd_per_gpu_hour: float | None = None,
               grad_comm_bytes=2.0, attention_dtype="bf16") -> TrainStep:
    """Step time, rates, MFU/HFU, memory per GPU of `layout` on domains of `system` (module docstring).

    efficiency: None = the accelerator family's cited factors (efficiency.realistic for `dtype`); pass an
    Efficiency (e.g. `replace(realistic(acc, "bf16"), compute=0.5, gemm_half_rows=0)`) to override. The
    layout carries recomputation and sequence parallelism (one switch each, for time and memory).
    Placement (Megatron rank order: TP innermost, then DP, then PP): TP uses the scale-up tier (an error if
    tp exceeds the domain); DP the scale-up tier when tp·dp fits in a domain, else a hierarchical all-reduce;
    stage boundaries cross domains unless tp·pp·dp fits in one; EP all-to-all spans ceil(tp·ep/chips)
    domains. `dtype` sets the GEMMs' peak; the attention core runs at the peak of `attention_dtype` (bf16:
    FP8 recipes such as Transformer Engine's quantise the GEMMs only). MFU and HFU are relative to `dtype`.
    """
    validate(m, system, layout, training=True)
    require_positive("sequence length", seq_len)
    if layout.perfect:
        raise InputError("training needs an explicit layout (tp, pp, dp, ep), not perfect sharding")
    acc = system.accelerator
    eff = realistic(acc, dtype) if efficiency is None else efficiency
    up, out = tiers(system, eff)
    peak = acc.peak_flops(dtype)
    s = np.asarray(seq_len, dtype=float)
    n = layout.gpus
    P, mb, v, b = layout.pp, layout.micro_batches, layout.virtual_stages, layout.micro_batch
    recompute = layout.recompute
    redo = recompute in ("full", "reversible")
    tokens = layout.global_batch * s
    f_model, f_hw = training_flops_per_token(m, s, recompute, causal=causal)

    # the forward of one micro-batch (b sequences per DP rank) on the busiest stage, from the engine
    fwd = core(m, system, layout, P * layout.dp * b, 0.0, s, "prefill", b_w=dtype_bytes(dtype), b_kv=2.0,
               b_act=dtype_bytes(attention_dtype), peak_w=peak, peak_act=acc.peak_flops(attention_dtype),
               eff=replace(eff, attention_at_activation_peak=True), low_precision=dtype.lower() in LOW_PRECISION,
               causal=causal, kv_writes=False)
    per = lambda x: np.asarray(x, dtype=float) / P  # noqa: E731  engine terms are loop totals (pp stages)
    gemm, attn = per(fwd.gemm_s), per(fwd.attention_s)
    compute_s = mb * (gemm * (3.0 + redo) + attn * (3.0 + (recompute != "none")))
    # elementwise: the forward's operators (backward ≈ 2x, +1 forward if recomputed); dropout masks of the
    # layer outputs every pass; without a flash kernel the softmax and dropout over the scores, which
    # selective recomputation also re-runs (it recomputes the attention core)
    masks = M.attention_dropout_bytes_per_token(m, s, layout.tp, dropout=dropout,
                                                sequence_parallel=layout.sequence_parallel)
    scores = M.attention_dropout_bytes_per_token(m, s, layout.tp, flash_attention=flash_attention, dropout=dropout,
                                                 sequence_parallel=layout.sequence_parallel) - masks
    extra_bytes = masks * (3.0 + redo) + scores * (3.0 + (recompute != "none"))
    ew_bw = acc.hbm_bytes_per_s * (eff.memory if eff.elementwise_memory is None else eff.elementwise_memory)
    tokens_rank = b * s  # tokens of one micro-batch on one DP rank
    elementwise_s = mb * (per(fwd.elementwise_s) * (3.0 + redo)
                          + eff.elementwise * tokens_rank * extra_bytes / (P * ew_bw))
    tp_s = mb * per(fwd.tp_comm_s) * (2.0 + redo) * (1.0 - eff.overlap_tp)
    # CP: the forward's K/V all-gathers, and the backward's reduce-scatters of their gradients (same bytes)
    cp_s = mb * per(fwd.cp_comm_s) * (2.0 + redo)
    ep_s = mb * per(fwd.ep_comm_s) * (2.0 + redo)
    f_bubble = float(bubble_fraction(P, mb, v))
    busy = compute_s + elementwise_s + tp_s + ep_s + cp_s
    bubble_s = busy * f_bubble / (1.0 - f_bubble)
    # PP: one activation (forward) and one gradient (backward) per micro-batch per model chunk
    pp_s = 0.0 * s
    if P > 1:
        tier = up if n <= system.chips else out
        send = NET.p2p_s(b * s * m.d_model * 2.0 / (layout.tp * layout.cp), tier.bytes_per_s, tier.latency_s,
                         tier.efficiency)
        pp_s = 2.0 * v * mb * send * (1.0 - eff.overlap_pp)
    # DP: gradient all-reduce (ZeRO-3: reduce-scatter + 2 all-gathers = 1.5x)
    dense, expert = params_per_gpu(m, layout)
    dp_s = 0.0 * s
    ranks = layout.dp * layout.cp  # weights are replicated over the data and the context ranks
    # a routed expert lives on one moe_tp·ep group and is replicated over the tp·dp·cp/(moe_tp·ep) such groups
    moe_group = layout.moe_tp * layout.ep
    exp_ranks = max(int(layout.tp * ranks // moe_group), 1)
    if ranks > 1:
        k_zero = 1.5 if layout.zero >= 3 else 1.0
        dp_s = dp_s + k_zero * _all_reduce(dense * grad_comm_bytes, ranks, layout.tp, system, up, out)
        if expert and exp_ranks > 1:
            dp_s = dp_s + k_zero * _all_reduce(expert * grad_comm_bytes, exp_ranks, moe_group, system, up, out)
        dp_s = dp_s * (1.0 - eff.overlap_dp)
    shard_dense = dense / (ranks if layout.zero >= 1 else 1)
    shard_exp = expert / (exp_ranks if layout.zero >= 1 else 1)
    opt_s = (shard_dense + shard_exp) * ADAM_UPDATE_BYTES / acc.hbm_bytes_per_s + 0.0 * s
    step_s = busy + bubble_s + pp_s + dp_s + opt_s

    mem = training_memory(m, layout, s, dropout=dropout, flash_attention=flash_attention)
    price = resolve_price(system, usd_per_gpu_hour)
    achieved = tokens / (step_s * n)
    return TrainStep(
        compute_s=compute_s, elementwise_s=elementwise_s, tp_comm_s=tp_s, ep_comm_s=ep_s, cp_comm_s=cp_s,
        bubble_s=bubble_s,
        pp_comm_s=pp_s, dp_comm_s=dp_s, optimizer_s=opt_s, step_s=step_s, bubble_fraction=f_bubble,
        tokens_per_step=tokens, tokens_per_s=tokens / step_s, model_flops_per_token=f_model,
        hardware_flops_per_token=f_hw, mfu=achieved * f_model / peak, hfu=achieved * f_hw / peak,
        model_tflops_per_gpu=achieved * f_model / 1e12, hardware_tflops_per_gpu=achieved * f_hw / 1e12, gpus=n,
        memory=mem, fits=mem.total <= acc.hbm_bytes, usd_per_gpu_hour=float(price),
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
