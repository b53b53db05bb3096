"""A sweep of any size, streamed to disk: wall time and peak memory of a 10^8-point sweep written to
Parquet, and points per second of the CSV and Parquet writers against the compute alone.

    python benchmarks/sweep_stream.py                 # 10^8 points to Parquet + rates on 10^7 points
    python benchmarks/sweep_stream.py --points 1e7    # a smaller headline sweep

Each measurement runs in a fresh subprocess (`roofline.requests.sweep`, the code `roofline sweep
--parquet/--csv` runs) so its peak resident memory (ru_maxrss) is its own; rates are the median of
--repeats runs measured in the same session, and the ratios compare them. Targets (issue 16): the
10^8-point Parquet sweep under 60 s and under 2 GB peak memory on the 2-core CI machine.
Llama 3.1 70B on one DGX H100, decode, a log grid of batch (1..16,384) x context (1..131,000).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, os, resource, sys, time
mode, nb, nc, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
from roofline.requests.sweep import SweepRequest, chunks, write
kw = dict(model="llama-3.1-70b", system="dgx-h100", batch=f"1:16384:{nb}", context=f"1:131000:{nc}")
if mode == "csv":
    kw["csv"] = out
elif mode == "parquet":
    kw["parquet"] = out
else:
    kw["parquet"] = out  # a file name is needed to allow a large sweep; nothing is written
req = SweepRequest.of(**kw)
t0 = time.perf_counter()
if mode == "compute":
    n = 0
    for a, b, cols in chunks(req):
        n += b - a
else:
    n = write(req)
dt = time.perf_counter() - t0
size = os.path.getsize(out) if mode != "compute" else 0
print(json.dumps({"points": n, "seconds": dt, "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "file_bytes": size}))
"""


def grid_for(points: float) -> tuple[int, int]:
    """(batch count, context count) requested so that the rounded, de-duplicated log grids (the sweep's
    own parse_grid) hold at least `points` points together."""
    from roofline.requests.sweep import parse_grid

    nb = 12000
    kb = parse_grid(f"1:16384:{nb}", "batch").size
    nc = int(math.ceil(points / kb))
    while parse_grid(f"1:131000:{nc}", "context").size * kb < points:
        nc = int(nc * 1.05) + 1
    return nb, nc


def measure(mode: str, points: float, folder: str) -> dict:
    nb, nc = grid_for(points)
    out = os.path.join(folder, f"sweep.{'csv' if mode == 'csv' else 'parquet'}")
    res = subprocess.run([sys.executable, "-c", CHILD, mode, str(nb), str(nc), out], capture_output=True, text=True,
                         check=True)
    if os.path.exists(out):
        os.remove(out)
    return json.loads(res.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=float, default=1e8, help="points of the headline Parquet sweep")
    ap.add_argument("--rate-points", type=float, default=1e7, help="points of each rate measurement")
    ap.add_argument("--repeats", type=int, default=3, help="runs per rate measurement (median)")
    ap.add_argument("--dir", default=None, help="folder for the output files (default: a temporary one)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        rates = {}
        for mode in ("compute", "parquet", "csv"):
            runs = [measure(mode, args.rate_points, folder) for _ in range(args.repeats)]
            rates[mode] = statistics.median(r["points"] / r["seconds"] for r in runs)
            rates[mode + "_bytes_per_point"] = statistics.median(r["file_bytes"] / r["points"] for r in runs)
        head = measure("parquet", args.points, folder)
    print(f"headline: {head['points']:,} points streamed to Parquet in {head['seconds']:.1f} s, peak memory "
          f"{head['peak_rss_bytes'] / 1e9:.2f} GB, file {head['file_bytes'] / 1e9:.2f} GB "
          f"({head['file_bytes'] / head['points']:.1f} B/point)  [targets: < 60 s, < 2 GB]")
    print(f"rates on {args.rate_points:.0e} points (median of {args.repeats}):")
    print(f"  {'':10} {'points/s':>14} {'vs compute':>11} {'B/point':>8}")
    for mode in ("compute", "parquet", "csv"):
        print(f"  {mode:10} {rates[mode]:>14,.0f} {rates[mode] / rates['compute']:>10.2f}x "
              f"{rates[mode + '_bytes_per_point']:>8.1f}")


if __name__ == "__main__":
    main()
