"""Chapter 3: pipeline parallelism in inference (lecture §3.1-3.3, 3.5-3.6); §3.4 training bubbles is elsewhere."""

from __future__ import annotations

from pathlib import Path

from .. import Chapter, Figure, Worked


def chapter(fig_dir: Path) -> Chapter:
    import numpy as np

    from ...board import board, pipeline_hop_s
    from ...catalog import get_catalog
    from ...lecture import memory_per_gpu as lecture_memory_per_gpu
    from ...lecture import stage_boundary_ratio, weight_fetch_s
    from ...lecture import token_latency_with_hops as decode_token_latency
    from ...planner import Workload, plan
    from ...plots.parallel import memory_vs_stages, pareto_frontier, pipeline_timeline

    cat0 = get_catalog()
    nvl = cat0.system("gb200-nvl72")
    frontier = cat0.model("lecture-frontier-moe")
    hop = float(pipeline_hop_s(nvl, 2048, frontier.d_model, 64))
    P = np.array([1, 2, 4, 8])
    w, kv, tot = lecture_memory_per_gpu(1e12, 2400, 1e5, 2048, 64, P)
    items = [
        Worked("T18", "stage-boundary ratio, k=8, L_stage=1", "2·k·L_stage/(BW_up/BW_out)", {"k": 8, "L": 1, "ratio": 8},
               float(stage_boundary_ratio(8, 1, 8)), "", 2.0, 0.0, "[S 00:49:21-00:53:08]"),
        Worked("T19", "stage-boundary ratio, k=3, L_stage=1", "2·k·L_stage/8", {"k": 3, "L": 1},
               float(stage_boundary_ratio(3, 1, 8)), "", 0.75, 0.0, "§3.2 [I]"),
        Worked("T19", "stage-boundary ratio, k=3, L_stage=2", "2·k·L_stage/8", {"k": 3, "L": 2},
               float(stage_boundary_ratio(3, 2, 8)), "", 1.5, 0.0, "§3.2 [I]"),
        Worked("T20", "2kL needed for ratio >= 1", "2·k·L / ratio(k, L) at BW_up/BW_out = 8", {"BW ratio": 8},
               float(2 * 1 * 1 / stage_boundary_ratio(1, 1, 8)), "", 8, 0.0, "[S 00:52:43]"),
    ]
    for p_, wi, kvi, ti in zip(P, w, kv, tot):
        items.append(Worked("T23", f"memory per GPU, P={int(p_)}", "W/(E·P) + b·ctx·kv/E",
                            {"W": 1e12, "E": 64, "b": 2400, "ctx": 1e5, "kv": 2048, "P": int(p_)}, float(ti / 1e9), "GB",
                            {1: 23.305, 2: 15.4925, 4: 11.58625, 8: 9.633125}[int(p_)], 1e-6, "[S 01:05:18-01:11:48]"))
    items += [
        Worked("T23", "KV per GPU (any P)", "b·ctx·kv/E", {"b": 2400, "ctx": 1e5, "kv": 2048, "E": 64},
               float(kv[-1] / 1e9), "GB", 7.68, 1e-6, "[S 01:10:33]"),
        Worked("T24", "micro-batches for P=4", "n_micro = P", {"P": 4}, board(params_total=1e12, params_active=1e11, ratio=300.0, stages=4).micro_batches, "", 4, 0.0, "[S 01:07:26]"),
        Worked("T25", "decode latency with hops, the lecture's guessed 2.5 ms hop", "t_step + P·t_hop",
               {"t_step": 0.020, "P": 4, "t_hop": 0.0025},
               float(decode_token_latency(0.020, 4, 0.0025)), "s", 0.030, 1e-9, "[D 01:15:35], [S 01:15:46]"),
        Worked("hop", "one pipeline hop on gb200-nvl72, the figure step --pp and plan use",
               "α + b·D·bytes/(S·β): catalog scale_out_latency_us + one micro-batch's activations",
               {"α (s)": nvl.scale_out_latency_s, "β (B/s per GPU)": nvl.scale_out_bytes_per_s,
                "b": 2048, "D": frontier.d_model, "bytes": 2, "S": 64}, hop * 1e6, "µs",
               source="board.pipeline_hop_s = network.p2p_s, as in the engine's pipeline step"),
        Worked("T25", "decode latency with 4 catalog hops", "t_step + P·t_hop", {"t_step": 0.020, "P": 4,
               "t_hop (s)": hop}, float(decode_token_latency(0.020, 4, hop)), "s", None, None,
               "the lecture's +50% becomes +" + f"{4 * hop / 0.020:.1%}"),
        Worked("T26", "weight fetch, NVL72", "W/(S_up·BW)", {"W": 1e12, "S_up": 72, "BW": 8e12},
               float(weight_fetch_s(1e12, 72, 8e12) * 1e3), "ms", 1.736, 1e-3, "[S 01:16:53]"),
        Worked("T26", "weight fetch, 8 x H100", "W/(S_up·BW)", {"W": 1e12, "S_up": 8, "BW": 3.35e12},
               float(weight_fetch_s(1e12, 8, 3.35e12) * 1e3), "ms", 37.3, 1e-3, "[S 01:17:40]"),
    ]
    cat = get_catalog()
    pl = plan(cat.model("deepseek-v3"), cat.system("gb200-nvl72"), [1, 2, 3, 4], Workload(1024, 1024))
    best = pl.best()
    assert best is not None, "the planner found no layout for DeepSeek-V3 on 1-4 GB200 NVL72 racks"
    items.append(Worked("", "planner: best DeepSeek-V3 layout on 1-4 GB200 NVL72 racks (prompt 1024, output 1024)",
                        "max tokens/s per GPU on the Pareto frontier",
                        {k: best[k] for k in ("tp", "ep", "pp", "dp", "batch", "weights_dtype", "kv_dtype", "domains")},
                        float(best["tokens_per_s_per_gpu"]), "tok/s/GPU", source="roofline.planner (pure roofline)"))
    figs = [
        Figure("fig/" + pipeline_timeline(4, fig_dir / "ch03_pipeline.png").name,
               "Decode with 4 stages and 4 micro-batches: no bubble; each micro-batch loops through every stage."),
        Figure("fig/" + memory_vs_stages(fig_dir / "ch03_memory_vs_stages.png").name,
               "Memory per GPU vs stages (T23): weights fall as 1/P, KV per GPU stays at b·ctx·kv/E."),
        Figure("fig/" + pareto_frontier(pl, fig_dir / "ch03_pareto.png").name,
               "Planner frontier for DeepSeek-V3 on 1-4 GB200 NVL72 racks: tokens/s per GPU vs tokens/s per user."),
    ]
    return Chapter(key=3.0, title="3. Pipeline parallelism in inference", items=items, figures=figs,
                   intro="Pipeline stages split layers across racks: they save capacity (weights per GPU fall as 1/P) "
                         "but not KV (P cancels when micro-batches = stages), add a hop per stage to every token, and "
                         "cannot pool weight-read bandwidth the way one large scale-up domain does.",
                   notes=["What a hop costs: roofline charges one pipeline hop the scale-out link latency α (the "
                          "catalog's scale_out_latency_us, ~10 µs for an RDMA hop through NIC and switches) plus "
                          "sending one micro-batch's activations at the per-GPU scale-out bandwidth; the stage's own "
                          "time is already in t_step. The lecture guesses 'a few milliseconds', possibly off by an "
                          "order of magnitude [S 01:15:21], which makes pipelining cost +50% latency (T25, the "
                          f"lecture's own numbers); with the catalog's hop it costs +{4 * hop / 0.020:.1%}. The "
                          "report, `step --pp`, `plan` and `roofline board --hop-s` use the same α–β send."])
