"""Parallel layouts (TP, EP, PP, DP), their validity, placement on domains, and memory per GPU (lecture §2–§3).

A layout is four degrees, all of which broadcast as NumPy arrays (the planner evaluates millions at once):

    tp  tensor parallel: attention heads and dense MLPs split over tp GPUs (Megatron-LM, Shoeybi 2019)
    dp  attention data parallel inside one model instance: dp groups of tp GPUs each serve 1/dp of the
        sequences and hold their own KV cache (the DeepSeek layout, DeepSeek-V3 report §3.4; SGLang's
        "DP attention"). For a dense model it is plain data parallelism (dp independent copies).
    ep  expert parallel: 1 (experts tensor-sliced over the tp GPUs, replicated over dp) or tp·dp (every
        routed expert whole on one GPU of the stage group; vLLM/SGLang "EP size = TP × DP"). EP must
        divide the experts (§2.2: 256 experts on 72 GPUs → EP 64, 4 per GPU, 8 idle; T17).
    pp  pipeline stages; each holds ceil(L/pp) layers (engines split unevenly; the biggest stage sets
        the pace and the memory). Inference runs pp micro-batches with no bubble (§3.3).

One model instance ("replica") uses tp·dp·pp GPUs: a stage group of s = tp·dp GPUs per stage.
Placement: TP stays inside one scale-up domain; a stage group larger than a domain spans
ceil(s/chips) domains (its EP all-to-all then crosses the scale-out tier, §2.3); stages are packed
chips // s per domain, so stage boundaries cross domains only when the replica outgrows one domain.

Memory per GPU (§3.5, with B = pp·b sequences in flight, b per micro-batch):

    weights = f·(W_dense/tp + W_routed/(tp if ep = 1 else ep))      f = ceil(L/pp)/L
    kv      = f·B·kv_seq(ctx)/(dp·kv_shard)      kv_shard = min(tp, K) for GQA, 1 for MLA (one latent)
    acts    = one layer's live activations of the dp group's tokens / tp   (roofline.activation_bytes)

With B = pp·b the pp cancels in the KV term: b·kv_seq/(dp·kv_shard) (the lecture's cancellation).
Ignores: uneven embedding/head placement across stages (spread with f), CUDA graphs and workspace
(covered by the usable-memory fraction), KV fragmentation (paged attention makes it small).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import model as M
from .errors import InputError
from .roofline import activation_bytes

# ---- the lecture's closed forms (§1.7, §2.2, §2.3, §3.2, §3.5, §3.6) -------------------------------


def sparsity_quality_equivalence(dense_equivalent_params, active_params):
    """How many active parameters' worth of quality an MoE buys: N_dense_equiv / N_active (§1.7).

    Lecture [S 00:29:37]: 64 experts at 370M active match a dense 1.3B → 3.51× (T16; "64x for 4x").
    Source: Clark et al. 2022, "Unified Scaling Laws for Routed Language Models". Empirical, MoE-variant
    dependent; nothing here predicts it.
    """
    return np.asarray(dense_equivalent_params, dtype=float) / np.asarray(active_params, dtype=float)


@dataclass(frozen=True)
class ExpertPlacement:
    ep: int  # GPUs that hold experts
    experts_per_gpu: int
    idle_gpus: int


def place_experts(experts: int, gpus: int) -> ExpertPlacement:
    """Largest EP degree ≤ gpus that divides the experts evenly (§2.2, [S 00:33:46–00:36:40]).

    256 experts on a 72-GPU rack → EP 64, 4 experts per GPU, 8 GPUs idle (T17). Ignores placing the
    idle GPUs' capacity elsewhere (redundant experts, as DeepSeek's EPLB does, are a refinement).
    """
    if experts < 1 or gpus < 1:
        raise InputError(f"experts and GPUs must be >= 1, got {experts} experts on {gpus} GPUs")
    ep = max(d for d in range(1, min(experts, gpus) + 1) if experts % d == 0)
    return ExpertPlacement(ep=ep, experts_per_gpu=experts // ep, idle_gpus=gpus - ep)


def stage_boundary_ratio(active_experts, layers_per_stage, up_over_out):
    """t_scale-up / t_scale-out at a pipeline boundary = 2·k·L_stage / (BW_up/BW_out) (§3.2).

    Per token, the boundary sends one activation over scale-out; inside the stage each of L_stage MoE
    layers sends it to k experts and back (×2) over scale-up. ≥ 1 means the boundary is not the
    bottleneck (T18: k=8, L=1, ratio 8 → 2.0; T19: k=3 → 0.75, L=2 → 1.5; T20: need 2kL ≥ 8).
    [S 00:49:21–00:53:08]. Ignores the local share of the all-to-all and attention traffic.
    """
    return 2.0 * np.asarray(active_experts, dtype=float) * np.asarray(layers_per_stage, dtype=float) / up_over_out


def two_domain_ep_slowdown(n_domains, up_over_out):
    """The lecture's rough EP slowdown over n domains vs one (§2.3, [I]): traffic X per GPU takes
    X/BW_up on one domain and max((1/n)·X/BW_up, (1−1/n)·X/BW_out) across n, so the slowdown is
    max(1/n, (1−1/n)·BW_up/BW_out). T21: n = 2, ratio 8 → 4×. Ignores latency and congestion.
    """
    n = np.asarray(n_domains, dtype=float)
    return np.maximum(1.0 / n, (1.0 - 1.0 / n) * up_over_out)


def lecture_memory_per_gpu(w_total_bytes, ep, micro_batch, context, kv_bytes_per_token, stages):
    """(weights, kv, total) bytes per GPU, lecture form (§3.5, [S 01:05:18–01:11:48]):

        c_mem = W_total/(E·P) + (P·b·ctx·kv)/(E·P) = W_total/(E·P) + b·ctx·kv/E

    E-way EP inside a rack, P stages, B = n_micro·b with n_micro = P. T23: 1e12 B, E=64, b=2400,
    ctx=1e5, kv=2048 → weights 15.625/7.8125/3.906/1.953 GB for P=1/2/4/8, KV 7.68 GB for every P.
    Assumes weights and KV shard perfectly (the lecture's hand-wave).
    """
    P = np.asarray(stages, dtype=float)
    w = np.asarray(w_total_bytes, dtype=float) / (ep * P)
    kv = micro_batches(P) * micro_batch * context * kv_bytes_per_token / (ep * P)
    return w, kv, w + kv


def micro_batches(stages):
    """n_micro = P: the fewest micro-batches that keep every stage busy in decode (§3.5, T24)."""
    return np.asarray(stages)


def decode_token_latency(step_s, stages, hop_s):
    """t_token = t_step + P·t_hop: P boundary crossings per loop, wrap-around included (§3.6 [I], T25)."""
    return np.asarray(step_s, dtype=float) + np.asarray(stages, dtype=float) * hop_s


def weight_fetch_s(w_total_bytes, gpus_reading, bytes_per_s_per_gpu):
    """t = W_total/(S_up·BW_per_GPU): all GPUs of a scale-up domain read weights in parallel; pipeline
    stages cannot, since they run at different times (§3.6 [S 01:16:53–01:18:22]; T26: 1e12 B on
    72×8e12 → 1.74 ms, on 8×3.35e12 → 37.3 ms)."""
    return np.asarray(w_total_bytes, dtype=float) / (np.asarray(gpus_reading) * bytes_per_s_per_gpu)


# ---- layouts --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """One parallel layout; see the module docstring for what each degree means."""

    tp: int = 1
    ep: int = 1
    pp: int = 1
    dp: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.dp * self.pp

    def __str__(self) -> str:
        return f"TP{self.tp} EP{self.ep} PP{self.pp} DP{self.dp}"


def _divisors(n: int, limit: int) -> list[int]:
    return [d for d in range(1, min(n, limit) + 1) if n % d == 0]


def check_tensor_parallel(model: M.Model, system, tp: int) -> None:
    """TP stays inside one scale-up domain, divides the attention heads, and divides or is a multiple of
    the KV heads (KV heads are then replicated, as vLLM does). Shared by inference and training layouts."""
    chips = system.chips
    if tp > chips:
        raise InputError(f"TP {tp} exceeds the {chips} GPUs of one {system.id} scale-up domain (TP all-reduces "
                         f"need the scale-up fabric); use TP <= {chips} and add DP or PP")
    if model.heads % tp:
        raise InputError(f"TP {tp} does not divide {model.id}'s {model.heads} attention heads; use TP in "
                         f"{_divisors(model.heads, chips)}")
    if not model.mla and model.kv_heads % tp and tp % model.kv_heads:
        raise InputError(f"TP {tp} neither divides nor is a multiple of {model.id}'s {model.kv_heads} KV heads; "
                         f"use TP in {[d for d in _divisors(model.heads, chips) if model.kv_heads % d == 0 or d % model.kv_heads == 0]}")


def validate(model: M.Model, system, layout: Layout, domains: int = 1, batch=None) -> None:
    """Raise InputError naming the first problem with `layout` and what would fit instead."""
    tp, ep, pp, dp = layout.tp, layout.ep, layout.pp, layout.dp
    for name, v in (("TP", tp), ("EP", ep), ("PP", pp), ("DP", dp), ("domains", domains)):
        if int(v) != v or v < 1:
            raise InputError(f"{name} must be a whole number >= 1, got {v}")
    check_tensor_parallel(model, system, tp)
    chips = system.chips
    if pp > model.layers:
        raise InputError(f"PP {pp} exceeds {model.id}'s {model.layers} layers; use PP <= {model.layers}")
    if ep > 1:
        if not model.moe:
            raise InputError(f"EP {ep} needs a mixture-of-experts model; {model.id} is dense: use EP 1")
        if ep != tp * dp:
            raise InputError(f"EP {ep} must be 1 or TP x DP = {tp * dp} (experts spread over the whole stage "
                             f"group); use --ep {tp * dp} or change --dp to {ep // tp if ep % tp == 0 else 'EP/TP'}")
        if model.moe.experts % ep:
            fit = place_experts(model.moe.experts, ep)
            raise InputError(f"EP {ep} does not divide {model.id}'s {model.moe.experts} experts; use EP {fit.ep} "
                             f"({fit.experts_per_gpu} experts per GPU, {fit.idle_gpus} of {ep} GPUs idle)")
    need = int(domains_per_replica(layout.tp * layout.dp, layout.pp, chips))
    if need > domains:
        raise InputError(f"layout {layout} needs {layout.gpus} GPUs placed on {need} x {system.id} domains, "
                         f"only {domains} given; use --domains {need} or fewer GPUs")
    if batch is not None and np.any(np.asarray(batch) < dp * pp):
        raise InputError(f"batch {np.min(batch)} leaves some of the DP {dp} x PP {pp} = {dp * pp} sequence slots "
                         f"empty; use a batch >= {dp * pp} (a multiple of it)")


def valid_mask(model: M.Model, chips: int, tp, ep, pp, dp):
    """Vectorised `validate` for the planner: boolean array, True where the layout is structurally valid."""
    tp, ep, pp, dp = (np.asarray(x) for x in (tp, ep, pp, dp))
    ok = (tp <= chips) & (model.heads % tp == 0) & (pp <= model.layers)
    if not model.mla:
        ok &= (model.kv_heads % tp == 0) | (tp % model.kv_heads == 0)
    if model.moe:
        ok &= (ep == 1) | ((ep == tp * dp) & (model.moe.experts % ep == 0))
    else:
        ok &= ep == 1
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


def kv_shard(model: M.Model, tp):
    """How many ways one sequence's KV is split across a TP group: min(tp, K) heads; MLA's single
    latent is replicated on every TP rank (why DeepSeek serves attention with DP, not TP)."""
    tp = np.asarray(tp, dtype=float)
    return np.ones_like(tp) if model.mla else np.minimum(tp, model.kv_heads)


def stage_fraction(model: M.Model, pp):
    """f = ceil(L/pp)/L: share of the layers in the biggest stage."""
    return np.ceil(model.layers / np.asarray(pp, dtype=float)) / model.layers


@dataclass(frozen=True)
class MemoryPerGpu:
    weights_bytes: np.ndarray
    kv_bytes: np.ndarray
    activations_bytes: np.ndarray
    total_bytes: np.ndarray

    def parts(self) -> dict:
        f = lambda v: float(v) if np.ndim(v) == 0 else np.asarray(v).tolist()  # noqa: E731
        return {"weights": f(self.weights_bytes), "kv": f(self.kv_bytes), "activations": f(self.activations_bytes)}


def memory_per_gpu(model: M.Model, tp, ep, pp, dp, batch, context, *, bytes_per_weight=2.0,
                   bytes_per_kv=2.0, tokens_per_pass=1, activation_dtype="bf16") -> MemoryPerGpu:
    """Bytes per GPU of the busiest stage (module docstring formulas). `batch` counts sequences in
    flight in one replica (all pp micro-batches); `context` the KV tokens held per sequence;
    `tokens_per_pass` the tokens per sequence in one pass (1 in decode, the prompt chunk in prefill)."""
    tp, ep, pp, dp = (np.asarray(x, dtype=float) for x in (tp, ep, pp, dp))
    f = stage_fraction(model, pp)
    routed = (M.params_total(model) - M.dense_params(model))
    expert_split = np.where(ep > 1, ep, tp)
    w = f * (M.dense_params(model) / tp + routed / expert_split) * bytes_per_weight
    kv_seq = M.kv_bytes_per_sequence(model, context, "bf16") * (np.asarray(bytes_per_kv) / 2.0)
    kv = f * np.asarray(batch, dtype=float) * kv_seq / (dp * kv_shard(model, tp))
    tokens_group = np.asarray(batch, dtype=float) / (pp * dp) * tokens_per_pass
    act = activation_bytes(model, tokens_group, activation_dtype) / tp
    return MemoryPerGpu(weights_bytes=w, kv_bytes=kv, activations_bytes=act, total_bytes=w + kv + act)
