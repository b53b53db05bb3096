"""The error bands as a blind forecast: how many of one set's measured values fell inside the bands that were shipped
before its predictions (the pooled band of the engine family, and its predicted-load class's band, as `simulate
--realistic --engine E` prints them: validate.serving.history_for).

    .venv/bin/python scripts/band_coverage.py SET [--bands-at COMMIT]

COMMIT (default: the commit the set's predictions record, `at_commit`) is where the bands file is read from git
(src/roofline/validate/data/serving_error_bands.yaml at that commit), so the bands cannot have seen the set. Prints per
metric family: scored metrics, the share inside each band (nominal 80%), and the mean interval score in log-ratio
(Gneiting & Raftery 2007, alpha = 0.2; lower is better).
"""

from __future__ import annotations

import argparse
import subprocess

import yaml

from band_holdout import band_scores
from roofline.validate.serving import _REPO, _load, compare, set_paths


def bands_at(commit: str) -> dict:
    path = "src/roofline/validate/data/serving_error_bands.yaml"
    try:
        text = subprocess.run(["git", "-C", str(_REPO), "show", f"{commit}:{path}"], check=True, capture_output=True,
                              text=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(f"error: cannot read {path} at {commit!r} from git ({exc}); give a commit of this repository "
                         "with --bands-at") from None
    return yaml.safe_load(text)["bands"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("set")
    ap.add_argument("--bands-at", default=None)
    a = ap.parse_args()
    paths = set_paths(a.set)
    commit = a.bands_at or str(_load(paths["predictions"])["at_commit"])
    bands = bands_at(commit)
    rows = [r for r in compare(paths["predictions"], paths["measured"], paths["runs"])
            if r["modelled"] and not r["saturated"] and r["predicted"] > 0 and r["measured"] > 0]
    print(f"set {a.set}: bands as shipped at {commit[:12]}; nominal coverage 80%")
    print(f"{'metric':<8}{'n':>4}{'pooled: inside':>16}{'score':>8}{'load class: inside':>20}{'score':>8}")
    for f in ("e2e", "itl", "ttft"):
        sel = [r for r in rows if r["family"] == f]
        if sel:
            (c0, _, s0), (c1, _, s1) = (band_scores(sel, bands, f, conditional) for conditional in (False, True))
            print(f"{f:<8}{len(sel):>4}{c0:>16.0%}{s0:>8.2f}{c1:>20.0%}{s1:>8.2f}")


if __name__ == "__main__":
    main()
