"""Hot experts: model.ExpertSkew (static placement vs DeepSeek's EPLB) in the engine and from the CLI
(docs/parallelism.md "MoE load imbalance")."""

from __future__ import annotations

import json

import numpy as np
import pytest

from roofline import model as M
from roofline.catalog import get_catalog
from roofline.engine import step
from roofline.layout import Layout

CAT = get_catalog()


def test_static_and_eplb_placement_by_hand():
    """Shares 0.4, 0.3, 0.2, 0.1 on 2 GPUs. Static: {0, 1} = 0.7 and {2, 3} = 0.3, λ = 0.7·2 = 1.4. EPLB with 2
    copies (3 slots a GPU): copies go to expert 0 (0.4 → 0.2 + 0.2) and then expert 1 (0.3 > 0.2 a copy → 0.15 +
    0.15); packed heaviest first onto the least-loaded GPU with a free slot: a 0.2, b 0.2, a 0.4, b 0.35, b 0.5
    (full), a 0.5 — λ = 0.5·2 = 1.0. One GPU: 1."""
    skew = M.ExpertSkew.from_loads([[40, 30, 20, 10]])
    assert float(skew.factor(2, 0)) == pytest.approx(1.4)
    assert float(skew.factor(2, 2)) == pytest.approx(1.0)
    assert float(skew.factor(1, 0)) == 1.0
    two = M.ExpertSkew.from_loads([[40, 30, 20, 10], [25, 25, 25, 25]])  # per layer, averaged: (1.4 + 1.0)/2
    assert float(two.factor(2, 0)) == pytest.approx(1.2)
    np.testing.assert_allclose(two.factor(np.array([1, 2]), 0), [1.0, 1.2])


def test_power_law_shares_are_capped_at_one_pick_in_k():
    for a in (0.3, 1.0, 2.0):
        s = M.ExpertSkew.powerlaw(a, 256, 8).shares[0]
        assert s.sum() == pytest.approx(1.0) and s.max() <= 1 / 8 + 1e-12 and np.all(np.diff(s) <= 1e-15)
    mild, hot = (M.ExpertSkew.powerlaw(a, 256, 8) for a in (0.3, 1.0))
    assert 1.0 < float(mild.factor(64, 0)) < float(hot.factor(64, 0))
    assert float(hot.factor(72, 32)) < 0.2 * float(hot.factor(64, 0))  # EPLB's copies flatten the hot experts


def test_engine_multiplies_skew_and_sampling_noise():
    """DeepSeek-V3, EP 72 over 256 + 32 slots, DP 72, 4,608 decode sequences: T_e = 4,608 tokens through the MoE
    group; λ = factor(72, 32) · sampling_imbalance(4,608, 8, 256, 72, 288)."""
    m, s = CAT.model("deepseek-v3"), CAT.system("gb200-nvl72")
    lay = Layout(tp=1, ep=72, dp=72, redundant_experts=32)
    skew = M.ExpertSkew.powerlaw(0.8, 256, 8)
    lam = float(skew.factor(72, 32) * M.sampling_imbalance(4608, 8, 256, 72, 288))
    kw = dict(layout=lay, weights_dtype="fp8", details=False)
    a = step(m, s, 4608, 4000, moe_imbalance=skew, **kw)
    b = step(m, s, 4608, 4000, moe_imbalance=lam, **kw)
    for k in ("gemm_compute_s", "ep_comm_s", "step_s"):
        assert float(getattr(a, k)) == pytest.approx(float(getattr(b, k)), rel=1e-12)
    assert lam > float(M.sampling_imbalance(4608, 8, 256, 72, 288))


def test_cli_loads_file_and_its_errors(run_cli, tmp_path):
    counts = np.ones(256)
    counts[:4] = 40.0  # four hot experts, all on the first GPU of a static EP 64 placement
    good = tmp_path / "loads.csv"
    good.write_text("# tokens per expert\n" + ",".join(f"{c:g}" for c in counts) + "\n")
    base = ["step", "-m", "deepseek-v3", "-s", "gb200-nvl72", "--tp", "1", "--ep", "64", "--dp", "64", "-b", "4096",
            "-c", "2000", "--weights-dtype", "fp8", "--json", "--moe-imbalance"]
    code, out, err = run_cli(*base, f"loads:{good}")
    assert code == 0, err
    flat = json.loads(run_cli(*base, "1")[1])
    skew = M.ExpertSkew.from_loads([counts])
    assert float(skew.factor(64, 0)) == pytest.approx(160 / counts.sum() * 64)  # the first GPU's 4 experts
    assert json.loads(out)["step_s"] > flat["step_s"]
    bad = tmp_path / "bad.csv"
    for text, msg in (("1,2,3\n", "3 values"), ("a,b\n", "not a list of numbers"), ("\n", "no rows"),
                      (",".join(["-1"] * 256) + "\n", "finite, >= 0")):
        bad.write_text(text)
        code, out, err = run_cli(*base, f"loads:{bad}")
        assert code == 1 and msg in err and len(err.strip().splitlines()) == 1, err
    code, out, err = run_cli(*base, "powerlaw:-1")
    assert code != 0 and "powerlaw exponent" in err
    code, out, err = run_cli("step", "-m", "llama-3-8b", "-a", "h100-sxm", "--moe-imbalance", "powerlaw:0.5")
    assert code == 2 and "has none" in err
