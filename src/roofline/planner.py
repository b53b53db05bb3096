"""Deployment planner: search every layout (TP, EP, PP, DP, batch, weight and KV dtypes, domains) at once.

For a model, a system, a range of domain counts, a workload (prompt, output, context) and targets
(TTFT, TPOT or tokens/s per user) the planner evaluates the whole candidate grid as NumPy arrays with
the pass engine's array core (engine.core; no Python loop over candidates) and returns the Pareto frontier of
output tokens/s per GPU against tokens/s per user (the axes of serving benchmarks such as
SemiAnalysis InferenceMAX), with $ per million output tokens.

Per replica (one model instance of tp·dp·pp GPUs, B sequences decoding together):

    TPOT       = t_loop(decode, B, context)                     tokens/s per user = 1/TPOT
    TTFT       = t_loop(prefill, B_p = dp·pp prompts)           one prompt per DP group per micro-batch
    replica-seconds per request = N_out·TPOT/B + TTFT/B_p        (prefill interleaved with decode)
    deployment on n domains: replicas = ⌊n/domains_per_replica⌋ (or several replicas per domain);
    tokens/s per GPU = replicas·N_out/(replica-seconds per request)/(n·chips)   idle GPUs are paid for
    $/Mtok = n·chips·price/3600/(tokens/s of the deployment)·1e6

Memory: decode weights + KV at prompt+output tokens for B sequences (parallel.memory_per_gpu) plus the
prefill pass's activations must fit `usable_memory` of HBM. The grid also holds MoE TP × EP hybrids and CP
for prefill (TTFT with B_p = dp/cp·pp prompts, each over cp ranks; see `_grid`), Pope et al. 2022's attention by
batch and 2D weight-stationary layouts (STYLES) and, realistic, overlap (`plan`), and `disaggregated=True` pairs
decode points with prefill pools (`_disaggregated`). Ignores: queueing delay in TTFT, decode stalls while
prefill runs (TPOT is the pure decode loop), prefix caching; speculative decoding only when asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from . import layout as P
from . import model as M
from .efficiency import LOW_PRECISION, Efficiency, _by_format, family_efficiency, family_for
from .engine import check_moe_imbalance, core
from .errors import InputError, require_positive
from .hardware import usd_per_gpu_hour as resolve_price
from .memory import DEFAULT_USABLE_MEMORY, activation_bytes, memory_per_gpu
from .units import SECONDS_PER_HOUR, dtype_bytes


@dataclass(frozen=True)
class Workload:
    """Tokens per request: prompt (prefilled), output (decoded); context = KV tokens a decode step
    attends (default prompt + output/2, the mean over the request)."""

    prompt: int = 1024
    output: int = 1024
    context: int | None = None

    def __post_init__(self):
        require_positive("prompt tokens", self.prompt)
        require_positive("output tokens", self.output)
        if self.context is not None:
            require_positive("context", self.context, allow_zero=True)

    @property
    def decode_context(self) -> float:
        return self.prompt + self.output / 2 if self.context is None else self.context


@dataclass(frozen=True)
class Targets:
    """Service targets; None = unconstrained. tokens_per_s_per_user is 1/TPOT."""

    ttft_s: float | None = None
    tpot_s: float | None = None
    tokens_per_s_per_user: float | None = None

    def __post_init__(self):
        for name in ("ttft_s", "tpot_s", "tokens_per_s_per_user"):
            v = getattr(self, name)
            if v is not None and not (np.isfinite(v) and v > 0):
                raise InputError(f"target {name} must be > 0 and finite, got {v}; omit it for no target")


COLUMNS = ("tp", "ep", "pp", "dp", "moe_tp", "cp", "redundant_experts", "attention", "weight_stationary", "overlap",
           "batch", "weights_dtype", "kv_dtype", "expert_weights_dtype", "domains", "replicas", "gpus",
           "tokens_per_s_per_gpu", "tokens_per_s_per_user", "usd_per_million_tokens", "ttft_s", "tpot_s",
           "memory_per_gpu_bytes", "bound")


@dataclass(frozen=True)
class _Memory:
    """The parts of memory.memory_per_gpu the planner reports, gathered onto its candidates."""

    weights_bytes: np.ndarray
    kv_bytes: np.ndarray
    activations_bytes: np.ndarray
    total_bytes: np.ndarray


@dataclass
class Plan:
    """Feasible candidates as columns (arrays), the Pareto mask, and why the best others failed."""

    columns: dict
    pareto: np.ndarray
    rejected: list[str]
    counts: dict
    model: str
    system: str
    hbm_usable_bytes: float
    extra: dict = field(default_factory=dict)

    def rows(self, pareto_only: bool = True) -> list[dict]:
        """Layouts as dicts (SI units), sorted by tokens/s per user, fastest first."""
        idx = np.flatnonzero(self.pareto) if pareto_only else np.arange(len(self.pareto))
        idx = idx[np.argsort(-self.columns["tokens_per_s_per_user"][idx], kind="stable")]
        out = []
        for i in idx:
            r = {k: _py(self.columns[k][i]) for k in COLUMNS}
            r["pareto"] = bool(self.pareto[i])
            out.append(r)
        return out

    def best(self) -> dict | None:
        """The frontier point with the most tokens/s per GPU (cheapest per token) meeting the targets."""
        rows = self.rows()
        return max(rows, key=lambda r: r["tokens_per_s_per_gpu"]) if rows else None


def _py(v):
    v = np.asarray(v).item()
    return v


def pareto_mask(x, y):
    """True where no other point has x' ≥ x and y' ≥ y with one strictly greater (maximise both).

    Vectorised: sort by y descending (x descending on ties) and keep points whose x beats the
    running maximum of every point before them.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size == 0:
        return np.zeros(0, dtype=bool)
    order = np.lexsort((-x, -y))
    xs = x[order]
    prev_max = np.concatenate(([-np.inf], np.maximum.accumulate(xs)[:-1]))
    keep = np.zeros(x.size, dtype=bool)
    keep[order] = xs > prev_max
    return keep


#: the Pope et al. 2022 layouts `plan` searches: (attention sharding, weight-stationary layout) per style index
STYLES = (("heads", "1d"), ("batch", "1d"), ("heads", "2d"), ("batch", "2d"))
#: the smallest TP where the grid tries the 2D weight-stationary layout (its four collectives beat one all-reduce
#: only at large TP: Pope et al. 2022 §3.2.2, Fig. 3)
MIN_TP_2D = 8


def _style_ok(model, tp, style):
    """Where a style is worth searching: attention by batch only where it removes KV replication (TP beyond the KV
    heads, any TP > 1 for MLA's single latent: layout.kv_shard), 2D weight-stationary from MIN_TP_2D on."""
    att, ws = STYLES[int(style)]
    tp = np.asarray(tp)
    ok = np.ones(tp.shape, dtype=bool)
    if att == "batch":
        ok &= tp > (1 if model.mla else model.kv_heads)
    if ws == "2d":
        ok &= tp >= MIN_TP_2D
    return ok


def _grid(model: M.Model, chips: int, max_domains: int, pp_choices, moe_tp_choices=(2, 4, 8), cp_choices=(1,),
          styles=(0,)):
    """Structural candidates: (base, variants).

    base: the decode layouts as columns tp, ep, pp, dp, red (redundant experts), moe_tp (all explicit), style (an
    index into STYLES: attention heads|batch x weight-stationary 1d|2d, Pope et al. 2022) — EP = TP·DP
    over power-of-two DP and, for MoE models, over whole domains (EP 72, 144 on NVL72 racks) with the spare expert
    slots filled by copies of hot experts (R = −E mod EP, EPLB); MoE TP × EP hybrids (each routed expert sliced
    over moe_tp ∈ `moe_tp_choices` GPUs, EP = TP·DP/moe_tp: TensorRT-LLM's attention TP with MoE TP × EP). Styles
    other than 0 (heads, 1d) only where `_style_ok` and on replicas without attention-DP groups (dp = 1: Pope et
    al.'s layouts are TP layouts; with DP groups, sequences are already split by batch, as DP attention does);
    attention by batch lifts the head rule (TP any power of two up to the domain).
    variants: (base index, cp) — the prefill layout of a base splits each prompt over cp of its dp groups
    (context parallelism; cp ∈ `cp_choices` dividing dp; a dense model gets dp = cp groups for it), decode runs
    the base's dp groups. Both are 1-D arrays; `plan` crosses them with batches and formats."""
    batch_styles = any(STYLES[int(st)][0] == "batch" for st in styles)
    tps = [t for t in range(1, chips + 1) if (model.heads % t == 0 or batch_styles) and (t & (t - 1) == 0 or t == chips)]
    max_gpus = chips * max_domains
    pow2 = [2 ** i for i in range(0, int(np.log2(max_gpus)) + 1)]
    combos = []
    for tp in tps:
        combos.append((tp, 1, 1, 0, tp))  # ep = 1, dp = 1 (more copies are replicas)
        if model.moe:
            E = model.moe.experts
            dps = sorted(set(pow2) | {chips * j // tp for j in range(1, max_domains + 1) if (chips * j) % tp == 0})
            for dp in dps:
                g = tp * dp
                if not 1 < g <= max_gpus:
                    continue
                for mt in (1, *moe_tp_choices):  # moe_tp 1: every routed expert whole on one GPU (EP = TP·DP)
                    if mt < g and g % mt == 0 and mt <= chips:
                        ep = g // mt
                        red = -E % ep
                        # copies fill the spare slots (beyond 2 slots per expert nothing is gained); the EP
                        # all-to-all spreads ep evenly over the ceil(g/chips) domains it spans
                        if red <= E and ep % -(-g // chips) == 0:
                            combos.append((tp, ep, dp, red, mt))
        else:  # dense: DP groups inside one replica only matter for CP prefill
            combos += [(tp, 1, c, 0, tp) for c in cp_choices if c > 1 and tp * c <= max_gpus]
    base = np.array([(tp, ep, pp, dp, r, mt, st) for tp, ep, dp, r, mt in combos for pp in pp_choices
                     if pp <= model.layers for st in styles], dtype=float)
    by_batch = np.array([STYLES[int(st)][0] == "batch" for st in base[:, 6]], dtype=bool)
    keep = P.valid_mask(model, chips, base[:, 0], base[:, 1], base[:, 2], base[:, 3], base[:, 4], moe_tp=base[:, 5],
                        by_batch=by_batch)
    for st in styles:
        sel = base[:, 6] == st
        keep[sel] &= _style_ok(model, base[sel, 0], st) & ((st == 0) | (base[sel, 3] == 1))
    base = np.unique(base[keep], axis=0)
    cps = np.asarray(cp_choices, dtype=float)
    vb, vc = (a.ravel() for a in np.meshgrid(np.arange(len(base)), cps, indexing="ij"))
    keep = base[vb, 3] % vc == 0
    if not model.moe:  # a dense replica with dp groups exists for CP only
        keep &= (base[vb, 3] == 1) | (base[vb, 3] == vc)
    return base, vb[keep].astype(np.int64), vc[keep]


def plan(model: M.Model, system, domains=(1,), workload: Workload = Workload(), targets: Targets = Targets(), *,
         weights_dtypes=None, kv_dtypes=("bf16", "fp8"), pp_choices=(1, 2, 4, 8, 16), moe_tp_choices=(2, 4, 8),
         cp_choices=(1, 2, 4, 8),
         batch_choices=None, efficiency: Efficiency = Efficiency(), scale_up_efficiency: float = 1.0,
         scale_out_efficiency: float = 1.0, moe_imbalance: float | str = 1.0, usd_per_gpu_hour: float | None = None,
         usable_memory: float = DEFAULT_USABLE_MEMORY, activation_dtype: str = "bf16",
         realistic: bool = False, which: str = "mid", speculation=None, disaggregated: bool = False,
         pope_layouts: bool = True, overlap_search: bool = False, expert_weights_dtype: str | None = None) -> Plan:
    """Evaluate every candidate layout in one vectorised pass; see the module docstring.

    realistic: step times from the efficiency model of the accelerator's family (the engine with the
    family's factors, each candidate's weight format picking its GEMM and streaming factors) instead of
    the pure roofline; `which` picks its central value or a corner of the factors' spread. It replaces
    the explicit efficiency arguments, which must then stay at their defaults. `speculation`
    (speculative.Speculation) decodes every candidate with γ draft tokens at acceptance α: TPOT = (verify
    pass of γ + 1 tokens + γ·f decode steps)/E. `disaggregated` also pairs every decode point with the prefill
    pool layout of the same formats that needs the fewest GPU-seconds per prompt (`_disaggregated`), in
    `Plan.extra["disaggregated"]`. `pope_layouts` searches Pope et al. 2022's attention by batch and 2D
    weight-stationary layouts (STYLES, where `_style_ok`); `overlap_search` (realistic only) each layout with its
    collectives overlapped with its kernels (`step --overlap`) where it has collectives and a batch of two
    micro-batches, each filling its sequence slots. `expert_weights_dtype` (MoE models): the routed experts stored,
    streamed and multiplied in that format with every candidate weight format (`step --expert-weights-dtype`).
    """
    doms = np.unique(np.asarray(domains, dtype=int))
    if doms.size == 0 or doms.min() < 1:
        raise InputError(f"domains must be whole numbers >= 1, got {list(domains)}; e.g. --domains 1-4")
    check_moe_imbalance(moe_imbalance)
    if weights_dtypes is None:  # the formats with native matmul throughput on this accelerator
        weights_dtypes = [d for d in ("bf16", "fp8", "fp4") if d in system.accelerator.flops_per_s] or ["bf16"]
    if batch_choices is None:
        batch_choices = np.unique(np.round(np.geomspace(1, 2 ** 16, 49)))
    dtypes = [(w, k) for w in weights_dtypes for k in kv_dtypes]
    for w, k in dtypes:
        dtype_bytes(w), dtype_bytes(k)
    chips, acc = system.chips, system.accelerator
    ex = expert_weights_dtype if expert_weights_dtype is not None and model.moe else None
    experts = (dtype_bytes(ex), acc.peak_flops(ex), ex.lower() in LOW_PRECISION) if ex else None
    b_we = dtype_bytes(ex) if ex else None
    styles = tuple(range(len(STYLES))) if pope_layouts else (0,)
    base, vb, vc = _grid(model, chips, int(doms.max()), pp_choices, moe_tp_choices, cp_choices, styles)
    nd = len(dtypes)
    # decode points: base layout x batch x format (batch >= the sequence slots); CP does not change them
    bi, bb, bd = (a.ravel() for a in np.meshgrid(np.arange(len(base)), np.asarray(batch_choices, dtype=float),
                                                 np.arange(nd), indexing="ij"))
    slots = base[:, 3] * base[:, 2] * np.where(base[:, 6] % 2 == 1, base[:, 0], 1.0)  # STYLES odd: attention by batch
    ok_batch = bb >= slots[bi]
    bi, bb, bd = bi[ok_batch], bb[ok_batch], bd[ok_batch]
    # overlap (realistic only: the pure roofline already takes max(kernels, collectives)): on where the step has
    # collectives (TP or EP > 1) and its batch splits into two micro-batches that each fill the slots (two-batch
    # overlap), off elsewhere. Where it is on, the same point without it is dominated — same GPUs and memory, TPOT
    # and TTFT never shorter (max(kernels, comm) <= their sum) — so it is not crossed into candidates.
    ovs = (0.0, 1.0) if realistic and overlap_search else (0.0,)
    nov = len(ovs)
    has_comm = (base[:, 0] > 1) | (base[:, 1] > 1)
    bo = np.where((nov > 1) & has_comm[bi] & (bb >= 2 * slots[bi]), 1.0, 0.0)
    # candidates: each prefill variant (base, cp) with every decode point of its base (points are grouped by base)
    start = np.searchsorted(bi, np.arange(len(base)))
    count = np.searchsorted(bi, np.arange(len(base)), side="right") - start
    per_var = count[vb]
    cand_var = np.repeat(np.arange(vb.size), per_var)
    cand_dec = np.repeat(start[vb] - np.cumsum(per_var) + per_var, per_var) + np.arange(per_var.sum())
    b_w_of = np.array([dtype_bytes(w) for w, _ in dtypes])
    b_kv_of = np.array([dtype_bytes(k) for _, k in dtypes])
    peak_of = np.array([acc.peak_flops(w) for w, _ in dtypes])
    w_of = np.array([w for w, _ in dtypes])
    price = resolve_price(system, usd_per_gpu_hour)
    if realistic:
        if efficiency != Efficiency() or scale_up_efficiency != 1.0 or scale_out_efficiency != 1.0:
            raise InputError("realistic planning uses the efficiency model's own factors; drop the explicit "
                             "compute/memory/scale-up/scale-out efficiencies or the realistic switch")

    def kw(di, ov=0.0):
        w_names = w_of[di]
        eff = (family_efficiency(family_for(acc), w_names, which, overlap_comm=bool(ov), expert_weights_dtype=ex)
               if realistic else replace(efficiency, scale_up=scale_up_efficiency, scale_out=scale_out_efficiency))
        return dict(b_w=b_w_of[di], b_kv=b_kv_of[di], b_act=dtype_bytes(activation_dtype), peak_w=peak_of[di],
                    peak_act=acc.peak_flops(activation_dtype), eff=eff,
                    low_precision=_by_format(w_names, lambda n: n.lower() in LOW_PRECISION), imbalance=moe_imbalance,
                    price=price, usable_memory=usable_memory, experts=experts)

    def layout(rows, cp=1.0, st=0):
        tp_, ep_, pp_, dp_, red_, mt_ = (base[rows, j] for j in range(6))
        att, ws = STYLES[int(st)]
        return P.Layout(tp=tp_, ep=ep_, pp=pp_, dp=dp_ / cp, cp=cp, domains=int(doms.max()), redundant_experts=red_,
                        expert_tp=mt_, attention=att, weight_stationary=ws)

    # the engine takes one attention sharding and weight-stationary layout per call: one vectorised call per
    # (style, overlap) pair present, each over all of its decode points
    tpot = np.empty(bi.size)
    bound = np.empty(bi.size, dtype="<U8")
    mem_total_d, mem_w, mem_kv, mem_act = (np.empty(bi.size) for _ in range(4))
    for st in np.unique(base[bi, 6]):
        in_st = base[bi, 6] == st
        # memory: weights, KV (attention by batch shards it tp ways) and activations; overlap changes no byte
        m_ = memory_per_gpu(model, layout(bi[in_st], 1.0, st), bb[in_st], workload.prompt + workload.output,
                            bytes_per_weight=b_w_of[bd[in_st]], bytes_per_kv=b_kv_of[bd[in_st]],
                            bytes_per_expert_weight=b_we)
        mem_w[in_st], mem_kv[in_st], mem_act[in_st], mem_total_d[in_st] = (
            m_.weights_bytes, m_.kv_bytes, m_.activations_bytes, m_.total_bytes)
        for ov in ovs:
            sel = in_st & (bo == ov)
            if not sel.any():
                continue
            lay, kd = layout(bi[sel], 1.0, st), kw(bd[sel], ov)
            dec = core(model, system, lay, bb[sel], workload.decode_context, 1.0, "decode", **kd)
            t_sel, bound[sel] = dec.step_s, dec.bound_name
            if speculation is not None:  # a verify pass of γ + 1 tokens and γ drafts emit E tokens per sequence
                from .speculative import expected_tokens_per_step

                verify = core(model, system, lay, bb[sel], workload.decode_context, float(speculation.gamma + 1),
                              "prefill", **kd)
                e = float(expected_tokens_per_step(speculation.alpha, speculation.gamma))
                t_sel = (verify.step_s + speculation.gamma * speculation.draft_fraction * dec.step_s) / e
                bound[sel] = verify.bound_name
            tpot[sel] = t_sel
    mem = _Memory(mem_w, mem_kv, mem_act, mem_total_d)
    # prefill points: variant x format x overlap, dp/cp groups each prefilling one prompt per micro-batch over cp GPUs
    pv, pd, po = (a.ravel() for a in np.meshgrid(np.arange(vb.size), np.arange(nd), np.arange(nov), indexing="ij"))
    b_pre = base[vb[pv], 3] / vc[pv] * base[vb[pv], 2]
    ttft_p = np.empty(pv.size)
    for c in np.unique(vc):  # the engine takes one CP degree and style per call: one vectorised call per pair
        for st in np.unique(base[vb, 6]):
            for oi, ov in enumerate(ovs):
                sel = (vc[pv] == c) & (base[vb[pv], 6] == st) & (po == oi)
                if sel.any():
                    ttft_p[sel] = core(model, system, layout(vb[pv][sel], float(c), st), b_pre[sel], 0.0,
                                       float(workload.prompt), "prefill", times_only=True, **kw(pd[sel], ov))
    tpot_dec, bound_dec = tpot, bound
    # crossed: candidate = (variant, decode point of its base)
    di = bd[cand_dec]
    oi_c = np.searchsorted(np.asarray(ovs), bo[cand_dec])
    tp, ep, pp, dp, red, mt, sty = (base[bi[cand_dec], j] for j in range(7))
    cp, batch = vc[cand_var], bb[cand_dec]
    pidx = (cand_var * nd + di) * nov + oi_c
    ttft, b_p = ttft_p[pidx], b_pre[pidx]
    tpot, bound = tpot[cand_dec], bound[cand_dec]
    n_struct = int(vb.size * len(batch_choices) * nd * nov)
    prefill_act = activation_bytes(model, float(workload.prompt), activation_dtype) / (tp * cp)
    mem_c = _Memory(mem.weights_bytes[cand_dec], mem.kv_bytes[cand_dec], mem.activations_bytes[cand_dec],
                    mem.total_bytes[cand_dec])
    mem_total = mem_c.total_bytes + prefill_act
    usable = acc.hbm_bytes * usable_memory
    fits = mem_total <= usable
    replica_s_per_req = workload.output * tpot / batch + ttft / b_p
    tok_s_replica = workload.output / replica_s_per_req
    meets = np.ones(tp.size, dtype=bool)
    if targets.ttft_s is not None:
        meets &= ttft <= targets.ttft_s
    if targets.tpot_s is not None:
        meets &= tpot <= targets.tpot_s
    if targets.tokens_per_s_per_user is not None:
        meets &= 1.0 / tpot >= targets.tokens_per_s_per_user

    # deployment on each domain count (broadcast: candidates × domains)
    dpr = P.domains_per_replica(tp * dp, pp, chips)[:, None]
    n = doms[None, :].astype(float)
    replicas = np.where(dpr <= 1, n * np.round(1.0 / dpr), np.floor(n / dpr))
    per_gpu = replicas * tok_s_replica[:, None] / (n * chips)
    placed = replicas >= 1
    # keep, per candidate, the domain count with the most tokens/s per GPU (ties: fewest domains)
    per_gpu_m = np.where(placed, per_gpu, -1.0)
    j = np.argmax(per_gpu_m >= per_gpu_m.max(axis=1, keepdims=True) * (1 - 1e-9), axis=1)
    rows = np.arange(tp.size)
    best_per_gpu, best_n, best_rep = per_gpu_m[rows, j], doms[j], replicas[rows, j]
    placed_any = best_per_gpu > 0
    feasible = placed_any & fits & meets
    user = 1.0 / tpot
    usd = chips * price / SECONDS_PER_HOUR / np.where(best_per_gpu > 0, best_per_gpu * chips, np.nan) * 1e6

    names_w = w_of[di]
    names_k = np.array([k for _, k in dtypes])[di]
    cols_all = {"tp": tp.astype(int), "ep": ep.astype(int), "pp": pp.astype(int), "dp": dp.astype(int),
                "moe_tp": mt.astype(int), "cp": cp.astype(int), "redundant_experts": red.astype(int),
                "batch": batch.astype(int), "weights_dtype": names_w, "kv_dtype": names_k,
                "expert_weights_dtype": names_w if ex is None else np.full(names_w.shape, ex), "domains": best_n,
                "replicas": best_rep.astype(int), "gpus": (tp * dp * pp).astype(int),
                "tokens_per_s_per_gpu": best_per_gpu, "tokens_per_s_per_user": user,
                "usd_per_million_tokens": usd, "ttft_s": ttft, "tpot_s": tpot, "memory_per_gpu_bytes": mem_total,
                "bound": bound, "attention": np.array([a for a, _ in STYLES])[sty.astype(int)],
                "weight_stationary": np.array([w for _, w in STYLES])[sty.astype(int)],
                "overlap": bo[cand_dec] > 0}
    cols = {k: np.asarray(v)[feasible] for k, v in cols_all.items()}
    front = pareto_mask(cols["tokens_per_s_per_gpu"], cols["tokens_per_s_per_user"])
    counts = {"candidates": int(n_struct * doms.size), "structurally_valid_layouts": int(n_struct),
              "too_few_sequences": int(n_struct - tp.size), "no_room_on_domains": int((~placed_any).sum()),
              "out_of_memory": int((placed_any & ~fits).sum()), "miss_target": int((placed_any & fits & ~meets).sum()),
              "feasible": int(feasible.sum()), "pareto": int(front.sum())}
    best_ok = cols["tokens_per_s_per_gpu"].max() if feasible.any() else 0.0
    why = _explain(model, system, cols_all, fits, meets, placed_any, mem_c, prefill_act, usable, targets, best_ok,
                   doms)
    extra = {}
    if disaggregated:
        pre = dict(ttft=ttft_p, b=b_pre, var=pv, fmt=pd, gpus=base[vb[pv], 0] * base[vb[pv], 3] * base[vb[pv], 2],
                   cp=vc[pv], base=base[vb[pv]], overlap=np.asarray(ovs)[po] > 0)
        dec = dict(tpot=np.asarray(tpot_dec), batch=bb, fmt=bd, base=base[bi], mem=mem.total_bytes,
                   bound=np.broadcast_to(bound_dec, bb.shape), overlap=bo > 0)
        extra["disaggregated"] = _disaggregated(model, system, workload, targets, dtypes, pre, dec, price, usable,
                                                activation_dtype, b_w_of, b_kv_of, b_we, ex)
    return Plan(columns=cols, pareto=front, rejected=why, counts=counts, model=model.id, system=system.id,
                hbm_usable_bytes=usable, extra=extra)


def _disaggregated(model, system, workload, targets, dtypes, pre, dec, price, usable, activation_dtype, b_w_of,
                   b_kv_of, b_we=None, ex=None) -> list[dict]:
    """Disaggregated prefill and decode (DistServe, Zhong et al. OSDI 2024; Splitwise, Patel et al. ISCA 2024), each
    pool with its own layout, as fluid pools:

        prefill GPU-seconds per prompt  s_p = g_p·TTFT_p/B_p   least over the prefill layouts of the same formats whose
                                                                prompt pass fits memory and meets the TTFT target
        decode GPU-seconds per request  s_d = g_d·output·TPOT/B
        tokens/s per GPU = output/(s_p + s_d)       prefill share of the GPUs = s_p/(s_p + s_d)
        TTFT = TTFT_p + t_kv,  t_kv = kv_bytes(prompt)/(min(g_p, g_d)·BW_out) + latency   (pools.kv_transfer_s:
                                                                the side with fewer NICs, prefill or decode)
        TPOT = the decode pool's pass alone (no prompt shares it)

    The decode pool's memory holds weights and KV only (no prompt activations); the prefill pool's weights, the
    prompts' activations over TP·CP and the KV of its B_p prompts. Ignores: whole replicas (the pools' GPU counts are
    taken in proportion, not rounded), the transfer's contention and the prefill pool's queueing. Returns the
    Pareto frontier (tokens/s per GPU vs per user) as rows, fastest per user first."""
    from .memory import activation_bytes, memory_per_gpu

    out_n, prompt = float(workload.output), float(workload.prompt)
    nd = len(dtypes)
    # the prefill pool: memory of each (layout, CP) x format point, then the cheapest per format
    mem_p = np.empty(pre["ttft"].size)
    for c, st in np.unique(np.column_stack([pre["cp"], pre["base"][:, 6]]), axis=0):  # one call per (CP, style)
        sel = (pre["cp"] == c) & (pre["base"][:, 6] == st)
        bs = pre["base"][sel]
        att, ws = STYLES[int(st)]
        lay = P.Layout(tp=bs[:, 0], ep=bs[:, 1], pp=bs[:, 2], dp=bs[:, 3] / c, cp=int(c), redundant_experts=bs[:, 4],
                       expert_tp=bs[:, 5], attention=att, weight_stationary=ws)
        mem_p[sel] = memory_per_gpu(model, lay, pre["b"][sel], prompt, bytes_per_weight=b_w_of[pre["fmt"][sel]],
                                    bytes_per_kv=b_kv_of[pre["fmt"][sel]], bytes_per_expert_weight=b_we).total_bytes
    mem_p += activation_bytes(model, prompt, activation_dtype) / (pre["base"][:, 0] * pre["cp"])
    ok_p = mem_p <= usable
    if targets.ttft_s is not None:
        ok_p &= pre["ttft"] <= targets.ttft_s
    s_p_all = np.where(ok_p, pre["gpus"] * pre["ttft"] / pre["b"], np.inf)
    best = np.full(nd, -1)
    for d in range(nd):
        idx = np.flatnonzero(pre["fmt"] == d)
        if idx.size and np.isfinite(s_p_all[idx]).any():
            best[d] = idx[np.argmin(s_p_all[idx])]
    has = best[dec["fmt"]] >= 0
    j = best[dec["fmt"]].clip(0)
    s_p = np.where(has, s_p_all[j], np.inf)
    g_d = dec["base"][:, 0] * dec["base"][:, 3] * dec["base"][:, 2]
    s_d = g_d * out_n * dec["tpot"] / dec["batch"]
    per_gpu = out_n / (s_p + s_d)
    kv_bytes = np.array([M.kv_bytes_per_sequence(model, prompt, k) for _, k in dtypes])[dec["fmt"]]
    g_kv = np.minimum(pre["gpus"][j], g_d)  # the KV leaves g_p NICs and lands on g_d: the slower side times it
    ttft = pre["ttft"][j] + kv_bytes / (g_kv * system.scale_out_bytes_per_s) + system.scale_out_latency_s
    ok = has & (dec["mem"] <= usable)
    if targets.ttft_s is not None:
        ok &= ttft <= targets.ttft_s
    if targets.tpot_s is not None:
        ok &= dec["tpot"] <= targets.tpot_s
    if targets.tokens_per_s_per_user is not None:
        ok &= 1.0 / dec["tpot"] >= targets.tokens_per_s_per_user
    idx = np.flatnonzero(ok)
    front = idx[pareto_mask(per_gpu[idx], 1.0 / dec["tpot"][idx])]
    front = front[np.argsort(dec["tpot"][front], kind="stable")]
    rows = []
    for i in front:
        b, pb = dec["base"][i], pre["base"][j[i]]
        c = pre["cp"][j[i]]
        w, k = dtypes[int(dec["fmt"][i])]
        rows.append({
            "decode": dict(tp=int(b[0]), ep=int(b[1]), pp=int(b[2]), dp=int(b[3]), moe_tp=int(b[5]), cp=1,
                           redundant_experts=int(b[4]), attention=STYLES[int(b[6])][0],
                           weight_stationary=STYLES[int(b[6])][1], overlap=bool(dec["overlap"][i])),
            "prefill": dict(tp=int(pb[0]), ep=int(pb[1]), pp=int(pb[2]), dp=int(pb[3] // c), moe_tp=int(pb[5]),
                            cp=int(c), redundant_experts=int(pb[4]), attention=STYLES[int(pb[6])][0],
                            weight_stationary=STYLES[int(pb[6])][1], overlap=bool(pre["overlap"][j[i]])),
            "batch": int(dec["batch"][i]), "prefill_prompts": int(pre["b"][j[i]]), "weights_dtype": w, "kv_dtype": k,
            "expert_weights_dtype": ex or w,
            "decode_gpus": int(g_d[i]), "prefill_gpus": int(pre["gpus"][j[i]]),
            "prefill_gpu_share": float(s_p[i] / (s_p[i] + s_d[i])),
            "tokens_per_s_per_gpu": float(per_gpu[i]), "tokens_per_s_per_user": float(1.0 / dec["tpot"][i]),
            "usd_per_million_tokens": float(price / SECONDS_PER_HOUR / per_gpu[i] * 1e6),
            "ttft_s": float(ttft[i]), "prefill_ttft_s": float(pre["ttft"][j[i]]), "tpot_s": float(dec["tpot"][i]),
            "decode_memory_per_gpu_bytes": float(dec["mem"][i]), "prefill_memory_per_gpu_bytes": float(mem_p[j[i]]),
            "bound": str(dec["bound"][i])})
    return rows


def layout_label(c, i) -> str:
    """'TP8 EP9 PP1 DP9 MoE-TP8 CP2 +32 redundant experts' for row i of plan columns (or a row dict with i=None):
    MoE TP shown where it is not the derived one (tp when ep divides dp, else 1), CP where > 1; then
    'attention-by-batch', '2D-weight-stationary' and 'overlap' where the row has them (Pope et al. 2022; step
    --overlap)."""
    g = (lambda k: c[k]) if i is None else (lambda k: c[k][i])
    tp, ep, dp = int(g("tp")), int(g("ep")), int(g("dp"))
    out = f"TP{tp} EP{ep} PP{int(g('pp'))} DP{dp}"
    if ep > 1 and int(g("moe_tp")) != (tp if dp % ep == 0 else 1):
        out += f" MoE-TP{int(g('moe_tp'))}"
    if int(g("cp")) > 1:
        out += f" CP{int(g('cp'))}"
    red = int(g("redundant_experts"))
    out += f" +{red} redundant experts" if red else ""
    get = c.get if i is None else (lambda k, d=None: c[k][i] if k in c else d)
    out += " attention-by-batch" if get("attention", "heads") == "batch" else ""
    out += " 2D-weight-stationary" if get("weight_stationary", "1d") == "2d" else ""
    return out + (" overlap" if bool(get("overlap", False)) else "")


def _explain(model, system, c, fits, meets, placed, mem, prefill_act, usable, targets, best_ok, doms, top=3):
    """Sentences for the rejected candidates that would have beaten the best feasible tokens/s per GPU."""
    out = []
    per_gpu = c["tokens_per_s_per_gpu"]
    label = lambda i: (f"{layout_label(c, i)} batch {c['batch'][i]} "  # noqa: E731
                       f"{c['weights_dtype'][i]}/{c['kv_dtype'][i]} on {c['domains'][i]} domain(s)")
    for mask, kind in ((placed & ~fits, "memory"), (placed & fits & ~meets, "target")):
        idx = np.flatnonzero(mask & (per_gpu > best_ok))
        # memory: the ones closest to fitting; target: the ones with the most tokens/s per GPU
        key = c["memory_per_gpu_bytes"][idx] if kind == "memory" else -per_gpu[idx]
        for i in idx[np.argsort(key, kind="stable")][:top]:
            if kind == "memory":
                out.append(f"memory: {label(i)} would give {per_gpu[i]:,.0f} tok/s/GPU but needs "
                           f"{c['memory_per_gpu_bytes'][i] / 1e9:,.1f} GB per GPU of {usable / 1e9:,.1f} GB usable "
                           f"(weights {mem.weights_bytes[i] / 1e9:,.1f}, KV {mem.kv_bytes[i] / 1e9:,.1f}, "
                           f"activations {(mem.activations_bytes[i] + prefill_act[i]) / 1e9:,.2f} GB)")
            else:
                miss = []
                if targets.ttft_s is not None and c["ttft_s"][i] > targets.ttft_s:
                    miss.append(f"TTFT {c['ttft_s'][i] * 1e3:,.1f} ms > {targets.ttft_s * 1e3:,.1f} ms")
                if targets.tpot_s is not None and c["tpot_s"][i] > targets.tpot_s:
                    miss.append(f"TPOT {c['tpot_s'][i] * 1e3:,.1f} ms > {targets.tpot_s * 1e3:,.1f} ms")
                if targets.tokens_per_s_per_user is not None and c["tokens_per_s_per_user"][i] < targets.tokens_per_s_per_user:
                    miss.append(f"{c['tokens_per_s_per_user'][i]:,.1f} tok/s per user < {targets.tokens_per_s_per_user:,.1f}")
                out.append(f"target: {label(i)} would give {per_gpu[i]:,.0f} tok/s/GPU but {'; '.join(miss)}")
    # structural examples: what the grid skipped and why, in validate()'s words
    top_d = int(max(doms))
    probes = [P.Layout(tp=system.chips * 2, domains=top_d), P.Layout(pp=model.layers + 1, domains=top_d)]
    if model.moe:
        probes.insert(0, P.Layout(tp=1, ep=system.chips, dp=system.chips, domains=top_d))
    for lay in probes:
        try:
            P.validate(model, system, lay)
        except InputError as e:
            out.append(f"validity: {e}")
    return out
