"""`train` (step time, memory and cost of a training layout) and `overtrain` (the lecture's lifetime
economics): the requests and the functions returning the `roofline train/overtrain --json` dicts
(docs/training.md)."""

from __future__ import annotations

from typing import Any, Optional

from . import resolve, rules
from .base import Choice, Flag, FractionZero, OptReal, OptWhole, Price, Real, Request, Whole, describe

SCHEDULES = ("gpipe", "1f1b", "interleaved")
RECOMPUTE = ("none", "selective", "full", "reversible")
TRAIN_DTYPES = ("bf16", "fp16", "fp8", "fp4")


class TrainRequest(Request):
    """A training layout (TP/PP/DP/EP, micro-batching, schedule, ZeRO, recomputation) of a model on
    domains of a system, and the tokens to train on."""

    model: Any
    system: Optional[Any] = None
    tp: Whole(1) = 1
    pp: Whole(1) = 1
    dp: Whole(1) = 1
    ep: Whole(1) = 1
    cp: Whole(1, 1024, fix="1 = no context parallelism; e.g. 16 for a 128K stage") = 1
    moe_tp: OptWhole(1, 1024) = None
    seq: Whole(1, rules.MAX_TOKENS) = 4096
    global_batch: Whole(1, fix="sequences per optimizer step, e.g. 1024") = 1024
    micro_batch: Whole(1, fix="sequences per micro-batch, e.g. 1") = 1
    schedule: Choice(*SCHEDULES) = "1f1b"
    virtual_stages: Whole(1) = 1
    zero: Whole(0, 3, fix="0, 1, 2 or 3 (3 = FSDP)") = 1
    recompute: Choice(*RECOMPUTE) = "selective"
    tokens: Real(gt=0, le=1e18, fix="training tokens, e.g. 1e12") = 1e12
    compute_efficiency: OptReal(gt=0, le=1, fix="a fraction in (0, 1], e.g. 0.5, or omit it for the family's") = None
    overlap_dp: FractionZero = 0.0
    dtype: Choice(*TRAIN_DTYPES) = "bf16"
    sequence_parallel: Flag = True
    flash_attention: Flag = True
    dropout: Flag = False
    usd_per_gpu_hour: Price = None

    def check(self) -> None:
        f = self.flag
        if self.system is None:
            raise rules.InputError(f"no hardware given: pass {f('system')} ID (the scale-up domain, e.g. dgx-h100)")
        self._model = resolve.model(self.model, f("model"))
        self._system = resolve.system(self.system, f("system"))
        rules.context_fits(self._model, self.seq, f"{f('seq')}",
                           f"train on sequences of at most {self._model.max_context:,} tokens")
        rules.training_dtype_supported(f("dtype"), self._system.accelerator, self.dtype)
        if self.seq % self.cp:
            raise rules.InputError(f"{f('cp')} {self.cp} splits each sequence into equal chunks, but {f('seq')} "
                                   f"{self.seq} is not a multiple of {self.cp}; use a sequence length divisible by "
                                   f"{f('cp')}")
        if self.global_batch % (self.dp * self.micro_batch):
            raise rules.InputError(f"{f('global_batch')} {self.global_batch} must be a multiple of dp·micro-batch = "
                                   f"{self.dp * self.micro_batch}; change {f('global_batch')} or {f('micro_batch')}")
        self._layout = resolve.layout(
            self._model, self._system, self.tp, self.ep, self.pp, self.dp, 1, cp=self.cp, expert_tp=self.moe_tp,
            micro_batch=self.micro_batch, micro_batches=self.global_batch // (self.dp * self.micro_batch),
            schedule=self.schedule, virtual_stages=self.virtual_stages, zero=self.zero, recompute=self.recompute,
            sequence_parallel=self.sequence_parallel)


def run_train(req: TrainRequest) -> dict:
    """The `roofline train --json` dict: step terms, rates, MFU, memory per GPU (also under every
    recomputation mode), and time, GPU-hours and $ for `tokens`."""
    from dataclasses import replace

    from ..efficiency import realistic
    from ..layout import RECOMPUTE_MODES
    from ..memory import training_memory
    from ..training import train_step

    m, sysrec, lay = req._model, req._system, req._layout
    eff = realistic(sysrec.accelerator, req.dtype)
    if req.compute_efficiency is not None:
        eff = replace(eff, compute=req.compute_efficiency, gemm_half_rows=0.0)
    eff = replace(eff, overlap_dp=req.overlap_dp)
    r = train_step(m, sysrec, lay, req.seq, efficiency=eff, dtype=req.dtype, usd_per_gpu_hour=req.usd_per_gpu_hour,
                   flash_attention=req.flash_attention, dropout=req.dropout)
    d = {"model": m.id, "system": sysrec.id, "seq_len": req.seq, "recompute": req.recompute,
         "layout": lay.to_dict(), **r.to_dict(req.tokens)}
    by_mode = {mode: training_memory(m, lay.with_(recompute=mode), req.seq, flash_attention=req.flash_attention,
                                     dropout=req.dropout) for mode in RECOMPUTE_MODES}
    d["memory_by_recompute"] = {k: float(v.total) for k, v in by_mode.items()}
    d["activations_by_recompute"] = {k: float(v.activations) for k, v in by_mode.items()}
    return rules.finite(d, describe(req))


class OvertrainRequest(Request):
    """The lecture's lifetime chain for a model of `params` active parameters, and optionally the
    inference-aware optimum for a target loss (Hoffmann et al. 2022 law)."""

    params: Real(gt=0, le=1e16, fix="active parameters, e.g. 1e11") = 1e11
    traffic: Real(gt=0, le=1e15, fix="inference tokens per second, e.g. 5e7") = 5e7
    lifetime_days: Real(gt=0, le=36500, fix="serving lifetime in days, e.g. 60") = 60.0
    k_rl: Real(gt=0, le=100, fix="RL FLOPs per parameter per token, 2-6") = 3.0
    eta_rl: Real(gt=0, le=100, fix="RL efficiency relative to pretraining MFU, e.g. 0.33") = 1 / 3
    eta_inf: Real(gt=0, le=100, fix="inference efficiency relative to pretraining MFU, e.g. 0.33") = 1 / 3
    target_loss: OptReal(gt=0, le=100, fix="a loss in nats/token above the law's irreducible 1.69") = None


def run_overtrain(req: OvertrainRequest) -> dict:
    """The `roofline overtrain --json` dict."""
    from .. import scaling as S

    plan = S.lifetime_plan(req.params, req.traffic, req.lifetime_days, k_rl=req.k_rl, eta_rl=req.eta_rl,
                           eta_inf=req.eta_inf)
    d = {"params": req.params, "traffic_tokens_per_s": req.traffic, "lifetime_days": req.lifetime_days,
         "k_rl": req.k_rl, "eta_rl": req.eta_rl, "eta_inf": req.eta_inf,
         **{k: float(getattr(plan, k)) for k in plan.__dataclass_fields__}}
    if req.target_loss is not None:
        opt = S.inference_aware_optimum(req.target_loss, float(plan.inference_tokens), rl_tokens=0.0,
                                        eta_inf=req.eta_inf)
        d["optimum"] = {"target_loss": req.target_loss, "n_opt": opt.n_opt, "d_opt": opt.d_opt,
                        "overtraining_opt": opt.overtraining_opt, "cost_opt_flops": opt.cost_opt,
                        "n_chinchilla": opt.n_chinchilla, "d_chinchilla": opt.d_chinchilla,
                        "cost_chinchilla_flops": opt.cost_chinchilla}
    return rules.finite(d, describe(req))
