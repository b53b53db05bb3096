"""roofline.kernel_pass: pass terms from measured kernels, cross-checked against physical bounds."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from roofline import model as M
from roofline.catalog import get_catalog
from roofline.kernel_pass import apply, engine_spread, table_terms


@pytest.fixture(scope="module")
def cat():
    return get_catalog()


def test_llama3_70b_dgx_h100_names_its_tables_and_respects_the_hbm_bound(cat):
    """Each GPU must at least stream its weight shard from HBM (bytes / peak bandwidth) and do its FLOPs at
    peak: the measured GEMM term of a decode pass lies above both bounds (a second derivation)."""
    m, s = cat.model("llama-3-70b"), cat.system("dgx-h100")
    B = np.array([1.0, 16.0, 256.0])
    t = table_terms(m, s, B, 2048, phase="decode", tp=8, weights_dtype="fp8", kv_dtype="fp8", engine="trtllm")
    assert t.gemm_covered.all() and t.attention_covered.all() and t.tp_covered.all()
    assert any("h100_sxm/gemm trtllm" in x for x in t.sources["gemm"])
    assert any("generation_attention" in x for x in t.sources["attention"])
    assert any("custom_allreduce trtllm" in x for x in t.sources["tp_comm"])
    acc = s.accelerator
    weights_per_gpu = M.params_total(m) * 1.0 / 8  # fp8
    assert np.all(t.gemm_s >= weights_per_gpu / acc.hbm_bytes_per_s)
    flops = B * M.matmul_flops_per_token(m) / 8
    assert np.all(t.gemm_s >= flops / acc.peak_flops("fp8"))
    assert np.all(np.diff(t.gemm_s) > 0) and np.all(np.diff(t.attention_s) > 0)


def test_deepseek_v3_hgx_h200_moe_and_mla_from_tables(cat):
    m, s = cat.model("deepseek-v3"), cat.system("hgx-h200")
    t = table_terms(m, s, np.array([8.0, 128.0]), 4096, phase="decode", tp=8, weights_dtype="fp8",
                    kv_dtype="bf16", engine="sglang")
    assert t.gemm_covered.all() and t.attention_covered.all()
    assert any("/moe sglang" in x for x in t.sources["gemm"])
    assert any("mla_generation" in x for x in t.sources["attention"])


def test_uncovered_accelerator_falls_back(cat):
    m, s = cat.model("llama-3-70b"), cat.system("dgx-h100")
    from dataclasses import replace

    mi = replace(s, accelerator=cat.accelerator("mi300x"))
    t = table_terms(m, mi, 8.0, 1024, phase="decode", tp=8, engine="trtllm")
    assert not t.gemm_covered and not t.attention_covered and np.isnan(t.gemm_s)


def test_apply_replaces_only_covered_terms():
    res = SimpleNamespace(gemm_s=np.array([1.0, 1.0]), attention_s=np.array([0.5, 0.5]),
                          tp_comm_s=np.array([0.2, 0.2]), ep_comm_s=np.zeros(2), pp_comm_s=np.zeros(2),
                          elementwise_s=np.array([0.1, 0.1]), overhead_s=np.array([0.01, 0.01]),
                          kv_write_s=np.zeros(2))
    from roofline.kernel_pass import TableTerms

    cov = np.array([True, False])
    t = TableTerms(np.array([2.0, np.nan]), np.array([0.25, np.nan]), np.array([0.1, np.nan]), cov, cov, cov,
                   ~cov, ~cov, ~cov, np.zeros(2), {}, "trtllm")
    step, used, secs = apply(res, t)
    assert secs["attention"].tolist() == [0.25, 0.5]
    assert step == pytest.approx([2.0 + 0.25 + 0.1 + 0.1 + 0.01, 1.0 + 0.5 + 0.1 + 0.2 + 0.01])
    step_o, _, _ = apply(res, t, overlap_comm=True)
    assert step_o == pytest.approx([2.0 + 0.25 + 0.1 + 0.01, 1.0 + 0.5 + 0.1 + 0.01])
    assert used["gemm"].tolist() == [True, False]


def test_a_fused_moe_table_takes_its_own_kernels_launches_out_of_the_overhead(cat):
    """A MoE table times the whole fused op (top-k, permute, grouped GEMMs, activation, finalize: AIConfigurator's
    collectors call the FusedMoE module with router logits), so its launches leave the factor model's overhead
    with it, once: gpt-oss-120b on 8 H200 with vLLM's tables, 36 MoE layers × 6 kernels × α less than the step
    before (the same terms, the same table times), and a pass whose MoE layers no table covers keeps them."""
    from dataclasses import replace

    from roofline.engine import resolve_efficiency
    from roofline.engine import step as engine_step
    from roofline.layout import Layout

    m, s = cat.model("gpt-oss-120b"), cat.system("hgx-h200")
    B = np.array([4.0, 64.0])
    kw = dict(weights_dtype="bf16", expert_weights_dtype="fp4")
    res = engine_step(m, s, B, 1000, layout=Layout(tp=8), realistic=True, details=False, check=False,
                      check_context=False, **kw)
    t = table_terms(m, s, B, 1000, tp=8, engine="vllm", **kw)
    assert t.gemm_covered.all() and t.moe_op_covered.all()
    alpha = resolve_efficiency(s, "bf16", None, True, "mid").kernel_latency_s
    assert res.launch_moe_op_s == pytest.approx(36 * 6 * alpha)
    _, _, parts = apply(res, t)
    _, _, before = apply(res, replace(t, moe_op_covered=np.zeros(2, bool)))
    assert before["overhead"] - parts["overhead"] == pytest.approx(36 * 6 * alpha)
    assert parts["overhead"] == pytest.approx(res.overhead_s - res.launch_gemm_s - res.launch_attention_s
                                              - 36 * 6 * alpha)
    # MXFP4 experts with FP8 activations on Hopper: no table has their rows, the factor model times the GEMMs
    bare = table_terms(m, s, B, 1000, tp=8, engine="vllm", moe_activations="fp8", **kw)
    assert not bare.moe_op_covered.any() and not bare.gemm_covered.any()
    assert apply(res, bare)[2]["overhead"] == pytest.approx(res.overhead_s - res.launch_attention_s)


def test_engines_differ_but_agree_within_a_factor_of_two(cat):
    """The spread across engines is the interval of a measured term: same kernel class, same shape."""
    m, s = cat.model("llama-3-8b"), cat.system("dgx-h100")
    sp = engine_spread(m, s, 32.0, 1024, phase="decode", tp=1, weights_dtype="bf16")
    g = np.array([float(t.gemm_s) for t in sp.values() if t.gemm_covered])
    assert len(g) == 3 and g.max() / g.min() < 2.0


def _cli(*args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "roofline", *args], capture_output=True, text=True)


def test_step_realistic_tables_json_names_the_tables_behind_each_term():
    import json

    base = ["step", "-m", "llama-3-70b", "-s", "dgx-h100", "-b", "64", "-c", "4096", "--tp", "8", "--weights-dtype",
            "fp8", "--kv-dtype", "fp8", "--realistic", "--json"]
    f = json.loads(_cli(*base).stdout)["realistic"]
    t = json.loads(_cli(*base, "--kernels", "tables").stdout)["realistic"]
    assert f["kernels"] == {"mode": "factor"}
    k = t["kernels"]
    assert k["mode"] == "tables" and k["engine"] == "trtllm" and k["package"] == "aiconfigurator-core 0.12.0"
    assert all(v["from_tables"] for v in k["terms"].values())
    assert "h100_sxm/gemm trtllm" in k["terms"]["gemm"]["sources"][0]
    assert t["factor_step_s"] == pytest.approx(f["step_s"])
    assert t["low_s"] <= t["step_s"] <= t["high_s"]
    # the step is recomposed from its terms: kernels + comm + overhead (no overlap in decode TP)
    assert t["step_s"] == pytest.approx(t["gemm_s"] + t["attention_s"] + t["elementwise_s"] + t["comm_s"]
                                        + t["overhead_s"], rel=1e-6)


def test_step_kernel_options_need_their_companions():
    r = _cli("step", "-m", "llama-3-70b", "-s", "dgx-h100", "--kernels", "tables")
    assert r.returncode == 2
    assert r.stderr.strip() == ("error: --kernels tables chooses the realistic model's kernel times; add --realistic "
                                "or drop --kernels")
    r = _cli("step", "-m", "llama-3-70b", "-s", "dgx-h100", "--realistic", "--engine", "vllm", "--kernels", "factor")
    assert r.returncode == 2
    assert r.stderr.strip() == ("error: --engine picks whose measured kernels --realistic takes; drop --kernels "
                                "factor or --engine")
    r = _cli("step", "-m", "llama-3-70b", "-s", "dgx-h100", "--engine", "vllm")
    assert r.returncode == 2
    assert r.stderr.strip() == ("error: --engine picks whose measured kernels --realistic takes; add --realistic or "
                                "drop --engine")


def test_step_kernels_auto_follows_the_engine_as_simulate_does():
    """`step --kernels auto` (the default): --engine E takes E's measured tables where they cover the accelerator
    (exactly `--kernels tables --engine E`), no --engine the cited factors (exactly `--kernels factor`), and an
    accelerator without tables (MI300X) the factors even with --engine — the rule `simulate` uses."""
    import json

    def run(*extra, system="dgx-h100"):
        r = _cli("step", "-m", "llama-3-70b", "-s", system, "--realistic", "-b", "32", "-c", "2048", "--json", *extra)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["realistic"]

    auto, tables = run("--engine", "vllm"), run("--engine", "vllm", "--kernels", "tables")
    assert auto["kernels"]["mode"] == "tables" and auto["kernels"]["engine"] == "vllm"
    assert auto["step_s"] == tables["step_s"]
    plain, factor = run(), run("--kernels", "factor")
    assert plain["kernels"]["mode"] == "factor" and plain["step_s"] == factor["step_s"] != auto["step_s"]
    assert run("--kernels", "tables")["kernels"]["engine"] == "trtllm"
    assert run("--engine", "vllm", system="mi300x-8")["kernels"]["mode"] == "factor"


def test_layout_degrees_broadcast_like_the_planner_grid(cat):
    """tp/ep given as arrays (the planner's candidate grid) answer each layout as the scalar call does."""
    m, s = cat.model("mixtral-8x7b"), cat.system("dgx-h100")
    tps = np.array([1, 2, 4, 8])
    arr = table_terms(m, s, 32.0, 1024, phase="decode", tp=tps, weights_dtype="bf16", engine="trtllm")
    for i, tp in enumerate(tps):
        one = table_terms(m, s, 32.0, 1024, phase="decode", tp=int(tp), weights_dtype="bf16", engine="trtllm")
        assert arr.gemm_s[i] == pytest.approx(float(one.gemm_s))
        assert arr.attention_s[i] == pytest.approx(float(one.attention_s))
        assert arr.tp_comm_s[i] == pytest.approx(float(one.tp_comm_s))


def test_deepseek_v3_expert_parallel_across_two_nodes_uses_deepep_tables(cat):
    m, s = cat.model("deepseek-v3"), cat.system("hgx-h200")
    t = table_terms(m, s, 64.0, 2048, phase="decode", tp=1, dp=16, ep=16, weights_dtype="fp8", engine="sglang")
    assert t.ep_covered and t.ep_comm_s > 0
    assert any("ep_dispatch" in x for x in t.sources["ep_comm"]) and any("ep_combine" in x for x in t.sources["ep_comm"])
    one = table_terms(m, s, 64.0, 2048, phase="decode", tp=8, ep=1, weights_dtype="fp8", engine="sglang")
    assert one.ep_covered and one.ep_comm_s == 0 and one.sources["ep_comm"] == ()


def test_experts_in_their_own_format_read_that_formats_moe_table(cat):
    """gpt-oss-120b (bf16 layers, MXFP4 experts): on Hopper the experts come from the w4a16_mxfp4 MoE table (Marlin /
    Triton kernels upcasting the weights), on Blackwell first from w4a8_mxfp4_mxfp8; a table measured at one moe tp
    only (TensorRT-LLM's Blackwell MoE rows, moe_tp 1) does not stand in for TP 2, so the GEMM term falls back to
    the factor model there, while at TP 1 it is read. FP4 experts beside FP8 layers read no table."""
    from roofline.kernel_pass import _moe_dtypes

    assert _moe_dtypes("bf16", "fp4") == ("w4a16_mxfp4",)
    assert _moe_dtypes("bf16", "fp4", fp4_cores=True) == ("w4a8_mxfp4_mxfp8", "w4a16_mxfp4")
    assert _moe_dtypes("fp8", "fp4") == ()  # NVFP4 checkpoints: no table, as FP4 GEMMs (set o)
    assert _moe_dtypes("fp8", None) == _moe_dtypes("fp8", "fp8") == ("fp8", "fp8_block")
    assert _moe_dtypes("bf16", None) == ("bf16",) and _moe_dtypes("fp4", None) == ("fp4",)
    m = cat.model("gpt-oss-120b")
    t = table_terms(m, cat.system("dgx-h100"), np.array([4.0, 64.0]), 1500, tp=8, engine="vllm",
                    expert_weights_dtype="fp4")
    assert t.gemm_covered.all() and any("moe vllm" in x and "w4a16_mxfp4 2880 2880 4 128" in x for x in t.sources["gemm"])
    b200 = cat.system("hgx-b200")
    one = table_terms(m, b200, 32.0, 1500, tp=1, engine="trtllm", expert_weights_dtype="fp4")
    assert one.gemm_covered and any("w4a8_mxfp4_mxfp8 2880" in x for x in one.sources["gemm"])
    two = table_terms(m, b200, 32.0, 1500, tp=2, engine="trtllm", expert_weights_dtype="fp4")
    assert not two.gemm_covered and np.isnan(two.gemm_s)
    # the same experts in bf16 (no expert format) keep the old lookup: no strictness, the bf16 table or none
    same = table_terms(m, b200, 32.0, 1500, tp=2, engine="trtllm")
    assert not any("mxfp4" in x for x in same.sources["gemm"])
    ds = table_terms(cat.model("deepseek-v3"), b200, 32.0, 1500, tp=8, weights_dtype="fp8", engine="trtllm",
                     expert_weights_dtype="fp4")
    assert not ds.gemm_covered and not any("moe" in x for x in ds.sources["gemm"])


def test_the_launchs_moe_activation_format_keeps_only_its_rows(cat):
    """moe_activations (simulate --moe-activations, run key moe_activations): bf16 or fp8 keeps only the MXFP4 experts'
    rows of that activation format, so vLLM on a B200 launched with MXFP8 activations (VLLM_USE_FLASHINFER_MOE_MXFP4_
    MXFP8=1), whose tables have no w4a8 rows at gpt-oss's shape, keeps the factor model instead of the BF16 path's
    rows; auto reads the BF16 rows there; SGLang's tables have both."""
    from roofline.kernel_pass import _moe_dtypes

    assert _moe_dtypes("bf16", "fp4", True, "bf16") == ("w4a16_mxfp4",)
    assert _moe_dtypes("bf16", "fp4", False, "fp8") == ("w4a8_mxfp4_mxfp8",)
    assert _moe_dtypes("fp8", "fp8", True, "fp8") == ("fp8", "fp8_block")  # only FP4 experts beside 16-bit layers
    m, b200 = cat.model("gpt-oss-120b"), cat.system("hgx-b200")
    kw = dict(tp=1, expert_weights_dtype="fp4")
    auto = table_terms(m, b200, 32.0, 1500, engine="vllm", **kw)
    fp8 = table_terms(m, b200, 32.0, 1500, engine="vllm", moe_activations="fp8", **kw)
    assert auto.gemm_covered and any("w4a16_mxfp4" in x for x in auto.sources["gemm"])
    assert not fp8.gemm_covered
    sgl = table_terms(m, b200, 32.0, 1500, engine="sglang", moe_activations="fp8", **kw)
    sgl16 = table_terms(m, b200, 32.0, 1500, engine="sglang", moe_activations="bf16", **kw)
    assert sgl.gemm_covered and sgl16.gemm_covered and float(sgl.gemm_s) < float(sgl16.gemm_s)


def test_with_kernel_tables_refuses_an_unknown_activation_format(cat):
    from roofline.errors import InputError
    from roofline.simulate.steptable import roofline_deployment, with_kernel_tables

    dep = roofline_deployment(cat.model("gpt-oss-120b"), cat.system("hgx-b200"), chips=1, realistic=True,
                              weights_dtype="bf16", expert_weights_dtype="fp4")
    with pytest.raises(InputError, match="moe activations must be one of auto, bf16, fp8"):
        with_kernel_tables(dep, "vllm", "fp6")
    assert with_kernel_tables(dep, "vllm", "fp8").step.kernel_moe_activations == "fp8"


def test_block_scaled_fp8_experts_read_only_the_block_scaled_rows(cat):
    """fp8_scales (simulate --fp8-scales, run key fp8_scales): a block-scaled FP8 checkpoint (DeepSeek-V3's 128 x 128
    weight blocks) reads only the fp8_block MoE rows, a per-tensor one only the fp8 rows; auto tries the per-tensor rows
    first (as the sets up to ap were registered). On vLLM's H200 tables at DeepSeek-V3's shape both exist, so the
    three give the two rows' GEMM terms: auto = tensor != block, each the dense GEMMs plus 58 MoE layers of that row
    (by hand from kernels.moe_s at the pass's tokens per EP rank)."""
    from roofline import kernels as K
    from roofline.kernel_pass import FP8_SCALES, _moe_dtypes

    assert FP8_SCALES == ("auto", "tensor", "block")
    assert _moe_dtypes("fp8", None) == ("fp8", "fp8_block")
    assert _moe_dtypes("fp8", None, fp8_scales="block") == ("fp8_block",)
    assert _moe_dtypes("fp8", None, fp8_scales="tensor") == ("fp8",)
    assert _moe_dtypes("bf16", "fp8", fp8_scales="block") == ("fp8_block",)  # FP8 experts beside 16-bit layers
    assert _moe_dtypes("bf16", None, fp8_scales="block") == ("bf16",)  # 16-bit experts: no FP8 scaling to pick
    m, h200 = cat.model("deepseek-v3"), cat.system("hgx-h200")
    kw = dict(tp=8, engine="vllm", weights_dtype="fp8")
    auto, tensor, block = (table_terms(m, h200, 16.0, 2000, fp8_scales=x, **kw) for x in FP8_SCALES)
    assert float(auto.gemm_s) == float(tensor.gemm_s) != float(block.gemm_s)
    assert any("fp8_block" in x for x in block.sources["gemm"]) and not any("fp8_block" in x for x in tensor.sources["gemm"])
    e = m.moe
    rows = {d: float(K.moe_s("h200", d, 16.0, hidden=m.d_model, inter=e.d_ff_expert, topk=e.active, experts=e.experts,
                              tp=np.asarray(8.0), ep=np.asarray(1.0), engine="vllm").seconds) for d in ("fp8", "fp8_block")}
    assert float(block.gemm_s) - float(tensor.gemm_s) == pytest.approx(m.moe_layers * (rows["fp8_block"] - rows["fp8"]),
                                                                     rel=1e-9)



def test_block_scaled_checkpoint_reads_block_scaled_dense_rows_except_on_vllm(cat, monkeypatch):
    """kernel_pass.BLOCK_SCALED_DENSE: with fp8_scales block, DeepSeek-V3 in FP8 on 8 B200 with TensorRT-LLM's tables
    reads its dense GEMMs from the fp8_block rows (by hand: the q_a projection, 7,168 -> 1,536 + 512 + 64, at 16 tokens,
    is that row's time), so the GEMM term falls against the per-tensor rows (15-20 us floors there); tensor and auto keep
    the per-tensor rows; vLLM keeps them too (its fp8_block rows were timed without CUDA graphs); the switch off gives
    the per-tensor rows back exactly."""
    from roofline import kernel_pass as KP
    from roofline import kernels as K

    m, b200 = cat.model("deepseek-v3"), cat.system("hgx-b200")
    kw = dict(tp=8, weights_dtype="fp8")
    trt = {x: table_terms(m, b200, 16.0, 2000, fp8_scales=x, engine="trtllm", **kw) for x in ("tensor", "block")}
    dense = {d: float(K.gemm_s("b200", d, 16.0, 1536 + 512 + 64, 7168, engine="trtllm").seconds) for d in ("fp8", "fp8_block")}
    assert dense["fp8_block"] < dense["fp8"]
    assert any("gemm trtllm" in x and "fp8_block" in x for x in trt["block"].sources["gemm"])
    assert not any("gemm trtllm" in x and "fp8_block" in x for x in trt["tensor"].sources["gemm"])
    monkeypatch.setattr(KP, "BLOCK_SCALED_DENSE", False)
    off = table_terms(m, b200, 16.0, 2000, fp8_scales="block", engine="trtllm", **kw)
    saved = float(off.gemm_s) - float(trt["block"].gemm_s)
    assert saved >= m.layers * (dense["fp8"] - dense["fp8_block"]) > 0  # at least the q_a projection's share
    monkeypatch.setattr(KP, "BLOCK_SCALED_DENSE", True)
    vllm = {x: table_terms(m, cat.system("hgx-h200"), 16.0, 2000, fp8_scales=x, engine="vllm", **kw) for x in ("block",)}
    assert not any("gemm vllm" in x and "fp8_block" in x for x in vllm["block"].sources["gemm"])

def test_dense_block_scaled_checkpoint_reads_block_scaled_gemm_rows(cat):
    """A dense FP8 checkpoint with 128 x 128 weight blocks (Qwen/Qwen3-32B-FP8) with fp8_scales block: Qwen3-32B in FP8
    on one H100 with TensorRT-LLM's tables, 8 decodes at 4,352 tokens, reads every dense GEMM from the fp8_block rows
    (by hand: 64 layers x the four projections' block-scaled rows, plus the LM head's row, which the pass times in the
    weights' format), against
    the per-tensor rows with tensor or auto; attention does not move; `roofline step` refuses it on vLLM's tables,
    whose dense GEMMs keep the per-tensor rows."""
    from roofline import kernels as K
    from roofline.requests.rules import UsageError
    from roofline.requests.step import StepRequest, run_step

    m, h100 = cat.model("qwen3-32b"), cat.system("dgx-h100")
    kw = dict(tp=1, weights_dtype="fp8", engine="trtllm")
    terms = {x: table_terms(m, h100, 8.0, 4352, fp8_scales=x, **kw) for x in ("auto", "tensor", "block")}
    assert float(terms["auto"].gemm_s) == float(terms["tensor"].gemm_s) > float(terms["block"].gemm_s)
    assert float(terms["auto"].attention_s) == float(terms["block"].attention_s)
    H, D, F, V = m.head_dim, m.d_model, m.d_ff, m.vocab
    shapes = [((m.heads + 2 * m.kv_heads) * H, D, m.layers), (D, m.heads * H, m.layers), (2 * F, D, m.layers),
              (D, F, m.layers), (V, D, 1)]
    by_hand = sum(n_layers * float(K.gemm_s("h100-sxm", "fp8_block", 8.0, n, k, engine="trtllm").seconds)
                  for n, k, n_layers in shapes)
    assert float(terms["block"].gemm_s) == pytest.approx(by_hand, rel=1e-9)
    step = dict(model="qwen3-32b", system="dgx-h100", gpus=1, batch=8, context=4352, realistic=True,
                weights_dtype="fp8")
    assert (run_step(StepRequest.of(fp8_scales="block", engine="trtllm", **step))["realistic"]["step_s"]
            < run_step(StepRequest.of(engine="trtllm", **step))["realistic"]["step_s"])
    with pytest.raises(UsageError, match="vLLM's dense GEMMs keep the per-tensor rows"):
        StepRequest.of(fp8_scales="block", engine="vllm", **step)


def test_step_and_simulate_read_the_stated_fp8_scaling():
    """`roofline step --fp8-scales` and `simulate --fp8-scales` reach the pass: DeepSeek-V3 in FP8 on 8 H200 with vLLM's
    tables, 16 decodes at 2,000 tokens: block reads the block-scaled MoE rows (slower there, the test above) and tensor
    is auto; the simulator's TPOT follows."""
    from roofline.requests.simulate import SimulateRequest, run_simulate
    from roofline.requests.step import StepRequest, run_step

    kw = dict(model="deepseek-v3", system="hgx-h200", realistic=True, engine="vllm", weights_dtype="fp8")
    step = {x: run_step(StepRequest.of(batch=16, context=2000, fp8_scales=x, **kw))["realistic"]["step_s"]
            for x in ("auto", "tensor", "block")}
    assert step["auto"] == step["tensor"] < step["block"]
    sim = {x: run_simulate(SimulateRequest.of(requests=40, rate=1.0, prompt_tokens=500, output_tokens=50, fp8_scales=x,
                                          **kw))["tpot_mean_s"] for x in ("auto", "block")}
    assert sim["auto"] < sim["block"]


def test_with_kernel_tables_refuses_an_unknown_fp8_scaling(cat):
    from roofline.errors import InputError
    from roofline.simulate.steptable import roofline_deployment, with_kernel_tables

    dep = roofline_deployment(cat.model("deepseek-v3"), cat.system("hgx-h200"), chips=8, realistic=True,
                              weights_dtype="fp8")
    with pytest.raises(InputError, match="fp8 scales must be one of auto, tensor, block"):
        with_kernel_tables(dep, "vllm", "auto", "channel")
    assert with_kernel_tables(dep, "vllm", "auto", "block").step.kernel_fp8_scales == "block"


def test_naming_the_trtllm_gen_moe_kernel_reads_its_rows_from_another_collector(cat):
    """kernels.MOE_KERNELS (moe_kernel, simulate/step --moe-kernel): TensorRT-LLM's own block-scaled FP8 MoE rows on
    B200 are DeepGEMM's; `trtllm-gen` reads the TensorRT-LLM-gen kernel's rows, which only AIConfigurator's SGLang
    collector measured (FlashInfer's trtllm_fp8_block_scale_moe), so the lookup is that table's value exactly. In a
    DeepSeek-V3 decode pass (16 sequences, TP 8) the GEMM term moves by 58 MoE layers x the two rows' difference, by
    hand; where no trtllm-gen row exists (H200) the engine's own rows stay; an unknown name is refused."""
    from roofline import kernels as K
    from roofline.errors import InputError

    m, b200 = cat.model("deepseek-v3"), cat.system("hgx-b200")
    e = m.moe
    shape = dict(hidden=m.d_model, inter=e.d_ff_expert, topk=e.active, experts=e.experts, tp=np.asarray(8.0),
                 ep=np.asarray(1.0))
    own = K.moe_s("b200", "fp8_block", 16.0, engine="trtllm", **shape)
    gen = K.moe_s("b200", "fp8_block", 16.0, engine="trtllm", kernel="trtllm-gen", **shape)
    sgl = K.moe_s("b200", "fp8_block", 16.0, engine="sglang", **shape)
    assert "deepgemm" in own.source and "sglang_flashinfer_trtllm_moe" in gen.source
    assert float(gen.seconds) == float(sgl.seconds) != float(own.seconds)
    assert K.moe_s("b200", "fp8_block", 16.0, engine="trtllm", kernel="auto", **shape).source == own.source
    with pytest.raises(InputError, match="unknown MoE kernel 'cutlass'"):
        K.moe_s("b200", "fp8_block", 16.0, engine="trtllm", kernel="cutlass", **shape)
    kw = dict(tp=8, engine="trtllm", weights_dtype="fp8", fp8_scales="block")
    auto, named = (table_terms(m, b200, 16.0, 2000, moe_kernel=x, **kw) for x in ("auto", "trtllm-gen"))
    assert float(named.gemm_s) - float(auto.gemm_s) == pytest.approx(
        m.moe_layers * (float(gen.seconds) - float(own.seconds)), rel=1e-9)
    assert float(named.attention_s) == float(auto.attention_s) and bool(named.moe_op_covered)
    h200 = cat.system("hgx-h200")  # no FlashInfer TRTLLM rows on Hopper: the engine's own rows
    assert float(table_terms(m, h200, 16.0, 2000, moe_kernel="trtllm-gen", **kw).gemm_s) == float(
        table_terms(m, h200, 16.0, 2000, **kw).gemm_s)


def test_step_and_simulate_read_the_named_moe_kernel():
    """`roofline step --moe-kernel` and `simulate --moe-kernel` reach the pass (DeepSeek-V3 FP8 on 8 B200 with
    TensorRT-LLM's tables: the TRTLLM-gen rows are faster than DeepGEMM's at 16 decodes, and the TPOT follows); a dense
    model, or no kernel tables, is refused with one line; with_kernel_tables refuses an unknown name."""
    from roofline.errors import InputError
    from roofline.requests.rules import UsageError
    from roofline.requests.simulate import SimulateRequest, run_simulate
    from roofline.requests.step import StepRequest, run_step
    from roofline.simulate.steptable import roofline_deployment, with_kernel_tables

    kw = dict(model="deepseek-v3", system="hgx-b200", realistic=True, engine="trtllm", weights_dtype="fp8",
              fp8_scales="block")
    from roofline.kernels import MOE_KERNELS

    step = {x: run_step(StepRequest.of(batch=16, context=2000, moe_kernel=x, **kw))["realistic"]["step_s"]
            for x in MOE_KERNELS}  # the requests' choices are the kernels module's names
    assert set(step) == {"auto", "trtllm-gen"}
    assert step["trtllm-gen"] < step["auto"]
    sim = {x: run_simulate(SimulateRequest.of(requests=40, rate=1.0, prompt_tokens=500, output_tokens=50, moe_kernel=x,
                                          **kw))["tpot_mean_s"] for x in ("auto", "trtllm-gen")}
    assert sim["trtllm-gen"] < sim["auto"]
    with pytest.raises(UsageError, match="mixture-of-experts model"):
        StepRequest.of(model="llama-3-8b", system="hgx-b200", realistic=True, engine="trtllm", moe_kernel="trtllm-gen")
    with pytest.raises(UsageError, match="needs measured kernel tables"):
        StepRequest.of(model="deepseek-v3", system="hgx-b200", realistic=True, kernels="factor", moe_kernel="trtllm-gen")
    dep = roofline_deployment(get_catalog().model("deepseek-v3"), get_catalog().system("hgx-b200"), chips=8,
                              realistic=True, weights_dtype="fp8")
    with pytest.raises(InputError, match="moe kernel must be one of auto, trtllm-gen"):
        with_kernel_tables(dep, "trtllm", moe_kernel="deepgemm")
    assert with_kernel_tables(dep, "trtllm", moe_kernel="trtllm-gen").step.kernel_moe == "trtllm-gen"


def test_moe_shape_without_rows_keeps_the_factor_models_gemm_term(monkeypatch):
    """GLM-4.7's routed experts (160 of 1,536, hidden 5,120) have no MoE row: the pass's GEMM term is not covered, so
    `apply` keeps the factor model's; the old composition (kernel_pass.MOE_PER_EXPERT_GEMMS, as sets up to am were
    registered) is one measured GEMM per touched expert: at MoE TP 8 and 100 decodes, 160 experts x 2 GEMMs of 192
    columns per MoE layer, by hand."""
    from roofline import kernel_pass as KP
    from roofline import kernels as K
    from roofline.catalog import model, system

    m, s = model("glm-4.7"), system("dgx-h100")
    monkeypatch.setattr(KP, "MOE_SHAPE_TRANSFER", False)  # the nearest-shape rows (the next test) left out
    now = KP.table_terms(m, s, 100, 2048, tp=8, weights_dtype="fp8", engine="vllm")
    assert not now.gemm_covered and now.attention_covered and now.tp_covered
    monkeypatch.setattr(KP, "MOE_PER_EXPERT_GEMMS", True)
    old = KP.table_terms(m, s, 100, 2048, tp=8, weights_dtype="fp8", engine="vllm")
    assert old.gemm_covered and old.gemm_extrapolated
    e = m.moe
    touched = M.expected_distinct_experts(e.experts, e.active, 100.0)
    rows = max(100.0 * e.active / e.experts, 1.0)
    per_layer = sum(float(K.gemm_s("h100-sxm", "fp8", rows, n, k, engine="vllm").seconds)
                    for n, k in ((2 * e.d_ff_expert / 8, m.d_model), (m.d_model, e.d_ff_expert / 8)))
    moe_gemms = m.moe_layers * touched * per_layer
    assert touched > 159 and moe_gemms > 0.15  # 160 experts touched; over 150 ms of expert GEMMs per pass
    assert float(old.gemm_s) > moe_gemms


def test_moe_shape_without_rows_reads_the_nearest_shape_in_the_pass(monkeypatch):
    """With kernel_pass.MOE_SHAPE_TRANSFER (the default), GLM-4.7's routed experts at TP 8 x EP 8 read the nearest
    measured shape (kernels.moe_transfer_s) at the tokens each EP rank brings (100 decodes over 8 ranks: 12.5): the
    pass's GEMM term is covered and extrapolated, and holds that time once per MoE layer (doubling the transfer's time
    adds exactly MoE layers x it); its distance grows by the shape distance, so the interval widens."""
    from roofline import kernel_pass as KP
    from roofline import kernels as K
    from roofline.catalog import model, system

    m, s = model("glm-4.7"), system("dgx-h100")
    kw = dict(tp=8, ep=8, moe_tp=1, weights_dtype="fp8", engine="vllm")
    on = KP.table_terms(m, s, 100, 2048, **kw)
    assert on.gemm_covered and on.gemm_extrapolated and on.moe_op_covered
    r = K.moe_transfer_s("h100-sxm", "fp8", 12.5, hidden=m.d_model, inter=m.moe.d_ff_expert, topk=m.moe.active,
                         experts=m.moe.experts, tp=1, ep=8, engine="vllm")
    assert r.covered and float(on.distance) >= float(r.distance) > 0.4
    real = K.moe_transfer_s
    monkeypatch.setattr(K, "moe_transfer_s", lambda *a, **k: real(*a, **k)._replace(seconds=2 * real(*a, **k).seconds))
    doubled = KP.table_terms(m, s, 100, 2048, **kw)
    assert float(doubled.gemm_s - on.gemm_s) == pytest.approx(m.moe_layers * float(r.seconds))
    monkeypatch.setattr(KP, "MOE_SHAPE_TRANSFER", False)
    assert not KP.table_terms(m, s, 100, 2048, **kw).gemm_covered
    monkeypatch.setattr(KP, "MOE_SHAPE_TRANSFER", True)
    # the interval's spread: only the pass's own engine transfers (the others' estimates are not measurements)
    kw.pop("engine")
    spread = KP.engine_spread(m, s, 100, 2048, transfer_engine="vllm", **kw)
    assert spread["vllm"].gemm_covered and not spread["sglang"].gemm_covered and not spread["trtllm"].gemm_covered
    assert KP.table_terms(m, s, 100, 2048, engine="sglang", **kw).gemm_covered  # which it would be as its own
