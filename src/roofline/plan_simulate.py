"""`plan --simulate K`: re-rank the K best analytic layouts of a plan by simulated goodput.

The planner ranks layouts by tokens/s per GPU at a full batch, from one decode pass and one prefill
pass (planner.py). Under real traffic three things it does not see decide whether a layout holds its
TTFT/TPOT targets: queueing (requests wait when the replicas are busy), mixed passes (continuous
batching runs prompts in the same passes as decodes, so TPOT exceeds the pure-decode pass), and a
batch that the traffic never fills (a layout sized for batch 256 at 20 requests/s runs far fewer
sequences, so its tokens/s per GPU is the traffic's, not the roofline's).

So each of the K candidates with the most analytic tokens/s per GPU is simulated (simulate.grid, one
scenario per candidate: its layout, dtypes and batch as `max_seqs` of continuous batching, its replicas
each taking an even share of the traffic) under the same requests (common random numbers), and ranked
by simulated goodput per GPU (requests/s within both targets, DistServe §2), ties by $ per million
tokens. Each row says why the two rankings disagree, from the simulated percentiles against the targets
and the analytic figures. What it ignores: everything simulate.grid and the simulator ignore (router
imbalance between replicas, scheduler overheads); the prompt/output lengths of the analytic plan are
its fixed ones, the simulated ones those of the workload given.
"""

from __future__ import annotations

from .errors import InputError


def candidates(rows: list[dict], k: int) -> list[dict]:
    """The k rows with the most analytic tokens/s per GPU (ties: fewer $/Mtok), best first."""
    if int(k) != k or k < 1:
        raise InputError(f"--simulate must be a whole number of candidates >= 1, got {k}")
    order = sorted(rows, key=lambda r: (-r["tokens_per_s_per_gpu"], r["usd_per_million_tokens"]))
    return order[: int(k)]


def layout_name(r: dict) -> str:
    """The grid's name of a plan row's decode layout (its MoE TP, redundant experts, attention sharding,
    weight-stationary layout and overlap included; the plan's CP prefill is not simulated: one simulated layout runs prefill and decode alike)."""
    from .layout import Layout
    from .simulate.grid import layout_label

    tp, ep, dp = int(r["tp"]), int(r["ep"]), int(r["dp"])
    mt = int(r.get("moe_tp", tp if dp % ep == 0 else 1))
    return layout_label(Layout(tp=tp, ep=ep, pp=int(r["pp"]), dp=dp,
                               expert_tp=None if mt == (tp if dp % ep == 0 else 1) else mt,  # explicit when not derived
                               redundant_experts=int(r.get("redundant_experts", 0)),
                               attention=r.get("attention", "heads"), weight_stationary=r.get("weight_stationary", "1d")),
                        overlap=bool(r.get("overlap", False)))


def reasons(a: dict, s: dict, targets) -> list[str]:
    """Why the simulated row `s` differs from the analytic row `a` (short phrases, most important first)."""
    out = []
    if s["tpot_p99_s"] > targets.tpot_s:
        out.append(f"TPOT p99 {s['tpot_p99_s'] * 1e3:.1f} ms > {targets.tpot_s * 1e3:g} ms target (analytic "
                   f"{a['tpot_s'] * 1e3:.1f} ms is a pure-decode pass; prompts share passes with decodes)")
    if s["ttft_p99_s"] > targets.ttft_s:
        out.append(f"TTFT p99 {s['ttft_p99_s']:.3g} s > {targets.ttft_s:g} s target (queueing at "
                   f"{s['utilisation']:.0%} utilisation; analytic TTFT {a['ttft_s'] * 1e3:.0f} ms has no wait)")
    if s["mean_batch"] < 0.5 * a["batch"]:
        out.append(f"traffic fills {s['mean_batch']:.0f} of {a['batch']} slots per replica, so "
                   f"{s['tokens_per_s_per_gpu']:,.0f} tok/s/GPU instead of {a['tokens_per_s_per_gpu']:,.0f}")
    return out


def simulate_plan(model, system, rows: list[dict], k: int, targets, *, rate: float, requests: int,
                  arrivals: str = "poisson", cv: float = 2.0, lengths: str = "fixed", prompt: int = 1024,
                  output: int = 1024, sigma: float = 1.0, trace=None, seed: int = 0, efficiency=None,
                  realistic: bool = False, usd_per_gpu_hour: float | None = None, workers: int | None = 1,
                  moe_imbalance=1.0,
                  scheduler: str | None = None, progress=None) -> list[dict]:
    """Simulate the k best analytic candidates among the plan's `rows`; one dict per candidate, in
    simulated order: analytic_rank, simulated_rank, the candidate's layout and analytic figures, the
    simulated ones (simulated_*), and `why` (reasons() joined; empty when they agree)."""
    from .simulate.grid import GridContext, Scenario, run_grid

    picked = candidates(rows, k)
    if not picked:
        raise InputError("the plan has no feasible layout to simulate; relax the targets or add --domains")
    ctx = GridContext(model, system, None, efficiency, usd_per_gpu_hour, targets, seed, trace, realistic, moe_imbalance)
    scen = [Scenario(rate=rate, layout=layout_name(r), arrivals=arrivals, cv=cv, lengths=lengths, prompt_tokens=prompt,
                     output_tokens=output, sigma=sigma, requests=requests, max_seqs=int(r["batch"]),
                     max_batched_tokens=max(8192, int(prompt)), replicas=1 if trace is not None else int(r["replicas"]),
                     weights_dtype=r["weights_dtype"], kv_dtype=r["kv_dtype"],
                     label=f"#{i + 1} {layout_name(r)} batch {r['batch']} {r['weights_dtype']}/{r['kv_dtype']}")
            for i, r in enumerate(picked)]
    sims = run_grid(ctx, scen, workers=workers, scheduler=scheduler, progress=progress)
    out = []
    for i, (a, s) in enumerate(zip(picked, sims)):
        s = dict(s, tokens_per_s_per_gpu=s["throughput_tokens_per_s"] / s["gpus"])
        out.append({"analytic_rank": i + 1, "layout": layout_name(a), "batch": a["batch"],
                    "weights_dtype": a["weights_dtype"], "kv_dtype": a["kv_dtype"], "replicas": a["replicas"],
                    "gpus": s["gpus"], "tokens_per_s_per_gpu": a["tokens_per_s_per_gpu"], "ttft_s": a["ttft_s"],
                    "tpot_s": a["tpot_s"], "usd_per_million_tokens": a["usd_per_million_tokens"],
                    **{f"simulated_{k}": s[k] for k in (
                        "goodput_requests_per_s", "goodput_per_gpu", "goodput_fraction", "tokens_per_s_per_gpu",
                        "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "mean_batch", "utilisation",
                        "usd_per_million_tokens")},
                    "_reasons": reasons(a, s, targets)})
    # rank at 3 significant figures, so candidates that only differ by table interpolation tie and keep
    # their analytic order
    out.sort(key=lambda r: (-_sig(r["simulated_goodput_per_gpu"]), _sig(r["simulated_usd_per_million_tokens"]),
                            r["analytic_rank"]))
    for j, r in enumerate(out):
        r["simulated_rank"] = j + 1
        why = r.pop("_reasons")
        if r["simulated_rank"] != r["analytic_rank"]:
            why.insert(0, f"analytic #{r['analytic_rank']} -> simulated #{r['simulated_rank']}")
        r["why"] = "; ".join(why)
    return out


def _sig(x: float) -> float:
    return float(f"{x:.3g}")
