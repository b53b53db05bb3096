"""Serving-engine overheads (simulate/overheads.py, `simulate --engine`): by-hand TTFT and TPOT on a constant
step, the arrival shift and its inverse, the wrapper's step and mixed-pass protocol, the realistic family's
pass overhead replaced (not added twice), `--engine none` identical to no engine, the catalog rows."""

import json
from dataclasses import replace

import numpy as np
import pytest

from roofline.catalog import add_catalog_file, model, system
from roofline.efficiency import family_for
from roofline.errors import CatalogError, InputError
from roofline.model import kernels_per_pass
from roofline.simulate import ConstantStep, Deployment, Policy, Simulation, make_workload, roofline_deployment
from roofline.simulate.overheads import (
    FIGURES,
    EngineOverheads,
    OverheadStep,
    engine_names,
    restore_trace,
    run_closed_loop,
    run_with_engine,
    shift_arrivals,
    with_engine,
)
from roofline.simulate.steptable import MixedPass, StepTable, _batch_grid, mixed_pass

# hand-picked figures, all distinct so a term in the wrong place shows
OV = EngineOverheads("test", request_in_s=0.010, tokenize_s_per_token=1e-5, first_token_out_s=0.004,
                     per_pass_s=0.002, per_sequence_s=0.0005)
STEP_S = 0.020


def _run(wl, ov=OV, step=STEP_S, policy=Policy()):
    dep = with_engine(Deployment(ConstantStep(step)), ov)
    return run_with_engine(wl, ov, lambda w: Simulation(w, dep, policy).run())


def test_lone_request_by_hand():
    # one request, prompt 100, output 11: it reaches the scheduler at 0.5 + 0.010 + 100 x 1e-5 = 0.511 s; the
    # prefill pass (batch 1) takes 0.020 + 0.002 + 0.0005 = 0.0225 s; the token reaches the user 0.004 s later:
    # TTFT = 0.010 + 0.001 + 0.0225 + 0.004 = 0.0375 s. Each of the 10 decode passes: 0.0225 s = TPOT.
    wl = make_workload(np.array([0.5]), np.array([100.0]), np.array([11.0]))
    tr = _run(wl)
    assert tr.arrival_s[0] == 0.5
    assert tr.first_token_s[0] - tr.arrival_s[0] == pytest.approx(0.0375, abs=1e-12)
    assert (tr.finish_s[0] - tr.first_token_s[0]) / 10 == pytest.approx(0.0225, abs=1e-12)
    assert tr.finish_s[0] - tr.arrival_s[0] == pytest.approx(0.0375 + 10 * 0.0225, abs=1e-12)
    assert tr.admit_s[0] == pytest.approx(0.511, abs=1e-12)  # admission is the scheduler's clock


def test_in_process_client_drops_the_per_request_costs_by_hand():
    """The lone request of the hand test above, sent in process (--in-process: offline benchmarks, MLPerf harnesses):
    no request-in, tokeniser or first-token-out, so TTFT is the prefill pass alone, 0.0225 s, 0.015 s sooner; the
    decode passes keep their per-pass and per-sequence costs (TPOT 0.0225 s)."""
    ip = OV.in_process()
    assert (ip.request_in_s, ip.tokenize_s_per_token, ip.first_token_out_s) == (0.0, 0.0, 0.0)
    assert (ip.per_pass_s, ip.per_sequence_s) == (OV.per_pass_s, OV.per_sequence_s)
    wl = make_workload(np.array([0.5]), np.array([100.0]), np.array([11.0]))
    tr = _run(wl, ov=ip)
    assert tr.first_token_s[0] - tr.arrival_s[0] == pytest.approx(0.0225, abs=1e-12)
    assert (tr.finish_s[0] - tr.first_token_s[0]) / 10 == pytest.approx(0.0225, abs=1e-12)


def test_in_process_flag_and_run_key(run_cli):
    """`simulate --in-process` and the validator's run key `in_process` take the engine row's per-request terms out:
    at one request a second on an idle H100 the median TTFT falls by about the row's TTFT overhead, and --json says
    which client was modelled."""
    from roofline.validate import serving as S

    args = ["simulate", "-m", "llama-3-8b", "-s", "dgx-h100", "-g", "1", "--rate", "1", "--requests", "20",
            "--prompt-tokens", "128", "--output-tokens", "16", "--realistic", "--engine", "vllm", "--json"]
    code, out, _ = run_cli(*args)
    code_ip, out_ip, _ = run_cli(*args, "--in-process")
    assert code == code_ip == 0
    http, inproc = json.loads(out), json.loads(out_ip)
    assert (http["engine_in_process"], inproc["engine_in_process"]) == (False, True) and inproc["ttft_overhead_s"] == 0
    assert http["ttft_p50_s"] - inproc["ttft_p50_s"] == pytest.approx(http["ttft_overhead_s"], rel=0.2)
    run = {"id": "x", "engine": "vllm", "model": "llama-3-8b", "system": "dgx-h100", "gpus": 1, "replicas": 1,
           "rate": float("inf"), "requests": 1, "dataset": "d", "policy": "continuous", "max_seqs": 8,
           "max_batched_tokens": 4096, "weights_dtype": "bf16", "kv_dtype": "bf16", "metrics": ["ttft_mean"]}
    ds = {"kind": "uniform", "prompt_range": [128, 128], "output_range": [4, 4]}
    ovh = EngineOverheads.load("vllm")
    gap = S.simulate_run(run, ds)["ttft_mean"] - S.simulate_run({**run, "in_process": True}, ds)["ttft_mean"]
    assert gap == pytest.approx(ovh.ttft_overhead_s(128), rel=1e-6)


def test_in_process_client_sending_text_keeps_the_tokeniser_by_hand(run_cli):
    """An in-process client that sends text (--in-process-text; run key in_process_text: AccelMark's harness) still has
    the engine tokenise each prompt: of the in-process row only tokenize_s_per_token comes back. The lone request of the
    by-hand test gets TTFT 0.0225 s + 100 tokens x the row's tokeniser figure; at 20,000-token prompts on vLLM's row
    (5 us a token) the validator's TTFT grows by 0.1 s; the flag without --in-process is refused in one line."""
    tx = OV.in_process(text=True)
    assert (tx.request_in_s, tx.first_token_out_s, tx.tokenize_s_per_token) == (0.0, 0.0, OV.tokenize_s_per_token)
    wl = make_workload(np.array([0.5]), np.array([100.0]), np.array([11.0]))
    tr = _run(wl, ov=tx)
    assert tr.first_token_s[0] - tr.arrival_s[0] == pytest.approx(0.0225 + 100 * OV.tokenize_s_per_token, abs=1e-12)
    from roofline.validate import serving as S

    run = {"id": "x", "engine": "vllm", "model": "llama-3-8b", "system": "dgx-h100", "gpus": 1, "replicas": 1,
           "rate": float("inf"), "requests": 1, "dataset": "d", "policy": "continuous", "max_seqs": 8,
           "max_batched_tokens": 32768, "weights_dtype": "bf16", "kv_dtype": "bf16", "metrics": ["ttft_mean"],
           "in_process": True}
    ds = {"kind": "uniform", "prompt_range": [20000, 20000], "output_range": [4, 4]}
    gap = S.simulate_run({**run, "in_process_text": True}, ds)["ttft_mean"] - S.simulate_run(run, ds)["ttft_mean"]
    assert gap == pytest.approx(20000 * EngineOverheads.load("vllm").tokenize_s_per_token, rel=1e-6)
    code, _, err = run_cli("simulate", "-m", "llama-3-8b", "-s", "dgx-h100", "-g", "1", "--rate", "1", "--requests", "5",
                           "--realistic", "--engine", "vllm", "--in-process-text")
    assert code != 0 and err.count("\n") <= 1 and "--in-process" in err


def test_top_k_top_p_filter_by_hand():
    """Requests sampling through a top-k/top-p filter (--sampling top-k-top-p): the two requests of the test below, on
    a row with a filter of 0.001 s per pass + 1e-8 s per logit over a 100,000-entry vocabulary (0.001 s per sequence):
    each pass of batch 2 takes 0.020 + 0.002 + 0.001 + 2 x (0.0005 + 0.001) = 0.026 s, so TPOT = 0.026 s. Greedy
    requests (the default) never pay it, and a row without the figures refuses the filter in one line."""
    ov = replace(OV, tokenize_s_per_token=0.0, filter_s_per_pass=0.001, filter_s_per_logit=1e-8)
    wl = make_workload(np.zeros(2), np.full(2, 100.0), np.full(2, 6.0))
    np.testing.assert_allclose((_run(wl, ov=ov).finish_s - _run(wl, ov=ov).first_token_s) / 5, 0.023, atol=1e-12)
    tk = ov.with_top_k_top_p(100_000)
    assert tk.pass_overhead_s(2) == pytest.approx(0.002 + 0.001 + 2 * 0.0015, abs=1e-15)
    tr = _run(wl, ov=tk)
    np.testing.assert_allclose((tr.finish_s - tr.first_token_s) / 5, 0.026, atol=1e-12)
    assert tk.to_dict()["engine_sampling"] == "top-k-top-p" and ov.to_dict()["engine_sampling"] == "greedy"
    with pytest.raises(InputError, match="no top-k/top-p filter cost"):
        OV.with_top_k_top_p(100_000)
    with pytest.raises(InputError, match="vocabulary"):
        ov.with_top_k_top_p(0)


def test_sampling_flag_and_run_key(run_cli):
    """`simulate --sampling top-k-top-p` and the validator's run key `sampling`: with vLLM v0.14's row (V1's PyTorch
    sort path) a burst of 32 fixed-length requests of Qwen3-8B decodes in lock step, so TPOT grows by the filter at
    batch 32, filter_s_per_pass + 32 x filter_s_per_logit x 151,936; today's vllm row (FlashInfer's sampler, the
    default since vLLM PR #40376) filters 256 sequences in 0.115 + 256 x 151,936 x 0.015e-6 = 0.70 ms where the sort
    path takes 0.06 + 256 x 151,936 x 0.136e-6 = 5.35 ms; --json names the sampling; bad values get one line."""
    from roofline.validate import serving as S

    vllm, fi = EngineOverheads.load("vllm-v0.14"), EngineOverheads.load("vllm")
    vocab = model("qwen3-8b").vocab
    assert vocab == 151_936 and fi.per_pass_s == vllm.per_pass_s and fi.request_in_s == vllm.request_in_s
    assert fi.filter_s_per_pass + 256 * fi.filter_s_per_logit * vocab == pytest.approx(0.70e-3, abs=0.005e-3)
    assert vllm.filter_s_per_pass + 256 * vllm.filter_s_per_logit * vocab == pytest.approx(5.35e-3, abs=0.005e-3)
    per_pass = vllm.filter_s_per_pass + 32 * vllm.filter_s_per_logit * vocab
    run = {"id": "x", "engine": "vllm-v0.14", "model": "qwen3-8b", "system": "dgx-h100", "gpus": 1, "replicas": 1,
           "rate": float("inf"), "requests": 32, "dataset": "d", "policy": "chunked", "max_seqs": 64,
           "max_batched_tokens": 8192, "weights_dtype": "bf16", "kv_dtype": "bf16", "metrics": ["tpot_mean"]}
    ds = {"kind": "uniform", "prompt_range": [64, 64], "output_range": [64, 64]}
    gap = S.simulate_run({**run, "sampling": "top-k-top-p"}, ds)["tpot_mean"] - S.simulate_run(run, ds)["tpot_mean"]
    assert gap == pytest.approx(per_pass, rel=0.05)
    with pytest.raises(InputError, match="sampling 'top_p'; expected greedy or top-k-top-p"):
        S.simulate_run({**run, "sampling": "top_p"}, ds)
    with pytest.raises(InputError, match="no top-k/top-p filter cost"):
        S.simulate_run({**run, "engine": "trtllm", "sampling": "top-k-top-p"}, ds)
    args = ["simulate", "-m", "qwen3-8b", "-s", "dgx-h100", "-g", "1", "--rate", "2", "--requests", "20",
            "--prompt-tokens", "128", "--output-tokens", "16", "--realistic", "--engine", "vllm", "--json"]
    code, out, _ = run_cli(*args)
    code_s, out_s, _ = run_cli(*args, "--sampling", "top-k-top-p")
    assert code == code_s == 0
    assert (json.loads(out)["engine_sampling"], json.loads(out_s)["engine_sampling"]) == ("greedy", "top-k-top-p")
    assert json.loads(out_s)["tpot_overhead_s"] > json.loads(out)["tpot_overhead_s"]
    code, _, err = run_cli(*[a for a in args if a not in ("--engine", "vllm")], "--sampling", "top-k-top-p")
    assert code != 0 and "--sampling" in err and "--engine" in err and len(err.strip().splitlines()) == 1


def test_per_sequence_term_scales_with_the_batch():
    # two requests at t = 0 (no tokenising, so the one tokeniser does not space them) are both delayed 0.010 s and
    # prefilled in one pass of batch 2: 0.020 + 0.002 + 2 x 0.0005 = 0.023 s; TTFT = 0.010 + 0.023 + 0.004 = 0.037;
    # TPOT = 0.023.
    wl = make_workload(np.zeros(2), np.full(2, 100.0), np.full(2, 6.0))
    ov = replace(OV, tokenize_s_per_token=0.0)
    tr = _run(wl, ov=ov)
    np.testing.assert_allclose(tr.first_token_s - tr.arrival_s, 0.037, atol=1e-12)
    np.testing.assert_allclose((tr.finish_s - tr.first_token_s) / 5, 0.023, atol=1e-12)
    # the busy time per pass on the loop's clock carries the same overhead
    np.testing.assert_allclose(tr.seg_t0_s, 0.023, atol=1e-12)


def test_no_overheads_is_the_plain_run():
    wl = make_workload(np.array([0.0, 0.01, 0.5]), np.array([50.0, 900.0, 10.0]), np.array([3.0, 8.0, 2.0]))
    dep = Deployment(ConstantStep(STEP_S))
    plain = Simulation(wl, dep, Policy()).run()
    none = EngineOverheads.load("none")
    assert none.is_none and with_engine(dep, none) is dep
    tr = run_with_engine(wl, none, lambda w: Simulation(w, with_engine(dep, none), Policy()).run())
    for name in ("arrival_s", "admit_s", "first_token_s", "finish_s", "seg_t0_s", "seg_iters"):
        assert np.array_equal(getattr(tr, name), getattr(plain, name)), name


def test_one_tokeniser_serves_a_burst_in_turn_by_hand():
    """One tokeniser, first come first served (Lindley's recursion D_i = max(A_i, D_{i-1}) + S_i): three requests of
    1,000 tokens sent together reach the scheduler 0.010 s (request-in) + 0.010, 0.020 and 0.030 s later (1e-5 s a
    token each, one after the other), not all at 0.020 s; a request sent after the queue has drained waits for
    nobody. The closed loop's sends queue the same way (core.ClosedLoop.service_s)."""
    from roofline.simulate.core import fifo_departures

    np.testing.assert_allclose(fifo_departures([0.0, 0.0, 0.0], [1.0, 2.0, 3.0]), [1.0, 3.0, 6.0])
    np.testing.assert_allclose(fifo_departures([0.0, 10.0, 10.0], 1.0), [1.0, 11.0, 12.0])
    np.testing.assert_allclose(fifo_departures([0.0, 5.0, 1.0], 0.0), [0.0, 5.0, 5.0])  # no service: running max
    wl = make_workload(np.array([0.0, 0.0, 0.0, 1.0]), np.full(4, 1000.0), np.full(4, 2.0))
    shifted, order = shift_arrivals(wl, OV)
    np.testing.assert_allclose(shifted.arrival_s, [0.020, 0.030, 0.040, 1.020], atol=1e-12)
    assert order.tolist() == [0, 1, 2, 3]
    # the closed loop: two clients, four requests; the first two queue at the tokeniser like the burst above: the
    # first is admitted at 0.020 s, the second reaches the scheduler at 0.030 s, during the first's prefill pass
    # (0.020 to 0.0425 s: 0.020 + 0.002 + 0.0005), and is admitted when that pass ends; tokenised in parallel both
    # would have reached it at 0.020 s and shared one pass
    dep = with_engine(Deployment(ConstantStep(STEP_S)), OV)
    tr = run_closed_loop(wl, OV, 2, lambda w, loop: Simulation(w, dep, Policy(), closed_loop=loop).run())
    np.testing.assert_allclose(tr.admit_s[:2], [0.020, 0.0425], atol=1e-12)


def test_request_in_served_with_the_tokeniser_by_hand(monkeypatch):
    """SERIAL_REQUEST_IN (the declared alternative of sets aj and ak): request-in (0.010 s) joins the tokenising
    (0.010 s for 1,000 tokens) at one server, so three requests sent together reach the scheduler 0.020, 0.040 and
    0.060 s later (not 0.020, 0.030, 0.040 as with the tokeniser alone); a request sent after the queue has drained
    waits for nobody; the closed loop's sends queue the same way. Off (the default) the burst above is unchanged."""
    import roofline.simulate.overheads as O

    wl = make_workload(np.array([0.0, 0.0, 0.0, 1.0]), np.full(4, 1000.0), np.full(4, 2.0))
    assert not O.SERIAL_REQUEST_IN
    monkeypatch.setattr(O, "SERIAL_REQUEST_IN", True)
    np.testing.assert_allclose(O.serial_service_s(OV, [1000.0]), [0.020], atol=1e-12)
    shifted, order = shift_arrivals(wl, OV)
    np.testing.assert_allclose(shifted.arrival_s, [0.020, 0.040, 0.060, 1.020], atol=1e-12)
    # two clients: the second request reaches the scheduler at 0.040 s, after the first's pass (0.020 to 0.0425 s)
    # has started, and is admitted when that pass ends
    dep = with_engine(Deployment(ConstantStep(STEP_S)), OV)
    tr = run_closed_loop(wl, OV, 2, lambda w, loop: Simulation(w, dep, Policy(), closed_loop=loop).run())
    np.testing.assert_allclose(tr.admit_s[:2], [0.020, 0.0425], atol=1e-12)
    np.testing.assert_allclose(tr.arrival_s[:2], [0.0, 0.0], atol=1e-12)


def test_shift_resorts_and_restore_maps_back(monkeypatch):
    # tokenised in parallel (as the sets up to ad were registered): A (prompt 10,000) at 0 reaches the scheduler at
    # 0.010 + 0.100 = 0.110 s; B (prompt 10) at 0.001 s at 0.001 + 0.010 + 0.0001 = 0.0111 s: B is scheduled first,
    # and the trace comes back in A, B order. With one tokeniser B waits for A's 0.100 s: 0.110 + 0.0001 s, after A.
    import roofline.simulate.overheads as O

    wl = make_workload(np.array([0.0, 0.001]), np.array([10_000.0, 10.0]), np.array([2.0, 2.0]))
    serial, order = shift_arrivals(wl, OV)
    assert order.tolist() == [0, 1]
    np.testing.assert_allclose(serial.arrival_s, [0.110, 0.1101], atol=1e-12)
    monkeypatch.setattr(O, "SERIAL_TOKENIZER", False)
    shifted, order = shift_arrivals(wl, OV)
    assert order.tolist() == [1, 0]
    # every per-request column moves with its request (here a prefix id)
    wp = replace(wl, prefix_id=np.array([7, 9]), shared_prefix_tokens=np.array([64.0, 8.0]))
    sp = shift_arrivals(wp, OV)[0]
    assert sp.prefix_id.tolist() == [9, 7] and sp.shared_prefix_tokens.tolist() == [8.0, 64.0]
    np.testing.assert_allclose(shifted.arrival_s, [0.0111, 0.110], atol=1e-12)
    assert shifted.prompt_tokens.tolist() == [10.0, 10_000.0]
    tr = _run(wl)
    assert tr.arrival_s.tolist() == [0.0, 0.001] and tr.prompt_tokens.tolist() == [10_000.0, 10.0]
    # B alone in its prefill pass (batch 1): 0.0111 + 0.0225 + 0.004
    assert tr.first_token_s[1] == pytest.approx(0.0111 + 0.0225 + 0.004, abs=1e-12)
    assert tr.first_token_s[1] < tr.first_token_s[0]


def test_restore_is_the_inverse_of_the_shift():
    rng = np.random.default_rng(3)
    t = np.sort(rng.random(50))
    wl = make_workload(t, rng.integers(1, 5000, 50).astype(float), rng.integers(1, 50, 50).astype(float))
    shifted, order = shift_arrivals(wl, OV)
    plain = Simulation(shifted, Deployment(ConstantStep(STEP_S)), Policy()).run()
    tr = restore_trace(plain, wl, order, OV)
    assert np.array_equal(tr.arrival_s, wl.arrival_s) and np.array_equal(tr.prompt_tokens, wl.prompt_tokens)
    np.testing.assert_allclose(tr.first_token_s[order], plain.first_token_s + OV.first_token_out_s)
    np.testing.assert_allclose(tr.admit_s[order], plain.admit_s)


def test_overhead_step_protocol():
    inner = ConstantStep(STEP_S)
    st = OverheadStep(inner, 0.002, 0.0005)
    b = np.array([1.0, 8.0, 64.0])
    np.testing.assert_allclose(st.step_times(b, b, 100.0), STEP_S + 0.002 + 0.0005 * b)
    np.testing.assert_allclose(st(b, 2 * b, 0.0), STEP_S + 0.002 + 0.0005 * b)
    assert st.overhead_s(4) == pytest.approx(0.004) and st.inner is inner
    with pytest.raises(InputError):
        OverheadStep(inner, -1.0, 0.0)


def test_attention_dp_ranks_share_the_per_sequence_host_work():
    """Each attention-DP rank runs its own scheduler: a pass of B sequences on dp ranks adds τ_pass + τ_seq·⌈B/dp⌉
    (the busiest rank's share), not τ_seq·B; with_engine reads dp from the layout (TP ranks see every sequence)."""
    st = OverheadStep(ConstantStep(STEP_S), 0.002, 0.0005, schedulers=4)
    b = np.array([1.0, 8.0, 9.0, 64.0])
    np.testing.assert_allclose(st.step_times(b, b, 0.0), STEP_S + 0.002 + 0.0005 * np.array([1, 2, 3, 16]))
    assert st.overhead_s(9) == pytest.approx(0.002 + 3 * 0.0005)
    one = OverheadStep(ConstantStep(STEP_S), 0.002, 0.0005)  # one scheduler: linear, fractional batches too
    assert one.overhead_s(2.5) == pytest.approx(0.002 + 2.5 * 0.0005)
    from roofline.catalog import system
    from roofline.layout import Layout
    from roofline.simulate.steptable import deployment

    m, s = model("deepseek-v3"), system("hgx-b200")
    dp8 = with_engine(deployment(m, s, Layout(ep=8, dp=8), weights_dtype="fp4"), OV).step
    tp8 = with_engine(deployment(m, s, Layout(tp=8, ep=8), weights_dtype="fp4"), OV).step
    assert (dp8.schedulers, tp8.schedulers) == (8, 1)
    with pytest.raises(InputError, match="schedulers"):
        OverheadStep(ConstantStep(STEP_S), 0.0, 0.0, schedulers=0)


def _h100():
    from roofline.requests import resolve

    return resolve.hardware(None, "h100-sxm", 1)[0]


def test_mixed_pass_adds_the_same_overhead():
    dep = roofline_deployment(model("llama-3-8b"), _h100())
    st = OverheadStep(dep.step, 0.002, 0.0005)
    mp, base = mixed_pass(st, 8192, 4096), MixedPass(dep.step, 8192, 4096)
    assert mp is not None
    # 16 decoding sequences at context 500 each plus one 300-token chunk on 0 cached: batch 17
    got = mp(16, 1, 16 * 500.0, [(300.0, 0.0)])
    assert got == pytest.approx(base(16, 1, 16 * 500.0, [(300.0, 0.0)]) + 0.002 + 17 * 0.0005, rel=1e-12)
    # a decode-only pass equals the wrapped engine step
    assert mp(16, 1, 16 * 500.0, []) == pytest.approx(float(st.step_times(16.0, 16.0, 500.0)), rel=1e-9)


def test_realistic_family_pass_overhead_replaced_not_added():
    sysrec = _h100()
    dep = roofline_deployment(model("llama-3-8b"), sysrec, realistic=True)
    wrapped = with_engine(dep, OV)
    fam = family_for(sysrec.accelerator).pass_overhead_s.value
    assert fam > 0
    b = np.array([1.0, 32.0, 256.0])
    want = np.asarray(dep.step.step_times(b, b, 1000.0)) - fam + 0.002 + 0.0005 * b
    np.testing.assert_allclose(wrapped.step.step_times(b, b, 1000.0), want, rtol=1e-12)


def test_catalog_engines_and_corners():
    assert engine_names() == ("none", "sglang", "sglang-v0.3", "sglang-v0.4", "trtllm", "trtllm-engine", "vllm", "vllm-v0", "vllm-v0.14", "vllm-v0.5",
                              "vllm-v1-sync", "vllm-v1-sync-fullgraph")
    for e in engine_names()[1:]:
        mid, fast, slow = (EngineOverheads.load(e, w) for w in ("mid", "fast", "slow"))
        for n in FIGURES:
            assert getattr(fast, n) <= getattr(mid, n) <= getattr(slow, n), (e, n)
            assert mid.sources[n]
        assert mid.per_pass_s > 0 and mid.request_in_s > 0
    with pytest.raises(InputError, match="unknown engine 'tgi'; expected one of none, sglang, sglang-v0.3, sglang-v0.4, trtllm"):
        EngineOverheads.load("tgi")
    # the older schedulers expose more host work per step than their successors (RFC #6854, PR #1738)
    for old_, new_ in (("vllm-v0.5", "vllm-v0"), ("vllm-v0", "vllm"), ("vllm-v1-sync", "vllm"), ("sglang-v0.3", "sglang")):
        assert EngineOverheads.load(old_).per_pass_s > EngineOverheads.load(new_).per_pass_s
    # the declared hypothesis row differs from vllm-v1-sync in its per-worker term alone
    sync, full = EngineOverheads.load("vllm-v1-sync"), EngineOverheads.load("vllm-v1-sync-fullgraph")
    assert sync.per_worker_s > 0 and full.per_worker_s == 0
    # the hypothesis row for SGLang v0.4.0-v0.5.0 on FlashInfer is the sglang row with issue #5593's per-step bubble
    sg, sg04 = EngineOverheads.load("sglang"), EngineOverheads.load("sglang-v0.4")
    assert sg04.per_pass_s == 0.002 and "#5593" in sg04.sources["per_pass_s"]
    assert all(getattr(sg04, n) == getattr(sg, n) for n in FIGURES if n != "per_pass_s")
    assert all(getattr(sync, f) == getattr(full, f) for f in FIGURES if f != "per_worker_s")


def test_per_worker_overhead_is_paid_per_tensor_parallel_worker_beyond_the_first():
    """vllm-v1-sync: τ_pass + τ_worker·(tp − 1) per pass (set d: 1.75 ms at TP 1, ~3.8 ms at TP 4); rows without the
    figure (vllm, sglang, trtllm) pay nothing per worker, and the --json terms carry the same per-pass share."""
    from roofline.catalog import model, system
    from roofline.simulate.overheads import workers_of

    ovh = EngineOverheads.load("vllm-v1-sync")
    assert ovh.per_worker_s == pytest.approx(0.0007) and EngineOverheads.load("vllm").per_worker_s == 0.0
    for tp in (1, 4):
        dep = roofline_deployment(model("llama-3.1-8b"), system("dgx-h100"), chips=tp, realistic=True)
        wrapped = with_engine(dep, ovh)
        assert workers_of(dep) == workers_of(wrapped) == (tp, 1)
        assert wrapped.step.per_pass_s == pytest.approx(0.0017 + 0.0007 * (tp - 1))
        assert ovh.terms([100], 8.0, workers=tp)["tpot_overhead_s"] == pytest.approx(
            0.0017 + 0.0007 * (tp - 1) + 8 * 1.5e-05)


ROW = """engines:
  - id: {id}
    date: 2026-11
    figures:
      request_in_s: [0.001, 0.001, 0.002, "test"]
      tokenize_s_per_token: [0.0, 0.0, 0.0, "test"]
      first_token_out_s: [0.002, 0.001, 0.003, "test"]
      per_pass_s: [0.0001, 0.0001, 0.0001, "test"]
      per_sequence_s: [{seq}, 0.0, 0.001, "test"]
"""


def test_user_catalog_adds_an_engine_and_bad_rows_are_refused(tmp_path):
    p = tmp_path / "eng.yaml"
    p.write_text(ROW.format(id="myengine", seq=0.0))
    add_catalog_file(p)
    assert "myengine" in engine_names()
    assert EngineOverheads.load("myengine").first_token_out_s == 0.002
    bad = tmp_path / "bad.yaml"
    bad.write_text(ROW.format(id="other", seq=0.5))  # value above its high
    add_catalog_file(bad)
    with pytest.raises(CatalogError, match="figure 'per_sequence_s'"):
        engine_names()


def test_per_worker_term_applies_on_the_vendors_its_row_lists(tmp_path):
    """vLLM V0 / V1-sync's per-worker term was fitted on NVIDIA: on 8 MI300X it is 0, on 8 H100 0.65 ms per extra
    worker (a TP-8 pass of Llama 3.1 70B gains 7 × 0.65 ms there and nothing on MI300X); a malformed
    `per_worker_families` row key is refused with one line."""
    v0 = EngineOverheads.load("vllm-v0")
    assert v0.per_worker_families == ("nvidia",) and v0.per_worker_s == pytest.approx(6.5e-4)
    assert v0.for_system(system("mi300x-8")).per_worker_s == 0.0
    assert v0.for_system(system("dgx-h100")) is v0 and v0.for_system(None) is v0
    assert EngineOverheads.load("sglang").per_worker_families is None
    m = model("llama-3.1-70b")
    for sid, extra in (("dgx-h100", 7 * 6.5e-4), ("mi300x-8", 0.0)):
        dep = roofline_deployment(m, system(sid), chips=8, realistic=True, weights_dtype="fp8")
        bare = with_engine(dep, replace(v0, per_worker_s=0.0)).step
        assert float(with_engine(dep, v0).step(16, 16, 1000.0)) == pytest.approx(float(bare(16, 16, 1000.0)) + extra)
    bad = tmp_path / "bad.yaml"
    bad.write_text(ROW.format(id="other", seq=0.0).replace("    figures:", "    per_worker_families: [nvidia, x]\n    figures:"))
    add_catalog_file(bad)
    with pytest.raises(CatalogError, match="per_worker_families must be"):
        engine_names()


@pytest.mark.parametrize("value", ["[2, \"x\"]", "[true, \"x\"]", "[1]", "1"])
def test_a_malformed_schedule_ahead_row_key_is_refused(tmp_path, value):
    bad = tmp_path / "bad.yaml"
    bad.write_text(ROW.format(id="other", seq=0.0).replace("    figures:", f"    schedule_ahead: {value}\n    figures:"))
    add_catalog_file(bad)
    with pytest.raises(CatalogError, match="schedule_ahead must be"):
        engine_names()


# ---- through the CLI -----------------------------------------------------------------------------------
ONE = ("simulate", "-m", "llama-3-8b", "-a", "h100-sxm", "-n", "1", "--lengths", "fixed", "--prompt-tokens", "500",
       "--output-tokens", "21", "--json")


def _json(run_cli, *args):
    code, out, err = run_cli(*args)
    assert code == 0, err
    return json.loads(out)


def test_engine_none_is_identical_to_no_engine(run_cli):
    args = ("simulate", "-m", "llama-3-8b", "-a", "h100-sxm", "-n", "200", "--rate", "20", "--json")
    plain, none = _json(run_cli, *args), _json(run_cli, *args, "--engine", "none")
    assert plain == none and "engine" not in none


@pytest.mark.parametrize("realistic", [False, True])
def test_lone_request_through_the_cli(run_cli, realistic):
    # one request of 500 + 21 tokens: TTFT gains request-in + 500 x tokenise + first-token-out + the prefill
    # pass's per_pass + per_sequence (batch 1); each decode pass gains per_pass + per_sequence. Under
    # --realistic the family's pass_overhead_s leaves every pass (the engine's figures replace it).
    extra = ("--realistic", "--kernels", "factor") if realistic else ()  # the same kernels with and without --engine
    base, eng = _json(run_cli, *ONE, *extra), _json(run_cli, *ONE, *extra, "--engine", "vllm")
    v = EngineOverheads.load("vllm")
    fam = family_for(_h100().accelerator)
    per_pass = v.per_pass_s + v.per_sequence_s - (fam.pass_overhead_s.value if realistic else 0.0)
    ttft_extra = v.request_in_s + 500 * v.tokenize_s_per_token + v.first_token_out_s
    assert eng["ttft_p50_s"] - base["ttft_p50_s"] == pytest.approx(ttft_extra + per_pass, abs=1e-9)
    assert eng["tpot_p50_s"] - base["tpot_p50_s"] == pytest.approx(per_pass, abs=1e-9)
    assert eng["ttft_overhead_s"] == pytest.approx(ttft_extra, rel=1e-12)
    assert eng["tpot_overhead_s"] == pytest.approx(v.per_pass_s + v.per_sequence_s * eng["mean_batch"], rel=1e-12)
    assert eng["engine"] == "vllm" and eng["engine_per_pass_s"] == v.per_pass_s
    assert eng.get("engine_replaced_pass_overhead_s") == (fam.pass_overhead_s.value if realistic else None)


def test_engine_runs_with_disaggregation_and_grid(run_cli):
    d = _json(run_cli, "simulate", "-m", "llama-3-8b", "-s", "dgx-h100", "-n", "100", "--policy", "disaggregated",
              "--prefill-gpus", "4", "--engine", "trtllm", "--json")
    assert d["requests"] == 100 and d["engine"] == "trtllm" and d["ttft_p50_s"] > d["ttft_overhead_s"]
    g = _json(run_cli, "simulate", "-m", "llama-3-8b", "-a", "h100-sxm", "-n", "100", "--grid", "rate=2,4",
              "--engine", "sglang", "--json")
    s = EngineOverheads.load("sglang")
    for row in g["scenarios"]:
        assert row["engine"] == "sglang"
        assert row["tpot_overhead_s"] == pytest.approx(s.per_pass_s + s.per_sequence_s * row["mean_batch"])
    # engine as a grid axis: the same requests (engine is not a workload key), so one fixed-length request per
    # scenario shows exactly the engine's terms
    g = _json(run_cli, *ONE[:-1], "--grid", "engine=none,trtllm", "--json")
    none, trt = g["scenarios"]
    t = EngineOverheads.load("trtllm")
    assert none["engine"] == "none" and "ttft_overhead_s" not in none
    # the prefill pass runs outside CUDA graphs: at least τ_eager·K (K = 290 kernels of llama-3-8b in bf16)
    floor = t.eager_s_per_kernel * sum(np.sum(k) for k in kernels_per_pass(model("llama-3-8b")))
    assert floor == pytest.approx(290 * 57e-6) and floor > none["ttft_p50_s"]
    assert trt["ttft_p50_s"] - none["ttft_p50_s"] == pytest.approx(
        t.request_in_s + 500 * t.tokenize_s_per_token + t.first_token_out_s + t.per_pass_s + t.per_sequence_s
        + floor - none["ttft_p50_s"], abs=1e-9)


def test_unknown_engine_is_one_line(run_cli):
    for extra in ((), ("--grid", "rate=2,4")):
        code, out, err = run_cli("simulate", "-m", "llama-3-8b", "-a", "h100-sxm", "-n", "5", "--engine", "tgi",
                                 *extra)
        assert code == 1 and out == ""
        assert err.strip().count("\n") == 0 and "one of none, sglang, sglang-v0.3, sglang-v0.4, trtllm, trtllm-engine, vllm, vllm-v0" in err, err


def test_kernel_tables_in_the_simulator_give_steps_decode_pass(run_cli):
    """EngineStep(kernels="tables"): a decode pass equals `roofline step --realistic --kernels tables --engine E`'s
    step (the measured kernels' GEMM, attention and all-reduce terms at the central corner); a pass that carries
    prompt tokens keeps the factor model; an engine row takes its family's tables; the pure roofline is refused."""
    from roofline.catalog import system
    from roofline.simulate.steptable import with_kernel_tables

    dep = roofline_deployment(model("llama-3.1-70b"), system("dgx-h100"), chips=4, realistic=True)
    tab = with_kernel_tables(dep, "vllm-v0")
    assert tab.step.kernels == "tables" and tab.step.kernel_engine == "vllm"
    assert with_kernel_tables(dep, "none").step.kernel_engine == "trtllm"
    code, out, err = run_cli("step", "-m", "llama-3.1-70b", "-s", "dgx-h100", "--tp", "4", "-b", "8", "-c", "100",
                             "--realistic", "--kernels", "tables", "--engine", "vllm", "--json")
    assert code == 0, err
    want = json.loads(out)["realistic"]["step_s"]
    assert float(tab.step(8, 8, 100)) == pytest.approx(want, rel=1e-9)
    assert float(tab.step(8, 8, 100)) != pytest.approx(float(dep.step(8, 8, 100)), rel=1e-3)
    assert float(tab.step(1, 500, 0)) == float(dep.step(1, 500, 0))  # a prefill pass: the factor model
    with pytest.raises(InputError, match="add --realistic"):
        with_kernel_tables(roofline_deployment(model("llama-3.1-70b"), system("dgx-h100"), chips=4), "vllm")


def test_eager_floor_binds_prompt_passes_only_by_hand():
    """A pass that carries prompt tokens, in an engine that graphs decode-only batches alone, takes at least
    τ_eager·K (K = 290 kernels of llama-3-8b in bf16): a short prompt's pass is lifted to the floor, a long one
    (GPU-bound) and a decode-only pass keep the engine's time; the per-pass overhead adds on top."""
    dep = roofline_deployment(model("llama-3-8b"), system("dgx-h100"), chips=1)
    ovh = EngineOverheads("test", per_pass_s=1e-4, eager_s_per_kernel=1e-4)
    eng = with_engine(dep, ovh)
    assert eng.step.eager_floor_s == pytest.approx(290e-4)
    plain, floored = mixed_pass(dep.step, 4096, 4096), mixed_pass(eng.step, 4096, 4096)
    short, long = plain(0, 1, 0.0, [(16, 0.0)]), plain(0, 1, 0.0, [(4000, 0.0)])
    assert short < 290e-4 < long
    assert floored(0, 1, 0.0, [(16, 0.0)]) == pytest.approx(290e-4 + 1e-4)
    assert floored(0, 1, 0.0, [(4000, 0.0)]) == pytest.approx(long + 1e-4)
    assert floored(8, 1, 8 * 500.0, []) == pytest.approx(plain(8, 1, 8 * 500.0, []) + 1e-4)
    # the rows: cited for SGLang, an estimate for the engines that also run prompts eagerly; none for vLLM V1
    for name, tau in (("sglang", 57e-6), ("trtllm", 57e-6), ("vllm-v0", 57e-6), ("vllm", 0.0), ("vllm-v1-sync", 0.0),
                      ("trtllm-engine", 0.0)):
        assert EngineOverheads.load(name).eager_s_per_kernel == tau


def test_trtllm_engine_row_is_trtllm_without_the_eager_floor():
    """`trtllm-engine` (TensorRT engine builds in the C++ executor: MLPerf's NVIDIA harness, Triton) differs from the
    `trtllm` row (PyTorch backend) only in having no eager floor and no overlap loop scheduling one batch ahead (not
    read from the C++ executor), at every corner, and takes the trtllm kernel tables."""
    from roofline.kernels import default_kernels, table_family

    for which in ("mid", "fast", "slow"):
        py, cpp = EngineOverheads.load("trtllm", which=which), EngineOverheads.load("trtllm-engine", which=which)
        assert cpp.eager_s_per_kernel == 0.0 < py.eager_s_per_kernel
        assert cpp.schedule_ahead == 0 < py.schedule_ahead
        assert replace(cpp, engine="trtllm", eager_s_per_kernel=py.eager_s_per_kernel, sources=py.sources,
                       schedule_ahead=1) == py
    assert table_family("trtllm-engine") == "trtllm"
    assert default_kernels("b200", "trtllm-engine", realistic=True) == "tables"
    dep = roofline_deployment(model("llama-3-8b"), system("dgx-h100"), chips=1)
    assert with_engine(dep, EngineOverheads.load("trtllm-engine")).step.eager_floor_s == 0.0


def test_decode_batches_above_the_graph_limit_run_eagerly_by_hand():
    """A decode batch larger than the engine's largest captured CUDA graph takes at least the eager floor; at or
    below it the engine's time; with attention-DP schedulers the limit is per scheduler. The rows' limits are
    the engines' defaults (SGLang 160, vLLM V0 256; none given: every batch graphed)."""
    dep = roofline_deployment(model("llama-3-8b"), system("dgx-h100"), chips=1)
    ovh = EngineOverheads("test", eager_s_per_kernel=1e-3, cuda_graph_max_batch=8)
    step = with_engine(dep, ovh).step
    floor = step.eager_floor_s
    assert floor == pytest.approx(0.290)
    t8, t9 = (float(dep.step.step_times(b, b, 100.0)) for b in (8, 9))
    assert float(step.step_times(8, 8, 100.0)) == pytest.approx(t8)
    assert float(step.step_times(9, 9, 100.0)) == pytest.approx(floor) and floor > t9
    two = OverheadStep(dep.step, eager_floor_s=floor, graph_max_batch=8, schedulers=2)
    assert float(two.step_times(16, 16, 100.0)) == pytest.approx(float(dep.step.step_times(16, 16, 100.0)))
    mp = mixed_pass(step, 4096, 4096)
    assert mp(8, 1, 800.0, []) < floor and mp(9, 1, 900.0, []) == pytest.approx(floor)
    assert [EngineOverheads.load(e).cuda_graph_max_batch for e in ("sglang", "vllm-v0", "vllm")] == [160, 256, np.inf]
    assert EngineOverheads("test", cuda_graph_max_batch=0).cuda_graph_max_batch == 0  # --enforce-eager: none graphed
    with pytest.raises(InputError, match="cuda_graph_max_batch must be a batch >= 0"):
        EngineOverheads("test", cuda_graph_max_batch=-1)


def test_step_table_keeps_the_graph_limit_on_its_batch_grid():
    """The table's batch grid holds the largest graphed batch and the next one (OverheadStep.batch_breaks), so a
    pass at the limit reads the graphed time and one above it the eager floor, never a blend of the two (found
    through serving set z: a batch of 128 under TensorRT-LLM's 128 limit read between 125.9 and 132.1, twice its
    time)."""
    dep = roofline_deployment(model("llama-3-8b"), system("dgx-h100"), chips=1)
    step = with_engine(dep, EngineOverheads("test", eager_s_per_kernel=1e-3, cuda_graph_max_batch=130)).step
    assert step.batch_breaks == (130.0,)
    assert 130 not in _batch_grid(512.0) and {130.0, 131.0} <= set(_batch_grid(512.0, step.batch_breaks))
    table = StepTable(step, 512, 1, 4096)
    for b in (129.0, 130.0, 131.0, 200.0):
        assert table.t(b, b, 1000.0) == pytest.approx(float(step.step_times(b, b, 1000.0)), rel=1e-3)
    assert table.t(131.0, 131.0, 1000.0) >= step.eager_floor_s > 2 * table.t(130.0, 130.0, 1000.0)
    assert StepTable(step, 64, 1, 4096).B == _batch_grid(64.0)  # a limit above the largest batch adds nothing
    plain = OverheadStep(dep.step, per_pass_s=1e-4, graph_max_batch=130)  # no eager floor: no jump
    assert plain.batch_breaks == () and StepTable(plain, 512, 1, 4096).B == _batch_grid(512.0)


def test_cli_cuda_graph_max_batch_overrides_the_engine_row(run_cli):
    """`--cuda-graph-max-batch` replaces the row's limit: at 4, the decode batches of a loaded run (mean ~40) run
    eagerly and take sglang's floor (17 ms for llama-3-8b), so TPOT rises from ~12 ms to above the floor."""
    base = ("simulate", "-m", "llama-3-8b", "-a", "h100-sxm", "--realistic", "--engine", "sglang", "--rate", "20", "-n",
            "400", "--prompt-tokens", "500", "--output-tokens", "200", "--json")
    row = json.loads(run_cli(*base)[1])
    low = json.loads(run_cli(*base, "--cuda-graph-max-batch", "4")[1])
    assert (row["engine_cuda_graph_max_batch"], low["engine_cuda_graph_max_batch"]) == (160, 4)
    floor = 57e-6 * 290
    assert row["tpot_p50_s"] < floor < low["tpot_p50_s"]
    code, _, err = run_cli(*base[:-1], "--grid", "rate=2,4", "--cuda-graph-max-batch", "4")
    assert code != 0 and "--cuda-graph-max-batch" in err


def test_kernels_auto_takes_the_measured_tables_where_the_engine_family_has_them(run_cli):
    """`--kernels auto` (the default): with --realistic and an engine family whose measured GEMM tables cover the
    accelerator, exactly `--kernels tables` (with --expert-weights-dtype too, since set x: the experts read their
    format's MoE rows); on an accelerator without tables (MI300X) or with --engine none, exactly `--kernels factor`;
    the JSON says which. A grid scenario takes the same rule."""
    run = ("simulate", "-m", "llama-3-8b", "--realistic", "-n", "60", "--rate", "4", "--json")
    h100 = (*run, "-a", "h100-sxm", "--engine", "vllm")
    auto, tables, factor = (_json(run_cli, *h100, *k) for k in ((), ("--kernels", "tables"), ("--kernels", "factor")))
    assert auto["kernels"] == "tables" and auto["kernel_tables"] == "vllm" and factor["kernels"] == "factor"
    assert auto["tpot_p50_s"] == tables["tpot_p50_s"] != factor["tpot_p50_s"]
    assert auto["ttft_p50_s"] == tables["ttft_p50_s"]
    for extra in (("-a", "mi300x", "--engine", "vllm"), ("-a", "h100-sxm")):
        a, f = _json(run_cli, *run, *extra), _json(run_cli, *run, *extra, "--kernels", "factor")
        assert a["kernels"] == "factor" and a["tpot_p50_s"] == f["tpot_p50_s"], extra
    moe = ("simulate", "-m", "gpt-oss-120b", "-a", "h100-sxm", "--realistic", "--engine", "vllm", "-n", "20",
           "--rate", "1", "--weights-dtype", "bf16", "--expert-weights-dtype", "fp4", "--json")
    assert _json(run_cli, *moe)["kernels"] == "tables"
    assert "kernels" not in _json(run_cli, "simulate", "-m", "llama-3-8b", "-a", "h100-sxm", "-n", "20", "--json")
    g = _json(run_cli, *h100, "--grid", "engine=vllm,none")["scenarios"]
    assert [row["kernels"] for row in g] == ["tables", "factor"]
    code, _, err = run_cli(*h100, "--kernels", "factor", "--grid", "rate=4")
    assert code != 0 and "--kernels (a grid takes auto)" in err


def test_ungraphed_vllm_v1_passes_by_hand(monkeypatch):
    """overheads.UNGRAPHED_PASSES (a hypothesis, off by default): under a vLLM V1 row a pass of more tokens than the
    largest CUDA graph (512) adds UNGRAPHED_S_PER_LAYER per layer (Llama 3.1 8B: 32 x 0.8 ms = 25.6 ms), a pass of 512
    tokens nothing; SGLang's row nothing; off, nothing anywhere."""
    from roofline.catalog import get_catalog
    from roofline.simulate import overheads as O
    from roofline.simulate import roofline_deployment
    from roofline.simulate.steptable import mixed_pass

    cat = get_catalog()

    def times(row):
        dep = O.with_engine(roofline_deployment(cat.model("llama-3.1-8b"), cat.system("dgx-h100")),
                            O.EngineOverheads.load(row))
        mp = mixed_pass(dep.step, 8192, 8192)
        table = dep.step.step_times([1.0, 1.0], [512.0, 1000.0], [0.0, 0.0])
        return [mp(0, 1, 0.0, [(n, 0)]) for n in (512, 513, 1000)], table

    off_v1, off_table = times("vllm-v1-sync")
    off_sgl, _ = times("sglang")
    monkeypatch.setattr(O, "UNGRAPHED_PASSES", True)
    on_v1, on_table = times("vllm-v1-sync")
    on_sgl, _ = times("sglang")
    extra = 32 * O.UNGRAPHED_S_PER_LAYER
    assert on_v1[0] == off_v1[0] and on_v1[1] == pytest.approx(off_v1[1] + extra)
    assert on_v1[2] == pytest.approx(off_v1[2] + extra) and on_sgl == off_sgl
    assert on_table[0] == off_table[0] and on_table[1] == pytest.approx(off_table[1] + extra)
