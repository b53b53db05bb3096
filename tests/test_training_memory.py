"""Training memory: ZeRO worked example, Korthikanti et al. 2022 closed forms, hand calculations,
and Hypothesis monotonicity (more recomputation, higher ZeRO stage, larger parallel degree)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline import memory as TM
from roofline import training as TR
from roofline.catalog import get_catalog
from roofline.errors import InputError
from roofline.layout import RECOMPUTE_MODES, Layout, validate
from roofline.model import Model


def TrainLayout(**kw):
    """A training Layout; Megatron's sequence parallelism on unless the test says otherwise."""
    kw.setdefault("sequence_parallel", True)
    return Layout(**kw)

# GPT shape of Korthikanti et al. 2022 / Narayanan et al. 2021: MHA, GeLU MLP with d_ff = 4h, tied
# embeddings. 1T row of Narayanan Table 1: 128 layers, h = 25,600, 160 heads, vocab 51,200.
GPT_1T = Model(id="gpt-1t", name="GPT 1T", family="gpt", layers=128, d_model=25600, vocab=51200, heads=160,
               kv_heads=160, head_dim=160, d_ff=102400, gated_mlp=False, tied_embeddings=True)
SMALL = Model(id="gpt-small", name="small", family="gpt", layers=8, d_model=512, vocab=1000, heads=8,
              kv_heads=8, head_dim=64, d_ff=2048, gated_mlp=False, tied_embeddings=True)


def test_zero_paper_worked_example():
    """Rajbhandari et al. 2020 Fig. 1: Ψ = 7.5B, N_d = 64 → 120, 31.4, 16.6, 1.9 GB."""
    expect = [120e9, 31.4e9, 16.6e9, 1.875e9]
    for stage, e in enumerate(expect):
        total = sum(TM.model_state_bytes(7.5e9, 64, stage))
        assert total == pytest.approx(e, rel=3e-3), stage


def test_korthikanti_eq1_per_layer():
    """34·s·b·h + 5·a·s²·b for the GPT shape with dropout (Korthikanti 2022 eq. (1))."""
    s, b, h, a = 2048, 1, GPT_1T.d_model, GPT_1T.heads
    la = TM.layer_activations(GPT_1T, s, b)
    assert la.replicated + la.split + la.quadratic == pytest.approx(s * b * h * (34 + 5 * a * s / h), rel=1e-12)
    assert la.replicated == pytest.approx(10 * s * b * h)  # the part TP alone does not split (eq. (4))
    assert la.quadratic == pytest.approx(5 * a * s * s * b)


@pytest.mark.parametrize("t", [1, 2, 8])
def test_korthikanti_tp_and_sp_forms(t):
    s, b, h, a, L = 2048, 1, GPT_1T.d_model, GPT_1T.heads, GPT_1T.layers
    common = dict(dp=1, micro_batches=1, zero=0)
    sp = TrainLayout(tp=t, sequence_parallel=True, **common)
    nosp = TrainLayout(tp=t, sequence_parallel=False, **common)
    per = s * b * h
    # eq. (5): TP + SP, no recomputation, whole model on one stage
    assert TM.activation_bytes_per_gpu(GPT_1T, sp.with_(recompute="none"), s) == pytest.approx(L * per * (34 + 5 * a * s / h) / t)
    # eq. (4): TP without SP
    assert TM.activation_bytes_per_gpu(GPT_1T, nosp.with_(recompute="none"), s) == pytest.approx(
        L * per * (10 + 24 / t + 5 * a * s / (h * t)))
    # selective: 34·sbh/t stored per layer, plus the attention core of the one layer being recomputed
    assert TM.activation_bytes_per_gpu(GPT_1T, sp.with_(recompute="selective"), s) == pytest.approx(
        L * per * 34 / t + 5 * a * s * s * b / t)
    # full: 2·sbh/t per layer kept, plus one layer rebuilt
    layer = per * (34 + 5 * a * s / h) / t
    assert TM.activation_bytes_per_gpu(GPT_1T, sp.with_(recompute="full"), s) == pytest.approx(L * 2 * per / t + layer - 2 * per / t)


def test_pipeline_in_flight_hand_counts():
    base = dict(tp=8, pp=64, dp=6, micro_batch=1, micro_batches=512, zero=1)
    assert TM.in_flight_micro_batches(TrainLayout(schedule="gpipe", **base)) == 512
    assert TM.in_flight_micro_batches(TrainLayout(schedule="1f1b", **base)) == 64
    # interleaved, v = 2: P·(1 + (P−1)/(P·v)) = 64 + 31.5 = 95.5 (Korthikanti §4.2.3)
    assert TM.in_flight_micro_batches(TrainLayout(schedule="interleaved", virtual_stages=2, **base)) == 95.5
    few = dict(base, micro_batches=4)
    assert TM.in_flight_micro_batches(TrainLayout(schedule="1f1b", **few)) == 4


def test_megatron_1t_hand_calculation():
    """Per-GPU states for the 1T layout (TP 8, PP 64, DP 6, ZeRO-1 off → stage 0), by hand."""
    lay = TrainLayout(tp=8, pp=64, dp=6, micro_batch=1, micro_batches=512, schedule="interleaved",
                      virtual_stages=2, zero=0)
    mem = TM.training_memory(GPT_1T, lay.with_(recompute="full"), 2048)
    from roofline.model import params_total
    psi = params_total(GPT_1T) / (8 * 64)
    assert float(mem.weights + mem.grads + mem.optimizer) == pytest.approx(16 * psi)
    assert 1.9e9 < psi < 2.0e9  # ~1.97B parameters per GPU
    # full recomputation: 2 layers per stage x 95.5 in flight x 2sbh/t + one layer rebuilt
    per = 2048 * 25600
    layer = per * (34 + 5 * 160 * 2048 / 25600) / 8
    assert float(mem.activations) == pytest.approx(2 * 95.5 * 2 * per / 8 + layer - 2 * per / 8)
    assert float(mem.total) < 80e9  # it fit on an 80 GB A100


def test_flash_attention_removes_quadratic_term():
    la = TM.layer_activations(GPT_1T, 8192, 1, flash_attention=True)
    assert la.quadratic == pytest.approx(4 * 160 * 8192)  # fp32 log-sum-exp only
    nodrop = TM.layer_activations(GPT_1T, 2048, 1, dropout=False)
    h, s, a = 25600, 2048, 160
    assert nodrop.replicated + nodrop.split + nodrop.quadratic == pytest.approx(s * h * 32 + 2 * a * s * s)


def test_recompute_extra_flops():
    from roofline.model import matmul_flops_per_token
    n2 = matmul_flops_per_token(GPT_1T)
    assert TR.recompute_extra_flops_per_token(GPT_1T, 2048, "none") == 0
    full = TR.recompute_extra_flops_per_token(GPT_1T, 2048, "full")
    assert full == TR.recompute_extra_flops_per_token(GPT_1T, 2048, "reversible")
    assert full > n2  # one forward: 2N + attention
    # non-causal attention per token per layer: 4·s·h (Narayanan eq. (3) counts 2·2·s·h forward)
    assert TR.forward_attention_flops_per_token(GPT_1T, 2048, causal=False) == pytest.approx(4 * 2048 * 25600 * 128)


def test_bad_layouts():
    a100 = get_catalog().system("dgx-a100")
    with pytest.raises(InputError, match="exceeds gpt-1t.s 128 layers"):
        validate(GPT_1T, a100, TrainLayout(pp=256), training=True)
    moe = get_catalog().model("mixtral-8x7b")
    with pytest.raises(InputError, match="EP 2 must divide DP 3"):
        validate(moe, a100, TrainLayout(dp=3, ep=2), training=True)
    with pytest.raises(InputError, match="recompute must be one of"):
        TrainLayout(recompute="some")
    with pytest.raises(InputError, match="zero stage"):
        TrainLayout(zero=4)


MODES_ORDERED = ("none", "selective", "full")


@settings(max_examples=80, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 4, 8]), dp=st.sampled_from([1, 2, 4, 8]),
       mb=st.sampled_from([1, 2, 4]), m=st.sampled_from([1, 2, 4, 8, 16]), seq=st.sampled_from([128, 1024, 4096]),
       sched=st.sampled_from(["gpipe", "1f1b"]), sp=st.booleans(), flash=st.booleans())
def test_memory_never_grows(tp, pp, dp, mb, m, seq, sched, sp, flash):
    kw = dict(micro_batch=mb, schedule=sched, sequence_parallel=sp)
    def total(mode="none", zero=1, **over):
        args = dict(tp=tp, pp=pp, dp=dp, micro_batches=m, zero=zero, **kw)
        args.update(over)
        return float(TM.training_memory(SMALL, TrainLayout(recompute=mode, **args), seq, flash_attention=flash).total)
    # more recomputation
    vals = [total(mode) for mode in MODES_ORDERED]
    assert vals[0] >= vals[1] - 1e-6 and vals[1] >= vals[2] - 1e-6
    # higher ZeRO stage
    for mode in RECOMPUTE_MODES:
        z = [total(mode, zero=k) for k in range(4)]
        assert all(z[i] >= z[i + 1] - 1e-6 for i in range(3))
    # larger TP, DP (same micro-batch count per pipeline), PP (same global batch)
    for mode in MODES_ORDERED:
        assert total(mode, tp=tp * 2) <= total(mode) + 1e-6
        assert total(mode, dp=dp * 2) <= total(mode) + 1e-6
        assert total(mode, pp=min(pp * 2, 8)) <= total(mode) + 1e-6


def test_reversible_beats_full_with_enough_layers_per_stage():
    lay = TrainLayout(tp=8, pp=16, dp=1, micro_batches=64, zero=1)
    rev = TM.activation_bytes_per_gpu(GPT_1T, lay.with_(recompute="reversible"), 2048)
    full = TM.activation_bytes_per_gpu(GPT_1T, lay.with_(recompute="full"), 2048)
    none = TM.activation_bytes_per_gpu(GPT_1T, lay.with_(recompute="none"), 2048)
    assert rev < full < none
    # independent of depth: doubling layers per stage leaves reversible memory unchanged
    deep = Model(**{**GPT_1T.__dict__, "layers": 256})
    assert TM.activation_bytes_per_gpu(deep, lay.with_(recompute="reversible"), 2048) == pytest.approx(rev)
    assert TM.activation_bytes_per_gpu(deep, lay.with_(recompute="none"), 2048) == pytest.approx(2 * none)
