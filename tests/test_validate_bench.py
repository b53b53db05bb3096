"""trtllm-bench throughput, simulated (validate/bench.py): the benchmark's own engine-setting heuristic by hand,
and the simulated run against the static-batch run where the two must agree."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
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


# ---- serving benchmarks at a fixed concurrency (scenario serving_benchmark) ---------------------------------
def test_engine_scheduler_defaults_by_hand():
    from roofline.validate.bench import engine_scheduler

    h100, a100_40, b200 = 80e9, 40e9, 180e9
    assert engine_scheduler("vllm", h100)["max_num_batched_tokens"] == 8192  # >= 70 GiB: API-server defaults
    assert engine_scheduler("vllm", h100)["max_num_seqs"] == 1024
    assert (engine_scheduler("vllm", a100_40)["max_num_batched_tokens"], engine_scheduler("vllm", a100_40)["max_num_seqs"]) \
        == (2048, 256)
    assert engine_scheduler("vllm", h100)["policy"] == "chunked"
    sg = [engine_scheduler("sglang", x)["max_num_batched_tokens"] for x in (24e9, h100, 141e9, b200)]
    assert sg == [2048, 8192, 8192, 16384] and engine_scheduler("sglang", h100)["policy"] == "separate"
    t = engine_scheduler("trtllm", b200)
    assert (t["policy"], t["max_num_seqs"], t["max_num_batched_tokens"], t["kv_memory_of"], t["preemption"]) == \
        ("continuous", 2048, 8192, "free", False)
    with pytest.raises(InputError, match="no scheduler defaults"):
        engine_scheduler("atom", h100)


def test_benchmark_lengths_are_bench_servings_random_range():
    from roofline.validate.bench import benchmark_lengths

    row = {"id": "x", "input_tokens": 1024, "output_tokens": 8192, "random_range_ratio": 0.8}
    p, o = benchmark_lengths(row, 20000)
    assert p.min() >= 819 and p.max() <= 1024 and o.min() >= 6553 and o.max() <= 8192
    assert p.mean() == pytest.approx((819 + 1024) / 2, rel=0.01)
    p2, _ = benchmark_lengths(row, 20000)
    assert (p == p2).all()  # seeded by the row id
    assert (benchmark_lengths({**row, "random_range_ratio": 1.0}, 5)[0] == 1024).all()


def test_serving_benchmark_at_concurrency_one_is_prefill_then_decodes_by_hand():
    """Concurrency 1, fixed lengths, no engine overheads: each request runs alone — its TTFT is the engine's
    prefill pass of its prompt, its TPOT the mean of its decode steps over contexts P .. P + O − 2 (linear in the
    context: the step at the middle one), and the output throughput n·O over n such runs."""
    extra, rows = S.load_dataset()
    base = next(r for r in rows if r.id == "trtllm10-h200-fp8-llama3-70b-tp1-i1000-o1000")
    row = {k: v for k, v in base.row.items() if k not in ("requests", "kv_cache_fraction")}
    row.update(scenario="serving_benchmark", concurrency=1, requests=3, input_tokens=2000, output_tokens=101,
               engine="none", policy="continuous", max_num_batched_tokens=8192, kv_cache_fraction=0.9,
               kv_memory_of="total", preemption=True)
    m = S._model(base.model, extra)

    def value(q):
        meas = replace(base, scenario="serving_benchmark", row={**row, "quantity": q})
        return S._serving_benchmark(meas, m, "mid", extra)

    pre = float(S._pass(base, m, "prefill", 1, 0, prompt=2000, extra=extra).step_s)
    dec = float(S._pass(base, m, "decode", 1, 2000 + 49.5, extra=extra).step_s)
    assert value("median_ttft_s") == pytest.approx(pre, rel=0.01)
    assert value("median_tpot_s") == pytest.approx(dec, rel=0.01)
    assert value("median_tokens_per_s_per_user") == pytest.approx(1 / dec, rel=0.01)
    assert value("output_throughput_per_gpu") == pytest.approx(101 / (pre + 100 * dec), rel=0.01)
    with pytest.raises(InputError, match="needs `quantity`"):
        S._serving_benchmark(replace(base, row={**row, "quantity": "p99"}), m, "mid", extra)
    with pytest.raises(InputError, match="give policy"):
        S._serving_benchmark(replace(base, row={**{k: v for k, v in row.items() if k != "policy"},
                                                "quantity": "median_tpot_s", "engine": "atom"}), m, "mid", extra)


@pytest.mark.parametrize("name", ["moe_scale4", "moe_scale5", "moe_scale6"])
def test_moe_sets_4_to_6_predictions_reproduce_and_came_before_their_measured_values(itl_from_every_sequence, itl_first_gap_one_pass, collective_sizes_in_bytes, tokeniser_in_parallel, datasheet_memory,
        name, engines_before_eager_floor, engines_before_schedule_ahead, closed_loop_rounds_before_fixed_point_rows):
    """MoE sets 4, 5 and 6 (serving_benchmark rows, pre-registered 2026-11-26): the committed predictions are what the
    model gives today (every 9th row) with the engine rows, closed-loop rounds and tokenising they were made with (the
    eager-pass floor, scheduling one batch ahead, the closed loop's fixed point and the one tokeniser came after,
    docs/validation.md), and at their
    commits no measured value of theirs was in the dataset."""
    import subprocess
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[1]
    pred = yaml.safe_load((root / "docs" / "preregistered" / f"{name}_predictions.yaml").read_text())
    extra, rows = S.load_dataset()
    by = {r.id: r for r in rows}
    for p in pred["predictions"][:3] + pred["predictions"][3::9]:  # one benchmark's three rows, then a sample
        ev = S.evaluate(by[p["id"]], extra)
        assert [ev.predicted, ev.low, ev.high] == pytest.approx([p["predicted"], p["low"], p["high"]], rel=1e-9)
        assert "heldout_for" in by[p["id"]].row
    old = subprocess.run(["git", "show", f"{pred['at_commit']}:src/roofline/validate/data/measurements.yaml"],
                         capture_output=True, text=True, cwd=root)
    if old.returncode != 0:
        pytest.skip("no git history")
    assert all(p["id"] not in old.stdout for p in pred["predictions"])


def test_closed_loop_client_by_hand():
    """bench_serving --max-concurrency C: request C + j is sent when the (j + 1)-th response completes. On a toy
    engine where every request takes 1 s from its send, C = 2 and 4 requests: sends 0, 0, 1, 1 and completions
    1, 1, 2, 2 — the fixed point, reached from all sends at 0 by one resend (whose completions send the same)."""
    from types import SimpleNamespace

    from roofline.validate.bench import closed_loop_run, closed_loop_sends

    assert list(closed_loop_sends([3.0, 1.0, 2.0, 5.0], 2)) == [0.0, 0.0, 1.0, 2.0]
    assert list(closed_loop_sends([3.0, 1.0], 5)) == [0.0, 0.0]
    calls = []

    def engine(sends):
        calls.append(list(sends))
        return SimpleNamespace(finish_s=np.asarray(sends) + 1.0)

    tr = closed_loop_run(engine, 4, 2)
    assert list(tr.finish_s) == [1.0, 1.0, 2.0, 2.0] and calls == [[0, 0, 0, 0], [0, 0, 1, 1]]


def test_closed_loop_serving_benchmark_matches_all_at_once_at_concurrency_one():
    """With one request in flight the engine never sees a queue: the closed-loop client's TTFT, TPOT and throughput
    equal the all-at-once replay's (admission = send); an unknown client is one clear error."""
    extra, rows = S.load_dataset()
    base = next(r for r in rows if r.id == "trtllm10-h200-fp8-llama3-70b-tp1-i1000-o1000")
    row = {k: v for k, v in base.row.items() if k not in ("requests", "kv_cache_fraction")}
    row.update(scenario="serving_benchmark", concurrency=1, requests=3, input_tokens=2000, output_tokens=101,
               engine="trtllm")
    m = S._model(base.model, extra)
    for q in ("median_ttft_s", "median_tpot_s", "output_throughput_per_gpu"):
        a = S._serving_benchmark(replace(base, row={**row, "quantity": q}), m, "mid", extra)
        b = S._serving_benchmark(replace(base, row={**row, "quantity": q, "client": "closed_loop"}), m, "mid", extra)
        assert b == pytest.approx(a, rel=0.02), q
    with pytest.raises(InputError, match="client must be"):
        S._serving_benchmark(replace(base, row={**row, "quantity": "median_ttft_s", "client": "poisson"}), m, "mid",
                             extra)
