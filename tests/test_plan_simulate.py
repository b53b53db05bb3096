"""`plan --simulate K`: the K best analytic layouts re-ranked by simulated goodput; a layout that misses
the TPOT target in simulation is demoted, with the reason; the CLI prints both rankings and --json."""

import json

import pytest

from roofline.catalog import get_catalog
from roofline.plan_simulate import candidates, simulate_plan
from roofline.simulate.policies import Targets


def _row(tp, batch, tok_gpu, tpot_s, dp=1):
    return {"tp": tp, "ep": 1, "pp": 1, "dp": dp, "batch": batch, "weights_dtype": "bf16", "kv_dtype": "bf16",
            "replicas": 1, "tokens_per_s_per_gpu": tok_gpu, "usd_per_million_tokens": 1.0, "ttft_s": 0.05,
            "tpot_s": tpot_s}


def test_layout_missing_tpot_in_simulation_is_demoted():
    """Analytically the batch-256 TP8 replica has the most tokens/s per GPU and an 8.5 ms decode pass
    under a 9 ms target; under 30 requests/s its passes carry ~80 sequences plus prompts of 1,024
    tokens, so its simulated TPOT (p50 ~11 ms) exceeds 9 ms and its goodput collapses, while the batch-24 replica (fewer tokens/s
    at full batch) keeps TPOT under target at the cost of queueing, which the 300 s TTFT target allows."""
    cat = get_catalog()
    rows = [_row(8, 256, 5000.0, 0.0085), _row(8, 24, 1500.0, 0.0055)]
    targets = Targets(ttft_s=300.0, tpot_s=0.009)
    out = simulate_plan(cat.model("llama-3-70b"), cat.system("dgx-h100"), rows, 2, targets, rate=30, requests=1200,
                        lengths="fixed", prompt=1024, output=256)
    by_batch = {r["batch"]: r for r in out}
    big, small = by_batch[256], by_batch[24]
    assert (big["analytic_rank"], small["analytic_rank"]) == (1, 2)
    assert big["simulated_tpot_p99_s"] > targets.tpot_s >= small["simulated_tpot_p99_s"]
    assert (big["simulated_rank"], small["simulated_rank"]) == (2, 1)
    assert big["simulated_goodput_per_gpu"] < small["simulated_goodput_per_gpu"]
    assert "TPOT p99" in big["why"] and "analytic #1 -> simulated #2" in big["why"]


def test_candidates_are_the_k_best_analytic_rows():
    rows = [_row(8, b, t, 0.01) for b, t in ((16, 1.0), (32, 3.0), (64, 2.0))]
    assert [r["batch"] for r in candidates(rows, 2)] == [32, 64]
    with pytest.raises(Exception, match="--simulate must be a whole number"):
        candidates(rows, 0)


def test_plan_simulate_cli_json_and_table(run_cli):
    code, out, err = run_cli("plan", "-m", "llama-3-70b", "-s", "dgx-h100", "--simulate", "3", "--rate", "20", "-n",
                             "600", "--json")
    assert code == 0, err
    d = json.loads(out)
    sims = d["simulated"]
    assert len(sims) == 3 and sorted(r["analytic_rank"] for r in sims) == [1, 2, 3]
    assert [r["simulated_rank"] for r in sims] == [1, 2, 3]
    best3 = sorted(d["layouts"], key=lambda r: -r["tokens_per_s_per_gpu"])[:3]
    assert {round(r["tokens_per_s_per_gpu"], 6) for r in best3} == {round(r["tokens_per_s_per_gpu"], 6) for r in sims}
    # the workload fills fewer slots than the plan's batch: the simulated tokens/s per GPU is lower
    assert all(r["simulated_tokens_per_s_per_gpu"] < r["tokens_per_s_per_gpu"] for r in sims)
    code, out, err = run_cli("plan", "-m", "llama-3-70b", "-s", "dgx-h100", "--simulate", "2", "--rate", "20", "-n",
                             "300")
    assert code == 0, err
    assert "analytic" in out and "sim TPOT p50/p99" in out
    code, out, err = run_cli("plan", "-m", "llama-3-70b", "-s", "dgx-h100", "--simulate", "0")
    assert code == 1 and "--simulate must be a whole number of candidates >= 1" in err


def test_plan_rows_reach_the_grid_with_moe_tp_and_redundant_experts():
    """plan --simulate names each row's decode layout for the scenario grid: MoE TP (when not the derived
    default) and redundant experts included, so the simulated deployment is the planned one."""
    from roofline.catalog import get_catalog
    from roofline.plan_simulate import layout_name
    from roofline.simulate.grid import GridContext, Scenario, deployment_for, parse_layout

    rows = [({"tp": 4, "ep": 2, "pp": 1, "dp": 1, "moe_tp": 4, "redundant_experts": 0}, "TP4 EP2 PP1 DP1 MOETP4"),
            ({"tp": 1, "ep": 72, "pp": 1, "dp": 72, "moe_tp": 1, "redundant_experts": 32}, "TP1 EP72 PP1 DP72 R32"),
            ({"tp": 8, "ep": 1, "pp": 1, "dp": 1, "moe_tp": 8, "redundant_experts": 0}, "TP8 EP1 PP1 DP1")]
    for row, name in rows:
        assert layout_name(row) == name
        lay = parse_layout(name)
        assert (lay.tp, lay.ep, lay.dp, lay.moe_tp, lay.redundant_experts) == (
            row["tp"], row["ep"], row["dp"], row["moe_tp"], row["redundant_experts"])
    cat = get_catalog()
    ctx = GridContext(model=cat.model("deepseek-v3"), system=cat.system("gb200-nvl72"), chips=72)
    dep = deployment_for(ctx, Scenario(layout="TP1 EP72 PP1 DP72 R32", weights_dtype="fp8", kv_dtype="fp8"))
    step = getattr(dep.step, "inner", dep.step)  # an engine's overheads wrap the engine's step
    assert dep.gpus == 72 and step.layout.redundant_experts == 32 and step.layout.ep == 72


def test_plan_simulate_carries_the_moe_imbalance(run_cli):
    """plan --simulate K simulates with the plan's --moe-imbalance (it was dropped before): the grid context
    hands it to the engine's step, so a hot-expert skew makes the simulated passes slower."""
    from roofline import model as M
    from roofline.catalog import get_catalog
    from roofline.simulate.grid import GridContext, Scenario, deployment_for

    cat = get_catalog()
    m, s = cat.model("deepseek-v3"), cat.system("gb200-nvl72")
    sc = Scenario(layout="TP1 EP64 PP1 DP64", weights_dtype="fp8", kv_dtype="fp8")
    flat = deployment_for(GridContext(m, s, realistic=True), sc)
    hot = deployment_for(GridContext(m, s, realistic=True, moe_imbalance=M.ExpertSkew.powerlaw(1.0, 256, 8)), sc)
    assert float(hot.step(4096, 4096, 2000.0)) > 1.2 * float(flat.step(4096, 4096, 2000.0))
    code, out, err = run_cli("plan", "-m", "deepseek-v3", "-s", "gb200-nvl72", "--simulate", "1", "--rate", "20",
                             "-n", "200", "--moe-imbalance", "powerlaw:1.0", "--realistic", "--json")
    assert code == 0, err
