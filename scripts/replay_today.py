"""Today's simulator on every scored serving run of one engine family, against the measured values.

    .venv/bin/python scripts/replay_today.py [--engine sglang|vllm|trtllm] [--sets e,f,...] [--workers 2] [--by set|model]

The pages (docs/validation_serving_*.md) score each set as it was registered, blind; later changes are disclosed on
them and not applied. This script asks the other question: how far is the simulator as it stands from the same
measurements? Each run is simulated at seed 0 with the central factors (validate.serving.what_if_errors: the run's own
keys, no change), and the errors are pooled per metric family (end-to-end, ITL/TPOT, TTFT) and per set or per (model,
system). It is post hoc by construction (every value was seen long ago), so it finds where the simulator is biased
today; it is not a validation result. Runs the simulator rejects are listed, not dropped silently.
"""

from __future__ import annotations

import argparse
import collections
from concurrent.futures import ProcessPoolExecutor

import numpy as np


def one(job):
    """(set, run id, model, system, [(metric, error)] or the error's message) of one run at seed 0."""
    from roofline.errors import InputError
    from roofline.validate import serving as S

    s, rid = job
    try:
        run, errors = S.what_if_errors(s, rid, None)
    except InputError as e:
        return s, rid, None, None, str(e)
    return s, rid, run["model"], run["system"], errors


def table(rows, key) -> None:
    """Mean APE / median error (n) per metric family, one line per `key` of a row."""
    from roofline.validate import serving as S

    cells: dict = collections.defaultdict(lambda: collections.defaultdict(list))
    for row in rows:
        for metric, err in row[4]:
            cells[key(row)][S.FAMILY[metric.split("_")[0]]].append(err)
    fams = ("e2e", "itl", "ttft")
    print(f"{'':<36}" + "".join(f"{f:>26}" for f in fams))
    for k in sorted(cells, key=str):
        line = "".join(f"{100 * np.mean(np.abs(v)):>9.0f}% / {100 * np.median(v):+5.0f}% ({len(v):>4})" if v else f"{'–':>26}"
                       for v in (cells[k].get(f, []) for f in fams))
        print(f"{str(k):<36}{line}")


def main() -> None:
    from roofline.validate import serving as S

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", default="sglang", choices=("sglang", "vllm", "trtllm"))
    ap.add_argument("--sets", default=",".join(S.SETS))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--by", default="set", choices=("set", "model"))
    a = ap.parse_args()
    jobs = [(s, r["id"]) for s in a.sets.split(",") for r in S.load_runs(set_name=s)["runs"]
            if S._engine_family(r["engine"]) == a.engine]
    with ProcessPoolExecutor(a.workers) as ex:
        rows = list(ex.map(one, jobs))
    failed = [r for r in rows if r[2] is None]
    rows = [r for r in rows if r[2] is not None]
    print(f"{a.engine}: {len(rows)} runs of {len(set(r[0] for r in rows))} sets at seed 0, central factors "
          f"(mean APE / median error (metrics) per family)")
    table(rows, lambda r: "all")
    table(rows, (lambda r: r[0]) if a.by == "set" else (lambda r: f"{r[2]} {r[3]}"))
    for s, rid, _, _, msg in failed:
        print(f"not simulated: set {s} run {rid}: {msg}")


if __name__ == "__main__":
    main()
