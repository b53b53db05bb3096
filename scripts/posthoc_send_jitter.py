"""Post hoc what-if: random delays on a closed-loop client's sends, on the scored TensorRT-LLM H100 closed loops.

    .venv/bin/python scripts/posthoc_send_jitter.py [--sets aq,...,bi] [--workers 2]

Found 2026-11-28 after set bi was scored: at fixed lengths a closed loop of C clients can settle into a lock-step in
which every request waits the same time for its prompt pass (set bi's L1418: 291 ms for every request after the first
round). A real client and server are not that regular, so the question is whether the simulator's TTFT misses on
AIConfigurator's TensorRT-LLM rows are that lock-step. Each run is simulated at seed 0 with the central factors, its
keys as registered, with each request's arrival at the scheduler delayed by an exponential draw (mean 0, 2 and 10 ms;
fixed generator seed 7) on top of the engine's request-in and tokenising (simulate/overheads.run_closed_loop, replaced
in this process only), and scored against the measured values. The registered predictions stay what
docs/validation_serving_*.md score; this prints and writes nothing.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace

import numpy as np

SETS = "aq,ar,as,at,au,av,aw,ax,ay,az,ba,bb,bc,bd,be,bf,bg,bh,bi"
MEANS_S = (0.0, 0.002, 0.010)


def jittered(mean_s: float):
    """run_closed_loop with an exponential delay of mean `mean_s` added to each request's delay_in (seed 7)."""
    from roofline.simulate import overheads as O
    from roofline.simulate.core import ClosedLoop

    def run_closed_loop(workload, overheads, concurrency, run):
        delay_in = np.asarray(overheads.arrival_delay_s(workload.prompt_tokens), dtype=float) * np.ones(workload.n)
        if mean_s > 0:
            delay_in = delay_in + np.random.default_rng(7).exponential(mean_s, workload.n)
        service = O.serial_service_s(overheads, workload.prompt_tokens) * np.ones(workload.n) if O.SERIAL_TOKENIZER else None
        loop = ClosedLoop(int(concurrency), delay_in, float(overheads.first_token_out_s), service_s=service)
        tr = run(workload, loop)
        out = overheads.first_token_out_s
        return replace(tr, arrival_s=np.asarray(loop.sends_s, dtype=float),
                       first_token_s=np.asarray(tr.first_token_s) + out, finish_s=np.asarray(tr.finish_s) + out)

    return run_closed_loop


def one(job):
    """(set, run id, [{metric: error} per mean]) of one run."""
    from roofline.simulate import overheads as O
    from roofline.validate import serving as S

    s, rid = job
    original, out = O.run_closed_loop, []
    try:
        for mean_s in MEANS_S:
            O.run_closed_loop = jittered(mean_s)
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
