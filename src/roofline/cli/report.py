"""`roofline report --out DIR`: the lecture, recomputed, as an HTML page with figures."""

from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report_cmd(
        out: Annotated[str, typer.Option("--out", "-o", help="Directory to write index.html and fig/ into.")] = "report",
    ) -> None:
        """Write the lecture report: every worked number with formula, inputs, result and source."""
        import pkgutil

        from ..report import build_report
        from ..report import chapters as ch
        from ..requests.rules import output_dir
        from .render import progress

        output_dir("--out", out)  # a file in its place: one line before any work

        n = sum(1 for i in pkgutil.iter_modules(ch.__path__) if not i.name.startswith("_"))
        with progress(n, "building report") as advance:
            path = build_report(out, progress=advance)
        print(f"wrote {path}")
