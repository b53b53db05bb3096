"""Collective costs: closed-form volumes (NCCL bus-bandwidth factors), tiers, two-tier all-to-all."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline import network as N
from roofline.catalog import get_catalog
from roofline.errors import InputError


@pytest.mark.parametrize("n", [2, 4, 8, 72])
def test_ring_all_reduce_moves_2_n_minus_1_over_n(n):
    # zero latency, 1 B/s: time == bytes moved per GPU
    assert N.ring_all_reduce_s(1e9, n, 1.0, 0.0) == pytest.approx(2 * (n - 1) / n * 1e9)


@pytest.mark.parametrize("n", [2, 4, 8, 72])
def test_all_to_all_moves_n_minus_1_over_n(n):
    assert N.all_to_all_s(1e9, n, 1.0, 0.0) == pytest.approx((n - 1) / n * 1e9)
    assert N.all_gather_s(1e9, n, 1.0, 0.0) == pytest.approx((n - 1) / n * 1e9)
    assert N.reduce_scatter_s(1e9, n, 1.0, 0.0) == pytest.approx((n - 1) / n * 1e9)


def test_all_reduce_is_reduce_scatter_plus_all_gather():
    """Cross-check: Thakur et al. 2005 ring all-reduce = reduce-scatter + all-gather."""
    n, b, bw, lat = np.array([2, 8, 64]), 3e8, 4.5e11, 3e-6
    assert np.allclose(N.ring_all_reduce_s(b, n, bw, lat),
                       N.reduce_scatter_s(b, n, bw, lat) + N.all_gather_s(b, n, bw, lat))


def test_latency_terms():
    assert N.ring_all_reduce_s(0.0, 8, 1e9, 1e-6) == pytest.approx(14e-6)
    assert N.all_to_all_s(0.0, 8, 1e9, 1e-6) == pytest.approx(1e-6)
    assert N.all_to_all_s(1e6, 1, 1e9, 1e-6) == 0.0
    assert N.p2p_s(1e6, 1e9, 2e-6) == pytest.approx(1e-3 + 2e-6)


def test_efficiency_scales_bandwidth_term():
    assert N.all_to_all_s(1e9, 2, 1e9, 0.0, efficiency=0.5) == pytest.approx(1.0)


def test_hierarchical_equals_ring_with_one_domain():
    assert N.hierarchical_all_reduce_s(1e9, 8, 1, 4.5e11, 5e10, 3e-6, 1e-5) == pytest.approx(
        N.ring_all_reduce_s(1e9, 8, 4.5e11, 3e-6))


def test_hierarchical_outer_moves_shard():
    t = N.hierarchical_all_reduce_s(8e9, 8, 4, 1e30, 1.0, 0.0, 0.0)
    assert t == pytest.approx(2 * 3 / 4 * 1e9)


def test_two_tier_fraction_and_lecture_t21_shape():
    # one domain: identical to all_to_all_s
    r1 = N.all_to_all_two_tier_s(1e9, 1, 64, 8.0, 1.0, 0.0, 0.0)
    assert r1.time_s == pytest.approx(N.all_to_all_s(1e9, 64, 8.0, 0.0))
    assert r1.scale_out_s == 0.0
    # two domains, BW_up/BW_out = 8: half the traffic leaves; the scale-out part dominates
    r2 = N.all_to_all_two_tier_s(1e9, 2, 64, 8.0, 1.0, 0.0, 0.0)
    assert r2.fraction_off_domain == pytest.approx(0.5)
    assert r2.scale_out_s == pytest.approx(0.5e9)
    assert r2.time_s == pytest.approx(max(r2.scale_up_s, r2.scale_out_s))
    assert N.fraction_off_domain(np.array([1, 2, 4])) == pytest.approx([0, 0.5, 0.75])


def test_tiers_from_catalog():
    s = get_catalog().system("dgx-h100")
    up, out = N.tiers(s)
    assert up.bytes_per_s == s.scale_up_bytes_per_s and out.latency_s == s.scale_out_latency_s
    assert up.bytes_per_s > out.bytes_per_s


def test_bad_group_size_message():
    with pytest.raises(InputError, match="group size n must be a whole number >= 1"):
        N.ring_all_reduce_s(1e6, 0, 1e9, 0.0)
    with pytest.raises(InputError, match="efficiency must be a fraction"):
        N.all_to_all_s(1e6, 4, 1e9, 0.0, efficiency=1.5)


@given(b=st.floats(1e3, 1e10), n=st.integers(1, 512), bw=st.floats(1e9, 1e12), lat=st.floats(0, 1e-3),
       slower=st.floats(1.0, 100.0))
def test_collectives_never_faster_on_a_slower_link(b, n, bw, lat, slower):
    for f in (N.ring_all_reduce_s, N.all_gather_s, N.reduce_scatter_s, N.all_to_all_s):
        assert f(b, n, bw / slower, lat * slower) >= f(b, n, bw, lat) * (1 - 1e-12)
