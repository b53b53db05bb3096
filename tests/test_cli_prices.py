"""`roofline prices show|infer|layouts` and `roofline tiers` through the CLI: JSON keys, user price lists,
and exact one-line errors for bad price inputs (exit code 1)."""

import json

import pytest

GOOD = """
prices:
  - id: my-model
    kind: api
    name: My model
    provider: me
    model: mine
    input_usd_per_mtok: 1.0
    output_usd_per_mtok: 4.0
    cache_hit_usd_per_mtok: 0.1
    context_tiers:
      - {above_tokens: 128000, input_usd_per_mtok: 2.0, output_usd_per_mtok: 6.0}
    source: test
    date: 2026-01
"""


def _write(tmp_path, text, name="my.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_show_json_lists_every_packaged_price_list(run_cli):
    code, out, _ = run_cli("prices", "show", "--json")
    assert code == 0
    doc = json.loads(out)
    ids = {p["id"] for p in doc["price_lists"]}
    assert {"gemini-2.5-pro", "gemini-3-pro", "claude-opus-4.6", "gpt-5", "deepseek-v3-2025",
            "deepseek-v4-flash-2026"} <= ids
    claude = next(p for p in doc["price_lists"] if p["id"] == "claude-opus-4.6")
    assert claude["input_usd_per_token"] == pytest.approx(5e-6)
    assert [w["hold_s"] for w in claude["cache_writes"]] == [300, 3600]
    assert any(r["accelerator"] == "h800" for r in doc["gpu_rentals"])


def test_infer_json_golden_numbers(run_cli):
    code, out, _ = run_cli("prices", "infer", "gemini-2.5-pro", "claude-opus-4.6", "--json")
    assert code == 0
    doc = json.loads(out)
    gem = {i["quantity"]: i for i in doc["inferences"]["gemini-2.5-pro"]}
    assert gem["KV bytes/token from the 200,000-token tier"]["value"] == pytest.approx(1666.6667, rel=1e-6)
    cl = {i["quantity"]: i for i in doc["inferences"]["claude-opus-4.6"]}
    assert cl["hold price, 300-s write"]["value"] == pytest.approx(1.25 / 300)
    assert cl["fast: batch ratio B_normal/B_fast"]["value"] == pytest.approx(15.0)


def test_infer_runs_on_a_user_price_list(run_cli, tmp_path):
    path = _write(tmp_path, GOOD)
    code, out, _ = run_cli("--catalog", path, "prices", "infer", "my-model", "--accelerator", "h100-sxm", "--json")
    assert code == 0
    infs = {i["quantity"]: i for i in json.loads(out)["inferences"]["my-model"]}
    kv = infs["KV bytes/token from the 128,000-token tier"]
    assert kv["value"] == pytest.approx(1e11 / (300 * 128000))
    assert infs["decode t_mem/t_compute (base)"]["value"] == pytest.approx(4.0)


def test_tables_render(run_cli):
    code, out, _ = run_cli("prices", "show")
    assert code == 0 and "claude-opus-4.6" in out
    code, out, _ = run_cli("prices", "infer", "deepseek-v3-2025")
    assert code == 0 and "cache hit / miss price" in out
    code, out, _ = run_cli("prices", "layouts", "1666.67", "--top", "3")
    assert code == 0 and "128 dims x 8 KV heads" in out


def test_tiers_json(run_cli):
    code, out, _ = run_cli("tiers", "--json", "--hold", "0.02", "--hold", "300", "--hold", "3600")
    assert code == 0
    doc = json.loads(out)
    assert [h["cheapest"] for h in doc["holds"]] == ["hbm-h100", "flash-gen6", "disk-network"]
    assert doc["break_even_hbm_vs_remat_s"] == pytest.approx(3948, rel=1e-3)
    assert doc["bands"][0]["option"] == "hbm-h100" and doc["bands"][-1]["option"] == "remat"


def test_tiers_from_a_model(run_cli):
    code, out, _ = run_cli("tiers", "--model", "deepseek-v3", "--json")
    assert code == 0
    assert json.loads(out)["kv_bytes_per_token"] == pytest.approx(70272)


BAD = [
    ("negative price", "input_usd_per_mtok: 1.0", "input_usd_per_mtok: -1.0",
     "input_usd_per_mtok is -1; a price cannot be negative"),
    ("tier below zero", "above_tokens: 128000", "above_tokens: -5",
     "above_tokens is -5; a context tier must start above 0 tokens"),
    ("hit dearer than miss", "cache_hit_usd_per_mtok: 0.1", "cache_hit_usd_per_mtok: 1.5",
     "cache_hit_usd_per_mtok 1.5 is dearer than a miss (input_usd_per_mtok 1)"),
    ("unknown key", "provider: me", "provider: me\n    discount: 3", "unknown key 'discount'"),
]


@pytest.mark.parametrize("label, old, new, message", BAD, ids=[b[0] for b in BAD])
def test_bad_price_inputs_exit_1_with_one_line(run_cli, tmp_path, label, old, new, message):
    path = _write(tmp_path, GOOD.replace(old, new))
    for cmd in (("prices", "show"), ("prices", "infer")):
        code, out, err = run_cli("--catalog", path, *cmd)
        assert code == 1, label
        assert err.startswith("error: ") and message in err and err.count("\n") == 1
        assert "prices[0] (id 'my-model')" in err


def test_bad_tier_row(run_cli, tmp_path):
    path = _write(tmp_path, "tiers:\n  - {id: t, name: t, medium: tape, capacity_gb: 1, read_gb_per_s: 1, "
                            "usd_per_gb_month: 1, cost_source: x, source: x, date: 2026}\n")
    code, _, err = run_cli("--catalog", path, "tiers")
    assert code == 1 and "medium 'tape' is not one of hbm, ddr, cxl, flash, disk" in err


def test_bad_hold_and_unknown_id(run_cli):
    code, _, err = run_cli("tiers", "--hold", "-3")
    assert code == 1 and "--hold must be > 0 and <= 3.2e+09 and finite, got -3" in err
    code, _, err = run_cli("prices", "show", "gemini-9")
    assert code == 1 and "unknown price list 'gemini-9'" in err
    code, _, err = run_cli("prices", "show", "zzzz")
    assert code == 1 and "see `roofline prices show`" in err  # no close match: where the ids are listed


def test_tier_share_of_server_cost_form(run_cli, tmp_path):
    """A tier priced as a share of a server's rent: usd_per_s = server $/h × share / 3600."""
    path = _write(tmp_path, "tiers:\n  - {id: ddr-share, name: d, medium: ddr, capacity_gb: 2000, read_gb_per_s: 500, "
                            "server_usd_per_hour: 24, share_of_server: 0.05, cost_source: x, source: x, date: 2026}\n")
    code, out, _ = run_cli("--catalog", path, "tiers", "--tier", "ddr-share", "--json")
    assert code == 0
    t = json.loads(out)["tiers"][0]
    assert t["usd_per_gb_month"] == pytest.approx(24 * 0.05 / 3600 / 2000 * 365.25 / 12 * 86400)
