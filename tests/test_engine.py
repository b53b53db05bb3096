"""The one pass engine: the four disagreements it removed (each failed on the four-engine code), the
critical batch where the engine's own bound flips, the latency floor below every step, and the pure
roofline as the same engine with Efficiency() (module engine.py)."""

import json

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline import model as M
from roofline.catalog import get_catalog
from roofline.efficiency import Efficiency, realistic
from roofline.engine import BOUNDS, step
from roofline.layout import Layout
from roofline.memory import training_memory

CAT = get_catalog()


def test_sequence_parallelism_is_one_switch_for_time_and_memory(run_cli):
    """`train --no-sequence-parallel` moved the elementwise time but left activation memory at the
    sequence-parallel figure (11.24 GB): the Layout now carries the one switch both read."""
    args = ("train", "-m", "llama-3-70b", "-s", "dgx-h100", "--tp", "8", "--pp", "4", "--dp", "2", "--global-batch",
            "64", "--json")
    sp, nosp = (json.loads(run_cli(*args, *extra)[1]) for extra in ((), ("--no-sequence-parallel",)))
    assert nosp["elementwise_s"] > 3 * sp["elementwise_s"]
    assert nosp["memory"]["activations_bytes"] > 2 * sp["memory"]["activations_bytes"]
    lay = Layout(tp=8, pp=4, dp=2, micro_batches=32, recompute="selective", sequence_parallel=False)
    by_hand = training_memory(CAT.model("llama-3-70b"), lay, 4096, flash_attention=True, dropout=False)
    assert nosp["memory"]["activations_bytes"] == pytest.approx(float(by_hand.activations), rel=1e-12)


def test_one_price_resolver(run_cli, tmp_path):
    """A --catalog system priced at $1/h: the step without a layout used the accelerator's price
    ($0.70/Mtok) and the same step with --tp 8 the system's ($0.23/Mtok). Both now use the system's."""
    f = tmp_path / "cheap.yaml"
    f.write_text(yaml.safe_dump({"systems": [{
        "id": "cheap-h100x8", "name": "8 x H100 at $1/h", "accelerator": "h100-sxm", "chips": 8,
        "scale_up_gb_per_s": 450, "scale_out_gb_per_s": 50, "scale_up_latency_us": 1, "scale_out_latency_us": 5,
        "usd_per_hour": 1.0, "source": "test", "date": "2026-11"}]}))
    base = ("--catalog", str(f), "step", "-m", "llama-3-70b", "-s", "cheap-h100x8", "-b", "64", "-c", "2000", "--json")
    plain, tp8 = (json.loads(run_cli(*base, *extra)[1]) for extra in ((), ("--tp", "8")))
    for d in (plain, tp8):
        # $/Mtok = GPUs · $1/h / 3600 / (tokens/s) · 1e6
        assert d["usd_per_million_tokens"] == pytest.approx(8 * 1.0 / 3600 / d["tokens_per_s"] * 1e6, rel=1e-12)
    assert plain["step_s"] == pytest.approx(tp8["step_s"], rel=1e-3)
    assert plain["usd_per_million_tokens"] == pytest.approx(tp8["usd_per_million_tokens"], rel=1e-3)


@pytest.mark.parametrize("mid,sid,wd", [("lecture-frontier-moe", "gb200-nvl72", "fp8"), ("llama-3-70b", "dgx-h100", "bf16"),
                                         ("deepseek-v3", "gb200-nvl72", "fp8"), ("gpt-oss-120b", "hgx-h200", "fp8")])
def test_latency_floor_is_the_engines_batch_one_step(mid, sid, wd):
    """The printed floor was W_total/BW: every weight including the whole embedding table and every
    expert, above the step's own batch-1 time (1.72 ms vs 0.178 ms for the lecture's frontier MoE). It is
    now the engine's batch-1 step at context 0, and no step of any batch or context is faster."""
    m, s = CAT.model(mid), CAT.system(sid)
    B = np.array([1, 2, 64, 4096])[:, None]
    ctx = np.array([0, 1000, 100_000])[None, :]
    r = step(m, s, B, ctx, weights_dtype=wd, kv_dtype="fp8", check_context=False)
    one = step(m, s, 1, 0, weights_dtype=wd, kv_dtype="fp8")
    assert r.latency_floor_s == pytest.approx(float(one.step_s), rel=1e-12)
    assert np.all(r.step_s >= r.latency_floor_s * (1 - 1e-12))
    if m.moe:  # one token reads k experts per layer, not all E
        all_weights = M.params_total(m) * (1.0 if wd == "fp8" else 2.0) / s.hbm_bytes_per_s
        assert r.latency_floor_s < 0.5 * all_weights


def test_frontier_moe_critical_batch_at_100k_is_where_the_bound_flips():
    """critical_batch at a context left out the attention FLOPs the step includes: 8,027 printed for the
    lecture's frontier MoE at 100K while the step's bound flips near 2,100. It is found on the engine."""
    m, s = CAT.model("lecture-frontier-moe"), CAT.system("gb200-nvl72")
    r = step(m, s, 1, 100_000, weights_dtype="fp8", kv_dtype="fp8")
    b = float(r.critical_batch_with_kv)
    assert 2000 < b < 2300
    below, above = (step(m, s, x, 100_000, weights_dtype="fp8", kv_dtype="fp8") for x in (0.99 * b, 1.01 * b))
    assert BOUNDS[int(below.bound)] == "memory" and BOUNDS[int(above.bound)] == "compute"


@pytest.mark.parametrize("mid", ["llama-3-8b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3", "qwen3-235b-a22b",
                                 "gpt-oss-120b", "gemma-3-27b", "lecture-frontier-moe"])
def test_critical_batch_is_where_the_sweep_flips(mid):
    """For every catalog model and a grid of contexts: below the printed critical batch the sweep's bound
    is memory, above it compute (or memory everywhere when no critical batch exists)."""
    m, s = CAT.model(mid), CAT.system("gb200-nvl72")
    ctx = np.array([0.0, 1024, 8192, 32768])
    ctx = ctx[ctx < m.max_context]
    r = step(m, s, 1, ctx, weights_dtype="fp8", kv_dtype="fp8")
    crit = np.asarray(r.critical_batch_with_kv)
    assert float(r.critical_batch) == pytest.approx(float(crit[0]), rel=1e-9)  # context 0
    B = np.geomspace(0.5, 1e7, 400)[:, None]
    sweep = step(m, s, B, ctx[None, :], weights_dtype="fp8", kv_dtype="fp8")
    compute = sweep.bound == 0
    for j, c in enumerate(crit):
        if np.isinf(c):
            assert not compute[:, j].any()
        else:
            assert not compute[B[:, 0] < c * 0.999, j].any() and compute[B[:, 0] > c * 1.001, j].all(), (mid, ctx[j])


def test_bound_is_a_small_integer_with_names():
    r = step(CAT.model("llama-3-8b"), CAT.system("dgx-h100"), np.array([1, 4096]), 0)
    assert r.bound.dtype == np.int8 and list(r.bound_name) == ["memory", "compute"]
    assert r.to_dict()["bound"] == ["memory", "compute"]


def test_pure_roofline_is_the_engine_with_ideal_efficiency():
    """The pure roofline and the realistic prediction are one engine: with every family factor set to
    its ideal value (1, no overheads, one max) the realistic layout step equals the pure one."""
    from dataclasses import replace

    m, s = CAT.model("llama-3-70b"), CAT.system("dgx-h100")
    lay = Layout(tp=8)
    fam = realistic(s.accelerator)
    ideal_again = replace(fam, compute=1.0, memory=1.0, gemm_half_rows=0.0, kv_memory=1.0, attention=1.0,
                          attention_at_activation_peak=False, elementwise=0.0, scale_up=1.0, scale_out=1.0,
                          scale_up_latency_s=None, scale_out_latency_s=None, layer_overhead_s=0.0,
                          pass_overhead_s=0.0, kernel_latency_s=0.0, attention_latency_s=0.0, per_kernel=False,
                          overlap_comm=True)
    a = step(m, s, 64, 4096, layout=lay, efficiency=ideal_again)
    b = step(m, s, 64, 4096, layout=lay)
    assert float(a.step_s) == float(b.step_s) and b.efficiency == "ideal" and a.efficiency == "nvidia"


@settings(max_examples=40, deadline=None)
@given(b1=st.integers(1, 8192), b2=st.integers(1, 8192), c1=st.integers(0, 100_000), c2=st.integers(0, 100_000),
       real=st.booleans(), tp=st.sampled_from([1, 2, 4, 8]))
def test_step_non_decreasing_in_batch_and_context(b1, b2, c1, c2, real, tp):
    """DESIGN.md property, for the pure and the realistic engine under a layout."""
    m, s = CAT.model("llama-3.1-8b"), CAT.system("dgx-h100")
    kw = dict(layout=Layout(tp=tp), realistic=real, weights_dtype="fp8", kv_dtype="fp8", check=False)
    (lo_b, hi_b), (lo_c, hi_c) = sorted((b1, b2)), sorted((c1, c2))
    t = lambda b, c: float(step(m, s, b, c, **kw).step_s)  # noqa: E731
    assert t(lo_b, lo_c) <= t(hi_b, lo_c) * (1 + 1e-12) and t(lo_b, lo_c) <= t(lo_b, hi_c) * (1 + 1e-12)


def test_explicit_efficiency_and_realistic_are_exclusive():
    from roofline.errors import InputError

    m, s = CAT.model("llama-3-8b"), CAT.system("dgx-h100")
    with pytest.raises(InputError, match="drop the explicit efficiencies or the realistic switch"):
        step(m, s, 1, 0, layout=Layout(tp=8), realistic=True, efficiency=Efficiency(0.5, 0.5))


def test_catalog_option_after_the_subcommand(run_cli, tmp_path):
    """`--catalog FILE` works before or after the subcommand, with the same answer."""
    f = tmp_path / "mine.yaml"
    f.write_text("models:\n  - {id: tiny-llama, name: Tiny, family: llama, layers: 2, d_model: 64, vocab: 100,"
                 " heads: 4, kv_heads: 2, head_dim: 16, d_ff: 128, max_context: 512, source: mine, date: 2026-01-01}\n")
    before = run_cli("--catalog", str(f), "step", "-m", "tiny-llama", "-a", "h100-sxm", "--json")
    after = run_cli("step", "-m", "tiny-llama", "-a", "h100-sxm", "--json", "--catalog", str(f))
    assert before[0] == after[0] == 0, after[2]
    assert json.loads(before[1]) == json.loads(after[1])


def test_redundant_experts_let_ep_72_hold_deepseek_v3():
    """EP 72 does not divide DeepSeek-V3's 256 experts; with 32 redundant copies (EPLB: 288 slots) each of the
    72 GPUs holds 4 slots — the same routed bytes per GPU as EP 64's 4 experts (hand value of
    test_parallel: 27,334,972,928 B with fp8 weights at TP 1), and 72 GPUs share the work instead of 64."""
    from roofline.errors import InputError
    from roofline.layout import validate
    from roofline.memory import memory_per_gpu

    m, s = CAT.model("deepseek-v3"), CAT.system("gb200-nvl72")
    with pytest.raises(InputError, match="--redundant-experts 32 \\(4 slots per GPU"):
        validate(m, s, Layout(tp=1, ep=72, dp=72))
    lay = Layout(tp=1, ep=72, dp=72, redundant_experts=32)
    validate(m, s, lay)
    w72 = memory_per_gpu(m, lay, 72, 0, bytes_per_weight=1.0).weights_bytes
    w64 = memory_per_gpu(m, Layout(tp=1, ep=64, dp=64), 64, 0, bytes_per_weight=1.0).weights_bytes
    assert float(w72) == float(w64) == 27_334_972_928
    r72 = step(m, s, 4608, 4096, layout=lay, weights_dtype="fp8", kv_dtype="fp8")
    r64 = step(m, s, 4096, 4096, layout=Layout(tp=1, ep=64, dp=64), weights_dtype="fp8", kv_dtype="fp8")
    assert float(r72.gpus) == 72 and float(r72.tokens_per_s) > float(r64.tokens_per_s)
    # a large batch touches every slot: a GPU reads all it holds (its 4 slots and the dense weights) except
    # the embedding rows its 4,096 tokens do not look up
    big = step(m, s, 72 * 4096, 0, layout=lay, weights_dtype="fp8", kv_dtype="fp8", details=False)
    unused_rows = (m.vocab - 4096) * m.d_model
    assert float(big.weight_read_s) * s.accelerator.hbm_bytes_per_s == pytest.approx(float(w72) - unused_rows,
                                                                                      rel=1e-6)


def test_moe_tensor_parallel_unlike_attention():
    """Mixtral on 8 GPUs: attention TP 8, MoE TP 2 x EP 4 (TensorRT-LLM's hybrid). Routed weights per GPU are
    1/8 either way; the MoE layers all-reduce over 2 GPUs and dispatch over 4, by hand."""
    from roofline import network as N
    from roofline.errors import InputError
    from roofline.layout import validate
    from roofline.memory import params_per_gpu

    m, s = CAT.model("mixtral-8x7b"), CAT.system("dgx-h100")
    hybrid = Layout(tp=8, ep=4, expert_tp=2)
    validate(m, s, hybrid)
    assert hybrid.moe_tp == 2
    assert params_per_gpu(m, hybrid)[1] == pytest.approx(params_per_gpu(m, Layout(tp=8))[1])
    with pytest.raises(InputError, match="MoE TP 4 x EP 4 = 16 GPUs must divide"):
        validate(m, s, Layout(tp=8, ep=4, expert_tp=4))
    B = 64
    r = step(m, s, B, 1000, layout=hybrid)
    act = m.d_model * 2.0
    up_bw, up_lat = s.scale_up_bytes_per_s, s.scale_up_latency_s
    tp_by_hand = (m.layers * N.best_all_reduce_s(B * act, 8, up_bw, up_lat)
                  + m.moe_layers * N.best_all_reduce_s(B * act, 2, up_bw, up_lat))
    assert float(r.tp_comm_s) == pytest.approx(float(tp_by_hand), rel=1e-12)
    # dispatch + combine: each GPU sends its B/8 tokens' k = 2 copies, 3/4 of them to the 3 other EP ranks
    a2a = 3 / 4 * (B / 8 * 2 * act) / up_bw + up_lat
    assert float(r.ep_comm_s) == pytest.approx(2 * m.moe_layers * a2a, rel=1e-12)


def test_pcie_groups_beyond_two_take_the_ring_all_reduce(monkeypatch):
    """Eight RTX PRO 6000 over PCIe (no NVLink): vLLM's custom (one-shot) all-reduce refuses more than 2 GPUs that are
    not NVLink-connected, so TP 8 all-reduces run NCCL's ring. GLM-4.6 (92 layers, d 5120) at batch 1, realistic:
    each all-reduce is 2·7/8 · 10,240 B / (64 GB/s · 0.8) + 14 · 3 µs = 42.35 µs, 184 of them 7.79 ms, by hand; the
    one-shot algorithm (every fabric, as registered up to set cq) took 2 · 3 µs + 7 · 10,240 B / 51.2 GB/s each."""
    from roofline import engine as E
    from roofline import network as N

    m, s = CAT.model("glm-4.7"), CAT.system("rtx-pro-6000-8")
    assert s.one_shot_all_reduce_max_gpus == 2 and CAT.system("hgx-h200").one_shot_all_reduce_max_gpus == 0
    r = step(m, s, 1, 1000, layout=Layout(tp=8), realistic=True)
    b, bw, a = 5120 * 2.0, 64e9 * 0.8, 3e-6
    ring = 2 * 7 / 8 * b / bw + 14 * a
    assert float(r.tp_comm_s) == pytest.approx(2 * m.layers * ring, rel=1e-9)
    # two GPUs may still read each other's buffers: one-shot 2·α + b/β (equal to the ring's b/β + 2·α at n = 2)
    assert float(N.best_all_reduce_s(b, 2, bw, a, one_shot_max=2)) == pytest.approx(2 * a + b / bw)
    assert float(N.best_all_reduce_s(64 * b, 4, bw, a, one_shot_max=2)) == pytest.approx(2 * 3 / 4 * 64 * b / bw + 6 * a)
    monkeypatch.setattr(E, "PEER_ALL_REDUCE_LIMIT", False)
    one_shot = float(step(m, s, 1, 1000, layout=Layout(tp=8), realistic=True).tp_comm_s)
    assert one_shot == pytest.approx(2 * m.layers * (2 * a + 7 * b / bw), rel=1e-9)


def test_moe_tokens_gathered_across_attention_groups_by_hand(monkeypatch):
    """Mixtral on 8 GPUs as vLLM's MoE data parallelism: attention TP 4 x DP 2, each routed expert sliced over all 8
    (ep 1). Every MoE layer all-gathers both DP groups' tokens, reduce-scatters the expert outputs and all-reduces
    over its TP 4 (layout.MOE_GATHERS_GROUPS), by hand; so do the measured-kernel terms, from NCCL's tables. Off: one
    all-reduce of the group's own tokens over 8 GPUs, as set al was registered."""
    from roofline import kernels as K
    from roofline import layout as LY
    from roofline import network as N
    from roofline.kernel_pass import table_terms

    m, s = CAT.model("mixtral-8x7b"), CAT.system("dgx-h100")
    lay = Layout(tp=4, dp=2, expert_tp=8)
    B = 64
    act = m.d_model * 2.0
    up_bw, up_lat = s.scale_up_bytes_per_s, s.scale_up_latency_s
    own, gathered = B / 2 * act, B * act  # a DP group's tokens, both groups' tokens
    dense = m.layers * N.best_all_reduce_s(own, 4, up_bw, up_lat)
    moe = m.moe_layers * (N.all_gather_s(gathered, 2, up_bw, up_lat) + N.reduce_scatter_s(gathered, 2, up_bw, up_lat)
                          + N.best_all_reduce_s(own, 4, up_bw, up_lat))
    assert float(step(m, s, B, 1000, layout=lay).tp_comm_s) == pytest.approx(float(dense + moe), rel=1e-12)
    t = table_terms(m, s, B, 1000, tp=4, dp=2, moe_tp=8, engine="vllm")
    by_table = (m.layers * K.collective_s("h100-sxm", "all_reduce", own, 4, engine="vllm").seconds
                + m.moe_layers * (K.collective_s("h100-sxm", "all_reduce", own, 4, engine="vllm").seconds
                                  + K.collective_s("h100-sxm", "all_gather", gathered, 2).seconds
                                  + K.collective_s("h100-sxm", "reduce_scatter", gathered, 2).seconds))
    assert t.tp_covered and float(t.tp_comm_s) == pytest.approx(float(by_table), rel=1e-12)
    monkeypatch.setattr(LY, "MOE_GATHERS_GROUPS", False)
    registered = dense + m.moe_layers * N.best_all_reduce_s(own, 8, up_bw, up_lat)
    assert float(step(m, s, B, 1000, layout=lay).tp_comm_s) == pytest.approx(float(registered), rel=1e-12)
    # attention TP 8 with MoE TP 2 x EP 4 serves one attention group: no gather either way
    monkeypatch.setattr(LY, "MOE_GATHERS_GROUPS", True)
    hybrid = step(m, s, B, 1000, layout=Layout(tp=8, ep=4, expert_tp=2))
    assert float(hybrid.tp_comm_s) == pytest.approx(float((m.layers * N.best_all_reduce_s(B * act, 8, up_bw, up_lat)
                                                            + m.moe_layers * N.best_all_reduce_s(B * act, 2, up_bw, up_lat))), rel=1e-12)


def test_context_parallel_prefill_by_hand():
    """Llama 3.1 70B, one 131,072-token prompt on 4 DGX H100: TP 8 x CP 4. Each CP rank computes 1/4 of the
    GEMMs and of the (balanced causal) attention, holds 1/4 of the KV, and every layer all-gathers the
    sequence's K and V of its KV head (327,680 B/token over 80 layers / 8 TP ranks = 512 B per token per
    layer) over the 4 ranks, which span 4 domains: scale-out, 3/4 of 131,072 x 512 B at 50 GB/s + 3 hops."""
    from roofline import network as N
    from roofline.errors import InputError

    m, s = CAT.model("llama-3.1-70b"), CAT.system("dgx-h100")
    L = 131_072
    one = step(m, s, 1, 0, layout=Layout(tp=8), phase="prefill", prompt=L, details=False, check=False)
    cp4 = step(m, s, 1, 0, layout=Layout(tp=8, cp=4, domains=4), phase="prefill", prompt=L, details=False)
    assert float(cp4.compute_s) == pytest.approx(float(one.compute_s) / 4, rel=1e-12)
    assert float(cp4.kv_per_gpu_bytes) == pytest.approx(float(one.kv_per_gpu_bytes) / 4, rel=1e-12)
    per_layer = L * 512.0
    by_hand = 80 * N.all_gather_s(per_layer, 4, s.scale_out_bytes_per_s, s.scale_out_latency_s)
    assert float(cp4.cp_comm_s) == pytest.approx(float(by_hand), rel=1e-12)
    assert float(cp4.gpus) == 32 and float(cp4.step_s) < float(one.step_s)
    with pytest.raises(InputError, match="context parallelism \\(CP 4\\) splits a prompt's tokens"):
        step(m, s, 1, 1000, layout=Layout(tp=8, cp=4, domains=4))


def test_context_parallel_training_halves_activations_and_reduces_over_dp_cp():
    """Training with CP 2: activations per GPU (flash attention) and logits are of s/2 tokens; the gradient
    all-reduce and ZeRO sharding run over DP x CP ranks; the step adds the K/V all-gathers."""
    from roofline.memory import training_memory
    from roofline.training import train_step

    m, s = CAT.model("llama-3.1-8b"), CAT.system("dgx-h100")
    base = dict(tp=4, dp=2, micro_batches=4, zero=1, sequence_parallel=True)
    a = training_memory(m, Layout(**base), 32768, flash_attention=True, dropout=False)
    b = training_memory(m, Layout(cp=2, **base), 32768, flash_attention=True, dropout=False)
    assert float(b.activations) == pytest.approx(float(a.activations) / 2, rel=1e-12)
    assert float(b.optimizer) == pytest.approx(float(a.optimizer) / 2, rel=1e-12)  # ZeRO-1 over 4 ranks, not 2
    t1 = train_step(m, s, Layout(**base), 32768, flash_attention=True)
    t2 = train_step(m, s, Layout(cp=2, **base), 32768, flash_attention=True)
    assert float(t2.cp_comm_s) > 0 == float(t1.cp_comm_s) and t2.gpus == 16
    assert float(t2.compute_s) == pytest.approx(float(t1.compute_s) / 2, rel=0.02)  # GEMM curve at s/2 rows


def test_train_cli_takes_cp(run_cli):
    """`roofline train --cp N` runs the same layout as the library (Llama 3's 128K stage used CP 16,
    Dubey et al. 2024 §3.3.2): its JSON equals train_step on Layout(cp=N); a sequence that does not split
    into N equal chunks is refused in one line."""
    from roofline.training import train_step

    code, out, err = run_cli("train", "-m", "llama-3.1-8b", "-s", "dgx-h100", "--tp", "4", "--dp", "2", "--cp", "2",
                             "--seq", "32768", "--global-batch", "8", "--zero", "1", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["layout"]["cp"] == 2 and d["gpus"] == 16
    m, s = CAT.model("llama-3.1-8b"), CAT.system("dgx-h100")
    lay = Layout(tp=4, dp=2, cp=2, micro_batches=4, zero=1, recompute="selective", sequence_parallel=True)
    t = train_step(m, s, lay, 32768, flash_attention=True)
    assert d["cp_comm_s"] == pytest.approx(float(t.cp_comm_s), rel=1e-12) and d["cp_comm_s"] > 0
    assert d["step_s"] == pytest.approx(float(t.step_s), rel=1e-12)
    code, out, err = run_cli("train", "-m", "llama-3.1-8b", "-s", "dgx-h100", "--cp", "3", "--seq", "32768")
    assert code == 1 and "is not a multiple of 3" in err and err.count("\n") == 1


def test_speculative_decode_step_by_hand():
    """MTP / speculative decoding in a step (speculative.py's closed form on the engine): γ = 1 draft token
    accepted with α = 0.85 (DeepSeek-V3's reported MTP acceptance, 85-90%) gives E = 1 + α tokens per
    verify step; the step is the verify pass of 2 tokens per sequence plus one draft at f of a decode step."""
    from roofline.errors import InputError
    from roofline.speculative import Speculation

    m, s = CAT.model("deepseek-v3"), CAT.system("gb200-nvl72")
    lay = Layout(tp=1, ep=64, dp=64)
    kw = dict(layout=lay, weights_dtype="fp8", kv_dtype="fp8", details=False)
    plain = step(m, s, 2048, 4096, **kw)
    verify = step(m, s, 2048, 4096, phase="prefill", prompt=2, **kw)
    sp = step(m, s, 2048, 4096, speculation=Speculation(gamma=1, alpha=0.85, draft_fraction=0.05), **kw)
    t = float(verify.step_s) + 0.05 * float(plain.step_s)
    assert float(sp.step_s) == pytest.approx(t, rel=1e-12)
    assert float(sp.tokens_per_s) == pytest.approx(2048 * 1.85 / t, rel=1e-12)
    assert sp.speculation["tokens_per_step"] == pytest.approx(1.85)
    assert sp.speculation["speed_up"] == pytest.approx(1.85 * float(plain.step_s) / t, rel=1e-12)
    with pytest.raises(InputError, match="speculative decoding"):
        step(m, s, 64, 0, phase="prefill", prompt=128, speculation=Speculation(1, 0.8), **kw)


def test_production_layout_flags_through_the_cli(run_cli):
    """step --redundant-experts/--moe-tp/--cp/--spec-gamma/--overlap reach the engine: the JSON equals the
    library's step for the same Layout; misuse is one line with exit 2 (usage) or 1 (bad value)."""
    from roofline.speculative import Speculation

    code, out, err = run_cli("step", "-m", "deepseek-v3", "-s", "gb200-nvl72", "--ep", "72", "--dp", "72",
                             "--redundant-experts", "32", "-b", "4608", "-c", "4096", "--weights-dtype", "fp8",
                             "--kv-dtype", "fp8", "--spec-gamma", "1", "--spec-alpha", "0.85", "--json")
    assert code == 0, err
    d = json.loads(out)
    lib = step(CAT.model("deepseek-v3"), CAT.system("gb200-nvl72"), 4608, 4096,
               layout=Layout(tp=1, ep=72, dp=72, redundant_experts=32), weights_dtype="fp8", kv_dtype="fp8",
               speculation=Speculation(1, 0.85))
    assert d["step_s"] == pytest.approx(float(lib.step_s), rel=1e-12) and d["redundant_experts"] == 32
    assert d["speculation"]["tokens_per_step"] == pytest.approx(1.85)
    code, out, err = run_cli("step", "-m", "mixtral-8x7b", "-s", "dgx-h100", "--tp", "8", "--ep", "4", "--moe-tp", "2",
                             "-b", "64", "--realistic", "--overlap", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["moe_tp"] == 2 and d["realistic"]["overlap_comm"] is True
    added = run_cli("step", "-m", "mixtral-8x7b", "-s", "dgx-h100", "--tp", "8", "--ep", "4", "--moe-tp", "2",
                    "-b", "64", "--realistic", "--json")
    assert d["realistic"]["step_s"] <= json.loads(added[1])["realistic"]["step_s"]
    for args, want, exit_code in (
            (("--tp", "8", "--cp", "2", "--domains", "2"), "--cp 2 splits a prompt's tokens", 2),
            (("--tp", "8", "--overlap"), "--overlap overlaps communication", 2),
            (("--spec-gamma", "2", "--spec-alpha", "1.5"), "--spec-alpha must be >= 0 and <= 1", 1)):
        code, _, err = run_cli("step", "-m", "llama-3.1-70b", "-s", "dgx-h100", "-b", "8", *args)
        assert code == exit_code and want in err and len(err.strip().splitlines()) == 1, err


def test_pope_batch_sharded_multiquery_attention_by_hand():
    """PaLM 540B (48 query heads, one multi-query KV head) on 64 chips: TP 64 by heads is refused (64 does
    not divide 48); with attention sharded over the batch (Pope et al. 2022 §3.3) each chip holds the whole
    KV of B/64 sequences — 1/64 of the cache instead of a full replica of the single KV head — and every
    layer adds two all-to-alls resharding q (48·256) and the attention output (48·256) between head and
    batch sharding: 2 x 48 x 256 x 2 B per token, 1/64 of them sent per chip, 63/64 of that leaving it."""
    from roofline import network as N
    from roofline.errors import InputError
    from roofline.layout import validate

    m, s = CAT.model("palm-540b"), CAT.system("tpu-v5p-256")
    with pytest.raises(InputError, match="TP 64 does not divide palm-540b's 48 attention heads"):
        validate(m, s, Layout(tp=64))
    lay = Layout(tp=64, attention="batch")
    validate(m, s, lay, batch=512)
    with pytest.raises(InputError, match="x TP 64 \\(attention by batch\\) = 64 sequence slots"):
        validate(m, s, lay, batch=32)
    B, ctx = 512, 2000
    r = step(m, s, B, ctx, layout=lay, details=False)
    kv_seq = float(M.kv_bytes_per_sequence(m, ctx + 1))
    assert float(r.kv_per_gpu_bytes) == pytest.approx(B * kv_seq / 64, rel=1e-12)
    heads = step(m, s, B, ctx, layout=Layout(tp=64), details=False, check=False)  # the refused stand-in
    assert float(heads.kv_per_gpu_bytes) == pytest.approx(B * kv_seq, rel=1e-12)  # one KV head on every chip
    act = m.d_model * 2.0
    ar = N.best_all_reduce_s(B * act, 64, s.scale_up_bytes_per_s, s.scale_up_latency_s)
    a2a = N.all_to_all_s(B * 48 * (256 + 256) * 2.0 / 64, 64, s.scale_up_bytes_per_s, s.scale_up_latency_s)
    assert float(r.tp_comm_s) == pytest.approx(m.layers * (2 * ar + a2a), rel=1e-12)


def test_weight_stationary_2d_by_hand(run_cli):
    """Pope et al. 2022 §3.2.2: on an X x n/X grid a block costs AG_{n/X}(T·E·b/X) + RS_X(T·F_in·b·X/n)
    + AG_X(T·F·b·X/n) + RS_{n/X}(T·E·b/X). Unit block E = 1, F_in = F = 4, n = 64, unit bandwidth, no
    latency: X = 4 gives 15/16·1/4 + 3/4·1/4 + 3/4·1/4 + 15/16·1/4 = 0.84375, below X = 2 (0.96875), X = 8
    (0.96875) and the 1D ring all-reduce 2·63/64 = 1.96875; Pope et al.'s 8·E/√n = 1 is the same without
    the (k−1)/k ring factors. PaLM 540B on 64 chips, attention by batch: each layer's attention block
    (E = 18,432; F_in = 48·256 + 1·(256 + 256) for q, k, v; F = 48·256) and MLP block (F_in = 2·73,728 for
    SwiGLU, F = 73,728) take the 2D cost in place of the two all-reduces."""
    from roofline import network as N
    from roofline.errors import InputError

    t = {n: float(N.weight_stationary_2d_s(1.0, 4.0, 4.0, n, 1.0, 0.0)) for n in (1, 16, 64, 256)}
    assert t[64] == pytest.approx(15 / 16 / 4 * 2 + 3 / 4 / 4 * 2, rel=1e-12) == pytest.approx(0.84375)
    assert t[1] == 0.0
    for n in (16, 64, 256):  # never worse than the 1D ring, and within the ring factors of 8E/sqrt(n)
        assert t[n] <= float(N.ring_all_reduce_s(1.0, n, 1.0, 0.0))
        assert 8 / n ** 0.5 * (1 - 4 / n ** 0.5) <= t[n] <= 8 / n ** 0.5
    # vectorised over the group size, X restricted to divisors: n = 12 -> X in {1, 2, 4}
    both = N.weight_stationary_2d_s(1.0, 4.0, 4.0, np.array([12.0, 64.0]), 1.0, 0.0)
    assert float(both[1]) == pytest.approx(t[64])
    x2 = 5 / 6 * 0.5 + 1 / 2 * 4 / 6 + 1 / 2 * 4 / 6 + 5 / 6 * 0.5
    x4 = 2 / 3 * 0.25 + 3 / 4 * 4 / 3 + 3 / 4 * 4 / 3 + 2 / 3 * 0.25
    assert float(both[0]) == pytest.approx(min(x2, x4, 2 * 11 / 12), rel=1e-12)

    m, s = CAT.model("palm-540b"), CAT.system("tpu-v5p-256")
    B, ctx = 512, 2000
    one_d = step(m, s, B, ctx, layout=Layout(tp=64, attention="batch"), details=False)
    two_d = step(m, s, B, ctx, layout=Layout(tp=64, attention="batch", weight_stationary="2d"), details=False)
    bw, lat, b = s.scale_up_bytes_per_s, s.scale_up_latency_s, 2.0
    E = m.d_model
    attn = N.weight_stationary_2d_s(B * E * b, B * (48 * 256 + 512) * b, B * 48 * 256 * b, 64, bw, lat)
    mlp = N.weight_stationary_2d_s(B * E * b, B * 2 * m.d_ff * b, B * m.d_ff * b, 64, bw, lat)
    a2a = N.all_to_all_s(B * 48 * (256 + 256) * b / 64, 64, bw, lat)
    assert float(two_d.tp_comm_s) == pytest.approx(m.layers * (attn + mlp + a2a), rel=1e-12)
    assert float(two_d.tp_comm_s) < 0.6 * float(one_d.tp_comm_s)
    for k in ("compute_s", "weight_read_s", "kv_read_s", "memory_per_gpu_bytes"):  # only communication moves
        assert float(getattr(two_d, k)) == float(getattr(one_d, k))
    with pytest.raises(InputError, match="weight-stationary layout must be one of 1d, 2d, gathered"):
        Layout(tp=8, weight_stationary="3d")
    code, out, err = run_cli("step", "-m", "palm-540b", "-s", "tpu-v5p-256", "--tp", "64", "--attention", "batch",
                             "--weight-stationary", "2d", "-b", "512", "-c", "2000", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["weight_stationary"] == "2d" and d["tp_comm_s"] == pytest.approx(float(two_d.tp_comm_s), rel=1e-9)


def test_weight_gathered_by_hand(run_cli):
    """Pope et al. 2022 §3.2.3, the XYZ-weight-gathered layout on n = 64 chips: each chip stores 1/64 of the
    weights, all-gathers each layer's matmul weights (ring: 63/64 of W_layer·b received, 63 steps of α) and runs
    its own B/64 sequences on whole matrices. Its collective moves weights, not activations: constant in the
    tokens, so it loses to the 2D weight-stationary layout on a small prefill and wins on a large one (Pope et
    al.'s choice for large-batch prefill). Each chip writes the gathered 63/64 of a layer and reads the whole
    of it: weight traffic (2 − 1/64)·W_read(rows)."""
    from roofline import model as M
    from roofline import network as N
    from roofline.errors import InputError
    from roofline.layout import validate

    m, s = CAT.model("palm-540b"), CAT.system("tpu-v5p-256")
    bw, lat, b = s.scale_up_bytes_per_s, s.scale_up_latency_s, 2.0
    w_layer = (M.matmul_params_per_token(m)) / m.layers * b
    lay = {k: Layout(tp=64, attention="batch", weight_stationary=k) for k in ("2d", "gathered")}

    def prefill(k, B, L):
        return step(m, s, B, 0, phase="prefill", prompt=L, layout=lay[k], details=False)

    small, large = prefill("gathered", 64, 256), prefill("gathered", 512, 2047)
    by_hand = m.layers * (63 / 64 * w_layer / bw + 63 * lat)
    assert float(small.tp_comm_s) == pytest.approx(by_hand, rel=1e-12) == pytest.approx(float(large.tp_comm_s))
    assert float(N.all_gather_s(w_layer, 64, bw, lat)) * m.layers == pytest.approx(by_hand, rel=1e-12)
    assert float(prefill("2d", 64, 256).tp_comm_s) < float(small.tp_comm_s)  # 16K tokens: 2D moves less
    assert float(prefill("2d", 512, 2047).tp_comm_s) > 3 * float(large.tp_comm_s)  # 1M tokens: gathering wins
    rows = 64 * 256 / 64
    assert float(small.weight_read_s) == pytest.approx(
        float(M.weight_read_params(m, rows)) * (2 - 1 / 64) * b / s.accelerator.hbm_bytes_per_s, rel=1e-12)
    with pytest.raises(InputError, match="shard attention by batch"):
        validate(m, s, Layout(tp=64, weight_stationary="gathered"))
    with pytest.raises(InputError, match="experts are placed by EP"):
        validate(CAT.model("deepseek-v3"), CAT.system("gb200-nvl72"), Layout(tp=8, attention="batch",
                                                                             weight_stationary="gathered"))
    code, out, err = run_cli("step", "-m", "palm-540b", "-s", "tpu-v5p-256", "--tp", "64", "--attention", "batch",
                             "--weight-stationary", "gathered", "--phase", "prefill", "-b", "64", "--prompt", "256",
                             "--json")
    assert code == 0, err
    assert json.loads(out)["tp_comm_s"] == pytest.approx(by_hand, rel=1e-9)


def test_sampling_imbalance_by_hand_and_against_a_simulated_router(run_cli):
    """model.sampling_imbalance: T tokens each pick k of E experts uniformly (without repeats), E/n experts per
    GPU. By hand for T = 100, k = 2, E = 8, n = 4: μ = 50, σ² = 100·2·(1/4)(3/4)(6/7) = 32.14, z_4 =
    Φ⁻¹(3.625/4.25) = 1.0491, λ = 1 + 1.0491·5.669/50 = 1.119. Against a simulated router (61-2,000 draws): within
    10% wherever a GPU averages at least one pick; at one token over 72 GPUs the floor 1/μ = 9 (the simulation
    gives ~10.9: two of the 8 picks sometimes share a GPU). In the engine λ scales the busiest GPU's expert
    FLOPs and dispatch bytes, so an EP decode at 8 sequences per GPU pays more than one at 64."""
    from statistics import NormalDist

    z4 = NormalDist().inv_cdf(3.625 / 4.25)
    hand = 1 + z4 * (100 * 2 * 0.25 * 0.75 * 6 / 7) ** 0.5 / 50
    assert float(M.sampling_imbalance(100, 2, 8, 4)) == pytest.approx(hand, rel=1e-12) == pytest.approx(1.119, abs=1e-3)
    assert float(M.sampling_imbalance(100, 2, 8, 1)) == 1.0
    assert float(M.sampling_imbalance(1, 8, 256, 72, 288)) == pytest.approx(9.0)
    lam = M.sampling_imbalance(np.array([8, 64, 512, 4096]), 8, 256, 8)
    assert np.all(np.diff(lam) < 0) and np.all(lam >= 1)  # falls as 1/sqrt(T)

    rng = np.random.default_rng(0)
    for T, k, E, n in ((100, 2, 8, 4), (64, 8, 256, 8), (512, 8, 256, 32), (72, 8, 256, 72)):
        draws = int(min(2000, 4e6 // (T * E)))  # 61-2,000 draws, a few MB each
        picks = np.argsort(rng.random((draws, T, E)), axis=2)[:, :, :k] // (E // n)  # GPU of each pick
        loads = np.stack([(picks == g).sum(axis=(1, 2)) for g in range(n)], axis=1)
        simulated = loads.max(axis=1).mean() / (T * k / n)
        assert float(M.sampling_imbalance(T, k, E, n)) == pytest.approx(simulated, rel=0.10), (T, k, E, n)

    m, s = CAT.model("deepseek-v3"), CAT.system("gb200-nvl72")
    lay = Layout(ep=72, dp=72, redundant_experts=32)
    for B in (72 * 8, 72 * 64):
        flat = step(m, s, B, 4096, layout=lay, details=False)
        samp = step(m, s, B, 4096, layout=lay, details=False, moe_imbalance="sampling")
        lam_b = float(M.sampling_imbalance(B, 8, 256, 72, 288))  # Te = B tokens through the one EP group
        fixed = step(m, s, B, 4096, layout=lay, details=False, moe_imbalance=lam_b)
        assert float(samp.ep_comm_s) == pytest.approx(float(fixed.ep_comm_s), rel=1e-12)
        assert float(samp.gemm_compute_s) == pytest.approx(float(fixed.gemm_compute_s), rel=1e-12)
        assert float(samp.ep_comm_s) > float(flat.ep_comm_s)
    code, out, err = run_cli("step", "-m", "deepseek-v3", "-s", "gb200-nvl72", "--moe-imbalance", "lots")
    assert code == 2 and "must be a number >= 1, 'sampling', 'powerlaw:A' or 'loads:FILE'" in err  # not a number: a usage error


def test_sparse_attention_by_hand(run_cli):
    """Sparse attention caps the tokens a query attends (lecture §1.2: "a square root in this term"; top-k as
    DeepSeek-V3.2's DSA): KV reads and attention FLOPs follow attended(ctx), the cache keeps every token.
    The lecture's frontier MoE at 100K context with top-2,048: KV read = B·2,048·kv/BW; with sqrt:8,
    8·√100,000 = 2,529.8 tokens. prices infer: Gemini's 200K tier ⇒ kv = 1e11/(300·2,048) = 162,760 B."""
    from roofline.engine import SparseAttention, attended

    assert attended(100_000, SparseAttention("sqrt", 8)) == pytest.approx(8 * 100_000 ** 0.5)
    assert attended(1000, SparseAttention("topk", 2048)) == 1000  # short contexts attend everything
    m, s = CAT.model("lecture-frontier-moe"), CAT.system("gb200-nvl72")
    kw = dict(weights_dtype="fp8", kv_dtype="fp8", details=False)
    dense = step(m, s, 2048, 100_000, **kw)
    topk = step(m, s, 2048, 100_000, sparse_attention=SparseAttention("topk", 2048), **kw)
    kv_tok = M.kv_bytes_per_token(m, "fp8")
    assert float(topk.kv_read_s) == pytest.approx(2048 * 2048 * kv_tok / s.hbm_bytes_per_s, rel=1e-12)
    assert float(topk.kv_per_gpu_bytes) == float(dense.kv_per_gpu_bytes)
    assert float(topk.attention_compute_s) == pytest.approx(float(dense.attention_compute_s) * 2048 / 100_001, rel=1e-9)
    code, out, err = run_cli("step", "-m", "lecture-frontier-moe", "-s", "gb200-nvl72", "-b", "2048", "-c", "100000",
                             "--weights-dtype", "fp8", "--kv-dtype", "fp8", "--sparse-attention", "topk:2048", "--json")
    assert code == 0, err
    assert json.loads(out)["step_s"] == pytest.approx(float(topk.step_s), rel=1e-12)
    code, out, err = run_cli("sweep", "-m", "lecture-frontier-moe", "-s", "gb200-nvl72", "--batch", "2048",
                             "--context", "100000", "--weights-dtype", "fp8", "--kv-dtype", "fp8",
                             "--sparse-attention", "topk:2048", "--json")
    assert code == 0, err
    assert json.loads(out)[0]["kv_read_s"] == pytest.approx(float(topk.kv_read_s), rel=1e-12)
    code, out, err = run_cli("prices", "infer", "gemini-3-pro", "--sparse-attention", "topk:2048", "--json")
    assert code == 0, err
    assert json.loads(out)["inferences"]["gemini-3-pro"][0]["value"] == pytest.approx(1e11 / (300 * 2048), rel=1e-9)
    code, _, err = run_cli("step", "-m", "llama-3-8b", "-s", "dgx-h100", "--sparse-attention", "sqrt:x")
    assert code == 1 and "--sparse-attention must be sqrt:C or topk:K" in err


def test_expert_gemms_run_at_the_efficiency_of_their_own_rows_by_hand():
    """The GEMM curve η(T) = η_max·T/(T + T½) applies per GEMM: the dense matmuls see the pass's T tokens, each
    expert only the tokens routed to it, T·k over the experts hit (Mixtral 8x7B, top-2 of 8, batch 16 decode on
    one H100: 16·2/(8·(1 − (6/8)^16)) = 4.04 rows)."""
    CAT = get_catalog()
    m, s = CAT.model("mixtral-8x7b"), CAT.system("dgx-h100")
    eff = realistic(s.accelerator)
    r = step(m, s, 16, 1024, gpus=1, efficiency=eff, check=False, check_context=False)
    T, k, E, Ne = 16.0, 2, 8, M.expert_params(m)
    dense = M.matmul_params_per_token(m) - m.moe_layers * k * Ne
    rows_e = T * k / (E * (1 - (1 - k / E) ** T))
    assert rows_e == pytest.approx(4.04, abs=0.01)
    peak = s.accelerator.peak_flops("bf16")

    def eta(t):
        return eff.compute * t / (t + eff.gemm_half_rows)

    want = 2 * T * dense / (peak * eta(T)) + 2 * T * m.moe_layers * k * Ne / (peak * eta(rows_e))
    assert float(r.gemm_compute_s) == pytest.approx(want, rel=1e-9)


def test_expert_weights_in_their_own_format_by_hand():
    """--expert-weights-dtype: the routed experts' bytes at their format, every other weight at --weights-dtype
    (DeepSeek-V3, TP 8 × EP 2 × MoE TP 4, batch 1). Memory: dense·2 B + routed·0.5 B per GPU (memory.params_per_gpu);
    the pure pass's weight-read time is linear in the two parts: from the fp4 and the mixed (bf16 + fp4 experts)
    runs, D (dense at bf16) = (t_mixed − t_fp4)/(1 − 1/4) and X (experts at bf16) = t_bf16 − D, and then an fp8-expert
    run reads D + X/2. The same format twice is the plain run; a dense model refuses the option (bad inputs)."""
    from roofline.layout import Layout
    from roofline.memory import params_per_gpu

    CAT = get_catalog()
    m, s = CAT.model("deepseek-v3"), CAT.system("hgx-b200")
    lay = Layout(tp=8, ep=2, expert_tp=4)

    def run(w, e=None):
        return step(m, s, 1, 2048, layout=lay, weights_dtype=w, expert_weights_dtype=e, check=False, details=False)

    bf, f4, mixed, m8 = run("bf16"), run("fp4"), run("bf16", "fp4"), run("bf16", "fp8")
    D = (float(mixed.weight_read_s) - float(f4.weight_read_s)) / 0.75
    X = float(bf.weight_read_s) - D
    assert D > 0 and X > 0
    assert float(m8.weight_read_s) == pytest.approx(D + X / 2, rel=1e-12)
    dense, routed = params_per_gpu(m, lay)
    assert float(mixed.weights_per_gpu_bytes) == pytest.approx(float(dense) * 2 + float(routed) * 0.5, rel=1e-12)
    assert float(run("fp4", "fp4").step_s) == float(f4.step_s)
    # realistic: the experts stream at the low-precision factor, the rest at the 16-bit one
    r = step(m, s, 1, 2048, layout=lay, weights_dtype="bf16", expert_weights_dtype="fp4", realistic=True, check=False)
    assert float(r.step_s) > float(mixed.step_s)


def test_expert_weights_format_in_sweep_and_simulate_is_steps():
    """--expert-weights-dtype in `sweep` (pure and --realistic) and `simulate` is the same engine pass as `step`'s:
    a sweep point equals step's step time; the simulator's decode pass (its step model) equals step_time's, and its
    KV pool is memory.kv_capacity_tokens with the experts at their format (more room than all-fp8 weights)."""
    from roofline.layout import Layout
    from roofline.memory import kv_capacity_tokens
    from roofline.requests.simulate import SimulateRequest, pool
    from roofline.requests.sweep import SweepRequest, evaluate_chunk

    CAT = get_catalog()
    m, s = CAT.model("deepseek-v3"), CAT.system("hgx-b200")
    lay = Layout(ep=8, dp=8)
    req = SweepRequest.of(model="deepseek-v3", system="hgx-b200", ep=8, dp=8, weights_dtype="fp8",
                          expert_weights_dtype="fp4", batch="64,512", context="2048", realistic=True)
    cols = evaluate_chunk(req, 0, 2)
    for i, b in enumerate((64, 512)):
        pure = step(m, s, b, 2048, layout=lay, weights_dtype="fp8", expert_weights_dtype="fp4", check=False)
        real = step(m, s, b, 2048, layout=lay, weights_dtype="fp8", expert_weights_dtype="fp4", realistic=True,
                    check=False)
        assert cols["step_s"][i] == pytest.approx(float(pure.step_s), rel=1e-12)
        assert cols["realistic_step_s"][i] == pytest.approx(float(real.step_s), rel=1e-12)
    from roofline.requests.simulate import run_simulate

    sim = SimulateRequest.of(model="deepseek-v3", system="hgx-b200", ep=8, dp=8, weights_dtype="fp8",
                             expert_weights_dtype="fp4", realistic=True, requests=10)
    dep = pool(sim, sim._layout, 8, dict(efficiency=None, weights_dtype="fp8", kv_dtype="bf16", realistic=True,
                                         expert_weights_dtype="fp4"))
    assert run_simulate(sim)["kv_capacity_tokens"] == pytest.approx(dep.kv_capacity_tokens, rel=1e-12)
    want = step(m, s, 512, 2048, layout=lay, weights_dtype="fp8", expert_weights_dtype="fp4", realistic=True,
                check=False)
    assert float(dep.step(512.0, 512.0, 2048.0)) == pytest.approx(float(want.step_s), rel=1e-9)
    assert dep.kv_capacity_tokens == pytest.approx(float(kv_capacity_tokens(
        m, s, lay, weights_dtype="fp8", expert_weights_dtype="fp4")), rel=1e-12)
    assert dep.kv_capacity_tokens > float(kv_capacity_tokens(m, s, lay, weights_dtype="fp8"))


def test_sweep_with_speculation_is_steps_speculative_step():
    """`sweep --spec-gamma γ --spec-alpha α` evaluates every point as engine.step's speculative step (a verify pass of
    γ + 1 tokens plus γ drafts, E tokens per sequence): step time, tokens/s per sequence and the realistic column."""
    from roofline.layout import Layout
    from roofline.requests.sweep import SweepRequest, evaluate_chunk
    from roofline.speculative import Speculation

    CAT = get_catalog()
    m, s = CAT.model("deepseek-v3"), CAT.system("gb200-nvl72")
    lay = Layout(ep=72, dp=72, redundant_experts=32)
    req = SweepRequest.of(model="deepseek-v3", system="gb200-nvl72", ep=72, dp=72, redundant_experts=32,
                          weights_dtype="fp8", batch="72,720", context="4096", spec_gamma=1, spec_alpha=0.8,
                          realistic=True)
    cols = evaluate_chunk(req, 0, 2)
    sp = Speculation(1, 0.8, 0.05)
    for i, b in enumerate((72, 720)):
        pure = step(m, s, b, 4096, layout=lay, weights_dtype="fp8", speculation=sp, check=False)
        real = step(m, s, b, 4096, layout=lay, weights_dtype="fp8", speculation=sp, realistic=True, check=False)
        assert cols["step_s"][i] == pytest.approx(float(pure.step_s), rel=1e-12)
        assert cols["tokens_per_s_per_sequence"][i] == pytest.approx(float(pure.tokens_per_s_per_sequence), rel=1e-12)
        assert cols["realistic_step_s"][i] == pytest.approx(float(real.step_s), rel=1e-12)
