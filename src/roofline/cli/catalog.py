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
        from ..requests.catalog import CatalogRequest, run_catalog

        rows = run_catalog(CatalogRequest.of(style="cli", section="accelerators"))
        if json:
            return print_json(rows)
        accs = list(get_catalog().accelerators.values())
        table("Accelerators (dense peak; R = (FLOPS/2)·bytes/BW, lecture §0.3)",
              ["id", "bf16 TF", "fp8 TF", "fp4 TF", "HBM GB", "TB/s", "R bf16", "drain ms", "$/h"],
              [[a.id + (" *" if a.preliminary else ""), a.flops_per_s.get("bf16", 0) / 1e12,
                a.flops_per_s.get("fp8", 0) / 1e12 or "-", a.flops_per_s.get("fp4", 0) / 1e12 or "-",
                a.hbm_bytes / 1e9, a.hbm_bytes_per_s / 1e12, r["ratio_bf16"], a.drain_time_s() * 1e3,
                a.usd_per_hour] for a, r in zip(accs, rows)],
              caption="* preliminary (announced figures)")

    @cat_app.command("systems")
    def systems(json: JsonOpt = False) -> None:
        """Scale-up domains: chips per domain, links per chip, latencies, HBM per domain."""
        from ..catalog import get_catalog
        from ..requests.catalog import CatalogRequest, run_catalog

        if json:
            return print_json(run_catalog(CatalogRequest.of(style="cli", section="systems")))
        syss = list(get_catalog().systems.values())
        table("Systems (scale-up domains; bandwidths per chip per direction)",
              ["id", "accelerator", "chips", "up GB/s", "out GB/s", "up/out", "HBM TB", "TB/s"],
              [[s.id + (" *" if s.preliminary else ""), s.accelerator.id, s.chips, s.scale_up_bytes_per_s / 1e9,
                s.scale_out_bytes_per_s / 1e9, s.scale_up_over_out, s.hbm_bytes / 1e12, s.hbm_bytes_per_s / 1e12]
               for s in syss], caption="* preliminary (announced figures)")

    @cat_app.command("models")
    def models(json: JsonOpt = False) -> None:
        """Models: total/active parameters, KV bytes per token (bf16), attention type, context."""
        from ..requests.catalog import CatalogRequest, run_catalog

        rows = run_catalog(CatalogRequest.of(style="cli", section="models"))
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
        from ..requests.catalog import CatalogRequest, run_catalog

        data = run_catalog(CatalogRequest.of(style="cli", section="efficiency", family=family))
        if json:
            return print_json(data)
        for name, rows in data.items():
            table(f"Efficiency factors: {name} (catalog/data/efficiency.yaml; fractions of datasheet peaks, seconds)",
                  ["factor", "value", "low", "high", "source"],
                  [[r["factor"], f"{r['value']:.3g}", f"{r['low']:.3g}", f"{r['high']:.3g}", r["source"]] for r in rows])
