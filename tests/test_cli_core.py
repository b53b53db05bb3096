"""CLI: JSON keys of `roofline step`, tables, and exact one-line errors for bad input (exit 1)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

HF = Path(__file__).parent / "data" / "hf"
STEP_KEYS = ["compute_s", "weight_read_s", "kv_read_s", "step_s", "step_upper_s", "bound", "tokens_per_s",
             "tokens_per_s_per_sequence", "usd_per_million_tokens", "mfu", "params_total", "params_active",
             "kv_bytes_per_token", "memory_per_gpu_bytes", "fits", "critical_batch", "latency_floor_s"]


def test_step_json_has_documented_keys(run_cli):
    code, out, err = run_cli("step", "--model", "llama-3-70b", "--system", "dgx-h100", "--batch", "64",
                             "--context", "4096", "--json")
    assert code == 0, err
    d = json.loads(out)
    for k in STEP_KEYS:
        assert k in d, k
    assert d["bound"] == "memory" and d["fits"] is True
    assert d["step_s"] == pytest.approx(max(d["compute_s"], d["weight_read_s"] + d["kv_read_s"] + d["kv_write_s"]))


def test_step_accelerator_gpus_and_prefill_and_dtypes(run_cli):
    code, out, err = run_cli("step", "-m", "mixtral-8x7b", "-a", "h100-sxm", "-g", "2", "--phase", "prefill",
                             "--prompt", "2048", "--weights-dtype", "fp8", "--kv-dtype", "fp8", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["bound"] == "compute" and d["gpus"] == 2 and d["weights_dtype"] == "fp8"


def test_step_realistic_matches_the_engine_and_brackets(run_cli):
    """--realistic = engine.step with the family's factors under the layout, central value inside its interval, slower
    than the pure roofline; per-query-head KV reads make a GQA decode slower still."""
    from helpers import layout_step
    from roofline import get_model, get_system

    args = ("step", "-m", "llama-3-70b", "-s", "dgx-h100", "-b", "64", "-c", "4096", "--tp", "8", "--realistic", "--json")
    code, out, err = run_cli(*args)
    assert code == 0, err
    d = json.loads(out)
    r = d["realistic"]
    expect = layout_step(get_model("llama-3-70b"), get_system("dgx-h100"), 64, 4096, tp=8, realistic=True).step_s
    assert r["step_s"] == pytest.approx(float(expect)) and r["layout"] == "TP8 EP1 PP1 DP1"
    assert r["low_s"] < r["step_s"] < r["high_s"] and r["step_s"] > d["step_s"]
    assert r["step_s"] == pytest.approx(r["gemm_s"] + r["attention_s"] + r["elementwise_s"] + r["comm_s"]
                                        + r["overhead_s"])
    code, out, err = run_cli(*args, "--decode-attention", "per-query-head")
    assert code == 0, err
    assert json.loads(out)["realistic"]["step_s"] > r["step_s"]
    code, out, _ = run_cli("step", "-m", "llama-3-8b", "-s", "dgx-h100", "-b", "8", "--realistic")
    assert code == 0 and "efficiency model" in out and "interval" in out  # the table renders the section
    # the same run's values: the family is the accelerator's vendor, the 8 GPUs of a DGX H100 run as one TP
    # group (8 divides llama-3-8b's 8 KV heads), and a replica's tokens/s is batch / step time
    code, out, err = run_cli("step", "-m", "llama-3-8b", "-s", "dgx-h100", "-b", "8", "--realistic", "--json")
    assert code == 0, err
    r8 = json.loads(out)["realistic"]
    dgx = get_system("dgx-h100")
    assert r8["family"] == dgx.accelerator.vendor == "nvidia"
    assert r8["layout"] == f"TP{dgx.chips} EP1 PP1 DP1" == "TP8 EP1 PP1 DP1"
    assert r8["low_s"] < r8["step_s"] < r8["high_s"]
    assert r8["tokens_per_s"] == pytest.approx(8 / r8["step_s"], rel=1e-12)
    code, _, err = run_cli("step", "-m", "llama-3-70b", "-s", "gb200-nvl72", "--realistic")
    assert code == 1 and "runs the 72 GPUs as one TP group, but TP 72 does not divide" in err and "--tp 8" in err
    code, out, err = run_cli("sweep", "-m", "llama-3-70b", "-s", "dgx-h100", "--batch", "1,64", "--realistic", "--json")
    assert code == 0, err
    pts = json.loads(out)
    assert all(p["realistic_low_s"] < p["realistic_step_s"] < p["realistic_high_s"] for p in pts)
    assert pts[1]["realistic_step_s"] == pytest.approx(float(layout_step(
        get_model("llama-3-70b"), get_system("dgx-h100"), 64, 4096, tp=8, realistic=True).step_s))
    code, _, err = run_cli("sweep", "-m", "llama-3-70b", "-s", "gb200-nvl72", "--realistic")
    assert code == 1 and "runs the 72 GPUs as one TP group" in err


def test_step_table_renders(run_cli):
    code, out, _ = run_cli("step", "-m", "llama-3-8b", "-s", "dgx-h100", "-b", "8", "-c", "1000")
    assert code == 0 and "critical batch" in out and "memory" in out


def test_hf_config_path_as_model(run_cli):
    code, out, err = run_cli("step", "-m", str(HF / "qwen3-235b-a22b.json"), "-s", "gb200-nvl72", "--json")
    assert code == 0, err
    assert json.loads(out)["params_total"] == pytest.approx(235e9, rel=0.01)


@pytest.mark.parametrize("args,needle", [
    (["step", "-m", "llama-3-70x", "-s", "dgx-h100"], "error: unknown model 'llama-3-70x': did you mean llama-3-70b"),
    (["step", "-m", "llama-3-70b", "-s", "dgx-h10"], "error: unknown system 'dgx-h10': did you mean dgx-h100"),
    (["step", "-m", "llama-3-70b", "-a", "h100sxm"], "error: unknown accelerator 'h100sxm': did you mean h100-sxm"),
    (["step", "-m", "llama-3-70b", "-s", "dgx-h100", "-b", "0"], "error: --batch must be a whole number >= 1, got 0"),
    (["step", "-m", "llama-3-70b", "-s", "dgx-h100", "-b", "-3"], "error: --batch must be a whole number >= 1, got -3"),
    (["step", "-m", "llama-3-70b", "-s", "dgx-h100", "-c", "100000"],
     "error: --context + new tokens = 100,001 tokens exceeds llama-3-70b's max_context 8,192"),
    (["step", "-m", "llama-3.1-405b", "-s", "dgx-h100"], "error: llama-3.1-405b needs 101.5 GB per GPU under 8 GPUs, perfect sharding on h100-sxm"),
    (["step", "-m", "llama-3-70b"], "error: no hardware given: pass --system ID"),
    (["step", "-m", "llama-3-70b", "-s", "dgx-h100", "--phase", "train"], "error: --phase must be one of decode, prefill, got 'train'"),
    (["step", "-m", "llama-3-70b", "-s", "dgx-h100", "--weights-dtype", "fp3"], "error: --weights-dtype must be one of fp32, tf32, bf16"),
    (["step", "-m", "llama-3-70b", "-s", "dgx-h100", "--gpus", "9"], "error: --gpus must be between 1 and 8"),
    (["step", "-m", "llama-3-70b", "-s", "dgx-h100", "--compute-efficiency", "0"], "error: --compute-efficiency must be > 0 and <= 1 and finite, got 0"),
    (["sweep", "-m", "llama-3-70b", "-s", "dgx-h100", "--batch", "8:1:3"], "error: --batch '8:1:3' is not a grid"),
])
def test_bad_input_one_line_exit_1(run_cli, args, needle):
    code, out, err = run_cli(*args)
    assert code == 1
    assert err.startswith(needle), err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_malformed_config_json(run_cli, tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "llama", "hidden_size": 4096,')
    code, _, err = run_cli("step", "-m", str(bad), "-s", "dgx-h100")
    assert code == 1 and "is not valid JSON (line 1" in err


@pytest.mark.parametrize("text,needle", [
    ("accelerators: [{id: x}]", "missing required key 'name'"),
    ("models:\n  - {id: tiny, name: t, family: llama, layers: 2, d_model: 64, vocab: 100, heads: 4, kv_heads: 3,"
     " head_dim: 16, d_ff: 128, max_context: 512, source: me, date: 2026}", "heads (4) must be a multiple of kv_heads (3)"),
    ("models:\n  - {id: tiny, name: t, family: llama, layer: 2}", "unknown key 'layer'; did you mean 'layers'?"),
    ("systems: [{id: s, name: s, accelerator: nope, chips: 8, scale_up_latency_us: 1, scale_out_latency_us: 5,"
     " source: x, date: y}]", "accelerator 'nope' is not in the catalog"),
    ("accelerators: [{id: x, name: x, vendor: v, dense_tflops: {bf16: -1}, hbm_gb: 1, hbm_tb_per_s: 1,"
     " scale_up_gb_per_s: 1, scale_out_gb_per_s: 1, tdp_w: 1, usd_per_hour: 1, price_source: p, price_date: d,"
     " source: s, date: d}]", "dense_tflops.bf16 is -1; expected a number > 0"),
    ("gpus: []", "unknown section 'gpus'"),
    ("models: [oops", "is not valid YAML"),
])
def test_malformed_catalog_file(run_cli, tmp_path, text, needle):
    f = tmp_path / "my.yaml"
    f.write_text(text)
    code, _, err = run_cli("--catalog", str(f), "catalog", "models")
    assert code == 1 and needle in err and err.count("\n") == 1, err


def test_user_catalog_adds_a_model(run_cli, tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text("models:\n  - {id: tiny-llama, name: Tiny, family: llama, layers: 2, d_model: 64, vocab: 100,"
                 " heads: 4, kv_heads: 2, head_dim: 16, d_ff: 128, max_context: 512, source: mine, date: 2026-01-01}\n")
    code, out, err = run_cli("--catalog", str(f), "step", "-m", "tiny-llama", "-a", "h100-sxm", "--json")
    assert code == 0, err
    assert json.loads(out)["kv_bytes_per_token"] == 2 * 2 * 2 * 16 * 2


def test_catalog_efficiency_factors(run_cli):
    from roofline.efficiency import families

    code, out, err = run_cli("catalog", "efficiency", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert set(d) == set(families()) - {"generic"} == {"nvidia", "amd", "google"}
    for rows in d.values():
        assert all(r["low"] <= r["value"] <= r["high"] and r["source"] for r in rows)
    code, _, err = run_cli("catalog", "efficiency", "--family", "ibm")
    assert code == 1 and "unknown efficiency family 'ibm'" in err


def test_catalog_listings(run_cli):
    for kind in ("accelerators", "systems", "models"):
        code, out, err = run_cli("catalog", kind, "--json")
        assert code == 0, err
        assert len(json.loads(out)) >= 9


def test_sweep_json_csv_and_plot(run_cli, tmp_path):
    code, out, err = run_cli("sweep", "-m", "llama-3-8b", "-a", "h100-sxm", "--batch", "1,8,64", "--context",
                             "0,4096", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert len(rows) == 6 and {"batch", "context", "step_s", "bound"} <= set(rows[0])
    csv, png = tmp_path / "s.csv", tmp_path / "s.png"
    code, out, err = run_cli("sweep", "-m", "llama-3-8b", "-a", "h100-sxm", "--csv", str(csv), "--plot", str(png))
    assert code == 0, err
    assert csv.read_text().count("\n") == 14 and png.stat().st_size > 10_000


def test_usage_error_exit_2():
    r = subprocess.run([sys.executable, "-m", "roofline.cli", "step", "--bogus"], capture_output=True, text=True)
    assert r.returncode == 2 and "No such option" in r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: ") and "step --help" in r.stderr


def test_help_lists_commands_and_imports_no_plotting():
    """`roofline --help` lists the commands; importing the package and the CLI loads no plotting library
    (matplotlib is imported lazily, by the commands that draw). Speed itself: benchmarks/sweep.py."""
    r = subprocess.run([sys.executable, "-m", "roofline.cli", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "step" in r.stdout and "report" in r.stdout
    probe = "import sys, roofline, roofline.cli; print('matplotlib' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stderr


def test_each_command_registers_from_the_modules_named_for_it():
    """cli.COMMANDS names, for every top-level command, the module(s) that register it (a one-command run
    builds only those): the table equals what the command modules register."""
    import importlib

    import typer

    from roofline import cli

    found: dict[str, set] = {}
    for name in cli.command_modules():
        app = typer.Typer()
        mod = importlib.import_module(f"roofline.cli.{name}")
        if name == "kernels_catalog":  # adds a subcommand to the `catalog` group
            found.setdefault("catalog", set()).add(name)
            continue
        mod.register(app)
        for cmd in [c.name or c.callback.__name__ for c in app.registered_commands] + [g.name for g in app.registered_groups]:
            found.setdefault(cmd, set()).add(name)
    assert {k: set(v) for k, v in cli.COMMANDS.items()} == found
