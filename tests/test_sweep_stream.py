"""Sweeps of any size (issue 16): chunked evaluation equals one call, streamed CSV and Parquet hold every
point with the same numbers as the JSON list, `bound` is a small categorical column, a failure part-way
leaves no partial file, and an output that cannot fit on disk is refused before any work."""

from __future__ import annotations

import json

import numpy as np
import pytest

from roofline.requests.sweep import BOUND_NAMES, SweepRequest, chunks, run_sweep, write

GRID = dict(model="llama-3-70b", system="dgx-h100", batch="1:4096:60", context="0,512,1024,2048,4096,8000")


def test_chunks_cover_the_grid_in_order_and_match_one_call():
    req = SweepRequest.of(**GRID, chunk_points=1000)
    parts = list(chunks(req, 7))  # 7-point chunks: several per batch value
    assert parts[0][0] == 0 and parts[-1][1] == req.points
    assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))
    step_s = np.concatenate([c["step_s"] for _, _, c in parts])
    whole = list(chunks(req, req.points))[0][2]
    assert np.array_equal(step_s, whole["step_s"])
    # batch-major order: point i = (batch[i // n_context], context[i % n_context])
    b = np.concatenate([c["batch"] for _, _, c in parts])
    assert np.array_equal(b, np.repeat(req._batches, req._contexts.size))


def test_parquet_and_csv_hold_the_json_numbers(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    req = SweepRequest.of(**GRID, parquet=str(tmp_path / "s.parquet"), csv=str(tmp_path / "s.csv"),
                          chunk_points=1000)
    assert write(req) == req.points
    rows = run_sweep(SweepRequest.of(**GRID))
    t = pq.read_table(tmp_path / "s.parquet")
    assert t.num_rows == req.points == len(rows)
    assert str(t.schema.field("bound").type) == "dictionary<values=string, indices=uint8, ordered=0>"
    assert t.column("bound").to_pylist() == [r["bound"] for r in rows]
    assert np.allclose(t.column("step_s").to_numpy(), [r["step_s"] for r in rows], rtol=0, atol=0)
    assert t.column("batch").type == "int64"
    lines = (tmp_path / "s.csv").read_text().splitlines()
    assert len(lines) == req.points + 1 and lines[0].split(",")[0] == '"batch"'
    first = lines[1].split(",")
    assert float(first[5]) == rows[0]["step_s"] and first[-2] == f'"{rows[0]["bound"]}"'


def test_bound_codes_name_compute_and_memory():
    req = SweepRequest.of(model="llama-3-70b", system="dgx-h100", batch="1,4096", context="0")
    cols = list(chunks(req))[0][2]
    assert cols["bound"].dtype == np.uint8
    assert [BOUND_NAMES[c] for c in cols["bound"]] == ["memory", "compute"]


def test_failure_part_way_removes_partial_files(tmp_path, monkeypatch):
    import roofline.requests.sweep as S

    req = SweepRequest.of(**{**GRID, "batch": "1:4096:400"}, parquet=str(tmp_path / "s.parquet"),
                          csv=str(tmp_path / "s.csv"), chunk_points=1000)
    assert req.points > 1000  # two chunks at least
    real, calls = S.evaluate_chunk, []

    def flaky(r, a, b):
        calls.append(a)
        if len(calls) == 2:
            raise MemoryError("simulated")
        return real(r, a, b)

    monkeypatch.setattr(S, "evaluate_chunk", flaky)
    with pytest.raises(MemoryError):
        S.write(req)
    assert not (tmp_path / "s.parquet").exists() and not (tmp_path / "s.csv").exists()


def test_output_that_cannot_fit_is_refused_up_front(tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    from roofline.errors import InputError

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(10**9, 10**9 - 1000, 1000))
    with pytest.raises(InputError, match=r"points need about .* GB, only 0.0 GB free there"):
        SweepRequest.of(**GRID, parquet=str(tmp_path / "s.parquet"))
    assert not (tmp_path / "s.parquet").exists()


def test_cli_streams_large_sweep_and_refuses_printing_it(run_cli, tmp_path):
    out = tmp_path / "big.parquet"
    code, stdout, err = run_cli("sweep", "-m", "llama-3-70b", "-s", "dgx-h100", "--batch", "1:4096:2000",
                                "--context", "1:8000:300", "--parquet", str(out), "--chunk-points", "50000")
    assert code == 0, err
    n = int(stdout.split()[1])
    assert n > 100_000 and out.stat().st_size > 0
    code, _, err = run_cli("sweep", "-m", "llama-3-70b", "-s", "dgx-h100", "--batch", "1:4096:2000",
                           "--context", "1:8000:300", "--json")
    assert code == 1 and "too many to print" in err


def test_cli_json_keeps_bound_names(run_cli):
    code, out, err = run_cli("sweep", "-m", "llama-3-70b", "-s", "dgx-h100", "--batch", "1,4096", "--context", "0", "--json")
    assert code == 0, err
    assert [r["bound"] for r in json.loads(out)] == ["memory", "compute"]
