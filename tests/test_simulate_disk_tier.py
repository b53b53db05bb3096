"""A disk tier behind the host-memory tier (simulate/prefixes.HostTier disk_tokens, HostCache's second level): the
blocks only the disk holds and their slower loads by hand, the sizes from a model and a layout by hand, an identity
under Hypothesis (a disk as fast as host memory behind a host tier of no capacity is a host tier that never fills),
a disk of no capacity changing nothing, and every bad input refused in one line (library, CLI and validation run
keys)."""

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import prefixed_workload
from roofline.catalog import model
from roofline.errors import InputError
from roofline.layout import Layout
from roofline.simulate import ConstantStep, Deployment, Policy, Simulation
from roofline.simulate.metrics import prefix_cache_metrics
from roofline.simulate.prefixes import HostTier, host_tier
from roofline.simulate.workload import chat_sessions

STEP = 0.01
# test_simulate_host_tier.FLAT: request 0 caches prompt A's 8 blocks (128 tokens); request 1 evicts 5 of them from HBM;
# request 2 repeats A
FLAT = dict(arrival=[0, 1, 2], prompt=[130, 200, 130], output=2, pid=[1, -1, 1], shared=[130, 0, 130])


def _run(wl, cap, tier=None, **kw):
    return Simulation(wl, Deployment(ConstantStep(STEP), kv_capacity_tokens=cap), Policy("continuous"),
                      host_tier=tier, **kw).run()


def test_disk_tier_serves_what_host_memory_evicted_by_hand():
    """A host tier of 4 blocks keeps A's first 4 (its tail was evicted as A was written through); a disk of 1,000
    tokens keeps all 8. Request 2 hits all 8 blocks: 3 in HBM, block 3 loaded from host memory, blocks 4-7 (64 tokens)
    from disk. Host memory loads at 1 ms a token, the disk at 5 ms: 80 x 1 ms + 64 x (5 - 1) ms = 336 ms.
    Synchronous: its pass takes 10 + 336 ms; asynchronous: its pass starts 336 ms after its arrival. Without the disk
    it hits 4 blocks (test_simulate_host_tier)."""
    wl = prefixed_workload(**FLAT)
    sync = _run(wl, 250.0, HostTier(64, 1e-3, sync=True, disk_tokens=1000, disk_s_per_token=5e-3))
    assert sync.prefix_hit_tokens.tolist() == [0, 0, 128] and sync.host_hit_tokens.tolist() == [0, 0, 80]
    assert sync.host_loaded_tokens == 80 and sync.disk_loaded_tokens == 64
    assert sync.host_load_s == pytest.approx(0.336) and sync.seg_t0_s[4] == pytest.approx(STEP + 0.336)
    assert sync.first_token_s[2] == pytest.approx(2.0 + STEP + 0.336)
    assert sync.disk_capacity_blocks == 62 and sync.disk_cached_blocks == 8 and sync.disk_evictions == 0
    assert sync.host_cached_blocks == 4 and sync.host_evictions == 8  # A's tail written and evicted twice
    a = _run(wl, 250.0, HostTier(64, 1e-3, disk_tokens=1000, disk_s_per_token=5e-3))
    assert a.seg_start_s[4] == pytest.approx(2.336) and a.first_token_s[2] == pytest.approx(2.346)
    assert a.host_load_s == pytest.approx(0.336)
    m = prefix_cache_metrics(a)
    assert m["disk_loaded_tokens"] == 64 and m["disk_cached_blocks"] == 8 and m["disk_evictions"] == 0
    assert "disk_loaded_tokens" not in prefix_cache_metrics(_run(wl, 250.0, HostTier(64, 1e-3)))
    small = _run(wl, 250.0, HostTier(64, 1e-3, sync=True, disk_tokens=96, disk_s_per_token=5e-3))
    # a disk of 6 blocks kept A's first 6: request 2 hits 3 in HBM, 1 from host memory, 2 (32 tokens) from disk
    assert small.prefix_hit_tokens.tolist() == [0, 0, 96] and small.disk_loaded_tokens == 32
    assert small.host_load_s == pytest.approx(48e-3 + 32 * 4e-3) and small.disk_evictions == 4


def test_disk_tier_sizes_by_hand():
    """Llama 3.1 8B (131,072 B a token) at TP 2: a GiB of disk holds 8,192 tokens (the group's whole KV: 2 x 65,536 B),
    and the drive, shared by the two GPUs, reads a token's 131,072 B at 14 GB/s."""
    t = host_tier(model("llama-3.1-8b"), Layout(tp=2), "bf16", 1.0, 53e9, disk_gib=2.0, disk_bytes_per_s=14e9)
    assert t.disk_tokens == pytest.approx(16384) and t.disk_s_per_token == pytest.approx(131072 / 14e9)
    assert t.load_s_per_token == pytest.approx(65536 / 53e9)
    assert host_tier(model("llama-3.1-8b"), Layout(tp=2), "bf16", 1.0, 53e9).disk_tokens == 0
    for bad, match in ((dict(disk_gib=-1.0), "disk KV tier size"), (dict(disk_gib=1.0), "disk KV tier read rate"),
                       (dict(disk_gib=1.0, disk_bytes_per_s=float("inf")), "disk KV tier read rate")):
        with pytest.raises(InputError, match=match):
            host_tier(model("llama-3.1-8b"), Layout(tp=1), "bf16", 1.0, 53e9, **bad)
    with pytest.raises(InputError, match="disk_tokens must be a finite number >= 0"):
        HostTier(10, 0.0, disk_tokens=-1)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 16]), st.booleans())
def test_a_disk_as_fast_as_host_memory_is_more_host_memory(seed, block, sync):
    """Chat sessions with system prompts in a small pool: a host tier of no capacity with a never-full disk that reads
    at host memory's rate gives the trace of a host tier that never fills (every time, hit and load), and its disk
    served every loaded token. A disk of no capacity gives the trace of none."""
    wl = chat_sessions(np.random.default_rng(seed), 60, 6, 4, 0.5, prompt_tokens=40, output_tokens=20, sigma=0.5,
                       max_context=2000, shared_prefix_tokens=64, prefix_groups=3)
    dep = Deployment(ConstantStep(STEP), kv_capacity_tokens=900.0)
    big = Simulation(wl, dep, Policy("continuous"), block_tokens=block, host_tier=HostTier(1e9, 1e-4, sync)).run()
    disk = Simulation(wl, dep, Policy("continuous"), block_tokens=block,
                      host_tier=HostTier(0, 1e-4, sync, disk_tokens=1e9, disk_s_per_token=1e-4)).run()
    for f in ("finish_s", "first_token_s", "prefix_hit_tokens", "host_hit_tokens", "seg_t0_s"):
        assert np.array_equal(getattr(big, f), getattr(disk, f)), f
    assert disk.host_load_s == big.host_load_s and disk.disk_loaded_tokens == disk.host_loaded_tokens
    none = Simulation(wl, dep, Policy("continuous"), block_tokens=block,
                      host_tier=HostTier(300, 1e-4, sync, disk_tokens=0, disk_s_per_token=1.0)).run()
    plain = Simulation(wl, dep, Policy("continuous"), block_tokens=block, host_tier=HostTier(300, 1e-4, sync)).run()
    for f in dataclasses.fields(plain):
        x, y = getattr(none, f.name), getattr(plain, f.name)
        assert (np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y), f.name


CLI = ("simulate", "-m", "llama-3.1-8b", "-s", "dgx-h100", "--gpus", "1", "-n", "300", "--rate", "2",
       "--prompt-pool", "60", "--lengths", "fixed", "--prompt-tokens", "3000", "--output-tokens", "20",
       "--kv-memory-fraction", "0.22", "--json")


def test_cli_reports_the_disk_tier(run_cli):
    """60 prompts of 3,000 tokens (180,000 tokens of Llama 3.1 8B, 22 GiB) against about 20,000 tokens of HBM: a
    4 GiB host tier (32,768 tokens) keeps few of them, a 64 GiB disk behind it all; the disk's loads are priced at its
    read rate and its memory at the tier row's price."""
    code, out, err = run_cli(*CLI, "--kv-offload-gib", "4")
    assert code == 0, err
    host = json.loads(out)
    code, out, err = run_cli(*CLI, "--kv-offload-gib", "4", "--kv-disk-gib", "64", "--kv-disk-gb-per-s", "10")
    assert code == 0, err
    d = json.loads(out)
    assert "disk_loaded_tokens" not in host and d["disk_loaded_tokens"] > 0.5 * d["host_loaded_tokens"]
    assert d["prefix_hit_rate"] > host["prefix_hit_rate"] and d["disk_evictions"] == 0
    want = (d["host_loaded_tokens"] * 131072 / 53e9 + d["disk_loaded_tokens"] * (131072 / 10e9 - 131072 / 53e9))
    assert d["host_load_s"] == pytest.approx(want)
    from roofline.catalog.prices import memory_tier

    assert d["disk_tier_row"] == "flash-gen6"
    assert d["disk_tier_usd_per_hour"] == pytest.approx(64 * 2**30 * memory_tier("flash-gen6").usd_per_byte_s * 3600)
    code, out, err = run_cli(*CLI, "--kv-offload-gib", "4", "--kv-disk-gib", "64")  # the row's 28 GB/s
    dd = json.loads(out)
    assert dd["host_load_s"] == pytest.approx(dd["host_loaded_tokens"] * 131072 / 53e9
                                              + dd["disk_loaded_tokens"] * (131072 / 28e9 - 131072 / 53e9))


@pytest.mark.parametrize("extra, match", [
    (("--kv-disk-gib", "64"), "add --kv-offload-gib"),
    (("--kv-disk-gb-per-s", "5"), "add --kv-offload-gib"),
    (("--kv-offload-gib", "4", "--kv-disk-gb-per-s", "5"), "add --kv-disk-gib"),
    (("--kv-offload-gib", "4", "--kv-disk-gib", "8", "--kv-disk-tier", "ddr-dgx-h100"), "flash or disk row"),
    (("--kv-offload-gib", "4", "--kv-disk-gib", "-1"), "kv-disk-gib"),
    (("--kv-offload-gib", "4", "--kv-disk-gib", "8", "--kv-disk-tier", "nope"), "tier"),
])
def test_cli_refuses_bad_disk_tiers_in_one_line(run_cli, extra, match):
    code, out, err = run_cli(*CLI, *extra)
    assert code != 0 and match in err and len(err.strip().splitlines()) == 1


def test_validation_run_key_disk_tier():
    from roofline.validate import serving as S

    run = {"id": "x", "engine": "vllm", "model": "llama-3.1-8b", "system": "dgx-h100", "gpus": 1, "replicas": 1,
           "rate": 1.0, "requests": 24, "dataset": "d", "policy": "chunked", "max_seqs": 64, "max_batched_tokens": 2048,
           "weights_dtype": "bf16", "kv_dtype": "bf16", "metrics": ["ttft_mean"]}
    t = S.host_tier_of({**run, "kv_offload": {"gib": 4, "disk_gib": 2, "disk_gb_per_s": 14}})
    assert t.disk_tokens == pytest.approx(2 * 8192) and t.disk_s_per_token == pytest.approx(131072 / 14e9)
    for bad in ({"gib": 4, "disk_gib": 2}, {"gib": 4, "disk_gb_per_s": 2}, {"gib": 4, "disk_gib": 0, "disk_gb_per_s": 2}):
        with pytest.raises(InputError, match="both or neither"):
            S.host_tier_of({**run, "kv_offload": bad})
