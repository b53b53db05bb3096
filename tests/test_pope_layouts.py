"""Issue 14, the remaining production layouts (brief h14c): `plan` searching Pope et al. 2022's layouts and overlap,
partially weight-gathered layouts, and two small fixes — each checked by hand."""

from __future__ import annotations

import pytest

from roofline import get_model, get_system
from roofline import model as M
from roofline.simulate.pools import kv_transfer_s


def test_kv_transfer_is_timed_on_the_slower_pool():
    """llama-3-70b: 327,680 B of bf16 KV per token, a 1,000-token prompt 3.2768e8 B. A 2-GPU prefill replica handing
    to an 8-GPU decode replica on DGX H100 (50 GB/s NIC per GPU, 10 us) is limited by the prefill side's 2 NICs:
    3.2768e8/(2 x 5e10) + 1e-5 = 3.2868e-3 s; swapped (8 prefill, 2 decode) the same; 8 and 8: 8.292e-4 s."""
    m, s = get_model("llama-3-70b"), get_system("dgx-h100")
    assert kv_transfer_s(m, s, 1000, chips=8, prefill_chips=2) == pytest.approx(3.2868e-3, rel=1e-12)
    assert kv_transfer_s(m, s, 1000, chips=2, prefill_chips=8) == pytest.approx(3.2868e-3, rel=1e-12)
    assert kv_transfer_s(m, s, 1000, chips=8, prefill_chips=8) == pytest.approx(8.292e-4, rel=1e-12)
    assert M.kv_bytes_per_sequence(m, 1000, "bf16") == 327_680_000
