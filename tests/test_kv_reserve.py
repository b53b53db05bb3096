"""vLLM's profiled activation peak, kept out of its KV pool (memory.vllm_profile_peak_bytes, simulate --kv-reserve)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.catalog import model
from roofline.errors import InputError
from roofline.layout import Layout
from roofline.memory import kv_reserve_bytes, vllm_profile_peak_bytes

GIB = 2.0**30


def test_vllm_profile_peak_by_hand_and_against_logged_peaks():
    """Llama-3-8B (d 4,096, vocab 128,256, d_ff 14,336) at T 8,192 tokens and S 256 sequences, the sort path: the
    sampler's 38 x 256 x 128,256 = 1,247,674,368 bytes plus the [T, d] hidden state 8,192 x 4,096 x 2 = 67,108,864
    -> 1,314,783,232 (1.224 GiB; vLLM PR #10511's log of this launch on an H100: 1.26 GiB, -2.8%); the dense
    forward 8,192 x 2 x (2 x 4,096 + 3 x 14,336) = 838,860,800 is smaller. With 8 sequences FlashInfer's sampler
    (14 x 8 x 128,256 + 67,108,864 = 81,473,536) falls below the forward, which sets the peak; at TP 2 the MLP's
    share halves: 8,192 x 2 x (8,192 + 21,504) = 486,539,264. Qwen3-235B-A22B at TP 4 with EP 4 (experts whole:
    te = 1), T 2,048, S 256, sort: 38 x 256 x 151,936 + 2,048 x 4,096 x 2 = 1,494,810,624 (1.392 GiB; a public
    vLLM 0.10.2 log of this launch on L40S: 1.40 GiB); its forward, 2,048 x 2 x 8,192 + 2,048 x 8 x 2 x (4,096 +
    1,536) + 2,048 x 128 x 2 = 218,628,096, is smaller."""
    llama, qwen = model("llama-3-8b"), model("qwen3-235b-a22b")
    one = Layout(tp=1)
    assert vllm_profile_peak_bytes(llama, one, 8192, 256, sampler="sort") == 1_314_783_232
    assert 1_314_783_232 / (1.26 * GIB) == pytest.approx(0.972, abs=1e-3)
    assert vllm_profile_peak_bytes(llama, one, 8192, 8, sampler="flashinfer") == 838_860_800
    assert vllm_profile_peak_bytes(llama, Layout(tp=2), 8192, 8, sampler="flashinfer") == 486_539_264
    assert vllm_profile_peak_bytes(qwen, Layout(tp=4, ep=4), 2048, 256, sampler="sort") == 1_494_810_624
    # S is at most T: a budget of 128 tokens profiles 128 sequences whatever max_seqs says
    assert (vllm_profile_peak_bytes(llama, one, 128, 1024, sampler="flashinfer")
            == vllm_profile_peak_bytes(llama, one, 128, 128, sampler="flashinfer") == 14 * 128 * 128256 + 128 * 4096 * 2)
    with pytest.raises(InputError, match="vLLM sampler must be one of flashinfer, sort, got 'topk'"):
        vllm_profile_peak_bytes(llama, one, 8192, 256, sampler="topk")


def test_kv_reserve_by_name_or_gib():
    """A number is GiB per GPU; `vllm` takes the sort path on the V0 rows and FlashInfer's sampler on the others."""
    llama, one = model("llama-3-8b"), Layout(tp=1)
    assert kv_reserve_bytes(2.5, llama, one) == 2.5 * GIB and kv_reserve_bytes("none", llama, one) == 0.0
    sort = vllm_profile_peak_bytes(llama, one, 8192, 1024, sampler="sort")
    fi = vllm_profile_peak_bytes(llama, one, 8192, 1024, sampler="flashinfer")
    assert fi == 14 * 1024 * 128256 + 67_108_864 < sort
    for engine, want in (("vllm-v0", sort), ("vllm-v0.5", sort), ("vllm", fi), ("vllm-v1-sync", fi)):
        assert kv_reserve_bytes("vllm", llama, one, engine=engine, max_batched_tokens=8192, max_seqs=1024) == want
    assert kv_reserve_bytes("vllm-sort", llama, one, engine="vllm", max_batched_tokens=8192, max_seqs=1024) == sort
    for bad in ("vllm-topk", -1.0, True):
        with pytest.raises(InputError, match="KV reserve must be a number of GiB >= 0 or one of none, vllm"):
            kv_reserve_bytes(bad, llama, one)


def test_simulate_kv_reserve_shrinks_the_pool_by_hand(run_cli):
    """simulate --kv-reserve: Llama-3.1-8B on one H100 (bf16 KV: 131,072 bytes a token) keeps the reserve out of the
    pool: 1.5 GiB -> 1,610,612,736 / 131,072 = 12,288 tokens fewer; `vllm` at the default 8,192 tokens and 256
    sequences on row vllm keeps the forward's 838,860,800 bytes (FlashInfer's sampler: 527,179,776) -> 6,400 fewer,
    which the table shows as 0.78 GiB. A bad value is one line and exit code 2."""
    import json

    base = ["simulate", "-m", "llama-3.1-8b", "-s", "dgx-h100", "--gpus", "1", "--realistic", "--engine", "vllm",
            "--rate", "5", "--requests", "20", "--json"]
    plain, gib, own = (json.loads(run_cli(*base, *extra)[1]) for extra in ((), ("--kv-reserve", "1.5"),
                                                                          ("--kv-reserve", "vllm")))
    assert "kv_reserve" not in plain
    assert plain["kv_capacity_tokens"] - gib["kv_capacity_tokens"] == pytest.approx(12288, abs=1e-6)
    assert own["kv_reserve"] == "vllm" and own["kv_reserve_bytes"] == 838_860_800
    assert plain["kv_capacity_tokens"] - own["kv_capacity_tokens"] == pytest.approx(6400, abs=1e-6)
    table = run_cli(*base[:-1], "--kv-reserve", "vllm")[1]
    assert "KV pool / kept from it per GPU (--kv-reserve vllm)" in table and "0.78 GiB" in table
    code, out, err = run_cli(*base, "--kv-reserve", "vlm")
    assert code == 2 and not out and "--kv-reserve must be a number of GiB >= 0 or one of none, vllm" in err
    assert len(err.strip().splitlines()) == 1


def test_serving_run_key_kv_reserve():
    """A serving run's `kv_reserve` sizes its deployment's pool as the flag does; a bad one names the run."""
    from roofline.validate.serving import deployment_for

    run = dict(id="r", engine="vllm", model="llama-3.1-8b", system="dgx-h100", gpus=1, weights_dtype="bf16",
               kv_dtype="bf16", max_batched_tokens=8192, max_seqs=256)
    plain, kept = deployment_for(run), deployment_for({**run, "kv_reserve": "vllm"})
    assert kept.kv_reserve_bytes == 838_860_800 and plain.kv_reserve_bytes == 0.0
    assert plain.kv_capacity_tokens - kept.kv_capacity_tokens == pytest.approx(6400, abs=1e-6)
    with pytest.raises(InputError, match="serving run 'r': KV reserve must be a number of GiB >= 0"):
        deployment_for({**run, "kv_reserve": "lots"})



@settings(max_examples=200, deadline=None)
@given(st.integers(0, 1), st.integers(1, 65536), st.integers(1, 65536), st.integers(1, 4096), st.integers(1, 4096),
       st.sampled_from([1, 2, 4, 8]), st.sampled_from(["flashinfer", "sort"]))
def test_vllm_profile_peak_grows_with_the_budget_and_the_sequences(which, t1, t2, s1, s2, tp, sampler):
    """Property: the peak never falls as the token budget T or the sequence limit S grows, never rises with TP, and is
    at least the sampler's k·min(S, T)·V; FlashInfer's sampler never needs more than the sort path."""
    m = model(("llama-3-8b", "qwen3-235b-a22b")[which])
    lo_t, hi_t, lo_s, hi_s = min(t1, t2), max(t1, t2), min(s1, s2), max(s1, s2)

    def lay(n):
        return Layout(tp=n, ep=n) if m.moe else Layout(tp=n)

    peak = vllm_profile_peak_bytes(m, lay(tp), lo_t, lo_s, sampler=sampler)
    assert peak <= vllm_profile_peak_bytes(m, lay(tp), hi_t, lo_s, sampler=sampler)
    assert peak <= vllm_profile_peak_bytes(m, lay(tp), lo_t, hi_s, sampler=sampler)
    assert peak >= vllm_profile_peak_bytes(m, lay(8), lo_t, lo_s, sampler=sampler)
    assert peak >= {"flashinfer": 14, "sort": 38}[sampler] * min(lo_s, lo_t) * m.vocab
    assert (vllm_profile_peak_bytes(m, lay(tp), lo_t, lo_s, sampler="flashinfer")
            <= vllm_profile_peak_bytes(m, lay(tp), lo_t, lo_s, sampler="sort"))


def test_kv_reserve_per_data_parallel_rank():
    """Under attention data parallelism each rank is its own vLLM engine and profiles its share of the replica's token
    budget and sequences: a DP-2 replica of 4,096 tokens and 256 sequences reserves what one engine of 2,048 and 128
    does (Qwen3-30B-A3B with EP 2: FlashInfer's sampler 14 x 128 x 151,936 + 2,048 x 2,048 x 2 = 280,657,920 bytes)."""
    m = model("qwen3-30b-a3b")
    dp2 = kv_reserve_bytes("vllm", m, Layout(dp=2, ep=2), engine="vllm", max_batched_tokens=4096, max_seqs=256)
    one = vllm_profile_peak_bytes(m, Layout(dp=2, ep=2), 2048, 128, sampler="flashinfer")
    assert dp2 == one == 14 * 128 * 151936 + 2048 * 2048 * 2 == 280_657_920
