"""Benchmark: the vectorised planner vs a plain Python loop over the same candidates.

Target (issue 3): DeepSeek-V3 on 1-16 GB200 NVL72 racks in < 2 s. The last column times the same search
with --realistic (every candidate through the efficiency model, efficiency.refine). The loop baseline calls
parallel_step (decode + prefill) once per candidate with scalars on a random subset of the same
grid; its total is extrapolated to the full candidate count. Both are measured in this run.
Usage: .venv/bin/python benchmarks/plan.py
"""

import time

import numpy as np

from roofline import parallel as P
from roofline.catalog import get_catalog
from roofline.parallel_step import parallel_step
from roofline.planner import Workload, _grid, plan


def main(subset: int = 400, repeats: int = 3) -> None:
    cat = get_catalog()
    rows = []
    for model_id, system_id, doms in (("deepseek-v3", "gb200-nvl72", range(1, 17)),
                                      ("deepseek-v3", "gb200-nvl72", range(1, 5)),
                                      ("llama-3-70b", "dgx-h100", [1])):
        m, s = cat.model(model_id), cat.system(system_id)
        wl = Workload(1024, 1024)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            p = plan(m, s, list(doms), wl)
            times.append(time.perf_counter() - t0)
        t_vec = min(times)
        times_real = []  # --realistic: the same grid through efficiency.refine
        for _ in range(repeats):
            t0 = time.perf_counter()
            plan(m, s, list(doms), wl, realistic=True)
            times_real.append(time.perf_counter() - t0)
        t_real = min(times_real)
        # the same candidate grid, evaluated one candidate at a time
        dtypes = [(w, k) for w in ("bf16", "fp8", "fp4") if w in s.accelerator.flops_per_s for k in ("bf16", "fp8")]
        tp, ep, pp, dp, batch, di = _grid(m, s.chips, max(doms), (1, 2, 4, 8, 16),
                                          np.unique(np.round(np.geomspace(1, 2 ** 16, 49))), dtypes)
        keep = batch >= dp * pp
        n_cand = int(keep.sum())
        rng = np.random.default_rng(0)
        pick = rng.choice(np.flatnonzero(keep), size=min(subset, n_cand), replace=False)
        t0 = time.perf_counter()
        for i in pick:
            w, k = dtypes[di[i]]
            kw = dict(tp=int(tp[i]), ep=int(ep[i]), pp=int(pp[i]), dp=int(dp[i]), weights_dtype=w, kv_dtype=k,
                      check=False)
            parallel_step(m, s, float(batch[i]), wl.decode_context, **kw)
            parallel_step(m, s, float(dp[i] * pp[i]), 0.0, phase="prefill", prompt=wl.prompt, **kw)
            P.memory_per_gpu(m, tp[i], ep[i], pp[i], dp[i], batch[i], wl.prompt + wl.output)
        t_loop = (time.perf_counter() - t0) / len(pick) * n_cand
        rows.append((f"{model_id} on {min(doms)}-{max(doms)} x {system_id}", n_cand, p.counts["candidates"],
                     p.counts["pareto"], t_vec, t_loop, t_loop / t_vec, t_real))
    print(f"{'search':42s} {'layouts':>8s} {'candidates':>10s} {'pareto':>7s} {'vectorised s':>13s} "
          f"{'loop s (est.)':>14s} {'ratio':>7s} {'realistic s':>12s}")
    for r in rows:
        print(f"{r[0]:42s} {r[1]:8,d} {r[2]:10,d} {r[3]:7d} {r[4]:13.3f} {r[5]:14.1f} {r[6]:7.0f}x {r[7]:12.3f}")
    print(f"loop baseline: {subset} random candidates per search timed, extrapolated; target < 2 s for the first row")


if __name__ == "__main__":
    main()
