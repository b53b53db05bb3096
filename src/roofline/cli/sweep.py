"""`roofline sweep`: one vectorised call over a grid of batch and context (and pass length)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ._layout import (
    AttentionOpt,
    CpOpt,
    DomainsOpt,
    DpOpt,
    EpOpt,
    MoeImbalanceOpt,
    MoeTpOpt,
    PpOpt,
    RedundantOpt,
    TpOpt,
    WeightStationaryOpt,
    layout_args,
)
from .common import (
    AcceleratorOpt,
    ComputeEffOpt,
    ExpertWeightsDtypeOpt,
    GpusOpt,
    JsonOpt,
    KvDtypeOpt,
    MemoryEffOpt,
    ModelOpt,
    PriceOpt,
    SystemOpt,
    WeightsDtypeOpt,
)
from .render import print_json, table

GridOpt = Annotated[str, typer.Option(help="Comma list (1,8,64) or log range start:stop:count (1:4096:13).")]


def parse_grid(text: str, name: str):
    """'1,8,64' -> [1, 8, 64]; '1:4096:13' -> 13 log-spaced values (the request layer's rule)."""
    from ..requests.sweep import parse_grid as grid

    return grid(text, f"--{name}")


def register(app: typer.Typer) -> None:
    @app.command("sweep")
    def sweep_cmd(
        model: ModelOpt,
        system: SystemOpt = None,
        accelerator: AcceleratorOpt = None,
        gpus: GpusOpt = None,
        batch: GridOpt = "1:4096:13",
        context: GridOpt = "4096",
        phase: Annotated[str, typer.Option(help="decode or prefill.")] = "decode",
        prompt: Annotated[int, typer.Option(help="Tokens per sequence in a prefill pass.")] = 1,
        weights_dtype: WeightsDtypeOpt = "bf16",
        expert_weights_dtype: ExpertWeightsDtypeOpt = None,
        kv_dtype: KvDtypeOpt = "bf16",
        usd_per_gpu_hour: PriceOpt = None,
        compute_efficiency: ComputeEffOpt = 1.0,
        memory_efficiency: MemoryEffOpt = 1.0,
        tp: TpOpt = None,
        ep: EpOpt = None,
        pp: PpOpt = None,
        dp: DpOpt = None,
        domains: DomainsOpt = None,
        cp: CpOpt = None,
        moe_tp: MoeTpOpt = None,
        redundant_experts: RedundantOpt = None,
        attention: AttentionOpt = None,
        weight_stationary: WeightStationaryOpt = None,
        moe_imbalance: MoeImbalanceOpt = "1",
        overlap: Annotated[bool, typer.Option("--overlap", help="With --realistic: communication overlapped with compute (two-batch overlap) instead of added.")] = False,
        realistic: Annotated[bool, typer.Option("--realistic", help="Add the cited efficiency model's step time and its interval (the layout's replica, else the GPUs as one TP group).")] = False,
        sparse_attention: Annotated[Optional[str], typer.Option("--sparse-attention", help="Each query attends at most c·sqrt(context) (sqrt:C) or k tokens (topk:K).")] = None,
        spec_gamma: Annotated[int, typer.Option("--spec-gamma", help="Speculative / MTP draft tokens per decode step (0 = off): every point is engine.step's speculative step.")] = 0,
        spec_alpha: Annotated[float, typer.Option("--spec-alpha", help="Acceptance rate per draft token, [0, 1].")] = 0.7,
        draft_fraction: Annotated[float, typer.Option("--draft-fraction", help="Cost of one draft token, fraction of a decode step.")] = 0.05,
        csv: Annotated[Optional[str], typer.Option("--csv", help="Stream every point to this CSV file as it is computed.")] = None,
        parquet: Annotated[Optional[str], typer.Option("--parquet", help="Stream every point to this Parquet file (zstd; bound as a dictionary column).")] = None,
        chunk_points: Annotated[Optional[int], typer.Option("--chunk-points", help="Points per vectorised chunk (default 200,000: bounded memory for any sweep size).")] = None,
        plot: Annotated[Optional[str], typer.Option("--plot", help="Write latency/cost-vs-batch plots to this PNG/SVG/PDF file.")] = None,
        json: JsonOpt = False,
    ) -> None:
        """Evaluate every (batch, context) point in vectorised chunks; table, JSON, or streamed CSV/Parquet, plot."""
        from ..requests.sweep import SweepRequest, run_sweep, write
        from .render import progress

        req = SweepRequest.of(style="cli", model=model, system=system, accelerator=accelerator, gpus=gpus,
                              batch=batch, context=context, phase=phase, prompt=prompt, weights_dtype=weights_dtype,
                              expert_weights_dtype=expert_weights_dtype, kv_dtype=kv_dtype, usd_per_gpu_hour=usd_per_gpu_hour,
                              compute_efficiency=compute_efficiency, memory_efficiency=memory_efficiency,
                              **layout_args(tp, ep, pp, dp, domains, cp, moe_tp, redundant_experts, attention,
                                            weight_stationary), moe_imbalance=moe_imbalance, overlap=overlap,
                              realistic=realistic, sparse_attention=sparse_attention, spec_gamma=spec_gamma,
                              spec_alpha=spec_alpha, draft_fraction=draft_fraction, csv=csv, parquet=parquet, plot=plot,
                              chunk_points=chunk_points,
                              json=json)
        m, sysrec, chips = req._model, req._system, req._chips
        if csv or parquet:
            with progress(req.points, f"sweeping {req.points:,} points", quiet=json or req.points < 2_000_000) as advance:
                write(req, advance)
        if plot:
            from ..plots.roofline import latency_and_cost_vs_batch

            latency_and_cost_vs_batch(m, sysrec, chips=chips, context=req._contexts,
                                      weights_dtype=req.weights_dtype, kv_dtype=req.kv_dtype, path=plot,
                                      batches=req._batches)
        if json:
            return print_json(run_sweep(req))
        if csv or parquet or plot:
            outs = [p for p in (csv, parquet) if p]
            print(f"wrote {req.points} points" + (f" to {' and '.join(outs)}" if outs else "")
                  + (f"; plot {plot}" if plot else ""))
            return
        rows = run_sweep(req)
        real = ["realistic ms [interval]"] if realistic else []
        where = f"{sysrec.id}, {req._layout}" if req._layout is not None else f"{chips} x {sysrec.accelerator.id}"
        table(f"{m.id} on {where} ({phase})",
              ["batch", "context", "step ms", *real, "bound", "tok/s", "tok/s/seq", "$/Mtok", "MFU", "fits"],
              [[r["batch"], r["context"], r["step_s"] * 1e3,
                *([f"{r['realistic_step_s'] * 1e3:.4g} [{r['realistic_low_s'] * 1e3:.3g}, "
                   f"{r['realistic_high_s'] * 1e3:.3g}]"] if realistic else []),
                r["bound"], r["tokens_per_s"], r["tokens_per_s_per_sequence"],
                r["usd_per_million_tokens"], f"{r['mfu']:.1%}", bool(r["fits"])]
               for r in rows])
