"""Where to keep a cached token's KV: memory tiers against rematerialisation (lecture §5.4).

A token's KV can be rebuilt (a prefill pass: "rematerialise", what a cache miss means) or stored in
a tier (HBM, host DDR, CXL, flash, disk) [S 01:49:26–01:50:24]. Each option costs a one-off retrieve
cost plus a hold cost per second [S 01:50:54–01:59:24]:

    option          retrieve ($)                         hold ($/s)
    rematerialise   (W_active/F) · p_GPU                 0
    HBM             0 (already in HBM)                    (kv/C_HBM) · p_GPU
    DDR/CXL/flash/  (kv/BW_tier) · p_tier                 (kv/C_tier) · p_tier
    disk

    C(T) = retrieve + T · hold           cheapest option for a hold time T = lower envelope of lines

p_tier is the cost per second of the whole storage unit (catalog tiers.yaml), so
hold = kv · ($ per byte-second) and retrieve = hold · t_drain with t_drain = C/BW: retrieving and
holding cost the same at T = C/BW (T40), which is the drain-time rule [S 02:00:37–02:03:33]: the right
tier for a hold time T is the one whose drain time is about T.

Ignores: the GPU time spent waiting for a copy into HBM (the lecture prices a retrieve at the tier's
own $/s), write costs, replication, queueing for the tier's bandwidth, and the attention FLOPs of
rematerialisation in the lecture form (remat_cost_roofline includes them via roofline.step).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .catalog.prices import MEDIA, MemoryTier
from .errors import InputError, require_positive

REMAT = "remat"


@dataclass(frozen=True)
class Options:
    """Storage options as lines C(T) = retrieve_usd + T · hold_usd_per_s (per token), remat last."""

    names: tuple[str, ...]
    media: tuple[str, ...]
    retrieve_usd: np.ndarray
    hold_usd_per_s: np.ndarray
    drain_time_s: np.ndarray  # inf for remat (it holds nothing)

    def cost(self, hold_s) -> np.ndarray:
        """Cost per token of each option (axis 0) for each hold time (trailing axes): retrieve + T·hold."""
        T = np.asarray(hold_s, dtype=float)
        shape = (-1,) + (1,) * T.ndim
        return self.retrieve_usd.reshape(shape) + self.hold_usd_per_s.reshape(shape) * T


def hold_cost_usd_per_s(kv_bytes, tier: MemoryTier):
    """Hold cost per token-second in `tier`: (kv/C)·p = kv · $/byte-s [S 01:55:00–01:59:24]."""
    return np.asarray(kv_bytes, dtype=float) * tier.usd_per_byte_s


def retrieve_cost_usd(kv_bytes, tier: MemoryTier):
    """Retrieve cost per token: 0 for HBM (already there), else (kv/BW)·p_tier [S 01:56:00–01:58:30]."""
    kv = np.asarray(kv_bytes, dtype=float)
    if tier.medium == "hbm":
        return 0.0 * kv
    return kv / tier.bytes_per_s * tier.usd_per_s


def remat_cost_usd(w_active_bytes, F, usd_per_s):
    """Rematerialise one token: a forward pass, (W_active/F) · p_GPU (lecture units: W in bytes, F in
    weight-bytes multiplied per second) [S 01:51:00]; ignores attention FLOPs (small below ~1M tokens
    [S 01:51:24–01:52:20])."""
    require_positive("F (weight-bytes multiplied per second)", F)
    return np.asarray(w_active_bytes, dtype=float) / F * usd_per_s


def remat_cost_roofline(model, system, context, *, weights_dtype="fp8", kv_dtype="bf16", chips=None,
                        efficiency=None, usd_per_gpu_hour=None):
    """Average cost per token of rebuilding a `context`-token prefix with one prefill pass on the
    roofline (roofline.step, phase='prefill', prompt=context, batch 1): includes attention FLOPs and
    the pass's KV writes; broadcasts over `context`."""
    from .efficiency import Efficiency
    from .engine import step

    ctx = np.asarray(context, dtype=float)
    require_positive("context to rematerialise", ctx, fix="give at least one token")
    r = step(model, system, 1, 0, phase="prefill", prompt=ctx, weights_dtype=weights_dtype, kv_dtype=kv_dtype,
             chips=chips, efficiency=efficiency or Efficiency(), usd_per_gpu_hour=usd_per_gpu_hour,
             check_context=False)
    return np.asarray(r.usd_per_million_tokens) / 1e6


def options(kv_bytes: float, tiers, remat_usd: float | None) -> Options:
    """The storage options for one token of `kv_bytes`: every tier, then rematerialisation."""
    require_positive("KV bytes per token", kv_bytes)
    tiers = list(tiers)
    if not tiers:
        raise InputError("no memory tiers given; add rows under `tiers:` or pick ids from `roofline tiers`")
    names = [t.id for t in tiers]
    media = [t.medium for t in tiers]
    ret = [float(retrieve_cost_usd(kv_bytes, t)) for t in tiers]
    hold = [float(hold_cost_usd_per_s(kv_bytes, t)) for t in tiers]
    drain = [t.drain_time_s for t in tiers]
    if remat_usd is not None:
        require_positive("rematerialisation cost", remat_usd)
        names.append(REMAT)
        media.append(REMAT)
        ret.append(float(remat_usd))
        hold.append(0.0)
        drain.append(np.inf)
    return Options(tuple(names), tuple(media), np.array(ret), np.array(hold), np.array(drain))


def cheapest(opts: Options, hold_s):
    """Index of the cheapest option for each hold time (vectorised argmin over options)."""
    return np.argmin(opts.cost(hold_s), axis=0)


def break_even_s(retrieve_a, hold_a, retrieve_b, hold_b):
    """Hold time where options a and b cost the same: (retrieve_b − retrieve_a)/(hold_a − hold_b) [I]."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.asarray(retrieve_b, dtype=float) - retrieve_a) / (np.asarray(hold_a, dtype=float) - hold_b)


def bands(opts: Options) -> list[tuple[str, float, float]]:
    """The lower envelope of the lines C(T): [(option, T_from, T_to)] for T in [0, ∞), in order.

    Exact: starting from the cheapest option at T = 0 (lowest retrieve, then lowest hold), jump to the
    first later crossing by an option with a lower hold cost. Along the envelope the hold cost only
    falls, so the bands come in order of decreasing $/byte-s [I, §5.4]."""
    r, h = opts.retrieve_usd, opts.hold_usd_per_s
    cur = int(np.lexsort((h, r))[0])
    t0, out = 0.0, []
    while True:
        lower = h < h[cur]
        if not np.any(lower):
            out.append((opts.names[cur], t0, np.inf))
            return out
        t = np.where(lower, break_even_s(r[cur], h[cur], r, h), np.inf)
        t = np.maximum(t, t0)
        nxt_t = float(np.min(t))
        ties = np.flatnonzero(t == nxt_t)
        nxt = int(ties[np.argmin(h[ties])])
        if nxt_t > t0:
            out.append((opts.names[cur], t0, nxt_t))
        cur, t0 = nxt, nxt_t


def tier_for_hold(hold_s, tiers):
    """THE tier for holding KV `hold_s` seconds (the one answer `roofline tiers`, `prices infer` and the
    report give): the exact form of the drain-time rule. Per byte, a tier costs its price per
    byte-second u times (T + t_drain) — the hold, plus a retrieve that costs the same as holding for one
    drain time (T40) — and HBM has no retrieve (u·T). So the choice

        argmin_i  u_i · (T + t_drain_i)          (t_drain = 0 for HBM)

    is independent of the KV bytes per token (they scale every tier alike; only rematerialisation,
    priced per token, depends on them: see `cheapest`). The lecture's rule "drain time ≈ T"
    [S 02:00:37–02:03:33] is what this gives when u falls steeply down the hierarchy; with real
    prices the break-even between two tiers is (u_b·d_b − u_a·d_a)/(u_a − u_b), not a drain time.
    Broadcasts over `hold_s`; returns indices into `tiers`."""
    T = np.asarray(hold_s, dtype=float)
    require_positive("hold time", T)
    tiers = list(tiers)
    if not tiers:
        raise InputError("no memory tiers given; add rows under `tiers:` or pick ids from `roofline tiers`")
    u = np.array([t.usd_per_byte_s for t in tiers])
    d = np.array([0.0 if t.medium == "hbm" else t.drain_time_s for t in tiers])
    return np.argmin(u * (T[..., None] + d), axis=-1)


def drain_time_choice(hold_s, drain_times_s):
    """The lecture's heuristic as it states it: index of the tier whose drain time C/BW is nearest the hold
    time in log space [S 02:00:37–02:03:33] (T39: holds 0.02/300/3,600 s over the lecture's drains
    0.02/3/60/3,600 s → HBM/flash/disk). Used only to check the lecture's own example; answers about
    catalog tiers come from `tier_for_hold`, which weighs each tier's price as well (on catalog data the
    nearest-drain heuristic puts a 1-hour hold on flash, since the catalog's network disk drains in 7.6 h,
    while the cost model puts it on disk)."""
    T = np.asarray(hold_s, dtype=float)
    d = np.asarray(drain_times_s, dtype=float)
    require_positive("hold time", T)
    require_positive("drain time", d)
    return np.argmin(np.abs(np.log(T)[..., None] - np.log(d)), axis=-1)


def break_even_hbm_vs_remat(w_active_bytes, F, hbm_capacity_bytes, kv_bytes):
    """T_be = (W_active/F) · C_HBM/kv: holding in HBM beats recomputing below this hold time [I, §5.4].
    With kv = W_active/(R·ctx*) and F = R·BW it is ctx* · t_drain (T42: 2e5 × 0.02 s = 4,000 s)."""
    require_positive("KV bytes per token", kv_bytes)
    return np.asarray(w_active_bytes, dtype=float) / F * hbm_capacity_bytes / kv_bytes


def medium_rank(medium: str) -> int:
    """Position in the hierarchy HBM → DDR → CXL → flash → disk → remat."""
    return len(MEDIA) if medium == REMAT else MEDIA.index(medium)


def remat_cost_on(accelerator, *, active_params=1e11, weights_dtype="fp8", usd_per_gpu_hour=None):
    """Lecture-form remat cost per token on one accelerator: (N_active·b_w / F) · p_GPU, with
    F = (FLOPS/2)·b_w (lecture.flops_to_F) and p_GPU the catalog rental price unless given."""
    from . import lecture
    from .units import SECONDS_PER_HOUR, dtype_bytes

    require_positive("active parameters", active_params)
    b_w = dtype_bytes(weights_dtype)
    F = float(lecture.flops_to_F(accelerator.peak_flops(weights_dtype), b_w))
    price = accelerator.usd_per_hour if usd_per_gpu_hour is None else usd_per_gpu_hour
    require_positive("usd per GPU-hour", price)
    return float(remat_cost_usd(np.asarray(active_params, dtype=float) * b_w, F, price / SECONDS_PER_HOUR))
