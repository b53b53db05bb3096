"""Mixed passes (decode tokens + prefill chunks in one pass) from the engine's own terms, each part's
attention at its own context (simulate/steptable.MixedPass; docs/simulator.md "Mixed passes")."""

from __future__ import annotations

import numpy as np
import pytest

from roofline import model as M
from roofline.catalog import get_catalog
from roofline.engine import combine, step_time
from roofline.layout import Layout
from roofline.simulate import ConstantStep, Deployment, Simulation, make_workload
from roofline.simulate.steptable import EngineStep, MixedPass, mixed_pass


@pytest.fixture(scope="module")
def llama():
    cat = get_catalog()
    return cat.model("llama-3-70b"), cat.system("dgx-h100")


@pytest.mark.parametrize("realistic", [False, True])
def test_decode_only_and_prefill_only_passes_are_the_engines(llama, realistic):
    m, s = llama
    es = EngineStep(m, s, Layout(tp=8), realistic=realistic)
    mp = MixedPass(es, 16384, 40000)
    for b, c in ((1, 0.0), (7, 100.0), (48, 5000.0)):  # token counts on the grid (integers to 64)
        assert mp(b, 1, b * c, []) == pytest.approx(float(es(b, b, c)), rel=1e-9)
    for p in (64, 1000, 8000):  # one prompt from scratch: the engine's prefill pass of p tokens
        assert mp(0, 1, 0.0, [(p, 0)]) == pytest.approx(float(es(1, p, 0.0)), rel=2e-3)


def test_mixed_pass_sums_attention_over_parts_by_hand(llama):
    """100 decodes at 8,000 cached tokens + a 2,000-token chunk on 3,000 cached tokens, pure roofline on 8
    H100 with TP 8: the attention compute is the sum over the new tokens of each one's causal position
    (100·8,001 + 2,000·(3,000 + 1,000.5) token-positions), not 2,100 tokens at the pass's mean context."""
    m, s = llama
    es = EngineStep(m, s, Layout(tp=8))
    mp = MixedPass(es, 16384, 40000)
    d, cd, tok, x = 100, 8000.0, 2000, 3000.0
    n, ac, am, scale, n_eq, ac_eq, am_eq = mp.attention(d, 1, d * cd, [(tok, x)])
    assert (n_eq, ac_eq, am_eq) == (n, ac, am)  # no data parallelism: no busiest rank
    one, eff = step_time(m, s, 1.0, 1.0, 0.0, layout=Layout(tp=8), stage_terms=True)  # one token, nothing cached
    per_pos = float(M.attention_flops_per_token(m, 1.0))  # attention FLOPs are linear in the position
    per_token_s = float(one.attn_c) / per_pos  # seconds per FLOP-position unit of one token at position 1
    positions = d * (cd + 1) + tok * (x + (tok + 1) / 2)
    assert n == d + tok and scale == 1.0
    flops = d * M.attention_flops_per_token(m, cd + 1) + tok * M.attention_flops_per_token(m, x + (tok + 1) / 2)
    assert ac == pytest.approx(per_token_s * float(flops), rel=1e-6)
    assert ac == pytest.approx(float(one.attn_c) * positions, rel=1e-6)  # linear: seconds per position × positions
    kv = M.kv_bytes_per_sequence
    g, _ = step_time(m, s, 1.0, 1.0, np.array([cd, x]), layout=Layout(tp=8), stage_terms=True)
    assert am == pytest.approx(d * g.attn_m[0] + g.attn_m[1], rel=1e-6)
    assert am == pytest.approx(float(g.attn_m[0]) * (d * kv(m, cd, "bf16") + kv(m, x, "bf16")) / kv(m, cd, "bf16"),
                               rel=1e-6)
    # the whole pass: the engine's non-attention terms of 2,100 tokens with these attention sums
    G, _ = step_time(m, s, float(n), float(n), 0.0, layout=Layout(tp=8), stage_terms=True)
    want = combine(G.gemm_c, G.gemm_m, ac, am, G.ew, G.comm, G.pp_s, G.overhead, G.pp, eff, False)
    assert mp(d, 1, d * cd, [(tok, x)]) == pytest.approx(float(want), rel=1e-3)
    # the mean pass (the table's approximation) counts the chunk at the pass's mean context and position
    mean_ctx = (d * cd + x) / (d + 1)
    mean_pass = float(es(d + 1, n, mean_ctx))
    assert positions < n * (mean_ctx + (n / (d + 1) + 1) / 2)
    assert mp(d, 1, d * cd, [(tok, x)]) < mean_pass


def test_fewer_sequences_than_dp_groups_cost_one_per_group(llama):
    m, s = llama
    es = EngineStep(m, s, Layout(tp=2, dp=4))
    mp = MixedPass(es, 4096, 10000)
    assert mp(0, 1, 0.0, [(500, 0)]) == pytest.approx(float(es(1, 500, 0.0)), rel=2e-3)  # EngineStep scales too
    assert mp(0, 1, 0.0, [(500, 0)]) == pytest.approx(float(step_time(m, s, 4.0, 2000.0, 0.0,
                                                                      layout=Layout(tp=2, dp=4))), rel=2e-3)


@pytest.mark.parametrize("case", ["tp8", "tp2-pp2", "batch-attention", "realistic"])
def test_one_rank_fast_path_is_call_bit_for_bit(llama, case):
    """MixedPass.fast (what the simulator calls) is `_one_rank()` on one attention rank without kernel tables, and
    gives exactly __call__'s value: random decodes (r = 1 and speculative r = 3), chunks on and off the grid's
    integer cells, contexts past the grid's end, fewer sequences than sequence slots."""
    m, s = llama
    lay = {"tp8": Layout(tp=8), "tp2-pp2": Layout(tp=2, pp=2), "batch-attention": Layout(tp=8, attention="batch"),
           "realistic": Layout(tp=4)}[case]
    mp = MixedPass(EngineStep(m, s, lay, realistic=case == "realistic"), 8192, 20000)
    assert mp.fast.__name__ == "one_rank"
    rng = np.random.default_rng(7)
    for _ in range(300):
        d = int(rng.integers(0, 40))
        r = float(rng.choice([1, 1, 3]))
        dsum = float(d * rng.uniform(0, 30000))
        chunks = [(float(rng.integers(1, 3000)), float(rng.choice([0.0, 256.0, rng.uniform(0, 25000)])))
                  for _ in range(int(rng.integers(0 if d else 1, 4)))]
        assert mp.fast(d, r, dsum, chunks) == mp(d, r, dsum, chunks)
    dp = MixedPass(EngineStep(m, s, Layout(tp=2, dp=4)), 4096, 10000)
    assert dp.fast == dp.__call__  # attention DP (LPT placement) keeps __call__


def test_attention_dp_chunk_runs_whole_on_the_busiest_rank_by_hand(llama):
    """DP 4 (TP 2): 400 decodes at 2,000 cached tokens and five 1,000-token prompts. The decodes spread 100 a
    rank; the prompts go longest first to the least-loaded rank (LPT), so one rank holds two (2,000 tokens) and
    sets the pass: every term as if each rank carried 100 decodes + 2,000 prompt tokens (n_eq = 400 + 4·2,000)."""
    m, s = llama
    lay = Layout(tp=2, dp=4)
    mp = MixedPass(EngineStep(m, s, lay), 16384, 10000)
    chunks = [(1000.0, 0.0)] * 5
    n, ac, am, scale, n_eq, ac_eq, am_eq = mp.attention(400, 1, 400 * 2000.0, chunks)
    assert n == 5400 and n_eq == 400 + 4 * 2000 and scale == 1.0
    _, ac_d, am_d, _, _, _, _ = mp.attention(400, 1, 400 * 2000.0, [])
    _, ac_c, am_c, _, _, _, _ = mp.attention(0, 1, 0.0, chunks[:1])  # one prompt: per-rank mean (1/4 of it)
    assert ac_eq == pytest.approx(ac_d + 4 * 2 * ac_c, rel=1e-9) and am_eq == pytest.approx(am_d + 4 * 2 * am_c, rel=1e-9)
    G, eff = step_time(m, s, n_eq, n_eq, 0.0, layout=lay, stage_terms=True)  # a dense model: no expert terms
    want = combine(G.gemm_c, G.gemm_m, ac_eq, am_eq, G.ew, G.comm, G.pp_s, G.overhead, G.pp, eff, False)
    assert mp(400, 1, 400 * 2000.0, chunks) == pytest.approx(float(want), rel=1e-3)
    # dearer than the same tokens spread evenly; a decode-only pass is still the engine's step
    even = combine(*(np.interp(n, mp.N, [g[i] for g in mp._g]) for i in (0, 1)), ac, am,
                   *(np.interp(n, mp.N, [g[i] for g in mp._g]) for i in (4, 5, 6)), G.overhead, G.pp, eff, False)
    assert mp(400, 1, 400 * 2000.0, chunks) > float(even) * 1.2
    assert mp(400, 1, 400 * 2000.0, []) == pytest.approx(float(EngineStep(m, s, lay)(400, 400, 2000.0)), rel=1e-9)


def test_attention_dp_routed_experts_serve_every_ranks_tokens(llama):
    """MoE under DP 8 / EP 8: the busiest rank's prompt sets the attention-side terms (n_eq tokens), while the
    routed experts' GEMMs and weight reads see the pass's real n tokens (StageTerms.moe_c / moe_m)."""
    cat = get_catalog()
    m, s = cat.model("deepseek-v3"), cat.system("hgx-b200")
    lay = Layout(ep=8, dp=8)
    mp = MixedPass(EngineStep(m, s, lay), 16384, 10000)
    n, ac, am, _, n_eq, ac_eq, am_eq = mp.attention(800, 1, 800 * 2000.0, [(1024.0, 0.0)])
    assert (n, n_eq) == (1824, 800 + 8 * 1024)
    Gq, eff = step_time(m, s, n_eq, n_eq, 0.0, layout=lay, stage_terms=True)
    Gn, _ = step_time(m, s, n, n, 0.0, layout=lay, stage_terms=True)
    assert float(Gn.moe_c) > 0 and float(Gn.moe_m) > 0
    gc = Gq.gemm_c - Gq.moe_c + Gn.moe_c
    gm = Gq.gemm_m - Gq.moe_m + Gn.moe_m
    want = combine(gc, gm, ac_eq, am_eq, Gq.ew, Gq.comm, Gq.pp_s, Gq.overhead, Gq.pp, eff, False)
    assert mp(800, 1, 800 * 2000.0, [(1024.0, 0.0)]) == pytest.approx(float(want), rel=2e-3)


def test_only_engine_step_models_get_mixed_passes(llama):
    m, s = llama
    assert mixed_pass(ConstantStep(0.01), 100, 100) is None
    assert mixed_pass(EngineStep(m, s, Layout(tp=8, cp=2)), 100, 100) is None  # K/V gather depends on context
    wl = make_workload(np.zeros(3), 100, 5)
    assert Simulation(wl, Deployment(ConstantStep(0.01))).mixed is None


def test_wrapped_step_models_add_their_overhead(llama):
    m, s = llama
    es = EngineStep(m, s, Layout(tp=8))

    class Wrapper:  # the protocol of a step model that adds a per-pass cost (simulate/overheads.py)
        inner = es

        @staticmethod
        def overhead_s(batch):
            return 1e-3 + 1e-5 * batch

    plain, wrapped = mixed_pass(es, 4096, 10000), mixed_pass(Wrapper(), 4096, 10000)
    assert wrapped(3, 1, 300.0, [(100, 0)]) == pytest.approx(plain(3, 1, 300.0, [(100, 0)]) + 1e-3 + 4e-5, rel=1e-12)


def test_simulate_overlap_uses_the_familys_factors_with_communication_overlapped(run_cli):
    """`simulate --realistic --overlap` = the family's factors with overlap_comm (as `step --overlap`): no change
    on one GPU (no collectives), faster passes on a TP 8 group; engine overheads still replace the family's
    per-pass estimate rather than adding to it."""
    import json

    from roofline.simulate.overheads import EngineOverheads

    def run(*extra):
        code, out, err = run_cli("simulate", "-m", "llama-3-8b", "--realistic", "--lengths", "fixed", "--prompt-tokens",
                                 "512", "--output-tokens", "65", "-n", "1", "--json", *extra)
        assert code == 0, err
        return json.loads(out)

    one = ("-a", "h100-sxm", "-g", "1")
    assert run(*one)["tpot_p50_s"] == run(*one, "--overlap")["tpot_p50_s"]
    eight = ("-s", "dgx-h100")
    assert run(*eight, "--overlap")["tpot_p50_s"] < run(*eight)["tpot_p50_s"]
    v = EngineOverheads.load("vllm")
    # --kernels factor: with --engine, auto would take the measured tables, which the bare run does not
    added = (run(*eight, "--overlap", "--engine", "vllm", "--kernels", "factor")["tpot_p50_s"]
             - run(*eight, "--overlap")["tpot_p50_s"])
    family = realistic_pass_overhead()
    assert added == pytest.approx(v.per_pass_s + v.per_sequence_s - family, rel=1e-6)
    code, _, err = run_cli("simulate", "-m", "llama-3-8b", "-s", "dgx-h100", "--overlap")
    assert code == 2 and "add --realistic" in err


def realistic_pass_overhead():
    from roofline.efficiency import realistic

    return realistic(get_catalog().accelerator("h100-sxm"), "bf16", "mid").pass_overhead_s


def test_attention_by_batch_pads_a_pass_to_a_sequence_per_tp_rank():
    """PaLM 540B on 64 v5p chips with attention sharded by batch: each TP rank holds whole sequences, so a pass
    of 8 sequences costs what 64 do (layout.sequence_slots = dp·pp·tp), in the table and in the mixed pass."""
    cat = get_catalog()
    m, s = cat.model("palm-540b"), cat.system("tpu-v5p-256")
    lay = Layout(tp=64, attention="batch")
    es = EngineStep(m, s, lay)
    assert float(es(8, 8, 1000.0)) == pytest.approx(float(step_time(m, s, 64.0, 64.0, 1000.0, layout=lay)), rel=1e-12)
    mp = MixedPass(es, 4096, 2048)
    assert mp(0, 1, 0.0, [(500, 0)]) == pytest.approx(float(step_time(m, s, 64.0, 64 * 500.0, 0.0, layout=lay)),
                                                      rel=2e-3)


@pytest.fixture(scope="module")
def tables_pass(llama):
    """Llama 3 70B on 4 H100 (TP 4), realistic, kernels from TensorRT-LLM's measured tables."""
    m, s = llama
    es = EngineStep(m, s, Layout(tp=4), realistic=True, kernels="tables", kernel_engine="trtllm")
    return es, MixedPass(es, 16384, 40000)


def test_measured_kernel_mixed_pass_of_one_prompt_is_the_tables_prefill_pass(tables_pass):
    """A prompt of 64 tokens (a grid point) on an empty cache: the measured-kernel prefill pass the step
    engine composes (kernel_pass.apply: GEMMs + attention + elementwise, then the all-reduces, then the
    fixed overheads), not the factor model's."""
    es, mp = tables_pass
    assert mp.kernel_tables
    step, parts, res = es.table_parts(np.array([1.0]), np.array([0.0]), "prefill", np.array([64.0]))
    by_hand = (parts["gemm"] + parts["attention"] + res.elementwise_s + parts["tp_comm"] + parts["ep_comm"]
               + parts["overhead"] + res.pp_comm_s)
    assert mp(0, 1, 0.0, [(64, 0.0)]) == pytest.approx(float(step[0]), rel=1e-9)
    assert float(step[0]) == pytest.approx(float(by_hand[0]), rel=1e-12)
    factor = MixedPass(EngineStep(es.model, es.system, Layout(tp=4), realistic=True), 16384, 40000)
    assert not factor.kernel_tables and factor(0, 1, 0.0, [(64, 0.0)]) != pytest.approx(float(step[0]), rel=1e-3)


def test_measured_kernel_chunk_on_a_prefix_computes_its_rows_of_the_whole_prompt(tables_pass):
    """A 1,000-token chunk on 7,000 cached tokens: its attention is K_ctx(8,000) − K_ctx(7,000), the rows of the
    8,000-token prompt's causal attention it computes; a 32-token chunk on 32 cached tokens is never cheaper than
    the chunk alone (K_ctx(64) − K_ctx(32) < K_ctx(32): short prompts' kernels are mostly fixed cost)."""
    es, mp = tables_pass
    ctx = {L: float(es.table_parts(np.array([1.0]), np.array([0.0]), "prefill", np.array([float(L)]))[1]["attention"][0])
           for L in (32, 64, 1000, 7000, 8000)}
    alone, on_prefix = mp(0, 1, 0.0, [(1000, 0.0)]), mp(0, 1, 0.0, [(1000, 7000.0)])
    assert on_prefix - alone == pytest.approx(ctx[8000] - ctx[7000] - ctx[1000], rel=2e-2)  # off-grid lengths
    assert ctx[8000] - ctx[7000] > 2 * ctx[1000]
    assert ctx[64] - ctx[32] < ctx[32]
    assert mp(0, 1, 0.0, [(32, 32.0)]) == pytest.approx(mp(0, 1, 0.0, [(32, 0.0)]), rel=1e-12)


def test_measured_kernel_mixed_pass_adds_the_decodes_generation_attention(tables_pass):
    """8 decodes on 1,000 cached tokens beside a 24-token chunk: the terms of 32 tokens plus the generation-
    attention table of 8 sequences at 1,000 tokens (interpolated on the context grid) plus K_ctx(24); a
    decode-only pass is the step model's own measured-kernel decode step."""
    es, mp = tables_pass
    kgen = float(es.table_parts(np.array([8.0]), np.array([1000.0]))[1]["attention"][0])
    step32, p32, _ = es.table_parts(np.array([1.0]), np.array([0.0]), "prefill", np.array([32.0]))
    _, p24, _ = es.table_parts(np.array([1.0]), np.array([0.0]), "prefill", np.array([24.0]))
    want = float(step32[0]) - float(p32["attention"][0]) + float(p24["attention"][0]) + kgen
    assert mp(8, 1, 8 * 1000.0, [(24, 0.0)]) == pytest.approx(want, rel=2e-3)  # K_gen off-grid in context
    assert mp(8, 1, 8 * 1000.0, []) == pytest.approx(float(es(8, 8, 1000.0)), rel=1e-12)


def test_measured_kernel_mixed_passes_need_one_tp_ep_group(llama):
    """Pipelines and attention data parallelism keep the factor model's mixed pass (the busiest rank's and
    stage's composition has no table form here)."""
    m, s = llama
    for lay in (Layout(tp=4, pp=2), Layout(tp=4, dp=2)):
        assert not MixedPass(EngineStep(m, s, lay, realistic=True, kernels="tables"), 16384, 40000).kernel_tables
