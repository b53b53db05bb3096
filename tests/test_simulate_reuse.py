"""How long reused prefix blocks waited (core Trace.reuse_*, metrics.reuse_intervals): by hand on small traces, the
totals under Hypothesis (the reusable tokens are what earlier requests computed, whatever HBM kept; the hit part is
the cache's hits), and the cheapest tier for the waits in `simulate`'s output."""

import json

import numpy as np
import pytest
from hypothesis import given, settings

from helpers import prefixed_workload, sequential_runs
from roofline.simulate import ConstantStep, Deployment, Policy, Simulation
from roofline.simulate.metrics import prefix_cache_metrics, reuse_intervals

STEP = 0.01


def _run(wl, cap, **kw):
    return Simulation(wl, Deployment(ConstantStep(STEP), kv_capacity_tokens=cap), Policy("continuous"), **kw).run()


def test_reuse_intervals_by_hand():
    """Prompt A (130 tokens: 8 full blocks of 16) computed by request 0, which finishes at 0.02 s; request 1 (no
    prefix) evicts 5 of its blocks; request 2 repeats A at 2 s: 128 tokens were reusable, idle for 1.98 s, 48 of them
    hit. With room for all, a repeat sent while request 0 still runs (0.005 s) reuses them in use (0 s), and a third at
    1 s finds them idle since request 1's finish at 0.31 s: 0.69 s."""
    tr = _run(prefixed_workload([0, 1, 2], [130, 200, 130], 2, [1, -1, 1], [130, 0, 130]), 250.0)
    assert tr.reuse_interval_s.tolist() == pytest.approx([1.98]) and tr.reuse_tokens.tolist() == [128]
    assert tr.reuse_hit_tokens.tolist() == [48]
    m = prefix_cache_metrics(tr)
    assert m["prefix_reuse_in_use_share"] == 0 and m["prefix_reuse_idle_p50_s"] == pytest.approx(1.98)
    assert m["prefix_reuse_idle_hit_share"] == pytest.approx(48 / 128) and m["prefix_reusable_tokens"] == 128
    tr = _run(prefixed_workload([0, 0.005, 1], [130, 130, 130], 30, [1, 1, 1], [130, 130, 130]), 1000.0)
    assert tr.reuse_interval_s.tolist() == pytest.approx([0.0, 0.69]) and tr.reuse_tokens.tolist() == [128, 128]
    m = prefix_cache_metrics(tr)
    assert m["prefix_reuse_in_use_share"] == 0.5 and m["prefix_reuse_idle_p90_s"] == pytest.approx(0.69)


def test_token_weighted_percentiles_by_hand():
    """Waits 0 (100 tokens), 1 s (10), 2 s (30), 5 s (60): 100 of 200 in use; over the idle 100 tokens the median is
    the first wait whose cumulative weight reaches half (10 + 30 = 40 < 50 <= 100: 5 s), the 90th 5 s too; with
    nothing idle the percentiles are None."""
    r = reuse_intervals(np.array([0.0, 1.0, 2.0, 5.0]), np.array([100.0, 10, 30, 60]), np.array([100.0, 10, 0, 0]))
    assert r["prefix_reuse_in_use_share"] == 0.5 and r["prefix_reuse_idle_p50_s"] == 5.0
    assert r["prefix_reuse_idle_p90_s"] == 5.0 and r["prefix_reuse_idle_hit_share"] == pytest.approx(0.1)
    r = reuse_intervals(np.array([0.0, 1.0, 2.0]), np.array([10.0, 10, 30]), np.zeros(3))
    assert r["prefix_reuse_idle_p50_s"] == 2.0 and r["prefix_reuse_idle_p90_s"] == 2.0
    assert reuse_intervals(np.zeros(2), np.ones(2), np.ones(2))["prefix_reuse_idle_p50_s"] is None


@settings(max_examples=60, deadline=None)
@given(sequential_runs())
def test_reusable_tokens_are_what_earlier_requests_computed(case):
    """Requests 10 s apart, whole prompts as prefixes: request j could reuse min(its full blocks, the most any earlier
    request of its prefix computed), however little HBM kept, idle since the last such request finished; its hit part
    is its prefix-cache hit. So the totals: reusable = Σ that, hit = the cache's hits."""
    prefixes, prompts, block, cap = case
    n = len(prompts)
    wl = prefixed_workload(np.arange(n) * 10.0, prompts, 2, prefixes, prompts)
    tr = _run(wl, float(cap), block_tokens=block)
    best: dict = {}
    want, gaps = 0, []
    for j, (p, length) in enumerate(zip(prefixes, prompts)):
        own = (length - 1) // block
        if min(own, best.get(p, (0, 0))[0]) > 0:
            want += min(own, best[p][0]) * block
            gaps.append(10.0 * j - tr.finish_s[best[p][1]])
        if own >= best.get(p, (0, 0))[0]:
            best[p] = (own, j)
        elif p in best:
            best[p] = (best[p][0], j)
    assert tr.reuse_tokens.sum() == want
    assert tr.reuse_hit_tokens.sum() == tr.prefix_hit_tokens.sum()
    assert np.all(tr.reuse_hit_tokens <= tr.reuse_tokens)
    assert sorted(tr.reuse_interval_s.tolist()) == pytest.approx(sorted(gaps))


def test_cli_names_the_cheapest_tier_for_the_waits(run_cli):
    """A pool of 60 prompts of 3,000 tokens cycled at 2 requests/s: each is reused about 30 s after its last use; the
    table and --json give the waits and `roofline tiers`' cheapest tier for them."""
    from roofline.catalog.prices import memory_tiers
    from roofline.tiers import tier_for_hold

    code, out, err = run_cli("simulate", "-m", "llama-3.1-8b", "-s", "dgx-h100", "--gpus", "1", "-n", "300", "--rate",
                             "2", "--prompt-pool", "60", "--lengths", "fixed", "--prompt-tokens", "3000",
                             "--output-tokens", "20", "--kv-memory-fraction", "0.22", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert 20 < d["prefix_reuse_idle_p50_s"] < 40 and d["prefix_reuse_idle_p50_s"] <= d["prefix_reuse_idle_p90_s"]
    tiers = list(memory_tiers().values())
    assert d["prefix_reuse_tier_p50"] == tiers[int(tier_for_hold(d["prefix_reuse_idle_p50_s"], tiers))].id
    assert 0 <= d["prefix_reuse_idle_hit_share"] < 0.5
