"""`roofline simulate`: JSON keys, tables, traces and one-line errors (exit 1) through the CLI."""

import json

import pytest

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


# Four policies (+ the baselines they are compared with) on one workload: 120 requests, fixed lengths
# 512 + 64 tokens, Poisson arrivals at the default 10/s from seed 0 (the same arrivals for every policy:
# the workload is drawn before the policy is read), llama-3-8b on one H100 SXM.
N, PROMPT, OUTPUT = 120, 512, 64
BASE = ("simulate", "-m", "llama-3-8b", "-a", "h100-sxm", "-n", str(N), "--lengths", "fixed",
        "--prompt-tokens", str(PROMPT), "--output-tokens", str(OUTPUT), "--json")


def _sim(run_cli, *extra):
    code, out, err = run_cli(*BASE, *extra)
    assert code == 0, (extra, err)
    return json.loads(out)


def _check_accounting(d, policy, gpus):
    """Relations every policy must satisfy (simulate/metrics.py definitions):
    - the policy named is the policy echoed; N requests done; gpus as deployed;
    - throughput = output tokens / makespan, and the output tokens are N x OUTPUT with fixed lengths;
    - requests/s x makespan = N;
    - $/M output tokens = gpus x $/GPU-hour x makespan / 3600 / (N x OUTPUT) x 1e6 with the price the resolver
      takes for -a (the accelerator's catalog rental price; no explicit price, no system row);
    - 0 < utilisation <= 1 (busy time within the makespan)."""
    from roofline import get_accelerator

    assert d["policy"] == policy and d["requests"] == N and d["gpus"] == gpus
    assert d["throughput_tokens_per_s"] * d["makespan_s"] == pytest.approx(N * OUTPUT, rel=1e-12)
    assert d["throughput_requests_per_s"] * d["makespan_s"] == pytest.approx(N, rel=1e-12)
    price = get_accelerator("h100-sxm").usd_per_hour
    assert d["usd_per_million_tokens"] == pytest.approx(gpus * price * d["makespan_s"] / 3600 / (N * OUTPUT) * 1e6,
                                                        rel=1e-12)
    assert 0 < d["utilisation"] <= 1 + 1e-9


def _check_littles_law_bracket(d):
    """Little's law, L = λ·W (Little 1961), from the JSON alone, for schedulers whose admitted sequences ride
    every pass until they finish (continuous, chunked): the time-average number of sequences in passes is
    L_service = mean_batch x utilisation = λ · mean(finish − admit). Admission precedes the first token and
    follows the arrival, so λ·(OUTPUT − 1)·mean TPOT <= L_service <= λ·W with
    W = mean TTFT + (OUTPUT − 1)·mean TPOT (fixed output lengths), λ = requests/s."""
    lam = d["throughput_requests_per_s"]
    l_service = d["mean_batch"] * d["utilisation"]
    decode_part = (OUTPUT - 1) * d["tpot_mean_s"]
    assert lam * decode_part <= l_service <= lam * (d["ttft_mean_s"] + decode_part)


def test_policies_by_their_json_values(run_cli):
    cont = _sim(run_cli, "--policy", "continuous")
    _check_accounting(cont, "continuous", 1)
    _check_littles_law_bracket(cont)

    # train (lecture §1.5, T05): a pass departs every interval; a pass here (decodes plus a 512-token prefill or
    # two: under 20 ms on an H100, 8.3 ms of compute per prompt) never overruns 50 ms,
    # so a request aboard rides one pass per interval: finish − first token = (OUTPUT − 1)·interval ± one pass
    # (the two passes' lengths differ by less than a pass) → TPOT within interval·(1 ± 1/(OUTPUT − 1)); the
    # first token waits at most interval + pass <= 2·interval; departures are >= interval apart, so the
    # number of passes is at most makespan/interval + 1.
    interval = 0.05
    train = _sim(run_cli, "--policy", "train", "--interval-s", str(interval))
    _check_accounting(train, "train", 1)
    for key in ("tpot_p50_s", "tpot_mean_s", "tpot_p99_s"):
        assert train[key] == pytest.approx(interval, rel=1 / (OUTPUT - 1)), key
    assert train["ttft_max_s"] <= 2 * interval
    assert train["iterations"] <= train["makespan_s"] / interval + 1

    # chunked with speculation (speculative.py; Leviathan et al. 2023 eq. 1): with γ = 3, α = 0.7 (default) a
    # verify pass yields E = (1 − α^(γ+1))/(1 − α) = 2.533 tokens and costs one memory-bound decode pass (an
    # 8B model at batch ~3 reads its weights once for the 4 tokens) plus γ·f = 3 x 0.05 draft steps, so TPOT
    # falls by E/(1 + γ·f) = 2.203 against chunked without speculation (5% for the drawn acceptances and the
    # smaller batch).
    chunked = _sim(run_cli, "--policy", "chunked")
    _check_accounting(chunked, "chunked", 1)
    _check_littles_law_bracket(chunked)
    spec = _sim(run_cli, "--policy", "chunked", "--spec-gamma", "3")
    _check_accounting(spec, "chunked", 1)
    _check_littles_law_bracket(spec)
    gamma, alpha, f = 3, 0.7, 0.05
    expected = (1 - alpha ** (gamma + 1)) / (1 - alpha) / (1 + gamma * f)
    assert expected == pytest.approx(2.203, rel=1e-3)
    assert chunked["tpot_p50_s"] / spec["tpot_p50_s"] == pytest.approx(expected, rel=0.05)

    # disaggregated (pools.py; DistServe §3): a prefill pool and a decode pool of the same size (2 GPUs, both
    # paid for), and no prompt shares a decode pass, so TPOT is below continuous batching's on the same load.
    dis = _sim(run_cli, "--policy", "disaggregated")
    _check_accounting(dis, "disaggregated", 2)
    assert dis["tpot_p50_s"] < cont["tpot_p50_s"] and dis["tpot_mean_s"] < cont["tpot_mean_s"]

    # static (policies.py): a batch forms when the previous one is done and runs until its longest output ends;
    # with every output OUTPUT tokens long each batch is one prefill pass (first token) + OUTPUT − 1 decode
    # passes, so the pass count is a multiple of OUTPUT. The priority classes split the N requests, and a
    # priority class cannot change the speed of the batch it shares (pools.py): equal TPOT for both classes.
    static = _sim(run_cli, "--policy", "static", "--fast-fraction", "0.5")
    _check_accounting(static, "static", 1)
    assert static["iterations"] % OUTPUT == 0 and static["iterations"] >= OUTPUT
    assert static["fast_requests"] + static["slow_requests"] == N and static["fast_requests"] > 0
    assert static["fast_tpot_p50_s"] == pytest.approx(static["slow_tpot_p50_s"], rel=0.01)
    # the workload did not change with the policy: the same output tokens in every run
    assert {round(d["throughput_tokens_per_s"] * d["makespan_s"]) for d in (cont, train, spec, dis, static)} == {
        N * OUTPUT}


def test_trace_run_json_and_plots(run_cli, tmp_path):
    """A trace run simulates every row of the CSV (the shipped sample has 200 rows after its header) and its
    output tokens are the column's sum; --plot writes the three figures."""
    import csv

    rows = list(csv.DictReader(sample_trace_path().open()))
    assert len(rows) == 200
    code, out, err = run_cli("simulate", "-m", "llama-3-70b", "-s", "dgx-h100", "--trace", str(sample_trace_path()),
                             "--plot", str(tmp_path), "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["requests"] == len(rows)
    assert d["throughput_tokens_per_s"] * d["makespan_s"] == pytest.approx(sum(int(r["output_tokens"]) for r in rows))
    assert d["makespan_s"] > float(rows[-1]["arrival_s"]) - float(rows[0]["arrival_s"])  # last finish > last arrival
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
    assert code == 1 and "--policy must be one of continuous, chunked, separate, static, train, disaggregated, got 'fifo'" in err
    code, _, err = run_cli("simulate", "-m", "llama-3.1-405b", "-a", "h100-sxm", "-g", "1")
    assert code == 1 and "leave no KV memory" in err
    code, _, err = run_cli("simulate", "-m", "llama-3-70b", "-s", "dgx-h100", "--rate", "0")
    assert code == 1 and "--rate must be > 0" in err
    code, _, err = run_cli("simulate", "-m", "llama-3-70b", "-s", "dgx-h100", "--max-prefill-tokens", "2000")
    assert code == 1 and "needs policy 'chunked' or 'separate', got 'continuous'" in err and err.count("\n") == 1


def test_extreme_workload_parameters_are_one_line_errors(run_cli):
    code, _, err = run_cli("simulate", "-m", "llama-3-8b", "-s", "dgx-h100", "-n", "50", "--arrivals", "gamma",
                           "--cv", "1e-300")
    assert code == 1 and "--cv must be >= 0.001 and <= 1000 and finite, got 1e-300" in err
    code, out, err = run_cli("simulate", "-m", "llama-3-8b", "-s", "dgx-h100", "-n", "50", "--sigma", "-0")
    assert code == 0, err
    code, _, err = run_cli("overtrain", "--target-loss", "inf")
    assert code == 1 and "--target-loss must be > 0 and <= 100 and finite, got inf" in err


def test_max_prefill_tokens_is_echoed_in_json(run_cli):
    """SGLang's --max-prefill-tokens under --policy chunked runs and is echoed in --json (simulate/policies.py)."""
    d = _sim(run_cli, "--policy", "chunked", "--max-prefill-tokens", "600")
    assert d["max_prefill_tokens"] == 600 and d["requests"] == N


def test_output_stage_is_echoed_and_slows_what_the_client_sees(run_cli):
    """--stream-s-per-chunk (simulate.OutputStage): echoed in --json; a 2 ms chunk cost, slower than these passes
    carry, lengthens TTFT and TPOT; refused with --policy disaggregated in one line."""
    base = _sim(run_cli)
    d = _sim(run_cli, "--stream-s-per-chunk", "0.002")
    assert d["stream_s_per_chunk"] == 0.002 and d["stream_s_per_pass"] == 0.0 and "stream_s_per_chunk" not in base
    assert d["ttft_p50_s"] > base["ttft_p50_s"] and d["tpot_p50_s"] > base["tpot_p50_s"]
    code, _, err = run_cli(*BASE, "--policy", "disaggregated", "--stream-s-per-chunk", "0.001")
    assert code == 2 and "disaggregated has two" in err and err.count("\n") == 1


def test_one_sequence_per_pass_runs(run_cli):
    """max_seqs = 1 makes a one-point batch grid in the step table; it must still interpolate."""
    code, out, err = run_cli("simulate", "-m", "llama-3-8b", "-s", "dgx-h100", "--max-seqs", "1", "-n", "20", "--json")
    assert code == 0, err
    import json

    assert json.loads(out)["mean_batch"] == 1.0
