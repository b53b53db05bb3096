"""`POST /api/simulate/trace`: the per-request latencies and the batch-occupancy timeline of one simulation,
for the simulate page's distributions and timeline (the CLI draws the same from `roofline simulate --plot`).

It runs the simulation of a validated `SimulateRequest` as `roofline.requests.simulate.run_simulate` does
(same workload from the same seed, same deployment and policy), and keeps the trace that `run_simulate`
summarises; tests/test_serve_api.py checks that its percentiles equal `roofline simulate --json`'s, so the two
cannot drift apart. Disaggregated serving (two pools) has no single occupancy timeline and is refused.
"""

from __future__ import annotations

TIMELINE_POINTS = 2000  # occupancy samples returned (the page draws a step line; 2,000 is finer than a plot)


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
    request; the occupancy step function sampled at TIMELINE_POINTS times over the run (0 while idle)."""
    import numpy as np

    from ..simulate.metrics import tpot_s, ttft_s

    tr = simulation_trace(req)
    end = float(np.max(tr.finish_s)) if tr.finish_s.size else 0.0
    t = np.linspace(0.0, end, TIMELINE_POINTS)
    seg = np.searchsorted(tr.seg_start_s, t, side="right") - 1
    ok = seg >= 0
    busy_until = tr.seg_start_s + tr.seg_busy_s
    batch = np.zeros_like(t)
    batch[ok] = np.where(t[ok] <= busy_until[seg[ok]], tr.seg_batch[seg[ok]], 0)
    tpot = tpot_s(tr)
    return {"policy": req.policy, "requests": int(tr.arrival_s.size),
            "ttft_s": ttft_s(tr).tolist(),
            "tpot_s": [None if not np.isfinite(x) else float(x) for x in tpot],
            "occupancy": {"t_s": t.tolist(), "batch": batch.tolist()}}
