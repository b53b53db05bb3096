"""Simulated requests per wall-clock second: the event loop (roofline.simulate) against a naive per-token
Python simulator (roofline.simulate.reference), both on the same step table, measured in the same run.

Workload: llama-3-70b on a DGX H100 (8 x H100, bf16), continuous batching (max 256 sequences, 8,192
tokens per pass), Poisson arrivals at 40 requests/s, lognormal prompts (median 512) and outputs
(median 200). Run: .venv/bin/python benchmarks/simulate.py [requests]
"""

from __future__ import annotations

import sys
import time

import numpy as np

from roofline.catalog import get_catalog
from roofline.simulate import Policy, Simulation, make_workload, roofline_deployment
from roofline.simulate.metrics import summarize
from roofline.simulate.reference import naive_continuous
from roofline.simulate.workload import lengths, poisson_arrivals


def workload(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return make_workload(poisson_arrivals(rng, 40.0, n), lengths(rng, n, "lognormal", 512, 1.0, maximum=4096),
                         lengths(rng, n, "lognormal", 200, 0.8, maximum=2000))


def main(n: int = 100_000, n_naive: int = 5_000) -> None:
    cat = get_catalog()
    dep = roofline_deployment(cat.model("llama-3-70b"), cat.system("dgx-h100"))
    pol = Policy("continuous", max_seqs=256, max_batched_tokens=8192)
    rows = []
    small = workload(n_naive)
    sim = Simulation(small, dep, pol)
    t0 = time.perf_counter()
    tr_small = sim.run()
    fast_small_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    first, finish = naive_continuous(small, sim.table, 256, 8192, sim.mixed)
    naive_s = time.perf_counter() - t0
    agree = float(np.max(np.abs(finish - tr_small.finish_s)))
    rows.append(("naive per-token loop", n_naive, naive_s, n_naive / naive_s))
    rows.append(("roofline.simulate", n_naive, fast_small_s, n_naive / fast_small_s))
    big = workload(n)
    t0 = time.perf_counter()
    sim_big = Simulation(big, dep, pol)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    tr = sim_big.run()
    run_s = time.perf_counter() - t0
    rows.append(("roofline.simulate", n, run_s, n / run_s))
    s = summarize(tr)
    print(f"{'simulator':<24}{'requests':>10}{'wall s':>10}{'requests/s':>14}")
    for name, k, secs, rate in rows:
        print(f"{name:<24}{k:>10,}{secs:>10.3f}{rate:>14,.0f}")
    print(f"speed-up over the naive loop (same {n_naive:,} requests): {naive_s / fast_small_s:,.1f}x; "
          f"max |finish time difference| {agree:.2e} s")
    print(f"{n:,} requests: {s.iterations:,} passes in {len(tr.seg_iters):,} segments; table built in "
          f"{build_s:.3f} s; {n / (run_s + build_s):,.0f} requests/s including the table")
    print(f"simulated: {s.makespan_s:,.0f} s of serving, {s.throughput_tokens_per_s:,.0f} tok/s, mean batch "
          f"{s.mean_batch:.1f}, TTFT p50 {s.ttft_p50_s * 1e3:.1f} ms, TPOT p50 {s.tpot_p50_s * 1e3:.2f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
