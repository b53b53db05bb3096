#!/usr/bin/env python3
"""Derive roofline's compact measured-kernel tables from NVIDIA AIConfigurator's published database.

Source: the `aiconfigurator-core` wheel on PyPI (Apache-2.0, NVIDIA), whose `systems/data/<system>/<op>/
<framework>/<version>/*.parquet` tables hold kernel latencies measured on real GPUs, each directory with a
`collection_meta.yaml` naming the framework and its version. This script reads those tables as DATA only
(none of the package's code or composition logic is used or copied) and writes, under
src/roofline/kernels_data/:

    index.json        provenance (package, version, sha256 of the wheel) and, per table: system, engine,
                      framework version, kind, keys, axes, rows read / kept / dropped and why, and a few
                      raw check rows (axis values and latency) that the tests compare the lookups with
    <accelerator>.npz the dense grids: for table i, `i/a0`, `i/a1`, … (sorted axis values) and `i/q`
                      (latency as a uint16 log code, 0 where the grid has no measurement; index.json
                      gives the decoding rule: 0.0125 % rounding at most)
    NOTICE            the Apache-2.0 attribution carried with the derived data

Decisions (documented in docs/kernels.md):
- one version per (system, operation, engine, keys): the newest version directory (PEP 440 ordering) whose
  table measured that key group (dtype, head size, MoE shape, …): a newer, partial collection does not hide
  an older, complete one; each table names its own version;
- one kernel per (table, dtype): the kernel_source with the most rows (the engine's default kernel for that
  dtype; the others are named in index.json), so a grid cell is one kernel's measurement;
- duplicate rows in one cell (e.g. MLA heads measured under several tp sizes with the same per-GPU heads)
  are reduced to their median;
- GEMM rows faster than the chip's dense datasheet peak (FLOP/latency > peak, as the wheel's own system
  file states it) are physically impossible and dropped; the count is recorded;
- attention tables keep window_size 0 (full attention) and beam width 1; collectives keep the CUDA-graph
  variant of custom all-reduce where eager and graph were both measured;
- DeepEP dispatch/combine (SGLang wide-EP tables, the only ones across nodes): per key group the version
  with the richest grid (the multi-node runs are in an older collection); normal mode at 20 SMs (DeepEP's
  default), its time = transmit + notify; microseconds in the source;
- latencies are milliseconds in the source (checked: an FP8 4096×65536×3072 GEMM on H100 at 1.255 ms is
  1.31 PFLOP/s, 66 % of the 1,979 TFLOP/s dense peak) and seconds here.

Run (needs pyarrow and packaging at derivation time only; the package reads the .npz with NumPy):

    .venv/bin/pip download --no-deps aiconfigurator-core==0.12.0 -d /tmp/aic
    .venv/bin/python scripts/derive_kernel_tables.py /tmp/aic/aiconfigurator_core-0.12.0-*.whl
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import random
import sys
import zipfile
from collections import defaultdict
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "src" / "roofline" / "kernels_data"

# AIConfigurator system directory -> roofline accelerator id (catalog/data/accelerators.yaml)
SYSTEMS = {"a100_sxm": "a100-80gb", "h100_sxm": "h100-sxm", "h200_sxm": "h200", "b200_sxm": "b200",
           "gb200": "gb200", "gb300": "gb300", "l40s": "l40s"}
ENGINES = ("trtllm", "sglang", "vllm")
DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "fp8": "fp8", "fp8_block": "fp8_block",
          "int8": "int8", "w4a16_mxfp4": "w4a16_mxfp4", "nvfp4": "nvfp4", "int8_wo": "int8_wo"}

# kind: (op directory, parquet stem, frameworks, key columns, axis columns, fixed column values, one kernel?)
SPECS = {
    "gemm": ("gemm", "gemm_perf", ENGINES, ("gemm_dtype",), ("m", "n", "k"), {}, True),
    "context_attention": ("attention", "context_attention_perf", ENGINES,
                          ("attn_dtype", "kv_cache_dtype", "head_dim"),
                          ("batch_size", "isl", "num_heads", "num_key_value_heads"),
                          {"window_size": 0, "beam_width": 1}, True),
    "generation_attention": ("attention", "generation_attention_perf", ENGINES,
                             ("attn_dtype", "kv_cache_dtype", "head_dim"),
                             ("batch_size", "step", "num_heads", "num_key_value_heads"),
                             {"window_size": 0, "beam_width": 1}, True),
    "mla_context": ("mla", "context_mla_perf", ENGINES, ("mla_dtype", "kv_cache_dtype"),
                    ("batch_size", "isl", "num_heads"), {}, True),
    "mla_generation": ("mla", "generation_mla_perf", ENGINES, ("mla_dtype", "kv_cache_dtype"),
                       ("batch_size", "step", "num_heads"), {}, True),
    "moe": ("moe", "moe_perf", ENGINES,
            ("moe_dtype", "hidden_size", "inter_size", "topk", "num_experts", "distribution"),
            ("num_tokens", "moe_tp_size", "moe_ep_size"), {}, True),
    "nccl": ("comm", "nccl_perf", ("nccl",), ("op_name", "nccl_dtype"), ("num_gpus", "message_size"), {}, False),
    "custom_allreduce": ("comm", "custom_allreduce_perf", ENGINES, ("allreduce_dtype",),
                         ("num_gpus", "message_size"), {}, True),
    # DeepEP expert-parallel dispatch / combine (SGLang wide-EP), low-latency and normal kernels, by tokens
    # per rank and nodes of 8 GPUs: the only tables that cross nodes
    "ep_dispatch/ll": ("comm", "wideep_deepep_ll_perf", ("sglang",), ("op_name", "hidden_size", "num_topk",
                       "num_experts"), ("num_token", "node_num"), {}, False),
    "ep_combine/ll": ("comm", "wideep_deepep_ll_perf", ("sglang",), ("op_name", "hidden_size", "num_topk",
                      "num_experts"), ("num_token", "node_num"), {}, False),
    "ep_dispatch/normal": ("comm", "wideep_deepep_normal_perf", ("sglang",), ("op_name", "hidden_size", "num_topk",
                           "num_experts"), ("num_token", "node_num"), {"dispatch_sms": 20, "combine_sms": 20}, False),
    "ep_combine/normal": ("comm", "wideep_deepep_normal_perf", ("sglang",), ("op_name", "hidden_size", "num_topk",
                          "num_experts"), ("num_token", "node_num"), {"dispatch_sms": 20, "combine_sms": 20}, False),
}
# latency of a row where it is not the `latency` column (ms), and its unit in seconds
LATENCY = {"ep_dispatch/ll": (lambda r: r["dispatch_avg_t_us"], 1e-6),
           "ep_combine/ll": (lambda r: r["combine_avg_t_us"], 1e-6),
           "ep_dispatch/normal": (lambda r: r["dispatch_transmit_us"] + r["dispatch_notify_us"], 1e-6),
           "ep_combine/normal": (lambda r: r["combine_transmit_us"] + r["combine_notify_us"], 1e-6)}
# specs whose key groups come from the version with the richest grid (most distinct axis points in the
# file) rather than the newest: the multi-node DeepEP runs are in an older SGLang collection
RICHEST = {"ep_dispatch/ll", "ep_combine/ll", "ep_dispatch/normal", "ep_combine/normal"}
CHECK_ROWS = 3  # raw rows per table kept for the tests (cells holding exactly one measurement)
MOE_DISTRIBUTIONS = ("balanced", "power_law_1.01")  # routing kept: uniform, and the mildly skewed one
# latency code: uint16 q = 1 + round((ln t - LN_T0)/LN_STEP), 0 = no measurement; covers 10 ns .. 100 s
# with a relative step of 0.025 % (max rounding error 0.0125 %), half the bytes of float32
LN_T0, LN_STEP = float(np.log(1e-8)), float(np.log(1e10) / 65534)


def _version_key(v: str):
    from packaging.version import InvalidVersion, Version

    try:
        return (1, Version(v))
    except InvalidVersion:
        return (0, v)


def _peaks(zf: zipfile.ZipFile, sysdir: str) -> dict:
    """Dense tensor-core peaks (FLOP/s) by dtype from the wheel's own system file (used to drop rows
    faster than physically possible)."""
    import yaml

    doc = yaml.safe_load(zf.read(f"aiconfigurator_core/systems/{sysdir}.yaml"))["gpu"]
    bf16 = float(doc["bfloat16_tc_flops"])
    fp8 = float(doc.get("fp8_tc_flops", bf16))
    return {"bf16": bf16, "fp16": bf16, "fp8": fp8, "fp8_block": fp8, "int8": float(doc.get("int8_tc_flops", fp8))}


def _key_value(col: str, v):
    if col.endswith("dtype") or col == "gemm_type":
        return DTYPES.get(v, v)
    return v


def derive(wheel: Path) -> dict:
    import pyarrow.parquet as pq
    import yaml

    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    zf = zipfile.ZipFile(wheel)
    names = zf.namelist()
    meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
    meta = dict(line.split(": ", 1) for line in zf.read(meta_name).decode().splitlines()
                if ": " in line and not line.startswith(" "))
    index = {"format": 1, "source": {
        "package": meta.get("Name"), "version": meta.get("Version"), "license": meta.get("License-Expression"),
        "author": meta.get("Author-email"), "wheel": wheel.name, "sha256": sha,
        "url": f"https://pypi.org/project/{meta.get('Name')}/{meta.get('Version')}/",
        "note": "measured kernel latencies, read as data by scripts/derive_kernel_tables.py"},
        "latency_code": {"ln_t0": LN_T0, "ln_step": LN_STEP,
                         "rule": "t_s = exp(ln_t0 + (q - 1) * ln_step) for q >= 1; q = 0: not measured"},
        "sources": [], "tables": []}
    rng = random.Random(19)
    root = "aiconfigurator_core/systems/data/"
    for sysdir, acc in SYSTEMS.items():
        peaks = _peaks(zf, sysdir)
        arrays = {}
        for spec, (opdir, stem, frameworks, keys, axes, fixed, one_kernel) in SPECS.items():
            kind = spec.split("/")[0]
            lat_of, unit_s = LATENCY.get(spec, (lambda r: r["latency"], 1e-3))
            for fw in frameworks:
                prefix = f"{root}{sysdir}/{opdir}/{fw}/"
                versions = sorted({n[len(prefix):].split("/")[0] for n in names
                                   if n.startswith(prefix) and n.endswith(f"/{stem}.parquet")}, key=_version_key)
                if not versions:
                    continue
                order = list(reversed(versions))
                if spec in RICHEST:
                    def richness(v, prefix=prefix, stem=stem, axes=axes):
                        t = pq.read_table(io.BytesIO(zf.read(f"{prefix}{v}/{stem}.parquet"))).to_pydict()
                        return len(set(zip(*(t[a] for a in axes)))) if all(a in t for a in axes) else 0
                    order.sort(key=richness, reverse=True)
                seen = set()  # key groups already taken from a newer (or richer) version
                for ver in order:
                    vdir = f"{prefix}{ver}/"
                    cmeta = yaml.safe_load(zf.read(vdir + "collection_meta.yaml")) if vdir + "collection_meta.yaml" in names else {}
                    status = ((cmeta.get("tables") or {}).get(stem) or {}).get("status", "unknown")
                    runtime = cmeta.get("runtime") or {}
                    t = pq.read_table(io.BytesIO(zf.read(f"{vdir}{stem}.parquet"))).to_pydict()
                    n_read = len(next(iter(t.values())))
                    if any(c not in t for c in keys + axes):  # an older schema: not comparable, skipped
                        print(f"skip {vdir}{stem}: columns {sorted(set(keys + axes) - set(t))} missing", file=sys.stderr)
                        continue
                    rows = [dict(zip(t, vals)) for vals in zip(*t.values())]
                    dropped = defaultdict(int)
                    kept = []
                    for r in rows:
                        if any(r.get(c) != v for c, v in fixed.items()):
                            dropped["other " + "/".join(fixed)] += 1
                            continue
                        if kind == "custom_allreduce" and "eager" in str(r.get("kernel_source", "")).lower():
                            dropped["eager variant (graph kept)"] += 1
                            continue
                        if kind == "moe" and r["distribution"] not in MOE_DISTRIBUTIONS:
                            dropped["other routing distribution"] += 1
                            continue
                        if kind == "moe" and "nongated" in str(r.get("kernel_source", "")):
                            dropped["non-gated MoE kernel"] += 1
                            continue
                        lat = r["_lat"] = lat_of(r)
                        if not (lat is not None and np.isfinite(lat) and lat > 0):
                            dropped["latency missing or <= 0"] += 1
                            continue
                        if kind == "gemm":
                            peak = peaks.get(_key_value("gemm_dtype", r["gemm_dtype"]))
                            if peak and 2.0 * r["m"] * r["n"] * r["k"] / (lat * 1e-3) > peak:
                                dropped["faster than the dense datasheet peak"] += 1
                                continue
                        kept.append(r)
                    engine = "nccl" if fw == "nccl" else fw
                    src_id = len(index["sources"])
                    index["sources"].append({
                        "id": src_id, "accelerator": acc, "aic_system": sysdir, "kind": kind, "engine": engine,
                        "framework": runtime.get("framework", fw), "framework_version": str(ver),
                        "all_versions": versions, "collection_status": status,
                        "file": f"{vdir[len('aiconfigurator_core/'):]}{stem}.parquet",
                        "device": rows[0].get("device", "") if rows else "", "rows_in_file": n_read,
                        "rows_kept": len(kept), "dropped": dict(dropped)})
                    groups = defaultdict(list)
                    for r in kept:
                        groups[tuple(_key_value(c, r[c]) for c in keys)].append(r)
                    for gkey, grows in sorted(groups.items(), key=lambda kv: str(kv[0])):
                        if gkey in seen:
                            continue
                        seen.add(gkey)
                        sources = defaultdict(int)
                        for r in grows:
                            sources[r.get("kernel_source", "")] += 1
                        primary = max(sorted(sources), key=lambda s: sources[s]) if one_kernel else None
                        if primary is not None:
                            grows = [r for r in grows if r.get("kernel_source", "") == primary]
                        ax_vals = [np.array(sorted({r[a] for r in grows}), dtype=float) for a in axes]
                        cells = defaultdict(list)
                        for r in grows:
                            cells[tuple(int(np.searchsorted(v, r[a])) for v, a in zip(ax_vals, axes))].append(r)
                        grid = np.full(tuple(len(v) for v in ax_vals), np.nan)
                        for idx, cr in cells.items():
                            grid[idx] = np.median([c["_lat"] for c in cr]) * unit_s
                        tid = len(index["tables"])
                        for i, v in enumerate(ax_vals):
                            arrays[f"{tid}/a{i}"] = v
                        code = np.zeros(grid.shape, dtype=np.uint16)
                        ok = np.isfinite(grid)
                        code[ok] = 1 + np.rint((np.log(grid[ok].astype(float)) - LN_T0) / LN_STEP).astype(np.uint16)
                        arrays[f"{tid}/q"] = code
                        singles = [cr[0] for cr in cells.values() if len(cr) == 1]
                        checks = [[*(float(r[a]) for a in axes), float(r["_lat"]) * unit_s]
                                  for r in rng.sample(singles, min(CHECK_ROWS, len(singles)))]
                        index["tables"].append({
                            "id": tid, "source": src_id, "accelerator": acc, "kind": kind, "engine": engine,
                            "keys": dict(zip(keys, [k if isinstance(k, str) else int(k) for k in gkey])),
                            "axes": list(axes), "shape": list(grid.shape),
                            "kernel_source": primary, "other_kernel_sources": sorted(s for s in sources if s != primary),
                            "rows_used": len(grows), "cells_measured": int(np.isfinite(grid).sum()),
                            "check_rows": checks,
                        })
        np.savez_compressed(OUT / f"{acc}.npz", **arrays)
        print(f"{acc}: {sum(1 for t in index['tables'] if t['accelerator'] == acc)} tables, "
              f"{(OUT / f'{acc}.npz').stat().st_size / 1e6:.2f} MB", file=sys.stderr)
    return index


NOTICE = """Measured kernel tables in this directory (*.npz, index.json) are derived from the data files of
{package} {version} (NVIDIA AIConfigurator), https://pypi.org/project/{package}/{version}/ ,
wheel {wheel} (sha256 {sha256}).

Copyright (c) 2025-2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
Licensed under the Apache License, Version 2.0 (the "License"); you may not use these files except in
compliance with the License. You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software distributed under the License is
distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and limitations under the License.

Modifications by the roofline project (scripts/derive_kernel_tables.py): one framework version and one
kernel per table kept; rows regridded onto dense (axis) grids, duplicates reduced to their median;
physically impossible GEMM rows (faster than the dense datasheet peak) dropped; milliseconds converted to
seconds. No code of the package is used or redistributed.
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheel", type=Path, help="path to aiconfigurator_core-<version>-*.whl")
    args = ap.parse_args(argv)
    if not args.wheel.is_file():
        print(f"error: {args.wheel} not found; download it with "
              "`pip download --no-deps aiconfigurator-core==0.12.0 -d /tmp/aic`", file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    index = derive(args.wheel)
    (OUT / "index.json").write_text(json.dumps(index, separators=(",", ":")) + "\n")
    (OUT / "NOTICE").write_text(NOTICE.format(**index["source"]))
    total = sum(p.stat().st_size for p in OUT.iterdir())
    print(f"{len(index['tables'])} tables, {total / 1e6:.1f} MB in {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
