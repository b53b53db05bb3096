"""Post hoc what-if of the L40S's achieved bandwidth and compute on set cl's baseline runs (no CPU tier).

    .venv/bin/python scripts/posthoc_l40s_efficiency.py

Set cl (llm-d's offload evaluation on 2x L40S) came out too fast by a quarter to a half at concurrency 50. The catalog's
l40s row takes the NVIDIA family's efficiency factors, fitted on H100-class parts. This script scales the row's datasheet
bandwidth and dense compute (0.75 and 0.7, alone and together), simulates each baseline run at seed 0 with the central
factors, and prints the mean APE and median error per metric family against the measured values. Found after the set's
values were seen: printed, never written into a set or the catalog (docs/simulator.md, "Set cl").
"""

from __future__ import annotations

import dataclasses

import numpy as np


def main() -> None:
    from roofline import catalog as C
    from roofline.validate import serving as S

    doc = S.load_runs(set_name="cl")
    meas = S._load(S.set_paths("cl")["measured"])["runs"]
    cat = C.get_catalog()
    acc, sysrec = cat.accelerators["l40s"], cat.systems["l40s-2"]
    runs = [r for r in doc["runs"] if "kv_offload" not in r]
    print(f"{len(runs)} baseline runs of set cl, seed 0, central factors: mean APE (median error) per family")
    for bw, fl in ((1.0, 1.0), (0.75, 1.0), (1.0, 0.7), (0.75, 0.7)):
        a = dataclasses.replace(acc, hbm_bytes_per_s=acc.hbm_bytes_per_s * bw,
                                flops_per_s={k: v * fl for k, v in acc.flops_per_s.items()})
        cat.accelerators["l40s"], cat.systems["l40s-2"] = a, dataclasses.replace(sysrec, accelerator=a)
        errs: dict[str, list[float]] = {"ttft": [], "tpot": [], "e2e": []}
        for r in runs:
            out = S.simulate_run(r, doc["datasets"][r["dataset"]])
            for m in r["metrics"]:
                errs[m.split("_")[0]].append(out[m] / float(meas[r["id"]][m]) - 1)
        cells = "  ".join(f"{k} {100 * np.mean(np.abs(v)):4.1f}% ({100 * np.median(v):+.1f}%)" for k, v in errs.items())
        print(f"bandwidth x{bw:<4} compute x{fl:<4} {cells}")
    cat.accelerators["l40s"], cat.systems["l40s-2"] = acc, sysrec


if __name__ == "__main__":
    main()
