"""Serving simulator: golden numbers (T05, T07), cross-checks against the analytic roofline and a naive
per-token simulator, Little's law (Hypothesis), scheduler behaviour and input errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.catalog import get_catalog
from roofline.engine import step
from roofline.errors import DoesNotFitError, InputError
from roofline.simulate import (
    ConstantStep,
    Deployment,
    OutputStage,
    Policy,
    Simulation,
    make_workload,
    roofline_deployment,
    simulate,
)
from roofline.simulate.core import ClosedLoop
from roofline.simulate.metrics import littles_law, summarize
from roofline.simulate.reference import naive_continuous
from roofline.simulate.workload import lengths, poisson_arrivals


@pytest.fixture(scope="module")
def llama_dgx():
    cat = get_catalog()
    return cat.model("llama-3-70b"), cat.system("dgx-h100")


def _poisson(seed, n, rate, prompt=512, output=128):
    rng = np.random.default_rng(seed)
    t = poisson_arrivals(rng, rate, n)
    return make_workload(t, lengths(rng, n, "lognormal", prompt, 0.8, maximum=4 * prompt),
                         lengths(rng, n, "lognormal", output, 0.8, maximum=4 * output))


# ---- golden: the lecture's train departures (§1.5) ------------------------------------------------
def test_T05_worst_case_train_wait_is_twice_the_interval():
    """A pass departs every 20 ms and takes 20 ms: first token within 2 x interval = 40 ms (T05);
    mean wait for the next departure is interval/2 for uniform (Poisson) arrivals [I]."""
    interval = 0.020
    wl = make_workload(poisson_arrivals(np.random.default_rng(5), 37.0, 4000), 1, 1)
    tr = simulate(wl, Deployment(ConstantStep(interval)), Policy("train", max_seqs=2000, interval_s=interval))
    ttft = tr.first_token_s - tr.arrival_s
    assert ttft.max() <= 2 * interval + 1e-12
    assert ttft.max() > 2 * interval * 0.995  # the bound is reached
    assert ttft.min() >= interval - 1e-12
    assert (ttft - interval).mean() == pytest.approx(interval / 2, rel=0.03)


def test_T07_train_throughput_is_batch_over_step():
    """B = 2,000 sequences per 20 ms train: 100,000 tokens/s (T07), by simulation of 10 full waves."""
    wl = make_workload(np.zeros(20_000), 1, 100)
    tr = simulate(wl, Deployment(ConstantStep(0.020)), Policy("train", max_seqs=2000, interval_s=0.020))
    s = summarize(tr)
    assert s.throughput_tokens_per_s == pytest.approx(100_000, rel=1e-9)
    assert s.mean_batch == pytest.approx(2000)


# ---- cross-check: simulator vs the analytic step model under saturation -----------------------------
@pytest.mark.parametrize("model_id,system_id,batch,prompt,output", [
    ("llama-3-70b", "dgx-h100", 128, 1024, 256),
    ("deepseek-v3", "hgx-h200", 96, 2000, 300),
    ("gpt-oss-120b", "dgx-h100", 200, 700, 150),
])
def test_saturated_throughput_matches_analytic_roofline(model_id, system_id, batch, prompt, output):
    """All requests waiting at t = 0: continuous batching runs waves of B sequences, each a prefill
    pass step(prefill, B, P, 0) and O-1 decode passes step(decode, B, P+j-1); the simulated throughput
    must agree with B·O / wave time within 2%."""
    cat = get_catalog()
    m, s = cat.model(model_id), cat.system(system_id)
    dep = roofline_deployment(m, s, weights_dtype="fp8" if model_id == "deepseek-v3" else "bf16")
    wl = make_workload(np.zeros(4 * batch), prompt, output)
    tr = simulate(wl, dep, Policy("continuous", max_seqs=batch, max_batched_tokens=batch * prompt))
    kw = dict(weights_dtype="fp8" if model_id == "deepseek-v3" else "bf16", check_context=False)
    t_pre = float(step(m, s, batch, 0, phase="prefill", prompt=prompt, **kw).step_s)
    t_dec = step(m, s, batch, prompt + np.arange(output - 1), **kw).step_s.sum()
    analytic = batch * output / (t_pre + t_dec)
    assert summarize(tr).throughput_tokens_per_s == pytest.approx(analytic, rel=0.02)
    assert summarize(tr).preemptions == 0


def test_fast_loop_reproduces_naive_per_token_simulator(llama_dgx):
    dep = roofline_deployment(*llama_dgx)
    wl = _poisson(1, 600, 40.0)
    sim = Simulation(wl, dep, Policy("continuous", max_seqs=48, max_batched_tokens=2048))
    tr = sim.run()
    first, finish = naive_continuous(wl, sim.table, 48, 2048, sim.mixed)
    np.testing.assert_allclose(tr.first_token_s, first, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(tr.finish_s, finish, rtol=1e-9, atol=1e-9)
    assert tr.iterations > len(tr.seg_iters)  # decode iterations were batched into segments


# ---- Little's law -----------------------------------------------------------------------------------
@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), rate=st.floats(2.0, 80.0), kind=st.sampled_from(["continuous", "chunked"]))
def test_littles_law(seed, rate, kind):
    """L (time-average in system, from the loop's occupancy record + queue) = λ·W (from timestamps)."""
    dep = Deployment(ConstantStep(0.01), kv_capacity_tokens=1e9)
    wl = _poisson(seed, 300, rate, prompt=256, output=64)
    ll = littles_law(simulate(wl, dep, Policy(kind, max_seqs=32, max_batched_tokens=1024), seed=seed))
    assert ll["L"] == pytest.approx(ll["lambda_W"], rel=1e-6)


# ---- schedulers -------------------------------------------------------------------------------------
def test_static_batching_waits_for_the_whole_batch(llama_dgx):
    dep = roofline_deployment(*llama_dgx)
    wl = _poisson(2, 400, 30.0)
    cont, stat = (summarize(simulate(wl, dep, Policy(k, max_seqs=32))) for k in ("continuous", "static"))
    assert stat.ttft_p50_s > cont.ttft_p50_s
    assert stat.throughput_tokens_per_s <= cont.throughput_tokens_per_s * 1.001


def test_chunked_prefill_caps_tokens_per_pass(llama_dgx):
    dep = roofline_deployment(*llama_dgx)
    wl = _poisson(3, 300, 20.0, prompt=3000)
    tr = simulate(wl, dep, Policy("chunked", max_seqs=64, max_batched_tokens=512))
    assert tr.seg_tokens.max() <= 512
    assert np.all(tr.finish_s >= tr.first_token_s) and np.all(tr.first_token_s > tr.arrival_s)


def test_long_prefill_token_threshold_splits_the_budget_between_prompts_by_hand():
    """vLLM's --long-prefill-token-threshold 256 with a 1,024-token budget: two 600-token prompts at t = 0 take
    256 + 256, 256 + 256 and 88 + 88 tokens of three 10 ms passes, so both first tokens come at 30 ms. Without it
    the first prompt takes 600 + 424 and its first token comes at 10 ms, the second's at 20 ms."""
    dep = Deployment(ConstantStep(0.01), kv_capacity_tokens=1e9)
    wl = make_workload(np.zeros(2), 600, 3)
    capped = simulate(wl, dep, Policy("chunked", max_seqs=8, max_batched_tokens=1024,
                                      long_prefill_token_threshold=256))
    assert list(capped.seg_tokens[:3]) == [512, 512, 176]
    assert np.allclose(capped.first_token_s, [0.03, 0.03])
    whole = simulate(wl, dep, Policy("chunked", max_seqs=8, max_batched_tokens=1024))
    assert whole.seg_tokens[0] == 1024
    assert np.allclose(whole.first_token_s, [0.01, 0.02])
    with pytest.raises(InputError, match="needs policy 'chunked'"):
        Policy("separate", long_prefill_token_threshold=256)
    with pytest.raises(InputError, match="whole number >= 0"):
        Policy("chunked", long_prefill_token_threshold=-1)


def test_max_prefill_tokens_admits_past_the_cap_only_as_a_pass_s_first_prompt_by_hand():
    """SGLang's --max-prefill-tokens 500 (PrefillAdder: rem_input_tokens = 500 less the running decodes under
    --enable-mixed-chunk; a prompt reaching what is left joins only an empty pass), 10 ms passes, three 300-token
    prompts at t = 0 and a 1,024-token budget. Without the cap one pass prefills all three (first tokens at 10 ms).
    With it each pass starts one: mixed (chunked) passes of 300, 1 + 300 and 2 + 300 tokens, first tokens at 10, 20
    and 30 ms; under 'separate' the prompts run alone (300, 300, 300) and the decodes wait. A 600-token prompt, over
    the cap, still runs as a pass's first."""
    dep = Deployment(ConstantStep(0.01), kv_capacity_tokens=1e9)
    wl = make_workload(np.zeros(3), 300, 3)
    whole = simulate(wl, dep, Policy("chunked", max_seqs=8, max_batched_tokens=1024))
    assert list(whole.seg_tokens) == [900, 3] and np.allclose(whole.first_token_s, 0.01)
    mixed = simulate(wl, dep, Policy("chunked", max_seqs=8, max_batched_tokens=1024, max_prefill_tokens=500))
    assert list(mixed.seg_tokens) == [300, 301, 302, 2, 1]
    assert np.allclose(mixed.first_token_s, [0.01, 0.02, 0.03])
    alone = simulate(wl, dep, Policy("separate", max_seqs=8, max_batched_tokens=1024, max_prefill_tokens=500))
    assert list(alone.seg_tokens[:3]) == [300, 300, 300]
    assert np.allclose(alone.first_token_s, [0.01, 0.02, 0.03])
    long = simulate(make_workload(np.zeros(2), 600, 3), dep,
                    Policy("chunked", max_seqs=8, max_batched_tokens=1024, max_prefill_tokens=500))
    assert list(long.seg_tokens) == [600, 601, 2, 1]
    with pytest.raises(InputError, match="needs policy 'chunked' or 'separate'"):
        Policy("continuous", max_prefill_tokens=500)
    with pytest.raises(InputError, match="whole number >= 0"):
        Policy("chunked", max_prefill_tokens=-1)


def test_output_stage_delays_what_the_client_sees_by_hand():
    """OutputStage: one server takes each pass's streamed chunks (one per sequence that made a token) in pass order,
    per_pass_s + per_chunk_s · chunks each (Lindley's recursion; a decode segment in closed form). 10 ms passes, one
    request of 4 outputs (a prefill pass and 3 decode passes ending at 10, 20, 30, 40 ms):
    - 15 ms a chunk, slower than the passes: departures 25, 40, 55, 70 ms, so TTFT 25 ms and the finish 70 ms;
    - 5 ms a chunk: 15 ms, and the finish 45 ms (the last pass's end + 5);
    - two requests together with 2 ms per pass and 15 ms per chunk: σ = 32 ms, first tokens at 42 ms and the
      finish at max(42 + 2·32, 30 + 32) = 106 ms;
    - a closed loop of one client sends the second request when the first's last token leaves (70 ms).
    Off (both 0) is the run without the stage."""
    dep = Deployment(ConstantStep(0.01), kv_capacity_tokens=1e9)
    one = make_workload(np.zeros(1), 10, 4)
    pol = Policy("continuous", max_seqs=8)
    slow = Simulation(one, dep, pol, stream=OutputStage(0.0, 0.015)).run()
    assert np.allclose(slow.first_token_s, [0.025]) and np.allclose(slow.finish_s, [0.07])
    fast = Simulation(one, dep, pol, stream=OutputStage(0.0, 0.005)).run()
    assert np.allclose(fast.first_token_s, [0.015]) and np.allclose(fast.finish_s, [0.045])
    two = Simulation(make_workload(np.zeros(2), 10, 3), dep, pol, stream=OutputStage(0.002, 0.015)).run()
    assert np.allclose(two.first_token_s, [0.042, 0.042]) and np.allclose(two.finish_s, [0.106, 0.106])
    loop = ClosedLoop(1, np.zeros(2), 0.0)
    tr = Simulation(make_workload(np.zeros(2), 10, 4), dep, pol, closed_loop=loop, stream=OutputStage(0.0, 0.015)).run()
    assert np.allclose(loop.sends_s, [0.0, 0.07]) and np.allclose(tr.finish_s, [0.07, 0.14])
    off, none = (Simulation(one, dep, pol, stream=x).run() for x in (OutputStage(), None))
    assert np.array_equal(off.finish_s, none.finish_s) and np.array_equal(off.first_token_s, none.first_token_s)
    with pytest.raises(InputError, match="per_chunk_s must be between 0 and 1 s"):
        OutputStage(0.0, -1e-5)


def test_preemption_when_kv_runs_out_and_every_request_finishes():
    dep = Deployment(ConstantStep(0.01), kv_capacity_tokens=6000)
    wl = make_workload(np.zeros(64), 200, 300)
    tr = simulate(wl, dep, Policy("continuous", max_seqs=64))
    assert tr.preemptions.sum() > 0
    assert np.all(np.isfinite(tr.finish_s)) and np.all(tr.finish_s > tr.first_token_s)
    reserve = simulate(wl, dep, Policy("continuous", max_seqs=64, preemption=False))
    assert reserve.preemptions.sum() == 0 and reserve.seg_batch.max() <= 6000 // 500


def test_v1_admits_a_prompt_by_its_first_chunk_and_preempts_it_when_the_next_finds_no_room():
    """KV for 1,000 tokens, 10 ms passes of at most 300 tokens: r0 (300-token prompt, 100 outputs) and r1 (800, 5) at
    t = 0. Whole-prompt admission (V0, SGLang) holds r1 back until r0 finishes (300 + 800 > 1,000): admitted at
    1.00 s, prefilled in 300 + 300 + 200 (first token 1.03 s). vLLM V1 (kv_admission chunk) admits r1 in pass 2 on
    its first chunk of 299 (beside r0's decode), adds 299 in pass 3, and in pass 4 its last 202 tokens do not fit
    (r0's ~302 + 598 + 202 > 1,000): r1 is preempted, re-admitted in pass 5 and preempted again every third pass,
    at passes 4, 7, ..., 100: 33 times, by hand; r0 finishes at 1.00 s either way, and r1's first token comes at
    1.03 s either way (the thrash costs nothing on a constant step, all of it recomputed)."""
    dep = Deployment(ConstantStep(0.01), kv_capacity_tokens=1000)
    wl = make_workload(np.zeros(2), [300, 800], [100, 5])
    runs = {a: Simulation(wl, dep, Policy("chunked", max_seqs=8, max_batched_tokens=300, kv_admission=a)).run()
            for a in ("prompt", "chunk")}
    for a, admit_r1, preempted in (("prompt", 1.00, 0), ("chunk", 0.01, 33)):
        tr = runs[a]
        np.testing.assert_allclose(tr.admit_s, [0.0, admit_r1], atol=1e-9)
        np.testing.assert_allclose(tr.first_token_s, [0.01, 1.03], atol=1e-9)
        np.testing.assert_allclose(tr.finish_s, [1.00, 1.07], atol=1e-9)
        assert tr.preemptions.tolist() == [0, preempted]
    with pytest.raises(InputError, match="kv admission 'chunk' .* needs policy 'chunked' with preemption"):
        Policy("continuous", kv_admission="chunk")
    with pytest.raises(InputError, match="kv admission must be one of prompt, chunk, got 'v1'"):
        Policy("chunked", kv_admission="v1")


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 30), cap=st.integers(1200, 6000), budget=st.integers(64, 512), seed=st.integers(0, 10**6))
def test_v1_admission_serves_every_request_in_order_of_events(n, cap, budget, seed):
    """Chunk-by-chunk KV (vLLM V1) under random loads that overflow a small pool: every request is admitted, gets
    its first token and finishes, in that order, after it arrives; preemptions only where the pool ran out."""
    rng = np.random.default_rng(seed)
    wl = make_workload(np.sort(rng.uniform(0, 0.5, n)), rng.integers(50, 1000, n), rng.integers(2, 200, n))
    dep = Deployment(ConstantStep(0.01), kv_capacity_tokens=float(cap))
    tr = Simulation(wl, dep, Policy("chunked", max_seqs=16, max_batched_tokens=budget, kv_admission="chunk")).run()
    assert np.all(np.isfinite(tr.finish_s))
    assert np.all(tr.admit_s >= tr.arrival_s - 1e-12) and np.all(tr.first_token_s > tr.admit_s)
    assert np.all(tr.finish_s >= tr.first_token_s)
    big = Deployment(ConstantStep(0.01), kv_capacity_tokens=1e9)
    roomy = Simulation(wl, big, Policy("chunked", max_seqs=16, max_batched_tokens=budget, kv_admission="chunk")).run()
    assert roomy.preemptions.sum() == 0


def test_priority_class_is_admitted_first():
    dep = Deployment(ConstantStep(0.01), kv_capacity_tokens=1e9)
    rng = np.random.default_rng(4)
    t = poisson_arrivals(rng, 300.0, 3000)
    wl = make_workload(t, 100, 50, priority=rng.integers(0, 2, t.size))
    tr = simulate(wl, dep, Policy("continuous", max_seqs=16))
    fast, slow = (summarize(tr, mask=tr.priority == c) for c in (0, 1))
    assert fast.ttft_p50_s < slow.ttft_p50_s


# ---- errors -------------------------------------------------------------------------------------------
def test_bad_workloads_name_the_field():
    with pytest.raises(InputError, match=r"prompt_tokens\[1\] = -5"):
        make_workload([0.0, 1.0], [10, -5], 10)
    with pytest.raises(InputError, match=r"arrival_s\[2\] = 0.5 s is earlier"):
        make_workload([0.0, 1.0, 0.5], 10, 10)
    with pytest.raises(InputError, match="output_tokens"):
        make_workload([0.0], 10, 0)


def test_zero_capacity_and_kv_too_small_are_errors():
    with pytest.raises(InputError, match="max_seqs must be a whole number >= 1"):
        Policy("continuous", max_seqs=0)
    with pytest.raises(InputError, match="KV capacity must be > 0"):
        Deployment(ConstantStep(0.01), kv_capacity_tokens=0)
    with pytest.raises(DoesNotFitError, match="request 0 needs 1,100 tokens of KV"):
        Simulation(make_workload([0.0], 1000, 101), Deployment(ConstantStep(0.01), kv_capacity_tokens=500))
    with pytest.raises(InputError, match="unknown policy 'fifo'"):
        Policy("fifo")


# ---- workloads ------------------------------------------------------------------------------------
def test_arrival_processes_have_their_rates_and_burstiness(tmp_path):
    from roofline.simulate.workload import gamma_arrivals, read_trace, varying_rate_arrivals, write_trace

    rng = np.random.default_rng(0)
    g = np.diff(gamma_arrivals(rng, 10.0, 40_000, cv=2.0))
    assert g.mean() == pytest.approx(0.1, rel=0.03) and g.std() / g.mean() == pytest.approx(2.0, rel=0.05)
    t = varying_rate_arrivals(rng, lambda x: 5.0 + 5.0 * (x > 50), 10.0, 100.0)
    assert np.sum(t < 50) == pytest.approx(250, rel=0.15) and np.sum(t >= 50) == pytest.approx(500, rel=0.15)
    emp = lengths(rng, 1000, "empirical", values=[10, 20])
    assert set(np.unique(emp)) == {10.0, 20.0}
    wl = _poisson(1, 50, 3.0)
    back = read_trace(write_trace(wl, tmp_path / "t.csv"))
    np.testing.assert_allclose(back.arrival_s, wl.arrival_s, atol=1e-6)
    assert np.array_equal(back.output_tokens, wl.output_tokens)


def test_realistic_deployment_steps_are_the_engines():
    """roofline_deployment(realistic=True): the step model is the engine's realistic pass for the chips as one
    TP group (decode = a pass of one token per sequence), slower than the pure roofline; invalid TP or
    explicit efficiencies are refused."""
    from helpers import layout_step
    from roofline.efficiency import Efficiency

    cat = get_catalog()
    m, s = cat.model("llama-3-70b"), cat.system("dgx-h100")
    real = roofline_deployment(m, s, realistic=True, weights_dtype="fp8", kv_dtype="fp8")
    pure = roofline_deployment(m, s, weights_dtype="fp8", kv_dtype="fp8")
    t = float(np.asarray(real.step(64, 64, 2048)))
    assert t == pytest.approx(float(layout_step(m, s, 64, 2048, tp=8, realistic=True, weights_dtype="fp8", kv_dtype="fp8").step_s))
    assert t > float(np.asarray(pure.step(64, 64, 2048)))
    assert real.kv_capacity_tokens == pure.kv_capacity_tokens
    with pytest.raises(InputError, match="TP 3 does not divide"):
        roofline_deployment(m, cat.system("dgx-h100"), chips=3, realistic=True)
    with pytest.raises(InputError, match="realistic steps use the efficiency model"):
        roofline_deployment(m, s, realistic=True, efficiency=Efficiency(0.5, 0.5))


def test_step_table_fast_lookups_equal_the_reference_interpolation(llama_dgx):
    """StepTable.t and decode_segment (inlined, O(1) floor-index cells) give bit-for-bit the values of
    the reference _loc/_bc interpolation, on and between grid points and outside the grid."""
    from roofline.simulate.steptable import StepTable

    tab = StepTable(roofline_deployment(*llama_dgx).step, 256, 8192, 6100)
    loc, bc = tab._loc, tab._bc

    def ref(b, x, c):  # t at (b, ratio x, c), value and slope in c, as the table's docstring defines them
        (bi, wb), (ci, wc), (ri, wr) = loc(tab.B, b), loc(tab.C, c), loc(tab.R, x)
        v0, v1 = bc(bi, wb, ri, ci), bc(bi, wb, ri, ci + 1)
        lo = v0 + wc * (v1 - v0)
        if wr == 0.0:
            return lo, v0, v1, ci
        h0, h1 = bc(bi, wb, ri + 1, ci), bc(bi, wb, ri + 1, ci + 1)
        return lo + wr * (h0 + wc * (h1 - h0) - lo), v0 + wr * (h0 - v0), v1 + wr * (h1 - v1), ci

    rng = np.random.default_rng(7)

    def points(grid, hi):
        g = np.asarray(grid)
        return np.concatenate([g, g + 1e-7, g - 1e-7, rng.uniform(-1, hi, 300), rng.integers(0, hi, 100)]).tolist()

    bs = [b for b in points(tab.B, 300) if b > 0]
    xs, cs = points(tab.R, 9000), points(tab.C, 7000)
    for _ in range(20_000):
        b, x, c = bs[rng.integers(len(bs))], xs[rng.integers(len(xs))], cs[rng.integers(len(cs))]
        _, v0, v1, ci = ref(b, x, c)
        assert tab.t(b, b * x, c) == ref(b, (b * x) / b, c)[0]
        slope = (v1 - v0) / (tab.C[ci + 1] - tab.C[ci])
        assert tab.decode_segment(b, x, c) == (v0 + slope * (c - tab.C[ci]), slope,
                                               tab.C[ci + 1] if ci + 2 < len(tab.C) else np.inf)


def test_workload_caps_and_duration_count_by_hand():
    """simulate and simulate --grid draw from one generator: lognormal lengths capped at 16 x the median and
    below the context, pairs over the context redrawn together (the distribution conditioned on fitting);
    a duration draws rate·T·1.2 + 10·√(rate·T) + 10 arrivals and keeps those inside T."""
    import numpy as np

    from roofline.simulate.workload import generate, length_caps, requests_for_duration

    assert length_caps(1024, 1024, 8192) == (8191, 8191)  # min(16·1024, 8192 - 1) each
    assert length_caps(1024, 128, None) == (16384, 2048)
    assert requests_for_duration(10, 100) == int(1000 * 1.2 + 10 * 1000 ** 0.5 + 10) == 1526
    wl = generate(np.random.default_rng(3), rate_per_s=10, n=0, lengths_kind="lognormal", prompt_tokens=1024,
                  output_tokens=1024, sigma=1.5, max_context=8192, duration_s=100)
    assert np.all(wl.arrival_s < 100) and 900 < wl.n < 1100
    assert np.all(wl.prompt_tokens + wl.output_tokens <= 8192)
    assert wl.prompt_tokens.max() > 4096  # a long prompt with a short output fits: no proportional split
