"""Terminal rendering shared by the commands: rich tables, JSON output, progress bars.

Progress bars show only on an interactive terminal and never under --json.
"""

from __future__ import annotations

import json
import math
import sys
from contextlib import contextmanager


def print_json(obj) -> None:
    """Machine-readable output: stable keys, SI units, inf/nan as null."""
    print(json.dumps(_clean(obj), indent=2, sort_keys=False))


def _clean(obj):
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        try:
            return _clean(obj.item())
        except (ValueError, AttributeError):
            return _clean(obj.tolist())
    return obj


def table(title: str, columns: list[str], rows: list[list], caption: str | None = None) -> None:
    """Print a rich table (right-aligned numbers)."""
    from rich.console import Console
    from rich.table import Table

    cells = [[fmt(v) for v in r] for r in rows]
    t = Table(title=title, caption=caption, show_lines=False)
    for i, c in enumerate(columns):
        widest = max([len(row[i]) for row in cells] + [1])
        short = widest <= 24  # numbers and ids stay whole; long text columns wrap instead
        t.add_column(c, justify="left" if i == 0 or not short else "right", no_wrap=short,
                     min_width=widest if short else 12, overflow="fold")
    for r in cells:
        t.add_row(*r)
    # piped output is not cut to 80 columns: scripts and logs get whole numbers
    Console(width=None if sys.stdout.isatty() else 200).print(t)


def fmt(v) -> str:
    """Human formatting: 3 significant figures, thousands separators, SI prefixes for tiny/huge."""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "yes" if v else "no"
    if v is None:
        return "-"
    x = float(v)
    if not math.isfinite(x):
        return "inf" if x > 0 else ("-inf" if x < 0 else "nan")
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 1e15 or a < 1e-3:
        return f"{x:.3g}"
    if a >= 1000:
        return f"{x:,.0f}"
    return f"{x:.4g}"


def seconds(x: float) -> str:
    """A duration in the unit that reads best (ns, us, ms, s)."""
    a = abs(x)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if a >= scale:
            return f"{x / scale:.4g} {unit}"
    return f"{x:.3g} s"


def si_bytes(x: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.4g} {unit}"
    return f"{x:.4g} B"


@contextmanager
def progress(total: int | None, description: str, quiet: bool = False):
    """Yield an `advance(n)` callable; draws a rich progress bar only on a TTY and when not quiet
    (total None: an indeterminate, pulsing bar for work of unknown length)."""
    if quiet or not sys.stderr.isatty():
        yield lambda n=1: None
        return
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)
