"""The operations the HTTP API serves, each the same computation as one CLI command's `--json`.

An operation runs through the request layer (`roofline.requests`: one validated model and one run function per
operation, shared with the CLI) when that layer provides it, and otherwise through the CLI command itself,
in-process (`bridge`). Either way the answer has the CLI's keys and SI units. Server limits (`limits`) are
checked on the validated request, before any work. Two stages, two kinds of error: a body that does not
validate is a `Refused` with status 422 naming the field; input the library refuses while answering is 400.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import limits

#: operation name (the URL after /api/) -> the CLI command path whose --json it mirrors
OPERATIONS: dict[str, tuple[str, ...]] = {
    "step": ("step",), "sweep": ("sweep",), "board": ("board",), "plan": ("plan",), "simulate": ("simulate",),
    "train": ("train",), "overtrain": ("overtrain",),
    "prices/show": ("prices", "show"), "prices/infer": ("prices", "infer"), "prices/layouts": ("prices", "layouts"),
    "tiers": ("tiers",), "validate": ("validate",),
    "catalog/accelerators": ("catalog", "accelerators"), "catalog/systems": ("catalog", "systems"),
    "catalog/models": ("catalog", "models"), "catalog/efficiency": ("catalog", "efficiency"),
}

#: operations whose answer depends on no input: computed once per server process (kept in CONSTANT_ANSWERS)
CONSTANT = frozenset({"validate", "catalog/accelerators", "catalog/systems", "catalog/models", "prices/show"})
CONSTANT_ANSWERS: dict[str, str | bytes] = {}

#: request fields that name files on the server, or how the terminal prints: never taken over HTTP
SERVER_ONLY = frozenset({"csv", "parquet", "plot", "trace", "dataset", "write_docs", "catalog", "json", "as_json",
                         "rows", "chunk_points"})

#: operations whose request model in roofline.requests is known to carry the CLI's fields one to one
REQUEST_LAYER = ("step", "sweep", "board", "plan", "simulate", "train", "overtrain", "tiers")


class Refused(Exception):
    """The request body does not validate: HTTP `status` (422) with one line naming `field`."""

    def __init__(self, message: str, field: str | None = None, status: int = 422):
        super().__init__(message)
        self.message, self.field, self.status = message, field, status


@dataclass(frozen=True)
class Operation:
    name: str
    path: tuple[str, ...]
    model: Any                              # pydantic model of the body (for /docs and the field list)
    validate: Callable[[dict], Any]         # body -> request; raises Refused
    run: Callable[[Any], str]               # request -> JSON text
    via: str                                # "requests" or "cli"
    fields: list[str] = field(default_factory=list)
    columns: Callable[[Any], str] | None = None  # request -> the same answer as columns (?layout=columns)
    binary: Callable[[Any], bytes] | None = None  # request -> the columns as binary arrays (?layout=binary)


def _requests_op(name: str):
    """(model class, run function) from roofline.requests when it provides this operation, else None."""
    if name not in REQUEST_LAYER:
        return None
    try:
        from .. import requests as R

        names = getattr(R, "OPERATIONS", {}).get(name)
        if names is None:
            return None
        return getattr(R, names[0]), getattr(R, names[1])
    except Exception:  # noqa: BLE001 - the layer's module does not load (work in progress): use the CLI command
        return None


def available() -> dict[str, Operation]:
    """Every operation this installation can serve (an operation whose CLI command is absent is left out)."""
    from . import bridge

    ops = {}
    for name, path in OPERATIONS.items():
        found = _requests_op(name)
        if found is not None:
            model, fn = found
            ops[name] = Operation(name, path, model, _validator(model, layer=True), _via_requests(fn), "requests",
                                  [f for f in model.model_fields if f not in SERVER_ONLY])
        elif bridge.command(path) is not None:
            model = bridge.request_model(name, path)
            ops[name] = Operation(name, path, model, _validator(model, layer=False), _via_cli(path), "cli",
                                  list(model.model_fields))
    if ops.get("sweep") is not None and ops["sweep"].via == "requests":
        from dataclasses import replace

        ops["sweep"] = replace(ops["sweep"], columns=_sweep_columns, binary=_sweep_binary)
    if ops.get("simulate") is not None and ops["simulate"].via == "requests":  # the page's distributions
        sim = ops["simulate"]
        ops["simulate/trace"] = Operation("simulate/trace", sim.path, sim.model, sim.validate, _trace, "requests",
                                          sim.fields)
    return ops


def _sweep_arrays(req) -> dict:
    """The sweep's columns as NumPy arrays (the request layer's chunks, concatenated): the rows' keys in
    their order, `bound` as uint8 codes into requests.sweep.BOUND_NAMES."""
    import numpy as np

    from ..requests.sweep import chunks

    parts: dict[str, list] = {}
    for _, _, cols in chunks(req):
        for k, v in cols.items():
            parts.setdefault(k, []).append(np.asarray(v))
    return {k: np.concatenate(v) for k, v in parts.items()}


def _sweep_columns(req) -> str:
    """`roofline sweep --json` transposed: {key: [value per point]} with the rows' keys, order and values
    (bound spelled out). No per-point Python loop: a 10^4-point answer is half the bytes of the rows and
    several times faster to build and to parse."""
    import numpy as np

    from ..requests.sweep import BOUND_NAMES

    out = _sweep_arrays(req)
    if "bound" in out:
        out["bound"] = np.asarray(BOUND_NAMES, dtype=object)[out["bound"].astype(np.int64)].tolist()
    return dumps(out)


BINARY_FORMAT = "roofline-columns-1"


def _sweep_binary(req) -> bytes:
    """The same columns as little-endian binary arrays, for a page that redraws 10^4 points per slider move:
    no number is printed or parsed. Layout: uint32 header length H; H bytes of UTF-8 JSON
    {"format", "points", "columns": [{"name", "dtype" (float64, uint8 or bool), "offset", "bytes"}],
    "categories": {"bound": [names]}} padded with spaces so the data starts on an 8-byte boundary; then each
    column at its offset from the data start (8-byte aligned), float64 values exactly the JSON's."""
    import numpy as np

    from ..requests.sweep import BOUND_NAMES

    arrays = _sweep_arrays(req)
    cols, blobs, offset = [], [], 0
    for name, v in arrays.items():
        if v.dtype == np.bool_:
            data, dtype = v.astype(np.uint8).tobytes(), "bool"
        elif name == "bound":
            data, dtype = v.astype(np.uint8).tobytes(), "uint8"
        else:
            data, dtype = v.astype("<f8").tobytes(), "float64"
        pad = (-len(data)) % 8
        cols.append({"name": name, "dtype": dtype, "offset": offset, "bytes": len(data)})
        blobs.append(data + b"\0" * pad)
        offset += len(data) + pad
    n = len(next(iter(arrays.values()))) if arrays else 0
    header = json.dumps({"format": BINARY_FORMAT, "points": n, "columns": cols,
                         "categories": {"bound": list(BOUND_NAMES)}}).encode()
    header += b" " * ((-(4 + len(header))) % 8)
    return len(header).to_bytes(4, "little") + header + b"".join(blobs)


def _trace(req) -> str:
    from .trace import trace_dict

    if req.policy == "disaggregated":
        raise Refused("the timeline is drawn for one pool: use policy continuous, chunked, separate, static or train "
                      "(disaggregated serving runs two)", "policy")
    return dumps(trace_dict(req))


def _validator(model, layer: bool):
    def validate(body: dict):
        from pydantic import ValidationError

        from ..errors import RooflineError

        local = sorted(SERVER_ONLY & set(body))
        if local:
            raise Refused(f"field {local[0]!r} is not taken over HTTP (it names a file on the server or a terminal "
                          f"format); drop it, the answer is always JSON (use the CLI for files)", local[0])
        try:
            if layer:
                return model.model_validate(body, context={"style": "python"})
            return model.model_validate(body)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            loc = errors[0].get("loc") or ()
            cause = (errors[0].get("ctx") or {}).get("error")
            if layer and isinstance(cause, RooflineError):
                raise Refused(str(cause), str(loc[0]) if loc else None) from None
            msg, fld = validation_message(errors, list(model.model_fields))
            raise Refused(msg, fld) from None
        except RooflineError as exc:  # a cross-field or catalog rule of the request layer
            raise Refused(str(exc), None) from None

    return validate


def validation_message(errors: list, fields: list[str]) -> tuple[str, str | None]:
    """One line for pydantic validation errors: the first problem, naming its field, and how many more."""
    if not errors:
        return "the request body is not valid; send a JSON object with the operation's fields (see /docs)", None
    e = errors[0]
    loc = [x for x in e.get("loc", ()) if x != "body"]
    kind = e.get("type", "")
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    fld = ".".join(str(x) for x in loc) or None
    if kind == "extra_forbidden":
        return f"unknown field {fld!r}; expected one of: {', '.join(fields)}{more}", fld
    if kind == "missing":
        return f"field {fld!r} is required{more}; see /docs for the operation's fields", fld
    cause = (e.get("ctx") or {}).get("error")
    msg = str(cause) if isinstance(cause, Exception) else e.get("msg", "invalid value")
    return f"field {fld!r}: {msg} (got {e.get('input')!r}){more}", fld


def parse_body(raw: bytes) -> dict:
    """The JSON object of a request body ({} when empty); Refused (422) naming the position otherwise."""
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise Refused("the request body is not UTF-8 text; send a JSON object") from None
    except json.JSONDecodeError as exc:
        raise Refused(f"the request body is not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}; "
                      f'send a JSON object such as {{"model": "llama-3-70b", "system": "dgx-h100"}}') from None
    if not isinstance(body, dict):
        raise Refused(f"the request body must be a JSON object of the operation's fields, got a JSON "
                      f"{type(body).__name__}; e.g. {{\"model\": \"llama-3-70b\", \"system\": \"dgx-h100\"}}")
    return body


def _via_cli(path):
    from . import bridge

    def run(req) -> str:
        return bridge.run(path, req.model_dump())

    return run


def _via_requests(fn):
    def run(req) -> str:
        return dumps(fn(req))

    return run


def dumps(obj) -> str:
    """Compact JSON with the CLI's conventions (inf/nan -> null, NumPy scalars as numbers): orjson when
    installed, else the standard library's C encoder, cleaning first what it cannot take (NumPy scalars,
    non-finite floats) as the CLI's print_json does. Floats keep their shortest round-trip form either way,
    so the values equal the CLI's exactly."""
    try:  # orjson: 10-20x faster on a 10^4-point sweep (20 vs 135 ms here), NaN/inf -> null as the CLI prints
        import orjson

        return orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    except ImportError:
        pass
    except TypeError:
        return json.dumps(_clean(obj), separators=(",", ":"), allow_nan=False)
    try:
        return json.dumps(obj, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return json.dumps(_clean(obj), separators=(",", ":"), allow_nan=False)


def _clean(obj):
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, (str, int, bool)) or obj is None:
        return obj
    if hasattr(obj, "tolist"):
        return _clean(obj.tolist())
    return obj


def execute(op: Operation, body: dict, layout: str = "rows") -> str | bytes:
    """Validate the body, check the server's limits, run the operation: the answer as JSON text, or for
    `layout="columns"` the columnar JSON and for `layout="binary"` the binary columns (operations with them)."""
    run = {"rows": op.run, "columns": op.columns, "binary": op.binary}.get(layout)
    if run is None:
        have = ", ".join(k for k, f in (("rows", op.run), ("columns", op.columns), ("binary", op.binary)) if f)
        raise Refused(f"layout={layout!r} is not available for {op.name}; use {have}", "layout")
    try:  # first on the raw body, so that no huge grid is built while validating
        limits.check(op.name, body)
    except (TypeError, ValueError):
        pass  # a wrongly typed field: validation names it
    req = op.validate(body)
    limits.check(op.name, req.model_dump())
    return run(req)
