"""`roofline validate`: predict every published measurement, print the error table, plot, write docs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .render import print_json, table


def register(app: typer.Typer) -> None:
    @app.command("validate")
    def validate_cmd(
        plot: Annotated[Optional[Path], typer.Option("--plot", help="Write the predicted-vs-measured log-log plot here (.png/.svg).")] = None,
        write_docs: Annotated[Optional[Path], typer.Option("--write-docs", help="Write the generated validation markdown here (e.g. docs/validation.md); the plot goes next to it.")] = None,
        dataset: Annotated[Optional[Path], typer.Option("--dataset", help="A measurements YAML file instead of the packaged one.")] = None,
        rows: Annotated[bool, typer.Option("--rows", help="Also print every measurement with its prediction.")] = False,
        kernels: Annotated[str, typer.Option("--kernels", help="Kernel times of the inference rows: the family's cited factors (factor) or measured kernel tables where covered (tables; docs/kernels.md).")] = "factor",
        json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
        serving: Annotated[bool, typer.Option("--serving", help="Score the serving simulator's pre-registered predictions against published serving runs (docs/validation_serving.md); with --write-docs, write that page.")] = False,
        set_name: Annotated[Optional[str], typer.Option("--set", help="With --serving: the validation set, a (data/serving_runs.yaml, the default), b (data/serving_runs_b.yaml, docs/preregistered/serving_*_b.yaml), c to z, aa to az, ba to bz, ca to ct (the _c … _z, _aa … _az, _ba … _bz and _ca … _ck files), all (every set pooled, as registered), or a comma-separated list of sets pooled (e.g. bd,be,bf,bg,bh).")] = None,
    ) -> None:
        """Error of the library against published measurements: median |error|, MAPE, worst, bias, coverage."""
        from ..requests.rules import output_path, text_file

        if serving:
            return _serving(json, rows, write_docs, dataset, plot, kernels, set_name or "a")
        if set_name is not None:
            from ..requests.rules import UsageError

            raise UsageError("--set picks a serving validation set; use it with --serving")
        from ..validate import by_metric, evaluate_all
        from ..validate.report import SUMMARY_COLUMNS, summary_rows
        from .render import progress

        if dataset is not None:  # missing, binary or non-UTF-8: one line before any work
            text_file(dataset, "--dataset file", "a measurements YAML file")
        if plot is not None:
            output_path("--plot", plot, (".png", ".svg", ".pdf"))
        if write_docs is not None:
            output_path("--write-docs", write_docs, (".md",))
        with progress(None, "predicting the published measurements", quiet=json):
            if kernels not in ("factor", "tables"):
                from ..requests.rules import UsageError

                raise UsageError(f"--kernels must be factor or tables, got {kernels!r}; pick one of those")
            evals = evaluate_all(str(dataset) if dataset else None, kernels)
        summaries = by_metric(evals)
        if write_docs is not None:
            from ..plots.validation import predicted_vs_measured
            from ..validate.report import markdown

            img = write_docs.with_name("validation.png")
            predicted_vs_measured(evals, img)
            write_docs.parent.mkdir(parents=True, exist_ok=True)
            write_docs.write_text(markdown(evals, img.name))
        if plot is not None:
            from ..plots.validation import predicted_vs_measured

            with progress(None, f"plotting {plot}", quiet=json):
                predicted_vs_measured(evals, plot)
        if json:
            return print_json({
                "summary": [s.__dict__ for s in summaries],
                "measurements": [{"id": e.measurement.id, "metric": e.measurement.metric,
                                  "accelerator": e.measurement.accelerator, "unit": e.measurement.unit,
                                  "measured": e.measurement.measured, "predicted": e.predicted, "low": e.low,
                                  "high": e.high, "error": e.error, "covered": e.covered,
                                  "sharding": e.measurement.sharding, "source": e.measurement.source}
                                 for e in evals]})
        if rows:
            table("measurements", ["id", "measured", "predicted", "low", "high", "error"],
                  [[e.measurement.id, e.measurement.measured, e.predicted, e.low, e.high, f"{e.error:+.0%}"]
                   for e in evals])
        n_acc = len({e.measurement.accelerator for e in evals})
        table(f"validation: {len(evals)} published measurements on {n_acc} accelerators", SUMMARY_COLUMNS,
              summary_rows(summaries),
              caption="error = predicted/measured - 1; coverage = share inside the efficiency-spread interval")


def _serving(json: bool, rows: bool, write_docs, dataset, plot, kernels: str, set_name: str = "a") -> None:
    """`roofline validate --serving`: per run and metric the error of the pre-registered serving predictions,
    mean/median APE and coverage by metric family, metric, engine, GPU and source (validate/serving.py)."""
    from ..requests.rules import UsageError, output_path
    from ..validate import serving as S

    extra = [f for f, v in (("--dataset", dataset), ("--plot", plot), ("--kernels", kernels != "factor")) if v]
    if extra:
        raise UsageError(f"--serving scores the serving runs of validate/data/serving_runs.yaml; drop {', '.join(extra)}")
    names = S.pooled_sets(set_name)  # every set (all), a list of them, or None: one set
    pooled = names is not None
    if not pooled:
        S.set_paths(set_name)  # an unknown set: one line before any work
    if write_docs is not None:
        output_path("--write-docs", write_docs, (".md",))
    res = S.compare_all(names) if names is not None else S.compare(set_name=set_name)
    tabs = S.summary_tables(res)
    some = names is not None and set_name != "all"  # a list of sets: their implied end-to-end latency pooled too
    implied_rows = [x for n in names for x in S.implied_e2e_of(n)] if names is not None and some else []
    if write_docs is not None:
        write_docs.parent.mkdir(parents=True, exist_ok=True)
        write_docs.write_text(S.markdown(res, set_name=set_name) if names is None else
                              S.markdown_all(res, names if some else None, write_docs.as_posix()))
    if json:
        pivots = {f"by_{k}_and_family": S.pivot(res, k) for k in S.ALL_KEYS} if pooled else {}
        implied = ({"implied_e2e": implied_rows} if some else {} if pooled else {"implied_e2e": S.implied_e2e_of(set_name)})
        return print_json({"rows": res, **{f"by_{k}": v for k, v in tabs.items()}, **pivots, **implied})
    if rows:
        table("serving runs", ["run", "metric", "measured s", "predicted s", "low", "high", "error", "in", "note"],
              [[r["run"], r["metric"], f"{r['measured']:.4g}", "-", "-", "-", "-", "no", r["note"]]
               if r.get("infeasible") else
               [r["run"], r["metric"], f"{r['measured']:.4g}", f"{r['predicted']:.4g}", f"{r['low']:.4g}",
                f"{r['high']:.4g}", f"{r['error']:+.0%}", "yes" if r["covered"] else "no",
                ("not modelled" if not r["modelled"] else "") + (" past saturation" if r["saturated"] else "")]
               for r in res])
    if pooled:
        def cell(c):
            return "-" if c is None else f"{c['mean_ape']:.0%} / {c['median_ape']:.0%} ({c['median_error']:+.0%}, {c['n']})"

        for key in S.ALL_KEYS:
            table(f"serving validation, every set pooled, by {key.replace('_', ' ')}",
                  [key.replace("_", " "), "end-to-end", "ITL / TPOT", "TTFT"],
                  [[c[key], cell(c["e2e"]), cell(c["itl"]), cell(c["ttft"])] for c in S.pivot(res, key)],
                  caption="mean APE / median APE (median error, n) over the committed predictions of every set")
    if implied_rows:
        table("implied end-to-end latency (derived: TTFT + (output - 1) x TPOT)",
              ["runs", "n", "mean APE", "median APE", "median error"],
              [[label, n, f"{mean:.0%}", f"{median:.0%}", f"{bias:+.0%}"]
               for label, n, mean, median, bias in S.implied_e2e_summary(implied_rows)],
              caption="from the committed predictions and the measured values of runs that score TTFT and TPOT only")
    for key in ("family",) if pooled else ("family", "metric", "engine", "gpu"):
        table(f"serving validation by {key}", [key, "n", "mean APE", "median APE", "median error", "coverage",
                                                "mean APE unsaturated (n)"],
              [[s[key], s["n"], f"{s['mean_ape']:.0%}", f"{s['median_ape']:.0%}", f"{s['median_error']:+.0%}",
                f"{s['coverage']:.0%}", "-" if s["mean_ape_unsaturated"] is None else
                f"{s['mean_ape_unsaturated']:.0%} ({s['n_unsaturated']})"] for s in tabs[key]],
              caption="error = predicted/measured - 1 over the modelled metrics; goal: e2e and itl <= 10%, ttft <= 20%")
