"""`roofline sweep`: one vectorised call over a grid of batch and context (and pass length)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .common import (AcceleratorOpt, ComputeEffOpt, GpusOpt, JsonOpt, KvDtypeOpt, MemoryEffOpt, ModelOpt,
                     PriceOpt, SystemOpt, WeightsDtypeOpt, check_one_tp_group, resolve_hardware, resolve_model)
from .render import print_json, table

GridOpt = Annotated[str, typer.Option(help="Comma list (1,8,64) or log range start:stop:count (1:4096:13).")]


def parse_grid(text: str, name: str):
    """'1,8,64' -> [1, 8, 64]; '1:4096:13' -> 13 log-spaced values from 1 to 4096 (rounded)."""
    import numpy as np

    from ..errors import InputError

    try:
        if ":" in text:
            a, b, n = text.split(":")
            lo, hi, k = float(a), float(b), int(n)
            if lo <= 0 or hi < lo or k < 1:
                raise ValueError
            return np.unique(np.round(np.geomspace(lo, hi, k)))
        vals = np.array([float(v) for v in text.split(",") if v.strip()])
        if vals.size == 0:
            raise ValueError
        return vals
    except ValueError:
        raise InputError(f"--{name} {text!r} is not a grid; expected a comma list like 1,8,64 or a log range "
                         f"start:stop:count like 1:4096:13 with 0 < start <= stop") from None


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
        kv_dtype: KvDtypeOpt = "bf16",
        usd_per_gpu_hour: PriceOpt = None,
        compute_efficiency: ComputeEffOpt = 1.0,
        memory_efficiency: MemoryEffOpt = 1.0,
        realistic: Annotated[bool, typer.Option("--realistic", help="Add the cited efficiency model's step time and its interval (the GPUs as one TP group).")] = False,
        csv: Annotated[Optional[str], typer.Option("--csv", help="Write every point to this CSV file.")] = None,
        plot: Annotated[Optional[str], typer.Option("--plot", help="Write latency/cost-vs-batch plots to this PNG/SVG file.")] = None,
        json: JsonOpt = False,
    ) -> None:
        """Evaluate every (batch, context) point in one vectorised call; table, CSV, JSON or plot."""
        import numpy as np

        from ..roofline import Efficiency, step

        m = resolve_model(model)
        sysrec, chips = resolve_hardware(system, accelerator, gpus)
        bs = parse_grid(batch, "batch")
        cs = parse_grid(context, "context")
        Bg, Cg = np.meshgrid(bs, cs, indexing="ij")
        r = step(m, sysrec, Bg, Cg, phase=phase, prompt=prompt, weights_dtype=weights_dtype, kv_dtype=kv_dtype,
                 chips=chips, usd_per_gpu_hour=usd_per_gpu_hour,
                 efficiency=Efficiency(compute_efficiency, memory_efficiency))
        keys = ["compute_s", "weight_read_s", "kv_read_s", "step_s", "tokens_per_s", "tokens_per_s_per_sequence",
                "usd_per_million_tokens", "mfu", "memory_per_gpu_bytes"]
        cols = {"batch": Bg.ravel(), "context": Cg.ravel()}
        for k in keys:
            cols[k] = np.broadcast_to(getattr(r, k), Bg.shape).ravel()
        cols["bound"] = np.broadcast_to(r.bound, Bg.shape).ravel()
        cols["fits"] = np.broadcast_to(r.fits, Bg.shape).ravel()
        if realistic:  # efficiency.predict_pass on the same grid, central value and the two corners
            from ..efficiency import predict_pass

            check_one_tp_group(m, sysrec, chips)
            for key, which in (("realistic_step_s", "mid"), ("realistic_low_s", "fast"), ("realistic_high_s", "slow")):
                t = predict_pass(m, sysrec, Bg, Cg, phase=phase, prompt=prompt, weights_dtype=weights_dtype,
                                 kv_dtype=kv_dtype, tp=chips, which=which).step_s
                cols[key] = np.broadcast_to(t, Bg.shape).ravel()
        if csv:
            import csv as csvmod

            with open(csv, "w", newline="") as fh:
                w = csvmod.writer(fh)
                w.writerow(list(cols))
                for i in range(Bg.size):
                    w.writerow([cols[k][i] for k in cols])
        if plot:
            from ..plots.roofline import latency_and_cost_vs_batch

            latency_and_cost_vs_batch(m, sysrec, chips=chips, context=float(cs[0]), weights_dtype=weights_dtype,
                                      kv_dtype=kv_dtype, path=plot, batches=bs)
        if json:
            return print_json([{k: cols[k][i] for k in cols} for i in range(Bg.size)])
        if csv or plot:
            print(f"wrote {Bg.size} points" + (f" to {csv}" if csv else "") + (f"; plot {plot}" if plot else ""))
            return
        real = ["realistic ms [interval]"] if realistic else []
        table(f"{m.id} on {chips} x {sysrec.accelerator.id} ({phase})",
              ["batch", "context", "step ms", *real, "bound", "tok/s", "tok/s/seq", "$/Mtok", "MFU", "fits"],
              [[cols["batch"][i], cols["context"][i], cols["step_s"][i] * 1e3,
                *([f"{cols['realistic_step_s'][i] * 1e3:.4g} [{cols['realistic_low_s'][i] * 1e3:.3g}, "
                   f"{cols['realistic_high_s'][i] * 1e3:.3g}]"] if realistic else []),
                cols["bound"][i], cols["tokens_per_s"][i], cols["tokens_per_s_per_sequence"][i],
                cols["usd_per_million_tokens"][i], f"{cols['mfu'][i]:.1%}", bool(cols["fits"][i])]
               for i in range(Bg.size)])
