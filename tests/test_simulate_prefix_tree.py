"""A tree of prefixes in the serving simulator's cache (issue 20 item 1): system prompts shared by prompts that
themselves recur; hits, saved prefill and eviction order by hand on small traces, an independent block-set oracle
under Hypothesis, the flat cache unchanged, and every bad input refused with one line."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import prefixed_workload
from roofline.errors import InputError
from roofline.simulate import ConstantStep, Deployment, Policy, Simulation, Workload, make_workload
from roofline.simulate.metrics import prefix_cache_metrics
from roofline.simulate.prefixes import prefix_tree
from roofline.simulate.workload import read_trace, with_prompt_pool, write_trace

STEP = 0.01


_wl = prefixed_workload


def _dep(cap=float("inf")):
    return Deployment(ConstantStep(STEP), kv_capacity_tokens=cap)


def _prefill_tokens(tr):
    return tr.seg_tokens[tr.seg_tokens != tr.seg_batch].tolist()


# system prompt 100: 64 tokens (4 blocks of 16); prompts 1 and 2 (130 tokens each) extend it at 64 tokens; prompt 3
# (70 tokens) too, but floor(69 / 16) = 4 blocks end where its own segment would start, so it reuses the system
# prompt's 4 blocks only. Requests 1 s apart: each is done before the next arrives.
SEQ = dict(arrival=[0, 1, 2, 3], prompt=[130, 130, 130, 70], output=5, pid=[1, 2, 1, 3], shared=[130, 130, 130, 70],
           par=[100, 100, 100, 100], ptok=64)


def test_tree_hits_and_saved_prefill_by_hand():
    """Request 0 misses (130 tokens); request 1, another prompt on the same system prompt, hits its 4 blocks (64
    tokens) and prefills 66; request 2 repeats prompt 1: the system prompt's 4 blocks, then prompt 1's own
    floor(129/16) - 4 = 4 blocks, 128 tokens, and prefills 2; request 3 hits the system prompt's 64 and prefills 6.
    At the end 4 + 4 + 4 = 12 blocks are cached (prompt 3 added none). Without the parent columns each prompt is its
    own root: request 1 and 3 miss, request 2 hits 128."""
    wl = _wl(**SEQ)
    tr = Simulation(wl, _dep(), Policy("continuous")).run()
    assert tr.prefix_hit_tokens.tolist() == [0, 64, 128, 64]
    assert _prefill_tokens(tr) == [130, 66, 2, 6]
    m = prefix_cache_metrics(tr)
    assert m["prefix_hit_tokens"] == 256 and m["prefill_tokens_saved"] == 256 and m["prefix_cached_blocks"] == 12
    assert m["prefix_request_hit_rate"] == pytest.approx(3 / 4) and m["prefix_evictions"] == 0
    flat = dataclasses.replace(wl, parent_prefix_id=None, parent_prefix_tokens=None)
    tf = Simulation(flat, _dep(), Policy("continuous")).run()
    assert tf.prefix_hit_tokens.tolist() == [0, 0, 128, 0] and _prefill_tokens(tf) == [130, 130, 2, 70]


def test_tree_warm_start_holds_every_path():
    """warm_prefixes: the system prompt and each prompt's own blocks are cached before the run: requests 0-2 hit
    their 8 blocks (128 tokens), request 3 the system prompt's 4; an array of warm prefix ids warms their paths
    (the system prompt with them): prompt 2 warm, so request 0 hits the system prompt's 64 tokens."""
    wl = _wl(**SEQ)
    tr = Simulation(wl, _dep(), Policy("continuous"), warm_prefixes=True).run()
    assert tr.prefix_hit_tokens.tolist() == [128, 128, 128, 64] and tr.prefix_cached_blocks == 12
    tw = Simulation(wl, _dep(), Policy("continuous"), warm_prefixes=np.array([2])).run()
    assert tw.prefix_hit_tokens.tolist() == [64, 128, 128, 64]


def test_eviction_takes_a_child_before_its_parent_by_hand():
    """Request 0 (prompt 1 on system prompt 100) leaves 8 unpinned blocks: prompt 1's own 4, released first, and
    the system prompt's 4 after them. Request 1 has no prefix: 200 tokens in a 250-token pool with 128 cached
    tokens is 328, so ceil(78/16) = 5 blocks go: prompt 1's 4, then the system prompt's last. Request 2 (prompt 2)
    then finds 3 system-prompt blocks: it hits 48 tokens and prefills 82."""
    wl = _wl([0, 1, 2], [130, 200, 130], 2, [1, -1, 2], [130, 0, 130], [100, -1, 100], [64, 0, 64])
    tr = Simulation(wl, _dep(250.0), Policy("continuous")).run()
    assert tr.prefix_evictions == 5
    assert tr.prefix_hit_tokens.tolist() == [0, 0, 48] and _prefill_tokens(tr) == [130, 200, 82]


def test_a_running_child_pins_its_parent():
    """Two prompts on one system prompt arrive together; the first is prefilled alone (a 130-token budget), and the
    second waits for the next pass: by then the system prompt's 4 blocks are cached and pinned by the first, so the
    second hits 64 tokens. Dense node order is by id (1, 2, 100): prompt 1's node 0 starts at block 4 under node 2."""
    wl = _wl([0, 0], 130, 20, [1, 2], 130, [100, 100], 64)
    tr = Simulation(wl, _dep(), Policy("chunked", max_batched_tokens=130)).run()
    assert tr.prefix_hit_tokens.tolist() == [0, 64]
    st_ = prefix_tree(wl, 16)
    assert st_.start[st_.leaf[0]] == 4 and st_.ancestors[st_.leaf[0]] == ((2, 0, 4),)


def test_a_chats_next_turn_hits_the_answer_by_hand():
    """A chat's turns as one prefix that grows (flat): turn 1 (prompt 100, answer 60) declares 160 shared tokens, its
    prompt and its answer, since turn 2's prompt (200 tokens) repeats both. Turn 1's prefill caches floor(99/16) = 6
    blocks; at its finish its answer's KV (159 tokens: the last generated token has none) leaves floor(159/16) = 9.
    Turn 2 hits 9 blocks (144 tokens) and prefills 56; declared without the answer (shared = prompt), 6 blocks (96),
    prefilling 104. As a tree on a 64-token system prompt (turn 1 extends it at 64, turn 2 extends turn 1 at 160), the
    same 144 tokens: the system prompt's 4 blocks and turn 1's 5."""
    flat = _wl([0, 10], [100, 200], [60, 30], [1, 1], [160, 200])
    tr = Simulation(flat, _dep(), Policy("continuous")).run()
    assert tr.prefix_hit_tokens.tolist() == [0, 144] and _prefill_tokens(tr) == [100, 56]
    bare = _wl([0, 10], [100, 200], [60, 30], [1, 1], [100, 200])
    tb = Simulation(bare, _dep(), Policy("continuous")).run()
    assert tb.prefix_hit_tokens.tolist() == [0, 96] and _prefill_tokens(tb) == [100, 104]
    tree = _wl([0, 10], [100, 200], [60, 30], [1, 2], [160, 200], [100, 1], [64, 160])
    tt = Simulation(tree, _dep(), Policy("continuous")).run()
    assert tt.prefix_hit_tokens.tolist() == [0, 144] and _prefill_tokens(tt) == [100, 56]
    # at the end: turn 2's prefill cached floor(199/16) = 12 blocks of the path (flat: one node; tree: the system
    # prompt's 4, turn 1's 6, its last block completed by turn 2's prompt, and turn 2's own 2)
    assert tr.prefix_cached_blocks == 12 and tt.prefix_cached_blocks == 4 + 6 + 2


def test_an_answer_kept_in_a_small_pool_is_evicted_first():
    """Turn 1's answer blocks are unpinned cache once it finishes: a 250-token pool holding them (9 blocks, 144 tokens)
    and a 200-token request without a prefix evicts ceil((200 + 144 - 250)/16) = 6 of them, so turn 2 hits 3 blocks."""
    wl = _wl([0, 10, 20], [100, 200, 200], [60, 2, 30], [1, -1, 1], [160, 0, 200])
    tr = Simulation(wl, _dep(250.0), Policy("continuous")).run()
    assert tr.prefix_evictions == 6 and tr.prefix_hit_tokens.tolist() == [0, 0, 48]


def _oracle_hits(wl: Workload, blk: int) -> list:
    """Hits of requests served one at a time into a cache that never evicts, from block identities alone: block j of
    a request's prompt (and answer) belongs to the deepest prefix on its chain that starts at or before j (start = its
    parent tokens // blk); a request reuses the leading blocks of its first ⌊min(shared, prompt − 1)/blk⌋ that are in
    the set, then adds them all, and, where its shared tokens run past its prompt, the blocks of
    ⌊min(shared, prompt + output − 1)/blk⌋ (its answer's KV)."""
    parent = {int(q): (int(p), int(t)) for q, p, t in zip(wl.prefix_id, wl.parent_prefix_id, wl.parent_prefix_tokens)
              if q >= 0}
    seen: set = set()
    hits = []
    for q, sh, p, o in zip(wl.prefix_id.tolist(), wl.shared_prefix_tokens.tolist(), wl.prompt_tokens.tolist(),
                           wl.output_tokens.tolist()):
        if q < 0:
            hits.append(0)
            continue
        chain = [(q, parent[q][1] // blk if parent[q][0] >= 0 else 0)]
        while parent.get(chain[-1][0], (-1, 0))[0] >= 0:
            x = parent[chain[-1][0]][0]
            chain.append((x, parent[x][1] // blk if x in parent and parent[x][0] >= 0 else 0))
        reuse = int(min(sh, p - 1) // blk)
        keep = int(min(sh, p + o - 1) // blk) if sh > p else reuse
        ids = [(next(x for x, s in chain if s <= j), j) for j in range(max(reuse, keep))]
        h = 0
        while h < reuse and ids[h] in seen:
            h += 1
        hits.append(h * blk)
        seen.update(ids)
    return hits


@st.composite
def _tree_workloads(draw):
    """Up to 12 sequential requests on a random forest of up to 6 prefixes (each extends an earlier one, or none);
    shared tokens sometimes run past the prompt into the answer (a chat's next turn repeats it)."""
    m = draw(st.integers(1, 6))
    par, tok = [-1] * m, [0] * m
    for k in range(1, m):
        p = draw(st.integers(-1, k - 1))
        if p >= 0:
            par[k], tok[k] = p, tok[p] + draw(st.integers(1, 60))
    n = draw(st.integers(1, 12))
    pid = [draw(st.integers(-1, m - 1)) for _ in range(n)]
    shared, prompt, output = [], [], []
    for q in pid:
        lo = tok[q] if q >= 0 else 0
        pr = draw(st.integers(max(lo, 1), lo + 80))
        out = draw(st.integers(1, 40))
        prompt.append(pr)
        output.append(out)
        shared.append(draw(st.integers(lo, pr + out)) if q >= 0 else 0)
    return _wl(np.arange(n, dtype=float) * 100, prompt, output, pid, shared, [par[q] if q >= 0 else -1 for q in pid],
               [tok[q] if q >= 0 and par[q] >= 0 else 0 for q in pid])


@settings(max_examples=120, deadline=None)
@given(_tree_workloads(), st.sampled_from([1, 4, 16]))
def test_tree_hits_match_a_block_set_oracle(wl, blk):
    """One request at a time, no eviction: the simulator's hits are the oracle's, every request prefills its prompt
    less its hit, and the tree never hits less than the same prefixes taken as separate roots."""
    tr = Simulation(wl, _dep(), Policy("continuous"), block_tokens=blk).run()
    hits = _hits(tr, wl)
    assert hits.tolist() == _oracle_hits(wl, blk)
    # one request at a time: the pass that starts at a request's admission is its prefill
    first = tr.seg_tokens[np.searchsorted(tr.seg_start_s, tr.admit_s)]
    assert first.tolist() == (wl.prompt_tokens - hits).tolist()
    flat = dataclasses.replace(wl, parent_prefix_id=None, parent_prefix_tokens=None)
    tf = Simulation(flat, _dep(), Policy("continuous"), block_tokens=blk).run()
    assert np.all(hits >= _hits(tf, flat))


def _hits(tr, wl):
    """Hit tokens per request (none where no request shares a prefix: the cache is then off)."""
    return np.zeros(wl.n) if tr.prefix_hit_tokens is None else tr.prefix_hit_tokens


@settings(max_examples=60, deadline=None)
@given(_tree_workloads(), st.floats(0.0, 2.0), st.integers(180, 600))
def test_tree_runs_under_pressure_finish_and_account(wl, spread, cap):
    """Requests close together in a small pool (eviction and pins at work): every request finishes once, in time
    order, no hit reaches its last prompt token, and the blocks cached at the end fit the pool."""
    wl = dataclasses.replace(wl, arrival_s=wl.arrival_s * spread / 100)
    cap = max(cap, int((wl.prompt_tokens + wl.output_tokens).max()))  # every request fits the pool alone
    try:
        tr = Simulation(wl, _dep(float(cap)), Policy("chunked", max_batched_tokens=64)).run()
    except InputError as e:  # two requests that fit only one at a time under chunked prefill: the loop's own one-line
        assert "stalled" in str(e)  # verdict (core.STALL_PREEMPTIONS), not a cache fault
        return
    assert np.all(tr.finish_s >= tr.first_token_s) and np.all(tr.first_token_s >= tr.arrival_s)
    assert np.all(_hits(tr, wl) <= wl.prompt_tokens - 1)
    assert tr.prefix_cached_blocks * 16 <= cap


def test_parent_columns_all_none_change_nothing():
    """Parent columns that name no parent give the flat cache's trace exactly."""
    wl = _wl([0, 0.001, 0.002, 1], [100, 120, 100, 90], 7, [7, 9, 7, 9], 40)
    a = Simulation(wl, _dep(300.0), Policy("chunked", max_batched_tokens=96)).run()
    b = Simulation(dataclasses.replace(wl, parent_prefix_id=np.full(4, -1), parent_prefix_tokens=np.zeros(4)),
                   _dep(300.0), Policy("chunked", max_batched_tokens=96)).run()
    for f in ("first_token_s", "finish_s", "admit_s", "prefix_hit_tokens"):
        assert getattr(a, f).tolist() == getattr(b, f).tolist()


@pytest.mark.parametrize("par, ptok, pid, shared, match", [
    ([5, -1], [10, 0], [-1, 3], [0, 20], "no prefix"),
    ([3, -1], [10, 0], [3, 3], [20, 20], "extend itself"),
    ([5, 5], [0, 0], [3, 3], [20, 20], "tokens 0"),
    ([5, 5], [30, 30], [3, 3], [20, 20], "above its shared"),
    ([-1, -1], [4, 0], [3, 3], [20, 20], "parent_prefix_id -1"),
    ([5, 6], [10, 10], [3, 3], [20, 20], "different parents"),
    ([5, 3], [10, 10], [3, 5], [20, 20], "cycle"),
    ([5, 6], [10, 12], [3, 5], [20, 20], "increasing order"),
])
def test_bad_trees_are_refused_in_one_line(par, ptok, pid, shared, match):
    with pytest.raises(InputError, match=match) as e:
        _wl([0, 1], 40, 2, pid, shared, par, ptok)
    assert "\n" not in str(e.value)


def test_parent_columns_need_the_prefix_columns_and_each_other():
    w = make_workload([0], 40, 2)
    with pytest.raises(InputError, match="go together"):
        dataclasses.replace(w, prefix_id=np.array([1]), shared_prefix_tokens=np.array([10.0]),
                            parent_prefix_id=np.array([2]))
    with pytest.raises(InputError, match="needs prefix_id"):
        dataclasses.replace(w, parent_prefix_id=np.array([2]), parent_prefix_tokens=np.array([5.0]))


def test_trace_round_trip_and_bad_rows_name_their_line(tmp_path):
    wl = _wl(**SEQ)
    back = read_trace(write_trace(wl, tmp_path / "tree.csv"))
    for f in ("prefix_id", "shared_prefix_tokens", "parent_prefix_id", "parent_prefix_tokens", "prompt_tokens"):
        assert getattr(back, f).tolist() == getattr(wl, f).tolist()
    head = "arrival_s,prompt_tokens,output_tokens,prefix_id,shared_prefix_tokens,parent_prefix_id,parent_prefix_tokens\n"
    cases = [
        ("0,40,2,1,20,5,30\n", "line 2: parent_prefix_tokens = 30 must be a whole number between 1 and"),
        ("0,40,2,-1,0,5,3\n", "line 2: parent_prefix_id = 5 needs a prefix_id >= 0"),
        ("0,40,2,1,20,-1,3\n", "line 2: parent_prefix_tokens = 3 needs a parent_prefix_id >= 0"),
        ("0,40,2,1,20,5,10\n1,40,2,1,20,6,10\n", "line 2 and .* line 3 share prefix_id 1"),
    ]
    for rows, match in cases:
        p = tmp_path / "bad.csv"
        p.write_text(head + rows)
        with pytest.raises(InputError, match=match):
            read_trace(p)
    p.write_text("arrival_s,prompt_tokens,output_tokens,parent_prefix_id,parent_prefix_tokens\n0,40,2,5,3\n")
    with pytest.raises(InputError, match="without prefix_id"):
        read_trace(p)
    p.write_text("arrival_s,prompt_tokens,output_tokens,prefix_id,shared_prefix_tokens,parent_prefix_id\n0,40,2,1,9,5\n")
    with pytest.raises(InputError, match="without parent_prefix_tokens"):
        read_trace(p)


def test_prompt_pool_on_system_prompts():
    """A pool of 6 entries over 2 system prompts of 32 tokens: entry e extends system prompt 6 + k at 32 tokens,
    k drawn per entry; every request's path holds its system prompt."""
    rng = np.random.default_rng(3)
    base = make_workload(np.arange(40) * 0.5, 100, 4)
    wl, warm = with_prompt_pool(rng, base, 6, 4, None, 32, 2)
    assert set(wl.parent_prefix_id.tolist()) <= {6, 7} and np.all(wl.parent_prefix_tokens == 32)
    assert np.all(wl.shared_prefix_tokens == 100) and warm.size >= 1
    tr = Simulation(wl, _dep(), Policy("continuous")).run()
    # 6 entries: each entry's first request misses only where its system prompt is not yet cached
    first = {}
    for i, q in enumerate(wl.prefix_id.tolist()):
        first.setdefault(q, i)
    firsts = sorted(first.values())
    sys_seen: set = set()
    for i in firsts:
        g = int(wl.parent_prefix_id[i])
        assert tr.prefix_hit_tokens[i] == (32 if g in sys_seen else 0)
        sys_seen.add(g)
    later = np.setdiff1d(np.arange(40), firsts)
    assert np.all(tr.prefix_hit_tokens[later] == 96)  # floor(99/16) = 6 blocks
    with pytest.raises(InputError, match="pool entry"):
        with_prompt_pool(rng, make_workload([0, 1], 20, 2), 2, 0, None, 32, 2)


def test_cli_prompt_pool_on_system_prompts_reports_the_tree_hits(run_cli):
    """`simulate --prompt-pool 20 --shared-prefix-tokens 512 --prefix-groups 2`: entries recur whole and share one of
    two system prompts; against the same pool without system prompts, the tree adds hits (a new entry finds its
    system prompt cached)."""
    import json

    base = ["simulate", "-m", "llama-3-8b", "-s", "dgx-h100", "-n", "300", "--rate", "5", "--prompt-pool", "20",
            "--lengths", "fixed", "--prompt-tokens", "1024", "--output-tokens", "16", "--json"]
    code, out, err = run_cli(*base, "--shared-prefix-tokens", "512", "--prefix-groups", "2")
    assert code == 0, err
    t = json.loads(out)
    code, out, err = run_cli(*base)
    assert code == 0, err
    f = json.loads(out)
    # 20 entries' first sends: flat misses all 20; the tree misses only the 2 system prompts' first entries
    assert f["prefix_hit_tokens"] == pytest.approx((300 - 20) * 1008)
    assert t["prefix_hit_tokens"] == pytest.approx((300 - 20) * 1008 + 18 * 512)
