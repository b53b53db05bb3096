"""End-to-end check: a real Llama-architecture decode, timed, against the calibrated prediction.

The model (calibrate/data/tiny-llama.yaml, random weights, nothing downloaded) is the Llama block
(Touvron et al. 2023): RMSNorm → Q/K/V projections with grouped-query heads → RoPE → attention over
the KV cache → output projection → residual; RMSNorm → SwiGLU MLP → residual; final RMSNorm and LM head.
One decode step = one new token for each of B sequences with C tokens already cached. It runs in
PyTorch when installed (CPU, or CUDA), else in NumPy; fp32 throughout.

Prediction: engine.step (one GPU, the realistic model) with the calibrated profile and calibrated_family (only
microbenchmarks), whose GEMM curve and KV bandwidth are re-measured at the model's own shapes
(batch-B projections, decode attention over the cache) interleaved with the decode timings;
measured: median over rounds of the minimum over repeats of one step's wall time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import resources

import numpy as np

from ..catalog import parse_model
from ..efficiency import FamilyEfficiency, family_efficiency
from ..engine import step
from ..hardware import Accelerator, single_accelerator_system
from ..layout import Layout
from .microbench import _Ops, resolve_backend

#: Dispatched operations per layer in `_layer` below (counted by hand from the code: 2 RMSNorms × 6,
#: 3 projections + 3 reshapes, RoPE 2 × 5, 2 cache writes + 2 slices, scores/scale/softmax/PV/reshape 5,
#: output projection + residual 2, MLP 3 matmuls + SiLU + product + residual 6) — used only to turn the
#: measured per-op overhead into a per-layer overhead.
OPS_PER_LAYER = 45
#: Embedding lookup, final RMSNorm (6) and LM head.
OPS_PER_PASS = 8


def tiny_model():
    import yaml

    doc = yaml.safe_load((resources.files("roofline.calibrate") / "data" / "tiny-llama.yaml").read_text())
    return parse_model(doc["models"][0], "roofline/calibrate/data/tiny-llama.yaml")


class LlamaDecoder:
    """Random-weight Llama decoder with a preallocated KV cache (PyTorch or NumPy)."""

    def __init__(self, m, backend: str = "auto", device: str = "cpu", seed: int = 0):
        self.m, self.backend = m, resolve_backend(backend, device)
        self.ops = _Ops(self.backend, device)
        D, H, K, hd, F = m.d_model, m.heads, m.kv_heads, m.head_dim, m.d_ff
        r = self.ops.randn
        self.emb = r((m.vocab, D), seed=seed)
        self.lm_head = r((D, m.vocab), seed=seed + 1)
        self.layers = []
        for i in range(m.layers):
            s = seed + 10 * (i + 1)
            self.layers.append(dict(wq=r((D, H * hd), seed=s), wk=r((D, K * hd), seed=s + 1),
                                    wv=r((D, K * hd), seed=s + 2), wo=r((H * hd, D), seed=s + 3),
                                    wg=r((D, F), seed=s + 4), wu=r((D, F), seed=s + 5), wd=r((F, D), seed=s + 6)))
        self.cache: list | None = None

    # -- backend helpers ------------------------------------------------------------------------
    def _rms(self, x):
        if self.backend == "torch":
            return x * self.ops.t.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5)
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5)

    def _softmax(self, s):
        if self.backend == "torch":
            return self.ops.t.softmax(s, dim=-1)
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def _silu(self, x):
        if self.backend == "torch":
            return self.ops.t.nn.functional.silu(x)
        return x / (1.0 + np.exp(-x))

    def _rope(self, x, pos):
        hd = x.shape[-1]
        inv = 1.0 / (10000.0 ** (np.arange(0, hd, 2) / hd))
        ang = pos * inv
        cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
        if self.backend == "torch":
            cos, sin = self.ops.t.from_numpy(cos).to(x.device), self.ops.t.from_numpy(sin).to(x.device)
        x1, x2 = x[..., 0::2], x[..., 1::2]
        if self.backend == "torch":
            return self.ops.t.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
        return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)

    def allocate(self, batch: int, context: int):
        """KV cache for `batch` sequences holding `context` cached tokens (+1 slot for the new one)."""
        m = self.m
        shape = (batch, m.kv_heads, context + 1, m.head_dim)
        self.cache = [(self.ops.randn(shape, seed=100 + i), self.ops.randn(shape, seed=200 + i))
                      for i in range(m.layers)]
        self.batch, self.context = batch, context

    def step(self, tokens):
        """One decode step for all sequences at position `context`; returns logits [B, V]."""
        m, B, C = self.m, self.batch, self.context
        H, K, hd = m.heads, m.kv_heads, m.head_dim
        x = self.emb[tokens]
        for w, (kc, vc) in zip(self.layers, self.cache):
            h = self._rms(x)
            q = self._rope((h @ w["wq"]).reshape(B, K, H // K, hd), C)
            k = self._rope((h @ w["wk"]).reshape(B, K, 1, hd), C)
            v = (h @ w["wv"]).reshape(B, K, 1, hd)
            kc[:, :, C:C + 1] = k
            vc[:, :, C:C + 1] = v
            keys, vals = kc[:, :, :C + 1], vc[:, :, :C + 1]
            kt = keys.transpose(-1, -2) if self.backend == "torch" else keys.swapaxes(-1, -2)
            # a Python float: a NumPy float64 scalar would promote the fp32 scores to fp64 (NEP 50), and every
            # matmul after it would then copy its fp32 weights to fp64
            p = self._softmax((q @ kt) * (1.0 / math.sqrt(hd)))
            o = (p @ vals).reshape(B, H * hd)
            x = x + o @ w["wo"]
            h = self._rms(x)
            x = x + (self._silu(h @ w["wg"]) * (h @ w["wu"])) @ w["wd"]
        return self._rms(x) @ self.lm_head

    def time_step(self, repeats: int = 3) -> float:
        rng = np.random.default_rng(0)
        tokens = rng.integers(0, self.m.vocab, self.batch)
        if self.backend == "torch":
            tokens = self.ops.t.from_numpy(tokens).to(self.ops.device)
            with self.ops.t.inference_mode():
                return self.ops.timeit(lambda: self.step(tokens), repeats)
        return self.ops.timeit(lambda: self.step(tokens), repeats)


@dataclass(frozen=True)
class DecodePoint:
    batch: int
    context: int
    measured_s: float
    predicted_s: float
    low_s: float
    high_s: float

    @property
    def error(self) -> float:
        return self.predicted_s / self.measured_s - 1.0


def predict_decode(m, acc: Accelerator, fam: FamilyEfficiency, batch, context):
    """(mid, fast, slow) predicted step seconds for the decode model on a calibrated accelerator."""
    system = single_accelerator_system(acc, 1)
    out = [step(m, system, batch, context, layout=Layout(tp=1), phase="decode", weights_dtype="fp32", kv_dtype="fp32",
                activation_dtype="fp32", efficiency=family_efficiency(fam, "fp32", w), check=False,
                check_context=False, details=False).step_s for w in ("mid", "fast", "slow")]
    return tuple(float(x) for x in out)


def _shape_benches(dec: LlamaDecoder, batch: int, context: int, repeats: int):
    """(matmul s, attention s) of one layer at the model's own shapes: the 7 projections of a layer
    (plus the LM head, counted once per pass: returned separately) with `batch` rows, and decode
    attention q·Kᵀ → softmax → ·V over `context`+1 cached tokens. Min over `repeats`."""
    m, ops = dec.m, dec.ops
    D, H, K, hd, F = m.d_model, m.heads, m.kv_heads, m.head_dim, m.d_ff
    w = dec.layers[0]
    x, o, f = ops.randn((batch, D), seed=21), ops.randn((batch, H * hd), seed=22), ops.randn((batch, F), seed=23)

    def layer_mm():
        x @ w["wq"], x @ w["wk"], x @ w["wv"], o @ w["wo"], x @ w["wg"], x @ w["wu"], f @ w["wd"]

    q = ops.randn((batch, K, H // K, hd), seed=24)
    kc, vc = ops.randn((batch, K, context + 1, hd), seed=25), ops.randn((batch, K, context + 1, hd), seed=26)
    kt = kc.transpose(-1, -2) if dec.backend == "torch" else kc.swapaxes(-1, -2)

    def attn():
        dec._softmax((q @ kt) * 0.125) @ vc

    def head():
        x @ dec.lm_head

    def run(fn):
        if dec.backend == "torch":
            with ops.t.inference_mode():
                return ops.timeit(fn, repeats)
        return ops.timeit(fn, repeats)

    return run(layer_mm), run(attn), run(head)


@dataclass(frozen=True)
class ShapeCalibration:
    """Medians over interleaved rounds: GEMM efficiency by rows at the model's shapes, KV bandwidth."""

    gemm_curve: tuple  # ((rows, η relative to the profile's fp32 peak), ...)
    kv_bandwidth: tuple  # (median, min, max) fraction of the profile's bandwidth over the grid


def shape_family(fam: FamilyEfficiency, cal: ShapeCalibration) -> FamilyEfficiency:
    """`fam` with the GEMM curve and KV bandwidth measured at the model's own shapes."""
    from dataclasses import replace

    from ..efficiency import Factor

    src = "roofline calibrate: model-shape microbenchmarks interleaved with the decode repeats (medians)"
    med, lo, hi = cal.kv_bandwidth
    return replace(fam, gemm_curve=cal.gemm_curve, kv_bandwidth=Factor(med, min(lo, med), max(hi, med), src))


def decode_check(acc: Accelerator, fam: FamilyEfficiency, *, batches=(1, 4, 16), contexts=(128, 512, 1024),
                 backend: str = "auto", device: str = "cpu", repeats: int = 3, rounds: int = 3,
                 progress=None) -> list[DecodePoint]:
    """Time the real decode at every (batch, context) and compare with the prediction.

    Benchmarks and decode run on shared cores, so they are interleaved: each round times, for every
    point, the model-shape microbenchmarks (_shape_benches) right before the decode step; the GEMM
    curve η(rows) and the KV bandwidth are the medians over rounds of the microbenchmarks, the measured
    step the median over rounds of its decode timings. No decode timing enters any factor.
    """
    m = tiny_model()
    dec = LlamaDecoder(m, backend, device)
    peak, bw = acc.peak_flops("fp32"), acc.hbm_bytes_per_s
    mm: dict[int, list[float]] = {b: [] for b in batches}
    kv_eta: dict[tuple[int, int], list[float]] = {(b, c): [] for b in batches for c in contexts}
    step: dict[tuple[int, int], list[float]] = {(b, c): [] for b in batches for c in contexts}
    D, H, K, hd, F = m.d_model, m.heads, m.kv_heads, m.head_dim, m.d_ff
    layer_params = D * H * hd * 2 + D * K * hd * 2 + 3 * D * F
    for _ in range(rounds):
        for b in batches:
            for c in contexts:
                dec.allocate(b, c)
                t_mm, t_att, t_head = _shape_benches(dec, b, c, repeats)
                flops = 2.0 * b * (m.layers * layer_params + D * m.vocab)
                mm[b].append(flops / ((m.layers * t_mm + t_head) * peak))
                kv_eta[(b, c)].append(2.0 * b * K * (c + 1) * hd * 4 / (t_att * bw))
                step[(b, c)].append(dec.time_step(repeats))
                if progress:
                    progress()
    dec.cache = None
    kv = np.array([np.median(v) for v in kv_eta.values()])
    cal = ShapeCalibration(gemm_curve=tuple((float(b), float(np.median(v))) for b, v in sorted(mm.items())),
                           kv_bandwidth=(float(np.median(kv)), float(kv.min()), float(kv.max())))
    fam2 = shape_family(fam, cal)
    out = []
    for (b, c), ts in step.items():
        mid, fast, slow = predict_decode(m, acc, fam2, b, c)
        out.append(DecodePoint(b, c, float(np.median(ts)), mid, fast, slow))
    return out
