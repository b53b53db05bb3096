"""simulate/pools.py by hand on tiny workloads: the KV transfer time, prefill/decode disaggregation (each request's
first token, KV hand-over, decode passes, GPUs and blended price) and the fast/slow mode trade (constant steps,
and the lecture's board for T15), plus disaggregation through `roofline simulate --json`."""

import json

import numpy as np
import pytest

from roofline import get_model, get_system
from roofline.simulate import BoardStep, ConstantStep, Deployment, make_workload
from roofline.simulate.metrics import summarize
from roofline.simulate.pools import disaggregated, kv_transfer_s, mode_trade

PREFILL_S, DECODE_S, TRANSFER_S = 0.010, 0.002, 0.050


def _pools():
    return (Deployment(ConstantStep(PREFILL_S), gpus=1, usd_per_gpu_hour=3.0),
            Deployment(ConstantStep(DECODE_S), gpus=3, usd_per_gpu_hour=1.0))


def test_kv_transfer_time_by_hand():
    """llama-3-70b KV per token (bf16) = 80 layers x (K, V) x 8 KV heads x 128 dims x 2 B = 327,680 B; a
    1,000-token prompt is 3.2768e8 B. Over a DGX H100's 8 x 50 GB/s scale-out plus the 10 us hop:
    3.2768e8 / 4e11 + 1e-5 = 8.292e-4 s; over one GPU's NIC 6.5636e-3 s; fp8 KV halves the bytes."""
    m, s = get_model("llama-3-70b"), get_system("dgx-h100")
    assert (s.chips, s.scale_out_bytes_per_s, s.scale_out_latency_s) == (8, 50e9, pytest.approx(10e-6))
    kv = 80 * 2 * 8 * 128 * 2
    assert kv == 327_680
    assert kv_transfer_s(m, s, 1000) == pytest.approx(1000 * kv / (8 * 50e9) + 10e-6, rel=1e-12)
    assert kv_transfer_s(m, s, 1000) == pytest.approx(8.292e-4, rel=1e-12)
    np.testing.assert_allclose(kv_transfer_s(m, s, np.array([1000, 2000]), chips=1),
                               [1000 * kv / 50e9 + 10e-6, 2000 * kv / 50e9 + 10e-6], rtol=1e-12)
    assert kv_transfer_s(m, s, 1000, kv_dtype="fp8") == pytest.approx(1000 * kv / 2 / 4e11 + 10e-6, rel=1e-12)


def test_disaggregated_two_requests_by_hand():
    """Requests at t = 0 and 1 s, 5 output tokens each. The prefill pool's pass (10 ms) gives the first token at
    0.01 and 1.01 s; the KV arrives 50 ms later (0.06, 1.06 s); the decode pool runs the remaining 5 − 1 = 4
    decode passes of 2 ms: finish 0.068 and 1.068 s. GPUs are both pools' (1 + 3) and the price per GPU-hour is
    their GPU-weighted mean (1 x $3 + 3 x $1)/4 = $1.5."""
    pre, dec = _pools()
    r = disaggregated(make_workload([0.0, 1.0], 100, 5), pre, dec, TRANSFER_S)
    np.testing.assert_allclose(r.trace.first_token_s, [0.010, 1.010], rtol=1e-12)
    np.testing.assert_allclose(r.decode.arrival_s, [0.060, 1.060], rtol=1e-12)
    np.testing.assert_allclose(r.trace.finish_s, [0.060 + 4 * DECODE_S, 1.060 + 4 * DECODE_S], rtol=1e-12)
    assert (r.trace.gpus, r.trace.usd_per_gpu_hour, r.trace.policy) == (4, 1.5, "disaggregated")
    np.testing.assert_array_equal(r.transfer_s, [TRANSFER_S, TRANSFER_S])
    s = summarize(r.trace)
    # TTFT is the prefill pass; TPOT spreads the KV hand-over over the decode tokens: (0.05 + 4 x 0.002)/4
    assert s.ttft_p50_s == pytest.approx(PREFILL_S) and s.tpot_p50_s == pytest.approx((TRANSFER_S + 4 * DECODE_S) / 4)
    # cost = GPUs x blended price x makespan (1.068 s) over the 10 output tokens
    assert s.usd_per_million_tokens == pytest.approx(4 * 1.5 * 1.068 / 3600 / 10 * 1e6, rel=1e-12)


def test_disaggregated_batches_in_each_pool():
    """Three requests at t = 0 share one prefill pass (a constant 10 ms step whatever its batch) and four decode
    passes: all first tokens at 0.01 s, all finishes at 0.068 s, four decode iterations of batch 3."""
    pre, dec = _pools()
    r = disaggregated(make_workload([0.0, 0.0, 0.0], 100, 5), pre, dec, TRANSFER_S)
    np.testing.assert_allclose(r.trace.first_token_s, [PREFILL_S] * 3, rtol=1e-12)
    np.testing.assert_allclose(r.trace.finish_s, [0.060 + 4 * DECODE_S] * 3, rtol=1e-12)
    s = summarize(r.trace)
    assert s.iterations == 4 and s.mean_batch == pytest.approx(3.0)


def test_disaggregated_per_request_transfer_reorders_the_decode_pool():
    """Request 0 (t = 0) gets its first token at 0.01 s; request 1 arrives at 1 ms and is prefilled in the next
    pass (0.01-0.02 s). Request 0's KV takes 100 ms, request 1's none: request 1 decodes first (0.02 + 4 x 0.002
    = 0.028 s) and request 0 later (0.11 + 0.008 = 0.118 s); each finish lands on its own request."""
    pre, dec = _pools()
    r = disaggregated(make_workload([0.0, 0.001], 100, 5), pre, dec, np.array([0.100, 0.0]))
    np.testing.assert_allclose(r.trace.first_token_s, [0.010, 0.020], rtol=1e-12)
    np.testing.assert_allclose(r.trace.finish_s, [0.118, 0.028], rtol=1e-12)


def test_disaggregated_one_token_outputs_never_reach_the_decode_pool():
    pre, dec = _pools()
    r = disaggregated(make_workload([0.0, 0.5], 100, 1), pre, dec, TRANSFER_S)
    assert r.decode is None
    np.testing.assert_allclose(r.trace.finish_s, r.trace.first_token_s, rtol=0)
    np.testing.assert_allclose(r.trace.finish_s, [0.010, 0.510], rtol=1e-12)


def test_mode_trade_with_constant_steps():
    """A constant 10 ms step: both modes run at 1/0.01 = 100 tokens/s per request (speed ratio 1), and each pass
    is paid for whatever its batch, so the price ratio is the batch ratio 8/2 = 4. By hand, slow mode: 3 waves of
    8 one-token prompts, 200 passes a wave (prefill gives the first token, 199 decodes) = 6 s at $2/GPU-hour for
    24 x 200 tokens: 2 x 6 / 3600 / 4,800 x 1e6 = $0.6944/M."""
    d = mode_trade(Deployment(ConstantStep(0.01)), 8, 2)
    assert d["slow_speed_tokens_per_s"] == pytest.approx(100) and d["fast_speed_tokens_per_s"] == pytest.approx(100)
    assert d["speed_ratio"] == pytest.approx(1.0) and d["price_ratio"] == pytest.approx(8 / 2)
    assert d["slow_usd_per_million_tokens"] == pytest.approx(2 * 6 / 3600 / 4800 * 1e6, rel=1e-9)
    assert (d["slow_batch"], d["fast_batch"]) == (8, 2)


def test_mode_trade_reproduces_T15_on_the_lecture_board():
    """T15 (lecture §1.8 [I]): R = 300, s = 8, B* = R·s = 2,400; B_n = 2.5·B* = 6,000 is compute-bound
    (t = 6,000·W_a/F), B_f = B*/6 = 400 is weight-bound (t = W/BW = 2,400·W_a/F): speed ratio 6,000/2,400 = 2.5;
    price per token (t/B) 2,400/400 = 6 W_a/F against 1: price ratio 6."""
    board = BoardStep(w_total=8e11, w_active=1e11, F=300.0, BW=1.0)
    d = mode_trade(Deployment(board), 6000, 400, waves=2, output=20)
    assert d["speed_ratio"] == pytest.approx(2.5, rel=1e-9)
    assert d["price_ratio"] == pytest.approx(6.0, rel=1e-9)
    assert 1 / d["slow_speed_tokens_per_s"] == pytest.approx(6000 * 1e11 / 300, rel=1e-9)  # TPOT = B_n·W_a/F


def test_cli_disaggregated_gpus_and_price(run_cli):
    """simulate --policy disaggregated --prefill-gpus 2 on a DGX H100: a 2-GPU prefill pool and the 8-GPU decode
    pool = 10 GPUs paid at the H100's price; $/Mtok = 10 x price x makespan / 3600 / output tokens x 1e6."""
    code, out, err = run_cli("simulate", "-m", "llama-3-8b", "-s", "dgx-h100", "-n", "40", "--policy", "disaggregated",
                             "--prefill-gpus", "2", "--lengths", "fixed", "--prompt-tokens", "256", "--output-tokens",
                             "16", "--json")
    assert code == 0, err
    d = json.loads(out)
    price = get_system("dgx-h100").accelerator.usd_per_hour
    assert d["policy"] == "disaggregated" and d["gpus"] == 2 + 8 and d["requests"] == 40
    assert d["usd_per_million_tokens"] == pytest.approx(10 * price * d["makespan_s"] / 3600 / (40 * 16) * 1e6,
                                                        rel=1e-12)
