"""The peer that made the measurements, on the same blind rows: NVIDIA AIConfigurator's own estimate of every scored
serving run drawn from its measurement set (silicon_sample.csv), beside roofline's registered predictions.

    # 1. AIConfigurator's estimates (a Python with `pip install aiconfigurator==0.12.0`, nothing else of the project;
    #    FILE defaults to docs/peers/aiconfigurator_silicon.yaml):
    python scripts/peer_aiconfigurator.py estimate --csv silicon_sample.csv [--out FILE]
    # 2. the comparison (the project's venv; reads the committed estimates, predictions and measured values):
    .venv/bin/python scripts/peer_aiconfigurator.py compare

`estimate` reads each scored run whose `result` quotes silicon_sample.csv ("(CSV line N)", sets ab to the latest) from
the runs files, takes that CSV line's configuration columns (the CSV at ai-dynamo/aiconfigurator@095f58a51c4c, the
sets' source) and calls aiconfigurator.cli.api.cli_estimate with the arguments AIConfigurator's own accuracy script
builds from a row (ai-dynamo/aiconfigurator@095f58a51c4c tools/accuracy_regression_testing/predict_silicon_sample.py
_estimate_args: model, system, mode, backend, version, isl, osl, quantisation, batch_size and the parallel sizes),
retrying with the package's default database version when the row's version has none, as that script does (its
trigger, "Failed to load perf database", is "looks like an old-style raw version query" in 0.12.0, so any error naming
the version retries). Models whose config the package has not cached and cannot download offline get a local directory
with the cached config of the same architecture (LOCAL_STANDINS; the row's quantisation columns still say FP8 or
NVFP4). It writes AIConfigurator's TTFT and TPOT per run (ms), or the error. `compare` scores both on the runs
AIConfigurator estimated: mean and median APE of TTFT and TPOT per engine family.

Read with care: AIConfigurator is not blind to these rows (silicon_sample.csv is its own accuracy-regression set,
docs/design/prediction_regression_gate_design.md at 095f58a51c4c), its release is newer than the measurements, and
cli_estimate models a static batch of batch_size requests, not the benchmark's closed loop.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import re
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "src" / "roofline" / "validate" / "data"
OUT = REPO / "docs" / "peers" / "aiconfigurator_silicon.yaml"
PARALLEL = ("tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")
#: model_path -> the package's cached config of the same architecture (model_configs/<org>--<name>_config.json), used
#: as a local model directory because the package would otherwise download config.json from Hugging Face
LOCAL_STANDINS = {"meta-llama/Llama-3.1-8B-Instruct": "meta-llama--Meta-Llama-3.1-8B_config.json",
                  "nvidia/Llama-3.1-8B-Instruct-FP8": "meta-llama--Meta-Llama-3.1-8B_config.json",
                  "nvidia/Qwen3-32B-NVFP4": "Qwen--Qwen3-32B_config.json"}


def scored_rows() -> list[tuple[str, str, int]]:
    """(set, run id, CSV line) of every registered run that quotes silicon_sample.csv, in set order."""
    out = []
    for path in sorted(DATA.glob("serving_runs_*.yaml"), key=lambda p: (len(p.stem), p.stem)):
        s = path.stem.removeprefix("serving_runs_")
        for run in yaml.load(path.read_text(), Loader=yaml.CSafeLoader)["runs"]:
            m = re.search(r"silicon_sample\.csv.*?\(CSV line (\d+)\)", str(run.get("result", "")))
            if m:
                out.append((s, run["id"], int(m.group(1))))
    return out


def estimate_args(row: dict, standins: dict[str, str]) -> dict:
    """cli_estimate's arguments for one agg CSV row, as AIConfigurator's accuracy script builds them."""
    return dict(model_path=standins.get(row["model_path"], row["model_path"]), system_name=row["system"],
                mode=row["mode"], backend_name=row["backend"], backend_version=row["backend_version"] or None,
                isl=int(row["isl"]), osl=int(row["osl"]), gemm_quant_mode=row["gemm_quant_mode"] or None,
                moe_quant_mode=row["moe_quant_mode"] or None,
                **{f: int(row[f]) for f in ("batch_size", *PARALLEL) if row.get(f)})


def estimate(csv_path: Path, out: Path) -> None:
    import importlib.metadata
    import tempfile

    try:
        import aiconfigurator_core
        from aiconfigurator.cli.api import cli_estimate
    except ImportError:
        sys.exit("estimate needs AIConfigurator: pip install aiconfigurator==0.12.0 (in any Python 3.11+), then run "
                 "this script with that Python")
    rows = list(csv.reader(csv_path.open(newline="")))
    header = rows[0]
    cached = Path(aiconfigurator_core.__file__).parent / "model_configs"
    tmp = Path(tempfile.mkdtemp(prefix="aic_models_"))
    standins = {}
    for model, name in LOCAL_STANDINS.items():
        (tmp / model).mkdir(parents=True)
        (tmp / model / "config.json").write_text((cached / name).read_text())
        standins[model] = str(tmp / model)
    version = importlib.metadata.version("aiconfigurator")
    results, t0 = {}, time.time()
    jobs = scored_rows()
    for k, (s, rid, line) in enumerate(jobs):
        row = dict(zip(header, rows[line - 1]))
        if row["mode"] != "agg":
            results[rid] = {"set": s, "csv_line": line, "error": f"mode {row['mode']!r}: only agg rows are estimated"}
            continue
        args = estimate_args(row, standins)
        entry = {"set": s, "csv_line": line}
        for attempt in ("row version", "default version"):
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    r = cli_estimate(**args)
                entry.update(ttft_ms=float(r.ttft), tpot_ms=float(r.tpot), database=attempt)
                break
            except Exception as e:  # any error of the package's is recorded with the run, not raised
                if attempt == "row version" and args["backend_version"] is not None and "version" in str(e):
                    args["backend_version"] = None
                    continue
                entry["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
                break
        results[rid] = entry
        print(f"\r{k + 1}/{len(jobs)} runs, {time.time() - t0:.0f} s", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    doc = {"note": ("AIConfigurator's own estimates (aiconfigurator.cli.api.cli_estimate) of the scored serving runs "
                    "drawn from its silicon_sample.csv, written by scripts/peer_aiconfigurator.py estimate; ms. Not "
                    "blind: the CSV is the package's accuracy-regression set."),
           "package": f"aiconfigurator {version} (PyPI)", "csv": "ai-dynamo/aiconfigurator@095f58a51c4c "
           "aic-core/src/aiconfigurator_core/systems/silicon_sample.csv", "local_standins": LOCAL_STANDINS,
           "estimated_on": time.strftime("%Y-%m-%d"), "runs": results}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(doc, sort_keys=False, width=120))
    ok = sum("ttft_ms" in e for e in results.values())
    print(f"wrote {out}: {ok} of {len(results)} runs estimated")


def compare(out: Path = OUT, sets: list[str] | None = None) -> dict:
    """{engine family: {n, roofline: {ttft, tpot}, aiconfigurator: {ttft, tpot}}} of (mean, median) APE over the runs
    both predicted (of `sets`, default every set estimated), from the committed estimates, registered predictions and
    measured values."""
    import numpy as np

    from roofline.validate import serving as S

    by_set: dict[str, dict] = {}
    for rid, e in yaml.safe_load(out.read_text())["runs"].items():
        by_set.setdefault(e["set"], {})[rid] = e
    pairs: dict[str, list] = {}
    for s in sorted(set(by_set) & set(sets or S.SETS), key=S.SETS.index):
        sp = S.set_paths(s)
        pred, meas = S._load(sp["predictions"])["runs"], S._load(sp["measured"])["runs"]
        runs = {r["id"]: r for r in S.load_runs(set_name=s)["runs"]}
        for rid, e in by_set[s].items():
            if "ttft_ms" not in e or rid not in pred:
                continue
            m, p = meas[rid], pred[rid]["metrics"]
            if not all(k in m and k in p for k in ("ttft_mean", "tpot_mean")):
                continue
            fam = S._engine_family(runs[rid]["engine"])
            pairs.setdefault(fam, []).append(
                [p["ttft_mean"]["value"] / m["ttft_mean"] - 1, p["tpot_mean"]["value"] / m["tpot_mean"] - 1,
                 e["ttft_ms"] / 1e3 / m["ttft_mean"] - 1, e["tpot_ms"] / 1e3 / m["tpot_mean"] - 1])
    pairs["all"] = [x for v in list(pairs.values()) for x in v]
    table = {}
    for fam, v in pairs.items():
        a = np.abs(np.array(v))
        table[fam] = {"n": len(v), "roofline": {"ttft": (float(a[:, 0].mean()), float(np.median(a[:, 0]))),
                                                 "tpot": (float(a[:, 1].mean()), float(np.median(a[:, 1])))},
                      "aiconfigurator": {"ttft": (float(a[:, 2].mean()), float(np.median(a[:, 2]))),
                                         "tpot": (float(a[:, 3].mean()), float(np.median(a[:, 3])))}}
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("estimate", help="AIConfigurator's estimates of the scored rows (needs aiconfigurator)")
    e.add_argument("--csv", type=Path, required=True,
                   help="silicon_sample.csv at ai-dynamo/aiconfigurator@095f58a51c4c")
    e.add_argument("--out", type=Path, default=OUT)
    c = sub.add_parser("compare", help="roofline's registered predictions against AIConfigurator's, same runs")
    c.add_argument("--out", type=Path, default=OUT)
    c.add_argument("--sets", help="comma-separated sets (default: every set estimated)")
    a = ap.parse_args()
    if a.cmd == "estimate":
        estimate(a.csv, a.out)
        return
    table = compare(a.out, a.sets.split(",") if a.sets else None)
    print("mean APE (median APE) over the runs both predicted, TTFT and TPOT")
    print(f"{'engine':<8}{'runs':>6}{'roofline TTFT':>18}{'AIC TTFT':>18}{'roofline TPOT':>18}{'AIC TPOT':>18}")
    for fam, t in table.items():
        cells = "".join(f"{100 * t[who][m][0]:>10.1f}% ({100 * t[who][m][1]:.0f}%)"
                        for m in ("ttft", "tpot") for who in ("roofline", "aiconfigurator"))
        print(f"{fam:<8}{t['n']:>6}{cells}")


if __name__ == "__main__":
    main()
