"""Pre-register the serving simulator's predictions for the published serving runs (issue 20, item 5).

    .venv/bin/python scripts/preregister_serving.py [OUT.yaml] [--commit HASH]
        (default OUT docs/preregistered/serving_predictions.yaml; --commit when run from `git archive HASH`)

Runs roofline.validate.serving.predict_all on src/roofline/validate/data/serving_runs.yaml (inputs only) and
writes, per run and published metric, the value and the interval [low, high] (seconds), the central run's
saturation verdict and the variants simulated, with the date and the full commit hash of HEAD (refusing a
working tree whose simulator or runs file differs from HEAD, so the hash says what computed them). The
measured values are added in a later commit; `roofline validate --serving` scores the predictions.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import yaml

from roofline.validate.serving import PREDICTIONS, predict_all

WATCHED = ("src/roofline/simulate", "src/roofline/engine.py", "src/roofline/efficiency.py", "src/roofline/catalog/data",
           "src/roofline/validate/serving.py", "src/roofline/validate/data/serving_runs.yaml", "src/roofline/requests")


def main(out: str | None = None, commit: str | None = None) -> None:
    """`commit`: the commit an exported tree (`git archive HEAD`) was taken from, when run outside the checkout
    (a shared checkout's uncommitted edits would otherwise leak into the predictions)."""
    if commit is None:
        dirty = subprocess.run(["git", "status", "--porcelain", "--", *WATCHED], capture_output=True, text=True).stdout
        if dirty.strip():
            raise SystemExit(f"uncommitted changes under the simulator or the runs file:\n{dirty}commit them first, "
                             f"or run from `git archive HEAD` with --commit, so the recorded commit computes these "
                             f"predictions")
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    pred = predict_all(progress=lambda rid: print(f"  {rid}", flush=True))
    for rid, p in pred.items():
        for m, v in p["metrics"].items():
            print(f"{rid:34s} {m:10s} {v['value']:10.4g} [{v['low']:.4g}, {v['high']:.4g}] s")
    path = Path(out) if out else PREDICTIONS
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"predicted_on": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "at_commit": commit,
           "runs_file": "src/roofline/validate/data/serving_runs.yaml", "unit": "s",
           "method": "roofline.validate.serving.predict_run: realistic pass engine + --engine overheads; value = "
                     "central factors/overheads, seed 0; low/high = min/max over efficiency fast/slow, overheads "
                     "fast/slow, seeds 1-2, ShareGPT sigma_range",
           "runs": pred}
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=120))
    print(f"wrote {path} at {commit}")


if __name__ == "__main__":
    args = sys.argv[1:]
    at = None
    if "--commit" in args:
        i = args.index("--commit")
        at = args[i + 1]
        del args[i:i + 2]
    main(args[0] if args else None, at)
