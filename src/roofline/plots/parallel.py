"""Plots for chapters 2–3: Pareto frontier, rack map of experts, decode pipeline timeline, memory vs stages.

Every number drawn is computed by roofline.planner / roofline.lecture / roofline.layout; matplotlib is imported lazily.
"""

from __future__ import annotations

import numpy as np

from . import COLORS, new_figure, save


def pareto_frontier(plan, path, title: str | None = None):
    """Tokens/s per GPU (throughput) against tokens/s per user (interactivity), as serving benchmarks
    draw it: all feasible layouts in grey, the Pareto frontier in black, coloured by expert parallelism."""
    fig, ax = new_figure()
    c = plan.columns
    ax.scatter(c["tokens_per_s_per_user"], c["tokens_per_s_per_gpu"], s=4, color="#cccccc", label="feasible layouts")
    f = plan.pareto
    order = np.argsort(c["tokens_per_s_per_user"][f])
    x, y = c["tokens_per_s_per_user"][f][order], c["tokens_per_s_per_gpu"][f][order]
    ax.plot(x, y, "-", color=COLORS["total"], lw=1.5, label="Pareto frontier")
    ep = c["ep"][f][order]
    sc = ax.scatter(x, y, c=np.log2(ep), cmap="viridis", s=22, zorder=3)
    fig.colorbar(sc, ax=ax, label="log2(EP)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("tokens/s per user (1/TPOT)")
    ax.set_ylabel("output tokens/s per GPU")
    ax.set_title(title or f"{plan.model} on {plan.system}")
    ax.legend(loc="lower left", fontsize=8)
    return save(fig, path)


def rack_map(experts: int, gpus_per_rack: int, racks: int, path, up_over_out: float = 8.0):
    """Experts placed on the GPUs of `racks` racks (§2.2–2.3): each cell a GPU with its expert ids, idle
    GPUs hatched; the bar shows the share of a GPU's all-to-all traffic that stays on its rack (1/n)
    and leaves it (1 − 1/n), and the resulting slowdown vs one rack."""
    import matplotlib.pyplot as plt

    from ..layout import place_experts
    from ..lecture import ep_slowdown_over_domains as two_domain_ep_slowdown
    from ..network import fraction_off_domain

    fig, axes = new_figure(nrows=2, width=11.0, height=4.8)  # the map gets the full width: labels stay legible
    ax, ax2 = np.asarray(axes).ravel()[:2]
    place = place_experts(experts, gpus_per_rack * racks)
    cols = 9 if gpus_per_rack % 9 == 0 else 8
    per = place.experts_per_gpu
    for r in range(racks):
        for g in range(gpus_per_rack):
            per_rack = place.ep // racks  # the same number of expert GPUs on every rack
            gid = r * per_rack + g
            x, y = g % cols + r * (cols + 1), -(g // cols)
            used = g < per_rack
            ax.add_patch(plt.Rectangle((x, y), 0.9, 0.9, facecolor=f"C{r}" if used else "white",
                                       alpha=0.35 if used else 1.0, hatch=None if used else "//", edgecolor="k", lw=0.4))
            if used and per <= 8:
                label = (f"{gid * per}\n{gid * per + 1}" if per == 2 else
                         f"{gid * per}" if per == 1 else f"{gid * per}–\n{gid * per + per - 1}")
                ax.text(x + 0.45, y + 0.45, label, ha="center", va="center", fontsize=7, linespacing=0.9)
        ax.text(r * (cols + 1) + cols / 2 - 0.05, 1.15, f"rack {r + 1} ({gpus_per_rack} GPUs)", ha="center",
                va="bottom", fontsize=9)
    ax.set_xlim(-0.5, racks * (cols + 1))
    ax.set_ylim(-(gpus_per_rack // cols) - 0.5, 1.5)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"{experts} experts on {racks} x {gpus_per_rack} GPUs: EP {place.ep}, {per} experts per GPU "
                 f"(ids in each cell), {place.idle_gpus} GPUs idle (hatched)", fontsize=10)
    n = np.arange(1, 9)
    off = fraction_off_domain(n)
    ax2.bar(n, 1 - off, color=COLORS["weights"], label="stays on rack (scale-up)")
    ax2.bar(n, off, bottom=1 - off, color=COLORS["network"], label="leaves rack (scale-out)")
    ax3 = ax2.twinx()
    ax3.plot(n, two_domain_ep_slowdown(n, up_over_out), "ko-", label=f"slowdown vs 1 rack (BW ratio {up_over_out:g})")
    ax2.set_xlabel("racks the experts span")
    ax2.set_ylabel("share of each GPU's all-to-all traffic")
    ax3.set_ylabel("all-to-all slowdown")
    ax2.legend(loc="center right", fontsize=7)
    ax3.legend(loc="lower right", fontsize=7)
    return save(fig, path)


def pipeline_timeline(stages: int, path, stage_s: float = 1.0, hop_s: float = 0.0, loops: int = 3):
    """Decode pipelining (§3.3): with n_micro = P micro-batches every stage is busy at all times (no
    bubble); each micro-batch loops through all stages, P·(t_stage + t_hop) per token (§3.6)."""
    from ..lecture import token_latency_with_hops as decode_token_latency

    fig, ax = new_figure(width=8, height=3.2)
    n_micro = int(stages)  # n_micro = P (§3.5, T24)
    period = stages * stage_s + stages * hop_s
    for mb in range(n_micro):
        for loop in range(loops):
            for st in range(stages):
                start = loop * period + (st + mb) % stages * (stage_s + hop_s)
                ax.broken_barh([(start, stage_s)], (st - 0.4, 0.8), facecolors=f"C{mb}", edgecolor="k", lw=0.3)
                if loop == 0 and st == 0:
                    ax.text(start + stage_s / 2, st, f"mb{mb}", ha="center", va="center", fontsize=7)
    ax.set_yticks(range(stages))
    ax.set_yticklabels([f"stage {s}" for s in range(stages)])
    ax.invert_yaxis()
    ax.set_xlabel("time (stage steps)")
    tok = float(decode_token_latency(stages * stage_s, stages, hop_s))
    ax.set_title(f"Decode with P = {stages} stages and {n_micro} micro-batches: every stage busy; "
                 f"one token per micro-batch every {tok:g} stage steps", fontsize=9)
    return save(fig, path)


def memory_vs_stages(path, w_total_bytes=1e12, ep=64, micro_batch=2400, context=1e5, kv_bytes_per_token=2048,
                     stages=(1, 2, 4, 8, 16)):
    """Memory per GPU against pipeline stages (§3.5): weights fall as 1/P, KV stays (T23's numbers)."""
    from ..lecture import memory_per_gpu

    P = np.asarray(stages, dtype=float)
    w, kv, tot = memory_per_gpu(w_total_bytes, micro_batch, context, kv_bytes_per_token, ep, P)
    fig, ax = new_figure()
    ax.bar(np.arange(P.size), kv / 1e9, color=COLORS["kv"], label="KV cache (b·ctx·kv/E, P cancels)")
    ax.bar(np.arange(P.size), w / 1e9, bottom=kv / 1e9, color=COLORS["weights"], label="weights (W/(E·P))")
    for i, t in enumerate(tot):
        ax.text(i, t / 1e9, f"{t / 1e9:.2f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(np.arange(P.size))
    ax.set_xticklabels([f"P={int(p)}" for p in P])
    ax.set_ylabel("GB per GPU")
    ax.set_title(f"W={w_total_bytes / 1e12:g} TB, E={ep}, b={micro_batch}, ctx={context:,.0f}, kv={kv_bytes_per_token} B",
                 fontsize=9)
    ax.legend(fontsize=8)
    return save(fig, path)


def moe_quality(path, params=(1e8, 3.7e8, 1e9, 1e10, 1e11), law=None):
    """Quality multiplier N_eq/N of a routed model against its expert count, one curve per active size
    (Clark et al. 2022 eq. 1, roofline.moe_scaling), with the lecture's 64 × 370M ≈ 1.3B point and the
    host's '100× total ≈ 10× active' marked."""
    from ..moe_scaling import S_BASE, quality_multiplier

    law = law or S_BASE
    E = np.geomspace(1, 1024, 200)
    fig, ax = new_figure()
    for i, n in enumerate(params):
        ax.semilogx(E, quality_multiplier(n, E, law), color=f"C{i}", label=f"N_active = {n:.3g}")
    ax.plot([64], [1.3e9 / 3.7e8], "k*", ms=12, label="lecture: 64 experts × 370M ≈ 1.3B dense (3.5×)")
    ax.plot([100], [10], "rX", ms=10, label="host: 100× total ≈ 10× active")
    ax.axhline(1, color="grey", lw=0.8)
    ax.axvspan(512, E.max(), color="grey", alpha=0.12, label="beyond the fitted range (E > 512)")
    ax.set_xlabel("experts E")
    ax.set_ylabel("dense-equivalent parameters / active parameters")
    ax.set_title(f"Routed scaling law (Clark et al. 2022, {law.name}, 130B tokens)", fontsize=9)
    ax.legend(fontsize=7)
    return save(fig, path)
