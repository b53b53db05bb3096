"""Unit constants. SI inside the code; catalogs use human units with the unit in the key.

Decimal prefixes are decimal: tera is 1e12, never 2**40 (DESIGN.md anti-pattern). Binary prefixes
are spelled out (GiB) and used only where a source states binary units.
"""

KILO = 1e3
MEGA = 1e6
GIGA = 1e9
TERA = 1e12
PETA = 1e15

KiB = 2**10
MiB = 2**20
GiB = 2**30

MICRO = 1e-6
MILLI = 1e-3

SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86400.0

#: Bytes per element of each supported number format.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,  # stored as 32 bits; tf32 is a tensor-core compute mode
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "fp6": 0.75,
    "fp4": 0.5,
    "int4": 0.5,
}

#: The compute format used for matmuls on weights stored in each format (weight-only int4 runs on
#: bf16 tensor cores, int8 weights on int8 cores, fp8/fp6/fp4 on their own cores where the chip has them).
COMPUTE_DTYPE: dict[str, str] = {
    "fp32": "fp32", "tf32": "tf32", "bf16": "bf16", "fp16": "fp16",
    "fp8": "fp8", "int8": "int8", "fp6": "fp6", "fp4": "fp4", "int4": "bf16",
}


def dtype_bytes(name: str) -> float:
    """Bytes per element of `name` (e.g. 'bf16' -> 2.0); raises InputError for an unknown format."""
    from .errors import InputError

    key = name.lower()
    if key not in DTYPE_BYTES:
        raise InputError(
            f"unknown dtype {name!r}: expected one of {', '.join(DTYPE_BYTES)}; pick one of those"
        )
    return DTYPE_BYTES[key]
