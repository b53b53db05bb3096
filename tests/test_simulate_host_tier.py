"""A KV tier in host memory behind the simulator's prefix cache (simulate/prefixes.HostTier, HostCache): hits, loads
and the delayed pass by hand on small traces, the tier's sizes from a model and a layout by hand, an oracle under
Hypothesis (a write-through tier that never fills serves every block ever computed), a tier of no capacity changing
nothing, and every bad input refused in one line (library, CLI and validation run keys)."""

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import prefixed_workload, sequential_runs
from roofline.catalog import model
from roofline.errors import InputError
from roofline.layout import Layout
from roofline.simulate import ConstantStep, Deployment, Policy, Simulation
from roofline.simulate.metrics import prefix_cache_metrics
from roofline.simulate.prefixes import HostTier, host_tier
from roofline.simulate.workload import chat_sessions

STEP = 0.01


_wl = prefixed_workload


def _dep(cap=float("inf")):
    return Deployment(ConstantStep(STEP), kv_capacity_tokens=cap)


def _run(wl, cap, tier=None, **kw):
    return Simulation(wl, _dep(cap), Policy("continuous"), host_tier=tier, **kw).run()


# Request 0 caches prompt A's floor(129/16) = 8 blocks (128 tokens); request 1 (200 tokens, no prefix) needs room in a
# 250-token pool, so ceil((200 + 128 - 250) / 16) = 5 of A's blocks are evicted from HBM; request 2 repeats A.
FLAT = dict(arrival=[0, 1, 2], prompt=[130, 200, 130], output=2, pid=[1, -1, 1], shared=[130, 0, 130])


def test_host_tier_serves_what_hbm_evicted_by_hand():
    """Without the tier request 2 hits the 3 blocks HBM kept (48 tokens). With a tier that holds everything, it hits
    all 8: 3 from HBM and 5 (80 tokens) loaded from host memory, at 1 ms a token. Asynchronous (the default, vLLM's
    connector): the engine idles until the load ends, so its pass starts 80 ms after its arrival and takes 10 ms;
    synchronous (LMCache's): its pass starts at once and takes 10 + 80 ms. A tier of 4 blocks (64 tokens) kept A's first 4
    (its tail was evicted as A was written through): request 2 hits 4 blocks, 3 in HBM and 1 loaded (16 ms); when its
    prefill completes A's 8 blocks are written again and 4 more are evicted."""
    wl = _wl(**FLAT)
    base = _run(wl, 250.0)
    assert base.prefix_hit_tokens.tolist() == [0, 0, 48] and base.host_hit_tokens is None
    tr = _run(wl, 250.0, HostTier(1000, 1e-3))
    assert tr.prefix_hit_tokens.tolist() == [0, 0, 128] and tr.host_hit_tokens.tolist() == [0, 0, 80]
    assert tr.host_loaded_tokens == 80 and tr.host_load_s == pytest.approx(0.08)
    assert tr.seg_t0_s.tolist() == pytest.approx([STEP] * 6) and tr.seg_start_s[4] == pytest.approx(2.08)
    assert tr.first_token_s[2] == pytest.approx(2.09)
    assert tr.seg_tokens.tolist() == [130, 1, 200, 1, 2, 1]  # request 2 prefills 130 - 128 tokens
    assert tr.host_cached_blocks == 8 and tr.host_evictions == 0 and tr.prefix_evictions == 5
    sync = _run(wl, 250.0, HostTier(1000, 1e-3, sync=True))
    assert sync.seg_t0_s.tolist() == pytest.approx([STEP] * 4 + [STEP + 0.08, STEP])
    assert sync.seg_start_s[4] == pytest.approx(2.0) and sync.first_token_s[2] == pytest.approx(2.09)
    small = _run(wl, 250.0, HostTier(64, 1e-3, sync=True))
    assert small.prefix_hit_tokens.tolist() == [0, 0, 64] and small.host_hit_tokens.tolist() == [0, 0, 16]
    assert small.seg_t0_s[4] == pytest.approx(STEP + 0.016)
    assert small.host_cached_blocks == 4 and small.host_evictions == 8
    m = prefix_cache_metrics(tr)
    assert m["host_hit_tokens"] == 80 and m["host_hit_rate"] == pytest.approx(80 / 460)
    assert m["host_request_hit_rate"] == pytest.approx(1 / 3) and m["host_load_s"] == pytest.approx(0.08)


def test_asynchronous_loads_let_the_other_requests_run_by_hand():
    """As above, then request 2 (100 tokens, 40 out, no prefix) decodes from t = 2 while request 3 repeats A at
    t = 2.05: admitted at the pass that starts at 2.06, it loads 5 blocks (80 tokens at 0.9 ms: 72 ms, ready at 2.132).
    Asynchronous: request 2 decodes on (it finishes at 2.40 as with free loads) and request 3 joins the pass that starts
    at 2.14 (first token 2.15, against 2.07 with free loads). Synchronous: request 3's pass at 2.06 takes 10 + 72 ms
    (first token 2.142) and request 2, in that pass, finishes 72 ms later."""
    wl = _wl([0, 1, 2, 2.05], [130, 200, 100, 130], [2, 2, 40, 2], [1, -1, -1, 1], [130, 0, 0, 130])
    free = _run(wl, 250.0, HostTier(1000, 0.0))
    assert free.host_hit_tokens.tolist() == [0, 0, 0, 80] and free.first_token_s[3] == pytest.approx(2.07)
    a = _run(wl, 250.0, HostTier(1000, 0.9e-3))
    assert a.first_token_s[3] == pytest.approx(2.15) and a.finish_s[2] == pytest.approx(free.finish_s[2])
    assert np.allclose(a.seg_t0_s, STEP)
    s = _run(wl, 250.0, HostTier(1000, 0.9e-3, sync=True))
    assert s.first_token_s[3] == pytest.approx(2.142) and s.finish_s[2] == pytest.approx(free.finish_s[2] + 0.072)


def test_host_tier_loads_along_a_tree_path_by_hand():
    """The same sequence on a tree: prompt 1 extends system prompt 100 at 64 tokens (4 blocks each). Request 1 evicts
    prompt 1's own 4 blocks, then the system prompt's last: HBM keeps 3 system-prompt blocks. Request 2 takes those 3
    from HBM and loads the system prompt's 4th and prompt 1's 4 (5 blocks, 80 tokens) from host memory."""
    wl = _wl([0, 1, 2], [130, 200, 130], 2, [1, -1, 1], [130, 0, 130], [100, -1, 100], [64, 0, 64])
    assert _run(wl, 250.0).prefix_hit_tokens.tolist() == [0, 0, 48]
    tr = _run(wl, 250.0, HostTier(1000, 1e-3, sync=True))
    assert tr.prefix_hit_tokens.tolist() == [0, 0, 128] and tr.host_hit_tokens.tolist() == [0, 0, 80]
    assert tr.seg_t0_s[4] == pytest.approx(STEP + 0.08) and tr.prefix_cached_blocks == 8


def test_warm_start_is_written_through():
    """warm_prefixes: both prefixes (8 blocks each, 256 tokens) start cached in a pool of 200 tokens: admitting
    request 0 (prefix 1: 128 tokens hit, 2 to prefill) makes 130 + 128 tokens of use, so ceil(58 / 16) = 4 blocks of
    prefix 2, the least recently used, are evicted. Request 1 (prefix 2) hits the 4 left; with the tier, which had the
    warm blocks written through, it loads the other 4 back."""
    wl = _wl([0, 1], [130, 130], 2, [1, 2], [130, 130])
    assert _run(wl, 200.0, warm_prefixes=True).prefix_hit_tokens.tolist() == [128, 64]
    tr = _run(wl, 200.0, HostTier(1000, 0.0), warm_prefixes=True)
    assert tr.prefix_hit_tokens.tolist() == [128, 128] and tr.host_hit_tokens.tolist() == [0, 64]


def test_host_tier_sizes_by_hand():
    """Llama 3.1 8B: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 131,072 B a token. One GiB holds 8,192
    tokens; at 53 GB/s a token loads in 131,072 / 53e9 s. At TP 2 each GPU holds half of each token (4 KV heads) and
    loads it over its own link: the same tokens, half the time. At TP 16 the 8 KV heads are replicated 2x: each GPU
    holds 1/8 of a token, and 16 GPUs store 2 copies, so a GiB holds half as many tokens."""
    m = model("llama-3.1-8b")
    t1 = host_tier(m, Layout(tp=1), "bf16", 1.0, 53e9)
    assert t1.capacity_tokens == pytest.approx(8192) and t1.load_s_per_token == pytest.approx(131072 / 53e9)
    t2 = host_tier(m, Layout(tp=2), "bf16", 1.0, 53e9)
    assert t2.capacity_tokens == pytest.approx(8192) and t2.load_s_per_token == pytest.approx(65536 / 53e9)
    t16 = host_tier(m, Layout(tp=16), "bf16", 1.0, 53e9)
    assert t16.capacity_tokens == pytest.approx(4096) and t16.load_s_per_token == pytest.approx(16384 / 53e9)
    for bad in (dict(gib=0.0), dict(gib=float("nan")), dict(bytes_per_s=0.0)):
        args = {"gib": 1.0, "bytes_per_s": 53e9, **bad}
        with pytest.raises(InputError, match="host KV tier"):
            host_tier(m, Layout(tp=1), "bf16", **args)
    with pytest.raises(InputError, match="finite number >= 0"):
        HostTier(-1, 0.0)


@settings(max_examples=60, deadline=None)
@given(sequential_runs())
def test_a_tier_that_never_fills_serves_every_block_ever_computed(case):
    """Requests 10 s apart (each done before the next arrives), whole prompts as prefixes: with a tier that never
    fills, request j hits min(its reusable blocks, the most blocks any earlier request of its prefix computed), however
    little HBM kept; what HBM kept (the run without a tier) is never more. Loads cost 2 us a token: synchronous, the
    passes' extra time is 2 us x the loaded tokens; asynchronous, each request's first token comes 2 us x its loaded
    tokens later than with free loads, and the passes take what they took."""
    prefixes, prompts, block, cap = case
    n = len(prompts)
    wl = _wl(np.arange(n) * 10.0, prompts, 2, prefixes, prompts)
    tr = Simulation(wl, _dep(float(cap)), Policy("continuous"), block_tokens=block,
                    host_tier=HostTier(1e9, 2e-6, sync=True)).run()
    best: dict = {}
    want = []
    for p, length in zip(prefixes, prompts):
        own = (length - 1) // block
        want.append(min(own, best.get(p, 0)) * block)
        best[p] = max(best.get(p, 0), own)
    assert tr.prefix_hit_tokens.tolist() == want
    plain = Simulation(wl, _dep(float(cap)), Policy("continuous"), block_tokens=block).run()
    assert np.all(plain.prefix_hit_tokens <= tr.prefix_hit_tokens)
    assert np.all(tr.host_hit_tokens <= tr.prefix_hit_tokens) and tr.host_hit_tokens.sum() == tr.host_loaded_tokens
    free = Simulation(wl, _dep(float(cap)), Policy("continuous"), block_tokens=block, host_tier=HostTier(1e9, 0.0)).run()
    busy = float(np.sum(tr.seg_busy_s)) - float(np.sum(free.seg_busy_s))
    assert busy == pytest.approx(2e-6 * tr.host_loaded_tokens, abs=1e-12)
    a = Simulation(wl, _dep(float(cap)), Policy("continuous"), block_tokens=block, host_tier=HostTier(1e9, 2e-6)).run()
    assert np.array_equal(a.prefix_hit_tokens, tr.prefix_hit_tokens)
    assert a.first_token_s - free.first_token_s == pytest.approx(2e-6 * a.host_hit_tokens, abs=1e-12)
    assert float(np.sum(a.seg_busy_s)) == pytest.approx(float(np.sum(free.seg_busy_s)))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 16]))
def test_a_tier_of_no_capacity_changes_nothing(seed, block):
    """Chat sessions with system prompts in a small pool: a tier that holds no block gives the trace of no tier."""
    wl = chat_sessions(np.random.default_rng(seed), 60, 6, 4, 0.5, prompt_tokens=40, output_tokens=20, sigma=0.5,
                       max_context=2000, shared_prefix_tokens=64, prefix_groups=3)
    a = Simulation(wl, _dep(900.0), Policy("continuous"), block_tokens=block).run()
    b = Simulation(wl, _dep(900.0), Policy("continuous"), block_tokens=block, host_tier=HostTier(0, 1e-3)).run()
    assert np.array_equal(a.finish_s, b.finish_s) and np.array_equal(a.prefix_hit_tokens, b.prefix_hit_tokens)
    assert b.host_loaded_tokens == 0 and not b.host_hit_tokens.any()


def test_chat_session_options_by_hand():
    """prefix_order cycle: conversation c takes system prompt c mod 3; history false: every turn's prompt is the
    system prompt and its own message, and the system prompt is its only prefix."""
    kw = dict(lengths_kind="fixed", prompt_tokens=10, output_tokens=5, shared_prefix_tokens=100, prefix_groups=3)
    wl = chat_sessions(np.random.default_rng(0), 12, 2, 2, 0.0, prefix_order="cycle", **kw)
    conv_of = wl.prefix_id
    assert (wl.parent_prefix_id - (conv_of.max() + 1)).tolist() == (conv_of % 3).tolist()
    flat = chat_sessions(np.random.default_rng(0), 6, 2, 3, 0.0, history=False, **kw)
    assert flat.prompt_tokens.tolist() == [110.0] * 6 and flat.parent_prefix_id is None
    assert np.all(flat.shared_prefix_tokens == 100) and flat.after.tolist() == [-1, -1, 0, 1, 2, 3]
    with pytest.raises(InputError, match="uniform or cycle"):
        chat_sessions(np.random.default_rng(0), 6, 2, 3, 0.0, prefix_order="random", **kw)


def test_simulation_refuses_a_tier_without_the_cache():
    wl = _wl(**FLAT)
    with pytest.raises(InputError, match="behind the prefix cache"):
        Simulation(wl, _dep(), Policy("continuous"), prefix_cache=False, host_tier=HostTier(10, 0.0))


CLI = ("simulate", "-m", "llama-3.1-8b", "-s", "dgx-h100", "--gpus", "1", "-n", "300", "--rate", "2",
       "--prompt-pool", "60", "--lengths", "fixed", "--prompt-tokens", "3000", "--output-tokens", "20",
       "--kv-memory-fraction", "0.22", "--json")


def test_cli_reports_the_host_tier(run_cli):
    """60 prompts of 3,000 tokens (180,000 tokens) against an HBM pool of about 20,000: most repeats miss in HBM; a
    64 GiB tier (524,288 tokens of Llama 3.1 8B) holds them all, so every request after the pool's first pass hits."""
    code, out, err = run_cli(*CLI)
    assert code == 0, err
    base = json.loads(out)
    code, out, err = run_cli(*CLI, "--kv-offload-gib", "64")
    assert code == 0, err
    d = json.loads(out)
    assert "host_hit_rate" not in base and d["host_hit_rate"] > 0.5 and d["prefix_hit_rate"] > base["prefix_hit_rate"]
    assert d["host_load_s"] == pytest.approx(d["host_loaded_tokens"] * 131072 / 53e9)
    code, out, err = run_cli(*CLI, "--kv-offload-gib", "64", "--kv-offload-gb-per-s", "5")
    slow = json.loads(out)
    assert slow["host_load_s"] == pytest.approx(slow["host_loaded_tokens"] * 131072 / 5e9)
    assert slow["ttft_p50_s"] > d["ttft_p50_s"]
    code, out, err = run_cli(*CLI, "--kv-offload-gib", "64", "--kv-offload-sync")
    assert code == 0 and json.loads(out)["host_hit_rate"] > 0.5


@pytest.mark.parametrize("extra, match", [
    (("--kv-offload-gb-per-s", "5"), "add --kv-offload-gib"),
    (("--kv-offload-sync",), "add --kv-offload-gib"),
    (("--kv-offload-tier", "cxl-cz120"), "add --kv-offload-gib"),
    (("--kv-offload-gib", "8", "--prefix-cache", "off"), "drop one of them"),
    (("--kv-offload-gib", "-1"), "kv-offload-gib"),
])
def test_cli_refuses_bad_tiers_in_one_line(run_cli, extra, match):
    code, out, err = run_cli(*CLI, *extra)
    assert code != 0 and match in err and len(err.strip().splitlines()) == 1


def test_cli_needs_a_rate_where_the_catalog_has_none(run_cli):
    code, out, err = run_cli("simulate", "-m", "llama-3.1-8b", "-a", "b200", "-n", "10", "--kv-offload-gib", "8")
    assert code != 0 and "--kv-offload-gb-per-s" in err and len(err.strip().splitlines()) == 1


RUN = {"id": "x", "engine": "vllm", "model": "llama-3.1-8b", "system": "dgx-h100", "gpus": 1, "replicas": 1,
       "rate": 1.0, "requests": 24, "dataset": "d", "policy": "chunked", "max_seqs": 64,
       "max_batched_tokens": 2048, "weights_dtype": "bf16", "kv_dtype": "bf16", "metrics": ["ttft_mean"],
       "sessions": {"users": 4, "turns": 3, "system_prompt_tokens": 500, "system_prompts": 2}}
DS = {"kind": "uniform", "prompt_range": [100, 100], "output_range": [20, 20]}


def test_validation_run_keys_sessions_and_kv_offload():
    """A sessions run is a closed loop (saturated only by a growing queue); kv_offload adds the tier; both keys are
    checked in one line naming the run."""
    from roofline.validate import serving as S

    r = S.simulate_run(RUN, DS)
    assert r["saturation"]["closed_loop"] and r["ttft_mean"] > 0
    r2 = S.simulate_run({**RUN, "kv_offload": {"gib": 16, "gb_per_s": 25}}, DS)
    assert r2["ttft_mean"] > 0
    for bad, match in (({"kv_offload": {"gib": 0}}, "kv_offload needs"),
                       ({"kv_offload": {"gib": 8}, "prefix_caching": False}, "behind the prefix cache"),
                       ({"kv_offload": {"gib": 8, "sync": "no"}}, "kv_offload needs"),
                       ({"sessions": {"users": 0, "turns": 2}}, "sessions needs"),
                       ({"sessions": {"users": 2, "turns": 2, "history": "yes"}}, "sessions needs"),
                       ({"max_concurrency": 4}, "drop max_concurrency"),
                       ({"system": "dgx-b200", "kv_offload": {"gib": 8}}, "no host-link rate")):
        with pytest.raises(InputError, match=match):
            S.simulate_run({**RUN, **bad}, DS)
    cut = S.simulate_run({**RUN, "requests": 400, "sessions": {**RUN["sessions"], "duration_s": 2.0}}, DS)
    assert cut["ttft_mean"] > 0
    with pytest.raises(InputError, match="raise requests"):
        S.simulate_run({**RUN, "sessions": {**RUN["sessions"], "duration_s": 1e4}}, DS)
    with pytest.raises(InputError, match="fixed user message"):
        S.simulate_run(RUN, {"kind": "uniform", "prompt_range": [50, 100], "output_range": [20, 20]})


def test_a_time_cut_scores_the_requests_finished_by_then():
    """trace_metrics(done_by=T): the means and medians of the requests that finished by T, nothing else."""
    from roofline.simulate.metrics import e2e_s, tpot_s, ttft_s
    from roofline.validate import serving as S

    wl = chat_sessions(np.random.default_rng(3), 80, 5, 4, 0.2, prompt_tokens=50, output_tokens=30, sigma=0.5,
                       max_context=4000, shared_prefix_tokens=64, prefix_groups=2)
    tr = Simulation(wl, _dep(5000.0), Policy("continuous")).run()
    t = float(np.median(tr.finish_s))
    done = tr.finish_s <= t
    m = S.trace_metrics(tr, done_by=t)
    assert 0 < done.sum() < wl.n
    assert m["ttft_mean"] == pytest.approx(float(ttft_s(tr)[done].mean()))
    assert m["e2e_p50"] == pytest.approx(float(np.percentile(e2e_s(tr)[done], 50)))
    assert m["tpot_mean"] == pytest.approx(float(tpot_s(tr)[done].mean()))
    assert S.trace_metrics(tr)["ttft_mean"] == pytest.approx(float(ttft_s(tr).mean()))


def test_sessions_wait_for_their_loads_while_the_engine_idles():
    """Two users of 3-turn chats in a 400-token pool: each user's history is evicted by the other's turn, so the third
    turns load it back from host memory while nothing else runs (the engine idles until the load ends). A regression
    test: that idle path once overwrote the sessions' table of waiting turns."""
    wl = chat_sessions(np.random.default_rng(0), 12, 2, 3, 0.0, lengths_kind="fixed", prompt_tokens=100,
                       output_tokens=20, max_context=4000)
    tr = Simulation(wl, _dep(400.0), Policy("continuous"), host_tier=HostTier(1e5, 1e-3)).run()
    assert tr.host_hit_tokens.tolist() == [0, 0, 0, 0, 64, 192] * 2
    assert tr.prefix_hit_tokens.tolist() == [0, 0, 112, 112, 224, 224] * 2
    assert np.all(np.isfinite(tr.finish_s)) and np.all(np.diff(tr.finish_s[:6]) >= 0)


def test_host_loads_saved_prefill_and_the_tier_price_by_hand(run_cli):
    """On the engine (llama-3-8b, one H100), FLAT's repeat hits 128 tokens, 80 of them loaded: the host tier's part of
    the saving is t(130 - 48 on 48 cached) - t(2 on 128), of the whole saving t(130) - t(2 on 128). The CLI prices the
    tier at G GiB x the tiers row's $ per byte-second, and the saving at the GPU's price per hour of the run."""
    from roofline.catalog import get_catalog
    from roofline.catalog.prices import memory_tier
    from roofline.simulate import roofline_deployment

    cat = get_catalog()
    dep = roofline_deployment(cat.model("llama-3-8b"), cat.system("dgx-h100"), chips=1)
    dep = dataclasses.replace(dep, kv_capacity_tokens=250.0)
    sim = Simulation(_wl(**FLAT), dep, Policy("continuous"), host_tier=HostTier(1000, 1e-4))
    tr = sim.run()
    assert tr.prefix_hit_tokens.tolist() == [0, 0, 128] and tr.host_hit_tokens.tolist() == [0, 0, 80]
    m = sim.mixed
    assert sim.saved_prefill_s(tr, host_only=True) == pytest.approx(m(0, 1, 0.0, [(82, 48.0)]) - m(0, 1, 0.0, [(2, 128.0)]))
    assert sim.saved_prefill_s(tr) == pytest.approx(m(0, 1, 0.0, [(130, 0.0)]) - m(0, 1, 0.0, [(2, 128.0)]))
    code, out, err = run_cli(*CLI, "--kv-offload-gib", "64")
    d = json.loads(out)
    ddr = memory_tier("ddr-dgx-h100")
    assert d["host_tier_row"] == "ddr-dgx-h100"
    assert d["host_tier_usd_per_hour"] == pytest.approx(64 * 2**30 * ddr.usd_per_byte_s * 3600)
    assert 0 < d["host_prefill_gpu_s_saved"] <= d["prefill_gpu_s_saved"]
    assert d["host_prefill_usd_per_hour_saved"] == pytest.approx(
        d["host_prefill_gpu_s_saved"] * 2.99 / 3600 / (d["makespan_s"] / 3600))
    code, out, err = run_cli(*CLI, "--kv-offload-gib", "64", "--kv-offload-tier", "flash-gen6")
    assert code != 0 and "ddr or cxl" in err and len(err.strip().splitlines()) == 1


def test_a_hit_on_blocks_still_loading_waits_for_them(monkeypatch):
    """FLAT, then a fourth request repeats A at t = 2.005, while request 2's load of A's last 5 blocks (80 ms) runs:
    the blocks are A's in HBM only from 2.08, so request 3 waits for them (vLLM's connector from 0.15: PR #29087) and both
    prefill in the pass at 2.08 (first tokens at 2.09). Before this rule (set cl's registered code) request 3 took them
    at once and had its first token at 2.015."""
    import roofline.simulate.core as core

    wl = _wl([0, 1, 2, 2.005], [130, 200, 130, 130], 2, [1, -1, 1, 1], [130, 0, 130, 130])
    tr = _run(wl, 250.0, HostTier(1000, 1e-3))
    assert tr.prefix_hit_tokens.tolist() == [0, 0, 128, 128] and tr.host_hit_tokens.tolist() == [0, 0, 80, 0]
    assert tr.first_token_s[2:].tolist() == pytest.approx([2.09, 2.09])
    monkeypatch.setattr(core, "WAIT_FOR_LOADING_BLOCKS", False)
    before = _run(wl, 250.0, HostTier(1000, 1e-3))
    assert before.first_token_s[3] == pytest.approx(2.015)


def test_a_store_is_a_hit_only_once_written_by_hand(monkeypatch):
    """Writes take the host link (prefixes.WRITES_QUEUE): request 0's prefill (0-10 ms) writes A's 8 blocks at 1 ms a
    token, 128 ms, so they land at 138 ms. Request 1 (t = 50 ms) evicts 5 of them from HBM. A repeat of A at 100 ms
    finds only the 3 blocks HBM kept (the tier has none yet); at 200 ms it finds all 8, 5 loaded. With the switch off
    (stores free and at once, as sets cl and cn were registered) the repeat at 100 ms hits all 8."""
    from roofline.simulate import prefixes

    early = _wl([0, 0.05, 0.1], [130, 200, 130], 2, [1, -1, 1], [130, 0, 130])
    late = _wl([0, 0.05, 0.2], [130, 200, 130], 2, [1, -1, 1], [130, 0, 130])
    a = _run(early, 250.0, HostTier(1000, 1e-3, sync=True))
    assert a.prefix_hit_tokens.tolist() == [0, 0, 48] and a.host_hit_tokens.tolist() == [0, 0, 0]
    b = _run(late, 250.0, HostTier(1000, 1e-3, sync=True))
    assert b.prefix_hit_tokens.tolist() == [0, 0, 128] and b.host_hit_tokens.tolist() == [0, 0, 80]
    assert a.host_cached_blocks == b.host_cached_blocks == 8  # every write lands by the end
    monkeypatch.setattr(prefixes, "WRITES_QUEUE", False)
    c = _run(early, 250.0, HostTier(1000, 1e-3, sync=True))
    assert c.prefix_hit_tokens.tolist() == [0, 0, 128] and c.host_hit_tokens.tolist() == [0, 0, 80]


def test_writes_queue_one_after_another_by_hand():
    """HostCache alone: writes of 2 blocks each at 1 s a block, stored at t = 0 and t = 0.5 on two nodes, land at 2 and
    4 (the second waits for the first); a store that adds nothing queues nothing; a drain before a write's end leaves
    it pending."""
    from roofline.simulate.prefixes import HostCache

    hc = HostCache(3, 10, write_s=1.0)
    hc.store(0, 2, 0.0)
    hc.store(1, 2, 0.5)
    hc.store(0, 2, 0.6)
    m = hc.mem
    assert [w[0] for w in m.wq] == [2.0, 4.0] and m.held == [0, 0, 0] and hc.disk is None
    hc.drain(3.0)
    assert m.held == [2, 0, 0] and m.used == 2
    hc.drain(4.0)
    assert m.held == [2, 2, 0] and m.used == 4 and not m.wq
    hc.store(0, 3, 10.0)  # one more block: 10 -> 11
    assert m.wq[0][0] == 11.0
