"""Benchmark: the vectorised planner vs a plain-Python loop of the same formula over the same candidates.

The planner's work is the points that go through the step model — every structurally valid layout ×
batch × weight/KV format, each through one decode loop and one prefill pass (engine.core on arrays) —
not the grid × domain counts, which only re-weigh those points (a broadcast). The baseline is the
engine's pure-roofline formula written out in plain Python (benchmarks/_plain.py, floats and `math`,
no NumPy, no input checks), timed on a random subset of the same points, checked equal to the
planner's TPOT, and extrapolated to all of them. `--realistic` (every candidate with the family's
factors) is timed too. Median of several runs; nothing passes or fails on one sample.
The grid includes issue 14's dimensions: MoE TP x EP (moe_tp 2, 4, 8), EP over whole racks with redundant
experts, and CP 1, 2, 4, 8 for prefill; the plain formula covers the layouts it can express (no copies, derived
MoE TP), its per-pass time is extrapolated to every pass the planner runs. `+disagg` adds the disaggregated
pools (planner._disaggregated). Issue 14 (h14c) adds Pope et al. 2022's attention by batch and 2D weight-stationary
layouts (planner.STYLES) and, in `realistic`, overlap: the plain formula covers heads/1D only.
Target (issues 3/13/14): DeepSeek-V3 on 1-16 GB200 NVL72 racks, new dimensions included, in < 2 s.
Usage: .venv/bin/python benchmarks/plan.py
"""

import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _plain import PlainPass  # noqa: E402
from _timing import median_time  # noqa: E402
from roofline.catalog import get_catalog  # noqa: E402
from roofline.planner import STYLES, Workload, _grid, plan  # noqa: E402
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
        t_real = median_time(lambda: plan(m, s, list(doms), wl, realistic=True, overlap_search=True), repeats)
        t_dis = median_time(lambda: plan(m, s, list(doms), wl, disaggregated=True), repeats)
        dtypes = [(w, k) for w in ("bf16", "fp8", "fp4") if w in s.accelerator.flops_per_s for k in ("bf16", "fp8")]
        base, vb, vc = _grid(m, s.chips, max(doms), (1, 2, 4, 8, 16), (2, 4, 8), (1, 2, 4, 8), tuple(range(len(STYLES))))
        batches = np.unique(np.round(np.geomspace(1, 2 ** 16, 49)))
        bi, bb = (a.ravel() for a in np.meshgrid(np.arange(len(base)), batches, indexing="ij"))
        keep = bb >= base[bi, 3] * base[bi, 2]
        n_dec = int(keep.sum()) * len(dtypes)  # decode points: base layout x batch x format
        n_pre = vb.size * len(dtypes)  # prefill points: (base, cp) x format
        n_points = p.counts["structurally_valid_layouts"] - p.counts["too_few_sequences"]  # candidates crossed
        # the plain formula knows TP, EP (1 or dividing DP, or TP·DP), PP, DP: time it on those layouts
        derived = np.where(base[:, 3] % base[:, 1] == 0, base[:, 0], 1)
        plain_ok = (base[:, 4] == 0) & (base[:, 5] == derived) & (base[:, 6] == 0)  # heads, 1D (STYLES[0])
        rng = np.random.default_rng(0)
        pick = rng.choice(np.flatnonzero(keep & plain_ok[bi]), size=subset, replace=True)
        plain = {d: PlainPass(m, s, dtype_bytes(d[0]), dtype_bytes(d[1]), s.accelerator.peak_flops(d[0]))
                 for d in dtypes}
        pls = list(plain.values())
        args = [(pls[k % len(pls)], *(int(base[bi[i], j]) for j in (0, 1, 2, 3)), float(bb[i]))
                for k, i in enumerate(pick)]

        def decode_loop():
            return [pl.step(t, e, p_, d, b, wl.decode_context) for pl, t, e, p_, d, b in args]

        def prefill_loop():
            return [pl.step(t, e, p_, d, float(d * p_), 0.0, float(wl.prompt), prefill=True)
                    for pl, t, e, p_, d, b in args]

        reps = max(2, repeats // 2)
        t_loop = (median_time(decode_loop, reps) * n_dec + median_time(prefill_loop, reps) * n_pre) / len(args)
        # the plain formula gives the planner's TPOT for the feasible candidates it can express
        c = p.columns
        ok = (c["redundant_experts"] == 0) & (c["moe_tp"] == np.where(c["dp"] % c["ep"] == 0, c["tp"], 1)) & (
            c["attention"] == "heads") & (c["weight_stationary"] == "1d")
        for j in np.flatnonzero(ok)[:25]:
            w, k = c["weights_dtype"][j], c["kv_dtype"][j]
            got = plain[(w, k)].step(int(c["tp"][j]), int(c["ep"][j]), int(c["pp"][j]), int(c["dp"][j]),
                                     float(c["batch"][j]), wl.decode_context)
            assert abs(got / c["tpot_s"][j] - 1) < 1e-9, "plain-Python formula and the planner disagree"
        rows.append((f"{model_id} on {min(doms)}-{max(doms)} x {system_id}", n_points, p.counts["candidates"],
                     p.counts["pareto"], t_vec, t_loop, t_loop / t_vec, t_real, t_dis))
    print(f"{'search':38s} {'points':>8s} {'grid x domains':>14s} {'pareto':>7s} {'vectorised s':>13s} "
          f"{'py loop s (est.)':>16s} {'ratio':>7s} {'realistic s':>12s} {'+disagg s':>10s}")
    for r in rows:
        print(f"{r[0]:38s} {r[1]:8,d} {r[2]:14,d} {r[3]:7d} {r[4]:13.3f} {r[5]:16.2f} {r[6]:7.0f}x {r[7]:12.3f} {r[8]:10.3f}")
    print(f"points = candidates: (layout, CP) x batch x format, from decode passes per layout x batch x format and "
          f"prefill passes per (layout, CP) x format; the plain-Python loop (decode and prefill timed on {subset} "
          f"random points each, extrapolated to those pass counts); median of {repeats} runs")
    first = rows[0]
    print(f"target < 2 s for DeepSeek-V3 on 1-16 NVL72: pure {first[4]:.3f} s, realistic {first[7]:.3f} s, with "
          f"disaggregated pools {first[8]:.3f} s — {'met' if max(first[4], first[7], first[8]) < 2 else 'MISSED'}")


if __name__ == "__main__":
    main()
