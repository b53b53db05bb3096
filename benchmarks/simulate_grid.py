"""Scenario grids on Dask: speed-up from 1 to 2 workers on a 16-scenario grid, per-task overhead, memory
per worker, and the simulator's memory at 10^6 requests — all measured in this run.

Grid: llama-3-70b on a DGX H100, rates 10/20/30/40 requests/s × layouts pool/TP4 DP2 × policies
continuous/chunked, N requests each (lognormal 1,024/256). 1 worker = in this process; 2 workers = a
LocalCluster of 2 processes (started once, outside the timing; its start-up time is printed apart), both
warmed up on a small grid first. Median of R runs each, the two alternated; CPU seconds per scenario are measured inside the
tasks (process_time of the process running them), so they show the executor's own cost even when other
work on the machine takes the cores. Run: .venv/bin/python benchmarks/simulate_grid.py [N] [R]
"""

from __future__ import annotations

import os
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


def _timed(ctx, sc):
    """run_scenario plus the CPU seconds its process spent on it (all its threads)."""
    from roofline.simulate.grid import run_scenario

    c = time.process_time()
    row = run_scenario(ctx, sc)
    return row, time.process_time() - c, os.getpid()


def _run(ctx, grid, **kw):
    from roofline.executors import run_tasks

    c = time.process_time()
    t = time.perf_counter()
    out = run_tasks(_timed, [(ctx, g) for g in grid], [g.label for g in grid], **kw)
    wall = time.perf_counter() - t
    client_cpu = time.process_time() - c
    rows, cpu, pid = zip(*out)
    per_process: dict = {}
    for c_, p_ in zip(cpu, pid):
        per_process[p_] = per_process.get(p_, 0.0) + c_
    return list(rows), wall, sum(cpu), client_cpu, max(per_process.values())


def _pool_task(args):
    return _timed(*args)


def _run_pool(pool, ctx, grid):
    """The same grid on a plain concurrent.futures process pool: what two processes give on this machine
    now, without Dask (the control for the LocalCluster's figure)."""
    t = time.perf_counter()
    out = list(pool.map(_pool_task, [(ctx, g) for g in grid]))
    return [r for r, _, _ in out], time.perf_counter() - t


def _rss_mb():
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def main(n: int = 20_000, repeats: int = 3) -> None:
    from distributed import Client

    from roofline.catalog import get_catalog
    from roofline.executors import local_cluster, run_tasks
    from roofline.simulate.grid import GridContext, parse_grid

    cat = get_catalog()
    ctx = GridContext(cat.model("llama-3-70b"), cat.system("dgx-h100"))
    grid = parse_grid("rate=10,20,30,40;layout=pool,TP4 DP2;policy=continuous,chunked", {"requests": n})
    warm = parse_grid("rate=10,20;layout=pool,TP4 DP2", {"requests": 200})  # imports, catalog, caches
    _run(ctx, warm, workers=1)
    t = time.perf_counter()
    cluster = local_cluster(2)  # what `--workers 2` starts
    client = Client(cluster)
    start_s = time.perf_counter() - t
    addr = cluster.scheduler_address
    _run(ctx, warm, scheduler=addr)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))
    _run_pool(pool, ctx, warm)
    r1, r2, r3 = [], [], []
    for _ in range(repeats):  # alternated, so that a change in the machine's load falls on all three
        r1.append(_run(ctx, grid, workers=1))
        r2.append(_run(ctx, grid, scheduler=addr))
        r3.append(_run_pool(pool, ctx, grid))
    pool.shutdown()
    rss = client.run(_rss_mb)
    k = 200
    t = time.perf_counter()
    run_tasks(_noop, [(i,) for i in range(k)], [str(i) for i in range(k)], scheduler=addr)
    overhead_s = (time.perf_counter() - t) / k
    client.close()
    cluster.close()
    t1, t2 = [r[1] for r in r1], [r[1] for r in r2]
    m1, m2 = statistics.median(t1), statistics.median(t2)
    cpu1 = statistics.median(r[2] for r in r1) / len(grid)
    cpu2 = statistics.median(r[2] for r in r2) / len(grid)
    client2 = statistics.median(r[3] for r in r2)
    # the grid's CPU time in one process over the busiest worker's: the speed-up two free cores would give
    cpu_speedup = statistics.median(a[2] / b[4] for a, b in zip(r1, r2))
    print(f"16-scenario grid, {n:,} requests each ({16 * n:,} in all), median of {repeats} runs")
    print(f"{'executor':<34}{'wall s':>10}{'requests/s':>14}{'CPU s/scenario':>16}")
    print(f"{'1 worker (in process)':<34}{m1:>10.2f}{16 * n / m1:>14,.0f}{cpu1:>16.3f}")
    print(f"{'2 workers (LocalCluster)':<34}{m2:>10.2f}{16 * n / m2:>14,.0f}{cpu2:>16.3f}")
    m3 = statistics.median(r[1] for r in r3)
    print(f"{'2 processes (ProcessPoolExecutor)':<34}{m3:>10.2f}{16 * n / m3:>14,.0f}")
    # speed-ups as the median of the ratios of runs made back to back (robust to the machine's load drifting)
    s2 = statistics.median(a[1] / b[1] for a, b in zip(r1, r2))
    s3 = statistics.median(a[1] / c[1] for a, c in zip(r1, r3))
    print(f"speed-up 1 -> 2 workers: {s2:.2f}x, median of paired runs (1 worker {', '.join(f'{x:.2f}' for x in t1)}; "
          f"2 workers {', '.join(f'{x:.2f}' for x in t2)} s); rows identical: {r1[0][0] == r2[0][0] == r3[0][0]}")
    print(f"control, a plain pool of 2 processes: {s3:.2f}x (what two processes of this session get now)")
    print(f"CPU per scenario in a worker / in process: {cpu2 / cpu1:.2f}; client-side CPU with 2 workers "
          f"{client2:.2f} s per grid; machine load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"CPU-time speed-up (grid CPU s in process / busiest worker's CPU s): {cpu_speedup:.2f}x, an estimate "
          f"of the wall speed-up on two idle cores, not a wall-clock measurement (on a shared machine the "
          f"kernel shares CPU between sessions, so a second process of this one gains less than a core)")
    print(f"LocalCluster start-up (2 processes): {start_s:.2f} s, not in the timings above")
    print(f"per-task overhead on the 2-worker cluster: {overhead_s * 1e3:.2f} ms ({k} no-op tasks)")
    print("memory per worker after the grid (RSS): " + ", ".join(f"{v:,.0f} MB" for v in rss.values()))
    out = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT], capture_output=True, text=True, check=True)
    before, after = (float(x) for x in out.stdout.split())
    print(f"simulator at 10^6 requests (benchmarks/simulate.py workload): peak RSS {after:,.0f} MB "
          f"({after - before:,.0f} MB over the process before the run)")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
