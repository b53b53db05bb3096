"""Chapter 1.5: serving by simulation — train departures (spec §1.5, T05–T07) and the fast-mode trade
(§1.8, T15), reproduced by the discrete-event simulator rather than by the closed forms."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import Chapter, Figure, Worked


def chapter(fig_dir: Path) -> Chapter:
    from ... import lecture as L
    from ...catalog import get_catalog
    from ...plots.simulate import fast_slow, train_timeline
    from ...simulate import BoardStep, ConstantStep, Deployment, Policy, make_workload, roofline_deployment, simulate
    from ...simulate.metrics import littles_law, summarize
    from ...simulate.pools import mode_trade
    from ...simulate.workload import poisson_arrivals
    from ...speculative import Speculation, expected_tokens_per_step, speculative_step

    interval = 0.020
    # T05: one-token requests, Poisson arrivals, a 20 ms pass departing every 20 ms
    wl = make_workload(poisson_arrivals(np.random.default_rng(0), 40.0, 5000), 1, 1)
    tr = simulate(wl, Deployment(ConstantStep(interval)), Policy("train", max_seqs=2000, interval_s=interval))
    ttft = tr.first_token_s - tr.arrival_s
    # T07: 2,000 sequences aboard every 20 ms train, saturated
    sat = summarize(simulate(make_workload(np.zeros(10_000), 1, 100), Deployment(ConstantStep(interval)),
                             Policy("train", max_seqs=2000, interval_s=interval)))
    # T15 on the lecture's board: R = 300, s = 8, KV ignored, B_n = 2.5 B*, B_f = B*/6, NVL72 at $2/GPU-hour
    R, s, bw = 300.0, 8.0, 72 * 8e12
    b_star = float(L.critical_batch(R, s))
    board = Deployment(BoardStep(1e12, 1e12 / s, R * bw, bw), gpus=72, usd_per_gpu_hour=2.0)
    trade = mode_trade(board, int(2.5 * b_star), int(b_star / 6))
    # the same trade with speculative decoding (γ = 3, α = 0.7, draft 5% of a step) on the board
    spec = Speculation(3, 0.7, 0.05)
    wl_spec = make_workload(np.zeros(3 * int(b_star / 6)), 1, 200)
    closed_speedup = float(speculative_step(board.step, int(b_star / 6), 0.0, spec)[1])
    fast_spec = summarize(simulate(wl_spec, board, Policy("continuous", max_seqs=int(b_star / 6), speculation=spec)))
    # a real deployment: Little's law under Poisson load
    cat = get_catalog()
    dep = roofline_deployment(cat.model("llama-3-70b"), cat.system("dgx-h100"))
    rng = np.random.default_rng(1)
    t = poisson_arrivals(rng, 15.0, 3000)
    real = simulate(make_workload(t, np.round(rng.lognormal(np.log(1024), 1.0, t.size)) + 1,
                                  np.round(rng.lognormal(np.log(200), 0.8, t.size)) + 1), dep, Policy())
    ll = littles_law(real)
    rs = summarize(real)

    items = [
        Worked("T05", "worst-case wait + pass, simulated", "max(first token − arrival)",
               {"interval": interval, "step": interval, "requests": wl.n}, float(ttft.max()), "s", 0.040, 0.01,
               "[S 00:23:07] 'twice the interval'"),
        Worked("§1.5", "mean wait for the next departure, simulated", "mean(first token − arrival) − step",
               {"interval": interval}, float(ttft.mean() - interval), "s", interval / 2, 0.05, "[I] interval/2"),
        Worked("T07", "throughput of 2,000 sequences per 20 ms train, simulated", "output tokens / makespan",
               {"B": 2000, "t_step": interval}, sat.throughput_tokens_per_s, "tok/s", 100_000, 1e-9, "[I]"),
        Worked("T15", "fast mode speed-up, simulated", "TPOT(B_n) / TPOT(B_f)",
               {"B_n": 2.5 * b_star, "B_f": b_star / 6, "R": R, "s": s}, trade["speed_ratio"], "×", 2.5, 1e-6,
               "[D 00:01:01] '6× the price for 2.5× the speed'"),
        Worked("T15", "fast mode price ratio, simulated", "($/Mtok at B_f) / ($/Mtok at B_n)",
               {"B_n": 2.5 * b_star, "B_f": b_star / 6}, trade["price_ratio"], "×", 6.0, 1e-6, "§1.8 [I]"),
        Worked("§1.8", "fast mode with speculation (γ=3, α=0.7): speed vs plain fast mode",
               "TPOT_fast / TPOT_fast+spec", {"E[tokens/step]": float(expected_tokens_per_step(0.7, 3)),
                                              "draft cost": "5% of a step per draft token"},
               trade["fast_speed_tokens_per_s"] ** -1 / fast_spec.tpot_p50_s, "×", closed_speedup, 0.03,
               "closed form E/(t_verify + γ·f·t)/t (Leviathan et al. 2023 eq. 1); the lecture names the lever "
               "[S 00:01:50] and never analyses it"),
        Worked("Little", "Little's law on llama-3-70b / DGX H100, 15 req/s Poisson", "L vs λ·W",
               {"λ": ll["lambda_per_s"], "W": ll["W_s"]}, ll["L"], "requests", ll["lambda_W"], 1e-6,
               "Little 1961"),
        Worked("sim", "llama-3-70b on DGX H100 at 15 req/s: TTFT p50 / TPOT p50",
               "simulated", {"policy": "continuous", "max_seqs": 256},
               f"{rs.ttft_p50_s * 1e3:.1f} ms / {rs.tpot_p50_s * 1e3:.2f} ms", "", None, None, "roofline simulate"),
    ]
    figs = []
    train_timeline(tr, fig_dir / "sim_train_timeline.png", first=25)
    figs.append(Figure("fig/sim_train_timeline.png", f"Train departures every 20 ms. Left: a window, the first 25 of "
                                                      f"{wl.n:,} requests; right: the whole run, every request's wait + "
                                                      f"pass, all within 40 ms (T05)."))
    fast_slow([("slow B=2.5·B*", trade["slow_speed_tokens_per_s"], trade["slow_usd_per_million_tokens"]),
               ("fast B=B*/6", trade["fast_speed_tokens_per_s"], trade["fast_usd_per_million_tokens"]),
               ("fast + speculation", fast_spec.speed_tokens_per_s_per_request, fast_spec.usd_per_million_tokens)],
              fig_dir / "sim_fast_slow.png")
    figs.append(Figure("fig/sim_fast_slow.png", "Fast vs slow mode by simulation on the lecture's board "
                                                "(R = 300, s = 8, KV ignored): 2.5× the speed for 6× the price."))
    return Chapter(1.5, "Serving by simulation: train departures and fast mode",
                   "The discrete-event simulator (roofline simulate) replays requests through the roofline step "
                   "times; the lecture's closed forms for train departures and fast mode come out of it.",
                   items, figs,
                   ["Speculative decoding is named in the lecture as fast mode's second lever and never analysed "
                    "(spec §8 item 11); its numbers here are the library's, not the lecture's."])
