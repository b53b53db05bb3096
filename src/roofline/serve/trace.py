"""`POST /api/simulate/trace`: the per-request latencies and the batch-occupancy timeline of one simulation,
for the simulate page's distributions and timeline (the CLI draws the same from `roofline simulate --plot`).

It runs the simulation of a validated `SimulateRequest` as `roofline.requests.simulate.run_simulate` does
(same workload from the same seed, same deployment and policy), and keeps the trace that `run_simulate`
summarises; tests/test_serve_api.py checks that its percentiles equal `roofline simulate --json`'s, so the two
cannot drift apart. Disaggregated serving (two pools) has no single occupancy timeline and is refused.
"""

from __future__ import annotations

TIMELINE_POINTS = 500  # occupancy bins returned (time-averaged, so a train's idle gaps do not alias)


def simulation_trace(req):
    """The Trace of the request's run (non-disaggregated policies), as run_simulate builds it."""
    import numpy as np

    from ..efficiency import Efficiency
    from ..requests.simulate import workload
    from ..simulate import Policy, Simulation, roofline_deployment
    from ..speculative import Speculation

    spec = Speculation(req.spec_gamma, req.spec_alpha, req.draft_fraction) if req.spec_gamma else None
    pol = Policy(req.policy, req.max_seqs, req.max_batched_tokens, req.interval_s, not req.no_preemption, spec)
    wl = workload(req, np.random.default_rng(req.seed))
    eff = None if req.realistic else Efficiency(compute=req.compute_efficiency, memory=req.memory_efficiency)
    dep = roofline_deployment(req._model, req._system, chips=req._chips, efficiency=eff,
                              weights_dtype=req.weights_dtype, kv_dtype=req.kv_dtype,
                              usd_per_gpu_hour=req.usd_per_gpu_hour, realistic=req.realistic)
    return Simulation(wl, dep, pol, seed=req.seed).run(lambda n=1: None)


def trace_dict(req) -> dict:
    """{"policy", "requests", "ttft_s": [...], "tpot_s": [...] (null for one-token outputs),
    "occupancy": {"t_s": [...], "batch": [...]}} — seconds and sequences per pass, one list entry per
    request; occupancy is the sequences in the pass averaged over each of TIMELINE_POINTS equal bins of the
    run (idle time counts as 0), at the bins' centres."""
    import numpy as np

    from ..simulate.metrics import tpot_s, ttft_s

    tr = simulation_trace(req)
    end = float(np.max(tr.finish_s)) if tr.finish_s.size else 0.0
    edges = np.linspace(0.0, end, TIMELINE_POINTS + 1)
    start, busy, b = tr.seg_start_s, tr.seg_busy_s, tr.seg_batch.astype(float)
    done = np.concatenate([[0.0], np.cumsum(b * busy)])  # sequence-seconds finished before segment k

    def integral(t):  # sequence-seconds of passes up to time t
        k = np.searchsorted(start, t, side="right") - 1
        inside = np.clip(t - start[np.maximum(k, 0)], 0.0, busy[np.maximum(k, 0)])
        return np.where(k >= 0, done[np.maximum(k, 0)] + b[np.maximum(k, 0)] * inside, 0.0)

    width = np.diff(edges)
    mean = np.divide(np.diff(integral(edges)), width, out=np.zeros_like(width), where=width > 0)
    tpot = tpot_s(tr)
    return {"policy": req.policy, "requests": int(tr.arrival_s.size),
            "ttft_s": ttft_s(tr).tolist(),
            "tpot_s": [None if not np.isfinite(x) else float(x) for x in tpot],
            "occupancy": {"t_s": ((edges[:-1] + edges[1:]) / 2).tolist(), "batch": mean.tolist()}}
