"""Training memory per GPU: model states (mixed-precision Adam, ZeRO 1–3 / FSDP) and activations under
no, selective and full recomputation, and with reversible layers (lecture §3.4, §6.3).

Model states (Rajbhandari et al. 2020, "ZeRO", arXiv:1910.02054, §3.1 and Fig. 1), Ψ parameters on a
GPU, N_d data-parallel ranks, K = 12 bytes of fp32 optimizer state (master weights, Adam m and v):

    stage 0   (2 + 2 + K)·Ψ           bf16 weights + bf16 grads + K
    stage 1   (2 + 2)·Ψ + K·Ψ/N_d      optimizer states sharded
    stage 2   2·Ψ + (2 + K)·Ψ/N_d      + gradients sharded
    stage 3   (2 + 2 + K)·Ψ/N_d        + weights sharded (= PyTorch FSDP FULL_SHARD)

Activations of one transformer layer, one micro-batch of b sequences of s tokens, 16-bit activations
(Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
arXiv:2205.05198, §4.1 eq. (1), §4.2 eq. (4)–(5)):

    no recomputation, TP t with sequence parallelism:     s·b·h·(34 + 5·a·s/h) / t
    TP t without sequence parallelism:                    s·b·h·(10 + 24/t + 5·a·s/(h·t))
    selective recomputation (attention core recomputed):  34·s·b·h / t
    full recomputation (layer input kept):                 2·s·b·h / t

(h hidden, a heads). The 34 = 11 (attention) + 19 (MLP, d_ff = 4h, GeLU) + 4 (two LayerNorms); the
5·a·s² terms are softmax output (2), its dropout mask (1) and dropout output (2). This module computes
the same terms from the model's real shapes (GQA K/V widths, gated MLP, d_ff, MoE top-k), with
dropout and FlashAttention as switches, and reproduces eq. (1) exactly for the paper's GPT shape.

Pipeline stages hold several micro-batches in flight (Narayanan et al. 2021, arXiv:2104.04473,
§2.2): GPipe all m, 1F1B min(P, m), interleaved 1F1B P·(1 + (P−1)/(P·v)) (Korthikanti §4.2.3).

Reversible layers (Gomez et al. 2017, arXiv:1707.04585; lecture §6.3): each layer's input is
rebuilt from its output in the backward pass, so a stage keeps only its two output streams per
micro-batch in flight, plus one layer's working set, at the price of one more forward (≈ 8ND).

Ignores: the embedding output on the first stage, temporary buffers of communication and of the
ZeRO-3 parameter gather, allocator fragmentation, the optimizer's own temporaries. Peaks are counted
as stored activations plus the transient working set of the one layer being back-propagated.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from . import model as M
from .errors import InputError

RECOMPUTE_MODES = ("none", "selective", "full", "reversible")
SCHEDULES = ("gpipe", "1f1b", "interleaved")
#: bytes per parameter of fp32 Adam state: master weights 4 + momentum 4 + variance 4 (ZeRO §3.1, K = 12)
ADAM_STATE_BYTES = 12.0


@dataclass(frozen=True)
class TrainLayout:
    """How a training step is laid out on tp·pp·dp GPUs (ep divides dp: experts borrow DP ranks).

    micro_batch: sequences per micro-batch (b). micro_batches: per pipeline per step (m); the global
    batch is dp·m·b sequences. virtual_stages (v) > 1 only with the interleaved schedule.
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    micro_batch: int = 1
    micro_batches: int = 1
    schedule: str = "1f1b"
    virtual_stages: int = 1
    zero: int = 1
    sequence_parallel: bool = True

    def __post_init__(self):
        for f in ("tp", "pp", "dp", "ep", "micro_batch", "micro_batches", "virtual_stages"):
            v = getattr(self, f)
            if int(v) != v or v < 1:
                raise InputError(f"{f} must be a whole number >= 1, got {v}")
        if self.schedule not in SCHEDULES:
            raise InputError(f"schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        if self.virtual_stages > 1 and self.schedule != "interleaved":
            raise InputError("virtual_stages > 1 needs schedule 'interleaved'; set schedule='interleaved'")
        if self.zero not in (0, 1, 2, 3):
            raise InputError(f"zero stage must be 0, 1, 2 or 3 (3 = FSDP), got {self.zero}")
        if self.dp % self.ep:
            raise InputError(f"ep ({self.ep}) must divide dp ({self.dp}): expert parallelism reuses "
                             f"data-parallel ranks; pick ep among the divisors of dp")

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def global_batch(self) -> int:
        return self.dp * self.micro_batches * self.micro_batch

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def check_layout(m: M.Model, layout: TrainLayout) -> None:
    """Experts must split evenly over ep. Layers may split unevenly over pp·v chunks (BLOOM: 70 layers
    on 12 stages); the busiest stage then holds `stage_layers` = v·ceil(L/(pp·v)) layers."""
    if layout.pp * layout.virtual_stages > m.layers:
        raise InputError(f"pp·v = {layout.pp * layout.virtual_stages} exceeds {m.id}'s {m.layers} layers; "
                         f"use fewer pipeline stages")
    if m.moe and m.moe.experts % layout.ep:
        raise InputError(f"ep ({layout.ep}) must divide {m.id}'s {m.moe.experts} experts")


def stage_layers(m: M.Model, layout: TrainLayout) -> int:
    """Layers on the busiest pipeline stage: v·ceil(L/(pp·v))."""
    v = layout.virtual_stages
    return v * -(-m.layers // (layout.pp * v))


# ---- model states ---------------------------------------------------------------------------------
def model_state_bytes(params, dp, zero, *, weight_bytes=2.0, grad_bytes=2.0, optimizer_bytes=ADAM_STATE_BYTES):
    """(weights, grads, optimizer) bytes per GPU for Ψ = `params` on this GPU (ZeRO §3.1, Fig. 1).

    ZeRO's worked example: Ψ = 7.5e9, N_d = 64: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB for stages 0–3.
    Broadcasts over params and dp.
    """
    p = np.asarray(params, dtype=float)
    nd = np.asarray(dp, dtype=float)
    w = p * weight_bytes / (nd if zero >= 3 else 1.0)
    g = p * grad_bytes / (nd if zero >= 2 else 1.0)
    o = p * optimizer_bytes / (nd if zero >= 1 else 1.0)
    return w, g, o


def params_per_gpu(m: M.Model, layout: TrainLayout):
    """(dense Ψ, expert Ψ) per GPU on the busiest stage: dense weights split over tp and over stages
    in proportion to layers (f = stage_layers/L), routed experts also over ep."""
    expert_total = m.moe_layers * m.moe.experts * M.expert_params(m) if m.moe else 0.0
    dense = M.params_total(m) - expert_total
    f = stage_layers(m, layout) / m.layers
    return dense * f / layout.tp, expert_total * f / (layout.tp * layout.ep)


# ---- activations ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class LayerActivations:
    """Bytes of one layer, one micro-batch, split the way Korthikanti et al. split them."""

    replicated: float  # LayerNorm inputs, QKV and MLP-in inputs, dropout masks: not split by TP w/o SP
    split: float  # the rest of the s·b·h terms (divided by t)
    quadratic: float  # the a·s²·b attention-core terms (divided by t); 0 with FlashAttention
    layer_input: float  # 2·s·b·h: the checkpoint full recomputation keeps


def layer_activations(m: M.Model, seq_len, micro_batch, *, dropout=True, flash_attention=False,
                      act_bytes=2.0) -> LayerActivations:
    """Activation bytes of one layer for one micro-batch, before any parallel split.

    Terms (Korthikanti §4.1, generalised to the model's shapes; B = act_bytes, masks 1 byte):
      attention: QKV input B·sbh, Q and K B·sb(q+kv), V B·sb·kv, out-proj input B·sb·q, mask sbh
      core:      softmax output B·a·s²·b (+ dropout mask a·s²·b + dropout output B·a·s²·b);
                 FlashAttention keeps only the fp32 log-sum-exp, 4·a·s·b
      MLP:       input B·sbh, GeLU in and out 2·B·sbF (gated: gate, up and product 3·B·sbF), mask sbh
      norms:     two LayerNorm inputs 2·B·sbh
    MoE layers use F = k·d_ff_expert + shared width (each token visits k experts).
    """
    s = np.asarray(seq_len, dtype=float)
    b = float(micro_batch)
    h = m.d_model
    q_dim, kv_dim = m.heads * m.head_dim, m.kv_heads * m.head_dim
    if m.mla:
        q_dim = m.heads * (m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim)
        kv_dim = q_dim
    sb = s * b
    mask = 1.0 if dropout else 0.0
    # feed-forward width averaged over layers (dense and MoE layers)
    ffs = []
    if m.dense_mlp_layers and m.d_ff:
        ffs.append((m.dense_mlp_layers, m.d_ff))
    if m.moe:
        shared = m.moe.d_ff_shared or m.moe.shared * m.moe.d_ff_expert
        ffs.append((m.moe_layers, m.moe.active * m.moe.d_ff_expert + shared))
    f_mean = sum(n * f for n, f in ffs) / max(sum(n for n, _ in ffs), 1)
    mlp_inner = (3.0 if m.gated_mlp else 2.0) * act_bytes * sb * f_mean
    replicated = act_bytes * sb * h * 4 + 2 * mask * sb * h  # 2 LN inputs, QKV in, MLP in; 2 masks
    split = act_bytes * sb * (q_dim + kv_dim) + act_bytes * sb * kv_dim + act_bytes * sb * q_dim + mlp_inner
    if flash_attention:
        quadratic = 4.0 * m.heads * sb  # fp32 log-sum-exp per row (Dao et al. 2022 §3.1)
    else:
        quadratic = m.heads * s * sb * (act_bytes + mask * (1.0 + act_bytes))
    return LayerActivations(replicated, split, quadratic, act_bytes * sb * h)


def in_flight_micro_batches(layout: TrainLayout):
    """Micro-batches whose activations the first stage holds at its peak (Narayanan 2021 §2.2;
    Korthikanti 2022 §4.2.3): GPipe m; 1F1B min(P, m); interleaved P·(1 + (P−1)/(P·v)), capped at v·m
    chunk-micro-batches expressed in whole-stage units."""
    P, mb, v = layout.pp, layout.micro_batches, layout.virtual_stages
    if layout.schedule == "gpipe":
        return float(mb)
    if layout.schedule == "1f1b":
        return float(min(P, mb))
    return float(min(P * (1.0 + (P - 1.0) / (P * v)), mb))


@dataclass(frozen=True)
class TrainingMemory:
    """Bytes per GPU on the busiest stage (arrays if seq_len was an array)."""

    weights: np.ndarray
    grads: np.ndarray
    optimizer: np.ndarray
    activations: np.ndarray  # stored + transient working set of one layer (+ logits on the last stage)
    logits: np.ndarray  # fp32 logits of one micro-batch (already inside `activations` where they apply)
    total: np.ndarray
    recompute: str
    in_flight: float
    layers_per_stage: float

    def to_dict(self) -> dict:
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name + ("_bytes" if isinstance(v, np.ndarray) else "")] = (
                v.tolist() if isinstance(v, np.ndarray) and v.ndim else (float(v) if isinstance(v, np.ndarray) else v))
        return out


def activation_bytes_per_gpu(m: M.Model, layout: TrainLayout, seq_len, recompute="none", *,
                             dropout=True, flash_attention=False, act_bytes=2.0):
    """Peak activation bytes on the first pipeline stage for a recompute mode (see module docstring).

        none        n·(R/t' + S/t + Q/t)                   n = layers per stage × micro-batches in flight
        selective   n·(R/t' + S/t) + Q/t                    core recomputed one layer at a time
        full        n·I/t' + (layer − I/t')                 keep inputs, rebuild one layer
        reversible  2·I/t'·in_flight + layer + 2·I/t'       two output streams per micro-batch in flight
    (t' = t with sequence parallelism, else 1; I = 2·s·b·h; `layer` = one layer's full activations.)
    """
    if recompute not in RECOMPUTE_MODES:
        raise InputError(f"recompute must be one of {', '.join(RECOMPUTE_MODES)}, got {recompute!r}")
    la = layer_activations(m, seq_len, layout.micro_batch, dropout=dropout, flash_attention=flash_attention,
                           act_bytes=act_bytes)
    t = float(layout.tp)
    t_rep = t if layout.sequence_parallel else 1.0
    rep, split, quad, inp = la.replicated / t_rep, la.split / t, la.quadratic / t, la.layer_input / t_rep
    layer = rep + split + quad
    in_flight = in_flight_micro_batches(layout)
    n = stage_layers(m, layout) * in_flight
    if recompute == "none":
        return n * layer
    if recompute == "selective":
        return n * (rep + split) + quad
    if recompute == "full":
        return n * inp + (layer - inp)
    return 2.0 * inp * in_flight + layer + 2.0 * inp


def training_memory(m: M.Model, layout: TrainLayout, seq_len, recompute="none", *, dropout=True,
                    flash_attention=False, weight_bytes=2.0, grad_bytes=2.0,
                    optimizer_bytes=ADAM_STATE_BYTES, act_bytes=2.0) -> TrainingMemory:
    """Weights, gradients, optimizer states and activations per GPU for `layout` (module docstring).

    The busiest GPU: the first stage's activations, or the last stage's (one micro-batch of layers
    plus fp32 logits 4·s·b·V/t) if larger. Broadcasts over seq_len.
    """
    check_layout(m, layout)
    dense, expert = params_per_gpu(m, layout)
    wd, gd, od = model_state_bytes(dense, layout.dp, layout.zero, weight_bytes=weight_bytes,
                                   grad_bytes=grad_bytes, optimizer_bytes=optimizer_bytes)
    we, ge, oe = model_state_bytes(expert, layout.dp // layout.ep, layout.zero, weight_bytes=weight_bytes,
                                   grad_bytes=grad_bytes, optimizer_bytes=optimizer_bytes)
    act = np.asarray(activation_bytes_per_gpu(m, layout, seq_len, recompute, dropout=dropout,
                                              flash_attention=flash_attention, act_bytes=act_bytes), dtype=float)
    logits = 4.0 * np.asarray(seq_len, dtype=float) * layout.micro_batch * m.vocab / layout.tp
    if layout.pp == 1:
        act_peak = act + logits
    else:  # last stage holds one micro-batch in flight (1F1B) — or all m for GPipe — plus the logits
        last = TrainLayout(tp=layout.tp, pp=layout.pp, dp=layout.dp, ep=layout.ep, micro_batch=layout.micro_batch,
                           micro_batches=1 if layout.schedule != "gpipe" else layout.micro_batches,
                           schedule="gpipe", zero=layout.zero, sequence_parallel=layout.sequence_parallel)
        act_last = activation_bytes_per_gpu(m, last, seq_len, recompute, dropout=dropout,
                                            flash_attention=flash_attention, act_bytes=act_bytes) + logits
        act_peak = np.maximum(act, act_last)
    w, g, o = wd + we, gd + ge, od + oe
    return TrainingMemory(
        weights=np.asarray(w), grads=np.asarray(g), optimizer=np.asarray(o), activations=act_peak,
        logits=logits, total=w + g + o + act_peak, recompute=recompute,
        in_flight=in_flight_micro_batches(layout), layers_per_stage=float(stage_layers(m, layout)),
    )


def recompute_extra_flops_per_token(m: M.Model, seq_len, recompute="none", *, causal=True):
    """Extra forward FLOPs per token spent rematerialising activations:

        none 0;  selective: the attention core (QKᵀ and PV) once more (Korthikanti §5);
        full and reversible: one more forward pass, 2·N + attention (≈ 8ND instead of 6ND; lecture §6.3 [I]).
    """
    if recompute not in RECOMPUTE_MODES:
        raise InputError(f"recompute must be one of {', '.join(RECOMPUTE_MODES)}, got {recompute!r}")
    attn = forward_attention_flops_per_token(m, seq_len, causal=causal)
    if recompute == "none":
        return 0.0 * attn
    if recompute == "selective":
        return attn
    return M.matmul_flops_per_token(m) + attn


def forward_attention_flops_per_token(m: M.Model, seq_len, *, causal=True):
    """Score and value FLOPs per token of a training sequence: causal mean context (s+1)/2, or the
    full s×s square (`causal=False`, the convention of Narayanan et al. 2021 eq. (3))."""
    s = np.asarray(seq_len, dtype=float)
    if causal:
        return M.prefill_attention_flops_per_token(m, s)
    return M.attention_flops_per_token(m, s)
