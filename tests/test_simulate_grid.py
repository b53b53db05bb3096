"""Scenario grids and executors: parsing, per-scenario seeds, identical rows in process, on a
LocalCluster (--workers 2) and on an explicitly started scheduler; failures name the scenario."""

import json

import numpy as np
import pytest

from roofline.catalog import get_catalog
from roofline.errors import InputError, RooflineError
from roofline.executors import run_tasks
from roofline.simulate.grid import GridContext, Scenario, parse_grid, parse_layout, run_grid, scenario_seeds

GRID = "rate=4,12;layout=pool,TP4 DP2"
ARGS = ("simulate", "-m", "llama-3-70b", "-s", "dgx-h100", "-n", "150", "--grid", GRID, "--json")


@pytest.fixture(scope="module")
def ctx():
    cat = get_catalog()
    return GridContext(cat.model("llama-3-70b"), cat.system("dgx-h100"))


def test_inline_grid_is_the_cross_product_in_axis_order():
    sc = parse_grid("rate=5,10;policy=continuous,chunked;layout=pool,TP4 DP2", {"requests": 300})
    assert len(sc) == 8
    assert [s.label for s in sc[:3]] == ["rate=5 policy=continuous layout=pool",
                                         "rate=5 policy=continuous layout=TP4 DP2",
                                         "rate=5 policy=chunked layout=pool"]
    assert {s.requests for s in sc} == {300} and sc[-1].rate == 10.0 and sc[-1].layout == "TP4 DP2"


def test_yaml_grid_base_axes_and_extra_scenarios(tmp_path):
    p = tmp_path / "g.yaml"
    p.write_text("base: {requests: 200, prompt_tokens: 512}\ngrid: {rate: [2, 4], max_seqs: [32, 64]}\n"
                 "scenarios:\n  - {rate: 30, policy: static}\n")
    sc = parse_grid(str(p), {"requests": 999, "output_tokens": 64})
    assert len(sc) == 5
    assert all(s.requests == 200 and s.prompt_tokens == 512 and s.output_tokens == 64 for s in sc)
    assert sc[-1].policy == "static" and sc[-1].rate == 30.0 and sc[-1].label == "rate=30 policy=static"


@pytest.mark.parametrize("text,expected", [("pool", None), ("TP4 DP2", (4, 1, 1, 2, None, 0)),
                                           ("tp8-ep8", (8, 8, 1, 1, None, 0)), ("PP2xTP4", (4, 1, 2, 1, None, 0)),
                                           ("TP4 EP72 DP18 MOETP4 R32", (4, 72, 1, 18, 4, 32)),
                                           ("tp2 moe-tp1 ep4 dp2", (2, 4, 1, 2, 1, 0))])
def test_layout_strings(text, expected):
    from roofline.simulate.grid import layout_label

    lay = parse_layout(text)
    got = None if lay is None else (lay.tp, lay.ep, lay.pp, lay.dp, lay.expert_tp, lay.redundant_experts)
    assert got == expected
    if lay is not None:  # the label reads back as the same layout
        assert parse_layout(layout_label(lay)) == lay


@pytest.mark.parametrize("spec,needle", [
    ("rate=5;colour=red", "unknown scenario key 'colour'"),
    ("rate=5,x", "rate = 'x' is not a float"),
    ("layout=TP4 TP2", "layout 'TP4 TP2' is not understood"),
    ("policy=fifo", "unknown policy 'fifo'"),
    ("rate=5;rate=6", "grid names 'rate' twice"),
    ("requests=2.5", "requests = '2.5' is not an int"),
    ("missing.yaml", "grid file 'missing.yaml' does not exist"),
])
def test_bad_grids_are_one_line_errors(run_cli, spec, needle):
    code, out, err = run_cli("simulate", "-m", "llama-3-70b", "-s", "dgx-h100", "--grid", spec)
    assert code == 1 and needle in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1


def test_seeds_depend_on_the_workload_only():
    """Same requests for every policy and layout at one rate (common random numbers); another rate or
    run seed gives other requests."""
    a = scenario_seeds(7, Scenario(rate=5, policy="continuous", layout="pool"))[0].generate_state(4)
    b = scenario_seeds(7, Scenario(rate=5, policy="chunked", layout="TP4 DP2"))[0].generate_state(4)
    c = scenario_seeds(7, Scenario(rate=6))[0].generate_state(4)
    d = scenario_seeds(8, Scenario(rate=5))[0].generate_state(4)
    assert np.array_equal(a, b) and not np.array_equal(a, c) and not np.array_equal(a, d)


def test_a_row_does_not_depend_on_the_rest_of_the_grid(ctx):
    sc = parse_grid("rate=3,9;policy=continuous,chunked", {"requests": 150})
    full = run_grid(ctx, sc)
    alone = run_grid(ctx, [sc[3]])
    assert full[3] == alone[0]
    # continuous and chunked at one rate saw the same requests: the same number of output tokens
    assert full[0]["throughput_tokens_per_s"] * full[0]["makespan_s"] == pytest.approx(
        full[1]["throughput_tokens_per_s"] * full[1]["makespan_s"], rel=1e-12)


def test_replicas_split_the_traffic(ctx):
    one, two = run_grid(ctx, parse_grid("replicas=1,2", {"rate": 10, "requests": 400}))
    assert two["gpus"] == 2 * one["gpus"]
    # half the traffic per replica: less queueing, goodput summed over both replicas
    assert two["ttft_p99_s"] <= one["ttft_p99_s"]
    assert two["requests"] == 200 and two["goodput_fraction"] >= one["goodput_fraction"]
    # goodput counts over the makespan, which includes draining the last long outputs: below the rate
    assert 0.6 * 10 < two["goodput_requests_per_s"] < 10


def test_same_rows_in_process_on_two_workers_and_on_a_started_scheduler(run_cli):
    """The done-when check: --workers 1, --workers 2 (LocalCluster) and --scheduler ADDRESS of a
    cluster started here (127.0.0.1) give identical JSON."""
    from distributed import LocalCluster

    code, one, err = run_cli(*ARGS, "--workers", "1")
    assert code == 0, err
    code, two, err = run_cli(*ARGS, "--workers", "2")
    assert code == 0, err
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None) as cluster:
        code, sched, err = run_cli(*ARGS, "--scheduler", cluster.scheduler_address)
    assert code == 0, err
    assert one == two == sched
    rows = json.loads(one)["scenarios"]
    assert [r["scenario"] for r in rows] == ["rate=4 layout=pool", "rate=4 layout=TP4 DP2", "rate=12 layout=pool",
                                            "rate=12 layout=TP4 DP2"]
    assert all(r["requests"] == 150 for r in rows)


def _boom(x):
    if x == 2:
        raise ZeroDivisionError("worker fell over")
    if x == 3:
        raise InputError("bad value 3")
    return x * 10


def test_failures_name_the_scenario_in_process_and_on_dask():
    from distributed import LocalCluster

    assert run_tasks(_boom, [(0,), (1,)], ["a", "b"]) == [0, 10]
    with pytest.raises(InputError, match="scenario 'third': bad value 3"):
        run_tasks(_boom, [(1,), (3,)], ["first", "third"])
    ticks = []
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None) as cluster:
        addr = cluster.scheduler_address
        assert run_tasks(_boom, [(0,), (1,), (4,)], list("abc"), scheduler=addr, progress=ticks.append) == [0, 10, 40]
        with pytest.raises(RooflineError, match=r"scenario 'second' failed after 2 attempts: ZeroDivisionError"):
            run_tasks(_boom, [(1,), (2,)], ["first", "second"], scheduler=addr, retries=1)
        with pytest.raises(InputError, match="scenario 'third': bad value 3"):
            run_tasks(_boom, [(3,)], ["third"], scheduler=addr)
    assert ticks == [1, 1, 1]


def test_workers_and_scheduler_options_are_checked(run_cli):
    code, out, err = run_cli("simulate", "-m", "llama-3-70b", "-s", "dgx-h100", "--workers", "2")
    assert code == 1 and "--workers and --scheduler run the scenarios of a --grid" in err
    code, out, err = run_cli(*ARGS, "--workers", "0")
    assert code == 1 and "--workers must be a whole number >= 1" in err
    code, out, err = run_cli(*ARGS, "--scheduler", "localhost:8786")
    assert code == 1 and "is not an address; expected tcp://HOST:PORT" in err


def test_grid_plot_and_json_rows(run_cli, tmp_path):
    """rate x layout on one DGX H100, through --json: the rows are the cross product in axis order; both
    layouts use the system's 8 GPUs (pool = the 8 as one group; TP4 DP2 = 4 x 2); each rate's requests are the
    same for both layouts (the seed depends on the workload only), so their output tokens are equal; goodput
    per GPU is goodput / GPUs; and TP4 DP2 holds two copies of the weights where the pool holds one, so its
    KV capacity is lower by exactly one copy: W_total · 2 B (bf16) / KV bytes per token."""
    from roofline import get_model
    from roofline.model import kv_bytes_per_token, params_total

    code, out, err = run_cli("simulate", "-m", "llama-3-70b", "-s", "dgx-h100", "-n", "100", "--grid",
                             "rate=2,6;layout=pool,TP4 DP2", "--plot", str(tmp_path), "--json")
    assert code == 0, err
    assert (tmp_path / "goodput_vs_rate.png").stat().st_size > 1000
    rows = json.loads(out)["scenarios"]
    assert [r["scenario"] for r in rows] == ["rate=2 layout=pool", "rate=2 layout=TP4 DP2", "rate=6 layout=pool",
                                             "rate=6 layout=TP4 DP2"]
    assert [(r["rate"], r["layout"]) for r in rows] == [(2, "pool"), (2, "TP4 DP2"), (6, "pool"), (6, "TP4 DP2")]
    assert all(r["gpus"] == 8 == 4 * 2 and r["requests"] == 100 for r in rows)
    for r in rows:
        assert r["goodput_per_gpu"] == pytest.approx(r["goodput_requests_per_s"] / r["gpus"], rel=1e-12)
    tokens = [r["throughput_tokens_per_s"] * r["makespan_s"] for r in rows]
    assert tokens[0] == pytest.approx(tokens[1], rel=1e-12) and tokens[2] == pytest.approx(tokens[3], rel=1e-12)
    m = get_model("llama-3-70b")
    one_copy_tokens = params_total(m) * 2 / kv_bytes_per_token(m, "bf16")
    assert kv_bytes_per_token(m, "bf16") == 80 * 2 * 8 * 128 * 2  # layers x (K, V) x KV heads x head dim x 2 B
    for pool, tp4dp2 in ((rows[0], rows[1]), (rows[2], rows[3])):
        assert pool["kv_capacity_tokens"] - tp4dp2["kv_capacity_tokens"] == pytest.approx(one_copy_tokens, rel=1e-6)


def test_grid_table_renders(run_cli):
    code, out, err = run_cli("simulate", "-m", "llama-3-8b", "-a", "h100-sxm", "-n", "20", "--grid", "rate=2")
    assert code == 0, err
    assert "scenario" in out and "goodput" in out


def test_import_roofline_and_a_single_simulation_do_not_import_dask():
    import subprocess
    import sys

    code = ("import sys, roofline, roofline.simulate, roofline.simulate.grid, roofline.executors;"
            "from roofline.cli import main;"
            "main(['simulate', '-m', 'llama-3-8b', '-a', 'h100-sxm', '-n', '50', '--json']);"
            "print('DASK' if any(m.split('.')[0] in ('dask', 'distributed') for m in sys.modules) else 'CLEAN')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().endswith("CLEAN"), out.stderr[-500:]


def test_realistic_grid_is_slower_than_the_pure_roofline(run_cli):
    """--realistic takes pass times from the family's cited factors: every scenario's TPOT p50 is longer."""
    args = ("simulate", "-m", "llama-3-70b", "-s", "dgx-h100", "-n", "150", "--grid", "rate=4;layout=pool,TP4 DP2",
            "--json")
    code, pure, err = run_cli(*args)
    assert code == 0, err
    code, real, err = run_cli(*args, "--realistic")
    assert code == 0, err
    for p, r in zip(json.loads(pure)["scenarios"], json.loads(real)["scenarios"]):
        assert r["tpot_p50_s"] > 1.2 * p["tpot_p50_s"], (p["scenario"], p["tpot_p50_s"], r["tpot_p50_s"])
    code, out, err = run_cli(*args, "--realistic", "--compute-efficiency", "0.5")
    assert code == 1 and "--realistic uses the efficiency model's own factors" in err


def _die_once(marker):
    """Kill the worker process the first time (as an out-of-memory kill would), succeed on the retry."""
    import os
    from pathlib import Path

    if not Path(marker).exists():
        Path(marker).write_text("died")
        os._exit(1)
    return 42


def test_a_task_whose_worker_dies_is_run_again(tmp_path):
    """The scheduler re-runs a task whose worker process died on the worker the nanny restarts."""
    from distributed import Client

    from roofline.executors import local_cluster

    with local_cluster(1) as cluster, Client(cluster):
        out = run_tasks(_die_once, [(str(tmp_path / "m"),)], ["dies once"], scheduler=cluster.scheduler_address)
    assert out == [42] and (tmp_path / "m").read_text() == "died"


def test_scenario_longer_than_the_context_is_refused(run_cli):
    code, out, err = run_cli("simulate", "-m", "llama-3-70b", "-s", "dgx-h100", "-n", "50", "--grid",
                             "prompt_tokens=1000,9000")
    assert code == 1 and "scenario 'prompt_tokens=9000': prompt_tokens + output_tokens = 9,256 exceeds" in err
