"""roofline.kernels: lookups against the measured rows the derivation kept (index.json check_rows, raw rows of
aiconfigurator-core 0.12.0), interpolation bounds, extrapolation flags, coverage and provenance."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from roofline import kernels as K
from roofline.errors import InputError

QUANT = 2e-4  # the uint16 log code rounds to 0.0125 %; 0.02 % is the tolerance at a measured row


def _coords(t, row):
    return [np.array([v]) for v in row[:-1]]


def test_every_table_reproduces_its_raw_check_rows():
    """At a measured grid point the lookup is that row's latency (ms in the wheel, s here), covered and
    not extrapolated — for every one of the ~2,400 tables, through the same path the public functions use."""
    n = 0
    for t in K.index()["tables"]:
        for row in t["check_rows"]:
            r = K._lookup(t["accelerator"], t["kind"], t["engine"], t["keys"], *_coords(t, row))
            assert r.covered[0] and not r.extrapolated[0], (t["id"], row)
            assert r.seconds[0] == pytest.approx(row[-1], rel=QUANT), (t["id"], t["kind"], row)
            n += 1
    assert n > 5000


def _table(acc, kind, engine, **keys):
    return next(t for t in K.index()["tables"] if t["accelerator"] == acc and t["kind"] == kind
                and t["engine"] == engine and all(t["keys"][k] == v for k, v in keys.items()))


def test_public_functions_hit_check_rows():
    t = _table("h100-sxm", "gemm", "trtllm", gemm_dtype="fp8")
    m, n, k, sec = t["check_rows"][0]
    assert K.gemm_s("h100-sxm", "fp8", m, n, k, engine="trtllm").seconds == pytest.approx(sec, rel=QUANT)
    t = _table("h200", "generation_attention", "trtllm", kv_cache_dtype="bf16", head_dim=128)
    b, s, h, kv, sec = t["check_rows"][0]
    r = K.attention_s("h200", "decode", b, s, h, kv, 128, engine="trtllm")
    assert r.seconds == pytest.approx(sec, rel=QUANT) and r.covered and "generation_attention" in r.source
    t = _table("h100-sxm", "custom_allreduce", "vllm")
    g, elements, sec = t["check_rows"][0]  # message_size counts bf16 elements: a buffer of 2x bytes
    r = K.collective_s("h100-sxm", "all_reduce", 2 * elements, g, engine="vllm")
    assert r.seconds == pytest.approx(sec, rel=QUANT) and "custom_allreduce vllm" in r.source
    t = _table("h200", "moe", "sglang", moe_dtype="fp8_block", hidden_size=7168, num_experts=256,
               distribution="balanced")
    tok, mtp, mep, sec = t["check_rows"][0]
    r = K.moe_s("h200", "fp8_block", tok, hidden=7168, inter=t["keys"]["inter_size"], topk=t["keys"]["topk"],
                experts=256, tp=mtp, ep=mep, engine="sglang", distribution="balanced")
    assert r.seconds == pytest.approx(sec, rel=QUANT) and "balanced" in r.source


def test_moe_rows_are_read_at_aiconfigurators_power_law_routing_by_default():
    """Without a distribution the MoE rows answer at K.MOE_ROUTING, AIConfigurator's own default (power_law_1.01):
    the very row measured there, and no faster than a balanced router once a layer carries hundreds of tokens
    (Mixtral's shape on one H100, grouped GEMM over all 8 experts); an unknown routing is one clear error."""
    assert K.MOE_ROUTING == "power_law_1.01"
    t = _table("h100-sxm", "moe", "trtllm", moe_dtype="fp8", hidden_size=4096, inter_size=14336, topk=2,
               num_experts=8, distribution="power_law_1.01")
    tok, mtp, mep, sec = t["check_rows"][0]
    r = K.moe_s("h100-sxm", "fp8", tok, hidden=4096, inter=14336, topk=2, experts=8, tp=mtp, ep=mep, engine="trtllm")
    assert r.seconds == pytest.approx(sec, rel=QUANT) and "power_law_1.01" in r.source
    tokens = np.array([512.0, 1024.0, 2048.0, 4096.0])
    law, flat = (K.moe_s("h100-sxm", "fp8", tokens, hidden=4096, inter=14336, topk=2, experts=8, engine="trtllm",
                         distribution=d) for d in (None, "balanced"))
    assert (law.seconds > 1.05 * flat.seconds).all() and (law.seconds < 1.5 * flat.seconds).all()
    with pytest.raises(InputError, match="expected one of balanced, power_law_1.01"):
        K.moe_s("h100-sxm", "fp8", 64, hidden=4096, inter=14336, topk=2, experts=8, distribution="zipf")


def test_between_grid_points_bounded_by_the_surrounding_measurements():
    """Log-log multilinear: at any interior point the time lies between the smallest and largest of the 2^d
    measured corners; along m alone it is monotone between two measured neighbours."""
    rng = np.random.default_rng(0)
    t = _table("h100-sxm", "gemm", "trtllm", gemm_dtype="bf16")
    axes, ln_t = K._grid(t["id"], "h100-sxm")
    for _ in range(200):
        i = [rng.integers(0, len(a) - 1) for a in axes]
        corners = ln_t[i[0]:i[0] + 2, i[1]:i[1] + 2, i[2]:i[2] + 2]
        if not np.all(np.isfinite(corners)):
            continue
        x = [np.exp(a[j] + rng.random() * (a[j + 1] - a[j])) for a, j in zip(axes, i)]
        r = K.gemm_s("h100-sxm", "bf16", *x, engine="trtllm")
        assert np.exp(corners.min()) * (1 - 1e-9) <= r.seconds <= np.exp(corners.max()) * (1 + 1e-9)
        assert r.covered and not r.extrapolated
    m_axis = np.exp(axes[0])
    lo, hi = m_axis[20], m_axis[21]
    ms = np.linspace(lo, hi, 9)
    s = K.gemm_s("h100-sxm", "bf16", ms, 8192, 8192, engine="trtllm").seconds
    d = np.diff(s)
    assert np.all(d >= -1e-15) or np.all(d <= 1e-15)


def test_extrapolation_flags_and_bounds():
    """Above the largest m: flagged, at least the edge time and at most edge·(m/m_max) (work exponent 1);
    below the smallest: the edge time (latency floor), flagged; distance is ln of the overshoot."""
    t = _table("h100-sxm", "gemm", "trtllm", gemm_dtype="fp8")
    axes, _ = K._grid(t["id"], "h100-sxm")
    m_max = float(np.exp(axes[0][-1]))
    edge = K.gemm_s("h100-sxm", "fp8", m_max, 8192, 8192, engine="trtllm")
    far = K.gemm_s("h100-sxm", "fp8", 4 * m_max, 8192, 8192, engine="trtllm")
    assert not edge.extrapolated and far.extrapolated and far.covered
    assert edge.seconds <= far.seconds <= 4 * edge.seconds * (1 + 1e-9)
    assert far.distance == pytest.approx(np.log(4))
    k_min = float(np.exp(axes[2][0]))
    small = K.gemm_s("h100-sxm", "fp8", 64, 8192, k_min / 2, engine="trtllm")
    at = K.gemm_s("h100-sxm", "fp8", 64, 8192, k_min, engine="trtllm")
    assert small.extrapolated and small.seconds == pytest.approx(at.seconds)


def test_attention_beyond_the_measured_batch_scales_with_batch():
    r = K.context_attention_s("h100-sxm", np.array([8, 800]), 2048, 32, 32, 128, kv_dtype="fp8", engine="trtllm")
    assert r.covered.all() and r.extrapolated[1] and not r.extrapolated[0]
    assert r.seconds[1] > r.seconds[0]


def test_vectorised_broadcast():
    m = np.geomspace(1, 20000, 50)[:, None]
    r = K.gemm_s("h200", "bf16", m, np.array([1024, 8192, 28672])[None, :], 8192)
    assert r.seconds.shape == (50, 3) and r.covered.all()
    assert np.all(np.diff(r.seconds, axis=1) > 0)  # wider outputs take longer at every m


def test_constant_axes_and_repeats_give_the_point_by_point_answer():
    """A grid whose GEMM sizes do not vary along one axis (materialised, not broadcast views) and a repeated
    lookup give exactly what each point looked up alone gives; the answers cannot be altered by a caller."""
    m = np.repeat(np.geomspace(1, 20000, 7)[:, None], 5, axis=1)  # constant along axis 1
    n = np.full((7, 5), 5120.0)
    K._MEMO.clear()
    grid = K.gemm_s("h100-sxm", "bf16", m, n, 8192, engine="vllm")
    again = K.gemm_s("h100-sxm", "bf16", m.copy(), n.copy(), 8192, engine="vllm")
    alone = np.array([[float(K.gemm_s("h100-sxm", "bf16", np.array([x]), 5120, 8192, engine="vllm").seconds[0])
                       for x in row] for row in m])
    assert grid.seconds.shape == (7, 5) and np.array_equal(grid.seconds, alone)
    assert np.array_equal(again.seconds, grid.seconds) and again.covered.all()
    assert len(K._MEMO) == 1 + 7  # the grid once (7 distinct rows), each point alone once
    with pytest.raises(ValueError):
        grid.seconds[0, 0] = 1.0


def test_not_covered_returns_nan_and_no_source():
    r = K.gemm_s("mi300x", "bf16", 64, 4096, 4096)
    assert not r.covered and np.isnan(r.seconds) and r.source == ""
    r = K.moe_s("h100-sxm", "bf16", 64, hidden=1234, inter=567, topk=3, experts=7)
    assert not r.covered
    r = K.collective_s("h100-sxm", "all_gather", 1e6, 16, tier="scale-out")
    assert not r.covered


def test_catalog_fp4_names_no_table_though_blackwell_has_nvfp4_rows():
    """The catalog's `fp4` weights read no kernel table (the factor model times FP4 GEMMs), although Blackwell's
    measured `nvfp4` GEMM and MoE rows exist and answer by that name (docs/kernels.md "Dtype names": reading them lost
    blind on serving set o); they stream 4-bit weights faster than the fp8 rows stream 8-bit ones."""
    m = np.array([64.0, 1024.0])
    assert not K.gemm_s("b200", "fp4", m, 57344, 8192, engine="trtllm").covered.any()
    nv, fp8 = (K.gemm_s("b200", d, m, 57344, 8192, engine="trtllm") for d in ("nvfp4", "fp8"))
    assert nv.covered.all() and (nv.seconds < fp8.seconds).all()
    assert K.moe_s("b200", "nvfp4", 256, hidden=4096, inter=14336, topk=2, experts=8, tp=1, ep=1,
                   engine="trtllm").covered.all()  # Mixtral's shape
    assert not K.gemm_s("h100-sxm", "nvfp4", m, 57344, 8192, engine="trtllm").covered.any()


def test_collective_one_gpu_is_free_and_engine_all_reduce_preferred():
    r = K.collective_s("h100-sxm", "all_reduce", np.array([1e6, 1e6]), np.array([1, 8]), engine="trtllm")
    assert r.seconds[0] == 0 and r.covered.all() and "custom_allreduce trtllm" in r.source
    assert "nccl" in K.collective_s("h100-sxm", "all_to_all", 1e6, 8).source


def test_collective_tables_count_16_bit_elements():
    """AIConfigurator's collectors log message_size in 16-bit elements (nccl-tests' bytes // 2; custom all-reduce of
    bf16 tensors), so a buffer of B bytes reads the row of B / 2: 134 MB (8,192 tokens of Llama 3.1 70B's hidden
    8,192 in bf16) over 8 H100s then moves at nccl-tests' 380-480 GB/s bus bandwidth, not half of it. The
    registered rule (read at B) is the fixture's."""
    nbytes, n = 8192 * 8192 * 2.0, 8
    t = K.collective_s("h100-sxm", "all_reduce", nbytes, n, engine="nccl").seconds
    assert 380e9 < nbytes / t * 2 * (n - 1) / n < 480e9  # bus bandwidth, nccl-tests' definition
    t = _table("h100-sxm", "nccl", "nccl", op_name="all_reduce", nccl_dtype="fp16")
    g, elements, sec = t["check_rows"][0]
    r = K.collective_s("h100-sxm", "all_reduce", 2 * elements, g, engine="nccl")
    assert r.seconds == pytest.approx(sec, rel=QUANT)


def test_collective_read_at_bytes_is_the_registered_rule(collective_sizes_in_bytes):
    nbytes, n = 8192 * 8192 * 2.0, 8
    t = K.collective_s("h100-sxm", "all_reduce", nbytes, n, engine="nccl").seconds
    assert 200e9 < nbytes / t * 2 * (n - 1) / n < 240e9  # twice the buffer's time: half the bus bandwidth


def test_bad_input_one_line():
    with pytest.raises(InputError, match="unknown engine 'tgi'"):
        K.gemm_s("h100-sxm", "bf16", 1, 1, 1, engine="tgi")
    with pytest.raises(InputError, match="unknown collective"):
        K.collective_s("h100-sxm", "broadcast", 1, 2)
    with pytest.raises(InputError, match="positive sizes"):
        K.gemm_s("h100-sxm", "bf16", 0, 1, 1)


def test_provenance_travels_with_the_tables():
    ix = K.index()
    assert ix["source"]["package"] == "aiconfigurator-core" and ix["source"]["version"] == "0.12.0"
    assert ix["source"]["license"] == "Apache-2.0" and len(ix["source"]["sha256"]) == 64
    for s in ix["sources"]:
        assert s["framework_version"] and s["file"].endswith(".parquet")
    from importlib import resources

    notice = (resources.files("roofline") / "kernels_data" / "NOTICE").read_text()
    assert "Apache License, Version 2.0" in notice and "NVIDIA" in notice


def test_cli_catalog_kernels_json_and_bad_engine():
    out = subprocess.run([sys.executable, "-m", "roofline", "catalog", "kernels", "-a", "h100-sxm", "--kind", "gemm",
                          "--json"], capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    assert doc["source"]["version"] == "0.12.0"
    assert {r["engine"] for r in doc["coverage"]} == {"trtllm", "sglang", "vllm"}
    assert all("bf16" in r["dtypes"] and r["cells_measured"] > 10000 for r in doc["coverage"])
    bad = subprocess.run([sys.executable, "-m", "roofline", "catalog", "kernels", "--engine", "tgi"],
                         capture_output=True, text=True)
    assert bad.returncode == 1
    assert bad.stderr.strip() == "error: --engine 'tgi' has no measured kernel tables; expected one of nccl, sglang, trtllm, vllm"


def test_ep_dispatch_across_nodes_measured_and_slower_than_inside_one():
    """DeepEP low-latency dispatch of DeepSeek-V3's shape on H100: 1, 2, 4, 8 nodes are measured (covered,
    not extrapolated) and crossing nodes costs more than staying on NVLink."""
    r = K.ep_all_to_all_s("h100-sxm", "dispatch", 128, hidden=7168, topk=8, experts=256,
                          nodes=np.array([1, 2, 4, 8]), mode="ll")
    assert r.covered.all() and not r.extrapolated.any() and "ep_dispatch" in r.source
    assert r.seconds[1] > r.seconds[0]
    c = K.ep_all_to_all_s("h100-sxm", "combine", 128, hidden=7168, topk=8, experts=256, nodes=2, mode="ll")
    assert c.covered and "ep_combine" in c.source
    with pytest.raises(InputError, match="phase must be dispatch or combine"):
        K.ep_all_to_all_s("h100-sxm", "send", 1, hidden=7168, topk=8, experts=256)


def test_plain_import_and_factor_step_do_not_load_the_tables():
    """Start-up: the tables load lazily, only when a lookup is made (import roofline, a factor-model step)."""
    code = ("import sys, roofline; from roofline.requests.step import StepRequest, run_step; "
            "run_step(StepRequest.of(model='llama-3-8b', system='dgx-h100', batch=8, tp=8, realistic=True)); "
            "print('roofline.kernels' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_moe_shape_without_rows_read_from_the_nearest_shape_scaled_by_the_rooflines_by_hand():
    """GLM-4.7's routed experts (hidden 5,120, 160 experts of 1,536, top 8) have no vLLM FP8-block row on H100: the
    nearest measured shape is Qwen3-235B's (4,096, 1,536, top 8 of 128; d = 2·ln 1.25), read at the same tokens per
    expert (100 tokens per rank -> 100·8·128/(8·160) = 80) and scaled by the two MoE rooflines, by hand (H100: FP8
    peak 1,979 TFLOP/s, HBM 3.35 TB/s; every expert touched at these loads, so both are weight-bound)."""
    r = K.moe_transfer_s("h100-sxm", "fp8_block", 100, hidden=5120, inter=1536, topk=8, experts=160, tp=1, ep=8,
                         engine="vllm")
    src = K.moe_s("h100-sxm", "fp8_block", 80, hidden=4096, inter=1536, topk=8, experts=128, tp=1, ep=8, engine="vllm")
    assert bool(src.covered) and not bool(K.moe_s("h100-sxm", "fp8_block", 100, hidden=5120, inter=1536, topk=8,
                                                  experts=160, tp=1, ep=8, engine="vllm").covered)

    def roof(h, i, e, tokens):
        touched = e * (1 - (1 - 8 / e) ** (tokens * 8)) / 8
        weights = touched * 3 * h * i * 1.0 + 4 * tokens * 8 * h
        return max(6 * tokens * 8 * h * i / 1979e12, weights / 3.35e12)

    assert roof(5120, 1536, 160, 100) > 20 * 3 * 5120 * 1536 / 3.35e12  # weight-bound, all 20 experts
    assert float(r.seconds) == pytest.approx(float(src.seconds) * roof(5120, 1536, 160, 100) / roof(4096, 1536, 128, 80),
                                             rel=1e-6)
    assert bool(r.covered) and bool(r.extrapolated)
    assert float(r.distance) == pytest.approx(float(src.distance) + 2 * np.log(1.25))
    assert "scaled from shape 4096x1536 top-8 of 128" in r.source and src.source in r.source
    # beyond MOE_TRANSFER_MAX_DISTANCE, or in a format no table has: not covered (the factor model)
    far = K.moe_transfer_s("h100-sxm", "fp8_block", 100, hidden=65536, inter=1536, topk=8, experts=160, ep=8,
                           engine="vllm")
    assert not bool(far.covered) and far.source == ""
    assert not bool(K.moe_transfer_s("h100-sxm", "fp4", 100, hidden=5120, inter=1536, topk=8, experts=160, ep=8,
                                     engine="vllm").covered)
    # vectorised: each point is the scalar answer
    many = K.moe_transfer_s("h100-sxm", "fp8_block", np.array([1.0, 100.0, 4096.0]), hidden=5120, inter=1536, topk=8,
                            experts=160, tp=1, ep=8, engine="vllm")
    assert float(many.seconds[1]) == pytest.approx(float(r.seconds))
    assert np.all(np.diff(many.seconds) > 0)


def test_moe_transfer_on_an_accelerator_without_tables_or_outside_the_catalog():
    """An accelerator with no MoE tables (a dataset's own, such as the scenario rows' power-limited A100) is not
    covered and needs no catalog entry; moe_roofline_s reads the Accelerator it is given (a System's too), so a
    variant with twice the bandwidth halves a weight-bound roofline."""
    from dataclasses import replace

    from roofline.catalog import accelerator, system

    h100 = accelerator("h100-sxm")
    own = replace(h100, id="my-h100", hbm_bytes_per_s=2 * h100.hbm_bytes_per_s)
    r = K.moe_transfer_s(own, "fp8_block", 100, hidden=5120, inter=1536, topk=8, experts=160, ep=8, engine="vllm")
    assert not bool(r.covered) and r.source == ""
    kw = dict(hidden=5120, inter=1536, topk=8, experts=160, ep=8)
    base = float(K.moe_roofline_s(system("dgx-h100"), "fp8", 100, **kw))
    assert base == pytest.approx(float(K.moe_roofline_s("h100-sxm", "fp8", 100, **kw)))
    assert float(K.moe_roofline_s(own, "fp8", 100, **kw)) == pytest.approx(base / 2)
