"""Spec §9 worked examples of chapters 1 and 5.1–5.3 (T01–T15, T34–T38, T45, T46) as golden tests.

Conventions from the spec: W in bytes with b_w = 1 unless stated, R = 300, times in seconds.
Each row: (id, computed by the library, expected, relative tolerance).
"""

import numpy as np
import pytest

from roofline import lecture as L
from roofline.hardware import hardware_ratio, hardware_ratio_flops

R = 300.0


def _t14():
    # R = F/BW = 300 with BW = 1; s = 8 → W_total = 8 · W_active
    return L.batch1_cost_ratio(w_total=8e11, w_active=1e11, F=R, BW=1.0)


def _t15():
    b_star = L.critical_batch(R, 8)
    return L.fast_mode(2.5 * b_star, b_star / 6, w_total=8e11, w_active=1e11, F=R, BW=1.0)


GOLDEN = [
    ("T01 critical batch R·s", lambda: L.critical_batch(R, 8), 2400, 0),
    ("T02 practical band low", lambda: 2 * L.critical_batch(R, 8), 4800, 0),
    ("T02 practical band high", lambda: 3 * L.critical_batch(R, 8), 7200, 0),
    ("T03 B* from real counts", lambda: L.critical_batch(R, 700e9 / 37e9), 5675.7, 1e-3),
    ("T04 Rubin HBM drain", lambda: L.drain_time(288e9, 20e12), 0.0144, 1e-6),
    ("T05 worst-case train latency", lambda: L.worst_case_latency(0.020), 0.040, 0),
    ("T06 throughput 64 steps/s", lambda: L.throughput(2000, steps_per_s=64), 128_000, 0),
    ("T07 throughput at 20 ms", lambda: L.throughput(2000, step_s=0.020), 100_000, 1e-12),
    ("T08 systems for 1e8 tok/s", lambda: L.systems_for_traffic(1e8, 1.28e5), 781.25, 1e-12),
    ("T08 systems for 5e8 tok/s", lambda: L.systems_for_traffic(5e8, 1.28e5), 3906.25, 1e-12),
    ("T09 MFU at 2x ctx*", lambda: L.mfu_vs_context(200e3, 100e3), 0.5, 0),
    ("T10 crossover batch with KV", lambda: L.critical_batch_with_kv(R, 8, 50e3, 100e3), 4800, 1e-12),
    ("T11 memory/compute at B*, ctx*", lambda: L.memory_to_compute_ratio(2400, 2400, 1e5, 1e5), 2.0, 0),
    ("T12 latency floor NVL72", lambda: L.latency_floor(1e12, 72 * 8e12), 1.736e-3, 1e-3),
    ("T13 cost per token", lambda: L.cost_per_token(0.020, 2000, 72, 2.0), 4.0e-7, 1e-9),
    ("T14 batch-1 vs large-batch cost", _t14, 2400, 1e-9),
    ("T15 fast-mode speed-up", lambda: _t15()[0], 2.5, 1e-9),
    ("T15 fast-mode price ratio", lambda: _t15()[1], 6.0, 1e-9),
    ("T34 kv from the 200K price kink", lambda: L.kv_from_price_kink(R, 1e11, 2e5), 1666.6667, 1e-6),
    ("T35 kv from architecture fp8", lambda: L.kv_from_architecture(1, 128, 8, 1), 2048, 0),
    ("T36 kv from architecture bf16", lambda: L.kv_from_architecture(1, 128, 8, 2), 4096, 0),
    ("T37 memory/compute from 5x price", lambda: L.decode_mfu_from_price_ratio(5)[0], 5, 0),
    ("T37 decode MFU from 5x price", lambda: L.decode_mfu_from_price_ratio(5)[1], 0.2, 0),
    ("T45 H100 R", lambda: hardware_ratio(989e12, 2, 3.35e12), 295.2, 1e-3),
    ("T45 B200 R", lambda: hardware_ratio(9e15, 0.5, 8e12), 281.3, 1e-3),
    ("T45 GB200 R", lambda: hardware_ratio(1e16, 0.5, 8e12), 312.5, 1e-3),
    ("T45 A100 R", lambda: hardware_ratio(312e12, 2, 2.039e12), 153.0, 1e-3),
]


@pytest.mark.parametrize("name,fn,expected,tol", GOLDEN, ids=[g[0] for g in GOLDEN])
def test_golden(name, fn, expected, tol):
    got = float(np.asarray(fn()))
    if tol == 0:
        assert got == expected
    else:
        assert got == pytest.approx(expected, rel=tol)


def test_T08_share_is_about_one_thousandth():
    shares = 1.0 / L.systems_for_traffic(np.array([1e8, 5e8]), 1.28e5)
    assert np.all((shares > 1e-4) & (shares < 1e-2))  # "~1/1000", order of magnitude


def test_T10_no_crossover_beyond_balanced_context():
    assert np.isinf(L.critical_batch_with_kv(R, 8, 1e5, 1e5))
    assert np.isinf(L.critical_batch_with_kv(R, 8, 2e5, 1e5))


def test_T15_fast_batch_is_15x_smaller_than_normal():
    b_star = L.critical_batch(R, 8)
    assert (2.5 * b_star) / (b_star / 6) == pytest.approx(15)


def test_T38_decode_memory_per_token_is_L_times_prefill():
    for len_pass in (1, 8, 512, 4096):
        c1, m1 = L.pass_cost_per_token(64, 1, 1e4, 1e12, 1e11, 2048, 300.0, 1.0)
        cL, mL = L.pass_cost_per_token(64, len_pass, 1e4, 1e12, 1e11, 2048, 300.0, 1.0)
        assert m1 == pytest.approx(len_pass * mL, rel=1e-12)
        assert c1 == pytest.approx(cL, rel=1e-12)  # compute per token is flat


def test_T46_latency_vs_batch_shape():
    B = np.array([1, 10, 1000, 2999, 3000, 3001, 6000, 1e5])
    t = L.step_time(B, 0.0, 1e12, 1e11, 0.0, F=300.0, BW=1.0)
    expected = np.where(B <= 3000, 1e12, B * 1e11 / 300)
    np.testing.assert_allclose(t, expected, rtol=1e-12)


def test_T45_both_unit_readings_agree_on_time():
    """§0.3: t_compute = B·W_active/F (multiplies × bytes) equals 2·B·N_active/FLOPS (standard)."""
    flops, bw, n_active, batch = 9e15, 8e12, 1e11, 512
    for b_w in (0.5, 1.0, 2.0):
        F = L.flops_to_F(flops, b_w)
        lecture = batch * n_active * b_w / F
        standard = 2 * batch * n_active / flops
        assert lecture == pytest.approx(standard, rel=1e-12)
        # R in the lecture's reading is the standard FLOP/byte ridge point times b_w/2
        assert hardware_ratio(flops, b_w, bw) == pytest.approx(hardware_ratio_flops(flops, bw) * b_w / 2)
    # the pitfall: forgetting the factor 2 doubles R for FP4 (≈ 562 instead of ≈ 281)
    assert flops * 0.5 / bw == pytest.approx(2 * hardware_ratio(flops, 0.5, bw))


def test_T14_ratio_is_R_times_s_for_any_sparsity():
    for s in (1, 2, 8, 18.9):
        assert L.batch1_cost_ratio(s * 1e11, 1e11, R, 1.0) == pytest.approx(R * s, rel=1e-9)


def test_sparse_attention_grows_as_sqrt_context():
    _, _, kv1 = L.step_times(1, 1e4, 0, 0, 1.0, 1.0, 1.0, sparse_c=2.0)
    _, _, kv4 = L.step_times(1, 4e4, 0, 0, 1.0, 1.0, 1.0, sparse_c=2.0)
    assert kv4 / kv1 == pytest.approx(2.0)


def test_cost_floor_and_latency_crossover_at_same_batch():
    """[S 00:22:25]: the latency plot and the cost plot cross over at the same B.

    By hand (W = 1e12 B, W_active = 1e11 B, kv = 2,048 B/token, ctx = 1e4, F = 300, BW = 1, so R = 300,
    s = W/W_active = 10 and ctx* = W_active/(R·kv) = 162,760.4): latency leaves the memory line
    W/BW + B·ctx·kv/BW where B·W_active/F = W/BW + B·ctx·kv/BW, i.e. B_x = (W/BW)/(W_active/F − ctx·kv/BW)
    = R·s/(1 − ctx/ctx*) = 3,196.4 (T10's formula). Cost per token t/B is (W/BW)/B + ctx·kv/BW below B_x
    (falling) and the flat floor W_active/F = 3.33e8 s above it. Each crossover is read off its own curve.
    """
    w, w_active, kv, ctx, F, BW = 1e12, 1e11, 2048.0, 1e4, 300.0, 1.0
    b_x = (w / BW) / (w_active / F - ctx * kv / BW)
    assert b_x == pytest.approx(3196.4, rel=1e-4)
    assert b_x == pytest.approx(float(L.critical_batch_with_kv(F / BW, w / w_active, ctx, w_active / (F / BW * kv))))
    B = np.geomspace(1, 1e5, 2001)
    t = L.step_time(B, ctx, w, w_active, kv, F, BW)
    memory_line = w / BW + B * ctx * kv / BW
    cost, floor = t / B, w_active / F
    lat_cross = B[np.argmax(t > memory_line * (1 + 1e-12))]  # first B whose latency is above the memory line
    cost_cross = B[np.argmax(cost <= floor * (1 + 1e-12))]  # first B whose cost per token is at the floor
    first_above = B[np.searchsorted(B, b_x)]  # the grid point just above B_x (grid step 0.58%)
    assert lat_cross == cost_cross == first_above
    below = B < b_x
    np.testing.assert_allclose(cost[below], (w / BW) / B[below] + ctx * kv / BW, rtol=1e-12)
    np.testing.assert_allclose(cost[~below], floor, rtol=1e-12)
