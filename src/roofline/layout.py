"""One parallel layout for inference and training: degrees, validity, placement on scale-up domains.

    tp  tensor parallel: attention heads and dense MLPs split over tp GPUs (Megatron-LM, Shoeybi 2019)
    dp  data parallel. Inference: attention-DP groups inside one model instance — dp groups of tp GPUs
        each serve 1/dp of the sequences and hold their own KV (DeepSeek-V3 report §3.4; SGLang "DP
        attention"); for a dense model plain data parallelism. Training: data-parallel ranks.
    ep  expert parallel: routed experts spread over ep GPUs, each expert sliced over moe_tp GPUs, so the
        MoE layers live on moe_tp·ep GPUs, replicated (tp·dp)/(moe_tp·ep) times in the stage group.
        moe_tp is tp when ep divides dp (EP borrows DP ranks: Megatron training, and inference with
        ep = 1) and 1 when ep = tp·dp (every routed expert whole on one GPU: vLLM/SGLang "EP = TP × DP");
        `expert_tp` sets it explicitly (MoE parallelised unlike attention: TensorRT-LLM's attention TP 8
        with MoE TP × EP), and then moe_tp·ep must divide tp·dp.
        EP must divide the expert slots E + R (§2.2: 256 experts on 72 GPUs → EP 64, 4 per GPU, 8 idle;
        T17); `redundant_experts` R adds copies of hot experts so that any EP fits (DeepSeek's EPLB: 256 +
        32 = 288 slots, 4 per GPU on 72 GPUs, 2 on 144).
    pp  pipeline stages; the busiest stage holds v·ceil(L/(pp·v)) layers (engines split unevenly).
        Inference runs pp micro-batches with no bubble (lecture §3.3).
    cp  context parallel: each sequence's tokens split over cp GPUs (prefill and training; Llama 3 trained
        its 128K stage with CP 16, Dubey et al. 2024 §3.3.2): GEMMs, attention and KV per GPU fall by cp,
        and every layer all-gathers the sequence's K and V over the cp ranks (all-gather CP; ring
        attention moves the same bytes). Weights are replicated over cp, like DP.
    perfect  the lecture's sharding: weights, KV, compute and bandwidth split evenly over tp GPUs with no
        communication and no divisibility rules (what `roofline step` without a layout computes).
    attention  how the TP group splits attention: "heads" (Megatron: TP divides the heads; a KV head is
        replicated beyond K ranks) or "batch" (Pope et al. 2022 §3.3, multi-query attention sharded over the
        batch: each of the tp GPUs holds the whole KV of B/tp sequences, so no head rule applies; the
        projections stay weight-stationary over tp and two all-to-alls per layer reshard q and the
        attention output between head and batch sharding).
    weight_stationary  how the TP group holds the dense weights: "1d" (Megatron, Pope et al. 2022 §3.2.1:
        E whole, F split over tp; one all-reduce of the activations per block, bytes independent of tp) or
        "2d" (Pope et al. 2022 §3.2.2: E split over X and F over tp/X, four smaller collectives per block
        whose bytes fall as 1/√tp; X chosen per block, network.weight_stationary_2d_s) or "gathered" (Pope et al.
        2022 §3.2.3, the XYZ-weight-gathered layout: each GPU stores 1/tp of the weights and all-gathers each
        layer's before using it on its own B/tp sequences, attention sharded by batch: the collective moves the
        weights, not the activations, so its bytes do not grow with the tokens — the layout for large prefills)
        or "gathered:N" (partially weight-gathered, §3.2.3's X- and XY-weight-gathered: the weights are all-gathered
        over groups of N GPUs, each group member takes B/N sequences, and the tp/N GPUs holding one gathered slice
        run them 1D weight-stationary; `gathered_group`).
    domains  scale-up domains available to one replica.
Training adds micro_batch (b), micro_batches (m), schedule, virtual_stages (v), zero, recompute and
sequence_parallel (Korthikanti et al. 2022: the d-wide operators split over the TP ranks).

One replica uses tp·dp·pp GPUs: a stage group of s = tp·dp GPUs per stage. Placement: TP stays inside one
scale-up domain; a stage group larger than a domain spans ceil(s/chips) domains (its EP all-to-all then
crosses the scale-out tier, lecture §2.3); stages pack chips // s per domain, so stage boundaries cross
domains only when the replica outgrows one domain. Degrees may be NumPy arrays (the planner's grid):
`valid_mask` is the vectorised `validate`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from .errors import InputError

#: A MoE group that serves several attention groups (MoE TP sliced over tp·dp GPUs with attention data-parallel,
#: ep = 1) gathers their tokens: per MoE layer an all-gather of the T_e tokens over the `spans` = moe_tp·ep/tp groups,
#: a reduce-scatter of the expert outputs back, and the attention group's all-reduce over tp (vLLM's default MoE
#: dispatch under data parallelism without expert parallelism: AgRsAll2AllManager, all2all_backend
#: "allgather_reducescatter", in vllm/distributed/device_communicators/all2all.py and FusedMoE.forward_impl of
#: v0.14.1). False: one all-reduce of the group's own T_g tokens over moe_tp GPUs, as set al was registered
#: (found post hoc on set al: its DP bursts' TTFT 1.2–1.3x the TP 8 bursts' of the same campaign).
MOE_GATHERS_GROUPS = True


def moe_gather_group(moe_tp, ep, tp):
    """(gathers, s): where a MoE group gathers the tokens of s = moe_tp·ep/tp > 1 attention groups (ep = 1 and
    MOE_GATHERS_GROUPS), and the gather's group size s there, 1 elsewhere (a whole number of GPUs for the collectives).
    Broadcasts over the planner's arrays of degrees."""
    spans = np.asarray(moe_tp, dtype=float) * np.asarray(ep, dtype=float) / np.asarray(tp, dtype=float)
    gathers = (spans > 1) & (np.asarray(ep) <= 1) & MOE_GATHERS_GROUPS
    return gathers, np.where(gathers, spans, 1.0)

RECOMPUTE_MODES = ("none", "selective", "full", "reversible")
ATTENTION_SHARDINGS = ("heads", "batch")
WEIGHT_STATIONARY = ("1d", "2d", "gathered")
SCHEDULES = ("gpipe", "1f1b", "interleaved")


@dataclass(frozen=True)
class Layout:
    """How one replica is laid out; see the module docstring for what each field means."""

    tp: int = 1
    ep: int = 1
    pp: int = 1
    dp: int = 1
    domains: int = 1
    cp: int = 1
    perfect: bool = False
    attention: str = "heads"  # how TP splits attention: by heads (Megatron) or by batch (Pope et al. 2022 MQA)
    expert_tp: int | None = None  # GPUs each routed expert is sliced over (--moe-tp); None: derived
    redundant_experts: int = 0  # extra expert slots holding copies of hot experts (EPLB)
    weight_stationary: str = "1d"  # dense weights over TP: 1D (Megatron), 2D or gathered (Pope et al. 2022 §3.2)
    # training
    micro_batch: int = 1
    micro_batches: int = 1
    schedule: str = "1f1b"
    virtual_stages: int = 1
    zero: int = 1
    recompute: str = "none"
    sequence_parallel: bool = False

    def __post_init__(self):
        for f in ("tp", "ep", "pp", "dp", "domains", "cp", "micro_batch", "micro_batches", "virtual_stages"):
            v = getattr(self, f)
            arr = np.asarray(v, dtype=float)
            if np.any(~np.isfinite(arr) | (arr < 1) | (arr != np.round(arr))):
                raise InputError(f"{_FLAG.get(f, f)} must be a whole number >= 1, got {np.ravel(arr)[0]:g}; "
                                 f"1 means no {_MEANING.get(f, f)}")
        if self.schedule not in SCHEDULES:
            raise InputError(f"schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        if self.virtual_stages > 1 and self.schedule != "interleaved":
            raise InputError("virtual_stages > 1 needs schedule 'interleaved'; set --schedule interleaved")
        if self.zero not in (0, 1, 2, 3):
            raise InputError(f"zero stage must be 0, 1, 2 or 3 (3 = FSDP), got {self.zero}")
        if self.expert_tp is not None:  # a number, or an array of them (the planner's grid)
            mt = np.asarray(self.expert_tp, dtype=float)
            if np.any(~np.isfinite(mt) | (mt < 1) | (mt != np.round(mt))):
                raise InputError(f"MoE TP must be a whole number >= 1, got {np.ravel(mt)[0]:g}; omit it to derive it")
        red = np.asarray(self.redundant_experts, dtype=float)
        if np.any(~np.isfinite(red) | (red < 0) | (red != np.round(red))):
            raise InputError(f"redundant experts must be a whole number >= 0, got {np.ravel(red)[0]:g}")
        if self.attention not in ATTENTION_SHARDINGS:
            raise InputError(f"attention sharding must be one of {', '.join(ATTENTION_SHARDINGS)}, got "
                             f"{self.attention!r}")
        if self.weight_stationary not in WEIGHT_STATIONARY and gathered_group_of(self.weight_stationary) is None:
            raise InputError(f"weight-stationary layout must be one of {', '.join(WEIGHT_STATIONARY)} or gathered:N "
                             f"(weights all-gathered over groups of N GPUs, N >= 2), got {self.weight_stationary!r}")
        if self.recompute not in RECOMPUTE_MODES:
            raise InputError(f"recompute must be one of {', '.join(RECOMPUTE_MODES)}, got {self.recompute!r}")

    @classmethod
    def sharded(cls, gpus: int) -> "Layout":
        """The lecture's perfect sharding over `gpus` GPUs (no communication, no divisibility rules)."""
        return cls(tp=int(gpus), perfect=True)

    @property
    def gpus(self):
        return self.tp * self.cp * self.dp * self.pp

    @property
    def stage_gpus(self):
        return self.tp * self.cp * self.dp

    @property
    def moe_tp(self):
        """GPUs each routed expert is sliced over: `expert_tp` if given, else tp when ep divides dp, else 1
        (ep = tp·dp)."""
        if self.expert_tp is not None:
            return self.expert_tp
        tp, ep, dp = (np.asarray(x) for x in (self.tp, self.ep, np.asarray(self.dp) * self.cp))
        out = np.where(dp % ep == 0, tp, 1)
        return out.item() if out.ndim == 0 else out

    @property
    def global_batch(self):
        """Training: sequences per optimizer step, dp·m·b."""
        return self.dp * self.micro_batches * self.micro_batch

    def __str__(self) -> str:
        if self.perfect:
            return f"{self.tp} GPUs, perfect sharding"
        cp = f" CP{self.cp}" if np.all(np.asarray(self.cp) > 1) else ""
        moe = f" MoE-TP{self.expert_tp}" if self.expert_tp is not None else ""
        moe += " attention by batch" if self.attention == "batch" else ""
        moe += {"2d": " 2D weight-stationary", "gathered": " weight-gathered"}.get(
            self.weight_stationary, f" weight-gathered over {gathered_group_of(self.weight_stationary)}"
            if str(self.weight_stationary).startswith("gathered:") else "")
        red = f" +{self.redundant_experts} redundant experts" if np.any(np.asarray(self.redundant_experts)) else ""
        return f"TP{self.tp} EP{self.ep} PP{self.pp} DP{self.dp}{cp}{moe}{red}"

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def with_(self, **changes) -> "Layout":
        return replace(self, **changes)


def gathered_group_of(weight_stationary) -> int | None:
    """N of "gathered:N" (a whole number >= 2), None for anything else ("gathered" alone is the whole TP group:
    `gathered_group`)."""
    kind, sep, n = str(weight_stationary).partition(":")
    if kind != "gathered" or not sep or not n.isdigit() or int(n) < 2:
        return None
    return int(n)


def gathered_group(layout: "Layout"):
    """GPUs each layer's weights are all-gathered over (Pope et al. 2022 §3.2.3): tp for "gathered" (XYZ-weight-
    gathered: every TP rank), N for "gathered:N" (partially gathered: X- or XY-weight-gathered on a torus of X·Y·Z
    chips are N = X and N = X·Y), 1 for the weight-stationary layouts."""
    if layout.weight_stationary == "gathered":
        return layout.tp
    return gathered_group_of(layout.weight_stationary) or 1


_FLAG = {"tp": "TP", "ep": "EP", "pp": "PP", "dp": "DP", "cp": "CP", "domains": "domains", "micro_batch": "micro-batch",
         "micro_batches": "micro-batches", "virtual_stages": "virtual stages"}
_MEANING = {"tp": "tensor parallelism", "ep": "expert parallelism", "pp": "pipelining", "dp": "data parallelism",
            "cp": "context parallelism",
            "domains": "extra domain", "micro_batch": "batching", "micro_batches": "micro-batching",
            "virtual_stages": "interleaving"}


def _divisors(n: int, limit: int) -> list[int]:
    return [d for d in range(1, min(n, limit) + 1) if n % d == 0]


def check_tensor_parallel(model, system, tp: int) -> None:
    """TP stays inside one scale-up domain, divides the attention heads, and divides or is a multiple of
    the KV heads (KV heads are then replicated, as vLLM does)."""
    chips = system.chips
    if tp > chips:
        raise InputError(f"TP {tp} exceeds the {chips} GPUs of one {system.id} scale-up domain (TP all-reduces "
                         f"need the scale-up fabric); use TP <= {chips} and add DP or PP")
    if model.heads % tp:
        raise InputError(f"TP {tp} does not divide {model.id}'s {model.heads} attention heads; use TP in "
                         f"{_divisors(model.heads, chips)}")
    if not model.mla and model.kv_heads % tp and tp % model.kv_heads:
        ok = [d for d in _divisors(model.heads, chips) if model.kv_heads % d == 0 or d % model.kv_heads == 0]
        raise InputError(f"TP {tp} neither divides nor is a multiple of {model.id}'s {model.kv_heads} KV heads; "
                         f"use TP in {ok}")


@dataclass(frozen=True)
class ExpertPlacement:
    ep: int  # GPUs that hold experts
    experts_per_gpu: int
    idle_gpus: int


def place_experts(experts: int, gpus: int) -> ExpertPlacement:
    """The largest EP <= gpus that divides the experts evenly (lecture §2.2, [S 00:33:46–00:36:40]).
    256 experts on a 72-GPU rack → EP 64, 4 per GPU, 8 idle (T17). Ignores putting the idle GPUs to work
    (redundant experts, as DeepSeek's EPLB does)."""
    if experts < 1 or gpus < 1:
        raise InputError(f"experts and GPUs must be >= 1, got {experts} experts on {gpus} GPUs")
    ep = max(_divisors(experts, gpus))
    return ExpertPlacement(ep=ep, experts_per_gpu=experts // ep, idle_gpus=gpus - ep)


def validate(model, system, layout: Layout, batch=None, *, training: bool = False) -> None:
    """Raise InputError naming the first problem with a scalar `layout` and what would fit instead."""
    if layout.perfect:
        return
    tp, ep, pp, v = layout.tp, layout.ep, layout.pp, layout.virtual_stages
    dp = layout.dp * layout.cp  # EP may borrow data- and context-parallel ranks alike
    if str(layout.weight_stationary).startswith("gathered"):
        g = gathered_group_of(layout.weight_stationary)
        if g is not None and (tp % g or g > tp):
            raise InputError(f"weight-gathered group {g} must divide TP {tp} (the weights are all-gathered over groups "
                             f"of {g} of the TP GPUs); use gathered:N with N in {_divisors(tp, tp)[1:] or [tp]}, or "
                             f"gathered for all {tp}")
        if model.moe:
            raise InputError(f"the weight-gathered layout (Pope et al. 2022 §3.2.3) gathers dense weights; "
                             f"{model.id}'s experts are placed by EP: use weight-stationary 1d or 2d")
        if layout.attention != "batch":
            raise InputError("the weight-gathered layout runs each GPU's own sequences whole: shard attention "
                             "by batch (attention 'batch')")
    if layout.attention == "batch":  # weight-stationary projections, attention split by sequence: no head rule
        if tp > system.chips:
            raise InputError(f"TP {tp} exceeds the {system.chips} GPUs of one {system.id} scale-up domain; use TP <= "
                             f"{system.chips} and add DP or PP")
    else:
        check_tensor_parallel(model, system, tp)
    if pp * v > model.layers:
        what = f"PP {pp}" if v == 1 else f"PP x virtual stages = {pp * v}"
        raise InputError(f"{what} exceeds {model.id}'s {model.layers} layers; use at most {model.layers // v} stages")
    if ep > 1 or layout.redundant_experts or layout.expert_tp is not None:
        if not model.moe:
            given = [n for n, on in ((f"EP {ep}", ep > 1), ("MoE TP", layout.expert_tp is not None),
                                     ("redundant experts", layout.redundant_experts > 0)) if on]
            raise InputError(f"{' and '.join(given)} {'needs' if len(given) == 1 else 'need'} a mixture-of-experts "
                             f"model; {model.id} is dense: use EP 1")
        if layout.expert_tp is not None:
            group = layout.expert_tp * ep
            if (tp * dp) % group:
                raise InputError(f"MoE TP {layout.expert_tp} x EP {ep} = {group} GPUs must divide the stage group's "
                                 f"TP {tp} x DP {dp} = {tp * dp}; pick MoE TP x EP among the divisors of {tp * dp}")
        elif training and dp % ep:
            raise InputError(f"EP {ep} must divide DP {dp}: expert parallelism reuses data-parallel ranks; pick EP "
                             f"among {_divisors(dp, dp)}")
        elif not training and dp % ep and ep != tp * dp:
            raise InputError(f"EP {ep} must divide DP ({dp}) or equal TP x DP = {tp * dp} (experts spread over the whole "
                             f"stage group); use --ep {tp * dp}, change --dp, or set --moe-tp")
        slots = model.moe.experts + layout.redundant_experts
        if slots % ep:
            fit = place_experts(model.moe.experts, ep)
            extra = -slots % ep + layout.redundant_experts
            raise InputError(f"EP {ep} does not divide {model.id}'s {slots} expert slots ({model.moe.experts} experts + "
                             f"{layout.redundant_experts} redundant); use EP {fit.ep} ({fit.experts_per_gpu} experts per "
                             f"GPU, {fit.idle_gpus} of {ep} GPUs idle) or --redundant-experts {extra} "
                             f"({(model.moe.experts + extra) // ep} slots per GPU, hot experts copied)")
    if not training:
        need = int(np.ceil(domains_per_replica(layout.stage_gpus, pp, system.chips)))
        if need > layout.domains:
            raise InputError(f"layout {layout} needs {layout.gpus} GPUs placed on {need} x {system.id} domains, "
                             f"only {layout.domains} given; use --domains {need} or fewer GPUs")
    slots = sequence_slots(layout)
    if batch is not None and np.any(np.asarray(batch) < slots):
        by = f" x TP {tp} (attention by batch)" if layout.attention == "batch" else ""
        raise InputError(f"batch {np.min(batch):g} leaves some of the DP {layout.dp} x PP {pp}{by} = {slots} sequence "
                         f"slots empty; use a batch >= {slots} (a multiple of it)")


def valid_mask(model, chips: int, tp, ep, pp, dp, redundant_experts=0, moe_tp=None, by_batch=False):
    """Vectorised `validate` (inference) for the planner: True where the layout is structurally valid.
    moe_tp: explicit MoE TP per candidate (`expert_tp`; then moe_tp·ep must divide tp·dp), None: derived.
    by_batch: True where attention is sharded by batch (no head rule, as `validate`)."""
    tp, ep, pp, dp, red, bb = (np.asarray(x) for x in (tp, ep, pp, dp, redundant_experts, by_batch))
    heads_ok = model.heads % tp == 0
    if not model.mla:
        heads_ok &= (model.kv_heads % tp == 0) | (tp % model.kv_heads == 0)
    ok = (tp <= chips) & (pp <= model.layers) & (heads_ok | bb.astype(bool))
    if model.moe:
        fits = (dp % ep == 0) | (ep == tp * dp) if moe_tp is None else (tp * dp) % (np.asarray(moe_tp) * ep) == 0
        ok &= ((ep == 1) & (red == 0)) | (fits & ((model.moe.experts + red) % ep == 0))
    else:
        ok &= (ep == 1) & (red == 0)
    return ok


def domains_per_replica(stage_gpus, pp, chips):
    """Scale-up domains one replica occupies (fractional when several replicas share a domain).

    Stage groups pack chips // s per domain; a stage group larger than a domain spans ceil(s/chips).
    """
    s = np.asarray(stage_gpus, dtype=float)
    pp = np.asarray(pp, dtype=float)
    per_domain = np.maximum(np.floor(chips / s), 1.0)
    fits_one = s * pp <= chips
    packed = np.ceil(pp / per_domain)
    spread = pp * np.ceil(s / chips)
    frac = 1.0 / np.maximum(np.floor(chips / (s * pp)), 1.0)
    return np.where(fits_one, frac, np.where(s <= chips, packed, spread))


def off_domain_boundaries(stage_gpus, pp, chips):
    """Pipeline boundaries per decode loop (wrap-around included) that cross the scale-out tier."""
    s = np.asarray(stage_gpus, dtype=float)
    pp = np.asarray(pp, dtype=float)
    d = domains_per_replica(s, pp, chips)
    crossings = np.where(s <= chips, np.ceil(pp / np.maximum(np.floor(chips / s), 1.0)), pp)
    return np.where((d > 1) & (pp > 1), crossings, 0.0)


def kv_shard(model, tp, perfect=False, attention="heads"):
    """How many ways the KV is split across a TP group: min(tp, K) heads; MLA's single latent is replicated
    on every TP rank (why DeepSeek serves attention with DP, not TP); perfect sharding, or attention sharded
    by batch (each rank holds whole sequences), splits it tp ways."""
    tp = np.asarray(tp, dtype=float)
    if perfect or attention == "batch":
        return tp
    return np.ones_like(tp) if model.mla else np.minimum(tp, model.kv_heads)


def sequence_slots(layout: Layout):
    """Sequences a replica's busiest group holds at least one of: one per DP group and micro-batch in flight
    (dp·pp), times tp when attention is sharded by batch (each TP rank holds whole sequences)."""
    return layout.dp * layout.pp * (layout.tp if layout.attention == "batch" else 1)


def stage_fraction(model, pp, virtual_stages=1):
    """f = v·ceil(L/(pp·v))/L: share of the layers on the busiest stage."""
    v = np.asarray(virtual_stages, dtype=float)
    return v * np.ceil(model.layers / (np.asarray(pp, dtype=float) * v)) / model.layers


def stage_layers(model, layout: Layout) -> int:
    """Layers on the busiest pipeline stage: v·ceil(L/(pp·v))."""
    v = layout.virtual_stages
    return v * -(-model.layers // (layout.pp * v))


def expert_slots(model, layout: Layout):
    """E + R: routed experts plus redundant copies (EPLB), spread evenly over the EP GPUs."""
    return (model.moe.experts if model.moe else 0) + layout.redundant_experts


def cp_on_scale_up(layout: Layout, chips: int):
    """Whether a CP group (Megatron rank order: TP innermost, then CP) fits in one scale-up domain."""
    return np.asarray(layout.tp) * layout.cp <= chips


def ep_domains(layout: Layout, chips: int):
    """Scale-up domains one EP all-to-all spans: ceil(moe_tp·ep/chips) (training: EP groups of tp·ep GPUs
    in Megatron rank order; inference: the stage group)."""
    return np.ceil(np.asarray(layout.moe_tp * layout.ep, dtype=float) / chips)
