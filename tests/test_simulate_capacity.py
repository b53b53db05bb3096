"""Analytic capacity and saturation of a run (simulate/capacity.py; docs/simulator.md "Capacity")."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.catalog import get_catalog
from roofline.simulate import ConstantStep, Deployment, Policy, Simulation, make_workload, roofline_deployment
from roofline.simulate.capacity import GROWTH_LIMIT, capacity, saturation
from roofline.simulate.metrics import summarize
from roofline.simulate.workload import poisson_arrivals


def _run(dep, pol, rate, n, prompt, output, seed=1):
    wl = make_workload(poisson_arrivals(np.random.default_rng(seed), rate, n), prompt, output)
    tr = Simulation(wl, dep, pol).run()
    return tr, summarize(tr)


def test_constant_step_capacity_by_hand():
    """20 ms passes, at most 10 sequences, 101 output tokens: 100 decode passes a request shared by 10
    sequences, and a prompt adds nothing to a constant pass: λ_max = 10 / (100 · 0.02 s) = 5 requests/s."""
    dep, pol = Deployment(ConstantStep(0.02)), Policy("continuous", max_seqs=10)
    cap = capacity(make_workload(np.zeros(3), 50, 101), dep, pol)
    assert cap.requests_per_s == pytest.approx(5.0) and cap.batch == 10 and cap.limit == "max_seqs"
    assert cap.prefill_s_per_request == 0.0
    tr, s = _run(dep, pol, 4.0, 3000, 50, 101)  # ρ = 0.8
    sat = saturation(tr.arrival_s, tr.admit_s, cap)
    assert not sat["saturated"] and sat["load"] == pytest.approx(0.8, rel=0.05)
    tr, s = _run(dep, pol, 6.5, 3000, 50, 101)  # ρ = 1.3: served at capacity, the queue grows at ≈ ρ − 1
    sat = saturation(tr.arrival_s, tr.admit_s, cap)
    assert sat["saturated"] and s.throughput_requests_per_s == pytest.approx(5.0, rel=0.03)
    # a fluid queue past capacity: each second of arrivals adds (λ − μ)/μ seconds of waiting (λ, μ as realised)
    fluid = sat["offered_requests_per_s"] / s.throughput_requests_per_s - 1.0
    assert sat["queue_growth_s_per_s"] == pytest.approx(fluid, abs=0.05) and sat["queue_growth_s_per_s"] > GROWTH_LIMIT


def test_a_burst_is_a_finite_batch_not_a_saturated_queue():
    """Every request at t = 0 (`--request-rate inf`): no offered rate, no load; its latencies are drain times, so
    the run is marked a burst and not past saturation — while the same requests spread at 1.3x capacity are."""
    dep, pol = Deployment(ConstantStep(0.02)), Policy("continuous", max_seqs=10)
    wl = make_workload(np.zeros(40), 50, 101)
    cap = capacity(wl, dep, pol)
    tr = Simulation(wl, dep, pol).run()
    sat = saturation(tr.arrival_s, tr.admit_s, cap)
    assert sat["burst"] and not sat["saturated"] and sat["load"] is None and sat["offered_requests_per_s"] is None
    assert sat["latency_sensitivity"] is None
    # four waves of 10: the last wave is admitted after three waves of 101 tokens (100 decode passes + 1 prefill)
    assert float(np.max(tr.admit_s)) == pytest.approx(3 * 101 * 0.02, rel=0.02)
    tr, _ = _run(dep, pol, 6.5, 3000, 50, 101)
    assert not saturation(tr.arrival_s, tr.admit_s, cap)["burst"]
    # one request is a burst of one: no rate, no load, not past saturation (it was called saturated until set h)
    one = Simulation(make_workload(np.zeros(1), 50, 101), dep, pol).run()
    sat = saturation(one.arrival_s, one.admit_s, cap)
    assert sat["burst"] and not sat["saturated"] and sat["offered_requests_per_s"] is None and sat["load"] is None


def test_kv_limits_the_batch_by_hand():
    """KV for 5,000 tokens, prompts 400 + 201 outputs: a sequence holds 400 + 100 on average, B = 10 < max_seqs."""
    dep = Deployment(ConstantStep(0.01), kv_capacity_tokens=5000)
    cap = capacity(make_workload(np.zeros(3), 400, 201), dep, Policy("continuous", max_seqs=64))
    assert cap.limit == "kv" and cap.batch == pytest.approx(10.0)
    assert cap.requests_per_s == pytest.approx(10.0 / (200 * 0.01))
    reserved = capacity(make_workload(np.zeros(3), 400, 201), dep, Policy("continuous", max_seqs=64, preemption=False))
    assert reserved.batch == pytest.approx(5000 / 600)


def test_engine_capacity_matches_the_simulated_saturated_throughput():
    """llama-3-8b on one H100 (realistic): the simulated throughput past capacity is within 5% of λ_max (the
    mean-value analysis is an upper bound: batches are not always full)."""
    cat = get_catalog()
    dep = roofline_deployment(cat.model("llama-3-8b"), cat.system("dgx-h100"), chips=1, realistic=True)
    for kind in ("continuous", "chunked"):
        pol = Policy(kind, max_seqs=256, max_batched_tokens=2048)
        cap = capacity(make_workload(np.zeros(2), 1000, 200), dep, pol)
        tr, s = _run(dep, pol, 1.3 * cap.requests_per_s, 3000, 1000, 200)
        assert s.throughput_requests_per_s == pytest.approx(cap.requests_per_s, rel=0.05)
        assert s.throughput_requests_per_s <= cap.requests_per_s * 1.005
        assert saturation(tr.arrival_s, tr.admit_s, cap)["saturated"]
        tr, s = _run(dep, pol, 0.8 * cap.requests_per_s, 3000, 1000, 200)
        assert not saturation(tr.arrival_s, tr.admit_s, cap)["saturated"]


def test_prefill_only_pool_serves_whole_passes_of_prompts():
    dep = Deployment(ConstantStep(0.05))
    cap = capacity(make_workload(np.zeros(2), 1000, 1), dep, Policy("continuous", max_batched_tokens=4096))
    assert cap.batch == 4 and cap.requests_per_s == pytest.approx(4 / 0.05)
    assert capacity(make_workload(np.zeros(2), 10, 5), dep, Policy("static")) is None


def test_cli_flags_a_run_past_saturation(run_cli):
    base = ["simulate", "-m", "llama-3-8b", "-a", "h100-sxm", "-g", "1", "--realistic", "--lengths", "fixed",
            "--prompt-tokens", "1000", "--output-tokens", "200", "-n", "1500", "--json"]
    low = json.loads(run_cli(*base, "--rate", "5")[1])
    high = json.loads(run_cli(*base, "--rate", "40")[1])
    assert low["saturated"] is False and high["saturated"] is True
    assert low["capacity_requests_per_s"] == pytest.approx(high["capacity_requests_per_s"])
    assert high["load"] > 1 > low["load"]
    assert "PAST SATURATION" in run_cli(*base[:-1], "--rate", "40")[1]


def test_grid_rows_carry_saturation(run_cli):
    code, out, err = run_cli("simulate", "-m", "llama-3-8b", "-a", "h100-sxm", "-g", "1", "--realistic", "--grid",
                             "rate=5,40;replicas=1,2", "-n", "800", "--lengths", "fixed", "--json")
    assert code == 0, err
    rows = {(r["rate"], r["replicas"]): r for r in json.loads(out)["scenarios"]}
    assert not rows[(5.0, 1)]["saturated"] and rows[(40.0, 1)]["saturated"]
    # two replicas: each sees half the rate; capacity and offered rate are reported for both together
    assert rows[(40.0, 2)]["capacity_requests_per_s"] == pytest.approx(2 * rows[(40.0, 1)]["capacity_requests_per_s"])
    assert rows[(40.0, 2)]["load"] == pytest.approx(rows[(40.0, 2)]["offered_requests_per_s"]
                                                    / rows[(40.0, 2)]["capacity_requests_per_s"])


def test_capacity_counts_prefix_hits_and_length_bias_by_hand():
    """Constant 10 ms passes (a prompt adds nothing), KV for 10,000 tokens, max_seqs 1,000. Requests of 1,000
    prompt tokens, 400 of them found in the prefix cache: private KV 1,000 − 400 + 100/2 = 650 a sequence on
    101 outputs, B = 10,000/650. Two output lengths, 11 and 201 (10 and 200 decode passes): the running batch
    weights them by their passes, c = (10·(1,000 + 5) + 200·(1,000 + 100))/210 tokens a sequence."""
    dep = Deployment(ConstantStep(0.01), kv_capacity_tokens=10_000)
    pol = Policy("continuous", max_seqs=1000)
    cap = capacity(make_workload(np.zeros(2), 1000, 101), dep, pol, hit_tokens=400)
    assert cap.limit == "kv" and cap.batch == pytest.approx(10_000 / 650)
    mixed = make_workload(np.zeros(2), 1000, [11, 201])
    cap = capacity(mixed, dep, pol)
    c = (10 * 1005 + 200 * 1100) / 210
    assert cap.batch == pytest.approx(10_000 / c)
    assert cap.requests_per_s == pytest.approx(1 / (105 * 0.01 / (10_000 / c)))  # D = mean(10, 200) = 105 passes


def test_latency_sensitivity_is_the_elasticity_of_the_step_by_hand():
    """Continuous batching on a pass of t = a + b·tokens: T = a/(1 − ρ), ρ = b·λ·(P + D), so TPOT rises
    with b by the elasticity ρ/(1 − ρ) (capacity.py docstring). With a = 10 ms, b = 0.1 ms/token, P = D = 100
    and λ = 30/s, ρ = 0.6: T ≈ 25 ms and a 5% larger b moves TPOT by ≈ 1.5 × 5%. The simulated run agrees
    (tolerances: a run of Poisson arrivals, with prefills riding in some passes only) and `latency_sensitivity`
    reports ρ/(1 − ρ) from the run's load."""

    def linear(a, b):
        return lambda batch, tokens, context: a + b * np.asarray(tokens, dtype=float) + 0.0 * np.asarray(batch)

    pol = Policy("continuous", max_seqs=1024, max_batched_tokens=8192)
    runs = {}
    for b in (1e-4, 1.05e-4):
        dep = Deployment(linear(0.01, b))
        tr, s = _run(dep, pol, 30.0, 6000, 100, 101, seed=3)
        runs[b] = (tr, s, dep)
    tr, s, dep = runs[1e-4]
    assert s.tpot_p50_s == pytest.approx(0.01 / (1 - 0.6), rel=0.1)
    elasticity = np.log(runs[1.05e-4][1].tpot_p50_s / s.tpot_p50_s) / np.log(1.05)
    assert elasticity == pytest.approx(0.6 / 0.4, rel=0.3)
    sat = saturation(tr.arrival_s, tr.admit_s, capacity(make_workload(np.zeros(3), 100, 101), dep, pol))
    assert sat["latency_sensitivity"] == pytest.approx(sat["load"] / (1 - sat["load"]))
    # the capacity's load also counts each full-batch pass's fixed part (ρ 0.64 here, not 0.60): 1.76 vs 1.5
    assert sat["latency_sensitivity"] == pytest.approx(1.5, rel=0.2)
    past = saturation(tr.arrival_s, tr.admit_s, replace_capacity(sat, 20.0))
    assert past["saturated"] and past["latency_sensitivity"] is None


def test_a_run_that_fits_in_one_batch_is_transient_not_saturated(monkeypatch):
    """λ_max = 5 req/s with B = 10 sequences (20 ms passes, 100 decode passes a request): 8 requests at 6.5 req/s
    (ρ = 1.3) all fit in one batch, each admitted on arrival, so the run is transient and not past saturation;
    11 requests (one more than B) at the same rate keep the ρ rule; a transient run whose waits grow by 0.5 s per s of
    arrivals (synthetic) is past saturation all the same; with TRANSIENT_RUNS off the 8 requests are saturated, as
    every serving set up to cp was registered."""
    from roofline.simulate import capacity as C

    dep, pol = Deployment(ConstantStep(0.02)), Policy("continuous", max_seqs=10)
    cap = capacity(make_workload(np.zeros(3), 50, 101), dep, pol)
    assert cap.requests_per_s == pytest.approx(5.0) and cap.batch == 10
    arrivals = np.arange(8) / 6.5
    tr = Simulation(make_workload(arrivals, 50, 101), dep, pol).run()
    assert np.allclose(tr.admit_s, tr.arrival_s, atol=0.02)  # nobody waits for a slot
    sat = saturation(tr.arrival_s, tr.admit_s, cap)
    assert sat["load"] == pytest.approx(1.3) and sat["transient"] and not sat["saturated"] and not sat["burst"]
    eleven = Simulation(make_workload(np.arange(11) / 6.5, 50, 101), dep, pol).run()
    sat11 = saturation(eleven.arrival_s, eleven.admit_s, cap)
    assert not sat11["transient"] and sat11["saturated"]
    waits = 0.5 * arrivals  # a prompt backlog: each second of arrivals adds half a second of waiting
    grown = saturation(arrivals, arrivals + waits, cap)
    assert grown["transient"] and grown["queue_growth_s_per_s"] == pytest.approx(0.5) and grown["saturated"]
    monkeypatch.setattr(C, "TRANSIENT_RUNS", False)
    old = saturation(tr.arrival_s, tr.admit_s, cap)
    assert not old["transient"] and old["saturated"]


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 60), gaps=st.lists(st.floats(0.001, 2.0), min_size=60, max_size=60),
       wait=st.floats(0.0, 0.5), rate=st.floats(0.01, 100.0), spare=st.integers(0, 40))
def test_the_verdict_of_a_run_that_never_queues(n, gaps, wait, rate, spare):
    """Any open-loop run whose requests each wait the same time (no queue growth): with n requests and a capacity batch
    B >= n it is transient and never past saturation, whatever its load; with B < n it is past saturation exactly when
    its load reaches 1 (the rho rule); the load is the offered rate over the capacity either way."""
    from roofline.simulate.capacity import Capacity

    arrival = np.cumsum(np.asarray(gaps[:n]))
    admit = arrival + wait
    offered = (n - 1) / float(arrival[-1] - arrival[0])
    for batch, fits in ((float(n + spare), True), (float(n - 1), False)):
        sat = saturation(arrival, admit, Capacity(rate, batch, "kv", 0.01, 0.0))
        assert sat["load"] == pytest.approx(offered / rate, rel=1e-9) and abs(sat["queue_growth_s_per_s"]) < 1e-6
        assert sat["transient"] is fits and not sat["burst"]
        assert sat["saturated"] is (not fits and offered / rate >= 1.0)


def replace_capacity(sat: dict, requests_per_s: float):
    from roofline.simulate.capacity import Capacity

    return Capacity(requests_per_s, sat["capacity_batch"], sat["capacity_limit"], sat["capacity_decode_step_s"],
                    sat["capacity_prefill_s_per_request"])


def test_cli_max_concurrency_is_the_benchmark_clients_closed_loop(run_cli):
    """`simulate --max-concurrency 1`: one request at a time, each sent as the previous completes — fixed lengths
    give every request the same TTFT and TPOT, the run is never saturated whatever --rate says, and the makespan is
    the sum of the end-to-end latencies; a larger cap overlaps requests and shortens the run."""
    base = ("simulate", "-m", "llama-3-8b", "-s", "dgx-h100", "--gpus", "1", "--lengths", "fixed", "--prompt-tokens",
            "500", "--output-tokens", "50", "-n", "20", "--rate", "1000", "--json")
    code, out, err = run_cli(*base, "--max-concurrency", "1")
    assert code == 0, err
    d = json.loads(out)
    assert d["closed_loop"] and d["max_concurrency"] == 1 and not d["saturated"]
    assert d["ttft_p99_s"] == pytest.approx(d["ttft_p50_s"], rel=1e-6)
    assert d["makespan_s"] == pytest.approx(20 * d["e2e_p50_s"], rel=1e-3)
    code, out4, err = run_cli(*base, "--max-concurrency", "4")
    assert code == 0, err
    assert json.loads(out4)["makespan_s"] < 0.5 * d["makespan_s"]
    code, plain, err = run_cli(*base)  # no cap: all 20 at once, a queue the closed loop never builds
    assert json.loads(plain)["ttft_p99_s"] > 2 * d["ttft_p99_s"]


def test_token_budget_below_the_batch_caps_the_batch_by_hand():
    """max_batched_tokens below max_seqs (TensorRT-LLM allows it; MLPerf v5.1 configs, serving set m): B decodes
    would leave no room for prompts, so the batch is the one the budget keeps fed, (N − B)/P = B/D:
    B = 64 / (1 + 50/100) = 42.7 for 20 ms passes, 50-token prompts and 101 outputs, λ_max = B / (100 · 0.02 s)
    = 21.3 requests/s (it was 1 token of room a pass, and a capacity near 0, before). The simulated queue
    agrees: stable at 0.8 of it, growing at 1.3."""
    dep, pol = Deployment(ConstantStep(0.02)), Policy("chunked", max_seqs=100, max_batched_tokens=64)
    cap = capacity(make_workload(np.zeros(3), 50, 101), dep, pol)
    assert cap.limit == "token budget" and cap.batch == pytest.approx(64 / 1.5)
    assert cap.requests_per_s == pytest.approx(64 / 1.5 / 2.0)
    for load, saturated in ((0.8, False), (1.3, True)):
        tr, _ = _run(dep, pol, load * cap.requests_per_s, 4000, 50, 101)
        sat = saturation(tr.arrival_s, tr.admit_s, cap)
        assert sat["saturated"] is saturated and (sat["queue_growth_s_per_s"] > GROWTH_LIMIT) is saturated, load
