"""`roofline step`: time, cost, bottleneck and memory of one forward pass."""

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
    Fp8ScalesOpt,
    GpusOpt,
    JsonOpt,
    KvDtypeOpt,
    MemoryEffOpt,
    ModelOpt,
    MoeKernelOpt,
    PriceOpt,
    SystemOpt,
    WeightsDtypeOpt,
)
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
        moe_imbalance: MoeImbalanceOpt = "1",
        weight_stationary: WeightStationaryOpt = None,
        sparse_attention: Annotated[Optional[str], typer.Option("--sparse-attention", help="Each query attends at most c·sqrt(context) (sqrt:C, the lecture's form) or k tokens (topk:K, e.g. DeepSeek-V3.2's topk:2048).")] = None,
        spec_gamma: Annotated[int, typer.Option("--spec-gamma", help="Speculative / MTP draft tokens per decode step (0 = off).")] = 0,
        spec_alpha: Annotated[float, typer.Option("--spec-alpha", help="Acceptance rate per draft token, [0, 1].")] = 0.7,
        draft_fraction: Annotated[float, typer.Option("--draft-fraction", help="Cost of one draft token, fraction of a decode step.")] = 0.05,
        overlap: Annotated[bool, typer.Option("--overlap", help="With --realistic: communication overlapped with compute (two-batch overlap) instead of added.")] = False,
        realistic: Annotated[bool, typer.Option("--realistic", help="Also predict with the cited efficiency model of the accelerator's family (roofline.efficiency), with the interval over its factors' spread.")] = False,
        decode_attention: Annotated[str, typer.Option("--decode-attention", help="With --realistic: shared (KV head read once per GQA group) or per-query-head (older kernels).")] = "shared",
        kernels: Annotated[str, typer.Option("--kernels", help="With --realistic: kernel times from the family's cited factors (factor) or from measured kernel tables where covered (tables; see `roofline catalog kernels`); auto (default): tables when --engine is given and its tables cover the accelerator, as `simulate`.")] = "auto",
        engine: Annotated[str, typer.Option("--engine", help="With --realistic: whose measured kernels, trtllm, sglang or vllm (--kernels tables without it: trtllm's).")] = "none",
        fp8_scales: Fp8ScalesOpt = "auto",
        moe_kernel: MoeKernelOpt = "auto",
        json: JsonOpt = False,
    ) -> None:
        """One pass of MODEL on a system: compute / weight-read / KV-read time, bound, $/Mtok, memory."""
        from ..requests.step import StepRequest, run_step

        req = StepRequest.of(style="cli", model=model, system=system, accelerator=accelerator, gpus=gpus,
                             batch=batch, context=context, phase=phase, prompt=prompt, weights_dtype=weights_dtype,
                             expert_weights_dtype=expert_weights_dtype, kv_dtype=kv_dtype,
                             usd_per_gpu_hour=usd_per_gpu_hour,
                             compute_efficiency=compute_efficiency, memory_efficiency=memory_efficiency,
                             **layout_args(tp, ep, pp, dp, domains, cp, moe_tp, redundant_experts, attention,
                                           weight_stationary), moe_imbalance=moe_imbalance,
                             sparse_attention=sparse_attention, spec_gamma=spec_gamma, spec_alpha=spec_alpha,
                             draft_fraction=draft_fraction, overlap=overlap, realistic=realistic,
                             decode_attention=decode_attention, kernels=kernels, engine=engine,
                             fp8_scales=fp8_scales, moe_kernel=moe_kernel)
        d = run_step(req)
        if json:
            return print_json(d)
        if req.has_layout:
            return _parallel_table(d, req)
        sysrec = req._system
        rows = [
            ["compute", seconds(d["compute_s"])],
            ["weight read", seconds(d["weight_read_s"])],
            ["KV read", seconds(d["kv_read_s"])],
            ["KV write", seconds(d["kv_write_s"])],
            ["step (perfect overlap)", seconds(d["step_s"])],
            ["step (no overlap)", seconds(d["step_upper_s"])],
            ["bound", str(d["bound"])],
            ["tokens/s (total)", fmt(d["tokens_per_s"])],
            ["tokens/s per sequence", fmt(d["tokens_per_s_per_sequence"])],
            ["$ per million tokens", fmt(d["usd_per_million_tokens"])],
            ["MFU", f"{d['mfu']:.1%}"],
            ["bandwidth utilisation", f"{d['bandwidth_utilization']:.1%}"],
            ["params total / active", f"{d['params_total'] / 1e9:.2f} B / {d['params_active'] / 1e9:.2f} B"],
            ["KV bytes per token", fmt(d["kv_bytes_per_token"])],
            ["memory per GPU", f"{si_bytes(d['memory_per_gpu_bytes'])} of {si_bytes(sysrec.accelerator.hbm_bytes)}"],
            ["critical batch (compute = memory) at context 0", fmt(d["critical_batch"])],
            ["critical batch at this context", fmt(d["critical_batch_with_kv"])],
            ["latency floor (its batch-1 step)", seconds(d["latency_floor_s"])],
        ] + _realistic_rows(d.get("realistic"))
        table(f"{d['model']} on {d['gpus']} x {sysrec.accelerator.id}, {req.phase}, B={req.batch}, "
              f"context={req.context}", ["quantity", "value"], rows)


def _realistic_rows(real) -> list:
    if not real:
        return []
    return [[f"efficiency model ({real['family']}, {real['layout']}): step", seconds(real["step_s"])],
            ["  interval over the factors' spread", f"{seconds(real['low_s'])} .. {seconds(real['high_s'])}"],
            ["  compute / memory / comm / overhead", " / ".join(seconds(real[k]) for k in
                                                                 ("compute_s", "memory_s", "comm_s", "overhead_s"))],
            ["  kernels: GEMMs + attention + elementwise",
             " + ".join(seconds(real[k]) for k in ("gemm_s", "attention_s", "elementwise_s"))],
            ["  tokens/s (replica)", fmt(real["tokens_per_s"])]] + _kernel_rows(real.get("kernels") or {})


def _kernel_rows(k: dict) -> list:
    if k.get("mode") != "tables":
        return []
    terms = k["terms"]
    used = [n + (" (extrapolated)" if v["extrapolated"] else "") for n, v in terms.items() if v["from_tables"]]
    return [[f"  measured kernels ({k['engine']}, {k['package']})", ", ".join(used) or "none covered"],
            ["  factor model for", ", ".join(k["factor_terms"])]]


def _parallel_table(d: dict, req) -> None:
    """`roofline step --tp/--ep/--pp/--dp/--domains` as a table: one replica's decode loop or prefill pass
    with TP all-reduces, EP dispatch/combine, CP all-gathers and PP sends on their tiers (the engine)."""
    if not bool(d["fits"]):
        from ..errors import DoesNotFitError

        raise DoesNotFitError(
            f"{d['model']} needs {d['memory_per_gpu_bytes'] / 1e9:,.1f} GB per GPU under {d['layout']} "
            f"(weights {d['weights_per_gpu_bytes'] / 1e9:,.1f}, KV {d['kv_per_gpu_bytes'] / 1e9:,.1f} GB); "
            f"raise TP/EP/PP, lower the batch or context, or use fp8 weights/KV")
    rows = [[k.replace("_s", "").replace("_", " "), seconds(float(d[k]))] for k in
            ("compute_s", "weight_read_s", "kv_read_s", "kv_write_s", "tp_comm_s", "ep_comm_s", "cp_comm_s",
             "pp_comm_s", "step_s", "step_upper_s")]
    spec = d.get("speculation")
    if spec:
        rows += [[f"speculation: {spec['gamma']} draft token(s), acceptance {spec['alpha']:g}",
                  f"{spec['tokens_per_step']:.3g} tokens per step, {spec['speed_up']:.3g}x plain decode"]]
    rows += [["bound", str(d["bound"])], ["tokens/s (replica)", fmt(d["tokens_per_s"])],
             ["tokens/s per GPU", fmt(d["tokens_per_s_per_gpu"])],
             ["tokens/s per sequence", fmt(d["tokens_per_s_per_sequence"])],
             ["$ per million tokens", fmt(d["usd_per_million_tokens"])],
             ["memory per GPU", f"{si_bytes(d['memory_per_gpu_bytes'])} (weights {si_bytes(d['weights_per_gpu_bytes'])}, "
                                f"KV {si_bytes(d['kv_per_gpu_bytes'])}, activations {si_bytes(d['activations_per_gpu_bytes'])})"],
             ["GPUs / domains", f"{int(d['gpus'])} / {d['domains']:.3g}"]] + _realistic_rows(d.get("realistic"))
    table(f"{d['model']} on {d['system']}, {d['layout']}, {req.phase}, B={req.batch}, "
          f"context={req.context}", ["quantity", "value"], rows)
