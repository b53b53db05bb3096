"""What per-stage and per-window metrics cost next to the simulation they summarise, measured in the same run.

Workload: llama-3-70b on a DGX H100 (8 x H100, bf16), continuous batching (max 256 sequences), a staged
profile of three stages (20, 40 and 30 requests/s) sized to give about N requests in all, lognormal prompts
(median 512) and outputs (median 200). Timed (best of 3, the machine is shared): the event loop's run, the
whole-run summary (metrics.summarize), the stages (metrics.stage_metrics: latency percentiles per stage, busy
time and batch from the segments, the wait trend per stage) and 10 s windows (metrics.windows).
Run: .venv/bin/python benchmarks/simulate_stages.py [requests]   (default 1,000,000)
"""

from __future__ import annotations

import sys
import time

import numpy as np

from roofline.catalog import get_catalog
from roofline.simulate import Policy, Simulation, roofline_deployment
from roofline.simulate.metrics import stage_metrics, summarize, windows
from roofline.simulate.workload import staged


def best(fn, repeats: int = 3):
    out, dt = None, float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        dt = min(dt, time.perf_counter() - t0)
    return out, dt


def main(n: int = 1_000_000) -> None:
    cat = get_catalog()
    dep = roofline_deployment(cat.model("llama-3-70b"), cat.system("dgx-h100"))
    rates = (20.0, 40.0, 30.0)
    dur = n / sum(rates)
    stages = [(r, dur) for r in rates]
    wl = staged(np.random.default_rng(0), stages, lengths_kind="lognormal", prompt_tokens=512, output_tokens=200,
                sigma=1.0, max_context=8192)
    t0 = time.perf_counter()
    tr = Simulation(wl, dep, Policy("continuous", max_seqs=256)).run()
    sim_s = time.perf_counter() - t0
    _, sum_s = best(lambda: summarize(tr))
    st, st_s = best(lambda: stage_metrics(tr, stages, 40.0))
    win, win_s = best(lambda: windows(tr, 10.0))
    print(f"{wl.n:,} requests, {tr.seg_start_s.size:,} segments, {len(st)} stages, {len(win):,} windows of 10 s")
    print(f"simulation     {sim_s:8.3f} s")
    print(f"summarize      {sum_s:8.3f} s  ({sum_s / sim_s:.3f} x the simulation)")
    print(f"stage_metrics  {st_s:8.3f} s  ({st_s / sim_s:.3f} x the simulation, {st_s / sum_s:.2f} x summarize)")
    print(f"windows        {win_s:8.3f} s  ({win_s / sim_s:.3f} x the simulation, {win_s / sum_s:.2f} x summarize)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
