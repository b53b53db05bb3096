"""Training plots: memory per GPU by recomputation mode, a pipeline schedule timeline with its bubble,
and lifetime cost against the over-training factor. matplotlib is imported lazily (plots.new_figure)."""

from __future__ import annotations

import numpy as np

from . import COLORS, new_figure, save


def memory_by_recompute(model, layout, seq_len, path, **kw):
    """Memory per GPU for each recompute mode: stacked bars (left, the total) and every part on its own
    log-scale bar with its value (right), so gradients and optimizer states of a few GB stay visible next to
    hundreds of GB of activations."""
    from ..layout import RECOMPUTE_MODES
    from ..memory import training_memory

    fig, (ax, ax2) = new_figure(ncols=2, width=6.0)
    mems = [training_memory(model, layout.with_(recompute=mode), seq_len, **kw) for mode in RECOMPUTE_MODES]
    parts = [("weights", "weights", COLORS["weights"]), ("grads", "gradients", COLORS["other"]),
             ("optimizer", "optimizer (fp32 Adam)", COLORS["network"]), ("activations", "activations", COLORS["compute"])]
    bottom = np.zeros(len(mems))
    x = np.arange(len(mems))
    width = 0.8 / len(parts)
    for k, (attr, label, color) in enumerate(parts):
        vals = np.array([float(getattr(m, attr)) for m in mems]) / 1e9
        ax.bar(RECOMPUTE_MODES, vals, bottom=bottom, label=label, color=color)
        bottom += vals
        bars = ax2.bar(x + (k - (len(parts) - 1) / 2) * width, vals, width, label=label, color=color)
        for b, v in zip(bars, vals):
            ax2.text(b.get_x() + b.get_width() / 2, v, f"{v:.3g}", ha="center", va="bottom", fontsize=6, rotation=90)
    for i, t in enumerate(bottom):
        ax.text(i, t, f"{t:.1f}", ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("GB per GPU (stacked)")
    ax.set_title(f"{model.id}: TP{layout.tp} PP{layout.pp} DP{layout.dp} ZeRO-{layout.zero}, s={int(seq_len)}", fontsize=9)
    ax.legend(fontsize=8)
    ax2.set_yscale("log")
    ax2.set_xticks(x)
    ax2.set_xticklabels(RECOMPUTE_MODES)
    ax2.set_ylabel("GB per GPU (log scale)")
    ax2.set_title("every part, log scale", fontsize=9)
    ax2.set_ylim(top=ax2.get_ylim()[1] * 4)
    return save(fig, path)


def pipeline_timeline(pp, micro_batches, path, backward_ratio=2.0):
    """GPipe-style timeline: forward of each micro-batch on each stage, a flush, then backwards.

    Unit forward time per micro-batch per stage, backward `backward_ratio` units. The idle area
    is the bubble; its share equals (P−1)/(m+P−1) (checked against training.bubble_fraction).
    """
    from ..training import bubble_fraction

    fig, ax = new_figure(width=8, height=0.5 * pp + 1.5)
    f, bw = 1.0, backward_ratio
    for s in range(pp):
        for i in range(micro_batches):
            ax.barh(s, f, left=s + i, color=COLORS["weights"], edgecolor="white")
            ax.text(s + i + f / 2, s, f"F{i + 1}", ha="center", va="center", fontsize=7, color="white")
        t0 = (micro_batches + pp - 1) * f  # all forwards done: the hard stop before the backward
        for i in range(micro_batches):
            start = t0 + (pp - 1 - s) * bw + i * bw
            ax.barh(s, bw, left=start, color=COLORS["compute"], edgecolor="white")
            ax.text(start + bw / 2, s, f"B{i + 1}", ha="center", va="center", fontsize=7, color="white")
    total = (micro_batches + pp - 1) * (f + bw)
    ax.set_xlim(0, total)
    ax.invert_yaxis()
    ax.set_yticks(range(pp), [f"stage {s + 1}" for s in range(pp)])
    ax.set_xlabel("time (forward units)")
    frac = float(bubble_fraction(pp, micro_batches))
    ax.set_title(f"GPipe, P={pp}, m={micro_batches}: bubble (white) = (P-1)/(m+P-1) = {frac:.1%}")
    return save(fig, path)


def lifetime_cost_vs_overtraining(opt, path):
    """Total lifetime cost (pretraining + RL + inference) over the over-training factor D/(20N)."""
    fig, ax = new_figure()
    ok = np.isfinite(opt.total_cost) & (opt.overtraining > 0.05)
    x = opt.overtraining[ok]
    ax.loglog(x, opt.total_cost[ok], color=COLORS["total"], label="total")
    ax.loglog(x, opt.pretrain_cost[ok], color=COLORS["compute"], ls="--", label="pretraining 6ND")
    if np.any(opt.inference_cost > 0):
        ax.loglog(x, opt.inference_cost[ok], color=COLORS["kv"], ls="--", label="inference 2N·D_inf/η")
    if np.any(opt.rl_cost > 0):
        ax.loglog(x, opt.rl_cost[ok], color=COLORS["network"], ls="--", label="RL")
    ax.plot([opt.overtraining_opt], [opt.cost_opt], "o", color=COLORS["total"],
            label=f"optimum: {opt.overtraining_opt:.0f}x, N={opt.n_opt:.2g}")
    ax.plot([opt.d_chinchilla / (20 * opt.n_chinchilla)], [opt.cost_chinchilla], "s", color=COLORS["weights"],
            label="pretraining-optimal model")
    ax.set_xlabel("over-training factor D / (20 N) at fixed loss")
    ax.set_ylabel("lifetime cost, pretraining-FLOP equivalents")
    ax.set_ylim(opt.cost_opt / 3, opt.cost_opt * 100)
    ax.legend(fontsize=8)
    return save(fig, path)
