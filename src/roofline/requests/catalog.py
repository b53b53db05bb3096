"""`catalog`: what the catalogs hold (accelerators, systems, models, efficiency factors) — the request and
`run_catalog`, which returns the `roofline catalog SECTION --json` value (docs/catalogs.md)."""

from __future__ import annotations

from . import rules
from .base import Choice, OptText, Request

SECTIONS = ("accelerators", "systems", "models", "efficiency")


class CatalogRequest(Request):
    """One catalog section; `family` narrows the efficiency factors to one accelerator family."""

    section: Choice(*SECTIONS)
    family: OptText = None

    def check(self) -> None:
        if self.family is not None and self.section != "efficiency":
            raise rules.UsageError(f"{self.flag('family')} applies to the efficiency section only; drop it")


def attention_kind(m) -> str:
    """MHA / GQA N/K / MQA / MLA, with sliding-window and shared-KV layers noted."""
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


def run_catalog(req: CatalogRequest):
    """The section as the CLI's --json prints it: a list of rows, or {family: [factor rows]}."""
    from ..catalog import get_catalog

    cat = get_catalog()
    if req.section == "accelerators":
        return [{"id": a.id, "name": a.name, "flops_per_s": a.flops_per_s, "hbm_bytes": a.hbm_bytes,
                 "hbm_bytes_per_s": a.hbm_bytes_per_s, "scale_up_bytes_per_s": a.scale_up_bytes_per_s,
                 "scale_out_bytes_per_s": a.scale_out_bytes_per_s, "tdp_w": a.tdp_w,
                 "usd_per_hour": a.usd_per_hour, "drain_time_s": a.drain_time_s(),
                 "ratio_bf16": a.ratio("bf16") if "bf16" in a.flops_per_s else None,
                 "preliminary": a.preliminary, "source": a.source, "date": a.date}
                for a in cat.accelerators.values()]
    if req.section == "systems":
        return [{"id": s.id, "name": s.name, "accelerator": s.accelerator.id, "chips": s.chips,
                 "scale_up_bytes_per_s": s.scale_up_bytes_per_s, "scale_out_bytes_per_s": s.scale_out_bytes_per_s,
                 "scale_up_latency_s": s.scale_up_latency_s, "scale_out_latency_s": s.scale_out_latency_s,
                 "hbm_bytes": s.hbm_bytes, "hbm_bytes_per_s": s.hbm_bytes_per_s, "preliminary": s.preliminary,
                 "source": s.source, "date": s.date} for s in cat.systems.values()]
    if req.section == "models":
        from .. import model as M

        return [{"id": m.id, "name": m.name, "params_total": M.params_total(m), "params_active": M.params_active(m),
                 "kv_bytes_per_token_bf16": M.kv_bytes_per_token(m, "bf16"), "layers": m.layers,
                 "attention": attention_kind(m), "experts": m.moe.experts if m.moe else 0,
                 "active_experts": m.moe.active if m.moe else 0, "max_context": m.max_context,
                 "source": m.source, "date": m.date} for m in cat.models.values()]
    from ..efficiency import factor_table, families
    from ..errors import UnknownEntryError

    known = {k: v for k, v in families().items() if k != "generic"}
    if req.family is not None and req.family not in known:
        raise UnknownEntryError("efficiency family", req.family, list(known), listing="roofline catalog efficiency")
    fams = known if req.family is None else {req.family: known[req.family]}
    return {name: [{"factor": n, "value": v, "low": lo, "high": hi, "source": src}
                   for n, v, lo, hi, src in factor_table(f)] for name, f in fams.items()}
