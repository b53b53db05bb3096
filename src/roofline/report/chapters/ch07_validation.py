"""How wrong the library is: the error of its predictions against published measurements (roofline validate).

Not a lecture chapter: the lecture's numbers are checked in the chapters before; this one shows, for the
reader of the report, how far the same formulas plus the cited efficiency model land from measured runs.
"""

from __future__ import annotations

from pathlib import Path

from .. import Chapter, Figure, Worked


def chapter(fig_dir: Path) -> Chapter:
    from ...plots.validation import predicted_vs_measured
    from ...validate import GOALS, by_metric, evaluate_all

    evals = evaluate_all()
    predicted_vs_measured(evals, fig_dir / "validation.png")
    items = []
    for s in by_metric(evals):
        goal = GOALS.get(s.group)
        items.append(Worked(
            s.group, f"median |error| over {s.count} measurements (bias {s.bias:+.0%}, coverage {s.coverage:.0%})",
            "median |predicted/measured − 1|", {"worst": f"{s.worst_id} ({s.worst:.0%})"},
            f"{s.median_abs:.1%}", "", None if goal is None else f"goal ≤ {goal:.0%}", None,
            "roofline validate (docs/validation.md)"))
    by_id = {e.measurement.id: e for e in evals}
    for rid in ("llama3-405b-h100-16384", "trtllm08-h100-fp8-llama2-70b-tp2-b64-i2048-o2048",
                "gptfast-a100-llama2-70b-bf16-tp4", "nemo2409-h100-fp8-gpt3-175b-512gpu",
                "deepseek-day6-h800-decode-node-throughput"):
        e = by_id.get(rid)
        if e is None:
            continue
        items.append(Worked(
            "row", f"{rid}: predicted vs measured ({e.error:+.0%})", e.measurement.scenario,
            {"layout": e.measurement.sharding, "interval": f"[{e.low:.4g}, {e.high:.4g}]"},
            float(e.predicted), e.measurement.unit, float(e.measurement.measured), None, e.measurement.source))
    return Chapter(
        key=7.0,
        title="How wrong it is: predictions against published measurements",
        intro=("Every cited measurement in roofline's validation set predicted with the same formulas plus the "
               "efficiency model (cited factors, none fitted to these rows). Error = predicted/measured − 1; the "
               "interval is the range over the factors' spread. The goals are not all met: docs/validation.md "
               "says where the model misses and why."),
        items=items,
        figures=[Figure("fig/validation.png", "Predicted against measured, log-log, with ±10% and ±25% bands")],
        notes=["Scenario choices made after seeing a row's result are disclosed in docs/validation.md, with the "
               "error without those rows; the TensorRT-LLM v0.8.0, NeMo FP8 and gpt-fast rows were added as "
               "held-out checks before the per-kernel roofline, the low-precision weight-streaming factor and "
               "the elementwise-kernel term (added after all rows' errors were seen; none has a fitted constant); "
               "the 60 TensorRT-LLM v1.0 rows were added after those changes and predicted before their errors "
               "were seen."],
    )
