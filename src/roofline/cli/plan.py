"""`roofline plan`: search TP/EP/PP/DP, batch and dtypes; print the Pareto frontier and why others fail."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ._layout import MoeImbalanceOpt
from .common import ComputeEffOpt, ExpertWeightsDtypeOpt, JsonOpt, MemoryEffOpt, ModelOpt, PriceOpt
from .render import fmt, print_json, seconds, si_bytes, table

DomainsOpt = Annotated[str, typer.Option("--domains", "-d", help="Scale-up domains (racks) to consider: N or A-B, e.g. 1-16.")]


def _formats(r: dict) -> str:
    """'fp8/fp8', or 'bf16+fp4 experts/fp8' where the routed experts have their own format."""
    e = r.get("expert_weights_dtype", r["weights_dtype"])
    return f"{r['weights_dtype']}{'' if e == r['weights_dtype'] else f'+{e} experts'}/{r['kv_dtype']}"


def parse_domains(text: str) -> list[int]:
    """'4' -> [4]; '1-4' -> [1, 2, 3, 4]; '1,2,8' -> [1, 2, 8] (the request layer's rule)."""
    from ..requests.plan import parse_domains as domains

    return domains(text)


def register(app: typer.Typer) -> None:
    @app.command("plan")
    def plan_cmd(
        model: ModelOpt,
        system: Annotated[str, typer.Option("--system", "-s", help="Scale-up domain id (see `roofline catalog systems`).")],
        domains: DomainsOpt = "1",
        prompt: Annotated[int, typer.Option("--prompt", help="Prompt tokens per request.")] = 1024,
        output: Annotated[int, typer.Option("--output", help="Output tokens per request.")] = 1024,
        context: Annotated[Optional[int], typer.Option("--context", help="KV tokens a decode step attends (default prompt + output/2).")] = None,
        ttft: Annotated[Optional[float], typer.Option("--ttft-ms", help="Target time to first token, ms.")] = None,
        tpot: Annotated[Optional[float], typer.Option("--tpot-ms", help="Target time per output token, ms.")] = None,
        user_rate: Annotated[Optional[float], typer.Option("--tokens-per-s-per-user", help="Target decode speed per user, tokens/s.")] = None,
        moe_imbalance: MoeImbalanceOpt = "1",
        scale_up_efficiency: Annotated[float, typer.Option("--scale-up-efficiency", help="Achieved fraction of scale-up bandwidth, (0, 1].")] = 1.0,
        scale_out_efficiency: Annotated[float, typer.Option("--scale-out-efficiency", help="Achieved fraction of scale-out bandwidth, (0, 1].")] = 1.0,
        compute_efficiency: ComputeEffOpt = 1.0,
        memory_efficiency: MemoryEffOpt = 1.0,
        usd_per_gpu_hour: PriceOpt = None,
        all_layouts: Annotated[bool, typer.Option("--all", help="List every feasible layout, not just the frontier.")] = False,
        realistic: Annotated[bool, typer.Option("--realistic", help="Step times from the cited efficiency model of the accelerator's family (roofline.efficiency) instead of the pure roofline.")] = False,
        spec_gamma: Annotated[int, typer.Option("--spec-gamma", help="Speculative / MTP draft tokens per decode step for every layout (0 = off).")] = 0,
        spec_alpha: Annotated[float, typer.Option("--spec-alpha", help="Acceptance rate per draft token, [0, 1].")] = 0.7,
        draft_fraction: Annotated[float, typer.Option("--draft-fraction", help="Cost of one draft token, fraction of a decode step.")] = 0.05,
        disaggregated: Annotated[bool, typer.Option("--disaggregated", help="Also plan disaggregated prefill and decode pools, a layout each (fluid pool sizes; docs/parallelism.md).")] = False,
        pope_layouts: Annotated[bool, typer.Option("--pope-layouts/--no-pope-layouts", help="Also search Pope et al. 2022's layouts: attention sharded by batch and 2D weight-stationary.")] = True,
        overlap: Annotated[bool, typer.Option("--overlap", help="With --realistic, also search each layout with its collectives overlapped with compute (two-batch / compute-communication overlap, as step --overlap); off by default: most engines overlap only MoE dispatch/combine, if that.")] = False,
        simulate: Annotated[Optional[int], typer.Option("--simulate", help="Simulate the K best layouts under the workload below and re-rank them by goodput (docs/simulator.md).")] = None,
        rate: Annotated[float, typer.Option("--rate", help="With --simulate: mean arrival rate, requests/s.")] = 10.0,
        requests: Annotated[int, typer.Option("--requests", "-n", help="With --simulate: requests to simulate.")] = 2000,
        arrivals: Annotated[str, typer.Option("--arrivals", help="With --simulate: poisson or gamma.")] = "poisson",
        cv: Annotated[float, typer.Option("--cv", help="With --simulate: coefficient of variation of gamma gaps.")] = 2.0,
        lengths: Annotated[str, typer.Option("--lengths", help="With --simulate: fixed (--prompt/--output) or lognormal (their medians).")] = "fixed",
        sigma: Annotated[float, typer.Option("--sigma", help="With --simulate: log-sd of lognormal lengths.")] = 1.0,
        trace: Annotated[Optional[str], typer.Option("--trace", help="With --simulate: CSV trace instead of generated requests.")] = None,
        seed: Annotated[int, typer.Option("--seed", help="With --simulate: seed of the run.")] = 0,
        workers: Annotated[Optional[int], typer.Option("--workers", help="With --simulate: processes on a local Dask cluster.")] = None,
        scheduler: Annotated[Optional[str], typer.Option("--scheduler", help="With --simulate: tcp://HOST:PORT of a Dask scheduler.")] = None,
        expert_weights_dtype: ExpertWeightsDtypeOpt = None,
        json: JsonOpt = False,
    ) -> None:
        """Best layouts of MODEL on 1+ domains of SYSTEM: Pareto frontier of tokens/s per GPU vs per user."""
        from ..requests.plan import PlanRequest, run_plan

        req = PlanRequest.of(style="cli", model=model, system=system, domains=domains, prompt=prompt, output=output,
                             context=context, ttft_ms=ttft, tpot_ms=tpot, tokens_per_s_per_user=user_rate,
                             moe_imbalance=moe_imbalance, scale_up_efficiency=scale_up_efficiency,
                             scale_out_efficiency=scale_out_efficiency, compute_efficiency=compute_efficiency,
                             memory_efficiency=memory_efficiency, usd_per_gpu_hour=usd_per_gpu_hour,
                             all=all_layouts, realistic=realistic, spec_gamma=spec_gamma, spec_alpha=spec_alpha,
                             draft_fraction=draft_fraction, disaggregated=disaggregated,
                             pope_layouts=pope_layouts, overlap=overlap, expert_weights_dtype=expert_weights_dtype)
        if simulate is not None and expert_weights_dtype is not None:
            from ..requests.rules import UsageError

            raise UsageError("--simulate re-ranks layouts on the scenario grid, which keeps one weight format; drop "
                             "--expert-weights-dtype or --simulate (run the printed simulate command instead)")
        d = run_plan(req)
        if simulate is not None:
            from ._plan_simulate import simulated
            return simulated(req, d, simulate, dict(rate=rate, requests=requests, arrivals=arrivals, cv=cv,
                                                    lengths=lengths, sigma=sigma, trace=trace, seed=seed,
                                                    workers=workers, scheduler=scheduler), json)
        if json:
            return print_json(d)
        m, sysrec, rows, counts = req._model, req._system, d["layouts"], d["counts"]
        if not rows:
            from ..errors import DoesNotFitError

            raise DoesNotFitError(f"no layout of {m.id} on {domains} x {sysrec.id} fits and meets the targets "
                                  f"({counts['out_of_memory']} out of memory, {counts['miss_target']} miss the "
                                  f"target); add --domains, relax the targets or shorten prompt/output")
        frontier = [r for r in rows if r["pareto"]]  # planner.Plan.best: most tokens/s per GPU on the frontier
        best = max(frontier, key=lambda r: r["tokens_per_s_per_gpu"]) if frontier else None
        from ..planner import layout_label

        body = [[layout_label(r, None), r["batch"], _formats(r),
                 r["domains"], r["replicas"], fmt(r["tokens_per_s_per_gpu"]), fmt(r["tokens_per_s_per_user"]),
                 fmt(r["usd_per_million_tokens"]), seconds(r["ttft_s"]), seconds(r["tpot_s"]),
                 si_bytes(r["memory_per_gpu_bytes"]), r["bound"] + (" *" if r == best else "")] for r in rows]
        table(f"{m.id} on {domains} x {sysrec.id}: prompt {prompt}, output {output} "
              f"({counts['feasible']:,} feasible of {counts['candidates']:,} candidates)",
              ["layout", "batch", "w/kv", "domains", "replicas", "tok/s/GPU", "tok/s/user", "$/Mtok", "TTFT",
               "TPOT", "mem/GPU", "bound"], body,
              caption="* most tokens/s per GPU on the frontier; " + (
                  "efficiency model (roofline.efficiency, central factors)" if realistic
                  else "pure roofline unless efficiencies are given"))
        if disaggregated:
            _disaggregated_table(d["disaggregated"], m, sysrec)
        for line in d["rejected"]:
            print(f"rejected {line}")
        if d["simulate"]:
            from ..requests.plan import SIMULATE_LOAD

            sim = d["simulate"]
            print(f"simulate one replica of * at {SIMULATE_LOAD:.0%} of its planned rate: {sim['command']}"
                  + "".join(f"\n  (not simulated: {x})" for x in sim["ignores"]))


def _disaggregated_table(rows: list, m, sysrec) -> None:
    """`plan --disaggregated`: the frontier of (decode layout, cheapest prefill layout) pairs."""
    from ..planner import layout_label

    if not rows:
        print("disaggregated: no pair of pools fits and meets the targets")
        return
    table(f"{m.id} on {sysrec.id}: disaggregated prefill and decode pools (fluid pool sizes)",
          ["decode layout", "batch", "prefill layout", "w/kv", "prefill GPUs", "tok/s/GPU", "tok/s/user", "$/Mtok",
           "TTFT", "TPOT"],
          [[layout_label(r["decode"], None), r["batch"], f"{layout_label(r['prefill'], None)} x{r['prefill_prompts']}",
            _formats(r), f"{r['prefill_gpu_share']:.0%}", fmt(r["tokens_per_s_per_gpu"]),
            fmt(r["tokens_per_s_per_user"]), fmt(r["usd_per_million_tokens"]), seconds(r["ttft_s"]),
            seconds(r["tpot_s"])] for r in rows],
          caption="prefill GPUs: the prefill pool's share of all GPUs; TTFT includes the KV transfer")
