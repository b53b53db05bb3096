"""`roofline report`: an HTML page, with figures, that recomputes every worked number of the lecture.

Chapters live in `roofline.report.chapters`, one module per chapter, each with
`chapter(fig_dir: Path) -> Chapter`; they are discovered and ordered by `Chapter.key`. A worked number
carries its formula, inputs, the value the library computes, the lecture's stated value and the
source; the page flags any computed value that misses the stated one by more than its tolerance.

Every worked number also carries its provenance (`Worked.kind`): a value the lecture STATES (spec tags
S, D, F), the project's own INFERENCE from the lecture's equations (spec tag I: algebra the lecture never
does, e.g. T10, T11, T19, T32, T42), an EXTERNAL source (X: datasheets, papers, price lists), or a
LIBRARY figure with nothing to compare. Only the first kind counts as "checked against the lecture".
"""

from __future__ import annotations

import html
import importlib
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path

#: provenance tag of each worked example in spec §9 (the lecture spec's own tag column, copied as data):
#: S said by Reiner Pope, D said by the host and accepted, F the host's flashcards, I inferred, X external
SPEC_TAGS = {
    "T01": "S", "T02": "S/D", "T03": "I", "T04": "S", "T05": "S", "T06": "S", "T07": "I", "T08": "S/I",
    "T09": "S", "T10": "I", "T11": "I", "T12": "I", "T13": "I", "T14": "I", "T15": "I", "T16": "S",
    "T17": "S", "T18": "S/I", "T19": "I", "T20": "S", "T21": "I", "T22": "D", "T23": "S/I", "T24": "S",
    "T25": "D/S", "T26": "I", "T27": "D", "T28": "S", "T29": "S", "T30": "S", "T31": "F/S", "T32": "I",
    "T33": "S", "T34": "S", "T35": "S", "T36": "I", "T37": "D/S/F", "T38": "S/I", "T39": "S/I", "T40": "S/I",
    "T41": "D/X", "T42": "I", "T43": "S/I", "T44": "S/I", "T45": "X/I", "T46": "S/I",
}

LECTURE, INFERENCE, EXTERNAL, CROSSCHECK, LIBRARY = "lecture", "inference", "external", "cross-check", "library"
KIND_LABELS = {LECTURE: "lecture states it", INFERENCE: "[I] project inference", EXTERNAL: "[X] external source",
               CROSSCHECK: "cross-check: a second derivation in roofline", LIBRARY: "library figure"}


def provenance(item_id: str, source: str, expected) -> str:
    """Kind of a worked number. A spec §9 id takes its spec tag: any of S/D/F means the lecture states the
    value; I alone (or I/X) is the project's inference; X alone external. Other items read the tags in their
    source text, an [I] winning (the project's own step, even when it starts from something said). An item
    with no stated value is a library figure."""
    if expected is None:
        return LIBRARY
    tag = SPEC_TAGS.get(item_id)
    if tag is not None:
        tags = tag.split("/")
        if any(t in tags for t in ("S", "D", "F")):
            return LECTURE
        return INFERENCE if "I" in tags else EXTERNAL
    if "[I]" in source or " I]" in source:
        return INFERENCE
    if any(f"[{t}" in source for t in ("S", "D", "F")) or "flashcards" in source:
        return LECTURE
    return EXTERNAL if source else LIBRARY


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
    kind: str = ""  # LECTURE / INFERENCE / EXTERNAL / LIBRARY; "" = from the spec tag or the source text

    @property
    def provenance(self) -> str:
        return self.kind or provenance(self.id, self.source, self.expected)

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
    counts = {k: [0, 0] for k in KIND_LABELS}  # kind -> [checked, mismatches]
    toc = "".join(f'<li><a href="#ch{i}">{html.escape(c.title)}</a></li>' for i, c in enumerate(chapters))
    parts.append(f"<nav><ol>{toc}</ol></nav>")
    for i, c in enumerate(chapters):
        parts.append(f'<section id="ch{i}"><h2>{html.escape(c.title)}</h2>')
        if c.intro:
            parts.append(f"<p>{html.escape(c.intro)}</p>")
        if c.items:
            parts.append("<table><tr><th>id</th><th>quantity</th><th>formula</th><th>inputs</th>"
                         "<th>computed</th><th>stated value</th><th>check</th><th>kind</th><th>source</th></tr>")
            for w in c.items:
                n_items += 1
                ok = w.ok
                n_bad += ok is False
                kind = w.provenance
                if ok is not None:
                    counts[kind][0] += 1
                    counts[kind][1] += ok is False
                mark = {True: '<span class="ok">&#10003;</span>', False: '<span class="bad">&#10007; MISMATCH</span>',
                        None: ""}[ok]
                ins = "<br>".join(f"{html.escape(str(k))} = {_fmt(v)}" for k, v in w.inputs.items())
                exp = "" if w.expected is None else _fmt(w.expected)
                parts.append(
                    f"<tr><td>{html.escape(w.id)}</td><td>{html.escape(w.title)}</td>"
                    f"<td><code>{html.escape(w.formula)}</code></td><td>{ins}</td>"
                    f"<td><b>{_fmt(w.result)}</b> {html.escape(w.unit)}</td><td>{exp}</td><td>{mark}</td>"
                    f'<td class="{kind}">{html.escape(KIND_LABELS[kind])}</td>'
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
    lec, inf, ext, cc = counts[LECTURE], counts[INFERENCE], counts[EXTERNAL], counts[CROSSCHECK]
    parts.append(
        f"<footer>{n_items} worked numbers recomputed by roofline; {n_bad} mismatches. "
        f"<b>{lec[0]} checked against the lecture's stated values ({lec[1]} mismatches)</b>; "
        f"{inf[0]} are the project's own inferences [I] checked against the spec's algebra ({inf[1]} mismatches); "
        f"{ext[0]} checked against external sources [X] ({ext[1]} mismatches); {cc[0]} cross-checks between two "
        f"derivations in roofline ({cc[1]} mismatches); the rest are library figures with "
        f"no stated value.</footer></body></html>")
    path = out / "index.html"
    path.write_text("\n".join(parts))
    return path


_HEAD = """<!doctype html><html><head><meta charset="utf-8"><title>roofline - the lecture, recomputed</title>
<style>body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;width:100%;font-size:0.88em;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 6px;
vertical-align:top}th{background:#f3f3f3}code{font-size:0.95em}figure{margin:1.5em 0}img{max-width:100%}
.ok{color:#080;font-weight:bold}td.inference{color:#8a5a00;font-style:italic}td.external{color:#555}.bad{color:#c00;font-weight:bold}.note{color:#555;font-size:0.9em}
figcaption{color:#555;font-size:0.9em}</style></head><body>
<h1>How LLMs are trained and served &mdash; the lecture's numbers, recomputed by roofline</h1>
<p>Every value in the <i>computed</i> column is produced by the roofline library at build time from the inputs
shown; the next column is the stated value it is checked against. The <i>kind</i> column says whose value
that is: the lecture's own (Reiner Pope or the host said it), the project's inference from the lecture's
equations [I] (algebra the lecture never does; checking it checks roofline against itself, not against the
lecture), or an external source [X]. Spec ids (T01&hellip;) refer to the worked examples of the lecture
spec, &sect;9, and carry its tags.</p>"""
