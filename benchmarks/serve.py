"""`roofline serve` speed and stamina, on 127.0.0.1 (the server runs as `roofline serve` in a child process).

1. Interaction latency of a 10^4-point sweep (issue 17: a slider move re-renders from a server answer in
   < 50 ms): POST /api/sweep -> parsed, median of 15, as rows (the CLI's --json), as JSON columns and as binary
   columns (what the page asks for), with the server's own share (its Server-Timing header); against the same
   sweep re-run as
   `roofline sweep --json` in a fresh process (what a terminal user waits for), ratio measured in this run.
   With a Chromium and Playwright present, also the page's own loop in a real browser: fetch (binary columns)
   + decode + one curve per context + Plotly.react of the 10^4 points, median of 15; and the board page's
   own render time after a batch-slider move from the keyboard (window.rooflineLast.ms), median of 15.
2. A bounded load test: CLIENTS concurrent clients for SECONDS seconds over mixed endpoints (step, sweep, plan,
   tiers, overtrain, catalog, simulate), each client sending its next request when the last one is answered:
   requests, errors (target 0), p50/p99 latency, and the server's resident memory before and after.

    python benchmarks/serve.py [--clients 32] [--seconds 20] [--no-browser]

Figures depend on the machine (note its cores: the load test shares them with the server).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SWEEP = {"model": "llama-3.1-70b", "system": "dgx-h100", "batch": "1:4096:2500",  # 1,085 distinct batches
         "context": "512,1024,2048,4096,8192,16384,32768,65536,100000,120000"}  # x 10 contexts = 10,850 points
MIX = [  # (operation, body): what the pages ask while someone moves sliders
    ("step", {"model": "llama-3-70b", "system": "dgx-h100", "batch": 64, "context": 4096}),
    ("step", {"model": "deepseek-v3", "system": "gb200-nvl72", "batch": 512, "context": 4096, "tp": 1, "ep": 64,
              "dp": 64, "domains": 1}),
    ("sweep", {"model": "llama-3.1-70b", "system": "dgx-h100", "batch": "1:4096:64", "context": "1024,8192,32768"}),
    ("plan", {"model": "llama-3.1-70b", "system": "dgx-h100", "domains": "1-2"}),
    ("tiers", {"kv_bytes": 2048.0}),
    ("overtrain", {"params": 7e10, "traffic": 3e7, "lifetime_days": 60.0}),
    ("catalog/models", {}),
    ("simulate", {"model": "llama-3.1-70b", "system": "dgx-h100", "requests": 100, "rate": 10.0}),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def start_server(port: int) -> subprocess.Popen:
    exe = Path(sys.executable).with_name("roofline")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "roofline"]
    proc = subprocess.Popen(cmd + ["serve", "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    import httpx

    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not start within 30 s")


def sweep_latency(base: str, layout: str, runs: int = 15) -> tuple[float, float, int, int]:
    """(median seconds POST -> parsed, median server seconds from its Server-Timing header, points, bytes)."""
    import httpx

    times, server, n, size = [], [], 0, 0
    with httpx.Client(timeout=60) as c:
        for _ in range(runs + 2):
            t0 = time.perf_counter()
            r = c.post(f"{base}/api/sweep?layout={layout}", json=SWEEP)
            if layout == "binary":  # header + zero-copy NumPy views of the columns
                h = int.from_bytes(r.content[:4], "little")
                head = json.loads(r.content[4:4 + h])
                cols = {c["name"]: np.frombuffer(r.content, "<f8" if c["dtype"] == "float64" else "u1",
                                                 c["bytes"] // (8 if c["dtype"] == "float64" else 1),
                                                 4 + h + c["offset"]) for c in head["columns"]}
                n = len(cols["batch"])
            else:
                d = r.json()
                n = len(d) if isinstance(d, list) else len(d["batch"])
            times.append(time.perf_counter() - t0)
            server.append(float(r.headers["server-timing"].split("dur=")[1].split(";")[0]) / 1e3)
            size = len(r.content)
    return statistics.median(times[2:]), statistics.median(server[2:]), n, size  # two warm-up requests


def cli_sweep_s(runs: int = 3) -> float:
    exe = Path(sys.executable).with_name("roofline")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "roofline"]
    argv = cmd + ["sweep", "-m", SWEEP["model"], "-s", SWEEP["system"], "--batch", SWEEP["batch"], "--context",
                  SWEEP["context"], "--json"]
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def browser_latency(base: str, runs: int = 15):
    """(total, fetch + parse) seconds of fetch + parse + Plotly.react of the 10^4-point answer, in headless
    Chromium, medians; None if unavailable."""
    exe = os.environ.get("ROOFLINE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not exe:
        return None
    js = """async ([body, runs]) => {
      const el = document.createElement('div'); el.style.width = '900px'; el.style.height = '500px';
      document.body.appendChild(el);
      const times = [], fetched = [];
      for (let i = 0; i < runs + 2; i++) {
        const t0 = performance.now();
        const res = await fetch('/api/sweep?layout=binary', {method: 'POST',
          headers: {'content-type': 'application/json'}, body: JSON.stringify(body)});
        const cols = decodeColumns(await res.arrayBuffer());  // the page's own decoder (core.js)
        fetched.push(performance.now() - t0);
        const by = new Map();  // one curve per context, as the board page draws them
        cols.context.forEach((c, i) => { if (!by.has(c)) by.set(c, {x: [], y: [], mode: 'lines'});
                                         by.get(c).x.push(cols.batch[i]); by.get(c).y.push(cols.step_s[i]); });
        const traces = [...by.values()];
        await Plotly.react(el, traces, {xaxis: {type: 'log'}, yaxis: {type: 'log'}});
        times.push(performance.now() - t0);
      }
      const med = (xs) => { xs = xs.slice(2).sort((a, b) => a - b); return xs[Math.floor(xs.length / 2)]; };
      return [med(times), med(fetched)];
    }"""
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, headless=True, args=["--no-sandbox", "--disable-gpu"])
        page = b.new_page()
        page.goto(f"{base}/#/validate")
        page.wait_for_function("typeof Plotly !== 'undefined'")
        total_ms, fetch_ms = page.evaluate(js, [SWEEP, runs])
        # the page itself: move the board's batch marker from the keyboard, read the page's own render time
        page.goto(f"{base}/#/board")
        page.wait_for_function("document.body.dataset.busy === 'false' && window.rooflineLast")
        moves = []
        for i in range(runs):
            seq = page.evaluate("document.body.dataset.rendered")
            page.focus("#in-batch")
            page.keyboard.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
            page.wait_for_function("(s) => document.body.dataset.rendered !== s && document.body.dataset.busy === 'false'",
                                   arg=seq)
            moves.append(page.evaluate("window.rooflineLast.ms"))
        b.close()
    return total_ms / 1e3, fetch_ms / 1e3, statistics.median(moves) / 1e3


async def load_test(base: str, clients: int, seconds: float):
    import httpx

    lat, errors, codes, by_op = [], [], {}, {}
    stop = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client(k: int, c: httpx.AsyncClient):
        i = k
        while time.perf_counter() < stop:
            op, body = MIX[i % len(MIX)]
            i += 1
            t0 = time.perf_counter()
            try:
                r = await c.post(f"{base}/api/{op}", json=body)
                codes[r.status_code] = codes.get(r.status_code, 0) + 1
                if r.status_code != 200:
                    errors.append(f"{op}: {r.status_code} {r.text[:120]}")
                else:
                    json.loads(r.content)
            except httpx.HTTPError as exc:
                errors.append(f"{op}: {type(exc).__name__}")
            lat.append(time.perf_counter() - t0)
            by_op.setdefault(op, []).append(lat[-1])

    async with httpx.AsyncClient(timeout=120, limits=limits) as c:
        await asyncio.gather(*(client(k, c) for k in range(clients)))
    return lat, errors, codes, by_op


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args(argv)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start_server(port)
    try:
        cli_s = cli_sweep_s()
        print(f"machine: {os.cpu_count()} CPU(s) seen by Python, load average {os.getloadavg()[0]:.1f}")
        for layout in ("rows", "columns", "binary"):
            api_s, srv_s, n, size = sweep_latency(base, layout)
            print(f"sweep of {n:,} points as {layout}: POST -> parsed median {api_s * 1e3:.1f} ms (server "
                  f"{srv_s * 1e3:.1f} ms, {size / 1e6:.2f} MB); `roofline sweep --json` in a new process "
                  f"{cli_s * 1e3:.0f} ms -> {cli_s / api_s:.1f}x; target < 50 ms: {'met' if api_s < 0.05 else 'MISSED'}")
        if not args.no_browser:
            b = browser_latency(base)
            if b is None:
                print("browser re-render: skipped (no Chromium or Playwright)")
            else:
                print(f"browser: fetch + parse + Plotly.react of the {n:,} points, median {b[0] * 1e3:.1f} ms, of "
                      f"which fetch + parse {b[1] * 1e3:.1f} ms (target < 50 ms: {'met' if b[0] < 0.05 else 'MISSED'})")
                print(f"board page: a batch-slider move (keyboard) re-renders its three charts in {b[2] * 1e3:.1f} ms "
                      f"median after the {120} ms debounce (one new step + board answer; the sweep is kept)")
        before = rss_bytes(proc.pid)
        lat, errors, codes, by_op = asyncio.run(load_test(base, args.clients, args.seconds))
        after = rss_bytes(proc.pid)
        print(f"load: {args.clients} clients x {args.seconds:g} s over {len(MIX)} mixed requests: {len(lat):,} "
              f"requests ({len(lat) / args.seconds:,.0f}/s), errors {len(errors)}, p50 {pct(lat, .5) * 1e3:.1f} ms, "
              f"p99 {pct(lat, .99) * 1e3:.1f} ms, status codes {codes}")
        print("  per operation: " + "; ".join(f"{op} n={len(v)} p50 {pct(v, .5) * 1e3:.0f} ms p99 {pct(v, .99) * 1e3:.0f} ms"
                                          for op, v in by_op.items()))
        print(f"server memory (RSS): {before / 1e6:.0f} MB before, {after / 1e6:.0f} MB after")
        for e in errors[:5]:
            print("  error:", e)
        return 1 if errors else 0
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    raise SystemExit(main())
