#!/usr/bin/env python3
"""Measured kernel tables: cost of a lookup and of `step --realistic --kernels tables` against the factor model,
measured in the same run (median of several runs; the CI machine's 2 cores are shared, so runs vary).

    python benchmarks/kernels.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _timing import median_time  # noqa: E402


def main() -> int:
    from roofline import kernels as K
    from roofline.requests.step import StepRequest, run_step

    cold = [float(subprocess.run([sys.executable, "-c", "import time; t=time.perf_counter(); from roofline import kernels as K; "
                                  "K.gemm_s('h100-sxm', 'fp8', 64, 8192, 8192); print(time.perf_counter()-t)"],
                                 capture_output=True, text=True, check=True).stdout) for _ in range(5)]
    m = np.geomspace(1, 65536, 1000)[:, None]
    n = np.geomspace(256, 65536, 1000)[None, :]
    K.gemm_s("h100-sxm", "fp8", 1, 1024, 1024)  # warm
    t_lookup = median_time(lambda: K.gemm_s("h100-sxm", "fp8", m, n, 8192), repeat=3)

    def req(kernels):
        return StepRequest.of(style="cli", model="llama-3-70b", system="dgx-h100", batch=64, context=4096, tp=8,
                              realistic=True, weights_dtype="fp8", kv_dtype="fp8", kernels=kernels)

    run_step(req("tables"))  # warm both paths
    f = median_time(lambda: run_step(req("factor")))
    t = median_time(lambda: run_step(req("tables")))
    print("measured kernel tables (benchmarks/kernels.py)")
    print(f"  first lookup in a fresh process (index + one grid): {statistics.median(cold) * 1e3:.0f} ms "
          f"(min {min(cold) * 1e3:.0f})")
    print(f"  gemm_s over 10^6 (m, n) points: {t_lookup:.3f} s = {1e6 / t_lookup / 1e6:.1f} M lookups/s")
    print(f"  step --realistic (Llama 3 70B, DGX H100, TP8): factor {f * 1e3:.1f} ms, tables {t * 1e3:.1f} ms "
          f"per request; ratio {t / f:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
