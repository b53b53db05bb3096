"""Chapter 2: MoE layout across racks (lecture §2): experts per GPU, scale-up vs scale-out, rack memory."""

from __future__ import annotations

from pathlib import Path

from .. import Chapter, Figure, Worked


def chapter(fig_dir: Path) -> Chapter:
    from ...catalog import get_catalog
    from ...layout import place_experts
    from ...lecture import ep_slowdown_over_domains as two_domain_ep_slowdown
    from ...moe_scaling import S_BASE, experts_for_multiplier, quality_multiplier, sparsity_quality_equivalence
    from ...network import all_to_all_two_tier_s, fraction_off_domain
    from ...plots.parallel import rack_map

    cat = get_catalog()
    h100 = cat.system("dgx-h100")
    nvl = cat.system("gb200-nvl72")
    place = place_experts(256, 72)
    one = all_to_all_two_tier_s(1e9, 1, 64, nvl.scale_up_bytes_per_s, nvl.scale_out_bytes_per_s, 0.0, 0.0).time_s
    two = all_to_all_two_tier_s(1e9, 2, 64, nvl.scale_up_bytes_per_s, nvl.scale_out_bytes_per_s, 0.0, 0.0).time_s
    items = [
        Worked("T16", "sparsity-quality equivalence", "N_dense_equiv / N_active", {"dense": 1.3e9, "active": 3.7e8},
               float(sparsity_quality_equivalence(1.3e9, 3.7e8)), "x", 3.51, 1e-2, "[S 00:29:37], Clark et al. 2022"),
        Worked("T16", "dense model matched by 64 experts × 370M active, from the routed scaling law",
               "L(N_eq, 1) = L(N, E), Clark et al. eq. (1), S-BASE", {"N": 3.7e8, "E": 64},
               float(quality_multiplier(3.7e8, 64) * 3.7e8), "params", 1.3e9, 0.1,
               "[S 00:29:37] '1.3B dense'; Clark et al. 2022 Table 3 coefficients"),
        Worked("T16", "quality multiplier, 100 experts at 370M active", "N_eq/N at E = 100", {"N": 3.7e8, "E": 100},
               float(quality_multiplier(3.7e8, 100)), "x", "≈ 10 (host: '100× total for 10× active')", None,
               "[D 00:29:52] vs the law: 100 experts buy < 10× at every size from 10M active up"),
        Worked("T16", "quality multiplier, 100 experts at 100B active (the lecture's frontier)", "N_eq/N at E = 100",
               {"N": 1e11, "E": 100}, float(quality_multiplier(1e11, 100)), "x", None, None,
               "Clark et al. 2022: c > 0, routing gains shrink with size (no gain past N ≈ 937B)"),
        Worked("T16", "experts for a 10× multiplier at 100M / 370M active", "E with N_eq/N = 10 (inf: unreachable)",
               {"N": "1e8 / 3.7e8", "E_max (saturation)": S_BASE.e_max},
               " / ".join(f"{e:,.0f}" if e != float("inf") else "inf" for e in experts_for_multiplier([1e8, 3.7e8], 10.0)),
               "experts", None, None, "roofline.moe_scaling; extrapolated beyond the fitted E <= 512"),
        Worked("T17", "expert GPUs for 256 experts on 72 GPUs", "largest divisor of E <= GPUs",
               {"experts": 256, "GPUs": 72}, place.ep, "GPUs", 64, 0.0, "[S 00:33:46-00:36:40]"),
        Worked("T17", "experts per GPU", "E / EP", {"experts": 256, "EP": place.ep}, place.experts_per_gpu, "", 4, 0.0,
               "[S 00:33:46]"),
        Worked("T17", "idle GPUs", "GPUs - EP", {"GPUs": 72, "EP": place.ep}, place.idle_gpus, "", 8, 0.0, "[S 00:33:46]"),
        Worked("T21", "share of all-to-all leaving the rack, 2 racks", "1 - 1/n", {"n": 2},
               float(fraction_off_domain(2)), "", 0.5, 0.0, "§2.3 [I]"),
        Worked("T21", "two-rack EP slowdown (lecture's rough form)", "max(1/n, (1-1/n)·BW_up/BW_out)",
               {"n": 2, "BW_up/BW_out": 8}, float(two_domain_ep_slowdown(2, 8)), "x", 4.0, 0.0, "[S 00:39:39-00:40:10]"),
        Worked("", "two-rack all-to-all slowdown on gb200-nvl72 (catalog bandwidths, 64 GPUs per rack)",
               "all_to_all_two_tier(2 racks) / all_to_all(1 rack)",
               {"BW_up": nvl.scale_up_bytes_per_s, "BW_out": nvl.scale_out_bytes_per_s}, float(two / one), "x",
               source="network.all_to_all_two_tier_s; NVL72 scale-out is 18x slower than NVLink, not 8x"),
        Worked("T22", "Hopper x8 memory", "8 x 80 GB", {"GPUs": h100.chips}, h100.hbm_bytes / 1e9, "GB", 640, 0.0,
               "[D 00:45:30]"),
        Worked("", "GB200 NVL72 rack memory", "72 x 186 GB", {"GPUs": nvl.chips}, nvl.hbm_bytes / 1e12, "TB", 13.4, 0.01,
               "NVIDIA GB200 NVL72 spec [X]"),
    ]
    from ...plots.parallel import moe_quality

    figs = [Figure("fig/" + moe_quality(fig_dir / "ch02_moe_quality.png").name,
                   "Quality multiplier of a routed model (dense-equivalent over active parameters) against its "
                   "expert count, Clark et al. 2022's S-BASE law: the lecture's 64 × 370M ≈ 1.3B sits on it; "
                   "the host's '100× total ≈ 10× active' is not reached by 100 experts at any size from 10M active up "
                   "(10× at 100M active takes ~6,700 experts, far past the fitted 512), and at 100B active 100 "
                   "experts buy 1.5×."),
            Figure("fig/" + rack_map(256, 72, 2, fig_dir / "ch02_rack_map.png").name,
                   "DeepSeek's 256 experts over two NVL72 racks (EP 128, 2 per GPU, 8 idle per rack) and the share "
                   "of all-to-all traffic that leaves the rack as experts span more racks, with the lecture's slowdown.")]
    return Chapter(key=2.0, title="2. MoE layout across racks", items=items, figures=figs,
                   intro="Expert parallelism puts different experts on different GPUs; dispatch and combine are "
                         "all-to-alls that want one fully connected scale-up domain. Across n racks, 1 - 1/n of the "
                         "traffic leaves the rack over a network about 8x slower (§2.3).",
                   notes=["The catalog's GB200 NVL72 scale-out (400 Gb/s = 50 GB/s per GPU) is 18x slower than its "
                          "900 GB/s NVLink per direction, so the computed two-rack slowdown exceeds the lecture's 4x."])
