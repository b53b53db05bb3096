"""Prefix caching in the serving simulator (issue 20 item 1): hits, saved prefill, LRU eviction and shared
memory computed by hand on small traces; off (or no prefixes) bit-identical; invariants still hold."""

import dataclasses
import json

import numpy as np
import pytest

from roofline.catalog import get_catalog
from roofline.errors import InputError
from roofline.simulate import ConstantStep, Deployment, Policy, Simulation, Workload, make_workload
from roofline.simulate.metrics import littles_law, prefix_cache_metrics
from roofline.simulate.workload import generate, prompt_pool, read_trace, write_trace

STEP = 0.01  # every pass takes 10 ms


def _wl(arrival, prompt, output, pid, shared) -> Workload:
    w = make_workload(arrival, prompt, output)
    return dataclasses.replace(w, prefix_id=np.asarray(pid, dtype=np.int64),
                               shared_prefix_tokens=np.broadcast_to(np.asarray(shared, float), w.arrival_s.shape).copy())


def _dep(cap=float("inf")):
    return Deployment(ConstantStep(STEP), kv_capacity_tokens=cap)


def _prefill_tokens(tr):
    """Tokens of the passes that prefill (a decode pass carries one token per sequence)."""
    return tr.seg_tokens[tr.seg_tokens != tr.seg_batch].tolist()


def test_hits_and_saved_prefill_by_hand():
    """5 requests, 2 prefixes, block 16, 40 shared tokens: floor(40/16) = 2 whole blocks = 32 reusable tokens.
    Requests arrive 1 s apart (each is done before the next): the first of each prefix misses, the 3 later ones
    hit 32 tokens and prefill 100 - 32 = 68. Hit rate 96/500 = 0.192 of prompt tokens, 3/5 of requests; 4 blocks
    cached at the end (2 per prefix), nothing evicted."""
    wl = _wl([0, 1, 2, 3, 4], 100, 5, [7, 9, 7, 9, 7], 40)
    tr = Simulation(wl, _dep(), Policy("continuous")).run()
    assert tr.prefix_hit_tokens.tolist() == [0, 0, 32, 32, 32]
    assert _prefill_tokens(tr) == [100, 100, 68, 68, 68]
    m = prefix_cache_metrics(tr)
    assert m["prefix_hit_tokens"] == 96 and m["prefill_tokens_saved"] == 96
    assert m["prefix_hit_rate"] == pytest.approx(96 / 500) and m["prefix_request_hit_rate"] == pytest.approx(3 / 5)
    assert m["prefix_cached_blocks"] == 4 and m["prefix_evictions"] == 0 and m["prefix_block_tokens"] == 16
    # block 1 (SGLang's token-granular radix cache): all 40 shared tokens are reused
    tr1 = Simulation(wl, _dep(), Policy("continuous"), block_tokens=1).run()
    assert tr1.prefix_hit_tokens.tolist() == [0, 0, 40, 40, 40] and tr1.prefix_cached_blocks == 80
    # block 64: no whole block in 40 tokens, nothing to share
    assert Simulation(wl, _dep(), Policy("continuous"), block_tokens=64).run().prefill_tokens_saved == 0


def test_warm_prefixes_left_by_earlier_runs_by_hand():
    """warm_prefixes: the cache an earlier run on the same server left. Two requests sent together, prompts 100,
    with their own prefixes of 40 and 64 tokens (2 and 4 blocks of 16): cold, both miss and prefill 200 tokens in
    one pass; warm, both hit from the first pass (32 and 64 tokens) and prefill 36 + 68 = 104; 6 blocks cached at
    the start and at the end. A 150-token pool: the first request is admitted (100 tokens of context, its 2 warm
    blocks now pinned) beside prefix 1's 4 unpinned blocks: 100 + 64 = 164 > 150, so ceil(14/16) = 1 block of
    prefix 1's tail is evicted; the second request waits for the first to finish (at 20 ms) and hits 3 blocks
    (48 tokens), prefilling 52."""
    wl = _wl([0, 0], 100, 2, [0, 1], [40, 64])
    cold = Simulation(wl, _dep(), Policy("continuous")).run()
    warm = Simulation(wl, _dep(), Policy("continuous"), warm_prefixes=True).run()
    assert cold.prefix_hit_tokens.tolist() == [0, 0] and _prefill_tokens(cold) == [200]
    assert warm.prefix_hit_tokens.tolist() == [32, 64] and _prefill_tokens(warm) == [104]
    assert warm.prefix_cached_blocks == 6 and warm.prefix_evictions == 0
    small = Simulation(wl, _dep(150.0), Policy("continuous"), warm_prefixes=True).run()
    assert small.prefix_hit_tokens.tolist() == [32, 48] and small.prefix_evictions == 1
    assert _prefill_tokens(small) == [68, 52] and small.admit_s.tolist() == pytest.approx([0.0, 2 * STEP])
    # without prefixes the flag changes nothing
    plain = make_workload([0, 0], 100, 2)
    assert (Simulation(plain, _dep(), Policy("continuous"), warm_prefixes=True).run().first_token_s.tolist()
            == Simulation(plain, _dep(), Policy("continuous")).run().first_token_s.tolist())


def test_warm_prefixes_of_given_ids_only_by_hand():
    """warm_prefixes as an array of prefix ids (a client's warm-up sent those prompts before the run): the two
    requests of the test above with only prefix 1 warm: request 0 misses (prefills 100), request 1 hits its 4
    blocks (prefills 36), 136 tokens in the one pass; an empty array is a cold cache."""
    wl = _wl([0, 0], 100, 2, [0, 1], [40, 64])
    some = Simulation(wl, _dep(), Policy("continuous"), warm_prefixes=np.array([1])).run()
    assert some.prefix_hit_tokens.tolist() == [0, 64] and _prefill_tokens(some) == [136]
    none = Simulation(wl, _dep(), Policy("continuous"), warm_prefixes=np.array([], dtype=np.int64)).run()
    assert none.prefix_hit_tokens.tolist() == [0, 0] and _prefill_tokens(none) == [200]


def test_concurrent_requests_miss_until_the_first_prefill_is_done():
    """Two requests of one prefix arriving together are prefilled in the same pass: neither finds the prefix
    cached (blocks are cached once a pass has computed them); the third, later, hits. A whole prompt of shared
    tokens hits at most prompt - 1 tokens (the last one is recomputed for its logits): prompt 48, shared 48 ->
    floor(47/16) = 2 blocks."""
    wl = _wl([0, 0, 1], 48, 3, [0, 0, 0], 48)
    tr = Simulation(wl, _dep(), Policy("continuous")).run()
    assert tr.prefix_hit_tokens.tolist() == [0, 0, 32]
    assert _prefill_tokens(tr)[:2] == [96, 16]


def test_chunked_prefill_caches_blocks_as_chunks_complete_them():
    """Chunked prefill, 32 tokens a pass, two prompts of 100 tokens sharing 64 (4 blocks), B arriving 5 ms after
    A. A's chunks: 32 tokens (2 blocks cached), 32 more (4 blocks cached), then its last 36; B can join only when
    the budget has room, in A's 4th pass (A's last 4 tokens + B's first 28), and finds all 4 blocks cached
    although A's prefill is not done yet (vLLM V1 caches full blocks as they are computed): it hits 64 and
    prefills 36 = 28 + 8 (its last 8 beside A's first decode token)."""
    wl = _wl([0, 0.005], 100, 2, [0, 0], 64)
    tr = Simulation(wl, _dep(), Policy("chunked", max_batched_tokens=32)).run()
    assert tr.prefix_hit_tokens.tolist() == [0, 64]
    assert tr.seg_tokens.tolist() == [32, 32, 32, 32, 9, 1] and tr.admit_s[1] == pytest.approx(3 * STEP)


def test_lru_eviction_by_hand():
    """KV capacity 100 tokens, block 16, prompts of 40 tokens with 32 shared (2 blocks), 1-token outputs (each
    request is done with its prefill pass, its blocks then unpinned). Arrivals A, B, C, A one second apart:
    - A: miss; 40 tokens in use; A's 2 blocks cached, unpinned.   cache A2, free 32 tokens
    - B: miss; 40 + 32 = 72 <= 100.                               cache A2 B2, free 64
    - C: miss; 40 + 64 = 104 > 100: evict ceil(4/16) = 1 block, the tail of the least recently used prefix A.
                                                                  cache A1 B2 C2, free 80
    - A: hits A's 1 remaining block (16 tokens), prefills 24; pinning A's block and its 24 new tokens give
      16 + 24 + 64 (B, C unpinned) = 104 > 100: evict 1 block of the now least recently used B. After its
      prefill A holds 2 blocks again.                             cache A2 B1 C2
    Evictions 2, cached blocks at the end 5, hits [0, 0, 0, 16]."""
    wl = _wl([0, 1, 2, 3], 40, 1, [0, 1, 2, 0], 32)
    tr = Simulation(wl, _dep(100.0), Policy("continuous")).run()
    assert tr.prefix_hit_tokens.tolist() == [0, 0, 0, 16]
    assert tr.prefix_evictions == 2 and tr.prefix_cached_blocks == 5
    assert _prefill_tokens(tr) == [40, 40, 40, 24]


def test_only_the_blocks_running_sequences_use_are_pinned():
    """One prefix id, two lengths: A (prompt 80, 64 shared = 4 blocks, 1-token output) leaves 4 blocks cached and
    unpinned; B (prompt 40, 32 shared = 2 blocks, 100 decode passes) hits 2 and pins only those 2; C (60 tokens,
    no prefix) arrives 0.5 s later into a 160-token pool. B then holds 40 + ~49 tokens, 32 of them the cached
    blocks: private ~57, pinned 32, unpinned 32 (A's blocks 3 and 4). C needs 60 + B's next token: 57 + 32 + 61 =
    150 <= 160, so it is admitted at once (were the whole chain pinned: 57 + 64 + 61 = 182 > 160, C would wait for
    B); the pool then holds 57 + 32 + 60 + 32 = 181 > 160: ceil(21 / 16) = 2 blocks evicted, A's tail. Cached at
    the end: B's 2 blocks."""
    wl = _wl([0, 1, 1.5], [80, 40, 60], [1, 101, 1], [0, 0, -1], [64, 32, 0])
    tr = Simulation(wl, _dep(160.0), Policy("continuous")).run()
    assert tr.prefix_hit_tokens.tolist() == [0, 32, 0] and tr.preemptions.sum() == 0
    assert tr.first_token_s[2] - tr.arrival_s[2] == pytest.approx(STEP)
    assert tr.prefix_evictions == 2 and tr.prefix_cached_blocks == 2


def test_shared_blocks_count_once_so_the_run_does_not_preempt():
    """Two requests with one 64-token prefix (4 blocks of 16), prompts 80, outputs 41 (40 decode passes),
    the second arriving 15 ms after the first (after its prefill): it hits 64 tokens. KV capacity 200 tokens.
    Without sharing, the two contexts near the first one's end are 119 + 117 tokens + 2 for the next pass =
    238 > 200: a preemption. With sharing the prefix is stored once: 238 - 64 = 174 <= 200, none."""
    wl = _wl([0, 0.015], 80, 41, [0, 0], 64)
    off = Simulation(wl, _dep(200.0), Policy("continuous"), prefix_cache=False).run()
    on = Simulation(wl, _dep(200.0), Policy("continuous")).run()
    assert off.preemptions.sum() >= 1
    assert on.preemptions.sum() == 0 and on.prefix_hit_tokens.tolist() == [0, 64]
    # the hand figures: the second request lags the first by its 2 passes (its prefill ran with the first's
    # 2nd decode), so when the first starts its last decode it holds 80 + 39 and the second 80 + 37 tokens
    lag = int(round((on.first_token_s[1] - on.first_token_s[0]) / STEP))
    assert lag == 2 and (80 + 39) + (80 + 39 - lag) + 2 == 238


def test_off_and_without_prefixes_is_bit_identical():
    """The cache off (or a workload without prefixes) changes nothing: every Trace array equal, for several
    policies, a small KV pool (preemption and reservation) and speculation-free passes."""
    cat = get_catalog()
    from roofline.simulate import roofline_deployment

    dep = roofline_deployment(cat.model("llama-3-8b"), cat.system("dgx-h100"), chips=1)
    small = dataclasses.replace(dep, kv_capacity_tokens=40_000.0)
    base = generate(np.random.default_rng(3), rate_per_s=30, n=300, prompt_tokens=900, output_tokens=120,
                    max_context=8192)
    pre = dataclasses.replace(base, prefix_id=np.random.default_rng(4).integers(0, 3, base.n),
                              shared_prefix_tokens=np.minimum(40.0, base.prompt_tokens))
    for d, pol in ((dep, Policy("continuous")), (dep, Policy("chunked", max_batched_tokens=512)),
                   (small, Policy("continuous")), (small, Policy("continuous", preemption=False)),
                   (dep, Policy("static", max_seqs=32)), (dep, Policy("train", interval_s=0.05))):
        ref = Simulation(base, d, pol, seed=1).run()
        for tr in (Simulation(pre, d, pol, seed=1, prefix_cache=False).run(),
                   Simulation(base, d, pol, seed=1, prefix_cache=True).run()):
            for f in dataclasses.fields(ref):
                a, b = getattr(ref, f.name), getattr(tr, f.name)
                if isinstance(a, np.ndarray):
                    assert np.array_equal(a, b), (pol.kind, f.name)
            assert tr.prefix_hit_tokens is None
        assert Simulation(pre, d, pol, seed=1).prefix_cache  # on by default where prefixes exist


def test_cache_on_keeps_littles_law_and_finishes_everything():
    """With hits, every request still finishes once, and L = lambda W from the occupancy record (continuous
    batching without preemption: the check of tests/test_simulate.py)."""
    cat = get_catalog()
    from roofline.simulate import roofline_deployment

    dep = roofline_deployment(cat.model("llama-3-8b"), cat.system("dgx-h100"), chips=1)
    wl = generate(np.random.default_rng(5), rate_per_s=20, n=400, prompt_tokens=1200, output_tokens=100,
                  max_context=8192, shared_prefix_tokens=800, prefix_groups=4)
    tr = Simulation(wl, dep, Policy("continuous", max_seqs=64)).run()
    assert tr.preemptions.sum() == 0 and np.all(tr.finish_s >= tr.first_token_s)
    ll = littles_law(tr)
    assert ll["L"] == pytest.approx(ll["lambda_W"], rel=1e-6)
    assert 0 < prefix_cache_metrics(tr)["prefix_hit_rate"] < 800 / 1200
    off = Simulation(wl, dep, Policy("continuous", max_seqs=64), prefix_cache=False).run()
    assert np.median(tr.first_token_s - tr.arrival_s) < np.median(off.first_token_s - off.arrival_s)


def test_saved_prefill_seconds_from_the_step_model():
    """With a constant step, a pass takes 10 ms whatever it holds, so a hit saves no time; on the engine a hit of
    H tokens saves t(P) - t(P - H on H cached) of a lone prefill: positive, and less than the whole prompt's."""
    wl = _wl([0, 1, 2, 3, 4], 100, 5, [7, 9, 7, 9, 7], 40)
    sim = Simulation(wl, _dep(), Policy("continuous"))
    assert sim.saved_prefill_s(sim.run()) == 0.0
    cat = get_catalog()
    from roofline.simulate import roofline_deployment

    dep = roofline_deployment(cat.model("llama-3-8b"), cat.system("dgx-h100"), chips=1)
    wl = _wl([0, 1, 2], 4096, 2, [0, 0, 0], 3000)
    sim = Simulation(wl, dep, Policy("continuous"))
    tr = sim.run()
    hit = 3000 // 16 * 16
    assert tr.prefix_hit_tokens.tolist() == [0, hit, hit]
    one = sim.mixed(0, 1, 0.0, [(4096, 0.0)]) - sim.mixed(0, 1, 0.0, [(4096 - hit, float(hit))])
    assert sim.saved_prefill_s(tr) == pytest.approx(2 * one)
    assert 0 < one < sim.mixed(0, 1, 0.0, [(4096, 0.0)])


def test_trace_columns_round_trip(tmp_path):
    wl = _wl([0, 1, 2], [50, 60, 70], 4, [3, -1, 3], [40, 0, 40])
    back = read_trace(write_trace(wl, tmp_path / "t.csv"))
    assert back.prefix_id.tolist() == [3, -1, 3] and back.shared_prefix_tokens.tolist() == [40, 0, 40]
    (tmp_path / "bad.csv").write_text("arrival_s,prompt_tokens,output_tokens,prefix_id,shared_prefix_tokens\n"
                                      "0,50,4,1,40\n1,50,4,1,55\n")
    with pytest.raises(InputError, match="line 3: shared_prefix_tokens = 55 must be a whole number between 0 and the "
                                         "row's prompt_tokens [+] output_tokens [(]54"):
        read_trace(tmp_path / "bad.csv")


def test_generator_system_prompts_redraw_short_prompts():
    """Every generated prompt holds the N-token system prompt plus at least one token (lognormal draws below
    N + 1 are redrawn, not clipped: none sits at N + 1 by clipping), ids uniform over K groups."""
    wl = generate(np.random.default_rng(0), rate_per_s=10, n=4000, prompt_tokens=1024, sigma=1.0,
                  shared_prefix_tokens=500, prefix_groups=4, max_context=32768)
    assert wl.prompt_tokens.min() >= 501 and np.sum(wl.prompt_tokens == 501) <= 5
    assert set(wl.prefix_id.tolist()) == {0, 1, 2, 3} and np.all(wl.shared_prefix_tokens == 500)
    counts = np.bincount(wl.prefix_id)
    assert counts.min() > 0.2 * wl.n
    with pytest.raises(InputError, match="below the minimum"):
        generate(np.random.default_rng(0), rate_per_s=10, n=10, lengths_kind="fixed", prompt_tokens=500,
                 shared_prefix_tokens=500)


def test_cli_json_reports_the_cache(run_cli):
    """llama-3-8b on one H100, 200 requests at 5/s, lognormal prompts (median 1,024) each starting with one of
    2 system prompts of 512 tokens: 512 = 32 whole blocks, so every request after the first of its prompt hits
    512 tokens (the cache, a few GB at most, never fills a 35 GB pool): hit tokens = 512 x (200 - 2)."""
    args = ("simulate", "-m", "llama-3-8b", "-a", "h100-sxm", "-n", "200", "--rate", "5",
            "--shared-prefix-tokens", "512", "--prefix-groups", "2", "--json")
    code, out, err = run_cli(*args)
    assert code == 0, err
    d = json.loads(out)
    assert d["prefix_cache"] == "on" and d["prefix_block_tokens"] == 16
    assert d["prefix_hit_tokens"] == 512 * 198 and d["prefix_request_hit_rate"] == pytest.approx(198 / 200)
    assert d["prefill_tokens_saved"] == d["prefix_hit_tokens"] and d["prefix_evictions"] == 0
    assert d["prefix_cached_blocks"] == 2 * 32 and d["prefill_gpu_s_saved"] > 0
    code, out, err = run_cli(*args, "--prefix-cache", "off")
    off = json.loads(out)
    assert off["prefix_cache"] == "off" and "prefix_hit_rate" not in off
    assert off["ttft_p50_s"] > d["ttft_p50_s"]
    code, out, err = run_cli(*args, "--block-size", "100")  # 5 whole blocks of 100 = 500 tokens
    assert json.loads(out)["prefix_hit_tokens"] == 500 * 198


def test_cli_prompt_pool_hit_rates_by_hand(run_cli):
    """--prompt-pool 20: 400 requests of 1,000 fixed tokens from 20 entries. The stream's first pass is a permutation,
    so each entry misses once and hits after: 380 of 400 requests hit, each its prompt's 62 whole blocks of 16 (992
    tokens). With --pool-warmup 10 the warm-up's 10 entries start cached: only the first pass's other 10 miss."""
    args = ("simulate", "-m", "llama-3.1-8b", "-s", "dgx-h100", "--gpus", "1", "-n", "400", "--rate", "5",
            "--lengths", "fixed", "--prompt-tokens", "1000", "--output-tokens", "50", "--json")
    code, out, err = run_cli(*args, "--prompt-pool", "20")
    assert code == 0, err
    d = json.loads(out)
    assert d["prompt_pool"] == {"entries": 20, "warmup": 0} and d["prefix_cache"] == "on"
    assert d["prefix_request_hit_rate"] == pytest.approx(380 / 400) and d["prefix_hit_tokens"] == 380 * 992
    code, out, err = run_cli(*args, "--prompt-pool", "20", "--pool-warmup", "10")
    warm = json.loads(out)
    assert warm["prefix_request_hit_rate"] == pytest.approx(390 / 400) and warm["prefix_hit_tokens"] == 390 * 992
    code, out, err = run_cli(*args)
    unique = json.loads(out)
    assert "prefix_cache" not in unique and unique["ttft_mean_s"] > d["ttft_mean_s"] > warm["ttft_mean_s"]


def test_prompt_pool_entries_keep_their_lengths():
    """With lognormal lengths each entry is one (prompt, output) pair drawn once: every request of an entry sends that
    prompt whole (its prefix) and asks for that output; the stream is shuffled passes (simulate/workload.prompt_pool)."""
    from roofline.requests.simulate import SimulateRequest, workload_and_warmup

    req = SimulateRequest.of(style="cli", model="llama-3.1-8b", system="dgx-h100", gpus=1, requests=300,
                             prompt_pool=7, pool_warmup=3)
    wl, warm = workload_and_warmup(req, np.random.default_rng(0))
    assert warm.size == 3 and set(wl.prefix_id.tolist()) == set(range(7))
    for e in range(7):
        mine = wl.prefix_id == e
        assert np.unique(wl.prompt_tokens[mine]).size == 1 and np.unique(wl.output_tokens[mine]).size == 1
    assert np.array_equal(wl.shared_prefix_tokens, wl.prompt_tokens)
    assert np.unique(wl.prompt_tokens).size > 1  # entries differ
    pid, w = prompt_pool(np.random.default_rng(1), 10, 4, 2)
    rng = np.random.default_rng(1)
    stream = np.concatenate([rng.permutation(4) for _ in range(3)])
    assert pid.tolist() == stream[2:12].tolist() and w.tolist() == sorted(set(stream[:2].tolist()))
    with pytest.raises(InputError, match="prompt pool entries must be a whole number >= 1"):
        prompt_pool(np.random.default_rng(1), 10, 0)


@pytest.mark.parametrize("seed", range(6))
def test_random_small_traces_keep_the_cache_consistent(seed):
    """Random small traces (prefix lengths differ within a prefix id, some requests without one): every request
    finishes; a hit never exceeds the request's whole prefix blocks; with unlimited KV nothing is evicted and the
    cache ends holding, per prefix, the most whole blocks any of its requests had; with a small pool the cached
    blocks fit in it."""
    rng = np.random.default_rng(seed)
    n, b = 40, 8
    p = rng.integers(2, 120, n).astype(float)
    pid = rng.integers(-1, 3, n)
    shared = np.where(pid >= 0, np.minimum(p, rng.integers(0, 100, n)), 0).astype(float)
    wl = _wl(np.sort(rng.uniform(0, 1, n)), p, rng.integers(1, 20, n), pid, shared)
    full = np.where(pid >= 0, np.floor(np.minimum(shared, p - 1) / b), 0)
    pol = Policy("continuous", max_seqs=6, max_batched_tokens=256)
    tr = Simulation(wl, _dep(), pol, block_tokens=b).run()
    assert np.all(np.isfinite(tr.finish_s)) and np.all(tr.prefix_hit_tokens <= full * b)
    assert tr.prefix_evictions == 0
    assert tr.prefix_cached_blocks == sum(int(full[pid == q].max()) for q in set(pid[pid >= 0].tolist()))
    cap = 2.5 * float(np.max(p + wl.output_tokens))
    small = Simulation(wl, _dep(cap), pol, block_tokens=b).run()
    assert np.all(np.isfinite(small.finish_s)) and np.all(small.prefix_hit_tokens <= full * b)
    assert small.prefix_cached_blocks * b <= cap


def test_prompts_that_preempt_each_other_forever_stop_with_an_error():
    """Found while fuzzing the cache (it happens without it too): chunked prefill (64 tokens a pass), a 400-token
    KV pool and prompts of 193 and 187 tokens. Whenever one finishes its prefill, the other's pending prompt plus
    its next token no longer fit, so the just-prefilled one is preempted before it decodes a token, and the two
    swap forever. The loop used to spin; it now stops after STALL_PREEMPTIONS such preemptions in a row with no
    request finishing, with one clear error."""
    wl = make_workload([0.0, 0.0042, 0.0046], [193, 59, 187], [38, 5, 9])
    with pytest.raises(InputError, match="simulation stalled: the KV cache \\(400 tokens\\)"):
        Simulation(wl, _dep(400.0), Policy("chunked", max_seqs=8, max_batched_tokens=64)).run()
    # a pool of 600 tokens holds both: the same requests finish
    tr = Simulation(wl, _dep(600.0), Policy("chunked", max_seqs=8, max_batched_tokens=64)).run()
    assert np.all(np.isfinite(tr.finish_s))
