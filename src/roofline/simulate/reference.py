"""A naive per-token simulator of continuous batching, written for clarity, not speed.

Every iteration walks every active sequence in Python, as simple simulators do. It has no KV limit,
no speculation and one priority class. It exists as a second derivation: the fast event loop
(core.py) must reproduce its per-request times (tests), and benchmarks/simulate.py measures the
speed ratio between the two in the same run.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from .steptable import StepTable
from .workload import Workload


def naive_continuous(workload: Workload, table: StepTable, max_seqs: int = 256, max_batched_tokens: int = 8192,
                     mixed=None):
    """(first_token_s, finish_s) arrays under continuous batching, one Python step per token. `mixed` (a
    steptable.MixedPass, as the fast loop uses) times the passes that carry prompts; decode passes use the table."""
    arr, P, O = workload.arrival_s.tolist(), workload.prompt_tokens.tolist(), workload.output_tokens.tolist()
    n = len(arr)
    first, finish = [0.0] * n, [0.0] * n
    waiting: deque = deque()
    active: list = []  # [rid, cached tokens, decode passes left]
    now, nxt, done = 0.0, 0, 0
    while done < n:
        if not active and not waiting and nxt < n:
            now = max(now, arr[nxt])
        while nxt < n and arr[nxt] <= now:
            waiting.append(nxt)
            nxt += 1
        budget = max_batched_tokens - len(active)
        new: list[int] = []
        while waiting and len(active) + len(new) < max_seqs:
            rid = waiting[0]
            if P[rid] > budget and new:
                break
            new.append(waiting.popleft())
            budget -= P[rid]
        b = len(active) + len(new)
        tokens = len(active) + sum(P[rid] for rid in new)
        context = sum(s[1] for s in active)
        if new and mixed is not None:
            now += mixed(len(active), 1, context, [(P[rid], 0) for rid in new])
        else:
            now += table.t(b, tokens, context / b)
        for s in active:  # one token for every decoding sequence
            s[1] += 1
            s[2] -= 1
        for rid in new:
            first[rid] = now
            active.append([rid, P[rid], O[rid] - 1])
        still = []
        for s in active:
            if s[2] == 0:
                finish[s[0]] = now
                done += 1
            else:
                still.append(s)
        active = still
    return np.asarray(first), np.asarray(finish)
