"""`roofline catalog kernels`: which measured kernel tables roofline.kernels holds (systems, kinds, engines,
framework versions, dtypes, grid sizes) and where they come from. Registers on the `catalog` group."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .common import JsonOpt
from .render import print_json, table


def _catalog_group(app: typer.Typer) -> typer.Typer:
    for group in app.registered_groups:
        if group.name == "catalog" and group.typer_instance is not None:
            return group.typer_instance
    raise RuntimeError("the `catalog` command group must be registered before kernels_catalog")


def register(app: typer.Typer) -> None:
    cat_app = _catalog_group(app)

    @cat_app.command("kernels")
    def kernels(
        accelerator: Annotated[Optional[str], typer.Option("--accelerator", "-a", help="Only this accelerator id (e.g. h100-sxm).")] = None,
        kind: Annotated[Optional[str], typer.Option("--kind", help="Only this kernel kind: gemm, context_attention, generation_attention, mla_context, mla_generation, moe, nccl, custom_allreduce.")] = None,
        engine: Annotated[Optional[str], typer.Option("--engine", help="Only this engine: trtllm, sglang, vllm (nccl for NCCL tables).")] = None,
        json: JsonOpt = False,
    ) -> None:
        """Measured kernel tables: accelerators, kernel kinds, engines and versions, dtypes, rows."""
        from .. import kernels as K
        from ..errors import InputError

        rows = K.coverage()
        for name, value, field in (("--accelerator", accelerator, "accelerator"), ("--kind", kind, "kind"),
                                   ("--engine", engine, "engine")):
            if value is None:
                continue
            known = sorted({r[field] for r in rows})
            if value not in known:
                raise InputError(f"{name} {value!r} has no measured kernel tables; expected one of {', '.join(known)}")
            rows = [r for r in rows if r[field] == value]
        src = K.index()["source"]
        if json:
            return print_json({"source": src, "coverage": rows})
        table("Measured kernel tables (roofline.kernels; docs/kernels.md)",
              ["accelerator", "kind", "engine", "versions", "dtypes", "tables", "cells measured"],
              [[r["accelerator"], r["kind"], r["engine"], " ".join(r["framework_versions"]), " ".join(r["dtypes"]),
                r["tables"], r["cells_measured"]] for r in rows],
              caption=f"from {src['package']} {src['version']} ({src['license']}, NVIDIA AIConfigurator; "
                      f"roofline/kernels_data/NOTICE), derived by scripts/derive_kernel_tables.py")
