"""Model architecture → parameters, FLOPs and KV-cache bytes.

Notation (scaling-book): D d_model, F d_ff, N/K query/KV heads, H head dim, L layers, V vocab,
E experts, k active experts, T query length, S attended (KV) length.

Conventions and what they ignore:
- Parameters count every weight matrix, bias and norm scale of the text decoder (no vision towers, no
  multi-token-prediction heads). `params_active` follows the published convention: the whole model
  minus the routed experts a token does not use (embedding table included).
- Matmul FLOPs per token = 2 × (active parameters that take part in a matmul): the input-embedding
  lookup is excluded (unless tied to the output head). Attention score/value FLOPs are separate and
  grow with context (`attention_flops_per_token`). Elementwise ops, norms, softmax are ignored.
- KV bytes: K and V for every stored KV layer; MLA stores its latent plus the decoupled RoPE key
  (DeepSeek-V2 §2.1.3); sliding-window layers keep at most `window` tokens; cross-layer KV sharing
  (Character.AI, lecture §5.2) stores `kv_layers` unique caches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .units import dtype_bytes


@dataclass(frozen=True)
class MLA:
    """Multi-head latent attention dimensions (DeepSeek-V2/V3)."""

    q_lora_rank: int  # 0 means queries are projected directly from D
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class MoE:
    """Mixture-of-experts feed-forward layers (routed experts + always-on shared experts)."""

    experts: int  # routed experts per MoE layer (E)
    active: int  # routed experts per token (k)
    d_ff_expert: int  # hidden size of one routed expert
    shared: int = 0  # always-active shared experts
    d_ff_shared: int = 0  # total hidden size of the shared experts (default shared × d_ff_expert)
    dense_layers: int = 0  # leading layers with a dense MLP instead of MoE (DeepSeek first_k_dense)
    expert_bias: bool = False  # experts carry biases (gpt-oss)
    router_bias: bool = False


@dataclass(frozen=True)
class Model:
    id: str
    name: str
    family: str
    layers: int
    d_model: int
    vocab: int
    heads: int
    kv_heads: int
    head_dim: int
    d_ff: int  # dense MLP hidden size (0 if every layer is MoE)
    gated_mlp: bool = True  # SwiGLU/GeGLU: 3 matrices; plain: 2
    tied_embeddings: bool = False
    attention_bias: bool = False
    qk_norm: bool = False
    rotary: bool = True  # rotary position embeddings applied to q and k (false: learned/ALiBi positions)
    mla: MLA | None = None
    moe: MoE | None = None
    sliding_window: int = 0  # window of local-attention layers (0: none)
    local_layers: int = 0  # how many layers use the sliding window
    kv_layers: int = 0  # unique KV caches stored (cross-layer sharing); 0 means one per layer
    max_context: int = 0
    source: str = ""
    date: str = ""
    aliases: tuple[str, ...] = ()
    params_total_published: float = 0.0
    params_active_published: float = 0.0
    notes: str = ""

    # ---- structure -------------------------------------------------------------------------
    @property
    def moe_layers(self) -> int:
        return self.layers - self.moe.dense_layers if self.moe else 0

    @property
    def dense_mlp_layers(self) -> int:
        return self.layers - self.moe_layers

    @property
    def stored_kv_layers(self) -> int:
        return self.kv_layers or self.layers

    @property
    def sparsity(self) -> float:
        """The lecture's s = N_total/N_active (spec §0.3)."""
        return params_total(self) / params_active(self)


# ---- parameters --------------------------------------------------------------------------------
def attention_params_per_layer(m: Model) -> float:
    """Q, K, V, O projections (+ biases, QK-norm scales); MLA: down/up projections and latent norms."""
    D = m.d_model
    if m.mla:
        a = m.mla
        qk = a.qk_nope_head_dim + a.qk_rope_head_dim
        q = (D * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * m.heads * qk) if a.q_lora_rank else D * m.heads * qk
        kv = D * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank
        kv += a.kv_lora_rank * m.heads * (a.qk_nope_head_dim + a.v_head_dim)
        return float(q + kv + m.heads * a.v_head_dim * D)
    q_dim, kv_dim = m.heads * m.head_dim, m.kv_heads * m.head_dim
    p = D * q_dim + 2 * D * kv_dim + q_dim * D
    if m.attention_bias:
        p += q_dim + 2 * kv_dim + D
    if m.qk_norm:
        p += 2 * m.head_dim
    return float(p)


def mlp_params(d_model: int, d_ff: int, gated: bool, bias: bool = False) -> float:
    """One MLP: gated (SwiGLU) has gate, up, down = 3·D·F; plain has 2·D·F."""
    p = (3 if gated else 2) * d_model * d_ff
    if bias:
        p += (2 * d_ff if gated else d_ff) + d_model
    return float(p)


def _moe(m: Model) -> MoE:
    if m.moe is None:
        raise ValueError(f"{m.id} has no mixture-of-experts layers")
    return m.moe


def expert_params(m: Model) -> float:
    """One routed expert in one layer."""
    e = _moe(m)
    return mlp_params(m.d_model, e.d_ff_expert, m.gated_mlp, e.expert_bias)


def _moe_always_on_per_layer(m: Model) -> float:
    """Shared experts and router of one MoE layer (read for every token)."""
    e = _moe(m)
    shared_ff = e.d_ff_shared or e.shared * e.d_ff_expert
    shared = mlp_params(m.d_model, shared_ff, m.gated_mlp) if shared_ff else 0.0
    return shared + m.d_model * e.experts + (e.experts if e.router_bias else 0)


def embedding_params(m: Model) -> float:
    return float(m.vocab * m.d_model * (1 if m.tied_embeddings else 2))


def dense_params(m: Model) -> float:
    """Everything except routed experts: embeddings, attention, norms, dense MLPs, shared experts, routers."""
    D = m.d_model
    p = embedding_params(m) + D  # final norm
    p += m.layers * (attention_params_per_layer(m) + 2 * D)  # two norms per layer
    p += m.dense_mlp_layers * mlp_params(D, m.d_ff, m.gated_mlp) if m.d_ff else 0.0
    if m.moe:
        p += m.moe_layers * _moe_always_on_per_layer(m)
    return float(p)


def params_total(m: Model) -> float:
    """Total parameters N_total."""
    routed = m.moe_layers * m.moe.experts * expert_params(m) if m.moe else 0.0
    return dense_params(m) + routed


def params_active(m: Model, include_input_embedding: bool = True) -> float:
    """Parameters a single token uses, N_active.

    Publishers differ: Mistral and Qwen count the whole embedding table (the default here);
    OpenAI (gpt-oss model card), DeepSeek and Moonshot figures match the count without the input
    embedding table, which a token only looks up one row of (`include_input_embedding=False`).
    """
    routed = m.moe_layers * m.moe.active * expert_params(m) if m.moe else 0.0
    skip = 0.0 if include_input_embedding or m.tied_embeddings else m.vocab * m.d_model
    return dense_params(m) + routed - skip


def matmul_params_per_token(m: Model) -> float:
    """Active parameters that take part in a matmul: N_active minus the input-embedding lookup."""
    return params_active(m) - (0.0 if m.tied_embeddings else m.vocab * m.d_model)


def matmul_flops_per_token(m: Model) -> float:
    """2 · (matmul parameters) FLOPs per token for the forward pass (Kaplan 2020 §2.1, "C ≈ 2N")."""
    return 2.0 * matmul_params_per_token(m)


# ---- elementwise (non-matmul) kernel traffic --------------------------------------------------
def elementwise_bytes_per_token(m: Model, tp=1, low_precision_gemms=False, act_bytes: float = 2.0,
                                sequence_parallel: bool = False):
    """HBM bytes read + written per token by the elementwise kernels of one forward pass, all layers,
    on one tensor-parallel rank, each kernel counted as its own pass over its tensors (unfused):

        d-wide, replicated on every TP rank (split over tp with sequence parallelism):
          2 RMSNorm/LayerNorm           read D, write D           each     4·D
          2 residual adds               read 2·D, write D         each     6·D
        head- and FF-wide, split over tp:
          rotary on q and k             read + write R = q_rope + k_rope    2·R   (0 if Model.rotary is false)
          q/k norm (Qwen3, Gemma)       read + write (H + K)·hd             2·(H+K)·hd
          gated activation (SwiGLU)     read 2·F, write F                   3·F   (plain GeLU: 2·F)
          MoE dispatch + combine        gather/scatter k copies of D        4·k·D  (F = k·F_e + F_shared)
        × act_bytes (2: bf16/fp16); plus, when the GEMMs run in fp8/int8 (`low_precision_gemms`), the
        activation quantisation before each GEMM: read act_bytes + write 1 byte per input element,
        inputs D (QKV), D (MLP/router), H·hd_v (output projection, /tp) and F (down projection, /tp).

    Source of the operator list: the Llama/Mixtral/DeepSeek layer as the model configs define it (one
    kernel per operator, as in eager PyTorch and Megatron's unfused path; engines fuse some pairs, e.g.
    residual + norm or activation + quantise, which efficiency.FamilyEfficiency.elementwise_traffic's
    optimistic corner halves). Megatron's sequence parallelism (Korthikanti et al. 2022, arXiv:2205.05198
    §4.2.2) splits the d-wide operators over the TP ranks. Dropout and unfused attention's softmax are
    in `attention_dropout_bytes_per_token`. Ignores: the embedding lookup and final norm (one layer's
    worth), MLA's latent norms. Broadcasts over tp and low_precision_gemms.
    """
    tp = np.asarray(tp, dtype=float)
    lp = np.asarray(low_precision_gemms, dtype=bool)
    D, H, K = float(m.d_model), float(m.heads), float(m.kv_heads)
    if m.mla:
        hd_v, rope = float(m.mla.v_head_dim), (H + 1.0) * m.mla.qk_rope_head_dim
    else:
        hd_v, rope = float(m.head_dim), (H + K) * m.head_dim
    rope = rope if m.rotary else 0.0
    qk = (H + K) * m.head_dim if m.qk_norm else 0.0
    act_per_ff = 3.0 if m.gated_mlp else 2.0
    d_wide = 10.0 * D / np.where(sequence_parallel, tp, 1.0)

    def layer_bytes(ff, permute):
        split = (2.0 * rope + 2.0 * qk + act_per_ff * ff + permute) / tp
        quant = (2.0 * D / np.where(sequence_parallel, tp, 1.0) + (H * hd_v + ff) / tp) * (act_bytes + 1.0)
        return (d_wide + split) * act_bytes + np.where(lp, quant, 0.0)

    total = m.dense_mlp_layers * layer_bytes(float(m.d_ff), 0.0)
    if m.moe:
        e = m.moe
        ff_moe = e.active * e.d_ff_expert + (e.d_ff_shared or e.shared * e.d_ff_expert)
        total = total + m.moe_layers * layer_bytes(float(ff_moe), 4.0 * e.active * D)
    return total


def kernels_per_pass(m: Model, low_precision_gemms=False, low_precision_experts=None) -> tuple[int, Any, int]:
    """Kernel launches of one forward pass, all layers, on one GPU: (GEMM kernels, elementwise kernels,
    attention kernels). The per-kernel latency α of the realistic model (efficiency.Efficiency.kernel_latency_s,
    attention_latency_s) is paid once per launch, whatever its size (the α of t = α + work/rate). Per layer,
    as a serving engine runs it with its common fusions (residual add + norm in one kernel, q/k/v and
    gate/up projections as one GEMM each):

        attention block   GEMMs: QKV, O (2); MLA: q_a+kv_a, q_b, the two absorbed kv_b BMMs, O (5)
                          elementwise: add+norm (1), rotary (1 if rotary), q/k norm (1 if qk_norm),
                          MLA's latent norms (1)
                          attention: 1 (the attention op; it writes the new K/V into the cache)
        dense MLP         GEMMs: gate+up, down (2); elementwise: add+norm, activation (2)
        MoE layer         GEMMs: router, grouped up, grouped down (3) + shared expert gate+up, down (2 if any)
                          elementwise: add+norm, top-k, permute, activation, finalize (5) + shared activation
        fp8/int8/fp4 GEMMs  one activation-quantisation kernel per GEMM input group: QKV, O, MLP up, down (4;
                          a MoE layer's up and down follow `low_precision_experts`, default low_precision_gemms)
        once per pass     final norm + LM head (2)

    Source of the operator list: the model configs' layer structure, as in elementwise_bytes_per_token
    (the same operators, fused as above); SGLang's DeepSeek decode profile lists these kernels one by one
    (norms, per-token-group FP8 quantisation, q_a/kv_a, q_b, the two BMMs, rotary, attention, o_proj, router
    GEMM, top-k, grouped GEMMs, SiLU-and-mul, dispatch/combine). Collectives (TP all-reduce, EP dispatch and
    combine) are not counted here: their α is the network model's step latency. Ignores: engines that fuse
    more (TensorRT-LLM fuses rotary into its attention op; all-reduce + norm fusion) or less (eager mode),
    sampling kernels (the pass overhead). Broadcasts over low_precision_gemms."""
    lp = np.asarray(low_precision_gemms, dtype=bool)
    attn_gemm = 5 if m.mla else 2
    attn_ew = 1 + int(m.rotary) + int(m.qk_norm) + (1 if m.mla else 0)
    gemm = m.layers * attn_gemm + m.dense_mlp_layers * 2 + 1
    lp_e = lp if low_precision_experts is None else np.asarray(low_precision_experts, dtype=bool)
    ew = m.layers * (attn_ew + np.where(lp, 2, 0)) + m.dense_mlp_layers * (2 + np.where(lp, 2, 0)) + 1
    if m.moe:
        shared = 1 if (m.moe.shared or m.moe.d_ff_shared) else 0
        gemm += m.moe_layers * (3 + 2 * shared)
        ew = ew + m.moe_layers * (5 + shared + np.where(lp_e, 2, 0))
    return gemm, ew, m.layers


def kernels_inside_measured_ops(m: Model, low_precision_gemms=False, low_precision_experts=None) -> tuple[Any, Any]:
    """Of kernels_per_pass's elementwise launches, those that a measured kernel table's op already contains:
    (activation-quantisation kernels of the fp8/int8/fp4 linear layers, the fused MoE op's own kernels). The
    tables time a whole layer (NVIDIA AIConfigurator's collectors, ai-dynamo/aiconfigurator collector/*/
    collect_gemm.py and collect_moe.py: `Linear.forward(x)`, which quantises its input, and the FusedMoE module
    called with router logits, which selects the top-k, permutes, runs the grouped GEMMs and the activation and
    finalizes, all under one CUDA graph), so where a table replaces a term these launches are in its time:

        linear layers     one input-quantisation kernel per GEMM input group with low-precision GEMMs: QKV, O per
                          layer; gate+up, down per dense MLP layer
        fused MoE op      top-k, permute, activation, finalize (4) + the experts' input quantisation (2 with
                          low-precision experts), per MoE layer; not its add+norm nor the shared expert's activation

    Broadcasts over low_precision_gemms as kernels_per_pass does."""
    lp = np.asarray(low_precision_gemms, dtype=bool)
    lp_e = lp if low_precision_experts is None else np.asarray(low_precision_experts, dtype=bool)
    quant = np.where(lp, 2 * m.layers + 2 * m.dense_mlp_layers, 0)
    moe = m.moe_layers * (4 + np.where(lp_e, 2, 0)) if m.moe else np.zeros(np.shape(lp_e), dtype=int)
    return quant, moe


def attention_dropout_bytes_per_token(m: Model, seq_len, tp=1, *, flash_attention=True, dropout=False,
                                      act_bytes: float = 2.0, sequence_parallel: bool = False):
    """HBM bytes per token of one forward pass, all layers, one TP rank, that `elementwise_bytes_per_token`
    leaves out: attention WITHOUT a fused (flash) kernel, and dropout.

        unfused attention (`flash_attention` false), per head and score element (H/tp heads, s_att per row):
          fused scale + mask + softmax          read + write                 2·a
          attention dropout (`dropout`)         read, write, 1-byte mask     2·a + 1
        `dropout`, per layer, d-wide (split over tp with sequence parallelism):
          1-byte masks of the attention and MLP output dropouts (fused with bias + residual add)   2·D

    s_att = attended_tokens(m, seq_len): the unfused path materialises every query row in full (causal
    masking is applied inside the softmax kernel, not skipped); sliding-window layers at most the window.
    The score and probability tensors that the QKᵀ and PV GEMMs write and read are GEMM I/O, left with
    the GEMMs (Korthikanti et al. 2022, arXiv:2205.05198 §4.1, count the same tensors as stored
    activations: softmax output 2as²b, dropout mask as²b, dropout output 2as²b per layer). A flash kernel
    keeps scores on chip and regenerates its dropout mask from the RNG, so it adds nothing here.
    Source of the operator list: Megatron-LM's unfused attention (scaled masked softmax kernel, then
    dropout; bias-dropout-add) as Megatron 2021 and BLOOM ran it. Broadcasts over seq_len and tp.
    """
    tp = np.asarray(tp, dtype=float)
    drop = 1.0 if dropout else 0.0
    per_score = 0.0 if flash_attention else 2.0 * act_bytes + drop * (2.0 * act_bytes + 1.0)
    scores = m.heads / tp * attended_tokens(m, seq_len) * per_score
    masks = drop * m.layers * 2.0 * m.d_model / np.where(sequence_parallel, tp, 1.0)
    return scores + masks


# ---- MoE weight traffic ----------------------------------------------------------------------
def expected_distinct_experts(experts, active, tokens):
    """Expected number of distinct experts a batch of `tokens` touches in one layer, uniform routing:

        E · (1 − (1 − k/E)^B)        (k/E per expert per token; 1 token → exactly k)

    Ignores routing skew (real routers are imbalanced, which touches fewer distinct experts) and
    the without-replacement correlation within a token (exact for B = 1 and B → ∞). Broadcasts.
    """
    e = np.asarray(experts, dtype=float)
    return e * (1.0 - (1.0 - np.asarray(active, dtype=float) / e) ** np.asarray(tokens, dtype=float))


def sampling_imbalance(tokens, active, experts, ep, slots=None):
    """λ = the busiest of `ep` expert-parallel GPUs' routed picks over the mean, for `tokens` tokens each
    picking `active` = k of `experts` = E experts with equal probability (a perfectly balanced router: what
    is left is sampling noise), the E (+ R redundant) slots spread evenly over the GPUs.

    One token puts a hypergeometric number of its k picks on a GPU: mean k/n, variance
    k·(1/n)(1 − 1/n)(E − k)/(E − 1); over T tokens the GPU's load has mean μ = T·k/n and that variance
    times T (n = ep). The expected largest of n such loads, by the normal approximation with Blom's (1958)
    plotting position z_n = Φ⁻¹((n − 0.375)/(n + 0.25)), is μ + z_n·σ; the busiest GPU holds at least one pick
    (μ < 1) and at most T·min(k, slots/n), so

        λ = clip(max(1 + z_n·σ/μ, 1/μ), 1, n·min(k, slots/n)/k)          (λ = 1 for n = 1)

    It falls as 1/√T: 1.1 at 64 decode sequences per GPU on DeepSeek-V3 with EP 72, ~9 at one sequence.
    Ignores systematic skew (hot experts; EPLB's redundant copies exist to even it out — multiply by a
    measured factor for it) and the correlation between layers. Broadcasts."""
    t, k, e, n = (np.asarray(x, dtype=float) for x in (tokens, active, experts, ep))
    s = e if slots is None else np.asarray(slots, dtype=float)
    from statistics import NormalDist

    n_safe = np.maximum(n, 2.0)
    groups, where = np.unique(n_safe, return_inverse=True)  # Φ⁻¹ once per distinct GPU count
    z = np.array([NormalDist().inv_cdf((g - 0.375) / (g + 0.25)) for g in groups])[where].reshape(n_safe.shape)
    mu = np.maximum(t * k / n_safe, 1e-300)
    var = t * k * (1.0 / n_safe) * (1.0 - 1.0 / n_safe) * np.maximum(e - k, 0.0) / np.maximum(e - 1.0, 1.0)
    lam = np.maximum(1.0 + z * np.sqrt(var) / mu, 1.0 / mu)
    cap = n_safe * np.minimum(k, s / n_safe) / np.maximum(k, 1e-300)
    return np.where(n > 1, np.clip(lam, 1.0, np.maximum(cap, 1.0)), 1.0)


@dataclass(frozen=True)
class ExpertSkew:
    """Systematic expert popularity — hot experts — and what it does to the busiest expert-parallel GPU.

    `shares` holds, per MoE layer (rows), each routed expert's share of the routed picks (columns, rows sum to
    1): from a measured load table (`loads:FILE`, per-expert token counts as SGLang's expert-distribution recorder
    or vLLM's EPLB statistics log them) or a power law `powerlaw:A`, the share of the expert of popularity rank r
    ∝ r^−A (the model of expert load that NVIDIA's AIConfigurator uses, ai-dynamo/aiconfigurator PR #309),
    ranks assigned to expert ids in a seeded random order. `factor(ep, R)` = the busiest GPU's share over the
    mean 1/ep, averaged over the layers (a pass's MoE time is the sum of its layers'):

    - R = 0, static placement: experts in id order, E/ep consecutive ids per GPU (a measured table as given;
      a power law averaged over 64 seeded random rank orders);
    - R > 0, DeepSeek's EPLB (github.com/deepseek-ai/EPLB): R redundant copies go one at a time to the expert
      with the largest share per copy, each copy takes an equal part of its expert's picks, and the E + R
      copies are packed heaviest first onto the least-loaded GPU with a free slot ((E + R)/ep slots each).

    Ignores: the dynamics of rebalancing (the table is taken as the steady state), node-limited routing and
    the correlation of the skew with the sampling noise (the engine multiplies the two: λ = factor ·
    sampling_imbalance)."""

    kind: str
    value: str
    shares: Any

    @classmethod
    def powerlaw(cls, exponent: float, experts: int, active: int = 1) -> "ExpertSkew":
        """Shares ∝ rank^−A, capped at 1/k (a token picks k distinct experts, so no expert gets more than 1/k of
        the picks; the excess is spread over the others in proportion, until none exceeds the cap)."""
        p = np.arange(1, experts + 1, dtype=float) ** -float(exponent)
        p /= p.sum()
        cap = 1.0 / max(int(active), 1)
        for _ in range(experts):
            over = p > cap * (1 + 1e-12)
            if not over.any():
                break
            excess = float((p[over] - cap).sum())
            p[over] = cap
            free = ~over & (p < cap)
            p[free] += excess * p[free] / p[free].sum()
        return cls("powerlaw", f"{exponent:g}", p[None, :])

    @classmethod
    def from_loads(cls, loads, name: str = "table") -> "ExpertSkew":
        x = np.atleast_2d(np.asarray(loads, dtype=float))
        return cls("loads", name, x / x.sum(axis=1, keepdims=True))

    def factor(self, ep, redundant=0):
        """λ_skew for EP degree(s) `ep` with `redundant` copies (broadcasts; one computation per distinct pair)."""
        e, r = np.broadcast_arrays(np.asarray(ep, dtype=float), np.asarray(redundant, dtype=float))
        pairs, where = np.unique(np.stack([e.ravel(), r.ravel()]), axis=1, return_inverse=True)
        vals = np.array([self._factor(int(a), int(b)) for a, b in pairs.T])
        return vals[np.ravel(where)].reshape(e.shape)

    def _factor(self, ep: int, redundant: int) -> float:
        if ep <= 1:
            return 1.0
        experts = self.shares.shape[1]
        if redundant == 0:
            rows = self.shares
            if self.kind == "powerlaw":  # popularity ranks in 64 seeded random orders over the expert ids
                rng = np.random.default_rng(0)
                rows = np.stack([self.shares[0][rng.permutation(experts)] for _ in range(64)])
            per_gpu = rows[:, : experts - experts % ep].reshape(len(rows), ep, -1).sum(axis=2)
            return float(np.mean(per_gpu.max(axis=1) * ep / per_gpu.sum(axis=1)))
        return float(np.mean([_eplb_busiest(row, ep, redundant) * ep for row in self.shares]))


def _eplb_busiest(shares, ep: int, redundant: int) -> float:
    """The busiest GPU's share under EPLB's replicate-then-pack (ExpertSkew docstring)."""
    import heapq

    copies = np.ones(len(shares))
    heap = [(-float(s), i) for i, s in enumerate(shares)]
    heapq.heapify(heap)
    for _ in range(redundant):  # a copy for the expert with the most picks per copy
        _, i = heapq.heappop(heap)
        copies[i] += 1
        heapq.heappush(heap, (-float(shares[i] / copies[i]), i))
    items = np.sort(np.repeat(shares / copies, copies.astype(int)))[::-1]
    slots = -(-(len(shares) + redundant) // ep)  # (E + R)/ep when it divides (the layout's rule), else rounded up
    free = [(0.0, g, 0) for g in range(ep)]  # (load, gpu, slots used) of GPUs with a free slot: least loaded first
    full = []
    for w in items:
        load, g, used = heapq.heappop(free)
        if used + 1 < slots:
            heapq.heappush(free, (load + float(w), g, used + 1))
        else:
            full.append(load + float(w))
    return max(full + [x[0] for x in free])


def weight_read_params(m: Model, tokens=None):
    """Parameters read from memory in one forward pass over `tokens` tokens (all sequences).

    Dense part always; routed experts: the expected distinct experts the batch touches (all E as
    tokens → ∞, the lecture's W_total [S 00:05:09]); embedding table: only the rows looked up,
    unless tied to the output head (then the whole table is read by the head).
    `tokens=None` gives the lecture's upper bound: every weight once.
    """
    if tokens is None:
        return params_total(m)
    t = np.asarray(tokens, dtype=float)
    p = dense_params(m)
    if not m.tied_embeddings:
        emb = m.vocab * m.d_model
        p = p - emb + np.minimum(t, m.vocab) * m.d_model
    if m.moe:
        p = p + m.moe_layers * expected_distinct_experts(m.moe.experts, m.moe.active, t) * expert_params(m)
    return p


# ---- attention FLOPs and KV bytes -------------------------------------------------------------
def qk_v_dims(m: Model) -> tuple[int, int]:
    """(query/key, value) head dims: H for MHA/GQA/MQA; MLA's nope + rope query/key and its value dim."""
    return _qk_v_dims(m)


def _qk_v_dims(m: Model) -> tuple[int, int]:
    if m.mla:
        return m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim, m.mla.v_head_dim
    return m.head_dim, m.head_dim


def attended_tokens(m: Model, context):
    """Sum over layers of tokens attended by one query at position `context`: global layers see
    `context`, sliding-window layers at most `window`. Returns layer-tokens. Broadcasts."""
    c = np.asarray(context, dtype=float)
    local = m.local_layers if m.sliding_window else 0
    return (m.layers - local) * c + local * np.minimum(c, m.sliding_window or 0)


def attention_flops_per_token(m: Model, context):
    """Score (QKᵀ) and value (PV) FLOPs for one query attending `context` tokens:
    2 · N · (H_qk + H_v) · attended tokens (summed over layers). Broadcasts over context.
    MLA counted in its naive (decompressed) form. Source: Kaplan 2020 Table 1 (2·n_layer·n_ctx·d_attn).
    """
    qk, v = _qk_v_dims(m)
    return 2.0 * m.heads * (qk + v) * attended_tokens(m, context)


def prefill_attention_flops_per_token(m: Model, prompt, context_before=0):
    """Mean attention FLOPs per token over a causal prefill of `prompt` tokens after `context_before`
    cached tokens: token i attends context_before + i + 1 tokens, so the mean is context_before +
    (prompt + 1)/2 for global layers (sliding layers: capped at the window, approximated on the mean).
    """
    mean_ctx = np.asarray(context_before, dtype=float) + (np.asarray(prompt, dtype=float) + 1.0) / 2.0
    return attention_flops_per_token(m, mean_ctx)


def kv_bytes_per_token_per_layer(m: Model, kv_dtype: str = "bf16") -> float:
    """KV bytes one token adds to one stored layer: 2·K·H (K and V), or MLA's latent + RoPE key."""
    b = dtype_bytes(kv_dtype)
    if m.mla:
        return (m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) * b
    return 2.0 * m.kv_heads * m.head_dim * b


def kv_bytes_per_token(m: Model, kv_dtype: str = "bf16") -> float:
    """Asymptotic KV bytes per token of context (the lecture's `kv`, spec §5.2): layers that grow
    with context (global layers; unique caches under cross-layer sharing) × bytes per layer."""
    per_layer = kv_bytes_per_token_per_layer(m, kv_dtype)
    if m.kv_layers:
        return m.kv_layers * per_layer
    local = m.local_layers if m.sliding_window else 0
    return (m.layers - local) * per_layer


def kv_bytes_per_sequence(m: Model, context, kv_dtype: str = "bf16"):
    """KV bytes held for one sequence of `context` tokens: global layers hold all of it, sliding-window
    layers at most `window` tokens (gpt-oss, Gemma 3). Broadcasts over context."""
    c = np.asarray(context, dtype=float)
    per_layer = kv_bytes_per_token_per_layer(m, kv_dtype)
    if m.kv_layers:
        return m.kv_layers * per_layer * c
    local = m.local_layers if m.sliding_window else 0
    return per_layer * ((m.layers - local) * c + local * np.minimum(c, m.sliding_window or 0))


def weight_bytes(m: Model, weights_dtype: str = "bf16") -> float:
    """W_total = N_total · b_w (all weights stored in one format; ignores mixed-precision layers)."""
    return params_total(m) * dtype_bytes(weights_dtype)
