"""How well the blind error bands of `simulate --realistic --engine E` would have covered later sets: the bands
(validate.serving.error_bands) fitted on the sets before a cut, then scored on the sets from the cut on, pooled
per engine family against the same family's bands per predicted-load class (error_bands `by_load`, as
history_for picks them, falling back to the pooled band where a class has too few metrics).

    .venv/bin/python scripts/band_holdout.py [CUT_SET]      (default aq: fit on a-ap, score on aq-bf)

Prints, per engine family and metric family: held-out metrics, the share inside the 10th-90th percentile band
(nominal 80%), the band's median width in log-ratio (ln p90 - ln p10; narrower is more informative) and the mean
interval score of the band in log-ratio (Gneiting & Raftery 2007, eq. 43, alpha = 0.2: width plus 2/alpha times
the distance by which the value falls outside; lower is better, and it rewards neither a narrow band that misses
nor a wide one that covers).
"""

from __future__ import annotations

import math
import sys

import numpy as np

from roofline.validate.serving import SETS, _engine_family, compare_all, error_bands, load_class

ALPHA = 0.2  # the 10th-90th percentile band


def band_for(bands: dict, fam: str, f: str, load: float | None, conditional: bool) -> dict | None:
    b = bands.get(fam, {})
    c = load_class(b, load) if conditional else None
    return c[f] if c is not None and f in c else b.get(f)


def band_scores(rows: list[dict], bands: dict, f: str, conditional: bool) -> tuple[float, float, float]:
    """(share inside the 10th-90th band, median width, mean interval score), both in log-ratio, of the metric
    family `f` rows against `bands` (per engine family), pooled or by load class as history_for picks them."""
    inside, width, score = [], [], []
    for r in rows:
        b = band_for(bands, _engine_family(r["engine"]), f, r.get("load"), conditional)
        if b is None:
            continue
        lo, hi, y = math.log(b["ratio_p10"]), math.log(b["ratio_p90"]), math.log(r["measured"] / r["predicted"])
        inside.append(lo <= y <= hi)
        width.append(hi - lo)
        score.append(hi - lo + 2 / ALPHA * (max(lo - y, 0.0) + max(y - hi, 0.0)))
    if not inside:
        return math.nan, math.nan, math.nan
    return float(np.mean(inside)), float(np.median(width)), float(np.mean(score))


def main(cut: str = "aq") -> None:
    if cut not in SETS:
        raise SystemExit(f"error: unknown set {cut!r}; expected one of {', '.join(SETS)}")
    k = SETS.index(cut)
    rows = compare_all()
    fit = error_bands([r for r in rows if SETS.index(r["set"]) < k])["bands"]
    test = [r for r in rows if SETS.index(r["set"]) >= k and r["modelled"] and not r["saturated"]
            and r["predicted"] > 0 and r["measured"] > 0]
    print(f"bands fitted on sets {SETS[0]}-{SETS[k - 1]}, scored on sets {cut}-{SETS[-1]} (nominal coverage 80%)")
    print(f"{'engine':<8}{'metric':<6}{'n':>6}{'pooled: covered':>17}{'width':>8}{'score':>8}{'by load: covered':>18}"
          f"{'width':>8}{'score':>8}")
    for fam in ("vllm", "sglang", "trtllm"):
        for f in ("e2e", "itl", "ttft"):
            sel = [r for r in test if _engine_family(r["engine"]) == fam and r["family"] == f]
            if sel:
                (c0, w0, s0), (c1, w1, s1) = (band_scores(sel, fit, f, conditional) for conditional in (False, True))
                print(f"{fam:<8}{f:<6}{len(sel):>6}{c0:>17.0%}{w0:>8.2f}{s0:>8.2f}{c1:>18.0%}{w1:>8.2f}{s1:>8.2f}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
