"""Scaling economics of a model's lifetime: Chinchilla, pretraining vs RL vs inference (lecture §4).

Symbols: N active parameters, D_pre pretraining tokens, D_RL RL tokens, D_inf lifetime inference
tokens; η_X the efficiency of phase X relative to pretraining MFU; k_X FLOPs per parameter per token.

    C_pre = 6·N·D_pre            C_RL = k_RL·N·D_RL/η_RL            C_inf = 2·N·D_inf/η_inf
    (lecture [S 01:21:43–01:23:51], spec §4.2; 6ND: Kaplan et al. 2020 §2.1)

Costs are in pretraining-FLOP equivalents (FLOPs divided by the phase's efficiency relative to
pretraining), so they add. Loss law: Hoffmann et al. 2022 ("Chinchilla", arXiv:2203.15556) §3.3,
eq. (2) and (10), Approach 3 constants. Every function broadcasts over NumPy arrays.

Ignores: data repetition (Muennighoff et al. 2023), the loss law's validity far beyond its fitted range
(it was fit up to ~16B params and ~500B tokens; 100× over-training is an extrapolation), MoE (N is
the active count, as in the lecture [S 01:31:31]), the discounting of inference tokens the lecture
mentions but does not quantify [S 01:29:07].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError, require_positive
from .units import SECONDS_PER_DAY

#: Chinchilla rule of thumb: compute-optimal training uses ≈ 20 tokens per parameter (Hoffmann et al.
#: 2022, Table 3: 70B → 1.4T; lecture [S 01:31:31], T29).
CHINCHILLA_TOKENS_PER_PARAM = 20.0


@dataclass(frozen=True)
class LossLaw:
    """L(N, D) = E + A/N^α + B/D^β (Hoffmann et al. 2022 eq. (2))."""

    E: float
    A: float
    B: float
    alpha: float
    beta: float
    source: str


#: Hoffmann et al. 2022 §3.3 eq. (10), Approach 3 (parametric fit): E=1.69, A=406.4, B=410.7,
#: α=0.34, β=0.28. Loss in nats/token on MassiveText.
HOFFMANN_2022 = LossLaw(1.69, 406.4, 410.7, 0.34, 0.28,
                        "Hoffmann et al. 2022 (arXiv:2203.15556) eq. (10), Approach 3")
#: Besiroglu et al. 2024, "Chinchilla Scaling: A replication attempt" (arXiv:2404.10102) Table 1:
#: refit of Approach 3 on the paper's own data; implies ≈ 20 tokens/param, unlike the original fit.
BESIROGLU_2024 = LossLaw(1.8172, 482.01, 2085.43, 0.3478, 0.3658,
                         "Besiroglu et al. 2024 (arXiv:2404.10102) Table 1, replication of Approach 3")

LAWS = {"hoffmann2022": HOFFMANN_2022, "besiroglu2024": BESIROGLU_2024}


def loss(n_params, tokens, law: LossLaw = HOFFMANN_2022):
    """L(N, D) = E + A/N^α + B/D^β, nats per token (Hoffmann et al. 2022 eq. (2), (10))."""
    require_positive("parameters", n_params)
    require_positive("tokens", tokens)
    n = np.asarray(n_params, dtype=float)
    d = np.asarray(tokens, dtype=float)
    return law.E + law.A / n**law.alpha + law.B / d**law.beta


def tokens_for_loss(n_params, target_loss, law: LossLaw = HOFFMANN_2022):
    """D that reaches `target_loss` with N parameters: D = (B / (L − E − A/N^α))^(1/β).

    Inverts eq. (2). Where N is too small to ever reach the loss (L − E − A/N^α ≤ 0), returns inf.
    """
    require_positive("parameters", n_params)
    n = np.asarray(n_params, dtype=float)
    gap = np.asarray(target_loss, dtype=float) - law.E - law.A / n**law.alpha
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(gap > 0, (law.B / np.where(gap > 0, gap, 1.0)) ** (1.0 / law.beta), np.inf)


def chinchilla_tokens(n_params, tokens_per_param=CHINCHILLA_TOKENS_PER_PARAM):
    """D_chin = 20·N (T29: N = 1e11 → 2e12 tokens) [S 01:31:31]."""
    require_positive("parameters", n_params)
    return np.asarray(n_params, dtype=float) * tokens_per_param


def compute_optimal(compute_flops, law: LossLaw = HOFFMANN_2022):
    """(N_opt, D_opt) minimising L(N, D) at fixed C = 6ND (Hoffmann et al. 2022 eq. (4)):

        N_opt = G·(C/6)^(β/(α+β)),  D_opt = G⁻¹·(C/6)^(α/(α+β)),  G = (αA/(βB))^(1/(α+β))
    """
    require_positive("compute", compute_flops)
    c = np.asarray(compute_flops, dtype=float) / 6.0
    s = law.alpha + law.beta
    G = (law.alpha * law.A / (law.beta * law.B)) ** (1.0 / s)
    return G * c ** (law.beta / s), c ** (law.alpha / s) / G


# ---- cost terms (lecture §4.2) ------------------------------------------------------------------
def pretrain_flops(n_params, tokens):
    """C_pre = 6·N·D (2 forward + 4 backward FLOPs per parameter per token; Kaplan 2020 §2.1)."""
    return 6.0 * np.asarray(n_params, dtype=float) * np.asarray(tokens, dtype=float)


def rl_cost(n_params, tokens, k_rl=3.0, eta_rl=1.0 / 3.0):
    """C_RL = k_RL·N·D_RL/η_RL; k_RL ∈ [2, 6]: rollouts generated (2) and partly trained on (≤ 6)
    [S 01:22:00–01:22:54]. Defaults k_RL = 3, η = 1/3 are the host's flashcard reading [F] (T31)."""
    _check_k_eta(k_rl, eta_rl, "RL")
    return k_rl * np.asarray(n_params, dtype=float) * np.asarray(tokens, dtype=float) / eta_rl


def inference_cost(n_params, tokens, eta_inf=1.0 / 3.0, k_inf=2.0):
    """C_inf = 2·N·D_inf/η_inf: forward only, at decode efficiency η_inf relative to pretraining
    [S 01:23:00, F]."""
    _check_k_eta(k_inf, eta_inf, "inference")
    return k_inf * np.asarray(n_params, dtype=float) * np.asarray(tokens, dtype=float) / eta_inf


def _check_k_eta(k, eta, what):
    require_positive(f"k_{what} (FLOPs per parameter per token)", k)
    e = np.asarray(eta, dtype=float)
    if np.any(~np.isfinite(e) | (e <= 0)):
        raise InputError(f"{what} efficiency must be > 0 (relative to pretraining MFU), got {np.ravel(e)[0]:g}")


def equal_cost_data_ratio(k_x, eta_x):
    """D_pre/D_X = (k_X/6)/η_X: the tokens of phase X whose cost equals pretraining's, N cancels
    (spec §4.3; lecture [S 01:24:45–01:28:42] after Reiner's own correction, §8 trap 5).
    T31: k_RL = 3, η = 1/3 → 1.5; inference k = 2 → 1.0. T32: η = 0.3 → 1.667, 1.111."""
    _check_k_eta(k_x, eta_x, "phase")
    return (np.asarray(k_x, dtype=float) / 6.0) / np.asarray(eta_x, dtype=float)


# ---- traffic, lifetime and the over-training factor (T27–T30) -----------------------------------
def lifetime_tokens(tokens_per_s, lifetime_days):
    """D_inf = rate × lifetime (T27: 5e8 tok/s × 60 days = 2.592e15; T28 per model 5e7 → 2.592e14)."""
    require_positive("traffic (tokens/s)", tokens_per_s)
    require_positive("lifetime (days)", lifetime_days)
    return np.asarray(tokens_per_s, dtype=float) * np.asarray(lifetime_days, dtype=float) * SECONDS_PER_DAY


def overtraining_factor(pretrain_tokens, n_params, tokens_per_param=CHINCHILLA_TOKENS_PER_PARAM):
    """D_pre / D_chin = D_pre/(20·N) (T30: 2e14/2e12 = 100; 150T rumour → 75) [S 01:31:31]."""
    require_positive("pretraining tokens", pretrain_tokens)
    return np.asarray(pretrain_tokens, dtype=float) / chinchilla_tokens(n_params, tokens_per_param)


@dataclass(frozen=True)
class Lifetime:
    """The lecture's chain: traffic × lifetime → D_inf → equal-cost D_pre, D_RL → over-training."""

    inference_tokens: np.ndarray
    pretrain_tokens: np.ndarray
    rl_tokens: np.ndarray
    chinchilla_tokens: np.ndarray
    overtraining: np.ndarray
    pretrain_flops: np.ndarray
    rl_flops_equivalent: np.ndarray
    inference_flops_equivalent: np.ndarray


def lifetime_plan(n_params, tokens_per_s, lifetime_days, *, k_rl=3.0, eta_rl=1.0 / 3.0,
                  eta_inf=1.0 / 3.0) -> Lifetime:
    """Set the three costs equal (lecture §4.1, §4.3): D_pre = β·D_inf with β = (2/6)/η_inf and
    D_RL = D_pre/α with α = (k_RL/6)/η_RL; over-training = D_pre/(20N).

    With the defaults (k_RL = 3, η = 1/3) D_pre = D_inf = 1.5·D_RL [S 01:27:15, F].
    """
    _check_k_eta(2.0, eta_inf, "inference")
    _check_k_eta(k_rl, eta_rl, "RL")
    d_inf = lifetime_tokens(tokens_per_s, lifetime_days)
    d_pre = d_inf * equal_cost_data_ratio(2.0, eta_inf)
    d_rl = d_pre / equal_cost_data_ratio(k_rl, eta_rl)
    n = np.asarray(n_params, dtype=float)
    return Lifetime(
        inference_tokens=d_inf, pretrain_tokens=d_pre, rl_tokens=d_rl,
        chinchilla_tokens=chinchilla_tokens(n), overtraining=overtraining_factor(d_pre, n),
        pretrain_flops=pretrain_flops(n, d_pre), rl_flops_equivalent=rl_cost(n, d_rl, k_rl, eta_rl),
        inference_flops_equivalent=inference_cost(n, d_inf, eta_inf),
    )


# ---- the equalisation heuristic (lecture §4.1, T33) ----------------------------------------------
def power_law_optimum(a, p, b, q):
    """argmin over x > 0 of a·x^p + b·x^(−q) (a, b, p, q > 0):

        x* = (b·q/(a·p))^(1/(p+q)),   and at x*: (a·x^p)/(b·x^−q) = q/p

    so the two terms are equal only when p = q (spec §4.1 caveat [I]). Returns (x*, ratio q/p).
    """
    for name, v in (("a", a), ("p", p), ("b", b), ("q", q)):
        require_positive(name, v)
    a, p, b, q = (np.asarray(v, dtype=float) for v in (a, p, b, q))
    return (b * q / (a * p)) ** (1.0 / (p + q)), q / p


def equal_terms_point(a, p, b, q):
    """The heuristic's x where a·x^p = b·x^(−q): x_eq = (b/a)^(1/(p+q)) [S 01:20:19]."""
    for name, v in (("a", a), ("p", p), ("b", b), ("q", q)):
        require_positive(name, v)
    return (np.asarray(b, dtype=float) / np.asarray(a, dtype=float)) ** (1.0 / (np.asarray(p) + np.asarray(q)))


def grid_argmin(fn, lo, hi, points=200_001):
    """argmin of a scalar function on [lo, hi] by one vectorised evaluation on a uniform grid, then a
    second grid around the best point (precision ≈ ((hi−lo)/points)²·points). Used to check the
    heuristic numerically (T33: 1/x + x → 1; e^x + e^−x → 0)."""
    if not hi > lo:
        raise InputError(f"grid needs hi > lo, got [{lo:g}, {hi:g}]; widen the interval")
    x = np.linspace(lo, hi, points)
    i = int(np.argmin(fn(x)))
    step = (hi - lo) / (points - 1)
    x2 = np.linspace(x[max(i - 1, 0)], x[min(i + 1, points - 1)], points)
    return float(x2[int(np.argmin(fn(x2)))]) if step > 0 else float(x[i])


# ---- the inference-aware optimum (Sardana et al. 2023) -------------------------------------------
@dataclass(frozen=True)
class InferenceAwareOptimum:
    """Arrays over the N grid, plus the argmin (scalars)."""

    n_grid: np.ndarray
    d_grid: np.ndarray  # tokens to reach the target loss at each N (inf where unreachable)
    total_cost: np.ndarray  # pretraining-FLOP equivalents
    pretrain_cost: np.ndarray
    rl_cost: np.ndarray
    inference_cost: np.ndarray
    overtraining: np.ndarray
    n_opt: float
    d_opt: float
    cost_opt: float
    overtraining_opt: float
    n_chinchilla: float  # the loss-optimal N for pretraining cost alone (D_inf = D_RL = 0)
    d_chinchilla: float
    cost_chinchilla: float  # total lifetime cost if one trained the pretraining-optimal model


def inference_aware_optimum(target_loss, inference_tokens, *, rl_tokens=0.0, k_rl=3.0, eta_rl=1.0 / 3.0,
                            eta_inf=1.0 / 3.0, law: LossLaw = HOFFMANN_2022, n_min=1e7, n_max=1e14,
                            points=4001) -> InferenceAwareOptimum:
    """N and D minimising 6·N·D + k_RL·N·D_RL/η_RL + 2·N·D_inf/η_inf subject to L(N, D) = target.

    For each N on a log grid, D is solved from the loss law (`tokens_for_loss`); the total is one
    array expression and the argmin is taken over the grid, then refined on a second grid.
    Source: Sardana et al. 2023, "Beyond Chinchilla-Optimal: Accounting for Inference in Language
    Model Scaling Laws" (arXiv:2401.00448) §2 (same objective, without the RL term and without η);
    lecture §4.2 for the RL and efficiency terms. Ignores: RL's effect on loss, quality beyond loss.
    """
    require_positive("inference tokens", inference_tokens, allow_zero=True)
    require_positive("RL tokens", rl_tokens, allow_zero=True)
    if not np.isfinite(target_loss):
        raise InputError(f"target loss must be a finite number, got {target_loss}; e.g. 2.0")
    if target_loss <= law.E:
        raise InputError(f"target loss {target_loss:g} is at or below the irreducible loss E = {law.E:g} of "
                         f"{law.source}; choose a loss above it")
    _check_k_eta(k_rl, eta_rl, "RL")
    _check_k_eta(2.0, eta_inf, "inference")

    def evaluate(n):
        d = tokens_for_loss(n, target_loss, law)
        pre = 6.0 * n * d
        rl = k_rl * n * rl_tokens / eta_rl
        inf = 2.0 * n * inference_tokens / eta_inf
        return d, pre, rl + 0.0 * n, inf + 0.0 * n, pre + rl + inf

    n = np.logspace(np.log10(n_min), np.log10(n_max), points)
    d, pre, rl, inf, total = evaluate(n)
    if not np.any(np.isfinite(total)):
        raise InputError(f"no model up to {n_max:g} parameters reaches loss {target_loss:g}; raise the "
                         f"target loss or n_max")
    i = int(np.nanargmin(total))
    fine = np.logspace(np.log10(n[max(i - 1, 0)]), np.log10(n[min(i + 1, points - 1)]), 2001)
    fd, _, _, _, ft = evaluate(fine)
    j = int(np.nanargmin(ft))
    # pretraining-only optimum at the same loss (Chinchilla-style), costed over the whole lifetime
    pre_only = np.where(np.isfinite(pre), pre, np.inf)
    k = int(np.argmin(pre_only))
    fine_c = np.logspace(np.log10(n[max(k - 1, 0)]), np.log10(n[min(k + 1, points - 1)]), 2001)
    cd, cpre, _, _, ctot = evaluate(fine_c)
    kc = int(np.argmin(cpre))
    with np.errstate(divide="ignore", invalid="ignore"):
        over = d / (CHINCHILLA_TOKENS_PER_PARAM * n)
    return InferenceAwareOptimum(
        n_grid=n, d_grid=d, total_cost=total, pretrain_cost=pre, rl_cost=rl, inference_cost=inf,
        overtraining=over, n_opt=float(fine[j]), d_opt=float(fd[j]), cost_opt=float(ft[j]),
        overtraining_opt=float(fd[j] / (CHINCHILLA_TOKENS_PER_PARAM * fine[j])),
        n_chinchilla=float(fine_c[kc]), d_chinchilla=float(cd[kc]), cost_chinchilla=float(ctot[kc]),
    )
