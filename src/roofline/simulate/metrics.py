"""Metrics computed from a Trace (never inside the loop).

- TTFT = first_token − arrival; TPOT = (finish − first_token)/(output − 1) for outputs > 1 token;
  end-to-end latency = finish − arrival (definitions as in vLLM's benchmark_serving and DistServe §2).
- Throughput = output tokens / makespan, makespan = last finish − first arrival.
- Goodput = requests/s meeting both TTFT and TPOT targets (DistServe, Zhong et al. OSDI 2024).
- Utilisation = time the deployment runs passes / makespan; mean batch is time-weighted over passes.
- Cost per million output tokens = gpus · USD/GPU-hour · makespan / 3600 / output tokens · 1e6: the
  lecture's (t/B)·n_GPUs·price [S 00:12:40] with idle time paid for, as a rented deployment is.
- Little's law L = λ·W (Little 1961): `littles_law` returns the time-average number of requests in
  the system from two independent records — the loop's per-pass occupancy (in service) plus the
  queue from arrival/admission times — and λ·W from the per-request sojourn times.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..units import SECONDS_PER_HOUR
from .core import Trace
from .policies import Targets


@dataclass(frozen=True)
class Summary:
    requests: int
    makespan_s: float
    ttft_mean_s: float
    ttft_p50_s: float
    ttft_p90_s: float
    ttft_p99_s: float
    ttft_max_s: float
    tpot_mean_s: float
    tpot_p50_s: float
    tpot_p90_s: float
    tpot_p99_s: float
    e2e_p50_s: float
    e2e_p90_s: float
    e2e_p99_s: float
    throughput_tokens_per_s: float
    throughput_requests_per_s: float
    goodput_requests_per_s: float
    goodput_fraction: float
    utilisation: float
    mean_batch: float
    iterations: int
    preemptions: int
    usd_per_million_tokens: float
    speed_tokens_per_s_per_request: float

    def to_dict(self) -> dict:
        return asdict(self)


def ttft_s(trace: Trace) -> np.ndarray:
    return trace.first_token_s - trace.arrival_s


def tpot_s(trace: Trace) -> np.ndarray:
    """Per-request time per output token after the first; NaN for one-token outputs."""
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (trace.finish_s - trace.first_token_s) / (trace.output_tokens - 1)
    return np.where(trace.output_tokens > 1, t, np.nan)


def e2e_s(trace: Trace) -> np.ndarray:
    return trace.finish_s - trace.arrival_s


def _pct(x: np.ndarray, q: float) -> float:
    x = x[np.isfinite(x)]
    return float(np.percentile(x, q)) if x.size else float("nan")


def summarize(trace: Trace, targets: Targets = Targets(), mask=None) -> Summary:
    """Summary of a Trace (optionally of the requests selected by boolean `mask`, e.g. one priority
    class; cost and utilisation always refer to the whole deployment)."""
    sel = np.ones(trace.arrival_s.shape, bool) if mask is None else np.asarray(mask, bool)
    ttft, tpot, e2e = ttft_s(trace)[sel], tpot_s(trace)[sel], e2e_s(trace)[sel]
    makespan = float(trace.finish_s.max() - trace.arrival_s.min())
    makespan = makespan if makespan > 0 else float(trace.seg_busy_s.sum())
    out_tokens = float(trace.output_tokens[sel].sum())
    ok = (ttft <= targets.ttft_s) & (np.nan_to_num(tpot, nan=0.0) <= targets.tpot_s)
    busy = trace.seg_busy_s
    usd = trace.gpus * trace.usd_per_gpu_hour * makespan / SECONDS_PER_HOUR
    total_out = float(trace.output_tokens.sum())
    return Summary(
        requests=int(sel.sum()), makespan_s=makespan,
        ttft_mean_s=float(ttft.mean()), ttft_p50_s=_pct(ttft, 50), ttft_p90_s=_pct(ttft, 90),
        ttft_p99_s=_pct(ttft, 99), ttft_max_s=float(ttft.max()),
        tpot_mean_s=float(np.nanmean(tpot)) if np.isfinite(tpot).any() else float("nan"),
        tpot_p50_s=_pct(tpot, 50), tpot_p90_s=_pct(tpot, 90), tpot_p99_s=_pct(tpot, 99),
        e2e_p50_s=_pct(e2e, 50), e2e_p90_s=_pct(e2e, 90), e2e_p99_s=_pct(e2e, 99),
        throughput_tokens_per_s=out_tokens / makespan, throughput_requests_per_s=float(sel.sum()) / makespan,
        goodput_requests_per_s=float(ok.sum()) / makespan, goodput_fraction=float(ok.mean()),
        utilisation=float(busy.sum()) / makespan,
        mean_batch=float((busy * trace.seg_batch).sum() / busy.sum()),
        iterations=trace.iterations, preemptions=int(trace.preemptions[sel].sum()),
        usd_per_million_tokens=usd / total_out * 1e6,
        speed_tokens_per_s_per_request=float(1.0 / np.nanmedian(tpot)) if np.isfinite(tpot).any() else float("nan"),
    )


def littles_law(trace: Trace) -> dict:
    """L from occupancy records vs λ·W from sojourn times, over [first arrival, last finish].

    L_service = ∫ sequences-in-pass dt / T from the loop's segments (exact for schedulers whose
    admitted sequences ride every pass until they finish: continuous, and train at full speed);
    L_queue = Σ (admit − arrival) / T; λ = n / T; W = mean (finish − arrival)."""
    T = float(trace.finish_s.max() - trace.arrival_s.min())
    l_service = float((trace.seg_busy_s * trace.seg_batch).sum()) / T
    l_queue = float((trace.admit_s - trace.arrival_s).sum()) / T
    lam = trace.arrival_s.size / T
    W = float(e2e_s(trace).mean())
    return {"L": l_service + l_queue, "L_service": l_service, "L_queue": l_queue, "lambda_per_s": lam,
            "W_s": W, "lambda_W": lam * W}


def occupancy(trace: Trace):
    """(start times, batch) of every segment: the batch occupancy over time (step function)."""
    return trace.seg_start_s, trace.seg_batch
