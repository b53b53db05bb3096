"""The lecture's first boards: latency vs batch, cost per token vs batch, the classic roofline chart,
and MFU vs context. Every curve is computed by roofline.step (one vectorised call per plot)."""

from __future__ import annotations

import numpy as np

from . import COLORS, new_figure, save


def latency_and_cost_vs_batch(model, system, *, chips=None, context=0.0, weights_dtype="bf16", kv_dtype="bf16",
                              path="latency_cost.png", batches=None, efficiency=None, usd_per_gpu_hour=None):
    """Two panels [S 00:08:02–00:15:52]: step time vs B and cost per token vs B, log-log, from roofline.step.

    One context: every term (compute line through the origin, weight read, KV read, their max), the cost
    panel dividing each by B (constant, hyperbola, constant), and the critical batch marked. Several
    contexts: one curve per context with that context's critical batch (where the engine's bound flips)
    marked in the same colour — the lecture's compute/memory transition moving right as context grows
    [S 00:19:57–00:20:13]."""
    from ..efficiency import Efficiency
    from ..engine import step

    ctxs = np.atleast_1d(np.asarray(context, dtype=float))
    lo, hi = 1.0, 64 * 1024.0
    if batches is not None and len(batches) >= 2:
        lo, hi = max(float(np.min(batches)), 1.0), max(float(np.max(batches)), 16.0)
    B = np.geomspace(lo, hi, 400)
    n = chips or system.chips
    kw = dict(weights_dtype=weights_dtype, kv_dtype=kv_dtype, gpus=n, efficiency=efficiency or Efficiency(),
              usd_per_gpu_hour=usd_per_gpu_hour, check_context=False)
    fig, (ax1, ax2) = new_figure(ncols=2)
    if ctxs.size == 1:
        r = step(model, system, B, float(ctxs[0]), **kw)
        price = r.usd_per_gpu_hour * n / 3600.0  # $ per second of the system
        mem = r.weight_read_s + r.kv_read_s + r.kv_write_s
        crit = float(np.asarray(r.critical_batch_with_kv).ravel()[0])
        for ax, div in ((ax1, 1.0), (ax2, B / price / 1e6)):
            ax.loglog(B, r.compute_s / div, color=COLORS["compute"], label="compute")
            ax.loglog(B, np.broadcast_to(r.weight_read_s, B.shape) / div, color=COLORS["weights"], label="weight read")
            ax.loglog(B, np.maximum(r.kv_read_s, 1e-30) / div, color=COLORS["kv"], label="KV read")
            ax.loglog(B, mem / div, color=COLORS["weights"], ls="--", label="weights + KV")
            ax.loglog(B, r.step_s / div, color=COLORS["total"], lw=2.5, alpha=0.7, label="max (roofline)")
            if np.isfinite(crit) and lo <= crit <= hi:
                ax.axvline(crit, color="grey", ls=":", label=f"critical batch {crit:,.0f}")
        title = f"ctx={ctxs[0]:,.0f}"
    else:
        for i, c in enumerate(ctxs):
            r = step(model, system, B, c, **kw)
            price = r.usd_per_gpu_hour * n / 3600.0
            crit = float(np.asarray(r.critical_batch_with_kv).ravel()[0])
            mark = f", critical batch {crit:,.0f}" if np.isfinite(crit) else ", memory-bound at every B"
            for ax, div in ((ax1, 1.0), (ax2, B / price / 1e6)):
                ax.loglog(B, r.step_s / div, color=f"C{i}", lw=2, label=f"ctx {c:,.0f}{mark}")
                if np.isfinite(crit) and lo <= crit <= hi:
                    ax.axvline(crit, color=f"C{i}", ls=":", lw=1)
        title = f"{ctxs.size} contexts (dotted: each one's critical batch)"
    for ax in (ax1, ax2):
        ax.set_xlabel("batch B (sequences)")
    ax1.set_ylabel("time per step (s)")
    ax2.set_ylabel("$ per million tokens")
    ax1.set_title(f"Latency vs batch: {model.id}, {n}x {system.accelerator.id}, {title}", fontsize=9)
    ax2.set_title("Cost per token vs batch (each term / B)", fontsize=9)
    ax1.legend(fontsize=7)
    if ctxs.size > 1:
        ax2.legend(fontsize=7)
    return save(fig, path)


def roofline_chart(model, system, points, *, chips=None, weights_dtype="bf16", kv_dtype="bf16", path="roofline.png"):
    """Classic roofline (Williams et al. 2009): attainable FLOP/s = min(peak, intensity × BW), log-log;
    each (label, batch, context, phase, prompt) pass is placed at its FLOP/byte and achieved FLOP/s."""
    from ..engine import step

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
    """MFU (matmul FLOPs over peak) against context [S 00:11:40–00:12:20]. The lecture, with weights amortised
    (large B) and attention FLOPs dropped [S 00:03:56], has MFU = min(1, ctx*/ctx). Drawn three ways:
    roofline.step as the engine computes it (attention FLOPs included, its own choice), roofline.step with
    attention FLOPs off (the board's idealisation), and the closed form. Where attention is compute-bound
    (one shared KV layer read by many query heads) the engine's MFU falls for a different reason: the
    attention FLOPs, not the KV reads, take the time."""
    from .. import lecture as L
    from .. import model as M
    from ..engine import step

    n = chips or system.chips
    ctx = np.geomspace(256, max(model.max_context, 1024), 300)
    big = batch or 1e6
    kw = dict(weights_dtype=weights_dtype, kv_dtype=kv_dtype, gpus=n, check_context=False)
    eng = step(model, system, big, ctx, **kw)
    board = step(model, system, big, ctx, attention_flops=False, **kw)
    acc = system.accelerator
    t_c = M.matmul_flops_per_token(model) / (acc.peak_flops(weights_dtype) * n)
    ctx_star = t_c * acc.hbm_bytes_per_s * n / M.kv_bytes_per_token(model, kv_dtype)
    fig, ax = new_figure()
    ax.semilogx(ctx, eng.mfu, color=COLORS["total"], lw=2, label=f"engine (attention FLOPs counted), B={big:,.0g}")
    ax.semilogx(ctx, board.mfu, color=COLORS["weights"], lw=1.5, label="engine with attention FLOPs off (the board)")
    ax.semilogx(ctx, L.mfu_vs_context(ctx, ctx_star), color=COLORS["kv"], ls="--", label="lecture: min(1, ctx*/ctx)")
    ax.axvline(ctx_star, color="grey", ls=":", label=f"ctx* = {ctx_star:,.0f}")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("context (tokens)")
    ax.set_ylabel("MFU (matmul FLOPs / peak)")
    ax.set_title(f"MFU vs context: {model.id} on {n}x {acc.id} ({weights_dtype})", fontsize=9)
    ax.legend(fontsize=7)
    return save(fig, path)


def lecture_boards(path="boards.png", w_total=1e12, w_active=1e11, F=300 * 72 * 8e12, BW=72 * 8e12, kv=2048.0,
                   context=5e4, usd_per_s=72 * 2.0 / 3600.0, batch=None, sparse_c=None):
    """The two blackboard plots [S 00:08:02–00:15:52] in SI units: step time (s) vs batch, and cost per
    token ($ per million tokens) vs batch, each term drawn and labelled, the critical batch B* = R·s and
    (if finite) the crossover with KV marked. Lecture units: W in bytes, F in weight-bytes/s (§0.3)."""
    from .. import lecture as L

    R, s = F / BW, w_total / w_active
    b_star = float(L.critical_batch(R, s))
    ctx_star = float(L.balanced_context(w_active, R, kv)) if kv > 0 else np.inf
    eff = context if sparse_c is None else sparse_c * np.sqrt(context)
    b_kv = float(L.critical_batch_with_kv(R, s, eff, ctx_star)) if kv > 0 else b_star
    hi = max(1e5, 10 * (b_kv if np.isfinite(b_kv) else b_star))
    B = np.geomspace(1, hi, 400)
    tc, tw, tk = L.step_times(B, context, w_total, w_active, kv, F, BW, 1, sparse_c)
    fig, (ax1, ax2) = new_figure(ncols=2)
    per_mtok = 1e6 * usd_per_s
    for ax, div, scale in ((ax1, 1.0, 1.0), (ax2, B, per_mtok)):
        ax.loglog(B, tc / div * scale, color=COLORS["compute"], label="compute B·W_active/F")
        ax.loglog(B, tw / div * scale, color=COLORS["weights"], label="weight fetch W_total/BW")
        if kv > 0 and context > 0:
            ax.loglog(B, tk / div * scale, color=COLORS["kv"], label="KV fetch B·ctx·kv/BW")
            ax.loglog(B, (tw + tk) / div * scale, color=COLORS["weights"], ls="--", label="weights + KV")
        ax.loglog(B, np.maximum(tc, tw + tk) / div * scale, color=COLORS["total"], lw=2.5, alpha=0.6,
                  label="roofline max(...)")
        ax.axvline(b_star, color="grey", ls=":", label=f"B* = R·s = {b_star:,.0f}")
        if kv > 0 and np.isfinite(b_kv) and b_kv != b_star:
            ax.axvline(b_kv, color=COLORS["kv"], ls=":", label=f"crossover with KV = {b_kv:,.0f}")
        if batch:
            ax.axvline(batch, color="orange", ls="-.", lw=1, label=f"B = {batch:,.0f}")
        ax.set_xlabel("batch B (sequences)")
        ax.legend(fontsize=7, loc="best")
    ax1.set_ylabel("time per decode step (s)")
    ax2.set_ylabel("cost ($ per million tokens)")
    ax1.set_title(f"Latency vs batch: W_total {w_total:.3g} B, s = {s:.3g}, R = {R:.0f}, "
                  f"BW {BW:.3g} B/s, ctx {context:,.0f}", fontsize=9)
    ax2.set_title(f"Cost per token vs batch (each term / B) at ${usd_per_s * 3600:.4g}/hour", fontsize=9)
    return save(fig, path)


def board_vs_engine(model, system, *, context=0.0, weights_dtype="fp8", kv_dtype="fp8", path="board_vs_engine.png"):
    """Step time and cost per token vs batch from the board (lecture.py, every weight read, no attention
    FLOPs) and from roofline.step (touched experts, attention FLOPs, KV writes), on the same axes."""
    from .. import lecture as L
    from .. import model as M
    from ..engine import step
    from ..units import dtype_bytes

    n, acc = system.chips, system.accelerator
    b_w = dtype_bytes(weights_dtype)
    B = np.geomspace(1, 1e5, 300)
    F = float(L.flops_to_F(acc.peak_flops(weights_dtype) * n, b_w))
    BW = acc.hbm_bytes_per_s * n
    kv = M.kv_bytes_per_token(model, kv_dtype)
    t_board = L.step_time(B, context, M.params_total(model) * b_w, M.params_active(model) * b_w, kv, F, BW)
    r = step(model, system, B, context, weights_dtype=weights_dtype, kv_dtype=kv_dtype, check_context=False)
    price = acc.usd_per_hour * n / 3600.0 * 1e6
    fig, (ax1, ax2) = new_figure(ncols=2)
    for ax, div in ((ax1, 1.0), (ax2, B / price)):
        ax.loglog(B, t_board / div, color=COLORS["other"], lw=2, ls="--", label="board (lecture.py)")
        ax.loglog(B, r.step_s / div, color=COLORS["total"], lw=2, alpha=0.7, label="engine (roofline.step)")
        ax.loglog(B, r.weight_read_s / div, color=COLORS["weights"], lw=1, label="engine weight read (touched experts)")
        ax.loglog(B, r.compute_s / div, color=COLORS["compute"], lw=1, label="engine compute (with attention)")
        ax.set_xlabel("batch B (sequences)")
        ax.legend(fontsize=7)
    ax1.set_ylabel("time per decode step (s)")
    ax2.set_ylabel("$ per million tokens")
    ax1.set_title(f"{model.id} on {n}x {acc.id}, ctx {context:,.0f}", fontsize=9)
    ax2.set_title("Cost per token: the engine's batch-1 penalty is ~R, the board's R·s", fontsize=9)
    return save(fig, path)
