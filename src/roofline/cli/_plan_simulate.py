"""`plan --simulate K`: the analytic and simulated rankings side by side (roofline.plan_simulate)."""

from __future__ import annotations

from .render import fmt, print_json, seconds, table


def simulated(req, d: dict, k: int, wl: dict, json: bool) -> None:
    """Simulate the K best analytic layouts of the plan `d` and print both rankings (or --json with a
    `simulated` list added to the plan's dict). Goodput targets: the plan's --ttft-ms/--tpot-ms, else
    simulate's defaults (1 s, 100 ms)."""
    from ..errors import InputError
    from ..executors import check_workers
    from ..plan_simulate import simulate_plan
    from ..simulate.policies import Targets
    from ..simulate.workload import read_trace
    from .render import progress as progress_bar

    check_workers(wl["workers"], wl["scheduler"])
    if wl["rate"] <= 0 or wl["requests"] < 1:
        raise InputError(f"--rate must be > 0 and --requests >= 1, got {wl['rate']:g} and {wl['requests']}")
    targets = Targets(req.ttft_ms / 1e3 if req.ttft_ms else Targets().ttft_s,
                      req.tpot_ms / 1e3 if req.tpot_ms else Targets().tpot_s)
    rows = d["layouts"]
    if not rows:
        raise InputError("the plan has no feasible layout to simulate; relax the targets or add --domains")
    eff = None
    if not req.realistic:
        from ..efficiency import Efficiency

        eff = Efficiency(req.compute_efficiency, req.memory_efficiency)
    trace = read_trace(wl["trace"]) if wl["trace"] else None
    with progress_bar(min(k, len(rows)), f"simulating {min(k, len(rows))} layouts", quiet=json) as advance:
        out = simulate_plan(req._model, req._system, rows, k, targets, rate=wl["rate"], requests=wl["requests"],
                            arrivals=wl["arrivals"], cv=wl["cv"], lengths=wl["lengths"], prompt=req.prompt,
                            output=req.output, sigma=wl["sigma"], trace=trace, seed=wl["seed"], efficiency=eff,
                            realistic=req.realistic, usd_per_gpu_hour=req.usd_per_gpu_hour, moe_imbalance=req._imbalance,
                            workers=wl["workers"], scheduler=wl["scheduler"], progress=advance)
    if json:
        return print_json({**d, "ttft_target_s": targets.ttft_s, "tpot_target_s": targets.tpot_s,
                           "workload": {k_: v for k_, v in wl.items() if k_ not in ("workers", "scheduler")},
                           "simulated": out})
    body = [[f"#{r['analytic_rank']}", f"#{r['simulated_rank']}", r["layout"], r["batch"],
             f"{r['weights_dtype']}/{r['kv_dtype']}", r["gpus"], fmt(r["tokens_per_s_per_gpu"]),
             fmt(r["simulated_tokens_per_s_per_gpu"]), seconds(r["tpot_s"]),
             f"{seconds(r['simulated_tpot_p50_s'])} / {seconds(r['simulated_tpot_p99_s'])}",
             f"{seconds(r['simulated_ttft_p99_s'])}", f"{r['simulated_goodput_per_gpu']:.3g} ({r['simulated_goodput_fraction']:.0%})"]
            for r in out]
    src = f"trace {wl['trace']}" if trace is not None else (
        f"{wl['requests']:,} {wl['arrivals']} requests at {wl['rate']:g}/s, {wl['lengths']} {req.prompt}/{req.output} tokens")
    table(f"{req._model.id} on {req._system.id}: {len(out)} best analytic layouts, simulated ({src})",
          ["analytic", "sim", "layout", "batch", "w/kv", "GPUs", "tok/s/GPU", "sim tok/s/GPU", "TPOT",
           "sim TPOT p50/p99", "sim TTFT p99", "goodput/GPU"], body,
          caption=f"ranked by simulated goodput per GPU (TTFT <= {seconds(targets.ttft_s)}, TPOT <= "
                  f"{seconds(targets.tpot_s)}); analytic: tokens/s per GPU at full batch")
    for r in out:
        if r["why"]:
            print(f"{r['layout']} batch {r['batch']}: {r['why']}")
