"""What API prices reveal (lecture §5, §1.8): inference from price lists, each with its assumptions.

Premise [S 01:41:18]: providers are pushed to price near cost, or someone undercuts them. So price
ratios are read as cost ratios; margins are assumed to cancel in every ratio used here.

- Context tier (T34) [S 01:35:53–01:38:22]: the price step at ctx* sits where per-sequence KV-read time
  equals compute time, B·ctx*·kv/BW = B·W_active/F, so kv = W_active/(R·ctx*) (lecture.kv_from_price_kink)
  and, inverted, W_active = kv·R·ctx*.
- Output/input ratio p (T37) [D/S 01:47:56]: prefill is compute-bound, decode costs p times more, so at
  decode t_mem/t_compute ≈ p (decode MFU ≈ 1/p), and p = B*/B + ctx/ctx* [I, §5.3]
  (lecture.memory_to_compute_ratio): B = B*/p with no context, or ctx = (p − 1)·ctx* at B = B*.
- Fast mode (§1.8 [I]): price ratio M = (B_n/B_f)/S, so the batch ratio is B_n/B_f = M·S.
- Cache prices (T39–T42) [S 01:48:52–02:03:48]: a write that holds a token T seconds for Δ more than
  the base input price implies a hold price Δ/T per token-second; the drain-time rule names the tier;
  the hit/miss ratio bounds what a retrieve may cost against recomputing.
- Architecture check (T35, T36) [S 01:38:35–01:41:12]: KV layouts whose bytes/token match.

Every function returns `Inference` records: a central value, a low–high range over the stated
assumptions (accelerators' R, bytes per weight, active parameters, ...), formula and source.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import lecture
from .catalog.prices import PriceList
from .errors import InputError, require_positive
from .units import DTYPE_BYTES, MEGA

#: The lecture's running assumptions: R ≈ 300 [S 00:18:25]; ~100 B active params at 1 byte [S 01:29:51, §0.3].
LECTURE_R = 300.0
LECTURE_ACTIVE_PARAMS = 1e11
#: Range of frontier active parameters considered when none is given ("range of a hundred billion,
#: maybe a bit larger" [S 01:29:51]; the low end covers mid-size MoEs such as DeepSeek-V3's 37 B).
ACTIVE_PARAMS_RANGE = (3e10, 1e11, 3e11)
#: Weight formats considered (bytes per weight): fp8 (the lecture's reading, §0.3) and bf16.
WEIGHT_DTYPES = ("fp8", "bf16")


@dataclass(frozen=True)
class Inference:
    price_list: str
    quantity: str
    value: float
    low: float
    high: float
    unit: str
    formula: str
    assumptions: dict = field(default_factory=dict)
    source: str = ""
    note: str = ""

    def to_dict(self) -> dict:
        return {"price_list": self.price_list, "quantity": self.quantity, "value": self.value, "low": self.low,
                "high": self.high, "unit": self.unit, "formula": self.formula, "assumptions": self.assumptions,
                "source": self.source, "note": self.note}


def accelerator_ratios(accelerators, dtypes=WEIGHT_DTYPES) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(R, bytes per weight, labels) for every accelerator × dtype it runs natively (Accelerator.ratio)."""
    R, bw, labels = [], [], []
    for acc in accelerators:
        for d in dtypes:
            if d in acc.flops_per_s:
                R.append(acc.ratio(d))
                bw.append(DTYPE_BYTES[d])
                labels.append(f"{acc.id}/{d}")
    if not R:
        raise InputError(f"none of the accelerators runs {'/'.join(dtypes)} natively; pick other accelerators")
    return np.array(R), np.array(bw), labels


def _span(arr) -> tuple[float, float]:
    a = np.asarray(arr, dtype=float)
    return float(np.min(a)), float(np.max(a))


def kv_from_context_tier(p: PriceList, accelerators, active_params=ACTIVE_PARAMS_RANGE, sparse=None) -> list[Inference]:
    """KV bytes per token implied by each context tier: kv = N_active·b_w/(R·ctx*) (T34); with sparse attention
    (engine.SparseAttention) a query reads only attended(ctx*) of the ctx* cached tokens, so kv =
    N_active·b_w/(R·attended(ctx*)) — c·√ctx* or top-k (lecture §1.2 [S 00:12:25]: "divide by a sparsity term").

    Central value: the lecture's R = 300, W_active = 1e11 B. Range: R and b_w over every accelerator ×
    {fp8, bf16} it runs natively (R from Accelerator.ratio), N_active over `active_params`."""
    from .engine import attended

    out = []
    R, bw, labels = accelerator_ratios(accelerators)
    N = np.asarray(active_params, dtype=float)
    require_positive("active parameters", N)
    for t in p.context_tiers:
        read = float(attended(t.above_tokens, sparse))  # tokens one query reads at the tier
        grid = lecture.kv_from_price_kink(R[:, None], N[None, :] * bw[:, None], read)
        central = float(lecture.kv_from_price_kink(LECTURE_R, LECTURE_ACTIVE_PARAMS, read))
        lo, hi = _span(grid)
        step_in = t.input_usd_per_token / p.input_usd_per_token
        step_out = t.output_usd_per_token / p.output_usd_per_token
        out.append(Inference(
            p.id, f"KV bytes/token from the {t.above_tokens:,.0f}-token tier", central, lo, hi, "B/token",
            "kv = W_active / (R · ctx*)" if sparse is None else f"kv = W_active / (R · attended(ctx*)), {sparse.kind} {sparse.value:g}",
            {"ctx*": t.above_tokens, "attended tokens at ctx*": read, "R": f"{R.min():.0f}-{R.max():.0f} ({len(labels)} accelerator/dtype pairs)",
             "N_active": f"{N.min():.3g}-{N.max():.3g}", "bytes/weight": "1 (fp8) or 2 (bf16)",
             "central": "R = 300, W_active = 1e11 B (lecture)", "price step": f"input x{step_in:.2f}, output x{step_out:.2f}"},
            "lecture §5.1 [S 01:35:53-01:38:22]",
            "weights amortised (large batch); the tier sits at the crossover, the step size is margin, not derived"))
    return out


def active_from_context_tier(p: PriceList, accelerators, kv_bytes=(1024.0, 2048.0, 4096.0)) -> list[Inference]:
    """Active parameters implied by a context tier given KV bytes: N_active = kv·R·ctx*/b_w (T34 inverted)."""
    out = []
    R, bw, _ = accelerator_ratios(accelerators)
    kv = np.asarray(kv_bytes, dtype=float)
    require_positive("KV bytes per token", kv)
    for t in p.context_tiers:
        grid = kv[None, :] * R[:, None] * t.above_tokens / bw[:, None]
        central = 2048.0 * LECTURE_R * t.above_tokens / 1.0
        lo, hi = _span(grid)
        out.append(Inference(
            p.id, f"active params from the {t.above_tokens:,.0f}-token tier", central, lo, hi, "params",
            "N_active = kv · R · ctx* / b_w",
            {"ctx*": t.above_tokens, "kv": f"{kv.min():.0f}-{kv.max():.0f} B/token",
             "R, b_w": "catalog accelerators x {fp8, bf16}", "central": "kv = 2,048 B, R = 300, b_w = 1"},
            "lecture §5.1 inverted [I]"))
    return out


def decode_ratio(p: PriceList) -> list[Inference]:
    """Output/input price ratio → decode t_mem/t_compute and decode MFU (T37), and the batch or
    context that ratio implies through p = B*/B + ctx/ctx* [I, §5.3]."""
    out = []
    rows = [("base", p.input_usd_per_token, p.output_usd_per_token)]
    rows += [(f"> {t.above_tokens:,.0f} tokens", t.input_usd_per_token, t.output_usd_per_token) for t in p.context_tiers]
    for label, inp, outp in rows:
        if inp <= 0:
            continue
        ratio, mfu = lecture.decode_mfu_from_price_ratio(outp / inp)
        ratio, mfu = float(ratio), float(mfu)
        assumptions = {"prefill": "compute-bound at the same MFU", "margin": "same on input and output",
                       "prices": f"input ${inp * MEGA:g}, output ${outp * MEGA:g} per MTok ({label})"}
        out.append(Inference(p.id, f"decode t_mem/t_compute ({label})", ratio, ratio, ratio, "x",
                             "t_mem/t_compute = p_out/p_in", assumptions, "lecture §5.3 [D/S 01:47:56]",
                             "ratio <= 1 would mean decode is compute-bound"))
        out.append(Inference(p.id, f"decode MFU relative to prefill ({label})", min(1.0, mfu), min(1.0, mfu),
                             min(1.0, mfu), "fraction", "MFU_decode = 1/p", assumptions, "flashcards [F], §5.3"))
        if ratio > 1:
            b_low = float(1.0 / ratio)  # all of the memory time is weights: B = B*/p, no context
            ctx_high = ratio - 1.0  # batch at B*: the rest is context
            check = float(lecture.memory_to_compute_ratio(b_low, 1.0, 0.0, 1.0))
            out.append(Inference(p.id, f"decode batch B/B* if context were free ({label})", b_low, b_low, 1.0, "x B*",
                                 "p = B*/B + ctx/ctx*  ->  B/B* = 1/p at ctx = 0", {**assumptions, "check p": check},
                                 "spec §5.3 [I]", "range: B/B* from 1/p (no context) to 1 (context ctx = (p-1)·ctx*)"))
            out.append(Inference(p.id, f"context ctx/ctx* at B = B* ({label})", ctx_high, 0.0, ctx_high, "x ctx*",
                                 "ctx/ctx* = p - 1 at B = B*", assumptions, "spec §5.3 [I]",
                                 "sits uneasily with running at 2-3x B* (spec §8 item 9)"))
    return out


def variants(p: PriceList) -> list[Inference]:
    """Fast/priority/flex/off-peak variants: price ratio M (output price) and, where a speed-up S is
    stated, the implied batch ratio B_normal/B_variant = M·S (§1.8 [I]); checked against
    lecture.fast_mode with B_normal = S·B* (the smallest normal batch for which batching alone gives S)."""
    out = []
    for v in p.variants:
        M = v.output_usd_per_token / p.output_usd_per_token
        if v.speedup is None:
            out.append(Inference(p.id, f"{v.name}: price ratio (output)", M, M, M, "x",
                                 "M = p_variant/p_standard",
                                 {"speed-up": "not stated", "if same speed": f"B_normal/B_{v.name} = M = {M:.3g}"},
                                 "§1.8 [I]", v.notes or "without a speed ratio the batch ratio is M·S with S unknown"))
            continue
        S = v.speedup
        ratio = M * S
        # cross-check with the roofline: normal at S·B*, variant at B_n/(M·S); R=300, s=10 (illustrative)
        b_star = float(lecture.critical_batch(LECTURE_R, 10.0))
        speed, price = lecture.fast_mode(S * b_star, S * b_star / ratio, 1e12, 1e11, LECTURE_R, 1.0)
        out.append(Inference(p.id, f"{v.name}: batch ratio B_normal/B_{v.name}", ratio, ratio, ratio, "x",
                             "B_n/B_f = M · S",
                             {"M (price ratio)": M, "S (speed-up)": S, "normal batch": f">= {S:g} x B* (batching alone)",
                              "roofline check": f"speed {float(speed):.3g}x, price {float(price):.3g}x"},
                             "spec §1.8 [D 00:01:01, I]", "KV reads and speculative decoding ignored"))
    return out


def hold_prices(p: PriceList, tiers) -> list[Inference]:
    """Cache writes and storage → hold price per token-second, the drain-time tier, the KV bytes the
    hold price would pay for in each tier, and the hold time beyond which recomputing is cheaper
    (T39–T42; Anthropic: ($6.25 − $5)/300 s and ($10 − $5)/3,600 s per MTok)."""
    from .tiers import tier_for_hold

    tiers = list(tiers)
    drains = np.array([t.drain_time_s for t in tiers])
    out = []
    holds = [(f"{w.hold_s:g}-s write", w.hold_s, (w.usd_per_token - p.input_usd_per_token) / w.hold_s)
             for w in p.cache_writes]
    if p.cache_storage_usd_per_token_s is not None:
        holds.append(("storage (1 h)", 3600.0, p.cache_storage_usd_per_token_s))
    for label, hold_s, h in holds:
        if h <= 0:
            out.append(Inference(p.id, f"hold price, {label}", h, h, h, "$/MTok/s", "(write - input)/T", {},
                                 "§5.4 [I]", "write not dearer than input: no hold price implied"))
            continue
        idx = int(tier_for_hold(hold_s, tiers))
        kv = np.array([h / t.usd_per_byte_s for t in tiers])
        lo, hi = _span(kv)
        assumptions = {"T": hold_s, "tier for this hold": f"{tiers[idx].id} (drain {drains[idx]:.3g} s)"}
        out.append(Inference(p.id, f"hold price, {label}", h * MEGA, h * MEGA, h * MEGA, "$/MTok/s",
                             "h = (p_write - p_input)/T" if "write" in label else "h = storage price",
                             assumptions, "spec §5.4 [I]"))
        out.append(Inference(p.id, f"KV bytes/token the {label} hold price pays for", float(kv[idx]), lo, hi,
                             "B/token", "kv = h / ($ per byte-second of the tier)",
                             {**assumptions, "range": "over all catalog tiers (HBM low end, disk high end)"},
                             "spec §5.4 [I]", "cost-priced hold in the drain-time tier; margin ignored"))
        if p.cache_hit_usd_per_token is not None:
            t_be = (p.input_usd_per_token - p.cache_hit_usd_per_token) / h
            out.append(Inference(p.id, f"recompute-vs-hold break-even, {label}", t_be, t_be, t_be, "s",
                                 "T = (p_input - p_hit)/h", assumptions, "spec §5.4 [I]",
                                 "beyond this hold time a miss (recompute) is cheaper than paying to hold"))
    return out


def cache_discount(p: PriceList, kv_bytes: float, remat_usd: float, tiers) -> list[Inference]:
    """Hit/miss ratio f = p_hit/p_input and, reading a miss as a rematerialisation and a hit as a
    retrieve from a tier, the longest hold each tier could afford at the hit price:
    T_max = (f·remat − retrieve)/hold [I, §5.4] (the markup cancels in the ratio)."""
    from .tiers import hold_cost_usd_per_s, retrieve_cost_usd

    if p.cache_hit_usd_per_token is None or p.input_usd_per_token <= 0:
        return []
    f = p.cache_hit_usd_per_token / p.input_usd_per_token
    out = [Inference(p.id, "cache hit / miss price", f, f, f, "x", "f = p_hit/p_input",
                     {"hit": p.cache_hit_usd_per_token * MEGA, "miss": p.input_usd_per_token * MEGA},
                     "spec §5.4 (T41)", "a hit costs at most f of recomputing the token")]
    budgets = [f * remat_usd - float(retrieve_cost_usd(kv_bytes, t)) for t in tiers]
    t_max = np.array([b / float(hold_cost_usd_per_s(kv_bytes, t)) if b > 0 else 0.0 for b, t in zip(budgets, tiers)])
    best = int(np.argmax(t_max))
    out.append(Inference(p.id, "longest affordable hold at the hit price", float(t_max[best]), float(t_max.min()),
                         float(t_max.max()), "s", "T_max = (f · remat - retrieve)/hold",
                         {"kv": f"{kv_bytes:g} B/token", "remat": f"${remat_usd * MEGA:.3g}/MTok",
                          "per tier": ", ".join(f"{t.id} {x:.3g} s" for t, x in zip(tiers, t_max)),
                          "best tier": list(tiers)[best].id},
                         "spec §5.4 [I]", "range over catalog tiers"))
    return out


def architecture_layouts(kv_target: float, top: int = 10, layers_max: int = 128) -> list[dict]:
    """KV layouts ranked by |log(kv/kv_target)| (T35: 1 layer × 2 × 128 × 8 × 1 B = 2,048 B).

    Grid: unique KV layers 1…layers_max (powers of 2 and multiples of 8; fewer than layers when KV is
    shared across layers), KV heads {1, 2, 4, 8, 16}, head dim {64, 128, 256}, fp8/bf16, plus MLA
    (latent 512 + rope 64 per layer, DeepSeek-V2/V3) over the same layer counts. Equal-byte layouts are
    ordered by head dim nearest 128 (typical [S 01:39:06]), then fewer unique layers (shared KV)."""
    require_positive("target KV bytes per token", kv_target)
    layers = np.unique(np.r_[2 ** np.arange(int(np.log2(layers_max)) + 1), np.arange(8, layers_max + 1, 8)])
    heads = np.array([1, 2, 4, 8, 16])
    dims = np.array([64, 128, 256])
    dts = {"fp8": 1.0, "bf16": 2.0}
    rows: list[dict] = []
    dim_off: list = []
    n_layers: list = []
    for dname, b in dts.items():  # a loop over two formats; the grid itself is one broadcast
        kv = lecture.kv_from_architecture(layers[:, None, None], dims[None, None, :], heads[None, :, None], b)
        for (i, j, k), v in np.ndenumerate(kv):
            rows.append({"layout": f"{layers[i]} KV layer(s) x 2 x {dims[k]} dims x {heads[j]} KV heads, {dname}",
                         "kv_bytes": float(v), "kind": "GQA/MQA"})
            dim_off.append(abs(np.log2(dims[k] / 128)))
            n_layers.append(layers[i])
        mla = layers * (512 + 64) * b
        for i, v in enumerate(mla):
            rows.append({"layout": f"MLA {layers[i]} layer(s) x (512 + 64), {dname}", "kv_bytes": float(v), "kind": "MLA"})
            dim_off.append(0.0)
            n_layers.append(layers[i])
    err = np.round(np.abs(np.log(np.array([r["kv_bytes"] for r in rows]) / kv_target)), 12)
    # ties (equal bytes): head dim nearest the typical 128 [S 01:39:06], then fewer unique KV layers
    order = np.lexsort((np.array(n_layers), np.array(dim_off), err))[:top]
    return [{**rows[i], "log_error": float(err[i]), "ratio": rows[i]["kv_bytes"] / kv_target} for i in order]


def infer_all(p: PriceList, accelerators, tiers, *, kv_bytes=2048.0, remat_usd=None,
              active_params=ACTIVE_PARAMS_RANGE, sparse=None) -> list[Inference]:
    """Every inference that `p`'s prices support (`sparse`: an engine.SparseAttention for the KV-from-tier one)."""
    out = kv_from_context_tier(p, accelerators, active_params, sparse) + active_from_context_tier(p, accelerators)
    out += decode_ratio(p) + variants(p) + hold_prices(p, tiers)
    if remat_usd is not None:
        out += cache_discount(p, kv_bytes, remat_usd, list(tiers))
    return out
