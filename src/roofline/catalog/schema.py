"""Row validation for catalog files: unknown keys and impossible values are rejected at load.

A field spec maps a YAML key to (kind, required). Kinds: 'str', 'bool', 'int' (whole, >= 1),
'count' (whole, >= 0), 'pos' (number > 0), 'nonneg' (number >= 0), 'strs' (list of strings),
'map' (nested mapping, validated by its own spec), 'dtype_map' (dtype -> number > 0), 'any'.
"""

from __future__ import annotations

import datetime as _dt
import math

from ..errors import CatalogError
from ..units import DTYPE_BYTES

Spec = dict[str, tuple[str, bool]]


def check_row(row, spec: Spec, where: str, nested: dict[str, Spec] | None = None) -> dict:
    """Return a cleaned copy of `row` (a mapping) or raise CatalogError with a one-line message."""
    if not isinstance(row, dict):
        raise CatalogError(f"{where}: expected a mapping of key: value, got {type(row).__name__}")
    rid = row.get("id")
    label = f"{where} (id {rid!r})" if rid is not None else where
    unknown = [k for k in row if k not in spec]
    if unknown:
        import difflib

        close = difflib.get_close_matches(str(unknown[0]), list(spec), n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"allowed keys: {', '.join(spec)}"
        raise CatalogError(f"{label}: unknown key {unknown[0]!r}; {hint}")
    out = {}
    for key, (kind, required) in spec.items():
        if key not in row or row[key] is None:
            if required:
                raise CatalogError(f"{label}: missing required key {key!r} ({_describe(kind)}); add it")
            continue
        out[key] = _convert(row[key], kind, f"{label}: {key}", (nested or {}).get(key), nested)
    return out


def _describe(kind: str) -> str:
    return {
        "str": "text", "bool": "true/false", "int": "a whole number >= 1", "count": "a whole number >= 0",
        "pos": "a number > 0", "nonneg": "a number >= 0", "strs": "a list of text",
        "map": "a mapping", "dtype_map": "a mapping dtype: number", "any": "any value",
    }[kind]


def _convert(value, kind: str, where: str, sub: Spec | None, nested):
    if kind == "any":
        return value
    if kind == "str":
        if isinstance(value, (_dt.date, _dt.datetime)):
            return value.isoformat()
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
    elif kind == "bool":
        if isinstance(value, bool):
            return value
    elif kind in ("int", "count"):
        if isinstance(value, int) and not isinstance(value, bool) and value >= (1 if kind == "int" else 0):
            return value
    elif kind in ("pos", "nonneg"):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            if value > 0 or (kind == "nonneg" and value == 0):
                return float(value)
    elif kind == "strs":
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(v.lower() for v in value)
    elif kind == "map":
        return check_row(value, sub or {}, where, nested)
    elif kind == "dtype_map":
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if str(k).lower() not in DTYPE_BYTES:
                    raise CatalogError(
                        f"{where}: unknown dtype {k!r}; expected one of {', '.join(DTYPE_BYTES)}"
                    )
                out[str(k).lower()] = _convert(v, "pos", f"{where}.{k}", None, None)
            return out
    raise CatalogError(f"{where} is {value!r}; expected {_describe(kind)}")
