"""`roofline plan` and `roofline step --tp/--ep/--pp/--dp`: JSON keys, tables, one-line errors."""

import json

PLAN_KEYS = ["tp", "ep", "pp", "dp", "batch", "tokens_per_s_per_gpu", "tokens_per_s_per_user",
             "usd_per_million_tokens", "ttft_s", "tpot_s", "memory_per_gpu_bytes", "pareto"]


def test_plan_json_llama_dgx_h100(run_cli):
    code, out, err = run_cli("plan", "-m", "llama-3-70b", "-s", "dgx-h100", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["layouts"] and all(k in d["layouts"][0] for k in PLAN_KEYS)
    assert all(r["pareto"] for r in d["layouts"])


def test_plan_realistic_json_and_conflict(run_cli):
    code, out, err = run_cli("plan", "-m", "llama-3-70b", "-s", "dgx-h100", "--realistic", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["realistic"] is True and d["layouts"]
    code, out, err = run_cli("plan", "-m", "llama-3-70b", "-s", "dgx-h100", "--json")
    pure = json.loads(out)
    best = lambda x: max(r["tokens_per_s_per_gpu"] for r in x["layouts"])  # noqa: E731
    assert best(d) < best(pure)
    code, _, err = run_cli("plan", "-m", "llama-3-70b", "-s", "dgx-h100", "--realistic", "--compute-efficiency", "0.5")
    assert code == 1 and "realistic planning uses the efficiency model's own factors" in err


def test_plan_table_deepseek_racks(run_cli):
    code, out, err = run_cli("plan", "-m", "deepseek-v3", "-s", "gb200-nvl72", "--domains", "1-4")
    assert code == 0, err
    assert "tok/s/GPU" in out and "EP64" in out and "rejected validity: EP 72 does not divide" in out


def test_plan_impossible_target_is_one_line_error(run_cli):
    code, out, err = run_cli("plan", "-m", "llama-3-70b", "-s", "dgx-h100", "--tpot-ms", "0.01")
    assert code == 1 and err.startswith("error: no layout of llama-3-70b") and "relax the targets" in err


def test_plan_nonpositive_target_is_a_bad_value(run_cli):
    import pytest

    from roofline.errors import InputError
    from roofline.planner import Targets

    code, _, err = run_cli("plan", "-m", "llama-3-70b", "-s", "dgx-h100", "--tpot-ms", "-1")
    assert code == 1 and err.startswith("error: --tpot-ms must be > 0 and finite, got -1;")
    with pytest.raises(InputError, match="target ttft_s must be > 0"):
        Targets(ttft_s=0.0)


def test_plan_bad_domains(run_cli):
    code, _, err = run_cli("plan", "-m", "llama-3-70b", "-s", "dgx-h100", "--domains", "two")
    assert code == 1 and "error: --domains 'two' is not N, A-B or a comma list" in err


def test_step_parallel_json_keys(run_cli):
    code, out, err = run_cli("step", "-m", "deepseek-v3", "-s", "gb200-nvl72", "--tp", "1", "--ep", "64", "--dp", "64",
                             "-b", "2048", "-c", "4096", "--weights-dtype", "fp8", "--kv-dtype", "fp8", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["comm_s"] > 0 and isinstance(d["memory_per_gpu_bytes"], float)
    parts = d["memory_per_gpu_parts_bytes"]
    assert set(parts) == {"weights", "kv", "activations"}
    assert sum(parts.values()) == d["memory_per_gpu_bytes"]


def test_step_without_layout_keeps_number_and_adds_parts(run_cli):
    code, out, err = run_cli("step", "-m", "llama-3-70b", "-s", "dgx-h100", "-b", "8", "--json")
    d = json.loads(out)
    assert code == 0 and d["comm_s"] == 0.0 and isinstance(d["memory_per_gpu_bytes"], float)
    assert sum(d["memory_per_gpu_parts_bytes"].values()) == d["memory_per_gpu_bytes"]


def test_step_bad_ep_message(run_cli):
    code, _, err = run_cli("step", "-m", "deepseek-v3", "-s", "gb200-nvl72", "--ep", "72", "--dp", "72", "-b", "2048")
    assert code == 1
    assert err.strip() == ("error: EP 72 does not divide deepseek-v3's 256 experts; use EP 64 "
                           "(4 experts per GPU, 8 of 72 GPUs idle)")


def test_step_parallel_table(run_cli):
    code, out, err = run_cli("step", "-m", "llama-3-70b", "-s", "dgx-h100", "--tp", "8", "-b", "16", "-c", "2000")
    assert code == 0, err
    assert "tp comm" in out and "TP8 EP1 PP1 DP1" in out
