"""How a closed-loop run's TTFT error splits into an end-to-end error and a TTFT/TPOT apportioning error.

    .venv/bin/python scripts/ttft_split.py [--sets aq,ar,...]

For a fixed-length closed loop the mean end-to-end latency of a request is e2e = TTFT + (osl − 1)·TPOT, and each of the
C clients cycles once per e2e, so e2e = C / X (Little's law, X the request throughput). The TTFT error in seconds is
then an identity of two terms:

    ΔTTFT = Δe2e − (osl − 1)·ΔTPOT,

Δ = predicted − measured. The first is a throughput error (the simulator serves the C clients faster or slower than the
engine did); the second only moves time between waiting for the first token and decoding, at the same throughput.
AIConfigurator's queueing design note says the same of its own model (ai-dynamo/aiconfigurator@ee07d8ebf
docs/design/queueing_model.md, the `ttft_anchor="identity"` row: "steady TTFT is the small residual of two large
terms — its precision is bounded by osl × (TPOT error)"). This script reads the committed predictions and measured
values (validate.serving.implied_e2e: the runs that score TTFT and TPOT at one output length) and prints, per class of
client concurrency, the mean APE of TTFT, TPOT and the implied e2e, and the runs whose e2e is within 5% while their
TTFT is 30% or more off: there the simulator gets the throughput right and the split wrong. It changes nothing.
"""

from __future__ import annotations

import argparse

import numpy as np

CLASSES = ((1, 16), (17, 48), (49, 96), (97, 10**9))


def rows_of(sets: list[str]) -> list[dict]:
    """One dict per qualifying run: set, run, concurrency, osl − 1, and predicted and measured TTFT, TPOT and e2e (s)."""
    from roofline.validate import serving as S

    out = []
    for s in sets:
        sp, doc = S.set_paths(s), S.load_runs(set_name=s)
        pred, meas = S._load(sp["predictions"])["runs"], S._load(sp["measured"])["runs"]
        runs = {r["id"]: r for r in doc["runs"]}
        for e in S.implied_e2e(doc, pred, meas):
            r, pm, mm = runs[e["run"]], pred[e["run"]]["metrics"], meas[e["run"]]
            pt, mt = float(pm["ttft_mean"]["value"]), float(mm["ttft_mean"])
            pp, mp = float(pm["tpot_mean"]["value"]), float(mm["tpot_mean"])
            c = r.get("max_concurrency")
            if c is None or r.get("rate") != float("inf"):
                continue  # closed loops only
            out.append({"set": s, "run": e["run"], "C": int(c), "gaps": (e["measured"] - mt) / mp,
                        "engine": S._engine_family(r["engine"]), "gpu": e["gpu"],
                        "ttft": (pt, mt), "tpot": (pp, mp), "e2e": (e["predicted"], e["measured"])})
    return out


def split_miss(r: dict) -> bool:
    """The end-to-end latency within 5% and TTFT 30% or more off: the throughput right, the split wrong."""
    return abs(r["e2e"][0] / r["e2e"][1] - 1) <= 0.05 and abs(r["ttft"][0] / r["ttft"][1] - 1) >= 0.30


def ape(pairs) -> float:
    return float(np.mean([abs(p / m - 1) for p, m in pairs])) if pairs else float("nan")


def main() -> None:
    from roofline.validate import serving as S

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(S.SETS))
    a = ap.parse_args()
    rows = rows_of(a.sets.split(","))
    print(f"{len(rows)} closed-loop runs with an implied end-to-end latency (sets {a.sets})")
    print(f"{'concurrency':<14}{'n':>5}{'TTFT':>9}{'TPOT':>9}{'e2e':>9}{'e2e ≤5%, TTFT ≥30%':>22}{'share of |ΔTTFT| from (osl−1)·ΔTPOT':>38}")
    for lo, hi in CLASSES:
        sub = [r for r in rows if lo <= r["C"] <= hi]
        if not sub:
            continue
        split = [r for r in sub if split_miss(r)]
        d_e2e = np.array([r["e2e"][0] - r["e2e"][1] for r in sub])
        d_tpot = np.array([r["gaps"] * (r["tpot"][0] - r["tpot"][1]) for r in sub])
        share = float(np.sum(np.abs(d_tpot)) / np.sum(np.abs(d_e2e) + np.abs(d_tpot)))
        label = f"{lo}–{hi}" if hi < 10**9 else f"{lo}+"
        print(f"{label:<14}{len(sub):>5}{100 * ape([r['ttft'] for r in sub]):>8.1f}%{100 * ape([r['tpot'] for r in sub]):>8.1f}%"
              f"{100 * ape([r['e2e'] for r in sub]):>8.1f}%{len(split):>22}{100 * share:>37.0f}%")
    print("mean decode batch C·(osl − 1)·TPOT / e2e at 97 or more clients, measured (predicted), min–max per engine, GPU "
          "and C:")
    groups: dict = {}
    for r in rows:
        if r["C"] >= 97:
            groups.setdefault((r["engine"], r["gpu"], r["C"]), []).append(r)
    for (eng, gpu, c), sub in sorted(groups.items()):
        m = [c * r["gaps"] * r["tpot"][1] / r["e2e"][1] for r in sub]
        p = [c * r["gaps"] * r["tpot"][0] / r["e2e"][0] for r in sub]
        print(f"  {eng:<8}{gpu:<12}C {c:>4}{len(sub):>5} runs  {min(m):6.1f}–{max(m):6.1f} ({min(p):.1f}–{max(p):.1f})")
    print("runs whose e2e is within 5% and TTFT 30% or more off (predicted/measured − 1):")
    for r in filter(split_miss, rows):
        e, t, p = (r[k][0] / r[k][1] - 1 for k in ("e2e", "ttft", "tpot"))
        print(f"  {r['set']:<3} {r['run']:<62} C {r['C']:>4}  e2e {100 * e:+5.1f}%  TTFT {100 * t:+6.1f}%  TPOT {100 * p:+5.1f}%")


if __name__ == "__main__":
    main()
