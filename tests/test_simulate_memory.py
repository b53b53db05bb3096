"""The simulator's memory layout (issue 18): segments and per-request state in preallocated NumPy arrays.
Growing the segment columns and pruning the preemption stack must not change any result; the loop's
peak allocation per request stays a few hundred bytes (lists of Python objects took ~650)."""

import tracemalloc
from dataclasses import replace

import numpy as np
import pytest

from roofline.catalog import get_catalog
from roofline.simulate import Policy, Simulation, core, make_workload, roofline_deployment
from roofline.simulate.workload import lengths, poisson_arrivals


def _workload(n, seed=4, rate=40.0):
    rng = np.random.default_rng(seed)
    return make_workload(poisson_arrivals(rng, rate, n), lengths(rng, n, "lognormal", 512, 1.0, maximum=4096),
                         lengths(rng, n, "lognormal", 200, 0.8, maximum=2000))


@pytest.fixture(scope="module")
def dep():
    cat = get_catalog()
    return roofline_deployment(cat.model("llama-3-70b"), cat.system("dgx-h100"))


def _arrays(tr):
    return {k: getattr(tr, k) for k in tr.__dataclass_fields__ if isinstance(getattr(tr, k), np.ndarray)}


@pytest.mark.parametrize("policy", [Policy("continuous"), Policy("chunked", max_batched_tokens=2048)])
def test_growing_segments_and_pruning_the_stack_change_nothing(dep, monkeypatch, policy):
    """A small KV pool (preemptions), 4,000 requests: default capacities vs columns that start at 1,024
    rows and double three times, and a stack pruned every 8 admissions."""
    small = replace(dep, kv_capacity_tokens=60_000.0)
    wl = _workload(4000)
    ref = Simulation(wl, small, policy, seed=1).run()
    monkeypatch.setattr(core, "SEGMENTS_PER_REQUEST", 0)
    monkeypatch.setattr(core, "PRUNE_STACK_AT", 8)
    grown = Simulation(wl, small, policy, seed=1).run()
    assert ref.preemptions.sum() > 100 and len(ref.seg_iters) > 4 * 1024
    a, b = _arrays(ref), _arrays(grown)
    for k in a:
        assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k


def test_loop_allocates_a_few_hundred_bytes_per_request(dep):
    n = 3_000
    sim = Simulation(_workload(n, seed=0), dep, Policy("continuous"))
    tracemalloc.start()
    tr = sim.run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    segs = len(tr.seg_iters)
    # per request: 8 int64/float64 state arrays + 4 iteration indices (96 B), trace times (24 B); per
    # segment 7 columns (56 B), allocated for 2 per request but touched only where written
    assert peak / n < 400, (peak / n, segs / n)
