"""Pricing plots (lecture §5): cost per token vs context with the price tier, and the cost of a cached
token vs hold time for every memory tier and for rematerialisation. matplotlib is imported lazily."""

from __future__ import annotations

import numpy as np

from . import COLORS, new_figure, save

TIER_COLORS = {"hbm": "#d62728", "ddr": "#ff7f0e", "cxl": "#bcbd22", "flash": "#2ca02c", "disk": "#1f77b4",
               "remat": "#000000"}


def plot_cost_vs_context(path, price_list, accelerator, *, active_params=1e11, weights_dtype="fp8",
                         kv_bytes=None, batch_over_critical=4.0, sparsity=8.0, max_context=1e6):
    """Decode cost per token vs context on the lecture's roofline (weights amortised at a batch of
    `batch_over_critical`·B*), with the balance point ctx* = W_active/(R·kv) and the price list's
    context tiers drawn over it (twin axis). kv defaults to what the first tier implies (T34)."""
    from .. import lecture
    from ..units import SECONDS_PER_HOUR, dtype_bytes

    b_w = dtype_bytes(weights_dtype)
    R = accelerator.ratio(weights_dtype)
    F = float(lecture.flops_to_F(accelerator.peak_flops(weights_dtype), b_w))
    BW = accelerator.hbm_bytes_per_s
    w_active = active_params * b_w
    tier_ctx = price_list.context_tiers[0].above_tokens if price_list.context_tiers else 2e5
    kv = float(lecture.kv_from_price_kink(R, w_active, tier_ctx)) if kv_bytes is None else kv_bytes
    ctx_star = float(lecture.balanced_context(w_active, R, kv))
    B = batch_over_critical * float(lecture.critical_batch(R, sparsity))
    ctx = np.linspace(0, max_context, 801)
    t_c, t_m = lecture.pass_cost_per_token(B, 1, ctx, w_active * sparsity, w_active, kv, F, BW)
    t_c, t_m = np.broadcast_arrays(t_c, t_m)
    usd_s = accelerator.usd_per_hour / SECONDS_PER_HOUR * 1e6  # $ per MTok per GPU-second per token
    fig, ax = new_figure(width=7.5, height=4.5)
    ax.plot(ctx / 1e3, t_c * usd_s, color=COLORS["compute"], label="compute / token")
    ax.plot(ctx / 1e3, t_m * usd_s, color=COLORS["kv"], label="memory (weights/B + KV) / token")
    ax.plot(ctx / 1e3, np.maximum(t_c, t_m) * usd_s, color=COLORS["total"], lw=2, label="cost (max)")
    ax.axvline(ctx_star / 1e3, color=COLORS["other"], ls="--", label=f"ctx* = {ctx_star / 1e3:.0f}K (roofline)")
    ax.set_xlabel("context (K tokens)")
    ax.set_ylabel(f"roofline cost, \\$/MTok ({accelerator.id} at \\${accelerator.usd_per_hour:g}/h)")
    ax2 = ax.twinx()
    edges = [0.0] + [t.above_tokens for t in price_list.context_tiers] + [max_context]
    outs = [price_list.output_usd_per_token] + [t.output_usd_per_token for t in price_list.context_tiers]
    ins = [price_list.input_usd_per_token] + [t.input_usd_per_token for t in price_list.context_tiers]
    for i in range(len(outs)):
        x = np.array(edges[i:i + 2]) / 1e3
        ax2.plot(x, [outs[i] * 1e6] * 2, color="#9467bd", lw=2.5, label="API output price" if i == 0 else None)
        ax2.plot(x, [ins[i] * 1e6] * 2, color="#9467bd", lw=1.2, ls=":", label="API input price" if i == 0 else None)
    for t in price_list.context_tiers:
        ax.axvline(t.above_tokens / 1e3, color="#9467bd", ls=":", alpha=0.7)
    ax2.set_ylabel(f"{price_list.name} price, \\$/MTok")
    ax2.set_ylim(bottom=0)
    ax.set_ylim(bottom=0)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="upper left")
    ax.set_title(f"Decode cost vs context: kv = {kv:,.0f} B/token, {active_params:.0e} active params, B = {B:,.0f}")
    return save(fig, path)


def plot_cached_token_cost(path, opts, price_lists=(), hold_range=(1e-3, 1e8)):
    """Cost of keeping one token's KV for T seconds then reading it back, per option (log-log), the
    cheapest envelope in bold, and the priced cache tiers marked (write premium over input at the
    write's hold time; Gemini's storage price as a line). Prices include margin; costs do not."""
    from ..tiers import bands

    T = np.geomspace(*hold_range, 400)
    cost = opts.cost(T) * 1e6  # $ per MTok
    fig, ax = new_figure(width=7.5, height=4.8)
    used = {}
    for i, name in enumerate(opts.names):
        y = np.where(cost[i] > 0, cost[i], np.nan)
        n_same = used.get(opts.media[i], 0)
        used[opts.media[i]] = n_same + 1
        ax.plot(T, y, color=TIER_COLORS.get(opts.media[i], "#7f7f7f"), lw=1.2, label=name,
                ls="--" if opts.media[i] == "remat" else ("-", "-.", ":")[min(n_same, 2)])
    env = np.min(cost, axis=0)
    ax.plot(T, np.where(env > 0, env, np.nan), color="#000000", lw=3, alpha=0.25, label="cheapest")
    for k, (name, a, b) in enumerate(bands(opts)[1:]):
        # dotted verticals: the break-even holds where the cheapest option changes (tiers.bands)
        ax.axvline(a, color="#7f7f7f", ls=":", lw=0.8,
                   label="break-even hold: cheapest option changes (to the name at the top)" if k == 0 else None)
        ax.text(a, 1.0, f" {name} from {a:.3g} s", transform=ax.get_xaxis_transform(), rotation=90, fontsize=6,
                va="top", ha="right", color="#555555")
    marks = []
    for p in price_lists:
        for w in p.cache_writes:
            marks.append((w.hold_s, (w.usd_per_token - p.input_usd_per_token) * 1e6, f"{p.id} {w.hold_s:g}-s write"))
        if p.cache_storage_usd_per_token_s:
            ax.plot(T, p.cache_storage_usd_per_token_s * T * 1e6, color="#9467bd", lw=0.8, ls="-.",
                    label=f"{p.id} storage price")
    seen, labelled = set(), set()
    for t, usd, label in marks:
        if (t, round(usd, 9)) in seen:
            continue
        seen.add((t, round(usd, 9)))
        ax.scatter([t], [usd], marker="*", s=90, color="#9467bd", zorder=5)
        if t not in labelled:  # label the first (dearest listed) price list at each hold time only
            labelled.add(t)
            ax.annotate(label, (t, usd), fontsize=7, xytext=(4, 4), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("hold time T (s)")
    ax.set_ylabel("\\$ per MTok: retrieve + T x hold (prices: write premium)")
    ax.set_title("Where to keep a cached token: memory tiers vs rematerialisation\n(solid/dash-dot/dotted lines: "
                 "1st/2nd/3rd catalog tier of one medium; dashed: remat)", fontsize=9)
    ax.legend(fontsize=7, ncol=2, loc="lower right")
    return save(fig, path)
