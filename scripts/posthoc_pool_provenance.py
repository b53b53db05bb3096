"""Post hoc what-if of aiperf's prompt pool against unique prompts on the AIConfigurator draws, by the rows' provenance.

    .venv/bin/python scripts/posthoc_pool_provenance.py [--sets ab,ac,af,aq,ar,as,at] [--workers 2] [--engine sglang|vllm]

Each run of AIConfigurator's silicon_sample.csv quotes its row's provenance in `result` ("provenance: source_file=..."):
an AIC developer's gap-analysis file per GPU, engine and model (.../aic-auto-gap-analysis/data/<gpu>/<engine>/<version>/
<model>.csv) or a dated dump (2026-03-25.csv, 2026-04-06.csv, db-dump/2026-04-27). Every vLLM or SGLang run of the
sets is simulated at seed 0 with the central factors twice, with `prompt_pool` {entries: 100, warmup: 2 x C} (aiperf's
default pool, served by the prefix cache) and without it (every prompt unique), its other keys as registered, and scored
against the measured values per (provenance, model, metric): mean APE and median error. Found after sets ar and as were
scored, so post hoc; sets at and au registered rules drawn from it (docs/simulator.md). Printed, never written into a set.
"""

from __future__ import annotations

import collections
import re

import numpy as np

from posthoc_sampling import run_what_ifs, what_if_args


def provenance(run: dict) -> str:
    """The row's provenance as quoted in the run's `result`: '<gpu>/<engine>' for a gap-analysis file, else the dump."""
    m = re.search(r"provenance: (?:source_file=)?(\S+?);", " ".join(str(run.get("result", "")).split()))
    if not m:
        return "not quoted"
    src = m.group(1)
    gap = re.search(r"aic-auto-gap-analysis/data/([^/]+)/([^/]+)/", src)
    return f"{gap.group(1)}/{gap.group(2)}" if gap else src


def main() -> None:
    from roofline.validate import serving as S

    a = what_if_args(__doc__.splitlines()[0], "ab,ac,af,aq,ar,as,at", engines=("sglang", "vllm"))
    engine = a.engine
    jobs, where = [], {}
    for s in a.sets.split(","):
        for r in S.load_runs(set_name=s)["runs"]:
            if S._engine_family(r["engine"]) != engine or provenance(r) == "not quoted":
                continue
            pool = {"entries": 100, "warmup": 2 * int(r.get("max_concurrency") or 1)}
            jobs.append((s, r["id"], [("pool", {"prompt_pool": pool}), ("unique", {"prompt_pool": None})]))
            where[(s, r["id"])] = provenance(r)
    parts = run_what_ifs(jobs, a.workers)
    cells: dict = collections.defaultdict(lambda: collections.defaultdict(list))
    for job, part in zip(jobs, parts):
        for label, model, metric, err in part:
            cells[(where[job[:2]], model, metric)][label].append(err)
    print(f"{engine}: {len(jobs)} runs of sets {a.sets}; seed 0, central factors; mean APE (median error, metrics)")
    for key in sorted(cells):
        line = "  ".join(f"{lab} {100 * np.mean(np.abs(v)):.0f}% ({100 * np.median(v):+.0f}%, {len(v)})"
                         for lab, v in sorted(cells[key].items()))
        print(f"{' '.join(key):<58}{line}")


if __name__ == "__main__":
    main()
