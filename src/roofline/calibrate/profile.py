"""Microbenchmarks -> an accelerator profile (catalog row) and calibrated efficiency factors.

The profile's peaks are the best MEASURED figures (not a datasheet): dense_tflops[dtype] = max matmul
FLOP/s over sizes, hbm_tb_per_s = max(copy, matrix-vector) streaming bandwidth. The efficiency factors
relative to those peaks come from the same microbenchmarks:

    η_gemm max = 1 (peak is the measured maximum); T_½ fitted to FLOP/s by rows (microbench.fit_half_rows)
    η_weights  = matrix-vector bandwidth / profile bandwidth
    η_kv       = decode-attention-shaped matmul bandwidth / profile bandwidth
    η_attn     = same kernel's FLOP/s / peak
    τ_layer    = op overhead × ops per layer of the decode model (decode.OPS_PER_LAYER)
    τ_pass     = op overhead × ops outside the layers (decode.OPS_PER_PASS)

No end-to-end decode timing enters any factor. Spreads are ±15% on bandwidths and GEMM (run-to-run
variation on shared CPUs) and 0.5–3× on overheads.
"""

from __future__ import annotations

import datetime as _dt

from ..catalog import parse_accelerator
from ..efficiency import Factor, FamilyEfficiency
from ..units import GIGA, TERA
from .microbench import Microbench, fit_half_rows


def _sig(x: float) -> float:
    """x to 7 significant digits (fixed decimals would lose a slow machine's GB/s in TB/s units)."""
    return float(f"{x:.7g}")


def accelerator_row(mb: Microbench, *, id: str = "calibrated", tdp_w: float = 100.0,
                    usd_per_hour: float = 0.1) -> dict:
    """A row in the format of catalog/data/accelerators.yaml (human units) from the microbenchmarks."""
    import os

    bw = max(mb.copy_bytes_per_s, mb.matvec_bytes_per_s)
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else 1e9
    today = _dt.date.today().isoformat()
    return {
        "id": id,
        "name": f"calibrated {mb.device_name}",
        "vendor": "calibrated",
        "dense_tflops": {dt: _sig(max(v) / TERA) for dt, v in mb.matmul_flops_per_s.items()},
        "hbm_gb": _sig(mem / GIGA),
        "hbm_tb_per_s": _sig(bw / TERA),
        "scale_up_gb_per_s": _sig(bw / GIGA),
        "scale_out_gb_per_s": 1.25,
        "tdp_w": float(tdp_w),
        "usd_per_hour": float(usd_per_hour),
        "price_source": "nominal value given to `roofline calibrate` (not measured)",
        "price_date": today,
        "source": (f"roofline calibrate microbenchmarks ({mb.backend} on {mb.device}): matmul {mb.matmul_width}-wide "
                   f"by rows {list(mb.matmul_rows)}, copy and matrix-vector bandwidth; versions {mb.versions}"),
        "date": today,
        "notes": ("measured peaks, not a datasheet; hbm_gb is system memory; scale_up = memory bandwidth and "
                  "scale_out = 10 GbE are nominal (single device); tdp_w and usd_per_hour are nominal inputs"),
    }


def profile_document(mb: Microbench, **kw) -> dict:
    """A catalog document ({'accelerators': [row]}) loadable by Catalog.add_document / --accelerator-file."""
    return {"accelerators": [accelerator_row(mb, **kw)]}


def load_profile(path):
    """The Accelerator of a profile file (first row of its `accelerators` section)."""
    import yaml

    from ..errors import CatalogError

    try:
        with open(path) as fh:
            doc = yaml.safe_load(fh)
    except OSError as exc:
        raise CatalogError(f"cannot read accelerator file {path}: {exc.strerror}; check the path") from None
    except yaml.YAMLError:
        raise CatalogError(f"accelerator file {path} is not valid YAML; fix the syntax") from None
    rows = doc.get("accelerators") if isinstance(doc, dict) else None
    if not rows:
        raise CatalogError(f"{path}: expected a mapping with an 'accelerators' list of one row "
                           f"(as written by `roofline calibrate`)")
    return parse_accelerator(rows[0], f"{path}: accelerators[0]")


def calibrated_family(mb: Microbench, ops_per_layer: int, ops_per_pass: int, dtype: str = "fp32") -> FamilyEfficiency:
    """Efficiency factors relative to the calibrated profile (formulas in the module docstring)."""
    bw = max(mb.copy_bytes_per_s, mb.matvec_bytes_per_s)
    half = fit_half_rows(mb.matmul_rows, mb.matmul_flops_per_s[dtype])
    w = min(mb.matvec_bytes_per_s / bw, 1.0)
    kv = min(mb.attention_bytes_per_s / bw, 1.0)
    # the attention kernel does 2·G·H FLOPs per 4·H bytes of K read (G = 4 query heads per KV head)
    attn = min(mb.attention_bytes_per_s / 4 * 2 * 4 / mb.peak(dtype), 1.0)
    src = f"roofline calibrate microbenchmark ({mb.backend}, {mb.device_name})"

    def f(v, lo=0.85, hi=1.15):
        return Factor(v, v * lo, min(v * hi, 1.0), src)

    return FamilyEfficiency(
        family="calibrated", gemm=Factor(1.0, 0.85, 1.0, src), gemm_low_precision=Factor(1.0, 0.85, 1.0, src),
        gemm_half_rows=Factor(half, half * 0.5, half * 2.0, src), weight_bandwidth=f(w),
        weight_bandwidth_low_precision=f(w), kv_bandwidth=f(kv),
        attention_compute=f(attn), scale_up_bandwidth=Factor(1.0, 0.5, 1.0, "not measured (single device)"),
        scale_up_step_latency_s=Factor(1e-6, 1e-7, 1e-5, "not measured (single device)"),
        elementwise_traffic=Factor(1.0, 0.5, 1.25, "model.elementwise_bytes_per_token, unfused (eager PyTorch)"),
        scale_out_bandwidth=Factor(1.0, 0.5, 1.0, "not measured (single device)"),
        scale_out_step_latency_s=Factor(1e-5, 1e-6, 1e-4, "not measured (single device)"),
        layer_overhead_s=Factor(ops_per_layer * mb.op_overhead_s, 0.5 * ops_per_layer * mb.op_overhead_s,
                                3 * ops_per_layer * mb.op_overhead_s, src + ": op overhead x ops per layer"),
        pass_overhead_s=Factor(ops_per_pass * mb.op_overhead_s, 0.5 * ops_per_pass * mb.op_overhead_s,
                               3 * ops_per_pass * mb.op_overhead_s, src + ": op overhead x ops per pass"),
    )
