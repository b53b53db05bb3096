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
              tier: TierIdsOpt = None, plot: PlotOpt = None, json: JsonOpt = False) -> None:
        """Run every inference each price list supports: KV bytes or active params from a context tier,
        decode memory-boundness from output/input, batch ratio from a fast mode, hold prices and tiers
        from cache prices, what the hit discount affords. Each row states its assumptions and range."""
        from .. import pricing
        from ..catalog import get_catalog
        from ..tiers import remat_cost_on

        rows = _select_prices(ids)
        accs = _select_accelerators(accelerator)
        tiers = _select_tiers(tier)
        remat = remat_cost_on(get_catalog().accelerator(remat_accelerator), active_params=remat_active_params)
        ap = tuple(active_params) if active_params else pricing.ACTIVE_PARAMS_RANGE
        results = {p.id: pricing.infer_all(p, accs, tiers, kv_bytes=kv_bytes, remat_usd=remat, active_params=ap)
                   for p in rows}
        if plot:
            from ..plots.pricing import plot_cost_vs_context

            tiered = [p for p in rows if p.context_tiers] or rows
            plot_cost_vs_context(plot, tiered[0], get_catalog().accelerator(remat_accelerator),
                                 active_params=remat_active_params, kv_bytes=None)
        if json:
            return print_json({"remat_usd_per_token": remat, "kv_bytes_per_token": kv_bytes,
                               "accelerators": [a.id for a in accs], "tiers": [t.id for t in tiers],
                               "inferences": {k: [i.to_dict() for i in v] for k, v in results.items()},
                               **({"plot": plot} if plot else {})})
        for pid, infs in results.items():
            table(f"{pid}: what the prices imply", ["quantity", "value", "range", "unit", "formula", "assumptions"],
                  [[i.quantity, i.value, f"{fmt(i.low)} - {fmt(i.high)}" if i.low != i.high else "-", i.unit, i.formula,
                    "; ".join(f"{k}: {fmt(v) if not isinstance(v, str) else v}" for k, v in i.assumptions.items())]
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

        if top < 1:
            raise InputError(f"--top must be >= 1, got {top}")
        rows = architecture_layouts(kv_bytes, top=top)
        if json:
            return print_json({"kv_bytes_target": kv_bytes, "layouts": rows})
        table(f"KV layouts nearest {fmt(kv_bytes)} B/token (kv = layers x 2 x head_dim x kv_heads x bytes)",
              ["layout", "kind", "B/token", "ratio to target"],
              [[r["layout"], r["kind"], r["kv_bytes"], r["ratio"]] for r in rows])

    @app.command("tiers")
    def tiers_cmd(kv_bytes: KvOpt = 2048.0,
                  model: Annotated[Optional[str], typer.Option("--model", "-m", help="Take KV bytes/token (with --kv-dtype) and active params from this model instead of --kv-bytes/--remat-active-params.")] = None,
                  kv_dtype: Annotated[str, typer.Option("--kv-dtype", help="KV-cache format with --model.")] = "bf16",
                  hold: Annotated[Optional[list[float]], typer.Option("--hold", help="Hold time(s) in seconds to price (repeatable; default 0.02, 300, 3600).")] = None,
                  tier: TierIdsOpt = None, remat_accelerator: RematAccOpt = "h100-sxm",
                  remat_active_params: RematParamsOpt = 1e11,
                  usd_per_gpu_hour: Annotated[Optional[float], typer.Option("--usd-per-gpu-hour", help="GPU rental for remat (default: the catalog's).")] = None,
                  plot: PlotOpt = None, json: JsonOpt = False) -> None:
        """Memory tiers vs rematerialisation for one cached token: retrieve and hold costs, the cheapest
        option for each hold time, break-even hold times and the drain-time rule (lecture §5.4)."""
        import numpy as np

        from .. import model as M
        from .. import tiers as T
        from ..catalog import get_catalog
        from ..catalog import model as load_model
        from ..errors import InputError

        tl = _select_tiers(tier)
        holds = np.array(hold if hold else [0.02, 300.0, 3600.0], dtype=float)
        if np.any(~np.isfinite(holds) | (holds <= 0)):
            raise InputError(f"--hold must be > 0 seconds, got {holds[~np.isfinite(holds) | (holds <= 0)][0]:g}")
        mrec = load_model(model) if model else None
        kv = M.kv_bytes_per_token(mrec, kv_dtype) if mrec else kv_bytes
        if mrec:  # the model's own active parameters set its remat cost
            remat_active_params = M.params_active(mrec)
        acc = get_catalog().accelerator(remat_accelerator)
        remat = T.remat_cost_on(acc, active_params=remat_active_params, usd_per_gpu_hour=usd_per_gpu_hour)
        opts = T.options(kv, tl, remat)
        bands = T.bands(opts)
        costs = opts.cost(holds)
        best = T.cheapest(opts, holds)
        rule = T.tier_for_hold(holds, tl)
        hbm = [t for t in tl if t.medium == "hbm"]
        t_be = (float(T.break_even_s(0.0, T.hold_cost_usd_per_s(kv, hbm[0]), remat, 0.0)) if hbm else None)
        if plot:
            from ..plots.pricing import plot_cached_token_cost
            from ..catalog.prices import price_lists

            plot_cached_token_cost(plot, opts, list(price_lists().values()))
        if json:
            return print_json({
                "kv_bytes_per_token": kv, "remat_usd_per_token": remat,
                "tiers": [{"id": t.id, "medium": t.medium, "capacity_bytes": t.capacity_bytes,
                           "bytes_per_s": t.bytes_per_s, "drain_time_s": t.drain_time_s,
                           "usd_per_gb_month": t.usd_per_gb_month, "retrieve_usd_per_token": float(opts.retrieve_usd[i]),
                           "hold_usd_per_token_s": float(opts.hold_usd_per_s[i]), "source": t.source,
                           "cost_source": t.cost_source} for i, t in enumerate(tl)],
                "bands": [{"option": n, "from_s": a, "to_s": b} for n, a, b in bands],
                "holds": [{"hold_s": float(h), "tier": tl[int(r)].id, "tier_drain_time_s": tl[int(r)].drain_time_s,
                           "cheapest": opts.names[int(b)], "cost_usd_per_token": float(costs[int(b), k])}
                          for k, (h, b, r) in enumerate(zip(holds, best, rule))],
                "break_even_hbm_vs_remat_s": t_be, **({"plot": plot} if plot else {})})
        m = 1e6
        table(f"Memory tiers for one token of {si_bytes(kv)} KV (costs in $ per million tokens)",
              ["id", "medium", "capacity", "GB/s", "drain", "$/GB-month", "retrieve $/MTok", "hold $/MTok/hour"],
              [[t.id, t.medium, si_bytes(t.capacity_bytes), t.bytes_per_s / 1e9, seconds(t.drain_time_s),
                t.usd_per_gb_month, opts.retrieve_usd[i] * m, opts.hold_usd_per_s[i] * m * 3600] for i, t in enumerate(tl)],
              caption=f"remat (prefill on {acc.id}, {remat_active_params:.3g} active params, fp8): ${remat * m:.4g}/MTok, no hold cost")
        table("Cheapest option by hold time (lower envelope of retrieve + T x hold)", ["option", "from", "to"],
              [[n, seconds(a) if a else "0", seconds(b) if np.isfinite(b) else "inf"] for n, a, b in bands])
        table("Priced hold times", ["hold", "tier", "its drain time", "cheapest incl. remat", "$/MTok"],
              [[seconds(float(h)), tl[int(r)].id, seconds(tl[int(r)].drain_time_s), opts.names[int(b)],
                costs[int(b), k] * m] for k, (h, b, r) in enumerate(zip(holds, best, rule))],
              caption="tier = argmin over tiers of $/byte-s x (hold + drain time), the exact drain-time rule "
                      "(roofline.tiers.tier_for_hold); remat wins only when a token's KV costs more to keep than to rebuild")
        if t_be is not None:
            print(f"HBM ({hbm[0].id}) vs remat break-even hold: {seconds(t_be)}")
        if plot:
            print(f"wrote {plot}")
