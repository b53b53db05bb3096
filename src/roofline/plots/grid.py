"""Plots of scenario grids (simulate --grid): goodput against arrival rate, one line per layout (and
policy, when the grid varies it). matplotlib is imported lazily through new_figure()."""

from __future__ import annotations

from . import new_figure, save


def goodput_vs_rate(rows: list[dict], path, title: str = ""):
    """Goodput (requests/s within the TTFT and TPOT targets) against offered rate, one line per
    (layout, policy, workload) group of rows; the diagonal is 'every request within targets'."""
    fig, ax = new_figure(width=6.8, height=4.4)
    vary = [k for k in ("layout", "policy", "prompt_tokens", "output_tokens", "lengths", "arrivals", "max_seqs")
            if len({r[k] for r in rows}) > 1]
    groups: dict = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in vary), []).append(r)
    top = 0.0
    for key, rs in groups.items():
        rs = sorted(rs, key=lambda r: r["rate"])
        x = [r["rate"] for r in rs]
        label = " ".join(f"{k}={v}" for k, v in zip(vary, key)) or "goodput"
        ax.plot(x, [r["goodput_requests_per_s"] for r in rs], marker="o", label=label)
        top = max(top, max(x))
    ax.plot([0, top], [0, top], color="#7f7f7f", ls="--", lw=0.8, label="offered rate")
    ax.set_xlabel("offered rate (requests/s)")
    ax.set_ylabel("goodput (requests/s within targets)")
    if title:
        ax.set_title(title)
    ax.legend(fontsize=8)
    return save(fig, path)
