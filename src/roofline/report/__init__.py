"""`roofline report`: an HTML page, with figures, that recomputes every worked number of the lecture.

Chapters live in `roofline.report.chapters`, one module per chapter, each with
`chapter(fig_dir: Path) -> Chapter`; they are discovered and ordered by `Chapter.key`. A worked number
carries its formula, inputs, the value the library computes, the lecture's stated value and the
source; the page flags any computed value that misses the stated one by more than its tolerance.
"""

from __future__ import annotations

import html
import importlib
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Worked:
    id: str  # spec §9 id where there is one (T04), else a short label
    title: str
    formula: str
    inputs: dict
    result: float | str  # computed by the library, never typed in
    unit: str = ""
    expected: float | str | None = None  # the lecture's (or source's) stated value, for comparison
    rel_tol: float | None = None  # when set, |result/expected - 1| must be within it
    source: str = ""

    @property
    def ok(self) -> bool | None:
        if self.rel_tol is None or not isinstance(self.expected, (int, float)) or isinstance(self.result, str):
            return None
        if self.expected == 0:
            return abs(self.result) <= self.rel_tol
        return abs(self.result / self.expected - 1) <= self.rel_tol


@dataclass
class Figure:
    path: str  # relative to the report directory
    caption: str


@dataclass
class Chapter:
    key: float  # ordering: lecture section number (1, 2, 3, 3.4, 4, 5, 6, ...)
    title: str
    intro: str = ""
    items: list[Worked] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def collect_chapters(fig_dir: Path) -> list[Chapter]:
    from . import chapters

    out = []
    for info in pkgutil.iter_modules(chapters.__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{chapters.__name__}.{info.name}")
        out.append(mod.chapter(fig_dir))
    return sorted(out, key=lambda c: c.key)


def _fmt(v) -> str:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        a = abs(v)
        if a != 0 and (a >= 1e6 or a < 1e-3):
            return f"{v:.4g}"
        return f"{v:,.6g}"
    return html.escape(str(v))


def build_report(out_dir: str | Path, progress=None) -> Path:
    """Write `out_dir/index.html` and `out_dir/fig/*.png`; return the HTML path."""
    out = Path(out_dir)
    fig_dir = out / "fig"
    fig_dir.mkdir(parents=True, exist_ok=True)
    chapters = collect_chapters(fig_dir)
    parts = [_HEAD]
    n_items = n_bad = 0
    toc = "".join(f'<li><a href="#ch{i}">{html.escape(c.title)}</a></li>' for i, c in enumerate(chapters))
    parts.append(f"<nav><ol>{toc}</ol></nav>")
    for i, c in enumerate(chapters):
        parts.append(f'<section id="ch{i}"><h2>{html.escape(c.title)}</h2>')
        if c.intro:
            parts.append(f"<p>{html.escape(c.intro)}</p>")
        if c.items:
            parts.append("<table><tr><th>id</th><th>quantity</th><th>formula</th><th>inputs</th>"
                         "<th>computed</th><th>lecture / source</th><th>check</th><th>source</th></tr>")
            for w in c.items:
                n_items += 1
                ok = w.ok
                n_bad += ok is False
                mark = {True: '<span class="ok">&#10003;</span>', False: '<span class="bad">&#10007; MISMATCH</span>',
                        None: ""}[ok]
                ins = "<br>".join(f"{html.escape(str(k))} = {_fmt(v)}" for k, v in w.inputs.items())
                exp = "" if w.expected is None else _fmt(w.expected)
                parts.append(
                    f"<tr><td>{html.escape(w.id)}</td><td>{html.escape(w.title)}</td>"
                    f"<td><code>{html.escape(w.formula)}</code></td><td>{ins}</td>"
                    f"<td><b>{_fmt(w.result)}</b> {html.escape(w.unit)}</td><td>{exp}</td><td>{mark}</td>"
                    f"<td>{html.escape(w.source)}</td></tr>")
            parts.append("</table>")
        for f in c.figures:
            parts.append(f'<figure><img src="{html.escape(f.path)}" alt="{html.escape(f.caption)}">'
                         f"<figcaption>{html.escape(f.caption)}</figcaption></figure>")
        for n in c.notes:
            parts.append(f'<p class="note">{html.escape(n)}</p>')
        parts.append("</section>")
        if progress:
            progress(1)
    parts.append(f"<footer>{n_items} worked numbers recomputed by roofline; {n_bad} mismatches.</footer></body></html>")
    path = out / "index.html"
    path.write_text("\n".join(parts))
    return path


_HEAD = """<!doctype html><html><head><meta charset="utf-8"><title>roofline - the lecture, recomputed</title>
<style>body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;width:100%;font-size:0.88em;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 6px;
vertical-align:top}th{background:#f3f3f3}code{font-size:0.95em}figure{margin:1.5em 0}img{max-width:100%}
.ok{color:#080;font-weight:bold}.bad{color:#c00;font-weight:bold}.note{color:#555;font-size:0.9em}
figcaption{color:#555;font-size:0.9em}</style></head><body>
<h1>How LLMs are trained and served &mdash; the lecture's numbers, recomputed by roofline</h1>
<p>Every value in the <i>computed</i> column is produced by the roofline library at build time from the inputs
shown; the next column is what the lecture (or the cited source) states. Spec ids (T01&hellip;) refer to the
worked examples of the lecture spec, &sect;9.</p>"""
