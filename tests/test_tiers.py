"""Memory tiers vs rematerialisation (lecture §5.4): T39, T40, T42, break-evens, the band-order property."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline import lecture
from roofline import tiers as T
from roofline.catalog import get_catalog
from roofline.catalog.prices import MEDIA, MemoryTier, memory_tiers


def tier(medium, capacity, bw, usd_per_s, tid=None):
    return MemoryTier(tid or medium, medium, medium, capacity, bw, usd_per_s, "test", "test", "2026")


def test_t39_drain_time_rule():
    """Drains HBM 0.02 s, DDR 3 s, flash 60 s, disk 3,600 s; holds 0.02/300/3,600 s -> HBM/flash/disk."""
    drains = [0.02, 3.0, 60.0, 3600.0]
    names = np.array(["HBM", "DDR", "flash", "disk"])
    assert list(names[T.drain_time_choice([0.02, 300.0, 3600.0], drains)]) == ["HBM", "flash", "disk"]


def test_t40_retrieve_equals_hold_at_the_drain_time():
    """Any tier priced p for both retrieve and hold: retrieve = T·hold exactly at T = C/BW (kv = 2,048 B)."""
    for t in memory_tiers().values():
        if t.medium == "hbm":
            continue
        ret = T.retrieve_cost_usd(2048, t)
        hold = T.hold_cost_usd_per_s(2048, t)
        assert float(ret) == pytest.approx(float(hold) * t.drain_time_s, rel=1e-12)
        assert t.drain_time_s == pytest.approx(float(lecture.drain_time(t.capacity_bytes, t.bytes_per_s)))


def test_t42_break_even_hbm_vs_remat_is_ctx_star_times_drain():
    """T_be = (W_active/F)·C/kv = ctx*·t_drain = 2e5 × 0.02 s = 4,000 s, with F = R·BW, kv = W/(R ctx*)."""
    R, W, ctx_star, BW = 300.0, 1e11, 2e5, 1e12
    C = 0.02 * BW
    kv = float(lecture.kv_from_price_kink(R, W, ctx_star))
    t_be = float(T.break_even_hbm_vs_remat(W, R * BW, C, kv))
    assert t_be == pytest.approx(4000.0, rel=1e-12)
    assert t_be == pytest.approx(ctx_star * float(lecture.drain_time(C, BW)), rel=1e-12)
    # the same number from the option lines (remat vs an HBM tier priced p_GPU)
    p = 1e-3
    opts = T.options(kv, [tier("hbm", C, BW, p)], float(T.remat_cost_usd(W, R * BW, p)))
    (_, _, t_switch) = T.bands(opts)[0]
    assert t_switch == pytest.approx(4000.0, rel=1e-9)


def test_catalog_h100_break_even_near_lecture():
    """On the catalog H100 (R ≈ 295, drain 23.9 ms) with kv = 2,048 B and 1e11 fp8 params: ≈ 4,000 s."""
    acc = get_catalog().accelerator("h100-sxm")
    remat = T.remat_cost_on(acc, active_params=1e11)
    hbm = memory_tiers()["hbm-h100"]
    t_be = float(T.break_even_s(0.0, T.hold_cost_usd_per_s(2048, hbm), remat, 0.0))
    ctx_star = float(lecture.balanced_context(1e11, acc.ratio("fp8"), 2048))
    assert t_be == pytest.approx(ctx_star * acc.drain_time_s(), rel=1e-9)


def test_bands_match_brute_force_argmin():
    """The exact envelope equals a dense vectorised argmin over hold times."""
    opts = T.options(2048.0, list(memory_tiers().values()), 8e-8)
    Ts = np.geomspace(1e-4, 1e10, 20001)
    best = T.cheapest(opts, Ts)
    for name, a, b in T.bands(opts):
        inside = (Ts > a * 1.001) & (Ts < b / 1.001)
        assert np.all(np.array(opts.names)[best[inside]] == name)


def test_catalog_cheapest_tiers_for_the_priced_holds():
    """With the catalog, 5-minute holds go to flash and 1-hour holds to networked disk (the lecture's
    conclusion [S 02:01:52, 02:03:33]); 20 ms stays in HBM."""
    opts = T.options(2048.0, list(memory_tiers().values()), 8e-8)
    media = np.array(opts.media)[T.cheapest(opts, [0.02, 300.0, 3600.0])]
    assert list(media) == ["hbm", "flash", "disk"]


def test_remat_roofline_cross_check():
    """Remat through roofline.step (prefill, attention off) equals the lecture form (W_active/F)·p
    for a dense model: 2·N FLOPs per token at peak."""
    from roofline import model as M
    from roofline.engine import step
    from roofline.hardware import single_accelerator_system

    cat = get_catalog()
    m, acc = cat.model("llama-3-8b"), cat.accelerator("h100-sxm")
    sysrec = single_accelerator_system(acc, 1)
    lec = T.remat_cost_usd(M.matmul_flops_per_token(m) / 2 * 1.0, lecture.flops_to_F(acc.peak_flops("fp8"), 1.0),
                           acc.usd_per_hour / 3600)
    r = step(m, sysrec, 1, 0, phase="prefill", prompt=8192, weights_dtype="fp8", attention_flops=False,
             kv_writes=False, distinct_experts=False)
    assert float(r.usd_per_million_tokens) / 1e6 == pytest.approx(float(lec), rel=1e-9)
    # with attention the roofline remat per token grows with the prefix length
    costs = T.remat_cost_roofline(m, sysrec, np.array([1024, 8192]))
    assert costs[1] > costs[0] > float(lec) * 0.999


hold_factor = st.floats(min_value=1.5, max_value=1e3)
drain = st.floats(min_value=1e-3, max_value=1e6)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(hold_factor, drain), min_size=4, max_size=4),
       st.floats(min_value=1e-6, max_value=1e-1), st.floats(min_value=1e-12, max_value=1e-3),
       st.floats(min_value=100, max_value=1e5))
def test_property_cheapest_bands_ordered_down_the_hierarchy(params, hbm_usd_per_byte_s_scale, remat, kv):
    """Whatever the capacities and bandwidths, if each tier down the hierarchy is cheaper per byte-second
    than the one above, the cheapest tier's hold-time bands run HBM → DDR → flash → disk (→ remat)."""
    price = hbm_usd_per_byte_s_scale * 1e-9
    tl = []
    for medium, (factor, d) in zip(("hbm", "ddr", "flash", "disk"), params):
        cap = 1e9
        tl.append(tier(medium, cap, cap / d, price * cap))
        price /= factor
    opts = T.options(kv, tl, remat)
    order = [T.medium_rank(opts.media[opts.names.index(n)]) for n, _, _ in T.bands(opts)]
    assert order == sorted(order) and len(set(order)) == len(order)
    # bands tile [0, inf) without gaps
    b = T.bands(opts)
    assert b[0][1] == 0 and np.isinf(b[-1][2]) and all(x[2] == y[1] for x, y in zip(b, b[1:]))


def test_media_constant():
    assert MEDIA == ("hbm", "ddr", "cxl", "flash", "disk")


def test_bad_inputs():
    from roofline.errors import InputError

    with pytest.raises(InputError, match="KV bytes per token must be > 0"):
        T.options(0, list(memory_tiers().values()), 1e-8)
    with pytest.raises(InputError, match="hold time must be > 0"):
        T.drain_time_choice([-1.0], [1.0])


def test_tier_for_hold_is_the_cheapest_storage_tier_for_any_kv():
    """One answer: tiers.tier_for_hold (no KV bytes needed) equals the cheapest tier of the full cost model
    (retrieve + T·hold per token) for every KV size and hold time, remat left out."""
    import numpy as np

    from roofline.catalog.prices import memory_tiers

    tl = list(memory_tiers().values())
    holds = np.geomspace(1e-3, 1e6, 200)
    idx = T.tier_for_hold(holds, tl)
    for kv in (64.0, 2048.0, 70272.0):
        opts = T.options(kv, tl, None)
        assert np.array_equal(T.cheapest(opts, holds), idx)
    # the lecture's conclusion on catalog data: 5-min hold on flash, 1-hour hold on disk [S 02:01:52]
    assert [tl[int(i)].medium for i in T.tier_for_hold([0.02, 300.0, 3600.0], tl)] == ["hbm", "flash", "disk"]


def test_tiers_cli_gives_one_tier_per_hold(run_cli):
    import json

    code, out, err = run_cli("tiers", "--json")
    assert code == 0, err
    holds = json.loads(out)["holds"]
    assert [h["tier"] for h in holds] == ["hbm-h100", "flash-gen6", "disk-network"]
    assert all(h["tier"] == h["cheapest"] for h in holds)
