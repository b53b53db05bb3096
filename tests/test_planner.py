"""Planner: Pareto frontier, feasibility (memory, targets, validity), vectorised = per-candidate loop."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import layout_step as parallel_step
from roofline.catalog import get_catalog
from roofline.planner import Targets, Workload, pareto_mask, plan

CAT = get_catalog()
LLAMA, DSV3 = CAT.model("llama-3-70b"), CAT.model("deepseek-v3")
H100, NVL72 = CAT.system("dgx-h100"), CAT.system("gb200-nvl72")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 100), st.floats(0, 100)), min_size=1, max_size=40))
def test_pareto_mask_matches_brute_force(points):
    x, y = np.array(points).T
    got = pareto_mask(x, y)
    for i in range(len(x)):
        dominated = np.any((x >= x[i]) & (y >= y[i]) & ((x > x[i]) | (y > y[i])))
        dup_before = np.any((x[:i] == x[i]) & (y[:i] == y[i]))
        assert got[i] == (not dominated and not dup_before)


def test_llama_on_one_dgx_h100():
    p = plan(LLAMA, H100, [1], Workload(1024, 1024))
    rows = p.rows()
    assert rows and all(r["pareto"] for r in rows)
    assert {r["weights_dtype"] for r in rows} <= {"bf16", "fp8"}  # H100 has no native fp4
    best = p.best()
    assert best["memory_per_gpu_bytes"] <= 0.9 * 80e9 and best["tp"] * best["pp"] * best["replicas"] <= 8
    # the frontier is monotone: faster per user ⇒ fewer tokens/s per GPU
    per_user = [r["tokens_per_s_per_user"] for r in rows]
    per_gpu = [r["tokens_per_s_per_gpu"] for r in rows]
    assert per_user == sorted(per_user, reverse=True) and per_gpu == sorted(per_gpu)


def test_frontier_points_match_the_engine_step():
    """Cross-check: each frontier point's TPOT equals a direct engine.step call with its layout (the
    planner's array path and the scalar path agree)."""
    p = plan(LLAMA, H100, [1], Workload(1024, 512))
    for r in p.rows()[::5]:
        d = parallel_step(LLAMA, H100, r["batch"], 1024 + 256, tp=r["tp"], ep=r["ep"], pp=r["pp"], dp=r["dp"],
                          weights_dtype=r["weights_dtype"], kv_dtype=r["kv_dtype"], attention=r["attention"],
                          weight_stationary=r["weight_stationary"])
        assert r["tpot_s"] == pytest.approx(float(d.step_s), rel=1e-12)


def test_realistic_frontier_matches_the_engine_and_is_slower():
    """--realistic: each frontier point's TPOT and TTFT equal engine.step with the family's factors under
    its layout (the array path and the scalar path agree); the best tokens/s per GPU is below the pure
    roofline's; the explicit efficiency arguments are refused alongside it."""
    from roofline.efficiency import Efficiency
    from roofline.errors import InputError

    p = plan(LLAMA, H100, [1], Workload(1024, 512), realistic=True, overlap_search=False)  # overlap: test_pope_layouts
    rows = p.rows()
    assert rows
    for r in rows[::4]:
        kw = dict(tp=r["tp"], ep=r["ep"], pp=r["pp"], dp=r["dp"], weights_dtype=r["weights_dtype"],
                  kv_dtype=r["kv_dtype"], attention=r["attention"], weight_stationary=r["weight_stationary"])
        d = parallel_step(LLAMA, H100, r["batch"], 1024 + 256, realistic=True, **kw)
        # the prefill runs the row's context parallelism: dp/cp groups of cp GPUs, one prompt per micro-batch
        pre = dict(kw, dp=r["dp"] // r["cp"], cp=r["cp"])
        f = parallel_step(LLAMA, H100, r["dp"] // r["cp"] * r["pp"], 0, phase="prefill", prompt=1024, realistic=True,
                          **pre)
        assert r["tpot_s"] == pytest.approx(float(d.step_s), rel=1e-12)
        assert r["ttft_s"] == pytest.approx(float(f.step_s), rel=1e-12)
    assert p.best()["tokens_per_s_per_gpu"] < plan(LLAMA, H100, [1], Workload(1024, 512)).best()["tokens_per_s_per_gpu"]
    with pytest.raises(InputError, match="realistic planning"):
        plan(LLAMA, H100, [1], realistic=True, efficiency=Efficiency(0.5, 0.8))


def test_targets_are_met_and_explained():
    t = Targets(tpot_s=0.010, ttft_s=0.5)
    p = plan(LLAMA, H100, [1], Workload(1024, 1024), t)
    assert all(r["tpot_s"] <= 0.010 and r["ttft_s"] <= 0.5 for r in p.rows())
    assert any(line.startswith("target:") and "TPOT" in line for line in p.rejected)
    assert any(line.startswith("memory:") for line in p.rejected)
    assert any(line.startswith("validity:") for line in p.rejected)


def test_deepseek_on_one_to_four_racks_prefers_one_rack_ep():
    p = plan(DSV3, NVL72, [1, 2, 3, 4], Workload(1024, 1024))
    best = p.best()
    assert best["ep"] > 1 and best["gpus"] <= 72  # EP inside one rack (§2.3, §3.5: little or no PP)
    assert p.counts["feasible"] > 0 and p.counts["pareto"] == len(p.rows())


def test_more_memory_per_gpu_never_shrinks_the_feasible_set():
    small = plan(LLAMA, H100, [1], Workload(4096, 1024), usable_memory=0.5)
    big = plan(LLAMA, H100, [1], Workload(4096, 1024), usable_memory=0.9)
    assert big.counts["feasible"] >= small.counts["feasible"]
    assert big.best()["tokens_per_s_per_gpu"] >= small.best()["tokens_per_s_per_gpu"]


def test_idle_gpus_are_paid_for():
    """EP 64 on a 72-GPU rack: per-GPU throughput counts all 72 (8 idle), so it is 64/72 of the replica's."""
    p = plan(DSV3, NVL72, [1], Workload(1024, 1024))
    c = p.columns
    i = np.flatnonzero((c["ep"] == 64) & (c["gpus"] == 64))[0]
    assert c["replicas"][i] == 1
    d = parallel_step(DSV3, NVL72, c["batch"][i], 1024 + 512, tp=c["tp"][i], ep=64, dp=c["dp"][i],
                      weights_dtype=c["weights_dtype"][i], kv_dtype=c["kv_dtype"][i])
    prefill = parallel_step(DSV3, NVL72, c["dp"][i], 0, tp=c["tp"][i], ep=64, dp=c["dp"][i], phase="prefill",
                            prompt=1024, weights_dtype=c["weights_dtype"][i], kv_dtype=c["kv_dtype"][i])
    per_req = 1024 * d.step_s / c["batch"][i] + prefill.step_s / c["dp"][i]
    assert c["tokens_per_s_per_gpu"][i] == pytest.approx(1024 / per_req / 72, rel=1e-9)


def test_moe_imbalance_below_one_is_refused():
    from roofline.errors import InputError

    with pytest.raises(InputError, match="MoE load imbalance must be >= 1"):
        plan(LLAMA, H100, [1], moe_imbalance=0.5)


def test_bad_domains():
    from roofline.errors import InputError

    with pytest.raises(InputError, match="domains must be whole numbers >= 1"):
        plan(LLAMA, H100, [0])


def test_plots_write_files(tmp_path):
    from roofline.plots import parallel as pl

    p = plan(LLAMA, H100, [1], Workload(1024, 256))
    for path in (pl.pareto_frontier(p, tmp_path / "a.png"), pl.rack_map(256, 72, 2, tmp_path / "b.png"),
                 pl.pipeline_timeline(4, tmp_path / "c.png"), pl.memory_vs_stages(tmp_path / "d.png")):
        assert path.exists() and path.stat().st_size > 1000


def test_plan_with_speculation_matches_the_engine_step():
    """plan(speculation=...): every frontier point's TPOT is the engine's speculative step over its tokens per
    step, (verify pass of γ + 1 tokens + γ·f decode steps)/E, for its layout — redundant experts included."""
    from roofline.engine import step
    from roofline.layout import Layout
    from roofline.speculative import Speculation

    sp = Speculation(1, 0.85, 0.05)
    p = plan(DSV3, NVL72, [1], Workload(1024, 1024), speculation=sp)
    rows = p.rows()
    assert any(r["redundant_experts"] == 32 and r["ep"] == 72 for r in rows)
    for r in rows[::6]:
        lay = Layout(tp=r["tp"], ep=r["ep"], pp=r["pp"], dp=r["dp"], redundant_experts=r["redundant_experts"],
                         expert_tp=r["moe_tp"])
        d = step(DSV3, NVL72, r["batch"], 1024 + 512, layout=lay, weights_dtype=r["weights_dtype"],
                 kv_dtype=r["kv_dtype"], speculation=sp, details=False, check=False)
        assert r["tpot_s"] == pytest.approx(float(d.step_s) / sp.tokens_per_step, rel=1e-12)


def test_plan_with_experts_in_their_own_format_matches_the_engine_step():
    """--expert-weights-dtype fp4 in plan: each frontier row (every searched weight format, the experts fp4) has
    the TPOT and weights per GPU of engine.step with the row's layout and that split; rows report the format."""
    from roofline.engine import step
    from roofline.layout import Layout

    p = plan(DSV3, NVL72, [1], Workload(1024, 1024), realistic=True, expert_weights_dtype="fp4")
    rows = p.rows(pareto_only=False)
    assert {r["expert_weights_dtype"] for r in rows} == {"fp4"} and "bf16" in {r["weights_dtype"] for r in rows}
    picked = [r for r in rows if r["weights_dtype"] == "bf16"][::200][:4] + p.rows()[:2]
    for r in picked:
        lay = Layout(tp=r["tp"], ep=r["ep"], pp=r["pp"], dp=r["dp"], expert_tp=r["moe_tp"],
                     redundant_experts=r["redundant_experts"], attention=r["attention"],
                     weight_stationary=r["weight_stationary"])
        d = step(DSV3, NVL72, r["batch"], 1024 + 512, layout=lay, weights_dtype=r["weights_dtype"],
                 expert_weights_dtype="fp4", kv_dtype=r["kv_dtype"], realistic=True, check=False,
                 check_context=False)
        assert r["tpot_s"] == pytest.approx(float(d.step_s), rel=1e-9)
    plain = plan(DSV3, NVL72, [1], Workload(1024, 1024), realistic=True).rows(pareto_only=False)
    assert all(r["expert_weights_dtype"] == r["weights_dtype"] for r in plain)  # without the flag: one format
