"""Load stages and time windows in the serving simulator (issue 20, item 4): stage strings, staged arrivals,
per-stage and per-window metrics (simulate/metrics.py), stage saturation, the CLI and the HTTP API."""

import json

import numpy as np
import pytest

from roofline.errors import InputError
from roofline.simulate.workload import STAGES_FORM, parse_stages, stage_bounds, stage_of, staged

# ---- stage strings ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text,expected", [
    ("8:60,20:60", [(8.0, 60.0), (20.0, 60.0)]),
    (" 2.5:10 , 0:5,1e2:0.5 ", [(2.5, 10.0), (0.0, 5.0), (100.0, 0.5)]),
    ("3:7", [(3.0, 7.0)]),
])
def test_parse_stages(text, expected):
    assert parse_stages(text) == expected


@pytest.mark.parametrize("text,needle", [
    ("", "must be a text of"),
    ("8", "stage 1 '8' is not RATE:DURATION"),
    ("8:60,", "stage 2 '' is not RATE:DURATION"),
    ("8:60;20:60", "is not RATE:DURATION"),
    ("a:b", "stage 1 'a:b' is not RATE:DURATION"),
    ("1:2:3", "is not RATE:DURATION"),
    ("8:60,-1:5", "stage 2 '-1:5': rate -1 must be between 0"),
    ("8:0", "duration 0 must be > 0"),
    ("8:inf", "duration inf must be > 0"),
    ("nan:5", "rate nan must be between 0"),
    ("0:10,0:5", "every stage has rate 0"),
])
def test_bad_stage_strings_get_one_line_with_the_form_and_an_example(text, needle):
    with pytest.raises(InputError) as exc:
        parse_stages(text, "--stages")
    msg = str(exc.value)
    assert needle in msg and "\n" not in msg
    assert "e.g. 8:60,20:60" in msg  # the expected form, with an example


def test_too_many_stages():
    with pytest.raises(InputError, match="more than 1,000"):
        parse_stages(",".join(["1:1"] * 1001))


# ---- staged arrivals --------------------------------------------------------------------------------


@pytest.mark.parametrize("arrivals", ["poisson", "gamma"])
def test_staged_arrivals_fall_in_their_stages_at_their_rates(arrivals):
    """Each request's recorded stage is the stage its arrival time falls in (stage_of); a pause (rate 0)
    has no arrival; per stage the count is within 5 standard deviations of rate x duration (Poisson: sd =
    sqrt(λT); gamma renewal gaps of cv 2: sd ≈ cv·sqrt(λT), Cox 1962 §3.3)."""
    stages = [(20.0, 50.0), (0.0, 10.0), (80.0, 30.0), (5.0, 40.0)]
    wl = staged(np.random.default_rng(3), stages, arrivals=arrivals, cv=2.0, lengths_kind="fixed",
                prompt_tokens=100, output_tokens=10)
    assert np.all(np.diff(wl.arrival_s) >= 0)
    assert np.array_equal(wl.stage, stage_of(wl.arrival_s, stages))
    counts = np.bincount(wl.stage, minlength=len(stages))
    cv = 1.0 if arrivals == "poisson" else 2.0
    for (rate, dur), n in zip(stages, counts):
        assert abs(n - rate * dur) <= 5 * cv * np.sqrt(rate * dur) + 1e-9, (rate, dur, n)
    assert counts[1] == 0
    assert wl.arrival_s.max() < stage_bounds(stages)[-1]
    assert np.all(wl.prompt_tokens == 100) and np.all(wl.output_tokens == 10)


def test_staged_is_reproducible_and_a_single_stage_is_the_generated_run():
    """One Poisson stage draws what `generate(..., duration_s=T)` draws from the same generator: the same
    exponential gaps cut at T, then the lengths."""
    from roofline.simulate.workload import generate

    a = staged(np.random.default_rng(7), [(10.0, 30.0)], lengths_kind="lognormal", prompt_tokens=500,
               output_tokens=50, sigma=0.5, max_context=8192)
    b = generate(np.random.default_rng(7), rate_per_s=10.0, n=1, lengths_kind="lognormal", prompt_tokens=500,
                 output_tokens=50, sigma=0.5, max_context=8192, duration_s=30.0)
    for k in ("arrival_s", "prompt_tokens", "output_tokens"):
        assert np.array_equal(getattr(a, k), getattr(b, k))
    assert np.all(a.stage == 0) and b.stage is None


# ---- vLLM's ramp-up ---------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["linear", "exponential"])
@pytest.mark.parametrize("burstiness", [1.0, 0.25])
def test_ramp_arrivals_follow_vllms_rate_per_request_index(strategy, burstiness):
    """vllm/benchmarks/serve.py: request i's gap is gamma(shape k = burstiness, scale 1/(r_i·k)), r_i rising
    with p = i/(n−1) linearly or geometrically from START to END. So the gaps scaled by r_i have mean 1 and
    variance 1/k, and the last arrival is Σ 1/r_i within 5 standard deviations (sd = sqrt(Σ 1/(k·r_i²)))."""
    from roofline.simulate.workload import ramp_arrivals

    n, start, end = 20_000, 1.0, 20.0
    t = ramp_arrivals(np.random.default_rng(11), n, start, end, strategy, burstiness)
    p = np.arange(n) / (n - 1)
    r = start + (end - start) * p if strategy == "linear" else start * (end / start) ** p
    gaps = np.diff(np.concatenate([[0.0], t]))
    scaled = gaps * r
    assert scaled.mean() == pytest.approx(1.0, abs=5 * np.sqrt(1 / burstiness / n))
    assert scaled.var() == pytest.approx(1 / burstiness, rel=0.1)
    assert abs(t[-1] - (1 / r).sum()) < 5 * np.sqrt((1 / (burstiness * r**2)).sum())
    # the first half of the requests (slow) take longer than the second half (fast)
    assert t[n // 2] > t[-1] - t[n // 2]


@pytest.mark.parametrize("text,needle", [
    ("lin:1:2", "is not STRATEGY:START:END"), ("linear:1", "is not STRATEGY:START:END"),
    ("linear:0:5", "the start rate 0 must be > 0"), ("exponential:2:-1", "the end rate -1 must be > 0"),
])
def test_bad_ramps(text, needle):
    from roofline.simulate.workload import parse_ramp

    with pytest.raises(InputError) as exc:
        parse_ramp(text, "--ramp-up")
    assert needle in str(exc.value) and "e.g. linear:1:20" in str(exc.value)


# ---- a stepped-load run: per-stage TPOT against the analytic step -------------------------------------
P, O = 32, 1024
STEPS = "2:60,8:60"


@pytest.fixture(scope="module")
def stepped():
    from roofline.requests.simulate import SimulateRequest, simulate
    from roofline.simulate import roofline_deployment

    req = SimulateRequest.of(model="llama-3-8b", accelerator="h100-sxm", gpus=1, stages=STEPS, lengths="fixed",
                             prompt_tokens=P, output_tokens=O, window_s=20.0)
    d, tr = simulate(req)
    return d, tr, roofline_deployment(req._model, req._system, chips=1)


def test_stage_tpot_is_the_step_at_the_stage_batch(stepped):
    """llama-3-8b on one H100 (pure roofline), stages 2 then 8 requests/s, fixed 32-token prompts and
    1,024-token outputs. Decoding dominates (a 32-token prompt's compute hides under the weight read), so a
    request's TPOT is the mean decode step over its life: t(B, c) at the batch B it rides with, at the mean
    decoding context c = P + (O − 1)/2. The expectation is the deployment's step model at the stage's
    time-weighted mean batch B̄ (the --json `mean_batch`) and c.

    Tolerance, derived: the batch a request rides with is the number of requests in service; with no queue
    and a fixed service time S (M/D/∞) it is Poisson of mean B̄ and autocovariance B̄(1 − |τ|/S), so its average
    over one request's life has variance (1/S²)∬cov = 2B̄/3. One standard deviation of that average moves
    the step by δ = t(B̄ + √(2B̄/3), c)/t(B̄, c) − 1 (KV reads grow with B); the median request is well
    within it. Plus 1% for what the expectation leaves out: the table's linear interpolation, the passes that
    also carry a prompt, and the requests near a stage boundary that ride both stages' batches."""
    d, _, dep = stepped
    c = P + (O - 1) / 2.0

    def t(b):
        return float(dep.step(np.array([b]), np.array([b]), np.array([c]))[0])

    got, tol = [], []
    for s in d["stages"]:
        b = s["mean_batch"]
        delta = t(b + np.sqrt(2 * b / 3)) / t(b) - 1
        assert s["tpot_p50_s"] == pytest.approx(t(b), rel=delta + 0.01), (s["index"], b)
        got.append(s["tpot_p50_s"])
        tol.append(delta + 0.01)
    # the stages are told apart: the second stage's TPOT is above the first's by more than both tolerances
    assert got[1] / got[0] - 1 > tol[0] + tol[1]
    # the batch follows the load: Little's law in service, B̄ ≈ λ·(time in service) ≈ λ·O·TPOT with λ the
    # stage's realised arrivals per second, within 15% (the first stage starts empty and the second inherits
    # the first's batch for one service time, ~5 s of 60)
    for s in d["stages"]:
        assert s["mean_batch"] == pytest.approx(s["arrival_rate_per_s"] * O * s["tpot_p50_s"], rel=0.15)


def test_stage_metrics_by_hand(stepped):
    """Each stage's entries against a hand computation on the trace: requests by arrival, latency
    percentiles as np.percentile over those requests, throughput from the requests finishing inside the
    stage, utilisation and mean batch from the segments inside it (exact for one pass at a time)."""
    from roofline.simulate.metrics import e2e_s, tpot_s, ttft_s

    d, tr, _ = stepped
    edges = stage_bounds(parse_stages(STEPS))
    for s, lo, hi in zip(d["stages"], edges[:-1], edges[1:]):
        arr = (tr.arrival_s >= lo) & (tr.arrival_s < hi)
        fin = (tr.finish_s >= lo) & (tr.finish_s < hi)
        assert s["requests"] == arr.sum() and s["finished"] == fin.sum()
        assert s["throughput_tokens_per_s"] == pytest.approx(tr.output_tokens[fin].sum() / (hi - lo), rel=1e-12)
        for k, x in (("ttft", ttft_s(tr)), ("tpot", tpot_s(tr)), ("e2e", e2e_s(tr))):
            for q in (50, 90, 99):
                assert s[f"{k}_p{q}_s"] == pytest.approx(np.percentile(x[arr], q), rel=1e-12)
            assert s[f"{k}_mean_s"] == pytest.approx(x[arr].mean(), rel=1e-12)
        # passes inside [lo, hi): each segment's passes run back to back from its start
        a = np.clip(tr.seg_start_s, lo, hi)
        b = np.clip(tr.seg_start_s + tr.seg_busy_s, lo, hi)
        busy = b - a
        assert s["utilisation"] == pytest.approx(busy.sum() / (hi - lo), rel=1e-9)
        assert s["mean_batch"] == pytest.approx((busy * tr.seg_batch).sum() / busy.sum(), rel=1e-9)
        assert s["offered_rate_per_s"] in (2.0, 8.0) and not s["saturated"]
        assert s["load"] == pytest.approx(s["offered_rate_per_s"] / d["capacity_requests_per_s"], rel=1e-12)


def test_windows_add_up_to_the_run(stepped):
    d, tr, _ = stepped
    w = d["windows"]
    assert sum(x["requests"] for x in w) == d["requests"] == tr.arrival_s.size
    assert sum(x["finished"] for x in w) == d["requests"]  # every finish falls in a window
    assert sum(x["throughput_tokens_per_s"] * (x["end_s"] - x["start_s"]) for x in w) == pytest.approx(
        tr.output_tokens.sum(), rel=1e-12)
    busy = sum(x["utilisation"] * (x["end_s"] - x["start_s"]) for x in w)
    assert busy == pytest.approx(tr.seg_busy_s.sum(), rel=1e-9)
    assert w[0]["start_s"] == 0.0 and w[-1]["end_s"] > tr.finish_s.max()
    assert all(x["end_s"] - x["start_s"] == pytest.approx(20.0) for x in w)
    # windows after the last arrival (the drain) have no latencies, and say so with nulls, not NaN
    empty = [x for x in w if x["requests"] == 0]
    assert empty and all(x["ttft_p50_s"] is None and x["tpot_mean_s"] is None for x in empty)


# ---- saturation per stage ---------------------------------------------------------------------------


def test_a_stage_past_capacity_is_flagged_and_the_drain_is_not():
    """Stages 4, 60 and 2 requests/s on a deployment of about 25 requests/s capacity (32 + 1,024 tokens on
    llama-3-8b / one H100): only the 60 requests/s stage is saturated — its load is above 1 and its waiting
    time grows at about ρ − 1 s per s (a fluid queue: each second of arrivals adds (λ − μ)/μ s of backlog);
    the last stage drains that backlog (its queue falls, its wait trend is negative) and is not saturated."""
    from roofline.requests.simulate import SimulateRequest, run_simulate

    d = run_simulate(SimulateRequest.of(model="llama-3-8b", accelerator="h100-sxm", gpus=1,
                                        stages="4:30,60:20,2:30", lengths="fixed", prompt_tokens=P,
                                        output_tokens=O))
    s0, s1, s2 = d["stages"]
    cap = d["capacity_requests_per_s"]
    assert 15 < cap < 40
    assert [s["saturated"] for s in d["stages"]] == [False, True, False]
    rho = 60.0 / cap
    assert s1["load"] == pytest.approx(rho) and s1["queue_growth_s_per_s"] > 0.5 * (rho - 1)
    assert s1["queue_end"] > s1["queue_start"] == 0
    assert s2["queue_start"] == s1["queue_end"] and s2["queue_end"] < s2["queue_start"]
    assert s2["queue_growth_s_per_s"] < 0 and s0["queue_growth_s_per_s"] == pytest.approx(0, abs=0.01)
    # the same verdict per 10 s window: the windows of the 60/s stage (arrivals 30-50 s) are saturated, those of
    # the 4/s and 2/s stages are not; a window's offered rate is its arrivals / 10 s
    w = run_simulate(SimulateRequest.of(model="llama-3-8b", accelerator="h100-sxm", gpus=1,
                                        stages="4:30,60:20,2:30", lengths="fixed", prompt_tokens=P,
                                        output_tokens=O, window_s=10.0))["windows"]
    assert [x["saturated"] for x in w[:8]] == [False, False, False, True, True, False, False, False]
    assert all(x["offered_rate_per_s"] == pytest.approx(x["requests"] / 10.0) for x in w)
    assert w[3]["load"] == pytest.approx(w[3]["offered_rate_per_s"] / cap)


# ---- windows on a trace -----------------------------------------------------------------------------


def test_windows_on_the_sample_trace(run_cli):
    """A trace has no stages, but windows work on any run: every request in exactly one window by arrival,
    each window's TTFT p50 the np.percentile of its arrivals' TTFTs (from the trace the library returns)."""
    from roofline.requests.simulate import SimulateRequest, simulate
    from roofline.simulate.metrics import ttft_s
    from roofline.simulate.workload import sample_trace_path

    path = str(sample_trace_path())
    code, out, err = run_cli("simulate", "-m", "llama-3-8b", "-a", "h100-sxm", "-g", "1", "--trace", path,
                             "--window-s", "5", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert "stages" not in d
    w = d["windows"]
    assert sum(x["requests"] for x in w) == d["requests"] == 200
    assert sum(x["finished"] for x in w) == 200
    _, tr = simulate(SimulateRequest.of(model="llama-3-8b", accelerator="h100-sxm", gpus=1, trace=path,
                                        window_s=5.0))
    ttft = ttft_s(tr)
    for x in w:
        sel = (tr.arrival_s >= x["start_s"]) & (tr.arrival_s < x["end_s"])
        assert x["requests"] == sel.sum()
        if sel.any():
            assert x["ttft_p50_s"] == pytest.approx(np.percentile(ttft[sel], 50), rel=1e-12)
        else:
            assert x["ttft_p50_s"] is None


# ---- CLI and HTTP -----------------------------------------------------------------------------------
M8 = ("simulate", "-m", "llama-3-8b", "-a", "h100-sxm", "-g", "1")


@pytest.mark.parametrize("extra,code,needle", [
    (("--stages", "8:10", "--rate", "5"), 2, "--stages and --rate cannot be used together"),
    (("--stages", "8:10", "--duration", "5"), 2, "--stages and --duration cannot be used together"),
    (("--stages", "8:10", "-n", "50"), 2, "--stages and --requests/-n cannot be used together"),
    (("--stages", "8:10,x"), 1, "--stages stage 2 'x' is not RATE:DURATION"),
    (("--stages", "5e6:1e6"), 1, "more than 10,000,000"),
    (("-n", "20", "--window-s", "0"), 1, "--window-s must be"),
    (("-n", "200", "--window-s", "1e-4"), 1, "more than 10,000"),
    (("--stages", "8:10", "--grid", "rate=5"), 1, "--grid runs pooled"),
    (("--ramp-up", "linear:1:5", "--rate", "5"), 2, "--ramp-up and --rate cannot be used together"),
    (("--ramp-up", "linear:1:5", "--stages", "1:5"), 2, "cannot be used together"),
    (("--ramp-up", "up:1:5"), 1, "--ramp-up 'up:1:5' is not STRATEGY:START:END"),
])
def test_cli_refusals_are_one_line(run_cli, extra, code, needle):
    c, out, err = run_cli(*M8, *extra)
    assert c == code, (out, err)
    assert needle in err and "Traceback" not in err


def test_stages_with_a_trace_is_a_usage_error(run_cli):
    from roofline.simulate.workload import sample_trace_path

    c, _, err = run_cli(*M8, "--trace", str(sample_trace_path()), "--stages", "8:10")
    assert c == 2 and "--trace gives the arrivals and lengths; drop --stages" in err


def test_cli_table_and_plot(run_cli, tmp_path):
    c, out, err = run_cli(*M8, "--stages", "2:10,6:10", "--lengths", "fixed", "--prompt", "64", "--output", "64",
                          "--window-s", "5", "--plot", str(tmp_path))
    assert c == 0, err
    assert "per stage" in out and "per window" in out and (tmp_path / "stages.png").stat().st_size > 10_000


def test_http_answer_carries_the_lists(run_cli):
    """`roofline serve` gets the fields for free: the API's answer with stages and window_s equals the CLI's
    --json, lists included; and the server's request cap counts what the stages generate."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient

    from roofline.serve import create_app
    from serve_cli import cli_json

    client = TestClient(create_app())
    body = {"model": "llama-3-8b", "accelerator": "h100-sxm", "gpus": 1, "stages": "2:10,6:10",
            "window_s": 5.0, "lengths": "fixed", "prompt_tokens": 64, "output_tokens": 64}
    r = client.post("/api/simulate", json=body)
    assert r.status_code == 200, r.text
    got = r.json()
    assert isinstance(got["stages"], list) and len(got["stages"]) == 2 and isinstance(got["windows"], list)
    assert got == cli_json(["simulate"], body)
    r = client.post("/api/simulate", json={**body, "stages": "1000:600"})
    assert r.status_code == 413 and "limit of 20,000" in r.json()["detail"]


def test_stages_form_is_documented():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "simulator.md").read_text()
    assert "Load stages and windows" in doc and "--stages" in doc and "--window-s" in doc
    assert STAGES_FORM.startswith("comma-separated RATE:DURATION")
