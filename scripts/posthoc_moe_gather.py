"""Post hoc what-if of the MoE token gather across attention groups (layout.MOE_GATHERS_GROUPS) on serving set al.

    .venv/bin/python scripts/posthoc_moe_gather.py [--set al] [--workers 2]

Set al's 30 llm-benchmaq gpt-oss-120b runs were registered with `layout: {tp: 4, dp: 2, expert_tp: 8}` while the
MoE layer's communication was one all-reduce of a DP group's own tokens over the 8 GPUs. vLLM (without expert
parallelism) instead all-gathers both DP groups' tokens into every MoE layer, reduce-scatters the expert outputs
back and all-reduces over the TP group (layout.MOE_GATHERS_GROUPS). Each run is simulated at seed 0 with the central
factors both ways and scored against the measured values (mean APE of the modelled metrics per family, median signed
error of TTFT and TPOT). The registered predictions stay what docs/validation_serving_al.md scores; this is a
disclosed post hoc check (found after set al's values were seen), printed, never written into a set.
"""

from __future__ import annotations

import argparse
import collections
from concurrent.futures import ProcessPoolExecutor

import numpy as np


def _one(args):
    from roofline import layout as LY
    from roofline.validate import serving as S

    out = []
    for label, flag in (("as registered", False), ("tokens gathered", True)):
        LY.MOE_GATHERS_GROUPS = flag
        out += [(label, k, e) for k, e in S.what_if_errors(*args)[1]]
    return out


def main() -> None:
    from roofline.validate import serving as S

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", default="al")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    jobs = [(a.set, r["id"]) for r in S.load_runs(set_name=a.set)["runs"] if r.get("layout")]
    with ProcessPoolExecutor(a.workers) as ex:
        rows = [x for part in ex.map(_one, jobs) for x in part]
    print(f"{len(jobs)} runs of set {a.set} with a `layout`; seed 0, central factors")
    for label in ("as registered", "tokens gathered"):
        fam: dict[str, list[float]] = collections.defaultdict(list)
        for lab, metric, err in rows:
            if lab == label:
                fam[S.FAMILY[metric.split("_")[0]]].append(err)
        signed = {k: np.median([e for lab, m, e in rows if lab == label and m == k]) for k in ("ttft_mean", "tpot_mean")}
        cells = "  ".join(f"{f} {100 * np.mean(np.abs(v)):.1f}%" for f, v in sorted(fam.items()))
        print(f"{label:>15}: mean APE {cells}; median error TTFT {100 * signed['ttft_mean']:+.1f}%, "
              f"TPOT {100 * signed['tpot_mean']:+.1f}%")


if __name__ == "__main__":
    main()
