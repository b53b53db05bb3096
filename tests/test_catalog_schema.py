"""catalog/schema.py: every kind of field, each bad value with its one-line message (library), the conversions
of good values, and the same messages through `--catalog FILE` on the CLI (exit 1, one line)."""

import datetime as dt
import math

import pytest

from helpers import TOY_ACCELERATOR_YAML
from roofline.catalog import ACCELERATOR_SPEC, MLA_SPEC
from roofline.catalog.schema import check_row
from roofline.errors import CatalogError

SPEC = {
    "id": ("str", True), "name": ("str", False), "flag": ("bool", False), "layers": ("int", False),
    "shared": ("count", False), "hbm_gb": ("pos", False), "bias": ("nonneg", False), "aliases": ("strs", False),
    "dense_tflops": ("dtype_map", False), "mla": ("map", False), "extra": ("any", False),
}
NESTED = {"mla": MLA_SPEC}


def check(row):
    return check_row(row, SPEC, "rows[0]", NESTED)


def message(row) -> str:
    with pytest.raises(CatalogError) as e:
        check(row)
    return str(e.value)


# one bad value per kind: (field, value, message after "rows[0] (id 'x'): ")
BAD = [
    ("name", True, "name is True; expected text"),
    ("name", ["a"], "name is ['a']; expected text"),
    ("flag", "yes", "flag is 'yes'; expected true/false"),
    ("flag", 1, "flag is 1; expected true/false"),
    ("layers", 0, "layers is 0; expected a whole number >= 1"),
    ("layers", 2.5, "layers is 2.5; expected a whole number >= 1"),
    ("layers", True, "layers is True; expected a whole number >= 1"),
    ("shared", -1, "shared is -1; expected a whole number >= 0"),
    ("hbm_gb", 0, "hbm_gb is 0; expected a number > 0"),
    ("hbm_gb", -80, "hbm_gb is -80; expected a number > 0"),
    ("hbm_gb", math.inf, "hbm_gb is inf; expected a number > 0"),
    ("hbm_gb", math.nan, "hbm_gb is nan; expected a number > 0"),
    ("hbm_gb", "80", "hbm_gb is '80'; expected a number > 0"),
    ("hbm_gb", False, "hbm_gb is False; expected a number > 0"),
    ("bias", -0.5, "bias is -0.5; expected a number >= 0"),
    ("aliases", ["a", 1], "aliases is ['a', 1]; expected a list of text"),
    ("aliases", "a", "aliases is 'a'; expected a list of text"),
    ("dense_tflops", [989], "dense_tflops is [989]; expected a mapping dtype: number"),
    ("dense_tflops", {"fp7": 1.0},
     "dense_tflops: unknown dtype 'fp7'; expected one of fp32, tf32, bf16, fp16, fp8, int8, fp6, fp4, int4"),
    ("dense_tflops", {"bf16": 0}, "dense_tflops.bf16 is 0; expected a number > 0"),
    ("mla", 5, "mla: expected a mapping of key: value, got int"),
    ("mla", {"kv_lora_rank": 512}, "mla: missing required key 'q_lora_rank' (a whole number >= 0); add it"),
]


@pytest.mark.parametrize("field, value, msg", BAD, ids=[f"{b[0]}={b[1]!r}" for b in BAD])
def test_each_bad_value_has_its_message(field, value, msg):
    assert message({"id": "x", field: value}) == f"rows[0] (id 'x'): {msg}"


def test_row_level_messages():
    assert message("accelerator") == "rows[0]: expected a mapping of key: value, got str"
    assert message({"name": "no id"}) == "rows[0]: missing required key 'id' (text); add it"
    assert message({"id": None}) == "rows[0]: missing required key 'id' (text); add it"  # null counts as missing
    # an unknown key: the closest allowed key when there is one, else the list of allowed keys
    assert message({"id": "x", "hbm_gbs": 80}) == "rows[0] (id 'x'): unknown key 'hbm_gbs'; did you mean 'hbm_gb'?"
    assert message({"id": "x", "zzz": 1}) == ("rows[0] (id 'x'): unknown key 'zzz'; allowed keys: id, name, flag, "
                                              "layers, shared, hbm_gb, bias, aliases, dense_tflops, mla, extra")


def test_good_values_are_converted():
    row = check({"id": 7, "name": dt.date(2024, 12, 26), "flag": False, "layers": 61, "shared": 0, "hbm_gb": 80,
                 "bias": 0, "aliases": ["DGX-H100", "hgx"], "dense_tflops": {"BF16": 989.5, "fp8": 1979},
                 "mla": {"q_lora_rank": 0, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                         "v_head_dim": 128},
                 "extra": {"anything": [1, 2]}})
    assert row["id"] == "7" and row["name"] == "2024-12-26"  # numbers and YAML dates become text
    assert row["flag"] is False and row["layers"] == 61 and row["shared"] == 0
    assert row["hbm_gb"] == 80.0 and isinstance(row["hbm_gb"], float) and row["bias"] == 0.0
    assert row["aliases"] == ("dgx-h100", "hgx")  # aliases are matched lower-case
    assert row["dense_tflops"] == {"bf16": 989.5, "fp8": 1979.0}
    assert row["mla"]["kv_lora_rank"] == 512 and row["mla"]["q_lora_rank"] == 0
    assert row["extra"] == {"anything": [1, 2]}
    assert check({"id": "x", "hbm_gb": None}) == {"id": "x"}  # an optional key given as null is left out


def test_packaged_accelerator_spec_requires_a_source_and_a_price():
    """Every accelerator row must cite its source and date and carry a dated rental price (DESIGN.md catalogs)."""
    for key in ("source", "date", "usd_per_hour", "price_source", "price_date", "dense_tflops", "hbm_gb"):
        assert ACCELERATOR_SPEC[key][1] is True, key


# --- through the CLI: a user catalog file ------------------------------------------------------------------------

ACC = TOY_ACCELERATOR_YAML  # an fp8-only accelerator in a user catalog (tests/helpers.py)

CLI_BAD = [
    ("hbm_gb: 100", "hbm_gb: -80", "accelerators[0] (id 'toy-chip'): hbm_gb is -80; expected a number > 0"),
    ("fp8: 1000", "fp7: 1000", "accelerators[0] (id 'toy-chip'): dense_tflops: unknown dtype 'fp7'"),
    ("hbm_gb: 100", "hbm_gbs: 100", "accelerators[0] (id 'toy-chip'): unknown key 'hbm_gbs'; did you mean 'hbm_gb'?"),
    ("    tdp_w: 500\n", "", "accelerators[0] (id 'toy-chip'): missing required key 'tdp_w' (a number > 0); add it"),
    ("usd_per_hour: 1.5", "usd_per_hour: .nan", "accelerators[0] (id 'toy-chip'): usd_per_hour is nan"),
    ("hbm_gb: 100", "hbm_gb: 100\n    device_memory_gib: 93", "accelerators[0] (id 'toy-chip'): device_memory_gib and "
     "device_memory_source go together"),
]


@pytest.mark.parametrize("old, new, msg", CLI_BAD, ids=[b[1].strip() or "no tdp_w" for b in CLI_BAD])
def test_cli_catalog_file_errors_are_one_line(run_cli, tmp_path, old, new, msg):
    path = tmp_path / "bad.yaml"
    assert old in ACC
    path.write_text(ACC.replace(old, new))
    code, out, err = run_cli("--catalog", str(path), "catalog", "accelerators", "--json")
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err.startswith(f"error: {path}: {msg}")


def test_cli_catalog_file_good_row_loads(run_cli, tmp_path):
    import json

    path = tmp_path / "good.yaml"
    path.write_text(ACC)
    code, out, err = run_cli("--catalog", str(path), "catalog", "accelerators", "--json")
    assert code == 0, err
    toy = next(r for r in json.loads(out) if r["id"] == "toy-chip")
    assert toy["flops_per_s"] == {"fp8": 1000e12} and toy["hbm_bytes"] == 100e9 and toy["hbm_bytes_per_s"] == 4e12
