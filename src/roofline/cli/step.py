"""`roofline step`: time, cost, bottleneck and memory of one forward pass."""

from __future__ import annotations

from typing import Annotated

import typer

from .common import (AcceleratorOpt, ComputeEffOpt, GpusOpt, JsonOpt, KvDtypeOpt, MemoryEffOpt, ModelOpt,
                     PriceOpt, SystemOpt, WeightsDtypeOpt, resolve_hardware, resolve_model)
from .render import fmt, print_json, seconds, si_bytes, table


def register(app: typer.Typer) -> None:
    @app.command("step")
    def step_cmd(
        model: ModelOpt,
        system: SystemOpt = None,
        accelerator: AcceleratorOpt = None,
        gpus: GpusOpt = None,
        batch: Annotated[int, typer.Option("--batch", "-b", help="Sequences in the pass (B).")] = 1,
        context: Annotated[int, typer.Option("--context", "-c", help="Tokens already in each sequence's KV cache.")] = 0,
        phase: Annotated[str, typer.Option("--phase", help="decode (1 new token per sequence) or prefill (--prompt tokens).")] = "decode",
        prompt: Annotated[int, typer.Option("--prompt", help="Tokens per sequence in a prefill pass.")] = 1,
        weights_dtype: WeightsDtypeOpt = "bf16",
        kv_dtype: KvDtypeOpt = "bf16",
        usd_per_gpu_hour: PriceOpt = None,
        compute_efficiency: ComputeEffOpt = 1.0,
        memory_efficiency: MemoryEffOpt = 1.0,
        json: JsonOpt = False,
    ) -> None:
        """One pass of MODEL on a system: compute / weight-read / KV-read time, bound, $/Mtok, memory."""
        from ..roofline import Efficiency, step

        m = resolve_model(model)
        sysrec, chips = resolve_hardware(system, accelerator, gpus)
        r = step(m, sysrec, batch, context, phase=phase, prompt=prompt, weights_dtype=weights_dtype,
                 kv_dtype=kv_dtype, chips=chips, usd_per_gpu_hour=usd_per_gpu_hour,
                 efficiency=Efficiency(compute_efficiency, memory_efficiency), check_fit=True)
        if json:
            d = {"model": m.id, "system": sysrec.id, "phase": phase, "batch": batch, "context": context,
                 "prompt": prompt if phase == "prefill" else 1, "weights_dtype": weights_dtype, "kv_dtype": kv_dtype}
            d.update(r.to_dict())
            return print_json(d)
        rows = [
            ["compute", seconds(float(r.compute_s))],
            ["weight read", seconds(float(r.weight_read_s))],
            ["KV read", seconds(float(r.kv_read_s))],
            ["KV write", seconds(float(r.kv_write_s))],
            ["step (perfect overlap)", seconds(float(r.step_s))],
            ["step (no overlap)", seconds(float(r.step_upper_s))],
            ["bound", str(r.bound)],
            ["tokens/s (total)", fmt(float(r.tokens_per_s))],
            ["tokens/s per sequence", fmt(float(r.tokens_per_s_per_sequence))],
            ["$ per million tokens", fmt(float(r.usd_per_million_tokens))],
            ["MFU", f"{float(r.mfu):.1%}"],
            ["bandwidth utilisation", f"{float(r.bandwidth_utilization):.1%}"],
            ["params total / active", f"{r.params_total / 1e9:.2f} B / {r.params_active / 1e9:.2f} B"],
            ["KV bytes per token", fmt(r.kv_bytes_per_token)],
            ["memory per GPU", f"{si_bytes(float(r.memory_per_gpu_bytes))} of {si_bytes(sysrec.accelerator.hbm_bytes)}"],
            ["critical batch B* (KV ignored)", fmt(r.critical_batch)],
            ["critical batch at this context", fmt(float(r.critical_batch_with_kv))],
            ["latency floor W_total/BW", seconds(r.latency_floor_s)],
        ]
        table(f"{m.id} on {chips} x {sysrec.accelerator.id}, {phase}, B={batch}, context={context}",
              ["quantity", "value"], rows)
