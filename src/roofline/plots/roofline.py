"""The lecture's first boards: latency vs batch, cost per token vs batch, the classic roofline chart,
and MFU vs context. Every curve is computed by roofline.step (one vectorised call per plot)."""

from __future__ import annotations

import numpy as np

from . import COLORS, new_figure, save


def latency_and_cost_vs_batch(model, system, *, chips=None, context=0.0, weights_dtype="bf16", kv_dtype="bf16",
                              path="latency_cost.png", batches=None, efficiency=None, usd_per_gpu_hour=None):
    """Two panels [S 00:08:02–00:15:52]: step time vs B (compute line through the origin, weight fetch
    constant, KV fetch linear, their max) and cost per token vs B (each divided by B: constant,
    hyperbola, constant). Log-log; the critical batch is marked on both."""
    from ..roofline import Efficiency, step

    lo = 1.0
    hi = 64 * 1024.0
    B = np.geomspace(lo, hi, 400) if batches is None or len(batches) < 8 else np.asarray(batches, float)
    B = np.geomspace(max(B.min(), 1), max(B.max(), 16), 400)
    r = step(model, system, B, context, weights_dtype=weights_dtype, kv_dtype=kv_dtype, chips=chips,
             efficiency=efficiency or Efficiency(), usd_per_gpu_hour=usd_per_gpu_hour, check_context=False)
    n = r.chips
    price = (usd_per_gpu_hour or system.accelerator.usd_per_hour) * n / 3600.0  # $ per second of the system
    fig, (ax1, ax2) = new_figure(ncols=2)
    mem = r.weight_read_s + r.kv_read_s + r.kv_write_s
    for ax, div, ylabel in ((ax1, 1.0, "time per step (s)"), (ax2, B / price / 1e6, "$ per million tokens")):
        ax.loglog(B, r.compute_s / div, color=COLORS["compute"], label="compute")
        ax.loglog(B, np.broadcast_to(r.weight_read_s, B.shape) / div, color=COLORS["weights"], label="weight read")
        ax.loglog(B, np.maximum(r.kv_read_s, 1e-30) / div, color=COLORS["kv"], label="KV read")
        ax.loglog(B, mem / div, color=COLORS["weights"], ls="--", label="weights + KV")
        ax.loglog(B, r.step_s / div, color=COLORS["total"], lw=2.5, alpha=0.7, label="max (roofline)")
        crit = float(r.critical_batch_with_kv[0]) if np.ndim(r.critical_batch_with_kv) else float(r.critical_batch_with_kv)
        if np.isfinite(crit) and lo <= crit <= hi:
            ax.axvline(crit, color="grey", ls=":", label=f"critical batch {crit:,.0f}")
        ax.set_xlabel("batch B (sequences)")
        ax.set_ylabel(ylabel)
    ax1.set_title(f"Latency vs batch: {model.id}, {n}x {system.accelerator.id}, ctx={context:,.0f}")
    ax2.set_title("Cost per token vs batch (each term / B)")
    ax1.legend(fontsize=8)
    return save(fig, path)


def roofline_chart(model, system, points, *, chips=None, weights_dtype="bf16", kv_dtype="bf16", path="roofline.png"):
    """Classic roofline (Williams et al. 2009): attainable FLOP/s = min(peak, intensity × BW), log-log;
    each (label, batch, context, phase, prompt) pass is placed at its FLOP/byte and achieved FLOP/s."""
    from ..roofline import step

    n = chips or system.chips
    acc = system.accelerator
    peak = acc.peak_flops(weights_dtype) * n
    bw = acc.hbm_bytes_per_s * n
    x = np.geomspace(0.1, 1e5, 300)
    fig, ax = new_figure()
    ax.loglog(x, np.minimum(peak, x * bw), color=COLORS["total"], lw=2, label="roofline min(peak, I·BW)")
    ax.axvline(peak / bw, color="grey", ls=":", label=f"ridge {peak / bw:,.0f} FLOP/B")
    for label, batch, ctx, phase, prompt in points:
        r = step(model, system, batch, ctx, phase=phase, prompt=prompt, weights_dtype=weights_dtype,
                 kv_dtype=kv_dtype, chips=n, check_context=False)
        intensity = float(r.flops / (r.bytes_read + r.kv_write_s * bw))
        ax.plot([intensity], [float(r.flops / r.step_s)], "o", ms=8, label=label)
    ax.set_xlabel("arithmetic intensity (FLOP per HBM byte)")
    ax.set_ylabel("attainable FLOP/s")
    ax.set_title(f"Roofline: {model.id} on {n}x {acc.id} ({weights_dtype})")
    ax.legend(fontsize=8)
    return save(fig, path)


def mfu_vs_context(model, system, *, batch=None, chips=None, weights_dtype="fp8", kv_dtype="fp8", path="mfu.png"):
    """MFU against context [S 00:11:40–00:12:20]: with weights amortised (large B) MFU ≈ min(1, ctx*/ctx);
    shown from roofline.step at the given batch and from the lecture's closed form."""
    from .. import lecture as L
    from .. import model as M
    from ..roofline import step

    n = chips or system.chips
    ctx = np.geomspace(256, max(model.max_context, 1024), 300)
    big = batch or 1e6
    r = step(model, system, big, ctx, weights_dtype=weights_dtype, kv_dtype=kv_dtype, chips=n,
             attention_flops=False, check_context=False)
    acc = system.accelerator
    t_c = M.matmul_flops_per_token(model) / (acc.peak_flops(weights_dtype) * n)
    ctx_star = t_c * acc.hbm_bytes_per_s * n / M.kv_bytes_per_token(model, kv_dtype)
    fig, ax = new_figure()
    ax.semilogx(ctx, r.mfu, color=COLORS["total"], lw=2, label=f"roofline.step, B={big:,.0f}")
    ax.semilogx(ctx, L.mfu_vs_context(ctx, ctx_star), color=COLORS["kv"], ls="--", label="min(1, ctx*/ctx)")
    ax.axvline(ctx_star, color="grey", ls=":", label=f"ctx* = {ctx_star:,.0f}")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("context (tokens)")
    ax.set_ylabel("MFU")
    ax.set_title(f"MFU vs context: {model.id} on {n}x {acc.id}")
    ax.legend(fontsize=8)
    return save(fig, path)


def lecture_boards(path="boards.png", w_total=1e12, w_active=1e11, R=300.0, kv=2048, context=5e4):
    """The two blackboard plots in the lecture's own units (BW = 1 so time is in bytes/BW)."""
    from .. import lecture as L

    B = np.geomspace(1, 1e5, 400)
    tc, tw, tk = L.step_times(B, context, w_total, w_active, kv, R, 1.0)
    fig, (ax1, ax2) = new_figure(ncols=2)
    for ax, div in ((ax1, 1.0), (ax2, B)):
        ax.loglog(B, tc / div, color=COLORS["compute"], label="B·W_active/F")
        ax.loglog(B, tw / div, color=COLORS["weights"], label="W_total/BW")
        ax.loglog(B, tk / div, color=COLORS["kv"], label="B·ctx·kv/BW")
        ax.loglog(B, np.maximum(tc, tw + tk) / div, color=COLORS["total"], lw=2.5, alpha=0.7, label="max")
        ax.set_xlabel("batch B")
    ax1.set_ylabel("t (units of 1/BW)")
    ax2.set_ylabel("t / B (cost per token)")
    ax1.set_title(f"Latency vs batch (W={w_total:.0e} B, s={w_total / w_active:.0f}, R={R:.0f})")
    ax2.set_title("Cost per token vs batch")
    ax1.legend(fontsize=8)
    return save(fig, path)
