"""Sweep speed: 10^6 (batch, context) points through roofline.step in one call.

Prints points per second for
  1. roofline.step (all terms: distinct experts, attention FLOPs, KV writes, memory, cost, bounds),
  2. a plain hand-written NumPy evaluation of the same roofline formula (the floor for vectorised code),
  3. a Python loop calling step() once per configuration (how per-configuration calculators work),
and the ratios between them, all measured in this run; plus `roofline --help` start-up time.
Target (issue 2): >= 1e6 points/s for (1); --help < 0.5 s.
"""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np

from roofline import model as M
from roofline.catalog import model, system
from roofline.roofline import step


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    m, s = model("deepseek-v3"), system("gb200-nvl72")
    B = np.geomspace(1, 8192, 1000)[:, None]
    C = np.linspace(0, 131_072, 1000)[None, :]
    n = B.size * C.size

    t_step = best_of(lambda: step(m, s, B, C, weights_dtype="fp8", kv_dtype="fp8", check_context=False))

    # plain NumPy: same formula, hand-inlined constants
    flops = s.accelerator.peak_flops("fp8") * s.chips
    bw = s.accelerator.hbm_bytes_per_s * s.chips
    f_tok = M.matmul_flops_per_token(m)
    kv = M.kv_bytes_per_token(m, "fp8")
    E, k, e_bytes = m.moe.experts, m.moe.active, M.expert_params(m)
    dense = M.dense_params(m) - m.vocab * m.d_model

    def plain():
        tokens = B * 1.0
        w = dense + m.moe_layers * E * (1 - (1 - k / E) ** tokens) * e_bytes + tokens * m.d_model
        attn = M.attention_flops_per_token(m, C + 1)
        t_c = tokens * (f_tok + attn) / flops
        t_m = (w + B * C * kv + tokens * kv) / bw
        return np.maximum(t_c, t_m)

    t_plain = best_of(plain)
    ref = step(m, s, B, C, weights_dtype="fp8", kv_dtype="fp8", check_context=False).step_s
    assert np.allclose(plain(), ref, rtol=1e-9), "plain NumPy and roofline.step disagree"

    loop_n = 2000
    bs = np.geomspace(1, 8192, loop_n)
    t0 = time.perf_counter()
    for b in bs:
        step(m, s, float(b), 4096.0, weights_dtype="fp8", kv_dtype="fp8", check_context=False)
    t_loop = (time.perf_counter() - t0) / loop_n

    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "roofline.cli", "--help"], capture_output=True, check=True)
    t_help = time.perf_counter() - t0

    rows = [
        ("roofline.step, one call", n / t_step, t_step),
        ("plain NumPy, same formula", n / t_plain, t_plain),
        ("Python loop of step() calls", 1 / t_loop, t_loop * n),
    ]
    print(f"{'method':32s} {'points/s':>14s} {'time for 1e6 points':>20s}")
    for name, rate, t in rows:
        print(f"{name:32s} {rate:14,.0f} {t:17.3f} s")
    print(f"\nroofline.step vs plain NumPy: {t_plain / t_step:.2f}x the speed (cost of the extra outputs)")
    print(f"roofline.step vs per-configuration loop: {t_loop * n / t_step:,.0f}x faster")
    print(f"per-configuration cost of step() called singly: {t_loop * 1e3:.3f} ms (peers: 0.3-150 ms)")
    print(f"`roofline --help` wall time: {t_help:.3f} s (target < 0.5 s)")
    ok = n / t_step >= 1e6 and t_help < 0.5
    print("targets met" if ok else "TARGET MISSED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
