"""`roofline prices show|infer|layouts` and `roofline tiers`: what API prices reveal (lecture §5, §1.8)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .common import JsonOpt
from .render import fmt, print_json, seconds, si_bytes, table

AccsOpt = Annotated[Optional[list[str]], typer.Option("--accelerator", "-a", help="Accelerator(s) whose R = F/BW bound the inference (repeatable; default: every catalog accelerator).")]
ActiveOpt = Annotated[Optional[list[float]], typer.Option("--active-params", help="Active parameter count(s) to consider (repeatable; default 3e10, 1e11, 3e11).")]
KvOpt = Annotated[float, typer.Option("--kv-bytes", help="KV bytes per token of the served model (default: the lecture's 2,048).")]
RematAccOpt = Annotated[str, typer.Option("--remat-accelerator", help="Accelerator that rematerialises (prefills) a missed token; its fp8 FLOP/s and rental price set the remat cost.")]
RematParamsOpt = Annotated[float, typer.Option("--remat-active-params", help="Active parameters of the served model for the remat cost (lecture: 1e11).")]
TierIdsOpt = Annotated[Optional[list[str]], typer.Option("--tier", help="Memory tier id(s) to consider (repeatable; default: every catalog tier).")]
PlotOpt = Annotated[Optional[str], typer.Option("--plot", help="Write the figure to this PNG/SVG file.")]


def _price_row_json(p) -> dict:
    m = 1e6
    return {
        "id": p.id, "name": p.name, "provider": p.provider, "model": p.model,
        "input_usd_per_token": p.input_usd_per_token, "output_usd_per_token": p.output_usd_per_token,
        "cache_hit_usd_per_token": p.cache_hit_usd_per_token,
        "cache_writes": [{"hold_s": w.hold_s, "usd_per_token": w.usd_per_token} for w in p.cache_writes],
        "cache_storage_usd_per_token_s": p.cache_storage_usd_per_token_s,
        "context_tiers": [{"above_tokens": t.above_tokens, "input_usd_per_token": t.input_usd_per_token,
                           "output_usd_per_token": t.output_usd_per_token,
                           "cache_hit_usd_per_token": t.cache_hit_usd_per_token} for t in p.context_tiers],
        "variants": [{"name": v.name, "input_usd_per_token": v.input_usd_per_token,
                      "output_usd_per_token": v.output_usd_per_token, "cache_hit_usd_per_token": v.cache_hit_usd_per_token,
                      "speedup": v.speedup, "notes": v.notes} for v in p.variants],
        "output_over_input": p.output_over_input, "source": p.source, "date": p.date,
        "usd_per_mtok_scale": m,
    }


def _select_prices(ids):
    from ..catalog.prices import price_list, price_lists

    return [price_list(i) for i in ids] if ids else list(price_lists().values())


def _select_accelerators(ids):
    from ..catalog import get_catalog

    cat = get_catalog()
    return [cat.accelerator(i) for i in ids] if ids else list(cat.accelerators.values())


def _select_tiers(ids):
    from ..catalog.prices import memory_tier, memory_tiers

    return [memory_tier(i) for i in ids] if ids else list(memory_tiers().values())


def register(app: typer.Typer) -> None:
    prices_app = typer.Typer(help="API price lists and what they reveal (lecture §5).", no_args_is_help=True)
    app.add_typer(prices_app, name="prices")

    @prices_app.command("show")
    def show(ids: Annotated[Optional[list[str]], typer.Argument(help="Price list id(s); default: all.")] = None,
             json: JsonOpt = False) -> None:
        """Price lists ($ per million tokens): input, output, cache hit/writes, context tiers, variants; GPU rentals."""
        from ..catalog.prices import gpu_rentals

        rows = _select_prices(ids)
        rentals = list(gpu_rentals().values()) if not ids else []
        if json:
            return print_json({"price_lists": [_price_row_json(p) for p in rows],
                               "gpu_rentals": [r.__dict__ for r in rentals]})
        m = 1e6
        table("API prices, USD per million tokens", ["id", "input", "output", "out/in", "cache hit", "cache writes",
                                                     "context tiers", "variants", "date"],
              [[p.id, p.input_usd_per_token * m, p.output_usd_per_token * m, p.output_over_input,
                "-" if p.cache_hit_usd_per_token is None else p.cache_hit_usd_per_token * m,
                ", ".join(f"{fmt(w.usd_per_token * m)} ({seconds(w.hold_s)})" for w in p.cache_writes)
                + (f"store {fmt(p.cache_storage_usd_per_token_s * m * 3600)}/h" if p.cache_storage_usd_per_token_s else "") or "-",
                ", ".join(f">{t.above_tokens / 1e3:g}K: {fmt(t.input_usd_per_token * m)}/{fmt(t.output_usd_per_token * m)}"
                          for t in p.context_tiers) or "-",
                ", ".join(f"{v.name} {fmt(v.input_usd_per_token * m)}/{fmt(v.output_usd_per_token * m)}"
                          + (f" {v.speedup:g}x speed" if v.speedup else "") for v in p.variants) or "-",
                p.date] for p in rows])
        if rentals:
            table("GPU rental prices", ["id", "accelerator", "$/GPU-hour", "provider", "date"],
                  [[r.id, r.accelerator, r.usd_per_gpu_hour, r.provider, r.date] for r in rentals])

    @prices_app.command("infer")
    def infer(ids: Annotated[Optional[list[str]], typer.Argument(help="Price list id(s); default: all.")] = None,
              accelerator: AccsOpt = None, active_params: ActiveOpt = None, kv_bytes: KvOpt = 2048.0,
              remat_accelerator: RematAccOpt = "h100-sxm", remat_active_params: RematParamsOpt = 1e11,
              tier: TierIdsOpt = None, plot: PlotOpt = None,
              sparse_attention: Annotated[Optional[str], typer.Option("--sparse-attention", help="The served model's sparse attention for the KV-from-tier inference: sqrt:C or topk:K.")] = None,
              json: JsonOpt = False) -> None:
        """Run every inference each price list supports: KV bytes or active params from a context tier,
        decode memory-boundness from output/input, batch ratio from a fast mode, hold prices and tiers
        from cache prices, what the hit discount affords. Each row states its assumptions and range."""
        from ..requests.prices import PricesRequest, run_prices

        req = PricesRequest.of(style="cli", ids=ids, accelerator=accelerator, active_params=active_params,
                               kv_bytes=kv_bytes, remat_accelerator=remat_accelerator,
                               remat_active_params=remat_active_params, tier=tier, plot=plot,
                               sparse_attention=sparse_attention)
        d = run_prices(req)
        if plot:
            from ..plots.pricing import plot_cost_vs_context

            tiered = [p for p in req._prices if p.context_tiers] or req._prices
            plot_cost_vs_context(plot, tiered[0], req._remat_acc, active_params=req.remat_active_params,
                                 kv_bytes=None)
        if json:
            return print_json(d)
        remat = d["remat_usd_per_token"]
        results = d["inferences"]
        for pid, infs in results.items():
            table(f"{pid}: what the prices imply", ["quantity", "value", "range", "unit", "formula", "assumptions"],
                  [[i["quantity"], i["value"], f"{fmt(i['low'])} - {fmt(i['high'])}" if i["low"] != i["high"] else "-",
                    i["unit"], i["formula"],
                    "; ".join(f"{k}: {fmt(v) if not isinstance(v, str) else v}" for k, v in i["assumptions"].items())]
                   for i in infs])
        print(f"remat cost: ${remat * 1e6:.4g}/MTok ({remat_active_params:.3g} active params, fp8, {remat_accelerator}); "
              f"KV for cache inferences: {kv_bytes:g} B/token")
        if plot:
            print(f"wrote {plot}")

    @prices_app.command("layouts")
    def layouts(kv_bytes: Annotated[float, typer.Argument(help="Target KV bytes per token (e.g. 1666.67 from the Gemini tier).")],
                top: Annotated[int, typer.Option(help="How many layouts to list.")] = 10,
                json: JsonOpt = False) -> None:
        """KV layouts (layers, KV heads, head dim, dtype, shared layers, MLA) nearest a KV bytes/token."""
        from ..errors import InputError
        from ..pricing import architecture_layouts
        from ..requests.rules import number

        number("KV_BYTES", kv_bytes, gt=0, le=1e9, fix="target KV bytes per token, e.g. 1666.67")
        if top < 1:
            raise InputError(f"--top must be >= 1, got {top}")
        rows = architecture_layouts(kv_bytes, top=top)
        if json:
            return print_json({"kv_bytes_target": kv_bytes, "layouts": rows})
        table(f"KV layouts nearest {fmt(kv_bytes)} B/token (kv = layers x 2 x head_dim x kv_heads x bytes)",
              ["layout", "kind", "B/token", "ratio to target"],
              [[r["layout"], r["kind"], r["kv_bytes"], r["ratio"]] for r in rows])

    @app.command("tiers")
    def tiers_cmd(kv_bytes: Annotated[Optional[float], typer.Option("--kv-bytes", help="KV bytes per token of the served model (default: the lecture's 2,048; not with --model).")] = None,
                  model: Annotated[Optional[str], typer.Option("--model", "-m", help="Take KV bytes/token (with --kv-dtype) and active params from this model instead of --kv-bytes/--remat-active-params.")] = None,
                  kv_dtype: Annotated[str, typer.Option("--kv-dtype", help="KV-cache format with --model.")] = "bf16",
                  hold: Annotated[Optional[list[float]], typer.Option("--hold", help="Hold time(s) in seconds to price (repeatable; default 0.02, 300, 3600).")] = None,
                  tier: TierIdsOpt = None, remat_accelerator: RematAccOpt = "h100-sxm",
                  remat_active_params: Annotated[Optional[float], typer.Option("--remat-active-params", help="Active parameters of the served model for the remat cost (default 1e11; not with --model).")] = None,
                  usd_per_gpu_hour: Annotated[Optional[float], typer.Option("--usd-per-gpu-hour", help="GPU rental for remat (default: the catalog's).")] = None,
                  plot: PlotOpt = None, json: JsonOpt = False) -> None:
        """Memory tiers vs rematerialisation for one cached token: retrieve and hold costs, the cheapest
        option for each hold time, break-even hold times and the drain-time rule (lecture §5.4)."""
        from ..requests.prices import TiersRequest, run_tiers

        req = TiersRequest.of(style="cli", kv_bytes=kv_bytes, model=model, kv_dtype=kv_dtype, hold=hold, tier=tier,
                              remat_accelerator=remat_accelerator, remat_active_params=remat_active_params,
                              usd_per_gpu_hour=usd_per_gpu_hour, plot=plot)
        d = run_tiers(req)
        if plot:
            from ..catalog.prices import price_lists
            from ..plots.pricing import plot_cached_token_cost
            from ..requests.prices import tier_options

            plot_cached_token_cost(plot, tier_options(req)[0], list(price_lists().values()))
        if json:
            return print_json(d)
        kv, remat, acc = d["kv_bytes_per_token"], d["remat_usd_per_token"], req._acc
        m = 1e6
        table(f"Memory tiers for one token of {si_bytes(kv)} KV (costs in $ per million tokens)",
              ["id", "medium", "capacity", "GB/s", "drain", "$/GB-month", "retrieve $/MTok", "hold $/MTok/hour"],
              [[t["id"], t["medium"], si_bytes(t["capacity_bytes"]), t["bytes_per_s"] / 1e9, seconds(t["drain_time_s"]),
                t["usd_per_gb_month"], t["retrieve_usd_per_token"] * m, t["hold_usd_per_token_s"] * m * 3600]
               for t in d["tiers"]],
              caption=f"remat (prefill on {acc.id}, {d['remat_active_params']:.3g} active params, fp8): "
                      f"${remat * m:.4g}/MTok, no hold cost")
        table("Cheapest option by hold time (lower envelope of retrieve + T x hold)", ["option", "from", "to"],
              [[b["option"], seconds(b["from_s"]) if b["from_s"] else "0",
                seconds(b["to_s"]) if b["to_s"] is not None else "inf"] for b in d["bands"]])
        drain = {t["id"]: t["drain_time_s"] for t in d["tiers"]}
        table("Priced hold times", ["hold", "tier", "its drain time", "cheapest incl. remat", "$/MTok"],
              [[seconds(h["hold_s"]), h["tier"], seconds(drain[h["tier"]]), h["cheapest"], h["cost_usd_per_token"] * m]
               for h in d["holds"]],
              caption="tier = argmin over tiers of $/byte-s x (hold + drain time), the exact drain-time rule "
                      "(roofline.tiers.tier_for_hold); remat wins only when a token's KV costs more to keep than to rebuild")
        hbm = [t for t in d["tiers"] if t["medium"] == "hbm"]
        if d["break_even_hbm_vs_remat_s"] is not None:
            print(f"HBM ({hbm[0]['id']}) vs remat break-even hold: {seconds(d['break_even_hbm_vs_remat_s'])}")
        if plot:
            print(f"wrote {plot}")
