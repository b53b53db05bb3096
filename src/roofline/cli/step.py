"""`roofline step`: time, cost, bottleneck and memory of one forward pass."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .common import (AcceleratorOpt, ComputeEffOpt, GpusOpt, JsonOpt, KvDtypeOpt, MemoryEffOpt, ModelOpt,
                     PriceOpt, SystemOpt, WeightsDtypeOpt, check_one_tp_group, resolve_hardware, resolve_model)
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
        tp: Annotated[Optional[int], typer.Option("--tp", help="Tensor-parallel degree (with --ep/--pp/--dp: parallel step with communication).")] = None,
        ep: Annotated[Optional[int], typer.Option("--ep", help="Expert-parallel degree: 1 or TP x DP (MoE models).")] = None,
        pp: Annotated[Optional[int], typer.Option("--pp", help="Pipeline stages (batch = sequences in flight over all stages).")] = None,
        dp: Annotated[Optional[int], typer.Option("--dp", help="Attention data-parallel groups inside one replica.")] = None,
        domains: Annotated[Optional[int], typer.Option("--domains", help="Scale-up domains available to the replica.")] = None,
        realistic: Annotated[bool, typer.Option("--realistic", help="Also predict with the cited efficiency model of the accelerator's family (roofline.efficiency), with the interval over its factors' spread.")] = False,
        decode_attention: Annotated[str, typer.Option("--decode-attention", help="With --realistic: shared (KV head read once per GQA group) or per-query-head (older kernels).")] = "shared",
        json: JsonOpt = False,
    ) -> None:
        """One pass of MODEL on a system: compute / weight-read / KV-read time, bound, $/Mtok, memory."""
        from ..roofline import Efficiency, step

        m = resolve_model(model)
        sysrec, chips = resolve_hardware(system, accelerator, gpus)
        if decode_attention not in ("shared", "per-query-head"):
            raise typer.BadParameter(f"got {decode_attention!r}; use shared or per-query-head", param_hint="--decode-attention")
        layout = any(v is not None for v in (tp, ep, pp, dp, domains))
        real = None
        if realistic:  # no layout given: the chips as one TP group (the efficiency model needs a layout)
            if not layout:
                check_one_tp_group(m, sysrec, chips)
            real = _realistic(m, sysrec, batch, context, phase, prompt, weights_dtype, kv_dtype,
                              (tp or 1) if layout else chips, ep or 1, pp or 1, dp or 1, domains or 1,
                              decode_attention == "per-query-head")
        if layout:
            return _parallel(m, sysrec, batch, context, phase, prompt, weights_dtype, kv_dtype, usd_per_gpu_hour,
                             Efficiency(compute_efficiency, memory_efficiency), tp or 1, ep or 1, pp or 1, dp or 1,
                             domains or 1, json, real)
        r = step(m, sysrec, batch, context, phase=phase, prompt=prompt, weights_dtype=weights_dtype,
                 kv_dtype=kv_dtype, chips=chips, usd_per_gpu_hour=usd_per_gpu_hour,
                 efficiency=Efficiency(compute_efficiency, memory_efficiency), check_fit=True)
        if json:
            d = {"model": m.id, "system": sysrec.id, "phase": phase, "batch": batch, "context": context,
                 "prompt": prompt if phase == "prefill" else 1, "weights_dtype": weights_dtype, "kv_dtype": kv_dtype}
            d.update(r.to_dict())
            # no layout given: perfect sharding over the chips, no communication modelled (docs/parallelism.md)
            d["comm_s"] = 0.0
            d["memory_per_gpu_parts_bytes"] = {"weights": d["weights_per_gpu_bytes"], "kv": d["kv_per_gpu_bytes"],
                                               "activations": d["activations_per_gpu_bytes"]}
            if real:
                d["realistic"] = real
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
        ] + _realistic_rows(real)
        table(f"{m.id} on {chips} x {sysrec.accelerator.id}, {phase}, B={batch}, context={context}",
              ["quantity", "value"], rows)


def _realistic(m, sysrec, batch, context, phase, prompt, weights_dtype, kv_dtype, tp, ep, pp, dp, domains,
               per_query_head):
    """The efficiency model's pass time (efficiency.predict_pass) at the central factors and the two
    corners of their spread: the interval any prediction carries (docs/validation.md gives its error)."""
    from ..efficiency import WHICH, family_for, predict_pass

    t = {w: predict_pass(m, sysrec, batch, context, phase=phase, prompt=prompt, weights_dtype=weights_dtype,
                         kv_dtype=kv_dtype, tp=tp, ep=ep, pp=pp, dp=dp, domains=domains,
                         kv_per_query_head=per_query_head, which=w) for w in WHICH}
    mid = t["mid"]
    tokens = batch * (prompt if phase == "prefill" else 1)
    return {"family": family_for(sysrec.accelerator).family, "layout": f"TP{tp} EP{ep} PP{pp} DP{dp}",
            "decode_attention": "per-query-head" if per_query_head else "shared",
            "step_s": float(mid.step_s), "low_s": float(t["fast"].step_s), "high_s": float(t["slow"].step_s),
            "compute_s": float(mid.compute_s), "memory_s": float(mid.memory_s), "comm_s": float(mid.comm_s),
            "overhead_s": float(mid.overhead_s), "gemm_s": float(mid.gemm_s), "attention_s": float(mid.attention_s),
            "elementwise_s": float(mid.elementwise_s),
            "tokens_per_s": tokens / float(mid.step_s)}


def _realistic_rows(real) -> list:
    if not real:
        return []
    return [[f"efficiency model ({real['family']}, {real['layout']}): step", seconds(real["step_s"])],
            ["  interval over the factors' spread", f"{seconds(real['low_s'])} .. {seconds(real['high_s'])}"],
            ["  compute / memory / comm / overhead", " / ".join(seconds(real[k]) for k in
                                                                 ("compute_s", "memory_s", "comm_s", "overhead_s"))],
            ["  kernels: GEMMs + attention + elementwise",
             " + ".join(seconds(real[k]) for k in ("gemm_s", "attention_s", "elementwise_s"))],
            ["  tokens/s (replica)", fmt(real["tokens_per_s"])]]


def _parallel(m, sysrec, batch, context, phase, prompt, weights_dtype, kv_dtype, price, eff, tp, ep, pp, dp, domains,
              json, real=None):
    """`roofline step --tp/--ep/--pp/--dp/--domains`: one replica's decode loop or prefill pass with
    TP all-reduces, EP dispatch/combine and PP sends on their tiers (parallel_step)."""
    from ..parallel_step import parallel_step
    from ..roofline import step

    r = parallel_step(m, sysrec, batch, context, tp=tp, ep=ep, pp=pp, dp=dp, domains=domains, phase=phase,
                      prompt=prompt, weights_dtype=weights_dtype, kv_dtype=kv_dtype, efficiency=eff,
                      usd_per_gpu_hour=price)
    plain = step(m, sysrec, batch, context, phase=phase, prompt=prompt, weights_dtype=weights_dtype,
                 kv_dtype=kv_dtype, chips=sysrec.chips, check_context=True)
    d = {"model": m.id, "system": sysrec.id, "phase": phase, "batch": batch, "context": context,
         "prompt": prompt if phase == "prefill" else 1, "weights_dtype": weights_dtype, "kv_dtype": kv_dtype,
         "tp": tp, "ep": ep, "pp": pp, "dp": dp, "domains": domains}
    d.update(r.to_dict())
    for k in ("params_total", "params_active", "kv_bytes_per_token"):
        d[k] = getattr(plain, k)
    if real:
        d["realistic"] = real
    if json:
        return print_json(d)
    if not bool(r.fits):
        from ..errors import DoesNotFitError

        raise DoesNotFitError(
            f"{m.id} needs {float(r.memory_per_gpu_bytes) / 1e9:,.1f} GB per GPU under TP{tp} EP{ep} PP{pp} DP{dp} "
            f"(weights {float(r.weights_per_gpu_bytes) / 1e9:,.1f}, KV {float(r.kv_per_gpu_bytes) / 1e9:,.1f} GB); "
            f"raise TP/EP/PP, lower the batch or context, or use fp8 weights/KV")
    rows = [[k.replace("_s", "").replace("_", " "), seconds(float(d[k]))] for k in
            ("compute_s", "weight_read_s", "kv_read_s", "kv_write_s", "tp_comm_s", "ep_comm_s", "pp_comm_s",
             "step_s", "step_upper_s")]
    rows += [["bound", str(d["bound"])], ["tokens/s (replica)", fmt(d["tokens_per_s"])],
             ["tokens/s per GPU", fmt(d["tokens_per_s_per_gpu"])],
             ["tokens/s per sequence", fmt(d["tokens_per_s_per_sequence"])],
             ["$ per million tokens", fmt(d["usd_per_million_tokens"])],
             ["memory per GPU", f"{si_bytes(d['memory_per_gpu_bytes'])} (weights {si_bytes(d['weights_per_gpu_bytes'])}, "
                                f"KV {si_bytes(d['kv_per_gpu_bytes'])}, activations {si_bytes(d['activations_per_gpu_bytes'])})"],
             ["GPUs / domains", f"{int(d['gpus'])} / {d['domains']:.3g}"]] + _realistic_rows(real)
    table(f"{m.id} on {sysrec.id}, TP{tp} EP{ep} PP{pp} DP{dp}, {phase}, B={batch}, context={context}",
          ["quantity", "value"], rows)
