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
    ) -> None:
        """Error of the library against published measurements: median |error|, MAPE, worst, bias, coverage."""
        from ..requests.rules import output_path, text_file
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
