"""Validation: the dataset's shape, the metrics, and the regression gate on the median error."""

import json

import numpy as np
import pytest

from roofline.cli import main
from roofline.validate import BOUNDS, by_metric, evaluate_all, load_dataset
from roofline.validate.metrics import summarize


@pytest.fixture(scope="module")
def evals():
    return evaluate_all()


def test_dataset_breadth():
    models, rows = load_dataset()
    assert len(rows) >= 70
    assert len({r.accelerator for r in rows}) >= 6
    assert {r.metric for r in rows} >= {"decode", "prefill", "throughput", "training_mfu"}
    assert any(r.model in ("mixtral-8x7b", "deepseek-v3") for r in rows)  # MoE
    for r in rows:
        assert r.source and r.date and r.measured > 0


def test_median_error_within_documented_bounds(evals):
    """`make test` fails when the median |error| rises above validate.metrics.BOUNDS (one place)."""
    for s in by_metric(evals):
        assert s.median_abs <= BOUNDS[s.group], f"{s.group}: median |error| {s.median_abs:.1%} > {BOUNDS[s.group]:.0%}"


def test_intervals_contain_their_predictions(evals):
    for e in evals:
        assert e.low <= e.predicted <= e.high, e.measurement.id


def test_metrics_on_known_numbers():
    class M:  # minimal stand-ins
        def __init__(self, i):
            self.id, self.metric = f"m{i}", "decode"

    class E:
        def __init__(self, i, err, cov):
            self.measurement, self.error, self.covered = M(i), err, cov

    s = summarize([E(0, 0.1, True), E(1, -0.3, False), E(2, 0.2, True)])
    assert s.median_abs == pytest.approx(0.2)
    assert s.mape == pytest.approx(0.2)
    assert s.worst == pytest.approx(0.3) and s.worst_id == "m1"
    assert s.bias == pytest.approx(0.1)
    assert s.coverage == pytest.approx(2 / 3)


def test_static_batch_cross_check(evals):
    """Throughput of a static batch = B·O/(t_run·n) and its e2e latency share the same t_run."""
    from roofline.validate.scenarios import _batch_run_s, _model

    models, rows = load_dataset()
    r = next(x for x in rows if x.scenario == "static_batch_throughput")
    ev = next(e for e in evals if e.measurement.id == r.id)
    t = _batch_run_s(r, _model(r.model, models), "mid")
    assert ev.predicted == pytest.approx(r.row["batch"] * r.row["output_tokens"] / (t * r.chips))


def test_cli_validate_json(capsys):
    main(["validate", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert len(d["measurements"]) >= 25
    groups = {s["group"]: s for s in d["summary"]}
    assert "all" in groups and np.isfinite(groups["all"]["median_abs"])


def test_cli_validate_writes_docs_and_plot(tmp_path, capsys):
    md = tmp_path / "validation.md"
    main(["validate", "--write-docs", str(md)])
    text = md.read_text()
    assert "median \\|err\\|" in text and "coverage" in text  # | escaped inside markdown cells
    assert (tmp_path / "validation.png").stat().st_size > 1000
    # the misses are computed from the rows, not typed: the gpt-fast TP 8 span matches the rows' errors
    import re

    from roofline.validate import evaluate_all
    tp8 = sorted(e.error for e in evaluate_all() if e.measurement.id.startswith("gptfast-")
                 and int(e.measurement.row.get("tp", 1)) == 8)
    got = re.search(r"TP 8 ([+-]\d+)%\.\.([+-]\d+)% \(n=(\d+)\)", text)
    assert got and int(got[1]) == round(tp8[0] * 100) and int(got[2]) == round(tp8[-1] * 100)
    assert int(got[3]) == len(tp8)


def test_cli_validate_missing_dataset(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["validate", "--dataset", "/nonexistent/m.yaml"])
    assert exc.value.code == 1
    assert "does not exist" in capsys.readouterr().err


def test_bad_dataset_row_is_rejected(tmp_path):
    from roofline.errors import InputError

    p = tmp_path / "m.yaml"
    p.write_text("measurements:\n  - {id: x, metric: speed, scenario: ttft_s, model: llama-3-8b, accelerator: h100, "
                 "chips: 1, measured: 1, source: s, date: d}\n")
    with pytest.raises(InputError, match="metric 'speed' not one of"):
        load_dataset(str(p))


def test_decode_attention_kind_is_checked_and_changes_only_gqa_rows():
    """decode_attention: per-query-head slows the GQA (70B) rows' decode, leaves MHA (7B) rows alone;
    an unknown kind is one clear error."""
    from dataclasses import replace

    from roofline.errors import InputError
    from roofline.validate import evaluate

    extra, rows = load_dataset()
    by_id = {r.id: r for r in rows}
    for rid, changes in (("trtllm-h100-fp8-llama2-70b-tp4-b480-i128-o2048", True),
                         ("trtllm-h100-fp8-llama2-7b-b112-i128-o2048", False)):
        r = by_id[rid]
        shared = replace(r, row={**r.row, "decode_attention": "shared"})
        a, b = evaluate(r, extra).predicted, evaluate(shared, extra).predicted
        assert (a < b * 0.9) if changes else a == pytest.approx(b)
    bad = replace(r, row={**r.row, "decode_attention": "paged"})
    with pytest.raises(InputError, match="decode_attention must be shared or per-query-head"):
        evaluate(bad, extra)


def test_training_tokens_scenario_is_the_train_steps_rate(evals):
    """tokens/s per GPU of a NeMo row = G·s/(t_step·n) of training.train_step, and MFU·peak/FLOPs gives it back."""
    from roofline.validate.scenarios import _model, _train_step

    models, rows = load_dataset()
    r = next(x for x in rows if x.scenario == "training_tokens_per_s_per_gpu")
    st = _train_step(r, _model(r.model, models), "mid", models)
    ev = next(e for e in evals if e.measurement.id == r.id)
    lay_tokens = r.row["micro_batch"] * r.row["micro_batches"] * r.row["dp"] * r.row["seq_len"]
    assert ev.predicted == pytest.approx(lay_tokens / float(st.step_s) / r.chips)
    from roofline.catalog import get_catalog
    peak = get_catalog().accelerator(r.accelerator).peak_flops("fp8")
    assert ev.predicted == pytest.approx(float(st.mfu) * peak / float(st.model_flops_per_token))


def test_bad_dataset_files_are_one_line_errors(tmp_path, capsys):
    for text, needle in (("just a string\n", "expected a mapping with a `measurements:` list"),
                         ("a: [\n", "not valid YAML")):
        f = tmp_path / "d.yaml"
        f.write_text(text)
        with pytest.raises(SystemExit) as ex:
            main(["validate", "--dataset", str(f)])
        assert ex.value.code == 1 and needle in capsys.readouterr().err


def test_plot_draws_every_metric():
    """Every metric of the dataset gets a colour and a legend entry (the FP8 training-throughput rows were
    once left out of the plot)."""
    from roofline.plots.validation import metric_colors
    from roofline.validate import evaluate_all

    evals = evaluate_all()
    colors = metric_colors(evals)
    assert set(colors) == {e.measurement.metric for e in evals} and "training_throughput" in colors
    assert len(set(colors.values())) == len(colors)


def test_kv_capacity_batch_by_hand():
    """trtllm-bench's concurrency heuristic: Llama 3.1 8B FP8 on one H100, ISL 128 / OSL 2048:
    0.90 · (85.04 GB − 8.03e9 params · 1 B) / (65,536 B of fp8 KV per token · 2,176 tokens) = 486 requests (the
    79.2 GiB an H100 reports); capped at 4096 (128/128 on the H200 reaches the cap)."""
    from roofline.validate import load_dataset
    from roofline.validate.scenarios import _model, kv_capacity_batch

    extra, rows = load_dataset()
    by_id = {r.id: r for r in rows}
    r = by_id["trtllm10-h100-fp8-llama3-8b-tp1-i128-o2048"]
    m = _model(r.model, extra)
    expect = 0.90 * (79.2 * 2**30 - 8.03e9) / (65536 * 2176)
    assert kv_capacity_batch(r, m, extra) == int(expect) == 486
    assert kv_capacity_batch(by_id["trtllm10-h200-fp8-llama3-8b-tp1-i128-o128"], m, extra) == 4096
    from dataclasses import replace

    from roofline.errors import InputError
    bad = replace(r, row={**r.row, "kv_cache_fraction": 1.5})
    with pytest.raises(InputError, match="kv_cache_fraction must be in"):
        kv_capacity_batch(bad, m, extra)
    tiny = replace(r, row={**r.row, "input_tokens": 10_000_000})
    with pytest.raises(InputError, match="the KV cache holds"):
        kv_capacity_batch(tiny, m, extra)


def test_validate_with_kernel_tables_reproduces_the_preregistered_predictions(itl_from_every_sequence, itl_first_gap_one_pass, collective_sizes_in_bytes, datasheet_memory, factors_before_kernel_latency,
                                                                              engines_before_schedule_ahead):
    """`roofline validate --kernels tables` (scenarios.evaluate(kernels="tables")) gives, row for row, the
    predictions committed before the comparison of issue 19 (docs/kernels_predictions.json), with the family
    factors of that time (the per-launch kernel latencies came later); a training row keeps the factor model."""
    import json
    from pathlib import Path

    from roofline.validate import scenarios

    pred = json.loads((Path(__file__).resolve().parents[1] / "docs" / "kernels_predictions.json").read_text())["rows"]
    extra, rows = scenarios.load_dataset()
    byid = {r.id: r for r in rows}
    from dataclasses import replace

    for p in pred[::40]:
        row = byid[p["id"]]
        if row.scenario == "trtllm_bench_throughput":  # predicted as the static batch at the KV capacity (change 8)
            row = replace(row, scenario="max_throughput_kv_capacity", row={**row.row, "scenario": "max_throughput_kv_capacity"})
        ev = scenarios.evaluate(row, extra, kernels="tables")
        assert [ev.predicted, ev.low, ev.high] == pytest.approx(p["tables"], rel=1e-9), p["id"]
    train = next(r for r in rows if r.scenario == "training_mfu")
    assert scenarios.evaluate(train, extra, kernels="tables").predicted == scenarios.evaluate(train, extra).predicted
