"""`roofline train` (step time, memory and cost of a training layout) and `roofline overtrain`
(the lecture §4 lifetime economics: traffic → inference tokens → equal-cost pretraining → over-training)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .common import JsonOpt, ModelOpt, PriceOpt, SystemOpt
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
        cp: Int("--cp", "Context-parallel degree: each sequence split over CP GPUs, K/V all-gathered per layer (Llama 3's 128K stage: 16).") = 1,
        moe_tp: Annotated[Optional[int], typer.Option("--moe-tp", help="GPUs each routed expert is sliced over (Megatron's expert tensor parallelism); default: TP when EP divides DP, else 1.")] = None,
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
        from ..requests.train import TrainRequest, run_train

        req = TrainRequest.of(style="cli", model=model, system=system, tp=tp, pp=pp, dp=dp, ep=ep, cp=cp, moe_tp=moe_tp, seq=seq,
                              global_batch=global_batch, micro_batch=micro_batch, schedule=schedule,
                              virtual_stages=virtual_stages, zero=zero, recompute=recompute, tokens=tokens,
                              compute_efficiency=compute_efficiency, overlap_dp=overlap_dp, dtype=dtype,
                              sequence_parallel=sequence_parallel, flash_attention=flash_attention, dropout=dropout,
                              usd_per_gpu_hour=usd_per_gpu_hour)
        d = run_train(req)
        if json:
            return print_json(d)
        mem = d["memory"]
        b = lambda k: si_bytes(float(mem.get(k + "_bytes", mem.get(k))))  # noqa: E731
        rows = [
            ["compute", seconds(d["compute_s"])], ["elementwise kernels", seconds(d["elementwise_s"])],
            ["TP communication", seconds(d["tp_comm_s"])],
            ["EP all-to-all", seconds(d["ep_comm_s"])],
            ["CP K/V all-gathers", seconds(d["cp_comm_s"])],
            ["pipeline bubble", f"{seconds(d['bubble_s'])} ({d['bubble_fraction']:.1%})"],
            ["PP sends", seconds(d["pp_comm_s"])], ["DP gradient reduction (exposed)", seconds(d["dp_comm_s"])],
            ["optimizer update", seconds(d["optimizer_s"])], ["step", seconds(d["step_s"])],
            ["tokens/s", fmt(d["tokens_per_s"])], ["MFU / HFU", f"{d['mfu']:.1%} / {d['hfu']:.1%}"],
            ["TFLOP/s per GPU (model / hardware)", f"{d['model_tflops_per_gpu']:.1f} / {d['hardware_tflops_per_gpu']:.1f}"],
            ["layers on the busiest stage", fmt(mem["layers_per_stage"])],
            ["memory per GPU", f"{b('total')} of {si_bytes(req._system.accelerator.hbm_bytes)}"
                               + ("" if bool(d["fits"]) else "  (DOES NOT FIT)")],
            ["  weights / grads / optimizer", " / ".join(b(k) for k in ("weights", "grads", "optimizer"))],
            ["  activations", b("activations")],
            [f"time to train on {tokens:.3g} tokens", seconds(d["time_to_train_s"])],
            ["GPU-hours", fmt(d["gpu_hours"])], ["cost, USD", fmt(d["usd"])],
        ]
        table(f"{d['model']} on {d['gpus']} x {req._system.accelerator.id}: TP{tp} PP{pp} DP{dp} EP{ep}"
              f"{f' CP{cp}' if cp > 1 else ''}, {schedule}, "
              f"recompute={recompute}", ["quantity", "value"], rows)
        mrows = [[k, si_bytes(d["activations_by_recompute"][k]), si_bytes(v)] for k, v in d["memory_by_recompute"].items()]
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
        from ..requests.train import OvertrainRequest, run_overtrain

        d = run_overtrain(OvertrainRequest.of(style="cli", params=params, traffic=traffic, lifetime_days=lifetime_days,
                                              k_rl=k_rl, eta_rl=eta_rl, eta_inf=eta_inf, target_loss=target_loss))
        if json:
            return print_json(d)
        opt = d.get("optimum")
        rows = [
            ["inference tokens D_inf = traffic x lifetime", fmt(d["inference_tokens"])],
            ["pretraining tokens D_pre (equal cost)", fmt(d["pretrain_tokens"])],
            ["RL tokens D_RL (equal cost)", fmt(d["rl_tokens"])],
            ["Chinchilla tokens 20N", fmt(d["chinchilla_tokens"])],
            ["over-training factor D_pre / 20N", f"{d['overtraining']:.1f}x"],
            ["pretraining FLOPs 6·N·D_pre", fmt(d["pretrain_flops"])],
        ]
        table(f"lifetime of a {params:.3g}-parameter model: {traffic:.3g} tok/s for {lifetime_days:g} days",
              ["quantity", "value"], rows)
        if opt is not None:
            table(f"inference-aware optimum at loss {target_loss:g} with D_inf = {d['inference_tokens']:.3g}",
                  ["", "parameters", "tokens", "over-training", "lifetime cost (FLOP-eq.)"],
                  [["inference-aware", fmt(opt["n_opt"]), fmt(opt["d_opt"]), f"{opt['overtraining_opt']:.1f}x",
                    fmt(opt["cost_opt_flops"])],
                   ["pretraining-optimal", fmt(opt["n_chinchilla"]), fmt(opt["d_chinchilla"]),
                    f"{opt['d_chinchilla'] / (20 * opt['n_chinchilla']):.1f}x", fmt(opt["cost_chinchilla_flops"])]])
