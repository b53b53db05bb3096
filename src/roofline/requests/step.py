"""`step`: one pass of a model on a system — the request and the function that answers it.

`run_step(StepRequest)` returns exactly the dict `roofline step --json` prints (SI units; keys in
docs/roofline.md and docs/parallelism.md). The CLI, the Python API and the HTTP API all call it.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import resolve, rules
from .base import Choice, Dtype, Fraction, Imbalance, OptDtype, OptWhole, Price, Whole, describe
from .layout_opts import LayoutOptions

PHASES = ("decode", "prefill")
DECODE_ATTENTION = ("shared", "per-query-head")
KERNELS = ("auto", "factor", "tables")  # --realistic's kernel times: cited family factors, or measured kernel tables
ENGINES = ("trtllm", "sglang", "vllm")  # whose measured kernels (roofline.kernels) with --kernels tables


class StepRequest(LayoutOptions):
    """One pass: the model, the hardware (a system, or an accelerator with a GPU count), the batch and
    context, formats, price, efficiencies and, optionally, a TP/EP/PP/DP layout over `domains`."""

    model: Any
    system: Optional[Any] = None
    accelerator: Optional[str] = None
    gpus: OptWhole(1) = None
    batch: Whole(1, fix="use at least one sequence") = 1
    context: Whole(0, rules.MAX_TOKENS, fix="context counts cached tokens, 0 or more") = 0
    phase: Choice(*PHASES) = "decode"
    prompt: Whole(1, rules.MAX_TOKENS) = 1
    weights_dtype: Dtype = "bf16"
    expert_weights_dtype: OptDtype = None  # the routed experts' format when it differs (FP4 MoE checkpoints)
    kv_dtype: Dtype = "bf16"
    usd_per_gpu_hour: Price = None
    moe_imbalance: Imbalance = 1.0
    compute_efficiency: Fraction = 1.0
    memory_efficiency: Fraction = 1.0
    # tp, ep, pp, dp, domains, cp, moe_tp, redundant_experts, attention, weight_stationary: LayoutOptions
    sparse_attention: Optional[str] = None
    spec_gamma: Whole(0, 64) = 0
    spec_alpha: float = 0.7
    draft_fraction: float = 0.05
    overlap: bool = False
    realistic: bool = False
    decode_attention: Choice(*DECODE_ATTENTION) = "shared"
    kernels: Choice(*KERNELS) = "auto"  # auto: tables when an engine is named and its tables cover the accelerator
    engine: Choice("none", *ENGINES) = "none"  # none: no engine named (--kernels tables then takes trtllm's)
    fp8_scales: Choice("auto", "tensor", "block") = "auto"  # FP8 experts' scaling in the MoE tables (kernel_pass.FP8_SCALES)
    moe_kernel: Choice("auto", "trtllm-gen") = "auto"  # the launch's fused MoE kernel (kernels.MOE_KERNELS)

    def check(self) -> None:
        f = self.flag
        self._model = resolve.model(self.model, f("model"))
        self._imbalance = resolve.moe_imbalance(self.moe_imbalance, self._model, f("moe_imbalance"))
        self._system, self._chips = resolve.hardware(self.system, self.accelerator, self.gpus,
                                                     (f("system"), f("accelerator"), f("gpus")))
        if self.phase == "decode" and self.prompt != 1:
            raise rules.UsageError(f"{f('prompt')} applies to {f('phase')} prefill only (decode adds one token "
                                   f"per sequence); drop {f('prompt')} or add {f('phase')} prefill")
        if self.decode_attention != "shared" and not self.realistic:
            raise rules.UsageError(f"{f('decode_attention')} is used by the efficiency model only; add "
                                   f"{f('realistic')} or drop {f('decode_attention')}")
        if self.overlap and not self.realistic:
            raise rules.UsageError(f"{f('overlap')} overlaps communication with compute in the realistic model (the "
                                   f"pure roofline already takes their max); add {f('realistic')} or drop {f('overlap')}")
        rules.speculation(f("spec_alpha"), self.spec_alpha, f("draft_fraction"), self.draft_fraction)
        if self.spec_gamma and self.phase != "decode":
            raise rules.UsageError(f"{f('spec_gamma')} drafts tokens for decode; drop it or use {f('phase')} decode")
        if self.kernels == "tables" and not self.realistic:
            raise rules.UsageError(f"{f('kernels')} {self.kernels} chooses the realistic model's kernel times; add "
                                   f"{f('realistic')} or drop {f('kernels')}")
        if self.engine != "none" and (self.kernels == "factor" or not self.realistic):
            raise rules.UsageError(f"{f('engine')} picks whose measured kernels {f('realistic')} takes; "
                                   + (f"drop {f('kernels')} factor or {f('engine')}" if self.realistic else
                                      f"add {f('realistic')} or drop {f('engine')}"))
        self._engine = "trtllm" if self.engine == "none" else self.engine
        self._kernels = self.kernels
        if self.kernels == "auto":  # the tables model no context parallelism; loaded only when an engine is named
            self._kernels = "factor"
            if self.engine != "none" and self.realistic and (self.cp or 1) == 1:
                from ..kernels import default_kernels

                self._kernels = default_kernels(self._system.accelerator.id, self.engine, realistic=True,
                                                expert_weights_dtype=self.expert_weights_dtype)
        rules.fp8_scales(f, self.fp8_scales, self._kernels, self._model, self.weights_dtype, self.expert_weights_dtype,
                         self._engine)
        rules.moe_kernel(f, self.moe_kernel, self._kernels, self._model)
        new = self.prompt if self.phase == "prefill" else 1
        rules.context_fits(self._model, self.context + new, f"{f('context')} + new tokens =",
                           f"use {f('context')} <= {max(self._model.max_context - new, 0):,} or a model with a "
                           f"longer context")
        rules.dtype_supported(f("weights_dtype"), self._system.accelerator, self.weights_dtype)
        rules.expert_dtype(f("expert_weights_dtype"), self._model, self._system.accelerator, self.expert_weights_dtype)
        resolve.sparse_attention(self.sparse_attention)  # sqrt:C or topk:K, checked here: one line
        if self.has_layout:
            self._layout = self.layout_for(self._model, self._system, batch=self.batch, phase=self.phase,
                                           gpus=self.gpus)
        elif self.realistic:
            one_tp_group(self._model, self._system, self._chips)


def one_tp_group(model, system, chips: int) -> None:
    """--realistic without a layout runs the GPUs as one TP group: that must be a valid TP degree."""
    from ..errors import InputError
    from ..layout import check_tensor_parallel

    try:
        check_tensor_parallel(model, system, chips)
    except InputError as exc:
        raise InputError(f"--realistic without --tp/--ep/--pp/--dp runs the {chips} GPUs as one TP group, but "
                         f"{exc}; give a layout (step/plan), e.g. --tp 8 --dp {max(chips // 8, 1)}, or fewer "
                         f"GPUs with -a ACCELERATOR -g N") from None


def speculation(req: "StepRequest"):
    """--spec-gamma γ --spec-alpha α --draft-fraction f as a speculative.Speculation (None without γ)."""
    from ..speculative import Speculation

    return Speculation(req.spec_gamma, req.spec_alpha, req.draft_fraction) if req.spec_gamma else None


def realistic(req: "StepRequest", layout) -> dict:
    """The efficiency model's pass (the engine with the family's cited factors) at the central factors and
    the two corners of their spread: the interval any prediction carries (docs/validation.md gives its error)."""
    from ..efficiency import WHICH, kv_read_multiplier
    from ..efficiency import realistic as family_factors
    from ..engine import step

    m, sysrec = req._model, req._system
    pqh = req.decode_attention == "per-query-head"
    effs = {w: family_factors(sysrec.accelerator, req.weights_dtype, w, kv_read_multiplier=kv_read_multiplier(m, pqh, w),
                              overlap_comm=req.overlap, expert_weights_dtype=req.expert_weights_dtype)
            for w in WHICH}
    t = {w: step(m, sysrec, req.batch, req.context, layout=layout, phase=req.phase, prompt=req.prompt,
                 weights_dtype=req.weights_dtype, kv_dtype=req.kv_dtype, usd_per_gpu_hour=req.usd_per_gpu_hour,
                 expert_weights_dtype=req.expert_weights_dtype,
                 efficiency=effs[w], speculation=speculation(req), details=False, moe_imbalance=req._imbalance,
                 sparse_attention=resolve.sparse_attention(req.sparse_attention))
         for w in WHICH}
    mid = t["mid"]
    out = {"family": mid.efficiency, "layout": str(layout), "overlap_comm": req.overlap,
           "decode_attention": req.decode_attention,
           "step_s": float(mid.step_s), "low_s": float(t["fast"].step_s), "high_s": float(t["slow"].step_s),
           **{k: float(getattr(mid, k)) for k in ("compute_s", "memory_s", "comm_s", "overhead_s", "gemm_s",
                                                  "attention_s", "elementwise_s", "tokens_per_s")},
           "kernels": {"mode": "factor"}}
    if req._kernels == "tables":
        out.update(with_tables(req, layout, t, effs))
    return out


def with_tables(req: "StepRequest", layout, t: dict, effs: dict) -> dict:
    """--kernels tables: the realistic passes `t` (by corner) with their GEMM, attention, TP all-reduce and EP
    dispatch/combine terms from measured kernels where covered (kernel_pass.corner_terms / apply;
    docs/kernels.md): central value from `req._engine`'s tables, interval from the spread across engines
    widened by extrapolation.
    Returns the keys of the realistic dict to replace, and `kernels`: which terms came from which tables."""
    from ..efficiency import WHICH
    from ..kernel_pass import apply, corner_terms
    from ..kernels import index

    if getattr(layout, "cp", 1) > 1:
        from ..errors import InputError

        raise InputError("--kernels tables does not model context parallelism (the tables' attention is one GPU's "
                         "whole sequence); drop --cp or use --kernels factor")
    kw = dict(phase=req.phase, prompt=req.prompt, tp=layout.tp, ep=layout.ep, pp=layout.pp, dp=layout.dp,
              moe_tp=layout.moe_tp, weights_dtype=req.weights_dtype, kv_dtype=req.kv_dtype,
              expert_weights_dtype=req.expert_weights_dtype, fp8_scales=req.fp8_scales, moe_kernel=req.moe_kernel)
    steps, mid = {}, None
    for w in WHICH:
        terms, scale = corner_terms(req._model, req._system, req.batch, req.context, which=w, engine=req._engine, **kw)
        steps[w], used, secs = apply(t[w], terms, overlap_comm=effs[w].overlap_comm, scale=(scale, scale, scale))
        if w == "mid":
            mid = (terms, used, secs)
    assert mid is not None  # WHICH includes "mid"
    terms, used, secs = mid
    r = t["mid"]
    src = index()["source"]
    flags = {"gemm": "gemm_extrapolated", "attention": "attention_extrapolated", "tp_comm": "tp_extrapolated",
             "ep_comm": "ep_extrapolated"}
    parts: dict[str, dict[str, Any]] = {k: {"from_tables": bool(np.all(used[k])), "extrapolated": bool(np.any(getattr(terms, e) & used[k])),
                 "sources": list(terms.sources[k]) if np.any(used[k]) else [], "seconds": float(secs[k])}
             for k, e in flags.items()}
    step_s = float(steps["mid"])
    return {"step_s": step_s, "low_s": float(min(steps.values())), "high_s": float(max(steps.values())),
            "gemm_s": parts["gemm"]["seconds"], "attention_s": parts["attention"]["seconds"],
            "comm_s": parts["tp_comm"]["seconds"] + parts["ep_comm"]["seconds"] + float(r.pp_comm_s),
            "overhead_s": float(secs["overhead"]),
            "tokens_per_s": float(r.tokens_per_s) * float(r.step_s) / step_s, "factor_step_s": float(r.step_s),
            "kernels": {"mode": "tables", "engine": req._engine, "package": f"{src['package']} {src['version']}",
                        "license": src["license"], "terms": parts,
                        "factor_terms": ["elementwise", "pp_comm", "overhead"]
                        + [k for k, v in parts.items() if not v["from_tables"]]}}


def run_step(req: StepRequest) -> dict:
    """The `roofline step --json` dict for a validated request (raises DoesNotFitError when a pass with
    perfect sharding does not fit; a layout's dict carries `fits` instead)."""
    from ..efficiency import Efficiency
    from ..engine import step
    from ..layout import Layout

    m, sysrec, chips = req._model, req._system, req._chips
    layout = req._layout if req.has_layout else None
    d = {"model": m.id, "system": sysrec.id, "phase": req.phase, "batch": req.batch, "context": req.context,
         "prompt": req.prompt if req.phase == "prefill" else 1, "weights_dtype": req.weights_dtype,
         "expert_weights_dtype": req.expert_weights_dtype or req.weights_dtype, "kv_dtype": req.kv_dtype}
    if layout is not None:
        d.update(tp=layout.tp, ep=layout.ep, pp=layout.pp, dp=layout.dp, domains=layout.domains, cp=layout.cp,
                 moe_tp=layout.moe_tp, redundant_experts=layout.redundant_experts, attention=layout.attention,
                 weight_stationary=layout.weight_stationary)
    r = step(m, sysrec, req.batch, req.context, layout=layout, gpus=chips, phase=req.phase, prompt=req.prompt,
             weights_dtype=req.weights_dtype, kv_dtype=req.kv_dtype, usd_per_gpu_hour=req.usd_per_gpu_hour,
             expert_weights_dtype=req.expert_weights_dtype,
             efficiency=Efficiency(compute=req.compute_efficiency, memory=req.memory_efficiency),
             check_fit=layout is None, speculation=speculation(req), moe_imbalance=req._imbalance,
             sparse_attention=resolve.sparse_attention(req.sparse_attention))
    d.update(r.to_dict())
    if req.realistic:  # no layout given: the GPUs as one TP group (the efficiency model needs a layout)
        d["realistic"] = realistic(req, layout if layout is not None else Layout(tp=chips))
    return rules.finite(d, describe(req))
