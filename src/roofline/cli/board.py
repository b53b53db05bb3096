"""`roofline board`: the lecture's formulas from the board's own inputs, or the board next to the engine."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .common import JsonOpt, KvDtypeOpt, WeightsDtypeOpt
from .render import fmt, print_json, seconds, si_bytes, table

F = Optional[float]


def register(app: typer.Typer) -> None:
    @app.command("board")
    def board_cmd(
        ratio: Annotated[F, typer.Option("--ratio", "-R", help="Hardware ratio R = F/BW (lecture units, ~300). Default 300 unless --flops is given.")] = None,
        flops: Annotated[F, typer.Option("--flops", help="Dense FLOP/s per GPU (2 FLOPs per multiply-add), instead of --ratio.")] = None,
        bandwidth: Annotated[float, typer.Option("--bandwidth", help="HBM bandwidth per GPU, bytes/s.")] = 8e12,
        gpus: Annotated[int, typer.Option("--gpus", "-g", help="GPUs in the scale-up domain (all read weights in parallel).")] = 72,
        bytes_per_weight: Annotated[float, typer.Option("--bytes-per-weight", help="b_w: 0.5 fp4, 1 fp8 (the lecture's), 2 bf16.")] = 1.0,
        params_total: Annotated[float, typer.Option("--params-total", help="N_total, parameters.")] = 1e12,
        params_active: Annotated[F, typer.Option("--params-active", help="N_active, parameters (default 1e11 unless --sparsity).")] = None,
        sparsity: Annotated[F, typer.Option("--sparsity", help="s = N_total/N_active, instead of --params-active.")] = None,
        kv_bytes: Annotated[F, typer.Option("--kv-bytes", help="KV bytes per token of context, all layers (default 2048, or from --kv-layers/--head-dim/--kv-heads/--kv-element-bytes).")] = None,
        kv_layers: Annotated[Optional[int], typer.Option("--kv-layers", help="Unique KV layers stored (1 = one shared global KV), for kv from the architecture.")] = None,
        head_dim: Annotated[Optional[int], typer.Option("--head-dim", help="Head dimension, for kv from the architecture.")] = None,
        kv_heads: Annotated[Optional[int], typer.Option("--kv-heads", help="KV heads, for kv from the architecture.")] = None,
        kv_element_bytes: Annotated[float, typer.Option("--kv-element-bytes", help="Bytes per KV element (1 fp8, 2 bf16), for kv from the architecture.")] = 1.0,
        traffic: Annotated[F, typer.Option("--traffic", help="Global traffic, tokens/s: how many such systems it needs.")] = None,
        output_over_input: Annotated[F, typer.Option("--output-over-input", help="API output/input price ratio p: decode MFU 1/p and the batch where memory/compute = p.")] = None,
        context: Annotated[float, typer.Option("--context", "-c", help="Tokens of context attended per sequence.")] = 1e5,
        batch: Annotated[float, typer.Option("--batch", "-b", help="Sequences in the pass (B; the micro-batch b with --stages).")] = 2000.0,
        len_pass: Annotated[int, typer.Option("--len-pass", help="Tokens per sequence in the pass: 1 decode, >1 prefill.")] = 1,
        usd_per_gpu_hour: Annotated[float, typer.Option("--usd-per-gpu-hour", help="GPU rental, USD per GPU-hour.")] = 2.0,
        capacity: Annotated[F, typer.Option("--capacity", help="HBM bytes per GPU, for the drain time C/BW.")] = None,
        step_s: Annotated[F, typer.Option("--step-s", help="Use this step time (s) for throughput, cost and latency instead of the roofline's (the lecture's 20 ms train).")] = None,
        stages: Annotated[int, typer.Option("--stages", help="Pipeline stages P (P micro-batches of --batch in flight).")] = 1,
        ep: Annotated[Optional[int], typer.Option("--ep", help="Expert-parallel GPUs E for memory per GPU (default --gpus).")] = None,
        hop_s: Annotated[float, typer.Option("--hop-s", help="Time of one stage-boundary hop, s (the lecture guesses 2.5e-3; the catalog's link latency is ~1e-5).")] = 0.0,
        fast_batch: Annotated[F, typer.Option("--fast-batch", help="Fast-mode batch, priced against --batch.")] = None,
        sparse_c: Annotated[F, typer.Option("--sparse-c", help="Sparse attention: KV read grows as c·sqrt(context) instead of context.")] = None,
        model: Annotated[Optional[str], typer.Option("--model", "-m", help="With --system: the board next to the engine for this catalog model.")] = None,
        system: Annotated[Optional[str], typer.Option("--system", "-s", help="With --model: the scale-up domain.")] = None,
        weights_dtype: WeightsDtypeOpt = "fp8",
        kv_dtype: KvDtypeOpt = "fp8",
        plot: Annotated[Optional[str], typer.Option("--plot", help="Write the two boards (latency and cost vs batch, SI units) to this PNG/SVG file.")] = None,
        json: JsonOpt = False,
    ) -> None:
        """The lecture's board: step times, critical batch, latency floor, cost, the batch-1 penalty, balanced
        context and memory per GPU from the board's own inputs (no catalog). With -m and -s: the board next to
        roofline.step, each difference with its reason."""
        from ..requests.base import validated
        from ..requests.board import BoardRequest, board_of

        req = validated(BoardRequest, "cli", ratio=ratio, flops=flops, bandwidth=bandwidth, gpus=gpus,
                        bytes_per_weight=bytes_per_weight, params_total=params_total, params_active=params_active,
                        sparsity=sparsity, kv_bytes=kv_bytes, kv_layers=kv_layers, head_dim=head_dim,
                        kv_heads=kv_heads, kv_element_bytes=kv_element_bytes, context=context, batch=batch,
                        len_pass=len_pass, usd_per_gpu_hour=usd_per_gpu_hour, capacity=capacity, step_s=step_s,
                        stages=stages, ep=ep, hop_s=hop_s, fast_batch=fast_batch, sparse_c=sparse_c, traffic=traffic,
                        output_over_input=output_over_input, model=model, system=system,
                        weights_dtype=weights_dtype, kv_dtype=kv_dtype, plot=plot)
        if model:
            return _compare(req, json)
        b = board_of(req)
        if plot:
            from ..plots.roofline import lecture_boards

            lecture_boards(plot, w_total=b.w_total_bytes, w_active=b.w_active_bytes, F=b.compute_bytes_per_s,
                           BW=b.bandwidth_bytes_per_s, kv=b.kv_bytes_per_token, context=b.context,
                           usd_per_s=b.gpus * b.usd_per_gpu_hour / 3600.0, batch=b.batch, sparse_c=sparse_c)
        if json:
            d = b.to_dict()
            if plot:
                d["plot"] = plot
            return print_json(d)
        given = " (given)" if step_s is not None else ""
        rows = [
            ["R = F/BW", fmt(b.ratio), "hardware ratio (lecture units)"],
            ["s = N_total/N_active", fmt(b.sparsity), ""],
            ["t_compute", seconds(b.t_compute_s), "B·len·W_active/F"],
            ["t_weights", seconds(b.t_weights_s), "W_total/BW"],
            ["t_kv", seconds(b.t_kv_s), "B·ctx·kv/BW" if sparse_c is None else "B·c·sqrt(ctx)·kv/BW"],
            ["step" + given, seconds(b.step_s), f"roofline max(t_c, t_w + t_kv) = {seconds(b.roofline_step_s)}, {b.bound}-bound"],
            ["MFU", f"{b.mfu:.1%}", "t_compute/step"],
            ["critical batch B*", fmt(b.critical_batch), "R·s"],
            ["critical batch with KV", fmt(b.critical_batch_with_kv), "R·s/(1 − ctx/ctx*); inf = memory-bound at every B"],
            ["balanced context ctx*", fmt(b.balanced_context), "W_active/(R·kv)"],
            ["MFU, weights amortised", f"{b.mfu_weights_amortised:.1%}", "min(1, ctx*/ctx)"],
            ["latency floor", seconds(b.latency_floor_s), "W_total/BW"],
            ["batch-1 cost penalty", f"{b.batch1_cost_ratio:,.0f}x", "cost/token at B=1 over B→∞, KV ignored (= R·s)"],
            ["tokens/s", fmt(b.tokens_per_s), "B·len/step"],
            ["tokens/s per sequence", fmt(b.tokens_per_s_per_sequence), "len/step"],
            ["worst-case latency", seconds(b.worst_case_latency_s), "2·step (train departures)"],
            ["$ per million tokens", fmt(b.usd_per_million_tokens), "(step/(B·len))·n·$/GPU-s"],
            ["cost floor $/Mtok", fmt(b.cost_floor_usd_per_token * 1e6), "B→∞: max(W_active/F, ctx·kv/BW)·$"],
            ["capacity needed", si_bytes(b.capacity_needed_bytes), "W_total + B·ctx·kv"],
            ["memory per GPU", si_bytes(b.memory_per_gpu_bytes),
             f"weights {si_bytes(b.weights_per_gpu_bytes)} = W/(E·P) + KV {si_bytes(b.kv_per_gpu_bytes)} = b·ctx·kv/E"],
        ]
        if b.drain_time_s is not None:
            rows.append(["HBM drain time", seconds(b.drain_time_s), "C/BW per GPU"])
        if stages > 1 or hop_s:
            rows.append(["token latency with hops", seconds(b.token_latency_s), f"step + P·t_hop, P = {stages}"])
        if b.systems_for_traffic is not None:
            rows.append(["systems for the traffic", fmt(b.systems_for_traffic), "global tokens/s over tokens/s"])
        if b.output_over_input is not None:
            rows.append(["decode MFU from prices", f"{b.decode_mfu_from_price:.3g}", "1/p (p = output/input price)"])
            rows.append(["batch where memory/compute = p", fmt(b.batch_for_price_ratio), "B*/(p − ctx/ctx*)"])
        if b.fast_speedup is not None:
            rows.append(["fast mode", f"{b.fast_speedup:.3g}x speed, {b.fast_price_ratio:.3g}x price",
                         f"B = {fmt(b.batch)} → {fmt(b.fast_batch)}"])
        table(f"The lecture's board: N_total {b.params_total:.3g}, N_active {b.params_active:.3g}, "
              f"{b.gpus} GPUs, B = {fmt(b.batch)}, ctx = {fmt(b.context)}", ["quantity", "value", "formula"], rows)
        if plot:
            print(f"wrote {plot}")


def _compare(req, json) -> None:
    from ..requests.board import run_board

    r = run_board(req)
    m, sysrec, batch, context = req._model, req._system, req.batch, req.context
    weights_dtype, kv_dtype, plot = req.weights_dtype, req.kv_dtype, req.plot
    if plot:
        from ..plots.roofline import board_vs_engine

        board_vs_engine(m, sysrec, context=context, weights_dtype=weights_dtype, kv_dtype=kv_dtype, path=plot)
        r["plot"] = plot
    if json:
        return print_json(r)
    table(f"Board → engine, one switch at a time: {m.id} on {r['chips']} x {sysrec.accelerator.id}, "
          f"B = {fmt(batch)}, ctx = {fmt(context)}, {weights_dtype} weights, {kv_dtype} KV",
          ["step", "compute", "weight read", "KV read", "KV write", "step", "bound", "$/Mtok", "what changes"],
          [[w["step"], seconds(w["compute_s"]), seconds(w["weight_read_s"]), seconds(w["kv_read_s"]),
            seconds(w["kv_write_s"]) if w["kv_write_s"] else "0", seconds(w["step_s"]), w["bound"],
            w["usd_per_million_tokens"], w["reason"]] for w in r["walk"]])
    table("Board vs engine", ["quantity", "board", "engine", "engine/board", "why"],
          [[d["quantity"], d["board"], d["engine"], "-" if d["ratio"] is None else f"{d['ratio']:.3g}", d["reason"]]
           for d in r["differences"]],
          caption=(f"decode attention: {r['attention_flops_per_kv_byte']:,.0f} FLOP per KV byte against a ridge of "
                   f"{r['ridge_flops_per_byte']:,.0f} FLOP/B ("
                   + ("compute-bound: the lecture's 'attention is memory-bound' fails here"
                      if r["attention_flops_per_kv_byte"] > r["ridge_flops_per_byte"] else "memory-bound, as the lecture says")
                   + ")"))
    if plot:
        print(f"wrote {plot}")
