"""The analytic capacity of a serving deployment, and whether a simulated run was past it.

A run offered more requests per second than its deployment can serve has no steady state: its queue grows
for as long as arrivals last, and its latencies measure the run's length, not the deployment. Such a run is
said to be past saturation, and its percentiles are not reported as if they were latencies (issue 20).

Capacity (continuous batching, Orca OSDI 2022; chunked prefill, Sarathi-Serve OSDI 2024). At full load every
pass carries the largest batch the scheduler and the KV pool allow,

    B = min(max_seqs, KV capacity / KV per sequence),  KV per sequence = P + D·g/2 (+ window overhead)

(on-demand KV: a sequence holds on average its prompt and half its output; P + D·g when KV is reserved at
admission), at the mean decoding context c = P + D·g/2 — both means over the running batch, where a request
counts for the D_i passes it holds its slot (Σ D_i·(P_i + D_i·g/2)/Σ D_i: long requests are over-represented).
One request costs the server its share of D decode
passes of that batch and the time its prompt adds to the passes it rides in:

    λ_max = 1 / (D · t_dec(B, c) / B + Δ_prefill),   Δ_prefill = Σ_chunks [t(B decodes + chunk) − t(B decodes)]

with t from the deployment's own step model (MixedPass for the engine: each chunk at its own context; the
table's mean pass otherwise), D the mean decode passes per request (output − 1, divided by the mean tokens
per pass under speculation, g = tokens per pass), and chunks of at most max_batched_tokens − B·r tokens
(chunked) or the whole prompt (continuous); under 'separate' (prefill-only passes) Δ_prefill = t(k prompts
alone)/k with k = max(1, ⌊max_batched_tokens / P⌋) prompts a pass (chunks of the budget for longer prompts); with
prefix caching the chunks start after the run's mean hit
tokens h, and h leaves each sequence's private KV (its blocks are stored once). A prefill-only pool (disaggregated: every output is its first
token) serves k = max(1, ⌊max_batched_tokens / P⌋) prompts a pass: λ_max = k / t(k prompts). A decode pool
whose requests arrive prefilled has Δ_prefill = 0. Static batching and train departures are not covered
(their capacity is the batch over the whole batch's time; `capacity` returns None).

The token budget (chunked): a pass carries at most max_batched_tokens (N) tokens, decodes first. When B·r ≥ N
(TensorRT-LLM accepts max_num_tokens below max_batch_size; vLLM refuses max_num_batched_tokens below
max_num_seqs), B decodes leave no room for prompts, and the batch the budget can keep fed is the one at which
the prompts admitted per pass, (N − B·r)/(P − h), replace the B/D sequences that finish: B = N / (r + (P − h)/D)
(limit "token budget"), every pass full. Without it the formula above chunked each prompt into a 1-token room: an
absurd capacity (found on MLPerf v5.1 runs with max_num_tokens 256–768 below max_batch_size 512–768, serving set
m). Ignores: that the same balance caps B below max_seqs and the KV pool whenever N − B·r is too small to refill
B slots ((N − B·r)/(P − h) < B/D); there the formula above over-states the capacity, and the simulated queue's
growth is what flags saturation. Each chunk's added time counts at least 0 (interpolating the measured tables
can make a pass with a chunk marginally faster than without).

Ignores: the spread of lengths around their means (a mean-value analysis: with long-tailed lengths the true
capacity is somewhat lower), preemption's recomputation, priority classes.

Saturation of a run (`saturation`): the offered rate λ = (n − 1)/(last arrival − first arrival) over the
capacity is the load ρ; and the queue's growth, the least-squares slope of the waiting time (admission −
arrival) against the arrival time over the later half of the arrivals — about ρ − 1 for a fluid queue past
capacity (each second of arrivals adds (λ − μ)/μ seconds of backlog), about 0 for a stable one. A run is
past saturation when ρ ≥ 1 or the queue grows by more than GROWTH_LIMIT seconds per second. A burst (every
request arriving at one instant, as `--request-rate inf` sends them) has no offered rate and no steady state: it
is a finite batch whose latencies are its drain times, so it is marked `burst` with load None, not saturated.
A run of no more requests than the capacity's batch B (n ≤ B; TRANSIENT_RUNS) is the same kind of thing spread over
time: the deployment can hold all of it at once, so it never reaches the steady state ρ speaks of (B sequences
running, one replaced as one finishes) and no request waits for a slot; ρ is reported, but such a run is marked
`transient` and is past saturation only if its simulated queue grows (a prompt backlog the passes cannot clear).
Found on serving set cp (post hoc): 50 requests at 10 req/s of 1,000-token prompts and 2,000-token answers, ρ =
1.3-4.7 over a steady state that needs ~200 sequences in flight, measured TTFTs of 24-56 ms on Llama 3 models (no
queue), which the ρ rule called past saturation.

How much a latency below saturation can be trusted (`latency_sensitivity` = ρ/(1 − ρ)): under continuous
batching a pass's time is a fixed part a plus a part per token b·n, and the tokens a pass carries grow with
the pass's own duration (n = λ·(P + D)·T), so T = a/(1 − ρ) with ρ = b·λ·(P + D). The elasticity
d ln T / d ln b = ρ/(1 − ρ): at ρ = 0.5 a 10% error in the per-token cost moves the step time (TPOT, and
the TTFT that waits for it) by 10%, at 0.8 by 40%, at 0.95 by 190%. Computed with the run's load ρ as the
stand-in for the per-token share (equal when the capacity is set by the work per token; an over-estimate when
max_seqs or KV caps the batch). None at or past saturation, and for a transient run (its passes never carry the
steady state's tokens).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .policies import Policy
from .steptable import Deployment, mixed_pass
from .workload import Workload

#: waiting time gained per second of arrivals above which a run's queue counts as running away (5%)
GROWTH_LIMIT = 0.05
#: A run of n ≤ B requests (B: the capacity's batch) is `transient`: ρ ≥ 1 alone does not put it past saturation,
#: only a growing queue does (module docstring). False: ρ ≥ 1 does, as every serving set up to cp was registered
#: (post hoc on set cp, whose 50-request runs were all called past saturation).
TRANSIENT_RUNS = True


@dataclass(frozen=True)
class Capacity:
    requests_per_s: float  # λ_max
    batch: float  # B at full load
    limit: str  # what sets B: "max_seqs", "kv" or "prompts per pass"
    decode_step_s: float  # t_dec(B, c) (0 for a prefill-only pool)
    prefill_s_per_request: float  # Δ_prefill

    def to_dict(self) -> dict:
        return {"capacity_requests_per_s": self.requests_per_s, "capacity_batch": self.batch,
                "capacity_limit": self.limit, "capacity_decode_step_s": self.decode_step_s,
                "capacity_prefill_s_per_request": self.prefill_s_per_request}


def capacity(workload: Workload, deployment: Deployment, policy: Policy, *, prefilled: bool = False,
             hit_tokens: float = 0.0) -> Capacity | None:
    """λ_max of `deployment` under `policy` for requests of the workload's mean lengths (module docstring).
    `hit_tokens`: mean prompt tokens a request finds in the prefix cache (a run's own hit rate): its prompt's
    chunks start on them and cover only the rest, and the shared blocks, stored once, leave its private KV."""
    if policy.kind not in ("continuous", "chunked", "separate"):
        return None
    step = deployment.step
    spec = policy.speculation
    r, g = (spec.gamma + 1, spec.tokens_per_step) if spec else (1, 1.0)
    P = float(np.mean(workload.prompt_tokens))
    D = float(np.mean(workload.output_tokens - 1)) / g
    budget = float(policy.max_batched_tokens)

    def t(b, n, c):
        return float(np.asarray(step(np.asarray(float(b)), np.asarray(float(n)), np.asarray(float(c)))))

    longest = float(np.max(workload.prompt_tokens + workload.output_tokens))
    mixed = mixed_pass(step, budget + policy.max_seqs * r + P, longest)  # tables up to the longest request
    if D == 0:  # prefill-only pool
        k = max(1, math.floor(budget / P))
        tk = mixed(0, 1, 0.0, [(P, 0.0)] * k) if mixed else t(k, k * P, 0.0)
        return Capacity(k / tk, float(k), "prompts per pass", 0.0, tk / k)
    h = min(max(float(hit_tokens), 0.0), P - 1.0)
    # the running batch is length-biased (a request holds its slot for its D_i passes): its mean context and KV
    # per sequence weight each request by D_i
    d_i = (workload.output_tokens - 1) / g
    w = d_i.sum()
    p_i = workload.prompt_tokens
    c = float((d_i * (p_i + d_i * g / 2.0)).sum() / w) if w > 0 else P
    held = c if policy.preemption else (float((d_i * (p_i + d_i * g)).sum() / w) if w > 0 else P)
    kv_seq = held - h + deployment.kv_overhead_tokens
    b_kv = deployment.kv_capacity_tokens / kv_seq
    B, limit = (float(policy.max_seqs), "max_seqs") if policy.max_seqs <= b_kv else (max(1.0, b_kv), "kv")
    if policy.kind == "chunked" and not prefilled and B * r >= budget:  # no room left for prompts (docstring)
        B, limit = max(1.0, budget / (r + max(P - h, 1.0) / D)), "token budget"
    t_base = mixed(B, r, B * c, []) if mixed else t(B, B * r, c)
    t_dec = t_base  # + γ draft steps of a decode step's cost each (Speculation.draft_fraction), as the event loop
    if spec:
        t_dec += spec.gamma * spec.draft_fraction * (mixed(B, 1, B * c, []) if mixed else t(B, B, c))
    delta = 0.0
    if not prefilled and policy.kind == "separate":  # prefill-only passes of k prompts (chunks of the budget)
        k = max(1, math.floor(budget / max(P - h, 1.0)))
        ch = min(budget, P - h)
        tk = mixed(0, 1, 0.0, [(ch, h)] * k) if mixed else t(k, k * ch, h)
        delta = tk / k * math.ceil((P - h) / ch)
    elif not prefilled:
        room = budget - B * r if policy.kind == "chunked" else max(budget, P)
        room = max(room, 1.0)
        x = h
        while x < P:  # the prompt's chunks (after its cached prefix), each riding in a pass of B decodes
            ch = min(room, P - x)
            with_chunk = mixed(B, r, B * c, [(ch, x)]) if mixed else t(B + 1, B * r + ch, (B * c + x) / (B + 1))
            delta += max(with_chunk - t_base, 0.0)  # a chunk never shortens a pass (table interpolation noise)
            x += ch
    return Capacity(1.0 / (D * t_dec / B + delta), B, limit, t_dec, delta)


def saturation(arrival_s, admit_s, cap: Capacity | None) -> dict:
    """Offered rate, load ρ = offered / capacity, the queue's growth (s of waiting per s of arrivals, over the
    later half of the arrivals) and the verdict `saturated` (module docstring); keys for the --json dict."""
    a = np.asarray(arrival_s, dtype=float)
    wait = np.asarray(admit_s, dtype=float) - a
    span = float(a[-1] - a[0]) if a.size > 1 else 0.0
    offered = (a.size - 1) / span if span > 0 else math.inf
    half = a.size // 2
    growth = 0.0
    if a.size >= 8 and float(a[-1] - a[half]) > 0:
        x, y = a[half:], wait[half:]
        growth = float(np.polyfit(x - x.mean(), y, 1)[0])
    burst = a.size >= 1 and span == 0.0  # every request at one instant (one request included): no rate, no load
    load = offered / cap.requests_per_s if cap is not None and not burst else None
    # no more requests than one full batch: it never reaches the steady state ρ is about (TRANSIENT_RUNS)
    transient = bool(TRANSIENT_RUNS and cap is not None and not burst and a.size <= cap.batch)
    saturated = bool(growth > GROWTH_LIMIT or (load is not None and load >= 1.0 and not transient))
    out = {"offered_requests_per_s": offered if math.isfinite(offered) else None,
           "load": load if load is not None and math.isfinite(load) else None,
           "queue_growth_s_per_s": growth, "saturated": saturated, "burst": burst, "transient": transient,
           "latency_sensitivity": load / (1.0 - load) if load is not None and 0 <= load < 1 and not transient else None}
    if cap is not None:
        out.update(cap.to_dict())
    return out


def run_saturation(wl: Workload, tr, dep: Deployment, prefill_dep: Deployment | None, pol: Policy) -> dict:
    """A run's analytic capacity and saturation keys at the run's own mean prefix-cache hit: a disaggregated
    deployment's capacity is the smaller of its prefill pool's (prompts only) and its decode pool's (prefilled
    requests)."""
    from dataclasses import replace

    hit = float(np.mean(tr.prefix_hit_tokens)) if tr.prefix_hit_tokens is not None else 0.0
    if prefill_dep is None:
        cap = capacity(wl, dep, pol, hit_tokens=hit)
    else:
        pre = capacity(replace(wl, output_tokens=np.ones_like(wl.output_tokens)), prefill_dep,
                       replace(pol, speculation=None), hit_tokens=hit)
        dec = capacity(wl, dep, pol, prefilled=True)
        cap = min((c for c in (pre, dec) if c is not None), key=lambda c: c.requests_per_s, default=None)
    return saturation(tr.arrival_s, tr.admit_s, cap)
