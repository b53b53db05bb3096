"""hardware.py by hand: the lecture's R for catalog accelerators, HBM drain time, peak FLOP/s per dtype, scale-up
domains, and the one price resolver (explicit > system > accelerator; <= 0 refused) — in the library and through
the CLI's --json (`roofline catalog accelerators`, `roofline step`)."""

import json
from dataclasses import replace

import numpy as np
import pytest

from helpers import TOY_ACCELERATOR_YAML
from roofline import get_accelerator, get_system
from roofline.errors import InputError
from roofline.hardware import hardware_ratio, hardware_ratio_flops, single_accelerator_system, usd_per_gpu_hour

# Datasheet figures (dense bf16 TFLOP/s, HBM TB/s, HBM GB) as the catalog cites them, and by hand:
# R = (FLOPS/2)·b_w/BW with b_w = 2 (bf16) = FLOPS_bf16/BW (spec §0.3, T45); drain time = C/BW (lecture §1.5).
ROWS = [
    # id, bf16 TFLOP/s, TB/s, GB, R by hand, drain ms by hand
    ("h100-sxm", 989.5, 3.35, 80, 295.37, 23.881),  # NVIDIA H100 datasheet, SXM column
    ("a100-80gb", 312, 2.039, 80, 153.02, 39.235),  # NVIDIA A100 datasheet, SXM 80GB column
    ("b200", 2250, 8, 180, 281.25, 22.5),  # NVIDIA B200 (HGX B200 per-GPU figures)
    ("mi300x", 1307.4, 5.3, 192, 246.68, 36.226),  # AMD Instinct MI300X datasheet
    ("tpu-v5e", 197, 0.819, 16, 240.54, 19.536),  # Google Cloud TPU v5e documentation
    ("h100-pcie", 756.5, 2.0, 80, 378.25, 40.0),  # NVIDIA H100 datasheet, PCIe column
]


@pytest.mark.parametrize("acc_id, tflops, tb_s, gb, r_hand, drain_ms", ROWS, ids=[r[0] for r in ROWS])
def test_ratio_and_drain_time_by_hand(acc_id, tflops, tb_s, gb, r_hand, drain_ms):
    acc = get_accelerator(acc_id)
    assert (acc.flops_per_s["bf16"], acc.hbm_bytes_per_s, acc.hbm_bytes) == (tflops * 1e12, tb_s * 1e12, gb * 1e9)
    assert acc.ratio("bf16") == pytest.approx(r_hand, abs=0.01)
    assert acc.ratio("bf16") == pytest.approx((tflops * 1e12 / 2) * 2 / (tb_s * 1e12), rel=1e-12)
    assert acc.drain_time_s() == pytest.approx(drain_ms * 1e-3, abs=1e-6)
    # the standard ridge point FLOPS/BW in FLOP per byte is 2/b_w times R: equal for 2-byte weights
    assert hardware_ratio_flops(acc.flops_per_s["bf16"], acc.hbm_bytes_per_s) == pytest.approx(acc.ratio("bf16"))


def test_ratio_in_fp8_depends_on_native_fp8_cores():
    """fp8 halves the weight bytes; on an H100 the fp8 cores double the FLOP/s, so R is unchanged
    (1979e12/2 · 1 / 3.35e12 = 295.37); an A100 has no fp8 cores, its fp8 weights run on the bf16 cores and R halves
    (312e12/2 · 1 / 2.039e12 = 76.51)."""
    assert get_accelerator("h100-sxm").ratio("fp8") == pytest.approx(1979e12 / 2 / 3.35e12, rel=1e-12)
    assert get_accelerator("h100-sxm").ratio("fp8") == pytest.approx(get_accelerator("h100-sxm").ratio("bf16"))
    assert get_accelerator("a100-80gb").ratio("fp8") == pytest.approx(76.51, abs=0.01)
    # fp4 weights: native cores on a B200 (9 PFLOP/s dense), the bf16 cores on an H100; int4 always on bf16
    assert get_accelerator("b200").peak_flops("fp4") == 9000e12
    assert get_accelerator("h100-sxm").peak_flops("fp4") == 989.5e12
    assert get_accelerator("b200").peak_flops("int4") == 2250e12
    assert get_accelerator("b200").ratio("fp4") == pytest.approx(9000e12 / 2 * 0.5 / 8e12)  # 281.25, T45's B200


def test_peak_flops_errors_name_the_choices():
    fp32_only = replace(get_accelerator("h100-sxm"), id="fp32-only", flops_per_s={"fp32": 1e14})
    with pytest.raises(InputError) as e:
        fp32_only.peak_flops("fp8")
    assert str(e.value) == "fp32-only lists no fp8, bf16 or fp16 throughput; choose a dtype among fp32"
    with pytest.raises(InputError, match="unknown dtype 'fp7': expected one of fp32, tf32, bf16"):
        get_accelerator("h100-sxm").peak_flops("fp7")


def test_hardware_ratio_broadcasts():
    r = hardware_ratio(np.array([989.5e12, 1979e12]), np.array([[2.0], [1.0]]), 3.35e12)
    np.testing.assert_allclose(r, [[295.37313, 590.74627], [147.68657, 295.37313]], rtol=1e-6)


def test_system_totals_are_chips_times_the_accelerator():
    """DGX H100: 8 x H100 SXM; NVLink 4's 900 GB/s total is 450 GB/s per direction, one 400 Gb/s ConnectX-7
    (50 GB/s) per GPU: up/out = 9."""
    s = get_system("dgx-h100")
    assert s.chips == 8 and s.accelerator.id == "h100-sxm"
    assert s.hbm_bytes == 8 * 80e9 and s.hbm_bytes_per_s == pytest.approx(8 * 3.35e12, rel=1e-12)
    assert (s.scale_up_bytes_per_s, s.scale_out_bytes_per_s) == (450e9, 50e9)
    assert s.scale_up_over_out == pytest.approx(9.0)


def test_mi355x_platform_by_hand():
    """8 x MI355X: 288 GB HBM3E at 8 TB/s each; 4th-gen Infinity Fabric, 7 links of 153.6 GB/s bidirectional to the 7
    peers = 537.6 GB/s per direction when traffic spreads over all of them."""
    s = get_system("mi355x-8")
    assert s.chips == 8 and s.accelerator.id == "mi355x" and s.accelerator.vendor == "amd"
    assert s.hbm_bytes == 8 * 288e9 and s.hbm_bytes_per_s == pytest.approx(8 * 8e12, rel=1e-12)
    assert s.scale_up_bytes_per_s == pytest.approx(7 * 153.6e9 / 2, rel=1e-12)


def test_hgx_b300_platform_by_hand():
    """8 x B300 (HGX/DGX B300, 1100 W): 270 GB each as MLPerf's systems report, 8 TB/s; NVLink 5 1.8 TB/s
    bidirectional = 900 GB/s per direction; ConnectX-8 800 Gb/s = 100 GB/s; dense FP4 13.1 PF, below GB300's 15."""
    s = get_system("hgx-b300")
    assert s.chips == 8 and s.accelerator.id == "b300" and s.accelerator.vendor == "nvidia"
    assert s.hbm_bytes == 8 * 270e9 and s.hbm_bytes_per_s == pytest.approx(8 * 8e12, rel=1e-12)
    assert (s.scale_up_bytes_per_s, s.scale_out_bytes_per_s) == (900e9, 100e9)
    assert s.accelerator.flops_per_s["fp4"] == 13125e12 < get_accelerator("gb300").flops_per_s["fp4"]

def test_mi325x_platform_by_hand():
    """8 x MI325X: the MI300X platform with 256 GB HBM3E at 6 TB/s each; Infinity Fabric 7 x 64 = 448 GB/s per
    direction over all peers."""
    s = get_system("mi325x-8")
    assert s.chips == 8 and s.accelerator.id == "mi325x" and s.accelerator.vendor == "amd"
    assert s.hbm_bytes == 8 * 256e9 and s.hbm_bytes_per_s == pytest.approx(8 * 6e12, rel=1e-12)
    assert s.scale_up_bytes_per_s == pytest.approx(448e9, rel=1e-12)

def test_h100_pcie_pairs_by_hand():
    """Two H100 PCIe cards: over PCIe Gen5 x16 (128 GB/s bidirectional = 64 per direction) or joined by NVLink bridges
    (600 GB/s bidirectional = 300 per direction), 80 GB at 2 TB/s each; so a TP-2 ring all-reduce of 16 MB moves
    2·(n − 1)/n · 16 MB = 16 MB each way, 250 µs over PCIe against 53 µs over the bridges (plus two hops' latency)."""
    from roofline.network import ring_all_reduce_s

    pcie, bridged = get_system("h100-pcie-2"), get_system("h100-pcie-2-nvlink")
    for s in (pcie, bridged):
        assert s.chips == 2 and s.accelerator.id == "h100-pcie" and s.hbm_bytes == 2 * 80e9
    assert (pcie.scale_up_bytes_per_s, bridged.scale_up_bytes_per_s) == (64e9, 300e9)
    t_pcie = ring_all_reduce_s(16e6, 2, 64e9, 5e-6)
    t_nvl = ring_all_reduce_s(16e6, 2, 300e9, 2e-6)
    assert t_pcie == pytest.approx(16e6 / 64e9 + 2 * 5e-6, rel=1e-9) and t_nvl == pytest.approx(16e6 / 300e9 + 2 * 2e-6, rel=1e-9)


def test_mi350x_platform_by_hand():
    """8 x MI350X: the MI355X's CDNA 4 package at 1,000 W and 2.2 GHz instead of 1,400 W and 2.4 GHz, so AMD's dense
    peaks are 2.3 / 4.6 / 9.2 PF (BF16 / FP8 / MXFP4) against 2.5 / 5 / 10, with the same 288 GB of HBM3E at 8 TB/s
    and the same 7 x 76.8 GB/s Infinity Fabric per direction."""
    s, big = get_system("mi350x-8"), get_system("mi355x-8")
    assert s.chips == 8 and s.accelerator.id == "mi350x" and s.accelerator.vendor == "amd"
    assert s.hbm_bytes == big.hbm_bytes == 8 * 288e9 and s.hbm_bytes_per_s == big.hbm_bytes_per_s
    assert s.scale_up_bytes_per_s == big.scale_up_bytes_per_s == pytest.approx(537.6e9, rel=1e-12)
    for dt, pf in (("bf16", 2.3), ("fp8", 4.6), ("fp4", 9.2)):
        assert s.accelerator.flops_per_s[dt] == pytest.approx(pf * 1e15, rel=1e-12)
        assert s.accelerator.flops_per_s[dt] / big.accelerator.flops_per_s[dt] == pytest.approx(0.92, rel=1e-12)


def test_single_accelerator_system():
    acc = get_accelerator("h100-sxm")
    s = single_accelerator_system(acc, 4)
    assert (s.id, s.chips, s.hbm_bytes, s.usd_per_hour) == ("h100-sxmx4", 4, 4 * 80e9, acc.usd_per_hour)
    assert (s.scale_up_bytes_per_s, s.scale_out_bytes_per_s) == (acc.scale_up_bytes_per_s, acc.scale_out_bytes_per_s)
    for bad in (0, 2.5, -1):
        with pytest.raises(InputError) as e:
            single_accelerator_system(acc, bad)
        assert str(e.value) == f"--gpus must be a whole number >= 1, got {bad}"


def test_price_resolver_order_explicit_then_system_then_accelerator():
    dgx = get_system("dgx-h100")
    acc_price = dgx.accelerator.usd_per_hour
    assert acc_price == 2.99  # accelerators.yaml h100-sxm (Lambda on-demand, 2026-03)
    assert dgx.usd_per_hour == acc_price  # the loader gives a system row without a price its chip's price
    priced = replace(dgx, usd_per_hour=5.0)
    assert usd_per_gpu_hour(priced, 1.25) == 1.25  # explicit wins over both
    assert usd_per_gpu_hour(priced) == 5.0  # then the system's row
    unpriced = replace(dgx, usd_per_hour=0.0, accelerator=replace(dgx.accelerator, usd_per_hour=7.0))
    assert usd_per_gpu_hour(unpriced) == 7.0  # a record built without a system price (0.0): the accelerator's
    assert usd_per_gpu_hour(unpriced, 1.25) == 1.25


@pytest.mark.parametrize("explicit, shown", [(0.0, "0"), (-3.0, "-3"), (float("inf"), "inf"), (float("nan"), "nan")])
def test_price_resolver_refuses_non_positive_prices(explicit, shown):
    with pytest.raises(InputError) as e:
        usd_per_gpu_hour(get_system("dgx-h100"), explicit)
    assert str(e.value) == (f"usd per GPU-hour must be > 0 and finite, got {shown}; give a rental price in USD per "
                            "accelerator-hour, e.g. 2.0")


def test_price_resolver_refuses_a_bad_record_price():
    """A record with no usable price (system 0, accelerator 0) or a negative system price is refused, as an
    explicit 0 is (above: an explicit 0 is never replaced by the catalog's price)."""
    dgx = get_system("dgx-h100")
    free = replace(dgx, usd_per_hour=0.0, accelerator=replace(dgx.accelerator, usd_per_hour=0.0))
    with pytest.raises(InputError, match="usd per GPU-hour must be > 0 and finite, got 0"):
        usd_per_gpu_hour(free)
    with pytest.raises(InputError, match="got -1"):
        usd_per_gpu_hour(replace(dgx, usd_per_hour=-1.0))


# --- through the CLI's --json ---------------------------------------------------------------------------------


def test_catalog_accelerators_json_ratio_and_drain(run_cli):
    code, out, err = run_cli("catalog", "accelerators", "--json")
    assert code == 0, err
    rows = {r["id"]: r for r in json.loads(out)}
    for acc_id, tflops, tb_s, gb, r_hand, drain_ms in ROWS:
        assert rows[acc_id]["ratio_bf16"] == pytest.approx(r_hand, abs=0.01), acc_id
        assert rows[acc_id]["drain_time_s"] == pytest.approx(drain_ms * 1e-3, abs=1e-6), acc_id
    for r in rows.values():  # every row: the same two formulas over its own figures
        assert r["drain_time_s"] == pytest.approx(r["hbm_bytes"] / r["hbm_bytes_per_s"], rel=1e-12), r["id"]
        if "bf16" in r["flops_per_s"]:
            assert r["ratio_bf16"] == pytest.approx(r["flops_per_s"]["bf16"] / 2 * 2 / r["hbm_bytes_per_s"]), r["id"]


ACC = TOY_ACCELERATOR_YAML  # an fp8-only accelerator in a user catalog (tests/helpers.py)


def test_user_accelerator_without_bf16(run_cli, tmp_path):
    """A chip listing fp8 only: no bf16 R (null), drain time 100 GB / 4 TB/s = 25 ms."""
    path = tmp_path / "acc.yaml"
    path.write_text(ACC)
    code, out, err = run_cli("--catalog", str(path), "catalog", "accelerators", "--json")
    assert code == 0, err
    toy = next(r for r in json.loads(out) if r["id"] == "toy-chip")
    assert toy["ratio_bf16"] is None and toy["drain_time_s"] == pytest.approx(0.025, rel=1e-12)


SYSTEM = """systems:
  - id: priced-dgx
    name: DGX H100 at a negotiated price
    accelerator: h100-sxm
    chips: 8
    scale_up_latency_us: 3
    scale_out_latency_us: 10
    usd_per_hour: 5.0
    source: test
    date: 2026-01
"""


def test_step_json_price_resolution(run_cli, tmp_path):
    """step --json's usd_per_gpu_hour: the accelerator's price for -a, the system row's for a priced system, the
    explicit flag over both; the $/Mtok follows the resolved price linearly (same step, same tokens)."""
    path = tmp_path / "sys.yaml"
    path.write_text(SYSTEM)
    base = ("step", "-m", "llama-3-8b", "-b", "8", "-c", "1000", "--json")

    def price(*args):
        code, out, err = run_cli("--catalog", str(path), *base, *args)
        assert code == 0, err
        d = json.loads(out)
        return d["usd_per_gpu_hour"], d["usd_per_million_tokens"], d["step_s"]

    acc_p, acc_cost, acc_step = price("-s", "dgx-h100")
    sys_p, sys_cost, sys_step = price("-s", "priced-dgx")
    exp_p, exp_cost, exp_step = price("-s", "priced-dgx", "--usd-per-gpu-hour", "1.25")
    assert (acc_p, sys_p, exp_p) == (get_accelerator("h100-sxm").usd_per_hour, 5.0, 1.25)
    assert acc_step == sys_step == exp_step
    assert sys_cost / acc_cost == pytest.approx(5.0 / acc_p, rel=1e-12)
    assert exp_cost / sys_cost == pytest.approx(1.25 / 5.0, rel=1e-12)
    # by hand: $/Mtok = (step / batch) · GPUs · $/GPU-s · 1e6 (lecture [S 00:12:40])
    assert sys_cost == pytest.approx(sys_step / 8 * 8 * 5.0 / 3600 * 1e6, rel=1e-9)


def test_step_refuses_a_zero_price(run_cli):
    code, _, err = run_cli("step", "-m", "llama-3-8b", "-a", "h100-sxm", "-b", "1", "--usd-per-gpu-hour", "0")
    assert code == 1 and err.count("\n") == 1
    assert err.startswith("error: --usd-per-gpu-hour must be > 0 and <= 1e+06 and finite, got 0;")


def test_engines_size_kv_pools_from_the_memory_the_driver_reports_by_hand():
    """Datasheets round binary capacities: an "80 GB" H100 reports 79.2 GiB = 85.04 GB to torch (device_memory_gib),
    which vLLM's gpu_memory_utilization is a fraction of. Llama 3 8B (bf16, 131,072 B of KV per token) on one H100
    at 0.9: (0.9 * 79.2 * 2^30 - 2 * 8.03e9) / 131,072 = 461,398 tokens; the datasheet's 80e9 B would give 426,788.
    An accelerator without the figure (TPU v5p) keeps its datasheet capacity; the datasheet figure itself is unchanged."""
    from roofline.catalog import accelerator, model, system
    from roofline.layout import Layout
    from roofline.memory import kv_capacity_tokens

    h100 = accelerator("h100-sxm")
    assert h100.hbm_bytes == 80e9 and h100.engine_memory_bytes == 79.2 * 2**30 and h100.device_memory_source
    assert accelerator("tpu-v5p").engine_memory_bytes == accelerator("tpu-v5p").hbm_bytes
    m = model("llama-3-8b")
    weights = 2 * 8.03e9
    got = float(kv_capacity_tokens(m, system("dgx-h100"), Layout(tp=1), usable_memory=0.9))
    per_token = 131072
    expect = (0.9 * 79.2 * 2**30 - weights) / per_token
    assert got == pytest.approx(expect, rel=2e-3) and round(expect) == pytest.approx(461398, abs=5)
    assert got > (0.9 * 80e9 - weights) / per_token * 1.07
    # TensorRT-LLM's fraction of the free memory: usable * (total - weights)
    free = float(kv_capacity_tokens(m, system("dgx-h100"), Layout(tp=1), usable_memory=0.9, of="free"))
    assert free == pytest.approx(0.9 * (79.2 * 2**30 - weights) / per_token, rel=2e-3)
