"""Memory per GPU for every command: weights, KV cache and activations in inference, and model states
(weights, gradients, optimizer states) and activations in training; and the KV capacity a layout leaves.

Inference, per GPU of the busiest stage (lecture §3.5, with B = pp·b sequences in flight, b per micro-batch):

    weights = f·(W_dense/tp + W_routed/(moe_tp·ep))       f = v·ceil(L/(pp·v))/L  (layout.stage_fraction)
    kv      = f·B·kv_seq(ctx)/(dp·kv_shard)               kv_shard = min(tp, K) for GQA, 1 for MLA, tp if perfect
    acts    = one layer's live activations of the dp group's tokens / tp      (`activation_bytes`)

With B = pp·b the pp cancels in the KV term: b·kv_seq/(dp·kv_shard) (the lecture's cancellation, T23).
KV capacity (`kv_capacity_tokens`): the tokens whose KV fits in what the weights and activations leave.
Ignores: uneven embedding/head placement across stages (spread with f), CUDA graphs and workspace (covered
by the usable-memory fraction), KV fragmentation (paged attention makes it small).

Training. Training memory per GPU: model states (mixed-precision Adam, ZeRO 1–3 / FSDP) and activations under
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
from .layout import Layout, expert_slots, kv_shard, stage_fraction, stage_layers
from .units import dtype_bytes

#: vLLM's default `gpu_memory_utilization` (vLLM engine arguments docs): share of HBM usable for
#: weights, KV cache and activations; the rest is CUDA context, allocator slack and workspace.
DEFAULT_USABLE_MEMORY = 0.9
#: Engines' own defaults for the KV memory flag, by name (`simulate --kv-memory-fraction NAME`, run key
#: kv_memory_fraction NAME): SGLang computes --mem-fraction-static at start-up when it is not given
#: (`sglang_mem_fraction_static`); "sglang" is the rule of v0.5.3 and later, "sglang-0.4.8" that of v0.4.8-v0.5.2.
KV_MEMORY_RULES = ("sglang", "sglang-0.4.8")
_MIB = 2.0**20


def sglang_mem_fraction_static(memory_bytes: float, tp: int, pp: int = 1, dp: int = 1, *, rule: str = "sglang",
                               chunked_prefill_size: float | None = None, cuda_graph_max_bs: float | None = None,
                               speculative: bool = False) -> float:
    """SGLang's default --mem-fraction-static: the share of the GPU's total memory (`memory_bytes`, what the driver
    reports) its weights and KV pool may take, computed at start-up (python/sglang/srt/server_args.py,
    ServerArgs._handle_gpu_memory_settings), in MiB, G = memory in MiB, p = tp · pp (SGLang's tp_size counts every
    GPU of the replica, attention-DP ranks included; dp > 1 is --enable-dp-attention with that many ranks):

      rule "sglang" (v0.5.3 and later: PR #10975, 2025-09-27, with #11076's constants, 2025-09-30; AIConfigurator
      mirrors it as derive_sglang_mem_fraction_static): the launch's chunked-prefill size C and CUDA-graph bound B,
      where not given the tiers of G (< 20 GiB: 2,048 and 8; < 35 GiB: 2,048 and 24 / 80 at tp >= 4; < 60 GiB:
      4,096 and 32 / 160; < 160 GiB: 8,192 and 256 / 512; else 16,384 and 512), then
          R = 512 + 1.5 · max(C, 2048) + 2 · B + p/8 · 1024  (+ 3 · B · dp, + 1.5 · B · dp when B > 300, with dp > 1)
          R = max(R, 10 GiB) when G > 60 GiB; + 2 GiB with a speculative draft
      rule "sglang-0.4.8" (v0.4.8-v0.5.2: PR #7054, 2025-06-10):
          R = (2.8 + p/10) GiB when G < 35 GiB; (9.5 + p/2) GiB when G < 90 GiB; (12 + p/2) GiB when G < 160 GiB;
          else 32 GiB; + 2 GiB with a speculative draft, + 4 GiB with dp > 1
      fraction = round((G − R) / G, 3)

    The KV pool is then fraction · total − weights (`kv_capacity_tokens` with of="total"; SGLang's
    profile_max_num_token subtracts total · (1 − fraction) from the memory free after loading). Ignores: the
    speculative algorithm's kind (STANDALONE reserves 6 GiB in the newer rule), DeepEP buffers, multimodal models'
    adjustment, and the non-torch memory (CUDA context) the free-memory reading sees."""
    if rule not in KV_MEMORY_RULES:
        raise InputError(f"unknown KV memory rule {rule!r}; expected one of {', '.join(KV_MEMORY_RULES)}")
    g, p = memory_bytes / _MIB, tp * pp
    if rule == "sglang-0.4.8":
        r = (2.8 + p / 10 if g < 35 * 1024 else 9.5 + p / 2 if g < 90 * 1024 else 12 + p / 2 if g < 160 * 1024
             else 32.0) * 1024
        r += (2048 if speculative else 0) + (4096 if dp > 1 else 0)
        return round((g - r) / g, 3)
    small = tp < 4
    chunk, graphs = ((2048, 8) if g < 20 * 1024 else (2048, 24 if small else 80) if g < 35 * 1024
                     else (4096, 32 if small else 160) if g < 60 * 1024
                     else (8192, 256 if small else 512) if g < 160 * 1024 else (16384, 512))
    c = chunk if chunked_prefill_size is None else chunked_prefill_size
    b = graphs if cuda_graph_max_bs is None else cuda_graph_max_bs
    r = 512 + 1.5 * max(c, 2048) + 2 * b + p / 8 * 1024
    if dp > 1:
        r += 3 * b * dp + (1.5 * b * dp if b > 300 else 0)
    if g > 60 * 1024:
        r = max(r, 10 * 1024)
    r += 2048 if speculative else 0
    return round((g - r) / g, 3)


def replica_kv_fraction(rule: str, system, gpus: int, layout: Layout | None = None, *,
                        chunked_prefill_size: float | None = None, cuda_graph_max_bs: float | None = None,
                        speculative: bool = False) -> float:
    """`sglang_mem_fraction_static` for one replica of `system`: its `layout` (SGLang's tp_size counts every GPU of
    a pipeline stage, attention-DP ranks included; dp > 1 is --enable-dp-attention), else `gpus` as one TP group.
    The one place `simulate --kv-memory-fraction NAME` and the run key of that name resolve."""
    tp, pp, dp = (int(gpus), 1, 1) if layout is None else (layout.tp * layout.dp, layout.pp, layout.dp)
    return sglang_mem_fraction_static(system.accelerator.engine_memory_bytes, tp, pp, dp, rule=rule,
                                      chunked_prefill_size=chunked_prefill_size, cuda_graph_max_bs=cuda_graph_max_bs,
                                      speculative=speculative)


#: bytes per parameter of fp32 Adam state: master weights 4 + momentum 4 + variance 4 (ZeRO §3.1, K = 12)
ADAM_STATE_BYTES = 12.0


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


def params_per_gpu(m: M.Model, layout: Layout):
    """(dense Ψ, routed-expert Ψ) per GPU on the busiest stage: f·W_dense/tp and f·L_moe·(E + R)·N_e/(moe_tp·ep)
    (R redundant expert copies), f = v·ceil(L/(pp·v))/L. Broadcasts over array-valued layout degrees (the planner's grid)."""
    expert_total = m.moe_layers * m.moe.experts * M.expert_params(m) if m.moe else 0.0
    dense = M.params_total(m) - expert_total
    slots = m.moe_layers * expert_slots(m, layout) * M.expert_params(m) if m.moe else 0.0  # + redundant copies
    f = stage_fraction(m, layout.pp, layout.virtual_stages)
    tp = np.asarray(layout.tp, dtype=float)
    return dense * f / tp, slots * f / (np.asarray(layout.moe_tp, dtype=float) * layout.ep)


# ---- inference ------------------------------------------------------------------------------------
def activation_bytes(model: M.Model, tokens, dtype: str = "bf16"):
    """Live activations of one layer during inference (estimate): residual stream, the layer input,
    attention output and the widest MLP hidden state for every token in the pass:
    tokens · (3·D + 2·F_active) · bytes. Inference frees each layer's activations before the next.
    """
    ff = model.d_ff
    if model.moe:
        ff = max(ff, model.moe.active * model.moe.d_ff_expert)
    return np.asarray(tokens, dtype=float) * (3 * model.d_model + 2 * ff) * dtype_bytes(dtype)


@dataclass(frozen=True)
class MemoryPerGpu:
    """Inference bytes per GPU of the busiest stage (arrays when the inputs were)."""

    weights_bytes: np.ndarray
    kv_bytes: np.ndarray
    activations_bytes: np.ndarray
    total_bytes: np.ndarray

    def parts(self) -> dict:
        f = lambda v: float(v) if np.ndim(v) == 0 else np.asarray(v).tolist()  # noqa: E731
        return {"weights": f(self.weights_bytes), "kv": f(self.kv_bytes), "activations": f(self.activations_bytes)}


def kv_bytes_per_gpu(m: M.Model, layout: Layout, batch, context, bytes_per_kv=2.0):
    """f·B·kv_seq(context)/(dp·kv_shard): the KV one GPU of the busiest stage holds for `batch` sequences in
    flight (all pp micro-batches) of `context` tokens each. `bytes_per_kv` may be an array."""
    f = stage_fraction(m, layout.pp, layout.virtual_stages)
    kv_seq = M.kv_bytes_per_sequence(m, context, "bf16") * (np.asarray(bytes_per_kv, dtype=float) / 2.0)
    shard = kv_shard(m, layout.tp, layout.perfect, layout.attention)
    return f * np.asarray(batch, dtype=float) * kv_seq / (layout.dp * layout.cp * shard)


def memory_per_gpu(m: M.Model, layout: Layout, batch, context, *, bytes_per_weight=2.0, bytes_per_kv=2.0,
                   tokens_per_pass=1, activation_dtype="bf16", bytes_per_expert_weight=None) -> MemoryPerGpu:
    """Bytes per GPU of the busiest stage (module docstring). `batch` counts sequences in flight in one
    replica (all pp micro-batches); `context` the KV tokens held per sequence; `tokens_per_pass` the tokens
    per sequence in one pass (1 in decode, the prompt chunk in prefill); `bytes_per_expert_weight` the routed
    experts' bytes per weight when their format differs (None: bytes_per_weight). Broadcasts over everything."""
    dense, routed = params_per_gpu(m, layout)
    b_e = bytes_per_weight if bytes_per_expert_weight is None else bytes_per_expert_weight
    w = dense * np.asarray(bytes_per_weight, dtype=float) + routed * np.asarray(b_e, dtype=float)
    kv = kv_bytes_per_gpu(m, layout, batch, context, bytes_per_kv)
    tokens_group = np.asarray(batch, dtype=float) / (np.asarray(layout.pp) * layout.dp * layout.cp) * tokens_per_pass
    act = activation_bytes(m, tokens_group, activation_dtype) / layout.tp
    return MemoryPerGpu(weights_bytes=w, kv_bytes=kv, activations_bytes=act, total_bytes=w + kv + act)


def kv_capacity_tokens(m: M.Model, system, layout: Layout, *, weights_dtype="bf16", kv_dtype="bf16",
                       expert_weights_dtype: str | None = None,
                       usable_memory=DEFAULT_USABLE_MEMORY, of: str = "total", activation_bytes_per_gpu=0.0):
    """Tokens of context whose KV one replica can hold (all its sequences together):

        free per GPU = usable·HBM − weights − activations          (of="total": vLLM's gpu_memory_utilization)
                     = usable·(HBM − weights) − activations        (of="free": TensorRT-LLM's
                                                                     kv_cache_free_gpu_mem_fraction)
        tokens       = dp · cp · free · kv_shard / (f · kv_bytes_per_token)

    HBM is the accelerator's `engine_memory_bytes`: the total the driver reports (torch.cuda.mem_get_info),
    which engines take their fractions of, where the catalog gives it (an "80 GB" H100 reports 79.2 GiB =
    85.0 GB), else the datasheet figure.
    Each of the dp groups keeps its own sequences' KV; within a group a token's KV is split kv_shard ways
    over the TP ranks (replicated beyond the KV heads) and over the stages (f of the layers each). With
    perfect sharding over n GPUs this is (n·usable·HBM − W_total)/kv. Ignores block fragmentation,
    sliding-window layers' cap (callers add a per-sequence overhead for those) and, unless the caller passes
    it as activations, vLLM's own reserve inside usable·HBM: its profiled activation peak and non-torch
    memory (CUDA graphs, NCCL and all-reduce buffers), which its logs put at 0.4-13 GiB per GPU; SGLang's
    mem_fraction_static holds only the weights and the KV pool."""
    if of not in ("total", "free"):
        raise InputError(f"of must be 'total' or 'free', got {of!r}")
    dense, routed = params_per_gpu(m, layout)
    weights = dense * dtype_bytes(weights_dtype) + routed * dtype_bytes(expert_weights_dtype or weights_dtype)
    hbm = system.accelerator.engine_memory_bytes
    free = (usable_memory * hbm - weights if of == "total" else usable_memory * (hbm - weights)) - activation_bytes_per_gpu
    return layout.dp * layout.cp * free / kv_bytes_per_token_per_gpu(m, layout, kv_dtype)


#: Bytes per logit vLLM's profile run holds at the sampler's peak (its dummy sampler run: temperature 0.5, top-p 0.9,
#: top-k vocab − 1): the bf16 logits (2) and their fp32 copy (4), then FlashInfer's top-k/top-p sampler (masked logits
#: and probabilities, fp32: 8; "flashinfer", 14 in all) or PyTorch's sort path (fp32 values 4, int64 indices 8, the
#: segmented sort's int64 reverse index 8 and scratch ~12; "sort", 38 in all). Read in the vLLM 0.8.5-0.11.0 wheels
#: (v1/sample/sampler.py l.86, v1/sample/ops/topk_topp_sampler.py l.164-204); FlashInfer's internals and the CUB scratch
#: are inferred, and checked against logged activation peaks (Llama-3.2-1B 0.44 GiB predicted / 0.45 logged with
#: FlashInfer; Qwen3-235B-FP8 on 4 L40S 1.39 / 1.40 by the sort path; Llama-3-8B on H100 1.22 / 1.26).
VLLM_SAMPLER_BYTES_PER_LOGIT = {"flashinfer": 14.0, "sort": 38.0}
#: vLLM's fused-MoE chunk (VLLM_FUSED_MOE_CHUNK_SIZE, vllm/envs.py): the intermediate caches hold at most this many tokens
VLLM_FUSED_MOE_CHUNK = 32768


def vllm_profile_peak_bytes(m: M.Model, layout: Layout, max_batched_tokens, max_seqs, *, sampler: str = "sort",
                            act_bytes: float = 2.0):
    """Bytes per GPU of vLLM's profiled activation peak, which it subtracts with the weights from
    gpu_memory_utilization · total before sizing the KV pool (vLLM 0.6.5-0.11 `determine_available_memory`:
    KV = util · total − weights − peak − non-torch; vllm/v1/worker/gpu_worker.py, vllm/utils memory_profiling):

        T = max_num_batched_tokens, S = min(max_num_seqs, T), b = activation bytes
        sampler  = k · S · V + T · d · b            (the profile's dummy sampler run on S rows of the vocabulary V,
                                                    with the [T, d] hidden state alive; k from
                                                    VLLM_SAMPLER_BYTES_PER_LOGIT; every TP rank gathers full logits)
        forward  = T · b · (2d + 3 · F / tp)        dense: residual and normed input, gate-up and activated MLP
                 = T · b · 2d + Tc · k_e · b · (max(2 F_e / te, d) + F_e / te) + T · E · b
                                                    MoE: fused_moe's intermediate caches over Tc = min(T, 32,768)
                                                    tokens of k_e experts each (te: GPUs an expert is split over),
                                                    and the router's logits over E experts
        peak     = max(forward, sampler)

    The dummy forward runs no attention kernel (vLLM's backends return early while profiling), so attention
    workspaces are not in it. Ignores: the non-torch growth vLLM also subtracts (0.02-0.25 GiB at TP 1 in its logs;
    NCCL buffers, ~1.8 GiB at TP >= 2 on NVLink H100, counted from 0.6.5 to 0.10.x and outside the budget from
    0.11.0), multimodal encoders, speculative drafters, LoRA, MLA's own shapes and CUDA graphs (captured after the
    KV pool, outside the budget, in every version to 0.11). Checked against seven logged peaks within −3% to +7%
    where the sampler dominates, 10-18% low where the forward does."""
    if sampler not in VLLM_SAMPLER_BYTES_PER_LOGIT:
        raise InputError(f"vLLM sampler must be one of {', '.join(VLLM_SAMPLER_BYTES_PER_LOGIT)}, got {sampler!r}")
    t = np.asarray(max_batched_tokens, dtype=float)
    s = np.minimum(np.asarray(max_seqs, dtype=float), t)
    d, b = float(m.d_model), act_bytes
    sampler_bytes = VLLM_SAMPLER_BYTES_PER_LOGIT[sampler] * s * m.vocab + t * d * b
    tp = float(layout.tp)
    if m.moe:
        te = float(np.asarray(layout.moe_tp, dtype=float).max())
        fe, tc = m.moe.d_ff_expert / te, np.minimum(t, VLLM_FUSED_MOE_CHUNK)
        shared = (m.moe.d_ff_shared or m.moe.shared * m.moe.d_ff_expert) / tp
        forward = (t * b * 2 * d + tc * m.moe.active * b * (np.maximum(2 * fe, d) + fe) + t * m.moe.experts * b
                   + t * b * 3 * shared)
        if m.dense_mlp_layers and m.d_ff:
            forward = np.maximum(forward, t * b * (2 * d + 3 * m.d_ff / tp))
    else:
        forward = t * b * (2 * d + 3 * (m.d_ff or 4 * m.d_model) / tp)
    return np.maximum(forward, sampler_bytes)


#: `simulate --kv-reserve` names (besides a number of GiB per GPU): none; vllm (vLLM's profiled peak, the sampler its
#: V1 engine picks by default where FlashInfer is installed, as in its docker images, and the sort path for the V0 rows
#: vllm-v0 and vllm-v0.5); vllm-flashinfer and vllm-sort (the sampler named)
KV_RESERVES = ("none", "vllm", "vllm-flashinfer", "vllm-sort")
#: engine rows that run vLLM's V0 engine (its sampler sorts; engines.yaml)
_VLLM_V0_ROWS = ("vllm-v0", "vllm-v0.5")


def kv_reserve_bytes(spec, m: M.Model, layout: Layout, *, engine: str = "none", max_batched_tokens=8192,
                     max_seqs=256) -> float:
    """Bytes per GPU kept out of the KV pool besides the weights, by `simulate --kv-reserve`: a number of GiB, "none"
    (0), or vLLM's profiled activation peak (`vllm_profile_peak_bytes` at the launch's token budget and sequence
    limit, each data-parallel rank's share of them where the layout has dp ranks: vLLM runs one engine per rank), its
    sampler named ("vllm-flashinfer", "vllm-sort") or by the engine row ("vllm": the sort path for the V0
    rows, FlashInfer's sampler else: vLLM 0.11.0's V1 default wherever FlashInfer is importable,
    v1/sample/ops/topk_topp_sampler.py l.36-60)."""
    if not isinstance(spec, str):
        if isinstance(spec, bool) or not spec >= 0:
            raise InputError(f"KV reserve must be a number of GiB >= 0 or one of {', '.join(KV_RESERVES)}, got {spec!r}")
        return float(spec) * 2.0**30
    if spec not in KV_RESERVES:
        raise InputError(f"KV reserve must be a number of GiB >= 0 or one of {', '.join(KV_RESERVES)}, got {spec!r}")
    if spec == "none":
        return 0.0
    sampler = spec.split("-", 1)[1] if "-" in spec else ("sort" if engine in _VLLM_V0_ROWS else "flashinfer")
    dp = float(np.asarray(layout.dp).max())  # each data-parallel rank profiles its own engine's share of the limits
    return float(vllm_profile_peak_bytes(m, layout, max_batched_tokens / dp, max_seqs / dp, sampler=sampler))


def kv_bytes_per_token_per_gpu(m: M.Model, layout: Layout, kv_dtype="bf16") -> float:
    """Bytes of one token's KV on each GPU that holds it: kv_bytes_per_token · f / kv_shard (f: a pipeline stage's
    share of the layers; kv_shard: the ways TP splits the KV heads, replicated beyond them). Context parallelism
    splits a sequence's tokens, not a token's bytes."""
    f = stage_fraction(m, layout.pp, layout.virtual_stages)
    return M.kv_bytes_per_token(m, kv_dtype) * f / kv_shard(m, layout.tp, layout.perfect, layout.attention)


# ---- activations ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class LayerActivations:
    """Bytes of one layer, one micro-batch, split the way Korthikanti et al. split them."""

    replicated: np.ndarray  # LayerNorm inputs, QKV and MLP-in inputs, dropout masks: not split by TP w/o SP
    split: np.ndarray  # the rest of the s·b·h terms (divided by t)
    quadratic: np.ndarray  # the a·s²·b attention-core terms (divided by t); 0 with FlashAttention
    layer_input: np.ndarray  # 2·s·b·h: the checkpoint full recomputation keeps


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


# ---- training -------------------------------------------------------------------------------------
def in_flight_micro_batches(layout: Layout):
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
        """JSON-ready: the byte fields as `<name>_bytes` (floats, or lists when seq_len was an array)."""
        out: dict = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in ("recompute", "in_flight", "layers_per_stage"):
                out[f.name] = v
            else:
                out[f.name + "_bytes"] = np.asarray(v, dtype=float).tolist()
        return out


def activation_bytes_per_gpu(m: M.Model, layout: Layout, seq_len, *, dropout=True, flash_attention=False,
                             act_bytes=2.0):
    """Peak activation bytes on the first pipeline stage for a recompute mode (see module docstring).

        none        n·(R/t' + S/t + Q/t)                   n = layers per stage × micro-batches in flight
        selective   n·(R/t' + S/t) + Q/t                    core recomputed one layer at a time
        full        n·I/t' + (layer − I/t')                 keep inputs, rebuild one layer
        reversible  2·I/t'·in_flight + layer + 2·I/t'       two output streams per micro-batch in flight
    (t' = t with sequence parallelism, else 1; I = 2·s·b·h; `layer` = one layer's full activations;
    the mode is layout.recompute; with context parallelism every term is of s/cp tokens, the unfused
    score terms of s/cp queries against s keys.)
    """
    recompute = layout.recompute
    cp = float(layout.cp)  # context parallelism: each rank holds s/cp of the tokens (queries s/cp x keys s)
    la = layer_activations(m, np.asarray(seq_len, dtype=float) / cp, layout.micro_batch, dropout=dropout,
                           flash_attention=flash_attention, act_bytes=act_bytes)
    t = float(layout.tp)
    t_rep = t if layout.sequence_parallel else 1.0
    quad = la.quadratic * (1.0 if flash_attention else cp) / t
    rep, split, inp = la.replicated / t_rep, la.split / t, la.layer_input / t_rep
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


def training_memory(m: M.Model, layout: Layout, seq_len, *, dropout=True, flash_attention=False, weight_bytes=2.0,
                    grad_bytes=2.0, optimizer_bytes=ADAM_STATE_BYTES, act_bytes=2.0) -> TrainingMemory:
    """Weights, gradients, optimizer states and activations per GPU for `layout` (module docstring).

    The busiest GPU: the first stage's activations, or the last stage's (one micro-batch of layers
    plus fp32 logits 4·s·b·V/t) if larger. Broadcasts over seq_len. Recomputation and sequence
    parallelism are the layout's.
    """
    dense, expert = params_per_gpu(m, layout)
    ranks = layout.dp * layout.cp  # ZeRO shards over the data ranks, context ranks included (Megatron)
    wd, gd, od = model_state_bytes(dense, ranks, layout.zero, weight_bytes=weight_bytes,
                                   grad_bytes=grad_bytes, optimizer_bytes=optimizer_bytes)
    we, ge, oe = model_state_bytes(expert, ranks // layout.ep, layout.zero, weight_bytes=weight_bytes,
                                   grad_bytes=grad_bytes, optimizer_bytes=optimizer_bytes)
    act = np.asarray(activation_bytes_per_gpu(m, layout, seq_len, dropout=dropout,
                                              flash_attention=flash_attention, act_bytes=act_bytes), dtype=float)
    logits = 4.0 * np.asarray(seq_len, dtype=float) / layout.cp * layout.micro_batch * m.vocab / layout.tp
    if layout.pp == 1:
        act_peak = act + logits
    else:  # last stage holds one micro-batch in flight (1F1B) — or all m for GPipe — plus the logits
        last = layout.with_(micro_batches=1 if layout.schedule != "gpipe" else layout.micro_batches,
                            schedule="gpipe", virtual_stages=1)
        act_last = activation_bytes_per_gpu(m, last, seq_len, dropout=dropout,
                                            flash_attention=flash_attention, act_bytes=act_bytes) + logits
        act_peak = np.maximum(act, act_last)
    w, g, o = wd + we, gd + ge, od + oe
    return TrainingMemory(
        weights=np.asarray(w), grads=np.asarray(g), optimizer=np.asarray(o), activations=act_peak,
        logits=logits, total=w + g + o + act_peak, recompute=layout.recompute,
        in_flight=in_flight_micro_batches(layout), layers_per_stage=float(stage_layers(m, layout)),
    )
