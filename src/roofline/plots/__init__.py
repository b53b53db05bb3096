"""Plots (matplotlib, headless). Import is lazy: nothing here runs until a plot is drawn.

Every plotting function takes a `path` and writes PNG/SVG/PDF by extension; it returns the path.
Shared helpers: `new_figure`, `save`, and the colour palette of the three roofline terms.
"""

from __future__ import annotations

from pathlib import Path

COLORS = {"compute": "#d62728", "weights": "#1f77b4", "kv": "#2ca02c", "total": "#000000",
          "network": "#9467bd", "other": "#7f7f7f"}


def new_figure(ncols: int = 1, nrows: int = 1, width: float = 6.4, height: float = 4.2):
    """A (fig, axes) pair on the Agg backend, sized per panel."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False)
    for ax in axes.flat:
        ax.grid(True, which="both", alpha=0.25)
    return fig, (axes[0, 0] if ncols * nrows == 1 else list(axes.flat))


def save(fig, path) -> Path:
    """Write the figure (format from the extension), close it, return the path."""
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
