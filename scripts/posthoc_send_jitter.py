"""Post hoc what-if: random delays on a closed-loop client's sends, on the scored TensorRT-LLM H100 closed loops.

    .venv/bin/python scripts/posthoc_send_jitter.py [--sets aq,...,bi] [--workers 2]

Found 2026-11-28 after set bi was scored: at fixed lengths a closed loop of C clients can settle into a lock-step in
which every request waits the same time for its prompt pass (set bi's L1418: 291 ms for every request after the first
round). A real client and server are not that regular, so the question is whether the simulator's TTFT misses on
AIConfigurator's TensorRT-LLM rows are that lock-step. Each run is simulated at seed 0 with the central factors, its
keys as registered, with each request's arrival at the scheduler delayed by an exponential draw (mean 0, 2 and 10 ms;
fixed generator seed 7) on top of the engine's request-in and tokenising (the engine's overheads wrapped for
simulate/overheads.run_closed_loop, in this process only), and scored against the measured values. The registered
predictions stay what docs/validation_serving_*.md score; this prints and writes nothing.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor

import numpy as np

SETS = "aq,ar,as,at,au,av,aw,ax,ay,az,ba,bb,bc,bd,be,bf,bg,bh,bi"
MEANS_S = (0.0, 0.002, 0.010)


class Jittered:
    """The engine's overheads with an exponential delay of mean `mean_s` (generator seed 7) added to each request's
    arrival delay (request-in and tokenising); every other figure is the engine's own."""

    def __init__(self, overheads, mean_s: float):
        self._overheads, self._mean_s = overheads, mean_s

    def __getattr__(self, name):
        return getattr(self._overheads, name)

    def arrival_delay_s(self, prompt_tokens):
        base = np.asarray(self._overheads.arrival_delay_s(prompt_tokens), dtype=float) * np.ones(len(prompt_tokens))
        return base + np.random.default_rng(7).exponential(self._mean_s, len(prompt_tokens)) if self._mean_s else base


def jittered(original, mean_s: float):
    """`original` (simulate/overheads.run_closed_loop) over Jittered overheads."""

    def run_closed_loop(workload, overheads, concurrency, run):
        return original(workload, Jittered(overheads, mean_s), concurrency, run)

    return run_closed_loop


def one(job):
    """(set, run id, [{metric: error} per mean]) of one run."""
    from roofline.simulate import overheads as O
    from roofline.validate import serving as S

    s, rid = job
    original, out = O.run_closed_loop, []
    try:
        for mean_s in MEANS_S:
            O.run_closed_loop = jittered(original, mean_s)
            out.append(dict(S.what_if_errors(s, rid, None)[1]))
    finally:
        O.run_closed_loop = original
    return s, rid, out


def main() -> None:
    from roofline.validate import serving as S

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=SETS)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    jobs = [(s, r["id"]) for s in a.sets.split(",") for r in S.load_runs(set_name=s)["runs"]
            if r["engine"] == "trtllm" and r["system"] == "dgx-h100" and r.get("max_concurrency")]
    with ProcessPoolExecutor(a.workers) as ex:
        res = list(ex.map(one, jobs, chunksize=4))
    print(f"{len(res)} TensorRT-LLM H100 closed loops of sets {a.sets}; seed 0, central factors")
    for k, mean_s in enumerate(MEANS_S):
        t = [abs(o[k]["ttft_mean"]) for _, _, o in res if "ttft_mean" in o[k]]
        p = [abs(o[k]["tpot_mean"]) for _, _, o in res if "tpot_mean" in o[k]]
        print(f"send delay mean {1e3 * mean_s:4.0f} ms: TTFT mean APE {100 * np.mean(t):5.1f}% ({len(t)}), "
              f"TPOT {100 * np.mean(p):5.1f}% ({len(p)})")


if __name__ == "__main__":
    main()
