"""`roofline train` / `roofline overtrain` through the CLI: JSON keys, numbers, exact error messages."""

import json

import pytest


def test_train_json(run_cli):
    code, out, err = run_cli("train", "-m", "llama-3.1-405b", "-s", "dgx-h100", "--tp", "8", "--pp", "16",
                             "--dp", "128", "--seq", "8192", "--global-batch", "2048", "--schedule", "interleaved",
                             "--virtual-stages", "2", "--zero", "2", "--recompute", "none", "--tokens", "15.6e12",
                             "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["gpus"] == 16384 and d["layout"]["micro_batches"] == 16
    assert d["bubble_fraction"] == pytest.approx(15 / 47)
    assert d["model_tflops_per_gpu"] == pytest.approx(400, rel=0.15)  # Llama 3 Table 4
    assert d["gpu_hours"] == pytest.approx(d["time_to_train_s"] * 16384 / 3600)
    m = d["memory_by_recompute"]
    assert m["none"] >= m["selective"] >= m["full"]
    # without sequence parallelism every TP rank runs the d-wide norms and residual adds: more elementwise time
    code, out, err = run_cli("train", "-m", "llama-3.1-405b", "-s", "dgx-h100", "--tp", "8", "--dp", "2",
                             "--global-batch", "8", "--seq", "4096", "--json", "--no-sequence-parallel")
    assert code == 0, err
    code, out2, err = run_cli("train", "-m", "llama-3.1-405b", "-s", "dgx-h100", "--tp", "8", "--dp", "2",
                              "--global-batch", "8", "--seq", "4096", "--json")
    assert json.loads(out)["elementwise_s"] > 2 * json.loads(out2)["elementwise_s"] > 0
    # unfused attention with dropout (Megatron 2021's path): the softmax and dropout traffic over the s²
    # scores adds elementwise time, and the stored scores and masks add activation memory
    code, out3, err = run_cli("train", "-m", "llama-3.1-405b", "-s", "dgx-h100", "--tp", "8", "--dp", "2",
                              "--global-batch", "8", "--seq", "4096", "--json", "--no-flash-attention", "--dropout")
    assert code == 0, err
    base, unfused = json.loads(out2), json.loads(out3)
    assert unfused["elementwise_s"] > base["elementwise_s"]
    assert unfused["memory"]["activations_bytes"] > base["memory"]["activations_bytes"]
    assert unfused["compute_s"] == pytest.approx(base["compute_s"])


def test_train_table(run_cli):
    code, out, err = run_cli("train", "-m", "llama-3-8b", "-s", "dgx-h100", "--dp", "8", "--global-batch", "64")
    assert code == 0, err
    assert "pipeline bubble" in out and "memory per GPU by recomputation mode" in out


@pytest.mark.parametrize("args,phrase", [
    (("--global-batch", "100", "--dp", "3"), "must be a multiple of dp·micro-batch = 3"),
    (("--tp", "16"), "TP 16 exceeds the 8 GPUs of one dgx-h100 scale-up domain"),
    (("--recompute", "sometimes"), "recompute must be one of none, selective, full, reversible"),
    (("--schedule", "zigzag"), "schedule must be one of gpipe, 1f1b, interleaved"),
    (("--zero", "5"), "--zero must be a whole number between 0 and 3, got 5"),
])
def test_train_errors(run_cli, args, phrase):
    code, out, err = run_cli("train", "-m", "llama-3-8b", "-s", "dgx-h100", *args)
    assert code == 1
    assert phrase in err and err.startswith("error: ")


def test_train_needs_system(run_cli):
    code, _, err = run_cli("train", "-m", "llama-3-8b")
    assert code == 1 and "no hardware given" in err


def test_overtrain_json(run_cli):
    code, out, err = run_cli("overtrain", "--params", "1e11", "--traffic", "5e7", "--lifetime-days", "60",
                             "--target-loss", "2.0", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["inference_tokens"] == pytest.approx(2.592e14)
    assert d["pretrain_tokens"] / d["rl_tokens"] == pytest.approx(1.5)
    assert d["overtraining"] == pytest.approx(129.6)
    assert d["optimum"]["cost_opt_flops"] <= d["optimum"]["cost_chinchilla_flops"]


def test_overtrain_errors(run_cli):
    code, _, err = run_cli("overtrain", "--eta-inf", "0")
    assert code == 1 and "--eta-inf must be > 0" in err
    code, _, err = run_cli("overtrain", "--target-loss", "1.5")
    assert code == 1 and "irreducible loss" in err


def test_train_tp_must_divide_heads(run_cli):
    code, _, err = run_cli("train", "-m", "llama-3-70b", "-s", "dgx-h100", "--tp", "3")
    assert code == 1 and "error: TP 3 does not divide llama-3-70b's 64 attention heads; use TP in [1, 2, 4, 8]" in err


def test_train_moe_tp_by_hand(run_cli):
    """Mixtral 8x7B on 8 H100, TP 2 x DP 4 with EP 4: by default each routed expert is sliced over TP (moe_tp 2),
    one expert group of 2·4 = 8 GPUs, no expert replica to synchronise. --moe-tp 1: groups of 4 GPUs, each expert
    held whole by one GPU and replicated on 2·4/4 = 2 groups, so its gradients are all-reduced over 2 ranks 4
    GPUs apart — 2·N_expert/4 bytes per GPU (bf16 gradients) on NVLink; the MoE TP all-reduce disappears."""
    import json

    import pytest

    from roofline import network as NET
    from roofline.catalog import get_catalog
    from roofline.efficiency import realistic
    from roofline.engine import tiers
    from roofline.layout import Layout
    from roofline.memory import params_per_gpu

    base = ["train", "-m", "mixtral-8x7b", "-s", "dgx-h100", "--tp", "2", "--ep", "4", "--dp", "4",
            "--global-batch", "64", "--json"]
    a, b = (json.loads(run_cli(*base, *extra)[1]) for extra in ((), ("--moe-tp", "1")))
    m, s = get_catalog().model("mixtral-8x7b"), get_catalog().system("dgx-h100")
    lay = Layout(tp=2, ep=4, dp=4, expert_tp=1)
    eff = realistic(s.accelerator, "bf16", "mid")
    up, out = tiers(s, eff)
    _, expert = params_per_gpu(m, lay)
    extra = NET.ring_all_reduce_s(float(expert) * 2.0, 2, up.bytes_per_s, up.latency_s, up.efficiency)
    assert b["dp_comm_s"] - a["dp_comm_s"] == pytest.approx(float(extra) * (1 - eff.overlap_dp), rel=1e-9)
    assert b["tp_comm_s"] < a["tp_comm_s"] and b["ep_comm_s"] == pytest.approx(a["ep_comm_s"])
    code, _, err = run_cli(*base, "--moe-tp", "3")
    assert code == 1 and len(err.strip().splitlines()) == 1
