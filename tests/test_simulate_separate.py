"""Policy 'separate': prefill-only passes (vLLM V0 without chunked prefill, SGLang's default without
--enable-mixed-chunk) — the decoding sequences wait while a prompt is prefilled (simulate/policies.py)."""

from __future__ import annotations

import numpy as np
import pytest

from roofline.simulate import ConstantStep, Deployment, Policy, Simulation, make_workload
from roofline.simulate.capacity import capacity


def _run(kind, wl, step=0.010, **kw):
    return Simulation(wl, Deployment(ConstantStep(step)), Policy(kind, max_seqs=8, max_batched_tokens=1000, **kw)).run()


def test_a_prompt_stalls_the_decoders_by_hand():
    """Every pass 10 ms. r0 (100 + 4 tokens) at 0, r1 (50 + 2) at 25 ms. Separate: r0's prefill [0, 10], decodes
    [10, 30] (cut at r1's arrival), r1's prefill alone [30, 40] while r0 waits, one pass for both [40, 50]: r0 ends
    at 50 ms (TPOT 40/3 ms), r1's first token at 40 ms. Continuous: r1's prompt rides in r0's last decode pass
    [30, 40], so r0 ends at 40 ms (TPOT 10 ms)."""
    wl = make_workload([0.0, 0.025], [100, 50], [4, 2])
    sep, cont = _run("separate", wl), _run("continuous", wl)
    np.testing.assert_allclose(sep.first_token_s, [0.010, 0.040], atol=1e-12)
    np.testing.assert_allclose(sep.finish_s, [0.050, 0.050], atol=1e-12)
    np.testing.assert_allclose(cont.first_token_s, [0.010, 0.040], atol=1e-12)
    np.testing.assert_allclose(cont.finish_s, [0.040, 0.050], atol=1e-12)
    # the passes: prefill-only ones carry only their prompt (batch 1, its tokens)
    k, b, tok = (np.asarray(x) for x in (sep.seg_iters, sep.seg_batch, sep.seg_tokens))
    assert list(np.repeat(b, k)) == [1, 1, 1, 1, 2] and list(np.repeat(tok, k)) == [100, 1, 1, 50, 2]


def test_long_prompts_are_chunked_and_every_chunk_stalls_the_decoders():
    """A 2,500-token prompt on a 1,000-token budget: three prefill-only passes (1,000 + 1,000 + 500), and a decoder
    already running gets no token in any of them."""
    wl = make_workload([0.0, 0.015], [10, 2500], [5, 2])
    tr = _run("separate", wl)
    k, tok = np.asarray(tr.seg_iters), np.asarray(tr.seg_tokens)
    assert list(np.repeat(tok, k))[:6] == [10, 1, 1000, 1000, 500, 2]
    # r0 (4 decode passes): first token 10 ms, a decode [10, 20] (cut at r1's arrival), r1's three chunks [20, 50]
    # while r0 waits, then decodes ending at 60, 70, 80 ms; r1's first token at 50 ms, its last at 60 ms
    np.testing.assert_allclose(tr.finish_s, [0.080, 0.060], atol=1e-12)
    assert tr.first_token_s[1] == pytest.approx(0.050)


def test_without_overlap_every_policy_agrees_and_capacity_counts_prefill_passes():
    """Requests that never overlap see the same times under separate and continuous; the analytic capacity of
    separate charges each prompt its share of a prefill-only pass of k = ⌊budget/P⌋ prompts."""
    wl = make_workload(np.arange(20) * 1.0, 100, 10)
    a, b = _run("separate", wl), _run("continuous", wl)
    np.testing.assert_allclose(a.finish_s, b.finish_s)
    dep = Deployment(ConstantStep(0.010))
    cap = capacity(wl, dep, Policy("separate", max_seqs=8, max_batched_tokens=1000))
    # B = 8 decodes a pass at 10 ms; D = 9 passes; prefill: 10 prompts of 100 tokens a 10 ms pass -> 1 ms each
    assert cap.prefill_s_per_request == pytest.approx(0.001)
    assert cap.requests_per_s == pytest.approx(1.0 / (9 * 0.010 / 8 + 0.001))
    with pytest.raises(Exception, match="unknown policy"):
        Policy("sepparate")


def test_a_tight_kv_pool_makes_progress_under_separate():
    """200 Poisson requests (5/s) of 100 + 400 tokens on a 1,000-token KV pool with on-demand KV and preemption:
    each admission reserves the growth of the prompts still in prefill, and no decode growth is reserved before a
    prefill-only pass, so a just-prefilled request is never preempted before its first decode and the run ends
    (it stalled, preempting the same prompts forever, before those two rules)."""
    rng = np.random.default_rng(1)
    wl = make_workload(np.cumsum(rng.exponential(1 / 5, 200)), 100, 400)
    dep = Deployment(ConstantStep(0.010), kv_capacity_tokens=1000.0)
    tr = Simulation(wl, dep, Policy("separate", max_seqs=64, max_batched_tokens=4096)).run()
    assert np.all(np.isfinite(tr.finish_s)) and np.all(tr.finish_s > tr.first_token_s)


def test_sglang_recv_interval_delays_admission_by_hand():
    """--scheduler-recv-interval 4 (Policy.recv_interval): every pass 10 ms; r0 (100 + 20 tokens) at 0, r1 (50 + 2)
    at 25 ms. After r0's prefill pass [0, 10] the scheduler receives at once, then only every 4 decode passes: at 50
    ms it takes r1 in, whose prompt rides in the pass [50, 60] (first token 60 ms: TTFT 35 ms). With every pass
    receiving (1), r1 is admitted at 30 ms and has its first token at 40 ms (TTFT 15 ms)."""
    wl = make_workload([0.0, 0.025], [100, 50], [20, 2])
    every = Simulation(wl, Deployment(ConstantStep(0.010)), Policy("continuous", 8, 1000)).run()
    four = Simulation(wl, Deployment(ConstantStep(0.010)), Policy("continuous", 8, 1000, recv_interval=4)).run()
    assert every.first_token_s[1] == pytest.approx(0.040) and four.first_token_s[1] == pytest.approx(0.060)
    assert every.first_token_s[0] == four.first_token_s[0] == pytest.approx(0.010)
    # r0's own tokens are not delayed (the stretches are only cut, not stalled)
    assert four.finish_s[0] == pytest.approx(every.finish_s[0])
    with pytest.raises(Exception, match="recv_interval"):
        Policy("continuous", recv_interval=0)


def test_amd_admit_interval_gates_admission_by_hand():
    """AMD's MLPerf vLLM patch (Policy.admit_interval K, admit_min_running M): every pass 10 ms; r0 (100 + 20
    tokens) at 0 opens the counter at pass 0 [0, 10]; r1 (50 + 2) at 25 ms waits for the next admitting pass, the
    7th, [70, 80]: first token at 80 ms (40 ms ungated), under every policy that batches continuously. With M = 2
    and one sequence running the gate is lifted. A request that finds the engine idle starts at once."""
    wl = make_workload([0.0, 0.025], [100, 50], [20, 2])
    for kind in ("continuous", "chunked", "separate"):
        gated = _run(kind, wl, admit_interval=7)
        assert gated.first_token_s[1] == pytest.approx(0.080) and gated.first_token_s[0] == pytest.approx(0.010)
        assert _run(kind, wl, admit_interval=7, admit_min_running=2).first_token_s[1] == pytest.approx(0.040)
        assert _run(kind, wl, admit_interval=7, admit_min_running=1).first_token_s[1] == pytest.approx(0.080)
    idle = _run("continuous", make_workload([0.0, 0.1], [100, 50], [2, 2]), admit_interval=7)
    assert idle.first_token_s[1] == pytest.approx(0.110)
    for bad, match in ((dict(admit_interval=0), "admit_interval"), (dict(admit_min_running=-1), "admit-min-running"),
                       (dict(admit_interval=3, recv_interval=2), "one of them")):
        with pytest.raises(Exception, match=match):
            Policy("continuous", **bad)
    with pytest.raises(Exception, match="own rule"):
        Policy("static", admit_interval=3)


def test_simulate_kv_memory_flags_set_the_pool_by_hand():
    """simulate --kv-memory-fraction F --kv-memory-of total|free: Llama 2 70B (fp4 weights, fp8 KV: 163,840 B a token)
    on one MI355X (287.98 GiB as HIP reports it, M): the pool is (F x M - W) / 163,840 tokens of the whole memory
    (vLLM's gpu_memory_utilization; default 0.9) or F x (M - W) / 163,840 of what the weights leave (TensorRT-LLM)."""
    from roofline.requests.simulate import SimulateRequest, simulate

    base = dict(model="llama-2-70b", system="mi355x-8", gpus=1, rate=5.0, requests=20, weights_dtype="fp4",
                kv_dtype="fp8", realistic=True)
    caps = [simulate(SimulateRequest.of(**base, **kw))[0]["kv_capacity_tokens"]
            for kw in ({}, {"kv_memory_fraction": 0.95}, {"kv_memory_fraction": 0.95, "kv_memory_of": "free"})]
    mem = 287.98 * 2**30
    w = 0.9 * mem - caps[0] * 163840
    assert caps[1] == pytest.approx((0.95 * mem - w) / 163840, rel=1e-9)
    assert caps[2] == pytest.approx(0.95 * (mem - w) / 163840, rel=1e-9)
    assert 30e9 < w < 40e9


def test_sglang_mem_fraction_static_by_hand():
    """SGLang's own --mem-fraction-static (memory.sglang_mem_fraction_static), in MiB, G = an H100's 81,100.8 MiB
    (85.04 GB as the driver reports it). Rule of v0.5.3+: reserve 512 + 1.5 x 8,192 + 2 x 256 + 1/8 x 1,024 = 13,440
    at TP 1 -> (G - 13,440) / G = 0.834 (SGLang issue #29092 found 0.828 for Qwen3-32B on an H100); at TP 8 the graph
    tier is 512: 512 + 12,288 + 1,024 + 1,024 = 14,848 -> 0.817; a 2,048 budget reserves 3,728, floored at 10 GiB ->
    0.874; an H200 (143,155.2 MiB) at TP 1 0.906; a B200 (182,630.4 MiB: 16,384 and 512) at TP 8 reserves 27,136 ->
    0.851; attention DP 8 on an H200 at TP 8 adds 3 x 512 x 8 and 1.5 x 512 x 8 (512 > 300) -> 33,280 -> 0.768.
    Rule of v0.4.8-v0.5.2: an H100 at TP 1 reserves (9.5 + 1/2) GiB -> 0.874; at TP 8 13.5 GiB -> 0.830; + 4 GiB with
    attention DP. simulate --kv-memory-fraction sglang sizes the pool with it: (0.834 x M - W) / KV bytes a token."""
    from roofline.catalog import system
    from roofline.memory import sglang_mem_fraction_static as f
    from roofline.requests.simulate import SimulateRequest, simulate

    h100, h200, b200 = (system(s).accelerator.engine_memory_bytes for s in ("dgx-h100", "hgx-h200", "hgx-b200"))
    assert h100 / 2**20 == pytest.approx(81100.8) and h200 / 2**20 == pytest.approx(143155.2)
    assert (f(h100, 1), f(h100, 8), f(h100, 1, chunked_prefill_size=2048, cuda_graph_max_bs=8)) == (0.834, 0.817, 0.874)
    assert (f(h200, 1), f(b200, 8), f(h200, 8, dp=8)) == (0.906, 0.851, 0.768)
    assert (f(h100, 1, rule="sglang-0.4.8"), f(h100, 8, rule="sglang-0.4.8")) == (0.874, 0.830)
    assert f(h100, 8, dp=8, rule="sglang-0.4.8") == round((81100.8 - 17.5 * 1024) / 81100.8, 3)
    with pytest.raises(Exception, match="unknown KV memory rule 'vllm'"):
        f(h100, 1, rule="vllm")
    base = dict(model="llama-3.1-8b", system="dgx-h100", gpus=1, rate=5.0, requests=20, realistic=True, engine="sglang")
    plain, own = (simulate(SimulateRequest.of(**base, **kw))[0]["kv_capacity_tokens"]
                  for kw in ({}, {"kv_memory_fraction": "sglang"}))
    w = 0.9 * h100 - plain * 131072  # the weights' bytes, from the default 0.9
    assert own == pytest.approx((0.834 * h100 - w) / 131072, rel=1e-9) and 15e9 < w < 17e9


def test_enforce_eager_is_a_graph_limit_of_zero_by_hand():
    """--cuda-graph-max-batch 0 (vLLM's --enforce-eager): every decode pass takes at least the engine row's eager
    floor (eager_s_per_kernel x the model's kernels per pass, here ~1,300 x 57 µs; checked to 10%); the row's own
    limit (vllm-v0: 256) graphs them."""
    from roofline.catalog import model
    from roofline.model import kernels_per_pass
    from roofline.requests.simulate import SimulateRequest, simulate
    from roofline.simulate.overheads import EngineOverheads

    base = dict(model="llama-2-70b", system="mi325x-8", gpus=1, rate=2.0, requests=100, weights_dtype="fp8",
                kv_dtype="fp8", realistic=True, engine="vllm-v0")
    graphed = simulate(SimulateRequest.of(**base))[0]
    eager = simulate(SimulateRequest.of(**base, cuda_graph_max_batch=0))[0]
    gemms, elementwise, attention = kernels_per_pass(model("llama-2-70b"), low_precision_gemms=True)
    floor = EngineOverheads.load("vllm-v0").eager_s_per_kernel * (gemms + float(elementwise) + attention) * 0.9
    assert graphed["engine_cuda_graph_max_batch"] == 256 and eager["engine_cuda_graph_max_batch"] == 0
    assert graphed["tpot_p50_s"] < floor <= eager["tpot_p50_s"]


def test_scheduling_one_batch_ahead_delays_a_busy_engines_admissions_by_one_pass_by_hand():
    """Policy.schedule_ahead 1 (vLLM V1 asynchronous scheduling): every pass 10 ms; r0 (100 + 20 tokens) at 0 runs at
    once (first token 10 ms); r1 (50 + 2) arrives at 25 ms, during pass [20, 30]. Synchronously it joins the pass
    scheduled at 30 ms (first token 40 ms); one batch ahead, the pass [30, 40] was scheduled at 20 ms, before it
    arrived, so it joins [40, 50] (50 ms). A request that finds the engine empty starts at once either way, and the
    engine rows carry the setting (vllm: 1, cited; the others 0)."""
    from roofline.simulate.overheads import EngineOverheads, engine_policy

    wl = make_workload([0.0, 0.025], [100, 50], [20, 2])
    for kind in ("continuous", "chunked", "separate"):
        assert _run(kind, wl).first_token_s[1] == pytest.approx(0.040)
        ahead = _run(kind, wl, schedule_ahead=1)
        assert ahead.first_token_s[0] == pytest.approx(0.010) and ahead.first_token_s[1] == pytest.approx(0.050)
    idle = make_workload([0.0, 0.3], [100, 50], [2, 2])
    assert _run("chunked", idle, schedule_ahead=1).first_token_s[1] == pytest.approx(0.310)
    at_start = make_workload([0.0, 0.020], [100, 50], [20, 2])  # arrives as the pass that schedules [30, 40] starts
    assert _run("chunked", at_start, schedule_ahead=1).first_token_s[1] == pytest.approx(0.040)
    with pytest.raises(Exception, match="schedule_ahead must be 0"):
        Policy("chunked", schedule_ahead=2)
    vllm, sync = EngineOverheads.load("vllm"), EngineOverheads.load("vllm-v1-sync")
    assert vllm.schedule_ahead == 1 and "step_with_batch_queue" in vllm.sources["schedule_ahead"]
    assert sync.schedule_ahead == 0 and engine_policy(Policy("chunked"), sync) == Policy("chunked")
    assert engine_policy(Policy("chunked"), vllm).schedule_ahead == 1
    assert engine_policy(Policy("static"), vllm).schedule_ahead == 0  # a static batch keeps its own rule


def test_a_closed_loop_inside_the_run_sends_on_each_completion_by_hand():
    """core.ClosedLoop at C = 1, every pass 10 ms, three requests of 100 + 3 tokens released at 0, 5 ms from send to
    scheduler, 2 ms from finish to client: r0 reaches the scheduler at 5 ms and runs [5, 35] (first token 15 ms); the
    client sees it done at 37 ms and sends r1, which arrives at 42 ms (first token 52, finish 72); r2 is sent at
    74 ms. At C = 2 the first two start together. A closed loop needs one class of requests."""
    from roofline.simulate.core import ClosedLoop

    wl = make_workload([0.0, 0.0, 0.0], [100, 100, 100], [3, 3, 3])
    dep = Deployment(ConstantStep(0.010))
    loop = ClosedLoop(1, np.full(3, 0.005), 0.002)
    tr = Simulation(wl, dep, Policy("continuous", 8, 1000), closed_loop=loop).run()
    np.testing.assert_allclose(loop.sends_s, [0.0, 0.037, 0.074], atol=1e-12)
    np.testing.assert_allclose(tr.arrival_s, [0.005, 0.042, 0.079], atol=1e-12)
    np.testing.assert_allclose(tr.first_token_s, [0.015, 0.052, 0.089], atol=1e-12)
    np.testing.assert_allclose(tr.finish_s, [0.035, 0.072, 0.109], atol=1e-12)
    two = Simulation(wl, dep, Policy("continuous", 8, 1000), closed_loop=ClosedLoop(2, np.zeros(3))).run()
    np.testing.assert_allclose(two.first_token_s[:2], [0.010, 0.010], atol=1e-12)
    with pytest.raises(Exception, match="one class of requests"):
        Simulation(make_workload([0.0, 0.0], [10, 10], [2, 2], [0, 1]), dep, closed_loop=ClosedLoop(1, np.zeros(2)))
    with pytest.raises(Exception, match="concurrency must be a whole number"):
        ClosedLoop(0, np.zeros(2))
