"""Post hoc what-if of one simulator switch on scored serving sets: the runs as registered against today's code.

    .venv/bin/python scripts/posthoc_switch.py MODULE.NAME --sets al [--workers 2]
    .venv/bin/python scripts/posthoc_switch.py --run-key kv_reserve=vllm --engine vllm [--sets all]

    MODULE.NAME  a boolean switch of the roofline package that a post hoc change added, e.g.
                 layout.MOE_GATHERS_GROUPS (the MoE token gather across DP groups, found on set al) or
                 kernel_pass.MOE_PER_EXPERT_GEMMS (per-expert GEMMs for MoE shapes without rows, found on set am)

    --run-key KEY=VALUE  instead of a switch, a run key (YAML value) given to every run of the sets, or with --engine
                 FAMILY to the runs of that engine family only (vllm, sglang, trtllm), e.g. kv_reserve=vllm (vLLM's
                 profiled activation peak kept from the KV pool, checked after set cq); "before" is the runs as
                 registered, "today" with the key

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
    if isinstance(switch, dict):  # a run key: the runs as registered, then with the key
        before = _errors(S, set_name, run_id, None)
        return set_name, {"before": before, "today": _errors(S, set_name, run_id, switch)}
    mod_name, name = switch.rsplit(".", 1)
    mod = importlib.import_module(f"roofline.{mod_name}")
    today = bool(getattr(mod, name))
    out = {}
    for label, value in (("before", not today), ("today", today)):
        setattr(mod, name, value)
        out[label] = S.what_if_errors(set_name, run_id)[1]
    setattr(mod, name, today)
    return set_name, out


def _errors(S, set_name: str, run_id: str, changes):
    """The run's signed errors, or a one-line note where the change leaves it unable to run (as "does not fit")."""
    from roofline.errors import RooflineError

    try:
        return S.what_if_errors(set_name, run_id, changes)[1]
    except RooflineError as e:
        return [(f"failed: {str(e).splitlines()[0]}", float("nan"))]


def main() -> None:
    from roofline.validate import serving as S

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("switch", nargs="?")
    ap.add_argument("--sets", default="all")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--run-key")
    ap.add_argument("--engine")
    a = ap.parse_args()
    if (a.switch is None) == (a.run_key is None):
        ap.error("give a switch MODULE.NAME or --run-key KEY=VALUE, not both")
    change = a.switch
    if a.run_key is not None:
        key, sep, value = a.run_key.partition("=")
        if not sep or not key:
            ap.error(f"--run-key must be KEY=VALUE, e.g. kv_reserve=vllm; got {a.run_key!r}")
        import yaml

        change = {key: yaml.safe_load(value)}
    sets = list(S.SETS) if a.sets == "all" else a.sets.split(",")
    jobs = [(change, s, r["id"]) for s in sets for r in S.load_runs(set_name=s)["runs"]
            if a.engine is None or S._engine_family(r["engine"]) == a.engine]
    with ProcessPoolExecutor(a.workers) as ex:
        rows = list(ex.map(_one, jobs))
    print(f"{a.switch or a.run_key}{f' on {a.engine} runs' if a.engine else ''}, seed 0, central factors: mean APE "
          f"before -> today")
    for s in sets:
        mine = [out for name, out in rows if name == s]
        if not mine:
            continue
        for out in mine:
            for label in ("before", "today"):
                if out[label] and out[label][0][0].startswith("failed: "):
                    print(f"set {s}: a run {label}: {out[label][0][0]}")
        mine = [out for out in mine if not any(out[k] and out[k][0][0].startswith("failed: ") for k in out)]
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
