"""One forward pass on one scale-up domain: compute, weight-read and KV-read time (lecture §1, §5.3).

    t_compute = B · L · (2·N_matmul + attention FLOPs(ctx)) / (n · FLOPS · η_compute)
    t_weights = W_read(B·L) / (n · BW · η_memory)          W_read: dense weights + distinct experts touched
    t_kv      = B · kv_seq(ctx) / (n · BW · η_memory)      each sequence's cached KV read once
    t_kv_write= B · L · kv / (n · BW · η_memory)           the pass's own new KV written for later steps
    t ≥ max(t_compute, t_weights + t_kv + t_kv_write)      (perfect overlap; the lecture's bound)
    t ≤ t_compute + t_weights + t_kv + t_kv_write           (no overlap)

Sources: lecture [S 00:02:37–00:07:27] (decode roofline), [S 01:42:00–01:44:34] (pass of length L);
Pope et al. 2022 §2 (same split); Williams et al. 2009 (roofline). Decode is L = 1 new token per
sequence; prefill is a pass of L = prompt tokens on top of `context` cached tokens.

Ignores: communication between chips (perfect sharding over the n chips of one domain; see
parallel.py for TP/EP/PP costs), kernel launch and per-layer fixed overheads, elementwise ops,
the KV of the pass's own tokens re-read inside attention (kept on-chip by flash attention).
Efficiency factors are explicit inputs; 1.0 is the pure roofline.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from . import model as M
from .errors import DoesNotFitError, InputError, require_fraction, require_positive
from .hardware import System
from .units import SECONDS_PER_HOUR, dtype_bytes


@dataclass(frozen=True)
class Efficiency:
    """Achieved fractions of peak. Defaults 1.0 = the pure roofline (an upper bound on speed).

    compute: fraction of dense peak FLOP/s reached by the matmuls (typ. 0.4–0.8 in serving).
    memory:  fraction of peak HBM bandwidth reached by weight and KV reads (typ. 0.7–0.9; FlashMLA
             reaches 3.0 of 3.35 TB/s on H800, DeepSeek FlashMLA README 2025).
    """

    compute: float = 1.0
    memory: float = 1.0

    def __post_init__(self):
        require_fraction("compute efficiency", self.compute)
        require_fraction("memory efficiency", self.memory)


#: vLLM's default `gpu_memory_utilization` (vLLM engine arguments docs): share of HBM usable for
#: weights, KV cache and activations; the rest is CUDA context, allocator slack and workspace.
DEFAULT_USABLE_MEMORY = 0.9


@dataclass(frozen=True)
class StepResult:
    """Times in seconds, bytes, FLOP; arrays when any input was an array (broadcast shape)."""

    compute_s: np.ndarray
    weight_read_s: np.ndarray
    kv_read_s: np.ndarray
    kv_write_s: np.ndarray
    step_s: np.ndarray
    step_upper_s: np.ndarray
    bound: np.ndarray  # 'compute' or 'memory'
    tokens_per_s: np.ndarray
    tokens_per_s_per_sequence: np.ndarray
    usd_per_million_tokens: np.ndarray
    mfu: np.ndarray
    bandwidth_utilization: np.ndarray
    flops: np.ndarray
    bytes_read: np.ndarray
    memory_per_gpu_bytes: np.ndarray
    weights_per_gpu_bytes: float
    kv_per_gpu_bytes: np.ndarray
    activations_per_gpu_bytes: np.ndarray
    fits: np.ndarray
    params_total: float
    params_active: float
    kv_bytes_per_token: float
    critical_batch: float
    critical_batch_with_kv: np.ndarray
    latency_floor_s: float
    chips: int

    def to_dict(self) -> dict:
        """JSON-ready dict (floats/lists, SI units); stable keys documented in docs/json.md."""
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray):
                v = v.tolist() if v.ndim else v.item()
            elif isinstance(v, np.generic):
                v = v.item()
            out[f.name] = _json_safe(v)
        return out


def _json_safe(v):
    """inf/nan are not JSON: infinite values (e.g. no critical batch exists) become None."""
    if isinstance(v, float) and not np.isfinite(v):
        return None
    if isinstance(v, list):
        return [_json_safe(x) for x in v]
    return v


def step(
    model: M.Model,
    system: System,
    batch,
    context,
    *,
    phase: str = "decode",
    prompt=1,
    weights_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    activation_dtype: str = "bf16",
    chips: int | None = None,
    efficiency: Efficiency = Efficiency(),
    usd_per_gpu_hour: float | None = None,
    usable_memory: float = DEFAULT_USABLE_MEMORY,
    attention_flops: bool = True,
    distinct_experts: bool = True,
    kv_writes: bool = True,
    check_context: bool = True,
    check_fit: bool = False,
) -> StepResult:
    """Time, cost and memory of one pass of `model` on `chips` accelerators of `system`.

    batch: sequences in the pass (B). context: tokens already cached per sequence (decode attends
    them; prefill adds `prompt` new tokens on top). phase 'decode' uses L = 1, 'prefill' L = prompt.
    All of batch, context and prompt broadcast. `attention_flops=False, distinct_experts=False,
    kv_writes=False` reproduces the lecture's idealised board exactly.
    """
    if phase not in ("decode", "prefill"):
        raise InputError(f"phase must be 'decode' or 'prefill', got {phase!r}")
    require_positive("batch", batch, fix="use at least one sequence")
    require_positive("context", context, allow_zero=True, fix="context counts cached tokens, 0 or more")
    require_positive("prompt", prompt, fix="a prefill pass needs at least one token")
    require_fraction("usable memory fraction", usable_memory)
    B = np.asarray(batch, dtype=float)
    ctx = np.asarray(context, dtype=float)
    L = np.asarray(prompt, dtype=float) if phase == "prefill" else np.asarray(1.0)
    if check_context and model.max_context and np.any(ctx + L > model.max_context):
        worst = float(np.max(ctx + L))
        raise InputError(
            f"context {worst:,.0f} tokens exceeds {model.id}'s max_context {model.max_context:,}; use a "
            f"context <= {model.max_context:,} or a model with a longer context"
        )
    n = int(chips or system.chips)
    acc = system.accelerator
    peak = acc.peak_flops(weights_dtype) * n
    flops_s = peak * efficiency.compute
    bytes_s = acc.hbm_bytes_per_s * n * efficiency.memory
    b_w, b_kv = dtype_bytes(weights_dtype), dtype_bytes(kv_dtype)

    tokens = B * L
    matmul_flops = M.matmul_flops_per_token(model)
    if attention_flops:
        attn = (M.prefill_attention_flops_per_token(model, L, ctx) if phase == "prefill"
                else M.attention_flops_per_token(model, ctx + 1))
    else:
        attn = 0.0
    flops = tokens * (matmul_flops + attn)
    compute_s = flops / flops_s

    w_params = M.weight_read_params(model, tokens if distinct_experts else None)
    weight_bytes = w_params * b_w
    kv_tok = M.kv_bytes_per_token(model, kv_dtype)
    kv_read_bytes = B * M.kv_bytes_per_sequence(model, ctx, kv_dtype)
    kv_write_bytes = tokens * kv_tok if kv_writes else 0.0 * tokens
    weight_s = weight_bytes / bytes_s
    kv_s = kv_read_bytes / bytes_s
    kvw_s = kv_write_bytes / bytes_s
    mem_s = weight_s + kv_s + kvw_s
    step_s = np.maximum(compute_s, mem_s)
    upper_s = compute_s + mem_s
    bound = np.where(compute_s >= mem_s, "compute", "memory")

    price = acc.usd_per_hour if usd_per_gpu_hour is None else usd_per_gpu_hour
    require_positive("usd per GPU-hour", price)
    tok_s = tokens / step_s
    usd_per_mtok = (step_s * n * price / SECONDS_PER_HOUR) / tokens * 1e6

    # memory capacity per chip (perfect sharding over the n chips)
    w_total_bytes = M.params_total(model) * b_w
    kv_held = B * M.kv_bytes_per_sequence(model, ctx + L, kv_dtype)
    act = activation_bytes(model, tokens, activation_dtype)
    mem_per_gpu = (w_total_bytes + kv_held + act) / n
    fits = mem_per_gpu <= acc.hbm_bytes * usable_memory
    if check_fit and not np.all(fits):
        need = float(np.max(mem_per_gpu))
        raise DoesNotFitError(
            f"{model.id} needs {need / 1e9:,.1f} GB per GPU on {n} x {acc.id} "
            f"({usable_memory:.0%} of {acc.hbm_bytes / 1e9:,.0f} GB usable): weights "
            f"{w_total_bytes / n / 1e9:,.1f} GB + KV {float(np.max(kv_held)) / n / 1e9:,.1f} GB; use more GPUs, "
            f"a smaller batch or context, or fp8/fp4 weights"
        )

    # critical batch: weight read = compute (KV ignored, lecture §1.4); with KV at this context (§1.2)
    t_w_total = w_total_bytes / bytes_s
    t_c_token = matmul_flops / flops_s
    b_star = t_w_total / t_c_token
    kv_per_seq_s = M.kv_bytes_per_sequence(model, ctx, kv_dtype) / bytes_s
    with np.errstate(divide="ignore"):
        b_star_kv = np.where(kv_per_seq_s < t_c_token, t_w_total / (t_c_token - kv_per_seq_s), np.inf)

    return StepResult(
        compute_s=compute_s, weight_read_s=weight_s, kv_read_s=kv_s, kv_write_s=kvw_s,
        step_s=step_s, step_upper_s=upper_s, bound=bound, tokens_per_s=tok_s,
        tokens_per_s_per_sequence=L / step_s, usd_per_million_tokens=usd_per_mtok,
        mfu=tokens * matmul_flops / (step_s * peak),
        bandwidth_utilization=(weight_bytes + kv_read_bytes + kv_write_bytes) / (step_s * acc.hbm_bytes_per_s * n),
        flops=flops, bytes_read=weight_bytes + kv_read_bytes,
        memory_per_gpu_bytes=mem_per_gpu, weights_per_gpu_bytes=w_total_bytes / n,
        kv_per_gpu_bytes=kv_held / n, activations_per_gpu_bytes=act / n, fits=fits,
        params_total=M.params_total(model), params_active=M.params_active(model),
        kv_bytes_per_token=kv_tok, critical_batch=b_star, critical_batch_with_kv=b_star_kv,
        latency_floor_s=t_w_total, chips=n,
    )


def activation_bytes(model: M.Model, tokens, dtype: str = "bf16"):
    """Live activations of one layer during inference (estimate): residual stream, the layer input,
    attention output and the widest MLP hidden state for every token in the pass:
    tokens · (3·D + 2·F_active) · bytes. Inference frees each layer's activations before the next.
    """
    ff = model.d_ff
    if model.moe:
        ff = max(ff, model.moe.active * model.moe.d_ff_expert)
    return np.asarray(tokens, dtype=float) * (3 * model.d_model + 2 * ff) * dtype_bytes(dtype)


def arithmetic_intensity(result: StepResult):
    """FLOP per byte of HBM traffic of a pass (x axis of the classic roofline chart)."""
    return result.flops / result.bytes_read
