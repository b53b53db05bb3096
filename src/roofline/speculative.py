"""Speculative decoding and multi-token prediction in closed form (lecture §1.8: the second fast-mode
lever, named [S 00:01:50–00:01:58] and never analysed; spec §8 item 11).

A cheap drafter proposes γ tokens; the target model verifies them in ONE pass of γ+1 tokens per
sequence (Leviathan et al. 2023, "Fast Inference from Transformers via Speculative Decoding", §3;
Chen et al. 2023). With each draft token accepted independently with probability α, the tokens
produced per verify step (accepted prefix + the target's own next token) have expectation

    E[tokens] = (1 − α^(γ+1)) / (1 − α)          (Leviathan et al. 2023, eq. 1; = γ+1 at α = 1)

The verify pass is a roofline pass of L = γ+1 tokens per sequence [S 01:42:00–01:44:34]: while
memory-bound it costs about one decode step (weights and KV read once for all γ+1 tokens), while
compute-bound it costs γ+1 times one. The drafter costs γ draft steps; an MTP head (DeepSeek-V3
§2.2) or a small draft model costs `draft_fraction` of one target decode step per draft token.

    time per token  = (t_verify(B, γ+1) + γ · f · t_decode(B)) / E[tokens]
    speed-up        = t_decode(B) · E[tokens] / (t_verify + γ · f · t_decode)

Ignores: acceptance varying with position or content (α is one number), tree drafts, the
drafter's own KV memory, and rejection sampling's extra compute.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError, require_positive


@dataclass(frozen=True)
class Speculation:
    """Draft length γ (>= 1 tokens), acceptance α in [0, 1], draft cost f per draft token as a fraction
    of a target decode step (MTP heads: ~1 layer of the model; a 1B drafter for a 70B: ~0.02-0.05)."""

    gamma: int = 3
    alpha: float = 0.7
    draft_fraction: float = 0.05

    def __post_init__(self):
        if int(self.gamma) != self.gamma or self.gamma < 1:
            raise InputError(f"draft length gamma must be a whole number >= 1, got {self.gamma}")
        if not 0.0 <= self.alpha <= 1.0:
            raise InputError(f"acceptance rate alpha must be in [0, 1], got {self.alpha:g}")
        require_positive("draft cost fraction", self.draft_fraction, allow_zero=True)

    @property
    def tokens_per_step(self) -> float:
        return float(expected_tokens_per_step(self.alpha, self.gamma))


def expected_tokens_per_step(alpha, gamma):
    """E = (1 − α^(γ+1))/(1 − α) tokens per verify step (Leviathan et al. 2023 eq. 1); γ+1 at α = 1.
    Broadcasts over α and γ."""
    a = np.asarray(alpha, dtype=float)
    g = np.asarray(gamma, dtype=float)
    if np.any((a < 0) | (a > 1)):
        raise InputError("acceptance rate alpha must be in [0, 1]")
    require_positive("draft length gamma", g)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = (1.0 - a ** (g + 1.0)) / (1.0 - a)
    return np.where(a >= 1.0, g + 1.0, e)


def tokens_per_step_distribution(alpha: float, gamma: int) -> np.ndarray:
    """P(tokens = k+1) for k = 0..γ accepted drafts: α^k (1 − α) for k < γ, α^γ for k = γ."""
    k = np.arange(gamma + 1)
    p = alpha ** k * (1.0 - alpha)
    p[-1] = alpha ** gamma
    return p


def draw_verify_steps(rng: np.random.Generator, tokens_needed, alpha: float, gamma: int) -> np.ndarray:
    """Verify steps each request needs to produce `tokens_needed` tokens (vectorised over requests):
    each step yields 1 + (accepted drafts), accepted ~ truncated geometric. 0 tokens need 0 steps."""
    need = np.asarray(tokens_needed, dtype=float).copy()
    steps = np.zeros(need.shape, dtype=np.int64)
    p = tokens_per_step_distribution(alpha, gamma)
    live = np.flatnonzero(need > 0)
    while live.size:
        need[live] -= rng.choice(np.arange(1, gamma + 2), size=live.size, p=p)
        steps[live] += 1
        live = live[need[live] > 0]
    return steps


def verify_step_s(step_model, batch, gamma, context):
    """Verify pass on the roofline: B sequences × (γ+1) tokens at `context` (any StepModel)."""
    b = np.asarray(batch, dtype=float)
    return step_model(b, b * (np.asarray(gamma, dtype=float) + 1.0), context)


def speculative_step(step_model, batch, context, spec: Speculation):
    """(seconds per output token, speed-up over plain decode, tokens per verify step) at batch B and
    context: (t_verify + γ·f·t_decode)/E against t_decode/1. Broadcasts over batch and context."""
    b = np.asarray(batch, dtype=float)
    t_dec = step_model(b, b, context)
    t_ver = verify_step_s(step_model, b, spec.gamma, context)
    t_iter = t_ver + spec.gamma * spec.draft_fraction * t_dec
    e = spec.tokens_per_step
    per_token = t_iter / e
    return per_token, t_dec / per_token, e


def fast_slow_with_speculation(step_model, b_slow, b_fast, context, spec: Speculation, usd_per_s: float = 1.0):
    """The fast/slow trade with and without speculation: per-sequence speed (tokens/s) and price
    (USD per token = t_token·usd_per_s/B) at the slow and fast batch. Returns a dict of arrays.
    Speculation multiplies the fast (memory-bound) mode's speed by up to E but barely helps a
    compute-bound slow mode, where the verify pass costs ~(γ+1) decode steps."""
    out = {}
    for name, b in (("slow", b_slow), ("fast", b_fast)):
        t_dec = np.asarray(step_model(np.asarray(b, float), np.asarray(b, float), context), dtype=float)
        t_tok, speedup, _ = speculative_step(step_model, b, context, spec)
        out[f"{name}_speed_tokens_per_s"] = 1.0 / t_dec
        out[f"{name}_usd_per_token"] = t_dec * usd_per_s / np.asarray(b, float)
        out[f"{name}_spec_speed_tokens_per_s"] = 1.0 / t_tok
        out[f"{name}_spec_usd_per_token"] = t_tok * usd_per_s / np.asarray(b, float)
        out[f"{name}_spec_speedup"] = speedup
    return out
