"""Snapshot every command's --json output over a fixed set of configurations (issue: one pass engine).

    python scripts/json_snapshot.py OUT.json          # take a snapshot
    python scripts/json_snapshot.py --diff A.json B.json   # list every number that moved (relative > 1e-9)

Runs the CLI in-process (roofline.cli.main) and stores, per configuration, the parsed JSON or the error
line. Used to compare the output before and after a redesign; not a test (its differences are explained
in the closing note of the change).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import sys
import tempfile

CATALOG = """
systems:
  - id: cheap-h100x8
    name: 8 x H100 at $1/h
    accelerator: h100-sxm
    chips: 8
    scale_up_gb_per_s: 450
    scale_out_gb_per_s: 50
    scale_up_latency_us: 1
    scale_out_latency_us: 5
    usd_per_hour: 1.0
    source: test catalog
    date: 2026-11
"""

CONFIGS = {
    "step-llama70-b64": "step -m llama-3-70b -s dgx-h100 -b 64 -c 4096",
    "step-llama70-b1": "step -m llama-3-70b -s dgx-h100 -b 1 -c 0",
    "step-llama70-tp8": "step -m llama-3-70b -s dgx-h100 -b 64 -c 4096 --tp 8",
    "step-llama70-tp8-real": "step -m llama-3-70b -s dgx-h100 -b 64 -c 4096 --tp 8 --realistic",
    "step-llama70-pp2": "step -m llama-3-70b -s dgx-h100 -b 64 -c 2000 --tp 4 --pp 2",
    "step-llama70-prefill-real": "step -m llama-3-70b -s dgx-h100 -b 8 -c 0 --phase prefill --prompt 2048 --tp 8 --realistic",
    "step-llama8-real": "step -m llama-3-8b -a h100-sxm -g 1 -b 1 -c 0 --realistic",
    "step-dsv3-nvl72": "step -m deepseek-v3 -s gb200-nvl72 -b 2048 -c 4096 --weights-dtype fp8 --kv-dtype fp8",
    "step-dsv3-ep64": "step -m deepseek-v3 -s gb200-nvl72 -b 4096 -c 4096 --ep 64 --dp 64 --weights-dtype fp8 --kv-dtype fp8",
    "step-dsv3-ep64-real": "step -m deepseek-v3 -s gb200-nvl72 -b 4096 -c 4096 --ep 64 --dp 64 --weights-dtype fp8 --kv-dtype fp8 --realistic",
    "step-frontier-b1": "step -m lecture-frontier-moe -s gb200-nvl72 -b 1 -c 100000 --weights-dtype fp8 --kv-dtype fp8",
    "step-frontier-b2048": "step -m lecture-frontier-moe -s gb200-nvl72 -b 2048 -c 100000 --weights-dtype fp8 --kv-dtype fp8",
    "step-mixtral-prefill": "step -m mixtral-8x7b -s dgx-h100 -b 32 -c 2048 --phase prefill --prompt 512 --tp 2 --dp 4 --ep 8",
    "step-gptoss": "step -m gpt-oss-120b -s hgx-h200 -b 128 -c 8192 --tp 4 --dp 2 --ep 8 --realistic",
    "step-cheap-catalog": "--catalog {catalog} step -m llama-3-70b -s cheap-h100x8 -b 64 -c 2000",
    "step-cheap-catalog-tp8": "--catalog {catalog} step -m llama-3-70b -s cheap-h100x8 -b 64 -c 2000 --tp 8",
    "sweep-llama70": "sweep -m llama-3-70b -s dgx-h100 --batch 1,8,64,512 --context 0,4096,8000",
    "sweep-dsv3-real": "sweep -m deepseek-v3 -s hgx-h200 --weights-dtype fp8 --batch 1,64,2048 --context 4096 --realistic",
    "plan-llama70": "plan -m llama-3-70b -s dgx-h100 --domains 1",
    "plan-llama70-real": "plan -m llama-3-70b -s dgx-h100 --domains 1 --tpot-ms 10 --realistic",
    "plan-dsv3": "plan -m deepseek-v3 -s gb200-nvl72 --domains 1-4",
    "sim-llama70": "simulate -m llama-3-70b -s dgx-h100 --rate 20 -n 500",
    "sim-llama70-real-chunked": "simulate -m llama-3-70b -s dgx-h100 --rate 20 -n 500 --realistic --policy chunked",
    "sim-llama8-static": "simulate -m llama-3-8b -a h100-sxm -g 1 --rate 5 -n 300 --policy static --max-seqs 16",
    "train-405b": "train -m llama-3.1-405b -s dgx-h100 --tp 8 --pp 16 --dp 128 --seq 8192 --global-batch 2048 --schedule interleaved --virtual-stages 2 --zero 2 --recompute none --tokens 15.6e12",
    "train-70b-nosp": "train -m llama-3-70b -s dgx-h100 --tp 8 --pp 4 --dp 2 --global-batch 64 --no-sequence-parallel",
    "train-70b-sp": "train -m llama-3-70b -s dgx-h100 --tp 8 --pp 4 --dp 2 --global-batch 64",
    "train-mixtral-ep": "train -m mixtral-8x7b -s dgx-h100 --tp 2 --dp 8 --ep 4 --global-batch 256 --recompute selective",
    "overtrain": "overtrain",
    "prices-infer": "prices infer",
    "tiers-dsv3": "tiers --model deepseek-v3 --hold 300 --hold 3600",
    "validate": "validate",
    "catalog-efficiency": "catalog efficiency",
}


def run(argv: list[str]):
    from roofline.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code or 0
    if code:
        return {"exit": code, "error": err.getvalue().strip()}
    try:
        return json.loads(out.getvalue())
    except json.JSONDecodeError:
        return {"exit": 0, "text": out.getvalue()[-2000:]}


def snapshot(path: str) -> None:
    os.environ.setdefault("MPLBACKEND", "Agg")
    with tempfile.TemporaryDirectory() as d:
        cat = os.path.join(d, "cheap.yaml")
        with open(cat, "w") as fh:
            fh.write(CATALOG)
        res = {}
        for name, cmd in CONFIGS.items():
            argv = cmd.format(catalog=cat).split() + ["--json"]
            res[name] = {"argv": cmd, "result": run(argv)}
            from roofline.catalog import reset_user_files  # --catalog adds rows for the rest of the process

            reset_user_files()
    with open(path, "w") as fh:
        json.dump(res, fh, indent=1, sort_keys=True, default=str)


def _walk(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a:
                out.append(f"{path}.{k}: added")
            elif k not in b:
                out.append(f"{path}.{k}: removed")
            else:
                _walk(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(x, y, f"{path}[{i}]", out)
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if not (a == b or (math.isfinite(a) and abs(a - b) <= 1e-9 * max(abs(a), abs(b)))):
            rel = (b - a) / abs(a) if a else float("inf")
            out.append(f"{path}: {a:.6g} -> {b:.6g} ({rel:+.2%})")
    elif a != b:
        out.append(f"{path}: {str(a)[:80]!r} -> {str(b)[:80]!r}")


def diff(a_path: str, b_path: str) -> None:
    a, b = (json.load(open(p)) for p in (a_path, b_path))
    for name in sorted(set(a) | set(b)):
        out: list[str] = []
        _walk(a.get(name, {}).get("result"), b.get(name, {}).get("result"), "", out)
        if out:
            print(f"## {name} ({len(out)} differences)")
            for line in out[:40]:
                print("  " + line)
            if len(out) > 40:
                print(f"  ... {len(out) - 40} more")


if __name__ == "__main__":
    if sys.argv[1] == "--diff":
        diff(sys.argv[2], sys.argv[3])
    else:
        snapshot(sys.argv[1])
