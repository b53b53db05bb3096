"""Post hoc what-ifs on the scored TensorRT-LLM H100 closed loops (AIConfigurator's rows, and NIM's of sets br and bs):
mechanisms tried for the TTFT misses, each scored against the measured values, none adopted.

    .venv/bin/python scripts/posthoc_trtllm.py [--sets aq,...,bk] [--what NAME,...] [--workers 2]

Each run is simulated at seed 0 with the central factors and its keys as registered, once per what-if, with one thing
changed in this process only; the registered predictions stay what docs/validation_serving_*.md score, and nothing is
written. The what-ifs (all found after the sets they are tried on were scored; docs/simulator.md, sets bi to bk):

- `base`: nothing changed (today's simulator on the registered keys).
- `jitter2`, `jitter10`: each request's arrival at the scheduler delayed by an exponential draw of mean 2 or 10 ms
  (generator seed 7) on top of the engine's request-in and tokenising, which would break a fixed-length closed loop's
  lock-step (set bi's L1418: every request after the first round waits the same 291 ms for its prompt pass).
- `one_prompt`: a token budget of C + isl (rounded up to 32), so a pass admits one prompt at most, not the two of 1,024
  tokens that AIConfigurator's C + isl + 1,500 allows.
- `eager_high`: the eager floor at its band's high end, 90 µs per counted kernel (catalog engines.yaml, trtllm row).
- `output_stage`: the engine's output path as a server of its own (simulate.OutputStage) at 109 µs a streamed chunk,
  the ceiling of about 9,200 output tokens/s the Llama 3.1 8B runs at 128 clients reached.
- `serial_in`: 28 ms of request-in work served one request at a time (overheads.SERIAL_REQUEST_IN), the ceiling of
  about 36 requests/s those runs reached.
- `sync`: the next batch scheduled when this one ends, not while it runs (schedule_ahead 0; AIConfigurator's queueing
  note, ai-dynamo/aiconfigurator@ee07d8ebf docs/design/queueing_model.md, maps TensorRT-LLM's overlap loop to no
  admission lookahead).
- `all_slots`, `one_slot`, `two_slots`: at most 2048 (the engine default, as the sets before bn registered every run),
  C − 1 or C − 2 of the C clients' requests running at once (`max_seqs`). `one_slot` is the rule declared before set bn
  for the Llama 3.1 8B rows (docs/simulator.md, "Declared before gathering set bn"), found with this what-if.
- `no_evict`: KV memory reserved at admission for the whole prompt + output of every running request, and a waiting
  prompt that does not fit stops admission (Policy preemption False): TensorRT-LLM's default capacity scheduler,
  GUARANTEED_NO_EVICT (cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp, GuaranteedNoEvictScheduler: it reserves
  getRemainingBlocksToCompletion of each running request and breaks at the first context request that does not fit),
  where the sets simulate KV growing on demand. Tried after set bq was scored.
- `budget2048`, `chunked2048`: a token budget of 2,048 a pass (max_batched_tokens), without and with chunked prefill,
  where sets br's and bs's NIM runs assume 8,192 (NIM 1.8.0's engine build is not stated). Tried after set br was scored.
- `stagger`: the C clients out of step from the start, their first requests sent evenly over one cycle (the run's own
  simulated mean end-to-end latency) instead of all at t = 0. A closed loop of fixed lengths that starts in step keeps
  its clients in cohorts (requests admitted in one pass finish in one pass and come back together); this is the other
  extreme, no cohorts at all. Tried after set br was scored.
- `row_concurrency`: the gpt-oss-120b rows (L1489-L1491, Dynamo jobs of TensorRT-LLM 1.3.0rc1) at the concurrency their
  provenance records, silicon_concurrency = batch_size x TP, instead of batch_size (the sets' convention, flagged in
  each run's known_gaps); the request count, AIConfigurator's token budget and the CUDA-graph bound follow C as the
  sets' rules give them. Other runs are unchanged by it. Tried after set bq was scored.

Prints the TTFT and TPOT mean APE of each what-if, over all runs and per model and client-concurrency class.
"""

from __future__ import annotations

import argparse
import math
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace

import numpy as np

SETS = "aq,ar,as,at,au,av,aw,ax,ay,az,ba,bb,bc,bd,be,bf,bg,bh,bi,bj,bk,bl,bm"
WHAT = ("base", "jitter2", "jitter10", "one_prompt", "eager_high", "output_stage", "serial_in", "sync", "all_slots",
        "one_slot", "two_slots", "no_evict", "row_concurrency", "budget2048", "chunked2048", "stagger")
CLASSES = ((1, 16), (17, 48), (49, 96), (97, 10**9))


class Overheads:
    """The engine's overheads with `extra_in(n)` (n requests -> n delays, seconds) added to each request's
    arrival delay and request-in replaced by `request_in_s` where given; every other figure is the engine's own."""

    def __init__(self, overheads, extra_in=None, request_in_s=None):
        self._overheads, self._extra_in = overheads, extra_in
        self.request_in_s = overheads.request_in_s if request_in_s is None else request_in_s

    def __getattr__(self, name):
        return getattr(self._overheads, name)

    def arrival_delay_s(self, prompt_tokens):
        base = (self.request_in_s + np.asarray(self._overheads.tokenize_s(prompt_tokens), dtype=float)) * np.ones(
            len(prompt_tokens))
        return base + self._extra_in(len(prompt_tokens)) if self._extra_in else base


def run_keys(what: str, run: dict, ds: dict) -> dict:
    """The run-key changes of a what-if (none for those that change the engine's overheads or loop)."""
    if what == "one_prompt":
        c, isl = int(run["max_concurrency"]), int(ds["prompt_range"][1])
        return {"max_batched_tokens": int(math.ceil((c + isl) / 32) * 32)}
    if what in ("budget2048", "chunked2048"):
        return {"max_batched_tokens": 2048} | ({"policy": "chunked"} if what == "chunked2048" else {})
    if what == "eager_high":
        return {"eager_s_per_kernel": 9.0e-05}
    if what == "output_stage":
        return {"stream_s_per_chunk": 1.09e-04}
    if what == "row_concurrency" and "-gptoss120b-" in run["id"]:
        c = int(run["max_concurrency"]) * int(re.search(r"-tp(\d+)-", run["id"])[1])
        isl = int(ds["prompt_range"][1])
        return {"max_concurrency": c, "requests": 20 * c, "max_batched_tokens": int(math.ceil((c + isl + 1500) / 32) * 32),
                "cuda_graph_max_batch": max(128, c)}
    if what in ("all_slots", "one_slot", "two_slots"):
        c = int(run["max_concurrency"])
        return {"max_seqs": {"all_slots": 2048, "one_slot": max(1, c - 1), "two_slots": max(1, c - 2)}[what]}
    return {}


def one(job):
    """(set, run id, {what: {metric: error}}) of one run."""
    from roofline.simulate import overheads as O
    from roofline.validate import serving as S

    s, rid, whats = job
    doc = S.load_runs(set_name=s)
    run = next(r for r in doc["runs"] if r["id"] == rid)
    closed, policy, serial, workload = O.run_closed_loop, O.engine_policy, O.SERIAL_REQUEST_IN, S.workload_for
    out = {}
    try:
        for what in whats:
            O.run_closed_loop, O.engine_policy, O.SERIAL_REQUEST_IN, S.workload_for = closed, policy, serial, workload
            wrap = None
            if what.startswith("jitter"):
                mean_s = float(what[len("jitter"):]) * 1e-3
                wrap = {"extra_in": lambda n, m=mean_s: np.random.default_rng(7).exponential(m, n)}
            elif what == "serial_in":
                O.SERIAL_REQUEST_IN = True
                wrap = {"request_in_s": 0.028}
            elif what == "sync":
                O.engine_policy = lambda pol, ovh: pol
            elif what == "no_evict":
                O.engine_policy = lambda pol, ovh: replace(policy(pol, ovh), preemption=False)
            elif what == "stagger":
                S.workload_for = staggered(workload, int(run["max_concurrency"]),
                                           S.simulate_run(run, doc["datasets"][run["dataset"]], seed=0)["e2e_mean"])
            if wrap is not None:
                O.run_closed_loop = (lambda kw: lambda wl, ovh, c, r: closed(wl, Overheads(ovh, **kw), c, r))(wrap)
            out[what] = dict(S.what_if_errors(s, rid, run_keys(what, run, doc["datasets"][run["dataset"]]))[1])
    finally:
        O.run_closed_loop, O.engine_policy, O.SERIAL_REQUEST_IN, S.workload_for = closed, policy, serial, workload
    return s, rid, out


def staggered(workload_for, c: int, cycle_s: float):
    """`workload_for` with the first c releases spread evenly over one cycle (the run's own simulated mean end-to-end
    latency) and the rest released with the last of them: the clients out of step from the start."""
    from roofline.simulate.workload import make_workload

    def wf(run, ds, seed, sigma=None):
        wl = workload_for(run, ds, seed, sigma)
        t, k = wl.arrival_s.copy(), min(c, len(wl.arrival_s))
        t[:k] = np.arange(k) * cycle_s / k
        t[k:] = (k - 1) * cycle_s / k
        return make_workload(t, wl.prompt_tokens, wl.output_tokens, wl.priority)
    return wf


def ape(res, what, metric, keep=lambda rid: True) -> tuple[float, int]:
    """Mean APE (%) and count of `metric` over the kept runs; tpot_mean stands for itl_mean where a run scores ITL."""
    alt = {"tpot_mean": "itl_mean"}.get(metric, metric)
    v = [abs(o[what].get(metric, o[what].get(alt))) for _, rid, o in res
         if keep(rid) and (metric in o[what] or alt in o[what])]
    return (100 * float(np.mean(v)) if v else float("nan")), len(v)


def main() -> None:
    from roofline.validate import serving as S

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=SETS)
    ap.add_argument("--what", default=",".join(WHAT))
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    whats = a.what.split(",")
    if unknown := [w for w in whats if w not in WHAT]:
        raise SystemExit(f"unknown what-if {unknown[0]!r}; expected some of {', '.join(WHAT)}")
    jobs = [(s, r["id"], whats) for s in a.sets.split(",") for r in S.load_runs(set_name=s)["runs"]
            if r["engine"] in ("trtllm", "trtllm-engine") and r["system"] == "dgx-h100" and r.get("max_concurrency")
            and r.get("rate") == float("inf") and ("-aic-" in r["id"] or "-nim180-" in r["id"])]
    with ProcessPoolExecutor(a.workers) as ex:
        res = list(ex.map(one, jobs, chunksize=4))
    print(f"{len(res)} TensorRT-LLM H100 closed loops (AIConfigurator's and NIM's rows) of sets {a.sets}; seed 0, "
          "central factors")
    print("TTFT / TPOT (ITL where a run scores ITL) mean APE per what-if")
    groups = [("all", lambda rid: True)]
    for model, tag in (("Llama 3.1 8B", "-l31-8b-"), ("Llama 3.1 8B (NIM)", "-llama-3.1-8b-"), ("Qwen3-32B", "-q3-32b-"),
                       ("gpt-oss-120b", "-gptoss120b-"), ("Llama 3.3 70B (NIM)", "-llama-3.3-70b-")):
        for lo, hi in CLASSES:
            label = f"{model} C {lo}–{hi}" if hi < 10**9 else f"{model} C {lo}+"
            groups.append((label, lambda rid, t=tag, lo=lo, hi=hi:
                           t in rid and lo <= int(re.search(r"-c(\d+)(?:-|$)", rid)[1]) <= hi))
    print(f"{'runs':<26}" + "".join(f"{w:>16}" for w in whats))
    for label, keep in groups:
        n = ape(res, whats[0], "ttft_mean", keep)[1]
        if n:
            cells = "".join(f"{ape(res, w, 'ttft_mean', keep)[0]:>8.1f}/{ape(res, w, 'tpot_mean', keep)[0]:<7.1f}"
                            for w in whats)
            print(f"{label + f' ({n})':<26}{cells}")


if __name__ == "__main__":
    main()
