"""trtllm-bench throughput, simulated (validate/bench.py): the benchmark's own engine-setting heuristic by hand,
and the simulated run against the static-batch run where the two must agree."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from roofline import model as M
from roofline.catalog import get_catalog
from roofline.errors import InputError
from roofline.validate import scenarios as S
from roofline.validate.bench import (
    DEFAULT_MAX_BATCH_SIZE,
    DEFAULT_MAX_NUM_TOKENS,
    bench_settings,
    checkpoint_elements,
    checkpoint_quant,
    finetune,
    hf_kv_bytes_per_token,
)


def test_finetune_rounds_as_trtllm_bench_does():
    """tuning.finetune_setting: 290 requests of 1,024/1,024 → 128·⌈290/128⌉ = 384 and max(2048, 256·⌈580/256⌉)
    = 2,048 tokens; 100 → 32·⌈100/32⌉ = 128; 40 → the floor of 64; 5,000 → capped at 4,096 (8,192 tokens);
    1,500 at 8,192/1,024 → 256·⌈1500/256⌉ = 1,536 and min(1500·9, 32768) → 1,024·⌈13,500/1,024⌉ = 14,336."""
    assert finetune(290, 1024, 1024) == (384, 2048)
    assert finetune(100, 1024, 1024) == (128, 2048)
    assert finetune(40, 1024, 1024) == (64, 2048)
    assert finetune(5000, 128, 128) == (4096, 8192)
    assert finetune(1500, 8192, 1024) == (1536, 14336)
    assert finetune(3000, 1024, 1024, pp=2) == (1536, 3072)  # raw_bs = 1,500 per stage


def test_heuristic_reads_an_mla_config_as_128_kv_heads():
    """DeepSeek's config has num_key_value_heads = 128 and no head_dim: 2·61·128·(7,168/128)·1 byte (fp8) =
    874,496 bytes a token, ~20x the real MLA cache; Llama 3.1 8B: 2·32·8·128·2 = 131,072 (bf16), its real size."""
    cat = get_catalog()
    ds, ll = cat.model("deepseek-v3"), cat.model("llama-3.1-8b")
    assert hf_kv_bytes_per_token(ds, 4, "fp8") == 2 * 61 * 128 * 56 * 1
    assert hf_kv_bytes_per_token(ds, 4, "fp8") > 20 * M.kv_bytes_per_token(ds, "fp8")
    assert hf_kv_bytes_per_token(ll, 1, "bf16") == M.kv_bytes_per_token(ll, "bf16") == 131072
    assert hf_kv_bytes_per_token(ll, 16, "bf16") == 2 * 32 * 16 * 128 * 2  # at least one KV head per TP rank


def test_bench_settings_for_deepseek_r1_nvfp4_on_four_b200_by_hand():
    cat = get_catalog()
    m, acc = cat.model("deepseek-v3"), cat.accelerator("b200")
    row = {"id": "x", "input_tokens": 1024, "output_tokens": 1024, "tp": 1, "dp": 4, "ep": 4,
           "weights_dtype": "fp4", "kv_dtype": "fp8"}
    assert checkpoint_quant(row) == "nvfp4"
    routed = M.params_total(m) - M.dense_params(m)
    elements = M.dense_params(m) * (0.5 + 1 / 16) + routed * (0.5 + 1 / 16)
    assert checkpoint_elements(m, "fp4") == pytest.approx(elements)
    gib = 2.0 ** 30
    requests = 0.9 * (4 * acc.hbm_bytes / gib - elements * 0.5 / gib) / (2 * 61 * 128 * 56 / gib * 2048)
    assert 256 < requests < 384  # → 128·⌈requests/128⌉ = 384 a rank (the real MLA cache would hold ~1,000)
    assert bench_settings(m, acc.hbm_bytes, row) == (384, 2048)


def test_untuned_quantisation_takes_buildconfig_defaults_and_prompts_fit_without_chunking():
    m = get_catalog().model("gpt-oss-120b")
    row = {"id": "x", "input_tokens": 8192, "output_tokens": 1024, "tp": 1, "dp": 2, "ep": 2,
           "weights_dtype": "fp4", "kv_dtype": "fp8", "bench_quant": "mxfp4"}
    # no chunked prefill: max_num_tokens ≥ ISL + max_batch_size (benchmark/utils/general.py get_settings)
    assert bench_settings(m, 180e9, row) == (DEFAULT_MAX_BATCH_SIZE, max(DEFAULT_MAX_NUM_TOKENS, 8192 + 2048))
    assert bench_settings(m, 180e9, {**row, "chunked_prefill": True}) == (2048, 8192)
    assert bench_settings(m, 180e9, {**row, "max_batch_size": 896, "max_num_tokens": 2048}) == (896, 2048)
    with pytest.raises(InputError, match="room for"):
        bench_settings(get_catalog().model("llama-3.1-405b"), 80e9, {**row, "bench_quant": "none", "dp": 1})


def _row(**kw):
    extra, rows = S.load_dataset()
    meas = next(r for r in rows if r.id == "trtllm10-h200-fp8-llama3-70b-tp1-i1000-o1000")
    return extra, replace(meas, row={**meas.row, **kw})


def test_simulated_run_equals_the_static_batch_when_every_request_starts_at_once():
    """32 requests that all fit the batch and one pass's token budget (engine overheads off): prefill of all 32
    prompts in one pass, then 999 decode passes at batch 32 — exactly the static-batch run B·O/(t_run·n)."""
    extra, meas = _row(requests=32, max_batch_size=32, max_num_tokens=32 * 1000 + 32, engine="none")
    m = S._model(meas.model, extra)
    sim = S._bench_throughput(meas, m, "mid", extra)
    static = S._throughput_at(meas, m, "mid", extra, 32)
    assert sim == pytest.approx(static, rel=0.01)
    # the batch limit binds: 64 requests at 32 a time run as two such runs back to back, at the same rate
    extra, meas2 = _row(requests=64, max_batch_size=32, max_num_tokens=32 * 1000 + 32, engine="none")
    assert S._bench_throughput(meas2, m, "mid", extra) == pytest.approx(static, rel=0.02)
    _, no_req = _row()
    no_req = replace(no_req, row={k: v for k, v in no_req.row.items() if k != "requests"})
    with pytest.raises(InputError, match="needs `requests`"):
        S._bench_throughput(no_req, m, "mid", extra)


def test_trtllm_bench_rows_are_predicted_with_the_simulated_scenario():
    extra, rows = S.load_dataset()
    bench = [r for r in rows if r.scenario == "trtllm_bench_throughput"]
    assert len(bench) == 78 and all("requests" in r.row for r in bench)
    ev = S.evaluate(next(r for r in bench if r.id == "trtllm-po-b200-dsr1-dep4-fp4-i1024-o1024"), extra)
    assert ev.low <= ev.predicted <= ev.high and math.isfinite(ev.predicted)
