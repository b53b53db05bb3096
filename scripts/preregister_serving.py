"""Pre-register the serving simulator's predictions for the published serving runs (issue 20, item 5).

    .venv/bin/python scripts/preregister_serving.py [OUT.yaml] [--commit HASH] [--set a|b|c|d|e|f|g|h|i|j|k|l|m|n|o|p|q|r|s|t|u|v|w|x|y|z|aa|ab|ac|ad|ae|af|ag|ah|ai|aj|ak|al|am|an|ao|ap|aq|ar|as|at|au|av|aw|ax|ay|az|ba|bb|bc|bd|be|bf|bg|bh|bi|bj|bk|bl|bm|bn|bo|bp|bq|br|bs|bt|bu|bv|bw|bx|by|bz|ca|cb|cc|cd|ce|cf|cg|ch|ci|cj|ck|cl|cm|cn|co|cp|cq|cr|cs|ct]
        (default OUT the set's predictions file, docs/preregistered/serving_predictions.yaml for set a,
        serving_predictions_b.yaml for set b; --commit when run from `git archive HASH`)

Runs roofline.validate.serving.predict_all on the set's runs file (src/roofline/validate/data/serving_runs.yaml,
set b: serving_runs_b.yaml; inputs only) and
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

from roofline.errors import InputError
from roofline.validate.serving import _REPO, central_rule, predict_all, set_paths

WATCHED = ("src/roofline/simulate", "src/roofline/engine.py", "src/roofline/efficiency.py", "src/roofline/catalog/data",
           "src/roofline/validate/serving.py", "src/roofline/requests")


def main(out: str | None = None, commit: str | None = None, set_name: str = "a") -> None:
    """`commit`: the commit an exported tree (`git archive HEAD`) was taken from, when run outside the checkout
    (a shared checkout's uncommitted edits would otherwise leak into the predictions). `set_name`: the
    validation set (a or b)."""
    try:
        sp = set_paths(set_name)
    except InputError as e:
        raise SystemExit(f"error: {e}") from None
    runs_file = sp["runs"].relative_to(_REPO).as_posix()
    if commit is None:
        dirty = subprocess.run(["git", "status", "--porcelain", "--", *WATCHED, runs_file], capture_output=True,
                               text=True).stdout
        if dirty.strip():
            raise SystemExit(f"uncommitted changes under the simulator or the runs file:\n{dirty}commit them first, "
                             f"or run from `git archive HEAD` with --commit, so the recorded commit computes these "
                             f"predictions")
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    pred = predict_all(progress=lambda rid: print(f"  {rid}", flush=True), set_name=set_name)
    for rid, p in pred.items():
        if p.get("infeasible"):
            print(f"{rid:34s} infeasible: {p['infeasible']}")
            continue
        for m, v in p["metrics"].items():
            print(f"{rid:34s} {m:10s} {v['value']:10.4g} [{v['low']:.4g}, {v['high']:.4g}] s")
    path = Path(out) if out else sp["predictions"]
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"predicted_on": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "at_commit": commit,
           "runs_file": runs_file, "unit": "s",
           "method": "roofline.validate.serving.predict_run: realistic pass engine + --engine overheads; value = "
                     + ("central factors/overheads, seed 0" if central_rule(set_name) == "seed0" else
                        "central factors/overheads, median over seeds 0-2") +
                     "; low/high = min/max over efficiency fast/slow, overheads "
                     "fast/slow, seeds 1-2, ShareGPT sigma_range",
           "runs": pred}
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=120))
    print(f"wrote {path} at {commit}")


if __name__ == "__main__":
    args = sys.argv[1:]
    at, which = None, "a"
    for flag in ("--commit", "--set"):
        if flag in args:
            i = args.index(flag)
            if i + 1 >= len(args):
                raise SystemExit(f"error: {flag} needs a value (--commit HASH, --set a|b|c|d|e|f|g|h|i|j|k|l|m|n|o|p|q|r|s|t|u|v|w|x|y|z|aa|ab|ac|ad|ae|af|ag|ah|ai|aj|ak|al|am)")
            if flag == "--commit":
                at = args[i + 1]
            else:
                which = args[i + 1]
            del args[i:i + 2]
    main(args[0] if args else None, at, which)
