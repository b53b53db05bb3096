"""Error hierarchy. Every message is one line: what was wrong, what was expected, how to fix it.

The CLI prints `error: <message>` and exits 1 for any RooflineError (bad input); usage errors from
typer exit 2. Library code never uses `assert` for user input.
"""

from __future__ import annotations

import difflib


class RooflineError(Exception):
    """Base class: a problem with what the user gave us (never a bug in roofline)."""


class InputError(RooflineError, ValueError):
    """A value the user passed is out of range or inconsistent."""


class CatalogError(RooflineError):
    """A catalog file or a Hugging Face config.json is malformed or names an unknown entry."""


class UnknownEntryError(CatalogError, KeyError):
    """An id that is not in a catalog; the message lists close matches."""

    def __init__(self, kind: str, name: str, known: list[str], listing: str | None = None):
        close = difflib.get_close_matches(name.lower(), known, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}?" if close else f"see `{listing or f'roofline catalog {kind}s'}`"
        super().__init__(f"unknown {kind} {name!r}: {hint}")
        self.name = name

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return self.args[0]


class DoesNotFitError(RooflineError):
    """A configuration needs more memory than the hardware has."""


def require_positive(name: str, value, *, allow_zero: bool = False, fix: str = "") -> None:
    """Raise InputError unless every element of `value` is > 0 (or >= 0 with allow_zero), finite."""
    import numpy as np

    arr = np.asarray(value, dtype=float)
    bad = ~np.isfinite(arr) | ((arr < 0) if allow_zero else (arr <= 0))
    if np.any(bad):
        first = arr[bad].flat[0] if arr.ndim else float(arr)
        want = ">= 0" if allow_zero else "> 0"
        raise InputError(
            f"{name} must be {want} and finite, got {first:g}" + (f"; {fix}" if fix else "")
        )


def require_fraction(name: str, value) -> None:
    """Raise InputError unless every element of `value` lies in (0, 1]."""
    import numpy as np

    arr = np.asarray(value, dtype=float)
    bad = ~np.isfinite(arr) | (arr <= 0) | (arr > 1)
    if np.any(bad):
        first = arr[bad].flat[0] if arr.ndim else float(arr)
        raise InputError(f"{name} must be a fraction in (0, 1], got {first:g}; e.g. 0.7 for 70%")
