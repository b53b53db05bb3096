"""Scenario grids: many simulations in one call, one row per scenario, on any executor.

A scenario is one simulation: an arrival rate, a batching policy, a layout (`pool`: the chips as one
tensor-parallel group, `RooflineStep`; or `TP4 DP2`, `TP8 EP8`, ...: one replica of that layout,
`LayoutStep`, with its collectives) and a workload (arrival process, length distributions, count).
A grid is the cross product of axes, given inline

    rate=5,10,20,40;policy=continuous,chunked;layout=TP8,TP4 DP2

or as a small YAML file (`base` options for every scenario, `grid` axes crossed in order, optional
explicit `scenarios` appended):

    base: {requests: 2000, prompt_tokens: 1024, output_tokens: 256}
    grid: {rate: [5, 10, 20, 40], layout: [TP8, TP4 DP2]}
    scenarios: [{rate: 30, policy: static, max_seqs: 64}]

Seeds: every scenario's randomness comes from `SeedSequence(run seed, spawn_key=(crc32 of its workload
options,))` — its arrivals and lengths from one child, the simulator's draws (speculation) from the
other. So scenarios that differ only in policy or layout see the same requests (common random
numbers: differences between rows are the policy's or layout's, not the sampling's), a scenario's
row does not depend on the other scenarios of the grid, and no executor can change a result.

`replicas` R > 1 spreads the traffic evenly over R identical replicas (Poisson thinning keeps each
stream Poisson at rate/R): one replica is simulated with ceil(n/R) requests at rate/R, and its
throughput and goodput are multiplied by R. This ignores the router's imbalance between replicas.
"""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from .policies import POLICIES, Targets

# the options that define a scenario's requests (its seed is derived from them)
WORKLOAD_KEYS = ("rate", "arrivals", "cv", "lengths", "prompt_tokens", "output_tokens", "sigma", "requests",
                 "replicas")
MAX_SCENARIOS = 10_000


@dataclass(frozen=True)
class Scenario:
    """One simulation of a grid (defaults as `roofline simulate`); `label` names it in rows and errors."""

    rate: float = 10.0
    policy: str = "continuous"
    layout: str = "pool"
    arrivals: str = "poisson"
    cv: float = 2.0
    lengths: str = "lognormal"
    prompt_tokens: int = 1024
    output_tokens: int = 256
    sigma: float = 1.0
    requests: int = 1000
    max_seqs: int = 256
    max_batched_tokens: int = 8192
    interval_s: float = 0.020
    preemption: bool = True
    replicas: int = 1
    weights_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    engine: str = "none"  # serving-engine overheads (simulate.overheads, catalog/data/engines.yaml)
    label: str = ""


KEYS = {f.name: f.type for f in fields(Scenario) if f.name != "label"}
_TYPES = {"float": float, "int": int, "str": str, "bool": bool}


@dataclass(frozen=True)
class GridContext:
    """What every scenario shares: model and system records, chips of a `pool` layout, efficiency
    factors, price, goodput targets, the run's seed and, optionally, a trace replacing generated
    requests (then the workload keys other than `replicas` must not vary)."""

    model: Any
    system: Any
    chips: int | None = None
    efficiency: Any = None  # an efficiency.Efficiency; None = the pure roofline
    usd_per_gpu_hour: float | None = None
    targets: Targets = Targets()
    seed: int = 0
    trace: Any = None
    realistic: bool = False  # step times from the accelerator family's cited factors (efficiency.realistic)
    moe_imbalance: Any = 1.0  # engine.step's moe_imbalance: a number, "sampling" or a model.ExpertSkew


# ---- parsing ----------------------------------------------------------------------------------------
_DEGREE = r"(moe[-_]?tp|tp|ep|pp|dp|r)\s*=?\s*(\d+)"
_WORD = r"\b(attnbatch|ws2d|wsgathered|overlap)\b"  # Pope et al. 2022: attention by batch, 2D / gathered; overlap


def parse_layout(text: str):
    """'pool' -> None; 'TP4 DP2', 'tp4xdp2', 'TP8-EP8', 'TP4 EP72 DP18 MOETP4 R32' -> the Layout of one replica
    (MOETP: GPUs per routed expert, layout.Layout.expert_tp; R: redundant expert copies; the words ATTNBATCH,
    WS2D and WSGATHERED: attention by batch, 2D weight-stationary and weight-gathered, Pope et al. 2022; OVERLAP is
    read by `layout_overlap`).
    One-line InputError otherwise."""
    from ..layout import Layout

    t = str(text).strip().lower()
    if t in ("pool", "pooled", ""):
        return None
    words = re.findall(_WORD, t)
    t = re.sub(_WORD, " ", t)
    parts = [(k.replace("-", "").replace("_", ""), v) for k, v in re.findall(_DEGREE, t)]
    rest = re.sub(_DEGREE, "", t)
    if not parts or re.sub(r"[\s,x×*_/-]", "", rest) or len({k for k, _ in parts}) != len(parts) \
            or len(set(words)) != len(words) or {"ws2d", "wsgathered"} <= set(words):
        raise InputError(f"layout {text!r} is not understood; expected 'pool' or degrees like 'TP4 DP2', 'TP8 EP8' "
                         f"or 'TP4 EP72 DP18 MOETP4 R32' (each of TP, EP, PP, DP, MOETP, R at most once; then "
                         f"ATTNBATCH, WS2D or WSGATHERED, OVERLAP at most once)")
    d = {k: int(v) for k, v in parts}
    if min(v for k, v in d.items() if k != "r") < 1:
        raise InputError(f"layout {text!r}: every degree must be >= 1")
    return Layout(tp=d.get("tp", 1), ep=d.get("ep", 1), pp=d.get("pp", 1), dp=d.get("dp", 1),
                  expert_tp=d.get("moetp"), redundant_experts=d.get("r", 0),
                  attention="batch" if "attnbatch" in words else "heads",
                  weight_stationary="2d" if "ws2d" in words else "gathered" if "wsgathered" in words else "1d")


def layout_overlap(text: str) -> bool:
    """Whether a grid layout name asks for its collectives overlapped with its kernels (the OVERLAP word:
    `simulate --overlap`, the realistic model's factors with overlap_comm)."""
    return "overlap" in re.findall(_WORD, str(text).strip().lower())


def layout_label(lay, overlap: bool = False) -> str:
    """The grid's name of a Layout (parse_layout reads it back): TP EP PP DP, then MOETP and R when set, then
    ATTNBATCH, WS2D / WSGATHERED and OVERLAP (`overlap`) when set."""
    out = f"TP{lay.tp} EP{lay.ep} PP{lay.pp} DP{lay.dp}"
    out += f" MOETP{lay.expert_tp}" if lay.expert_tp is not None else ""
    out += f" R{lay.redundant_experts}" if lay.redundant_experts else ""
    out += " ATTNBATCH" if lay.attention == "batch" else ""
    out += " WS2D" if lay.weight_stationary == "2d" else " WSGATHERED" if lay.weight_stationary == "gathered" else ""
    return out + (" OVERLAP" if overlap else "")


def _convert(key: str, value, where: str):
    if key not in KEYS:
        raise InputError(f"{where}: unknown scenario key {key!r}; expected one of {', '.join(KEYS)}")
    typ = _TYPES[str(KEYS[key])]
    try:
        if typ is bool:
            if isinstance(value, bool):
                return value
            v = str(value).strip().lower()
            if v not in ("true", "false", "yes", "no", "1", "0"):
                raise ValueError
            return v in ("true", "yes", "1")
        if typ is int:
            f = float(value)
            if f != int(f):
                raise ValueError
            return int(f)
        if typ is float:
            return float(value)
        return str(value).strip()
    except (TypeError, ValueError):
        raise InputError(f"{where}: {key} = {value!r} is not a{'n' if typ is int else ''} "
                         f"{typ.__name__}") from None


def _check(sc: Scenario) -> Scenario:
    where = f"scenario {sc.label!r}"
    if sc.policy not in POLICIES:
        raise InputError(f"{where}: unknown policy {sc.policy!r}; expected one of {', '.join(POLICIES)}")
    parse_layout(sc.layout)
    from .overheads import engine_names

    if sc.engine not in engine_names():
        raise InputError(f"{where}: engine must be one of {', '.join(engine_names())}, got {sc.engine!r}; pick "
                         f"one of those")
    for k in ("rate", "cv", "interval_s"):
        if not (getattr(sc, k) > 0 and math.isfinite(getattr(sc, k))):
            raise InputError(f"{where}: {k} must be > 0, got {getattr(sc, k):g}")
    for k in ("requests", "max_seqs", "max_batched_tokens", "replicas", "prompt_tokens", "output_tokens"):
        if getattr(sc, k) < 1:
            raise InputError(f"{where}: {k} must be >= 1, got {getattr(sc, k)}")
    return sc


def expand(axes: dict, base: dict | None = None, extra: list | None = None, where: str = "grid") -> list[Scenario]:
    """Cross product of `axes` {key: [values]} (in the given key order) over `base`, then `extra`
    scenarios (dicts); labels name the axis values (`rate=10 layout=TP8`)."""
    base_kw = {k: _convert(k, v, f"{where} base") for k, v in (base or {}).items()}
    out: list[Scenario] = []
    keys = list(axes)
    vals = []
    for k in keys:
        v = axes[k] if isinstance(axes[k], (list, tuple)) else [axes[k]]
        if not v:
            raise InputError(f"{where}: axis {k!r} has no values")
        vals.append([_convert(k, x, f"{where} axis {k}") for x in v])
    total = math.prod(len(v) for v in vals) + len(extra or [])
    if total > MAX_SCENARIOS:
        raise InputError(f"{where}: {total:,} scenarios, more than {MAX_SCENARIOS:,}; split the grid")
    if keys:
        for combo in np.ndindex(*(len(v) for v in vals)):
            kw = {k: vals[j][i] for j, (k, i) in enumerate(zip(keys, combo))}
            label = " ".join(f"{k}={_fmt(v)}" for k, v in kw.items())
            out.append(_check(Scenario(**{**base_kw, **kw}, label=label)))
    for j, e in enumerate(extra or []):
        if not isinstance(e, dict):
            raise InputError(f"{where}: scenarios[{j}] must be a mapping of scenario keys, got {e!r}")
        kw = {k: _convert(k, v, f"{where} scenarios[{j}]") for k, v in e.items()}
        label = " ".join(f"{k}={_fmt(v)}" for k, v in kw.items()) or f"scenario {j}"
        out.append(_check(Scenario(**{**base_kw, **kw}, label=label)))
    if not out:
        raise InputError(f"{where}: no scenarios; give axes such as rate=5,10,20")
    return out


def _fmt(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def parse_grid(spec: str, base: dict | None = None) -> list[Scenario]:
    """Scenarios from an inline spec `key=v1,v2;key=v1,v2` or a YAML file (module docstring);
    `base` holds options given on the command line, which the file's `base` overrides."""
    p = Path(spec)
    if p.suffix.lower() in (".yaml", ".yml"):
        if not p.is_file():
            raise InputError(f"grid file {spec!r} does not exist; give a YAML file or an inline grid like "
                             f"rate=5,10,20;policy=continuous,chunked")
        import yaml

        try:
            doc = yaml.safe_load(p.read_text()) or {}
        except yaml.YAMLError as exc:
            raise InputError(f"{p.name}: not valid YAML ({str(exc).splitlines()[0]})") from None
        if not isinstance(doc, dict) or set(doc) - {"base", "grid", "scenarios"}:
            extra = sorted(set(doc) - {"base", "grid", "scenarios"}) if isinstance(doc, dict) else doc
            raise InputError(f"{p.name}: unexpected top-level {extra!r}; expected the keys base, grid, scenarios")
        for k, typ in (("base", dict), ("grid", dict), ("scenarios", list)):
            if doc.get(k) is not None and not isinstance(doc[k], typ):
                raise InputError(f"{p.name}: {k} must be a {'mapping' if typ is dict else 'list'}")
        return expand(doc.get("grid") or {}, {**(base or {}), **(doc.get("base") or {})}, doc.get("scenarios"),
                      where=p.name)
    axes: dict = {}
    for part in (x for x in spec.split(";") if x.strip()):
        if "=" not in part:
            raise InputError(f"grid part {part!r} is not key=v1,v2; e.g. --grid 'rate=5,10;policy=continuous,chunked'")
        k, v = part.split("=", 1)
        k = k.strip().replace("-", "_")
        if k in axes:
            raise InputError(f"grid names {k!r} twice; give each axis once")
        axes[k] = [x for x in v.split(",") if x.strip()]
    return expand(axes, base)


# ---- running ----------------------------------------------------------------------------------------
def scenario_seeds(seed: int, sc: Scenario) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
    """(workload, simulator) seed sequences of a scenario: children of SeedSequence(seed, spawn_key=
    (crc32 of the workload options,)) — stable across processes and machines (crc32, not hash())."""
    key = repr(tuple((k, getattr(sc, k)) for k in WORKLOAD_KEYS)).encode()
    w, s = np.random.SeedSequence(int(seed), spawn_key=(zlib.crc32(key),)).spawn(2)
    return w, s


def deployment_for(ctx: GridContext, sc: Scenario):
    """The scenario's Deployment: the pooled chips (roofline_deployment) or one replica of its layout."""
    from .steptable import deployment, roofline_deployment

    lay = parse_layout(sc.layout)
    kw = dict(efficiency=ctx.efficiency, weights_dtype=sc.weights_dtype, kv_dtype=sc.kv_dtype,
              usd_per_gpu_hour=ctx.usd_per_gpu_hour)
    if not (isinstance(ctx.moe_imbalance, (int, float)) and ctx.moe_imbalance == 1.0):
        kw["moe_imbalance"] = ctx.moe_imbalance
    if ctx.realistic:
        kw["realistic"] = True
    if layout_overlap(sc.layout):  # the family's factors with overlap_comm, given explicitly (as `simulate --overlap`)
        if not ctx.realistic or lay is None:
            raise InputError(f"layout {sc.layout!r}: OVERLAP overlaps a layout's collectives with its kernels in the "
                             f"realistic model; add --realistic and a layout, or drop OVERLAP")
        from ..efficiency import realistic

        kw.update(efficiency=realistic(ctx.system.accelerator, sc.weights_dtype, "mid", overlap_comm=True),
                  realistic=False)
    from .overheads import EngineOverheads, with_engine
    from .steptable import with_kernel_tables

    ovh = EngineOverheads.load(sc.engine)
    dep = (roofline_deployment(ctx.model, ctx.system, chips=ctx.chips, **kw) if lay is None
           else deployment(ctx.model, ctx.system, lay, **kw))
    if kernels_for(ctx, sc) == "tables":  # as `simulate --kernels auto`
        dep = with_kernel_tables(dep, sc.engine)
    return with_engine(dep, ovh)


def kernels_for(ctx: GridContext, sc: Scenario) -> str:
    """The scenario's kernel times: `simulate --kernels auto`'s rule (kernels.default_kernels)."""
    if not ctx.realistic or sc.engine == "none":
        return "factor"
    from ..kernels import default_kernels

    return default_kernels(ctx.system.accelerator.id, sc.engine, realistic=True)


def check_context(ctx: GridContext, sc: Scenario) -> None:
    """The scenario's median prompt + output must fit the model's context (draws are capped to it)."""
    maxc = ctx.model.max_context
    if maxc and sc.prompt_tokens + sc.output_tokens > maxc:
        raise InputError(f"scenario {sc.label!r}: prompt_tokens + output_tokens = "
                         f"{sc.prompt_tokens + sc.output_tokens:,} exceeds {ctx.model.id}'s max_context {maxc:,}; "
                         f"lower them to fit")


def run_scenario(ctx: GridContext, sc: Scenario) -> dict:
    """Simulate one scenario; its row: the scenario's options, gpus, and the metrics.summarize keys
    (throughput and goodput for all replicas) plus goodput_per_gpu, kv_capacity_tokens and the saturation keys
    of simulate/capacity.py (offered rate and capacity for all replicas)."""
    from .capacity import capacity, saturation
    from .core import Simulation
    from .metrics import summarize
    from .overheads import EngineOverheads, engine_policy, run_with_engine
    from .policies import Policy
    from .workload import generate

    w_seq, s_seq = scenario_seeds(ctx.seed, sc)
    r = sc.replicas
    maxc = ctx.model.max_context or None
    if ctx.trace is not None:
        wl = ctx.trace
        if r > 1:
            raise InputError("a trace is replayed on one replica; drop replicas or the trace")
        total = wl.prompt_tokens + wl.output_tokens
        if maxc and np.any(total > maxc):
            k = int(np.argmax(total > maxc))
            raise InputError(f"trace request {k} has prompt + output = {total[k]:,.0f} tokens, more than "
                             f"{ctx.model.id}'s max_context {maxc:,}; shorten it or use a longer-context model")
    else:
        check_context(ctx, sc)
        wl = generate(np.random.default_rng(w_seq), rate_per_s=sc.rate / r, n=math.ceil(sc.requests / r),
                      arrivals=sc.arrivals, cv=sc.cv, lengths_kind=sc.lengths, prompt_tokens=sc.prompt_tokens,
                      output_tokens=sc.output_tokens, sigma=sc.sigma, max_context=maxc)
    dep = deployment_for(ctx, sc)
    pol = Policy(sc.policy, sc.max_seqs, sc.max_batched_tokens, sc.interval_s, sc.preemption)
    ovh = EngineOverheads.load(sc.engine).for_system(ctx.system)
    pol = engine_policy(pol, ovh)
    tr = run_with_engine(wl, ovh, lambda w: Simulation(w, dep, pol, seed=s_seq).run())
    s = summarize(tr, ctx.targets).to_dict()
    for name in ("throughput_tokens_per_s", "throughput_requests_per_s", "goodput_requests_per_s"):
        s[name] *= r
    gpus = dep.gpus * r
    row = {"scenario": sc.label, **{k: v for k, v in asdict(sc).items() if k != "label"}, "gpus": gpus,
           "kv_capacity_tokens": dep.kv_capacity_tokens, **s}
    row["goodput_per_gpu"] = s["goodput_requests_per_s"] / gpus
    if ctx.realistic:
        row["kernels"] = kernels_for(ctx, sc)
    sat = saturation(tr.arrival_s, tr.admit_s, capacity(wl, dep, pol))  # per replica: rates times r below
    for name in ("offered_requests_per_s", "capacity_requests_per_s"):
        if sat.get(name) is not None:
            sat[name] *= r
    row.update(sat)
    if not ovh.is_none:
        from .overheads import workers_of

        row.update(ovh.terms(wl.prompt_tokens, s["mean_batch"], workers=workers_of(dep)[0]))
    return row


def run_grid(ctx: GridContext, scenarios: list[Scenario], *, workers: int | None = 1, scheduler: str | None = None,
             retries: int = 2, progress=None) -> list[dict]:
    """One row per scenario, in order, via executors.run_tasks (in process, LocalCluster or a scheduler)."""
    from ..executors import run_tasks

    if ctx.trace is not None:
        varying = [k for k in WORKLOAD_KEYS if k != "replicas" and len({getattr(s, k) for s in scenarios}) > 1]
        if varying:
            raise InputError(f"a trace fixes the requests; the grid must not vary {', '.join(varying)}")
    if ctx.trace is None:  # refuse before anything runs
        for s in scenarios:
            check_context(ctx, s)
    labels = [s.label for s in scenarios]
    if len(set(labels)) != len(labels):
        scenarios = [replace(s, label=f"#{i} {s.label}") for i, s in enumerate(scenarios)]
    return run_tasks(run_scenario, [(ctx, s) for s in scenarios], [s.label for s in scenarios], workers=workers,
                     scheduler=scheduler, retries=retries, progress=progress,
                     work=float(sum(s.requests for s in scenarios)))
