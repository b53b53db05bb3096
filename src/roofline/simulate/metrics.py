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
- Per stage and per window (`stage_metrics`, `windows`): the same latencies for the requests arriving in
  the interval, throughput from the requests finishing in it, busy time and time-weighted batch of the
  passes inside it, the queue at its ends; per stage the analytic capacity and `saturation_rule`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..errors import InputError
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


def prefix_cache_metrics(trace: Trace) -> dict:
    """Prefix-cache figures of a run with the cache on ({} when off): hit rate = hit tokens / prompt tokens
    and requests with a hit / requests (each request's first admission); prompt tokens not prefilled over the
    run (`prefill_tokens_saved`, re-admissions after preemption included); blocks evicted; blocks cached at
    the end; the block size. With a host tier, the part of the hits it loaded (`host_hit_tokens`, its rate of the
    prompt tokens and of the requests), tokens loaded and the seconds the loads added over the run, the tier's
    evicted blocks and the blocks it holds at the end; with a disk tier behind it, the loaded tokens that only the
    disk held, its evicted blocks and the blocks it holds at the end."""
    if trace.prefix_hit_tokens is None:
        return {}
    hit = trace.prefix_hit_tokens
    out = {"prefix_block_tokens": trace.block_tokens, "prefix_hit_tokens": float(hit.sum()),
           "prefix_hit_rate": float(hit.sum() / trace.prompt_tokens.sum()),
           "prefix_request_hit_rate": float(np.mean(hit > 0)), "prefill_tokens_saved": trace.prefill_tokens_saved,
           "prefix_evictions": trace.prefix_evictions, "prefix_cached_blocks": trace.prefix_cached_blocks}
    dt, tok, got = trace.reuse_interval_s, trace.reuse_tokens, trace.reuse_hit_tokens
    if dt is not None and tok is not None and got is not None and tok.sum() > 0:  # how long reusable blocks waited
        out.update(reuse_intervals(dt, tok, got))
    if trace.host_hit_tokens is not None:  # the host tier's share of those hits (each request's first admission)
        host = trace.host_hit_tokens
        out.update(host_hit_tokens=float(host.sum()), host_hit_rate=float(host.sum() / trace.prompt_tokens.sum()),
                   host_request_hit_rate=float(np.mean(host > 0)), host_loaded_tokens=trace.host_loaded_tokens,
                   host_load_s=trace.host_load_s, host_evictions=trace.host_evictions,
                   host_cached_blocks=trace.host_cached_blocks)
    if trace.disk_capacity_blocks:  # a disk tier behind host memory: what only it held
        out.update(disk_loaded_tokens=trace.disk_loaded_tokens, disk_evictions=trace.disk_evictions,
                   disk_cached_blocks=trace.disk_cached_blocks)
    return out


def reuse_intervals(interval_s: np.ndarray, tokens: np.ndarray, hit_tokens: np.ndarray) -> dict:
    """How long reused blocks waited (Trace.reuse_*; docs/simulator.md "How long reused blocks waited"), over the
    prompt tokens requests could have reused (earlier requests had computed them): the share another running request
    was using at the time (in HBM anyway); over the others (idle), the token-weighted 50th and 90th percentiles of the
    seconds since their last use (None when none was idle) and the share of them the cache still held (hits). The
    lecture's hold time T (§5.4): a tier that keeps KV T seconds serves the idle reuses up to T; `roofline tiers`
    names the cheapest tier for a hold."""
    total = float(tokens.sum())
    idle = interval_s > 0
    out: dict = {"prefix_reusable_tokens": total, "prefix_reuse_in_use_share": float(tokens[~idle].sum() / total)}
    if not idle.any():
        return {**out, "prefix_reuse_idle_p50_s": None, "prefix_reuse_idle_p90_s": None,
                "prefix_reuse_idle_hit_share": None}
    dt, w = interval_s[idle], tokens[idle]
    order = np.argsort(dt, kind="stable")
    cum = np.cumsum(w[order]) / w.sum()
    p50, p90 = (float(dt[order][min(int(np.searchsorted(cum, q)), dt.size - 1)]) for q in (0.5, 0.9))
    return {**out, "prefix_reuse_idle_p50_s": p50, "prefix_reuse_idle_p90_s": p90,
            "prefix_reuse_idle_hit_share": float(hit_tokens[idle].sum() / w.sum())}


def occupancy(trace: Trace):
    """(start times, batch) of every segment: the batch occupancy over time (step function)."""
    return trace.seg_start_s, trace.seg_batch


# ---- load stages and time windows ---------------------------------------------------------------
#: Most windows one run reports (a JSON list per window: beyond this the list is bigger than the run's answer).
MAX_WINDOWS = 10_000


def _busy_cumulative(trace: Trace):
    """Functions B(t) = pass seconds before t and BB(t) = ∫ batch dt before t, from the segments (sorted by
    start and disjoint: one clock), each vectorised over t. Segment g runs passes over
    [start_g, start_g + busy_g) with a constant batch, so both are exact, whatever the pass lengths inside."""
    start, busy, batch = trace.seg_start_s, trace.seg_busy_s, trace.seg_batch
    cb = np.concatenate([[0.0], np.cumsum(busy)])
    cbb = np.concatenate([[0.0], np.cumsum(busy * batch)])

    def at(t):
        t = np.asarray(t, dtype=float)
        g = np.searchsorted(start, t, side="right") - 1
        gi = np.maximum(g, 0)
        inside = np.where(g >= 0, np.clip(t - start[gi], 0.0, busy[gi]), 0.0)
        return (np.where(g >= 0, cb[gi] + inside, 0.0), np.where(g >= 0, cbb[gi] + inside * batch[gi], 0.0))

    return at


def _group_stats(bucket: np.ndarray, x: np.ndarray, m: int, qs=(50, 90, 99)):
    """Per bucket 0..m-1 of the finite x: (mean, {q: percentile}) arrays, NaN for a bucket without values.
    Percentiles as np.percentile's default (linear between order statistics), vectorised over buckets."""
    ok = np.isfinite(x) & (bucket >= 0) & (bucket < m)
    b, v = bucket[ok], x[ok]
    order = np.lexsort((v, b))
    b, v = b[order], v[order]
    count = np.bincount(b, minlength=m)
    first = np.concatenate([[0], np.cumsum(count)[:-1]])
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(b, weights=v, minlength=m) / count
    pct = {}
    has = count > 0
    for q in qs:
        pos = q / 100.0 * np.maximum(count - 1, 0)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, np.maximum(count - 1, 0))
        frac = pos - lo
        i_lo, i_hi = first + lo, first + hi
        val = np.full(m, np.nan)
        if v.size:
            val[has] = v[i_lo[has]] + frac[has] * (v[i_hi[has]] - v[i_lo[has]])
        pct[q] = val
    return np.where(has, mean, np.nan), pct


def _queue_length(trace: Trace):
    """Q(t) = requests arrived by t − requests admitted by t (first admission; re-queued preempted requests
    are not counted again), vectorised over t."""
    arr, adm = np.sort(trace.arrival_s), np.sort(trace.admit_s)

    def q(t):
        t = np.asarray(t, dtype=float)
        return (np.searchsorted(arr, t, side="right") - np.searchsorted(adm, t, side="right")).astype(float)

    return q


def interval_metrics(trace: Trace, edges) -> list[dict]:
    """Metrics of the requests ARRIVING in each interval [edges[i], edges[i+1]) and of the deployment during
    it: requests, arrival_rate_per_s; TTFT, TPOT and end-to-end mean/p50/p90/p99 of those requests (null
    where none arrived, or for TPOT where all had one output token); finished (requests finishing inside the
    interval), throughput_tokens_per_s and throughput_requests_per_s from the output tokens of the requests
    FINISHING inside it (all their output tokens, counted at their finish, as benchmark clients count
    completed requests); utilisation = pass seconds inside / length; mean_batch time-weighted over the
    passes inside (null when no pass ran); queue_start/queue_end = requests waiting for admission at the
    interval's ends. Vectorised over requests, segments and intervals (sorts and bincounts)."""
    e = np.asarray(edges, dtype=float)
    m = e.size - 1
    if m < 1 or np.any(np.diff(e) <= 0):
        raise InputError("interval edges must be at least two increasing times (s)")
    dur = np.diff(e)
    arrive_bin = np.searchsorted(e, trace.arrival_s, side="right") - 1
    finish_bin = np.searchsorted(e, trace.finish_s, side="right") - 1
    arrive_bin = np.where(arrive_bin >= m, -1, arrive_bin)
    finish_bin = np.where(finish_bin >= m, -1, finish_bin)
    ina, inf_ = arrive_bin >= 0, finish_bin >= 0
    n_arr = np.bincount(arrive_bin[ina], minlength=m)
    n_fin = np.bincount(finish_bin[inf_], minlength=m)
    tok_fin = np.bincount(finish_bin[inf_], weights=trace.output_tokens[inf_], minlength=m)
    at = _busy_cumulative(trace)
    b0, bb0 = at(e)
    busy, bbusy = np.diff(b0), np.diff(bb0)
    q = _queue_length(trace)(e)
    stats = {name: _group_stats(arrive_bin, x, m) for name, x in
             (("ttft", ttft_s(trace)), ("tpot", tpot_s(trace)), ("e2e", e2e_s(trace)))}

    def num(x):
        return None if not np.isfinite(x) else float(x)

    out = []
    for i in range(m):
        d: dict[str, float | int | None] = {
            "index": i, "start_s": float(e[i]), "end_s": float(e[i + 1]), "requests": int(n_arr[i]),
            "arrival_rate_per_s": float(n_arr[i] / dur[i]), "finished": int(n_fin[i]),
            "throughput_tokens_per_s": float(tok_fin[i] / dur[i]),
            "throughput_requests_per_s": float(n_fin[i] / dur[i])}
        for name, (mean, pct) in stats.items():
            d[f"{name}_mean_s"] = num(mean[i])
            for qq, v in pct.items():
                d[f"{name}_p{qq}_s"] = num(v[i])
        d["utilisation"] = float(busy[i] / dur[i])
        d["mean_batch"] = float(bbusy[i] / busy[i]) if busy[i] > 0 else None
        d["queue_start"], d["queue_end"] = int(q[i]), int(q[i + 1])
        out.append(d)
    return out


def window_edges(trace: Trace, window_s: float) -> np.ndarray:
    """Edges of windows of `window_s` seconds from floor(first arrival / W)·W until past the last finish
    (every arrival and every finish falls in one window)."""
    if not (np.isfinite(window_s) and window_s > 0):
        raise InputError(f"window length must be > 0 s, got {window_s:g}; e.g. 10")
    t0 = np.floor(float(trace.arrival_s.min()) / window_s) * window_s
    m = int(np.floor((float(trace.finish_s.max()) - t0) / window_s)) + 1
    if m > MAX_WINDOWS:
        raise InputError(f"windows of {window_s:g} s cut this run ({float(trace.finish_s.max()) - t0:,.1f} s) into "
                         f"{m:,} windows, more than {MAX_WINDOWS:,}; use windows of at least "
                         f"{(float(trace.finish_s.max()) - t0) / MAX_WINDOWS:.3g} s")
    return t0 + window_s * np.arange(m + 1)


def windows(trace: Trace, window_s: float, capacity_requests_per_s: float | None = None) -> list[dict]:
    """`interval_metrics` over consecutive windows of `window_s` seconds (window_edges). Windows are by
    ARRIVAL time for the latencies and by finish time for the throughput; the windows' requests add up to
    the run's requests and so do their finished requests. Each window carries the saturation evidence of
    `stage_metrics`, with its offered rate = the requests that arrived in it / window_s."""
    edges = window_edges(trace, window_s)
    out = interval_metrics(trace, edges)
    n = np.diff(np.searchsorted(trace.arrival_s, edges, side="left"))
    return _with_saturation(out, trace, edges, n / window_s, capacity_requests_per_s)


def _with_saturation(out: list[dict], trace: Trace, edges, rates, capacity_requests_per_s) -> list[dict]:
    """Per interval: offered_rate_per_s, capacity_requests_per_s, load, queue_growth_s_per_s, saturated
    (stage_metrics' docstring), judged on the interval's own arrivals."""
    from .capacity import GROWTH_LIMIT, saturation

    lo = np.searchsorted(trace.arrival_s, edges[:-1], side="left")
    hi = np.searchsorted(trace.arrival_s, edges[1:], side="left")
    cap = float(capacity_requests_per_s) if capacity_requests_per_s else None
    for d, rate, a, b in zip(out, rates, lo, hi):
        growth = float(saturation(trace.arrival_s[a:b], trace.admit_s[a:b], None)["queue_growth_s_per_s"]) \
            if b > a else 0.0
        load = float(rate) / cap if cap else None
        d["offered_rate_per_s"] = float(rate)
        d["capacity_requests_per_s"] = cap
        d["load"] = load
        d["queue_growth_s_per_s"] = growth + 0.0  # no -0.0 in the JSON
        d["saturated"] = bool(growth > GROWTH_LIMIT or (load is not None and load >= 1.0))
    return out


def stage_metrics(trace: Trace, stages, capacity_requests_per_s: float | None = None) -> list[dict]:
    """`interval_metrics` over the stages of a staged profile [(rate, duration), ...] (by arrival time, so a
    request belongs to the stage it arrived in), plus per stage the evidence of saturation, judged as the
    whole run's is (simulate/capacity.py `saturation`) but on the stage's own arrivals and rate:
    offered_rate_per_s (the stage's rate), capacity_requests_per_s (given: the deployment's analytic capacity,
    capacity.capacity; None where it is not modelled), load = offered / capacity, queue_growth_s_per_s (the
    least-squares slope of the waiting time, admission − arrival, against arrival time over the later half of
    the stage's arrivals: about ρ − 1 past capacity, about 0 below it), and saturated = load >= 1 or growth >
    capacity.GROWTH_LIMIT. A stage draining an earlier stage's backlog has a falling wait: it is not saturated,
    and its queue_start shows the backlog. A stage's finished requests and throughput count what finishes
    while it runs: what finishes after the last stage (the drain) is in the run's totals and in its windows."""
    from .workload import stage_bounds

    edges = stage_bounds(stages)
    return _with_saturation(interval_metrics(trace, edges), trace, edges, [rate for rate, _ in stages],
                            capacity_requests_per_s)
