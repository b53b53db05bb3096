"""Chapter 1 of the lecture: batch size, the decode roofline, latency and cost (spec §1, T01–T15)."""

from __future__ import annotations

from pathlib import Path

from ... import lecture as L
from ...catalog import get_catalog
from ...hardware import hardware_ratio
from .. import Chapter, Figure, Worked

R = 300.0


def chapter(fig_dir: Path) -> Chapter:
    from ...plots import roofline as P

    cat = get_catalog()
    b_star = float(L.critical_batch(R, 8))
    speed, price = L.fast_mode(2.5 * b_star, b_star / 6, 8e11, 1e11, R, 1.0)
    items = [
        Worked("T01", "critical batch", "B* = R · s", {"R": R, "s": 8}, b_star, "sequences", 2400, 0,
               "[S 00:19:16] DeepSeek '32 of 256'"),
        Worked("T02", "practical batch band", "2–3 × B*", {"B*": b_star}, f"{2 * b_star:,.0f}–{3 * b_star:,.0f}",
               "sequences", "4,800–7,200 (host: '2–3 thousand')", None, "[S 00:19:27, D 00:19:44]"),
        Worked("T03", "B* from real parameter counts", "R · N_total/N_active",
               {"R": R, "N_total": 700e9, "N_active": 37e9}, float(L.critical_batch(R, 700 / 37)), "sequences",
               5675.7, 1e-3, "[I] from [S 00:04:40]"),
        Worked("T04", "Rubin HBM drain time", "C_HBM / BW_HBM", {"C": 288e9, "BW": 20e12},
               float(L.drain_time(288e9, 20e12)), "s", 0.0144, 1e-6, "[S 00:24:13] '≈15 ms'"),
        Worked("T05", "worst-case latency, train departures", "2 · t_step", {"t_step": 0.020},
               float(L.worst_case_latency(0.020)), "s", 0.040, 0, "[S 00:23:07]"),
        Worked("T06", "system throughput", "B × steps/s", {"B": 2000, "steps/s": 64},
               float(L.throughput(2000, steps_per_s=64)), "tok/s", 128_000, 0, "[S 00:26:48]"),
        Worked("T07", "throughput at 20 ms", "B / t_step", {"B": 2000, "t_step": 0.020},
               float(L.throughput(2000, step_s=0.02)), "tok/s", 100_000, 1e-12, "[I]"),
        Worked("T08", "systems needed for 1e8–5e8 tok/s", "traffic / system tok/s",
               {"system": 1.28e5}, f"{float(L.systems_for_traffic(1e8, 1.28e5)):,.0f}–"
               f"{float(L.systems_for_traffic(5e8, 1.28e5)):,.0f}", "systems", "~1,000 ('one-thousandth')", None,
               "[S 00:27:28–00:27:34]"),
        Worked("T09", "MFU at twice the balanced context", "min(1, ctx*/ctx)", {"ctx*": 1e5, "ctx": 2e5},
               float(L.mfu_vs_context(2e5, 1e5)), "", 0.5, 0, "[S 00:11:40] 'true as modeled'"),
        Worked("T10", "crossover batch with KV", "R·s / (1 − ctx/ctx*)", {"R": R, "s": 8, "ctx/ctx*": 0.5},
               float(L.critical_batch_with_kv(R, 8, 0.5, 1.0)), "sequences", 4800, 1e-12, "[I] §1.2"),
        Worked("T11", "memory/compute at B*, ctx*", "B*/B + ctx/ctx*", {"B": b_star, "ctx": "ctx*"},
               float(L.memory_to_compute_ratio(b_star, b_star, 1.0, 1.0)), "", 2.0, 0, "[I] §5.3"),
        Worked("T12", "latency floor, 1 TB on an NVL72", "W_total / BW", {"W_total": 1e12, "BW": 72 * 8e12},
               float(L.latency_floor(1e12, 72 * 8e12)), "s", 1.736e-3, 1e-3, "[S 00:10:13]"),
        Worked("T13", "cost per token", "(t/B) · n_GPU · $/GPU-s", {"n": 72, "$/h": 2.0, "t": 0.020, "B": 2000},
               float(L.cost_per_token(0.020, 2000, 72, 2.0)), "$", 4.0e-7, 1e-9, "[S 00:12:59] '$2/hour'"),
        Worked("T14", "batch-1 vs large-batch cost", "(W_total/BW)/(W_active/F) = R·s", {"R": R, "s": 8},
               float(L.batch1_cost_ratio(8e11, 1e11, R, 1.0)), "×", 2400, 1e-9, "[S 00:04:23] '1000× worse'"),
        Worked("T15", "fast mode: speed-up", "t(2.5·B*)/t(B*/6)", {"B_normal": 2.5 * b_star, "B_fast": b_star / 6},
               float(speed), "×", 2.5, 1e-9, "[D 00:01:01] '6× price for 2.5× speed', §1.8 [I]"),
        Worked("T15", "fast mode: price ratio", "(t_f/B_f)/(t_n/B_n)", {"B_normal": 2.5 * b_star, "B_fast": b_star / 6},
               float(price), "×", 6.0, 1e-9, "§1.8 [I]"),
    ]
    nvl = cat.system("gb200-nvl72")
    frontier = cat.model("lecture-frontier-moe")
    for aid, dtype, stated in (("h100-sxm", "bf16", 295.2), ("b200", "fp4", 281.3), ("gb200", "fp4", 312.5),
                               ("a100-80gb", "bf16", 153.0)):
        a = cat.accelerator(aid)
        items.append(Worked("T45", f"hardware ratio R, {aid} {dtype}", "(FLOPS/2)·b_w/BW",
                            {"FLOPS": a.peak_flops(dtype), "b_w": {"bf16": 2, "fp4": 0.5}[dtype], "BW": a.hbm_bytes_per_s},
                            float(hardware_ratio(a.peak_flops(dtype), {"bf16": 2, "fp4": 0.5}[dtype], a.hbm_bytes_per_s)),
                            "", stated, 3e-3, f"catalog: {a.source[:60]}"))
    for mid in ("deepseek-v3", "kimi-k2", "qwen3-235b-a22b", "lecture-frontier-moe"):
        m = cat.model(mid)
        from ... import model as M

        s_ratio = M.params_total(m) / M.params_active(m)
        items.append(Worked("B*", f"critical batch of {mid} (R = 300)", "R · N_total/N_active",
                            {"N_total": M.params_total(m), "N_active": M.params_active(m)},
                            float(L.critical_batch(R, s_ratio)), "sequences", None, None, "catalog architecture"))

    from ...board import compare

    cmp = compare(frontier, nvl, 2000, 1e5)
    diff = {d["quantity"]: d for d in cmp["differences"]}
    pen = diff["batch-1 cost penalty (×)"]
    items += [
        Worked("B=1", "batch-1 penalty of the frontier MoE on gb200-nvl72, board", "R·s (every weight read at B = 1)",
               {"R": cmp["board"]["ratio"], "s": cmp["board"]["sparsity"]}, pen["board"], "×", None, None,
               "roofline board (lecture.py)"),
        Worked("B=1", "same, engine", "cost/token at B = 1 over B → ∞ (touched experts)", {"experts read at B=1": "k per layer"},
               pen["engine"], "×", None, None, "roofline.step: ≈ R, since one sequence reads only its k experts"),
        Worked("attn", "decode attention intensity, frontier MoE (one shared KV layer, 64 layers × 64 heads)",
               "attention FLOPs / KV bytes read", {"fp8 ridge (FLOP/B)": cmp["ridge_flops_per_byte"]},
               cmp["attention_flops_per_kv_byte"], "FLOP/B", None, None,
               "engine: compute-bound, against the lecture's 'dominated by memory fetches' [S 00:07:13]"),
        Worked("B*", "critical batch at 100K context, frontier MoE: board vs engine",
               "R·s/(1 − ctx/ctx*) vs the engine's bound flip", {"B": 2000},
               f"{diff['critical batch at this context']['board']:,.0f} vs {diff['critical batch at this context']['engine']:,.0f}",
               "sequences", None, None, "the engine counts attention FLOPs; the board drops them [S 00:03:56]"),
    ]
    figs = [
        Figure("fig/" + P.lecture_boards(fig_dir / "ch1_boards.png", w_total=1e12, w_active=1e11, F=R * 72 * 8e12,
                                         BW=72 * 8e12, kv=2048.0, context=5e4, usd_per_s=72 * 2.0 / 3600).name,
               "The lecture's two boards in SI units (roofline board --plot): step time in seconds (left) and cost in "
               "$ per million tokens (right) against batch, each term labelled; W_total = 1 TB, s = 10, R = 300 on "
               "72 GPUs × 8 TB/s at $2/GPU-hour, 50K context × 2,048 B; B* = R·s and the crossover with KV dotted."),
        Figure("fig/" + P.board_vs_engine(frontier, nvl, context=1e5, path=fig_dir / "ch1_board_vs_engine.png").name,
               "The board (lecture.py, dashed) against the engine (roofline.step) for the lecture frontier MoE on a "
               "GB200 NVL72 at 100K context, fp8: at small batches the engine reads only the touched experts (its "
               "batch-1 penalty is ~R, the board's R·s); at large batches its attention FLOPs make it compute-bound "
               "earlier."),
        Figure("fig/" + P.latency_and_cost_vs_batch(frontier, nvl, context=1e5, weights_dtype="fp8", kv_dtype="fp8",
                                                    path=fig_dir / "ch1_frontier_nvl72.png").name,
               "The illustrative 100B-active / ~1T MoE on a GB200 NVL72 at 100K context (fp8), from roofline.step: "
               "weight reads grow with the distinct experts a batch touches, then flatten at W_total."),
        Figure("fig/" + P.roofline_chart(cat.model("llama-3-70b"), cat.system("dgx-h100"), [
            ("decode B=1", 1, 2048, "decode", 1), ("decode B=64", 64, 2048, "decode", 1),
            ("decode B=512", 512, 2048, "decode", 1), ("prefill 2,048 tok", 1, 0, "prefill", 2048)],
            path=fig_dir / "ch1_roofline.png").name,
               "Classic roofline of Llama 3 70B on a DGX H100 (bf16): decode sits on the bandwidth slope, prefill at the ridge."),
        Figure("fig/" + P.mfu_vs_context(frontier, nvl, path=fig_dir / "ch1_mfu.png").name,
               "MFU against context with weights amortised [S 00:11:40]: the lecture's min(1, ctx*/ctx), the engine with "
               "attention FLOPs off (the same), and the engine as it computes (attention FLOPs counted): with one "
               "shared KV layer the attention FLOPs, not the KV reads, set the step at long context."),
    ]
    return Chapter(1.0, "1. Batch size, the decode roofline, latency and cost", intro=(
        "t ≥ max(B·W_active/F, (W_total + B·ctx·kv)/BW): compute grows with batch, the weight fetch is "
        "amortised over it, the KV fetch is not. The critical batch B* = R·s balances weight fetch and compute."),
        items=items, figures=figs, notes=[
            "§8 trap 1: the lecture's 's = 8' ('32 of 256') is not DeepSeek-V3's real ratio (671/37 ≈ 18): "
            "both are shown above.",
            "§8 trap 3: '64 × B' means a 15.6 ms step; at exactly 20 ms the multiplier is 50 (T06 vs T07).",
            "The batch-1 penalty, reconciled: the board's 'a thousand times worse' is R·s (2,400 for the lecture's "
            "s = 8, T14) because at B = 1 it reads every weight; roofline.step reads only the experts one sequence "
            f"routes to, so for the frontier MoE its penalty is {pen['engine']:,.0f}× against the board's "
            f"{pen['board']:,.0f}×. Both are computed; the sparsity is paid only once a batch touches every expert.",
            "Where the engine contradicts the lecture: with one shared KV layer (the lecture's frontier guess, "
            f"T35) decode attention does {cmp['attention_flops_per_kv_byte']:,.0f} FLOP per KV byte, above the fp8 "
            f"ridge of {cmp['ridge_flops_per_byte']:,.0f} FLOP/B, so at long context it is compute-bound, not "
            "memory-bound as the lecture says [S 00:07:13]; every figure here uses the engine's own attention FLOPs "
            "(the MFU figure shows the board's idealisation next to it). `roofline board -m lecture-frontier-moe "
            "-s gb200-nvl72` prints the full walk from board to engine."])
