"""Golden tests for scaling.py: spec §9 T27–T33, Hoffmann et al. 2022 and published training compute."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline import scaling as S
from roofline.errors import InputError

# Published training compute (copied with citations from the project's reference facts):
# GPT-3 175B on 300B tokens: 3.14e23 FLOP (Brown et al. 2020, arXiv:2005.14165, Table D.1 "3.14E+23");
# Chinchilla 70B on 1.4T tokens (Hoffmann et al. 2022, arXiv:2203.15556, §4: Chinchilla uses Gopher's
# budget, Table 1/§4); Llama 3.1 405B: 3.8e25 FLOP on 15.6T tokens (Llama Team 2024, arXiv:2407.21783, §3.3.1).
PUBLISHED_COMPUTE = [
    # (name, params, tokens, stated FLOP, rel_tol, source)
    ("gpt-3", 175e9, 300e9, 3.14e23, 0.01, "Brown et al. 2020 Table D.1"),
    ("chinchilla", 70e9, 1.4e12, 5.76e23, 0.03, "Hoffmann et al. 2022 §4: Gopher budget 5.76e23 (6ND = 5.88e23, +2%)"),
    ("llama-3.1-405b", 405e9, 15.6e12, 3.8e25, 0.01, "Llama Team 2024 §3.3.1"),
]


def test_t27_t28_lifetime_tokens():
    assert S.lifetime_tokens(5e8, 60) == pytest.approx(2.592e15, rel=1e-3)  # T27
    assert S.lifetime_tokens(5e7, 60) == pytest.approx(2.592e14, rel=1e-3)  # T28


def test_t29_t30_chinchilla_and_overtraining():
    assert S.chinchilla_tokens(1e11) == 2e12  # T29
    assert S.overtraining_factor(2e14, 1e11) == 100.0  # T30
    assert S.overtraining_factor(150e12, 1e11) == 75.0  # T30, the 150T rumour


def test_t31_t32_equal_cost_ratios():
    assert S.equal_cost_data_ratio(3, 1 / 3) == pytest.approx(1.5, rel=1e-9)  # D_pre/D_RL
    assert S.equal_cost_data_ratio(2, 1 / 3) == pytest.approx(1.0, rel=1e-9)  # D_pre/D_inf
    assert S.equal_cost_data_ratio(3, 0.3) == pytest.approx(1.667, rel=1e-3)  # T32
    assert S.equal_cost_data_ratio(2, 0.3) == pytest.approx(1.111, rel=1e-3)


def test_equal_cost_ratio_really_equalises_costs():
    """Cross-check: with D_pre = ratio·D_X, the two phase costs computed independently are equal."""
    n, d_pre = 1e11, 2e14
    for k, eta in [(3, 1 / 3), (2, 0.3), (6, 0.5)]:
        d_x = d_pre / S.equal_cost_data_ratio(k, eta)
        assert S.rl_cost(n, d_x, k, eta) == pytest.approx(S.pretrain_flops(n, d_pre), rel=1e-12)


def test_t33_heuristic_minima():
    x = S.grid_argmin(lambda x: 1 / x + x, 0.1, 10)
    assert x == pytest.approx(1.0, abs=1e-6)
    assert 1 / x == pytest.approx(x, rel=1e-5)  # both terms equal 1
    assert S.grid_argmin(lambda x: np.exp(x) + np.exp(-x), -5, 5) == pytest.approx(0.0, abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(st.floats(0.1, 10), st.floats(0.1, 3), st.floats(0.1, 10), st.floats(0.1, 3))
def test_power_law_optimum_matches_grid_and_ratio(a, p, b, q):
    x_star, ratio = S.power_law_optimum(a, p, b, q)
    f = lambda x: a * x**p + b * x**-q
    lo, hi = x_star / 5, x_star * 5
    assert S.grid_argmin(f, lo, hi, 20001) == pytest.approx(x_star, rel=1e-4)
    assert (a * x_star**p) / (b * x_star**-q) == pytest.approx(q / p, rel=1e-9)
    # the heuristic point is never cheaper than the true optimum
    x_eq = S.equal_terms_point(a, p, b, q)
    assert f(x_eq) >= f(x_star) * (1 - 1e-12)


def test_power_law_equal_exponents_heuristic_is_exact():
    x_star, ratio = S.power_law_optimum(2.0, 0.5, 8.0, 0.5)
    assert ratio == 1.0 and x_star == pytest.approx(S.equal_terms_point(2.0, 0.5, 8.0, 0.5))


@pytest.mark.parametrize("name,n,d,flops,tol,src", PUBLISHED_COMPUTE)
def test_6nd_against_published_compute(name, n, d, flops, tol, src):
    assert S.pretrain_flops(n, d) == pytest.approx(flops, rel=tol), src


def test_hoffmann_loss_and_compute_optimal():
    # Hoffmann et al. 2022 eq. (10) constants, Approach 3
    law = S.HOFFMANN_2022
    assert (law.E, law.A, law.B, law.alpha, law.beta) == (1.69, 406.4, 410.7, 0.34, 0.28)
    # Chinchilla 70B / 1.4T: E + A/N^a + B/D^b, computed by hand: 1.69 + 0.0837 + 0.2019... = 1.9367
    hand = 1.69 + 406.4 / 70e9**0.34 + 410.7 / 1.4e12**0.28
    assert S.loss(70e9, 1.4e12) == pytest.approx(hand, rel=1e-12)
    assert 1.9 < hand < 2.0
    # The Approach-3 efficient frontier: a = β/(α+β) = 0.45 (paper Table 2: a = 0.46 for approach 3)
    n1, _ = S.compute_optimal(1e23)
    n2, _ = S.compute_optimal(1e24)
    assert np.log10(n2 / n1) == pytest.approx(0.28 / 0.62, rel=1e-9)
    # compute_optimal really minimises loss along 6ND = C (cross-check against a grid)
    c = 5.76e23
    n_opt, d_opt = S.compute_optimal(c)
    grid = np.logspace(9, 13, 400001)
    best = grid[np.argmin(S.loss(grid, c / (6 * grid)))]
    assert n_opt == pytest.approx(best, rel=1e-3)
    assert 6 * n_opt * d_opt == pytest.approx(c, rel=1e-12)


def test_replication_fit_gives_about_20_tokens_per_param():
    """Besiroglu et al. 2024 report their refit implies ≈ 20 tokens/param at Chinchilla's budget."""
    n, d = S.compute_optimal(5.76e23, S.BESIROGLU_2024)
    assert 15 < d / n < 30


def test_tokens_for_loss_inverts_loss():
    n = np.array([1e9, 1e10, 1e11])
    d = S.tokens_for_loss(n, 2.1)
    assert np.allclose(S.loss(n, d), 2.1, rtol=1e-12)
    assert S.tokens_for_loss(1e6, 2.0) == np.inf  # too small to ever reach 2.0


def test_lifetime_plan_lecture_chain():
    plan = S.lifetime_plan(1e11, 5e7, 60)
    assert plan.inference_tokens == pytest.approx(2.592e14, rel=1e-9)
    assert plan.pretrain_tokens == pytest.approx(plan.inference_tokens, rel=1e-9)  # D_pre = D_inf
    assert plan.pretrain_tokens / plan.rl_tokens == pytest.approx(1.5, rel=1e-9)  # = 1.5 D_RL
    assert plan.overtraining == pytest.approx(129.6, rel=1e-9)  # ~100x
    assert plan.pretrain_flops == pytest.approx(plan.rl_flops_equivalent, rel=1e-9)
    assert plan.pretrain_flops == pytest.approx(plan.inference_flops_equivalent, rel=1e-9)


def test_inference_aware_optimum():
    no_inf = S.inference_aware_optimum(2.0, 0.0)
    # without inference the optimum is the loss-constrained Chinchilla point
    assert no_inf.n_opt == pytest.approx(no_inf.n_chinchilla, rel=1e-3)
    heavy = S.inference_aware_optimum(2.0, 1e15)
    assert heavy.n_opt < no_inf.n_opt  # smaller model ...
    assert heavy.overtraining_opt > no_inf.overtraining_opt  # ... trained longer
    assert heavy.cost_opt <= heavy.cost_chinchilla
    assert S.loss(heavy.n_opt, heavy.d_opt) == pytest.approx(2.0, rel=1e-9)
    # the grid minimum is a true minimum: perturbing N either way costs more
    for f in (0.9, 1.1):
        n = heavy.n_opt * f
        d = S.tokens_for_loss(n, 2.0)
        assert 6 * n * d + 2 * n * 1e15 * 3 > heavy.cost_opt


def test_bad_inputs():
    with pytest.raises(InputError, match="irreducible loss"):
        S.inference_aware_optimum(1.5, 1e12)
    with pytest.raises(InputError, match="parameters must be > 0"):
        S.chinchilla_tokens(0)
    with pytest.raises(InputError, match="efficiency must be > 0"):
        S.equal_cost_data_ratio(3, 0)
