"""Invertible layers: the Feistel construction and RevNets (lecture §6.2–6.3).

    Feistel   forward  (x, y) → (x, y + f(x))        inverse  (x, z) → (x, z − f(x))
    RevNet    forward  (x, y) → (y + f(x), x)        inverse  (x', y') → (y', x' − f(y'))
    Gomez     forward  y1 = x1 + F(x2), y2 = x2 + G(y1)
              inverse  x2 = y2 − G(y1),  x1 = y1 − F(x2)

Sources: lecture [S 02:08:41–02:10:16] (Feistel), [S 02:10:25–end] (RevNet with one block f);
Gomez, Ren, Urtasun, Grosse 2017, "The Reversible Residual Network: Backpropagation Without Storing
Activations" (arXiv:1707.04585) §3, eq. (6)–(7) (two-function block) and Algorithm 1 (backward pass
that rematerialises activations from the outputs). f, F, G need not be invertible.

Exactness: with integer arrays the round trip is exact; in floating point `(y + f(x)) − f(x)` can
differ from y by rounding (a few ulps per layer; Gomez et al. §3.2 report it is negligible in
practice). Everything works on NumPy arrays of any shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

Fn = Callable[[np.ndarray], np.ndarray]
Pair = tuple[np.ndarray, np.ndarray]


def feistel_forward(x, y, f: Fn) -> Pair:
    """(x, y) → (x, y + f(x)) (T43: f = x², (3, 5) → (3, 14))."""
    x = np.asarray(x)
    return x, np.asarray(y) + f(x)


def feistel_inverse(x, z, f: Fn) -> Pair:
    """(x, z) → (x, z − f(x)): x is read off, y recovered (T43 inverse → (3, 5))."""
    x = np.asarray(x)
    return x, np.asarray(z) - f(x)


def revnet_forward(x, y, f: Fn) -> Pair:
    """(x, y) → (x_out, y_out) = (y + f(x), x): a Feistel round plus a swap (T44: (3, 5) → (14, 3))."""
    x = np.asarray(x)
    return np.asarray(y) + f(x), x


def revnet_inverse(x_out, y_out, f: Fn) -> Pair:
    """(x_out, y_out) → (x, y) = (y_out, x_out − f(y_out)) (T44 inverse → (3, 5))."""
    y_out = np.asarray(y_out)
    return y_out, np.asarray(x_out) - f(y_out)


def gomez_forward(x1, x2, F: Fn, G: Fn) -> Pair:
    """Gomez et al. 2017 eq. (6): y1 = x1 + F(x2), y2 = x2 + G(y1)."""
    y1 = np.asarray(x1) + F(np.asarray(x2))
    return y1, np.asarray(x2) + G(y1)


def gomez_inverse(y1, y2, F: Fn, G: Fn) -> Pair:
    """Gomez et al. 2017 eq. (7): x2 = y2 − G(y1), x1 = y1 − F(x2)."""
    x2 = np.asarray(y2) - G(np.asarray(y1))
    return np.asarray(y1) - F(x2), x2


def stack_forward(x, y, fs: Sequence[Fn]) -> Pair:
    """Apply RevNet layers f_1 … f_L in turn; keep only the final output (no activations stored)."""
    for f in fs:
        x, y = revnet_forward(x, y, f)
    return x, y


def stack_inverse(x_out, y_out, fs: Sequence[Fn]) -> Pair:
    """Undo `stack_forward` layer by layer in reverse, from the outputs alone."""
    for f in reversed(fs):
        x_out, y_out = revnet_inverse(x_out, y_out, f)
    return x_out, y_out


# ---- backprop without stored activations: a tanh-MLP RevNet ---------------------------------------
@dataclass(frozen=True)
class TanhBlock:
    """f(x) = tanh(x @ W): a small residual block whose vector–Jacobian product is closed-form."""

    W: np.ndarray

    def __call__(self, x):
        return np.tanh(x @ self.W)

    def vjp(self, x, g):
        """(∂f/∂x)ᵀ g and ∂⟨g, f(x)⟩/∂W for f(x) = tanh(xW)."""
        pre = 1.0 - np.tanh(x @ self.W) ** 2
        gp = g * pre
        return gp @ self.W.T, x.T @ gp


@dataclass(frozen=True)
class BackwardResult:
    grad_x: np.ndarray
    grad_y: np.ndarray
    grad_W: list
    peak_stored_arrays: int  # activations held at once (the point of the exercise)
    extra_forward_calls: int  # f evaluations spent rematerialising


def backward_stored(x, y, blocks: Sequence[TanhBlock], gx_out, gy_out) -> BackwardResult:
    """Standard backprop: the forward pass stores every layer's input pair (2·L arrays)."""
    stored = []
    for f in blocks:
        stored.append((x, y))
        x, y = revnet_forward(x, y, f)
    gx, gy = gx_out, gy_out
    grads = []
    for f, (xi, _) in zip(reversed(blocks), reversed(stored)):
        gi, gw = _layer_vjp(f, xi, gx, gy)
        gx, gy = gi
        grads.append(gw)
    return BackwardResult(gx, gy, grads[::-1], peak_stored_arrays=2 * len(blocks), extra_forward_calls=0)


def backward_reversible(x_out, y_out, blocks: Sequence[TanhBlock], gx_out, gy_out) -> BackwardResult:
    """Gomez et al. 2017 Algorithm 1 for the one-block RevNet: walk back from the outputs, rebuild
    each layer's input with `revnet_inverse` (one extra f call per layer ≈ one extra forward pass),
    then apply its vector–Jacobian product. Holds O(1) activations instead of O(L)."""
    x, y = np.asarray(x_out), np.asarray(y_out)
    gx, gy = gx_out, gy_out
    grads = []
    for f in reversed(blocks):
        x, y = revnet_inverse(x, y, f)  # rematerialise this layer's input
        (gx, gy), gw = _layer_vjp(f, x, gx, gy)
        grads.append(gw)
    return BackwardResult(gx, gy, grads[::-1], peak_stored_arrays=2, extra_forward_calls=len(blocks))


def _layer_vjp(f: TanhBlock, x, gx_out, gy_out):
    """Gradients through (x, y) → (y + f(x), x): ∂/∂x = gy_out + Jfᵀ gx_out, ∂/∂y = gx_out."""
    jx, gw = f.vjp(x, gx_out)
    return (gy_out + jx, gx_out), gw


def random_blocks(layers: int, width: int, seed: int = 0, scale: float = 0.5) -> list[TanhBlock]:
    """`layers` tanh blocks with N(0, scale²/width) weights from a seeded generator."""
    rng = np.random.default_rng(seed)
    return [TanhBlock(rng.normal(0.0, scale / np.sqrt(width), (width, width))) for _ in range(layers)]
