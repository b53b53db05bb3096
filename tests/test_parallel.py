"""Parallel layouts: lecture goldens T16–T26 (§2–§3), hand-checked memory per GPU, the engine's step under a
layout (cross-checked against the perfect-sharding step), Hypothesis properties, validity messages."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline import layout as P
from roofline import lecture as LEC
from roofline import memory as MEM
from roofline.catalog import get_catalog
from roofline.engine import step
from roofline.errors import InputError
from roofline.network import Tier

CAT = get_catalog()
LLAMA = CAT.model("llama-3-70b")
DSV3 = CAT.model("deepseek-v3")
H100 = CAT.system("dgx-h100")
NVL72 = CAT.system("gb200-nvl72")


def parallel_step(m, s, batch, context, *, tp=1, ep=1, pp=1, dp=1, domains=1, tiers=None, check=True, **kw):
    """The engine's pass of one replica of layout (tp, ep, pp, dp); `tiers` replaces the system's links."""
    if tiers is not None:
        up, out = tiers
        s = replace(s, scale_up_bytes_per_s=up.bytes_per_s, scale_up_latency_s=up.latency_s,
                    scale_out_bytes_per_s=out.bytes_per_s, scale_out_latency_s=out.latency_s)
    return step(m, s, batch, context, layout=P.Layout(tp=tp, ep=ep, pp=pp, dp=dp, domains=domains), check=check, **kw)


def memory_per_gpu(m, tp=1, ep=1, pp=1, dp=1, batch=1, context=0, **kw):
    return MEM.memory_per_gpu(m, P.Layout(tp=tp, ep=ep, pp=pp, dp=dp), batch, context, **kw)


# ---- spec §9 goldens ---------------------------------------------------------------------------
def test_t16_sparsity_quality_equivalence():
    assert LEC.sparsity_quality_equivalence(1.3e9, 3.7e8) == pytest.approx(3.51, rel=1e-2)


def test_t17_experts_per_gpu():
    p = P.place_experts(256, 72)
    assert (p.ep, p.experts_per_gpu, p.idle_gpus) == (64, 4, 8)


def test_t18_t19_t20_stage_boundary():
    assert LEC.stage_boundary_ratio(8, 1, 8) == 2.0
    assert LEC.stage_boundary_ratio(3, 1, 8) == 0.75
    assert LEC.stage_boundary_ratio(3, 2, 8) == 1.5
    # T20: the threshold is 2kL >= 8 when BW_up/BW_out = 8
    assert LEC.stage_boundary_ratio(4, 1, 8) == 1.0 and LEC.stage_boundary_ratio(1, 3, 8) < 1.0


def test_t21_two_rack_ep_slowdown():
    from roofline.network import all_to_all_two_tier_s, fraction_off_domain

    assert fraction_off_domain(2) == 0.5
    assert LEC.ep_slowdown_over_domains(2, 8) == 4.0
    # cross-check with the two-tier all-to-all at many GPUs per rack (own share → 0)
    one = all_to_all_two_tier_s(1e9, 1, 4096, 8.0, 1.0, 0.0, 0.0).time_s
    two = all_to_all_two_tier_s(1e9, 2, 4096, 8.0, 1.0, 0.0, 0.0).time_s
    assert two / one == pytest.approx(4.0, rel=1e-3)


def test_t22_hopper_x8_memory():
    assert H100.hbm_bytes == pytest.approx(640e9)


def test_t23_memory_per_gpu_with_pp():
    w, kv, tot = LEC.memory_per_gpu(1e12, 2400, 1e5, 2048, 64, np.array([1, 2, 4, 8]))
    assert w / 1e9 == pytest.approx([15.625, 7.8125, 3.90625, 1.953125], rel=1e-6)
    assert kv / 1e9 == pytest.approx([7.68] * 4, rel=1e-6)
    assert tot / 1e9 == pytest.approx([23.305, 15.4925, 11.58625, 9.633125], rel=1e-6)


def test_t23_layout_memory_agrees_with_lecture_form():
    """Cross-check: the layout memory (attention-DP 64 = the lecture's E, B = P·b) has the same KV term."""
    P_ = np.array([1, 2, 4, 8])
    mem = memory_per_gpu(DSV3, 1, 64, P_, 64, P_ * 2400, 1e5, bytes_per_weight=1.0, bytes_per_kv=1.0)
    kv_seq = 1e5 * 35136.0  # MLA: (512 + 64) · 61 layers · 1 B per token
    _, kv_lecture, _ = LEC.memory_per_gpu(0.0, 2400, 1e5, 35136.0, 64, P_)
    f = np.ceil(61 / P_) / 61  # 61 layers split unevenly: the biggest stage holds ceil(61/P)
    assert kv_seq * 2400 / 64 == pytest.approx(kv_lecture)  # P cancels in the lecture's form
    assert mem.kv_bytes == pytest.approx(kv_lecture * f * P_)  # = lecture's when 61/P is whole (P = 1)
    assert mem.kv_bytes[0] == pytest.approx(kv_lecture[0])


def test_t24_micro_batches():
    assert LEC.micro_batches(4) == 4 and 4 * 2400 == LEC.micro_batches(4) * 2400


def test_t25_decode_latency_with_hops():
    assert LEC.token_latency_with_hops(0.020, 4, 0.0025) == pytest.approx(0.030)


def test_t25_through_the_step_model():
    """Same shape through parallel_step: 4 stages on 4 domains add 4 scale-out hops per token."""
    slow = (Tier("scale-up", 9e11, 3e-6), Tier("scale-out", 5e10, 2.5e-3))
    r4 = parallel_step(DSV3, NVL72, 256, 1000, tp=1, ep=64, dp=64, pp=4, domains=4, tiers=slow, weights_dtype="fp8")
    assert r4.pp_comm_s == pytest.approx(4 * (2.5e-3 + 64 * 7168 * 2 / 64 / 5e10), rel=1e-9)


def test_t26_weight_fetch():
    # spec §9 prints 1.74 ms (rounded); T12 gives the same quotient as 1.736e-3 at 1e-3
    assert LEC.weight_fetch_s(1e12, 72, 8e12) == pytest.approx(1.736e-3, rel=1e-3)
    assert LEC.weight_fetch_s(1e12, 8, 3.35e12) == pytest.approx(37.3e-3, rel=1e-3)


# ---- hand-checked memory per GPU ------------------------------------------------------------------
def test_memory_llama3_70b_tp8_dgx_h100():
    """Llama 3 70B, bf16, TP 8, 16 sequences holding 8,192 tokens each, decode.

    params: per layer attention 8192·8192 + 2·8192·1024 + 8192·8192 = 150,994,944; MLP 3·8192·28672
    = 704,643,072; norms 2·8192 = 16,384 → 855,654,400 × 80 = 68,452,352,000; embeddings 2·128256·8192
    = 2,101,346,304; final norm 8,192 → 70,553,706,496 params → ×2 B / 8 GPUs = 17,638,426,624 B.
    KV: 80 layers · 2 · 8 heads · 128 · 2 B = 327,680 B/token, 8 KV heads over TP 8 → 40,960 B/token
    per GPU × 16 · 8,192 tokens = 5,368,709,120 B.
    activations: 16 tokens · (3·8192 + 2·28672) · 2 B / 8 = 327,680 B.
    total 23,007,463,424 B (of 80 GB).
    """
    m = memory_per_gpu(LLAMA, 8, 1, 1, 1, 16, 8192)
    assert m.weights_bytes == 17_638_426_624
    assert m.kv_bytes == 5_368_709_120
    assert m.activations_bytes == 327_680
    assert m.total_bytes == 23_007_463_424
    r = parallel_step(LLAMA, H100, 16, 8191, tp=8)  # memory at context + 1 new token = 8,192
    assert r.memory_per_gpu_bytes == 23_007_463_424


def test_memory_deepseek_v3_ep64_gb200():
    """DeepSeek-V3, fp8 weights and KV, TP 1, attention-DP 64, EP 64 (4 experts per GPU), 2,048
    sequences × 4,096 tokens, decode.

    routed: one expert 3·7168·2048 = 44,040,192 params × 256 × 58 MoE layers = 653,908,770,816;
    dense (embeddings 1,853,358,080 + final norm 7,168 + 61 × (MLA 187,107,328 + norms 14,336)
    + 3 dense MLPs × 396,361,728 + 58 × (shared expert 44,040,192 + router 1,835,008 + bias 256))
    = 17,117,648,384, replicated on every GPU (TP 1).
    weights = 17,117,648,384 + 653,908,770,816/64 = 27,334,972,928 B (1 B/param).
    KV (MLA latent, not split by TP): (512 + 64) · 61 · 1 B = 35,136 B/token × 2048/64 = 32 sequences
    × 4,096 tokens = 4,605,345,792 B.
    activations: 32 tokens · (3·7168 + 2·max(18432, 8·2048)) · 2 B = 3,735,552 B.
    total 31,944,054,272 B (of 186 GB).
    """
    m = memory_per_gpu(DSV3, 1, 64, 1, 64, 2048, 4096, bytes_per_weight=1.0, bytes_per_kv=1.0)
    assert m.weights_bytes == 27_334_972_928
    assert m.kv_bytes == 4_605_345_792
    assert m.activations_bytes == 3_735_552
    assert m.total_bytes == 31_944_054_272


# ---- step time with communication --------------------------------------------------------------
FAST = (Tier("scale-up", 1e30, 0.0), Tier("scale-out", 1e30, 0.0))


@pytest.mark.parametrize("phase,prompt", [("decode", 1), ("prefill", 512)])
def test_reduces_to_roofline_step_with_a_free_network(phase, prompt):
    """Cross-check: TP 8, PP 1, DP 1, free network == roofline.step on 8 chips (same model.py sums)."""
    a = parallel_step(LLAMA, H100, np.array([1, 16, 256]), 2000, tp=8, tiers=FAST, phase=phase, prompt=prompt)
    b = step(LLAMA, H100, np.array([1, 16, 256]), 2000, phase=phase, prompt=prompt)
    for k in ("compute_s", "weight_read_s", "kv_read_s", "kv_write_s", "step_s", "memory_per_gpu_bytes"):
        assert getattr(a, k) == pytest.approx(getattr(b, k), rel=1e-12), k
    assert np.all(a.comm_s < 1e-12)


def test_ep_distinct_experts_per_gpu_sum_to_the_domain_total():
    """EP 64 on one rack reads, per GPU, 1/64 of the distinct experts the whole batch touches."""
    import roofline.model as M

    r = parallel_step(DSV3, NVL72, 64, 0, tp=1, ep=64, dp=64, tiers=FAST, weights_dtype="fp8")
    dense = M.weight_read_params(DSV3, 1) - DSV3.moe_layers * M.expected_distinct_experts(256, 8, 1) * M.expert_params(DSV3)
    experts = DSV3.moe_layers * M.expected_distinct_experts(256, 8, 64) / 64 * M.expert_params(DSV3)
    assert r.weight_read_s == pytest.approx((dense + experts) / NVL72.accelerator.hbm_bytes_per_s)


def test_two_racks_of_ep_are_slower_on_the_network():
    one = parallel_step(DSV3, NVL72, 1024, 2000, tp=1, ep=64, dp=64, weights_dtype="fp8")
    two = parallel_step(DSV3, NVL72, 1024, 2000, tp=1, ep=128, dp=128, domains=2, weights_dtype="fp8")
    assert two.ep_comm_s > 2 * one.ep_comm_s


def test_imbalance_slows_expert_work():
    a = parallel_step(DSV3, NVL72, 4096, 1000, tp=1, ep=64, dp=64, weights_dtype="fp8")
    b = parallel_step(DSV3, NVL72, 4096, 1000, tp=1, ep=64, dp=64, weights_dtype="fp8", moe_imbalance=1.5)
    assert b.compute_s > a.compute_s
    lat = 2 * DSV3.moe_layers * NVL72.scale_up_latency_s  # dispatch + combine latency, not scaled by λ
    assert b.ep_comm_s - lat == pytest.approx(1.5 * (a.ep_comm_s - lat), rel=1e-9)


# ---- properties ---------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 4, 8]), grow=st.sampled_from(["tp", "pp", "ep"]),
       batch=st.integers(64, 4096), ctx=st.integers(0, 100_000))
def test_weights_per_gpu_never_grow_with_parallelism(tp, pp, grow, batch, ctx):
    for m in (LLAMA, DSV3):
        base = dict(tp=tp, ep=1, pp=pp, dp=1)
        more = dict(base)
        if grow == "ep":
            if not m.moe:
                continue
            base, more = dict(base, ep=tp * 8, dp=8), dict(base, ep=tp * 16, dp=16)
        else:
            more[grow] *= 2
        w0 = memory_per_gpu(m, batch=batch, context=ctx, **base).weights_bytes
        w1 = memory_per_gpu(m, batch=batch, context=ctx, **more).weights_bytes
        assert w1 <= w0


@settings(max_examples=60, deadline=None)
@given(b=st.integers(1, 4096), ctx=st.integers(0, 160_000), pp=st.sampled_from([1, 2, 4, 8, 16]))
def test_kv_per_gpu_unchanged_by_pp_at_micro_batches_equal_stages(b, ctx, pp):
    """§3.5: B = pp·b; KV per GPU stays b·ctx·kv/E when L/pp is whole (uneven splits round the stage up)."""
    m = LLAMA  # 80 layers: pp in {1, 2, 4, 8, 16} divides evenly
    kv1 = memory_per_gpu(m, 1, 1, 1, 8, b, ctx).kv_bytes
    kvp = memory_per_gpu(m, 1, 1, pp, 8, pp * b, ctx).kv_bytes
    assert kvp == pytest.approx(kv1, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(slower=st.floats(1.0, 50.0), which=st.sampled_from(["up", "out"]), lat=st.floats(1.0, 50.0),
       layout=st.sampled_from([(8, 1, 1, 1, 1), (1, 64, 1, 64, 1), (1, 128, 1, 128, 2), (1, 64, 4, 64, 4),
                               (4, 64, 2, 16, 2)]),
       batch=st.sampled_from([512, 4096]), phase=st.sampled_from(["decode", "prefill"]))
def test_step_never_falls_when_a_tier_gets_slower(slower, which, lat, layout, batch, phase):
    tp, ep, pp, dp, dom = layout
    m, s = (LLAMA, H100) if ep == 1 else (DSV3, NVL72)
    up = Tier("scale-up", s.scale_up_bytes_per_s, s.scale_up_latency_s)
    out = Tier("scale-out", s.scale_out_bytes_per_s, s.scale_out_latency_s)
    worse = Tier(which, (up if which == "up" else out).bytes_per_s / slower,
                 (up if which == "up" else out).latency_s * lat)
    kw = dict(tp=tp, ep=ep, pp=pp, dp=dp, domains=dom, phase=phase, prompt=256, weights_dtype="fp8")
    a = parallel_step(m, s, batch, 2000, tiers=(up, out), **kw)
    b = parallel_step(m, s, batch, 2000, tiers=(worse, out) if which == "up" else (up, worse), **kw)
    assert b.step_s >= a.step_s * (1 - 1e-12) and b.step_upper_s >= a.step_upper_s * (1 - 1e-12)


# ---- validity messages ------------------------------------------------------------------------------
@pytest.mark.parametrize("model,system,layout,domains,phrase", [
    (LLAMA, H100, P.Layout(tp=3), 1, "TP 3 does not divide llama-3-70b's 64 attention heads; use TP in [1, 2, 4, 8]"),
    (LLAMA, H100, P.Layout(tp=16), 2, "TP 16 exceeds the 8 GPUs"),
    (LLAMA, H100, P.Layout(ep=8, tp=8), 1, "needs a mixture-of-experts model"),
    (DSV3, NVL72, P.Layout(tp=1, ep=72, dp=72), 1, "use EP 64 (4 experts per GPU, 8 of 72 GPUs idle)"),
    (DSV3, NVL72, P.Layout(tp=1, ep=48, dp=64), 1, "EP 48 must divide DP (64) or equal TP x DP = 64"),
    (DSV3, NVL72, P.Layout(tp=1, ep=128, dp=128), 1, "use --domains 2"),
    (LLAMA, H100, P.Layout(pp=81), 11, "PP 81 exceeds llama-3-70b's 80 layers"),
])
def test_validity_messages(model, system, layout, domains, phrase):
    with pytest.raises(InputError) as e:
        P.validate(model, system, replace(layout, domains=domains))
    assert phrase in str(e.value)


def test_valid_mask_agrees_with_validate():
    tps, eps, pps, dps = np.meshgrid([1, 2, 3, 4, 8], [1, 2, 8, 16, 64], [1, 2, 4], [1, 2, 8, 16], indexing="ij")
    mask = P.valid_mask(DSV3, 72, tps, eps, pps, dps)
    for idx in np.ndindex(mask.shape):
        lay = P.Layout(int(tps[idx]), int(eps[idx]), int(pps[idx]), int(dps[idx]), domains=16)
        try:
            P.validate(DSV3, NVL72, lay)
            ok = True
        except InputError:
            ok = False
        assert ok == bool(mask[idx]), lay


def test_batch_smaller_than_slots_is_rejected():
    with pytest.raises(InputError, match="use a batch >= 64"):
        parallel_step(DSV3, NVL72, 8, 100, tp=1, ep=64, dp=64)
