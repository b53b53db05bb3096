"""Plots of simulator traces: latency distributions, batch occupancy, train-departure timeline, and the
fast/slow trade (price against speed). matplotlib is imported lazily through new_figure()."""

from __future__ import annotations

import numpy as np

from . import COLORS, new_figure, save


def latency_distributions(trace, path, targets=None):
    """Empirical CDFs of TTFT, TPOT and end-to-end latency, with the targets as vertical lines."""
    from ..simulate.metrics import e2e_s, tpot_s, ttft_s

    fig, axes = new_figure(ncols=3, width=4.2, height=3.4)
    for ax, (name, x, tgt) in zip(np.ravel(axes), (("TTFT", ttft_s(trace), targets and targets.ttft_s),
                                           ("TPOT", tpot_s(trace), targets and targets.tpot_s),
                                           ("end-to-end", e2e_s(trace), None))):
        x = np.sort(x[np.isfinite(x)])
        ax.plot(x, np.arange(1, x.size + 1) / max(1, x.size), color=COLORS["total"])
        if tgt:
            ax.axvline(tgt, color=COLORS["compute"], ls="--", label="target")
            ax.legend()
        ax.set_xscale("log")
        ax.set_xlabel(f"{name} (s)")
        ax.set_ylabel("fraction of requests")
    return save(fig, path)


def occupancy_over_time(trace, path):
    """Sequences in each pass against time (step plot of the recorded segments)."""
    fig, ax = new_figure(width=8, height=3.4)
    ax.step(trace.seg_start_s, trace.seg_batch, where="post", color=COLORS["weights"], lw=0.8)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("sequences in the pass")
    ax.set_title(f"batch occupancy ({trace.policy})")
    return save(fig, path)


def train_timeline(trace, path, first: int = 30):
    """Left: a window of the first `first` requests — the wait for a departure (grey) and the pass that yields
    the first token (blue), every pass departure a red line (the title names the window). Right: the whole
    run — every request's arrival-to-first-token time against its arrival, with the worst case marked: under
    train departures none exceeds two intervals (lecture §1.5, T05)."""
    fig, (ax, ax2) = new_figure(ncols=2, width=6.0, height=4.2)
    n = trace.arrival_s.size
    k = min(first, n)
    y = np.arange(k)
    a, adm, f1 = trace.arrival_s[:k], trace.admit_s[:k], trace.first_token_s[:k]
    ax.barh(y, adm - a, left=a, color=COLORS["other"], label="waiting for a departure")
    ax.barh(y, f1 - adm, left=adm, color=COLORS["weights"], label="pass to first token")
    lo, hi = float(a.min()), float(f1.max())
    for t in trace.seg_start_s[(trace.seg_start_s >= lo) & (trace.seg_start_s <= hi)][:500]:
        ax.axvline(t, color=COLORS["compute"], lw=0.5, alpha=0.6)
    ax.set_xlim(lo, hi + 0.02 * (hi - lo))
    ax.set_xlabel("time (s); red lines: pass departures")
    ax.set_ylabel("request")
    ax.set_title(f"window: the first {k} of {n:,} requests, t = {lo:.3f}–{hi:.3f} s ({trace.policy})", fontsize=9)
    ax.legend(loc="lower right", fontsize=7)
    ttft = trace.first_token_s - trace.arrival_s
    ax2.scatter(trace.arrival_s, ttft * 1e3, s=2, color=COLORS["weights"], alpha=0.5, label="each request")
    worst = float(ttft.max())
    ax2.axhline(worst * 1e3, color=COLORS["compute"], ls="--", lw=1, label=f"worst {worst * 1e3:.1f} ms")
    ax2.axhline(float(ttft.mean()) * 1e3, color=COLORS["total"], ls=":", lw=1,
                label=f"mean {float(ttft.mean()) * 1e3:.1f} ms")
    ax2.set_xlabel("arrival time (s)")
    ax2.set_ylabel("arrival to first token (ms)")
    ax2.set_title(f"the whole run: {n:,} requests over {float(trace.arrival_s.max()):.1f} s", fontsize=9)
    ax2.set_ylim(0, worst * 1e3 * 1.15)
    ax2.legend(loc="lower right", fontsize=7)
    return save(fig, path)


def fast_slow(points, path):
    """Price against speed: `points` is a list of (label, tokens/s per request, $/M tokens)."""
    fig, ax = new_figure(width=5.6, height=4.2)
    for label, speed, usd in points:
        ax.scatter([speed], [usd], s=40)
        ax.annotate(label, (speed, usd), textcoords="offset points", xytext=(6, 4))
    ax.set_xscale("log")
    ax.set_yscale("log")
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    for axis in (ax.xaxis, ax.yaxis):  # labels at 1-2-5 steps: readable on short log ranges
        axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())
    ax.margins(0.25)
    ax.set_xlabel("speed per request (tokens/s)")
    ax.set_ylabel("$ per million output tokens")
    ax.set_title("fast vs slow mode (simulated)")
    return save(fig, path)


def stages_over_time(stages, windows, path):
    """TTFT (top) and TPOT (bottom) p50 and p99 against time, one point per window (`simulate --window-s`) or
    else per stage, at the interval's middle (requests by arrival time); the stage boundaries as vertical
    lines, saturated stages shaded, and the offered rate (each stage's rate, else the windows' arrivals per
    second) as a step line on a second axis. `stages`/`windows` are the --json lists (None when absent);
    a window without arrivals has no latency and is left out."""
    rows = windows or stages or []
    fig, axes = new_figure(nrows=2, width=8.0, height=3.0)
    mid = np.array([(d["start_s"] + d["end_s"]) / 2 for d in rows])
    for ax, key, name in zip(axes, ("ttft", "tpot"), ("TTFT", "TPOT")):
        for q, style in (("p50", "-"), ("p99", "--")):
            y = np.array([np.nan if d[f"{key}_{q}_s"] is None else d[f"{key}_{q}_s"] * 1e3 for d in rows])
            ok = np.isfinite(y)
            ax.plot(mid[ok], y[ok], style, marker=".", color=COLORS["weights"] if q == "p50" else COLORS["compute"],
                    label=f"{name} {q}")
        ax.set_ylabel(f"{name} (ms)")
        if np.any([d[f"{key}_p99_s"] for d in rows]):
            ax.set_yscale("log")
        rate = ax.twinx()
        src = stages or windows or []
        edges = [d["start_s"] for d in src] + ([src[-1]["end_s"]] if src else [])
        offered = [d["offered_rate_per_s"] if "offered_rate_per_s" in d else d["arrival_rate_per_s"] for d in src]
        if src:
            rate.stairs(offered, edges, color=COLORS["other"], lw=1.2, label="offered rate")
        rate.set_ylabel("offered (requests/s)", color=COLORS["other"])
        rate.set_ylim(bottom=0)
        for d in stages or []:
            ax.axvline(d["start_s"], color=COLORS["total"], lw=0.6, alpha=0.6)
            if d["saturated"]:
                ax.axvspan(d["start_s"], d["end_s"], color=COLORS["compute"], alpha=0.08)
        lines = ax.get_legend_handles_labels()
        extra = rate.get_legend_handles_labels()
        ax.legend(lines[0] + extra[0], lines[1] + extra[1], fontsize=7, loc="upper left")
    axes[-1].set_xlabel("arrival time (s); vertical lines: stage starts, shaded: saturated stages")
    axes[0].set_title(("per window" if windows else "per stage") + ": latency of the requests arriving in it",
                      fontsize=9)
    return save(fig, path)
