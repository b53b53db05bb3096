"""Scenario grids on Dask: speed-up from 1 to 2 workers on a 16-scenario grid, per-task overhead, memory
per worker, and the simulator's memory at 10^6 requests — all measured in this run.

Grid: llama-3-70b on a DGX H100, rates 10/20/30/40 requests/s × layouts pool/TP4 DP2 × policies
continuous/chunked, N requests each (lognormal 1,024/256). 1 worker = in this process; 2 workers = a
LocalCluster of 2 processes (started once, outside the timing; its start-up time is printed apart).
Median of R runs each. Run: .venv/bin/python benchmarks/simulate_grid.py [N] [R]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

MEMORY_SCRIPT = r"""
import resource, sys
sys.path.insert(0, "benchmarks")
from simulate import workload
from roofline.catalog import get_catalog
from roofline.simulate import Policy, Simulation, roofline_deployment
cat = get_catalog()
dep = roofline_deployment(cat.model("llama-3-70b"), cat.system("dgx-h100"))
wl = workload(1_000_000)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tr = Simulation(wl, dep, Policy("continuous", max_seqs=256, max_batched_tokens=8192)).run()
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(before / 1024, after / 1024)
"""


def _noop(i):
    return i


def _rss_mb():
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def main(n: int = 20_000, repeats: int = 3) -> None:
    from distributed import Client, LocalCluster

    from roofline.catalog import get_catalog
    from roofline.executors import run_tasks
    from roofline.simulate.grid import GridContext, parse_grid, run_grid

    cat = get_catalog()
    ctx = GridContext(cat.model("llama-3-70b"), cat.system("dgx-h100"))
    grid = parse_grid("rate=10,20,30,40;layout=pool,TP4 DP2;policy=continuous,chunked", {"requests": n})
    t1 = []
    for _ in range(repeats):
        t = time.perf_counter()
        rows1 = run_grid(ctx, grid, workers=1)
        t1.append(time.perf_counter() - t)
    t = time.perf_counter()
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None,
                           worker_dashboard_address=None, silence_logs=50)
    client = Client(cluster)
    start_s = time.perf_counter() - t
    addr = cluster.scheduler_address
    t2 = []
    for _ in range(repeats):
        t = time.perf_counter()
        rows2 = run_grid(ctx, grid, scheduler=addr)
        t2.append(time.perf_counter() - t)
    rss = client.run(_rss_mb)
    k = 200
    t = time.perf_counter()
    run_tasks(_noop, [(i,) for i in range(k)], [str(i) for i in range(k)], scheduler=addr)
    overhead_s = (time.perf_counter() - t) / k
    client.close()
    cluster.close()
    m1, m2 = statistics.median(t1), statistics.median(t2)
    print(f"16-scenario grid, {n:,} requests each ({16 * n:,} in all), median of {repeats} runs")
    print(f"{'executor':<34}{'wall s':>10}{'requests/s':>14}")
    print(f"{'1 worker (in process)':<34}{m1:>10.2f}{16 * n / m1:>14,.0f}")
    print(f"{'2 workers (LocalCluster)':<34}{m2:>10.2f}{16 * n / m2:>14,.0f}")
    print(f"speed-up 1 -> 2 workers: {m1 / m2:.2f}x (runs: 1 worker {', '.join(f'{x:.2f}' for x in t1)}; "
          f"2 workers {', '.join(f'{x:.2f}' for x in t2)} s); rows identical: {rows1 == rows2}")
    print(f"LocalCluster start-up (2 processes): {start_s:.2f} s, not in the timings above")
    print(f"per-task overhead on the 2-worker cluster: {overhead_s * 1e3:.2f} ms ({k} no-op tasks)")
    print("memory per worker after the grid (RSS): " + ", ".join(f"{v:,.0f} MB" for v in rss.values()))
    out = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT], capture_output=True, text=True, check=True)
    before, after = (float(x) for x in out.stdout.split())
    print(f"simulator at 10^6 requests (benchmarks/simulate.py workload): peak RSS {after:,.0f} MB "
          f"({after - before:,.0f} MB over the process before the run)")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
