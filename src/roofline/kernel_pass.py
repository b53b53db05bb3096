"""The terms of one pass from measured kernel tables (roofline.kernels), for the engine's realistic mode.

For one replica's pass (B sequences, L new tokens each — L = 1 in decode — on `context` cached tokens,
layout tp/ep/pp/dp with moe_tp, all pp micro-batches in flight) this module lists the kernels one GPU
runs per layer and asks the tables for each (b = B/pp sequences per micro-batch, T = b·L/dp rows):

    GEMMs      attention projections  QKV [T × (N/tp + 2·max(K/tp, 1))·H ← D], O [T × D ← N·H/tp]
               (MLA: fused q_a+kv_a [T × (q_rank + kv_rank + rope) ← D], q_b, kv_b, O; DeepSeek-V2 §2.1)
               dense MLP              gate+up [T × 2F/tp ← D] (F/tp when not gated), down [T × D ← F/tp]
               MoE layer              router [T × E ← D]; routed experts: the MoE table at T·moe_tp/tp
                                      tokens per EP rank (kernels.moe_s); a shape without rows the
                                      nearest measured shape scaled by the MoE rooflines (kernels.
                                      moe_transfer_s, MOE_SHAPE_TRANSFER); else the factor model's GEMM
                                      term (MOE_PER_EXPERT_GEMMS: not per-expert GEMMs, post hoc on set am);
                                      shared experts as a dense MLP of their total width over moe_tp
               LM head                [b/dp × V/tp ← D] once per pass (prefill: the last token only)
    attention  context (prefill: b/dp sequences of L tokens) or generation (decode: b/dp sequences over
               context + 1 cached tokens; local layers over min(context + 1, window)); MLA tables for
               MLA models; heads N/tp and KV heads max(K/tp, 1) per GPU
    EP comm    per MoE layer one DeepEP dispatch and one combine of the tokens each rank holds over
               ceil(moe_tp·ep/8) nodes (low-latency kernels in decode, normal ones in prefill;
               kernels.ep_all_to_all_s), where ep > 1
    TP comm    (layers + dense-MLP layers) all-reduces over tp and one per MoE layer over moe_tp, of
               T·D·bytes(activation) each (Megatron-LM: two per layer), from the engine's own custom
               all-reduce table (else NCCL) on the scale-up tier; a MoE group serving s = moe_tp/tp
               attention groups (ep = 1) instead all-gathers their s·T tokens, reduce-scatters the expert
               outputs and all-reduces over tp (NCCL's tables; layout.MOE_GATHERS_GROUPS)

Each term is a loop total (pp stages × layers/pp each) on one GPU, with masks: covered where every
kernel of the term was found in a table, extrapolated where any lookup left its table's range or was
composed from dense GEMMs. `apply` puts the covered terms into an engine result in place of the factor
model's (elementwise kernels, weight/KV streaming inside the GEMMs' own measurement, EP all-to-all,
pipeline p2p and fixed overheads stay the factor model's, less the launches of the ops a table times whole:
the GEMMs with their input quantisation, the attention op, the fused MoE op's own kernels —
model.kernels_inside_measured_ops), with the engine's composition:

    step = [kernels + comm  or  max(kernels, comm) when overlapped] + t_pp + overhead,
    kernels = gemm + attention + elementwise,  comm = tp + ep

Ignores: the pass's own KV writes inside attention (added from the factor model's kv_write term),
chunked prefill over a cached prefix (context > 0 in prefill: the context kernel is looked up at L and
flagged), MLA's absorbed BMMs in decode (kv_b counted as a GEMM in both phases), bias and norm kernels
(elementwise term), the tables' GPU clocks vs the catalog SKU's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import kernels as K
from . import layout as LY
from . import model as M


@dataclass(frozen=True)
class TableTerms:
    """Loop totals (s) on one GPU from measured kernels, with coverage masks and the tables used."""

    gemm_s: np.ndarray
    attention_s: np.ndarray
    tp_comm_s: np.ndarray
    gemm_covered: np.ndarray
    attention_covered: np.ndarray
    tp_covered: np.ndarray
    gemm_extrapolated: np.ndarray
    attention_extrapolated: np.ndarray
    tp_extrapolated: np.ndarray
    distance: np.ndarray  # largest extrapolation distance of any lookup (ln units; 0 inside every table)
    sources: dict  # term name -> tuple of table source ids
    engine: str
    ep_comm_s: np.ndarray | float = 0.0  # EP dispatch + combine (DeepEP tables), loop total
    ep_covered: np.ndarray | bool = False
    ep_extrapolated: np.ndarray | bool = False
    moe_op_covered: np.ndarray | bool = False  # the MoE layers came from a fused-MoE table (its own kernels inside)


class _Acc:
    """Sums lookups of one term: time, all-covered mask, any-extrapolated mask, max distance, sources."""

    def __init__(self, shape):
        self.t = np.zeros(shape)
        self.cov = np.ones(shape, bool)
        self.ext = np.zeros(shape, bool)
        self.dist = np.zeros(shape)
        self.src = set()

    def add(self, r: K.KernelTime, times=1.0, extrapolated=False):
        self.t = self.t + np.nan_to_num(r.seconds) * times
        self.cov = self.cov & r.covered
        self.ext = self.ext | r.extrapolated | (extrapolated & r.covered)
        self.dist = np.maximum(self.dist, np.nan_to_num(r.distance))
        if r.source:
            self.src.add(r.source)


def _gemm_dtype(weights_dtype: str) -> str:
    return "bf16" if weights_dtype.lower() in ("bf16", "fp16") else weights_dtype.lower()


MOE_ACTIVATIONS = ("auto", "bf16", "fp8")
#: How an FP8 checkpoint's routed experts are scaled: auto (the per-tensor rows first, then the block-scaled ones, as
#: every serving set up to ap was registered), tensor (per-tensor or per-channel scales: Llama FP8 checkpoints of
#: ModelOpt / llm-compressor, vLLM's on-the-fly --quantization fp8) or block (128 x 128 weight blocks with per-token-
#: group activation scales: DeepSeek-V3/R1, Qwen3-*-FP8, whose config.json quantization_config has weight_block_size);
#: tensor or block reads only that format's MoE rows (docs/kernels.md "Block-scaled FP8 experts").
FP8_SCALES = ("auto", "tensor", "block")
#: A routed-expert shape with no measured MoE row keeps the factor model's GEMM term (the fused MoE kernel it stands for
#: runs every expert in one launch). True: the grouped GEMM composed from one measured GEMM per expert a GPU touches,
#: each at its launch-bound time (160 GEMMs of 192 columns per MoE layer for GLM-4.7 at MoE TP 8: 202 ms of GEMMs
#: in a 100-sequence decode pass on H100 against a 41 ms measured step), as every serving set up to am was registered
#: (found post hoc on set am).
MOE_PER_EXPERT_GEMMS = False
#: A routed-expert shape with no MoE rows of its own, in a format that has rows, reads the nearest measured shape
#: scaled by the two shapes' MoE rooflines (kernels.moe_transfer_s: the fused kernel's measured efficiency at the
#: same tokens per expert). False: the factor model's GEMM term, as every serving set up to am was registered.
MOE_SHAPE_TRANSFER = True
#: A block-scaled FP8 checkpoint (`fp8_scales` block: DeepSeek-V3/R1, Qwen3-*-FP8, whose config.json gives
#: weight_block_size for every linear layer) also runs its dense GEMMs block-scaled, so they read the `fp8_block` GEMM
#: rows (per lookup, the per-tensor `fp8` rows where no block-scaled row covers the shape). Not vLLM's: AIConfigurator's
#: vLLM collector times that format without CUDA graphs (collector/vllm/collect_gemm.py `use_cuda_graph=gemm_type !=
#: "fp8_block"` at 095f58a), so its rows are an eager op's 85-190 us host time (docs/kernels.md); vLLM keeps the
#: per-tensor rows. False: the per-tensor rows for every dense GEMM, as every serving set up to at was registered
#: (declared before set au was gathered).
BLOCK_SCALED_DENSE = True


def _preferred(first: K.KernelTime, then: K.KernelTime) -> K.KernelTime:
    """Per point, `first`'s lookup where it covers the point, else `then`'s (the source: `first`'s where it covers
    every point)."""
    if not first.covered.any():
        return then
    use = first.covered
    return K.KernelTime(np.where(use, first.seconds, then.seconds), then.covered | use,
                        np.where(use, first.extrapolated, then.extrapolated),
                        first.source if use.all() else then.source, np.where(use, first.distance, then.distance))


def _moe_dtypes(weights_dtype: str, expert_weights_dtype: str | None, fp4_cores: bool = False,
                activations: str = "auto", fp8_scales: str = "auto") -> tuple[str, ...]:
    """The MoE tables' moe_dtype names to try, in order, for routed experts stored as `expert_weights_dtype`
    next to dense layers in `weights_dtype` (AIConfigurator's quantisation modes): the experts' own format when
    it is the dense one (fp8, then fp8_block); FP8 experts beside 16-bit layers likewise. FP4 experts beside
    16-bit layers (MXFP4 checkpoints such as gpt-oss): on an accelerator with FP4 tensor cores (`fp4_cores`,
    Blackwell) first with FP8 activations (w4a8_mxfp4_mxfp8: TensorRT-LLM's TRTLLM MoE backend and FlashInfer's
    MXFP4 x MXFP8 kernels), then with 16-bit ones (w4a16_mxfp4); elsewhere (Hopper: Marlin and Triton MXFP4
    kernels that upcast the weights) only w4a16_mxfp4. `activations` the launch states (bf16 or fp8: vLLM's
    VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1, for one) keeps only the rows of that activation format, so a family
    without them keeps the factor model rather than another kernel's rows. FP4 experts beside FP8 layers (NVFP4
    checkpoints) read no table, as FP4 GEMMs do not (docs/kernels.md "Dtype names": the nvfp4 rows lost blind on
    serving set o). FP8 experts whose `fp8_scales` are stated (FP8_SCALES) read only that scaling's rows."""
    wd = _gemm_dtype(weights_dtype)
    ed = _gemm_dtype(expert_weights_dtype) if expert_weights_dtype else wd
    if ed == "fp8" and fp8_scales != "auto":
        return ("fp8_block",) if fp8_scales == "block" else ("fp8",)
    if ed != "fp4":
        return (ed,) + (("fp8_block",) if ed == "fp8" else ())
    if wd == "fp4":
        return ("fp4",)
    if wd == "bf16":
        if activations != "auto":
            return ("w4a16_mxfp4",) if activations == "bf16" else ("w4a8_mxfp4_mxfp8",)
        return ("w4a8_mxfp4_mxfp8", "w4a16_mxfp4") if fp4_cores else ("w4a16_mxfp4",)
    return ()


def table_terms(model: M.Model, system, batch, context, *, phase: str = "decode", prompt=1, tp=1, ep=1, pp=1,
                dp=1, moe_tp=None, weights_dtype: str = "bf16", kv_dtype: str = "bf16",
                activation_dtype: str = "bf16", engine: str = "trtllm", moe_imbalance: float = 1.0,
                expert_weights_dtype: str | None = None, moe_activations: str = "auto", fp8_scales: str = "auto",
                shape_transfer: bool = True, moe_kernel: str = "auto") -> TableTerms:
    """Measured-kernel GEMM, attention and TP all-reduce terms of one pass (module docstring);
    `expert_weights_dtype`: the routed experts' format where it differs (their MoE table, `_moe_dtypes`, with the
    launch's `moe_activations`, and FP8 experts' `fp8_scales`); `shape_transfer`: a routed-expert shape without rows may read the nearest measured
    one (MOE_SHAPE_TRANSFER); `moe_kernel` (kernels.MOE_KERNELS): the fused MoE kernel the launch names, whose rows
    time the routed experts where they cover the point (the engine's own rows elsewhere)."""
    from .units import dtype_bytes

    m, acc = model, K.accelerator_id(system)
    chips = int(getattr(system, "chips", 8))
    B = np.asarray(batch, dtype=float)
    ctx = np.asarray(context, dtype=float)
    L = np.asarray(prompt, dtype=float) if phase == "prefill" else np.asarray(1.0)
    moe_tp = np.asarray(tp if moe_tp is None else moe_tp, dtype=float)
    tp, ep, pp, dp = (np.asarray(x, dtype=float) for x in (tp, ep, pp, dp))  # layout degrees may be arrays
    b = B / pp
    T = b * L / dp  # GEMM rows per micro-batch on one GPU
    seqs = np.maximum(b / dp, 1.0)
    shape = np.broadcast_shapes(T.shape, ctx.shape, tp.shape, ep.shape, moe_tp.shape)
    T = np.broadcast_to(T, shape)
    wd, D, H = _gemm_dtype(weights_dtype), m.d_model, m.head_dim
    g, a, c, x = _Acc(shape), _Acc(shape), _Acc(shape), _Acc(shape)
    moe_op = np.zeros(shape, bool)

    block_dense = (BLOCK_SCALED_DENSE and fp8_scales == "block" and wd == "fp8"
                   and K.table_family(engine) not in (None, "vllm"))

    def gemm(rows, n, k, times):
        n, k = np.maximum(n, 1), np.maximum(k, 1)
        r = K.gemm_s(acc, wd, rows, n, k, engine=engine)
        if block_dense:  # the block-scaled rows where they cover the shape (BLOCK_SCALED_DENSE)
            r = _preferred(K.gemm_s(acc, "fp8_block", rows, n, k, engine=engine), r)
        g.add(r, times)

    heads = m.heads / tp
    kvg = np.maximum(m.kv_heads / tp, 1.0)
    if m.mla:
        ml = m.mla
        rope, nope, v = ml.qk_rope_head_dim, ml.qk_nope_head_dim, ml.v_head_dim
        if ml.q_lora_rank:
            gemm(T, ml.q_lora_rank + ml.kv_lora_rank + rope, D, m.layers)
            gemm(T, m.heads * (nope + rope) / tp, ml.q_lora_rank, m.layers)
        else:
            gemm(T, ml.kv_lora_rank + rope, D, m.layers)
            gemm(T, m.heads * (nope + rope) / tp, D, m.layers)
        gemm(T, m.heads * (nope + v) / tp, ml.kv_lora_rank, m.layers)
        gemm(T, D, m.heads * v / tp, m.layers)
    else:
        gemm(T, (heads + 2 * kvg) * H, D, m.layers)
        gemm(T, D, heads * H, m.layers)
    if m.dense_mlp_layers and m.d_ff:
        gemm(T, (2 if m.gated_mlp else 1) * m.d_ff / tp, D, m.dense_mlp_layers)
        gemm(T, D, m.d_ff / tp, m.dense_mlp_layers)
    if m.moe and m.moe_layers:
        e = m.moe
        gemm(T, e.experts, D, m.moe_layers)  # router
        shared = e.d_ff_shared or e.shared * e.d_ff_expert
        if shared:
            gemm(T, (2 if m.gated_mlp else 1) * shared / moe_tp, D, m.moe_layers)
            gemm(T, D, shared / moe_tp, m.moe_layers)
        per_rank = T * moe_tp / tp  # tokens each EP rank brings to the layer (the tables' num_tokens)
        ed = _gemm_dtype(expert_weights_dtype) if expert_weights_dtype else wd
        fp4_cores = "fp4" in getattr(getattr(system, "accelerator", None), "flops_per_s", {})
        # the first of the format's row names that covers any point ("fp4", a name no table has: none covers);
        # experts in their own format: a table measured at one moe tp (or ep) does not stand in for another
        names = _moe_dtypes(weights_dtype, expert_weights_dtype, fp4_cores, moe_activations, fp8_scales)
        for md in names or ("fp4",):
            r = K.moe_s(acc, md, per_rank, hidden=D, inter=e.d_ff_expert, topk=e.active, experts=e.experts,
                        tp=moe_tp, ep=ep, engine=engine, strict=ed != wd)
            if r.covered.any():
                break
        if not r.covered.any() and MOE_SHAPE_TRANSFER and shape_transfer:  # the nearest measured shape
            for md in names:
                near = K.moe_transfer_s(system, md, per_rank, hidden=D, inter=e.d_ff_expert, topk=e.active,
                                        experts=e.experts, tp=moe_tp, ep=ep, engine=engine, strict=ed != wd)
                if near.covered.any():
                    r = near
                    break
        if moe_kernel != "auto":  # the named kernel's rows where they cover the point (its engine's or another's)
            for md in names:
                named = K.moe_s(acc, md, per_rank, hidden=D, inter=e.d_ff_expert, topk=e.active, experts=e.experts,
                                tp=moe_tp, ep=ep, engine=engine, strict=ed != wd, kernel=moe_kernel)
                if named.covered.any():
                    r = _preferred(named, r)
                    break
        if r.covered.any():
            g.add(r, m.moe_layers)
            moe_op = np.broadcast_to(r.covered, shape)
        elif ed == "fp4" or ed != wd or not MOE_PER_EXPERT_GEMMS:  # experts without MoE rows at this shape and
            g.add(r, m.moe_layers)  # format: no per-expert stand-in, so the factor model times the GEMMs (docs/kernels.md)
        else:  # grouped GEMM as per-expert GEMMs on the experts one GPU touches (as sets before am were registered)
            Te = per_rank * ep
            rows = np.maximum(Te * e.active * moe_imbalance / e.experts, 1.0)
            touched = M.expected_distinct_experts(e.experts, e.active, Te) / ep
            ff = e.d_ff_expert / moe_tp
            for n_, k_ in (((2 if m.gated_mlp else 1) * ff, D), (D, ff)):
                g.add(K.gemm_s(acc, wd, rows, n_, k_, engine=engine), m.moe_layers * touched, extrapolated=True)
    gemm(seqs, m.vocab / tp, D, 1)  # one position per sequence (prefill: the last one's logits only)

    # attention kernels, per layer
    local = m.local_layers if m.sliding_window else 0
    for n_layers, window in ((m.layers - local, 0), (local, m.sliding_window)):
        if not n_layers:
            continue
        length = L if phase == "prefill" else (ctx + 1 if not window else np.minimum(ctx + 1, window))
        r = K.attention_s(acc, phase, seqs, np.broadcast_to(length, shape), heads, kvg, H, mla=bool(m.mla),
                          kv_dtype=kv_dtype, engine=engine)
        a.add(r, n_layers, extrapolated=bool(phase == "prefill" and np.any(ctx > 0)))

    # TP all-reduces on the scale-up tier (beyond one domain: not covered)
    act_bytes = T * D * dtype_bytes(activation_dtype)
    naive, spans = LY.moe_gather_group(moe_tp, ep, tp)  # attention groups one MoE group serves
    naive = naive & bool(m.moe_layers)
    for n_ar, group in ((m.layers + m.dense_mlp_layers, tp), (m.moe_layers, np.where(naive, tp, moe_tp))):
        if n_ar and np.any(group > 1):
            up = K.collective_s(acc, "all_reduce", act_bytes, group, "scale-up", engine=engine)
            inside = np.broadcast_to(group <= chips, up.covered.shape)  # beyond one domain: not covered
            c.add(up._replace(covered=up.covered & inside), n_ar)
    if np.any(naive):  # their tokens all-gathered in, the expert outputs reduce-scattered back (NCCL's tables)
        for kind in ("all_gather", "reduce_scatter"):
            r = K.collective_s(acc, kind, act_bytes * spans, spans, "scale-up", engine=engine)
            inside = np.broadcast_to(moe_tp <= chips, r.covered.shape)
            c.add(r._replace(covered=r.covered & inside), m.moe_layers)
    if m.moe and m.moe_layers and np.any(ep > 1):  # DeepEP dispatch + combine, nodes of 8 GPUs
        e = m.moe
        nodes = np.maximum(np.ceil(moe_tp * ep / 8.0), 1.0)
        for part in ("dispatch", "combine"):
            r = K.ep_all_to_all_s(acc, part, T * moe_tp / tp, hidden=D, topk=e.active, experts=e.experts,
                                  nodes=nodes, mode="ll" if phase == "decode" else "normal")
            one = np.broadcast_to(ep <= 1, r.covered.shape)
            x.add(r._replace(seconds=np.where(one, 0.0, r.seconds), covered=r.covered | one), m.moe_layers)
    # (no MoE or no EP: no all-to-all at all, covered with zero time)
    return TableTerms(
        ep_comm_s=np.where(x.cov, x.t, np.nan), ep_covered=x.cov, ep_extrapolated=x.ext,
        gemm_s=np.where(g.cov, g.t, np.nan), attention_s=np.where(a.cov, a.t, np.nan),
        tp_comm_s=np.where(c.cov, c.t, np.nan), gemm_covered=g.cov, attention_covered=a.cov, tp_covered=c.cov,
        gemm_extrapolated=g.ext, attention_extrapolated=a.ext, tp_extrapolated=c.ext,
        distance=np.maximum(np.maximum(np.maximum(g.dist, a.dist), c.dist), x.dist),
        sources={"gemm": tuple(sorted(g.src)), "attention": tuple(sorted(a.src)), "tp_comm": tuple(sorted(c.src)),
                 "ep_comm": tuple(sorted(x.src))},
        engine=engine, moe_op_covered=moe_op)


def apply(result, terms: TableTerms, *, overlap_comm: bool = False, scale=(1.0, 1.0, 1.0)):
    """`result` (an engine PassResult or anything with its time fields) with the covered table terms in place
    of the factor model's, recomposed as the engine composes a pass (module docstring). `scale` multiplies
    the (gemm, attention, communication) table terms (interval corners). Returns (step_s, used, terms): `used` maps
    each term to its mask of points that came from tables, `terms` to the seconds composed (the GEMM term
    with the factor model's KV writes added; `overhead` without the launch latencies of the replaced terms,
    which the measured kernel times include)."""
    kvw = getattr(result, "kv_write_s", 0.0)
    gemm = np.where(terms.gemm_covered, terms.gemm_s * scale[0] + kvw, result.gemm_s)
    attn = np.where(terms.attention_covered, terms.attention_s * scale[1], result.attention_s)
    tp = np.where(terms.tp_covered, terms.tp_comm_s * scale[2], result.tp_comm_s)
    ep = np.where(terms.ep_covered, terms.ep_comm_s * scale[2], result.ep_comm_s)
    from .engine import busy

    kernels = gemm + attn + result.elementwise_s
    comm = tp + ep + getattr(result, "cp_comm_s", 0.0)  # context-parallel all-gathers stay the engine's
    # a measured kernel time includes its launches: the factor model's launch latencies of a replaced term go
    # (a linear layer's input quantisation, a fused MoE op's top-k/permute/activation/finalize kernels included)
    overhead = (result.overhead_s - np.where(terms.gemm_covered, getattr(result, "launch_gemm_s", 0.0), 0.0)
                - np.where(terms.gemm_covered & terms.moe_op_covered, getattr(result, "launch_moe_op_s", 0.0), 0.0)
                - np.where(terms.attention_covered, getattr(result, "launch_attention_s", 0.0), 0.0))
    step = busy(kernels, comm, overlap_comm) + result.pp_comm_s + overhead
    used = {"gemm": terms.gemm_covered, "attention": terms.attention_covered, "tp_comm": terms.tp_covered,
            "ep_comm": np.broadcast_to(terms.ep_covered, np.shape(step))}
    return step, used, {"gemm": gemm, "attention": attn, "tp_comm": tp, "ep_comm": ep, "overhead": overhead}


def engine_spread(model, system, batch, context, transfer_engine: str | None = None, **kw) -> dict:
    """table_terms for every engine that has tables ({engine: TableTerms}); the spread across engines is
    the interval of a measured-kernel term. Only `transfer_engine` (the pass's own) reads a MoE shape it did not
    measure from its nearest measured shape: another engine's estimate for a shape it never measured is not a
    measurement of this one, so it does not widen the spread."""
    return {e: table_terms(model, system, batch, context, engine=e, shape_transfer=e == transfer_engine, **kw)
            for e in K.ENGINES}


WIDEN_PER_LN = 0.1  # interval widening of a table term per e-fold outside its table's range (chosen, not fitted)


def _combine(terms: dict, pick) -> TableTerms:
    """One TableTerms from several engines': per point the min (pick=np.min) or max of each covered term."""
    ts = list(terms.values())
    fill = np.inf if pick is np.min else -np.inf

    shape = np.shape(ts[0].gemm_s)
    stack = lambda n: np.stack([np.broadcast_to(getattr(t, n), shape) for t in ts])  # noqa: E731

    def agg(name, cov):
        vals = np.stack([np.broadcast_to(np.where(getattr(t, cov), getattr(t, name), fill), shape) for t in ts])
        any_cov = np.any(stack(cov), axis=0)
        picked = (np.argmin if pick is np.min else np.argmax)(vals, axis=0)
        return np.where(any_cov, pick(vals, axis=0), np.nan), any_cov, picked

    g, gc, gi = agg("gemm_s", "gemm_covered")
    a, ac, _ = agg("attention_s", "attention_covered")
    c, cc, _ = agg("tp_comm_s", "tp_covered")
    x, xc, _ = agg("ep_comm_s", "ep_covered")
    moe_op = np.take_along_axis(stack("moe_op_covered"), gi[None], axis=0)[0]  # the picked engine's MoE term
    ext = lambda n: np.any(stack(n), axis=0)  # noqa: E731
    dist = np.max(np.stack([t.distance for t in ts]), axis=0)
    src = {k: tuple(sorted({s for t in ts for s in t.sources.get(k, ())}))
           for k in ("gemm", "attention", "tp_comm", "ep_comm")}
    return TableTerms(g, a, c, gc, ac, cc, ext("gemm_extrapolated"), ext("attention_extrapolated"),
                      ext("tp_extrapolated"), dist, src, "spread", x, xc, ext("ep_extrapolated"), moe_op)


def corner_terms(model, system, batch, context, *, which: str = "mid", engine: str = "trtllm", **kw):
    """(TableTerms, scale) of an interval corner: 'mid' → `engine`'s tables, scale 1; 'fast' / 'slow' → per
    term the fastest / slowest of the three engines' tables, scaled by exp(∓0.1·d), d the extrapolation
    distance (docs/kernels.md: intervals from the spread across engines and from extrapolation)."""
    if which == "mid":
        return table_terms(model, system, batch, context, engine=engine, **kw), 1.0
    terms = _combine(engine_spread(model, system, batch, context, transfer_engine=engine, **kw),
                     np.min if which == "fast" else np.max)
    return terms, np.exp((-1.0 if which == "fast" else 1.0) * WIDEN_PER_LN * terms.distance)

