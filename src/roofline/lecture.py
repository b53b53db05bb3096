"""The lecture's board formulas in their own symbols (spec §0.3, §1, §5.1–5.3).

Units as the lecture reads them (§0.3): model sizes in BYTES (W = N · b_w), compute F in
weight-bytes multiplied per second (MAC/s × b_w), bandwidth BW in bytes/s, so R = F/BW is
dimensionless (≈ 300). `flops_to_F` converts a vendor FLOP/s figure. Every function broadcasts.
These are the idealised boards: no attention FLOPs, all weights read each pass, no efficiency
factors; roofline.step() is the engineering version of the same equations.
"""

from __future__ import annotations

import numpy as np

from .errors import InputError, require_positive


def flops_to_F(flops_per_s, bytes_per_weight):
    """Lecture compute rate F = MAC/s × b_w = (FLOPS/2) · b_w (spec §0.3)."""
    return np.asarray(flops_per_s, dtype=float) / 2.0 * bytes_per_weight


def step_times(batch, context, w_total, w_active, kv, F, BW, len_pass=1, sparse_c=None):
    """(t_compute, t_weights, t_kv) of one pass [S 00:02:37–00:07:27, 01:42:00]:

        t_compute = B · len_pass · W_active / F
        t_weights = W_total / BW
        t_kv      = B · ctx · kv / BW        (dense attention)
        t_kv      = B · c · √ctx · kv / BW   (sparse attention, `sparse_c` = c; [S 00:12:25], form [I])
    """
    B = np.asarray(batch, dtype=float)
    ctx = np.asarray(context, dtype=float)
    t_c = B * len_pass * w_active / F
    t_w = np.broadcast_to(np.asarray(w_total / BW, dtype=float), np.broadcast(B, ctx).shape)
    eff_ctx = ctx if sparse_c is None else sparse_c * np.sqrt(ctx)
    t_kv = B * eff_ctx * kv / BW
    return t_c, t_w, t_kv


def step_time(batch, context, w_total, w_active, kv, F, BW, len_pass=1, sparse_c=None):
    """t = max(t_compute, t_weights + t_kv): the lecture's roofline lower bound [S 00:02:37]."""
    t_c, t_w, t_kv = step_times(batch, context, w_total, w_active, kv, F, BW, len_pass, sparse_c)
    return np.maximum(t_c, t_w + t_kv)


def latency_floor(w_total, BW):
    """t_floor = W_total/BW: the B → 0 limit, reading every weight once [S 00:10:13]."""
    return np.asarray(w_total, dtype=float) / BW


def drain_time(capacity_bytes, BW):
    """HBM drain time C/BW [S 00:23:40]; Rubin 288 GB / 20 TB/s = 14.4 ms [S 00:24:13]."""
    return np.asarray(capacity_bytes, dtype=float) / BW


def critical_batch(R, s):
    """B* = R · s, from W_total/BW = B·W_active/F [S 00:16:15–00:19:21]."""
    return np.asarray(R, dtype=float) * s


def balanced_context(w_active, R, kv):
    """ctx* = W_active/(R·kv): KV-fetch time equals compute time per sequence [S 00:11:25, 01:35:53]."""
    return np.asarray(w_active, dtype=float) / (R * kv)


def critical_batch_with_kv(R, s, context, ctx_star):
    """B_x = R·s/(1 − ctx/ctx*) [I, §1.2]; inf where ctx ≥ ctx* (memory-bound at every batch)."""
    frac = np.asarray(context, dtype=float) / ctx_star
    with np.errstate(divide="ignore"):
        return np.where(frac < 1, R * s / np.where(frac < 1, 1 - frac, 1), np.inf)


def mfu_vs_context(context, ctx_star):
    """MFU(ctx) = min(1, ctx*/ctx), weights amortised, dense attention [S 00:11:40, I]."""
    return np.minimum(1.0, ctx_star / np.asarray(context, dtype=float))


def memory_to_compute_ratio(batch, b_star, context, ctx_star):
    """t_mem/t_compute at decode = B*/B + ctx/ctx* [I, §5.3] (T11: 2 at B = B*, ctx = ctx*)."""
    return b_star / np.asarray(batch, dtype=float) + np.asarray(context, dtype=float) / ctx_star


def cost_per_token(step_s, batch, n_gpus, usd_per_gpu_hour):
    """(t/B) · n_GPUs · price per GPU-second [S 00:12:40–00:15:52] (T13: $4e-7)."""
    return np.asarray(step_s, dtype=float) / batch * n_gpus * usd_per_gpu_hour / 3600.0


def batch1_cost_ratio(w_total, w_active, F, BW):
    """Cost per token at B = 1 over the B → ∞ cost floor, KV ignored: (W_total/BW)/(W_active/F) = R·s
    [S 00:04:23 "a thousand times worse", I] — computed from the step times, not assumed."""
    t1 = step_time(1.0, 0.0, w_total, w_active, 0.0, F, BW) / 1.0
    big = 1e12
    t_inf = step_time(big, 0.0, w_total, w_active, 0.0, F, BW) / big
    return t1 / t_inf


def fast_mode(b_normal, b_fast, w_total, w_active, F, BW, kv=0.0, context=0.0):
    """Speed-up S = t(B_n)/t(B_f) and price ratio M = (t_f/B_f)/(t_n/B_n) of a smaller-batch
    "fast mode" [D 00:01:01, S 00:01:40; reconstruction §1.8 I] (T15: 2.5× speed for 6× price)."""
    t_n = step_time(b_normal, context, w_total, w_active, kv, F, BW)
    t_f = step_time(b_fast, context, w_total, w_active, kv, F, BW)
    return t_n / t_f, (t_f / b_fast) / (t_n / b_normal)


def throughput(batch, step_s=None, steps_per_s=None):
    """Tokens/s of one system = B / t_step (= B × steps/s) [S 00:26:15] (T06, T07)."""
    if (step_s is None) == (steps_per_s is None):
        raise InputError("give exactly one of step_s or steps_per_s")
    rate = steps_per_s if steps_per_s is not None else 1.0 / np.asarray(step_s, dtype=float)
    return np.asarray(batch, dtype=float) * rate


def systems_for_traffic(global_tokens_per_s, system_tokens_per_s):
    """How many systems global traffic needs (its inverse is one system's share) [S 00:27:28] (T08)."""
    return np.asarray(global_tokens_per_s, dtype=float) / system_tokens_per_s


def worst_case_latency(step_s):
    """Train departures: wait up to one interval, then run one: 2 · t_step [S 00:23:07] (T05)."""
    return 2.0 * np.asarray(step_s, dtype=float)


def kv_from_price_kink(R, w_active, ctx_star):
    """kv = W_active/(R · ctx*): the context-price tier sits where KV time = compute time
    [S 01:35:53–01:38:22] (T34: 1,666.7 B for 100 GB active, 200K)."""
    require_positive("context of the price tier", ctx_star)
    return np.asarray(w_active, dtype=float) / (R * ctx_star)


def kv_from_architecture(kv_layers, d_head, kv_heads, bytes_per_element):
    """kv = layers_unique × 2 × d_head × n_kv × bytes [S 01:38:35] (T35: 2,048 B; T36: 4,096 B)."""
    return kv_layers * 2 * d_head * kv_heads * bytes_per_element


def pass_cost_per_token(batch, len_pass, context, w_total, w_active, kv, F, BW):
    """(compute, memory) time per token of a pass of `len_pass` tokens per sequence [S 01:42–01:44]:
    compute per token is flat; memory per token falls as 1/len_pass (T38)."""
    t_c, t_w, t_kv = step_times(batch, context, w_total, w_active, kv, F, BW, len_pass)
    tokens = np.asarray(batch, dtype=float) * len_pass
    return t_c / tokens, (t_w + t_kv) / tokens


def decode_mfu_from_price_ratio(output_over_input):
    """A decode premium p means t_mem ≈ p · t_compute at decode, so decode MFU ≈ 1/p of prefill's
    [D 01:47:56, F] (T37: ratio 5 → 0.2)."""
    require_positive("output/input price ratio", output_over_input)
    p = np.asarray(output_over_input, dtype=float)
    return p, 1.0 / p


def cost_floor_per_token(w_active, F, context, kv, BW, len_pass=1):
    """The B → ∞ limit of t/B per token: max(W_active/F, ctx·kv/(len_pass·BW)) — weights amortised,
    compute and KV unique to each sequence [S 00:13:30–00:15:49] ("slow mode saves almost nothing")."""
    return np.maximum(np.asarray(w_active, dtype=float) / F,
                      np.asarray(context, dtype=float) * kv / (BW * len_pass))


def memory_per_gpu(w_total, micro_batch, context, kv, ep, stages):
    """(weights, KV, total) bytes per GPU with E-way expert parallelism and P stages, n_micro = P
    micro-batches of b sequences in flight [S 01:05:18–01:11:48]:

        c = W_total/(E·P) + P·b·ctx·kv/(E·P) = W_total/(E·P) + b·ctx·kv/E     (P cancels in the KV term)

    Assumes perfect sharding of weights and KV (the lecture's hand-wave); T23."""
    P = np.asarray(stages, dtype=float)
    w = np.asarray(w_total, dtype=float) / (ep * P)
    kv_b = P * micro_batch * np.asarray(context, dtype=float) * kv / (ep * P)
    return w, kv_b, w + kv_b


def token_latency_with_hops(step_s, stages, hop_s):
    """t_token = t_step + P·t_hop: decode crosses P stage boundaries per loop, wrap-around included
    [D 01:15:35, S 01:15:46; form I] (T25: 20 ms + 4 × 2.5 ms = 30 ms). What a hop costs is an input:
    the lecture guesses 'a few ms'; roofline's catalog uses the measured link latency plus the transfer
    of one activation micro-batch (docs/roofline.md, 'What a pipeline hop costs')."""
    return np.asarray(step_s, dtype=float) + np.asarray(stages, dtype=float) * hop_s



# ---- racks, experts and stages (§1.7, §2.3, §3.2, §3.5, §3.6) ----------------------------------------
def sparsity_quality_equivalence(dense_equivalent_params, active_params):
    """How many active parameters' worth of quality an MoE buys: N_dense_equiv / N_active (§1.7).

    Lecture [S 00:29:37]: 64 experts at 370M active match a dense 1.3B → 3.51× (T16; "64x for 4x").
    Source: Clark et al. 2022, "Unified Scaling Laws for Routed Language Models". Empirical, MoE-variant
    dependent; nothing here predicts it.
    """
    return np.asarray(dense_equivalent_params, dtype=float) / np.asarray(active_params, dtype=float)


def micro_batches(stages):
    """n_micro = P: the fewest micro-batches that keep every stage busy in decode (§3.5, T24)."""
    return np.asarray(stages)


def stage_boundary_ratio(active_experts, layers_per_stage, up_over_out):
    """t_scale-up / t_scale-out at a pipeline boundary = 2·k·L_stage/(BW_up/BW_out) [S 00:49:21–00:53:08]:
    per token the boundary sends one activation over scale-out, while each of the stage's L_stage MoE
    layers sends it to k experts and back over scale-up. ≥ 1: the boundary is not the bottleneck
    (T18: k 8, L 1 → 2.0; T19: k 3 → 0.75, L 2 → 1.5; T20: need 2kL ≥ 8). Ignores the all-to-all's
    local share and attention traffic."""
    return 2.0 * np.asarray(active_experts, dtype=float) * np.asarray(layers_per_stage, dtype=float) / up_over_out


def ep_slowdown_over_domains(n_domains, up_over_out):
    """The lecture's rough EP slowdown across n domains against one [S 00:39:39–00:40:10; form I]: traffic X
    per GPU takes X/BW_up in one domain and max((1/n)·X/BW_up, (1 − 1/n)·X/BW_out) across n, so the slowdown
    is max(1/n, (1 − 1/n)·BW_up/BW_out) (T21: n 2, ratio 8 → 4×). Ignores latency and congestion."""
    n = np.asarray(n_domains, dtype=float)
    return np.maximum(1.0 / n, (1.0 - 1.0 / n) * up_over_out)


def weight_fetch_s(w_total, gpus_reading, bytes_per_s_per_gpu):
    """t = W_total/(S_up·BW_per_GPU): every GPU of a scale-up domain reads weights in parallel; pipeline
    stages cannot, since they run at different times [S 01:16:53–01:18:22] (T26: 1e12 B on 72 × 8e12 →
    1.74 ms, on 8 × 3.35e12 → 37.3 ms). The latency floor of that domain."""
    return latency_floor(w_total, np.asarray(gpus_reading, dtype=float) * bytes_per_s_per_gpu)
