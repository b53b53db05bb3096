"""Speculative decoding / MTP: closed forms, their Monte Carlo counterpart, and the verify pass on the roofline."""

import numpy as np
import pytest

from roofline.catalog import get_catalog
from roofline.errors import InputError
from roofline.simulate import BoardStep, Deployment, Policy, RooflineStep, make_workload, simulate
from roofline.simulate.metrics import summarize
from roofline.speculative import (
    Speculation,
    draw_verify_steps,
    expected_tokens_per_step,
    fast_slow_with_speculation,
    speculative_step,
    tokens_per_step_distribution,
)


@pytest.mark.parametrize("alpha,gamma,expected", [(0.0, 4, 1.0), (1.0, 4, 5.0), (0.8, 4, 3.3616), (0.5, 1, 1.5),
                                                  (0.7, 3, 2.533)])
def test_expected_tokens_closed_form(alpha, gamma, expected):
    assert float(expected_tokens_per_step(alpha, gamma)) == pytest.approx(expected, rel=1e-4)


def test_distribution_sums_to_one_and_has_the_closed_form_mean():
    p = tokens_per_step_distribution(0.6, 5)
    assert p.sum() == pytest.approx(1.0)
    assert (p * np.arange(1, 7)).sum() == pytest.approx(float(expected_tokens_per_step(0.6, 5)))


def test_monte_carlo_steps_match_closed_form():
    rng = np.random.default_rng(0)
    steps = draw_verify_steps(rng, np.full(20_000, 400), 0.7, 3)
    assert 400 / steps.mean() == pytest.approx(float(expected_tokens_per_step(0.7, 3)), rel=0.01)
    assert draw_verify_steps(rng, [0], 0.7, 3)[0] == 0


def test_verify_pass_costs_one_step_when_memory_bound_and_gamma_plus_one_when_compute_bound():
    cat = get_catalog()
    sm = RooflineStep(cat.model("llama-3-70b"), cat.system("dgx-h100"))
    spec = Speculation(4, 0.8, 0.0)
    _, speedup_small, e = speculative_step(sm, 1, 1000, spec)
    assert speedup_small == pytest.approx(e, rel=0.02)  # batch 1: weights dominate, verify ≈ decode
    _, speedup_big, _ = speculative_step(sm, 4096, 10, spec)
    assert speedup_big < 1.2  # compute-bound: the verify pass costs ~5 decode steps


def test_speculation_helps_fast_mode_more_than_slow():
    bw = 72 * 8e12
    board = BoardStep(1e12, 1.25e11, 300 * bw, bw)
    d = fast_slow_with_speculation(board, 6000, 400, 0.0, Speculation(3, 0.7, 0.05))
    assert d["fast_spec_speedup"] > 2.0 and d["slow_spec_speedup"] < 1.0


def test_simulated_speculation_matches_closed_form_speedup():
    bw = 72 * 8e12
    dep = Deployment(BoardStep(1e12, 1.25e11, 300 * bw, bw), gpus=72)
    spec = Speculation(3, 0.7, 0.05)
    wl = make_workload(np.zeros(800), 1, 300)
    plain = summarize(simulate(wl, dep, Policy(max_seqs=400)))
    fast = summarize(simulate(wl, dep, Policy(max_seqs=400, speculation=spec), seed=3))
    closed = float(speculative_step(dep.step, 400, 0.0, spec)[1])
    assert plain.tpot_p50_s / fast.tpot_p50_s == pytest.approx(closed, rel=0.03)


def test_bad_speculation_inputs():
    with pytest.raises(InputError, match="acceptance rate alpha must be in"):
        Speculation(3, 1.5)
    with pytest.raises(InputError, match="draft length gamma"):
        Speculation(0, 0.5)
