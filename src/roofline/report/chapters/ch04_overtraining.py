"""Chapter 4 of the lecture: over-training vs Chinchilla once RL and inference are counted (spec §4, T27–T33)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import Chapter, Figure, Worked


def chapter(fig_dir: Path) -> Chapter:
    from ... import scaling as S
    from ...plots import training as P

    x1 = S.grid_argmin(lambda x: 1 / x + x, 0.1, 10)
    x2 = S.grid_argmin(lambda x: np.exp(x) + np.exp(-x), -5, 5)
    _, ratio = S.power_law_optimum(1.0, 0.34, 1.0, 0.28)
    items = [
        Worked("T27", "inference tokens, all traffic", "rate × lifetime", {"rate": 5e8, "days": 60},
               float(S.lifetime_tokens(5e8, 60)), "tokens", 2.6e15, 0.01, "[D 01:30:20]"),
        Worked("T28", "inference tokens, one model", "rate × lifetime", {"rate": 5e7, "days": 60},
               float(S.lifetime_tokens(5e7, 60)), "tokens", 2.592e14, 1e-3, "[S 01:30:55] '~200T'"),
        Worked("T29", "Chinchilla tokens", "20 · N_active", {"N": 1e11}, float(S.chinchilla_tokens(1e11)),
               "tokens", 2e12, 0, "[S 01:31:31]"),
        Worked("T30", "over-training factor", "D_pre / 20N", {"D_pre": 2e14, "N": 1e11},
               float(S.overtraining_factor(2e14, 1e11)), "×", 100, 0, "[S 01:31:50]"),
        Worked("T30", "over-training, 150T rumour", "D_pre / 20N", {"D_pre": 1.5e14, "N": 1e11},
               float(S.overtraining_factor(1.5e14, 1e11)), "×", 75, 0, "[D 01:31:10]"),
        Worked("T31", "D_pre / D_RL at equal cost", "(k_RL/6)/η", {"k_RL": 3, "η": 1 / 3},
               float(S.equal_cost_data_ratio(3, 1 / 3)), "", 1.5, 1e-9, "[S 01:27:15, F]"),
        Worked("T31", "D_pre / D_inf at equal cost", "(2/6)/η", {"η": 1 / 3},
               float(S.equal_cost_data_ratio(2, 1 / 3)), "", 1.0, 1e-9, "[S 01:27:53]"),
        Worked("T32", "D_pre / D_RL, η = 0.3", "(k_RL/6)/η", {"k_RL": 3, "η": 0.3},
               float(S.equal_cost_data_ratio(3, 0.3)), "", 1.667, 1e-3, "[I]"),
        Worked("T32", "D_pre / D_inf, η = 0.3", "(2/6)/η", {"η": 0.3},
               float(S.equal_cost_data_ratio(2, 0.3)), "", 1.111, 1e-3, "[I]"),
        Worked("T33", "argmin 1/x + x", "grid search", {}, x1, "", 1.0, 1e-6, "[S 01:20:19]"),
        Worked("T33", "argmin eˣ + e⁻ˣ", "grid search", {}, x2, "", 0.0, 1e-6, "[S 01:20:50]"),
        Worked("ratio", "term ratio at the optimum of a·x^0.34 + b·x^−0.28", "A/B = q/p", {"p": 0.34, "q": 0.28},
               float(ratio), "", 0.28 / 0.34, 1e-12, "spec §4.1 caveat [I]"),
    ]
    opt = S.inference_aware_optimum(2.0, float(S.lifetime_tokens(5e7, 60)))
    fig = P.lifetime_cost_vs_overtraining(opt, fig_dir / "overtrain_lifetime_cost.png")
    notes = [f"Inference-aware optimum at loss 2.0 (Hoffmann et al. 2022 law) with 2.6e14 lifetime tokens at η = 1/3: "
             f"N = {opt.n_opt:.3g}, D = {opt.d_opt:.3g} ({opt.overtraining_opt:.0f}× Chinchilla), lifetime cost "
             f"{opt.cost_opt:.3g} vs {opt.cost_chinchilla:.3g} FLOP-eq. for the pretraining-optimal model "
             f"(Sardana et al. 2023). The loss law was fitted far below these token counts: an extrapolation."]
    return Chapter(4.0, "4 Over-training vs Chinchilla, with RL and inference",
                   "Equal-cost heuristics and the exact inference-aware optimum.", items,
                   [Figure(f"fig/{fig.name}", "Lifetime cost (pretraining + inference) against over-training at "
                                               "a fixed loss; the dot marks the minimum.")], notes)
