"""`roofline plan`: search TP/EP/PP/DP, batch and dtypes; print the Pareto frontier and why others fail."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .common import ComputeEffOpt, JsonOpt, MemoryEffOpt, ModelOpt, PriceOpt, resolve_model
from .render import fmt, print_json, seconds, si_bytes, table

DomainsOpt = Annotated[str, typer.Option("--domains", "-d", help="Scale-up domains (racks) to consider: N or A-B, e.g. 1-16.")]


def parse_domains(text: str) -> list[int]:
    """'4' -> [4]; '1-4' -> [1, 2, 3, 4]; '1,2,8' -> [1, 2, 8]. One-line InputError otherwise."""
    from ..errors import InputError

    out: list[int] = []
    try:
        for part in text.split(","):
            if "-" in part:
                a, b = (int(x) for x in part.split("-", 1))
                out += list(range(a, b + 1))
            else:
                out.append(int(part))
    except ValueError:
        raise InputError(f"--domains {text!r} is not N, A-B or a comma list; e.g. --domains 1-4") from None
    if not out or min(out) < 1 or max(out) > 1024:
        raise InputError(f"--domains {text!r} must name domain counts between 1 and 1024; e.g. --domains 1-4")
    return sorted(set(out))


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
        moe_imbalance: Annotated[float, typer.Option("--moe-imbalance", help="Busiest expert GPU's tokens over the mean (>= 1).")] = 1.0,
        scale_up_efficiency: Annotated[float, typer.Option("--scale-up-efficiency", help="Achieved fraction of scale-up bandwidth, (0, 1].")] = 1.0,
        scale_out_efficiency: Annotated[float, typer.Option("--scale-out-efficiency", help="Achieved fraction of scale-out bandwidth, (0, 1].")] = 1.0,
        compute_efficiency: ComputeEffOpt = 1.0,
        memory_efficiency: MemoryEffOpt = 1.0,
        usd_per_gpu_hour: PriceOpt = None,
        all_layouts: Annotated[bool, typer.Option("--all", help="List every feasible layout, not just the frontier.")] = False,
        realistic: Annotated[bool, typer.Option("--realistic", help="Step times from the cited efficiency model of the accelerator's family (roofline.efficiency) instead of the pure roofline.")] = False,
        json: JsonOpt = False,
    ) -> None:
        """Best layouts of MODEL on 1+ domains of SYSTEM: Pareto frontier of tokens/s per GPU vs per user."""
        from ..catalog import get_catalog
        from ..planner import Targets, Workload, plan
        from ..roofline import Efficiency

        m = resolve_model(model)
        sysrec = get_catalog().system(system)
        doms = parse_domains(domains)
        for flag, v in (("--ttft-ms", ttft), ("--tpot-ms", tpot), ("--tokens-per-s-per-user", user_rate)):
            if v is not None and not (v > 0 and v != float("inf")):
                raise typer.BadParameter(f"got {v}; a target must be > 0 (omit the flag for no target)", param_hint=flag)
        tg = Targets(ttft_s=None if ttft is None else ttft / 1e3, tpot_s=None if tpot is None else tpot / 1e3,
                     tokens_per_s_per_user=user_rate)
        p = plan(m, sysrec, doms, Workload(prompt, output, context), tg,
                 efficiency=Efficiency(compute_efficiency, memory_efficiency), moe_imbalance=moe_imbalance,
                 scale_up_efficiency=scale_up_efficiency, scale_out_efficiency=scale_out_efficiency,
                 usd_per_gpu_hour=usd_per_gpu_hour, realistic=realistic)
        rows = p.rows(pareto_only=not all_layouts)
        if json:
            return print_json({"model": m.id, "system": sysrec.id, "domains": doms, "realistic": realistic,
                               "counts": p.counts,
                               "layouts": rows, "rejected": p.rejected})
        if not rows:
            from ..errors import DoesNotFitError

            raise DoesNotFitError(f"no layout of {m.id} on {domains} x {sysrec.id} fits and meets the targets "
                                  f"({p.counts['out_of_memory']} out of memory, {p.counts['miss_target']} miss the "
                                  f"target); add --domains, relax the targets or shorten prompt/output")
        best = p.best()
        body = [[f"TP{r['tp']} EP{r['ep']} PP{r['pp']} DP{r['dp']}", r["batch"], f"{r['weights_dtype']}/{r['kv_dtype']}",
                 r["domains"], r["replicas"], fmt(r["tokens_per_s_per_gpu"]), fmt(r["tokens_per_s_per_user"]),
                 fmt(r["usd_per_million_tokens"]), seconds(r["ttft_s"]), seconds(r["tpot_s"]),
                 si_bytes(r["memory_per_gpu_bytes"]), r["bound"] + (" *" if r == best else "")] for r in rows]
        table(f"{m.id} on {domains} x {sysrec.id}: prompt {prompt}, output {output} "
              f"({p.counts['feasible']:,} feasible of {p.counts['candidates']:,} candidates)",
              ["layout", "batch", "w/kv", "domains", "replicas", "tok/s/GPU", "tok/s/user", "$/Mtok", "TTFT",
               "TPOT", "mem/GPU", "bound"], body,
              caption="* most tokens/s per GPU on the frontier; " + (
                  "efficiency model (roofline.efficiency, central factors)" if realistic
                  else "pure roofline unless efficiencies are given"))
        for line in p.rejected:
            print(f"rejected {line}")
