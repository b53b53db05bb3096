"""Post hoc what-if of one simulator switch on scored serving sets: the runs as registered against today's code.

    .venv/bin/python scripts/posthoc_switch.py MODULE.NAME --sets al [--workers 2]

    MODULE.NAME  a boolean switch of the roofline package that a post hoc change added, e.g.
                 layout.MOE_GATHERS_GROUPS (the MoE token gather across DP groups, found on set al) or
                 kernel_pass.MOE_PER_EXPERT_GEMMS (per-expert GEMMs for MoE shapes without rows, found on set am)

Every run of each set is simulated at seed 0 with the central factors twice, the switch at its value before the change
(the opposite of today's) and at today's, and scored against the measured values: per set, the runs whose metrics
moved and the mean APE of the modelled metrics per family both ways (validate.serving.what_if_errors). The registered
predictions stay what the sets' pages score; this is the disclosed post hoc check (found after the values were seen)
that each page's "Changes to the simulator since these predictions" quotes, printed, never written into a set.
"""

from __future__ import annotations

import argparse
import collections
import importlib
from concurrent.futures import ProcessPoolExecutor

import numpy as np


def _one(args):
    from roofline.validate import serving as S

    switch, set_name, run_id = args
    mod_name, name = switch.rsplit(".", 1)
    mod = importlib.import_module(f"roofline.{mod_name}")
    today = bool(getattr(mod, name))
    out = {}
    for label, value in (("before", not today), ("today", today)):
        setattr(mod, name, value)
        out[label] = S.what_if_errors(set_name, run_id)[1]
    setattr(mod, name, today)
    return set_name, out


def main() -> None:
    from roofline.validate import serving as S

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("switch")
    ap.add_argument("--sets", required=True)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    sets = a.sets.split(",")
    jobs = [(a.switch, s, r["id"]) for s in sets for r in S.load_runs(set_name=s)["runs"]]
    with ProcessPoolExecutor(a.workers) as ex:
        rows = list(ex.map(_one, jobs))
    print(f"{a.switch}, seed 0, central factors: mean APE before -> today")
    for s in sets:
        mine = [out for name, out in rows if name == s]
        moved = sum(out["before"] != out["today"] for out in mine)
        fams = []
        for label in ("before", "today"):
            fam: dict[str, list[float]] = collections.defaultdict(list)
            for out in mine:
                for metric, err in out[label]:
                    fam[S.FAMILY[metric.split("_")[0]]].append(err)
            fams.append({f: 100 * np.mean(np.abs(v)) for f, v in fam.items()})
        cells = ", ".join(f"{f} {fams[0][f]:.1f}% -> {fams[1][f]:.1f}%" for f in ("e2e", "ttft", "itl") if f in fams[0])
        print(f"set {s}: {moved} of {len(mine)} runs move; {cells}")


if __name__ == "__main__":
    main()
