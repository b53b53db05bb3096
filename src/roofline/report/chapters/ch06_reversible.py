"""Chapter 6 of the lecture: Feistel ciphers, RevNets, and memory saved vs compute spent (spec §6, T43, T44)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import Chapter, Worked


def chapter(fig_dir: Path) -> Chapter:
    from ... import memory as TM
    from ... import reversible as R
    from ...catalog import get_catalog
    from ...layout import Layout

    sq = lambda v: v**2  # noqa: E731
    fw = R.feistel_forward(3, 5, sq)
    rw = R.revnet_forward(3, 5, sq)
    pair = lambda t: f"({int(t[0])}, {int(t[1])})"  # noqa: E731
    blocks = R.random_blocks(16, 8, seed=0)
    rng = np.random.default_rng(0)
    x, y, gx, gy = (rng.normal(size=(4, 8)) for _ in range(4))
    ref = R.backward_stored(x, y, blocks, gx, gy)
    rev = R.backward_reversible(*R.stack_forward(x, y, blocks), blocks, gx, gy)
    err = float(np.max(np.abs(ref.grad_x - rev.grad_x)))
    m = get_catalog().model("llama-3.1-405b")
    lay = Layout(tp=8, pp=16, dp=128, micro_batches=16, zero=2)
    full = float(TM.activation_bytes_per_gpu(m, lay.with_(recompute="full"), 8192, flash_attention=True, dropout=False))
    none = float(TM.activation_bytes_per_gpu(m, lay.with_(recompute="none"), 8192, flash_attention=True, dropout=False))
    revb = float(TM.activation_bytes_per_gpu(m, lay.with_(recompute="reversible"), 8192, flash_attention=True, dropout=False))
    from ...training import training_flops_per_token

    mf, hw = training_flops_per_token(m, 8192, "reversible")
    items = [
        Worked("T43", "Feistel forward", "(x, y) → (x, y + f(x)), f = x²", {"(x, y)": "(3, 5)"}, pair(fw),
               "", "(3, 14)", None, "[S 02:08:41]"),
        Worked("T43", "Feistel inverse", "(x, z) → (x, z − f(x))", {"(x, z)": pair(fw)},
               pair(R.feistel_inverse(*fw, sq)), "", "(3, 5)", None, "[S 02:09:30]"),
        Worked("T44", "RevNet forward", "(x, y) → (y + f(x), x)", {"(x, y)": "(3, 5)"}, pair(rw), "", "(14, 3)",
               None, "[S 02:10:25]"),
        Worked("T44", "RevNet inverse", "(x', y') → (y', x' − f(y'))", {"(x', y')": pair(rw)},
               pair(R.revnet_inverse(*rw, sq)), "", "(3, 5)", None, "[S 02:10:25]"),
        Worked("grad", "max |grad| difference, 16-layer RevNet, stored vs rematerialised", "Gomez et al. Alg. 1",
               {"layers": 16}, err, "", 0.0, 1e-9, "Gomez et al. 2017 (arXiv:1707.04585)"),
        Worked("stored", "activation arrays held: stored backprop vs RevNet", "2L vs 2", {"L": 16},
               f"{ref.peak_stored_arrays} vs {rev.peak_stored_arrays}", "", "32 vs 2", None, "lecture §6.3"),
        Worked("mem", "Llama 3.1 405B activations/GPU: none / full / reversible", "training_memory", {"s": 8192},
               f"{none / 1e9:.1f} / {full / 1e9:.2f} / {revb / 1e9:.2f} GB", "", None, None, "Korthikanti 2022; [I]"),
        Worked("flops", "compute: reversible vs standard training (Llama 3.1 405B, s = 8192)", "(6N + 2N)/6N",
               {"s": 8192}, float(hw / mf), "×", 4 / 3, 1e-12,
               "lecture §6.3 [I]: ≈8ND instead of 6ND"),
    ]
    notes = ["A RevNet spends compute (one extra forward) to save memory; a KV cache does the opposite. "
             "Reversible layers beat full recomputation only when a stage holds ≥ 3 layers, because "
             "they keep two output streams per micro-batch in flight."]
    return Chapter(6.0, "6 Neural nets and cryptography: Feistel and RevNets",
                   "Invertible layers rebuild activations from outputs, so none need be stored.", items, [], notes)
