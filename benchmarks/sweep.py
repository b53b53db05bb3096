"""Sweep speed: 10^6 (batch, context) points through the engine in one call.

Prints, all measured in this run (median of several runs; nothing passes or fails on one sample):
  1. roofline.step over a 1000 x 1000 grid in one call (every output: terms, bound, memory, cost, and the
     critical batch of each context found on the engine by bisection),
  2. engine.step_time on the same grid (step times only: what the simulator's table asks for),
  3. a hand-written NumPy expression of the same formula (the floor for vectorised code),
  4. a plain-Python loop of the same formula, one configuration at a time with floats and `math`
     (benchmarks/_plain.py: what a per-configuration calculator costs at its best; checked equal),
  5. the public scalar API called once per configuration (its per-call cost is input checks),
Target: (1) >= 1e6 points/s. Start-up (one configuration, whole process) is benchmarks/startup.py.
"""

from __future__ import annotations

import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _plain import PlainPass  # noqa: E402
from _timing import median_time  # noqa: E402
from roofline import model as M  # noqa: E402
from roofline.catalog import model, system  # noqa: E402
from roofline.engine import step, step_time  # noqa: E402


def main() -> None:
    m, s = model("deepseek-v3"), system("gb200-nvl72")
    B = np.geomspace(1, 8192, 1000)[:, None]
    C = np.linspace(0, 131_072, 1000)[None, :]
    n = B.size * C.size
    kw = dict(weights_dtype="fp8", kv_dtype="fp8")

    t_step = median_time(lambda: step(m, s, B, C, check_context=False, **kw))
    t_times = median_time(lambda: step_time(m, s, B, B, C, **kw))

    # plain NumPy: the same formula, hand-inlined constants
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

    t_numpy = median_time(plain)
    ref = step(m, s, B, C, check_context=False, **kw).step_s
    assert np.allclose(plain(), ref, rtol=1e-9), "plain NumPy and roofline.step disagree"

    # plain Python: the engine's formula for one configuration at a time (perfect sharding over 72 GPUs
    # is TP 72 with the KV split 72 ways and no communication: PlainPass with shard override below)
    pp_ = PlainPass(m, s, 1.0, 1.0, s.accelerator.peak_flops("fp8"))
    pts = [(float(b), float(c)) for b in np.geomspace(1, 8192, 100) for c in np.linspace(0, 131_072, 100)]

    def py_loop():
        out = []
        for b, c in pts:
            # perfect sharding: every term over 72 GPUs, no collectives (engine.core with Layout.sharded)
            t_c = b * (f_tok + pp_.attn_per_layer_token * pp_._attended(c + 1.0)) / flops
            w = dense + m.moe_layers * pp_._distinct(b) * e_bytes + min(b, m.vocab) * m.d_model
            t_m = (w + b * pp_._kv_seq(c) + b * pp_.kv_tok) / bw
            out.append(t_c if t_c > t_m else t_m)
        return out

    t_py = median_time(py_loop) / len(pts)
    got = np.array(py_loop())
    want = step(m, s, np.array([p[0] for p in pts]), np.array([p[1] for p in pts]), check_context=False, **kw).step_s
    assert np.allclose(got, want, rtol=1e-9), "plain Python and roofline.step disagree"

    loop_n = 300
    bs = np.geomspace(1, 8192, loop_n)

    def api_loop():
        for b in bs:
            step(m, s, float(b), 4096.0, check_context=False, **kw)

    t_api = median_time(api_loop, repeat=3) / loop_n

    rows = [
        ("roofline.step, one call (all outputs)", n / t_step, t_step),
        ("engine.step_time, one call (times only)", n / t_times, t_times),
        ("hand-written NumPy, same formula", n / t_numpy, t_numpy),
        ("plain-Python loop, same formula", 1 / t_py, t_py * n),
        ("scalar API loop (step per point)", 1 / t_api, t_api * n),
    ]
    print(f"{'method':42s} {'points/s':>14s} {'time for 1e6 points':>20s}")
    for name, rate, t in rows:
        print(f"{name:42s} {rate:14,.0f} {t:17.3f} s")
    print(f"\nvectorising buys {t_py * n / t_step:,.0f}x over the plain-Python loop of the same formula "
          f"({t_py * n / t_times:,.0f}x for step times only)")
    print(f"roofline.step vs hand-written NumPy: {t_numpy / t_step:.2f}x the speed (cost of the extra outputs and "
          f"the critical batch of every context)")
    print(f"the scalar API costs {t_api * 1e6:,.0f} µs per call (input checks and the critical-batch bisection), "
          f"{t_api / t_py:,.0f}x the plain-Python formula")
    print(f"target: >= 1e6 points/s {'met' if n / t_step >= 1e6 else 'MISSED'}")


if __name__ == "__main__":
    main()
