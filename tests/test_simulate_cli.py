"""`roofline simulate`: JSON keys, tables, traces and one-line errors (exit 1) through the CLI."""

import json

from roofline.simulate.workload import sample_trace_path

KEYS = ["requests", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "throughput_tokens_per_s",
        "goodput_requests_per_s", "usd_per_million_tokens"]


def test_json_has_documented_keys(run_cli):
    code, out, err = run_cli("simulate", "-m", "llama-3-70b", "-s", "dgx-h100", "-n", "300", "--rate", "5", "--json")
    assert code == 0, err
    d = json.loads(out)
    for k in KEYS:
        assert k in d, k
    assert d["requests"] == 300 and d["ttft_p50_s"] > 0 and d["tpot_p99_s"] >= d["tpot_p50_s"]


def test_policies_trace_and_plots(run_cli, tmp_path):
    for extra in (["--policy", "train", "--interval-s", "0.05"], ["--policy", "chunked", "--spec-gamma", "3"],
                  ["--policy", "disaggregated"], ["--policy", "static", "--fast-fraction", "0.5"]):
        code, out, err = run_cli("simulate", "-m", "llama-3-8b", "-a", "h100-sxm", "-n", "120", "--json", *extra)
        assert code == 0, (extra, err)
    code, out, err = run_cli("simulate", "-m", "llama-3-70b", "-s", "dgx-h100", "--trace", str(sample_trace_path()),
                             "--plot", str(tmp_path))
    assert code == 0, err
    assert "requests" in out and "200" in out
    assert {p.name for p in tmp_path.iterdir()} >= {"latency.png", "occupancy.png", "timeline.png"}


def test_errors_are_one_line(run_cli, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("arrival_s,prompt_tokens,output_tokens\n0.0,10,5\n1.0,-3,5\n")
    code, _, err = run_cli("simulate", "-m", "llama-3-70b", "-s", "dgx-h100", "--trace", str(bad))
    assert code == 1 and "line 3: prompt_tokens = -3" in err
    bad.write_text("arrival_s,prompt_tokens,output_tokens\n2.0,10,5\n1.0,3,5\n")
    code, _, err = run_cli("simulate", "-m", "llama-3-70b", "-s", "dgx-h100", "--trace", str(bad))
    assert code == 1 and "line 3: arrival_s = 1 is earlier than the previous row" in err
    bad.write_text("arrival_s,prompt_tokens,output_tokens\n0.0,abc,5\n")
    code, _, err = run_cli("simulate", "-m", "llama-3-70b", "-s", "dgx-h100", "--trace", str(bad))
    assert code == 1 and "line 2: a field is not a number" in err
    bad.write_text("arrival_s,prompt_tokens\n0.0,5\n")
    code, _, err = run_cli("simulate", "-m", "llama-3-70b", "-s", "dgx-h100", "--trace", str(bad))
    assert code == 1 and "header lacks column(s) output_tokens" in err
    code, _, err = run_cli("simulate", "-m", "llama-3-70b", "-s", "dgx-h100", "--max-seqs", "0")
    assert code == 1 and "--max-seqs must be a whole number >= 1" in err
    code, _, err = run_cli("simulate", "-m", "llama-3-70b", "-s", "dgx-h100", "--policy", "fifo")
    assert code == 1 and "--policy must be one of continuous, chunked, static, train, disaggregated, got 'fifo'" in err
    code, _, err = run_cli("simulate", "-m", "llama-3.1-405b", "-a", "h100-sxm", "-g", "1")
    assert code == 1 and "leave no KV memory" in err
    code, _, err = run_cli("simulate", "-m", "llama-3-70b", "-s", "dgx-h100", "--rate", "0")
    assert code == 1 and "--rate must be > 0" in err


def test_extreme_workload_parameters_are_one_line_errors(run_cli):
    code, _, err = run_cli("simulate", "-m", "llama-3-8b", "-s", "dgx-h100", "-n", "50", "--arrivals", "gamma",
                           "--cv", "1e-300")
    assert code == 1 and "--cv must be >= 0.001 and <= 1000 and finite, got 1e-300" in err
    code, out, err = run_cli("simulate", "-m", "llama-3-8b", "-s", "dgx-h100", "-n", "50", "--sigma", "-0")
    assert code == 0, err
    code, _, err = run_cli("overtrain", "--target-loss", "inf")
    assert code == 1 and "--target-loss must be > 0 and <= 100 and finite, got inf" in err


def test_one_sequence_per_pass_runs(run_cli):
    """max_seqs = 1 makes a one-point batch grid in the step table; it must still interpolate."""
    code, out, err = run_cli("simulate", "-m", "llama-3-8b", "-s", "dgx-h100", "--max-seqs", "1", "-n", "20", "--json")
    assert code == 0, err
    import json

    assert json.loads(out)["mean_batch"] == 1.0
