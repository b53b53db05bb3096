"""Benchmark: the vectorised planner vs a plain-Python loop of the same formula over the same candidates.

The planner's work is the points that go through the step model — every structurally valid layout ×
batch × weight/KV format, each through one decode loop and one prefill pass (engine.core on arrays) —
not the grid × domain counts, which only re-weigh those points (a broadcast). The baseline is the
engine's pure-roofline formula written out in plain Python (benchmarks/_plain.py, floats and `math`,
no NumPy, no input checks), timed on a random subset of the same points, checked equal to the
planner's TPOT, and extrapolated to all of them. `--realistic` (every candidate with the family's
factors) is timed too. Median of several runs; nothing passes or fails on one sample.
Target (issue 3/13): DeepSeek-V3 on 1-16 GB200 NVL72 racks in < 2 s.
Usage: .venv/bin/python benchmarks/plan.py
"""

import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _plain import PlainPass  # noqa: E402
from _timing import median_time  # noqa: E402
from roofline.catalog import get_catalog  # noqa: E402
from roofline.planner import Workload, _grid, plan  # noqa: E402
from roofline.units import dtype_bytes  # noqa: E402


def main(subset: int = 2000, repeats: int = 5) -> None:
    cat = get_catalog()
    rows = []
    for model_id, system_id, doms in (("deepseek-v3", "gb200-nvl72", range(1, 17)),
                                      ("deepseek-v3", "gb200-nvl72", range(1, 5)),
                                      ("llama-3-70b", "dgx-h100", [1])):
        m, s = cat.model(model_id), cat.system(system_id)
        wl = Workload(1024, 1024)
        p = plan(m, s, list(doms), wl)
        t_vec = median_time(lambda: plan(m, s, list(doms), wl), repeats)
        t_real = median_time(lambda: plan(m, s, list(doms), wl, realistic=True), repeats)
        dtypes = [(w, k) for w in ("bf16", "fp8", "fp4") if w in s.accelerator.flops_per_s for k in ("bf16", "fp8")]
        tp, ep, pp, dp, red, batch, di = _grid(m, s.chips, max(doms), (1, 2, 4, 8, 16),
                                          np.unique(np.round(np.geomspace(1, 2 ** 16, 49))), dtypes)
        keep = batch >= dp * pp
        n_points = int(keep.sum())
        rng = np.random.default_rng(0)
        pick = rng.choice(np.flatnonzero(keep), size=min(subset, n_points), replace=False)
        plain = {d: PlainPass(m, s, dtype_bytes(d[0]), dtype_bytes(d[1]), s.accelerator.peak_flops(d[0]))
                 for d in dtypes}
        pick = pick[red[pick] == 0]  # the plain formula has no redundant expert slots
        args = [(plain[dtypes[di[i]]], int(tp[i]), int(ep[i]), int(pp[i]), int(dp[i]), float(batch[i])) for i in pick]

        def loop():
            out = []
            for pl, t, e, p_, d, b in args:
                out.append(pl.step(t, e, p_, d, b, wl.decode_context))  # decode loop (TPOT)
                pl.step(t, e, p_, d, float(d * p_), 0.0, float(wl.prompt), prefill=True)  # prefill (TTFT)
            return out

        t_loop = median_time(loop, max(2, repeats // 2)) / len(pick) * n_points
        # the plain formula gives the planner's TPOT for the feasible candidates it kept
        c = p.columns
        for j in np.flatnonzero(c["redundant_experts"] == 0)[:25]:
            w, k = c["weights_dtype"][j], c["kv_dtype"][j]
            got = plain[(w, k)].step(int(c["tp"][j]), int(c["ep"][j]), int(c["pp"][j]), int(c["dp"][j]),
                                     float(c["batch"][j]), wl.decode_context)
            assert abs(got / c["tpot_s"][j] - 1) < 1e-9, "plain-Python formula and the planner disagree"
        rows.append((f"{model_id} on {min(doms)}-{max(doms)} x {system_id}", n_points, p.counts["candidates"],
                     p.counts["pareto"], t_vec, t_loop, t_loop / t_vec, t_real))
    print(f"{'search':38s} {'points':>8s} {'grid x domains':>14s} {'pareto':>7s} {'vectorised s':>13s} "
          f"{'py loop s (est.)':>16s} {'ratio':>7s} {'realistic s':>12s}")
    for r in rows:
        print(f"{r[0]:38s} {r[1]:8,d} {r[2]:14,d} {r[3]:7d} {r[4]:13.3f} {r[5]:16.2f} {r[6]:7.0f}x {r[7]:12.3f}")
    print(f"points = layouts x batches x formats through the step model (decode + prefill each); the plain-Python "
          f"loop timed on {subset} random points per search, extrapolated; median of {repeats} runs")
    first = rows[0]
    print(f"target < 2 s for DeepSeek-V3 on 1-16 NVL72: pure {first[4]:.3f} s, realistic {first[7]:.3f} s — "
          f"{'met' if max(first[4], first[7]) < 2 else 'MISSED'}")


if __name__ == "__main__":
    main()
