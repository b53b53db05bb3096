"""Step time of one replica under a parallel layout, with communication (lecture §2–§3, Pope et al. 2022 §3).

Per pipeline stage and micro-batch (b = B/pp sequences, T = b·len tokens, T_g = T/dp per DP group,
s = tp·dp GPUs in the stage group, f = ceil(L/pp)/L of the layers), per GPU:

    t_compute = f·[T_g·(2·N_dense + attn(ctx))/tp + T·2·L_moe·k·N_e/ep·λ] / (FLOPS·η_c)    (ep > 1)
                (the expert term is T_g·2·L_moe·k·N_e/tp when ep = 1: experts sliced over TP)
    t_memory  = f·[W_dense_read(T_g)/tp + L_moe·D_E(T)/ep·N_e·b_w + kv reads + kv writes] / (BW·η_m)
                D_E(T) = model.expected_distinct_experts(E, k, T): the experts the stage group's tokens
                touch, 1/ep of them on each GPU (its E/ep experts see all T tokens' routing)
    t_tp      = f·n_ar·min(ring, one-shot all-reduce)(T_g·D·b_a, tp)    n_ar = 2 per layer (Megatron: after attention
                and after the MLP); 1 per MoE layer when ep > 1 (the combine returns expert outputs)
    t_ep      = f·L_moe·2·all_to_all_two_tier(T/ep·k·D·b_a·λ)  dispatch + combine, scale-out share 1−1/n_d
    t_stage   ∈ [max(t_compute, t_memory, t_tp + t_ep), t_compute + t_memory + t_tp + t_ep]
    t_loop    = pp·t_stage + Σ_boundaries p2p(T·D·b_a/s)       (decode: pp boundaries incl. wrap-around)

λ = MoE load-imbalance factor (busiest GPU's tokens over the mean; 1.0 = uniform routing). Decode emits
B tokens per loop: TPOT = t_loop, throughput = B/t_loop (pp micro-batches in flight, no bubble, §3.3).
Prefill of B prompts: latency t_loop (pp−1 boundaries), throughput B·len/t_loop.

Reuses model.py (FLOPs, KV bytes, distinct experts) and roofline.activation_bytes; with tp·dp·pp = n,
ep = 1, dp = 1, pp = 1 and an infinitely fast network it reduces to roofline.step on n chips
(tested). Ignores: overlap of communication with compute inside a stage beyond the two bounds,
NVLink SHARP, expert replication (EPLB), the shared expert's TP all-reduce when ep > 1, embedding
and head imbalance between stages, sampling and detokenisation.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from . import model as M
from . import network as N
from . import parallel as P
from .errors import InputError, require_fraction, require_positive
from .roofline import DEFAULT_USABLE_MEMORY, Efficiency
from .units import SECONDS_PER_HOUR, dtype_bytes


@dataclass(frozen=True)
class ParallelStepResult:
    """Per-replica times (s) of one decode loop / prefill pass; arrays broadcast over all inputs."""

    compute_s: np.ndarray  # pp × per-stage compute (the time a micro-batch spends computing)
    weight_read_s: np.ndarray
    kv_read_s: np.ndarray
    kv_write_s: np.ndarray
    tp_comm_s: np.ndarray
    ep_comm_s: np.ndarray
    pp_comm_s: np.ndarray
    comm_s: np.ndarray  # tp + ep + pp communication per loop
    stage_s: np.ndarray  # one stage, one micro-batch, perfect overlap
    step_s: np.ndarray  # loop time, perfect overlap (= TPOT in decode, latency in prefill)
    step_upper_s: np.ndarray  # loop time, no overlap
    bound: np.ndarray  # 'compute', 'memory' or 'network'
    tokens_per_s: np.ndarray  # one replica
    tokens_per_s_per_gpu: np.ndarray
    tokens_per_s_per_sequence: np.ndarray
    usd_per_million_tokens: np.ndarray
    memory_per_gpu_bytes: np.ndarray
    weights_per_gpu_bytes: np.ndarray
    kv_per_gpu_bytes: np.ndarray
    activations_per_gpu_bytes: np.ndarray
    fits: np.ndarray
    gpus: np.ndarray
    domains: np.ndarray

    def to_dict(self) -> dict:
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = np.asarray(v).tolist() if np.ndim(v) else np.asarray(v).item()
        out["memory_per_gpu_parts_bytes"] = {"weights": out["weights_per_gpu_bytes"], "kv": out["kv_per_gpu_bytes"],
                                             "activations": out["activations_per_gpu_bytes"]}
        return out


def parallel_step(model: M.Model, system, batch, context, *, tp=1, ep=1, pp=1, dp=1, domains: int = 1,
                  phase: str = "decode", prompt=1, weights_dtype: str = "bf16", kv_dtype: str = "bf16",
                  activation_dtype: str = "bf16", efficiency: Efficiency = Efficiency(),
                  scale_up_efficiency: float = 1.0, scale_out_efficiency: float = 1.0,
                  moe_imbalance: float = 1.0, tiers: tuple[N.Tier, N.Tier] | None = None,
                  usd_per_gpu_hour: float | None = None, usable_memory: float = DEFAULT_USABLE_MEMORY,
                  check: bool = True) -> ParallelStepResult:
    """One decode loop or prefill pass of `batch` sequences per replica under layout (tp, ep, pp, dp).

    `check=True` validates a scalar layout with messages that say what fits (parallel.validate).
    `tiers` overrides the system's (scale-up, scale-out) tiers. Formulas in the module docstring.
    """
    if phase not in ("decode", "prefill"):
        raise InputError(f"phase must be 'decode' or 'prefill', got {phase!r}")
    require_positive("batch", batch, fix="use at least one sequence")
    require_positive("context", context, allow_zero=True, fix="context counts cached tokens, 0 or more")
    require_positive("prompt", prompt, fix="a prefill pass needs at least one token")
    check_moe_imbalance(moe_imbalance)
    require_fraction("usable memory fraction", usable_memory)
    if check and all(np.ndim(x) == 0 for x in (tp, ep, pp, dp)):
        P.validate(model, system, P.Layout(int(tp), int(ep), int(pp), int(dp)), domains, batch)
    up, out = tiers or N.tiers(system, scale_up_efficiency=scale_up_efficiency,
                               scale_out_efficiency=scale_out_efficiency)
    L = np.asarray(prompt, dtype=float) if phase == "prefill" else np.asarray(1.0)
    price = system.usd_per_hour or system.accelerator.usd_per_hour if usd_per_gpu_hour is None else usd_per_gpu_hour
    return step_core(model, system, tp, ep, pp, dp, batch, context, L, phase,
                     dtype_bytes(weights_dtype), dtype_bytes(kv_dtype), dtype_bytes(activation_dtype),
                     system.accelerator.peak_flops(weights_dtype), efficiency, up, out, moe_imbalance,
                     price, usable_memory)


def classify_bound(compute, memory, comm):
    """'network' where communication is the longest term, else 'compute' or 'memory' (broadcasts)."""
    return np.where(comm >= np.maximum(compute, memory), "network", np.where(compute >= memory, "compute", "memory"))


def check_moe_imbalance(moe_imbalance) -> None:
    """λ = busiest expert GPU's tokens over the mean: >= 1 (1 = uniform routing)."""
    require_positive("MoE load imbalance", moe_imbalance, fix="1.0 means uniform routing; use >= 1")
    if np.any(np.asarray(moe_imbalance) < 1):
        raise InputError(f"MoE load imbalance must be >= 1 (busiest GPU over the mean), got {moe_imbalance}")


def step_core(model, system, tp, ep, pp, dp, batch, context, L, phase, b_w, b_kv, b_act, peak_flops,
              efficiency, up: N.Tier, out: N.Tier, imbalance, usd_per_gpu_hour, usable_memory):
    """Array core of `parallel_step`: every argument from tp to peak_flops may be an array (the planner
    passes its whole candidate grid). No validation here."""
    m = model
    tp, ep, pp, dp, B, ctx = (np.asarray(x, dtype=float) for x in (tp, ep, pp, dp, batch, context))
    L = np.asarray(L, dtype=float)
    chips, acc = system.chips, system.accelerator
    s = tp * dp
    f = P.stage_fraction(m, pp)
    b = B / pp
    T = b * L
    Tg = T / dp
    D = m.d_model
    moe_l = m.moe_layers
    if m.moe:
        E, k, Ne = m.moe.experts, m.moe.active, M.expert_params(m)
    else:
        E, k, Ne = 1, 0, 0.0
    is_ep = ep > 1

    # compute (model.py FLOP counts; experts on the busiest GPU scaled by the imbalance λ)
    dense_mm = M.matmul_params_per_token(m) - moe_l * k * Ne
    attn = (M.prefill_attention_flops_per_token(m, L, ctx) if phase == "prefill"
            else M.attention_flops_per_token(m, ctx + 1))
    expert_flops = np.where(is_ep, T * 2 * moe_l * k * Ne / ep * imbalance, Tg * 2 * moe_l * k * Ne / tp)
    flops_gpu = f * (Tg * (2 * dense_mm + attn) / tp + expert_flops)
    compute = flops_gpu / (peak_flops * efficiency.compute)

    # memory traffic: dense weights the DP group reads (1/tp each), distinct experts per GPU, KV
    def distinct(tokens):
        return M.expected_distinct_experts(E, k, tokens) if m.moe else 0.0 * tokens
    dense_read = M.weight_read_params(m, Tg) - moe_l * distinct(Tg) * Ne
    expert_read = np.where(is_ep, moe_l * distinct(T) / ep * Ne, moe_l * distinct(Tg) * Ne / tp)
    bw = acc.hbm_bytes_per_s * efficiency.memory
    w_s = f * (dense_read / tp + expert_read) * b_w / bw
    shard = P.kv_shard(m, tp)
    kv_scale = b_kv / dtype_bytes("bf16")
    kvr_s = f * (b / dp) * M.kv_bytes_per_sequence(m, ctx, "bf16") * kv_scale / shard / bw
    kvw_s = f * Tg * M.kv_bytes_per_token(m, "bf16") * kv_scale / shard / bw
    mem = w_s + kvr_s + kvw_s

    # communication on the tiers
    act = D * b_act
    up_bw, out_bw = up.effective_bytes_per_s, out.effective_bytes_per_s
    n_ar = f * np.where(is_ep, 2 * m.dense_mlp_layers + moe_l, 2 * m.layers)
    tp_s = n_ar * N.best_all_reduce_s(Tg * act, tp, up_bw, up.latency_s)
    n_dom = np.ceil(s / chips)
    a2a = N.all_to_all_two_tier_s(T / ep * k * act * imbalance, n_dom, s / n_dom, up_bw, out_bw,
                                  up.latency_s, out.latency_s)
    ep_s = np.where(is_ep, 2 * f * moe_l * a2a.time_s, 0.0)
    comm_stage = tp_s + ep_s
    boundaries = pp if phase == "decode" else pp - 1
    n_out = np.minimum(P.off_domain_boundaries(s, pp, chips), boundaries)
    send = T * act / s
    pp_s = np.where(pp > 1, n_out * N.p2p_s(send, out_bw, out.latency_s)
                    + (boundaries - n_out) * N.p2p_s(send, up_bw, up.latency_s), 0.0)

    stage = np.maximum(np.maximum(compute, mem), comm_stage)
    loop = pp * stage + pp_s
    loop_upper = pp * (compute + mem + comm_stage) + pp_s
    comm_loop = pp * comm_stage + pp_s
    bound = classify_bound(compute, mem, comm_stage)

    gpus = s * pp
    tokens = B * L
    tok_s = tokens / loop
    usd = gpus * usd_per_gpu_hour / SECONDS_PER_HOUR / tok_s * 1e6

    memory = P.memory_per_gpu(m, tp, ep, pp, dp, B, ctx + L, bytes_per_weight=b_w, bytes_per_kv=b_kv,
                              tokens_per_pass=L)
    fits = memory.total_bytes <= acc.hbm_bytes * usable_memory
    return ParallelStepResult(
        compute_s=pp * compute, weight_read_s=pp * w_s, kv_read_s=pp * kvr_s, kv_write_s=pp * kvw_s,
        tp_comm_s=pp * tp_s, ep_comm_s=pp * ep_s, pp_comm_s=pp_s, comm_s=comm_loop, stage_s=stage,
        step_s=loop, step_upper_s=loop_upper, bound=bound, tokens_per_s=tok_s,
        tokens_per_s_per_gpu=tok_s / gpus, tokens_per_s_per_sequence=L / loop, usd_per_million_tokens=usd,
        memory_per_gpu_bytes=memory.total_bytes, weights_per_gpu_bytes=memory.weights_bytes,
        kv_per_gpu_bytes=memory.kv_bytes, activations_per_gpu_bytes=memory.activations_bytes, fits=fits,
        gpus=gpus, domains=P.domains_per_replica(s, pp, chips),
    )
