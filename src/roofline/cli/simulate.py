"""`roofline simulate`: the discrete-event serving simulator on a catalog model and system."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .common import (AcceleratorOpt, ComputeEffOpt, GpusOpt, JsonOpt, KvDtypeOpt, MemoryEffOpt, ModelOpt,
                     PriceOpt, SystemOpt, WeightsDtypeOpt, resolve_hardware, resolve_model)
from .render import print_json, seconds, table

POLICY_HELP = "continuous, chunked, static, train (departures every --interval-s) or disaggregated."
JSON_KEYS = ("requests", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "throughput_tokens_per_s",
             "goodput_requests_per_s", "usd_per_million_tokens")


def build_workload(rng, *, trace, requests, duration, rate, arrivals, cv, lengths_kind, prompt, output, sigma,
                   fast_fraction):
    """The CLI's workload: a CSV trace, or generated arrivals with generated lengths."""
    import numpy as np

    from ..errors import InputError
    from ..simulate.workload import gamma_arrivals, lengths, make_workload, poisson_arrivals, read_trace

    if trace:
        wl = read_trace(trace)
    else:
        if duration is not None:
            if duration <= 0:
                raise InputError(f"--duration must be > 0 seconds, got {duration:g}")
            n = int(rate * duration * 1.2 + 10 * (rate * duration) ** 0.5 + 10)
        else:
            n = requests
        if arrivals == "poisson":
            t = poisson_arrivals(rng, rate, n)
        elif arrivals == "gamma":
            t = gamma_arrivals(rng, rate, n, cv)
        else:
            raise InputError(f"unknown --arrivals {arrivals!r}; expected poisson or gamma")
        if duration is not None:
            t = t[t < duration]
            if t.size == 0:
                raise InputError("no request arrives within --duration; raise --rate or --duration")
        k = t.size
        wl = make_workload(t, lengths(rng, k, lengths_kind, prompt, sigma, maximum=16 * prompt),
                           lengths(rng, k, lengths_kind, output, sigma, maximum=16 * output))
    if fast_fraction:
        if not 0 <= fast_fraction <= 1:
            raise InputError(f"--fast-fraction must be in [0, 1], got {fast_fraction:g}")
        from dataclasses import replace

        wl = replace(wl, priority=(rng.random(wl.n) >= fast_fraction).astype(np.int64))
    return wl


def register(app: typer.Typer) -> None:
    @app.command("simulate")
    def simulate_cmd(
        model: ModelOpt,
        system: SystemOpt = None,
        accelerator: AcceleratorOpt = None,
        gpus: GpusOpt = None,
        policy: Annotated[str, typer.Option(help=POLICY_HELP)] = "continuous",
        max_seqs: Annotated[int, typer.Option(help="Most sequences in one pass (train capacity).")] = 256,
        max_batched_tokens: Annotated[int, typer.Option(help="Most new tokens in one pass (chunk budget).")] = 8192,
        interval_s: Annotated[float, typer.Option(help="Train departure interval, seconds.")] = 0.020,
        no_preemption: Annotated[bool, typer.Option("--no-preemption", help="Reserve prompt+output KV at admission instead of preempting.")] = False,
        rate: Annotated[float, typer.Option(help="Mean arrival rate, requests/s.")] = 10.0,
        arrivals: Annotated[str, typer.Option(help="poisson or gamma (bursty, see --cv).")] = "poisson",
        cv: Annotated[float, typer.Option(help="Coefficient of variation of gamma inter-arrival gaps.")] = 2.0,
        requests: Annotated[int, typer.Option("--requests", "-n", help="Requests to simulate.")] = 1000,
        duration: Annotated[Optional[float], typer.Option(help="Generate arrivals for this many seconds instead of --requests.")] = None,
        lengths: Annotated[str, typer.Option(help="fixed or lognormal prompt/output lengths.")] = "lognormal",
        prompt_tokens: Annotated[int, typer.Option(help="Prompt tokens (median if lognormal).")] = 1024,
        output_tokens: Annotated[int, typer.Option(help="Output tokens (median if lognormal).")] = 256,
        sigma: Annotated[float, typer.Option(help="Log-sd of lognormal lengths.")] = 1.0,
        trace: Annotated[Optional[str], typer.Option("--trace", help="CSV trace: arrival_s,prompt_tokens,output_tokens[,priority].")] = None,
        fast_fraction: Annotated[float, typer.Option(help="Share of requests in the fast (priority) class.")] = 0.0,
        spec_gamma: Annotated[int, typer.Option(help="Speculative draft length (0 = off).")] = 0,
        spec_alpha: Annotated[float, typer.Option(help="Speculative acceptance rate per draft token.")] = 0.7,
        draft_fraction: Annotated[float, typer.Option(help="Cost of one draft token, fraction of a decode step.")] = 0.05,
        prefill_gpus: Annotated[Optional[int], typer.Option(help="Disaggregated: GPUs of the prefill pool (default: same as decode).")] = None,
        ttft_target_s: Annotated[float, typer.Option(help="Goodput target on time to first token, s.")] = 1.0,
        tpot_target_s: Annotated[float, typer.Option(help="Goodput target on time per output token, s.")] = 0.1,
        seed: Annotated[int, typer.Option(help="Seed of the random generator.")] = 0,
        weights_dtype: WeightsDtypeOpt = "bf16",
        kv_dtype: KvDtypeOpt = "bf16",
        usd_per_gpu_hour: PriceOpt = None,
        compute_efficiency: ComputeEffOpt = 1.0,
        memory_efficiency: MemoryEffOpt = 1.0,
        realistic: Annotated[bool, typer.Option("--realistic", help="Pass times from the cited efficiency model (roofline.efficiency; the GPUs as one TP group) instead of the pure roofline.")] = False,
        plot: Annotated[Optional[str], typer.Option("--plot", help="Write latency, occupancy and timeline plots into this directory (with --grid: goodput_vs_rate.png).")] = None,
        grid: Annotated[Optional[str], typer.Option("--grid", help="Scenario grid: 'rate=5,10;policy=continuous,chunked;layout=pool,TP4 DP2' or a YAML file (docs/simulator.md); the other options are every scenario's defaults.")] = None,
        workers: Annotated[Optional[int], typer.Option("--workers", help="With --grid: processes on a local Dask cluster (1 = in this process; default: 1 for small grids, else one per core).")] = None,
        scheduler: Annotated[Optional[str], typer.Option("--scheduler", help="With --grid: address tcp://HOST:PORT of a running Dask scheduler to run the scenarios on.")] = None,
        json: JsonOpt = False,
    ) -> None:
        """Simulate serving MODEL on a system: TTFT, TPOT, latency percentiles, throughput, goodput, $/Mtok."""
        import numpy as np

        from ..errors import InputError
        from ..efficiency import Efficiency
        from ..simulate import Policy, Simulation, Targets, roofline_deployment
        from ..simulate.metrics import summarize
        from ..speculative import Speculation
        from .render import progress as progress_bar

        m = resolve_model(model)
        sysrec, chips = resolve_hardware(system, accelerator, gpus)
        eff = Efficiency(compute_efficiency, memory_efficiency)
        targets = Targets(ttft_target_s, tpot_target_s)
        if grid is not None:
            if policy == "disaggregated" or spec_gamma or fast_fraction or duration is not None or realistic:
                raise InputError("--grid runs pooled or laid-out deployments without --policy disaggregated, "
                                 "--spec-gamma, --fast-fraction, --duration or --realistic; drop those options")
            base = dict(rate=rate, policy=policy, arrivals=arrivals, cv=cv, lengths=lengths,
                        prompt_tokens=prompt_tokens, output_tokens=output_tokens, sigma=sigma, requests=requests,
                        max_seqs=max_seqs, max_batched_tokens=max_batched_tokens, interval_s=interval_s,
                        preemption=not no_preemption, weights_dtype=weights_dtype, kv_dtype=kv_dtype)
            return run_grid_cli(m, sysrec, chips, eff, targets, grid, base, trace=trace, seed=seed,
                                price=usd_per_gpu_hour, workers=workers, scheduler=scheduler, plot=plot, json=json)
        if workers is not None or scheduler is not None:
            raise InputError("--workers and --scheduler run the scenarios of a --grid; add --grid or drop them")
        spec = Speculation(spec_gamma, spec_alpha, draft_fraction) if spec_gamma else None
        disagg = policy == "disaggregated"
        pol = Policy("continuous" if disagg else policy, max_seqs, max_batched_tokens, interval_s,
                     not no_preemption, spec)
        if requests < 1:
            raise InputError(f"--requests must be >= 1, got {requests}")
        rng = np.random.default_rng(seed)
        wl = build_workload(rng, trace=trace, requests=requests, duration=duration, rate=rate, arrivals=arrivals,
                            cv=cv, lengths_kind=lengths, prompt=prompt_tokens, output=output_tokens, sigma=sigma,
                            fast_fraction=fast_fraction)
        opts = dict(efficiency=eff, weights_dtype=weights_dtype, kv_dtype=kv_dtype, usd_per_gpu_hour=usd_per_gpu_hour,
                    realistic=realistic)
        if realistic:
            from .common import check_one_tp_group

            check_one_tp_group(m, sysrec, chips)
        dep = roofline_deployment(m, sysrec, chips=chips, **opts)
        with progress_bar(wl.n, f"simulating {wl.n:,} requests", quiet=json) as advance:
            if disagg:
                from ..simulate.pools import disaggregated, kv_transfer_s

                pdep = roofline_deployment(m, sysrec, chips=prefill_gpus or chips, **opts)
                res = disaggregated(wl, pdep, dep, kv_transfer_s(m, sysrec, wl.prompt_tokens, kv_dtype=kv_dtype,
                                                                  chips=chips), pol, pol, seed=seed, progress=advance)
                tr = res.trace
            else:
                tr = Simulation(wl, dep, pol, seed=seed).run(advance)
        s = summarize(tr, targets)
        d = s.to_dict()
        if fast_fraction:
            for name, c in (("fast", 0), ("slow", 1)):
                if np.any(tr.priority == c):
                    sc = summarize(tr, targets, mask=tr.priority == c)
                    d.update({f"{name}_{k}": getattr(sc, k) for k in ("requests", "ttft_p50_s", "ttft_p99_s",
                                                                        "tpot_p50_s", "e2e_p50_s")})
        header = {"model": m.id, "system": sysrec.id, "gpus": tr.gpus, "policy": policy, "seed": seed,
                  "max_seqs": max_seqs, "kv_capacity_tokens": dep.kv_capacity_tokens}
        if plot:
            from ..plots.simulate import latency_distributions, occupancy_over_time, train_timeline

            latency_distributions(tr, f"{plot}/latency.png", targets)
            occupancy_over_time(tr, f"{plot}/occupancy.png")
            train_timeline(tr, f"{plot}/timeline.png")
        if json:
            return print_json({**header, **d})
        rows = [["requests", f"{s.requests:,}"], ["makespan", seconds(s.makespan_s)],
                ["TTFT p50 / p99", f"{seconds(s.ttft_p50_s)} / {seconds(s.ttft_p99_s)}"],
                ["TPOT p50 / p99", f"{seconds(s.tpot_p50_s)} / {seconds(s.tpot_p99_s)}"],
                ["end-to-end p50 / p99", f"{seconds(s.e2e_p50_s)} / {seconds(s.e2e_p99_s)}"],
                ["throughput (output tokens/s)", f"{s.throughput_tokens_per_s:,.0f}"],
                ["goodput (requests/s in targets)", f"{s.goodput_requests_per_s:,.3g} ({s.goodput_fraction:.1%})"],
                ["utilisation / mean batch", f"{s.utilisation:.1%} / {s.mean_batch:,.1f}"],
                ["passes / preemptions", f"{s.iterations:,} / {s.preemptions:,}"],
                ["$ per million output tokens", f"{s.usd_per_million_tokens:,.4g}"]]
        for name in ("fast", "slow"):
            if f"{name}_requests" in d:
                rows.append([f"{name} class TTFT p50 / TPOT p50",
                             f"{seconds(d[f'{name}_ttft_p50_s'])} / {seconds(d[f'{name}_tpot_p50_s'])}"])
        table(f"{m.id} on {tr.gpus} x {sysrec.accelerator.id}, {policy}, {wl.n:,} requests",
              ["metric", "value"], rows, caption=f"plots in {plot}" if plot else None)


GRID_COLUMNS = ("scenario", "GPUs", "TTFT p50 / p99", "TPOT p50 / p99", "tok/s", "goodput req/s", "good/GPU", "$/Mtok")


def run_grid_cli(m, sysrec, chips, eff, targets, grid, base, *, trace, seed, price, workers, scheduler, plot, json):
    """`simulate --grid`: one row per scenario (simulate.grid), on the executor asked for; --json
    {"model", "system", "seed", "ttft_target_s", "tpot_target_s", "scenarios": [rows]}."""
    from ..executors import check_workers
    from ..simulate.grid import GridContext, parse_grid, run_grid
    from ..simulate.workload import read_trace
    from .render import progress as progress_bar

    check_workers(workers, scheduler)
    scenarios = parse_grid(grid, base)
    ctx = GridContext(m, sysrec, chips, eff, price, targets, seed, read_trace(trace) if trace else None)
    with progress_bar(len(scenarios), f"simulating {len(scenarios):,} scenarios", quiet=json) as advance:
        rows = run_grid(ctx, scenarios, workers=workers, scheduler=scheduler, progress=advance)
    if plot:
        from ..plots.grid import goodput_vs_rate

        goodput_vs_rate(rows, f"{plot}/goodput_vs_rate.png", title=f"{m.id} on {sysrec.id}")
    if json:
        return print_json({"model": m.id, "system": sysrec.id, "seed": seed, "ttft_target_s": targets.ttft_s,
                           "tpot_target_s": targets.tpot_s, "scenarios": rows})
    body = [[r["scenario"], r["gpus"], f"{seconds(r['ttft_p50_s'])} / {seconds(r['ttft_p99_s'])}",
             f"{seconds(r['tpot_p50_s'])} / {seconds(r['tpot_p99_s'])}", f"{r['throughput_tokens_per_s']:,.0f}",
             f"{r['goodput_requests_per_s']:,.3g} ({r['goodput_fraction']:.0%})", f"{r['goodput_per_gpu']:,.3g}",
             f"{r['usd_per_million_tokens']:,.4g}"] for r in rows]
    table(f"{m.id} on {sysrec.id}: {len(rows):,} scenarios", list(GRID_COLUMNS), body,
          caption=f"goodput: TTFT <= {seconds(targets.ttft_s)} and TPOT <= {seconds(targets.tpot_s)}"
                  + (f"; plot in {plot}" if plot else ""))
