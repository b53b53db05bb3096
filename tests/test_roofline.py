"""The one-pass roofline: cross-checks against the lecture's board, catalog-level golden numbers
(T12, T22, T26, T45), and the properties of DESIGN.md (Hypothesis)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline import lecture as L
from roofline import model as M
from roofline.catalog import accelerator, get_catalog, model, system
from roofline.efficiency import Efficiency
from roofline.engine import step
from roofline.errors import DoesNotFitError, InputError

IDEAL = dict(attention_flops=False, distinct_experts=False, kv_writes=False)


@pytest.mark.parametrize("mid,sid,wd", [("llama-3-70b", "dgx-h100", "bf16"), ("deepseek-v3", "gb200-nvl72", "fp8"),
                                         ("mixtral-8x7b", "hgx-h200", "fp8")])
def test_step_reproduces_lecture_board(mid, sid, wd):
    """Cross-check: step() in its idealised mode equals lecture.step_time with the model's bytes."""
    m, s = model(mid), system(sid)
    b_w = {"bf16": 2, "fp8": 1}[wd]
    B = np.array([1, 16, 256, 4096])[:, None]
    ctx = np.array([0, 1000, 30000])[None, :]
    r = step(m, s, B, ctx, weights_dtype=wd, kv_dtype="bf16", check_context=False, **IDEAL)
    F = L.flops_to_F(s.accelerator.peak_flops(wd) * s.chips, b_w)
    t = L.step_time(B, ctx, M.params_total(m) * b_w, M.matmul_params_per_token(m) * b_w,
                    M.kv_bytes_per_token(m, "bf16"), F, s.hbm_bytes_per_s)
    np.testing.assert_allclose(r.step_s, t, rtol=1e-12)
    # the critical batch printed by step() is the lecture's R·s with R from the system and s from the model
    R = F / s.hbm_bytes_per_s
    s_ratio = M.params_total(m) / M.matmul_params_per_token(m)
    assert r.critical_batch == pytest.approx(R * s_ratio, rel=1e-12)


def test_T22_hopper_x8_memory():
    assert system("dgx-h100").hbm_bytes == 640e9


def test_T26_weight_fetch_nvl72_vs_hopper_box():
    """1 TB of weights: 1.74 ms on 72×8 TB/s vs 37.3 ms on 8×3.35 TB/s (catalog figures)."""
    nvl = system("gb200-nvl72")
    hop = system("dgx-h100")
    assert L.latency_floor(1e12, nvl.hbm_bytes_per_s) == pytest.approx(1.736e-3, rel=1e-3)
    assert L.latency_floor(1e12, hop.hbm_bytes_per_s) == pytest.approx(37.3e-3, rel=1e-3)


@pytest.mark.parametrize("aid,dtype,expected", [("h100-sxm", "bf16", 295.2), ("b200", "fp4", 281.3),
                                                ("gb200", "fp4", 312.5), ("a100-80gb", "bf16", 153.0)])
def test_T45_ratio_from_catalog(aid, dtype, expected):
    # H100's catalog bf16 is 989.5 TF (datasheet 1,979 sparse / 2); the spec rounds to 989 → 295.2
    assert accelerator(aid).ratio(dtype) == pytest.approx(expected, rel=2e-3)


def test_lecture_frontier_on_nvl72_matches_T12():
    """The illustrative 1 TB (fp8) model on an NVL72: floor ≈ W/BW = 1.72 ms (T12 with 1e12 B)."""
    m = model("lecture-frontier-moe")
    r = step(m, system("gb200-nvl72"), 1, 0, weights_dtype="fp8", **IDEAL)
    assert r.latency_floor_s == pytest.approx(M.params_total(m) / (72 * 8e12), rel=1e-9)


def test_prefill_is_compute_bound_and_decode_memory_bound():
    """[S 01:44:34] prefill compute-bound, decode memory-bound (Llama 3 70B, 8×H100, B=8)."""
    m, s = model("llama-3-70b"), system("dgx-h100")
    assert step(m, s, 8, 2048, phase="decode").bound_name == "memory"
    assert step(m, s, 8, 0, phase="prefill", prompt=2048).bound_name == "compute"


def test_T38_through_step():
    m, s = model("llama-3-70b"), system("dgx-h100")
    d = step(m, s, 4, 1000, **IDEAL)
    p = step(m, s, 4, 1000, phase="prefill", prompt=64, **IDEAL)
    mem_d = (d.weight_read_s + d.kv_read_s) / 4
    mem_p = (p.weight_read_s + p.kv_read_s) / (4 * 64)
    assert mem_d == pytest.approx(64 * mem_p, rel=1e-12)


def test_cost_and_mfu_definitions():
    m, s = model("llama-3-8b"), system("dgx-h100")
    r = step(m, s, 32, 1024, gpus=1, usd_per_gpu_hour=3.6)
    assert r.usd_per_million_tokens == pytest.approx(float(r.step_s) * 3.6 / 3600 / 32 * 1e6)
    assert r.mfu == pytest.approx(32 * M.matmul_flops_per_token(m) / (float(r.step_s) * 989.5e12))
    assert r.tokens_per_s_per_sequence == pytest.approx(1 / float(r.step_s))


def test_efficiency_slows_the_right_term():
    m, s = model("llama-3-8b"), system("dgx-h100")
    base = step(m, s, 512, 100)
    slow = step(m, s, 512, 100, efficiency=Efficiency(compute=0.5))
    assert float(slow.compute_s) == pytest.approx(2 * float(base.compute_s))
    assert float(slow.weight_read_s) == pytest.approx(float(base.weight_read_s))


def test_errors_are_one_line_and_helpful():
    m, s = model("llama-3-70b"), system("dgx-h100")
    with pytest.raises(InputError, match="exceeds llama-3-70b's max_context 8,192"):
        step(m, s, 1, 10_000)
    with pytest.raises(InputError, match="batch must be > 0"):
        step(m, s, 0, 10)
    with pytest.raises(DoesNotFitError, match="needs .* GB per GPU"):
        step(model("llama-3.1-405b"), s, 1, 10, check_fit=True)
    with pytest.raises(InputError, match="fraction"):
        Efficiency(compute=1.5)


def test_vectorised_million_points_in_one_call():
    m, s = model("deepseek-v3"), system("gb200-nvl72")
    B = np.geomspace(1, 8192, 1000)[:, None]
    C = np.linspace(0, 100_000, 1000)[None, :]
    r = step(m, s, B, C, weights_dtype="fp8")
    assert r.step_s.shape == (1000, 1000) and np.all(np.isfinite(r.step_s))


# ---- properties (DESIGN.md "Tests" 3) ------------------------------------------------------------
MODELS = sorted(get_catalog().models)
SYSTEMS = sorted(get_catalog().systems)
pos_batch = st.floats(1, 20_000, allow_nan=False)
pos_ctx = st.floats(0, 30_000, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(MODELS), st.sampled_from(SYSTEMS), pos_batch, pos_batch, pos_ctx, pos_ctx,
       st.sampled_from(["decode", "prefill"]))
def test_step_time_non_decreasing_in_batch_and_context(mid, sid, b1, b2, c1, c2, phase):
    m, s = model(mid), system(sid)
    blo, bhi = sorted((b1, b2))
    clo, chi = sorted((c1, c2))
    kw = dict(phase=phase, prompt=128, weights_dtype="fp8", check_context=False)
    t = lambda b, c: float(step(m, s, b, c, **kw).step_s)  # noqa: E731
    assert t(blo, clo) <= t(bhi, clo) * (1 + 1e-12)
    assert t(blo, clo) <= t(blo, chi) * (1 + 1e-12)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(MODELS), st.sampled_from(SYSTEMS), pos_batch, pos_batch, pos_ctx)
def test_cost_per_token_non_increasing_up_to_critical_batch(mid, sid, b1, b2, ctx):
    m, s = model(mid), system(sid)
    kw = dict(weights_dtype="fp8", check_context=False)
    crit = float(step(m, s, 1, ctx, **kw).critical_batch_with_kv)
    blo, bhi = sorted((b1, min(b2, crit)))
    if blo > bhi:
        return
    cost = lambda b: float(step(m, s, b, ctx, **kw).usd_per_million_tokens)  # noqa: E731
    assert cost(bhi) <= cost(blo) * (1 + 1e-9)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(MODELS), st.integers(1, 8), st.integers(1, 8), pos_batch, pos_ctx)
def test_memory_per_gpu_non_increasing_in_parallel_degree(mid, n1, n2, b, ctx):
    m, s = model(mid), system("dgx-h100")
    lo, hi = sorted((n1, n2))
    mem = lambda n: float(step(m, s, b, ctx, gpus=n, check_context=False).memory_per_gpu_bytes)  # noqa: E731
    assert mem(hi) <= mem(lo)
