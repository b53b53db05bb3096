"""`roofline train` (step time, memory and cost of a training layout) and `roofline overtrain`
(the lecture §4 lifetime economics: traffic → inference tokens → equal-cost pretraining → over-training)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .common import JsonOpt, ModelOpt, PriceOpt, SystemOpt, resolve_model
from .render import fmt, print_json, seconds, si_bytes, table

Int = lambda name, help_: Annotated[int, typer.Option(name, help=help_)]  # noqa: E731


def register(app: typer.Typer) -> None:
    @app.command("train")
    def train_cmd(
        model: ModelOpt,
        system: SystemOpt = None,
        tp: Int("--tp", "Tensor-parallel degree (inside one scale-up domain).") = 1,
        pp: Int("--pp", "Pipeline stages.") = 1,
        dp: Int("--dp", "Data-parallel replicas.") = 1,
        ep: Int("--ep", "Expert-parallel degree (divides --dp).") = 1,
        seq: Int("--seq", "Sequence length, tokens.") = 4096,
        global_batch: Int("--global-batch", "Sequences per optimizer step.") = 1024,
        micro_batch: Int("--micro-batch", "Sequences per micro-batch.") = 1,
        schedule: Annotated[str, typer.Option("--schedule", help="gpipe, 1f1b or interleaved.")] = "1f1b",
        virtual_stages: Int("--virtual-stages", "Model chunks per GPU (interleaved schedule).") = 1,
        zero: Int("--zero", "ZeRO stage 0-3 (3 = FSDP).") = 1,
        recompute: Annotated[str, typer.Option("--recompute", help="none, selective, full or reversible.")] = "selective",
        tokens: Annotated[float, typer.Option("--tokens", help="Training tokens D for time, GPU-hours and $.")] = 1e12,
        compute_efficiency: Annotated[Optional[float], typer.Option("--compute-efficiency", help="Achieved fraction of peak FLOP/s for training matmuls (default: the family's GEMM factor).")] = None,
        overlap_dp: Annotated[float, typer.Option("--overlap-dp", help="Fraction of the gradient reduction hidden behind compute, [0, 1].")] = 0.0,
        dtype: Annotated[str, typer.Option("--dtype", help="Matmul format: bf16, fp16, fp8.")] = "bf16",
        sequence_parallel: Annotated[bool, typer.Option("--sequence-parallel/--no-sequence-parallel", help="Split norms and residual adds over the TP ranks (Megatron sequence parallelism).")] = True,
        flash_attention: Annotated[bool, typer.Option("--flash-attention/--no-flash-attention", help="Fused attention kernel; without it the s² scores are stored and the softmax reads and writes them (Megatron 2021, BLOOM).")] = True,
        dropout: Annotated[bool, typer.Option("--dropout/--no-dropout", help="Dropout on attention scores and layer outputs (masks stored and written).")] = False,
        usd_per_gpu_hour: PriceOpt = None,
        json: JsonOpt = False,
    ) -> None:
        """Step time, MFU, memory per GPU and the cost of training MODEL on D tokens with a TP/PP/DP/EP layout."""
        from dataclasses import replace

        from ..catalog import get_catalog
        from ..efficiency import realistic
        from ..errors import InputError
        from ..layout import RECOMPUTE_MODES, Layout
        from ..memory import training_memory
        from ..training import train_step

        if system is None:
            raise InputError("no hardware given: pass --system ID (the scale-up domain, e.g. dgx-h100)")
        m = resolve_model(model)
        sysrec = get_catalog().system(system)
        if global_batch % (dp * micro_batch):
            raise InputError(f"--global-batch {global_batch} must be a multiple of dp·micro-batch = "
                             f"{dp * micro_batch}; change --global-batch or --micro-batch")
        lay = Layout(tp=tp, pp=pp, dp=dp, ep=ep, micro_batch=micro_batch,
                     micro_batches=global_batch // (dp * micro_batch), schedule=schedule,
                     virtual_stages=virtual_stages, zero=zero, recompute=recompute,
                     sequence_parallel=sequence_parallel)
        # the family's cited factors; an explicit --compute-efficiency is a flat fraction of peak for every GEMM
        eff = replace(realistic(sysrec.accelerator, dtype), overlap_dp=overlap_dp)
        if compute_efficiency is not None:
            eff = replace(eff, compute=compute_efficiency, gemm_half_rows=0.0)
        r = train_step(m, sysrec, lay, seq, dtype=dtype, usd_per_gpu_hour=usd_per_gpu_hour, efficiency=eff,
                       flash_attention=flash_attention, dropout=dropout)
        by_mode = {mode: training_memory(m, lay.with_(recompute=mode), seq, flash_attention=flash_attention,
                                         dropout=dropout) for mode in RECOMPUTE_MODES}
        if json:
            d = {"model": m.id, "system": sysrec.id, "seq_len": seq, "recompute": recompute,
                 "layout": lay.to_dict(), **r.to_dict(tokens)}
            d["memory_by_recompute"] = {k: float(v.total) for k, v in by_mode.items()}
            return print_json(d)
        f = lambda x: float(x)  # noqa: E731
        rows = [
            ["compute", seconds(f(r.compute_s))], ["elementwise kernels", seconds(f(r.elementwise_s))],
            ["TP communication", seconds(f(r.tp_comm_s))],
            ["EP all-to-all", seconds(f(r.ep_comm_s))],
            ["pipeline bubble", f"{seconds(f(r.bubble_s))} ({r.bubble_fraction:.1%})"],
            ["PP sends", seconds(f(r.pp_comm_s))], ["DP gradient reduction (exposed)", seconds(f(r.dp_comm_s))],
            ["optimizer update", seconds(f(r.optimizer_s))], ["step", seconds(f(r.step_s))],
            ["tokens/s", fmt(f(r.tokens_per_s))], ["MFU / HFU", f"{f(r.mfu):.1%} / {f(r.hfu):.1%}"],
            ["TFLOP/s per GPU (model / hardware)", f"{f(r.model_tflops_per_gpu):.1f} / {f(r.hardware_tflops_per_gpu):.1f}"],
            ["memory per GPU", f"{si_bytes(f(r.memory.total))} of {si_bytes(sysrec.accelerator.hbm_bytes)}"
                               + ("" if bool(r.fits) else "  (DOES NOT FIT)")],
            ["  weights / grads / optimizer", " / ".join(si_bytes(f(x)) for x in (r.memory.weights, r.memory.grads, r.memory.optimizer))],
            ["  activations", si_bytes(f(r.memory.activations))],
            [f"time to train on {tokens:.3g} tokens", seconds(f(r.time_to_train_s(tokens)))],
            ["GPU-hours", fmt(f(r.gpu_hours(tokens)))], ["cost, USD", fmt(f(r.usd(tokens)))],
        ]
        table(f"{m.id} on {r.gpus} x {sysrec.accelerator.id}: TP{tp} PP{pp} DP{dp} EP{ep}, {schedule}, "
              f"recompute={recompute}", ["quantity", "value"], rows)
        mrows = [[k, si_bytes(float(v.activations)), si_bytes(float(v.total))] for k, v in by_mode.items()]
        table(f"memory per GPU by recomputation mode ({'FlashAttention' if flash_attention else 'unfused attention'}, "
              f"{'dropout' if dropout else 'no dropout'})",
              ["recompute", "activations", "total"], mrows)

    @app.command("overtrain")
    def overtrain_cmd(
        params: Annotated[float, typer.Option("--params", help="Active parameters N.")] = 1e11,
        traffic: Annotated[float, typer.Option("--traffic", help="Inference tokens per second served by this model.")] = 5e7,
        lifetime_days: Annotated[float, typer.Option("--lifetime-days", help="Serving lifetime, days.")] = 60.0,
        k_rl: Annotated[float, typer.Option("--k-rl", help="RL FLOPs per parameter per token, 2-6.")] = 3.0,
        eta_rl: Annotated[float, typer.Option("--eta-rl", help="RL efficiency relative to pretraining MFU.")] = 1 / 3,
        eta_inf: Annotated[float, typer.Option("--eta-inf", help="Inference efficiency relative to pretraining MFU.")] = 1 / 3,
        target_loss: Annotated[Optional[float], typer.Option("--target-loss", help="Also solve the inference-aware optimum for this loss (nats/token, Hoffmann et al. 2022 law).")] = None,
        json: JsonOpt = False,
    ) -> None:
        """How over-trained a model should be: the lecture's equal-cost chain, and the inference-aware optimum."""
        from .. import scaling as S

        plan = S.lifetime_plan(params, traffic, lifetime_days, k_rl=k_rl, eta_rl=eta_rl, eta_inf=eta_inf)
        opt = None
        if target_loss is not None:
            opt = S.inference_aware_optimum(target_loss, float(plan.inference_tokens), rl_tokens=0.0,
                                            eta_inf=eta_inf)
        if json:
            d = {"params": params, "traffic_tokens_per_s": traffic, "lifetime_days": lifetime_days,
                 "k_rl": k_rl, "eta_rl": eta_rl, "eta_inf": eta_inf,
                 **{k: float(getattr(plan, k)) for k in plan.__dataclass_fields__}}
            if opt is not None:
                d["optimum"] = {"target_loss": target_loss, "n_opt": opt.n_opt, "d_opt": opt.d_opt,
                                "overtraining_opt": opt.overtraining_opt, "cost_opt_flops": opt.cost_opt,
                                "n_chinchilla": opt.n_chinchilla, "d_chinchilla": opt.d_chinchilla,
                                "cost_chinchilla_flops": opt.cost_chinchilla}
            return print_json(d)
        rows = [
            ["inference tokens D_inf = traffic x lifetime", fmt(float(plan.inference_tokens))],
            ["pretraining tokens D_pre (equal cost)", fmt(float(plan.pretrain_tokens))],
            ["RL tokens D_RL (equal cost)", fmt(float(plan.rl_tokens))],
            ["Chinchilla tokens 20N", fmt(float(plan.chinchilla_tokens))],
            ["over-training factor D_pre / 20N", f"{float(plan.overtraining):.1f}x"],
            ["pretraining FLOPs 6·N·D_pre", fmt(float(plan.pretrain_flops))],
        ]
        table(f"lifetime of a {params:.3g}-parameter model: {traffic:.3g} tok/s for {lifetime_days:g} days",
              ["quantity", "value"], rows)
        if opt is not None:
            table(f"inference-aware optimum at loss {target_loss:g} with D_inf = {float(plan.inference_tokens):.3g}",
                  ["", "parameters", "tokens", "over-training", "lifetime cost (FLOP-eq.)"],
                  [["inference-aware", fmt(opt.n_opt), fmt(opt.d_opt), f"{opt.overtraining_opt:.1f}x", fmt(opt.cost_opt)],
                   ["pretraining-optimal", fmt(opt.n_chinchilla), fmt(opt.d_chinchilla),
                    f"{opt.d_chinchilla / (20 * opt.n_chinchilla):.1f}x", fmt(opt.cost_chinchilla)]])
