"""The library's public `roofline.step`, with its inputs checked by the request layer's rules (no pydantic,
so `import roofline` and array sweeps stay fast): a model or system may be a catalog id or a record;
batch, context and prompt must be numbers or numeric arrays — never strings or booleans, and scalars
must be whole (a fractional batch of 2.5 sequences is refused; arrays may hold any positive values, as
a continuous sweep over batch is a legitimate use). Everything else is `engine.step`'s.
"""

from __future__ import annotations

import numbers

from ..errors import InputError
from . import resolve, rules


def _counts(name: str, value, minimum: int):
    """A whole-number scalar, or a numeric (not boolean, not text) array of values >= minimum."""
    import numpy as np

    if isinstance(value, (bool, np.bool_)) or isinstance(value, (str, bytes)):
        raise InputError(f"{name} must be a number or a numeric array, got {rules._shown(value)} "
                         f"({type(value).__name__}); pass e.g. {name}=64 or an np.array")
    if isinstance(value, numbers.Number):
        return rules.whole(name, value, minimum=minimum,
                           fix="a count of sequences/tokens; use an array for a continuous sweep")
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf":
        raise InputError(f"{name} must be a number or a numeric array, got an array of {arr.dtype} "
                         f"({type(value).__name__}); pass ints or floats")
    if arr.size and (not np.all(np.isfinite(arr)) or np.min(arr) < minimum):
        bad = arr[~np.isfinite(arr) | (arr < minimum)].flat[0]
        raise InputError(f"{name} must be >= {minimum} and finite everywhere, got {bad:g}")
    return value


def step(model, system, batch, context, **kwargs):
    """`engine.step` (time, cost, bound and memory of one pass; see its docstring), with `model` and
    `system` given as records or catalog ids, and batch/context/prompt checked: a clear InputError,
    never an AttributeError or a silent conversion of "64", True or 2.5."""
    from ..engine import step as engine_step

    m = resolve.model(model, "model")
    s = resolve.system(system, "system")
    batch = _counts("batch", batch, 1)
    context = _counts("context", context, 0)
    if "prompt" in kwargs:
        kwargs["prompt"] = _counts("prompt", kwargs["prompt"], 1)
    for key in ("weights_dtype", "kv_dtype", "activation_dtype"):
        if key in kwargs:
            kwargs[key] = rules.dtype(key, kwargs[key])
    if kwargs.get("usd_per_gpu_hour") is not None:
        kwargs["usd_per_gpu_hour"] = rules.price("usd_per_gpu_hour", kwargs["usd_per_gpu_hour"])
    for key in ("gpus", "chips"):
        if kwargs.get(key) is not None:
            kwargs[key] = rules.whole(key, kwargs[key], minimum=1)
    return engine_step(m, s, batch, context, **kwargs)
