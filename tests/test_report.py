"""`roofline report` (what `make demo` runs): every chapter renders, every figure it links exists, and
no worked number misses the lecture's stated value."""

import pkgutil
import re

import matplotlib

matplotlib.use("Agg")


def test_report_builds_with_all_chapters_and_no_mismatch(tmp_path):
    from roofline.report import build_report, chapters

    text = build_report(tmp_path).read_text()
    modules = [i.name for i in pkgutil.iter_modules(chapters.__path__) if not i.name.startswith("_")]
    assert len(re.findall(r'<section id="ch\d+">', text)) == len(modules) >= 9
    footer = re.search(r"(\d+) worked numbers recomputed by roofline; (\d+) mismatches", text)
    assert footer and int(footer.group(1)) >= 100 and footer.group(2) == "0"
    srcs = re.findall(r'<img src="([^"]+)"', text)
    assert len(srcs) >= 15
    for src in srcs:
        f = tmp_path / src
        assert f.is_file() and f.stat().st_size > 5_000, src
    assert "How wrong it is" in text and (tmp_path / "fig" / "validation.png").is_file()
