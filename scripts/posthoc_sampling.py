"""Post hoc what-if of the top-k/top-p filter (run key `sampling`) on the scored llm-benchmaq vLLM 0.15 runs.

    .venv/bin/python scripts/posthoc_sampling.py [--sets n,ad,ae,ag,ah,ai] [--workers 2]

Those runs' client (`vllm bench serve` of vLLM 0.15.0) sent no temperature, so the server sampled with each model's
generation_config: Qwen3 top_k 20 / top_p 0.95 and Llama 3.1 Instruct top_p 0.9 go through vLLM's top-k/top-p filter;
gpt-oss-120b's generation_config sets neither, so its runs stay greedy-costed here. Each run is simulated at seed 0 with
the central factors twice, as registered and with `sampling: top-k-top-p`, and both are scored against the measured
values (mean APE of the modelled metrics per family, and the median signed TPOT error per model). The registered
predictions of those sets stay what docs/validation_serving_*.md score; this is a disclosed post hoc check (found after
their values were seen), printed, never written into a set.
"""

from __future__ import annotations

import argparse
import collections
from concurrent.futures import ProcessPoolExecutor

import numpy as np

SAMPLED = ("qwen3-", "llama-3.1-")  # generation_config sets top_k and/or top_p (gpt-oss-120b's sets neither)


def what_ifs(args):
    """[(label, model, metric, error)] of one run (set, run id, [(label, run-key changes or None)]) at seed 0: the
    run as registered and with each label's changes (validate.serving.what_if_errors). Shared with the other
    run-key what-ifs (scripts/posthoc_fp8_scales.py)."""
    from roofline.validate import serving as S

    set_name, run_id, variants = args
    out = []
    for label, changes in variants:
        run, errors = S.what_if_errors(set_name, run_id, changes)
        out += [(label, run["model"], k, e) for k, e in errors]
    return out


def what_if_args(description: str, sets: str, engines: tuple[str, ...] = (), flag: str = "--engine") -> argparse.Namespace:
    """The post hoc scripts' command line: --sets (comma-separated set names, default `sets`) and --workers, and
    `flag` (--engine unless named; one of `engines`, the first by default) when a script takes one."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--sets", default=sets)
    ap.add_argument("--workers", type=int, default=2)
    if engines:
        ap.add_argument(flag, default=engines[0], choices=engines)
    return ap.parse_args()


def unsaturated_runs(sets: str, keep=lambda run: True) -> list[tuple[str, str]]:
    """(set, run id) of each run of the comma-separated `sets` that `keep` accepts and its registered predictions did
    not call past saturation."""
    from roofline.validate import serving as S

    jobs = []
    for s in sets.split(","):
        pred = S._load(S.set_paths(s)["predictions"])["runs"]
        jobs += [(s, r["id"]) for r in S.load_runs(set_name=s)["runs"]
                 if keep(r) and not pred[r["id"]].get("saturation", {}).get("saturated")]
    return jobs


def run_what_ifs(jobs, workers: int) -> list:
    """`what_ifs` of each job (set, run id, [(label, run-key changes or None)]) in `workers` processes, in order."""
    with ProcessPoolExecutor(workers) as ex:
        return list(ex.map(what_ifs, jobs))


def report(rows, labels, group=lambda model: model, per_group=("tpot_mean",)) -> None:
    """Mean APE per family and the median signed error of the `per_group` metrics per `group` of model, for each
    label of `rows`."""
    from roofline.validate import serving as S

    for label in labels:
        fam: dict[str, list[float]] = collections.defaultdict(list)
        tpot: dict[str, list[float]] = collections.defaultdict(list)
        for lab, model, metric, err in rows:
            if lab == label:
                fam[S.FAMILY[metric.split("_")[0]]].append(err)
                if metric in per_group:
                    tpot[group(model)].append(err)
        cells = "  ".join(f"{f} {100 * np.mean(np.abs(v)):.1f}% (median error {100 * np.median(v):+.1f}%)"
                          for f, v in sorted(fam.items()))
        per_model = ", ".join(f"{m} {100 * np.median(v):+.1f}%" for m, v in sorted(tpot.items()))
        print(f"{label:>12}: mean APE {cells}\n{'':>14}median {'/'.join(per_group)} error: {per_model}")


def main() -> None:
    from roofline.validate import serving as S

    a = what_if_args(__doc__.splitlines()[0], "n,ad,ae,ag,ah,ai")
    jobs = [(s, r["id"]) for s in a.sets.split(",") for r in S.load_runs(set_name=s)["runs"]
            if "llm-benchmaq" in str(r.get("result", "")) and r["engine"] == "vllm"
            and "0.15" in str(r.get("engine_version", "")) and r["model"].startswith(SAMPLED)]
    variants = [("registered", None), ("top-k-top-p", {"sampling": "top-k-top-p"})]
    rows = [x for part in run_what_ifs([(s, r, variants) for s, r in jobs], a.workers) for x in part]
    print(f"{len(jobs)} runs (llm-benchmaq, vLLM 0.15, Qwen3 / Llama 3.1) of sets {a.sets}; seed 0, central factors")
    report(rows, [label for label, _ in variants])


if __name__ == "__main__":
    main()
