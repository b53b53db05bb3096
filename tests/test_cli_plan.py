"""`roofline plan` and `roofline step --tp/--ep/--pp/--dp`: JSON keys, tables, one-line errors."""

import json

import pytest

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
    assert "tok/s/GPU" in out and "rejected validity" in out  # the table and its rejection lines render


def test_plan_json_deepseek_racks(run_cli):
    """The same plan through --json. Every layout's EP divides DeepSeek-V3's 256 routed experts plus its redundant
    copies (EP 72, a whole NVL72, needs R = −256 mod 72 = 32 copies: 288 slots, 4 per GPU, DeepSeek's EPLB; the
    frontier uses whole racks that way instead of EP 64 with 8 GPUs idle), its
    replicas fill the racks (replicas = floor(72·domains / GPUs per replica), GPUs per replica = TP·PP·DP),
    tokens/s per user is 1/TPOT, and the planner's funnel adds up: feasible = structurally valid − too few
    sequences − no room on the domains − out of memory − missed targets; the frontier rows are the layouts."""
    code, out, err = run_cli("plan", "-m", "deepseek-v3", "-s", "gb200-nvl72", "--domains", "1-4", "--json")
    assert code == 0, err
    d = json.loads(out)
    experts, rack = 256, 72
    rows = d["layouts"]
    assert d["domains"] == [1, 2, 3, 4] and rows
    assert all((experts + r["redundant_experts"]) % r["ep"] == 0 for r in rows)
    assert all(r["redundant_experts"] == -experts % r["ep"] for r in rows if r["ep"] > 1)
    assert any(r["ep"] == rack and r["redundant_experts"] == 32 for r in rows)
    for r in rows:
        assert r["gpus"] == r["tp"] * r["pp"] * r["dp"]
        assert r["replicas"] == rack * r["domains"] // r["gpus"]
        assert r["tokens_per_s_per_user"] == pytest.approx(1 / r["tpot_s"], rel=1e-9)
    c = d["counts"]
    assert c["feasible"] == (c["structurally_valid_layouts"] - c["too_few_sequences"] - c["no_room_on_domains"]
                             - c["out_of_memory"] - c["miss_target"])
    assert c["pareto"] == len(rows) and c["candidates"] >= c["structurally_valid_layouts"]
    assert any(x.startswith("validity: EP 72 does not divide deepseek-v3's 256 expert") for x in d["rejected"])


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
    assert err.strip() == ("error: EP 72 does not divide deepseek-v3's 256 expert slots (256 experts + 0 redundant); "
                           "use EP 64 (4 experts per GPU, 8 of 72 GPUs idle) or --redundant-experts 32 (4 slots per "
                           "GPU, hot experts copied)")


def test_step_parallel_table(run_cli):
    code, out, err = run_cli("step", "-m", "llama-3-70b", "-s", "dgx-h100", "--tp", "8", "-b", "16", "-c", "2000")
    assert code == 0, err
    assert "tp comm" in out  # the table renders its communication rows


def test_step_parallel_layout_json(run_cli):
    """step --tp 8 through --json: the layout echoed, a TP all-reduce and nothing else on the network (EP, PP
    and DP are 1), the communication total is its parts, and the 8 GPUs are one replica."""
    code, out, err = run_cli("step", "-m", "llama-3-70b", "-s", "dgx-h100", "--tp", "8", "-b", "16", "-c", "2000",
                             "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["layout"] == "TP8 EP1 PP1 DP1" and d["gpus"] == 8
    assert d["tp_comm_s"] > 0 and d["ep_comm_s"] == 0 and d["pp_comm_s"] == 0
    assert d["comm_s"] == pytest.approx(d["tp_comm_s"] + d["ep_comm_s"] + d["pp_comm_s"], rel=1e-12)
