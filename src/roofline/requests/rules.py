"""Every input rule, written once, as plain functions (no pydantic: the library's public functions call
them directly; the request models in this package wrap them as field validators).

A rule returns the cleaned value or raises `InputError` (bad value: exit 1 in the CLI) or `UsageError`
(options that cannot be combined, a missing option: exit 2). Messages are one line: what was wrong,
what was expected, how to fix it. `name` is how the caller spells the input: `--batch` in the CLI,
`batch` in Python.
"""

from __future__ import annotations

import math
import numbers
from pathlib import Path

from ..errors import InputError


class UsageError(InputError):
    """Options that cannot be used together, or a required option left out (the CLI exits 2)."""


#: The largest rental price accepted (USD per accelerator-hour). No accelerator rents for more than a
#: few hundred dollars an hour; a bound keeps every cost finite (1e308 $/h would print inf).
MAX_USD_PER_GPU_HOUR = 1e6
#: Largest token count accepted for a context, prompt or output (2^31): beyond any catalog model's context.
MAX_TOKENS = 2**31
#: Largest count of sequences, requests, GPUs or degrees accepted: keeps products of them exact in float64.
MAX_COUNT = 2**40


def _shown(value) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def whole(name: str, value, *, minimum: int = 1, maximum: int | None = None, fix: str = "") -> int:
    """A whole number in [minimum, maximum]: bools, strings and fractions are refused, not converted."""
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not ok and isinstance(value, float) and math.isfinite(value) and value == int(value):
        ok, value = True, int(value)
    if not ok:
        raise InputError(f"{name} must be a whole number >= {minimum}, got {_shown(value)} "
                         f"({type(value).__name__}); {fix or 'pass an integer'}")
    value = int(value)
    top = MAX_COUNT if maximum is None else maximum
    if value < minimum or value > top:
        rng = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        raise InputError(f"{name} must be a whole number {rng}, got {value}; "
                         + (fix or f"use a value {'in that range' if maximum is not None else rng}"))
    return value


def number(name: str, value, *, gt: float | None = None, ge: float | None = None, le: float | None = None,
           lt: float | None = None, fix: str = "") -> float:
    """A finite real number within the given bounds (bools and strings refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{name} must be a number, got {_shown(value)} ({type(value).__name__}); "
                         f"{fix or 'pass a number'}")
    x = float(value)
    parts = [f"> {gt:g}" if gt is not None else "", f">= {ge:g}" if ge is not None else "",
             f"< {lt:g}" if lt is not None else "", f"<= {le:g}" if le is not None else ""]
    want = " and ".join(p for p in parts if p) or "finite"
    if (not math.isfinite(x) or (gt is not None and not x > gt) or (ge is not None and not x >= ge)
            or (le is not None and not x <= le) or (lt is not None and not x < lt)):
        raise InputError(f"{name} must be {want} and finite, got {x:g}" + (f"; {fix}" if fix else ""))
    return x


def fraction(name: str, value, *, zero_ok: bool = False) -> float:
    """A fraction in (0, 1] (or [0, 1] with zero_ok)."""
    if zero_ok:
        return number(name, value, ge=0.0, le=1.0, fix="e.g. 0.5 for half")
    return number(name, value, gt=0.0, le=1.0, fix="e.g. 0.7 for 70%")


def price(name: str, value) -> float:
    """A rental price in USD per accelerator-hour: > 0, finite and at most MAX_USD_PER_GPU_HOUR."""
    return number(name, value, gt=0.0, le=MAX_USD_PER_GPU_HOUR,
                  fix="give the rental price in USD per GPU-hour, e.g. 2.5, or omit it for the catalog's")


def choice(name: str, value, options) -> str:
    """One of `options` (case-sensitive, as the help lists them)."""
    if not isinstance(value, str) or value not in options:
        raise InputError(f"{name} must be one of {', '.join(options)}, got {_shown(value)}; pick one of those")
    return value


def dtype(name: str, value) -> str:
    """A known number format (units.DTYPE_BYTES), lower-cased."""
    from ..units import DTYPE_BYTES

    if not isinstance(value, str) or value.lower() not in DTYPE_BYTES:
        raise InputError(f"{name} must be one of {', '.join(DTYPE_BYTES)}, got {_shown(value)}; pick one of those")
    return value.lower()


def expert_dtype(name: str, model, accelerator, value) -> None:
    """--expert-weights-dtype: only for MoE models, and a format the accelerator can run (dtype_supported)."""
    if value is None:
        return
    if not model.moe:
        raise InputError(f"{name} applies to mixture-of-experts models; {model.id} has no experts: drop it")
    dtype_supported(name, accelerator, value)


def fp8_scales(f, value: str, kernels: str, model, weights_dtype: str, expert_weights_dtype, engine: str) -> None:
    """--fp8-scales (flag names by `f`): only with measured kernel tables and FP8 weights: a mixture-of-experts
    model's FP8 routed experts (kernel_pass.FP8_SCALES), or a dense model's FP8 GEMMs on an engine whose block-scaled
    GEMM rows are read (kernel_pass.BLOCK_SCALED_DENSE: not vLLM's)."""
    if value == "auto":
        return
    if kernels != "tables" or (expert_weights_dtype or weights_dtype) != "fp8":
        raise UsageError(f"{f('fp8_scales')} picks the per-tensor or block-scaled measured rows of FP8 weights; it "
                         f"needs measured kernel tables ({f('kernels')} tables, or auto with an engine family) and FP8 "
                         f"weights ({f('weights_dtype')} fp8, or {f('expert_weights_dtype')} fp8 on a mixture-of-experts "
                         f"model); drop it")
    from ..kernels import table_family

    if not model.moe and table_family(engine) == "vllm":
        raise UsageError(f"{f('fp8_scales')} on a dense model picks the GEMM rows of its format, but vLLM's dense GEMMs "
                         f"keep the per-tensor rows (its block-scaled rows were timed without CUDA graphs: "
                         f"docs/kernels.md), so it would change nothing; drop it")


def moe_kernel(f, value: str, kernels: str, model) -> None:
    """--moe-kernel (flag names by `f`): only with measured kernel tables and a mixture-of-experts model
    (kernels.MOE_KERNELS)."""
    if value != "auto" and (kernels != "tables" or not model.moe):
        raise UsageError(f"{f('moe_kernel')} names the fused MoE kernel whose measured rows time the routed experts; "
                         f"it needs measured kernel tables ({f('kernels')} tables, or auto with an engine family) and a "
                         f"mixture-of-experts model; drop it")


def dtype_supported(name: str, accelerator, value: str) -> None:
    """The accelerator can run matmuls on weights stored as `value`: on its own cores for that format,
    or up-cast to its 16-bit cores (weight-only formats, as hardware.Accelerator.peak_flops does)."""
    from ..units import COMPUTE_DTYPE

    want = COMPUTE_DTYPE[value]
    cores = accelerator.flops_per_s
    listed = ", ".join(sorted(cores))
    if want in cores and "bf16" not in cores and "fp16" not in cores:  # the weights run, the activations do not
        raise InputError(f"{accelerator.id} lists no 16-bit (bf16/fp16) matmul throughput (it lists {listed}), which "
                         f"the attention kernels and activations use; add a bf16 figure to its catalog row "
                         f"(dense_tflops) or pick another accelerator")
    if want in cores or "bf16" in cores or "fp16" in cores:
        return
    raise InputError(f"{name} {value} needs {want} matmul throughput (or 16-bit cores to up-cast to), which "
                     f"{accelerator.id} does not list (it lists {listed}); use {name} with one of those formats")


def training_dtype_supported(name: str, accelerator, value: str) -> None:
    """Training matmuls run natively in `value`: no up-casting fallback (fp4 training on an H100 is refused)."""
    cores = accelerator.flops_per_s
    if value not in cores:
        raise InputError(f"{name} {value}: {accelerator.id} lists no native {value} matmul throughput (it lists "
                         f"{', '.join(sorted(cores))}); train in one of those")


def exclusive(**given) -> None:
    """At most one of the named options may be set (values other than None/False/empty)."""
    used = [k for k, v in given.items() if v not in (None, False, (), [])]
    if len(used) > 1:
        raise UsageError(f"{' and '.join(used)} cannot be used together; give only one of them")


def context_fits(model, tokens: float, what: str, fix: str = "") -> None:
    """`tokens` (cached + new) fits the model's maximum context."""
    if model.max_context and tokens > model.max_context:
        raise InputError(f"{what} {tokens:,.0f} tokens exceeds {model.id}'s max_context {model.max_context:,}; "
                         + (fix or f"use at most {model.max_context:,} tokens or a model with a longer context"))


def text_file(path, what: str, expected: str) -> str:
    """Read a UTF-8 text file; missing, directory, binary and non-UTF-8 files get one line each."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{what} {str(p)!r} does not exist; give the path to {expected}")
    if p.is_dir():
        raise InputError(f"{what} {str(p)!r} is a directory; give the path to {expected}")
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {what} {str(p)!r}: {exc.strerror}; check its permissions") from None
    if b"\x00" in raw[:65536]:
        raise InputError(f"{what} {str(p)!r} is a binary file, not text; give the path to {expected}")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise InputError(f"{what} {str(p)!r} is not UTF-8 text (byte {exc.start}, line {line}); "
                         f"save it as UTF-8 or give the path to {expected}") from None


def output_path(name: str, path, suffixes: tuple[str, ...]) -> str:
    """An output file path: its suffix is one we can write, and its folder exists."""
    p = Path(str(path))
    if p.suffix.lower() not in suffixes:
        raise InputError(f"{name} {str(p)!r} must end in {' or '.join(suffixes)}; rename the output file")
    if not p.parent.exists() if str(p.parent) not in ("", ".") else False:
        raise InputError(f"{name} {str(p)!r}: folder {str(p.parent)!r} does not exist; create it first")
    if p.is_dir():
        raise InputError(f"{name} {str(p)!r} is a directory; give a file name")
    return str(p)


def output_dir(name: str, path) -> str:
    """An output folder: created if missing; refused when a file stands in its place."""
    p = Path(str(path))
    if p.exists() and not p.is_dir():
        raise InputError(f"{name} {str(p)!r} is a file; give a folder for the outputs")
    return str(p)


def finite(result, inputs: str):
    """Raise InputError naming the first output that is inf or NaN and the inputs that produced it.
    Walks dicts and lists; None values (JSON null for 'no such quantity') are allowed."""

    def walk(obj, key):
        if isinstance(obj, dict):
            for k, v in obj.items():
                walk(v, k)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                walk(v, key)
        elif isinstance(obj, float) and not math.isfinite(obj):
            raise InputError(f"{key} came out as {obj} from {inputs}; an input is too large or too small for "
                             f"finite arithmetic — bring it into a realistic range")

    walk(result, "result")
    return result


def finite_array_check(name: str, arr, inputs: str) -> None:
    """NumPy version of `finite` for one output column (sweeps)."""
    import numpy as np

    a = np.asarray(arr)
    if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
        raise InputError(f"{name} came out as inf or NaN from {inputs}; an input is too large or too small "
                         f"for finite arithmetic — bring it into a realistic range")


def speculation(alpha_name: str, alpha, fraction_name: str, fraction) -> tuple[float, float]:
    """Speculative decoding's acceptance rate in [0, 1] and draft cost >= 0 (a fraction of a decode step)."""
    a = number(alpha_name, alpha, ge=0.0, le=1.0, fix="an acceptance rate per draft token, e.g. 0.85 for "
               "DeepSeek-V3's multi-token prediction")
    f = number(fraction_name, fraction, ge=0.0, fix="a draft token's cost as a fraction of a decode step, e.g. 0.05")
    return a, f

