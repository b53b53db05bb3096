"""`roofline catalog {accelerators,systems,models,efficiency}`: what the catalogs hold."""

from __future__ import annotations

import typer

from .common import JsonOpt
from .render import print_json, table


def register(app: typer.Typer) -> None:
    cat_app = typer.Typer(help="List the catalogs: accelerators, systems, models, efficiency factors.",
                          no_args_is_help=True)
    app.add_typer(cat_app, name="catalog")

    @cat_app.command("accelerators")
    def accelerators(json: JsonOpt = False) -> None:
        """Accelerators: dense peak FLOP/s per dtype, HBM, links, price, R and drain time."""
        from ..catalog import get_catalog

        accs = list(get_catalog().accelerators.values())
        rows = []
        for a in accs:
            r = {"id": a.id, "name": a.name, "flops_per_s": a.flops_per_s, "hbm_bytes": a.hbm_bytes,
                 "hbm_bytes_per_s": a.hbm_bytes_per_s, "scale_up_bytes_per_s": a.scale_up_bytes_per_s,
                 "scale_out_bytes_per_s": a.scale_out_bytes_per_s, "tdp_w": a.tdp_w,
                 "usd_per_hour": a.usd_per_hour, "drain_time_s": a.drain_time_s(),
                 "ratio_bf16": a.ratio("bf16"), "preliminary": a.preliminary, "source": a.source, "date": a.date}
            rows.append(r)
        if json:
            return print_json(rows)
        table("Accelerators (dense peak; R = (FLOPS/2)·bytes/BW, lecture §0.3)",
              ["id", "bf16 TF", "fp8 TF", "fp4 TF", "HBM GB", "TB/s", "R bf16", "drain ms", "$/h"],
              [[a.id + (" *" if a.preliminary else ""), a.flops_per_s.get("bf16", 0) / 1e12,
                a.flops_per_s.get("fp8", 0) / 1e12 or "-", a.flops_per_s.get("fp4", 0) / 1e12 or "-",
                a.hbm_bytes / 1e9, a.hbm_bytes_per_s / 1e12, a.ratio("bf16"), a.drain_time_s() * 1e3,
                a.usd_per_hour] for a in accs],
              caption="* preliminary (announced figures)")

    @cat_app.command("systems")
    def systems(json: JsonOpt = False) -> None:
        """Scale-up domains: chips per domain, links per chip, latencies, HBM per domain."""
        from ..catalog import get_catalog

        syss = list(get_catalog().systems.values())
        if json:
            return print_json([{
                "id": s.id, "name": s.name, "accelerator": s.accelerator.id, "chips": s.chips,
                "scale_up_bytes_per_s": s.scale_up_bytes_per_s, "scale_out_bytes_per_s": s.scale_out_bytes_per_s,
                "scale_up_latency_s": s.scale_up_latency_s, "scale_out_latency_s": s.scale_out_latency_s,
                "hbm_bytes": s.hbm_bytes, "hbm_bytes_per_s": s.hbm_bytes_per_s, "preliminary": s.preliminary,
                "source": s.source, "date": s.date} for s in syss])
        table("Systems (scale-up domains; bandwidths per chip per direction)",
              ["id", "accelerator", "chips", "up GB/s", "out GB/s", "up/out", "HBM TB", "TB/s"],
              [[s.id + (" *" if s.preliminary else ""), s.accelerator.id, s.chips, s.scale_up_bytes_per_s / 1e9,
                s.scale_out_bytes_per_s / 1e9, s.scale_up_over_out, s.hbm_bytes / 1e12, s.hbm_bytes_per_s / 1e12]
               for s in syss], caption="* preliminary (announced figures)")

    @cat_app.command("models")
    def models(json: JsonOpt = False) -> None:
        """Models: total/active parameters, KV bytes per token (bf16), attention type, context."""
        from .. import model as M
        from ..catalog import get_catalog

        ms = list(get_catalog().models.values())
        rows = [{"id": m.id, "name": m.name, "params_total": M.params_total(m), "params_active": M.params_active(m),
                 "kv_bytes_per_token_bf16": M.kv_bytes_per_token(m, "bf16"), "layers": m.layers,
                 "attention": _attn(m), "experts": m.moe.experts if m.moe else 0,
                 "active_experts": m.moe.active if m.moe else 0, "max_context": m.max_context,
                 "source": m.source, "date": m.date} for m in ms]
        if json:
            return print_json(rows)
        table("Models (parameters computed from the architecture)",
              ["id", "total B", "active B", "KV B/token bf16", "attention", "experts", "max ctx"],
              [[r["id"], r["params_total"] / 1e9, r["params_active"] / 1e9, r["kv_bytes_per_token_bf16"],
                r["attention"], f"{r['active_experts']}/{r['experts']}" if r["experts"] else "dense",
                r["max_context"]] for r in rows])

    @cat_app.command("efficiency")
    def efficiency(
        family: str = typer.Option(None, "--family", help="Only this family (nvidia, amd, google)."),
        json: JsonOpt = False,
    ) -> None:
        """Efficiency factors of the `--realistic` model per accelerator family: value, spread, source."""
        from ..efficiency import factor_table, families
        from ..errors import UnknownEntryError

        known = {k: v for k, v in families().items() if k != "generic"}
        fams = known if family is None else {family: known.get(family)}
        if family is not None and fams[family] is None:
            raise UnknownEntryError("efficiency family", family, list(known), listing="roofline catalog efficiency")
        data = {name: [{"factor": n, "value": v, "low": lo, "high": hi, "source": src}
                       for n, v, lo, hi, src in factor_table(f)] for name, f in fams.items()}
        if json:
            return print_json(data)
        for name, rows in data.items():
            table(f"Efficiency factors: {name} (catalog/data/efficiency.yaml; fractions of datasheet peaks, seconds)",
                  ["factor", "value", "low", "high", "source"],
                  [[r["factor"], f"{r['value']:.3g}", f"{r['low']:.3g}", f"{r['high']:.3g}", r["source"]] for r in rows])


def _attn(m) -> str:
    if m.mla:
        kind = "MLA"
    elif m.kv_heads == m.heads:
        kind = "MHA"
    elif m.kv_heads == 1:
        kind = "MQA"
    else:
        kind = f"GQA {m.heads}/{m.kv_heads}"
    if m.local_layers:
        kind += f" +{m.local_layers} SWA({m.sliding_window})"
    if m.kv_layers:
        kind += f" shared KV x{m.kv_layers}"
    return kind
