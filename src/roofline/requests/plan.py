"""`plan`: search TP/EP/PP/DP, batch and formats for one model on 1+ domains — the request and
`run_plan`, which returns the `roofline plan --json` dict (docs/parallelism.md)."""

from __future__ import annotations

from typing import Any

from . import resolve, rules
from .base import Field, Fraction, Imbalance, OptDtype, OptReal, OptWhole, Price, Request, Whole


def parse_domains(text, name: str = "--domains") -> list[int]:
    """'4' -> [4]; '1-4' -> [1, 2, 3, 4]; '1,2,8' -> [1, 2, 8]; a list of whole numbers as given."""
    from ..errors import InputError

    out: list[int] = []
    if isinstance(text, int) and not isinstance(text, bool):
        out = [text]
    elif isinstance(text, (list, tuple)):
        out = [rules.whole(name, v) for v in text]
    elif isinstance(text, str):
        try:
            for part in text.split(","):
                if "-" in part:
                    a, b = (int(x) for x in part.split("-", 1))
                    if b - a > 1024:
                        raise ValueError
                    out += list(range(a, b + 1))
                else:
                    out.append(int(part))
        except ValueError:
            raise InputError(f"{name} {text!r} is not N, A-B or a comma list; e.g. {name} 1-4") from None
    else:
        raise InputError(f"{name} must be N, A-B or a comma list, got {rules._shown(text)}; e.g. {name} 1-4")
    if not out or min(out) < 1 or max(out) > 1024:
        raise InputError(f"{name} {text!r} must name domain counts between 1 and 1024; e.g. {name} 1-4")
    return sorted(set(out))


class PlanRequest(Request):
    """The layouts of a model on 1+ scale-up domains of a system for one workload and optional targets."""

    model: Any
    system: Any
    domains: Any = "1"
    prompt: Whole(1, rules.MAX_TOKENS) = 1024
    output: Whole(1, rules.MAX_TOKENS) = 1024
    context: OptWhole(0, rules.MAX_TOKENS) = None
    ttft_ms: OptReal(gt=0, fix="omit the flag for no target") = None
    tpot_ms: OptReal(gt=0, fix="omit the flag for no target") = None
    tokens_per_s_per_user: OptReal(gt=0, fix="omit the flag for no target") = None
    moe_imbalance: Imbalance = 1.0
    scale_up_efficiency: Fraction = 1.0
    scale_out_efficiency: Fraction = 1.0
    compute_efficiency: Fraction = 1.0
    memory_efficiency: Fraction = 1.0
    usd_per_gpu_hour: Price = None
    all_layouts: bool = Field(False, alias="all")
    realistic: bool = False
    spec_gamma: Whole(0, 64) = 0
    spec_alpha: float = 0.7
    draft_fraction: float = 0.05
    disaggregated: bool = False
    pope_layouts: bool = True  # search attention by batch and 2D weight-stationary
    overlap: bool = False  # also search collectives overlapped with compute (realistic plans; opt-in, as step's)
    expert_weights_dtype: OptDtype = None  # the routed experts' format with every searched weight format

    def check(self) -> None:
        f = self.flag
        self._model = resolve.model(self.model, f("model"))
        self._imbalance = resolve.moe_imbalance(self.moe_imbalance, self._model, f("moe_imbalance"))
        self._system = resolve.system(self.system, f("system"))
        self._domains = parse_domains(self.domains, f("domains"))
        rules.context_fits(self._model, self.prompt + self.output, f"{f('prompt')} + {f('output')} =",
                           f"shorten the prompt or output to fit {self._model.max_context:,} tokens")
        if self.context is not None:
            rules.context_fits(self._model, self.context + 1, f"{f('context')} + 1 =")
        rules.speculation(f("spec_alpha"), self.spec_alpha, f("draft_fraction"), self.draft_fraction)
        if self.overlap and not self.realistic:
            raise rules.UsageError(f"{f('overlap')} needs {f('realistic')}: the pure roofline already overlaps "
                                   "collectives with compute; add it or drop the overlap search")
        rules.expert_dtype(f("expert_weights_dtype"), self._model, self._system.accelerator, self.expert_weights_dtype)
        # --realistic with explicit efficiencies: refused by planner.plan itself (one rule, one place)


def speculation(req: PlanRequest):
    """--spec-gamma γ --spec-alpha α --draft-fraction f for every candidate's decode (None without γ)."""
    from ..speculative import Speculation

    return Speculation(req.spec_gamma, req.spec_alpha, req.draft_fraction) if req.spec_gamma else None


def run_plan(req: PlanRequest) -> dict:
    """The `roofline plan --json` dict: frontier (or every feasible layout with `all`), counts, rejections."""
    from ..efficiency import Efficiency
    from ..planner import Targets, Workload, plan

    tg = Targets(ttft_s=None if req.ttft_ms is None else req.ttft_ms / 1e3,
                 tpot_s=None if req.tpot_ms is None else req.tpot_ms / 1e3,
                 tokens_per_s_per_user=req.tokens_per_s_per_user)
    p = plan(req._model, req._system, req._domains, Workload(req.prompt, req.output, req.context), tg,
             efficiency=Efficiency(req.compute_efficiency, req.memory_efficiency), moe_imbalance=req._imbalance,
             scale_up_efficiency=req.scale_up_efficiency, scale_out_efficiency=req.scale_out_efficiency,
             usd_per_gpu_hour=req.usd_per_gpu_hour, realistic=req.realistic, speculation=speculation(req),
             disaggregated=req.disaggregated, pope_layouts=req.pope_layouts,
             overlap_search=req.overlap, expert_weights_dtype=req.expert_weights_dtype)
    rows = p.rows(pareto_only=not req.all_layouts)
    best = p.best()
    d = {"model": req._model.id, "system": req._system.id, "domains": req._domains, "realistic": req.realistic,
         "counts": p.counts, "layouts": rows, "rejected": p.rejected,
         "simulate": None if best is None else simulate_command(req, best)}
    if req.disaggregated:  # fluid prefill and decode pools, a layout each (planner._disaggregated)
        d["disaggregated"] = p.extra["disaggregated"]
    return rules.finite(d, f"plan of {req._model.id} on {req._system.id}")


#: the planned replica's request rate a printed `simulate` command offers (below 1: a bounded queue)
SIMULATE_LOAD = 0.9


def simulate_command(req: PlanRequest, row: dict) -> dict:
    """A `roofline simulate` command that runs one replica of a plan row: its decode layout (requests/layout_opts
    flags, with its attention sharding and weight-stationary layout; --overlap for an overlap row), formats,
    batch as --max-seqs, the plan's fixed prompt/output lengths, Poisson arrivals at
    SIMULATE_LOAD x the replica's planned requests/s (tokens/s per GPU x the deployment's GPUs / replicas /
    output), and the plan's efficiency switches. Returns {argv, command, rate_requests_per_s, requests, ignores}:
    what the plan models that the simulator does not run (CP prefill, scale-up/out efficiencies)."""
    import math
    import shlex

    from ..layout import Layout, domains_per_replica
    from .layout_opts import flags

    chips = req._system.chips
    tp, ep, pp, dp, mt = (int(row[k]) for k in ("tp", "ep", "pp", "dp", "moe_tp"))
    derived = tp if dp % ep == 0 else 1
    doms = math.ceil(float(domains_per_replica(tp * dp, pp, chips)))
    lay = Layout(tp=tp, ep=ep, pp=pp, dp=dp, domains=max(doms, 1), redundant_experts=int(row["redundant_experts"]),
                 expert_tp=None if mt == derived else mt, attention=row.get("attention", "heads"),
                 weight_stationary=row.get("weight_stationary", "1d"))
    per_replica = row["tokens_per_s_per_gpu"] * row["domains"] * chips / row["replicas"] / req.output
    rate = float(f"{SIMULATE_LOAD * per_replica:.4g}")
    n = max(1000, 4 * int(row["batch"]))
    argv = ["roofline", "simulate", "-m", req._model.id, "-s", req._system.id, *flags(lay),
            "--weights-dtype", row["weights_dtype"], *(["--expert-weights-dtype", row["expert_weights_dtype"]]
                                                       if row.get("expert_weights_dtype", row["weights_dtype"])
                                                       != row["weights_dtype"] else []),
            "--kv-dtype", row["kv_dtype"], "--max-seqs", str(row["batch"]),
            "--max-batched-tokens", str(max(8192, int(row["batch"]) + dp * pp * req.prompt)),
            "--lengths", "fixed", "--prompt-tokens", str(req.prompt), "--output-tokens", str(req.output),
            "--rate", f"{rate:g}", "-n", str(n)]
    if req.moe_imbalance != 1.0:
        argv += ["--moe-imbalance", str(req.moe_imbalance)]
    if req.realistic:
        argv += ["--realistic"]
    if row.get("overlap"):  # the row's collectives overlapped with its kernels (realistic plans only)
        argv += ["--overlap"]
    for k in ("compute_efficiency", "memory_efficiency", "usd_per_gpu_hour"):
        if req.changed(k):
            argv += [f"--{k.replace('_', '-')}", f"{getattr(req, k):g}"]
    if req.spec_gamma:
        argv += ["--spec-gamma", str(req.spec_gamma), "--spec-alpha", f"{req.spec_alpha:g}", "--draft-fraction",
                 f"{req.draft_fraction:g}"]
    ignores = []
    if int(row["cp"]) > 1:
        ignores.append(f"the plan's CP {row['cp']} prefill: one simulated layout runs prefill and decode alike (CP "
                       f"for a prefill pool: --policy disaggregated --prefill-layout)")
    if req.scale_up_efficiency != 1.0 or req.scale_out_efficiency != 1.0:
        ignores.append("--scale-up-efficiency/--scale-out-efficiency (simulate has no such options)")
    return {"argv": argv, "command": shlex.join(argv), "rate_requests_per_s": rate, "requests": n,
            "ignores": ignores}
