"""Efficiency model: cited factors, saturating GEMM curve, predicted pass vs the pure roofline."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.catalog import get_catalog
from roofline.efficiency import (
    WHICH,
    Efficiency,
    Factor,
    factor_table,
    families,
    family_efficiency,
    family_for,
    gemm_efficiency,
    kv_read_multiplier,
    realistic,
)
from roofline.engine import step
from roofline.errors import InputError
from roofline.hardware import single_accelerator_system
from roofline.layout import Layout

FAMILIES = families()


def predict_pass(m, s, batch, context, *, tp=1, ep=1, pp=1, dp=1, domains=1, fam=None, which="mid",
                 weights_dtype="bf16", kv_per_query_head=False, overlap_comm=False, **kw):
    """The realistic pass: the engine with a family's factors under layout (tp, ep, pp, dp)."""
    eff = family_efficiency(fam or family_for(s.accelerator), weights_dtype, which, overlap_comm=overlap_comm,
                            kv_read_multiplier=kv_read_multiplier(m, kv_per_query_head, which))
    return step(m, s, batch, context, layout=Layout(tp=tp, ep=ep, pp=pp, dp=dp, domains=domains), efficiency=eff,
                weights_dtype=weights_dtype, check=False, check_context=False, **kw)


def ideal(m, s, batch, context, *, tp=1, ep=1, pp=1, dp=1, domains=1, **kw):
    """The pure roofline of the same layout."""
    return step(m, s, batch, context, layout=Layout(tp=tp, ep=ep, pp=pp, dp=dp, domains=domains), check=False,
                check_context=False, **kw)


def test_every_factor_has_a_source_and_a_spread():
    for fam in FAMILIES.values():
        for name, v, lo, hi, src in factor_table(fam):
            assert lo <= v <= hi, name
            assert len(src) > 10, (fam.family, name)


def test_kernel_figures_are_inside_the_nvidia_spreads():
    """The kernel-level figures the factors cite (reference data) lie inside their spreads."""
    nv = FAMILIES["nvidia"]
    assert nv.weight_bandwidth.low <= 3000 / 3350 <= nv.weight_bandwidth.high  # FlashMLA H800
    assert nv.weight_bandwidth.low <= 7.35 / 8.0 <= nv.weight_bandwidth.high  # Azure GB200 HBM
    assert nv.attention_compute.low <= 740 / 989.5 <= nv.attention_compute.high  # FlashAttention-3
    assert nv.gemm_low_precision.low <= 2744 / 5000 <= nv.gemm_low_precision.high  # Azure GB200 FP8 GEMM
    assert nv.scale_up_bandwidth.low <= 153 / 200 <= nv.scale_up_bandwidth.high  # DeepEP intranode
    assert nv.scale_up_bandwidth.low <= 365 / 450 <= nv.scale_up_bandwidth.high  # NCCL ring busbw H100
    assert nv.scale_out_bandwidth.low <= 43 / 50 <= nv.scale_out_bandwidth.high  # DeepEP internode
    assert 2 * nv.scale_up_step_latency_s.low <= 6e-6 <= 2 * nv.scale_up_step_latency_s.high  # nccl #1259
    # DeepGEMM (H800, FP8): M=64/128 weight streaming 1,509-2,668 of 3,350 GB/s; M=4096 GEMMs with K >= 1536
    for gbs in (1509, 1688, 2103, 2143, 2221, 2277, 2320, 2448, 2455, 2470, 2604, 2668):
        assert nv.weight_bandwidth_low_precision.low <= gbs / 3350 <= nv.weight_bandwidth_low_precision.high
    for tflops in (990, 1025, 1058, 1304, 1358):
        assert nv.gemm_low_precision.low <= tflops / 1979 <= nv.gemm_low_precision.high


def test_gemm_curve_saturates_and_halves():
    fam = FAMILIES["nvidia"]
    half = fam.gemm_half_rows.value
    eff16, eff8 = family_efficiency(fam, "bf16"), family_efficiency(fam, "fp8")
    assert gemm_efficiency(half, eff16) == pytest.approx(fam.gemm.value / 2)
    assert gemm_efficiency(1e9, eff16) == pytest.approx(fam.gemm.value, rel=1e-6)
    assert gemm_efficiency(1e9, eff8) == pytest.approx(fam.gemm_low_precision.value, rel=1e-6)
    assert gemm_efficiency(7, Efficiency()) == 1.0  # the pure roofline: flat


@settings(max_examples=30, deadline=None)
@given(st.floats(1, 1e6), st.floats(1, 1e6))
def test_gemm_efficiency_non_decreasing(a, b):
    eff = family_efficiency(FAMILIES["amd"])
    lo, hi = sorted((a, b))
    assert gemm_efficiency(lo, eff) <= gemm_efficiency(hi, eff) + 1e-15


def test_family_by_vendor_and_generic_fallback():
    cat = get_catalog()
    assert family_for(cat.accelerator("h100-sxm")).family == "nvidia"
    assert family_for(cat.accelerator("mi300x")).family == "amd"
    eff = realistic(cat.accelerator("h100-sxm"))
    assert eff.compute == FAMILIES["nvidia"].gemm.value and eff.memory == FAMILIES["nvidia"].weight_bandwidth.value
    # an array of formats (the planner's grid) picks the factors per element
    both = realistic(cat.accelerator("h100-sxm"), np.array(["fp8", "bf16"]))
    assert list(both.memory) == [FAMILIES["nvidia"].weight_bandwidth_low_precision.value,
                                 FAMILIES["nvidia"].weight_bandwidth.value]


def test_efficiency_factors_are_catalog_data_a_user_file_overrides(tmp_path):
    """catalog/data/efficiency.yaml is loaded like the other catalogs; a --catalog file replaces a family
    by id, and the realistic model then uses the file's value."""
    import yaml

    from roofline.catalog import add_catalog_file, reset_user_files

    row = {"id": "nvidia", "date": "2026-11", "factors": {n: [v, lo, hi, src] for n, v, lo, hi, src in
                                                         factor_table(FAMILIES["nvidia"])}}
    row["factors"]["gemm"] = [0.5, 0.4, 0.6, "a user's own measurement"]
    path = tmp_path / "eff.yaml"
    path.write_text(yaml.safe_dump({"efficiency": [row]}))
    try:
        add_catalog_file(path)
        assert families()["nvidia"].gemm.value == 0.5
        assert realistic(get_catalog().accelerator("h100-sxm")).compute == 0.5
    finally:
        reset_user_files()
    assert families()["nvidia"].gemm.value == FAMILIES["nvidia"].gemm.value


def test_factor_rejects_bad_spread_and_which():
    with pytest.raises(InputError, match="low <= value <= high"):
        Factor(0.5, 0.6, 0.9, "x")
    with pytest.raises(InputError, match="which must be one of"):
        FAMILIES["nvidia"].gemm.pick("median")


def _llama70b_h100(n=1):
    cat = get_catalog()
    return cat.model("llama-2-70b"), single_accelerator_system(cat.accelerator("h100-sxm"), n)


def test_predicted_pass_is_slower_than_the_pure_roofline():
    m, s = _llama70b_h100(2)
    for phase, prompt in (("decode", 1), ("prefill", 2048)):
        pure = step(m, s, 8, 1024, phase=phase, prompt=prompt, gpus=2, check_context=False).step_s
        pred = predict_pass(m, s, 8, 1024, phase=phase, prompt=prompt, tp=2)
        assert float(pred.step_s) > float(pure)


def test_interval_corners_bracket_the_central_prediction():
    m, s = _llama70b_h100(4)
    t = {w: float(predict_pass(m, s, 32, 2048, tp=4, which=w).step_s) for w in WHICH}
    assert t["fast"] < t["mid"] < t["slow"]


def test_decode_batch1_cross_check_weight_read():
    """Batch-1 decode is weight-read bound: step ≈ W/(BW·η_w) + fixed overheads (two derivations)."""
    m, s = _llama70b_h100(1)
    fam = FAMILIES["nvidia"]
    pred = predict_pass(m, s, 1, 0, weights_dtype="fp8", kv_dtype="fp8")
    w = step(m, s, 1, 0, weights_dtype="fp8", gpus=1, check_context=False).weight_read_s
    # kernel launches by hand (model.kernels_per_pass): per Llama layer QKV + O GEMMs, add+norm, rotary,
    # 4 fp8 activation quantisations, MLP add+norm, gate/up, activation, down = 12; 80 layers + final norm and
    # LM head = 962 kernels at α, and 80 attention ops
    launches = 962 * fam.kernel_latency_s.value + 80 * fam.attention_latency_s.value
    assert m.layers == 80 and launches == pytest.approx(962 * 2.5e-6 + 80 * 11e-6)
    expect = (w / fam.weight_bandwidth_low_precision.value + m.layers * fam.layer_overhead_s.value
              + fam.pass_overhead_s.value + launches)
    assert float(pred.step_s) == pytest.approx(float(expect), rel=0.02)


def test_kernel_launches_by_hand():
    """model.kernels_per_pass counts one pass's launches: Llama (GQA, rotary, gated MLP), DeepSeek-V3 (MLA,
    3 dense + 58 MoE layers with a shared expert), each by hand; fp8 adds 4 quantisations per layer."""
    from roofline.model import kernels_per_pass

    cat = get_catalog()
    llama = cat.model("llama-3-8b")  # 32 layers: (2 GEMMs + add+norm + rotary) + MLP 4 = 8 per layer
    assert kernels_per_pass(llama) == (32 * 4 + 1, 32 * 4 + 1, 32)  # + LM head, + final norm
    g, e, a = kernels_per_pass(llama, True)
    assert (g, e, a) == (32 * 4 + 1, 32 * 8 + 1, 32)
    ds = cat.model("deepseek-v3")  # attention: 5 GEMMs; add+norm + rotary + latent norms = 3 elementwise
    # dense MLP: 2 GEMMs + 2 elementwise (3 layers); MoE: router + 2 grouped + 2 shared GEMMs, 5 + shared act
    assert kernels_per_pass(ds) == (61 * 5 + 3 * 2 + 58 * 5 + 1, 61 * 3 + 3 * 2 + 58 * 6 + 1, 61)


def test_kernels_inside_measured_ops_by_hand():
    """model.kernels_inside_measured_ops: of those elementwise launches, the ones a measured table's op holds:
    a low-precision linear layer's input quantisation (QKV, O per layer; gate+up, down per dense MLP layer) and
    the fused MoE op's top-k, permute, activation, finalize (+ its experts' 2 quantisations), never more than
    kernels_per_pass counts."""
    from roofline.model import kernels_inside_measured_ops, kernels_per_pass

    cat = get_catalog()
    llama = cat.model("llama-3-8b")
    assert kernels_inside_measured_ops(llama) == (0, 0)
    assert kernels_inside_measured_ops(llama, True) == (32 * 4, 0)  # every layer has a dense MLP
    ds = cat.model("deepseek-v3")  # 61 layers, 3 dense MLP, 58 MoE
    assert kernels_inside_measured_ops(ds, True) == (61 * 2 + 3 * 2, 58 * 6)
    oss = cat.model("gpt-oss-120b")  # 36 MoE layers, bf16 attention, MXFP4 experts
    assert kernels_inside_measured_ops(oss, False, True) == (0, 36 * 6)
    assert kernels_inside_measured_ops(oss, False, False) == (0, 36 * 4)
    for m, lp in ((llama, True), (ds, True), (oss, False)):
        q, moe = kernels_inside_measured_ops(m, lp)
        assert q + moe < kernels_per_pass(m, lp)[1]


def test_kv_per_query_head_multiplies_only_the_kv_read():
    """Per-query-head decode attention reads the cache G = heads/kv_heads times (Llama 2 70B: 64/8);
    the memory term grows by exactly (G-1)·t_kv/η_kv, MHA models are unchanged, MLA is refused."""
    cat = get_catalog()
    m, s = _llama70b_h100(2)
    assert kv_read_multiplier(m, True) == 8 and kv_read_multiplier(m, True, "fast") == 1
    assert kv_read_multiplier(m, False) == 1
    shared = predict_pass(m, s, 64, 4096, tp=2, kv_dtype="fp8", weights_dtype="fp8")
    per_head = predict_pass(m, s, 64, 4096, tp=2, kv_dtype="fp8", weights_dtype="fp8", kv_per_query_head=True)
    kv = ideal(m, s, 64, 4096, tp=2, kv_dtype="fp8", weights_dtype="fp8").kv_read_s
    eta = FAMILIES["nvidia"].kv_bandwidth.value
    assert float(per_head.memory_s - shared.memory_s) == pytest.approx(float(7 * kv / eta), rel=1e-9)
    from roofline.validate import load_dataset
    mha = load_dataset()[0]["llama-2-7b"]
    assert kv_read_multiplier(mha, True) == 1
    with pytest.raises(InputError, match="MLA latents"):
        kv_read_multiplier(cat.model("deepseek-v3"), True)


def test_attention_runs_at_the_activation_dtype_peak():
    """Prefill attention FLOPs are charged at the activation dtype's peak (flash kernels compute in bf16)
    while the GEMMs run at the weights' peak: switching activations bf16 -> fp8 saves exactly
    F_attn·(1/P_bf16 − 1/P_fp8)/η_attn of compute time."""
    from roofline import model as M

    m, s = _llama70b_h100(1)
    kw = dict(phase="prefill", prompt=4096, weights_dtype="fp8")
    a = predict_pass(m, s, 1, 0, activation_dtype="bf16", **kw).compute_s
    b = predict_pass(m, s, 1, 0, activation_dtype="fp8", **kw).compute_s
    acc, fam = s.accelerator, FAMILIES["nvidia"]
    f_attn = 4096 * M.prefill_attention_flops_per_token(m, 4096, 0)
    expect = f_attn * (1 / acc.peak_flops("bf16") - 1 / acc.peak_flops("fp8")) / fam.attention_compute.value
    assert float(a - b) == pytest.approx(float(expect), rel=1e-9) and expect > 0


def test_compute_terms_by_hand_at_pipeline_stages():
    """The engine's realistic compute per loop, by hand: pp·f·[T_g·2·N_matmul/tp/(P·η_gemm) + T_g·attn/tp/(P·η_attn)]
    with f = ceil(L/pp)/L, T_g = B·len/pp tokens per micro-batch, η_gemm flat (T_½ = 0); at PP 1 and PP 4,
    decode and prefill."""
    from dataclasses import replace

    from roofline import model as M

    m, s = _llama70b_h100(8)
    fam = replace(FAMILIES["nvidia"], gemm_half_rows=Factor(0.0, 0.0, 0.0, "test"))
    eg, ea, peak = fam.gemm.value, fam.attention_compute.value, s.accelerator.peak_flops("bf16")
    for pp, tp in ((1, 8), (4, 2)):
        f = np.ceil(m.layers / pp) / m.layers
        for phase, L in (("decode", 1), ("prefill", 2048)):
            attn = (M.prefill_attention_flops_per_token(m, L, 4096) if phase == "prefill"
                    else M.attention_flops_per_token(m, 4097))
            Tg = 64 / pp * L
            expect = pp * f * (Tg * M.matmul_flops_per_token(m) / tp / (peak * eg) + Tg * float(attn) / tp / (peak * ea))
            got = float(predict_pass(m, s, 64, 4096, tp=tp, pp=pp, phase=phase, prompt=L, fam=fam).compute_s)
            assert got == pytest.approx(expect, rel=1e-9), (pp, phase)


def test_predict_pass_broadcasts_over_context():
    m, s = _llama70b_h100(2)
    ctx = np.array([128, 1024, 4096])
    t = predict_pass(m, s, 16, ctx, tp=2).step_s
    assert t.shape == (3,) and np.all(np.diff(t) > 0)


def test_communication_is_one_network_model():
    """The realistic pass's collectives are the pure pass's on tiers carrying the family's η and α: the
    pure roofline with only the network factors set gives the same communication."""
    m, s = _llama70b_h100(4)
    fam = FAMILIES["nvidia"]
    pred = predict_pass(m, s, 64, 1024, tp=4)
    net = Efficiency(scale_up=fam.scale_up_bandwidth.value, scale_out=fam.scale_out_bandwidth.value,
                     scale_up_latency_s=fam.scale_up_step_latency_s.value,
                     scale_out_latency_s=fam.scale_out_step_latency_s.value)
    ref = ideal(m, s, 64, 1024, tp=4, efficiency=net)
    assert float(pred.comm_s) == pytest.approx(float(ref.tp_comm_s + ref.ep_comm_s + ref.pp_comm_s))
    assert float(pred.comm_s) > 0
    # perfect overlap never exceeds the added form
    over = predict_pass(m, s, 64, 1024, tp=4, overlap_comm=True)
    assert float(over.step_s) <= float(pred.step_s)


def test_expert_parallel_crosses_domains_on_scale_out():
    """DeepSeek-V3 EP over 2 domains pays an all-to-all that a single-domain layout does not."""
    cat = get_catalog()
    m, s = cat.model("deepseek-v3"), cat.system("dgx-h100")
    one = predict_pass(m, s, 512, 2048, ep=8, dp=8, weights_dtype="fp8")
    two = predict_pass(m, s, 1024, 2048, ep=16, dp=16, domains=2, weights_dtype="fp8")
    assert float(two.comm_s) > float(one.comm_s) > 0


def test_gemms_and_attention_are_separate_rooflines():
    """Large-batch decode: the GEMMs are compute-bound and the attention kernels KV-read-bound, so the
    pass is the SUM of the two kernel groups' rooflines, longer than max(Σcompute, Σmemory)."""
    m, s = _llama70b_h100(2)
    p = predict_pass(m, s, 1024, 4096, tp=2, weights_dtype="fp8", kv_dtype="fp8")
    assert float(p.step_s) == pytest.approx(float(p.gemm_s + p.attention_s + p.elementwise_s + p.comm_s
                                                  + p.overhead_s), rel=1e-12)
    assert float(p.gemm_s + p.attention_s) > float(np.maximum(p.compute_s, p.memory_s)) * 1.05
    assert float(p.compute_s) <= float(p.gemm_s + p.attention_s) and float(p.memory_s) <= float(p.gemm_s + p.attention_s)
    # batch-1 decode: both kernel groups memory-bound, the sum equals the memory total
    q = predict_pass(m, s, 1, 4096, tp=2, weights_dtype="fp8", kv_dtype="fp8")
    assert float(q.gemm_s + q.attention_s + q.elementwise_s) == pytest.approx(float(q.memory_s), rel=1e-12)


def test_low_precision_weights_stream_at_their_own_factor():
    """Batch-1 decode with fp8/int8 weights streams them at η_w,lp (DeepGEMM's small-M FP8 GEMMs), bf16
    weights at η_w: the two weight-read terms differ by exactly the ratio of the factors."""
    m, s = _llama70b_h100(1)
    fam = FAMILIES["nvidia"]
    for dt in ("fp8", "int8"):
        lp = predict_pass(m, s, 1, 0, weights_dtype=dt, kv_dtype="bf16")
        w = step(m, s, 1, 0, weights_dtype=dt, gpus=1, check_context=False).weight_read_s
        assert float(lp.gemm_s) == pytest.approx(float(w) / fam.weight_bandwidth_low_precision.value, rel=0.01)
    hp = predict_pass(m, s, 1, 0, weights_dtype="bf16")
    w16 = step(m, s, 1, 0, weights_dtype="bf16", gpus=1, check_context=False).weight_read_s
    assert float(hp.gemm_s) == pytest.approx(float(w16) / fam.weight_bandwidth.value, rel=0.01)
