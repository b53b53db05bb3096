"""Chapter 5 of the lecture: what API prices leak (spec §5.1–5.5, T34–T42) and the §1.8 fast-mode reading."""

from __future__ import annotations

from pathlib import Path

from ... import lecture as L
from ... import pricing
from ... import tiers as T
from ...catalog import get_catalog
from ...catalog.prices import memory_tiers, price_list
from .. import Chapter, Figure, Worked

R = 300.0
W_ACTIVE = 1e11  # 100 B active params at 1 byte [S 01:29:51, §0.3]
CTX_STAR = 2e5  # Gemini's 200K tier [D 01:33:03]


def chapter(fig_dir: Path) -> Chapter:
    from ...plots.pricing import plot_cached_token_cost, plot_cost_vs_context

    cat = get_catalog()
    gem, claude = price_list("gemini-2.5-pro"), price_list("claude-opus-4.6")
    assert claude.cache_hit_usd_per_token is not None  # the shipped price list has it
    kv_kink = float(L.kv_from_price_kink(R, W_ACTIVE, gem.context_tiers[0].above_tokens))
    layouts = pricing.architecture_layouts(kv_kink, top=1)
    c_in = L.pass_cost_per_token(4000, 1, 1e5, 8e11, W_ACTIVE, 2048, R, 1.0)[1]
    c_pre = L.pass_cost_per_token(4000, 1000, 1e5, 8e11, W_ACTIVE, 2048, R, 1.0)[1]
    drains = [0.02, 3.0, 60.0, 3600.0]
    names = ["HBM", "DDR", "flash", "disk"]
    choice = "/".join(names[int(i)] for i in T.drain_time_choice([0.02, 300.0, 3600.0], drains))
    ddr = memory_tiers()["ddr-dgx-h100"]
    ret, hold = float(T.retrieve_cost_usd(2048, ddr)), float(T.hold_cost_usd_per_s(2048, ddr))
    w5, w60 = claude.cache_writes
    h5 = (w5.usd_per_token - claude.input_usd_per_token) / w5.hold_s * 1e6
    h60 = (w60.usd_per_token - claude.input_usd_per_token) / w60.hold_s * 1e6
    kv_be = float(L.kv_from_price_kink(R, W_ACTIVE, CTX_STAR))
    t_be = float(T.break_even_hbm_vs_remat(W_ACTIVE, R * 1e12, 0.02 * 1e12, kv_be))
    fast = claude.variants[0]
    assert fast.speedup is not None  # the shipped fast mode states its speed-up
    m_fast = fast.output_usd_per_token / claude.output_usd_per_token
    h100 = cat.accelerator("h100-sxm")
    remat = T.remat_cost_on(h100, active_params=W_ACTIVE)
    opts = T.options(2048.0, list(memory_tiers().values()), remat)
    cat_tiers = list(memory_tiers().values())
    one_answer = [cat_tiers[int(i)] for i in T.tier_for_hold([0.02, 300.0, 3600.0], cat_tiers)]
    nearest_drain = [cat_tiers[int(i)].id for i in T.drain_time_choice([0.02, 300.0, 3600.0],
                                                                        [t.drain_time_s for t in cat_tiers])]
    by_id = {t.id: t for t in cat_tiers}
    price_ratio = by_id[nearest_drain[2]].usd_per_byte_s / one_answer[2].usd_per_byte_s
    catalog_be = float(T.break_even_s(0.0, T.hold_cost_usd_per_s(2048, memory_tiers()["hbm-h100"]), remat, 0.0))

    items = [
        Worked("T34", "KV bytes per token from Gemini's 200K tier", "kv = W_active / (R · ctx*)",
               {"R": R, "W_active (B)": W_ACTIVE, "ctx* (catalog gemini-2.5-pro)": gem.context_tiers[0].above_tokens},
               kv_kink, "B/token", 1666.67, 1e-5, "[S 01:35:53–01:38:22] '1667, almost two kilobytes'"),
        Worked("T34", "…inverted: active params from kv", "W_active = kv · R · ctx*",
               {"kv": kv_kink, "R": R, "ctx*": CTX_STAR}, kv_kink * R * CTX_STAR, "B", 1e11, 1e-12, "[I]"),
        Worked("T35", "KV bytes from the architecture (fp8)", "layers × 2 × d_head × n_kv × bytes",
               {"layers": 1, "d_head": 128, "n_kv": 8, "bytes": 1}, float(L.kv_from_architecture(1, 128, 8, 1)),
               "B/token", 2048, 0, "[S 01:38:35] 'gives you exactly this number'"),
        Worked("T36", "same, bf16", "layers × 2 × d_head × n_kv × bytes", {"layers": 1, "d_head": 128, "n_kv": 8, "bytes": 2},
               float(L.kv_from_architecture(1, 128, 8, 2)), "B/token", 4096, 0, "[I]"),
        Worked("T35", "nearest KV layout to 1,667 B (architecture check)", "argmin |log(kv/target)|",
               {"target": kv_kink}, layouts[0]["layout"], "", "1 KV layer(s) x 2 x 128 dims x 8 KV heads, fp8", None,
               "[S 01:40:52] shared global KV (Character.AI, Gemma); 'maybe a little bit small'"),
        Worked("T37", "output/input 5× → decode memory/compute", "t_mem/t_compute = p_out/p_in",
               {"p_out/p_in (catalog claude-opus-4.6)": claude.output_over_input},
               float(L.decode_mfu_from_price_ratio(claude.output_over_input)[0]), "×", 5.0, 1e-12, "[D/S 01:47:56]"),
        Worked("T37", "decode MFU relative to prefill", "1 / p", {"p": 5},
               float(L.decode_mfu_from_price_ratio(5)[1]), "", 0.2, 1e-12, "flashcards [F]"),
        Worked("T38", "decode vs prefill memory per token", "mem/token(L=1) ÷ mem/token(L)", {"L": 1000},
               float(c_in / c_pre), "×", 1000, 1e-12, "[S 01:43:31] prefill adds no memory traffic"),
        Worked("T39", "drain-time tier for holds 0.02 s / 300 s / 3,600 s", "argmin |log T − log(C/BW)|",
               dict(zip(names, drains)), choice, "", "HBM/flash/disk", None, "[S 02:01:52, 02:03:33]"),
        Worked("T40", "retrieve = hold at T = C/BW (catalog DDR, kv 2,048 B)", "(kv/BW)·p ÷ (T·kv/C·p)",
               {"T = C/BW (s)": ddr.drain_time_s}, ret / (hold * ddr.drain_time_s), "", 1.0, 1e-12, "[S 02:00:37] [I]"),
        Worked("T41", "Anthropic 5-min write / input", "p_write5m / p_in", {"catalog": claude.id},
               w5.usd_per_token / claude.input_usd_per_token, "×", 1.25, 1e-12, "[D 01:59:59] $6.25 vs $5"),
        Worked("T41", "Anthropic hit / input", "p_hit / p_in", {"catalog": claude.id},
               claude.cache_hit_usd_per_token / claude.input_usd_per_token, "×", 0.1, 1e-12, "[D 01:48:52] '10× cheaper'"),
        Worked("T41", "Anthropic 1-h write / input", "p_write1h / p_in", {"catalog": claude.id},
               w60.usd_per_token / claude.input_usd_per_token, "×", 2.0, 1e-12, "[X] Anthropic pricing page"),
        Worked("T42", "HBM vs remat break-even hold", "(W_active/F)·C_HBM/kv = ctx*·t_drain",
               {"ctx*": CTX_STAR, "t_drain": 0.02, "R": R}, t_be, "s", 4000, 1e-12, "[I] §5.4"),
        Worked("§5.4", "Anthropic 5-min hold price", "(p_write − p_in)/300 s", {"write": 6.25, "input": 5},
               h5, "$/MTok/s", 0.0042, 0.01, "[I] §5.4"),
        Worked("§5.4", "Anthropic 1-h hold price", "(p_write − p_in)/3,600 s", {"write": 10, "input": 5},
               h60, "$/MTok/s", 0.0014, 0.01, "[I] §5.4"),
        Worked("§5.4", "catalog H100: HBM vs remat break-even", "remat/(hold in HBM)",
               {"kv": 2048, "N_active": W_ACTIVE, "R_fp8": h100.ratio("fp8")}, catalog_be, "s",
               float(L.balanced_context(W_ACTIVE, h100.ratio("fp8"), 2048)) * h100.drain_time_s(), 1e-9,
               "cross-check: ctx*·t_drain on the catalog H100", kind="cross-check"),
        Worked("T39", "tier for holds 0.02 s / 300 s / 3,600 s from catalog data (the answer `roofline tiers` "
               "and `prices infer` give)", "argmin u·(T + C/BW): $/byte-s × (hold + drain), tiers.tier_for_hold",
               {t.id: f"drain {t.drain_time_s:.3g} s" for t in cat_tiers},
               "/".join(t.medium for t in one_answer), "", "hbm/flash/disk", None,
               "lecture: 5-min ↔ flash, 1-h ↔ spinning disk [S 02:01:52, 02:03:33]; tiers: "
               + "/".join(t.id for t in one_answer)),
        Worked("§1.8", "Claude fast mode: implied batch ratio", "B_n/B_f = M · S",
               {"M (catalog)": m_fast, "S": fast.speedup}, m_fast * fast.speedup, "×", 15, 1e-12,
               "[D 00:01:01] 6× price for 2.5× speed; §1.8 [I]"),
    ]
    figures = []
    p1 = plot_cost_vs_context(fig_dir / "ch05_cost_vs_context.png", gem, h100, active_params=W_ACTIVE)
    figures.append(Figure(f"fig/{p1.name}", "Decode cost per token vs context on the lecture's board for an H100 (weights amortised), "
                          "with the KV bytes the Gemini 200K tier implies; the API's price tier drawn over it. No "
                          "architecture is assumed here, so attention FLOPs are left out as in the lecture's own "
                          "derivation [S 01:35:53]; for a model with one shared KV layer the engine would add them "
                          "(chapter 1: they can make decode attention compute-bound)."))
    p2 = plot_cached_token_cost(fig_dir / "ch05_cached_token_cost.png", opts, [claude, gem])
    figures.append(Figure(f"fig/{p2.name}", "Cost of holding one token's KV (2,048 B) for T seconds and reading it back, "
                          "per catalog tier and for rematerialisation; Anthropic's write premiums and Gemini's storage price marked."))
    return Chapter(
        key=5.0, title="5. What API prices leak",
        intro="Prices near cost leak architecture: a context-price tier sits where KV reads overtake compute; the "
              "output/input ratio says how memory-bound decode is; cache write/hit prices and drain times say where "
              "cached context lives.",
        items=items, figures=figures,
        notes=["Drain-time rule, one answer: the lecture's T39 row uses the lecture's own drain times and its "
               "'nearest drain time' reading. Every answer about catalog tiers (the second T39 row, `roofline tiers`, "
               "`prices infer`) comes from one function, tiers.tier_for_hold: per byte a tier costs its price per "
               "byte-second times (hold + drain time), because a retrieve costs as much as holding for one drain time "
               "(T40). On catalog data the nearest-drain reading would put a 1-hour hold on flash ("
               + "/".join(nearest_drain) + "), since the catalog's network disk drains in "
               f"{one_answer[2].drain_time_s / 3600:.1f} h; weighing the {price_ratio:.0f}x lower price per byte-second "
               "of disk moves it to disk, as the lecture concludes.",
               "§5.5: context windows stalled at 100–200K because per-token KV bandwidth, not compute, sets the "
               "cost slope; with the implied kv ≈ 1.7 kB the balanced context ctx* = W_active/(R·kv) is the tier itself.",
               "Ranges and assumptions for every price list: `roofline prices infer` (docs/pricing.md)."],
    )
