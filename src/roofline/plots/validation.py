"""Predicted-against-measured plot (log-log) with the ±10% and ±25% bands, one colour per metric."""

from __future__ import annotations

from . import new_figure, save

_METRIC_COLORS = {"decode": "#1f77b4", "throughput": "#2ca02c", "prefill": "#d62728", "training_mfu": "#9467bd",
                  "training_throughput": "#8c564b"}
_OTHER_COLORS = ("#e377c2", "#7f7f7f", "#bcbd22", "#17becf")  # metrics a custom dataset adds


def metric_colors(evals) -> dict[str, str]:
    """A colour (and so a legend entry) for every metric present in the evaluations, known ones first."""
    present = sorted({e.measurement.metric for e in evals}, key=lambda k: (k not in _METRIC_COLORS, k))
    others = iter(_OTHER_COLORS * (1 + len(present)))
    return {m: _METRIC_COLORS.get(m) or next(others) for m in present}


def predicted_vs_measured(evals, path):
    """Each point is measured/measured-scale vs predicted on log axes, normalised per measurement so
    different units share one chart: x = 1 (measured), y = predicted/measured, with error bars from the
    efficiency-spread interval. Bands: |error| <= 10% and <= 25%."""
    import numpy as np

    fig, ax = new_figure(width=7.0, height=5.0)
    meas = np.array([e.measurement.measured for e in evals])
    pred = np.array([e.predicted for e in evals])
    lo = np.array([e.low for e in evals])
    hi = np.array([e.high for e in evals])
    # normalise each unit to its own scale: plot value / (geometric mean of that metric's measurements)
    scale = np.ones_like(meas)
    for metric in {e.measurement.metric for e in evals}:
        idx = [i for i, e in enumerate(evals) if e.measurement.metric == metric]
        for unit in {evals[i].measurement.unit for i in idx}:
            j = [i for i in idx if evals[i].measurement.unit == unit]
            scale[j] = np.exp(np.mean(np.log(meas[j])))
    x, y = meas / scale, pred / scale
    lim = [min(x.min(), y.min(), (lo / scale).min()) / 1.5, max(x.max(), y.max(), (hi / scale).max()) * 1.5]
    line = np.geomspace(*lim, 50)
    ax.fill_between(line, line * 0.75, line * 1.25, color="#cccccc", alpha=0.35, label="±25%")
    ax.fill_between(line, line * 0.9, line * 1.1, color="#999999", alpha=0.45, label="±10%")
    ax.plot(line, line, color="black", lw=0.8)
    for metric, color in metric_colors(evals).items():
        j = [i for i, e in enumerate(evals) if e.measurement.metric == metric]
        ax.errorbar(x[j], y[j], yerr=[y[j] - lo[j] / scale[j], hi[j] / scale[j] - y[j]], fmt="o", ms=4,
                    color=color, ecolor=color, alpha=0.8, elinewidth=0.8, label=f"{metric} ({len(j)})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lim)
    ax.set_ylim(lim)
    ax.set_xlabel("measured (each unit scaled by its geometric mean)")
    ax.set_ylabel("predicted (same scale)")
    ax.set_title("roofline + efficiency model vs published measurements")
    ax.legend(loc="upper left", fontsize=8)
    return save(fig, path)
