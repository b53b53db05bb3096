"""units.py by hand: decimal vs binary prefixes, seconds per hour/day, bytes per element of every number format
(bits / 8), the compute format each weight format runs on, and the unknown-dtype message (library and CLI)."""

import json

import pytest

from roofline import units as U
from roofline.errors import InputError

# Bits per element of each format (IEEE 754 binary32/16, bfloat16, OCP MX fp8/fp6/fp4, integer formats); tf32
# is a tensor-core compute mode of values stored as 32 bits.
BITS = {"fp32": 32, "tf32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "fp6": 6, "fp4": 4, "int4": 4}


def test_prefixes_are_decimal_and_binary_prefixes_are_spelled_out():
    assert (U.KILO, U.MEGA, U.GIGA, U.TERA, U.PETA) == (1e3, 1e6, 1e9, 1e12, 1e15)
    assert U.TERA != 2**40  # DESIGN.md anti-pattern: tera is 1e12
    assert (U.KiB, U.MiB, U.GiB) == (1024, 1024**2, 1024**3)
    assert (U.MICRO, U.MILLI) == (1e-6, 1e-3)
    assert U.SECONDS_PER_HOUR == 60 * 60 and U.SECONDS_PER_DAY == 24 * 60 * 60


@pytest.mark.parametrize("name, bits", BITS.items())
def test_dtype_bytes_is_bits_over_8(name, bits):
    assert U.dtype_bytes(name) == bits / 8
    assert U.dtype_bytes(name.upper()) == bits / 8  # names are case-insensitive


def test_every_format_has_bytes_and_a_compute_format():
    assert set(U.DTYPE_BYTES) == set(BITS) == set(U.COMPUTE_DTYPE)
    assert set(U.COMPUTE_DTYPE.values()) <= set(U.DTYPE_BYTES)
    # weight-only int4 has no int4 tensor cores to use: it is dequantised and runs on bf16; every other format
    # names its own cores (a chip without them falls back in Accelerator.peak_flops)
    assert U.COMPUTE_DTYPE["int4"] == "bf16"
    assert all(U.COMPUTE_DTYPE[k] == k for k in BITS if k != "int4")


@pytest.mark.parametrize("bad", ["fp7", "bfloat16", "", "fp 8"])
def test_unknown_dtype_message(bad):
    with pytest.raises(InputError) as e:
        U.dtype_bytes(bad)
    assert str(e.value) == (f"unknown dtype {bad!r}: expected one of fp32, tf32, bf16, fp16, fp8, int8, fp6, fp4, "
                            "int4; pick one of those")


def test_cli_unknown_dtype_is_one_line(run_cli):
    code, _, err = run_cli("step", "-m", "llama-3-8b", "-a", "h100-sxm", "-b", "1", "--weights-dtype", "fp7")
    assert code == 1 and err.count("\n") == 1
    assert err.strip() == ("error: --weights-dtype must be one of fp32, tf32, bf16, fp16, fp8, int8, fp6, fp4, int4, "
                           "got 'fp7'; pick one of those")


def test_cli_bytes_follow_the_dtype(run_cli):
    """step --json: weights per GPU = N_total · bytes per weight, KV per token scales with the KV format's bytes
    (llama-3-8b: 32 layers x (K, V) x 8 KV heads x 128 dims = 65,536 elements per token)."""
    got = {}
    for w, kv in (("bf16", "bf16"), ("int4", "FP8"), ("fp32", "fp8")):
        code, out, err = run_cli("step", "-m", "llama-3-8b", "-a", "h100-sxm", "-b", "1", "--weights-dtype", w,
                                 "--kv-dtype", kv, "--json")
        assert code == 0, err
        got[w] = json.loads(out)
    n_total = got["bf16"]["params_total"]
    for w in got:
        assert got[w]["weights_per_gpu_bytes"] == pytest.approx(n_total * BITS[w] / 8, rel=1e-12), w
    elements = 32 * 2 * 8 * 128
    assert got["bf16"]["kv_bytes_per_token"] == elements * 2
    assert got["int4"]["kv_bytes_per_token"] == elements * 1 and got["int4"]["kv_dtype"] == "fp8"
