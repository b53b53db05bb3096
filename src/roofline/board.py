"""The lecture's board from its own inputs, and the board next to the engine (spec §1, §3.5–3.6, §5).

`board(...)` evaluates every board quantity of the lecture (spec §0.3 units: weights in BYTES, the
compute rate F in weight-bytes multiplied per second, so R = F/BW is dimensionless) from the board's
inputs alone — hardware ratio or FLOP/s, bandwidth, total and active parameters or sparsity, KV bytes
per token, context, batch, prices — through the closed forms of `roofline.lecture`. It is the second
derivation the engine is checked against; it ignores attention FLOPs, reads every weight each pass,
writes no KV and assumes perfect overlap and efficiency 1 (the lecture's own idealisation).

`compare(model, system, ...)` puts the board next to `roofline.step` for a catalog model and system,
and walks from one to the other a switch at a time (embedding lookup, touched experts, attention
FLOPs, KV writes) so that every difference carries its reason.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from . import lecture as L
from .errors import InputError, require_positive
from .units import SECONDS_PER_HOUR


@dataclass(frozen=True)
class Board:
    """Every board quantity, SI units (seconds, bytes, bytes/s, USD). Lecture symbols in comments."""

    # inputs as used (per domain: all GPUs of the scale-up domain read in parallel, §0.3)
    ratio: float  # R = F/BW
    compute_bytes_per_s: float  # F = MAC/s · b_w, whole domain
    flops_per_s: float  # standard FLOP/s = 2·MAC/s, whole domain
    bandwidth_bytes_per_s: float  # BW, whole domain
    gpus: int
    bytes_per_weight: float
    params_total: float
    params_active: float
    sparsity: float  # s = N_total/N_active
    w_total_bytes: float
    w_active_bytes: float
    kv_bytes_per_token: float
    context: float
    batch: float
    len_pass: int
    usd_per_gpu_hour: float
    # one pass (§1.1, §5.3)
    t_compute_s: float  # B·len·W_active/F
    t_weights_s: float  # W_total/BW
    t_kv_s: float  # B·ctx·kv/BW (or B·c·√ctx·kv/BW with sparse attention)
    roofline_step_s: float  # max(t_compute, t_weights + t_kv)
    bound: str
    step_s: float  # the step used for throughput and cost (roofline_step_s unless given)
    mfu: float  # t_compute / step
    memory_to_compute_ratio: float  # (t_weights + t_kv)/t_compute = B*/B + ctx/ctx* at decode (T11)
    # batch (§1.2–1.4)
    critical_batch: float  # B* = R·s (T01, T03)
    critical_batch_with_kv: float  # R·s/(1 − ctx/ctx*), inf beyond ctx* (T10)
    balanced_context: float  # ctx* = W_active/(R·kv)
    mfu_weights_amortised: float  # min(1, ctx*/ctx) (T09)
    latency_floor_s: float  # W_total/BW (T12, T26)
    batch1_cost_ratio: float  # cost per token at B = 1 over the B → ∞ floor, KV ignored = R·s (T14)
    # throughput, latency, cost (§1.3, §1.5, §1.6)
    tokens_per_s: float  # B·len/t (T06, T07)
    tokens_per_s_per_sequence: float
    worst_case_latency_s: float  # 2·t_step, train departures (T05)
    mean_wait_s: float  # t_step/2
    usd_per_token: float  # (t/(B·len))·n·$/GPU-s (T13)
    usd_per_million_tokens: float
    cost_floor_usd_per_token: float  # B → ∞
    # memory (§1.5, §3.5, §3.6)
    capacity_needed_bytes: float  # W_total + B·ctx·kv
    drain_time_s: float | None  # C_HBM/BW per GPU (T04); None without --capacity
    stages: int
    micro_batches: int  # n_micro = P (T24)
    batch_in_flight: float  # P·b
    weights_per_gpu_bytes: float  # W_total/(E·P) (T23)
    kv_per_gpu_bytes: float  # b·ctx·kv/E, independent of P (T23)
    memory_per_gpu_bytes: float
    hop_s: float
    token_latency_s: float  # t_step + P·t_hop (T25)
    # traffic (§1.6) and prices (§5.3)
    systems_for_traffic: float | None  # global tokens/s over this system's tokens/s (T08)
    output_over_input: float | None
    decode_mfu_from_price: float | None  # 1/p: decode MFU relative to prefill (T37)
    batch_for_price_ratio: float | None  # B with B*/B + ctx/ctx* = p (§5.3 [I]); None if p <= ctx/ctx*
    # fast mode (§1.8)
    fast_batch: float | None
    fast_speedup: float | None  # t(B)/t(B_fast) (T15)
    fast_price_ratio: float | None  # (t_f/B_f)/(t/B) (T15)

    def to_dict(self) -> dict:
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, np.generic):
                v = v.item()
            out[f.name] = None if isinstance(v, float) and not np.isfinite(v) else v
        return out


def board(*, params_total: float, params_active: float | None = None, sparsity: float | None = None,
          kv_bytes: float = 0.0, context: float = 0.0, batch: float = 1.0, ratio: float | None = None,
          flops_per_s: float | None = None, bandwidth_bytes_per_s: float = 1.0, gpus: int = 1,
          bytes_per_weight: float = 1.0, usd_per_gpu_hour: float = 2.0, len_pass: int = 1,
          capacity_bytes: float | None = None, step_s: float | None = None, stages: int = 1,
          ep: int | None = None, hop_s: float = 0.0, fast_batch: float | None = None,
          sparse_c: float | None = None, traffic_tokens_per_s: float | None = None,
          output_over_input: float | None = None) -> Board:
    """The lecture's board from its own inputs. Per-GPU hardware figures (`flops_per_s` in standard
    FLOP/s, `bandwidth_bytes_per_s`, `capacity_bytes`) are multiplied by `gpus` (the scale-up domain
    reads weights in parallel, §3.6); give exactly one of `ratio` (R) and `flops_per_s`, and exactly
    one of `params_active` and `sparsity`. Parameters count weights; W = N·b_w bytes (§0.3).
    `step_s` replaces the roofline step for throughput, cost and latency (the lecture's "20 ms train",
    T05–T07, T13, T25); `ep` (default: all GPUs) and `stages` give memory per GPU (T23).
    Ignores what the board ignores: attention FLOPs, distinct experts, KV writes, overlap losses."""
    require_positive("total parameters (--params-total)", params_total, fix="e.g. 1e12 for a 1T-parameter model")
    require_positive("GPUs (--gpus)", gpus, fix="the GPUs of one scale-up domain, e.g. 72")
    require_positive("bandwidth (--bandwidth, bytes/s per GPU)", bandwidth_bytes_per_s, fix="e.g. 8e12 for 8 TB/s")
    require_positive("bytes per weight (--bytes-per-weight)", bytes_per_weight, fix="use 0.5 (fp4), 1 (fp8) or 2 (bf16)")
    require_positive("KV bytes per token (--kv-bytes)", kv_bytes, allow_zero=True, fix="0 ignores the KV cache")
    require_positive("context (--context)", context, allow_zero=True, fix="tokens attended per sequence, 0 or more")
    require_positive("batch (--batch)", batch, fix="use at least one sequence")
    require_positive("pass length (--len-pass)", len_pass, fix="1 for decode, the prompt length for prefill")
    require_positive("USD per GPU-hour (--usd-per-gpu-hour)", usd_per_gpu_hour, fix="e.g. 2 (the lecture's)")
    require_positive("pipeline stages (--stages)", stages, fix="1 for no pipelining")
    require_positive("hop time (--hop-s)", hop_s, allow_zero=True, fix="seconds per stage boundary, 0 to ignore")
    if sparse_c is not None:
        require_positive("sparse-attention constant (--sparse-c)", sparse_c,
                         fix="the KV read is c·sqrt(context) tokens per sequence; omit it for dense attention")
    if (ratio is None) == (flops_per_s is None):
        raise InputError("give exactly one of --ratio (R = F/BW, e.g. 300) and --flops (FLOP/s per GPU); "
                         "the board needs one compute rate")
    if (params_active is None) == (sparsity is None):
        raise InputError("give exactly one of --params-active and --sparsity (s = N_total/N_active)")
    if sparsity is not None:
        require_positive("sparsity (--sparsity)", sparsity, fix="s = N_total/N_active is at least 1")
        params_active = params_total / sparsity
    assert params_active is not None  # exactly one of the two was given (checked above)
    require_positive("active parameters (--params-active)", params_active, fix="e.g. 1e11")
    if params_active > params_total * (1 + 1e-12):
        raise InputError(f"active parameters {params_active:.4g} exceed total {params_total:.4g}; "
                         f"an MoE activates at most all of its weights")
    BW = bandwidth_bytes_per_s * gpus
    if ratio is not None:
        require_positive("ratio R (--ratio)", ratio, fix="about 300 on most GPUs (spec §1.4)")
        F = ratio * BW
    else:
        assert flops_per_s is not None  # exactly one of ratio and flops was given (checked above)
        require_positive("FLOP/s per GPU (--flops)", flops_per_s, fix="dense peak, e.g. 9e15 for B200 fp4")
        F = float(L.flops_to_F(flops_per_s * gpus, bytes_per_weight))
    R = F / BW
    s = params_total / params_active
    w_tot, w_act = params_total * bytes_per_weight, params_active * bytes_per_weight
    kv = float(kv_bytes)
    t_c, t_w, t_kv = (float(x) for x in L.step_times(batch, context, w_tot, w_act, kv, F, BW, len_pass, sparse_c))
    t_roof = max(t_c, t_w + t_kv)
    if step_s is not None:
        require_positive("step time (--step-s)", step_s, fix="e.g. 0.02 for the lecture's 20 ms train")
    t = t_roof if step_s is None else float(step_s)
    tokens = batch * len_pass
    ctx_star = float(L.balanced_context(w_act, R, kv)) if kv > 0 else np.inf
    eff_ctx = context if sparse_c is None else sparse_c * np.sqrt(context)
    b_star = float(L.critical_batch(R, s))
    b_kv = float(L.critical_batch_with_kv(R, s, eff_ctx, ctx_star)) if kv > 0 else b_star
    price_s = gpus * usd_per_gpu_hour / SECONDS_PER_HOUR
    e = gpus if ep is None else ep
    require_positive("expert-parallel GPUs (--ep)", e, fix="GPUs that hold experts, default all")
    w_gpu, kv_gpu, mem_gpu = (float(x) for x in L.memory_per_gpu(w_tot, batch, context, kv, e, stages))
    fast: tuple[float | None, ...] = (None, None)
    if fast_batch is not None:
        require_positive("fast-mode batch (--fast-batch)", fast_batch, fix="a batch smaller than --batch")
        fast = tuple(float(x) for x in L.fast_mode(batch, fast_batch, w_tot, w_act, F, BW, kv, context))
    systems = None
    if traffic_tokens_per_s is not None:
        require_positive("global traffic (--traffic, tokens/s)", traffic_tokens_per_s, fix="e.g. 1e8 to 5e8 [S 00:27:28]")
        systems = float(L.systems_for_traffic(traffic_tokens_per_s, L.throughput(tokens, step_s=t)))
    mfu_p = b_p = None
    if output_over_input is not None:
        require_positive("output/input price ratio (--output-over-input)", output_over_input, fix="3 to 5 [S 01:41:39]")
        mfu_p = float(L.decode_mfu_from_price_ratio(output_over_input)[1])
        kv_term = eff_ctx / ctx_star if np.isfinite(ctx_star) else 0.0
        b_p = b_star / (output_over_input - kv_term) if output_over_input > kv_term else None
    drain = None
    if capacity_bytes is not None:
        require_positive("HBM capacity per GPU (--capacity)", capacity_bytes, fix="bytes, e.g. 288e9")
        drain = float(L.drain_time(capacity_bytes, bandwidth_bytes_per_s))
    return Board(
        ratio=R, compute_bytes_per_s=F, flops_per_s=2.0 * F / bytes_per_weight, bandwidth_bytes_per_s=BW,
        gpus=int(gpus), bytes_per_weight=bytes_per_weight, params_total=params_total, params_active=params_active,
        sparsity=s, w_total_bytes=w_tot, w_active_bytes=w_act, kv_bytes_per_token=kv, context=context,
        batch=batch, len_pass=int(len_pass), usd_per_gpu_hour=usd_per_gpu_hour,
        t_compute_s=t_c, t_weights_s=t_w, t_kv_s=t_kv, roofline_step_s=t_roof,
        bound="compute" if t_c >= t_w + t_kv else "memory", step_s=t, mfu=t_c / t,
        memory_to_compute_ratio=(t_w + t_kv) / t_c,
        critical_batch=b_star, critical_batch_with_kv=b_kv, balanced_context=ctx_star,
        mfu_weights_amortised=float(L.mfu_vs_context(context, ctx_star)) if context > 0 else 1.0,
        latency_floor_s=float(L.latency_floor(w_tot, BW)),
        batch1_cost_ratio=float(L.batch1_cost_ratio(w_tot, w_act, F, BW)),
        tokens_per_s=float(L.throughput(tokens, step_s=t)), tokens_per_s_per_sequence=len_pass / t,
        worst_case_latency_s=float(L.worst_case_latency(t)), mean_wait_s=t / 2,
        usd_per_token=float(L.cost_per_token(t, tokens, gpus, usd_per_gpu_hour)),
        usd_per_million_tokens=float(L.cost_per_token(t, tokens, gpus, usd_per_gpu_hour)) * 1e6,
        cost_floor_usd_per_token=float(L.cost_floor_per_token(w_act, F, context, kv, BW, len_pass)) * price_s,
        capacity_needed_bytes=w_tot + batch * context * kv, drain_time_s=drain,
        stages=int(stages), micro_batches=int(stages), batch_in_flight=stages * batch,
        weights_per_gpu_bytes=w_gpu, kv_per_gpu_bytes=kv_gpu, memory_per_gpu_bytes=mem_gpu,
        hop_s=hop_s, token_latency_s=float(L.token_latency_with_hops(t, stages, hop_s)),
        systems_for_traffic=systems, output_over_input=output_over_input, decode_mfu_from_price=mfu_p,
        batch_for_price_ratio=b_p, fast_batch=fast_batch, fast_speedup=fast[0], fast_price_ratio=fast[1],
    )


# ---- board next to the engine ---------------------------------------------------------------------


def _bound_name(r) -> str:
    """The engine's bound as a name (its result carries codes with a `bound_name` view, or names)."""
    return str(getattr(r, "bound_name", r.bound))

#: the engine's switches, turned on one at a time from the board's idealisation to roofline.step
ENGINE_STEPS: tuple[tuple[str, Any, str], ...] = (
    ("board", None, "the lecture's closed form: compute 2·N_active FLOPs per token (embedding included), "
                    "every weight read, no attention FLOPs, no KV writes"),
    ("embedding", dict(attention_flops=False, distinct_experts=False, kv_writes=False),
     "the input-embedding lookup is a gather, not a matmul: compute uses N_active minus V·D"),
    ("touched experts", dict(attention_flops=False, distinct_experts=True, kv_writes=False),
     "a batch reads only the experts its tokens route to (all E only as B·k ≫ E), so small batches read "
     "far less than W_total"),
    ("attention FLOPs", dict(attention_flops=True, distinct_experts=True, kv_writes=False),
     "QKᵀ and PV cost 4·ctx·(query heads × head dim) FLOPs per token per KV-attending layer"),
    ("KV writes", dict(attention_flops=True, distinct_experts=True, kv_writes=True),
     "each new token's KV is written to HBM for later steps (the lecture reads KV, never writes it)"),
)


def compare(model, system, batch, context, *, weights_dtype="fp8", kv_dtype="fp8", chips=None,
            usd_per_gpu_hour=None) -> dict:
    """The board and `roofline.step` side by side for a catalog model and system (pure roofline, efficiency
    1): a walk from the board to the engine one switch at a time (ENGINE_STEPS), each row with its reason,
    and the batch-1 penalty both ways (the board's R·s against the engine's, which reads touched experts)."""
    from . import model as M
    from .engine import step
    from .units import dtype_bytes

    n = int(chips or system.chips)
    acc = system.accelerator
    price = acc.usd_per_hour if usd_per_gpu_hour is None else usd_per_gpu_hour
    b_w = dtype_bytes(weights_dtype)
    kv = M.kv_bytes_per_token(model, kv_dtype)
    bd = board(params_total=M.params_total(model), params_active=M.params_active(model), kv_bytes=kv,
               context=context, batch=batch, flops_per_s=acc.peak_flops(weights_dtype),
               bandwidth_bytes_per_s=acc.hbm_bytes_per_s, gpus=n, bytes_per_weight=b_w, usd_per_gpu_hour=price)
    rows = [dict(step="board", compute_s=bd.t_compute_s, weight_read_s=bd.t_weights_s, kv_read_s=bd.t_kv_s,
                 kv_write_s=0.0, step_s=bd.roofline_step_s, bound=bd.bound,
                 usd_per_million_tokens=bd.usd_per_million_tokens, reason=ENGINE_STEPS[0][2])]
    kw: dict[str, Any] = dict(weights_dtype=weights_dtype, kv_dtype=kv_dtype, gpus=n, usd_per_gpu_hour=price,
                              check_context=False)
    for name, switches, reason in ENGINE_STEPS[1:]:
        r = step(model, system, batch, context, **kw, **switches)
        rows.append(dict(step=name, compute_s=float(r.compute_s), weight_read_s=float(r.weight_read_s),
                         kv_read_s=float(r.kv_read_s), kv_write_s=float(r.kv_write_s), step_s=float(r.step_s),
                         bound=_bound_name(r), usd_per_million_tokens=float(r.usd_per_million_tokens), reason=reason))
    eng = step(model, system, batch, context, **kw)
    assert eng.critical_batch is not None and eng.critical_batch_with_kv is not None  # details=True (default)
    assert eng.latency_floor_s is not None
    # batch-1 penalty: cost per token at B = 1 over the cost at a batch far past every crossover, no KV
    big = 1e7
    e1, einf = (step(model, system, b, 0, **kw) for b in (1, big))
    engine_penalty = float(e1.usd_per_million_tokens) / float(einf.usd_per_million_tokens)
    # decode attention's own intensity: its FLOPs over the KV bytes it reads (one shared KV layer read by
    # every layer's query heads makes it high; the lecture assumes it is memory-bound [S 00:07:13])
    ctx_i = max(float(context), 1.0)
    attn_intensity = (float(M.attention_flops_per_token(model, ctx_i))
                      / float(M.kv_bytes_per_sequence(model, ctx_i, kv_dtype)))
    summary = [
        ("critical batch (KV ignored)", bd.critical_batch, float(eng.critical_batch),
         "board: R·s with s = N_total/N_active; engine: the batch where its compute reaches its memory time at "
         "context 0 (embedding lookup excluded from compute, touched experts in the weight read)"),
        ("critical batch at this context", bd.critical_batch_with_kv, float(eng.critical_batch_with_kv),
         "board: R·s/(1 − ctx/ctx*) without attention FLOPs; engine: where its bound flips, attention FLOPs "
         "included (they grow with context, so the flip comes at a smaller batch)"),
        ("latency floor (s)", bd.latency_floor_s, float(eng.latency_floor_s),
         "board: W_total/BW, every weight read; engine: the step at one sequence, which reads only the "
         "experts that sequence routes to"),
        ("batch-1 cost penalty (×)", bd.batch1_cost_ratio, engine_penalty,
         "board: every weight read at B = 1, so R·s; engine: B = 1 reads only the k routed experts per layer, "
         "so the penalty is close to R (the sparsity is paid only once the batch touches every expert)"),
        ("step (s)", bd.roofline_step_s, float(eng.step_s), "touched experts, attention FLOPs, KV writes (walk above)"),
        ("$ per million tokens", bd.usd_per_million_tokens, float(eng.usd_per_million_tokens), "follows the step"),
    ]
    return {
        "model": model.id, "system": system.id, "chips": n, "batch": batch, "context": context,
        "weights_dtype": weights_dtype, "kv_dtype": kv_dtype, "board": bd.to_dict(), "engine": eng.to_dict(),
        "walk": rows,
        "differences": [dict(quantity=q, board=b, engine=e, ratio=(e / b if b and np.isfinite(b) and np.isfinite(e) else None),
                             reason=why) for q, b, e, why in summary],
        "attention_flops_per_kv_byte": attn_intensity,
        "ridge_flops_per_byte": acc.peak_flops(weights_dtype) / acc.hbm_bytes_per_s,
    }


def pipeline_hop_s(system, micro_batch_tokens, d_model, gpus_per_stage, act_bytes=2.0):
    """What one decode pipeline hop costs (the figure roofline uses everywhere): the scale-out link latency
    α (catalog `scale_out_latency_us`) plus the transfer of one micro-batch's activations, split over the
    stage's GPUs, at the per-GPU scale-out bandwidth β (catalog `scale_out_gb_per_s`):

        t_hop = α + b·D·bytes / (S · β)            (network.p2p_s; the same α–β send as `step --pp`)

    The stage's own compute and memory time is not part of a hop: it is already in t_step. The lecture's
    "a few milliseconds" per hop [S 01:15:21] is a guess it says may be off by 10×; measured RDMA hops are
    ~10 µs (docs/roofline.md, 'What a pipeline hop costs'). Ignores queueing behind other traffic."""
    from .network import p2p_s

    require_positive("GPUs per stage", gpus_per_stage)
    send = np.asarray(micro_batch_tokens, dtype=float) * d_model * act_bytes / gpus_per_stage
    return p2p_s(send, system.scale_out_bytes_per_s, system.scale_out_latency_s)
