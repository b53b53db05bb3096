"""The discrete-event serving simulator: one object holds all state; one seeded Generator; no I/O.

The clock advances one model pass (iteration) at a time, or many decode iterations at once: when no
request can join and none finishes, arrives or crosses a linear piece of the step table before
iteration k, the k step times form an arithmetic sequence t_j = t0 + s·j (context grows by one token
per sequence per iteration), so they are summed in closed form, k·t0 + s·k(k−1)/2, and the first
iteration ending after the next arrival solves that quadratic. Per-request work is O(1) Python;
there is no per-token work. Iteration end times are reconstructed afterwards, vectorised, from the
recorded segments, and every request's admission, first-token and finish times come from them.

Model of a pass (see policies.py for the schedulers): sequences in the pass, new tokens (1 per
decoding sequence, γ+1 under speculation, prompt chunks for prefills) and their mean cached context
go through the StepTable. The first token comes out of the pass that completes the prompt; each
later token needs one decode (or verify) pass. Context grows by the expected tokens per pass.

Prefix caching (docs/simulator.md "Prefix caching"; vLLM automatic prefix caching, SGLang RadixAttention):
requests with a shared prefix hit min(cached blocks, their whole prefix blocks) of it at admission and
prefill only the rest (attention still reads the hit tokens); the blocks are stored once in the KV pool,
pinned by the running sequences that use them (to the deepest user's depth), evicted LRU from the tail when
unpinned and memory runs out. Prefixes form a tree (prefixes.py): a hit walks the request's path from the root,
and a request whose answer is part of its prefix leaves the answer's blocks cached when it finishes.
A closed-loop client (ClosedLoop) sends the next request on each completion, or, with sessions, each turn when
the answer it follows has reached the user (the sent requests enter the waiting queue in time order).
Mixed and prefill passes are timed by steptable.MixedPass (each part's attention at its own context) when
the step model is the engine's. Engine overheads (scheduler, sampling, API server, tokeniser) enter as a
wrapped step model and shifted arrivals (overheads.py), not here.
Ignores: network time inside a pool beyond the layout's collectives (engine.py), KV block
fragmentation, variation of acceptance between sequences within one pass, and the prefix cache's
approximations listed in the docs (only declared prefixes are cached; one LRU position per node of the tree).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from collections import OrderedDict, deque
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import DoesNotFitError, InputError
from ..speculative import draw_verify_steps
from .policies import Policy
from .prefixes import (
    HostCache,
    HostTier,
    ancestor_hit,
    cache_ancestors,
    evict,
    keep_answer,
    pin,
    pin_ancestors,
    prefix_tree,
    release,
    release_ancestors,
    unpin_path,
    warm_cache,
)
from .segments import Segments, iteration_times, view
from .steptable import Deployment, StepTable, mixed_pass
from .workload import Workload, check_sessions

# The admission stack (most recent last, for LIFO preemption) is pruned of finished requests when it grows
# past this many entries (then past twice what is left): memory, not results (tests/test_simulate_memory.py).
PRUNE_STACK_AT = 4096
# Preemptions of sequences that had not decoded a token since their prefill, in a row with no request finishing,
# after which the run is declared stalled (two prompts that fit only one at a time preempting each other
# forever under chunked prefill and a tiny KV pool); a run that ends never comes near this.
STALL_PREEMPTIONS = 10_000
# Asynchronous host-tier loads: a request whose path holds blocks another request is still loading waits for that load
# (vLLM's OffloadingConnector from 0.15, PR #29087; physically the blocks are not there before). Off: as set cl was
# registered (its hits took such blocks at once).
WAIT_FOR_LOADING_BLOCKS = True
# Initial segment capacity per request (plus 1,024); the columns double when full.
SEGMENTS_PER_REQUEST = 2
# KV block size of the prefix cache: vLLM's default block_size is 16 tokens (vllm/config CacheConfig); SGLang's
# radix cache matches token by token (block 1).
DEFAULT_BLOCK_TOKENS = 16
MAX_BLOCK_TOKENS = 4096


def fifo_departures(ready_s, service_s) -> np.ndarray:
    """Departures from one first-in-first-out server (Lindley's recursion, D_i = max(A_i, D_{i-1}) + S_i) of jobs ready
    at `ready_s` (in service order) needing `service_s` each, vectorised: D_i = C_i + max_{j<=i}(A_j - C_{j-1}) with C
    the cumulative service. Zero service gives the running maximum of the ready times."""
    a = np.asarray(ready_s, dtype=float)
    s = np.asarray(service_s, dtype=float) * np.ones(a.shape)
    c = np.cumsum(s)
    return np.maximum.accumulate(a - (c - s)) + c


def _passes_to(dt: float, t0: float, s: float, k: int) -> int:
    """Decode passes (first t0 long, each s longer than the one before) until `dt` seconds have passed: the
    first pass that starts at or after dt, at least 1; k when the k passes of the segment end before it."""
    if dt >= k * t0 + s * k * (k - 1) / 2.0:
        return k
    if s > 0:
        a = t0 - s / 2.0
        ka = max(1, math.ceil((-a + math.sqrt(a * a + 2.0 * s * dt)) / s))
    else:
        ka = max(1, math.ceil(dt / t0))
    while ka > 1 and (ka - 1) * t0 + s * (ka - 1) * (ka - 2) / 2.0 >= dt:
        ka -= 1
    return ka


@dataclass(frozen=True)
class OutputStage:
    """The engine's output path as its own stage (`simulate --stream-s-per-chunk`, run key `stream_s_per_chunk`): one
    server (SGLang's single detokenizer and TokenizerManager processes, a Python API server's event loop) that takes
    each pass's streamed chunks, one per sequence that made a token in it, in pass order, and spends
    per_pass_s + per_chunk_s · chunks on them; a token reaches the client when its pass's chunks leave the server,
    and a closed-loop client sends its next request then. Lindley's recursion D_j = max(E_j, D_{j−1}) + σ_j over the
    pass ends E_j, in closed form over a decode segment of k passes with one σ: D_k = max(max(D_0, E_1) + k·σ,
    E_k + σ) (E_j − jσ is convex in j, so its maximum over the segment is at an end). TTFT, TPOT and end-to-end
    latency see the stage; the per-pass gap distribution (ITL percentiles from the segments) stays the engine's.
    Ignores: a server that overlaps its chunks with incoming requests' tokenising (they share it here only through
    the closed loop's timing), several output workers. Off (both 0) by default."""

    per_pass_s: float = 0.0
    per_chunk_s: float = 0.0

    def __post_init__(self):
        for name in ("per_pass_s", "per_chunk_s"):
            v = getattr(self, name)
            if not (math.isfinite(v) and 0.0 <= v <= 1.0):
                raise InputError(f"output stage {name} must be between 0 and 1 s, got {v}; SGLang's output path "
                                 "costs tens of microseconds a chunk")

    @property
    def on(self) -> bool:
        return self.per_pass_s > 0.0 or self.per_chunk_s > 0.0


@dataclass
class ClosedLoop:
    """A closed-loop client inside the run (`vllm bench serve` / `sglang.bench_serving --max-concurrency C`): at most
    `concurrency` requests in flight; the workload's arrival_s are the client's own releases (sorted; all 0 for
    `--request-rate inf`), and request C + j is sent at the later of its release and the (j + 1)-th completion the
    client sees (an engine finish + `delay_out_s`), reaching the scheduler `delay_in_s[i]` after its send (request-in
    and tokenising). Ignores: the client's own think time (none in those tools). A request's scheduler arrival is
    held at or after the one before it (the queue is in send order). `service_s[i]`, the part of delay_in_s[i] a
    single server does one request at a time (the engine's tokeniser: overheads.fifo_arrivals), starts only when the
    request before it has left that server: arrival = max(send + delay_in − service, previous arrival) + service."""

    concurrency: int
    delay_in_s: np.ndarray
    delay_out_s: float = 0.0
    service_s: np.ndarray | None = None  # None: no serial part (every delay a pure one)
    #: sessions (a chat's turns, each sent when the one before it is answered): `after[j]` the request whose
    #: completion releases request j (-1: j is released at its own arrival_s), `think_s[j]` the user's time between
    #: seeing that answer and sending j. With them `concurrency` caps nothing: the sessions are the loop.
    after: np.ndarray | None = None
    think_s: np.ndarray | None = None
    #: filled by the run: each request's send (the user's frame), for the caller's trace
    sends_s: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self):
        if int(self.concurrency) != self.concurrency or self.concurrency < 1:
            raise InputError(f"closed-loop concurrency must be a whole number >= 1, got {self.concurrency!r}")
        if (self.after is None) != (self.think_s is None):
            raise InputError("sessions need both after (the request each one waits for) and think_s; give both or "
                             "neither")
        if self.after is not None:
            check_sessions(np.asarray(self.after), np.asarray(self.think_s, dtype=float))


@dataclass(frozen=True)
class Trace:
    """What a run returns. Per request (arrays of length n, seconds): arrival_s, admit_s (first
    admission), first_token_s, finish_s, prompt/output tokens, priority, preemptions. Per segment
    of the clock (k iterations of identical shape): seg_start_s, seg_iters, seg_t0_s, seg_slope_s
    (step j of the segment takes t0 + slope·j), seg_batch (sequences per pass: decoding ones, prompt chunks and a
    static batch's finished slots), seg_tokens, seg_decodes (the sequences a pass gives a token that is not their
    first: the inter-token gaps it makes; None: seg_batch)."""

    arrival_s: np.ndarray
    admit_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    priority: np.ndarray
    preemptions: np.ndarray
    seg_start_s: np.ndarray
    seg_iters: np.ndarray
    seg_t0_s: np.ndarray
    seg_slope_s: np.ndarray
    seg_batch: np.ndarray
    seg_tokens: np.ndarray
    gpus: int
    usd_per_gpu_hour: float
    policy: str
    # prefix caching (block_tokens 0: off): tokens of each request's prompt served from the cache at its first
    # admission; over the run, prompt tokens not prefilled thanks to hits (re-admissions after preemption
    # included), blocks evicted, blocks cached at the end
    prefix_hit_tokens: np.ndarray | None = None
    prefill_tokens_saved: float = 0.0
    prefix_evictions: int = 0
    prefix_cached_blocks: int = 0
    block_tokens: int = 0
    # per first admission and node of its path that earlier requests computed: the seconds its blocks had waited
    # since their last use (0: another running request was using them), the tokens it could reuse there and those it
    # hit (docs/simulator.md "How long reused blocks waited")
    reuse_interval_s: np.ndarray | None = None
    reuse_tokens: np.ndarray | None = None
    reuse_hit_tokens: np.ndarray | None = None
    seg_decodes: np.ndarray | None = None
    # a KV tier in host memory behind the prefix cache (Simulation's host_tier; None/0 without one): tokens of each
    # request's prompt loaded from it at its first admission; over the run, tokens loaded (re-admissions included),
    # the seconds their loads added to passes, blocks the tier evicted, blocks it holds at the end
    host_hit_tokens: np.ndarray | None = None
    host_loaded_tokens: float = 0.0
    host_load_s: float = 0.0
    host_evictions: int = 0
    host_cached_blocks: int = 0
    # a disk tier behind it (HostTier.disk_tokens > 0; 0 without one): its capacity in blocks, tokens loaded from
    # blocks only it held (within host_loaded_tokens), blocks it evicted, blocks it holds at the end
    disk_capacity_blocks: int = 0
    disk_loaded_tokens: float = 0.0
    disk_evictions: int = 0
    disk_cached_blocks: int = 0

    @property
    def seg_busy_s(self) -> np.ndarray:
        k = self.seg_iters
        return k * self.seg_t0_s + self.seg_slope_s * k * (k - 1) / 2.0

    @property
    def iterations(self) -> int:
        return int(self.seg_iters.sum())


class Simulation:
    """One run: `Simulation(workload, deployment, policy, seed=...).run()` returns a Trace.

    `first_token_s`, when given, marks the requests as already prefilled elsewhere (the decode pool
    of a disaggregated deployment): they join decoding with their prompt's KV and need output − 1
    decode passes; their first-token times are the given ones.

    `warm_prefixes` (with the prefix cache on): every prefix of the workload is already cached when the run starts,
    to the full blocks of its longest use, unpinned and evictable (least recently used first, in prefix order) — the
    cache that earlier runs on the same server left behind (a benchmark sweep against one server, whose prompts of
    the same seed repeat or extend one another). An array of prefix ids warms only those (a client's warm-up
    requests, which sent some of the prompts the run sends again). Without it every prefix is computed by its first
    request.

    `host_tier` (prefixes.HostTier; with the prefix cache on): a second tier of the cache in host memory, written
    through as blocks become cached; a hit loads the blocks only it holds back into HBM, and the pass that carries
    the request's first chunk waits for the load (a synchronous load, as LMCache's default retrieval; vLLM's
    offloading connector loads asynchronously, which this overstates for the other requests of that pass).
    """

    def __init__(self, workload: Workload, deployment: Deployment, policy: Policy = Policy(), *, seed: int | np.random.SeedSequence = 0,
                 table: StepTable | None = None, first_token_s=None, mixed=True,
                 prefix_cache: bool | None = None, block_tokens: int = DEFAULT_BLOCK_TOKENS,
                 closed_loop: ClosedLoop | None = None, warm_prefixes: bool | np.ndarray = False,
                 stream: OutputStage | None = None, decode_step=None, host_tier: HostTier | None = None):
        self.workload, self.deployment, self.policy = workload, deployment, policy
        self.stream = stream if stream is not None and stream.on else None
        # True: every prefix; an array: those prefix ids only (None: no prefix is warm)
        self.warm_ids = None if isinstance(warm_prefixes, bool) else np.asarray(warm_prefixes, dtype=np.int64)
        self.warm_prefixes = bool(warm_prefixes) if self.warm_ids is None else self.warm_ids.size > 0
        if int(block_tokens) != block_tokens or not 1 <= block_tokens <= MAX_BLOCK_TOKENS:
            raise InputError(f"KV block size must be a whole number of tokens between 1 and {MAX_BLOCK_TOKENS}, got "
                             f"{block_tokens}; vLLM's default is {DEFAULT_BLOCK_TOKENS}, SGLang's radix cache is 1")
        self.block_tokens = int(block_tokens)
        # prefix caching: on by default where the workload has shared prefixes (vLLM V1 and SGLang enable it by
        # default); never on a pool of already-prefilled requests (nothing left to prefill)
        on = workload.has_prefixes if prefix_cache is None else bool(prefix_cache)
        self.prefix_cache = on and workload.has_prefixes and first_token_s is None
        if host_tier is not None and (prefix_cache is False or first_token_s is not None):
            raise InputError("a host KV tier sits behind the prefix cache: turn the prefix cache on (or leave it auto), "
                             "and give it to the pool that prefills, or drop the host tier")
        self.host_tier = host_tier
        self.rng = np.random.default_rng(seed)
        self.prefilled = first_token_s is not None
        if closed_loop is not None and (self.prefilled or np.any(workload.priority != 0)
                                        or len(closed_loop.delay_in_s) != workload.n
                                        or (closed_loop.after is not None and len(closed_loop.after) != workload.n)):
            raise InputError("a closed-loop client sends one class of requests to a pool that prefills them; give "
                             "priority 0 to every request, one delay_in_s (and one after) per request, and no "
                             "first-token times")
        if closed_loop is None and workload.after is not None:  # the workload's sessions, without engine delays
            closed_loop = ClosedLoop(1, np.zeros(workload.n), 0.0, after=workload.after, think_s=workload.think_s)
        self.closed_loop = closed_loop
        self.given_first_s = None if first_token_s is None else np.asarray(first_token_s, dtype=float)
        spec = policy.speculation
        self.ratio = spec.gamma + 1 if spec else 1
        self.growth = spec.tokens_per_step if spec else 1.0
        dec = workload.output_tokens - 1
        self.decode_passes = (draw_verify_steps(self.rng, dec, spec.alpha, spec.gamma) if spec
                              else dec.astype(np.int64))
        need = workload.prompt_tokens + self.decode_passes * self.growth + deployment.kv_overhead_tokens
        if np.any(need > deployment.kv_capacity_tokens):
            i = int(np.argmax(need > deployment.kv_capacity_tokens))
            raise DoesNotFitError(f"request {i} needs {need[i]:,.0f} tokens of KV cache but the deployment holds "
                             f"{deployment.kv_capacity_tokens:,.0f}; shorten it or add memory")
        max_ctx = float(np.max(workload.prompt_tokens + self.decode_passes * self.growth)) + 1
        max_ratio = max(float(policy.max_batched_tokens), float(workload.prompt_tokens.max()), self.ratio)
        # decode-only passes from the step table; `decode_step` (a step model of its own: validate's kernels: hybrid)
        # builds it where passes that carry prompt tokens keep the deployment's (the mixed-pass model below)
        self.table = table or StepTable(decode_step if decode_step is not None else deployment.step, policy.max_seqs,
                                        max_ratio, max_ctx)
        # mixed and prefill passes from the engine's terms, each part's attention at its own context (None:
        # a step model that is not the engine's keeps the table's pass of mean length at the mean context)
        self.mixed = mixed if callable(mixed) else (  # a caller's own (reused across runs of one deployment)
            mixed_pass(deployment.step, policy.max_batched_tokens + policy.max_seqs * self.ratio
                       + float(workload.prompt_tokens.max()), max_ctx) if mixed else None)
        if self.prefix_cache:
            self.prefix_tree = prefix_tree(workload, self.block_tokens)

    def run(self, progress=None) -> Trace:  # noqa: C901 - one loop, kept in one place on purpose
        # Speed notes (the loop runs ~1.5 times per request): everything it touches is a local name
        # (bound methods included); the two priority queues are inlined as index pointers p0/p1 over
        # lists of arrival times that end in an inf sentinel, so "next waiting request" and "next
        # arrival" are plain comparisons; sums over the prefill list are skipped when it is empty
        # (always, under continuous batching) and taken once before the preemption loop (which
        # leaves the list unchanged); StepTable.t/decode_segment do their lookups inline in O(1).
        # Every arithmetic expression is the same as before, in the same order, so results are
        # bit-identical to the straightforward version. The prefix cache adds O(1) work per admission,
        # prefill completion and finish, behind `pc`/`free_tok` tests; its memory term lives in `room`.
        w, pol, dep, tab = self.workload, self.policy, self.deployment, self.table
        n = w.n
        kind = pol.kind
        static, train, separate = kind == "static", kind == "train", kind == "separate"
        chunked = kind == "chunked" or separate  # prompts split to the token budget
        interval, max_seqs, max_tok = pol.interval_s, pol.max_seqs, pol.max_batched_tokens
        long_pf = pol.long_prefill_token_threshold or 1 << 62  # most tokens of one prompt in a pass (only 'chunked')
        pf_cap = pol.max_prefill_tokens  # SGLang's --max-prefill-tokens (policies.py); 0 = off
        # SGLang's --scheduler-recv-interval N: while only decode passes run, the scheduler takes in new requests
        # every N of them (after any other pass, or when idle, at once); `heard` = arrivals up to the last receive
        recv_every = int(pol.recv_interval)
        since_recv, heard, last_decode = 0, 0.0, False
        # AMD's MLPerf vLLM patch: a counter `phase` cycles through admit_every passes of any kind; waiting requests
        # are admitted only at phase 0, or at any phase while fewer than admit_min sequences run (policies.py)
        admit_every, admit_min, phase = int(pol.admit_interval), int(pol.admit_min_running), 0
        # schedule_ahead (policies.py): while sequences run, pass k + 1 was scheduled when pass k started, so it
        # admits only what had arrived by then (`prev_start`); with nothing running the scheduler sees arrivals at once
        ahead = bool(pol.schedule_ahead) and kind in ("continuous", "chunked", "separate")
        prev_start, lagged = 0.0, False
        r, g = self.ratio, self.growth
        draft = pol.speculation.gamma * pol.speculation.draft_fraction if pol.speculation else 0.0
        cap, ovh = dep.kv_capacity_tokens, dep.kv_overhead_tokens
        on_demand = pol.preemption and not static
        # vLLM V1's KV allocation (policies.KV_ADMISSION "chunk"): a prompt holds only the tokens computed so far, each
        # pass needs room for its chunks and decode growth, else the most recently admitted sequence is preempted
        v1 = pol.kv_admission == "chunk"
        preempted_now = False
        prefilled = self.prefilled
        inf = math.inf
        # Per-request state lives in NumPy arrays written and read through memoryviews (Python ints and
        # floats in and out, as from lists, at 8 bytes a request instead of a list slot plus an object):
        # 10^6 requests hold about 100 MB here instead of about 500 MB of lists.
        pre_len_a = w.prompt_tokens.astype(float)  # a copy: preemption adds generated tokens to it
        rem_a = self.decode_passes.astype(np.int64)  # a copy: preemption subtracts the passes done
        pre_len, rem = view(pre_len_a), view(rem_a)
        # waiting requests of priority class 0 and 1 in arrival order: ids q0/q1, arrival times a0/a1
        # (each ending in an inf sentinel, never reached: `now` stays finite), next one at p0/p1
        q0_a, q1_a = (np.flatnonzero(w.priority == c) for c in (0, 1))
        a0_a, a1_a = (np.append(w.arrival_s[q].astype(float), inf) for q in (q0_a, q1_a))
        loop = self.closed_loop  # a closed-loop client (ClosedLoop): only C sent at first, one more per completion
        arr_a = w.arrival_s  # scheduler arrival of each request (a closed loop's, a copy, are set as they are sent)
        sessions = loop is not None and loop.after is not None
        if sessions:  # a turn is sent when the one it follows is answered: queue slots filled as turns are sent
            assert loop is not None and loop.after is not None and loop.think_s is not None
            arr_a, c_loop = w.arrival_s.astype(float), n
            din_a = np.asarray(loop.delay_in_s, dtype=float) * np.ones(n)
            after_a = np.asarray(loop.after, dtype=np.int64)
            first = np.flatnonzero(after_a < 0)  # released at their own arrival_s
            arr_a[first] = w.arrival_s[first] + din_a[first]
            sent0 = first[np.argsort(arr_a[first], kind="stable")]
            q0_a[:] = -1
            q0_a[:sent0.size] = sent0
            a0_a[:n] = inf
            a0_a[:sent0.size] = arr_a[sent0]
            filled = int(sent0.size)  # queue slots holding a sent request
            later = np.flatnonzero(after_a >= 0)
            later = later[np.argsort(after_a[later], kind="stable")]
            cut = np.searchsorted(after_a[later], np.arange(n + 1))  # the requests each completion releases
            nxt = [later[cut[i]:cut[i + 1]].tolist() for i in range(n)]
            think = view(np.asarray(loop.think_s, dtype=float) * np.ones(n))
            snd_a = w.arrival_s.astype(float)
            arr, snd, din, dout = view(arr_a), view(snd_a), view(din_a), float(loop.delay_out_s)
        elif loop is not None:
            arr_a = w.arrival_s.astype(float)
            c_loop = min(int(loop.concurrency), n)
            rel_a, din_a = w.arrival_s.astype(float), np.asarray(loop.delay_in_s, dtype=float)
            svc_a = np.zeros(n) if loop.service_s is None else np.asarray(loop.service_s, dtype=float) * np.ones(n)
            din_a = din_a - svc_a  # the pure delay before the serial server; its service follows in send order
            a0_a[:c_loop] = fifo_departures(rel_a[:c_loop] + din_a[:c_loop], svc_a[:c_loop])
            a0_a[c_loop:n] = inf
            arr_a[:c_loop] = a0_a[:c_loop]
            snd_a = rel_a.copy()  # sends: the first C at their releases, the rest set as the loop sends them
            rel, din, arr, snd, dout = view(rel_a), view(din_a), view(arr_a), view(snd_a), float(loop.delay_out_s)
            svc = view(svc_a)
        next_send = c_loop if loop is not None else n
        q0, q1, a0, a1 = (view(x) for x in (q0_a, q1_a, a0_a, a1_a))
        p0 = p1 = 0
        requeue: deque = deque()
        its = np.full((4, n), -1, dtype=np.int64)  # iteration of admission, prefill end, first token, finish
        admit_it, pf_it, first_it, fin_it = (view(x) for x in its)
        npre_a, state_a, reserve_a = np.zeros(n, np.int64), np.zeros(n, np.int8), np.zeros(n)
        npre, state, reserve = view(npre_a), view(state_a), view(reserve_a)
        # state 0 waiting, 1 prefilling, 2 decoding, 3 done
        buckets: dict = {}  # finish iteration -> request ids
        heap: list = []  # finish iterations with a bucket
        pf: deque = deque()  # [rid, tokens left to prefill]
        stack: list = []
        nd = nseq = pad = done = it = 0
        # passes in which the decoding sequences did not advance (policy 'separate': prefill-only passes); the
        # decode clock it − lag keys the finish buckets and pf_it, so a stall delays every decoder by one pass
        lag = 0
        ctx_sum = reserved = now = 0.0
        # segments: preallocated NumPy columns (it0, start, k, t0, slope, batch, tokens, decodes) written through
        # memoryviews at index ns; `grow` doubles them when full (a run of n requests makes ~1.5 n; pages
        # never written are never touched, so the spare capacity costs address space, not memory)
        seg = Segments(SEGMENTS_PER_REQUEST * n + 1024)
        mv_it0, mv_start, mv_k, mv_t0, mv_sl, mv_b, mv_tok, mv_d = seg.views
        ns, seg_cap = 0, seg.capacity
        report_every, next_report, reported = 4096, 4096, 0
        # the output stage (OutputStage): the departure of each segment's last pass from the one output server
        st = self.stream
        streaming = st is not None
        out_a, out_b = (st.per_pass_s, st.per_chunk_s) if st is not None else (0.0, 0.0)
        out_free, outs = 0.0, []
        # bound methods and functions used in the loop
        heappush, heappop, ceil = heapq.heappush, heapq.heappop, math.ceil
        bucket_get, t_pass, t_decode, mixed = buckets.get, tab.t, tab.decode_segment, self.mixed
        push_stack = stack.append
        prune_at = PRUNE_STACK_AT  # finished ids are dropped from `stack` when it grows past this
        # ---- prefix cache (docs/simulator.md "Prefix caching"). Memory in use = ctx_sum (every running
        # sequence's whole context: the attention input) + held + pending prompt tokens, where held = pinned
        # cached tokens (per prefix, to its deepest running user's depth; stored once) − tokens of running
        # sequences' contexts that are cached blocks; free_tok = cached tokens no running sequence uses
        # (evictable, LRU). Admission and preemption count memory without free_tok (eviction frees it); eviction runs when
        # memory with free_tok passes the capacity. The checks compare with room = cap − held (kept up to date
        # as held changes), so they cost no more than without the cache; without it room is cap exactly.
        stall, stall_done = 0, -1  # preemptions without progress in a row, and `done` when they began
        pc = self.prefix_cache
        room = cap
        free_tok = saved = 0.0
        evicted = 0
        blk = float(self.block_tokens)
        lru: OrderedDict = OrderedDict()  # nodes with unpinned cached blocks, least recently released first
        # the host tier (prefixes.HostCache): None without one; load seconds owed by the pass being built
        hc, load_acc, load_s_all, loaded, ld, lsec = None, 0.0, 0.0, 0.0, 0, 0.0
        disk_s, disk_loaded = 0.0, 0.0  # a disk tier's read seconds per token beyond host memory's; tokens it served
        # asynchronous loads (HostTier.sync False, vLLM's connector): a request whose blocks are loading is admitted
        # (its memory held) but joins no pass before `ready[rid]`; the host link takes loads one after another
        loads_async, link_free, load_tok_s, convoy, rdy = False, 0.0, 0.0, False, 0.0
        if pc:
            tree = self.prefix_tree  # prefixes.PrefixTree: a request's last node and its blocks there; per node
            pfx_a, fb_a = tree.leaf, tree.own  # its start and its ancestors (empty for a root: one node, one chain)
            starts, ancs = tree.start, tree.ancestors
            tails = tree.ends is not None  # answers that are part of a prefix, cached at their request's finish
            ends, mine = (view(x if x is not None else np.zeros(1, np.int64)) for x in (tree.ends, tree.mine))
            sh_a, hit_a = np.zeros(n, np.int64), np.full(n, -1.0)  # blocks served by the cache; first hit tokens
            dep_a = np.zeros(n, np.int64)  # global depth (blocks) of its prefix path a running sequence uses
            pfx, fb, sh, hit, depth = view(pfx_a), view(fb_a), view(sh_a), view(hit_a), view(dep_a)
            # per node: cached blocks, pinned blocks (its deepest running user's depth), running users by depth
            cached, pinned = [0] * tree.nodes, [0] * tree.nodes
            users: list = [{} for _ in range(tree.nodes)]
            # reuse intervals ("How long reused blocks waited"): per node when its blocks were last in use (hit, or
            # released by a finishing request; 0 for a warm start) and the most blocks it ever held; per first
            # admission and node of its path that earlier requests computed, the seconds since that use (0 while
            # another running request uses them), the tokens it could reuse there and the tokens it hit
            last_use, ever = [0.0] * tree.nodes, [0] * tree.nodes
            reuse: list = []  # (seconds, reusable tokens, hit tokens)
            r_add = reuse.append
            if self.warm_prefixes:  # left by earlier runs: each prefix to its longest use's full blocks, evictable
                has = pfx_a >= 0
                if self.warm_ids is not None:  # only the prefixes a warm-up sent
                    has &= np.isin(np.asarray(self.workload.prefix_id, dtype=np.int64), self.warm_ids)
                cached, order = warm_cache(tree, pfx_a[has], fb_a[has])
                lru.update((q, None) for q in order)
                free_tok = float(sum(cached)) * blk
            if self.host_tier is not None:
                hc = HostCache(tree.nodes, int(self.host_tier.capacity_tokens // blk),  # writes at the read rates
                               int(self.host_tier.disk_tokens // blk), self.host_tier.load_s_per_token * blk,
                               self.host_tier.disk_s_per_token * blk)
                load_tok_s = self.host_tier.load_s_per_token
                disk_s = self.host_tier.disk_s_per_token - load_tok_s
                hh_a = np.full(n, -1.0)  # tokens loaded from the host tier at its first admission
                hh = view(hh_a)
                loads_async = not self.host_tier.sync
                convoy = loads_async and WAIT_FOR_LOADING_BLOCKS
                hready = [0.0] * tree.nodes  # per node: when the blocks a load is bringing into it arrive
                ready_a = np.zeros(n)  # when a request's loaded blocks are in HBM (asynchronous loads)
                ready = view(ready_a)
                if self.warm_prefixes:
                    hc.warm(cached, order)  # written through as they were computed, in the LRU order

        while done < n:
            lagged = ahead and (nd > 0 or bool(pf))  # a batch was running, so this pass was scheduled at its start
            if nd == 0 and not pf and pad == 0 and not requeue:
                ta = a0[p0] if a0[p0] < a1[p1] else a1[p1]  # next arrival
                if ta > now:
                    now = ta
            if train:
                now = max(now, ceil(now / interval - 1e-9) * interval)
            # ---- preemption: make room for this pass's decode growth (vLLM recompute, LIFO) -------------
            if on_demand:  # vLLM recompute, LIFO
                preempted_now = False
                if not v1:
                    pending = sum(e[1] for e in pf) if pf else 0  # prompt tokens still to be cached
                # decode growth of this pass: none when it will be prefill-only (separate, prompts still in prefill)
                gq = 0.0 if separate and pf else g
                while nseq:
                    if v1:  # V1: this pass's chunks (the chunk loop below, in its order) and decode growth need room
                        left, plan = max_tok - nd * r, 0
                        for e in pf:
                            if left <= 0:
                                break
                            if loads_async and ready[e[0]] > now:
                                continue
                            c = e[1] if e[1] <= left else left
                            if c > long_pf:
                                c = long_pf
                            plan += c
                            left -= c
                        if ctx_sum + plan + nd * g + nseq * ovh <= room + 1e-9:
                            break
                    elif not (ctx_sum + pending + nd * gq + nseq * ovh > room + 1e-9 and nd > 0):
                        break
                    i = len(stack) - 1  # the most recently admitted decoding (V1: or prefilling) sequence
                    while not (state[stack[i]] == 2 or (v1 and state[stack[i]] == 1)):
                        if state[stack[i]] == 3:
                            del stack[i]
                        i -= 1
                    v = stack.pop(i)
                    preempted_now = True
                    if state[v] == 1:  # V1, a prompt in prefill: its computed tokens are dropped, recomputed from scratch
                        e = next(x for x in pf if x[0] == v)
                        pf.remove(e)
                        ctx_sum -= pre_len[v] - e[1]
                        d = 0
                    else:
                        d = it - lag - 1 - pf_it[v]
                        ctx_sum -= pre_len[v] + d * g
                        nd -= 1
                        fin_it[v] = -1
                        pre_len[v] += d * g
                        rem[v] -= d
                    if d == 0:  # no token decoded since its prefill: no progress if this repeats without finishes
                        if done != stall_done:
                            stall, stall_done = 0, done
                        stall += 1
                        if stall > STALL_PREEMPTIONS:
                            raise InputError(f"simulation stalled: the KV cache ({cap:,.0f} tokens) cannot hold the "
                                             "prompts being prefilled and the decoding sequences together, so they "
                                             "preempt each other without progress; raise the KV capacity (more "
                                             "GPUs, fp8 KV) or lower max_batched_tokens / max_seqs")
                    nseq -= 1
                    state[v] = 0
                    npre[v] += 1
                    requeue.appendleft(v)
                    if pc and pfx[v] >= 0:  # unpin its prefix (the cached blocks stay, evictable when unused)
                        q = pfx[v]
                        room -= sh[v] * blk
                        sh[v] = 0
                        k_un = unpin_path(users, pinned, lru, ancs[q], q, starts[q], depth[v])
                        if k_un:
                            room += k_un * blk
                            free_tok += k_un * blk
            # ---- chunks of prompts already being prefilled --------------------------------------------------
            budget = max_tok if separate else max_tok - nd * r  # a prefill-only pass carries no decode tokens
            inp = pf_cap - (max_tok - budget) if pf_cap else inf  # SGLang's rem_input_tokens: P less the decodes
            chunks = []  # (pf entry, tokens of it in this pass)
            chunk_tok = []  # the same tokens, for sum()
            for e in pf:
                if budget <= 0:
                    break
                if loads_async and ready[e[0]] > now:  # its blocks are still coming from host memory
                    continue
                c = e[1] if e[1] <= budget else budget
                if c > long_pf:
                    c = long_pf
                chunks.append((e, c))
                chunk_tok.append(c)
                budget -= c
                inp -= c
            # ---- admission --------------------------------------------------------------------------------
            blocked = static and (nd > 0 or pad > 0)
            if recv_every <= 1 or nd == 0 or not last_decode or since_recv >= recv_every:
                heard, since_recv = (prev_start if lagged else now), 0  # the scheduler receives what has arrived
            prev_start = now
            gated = admit_every > 1 and nseq >= admit_min
            if gated and nseq == 0:
                phase = 0  # an idle engine spins through empty steps to the admitting one
            if not blocked and not (gated and phase):
                pending = sum(e[1] for e in pf) if pf else 0  # prompt tokens still to be cached
                while nseq < max_seqs:
                    # head of the queues: re-queued (preempted) first, then class 0, then class 1
                    if requeue:
                        rid, c = requeue[0], -1
                    elif a0[p0] <= heard:
                        rid, c = q0[p0], 0
                    elif a1[p1] <= heard:
                        rid, c = q1[p1], 1
                    else:
                        break
                    need = pre_len[rid]
                    new = mem = need  # tokens to prefill; memory the admission adds
                    ld, dk, rdy, lsec = 0, 0, 0.0, 0.0  # blocks it loads from the lower tiers (from disk), their
                    # seconds; when its path's blocks are all in HBM
                    if pc:
                        q = pfx[rid]
                        if q >= 0:  # hit: the cached blocks of its prefix, up to its own full prefix blocks
                            anc = ancs[q]
                            if anc:  # along its path: the ancestors' blocks, then its last node's if they all are
                                h, ext, reach = ancestor_hit(anc, cached, pinned)
                                hl = (cached[q] if cached[q] < fb[rid] else fb[rid]) if reach else 0
                                h += hl
                                ext += hl - pinned[q] if hl > pinned[q] else 0
                            else:
                                h = hl = cached[q] if cached[q] < fb[rid] else fb[rid]
                                ext = h - pinned[q] if h > pinned[q] else 0
                            new = need - h * blk
                            mem = new + ext * blk  # it pins unpinned ones
                            if hc is not None:  # past the HBM hit, the blocks only host memory holds are loaded
                                hc.drain(now)  # the writes finished by now are hits
                                ld = hc.reach(anc, q, starts[q], fb[rid], cached) - h
                                if ld > 0:
                                    new -= ld * blk
                                    mem = new + (ext + ld) * blk
                                    lsec = ld * blk * load_tok_s
                                    if hc.cap2:  # the blocks only the disk tier holds read at its rate
                                        dk = hc.disk_only(anc, q, starts[q], cached, h + ld)
                                        lsec += dk * blk * disk_s
                                    if loads_async and lsec > 0:  # after the loads queued before it
                                        rdy = (link_free if link_free > now else now) + lsec
                                if convoy:  # blocks of its path another request is still loading
                                    if hready[q] > rdy:
                                        rdy = hready[q]
                                    for x, _, _ in anc:
                                        if hready[x] > rdy:
                                            rdy = hready[x]
                    if not prefilled:
                        if chunked and budget <= 0:
                            blocked = True
                            break
                        if not chunked and new > budget and chunks:  # an over-long prompt runs alone
                            blocked = True
                            break
                        if new >= inp and chunks:  # SGLang: past --max-prefill-tokens only as a pass's first prompt
                            blocked = True
                            break
                    if v1:  # V1: room for its first chunk (and the blocks it pins) beside this pass's chunks
                        c1 = new if new <= budget else budget
                        if c1 > long_pf:
                            c1 = long_pf
                        if preempted_now or (ctx_sum + sum(chunk_tok) + c1 + (mem - new) + nd * g + (nseq + 1) * ovh
                                             > room + 1e-9):
                            blocked = True
                            break
                    elif on_demand:
                        # separate: the prompts in prefill (and this one) decode next, after their prefill passes
                        grow = (nd + len(pf) + 1) * g if separate else nd * g
                        if ctx_sum + pending + mem + grow + (nseq + 1) * ovh > room + 1e-9:
                            blocked = True
                            break
                    else:
                        res = need + rem[rid] * g + ovh
                        if reserved + res + (mem - need) > room + 1e-9:
                            blocked = True
                            break
                        reserved += res
                        reserve[rid] = res
                    if c < 0:
                        requeue.popleft()
                    elif c == 0:
                        p0 += 1
                    else:
                        p1 += 1
                    if admit_it[rid] < 0:
                        admit_it[rid] = it
                    nseq += 1
                    push_stack(rid)
                    if prefilled:
                        state[rid], pf_it[rid] = 2, it - lag - 1
                        ctx_sum += need
                        nd += 1
                        fin = it - lag - 1 + rem[rid]
                        if fin in buckets:
                            buckets[fin].append(rid)
                        else:
                            buckets[fin] = [rid]
                            heappush(heap, fin)
                        fin_it[rid] = fin
                        continue
                    state[rid] = 1
                    e = [rid, new]
                    pf.append(e)
                    if not (loads_async and rdy > now):  # else it waits for its blocks, outside this pass
                        c = new if (not chunked or new <= budget) else budget
                        if c > long_pf:
                            c = long_pf
                        chunks.append((e, c))
                        chunk_tok.append(c)
                        budget -= c
                        inp -= c
                    pending += new
                    if pc:
                        if q >= 0:
                            if hc is not None:
                                if ld > 0:  # the loaded blocks become HBM cache (unpinned until pinned below)
                                    s_q, h = starts[q], h + ld
                                    k_ld = cache_ancestors(anc, cached, h) if anc else 0
                                    if h - s_q > cached[q]:
                                        k_ld += h - s_q - cached[q]
                                        cached[q] = h - s_q
                                    free_tok += k_ld * blk
                                    for x in (q, *(a[0] for a in anc)):  # unpinned for now: in the LRU order
                                        if cached[x] > pinned[x] and x not in lru:
                                            lru[x] = None
                                    hl = h - s_q if h > s_q else 0
                                    disk_loaded += dk * blk
                                    if loads_async:  # queued on the host link; it joins a pass once loaded
                                        link_free = (link_free if link_free > now else now) + lsec
                                        load_s_all += lsec
                                        if convoy:  # its path's blocks arrive then
                                            hready[q] = link_free if link_free > hready[q] else hready[q]
                                            for x, _, _ in anc:
                                                if link_free > hready[x]:
                                                    hready[x] = link_free
                                    else:  # the pass it joins waits for the load
                                        load_acc += lsec
                                    loaded += ld * blk
                                if loads_async:
                                    ready[rid] = rdy
                                if hh[rid] < 0:
                                    hh[rid] = ld * blk if ld > 0 else 0.0
                                hc.store_path(anc, q, cached, now)  # a hit is a use of the path's host copies
                            if hit[rid] < 0:  # how long the reusable blocks of each node had waited for this use
                                whole = True  # the path's reusable blocks go on past the ancestors
                                for x, s_x, e_x in anc:
                                    e = ever[x] if ever[x] > cached[x] else cached[x]
                                    r_x = e if e < e_x - s_x else e_x - s_x  # blocks earlier requests computed
                                    if r_x <= 0:
                                        whole = False
                                        break
                                    h_x = h - s_x if h < e_x else e_x - s_x
                                    r_add((0.0 if pinned[x] else now - last_use[x], r_x, h_x if h_x > 0 else 0))
                                    last_use[x] = now
                                    if r_x < e_x - s_x:
                                        whole = False
                                        break
                                e = ever[q] if ever[q] > cached[q] else cached[q]
                                r_x = e if e < fb[rid] else fb[rid]
                                if whole and r_x > 0:
                                    h_x = h - starts[q]
                                    r_add((0.0 if pinned[q] else now - last_use[q], r_x, h_x if h_x > 0 else 0))
                                    last_use[q] = now
                            k_pin = pin(users, pinned, q, hl)
                            if k_pin and cached[q] == pinned[q]:
                                del lru[q]
                            if anc:
                                k_pin += pin_ancestors(anc, users, pinned, cached, lru, h)
                            if k_pin:
                                free_tok -= k_pin * blk
                                room -= k_pin * blk
                            depth[rid] = h
                            sh[rid] = h
                            room += need - new
                            ctx_sum += need - new  # the hit tokens are context at once (attention reads them)
                            saved += need - new
                            if hit[rid] < 0:
                                hit[rid] = need - new
                        elif hit[rid] < 0:
                            hit[rid] = 0.0
                        use = (ctx_sum + (sum(chunk_tok) if v1 else pending) + nseq * ovh if on_demand
                               else reserved)  # memory but held (V1: what the pass's chunks will write)
                        if free_tok and use + free_tok > room + 1e-9:
                            k_ev = evict(lru, cached, pinned, ceil((use + free_tok - room - 1e-9) / blk))
                            free_tok -= k_ev * blk
                            evicted += k_ev
                if nseq >= max_seqs:
                    blocked = True
            b_pass = nd + pad + len(chunks)
            if b_pass == 0 and loads_async and pf:  # only loads under way: idle until one ends or a request arrives
                loaded_at = float(min(ready[e[0]] for e in pf))
                ta = float(a0[p0] if a0[p0] < a1[p1] else a1[p1])
                now = ta if now < ta < loaded_at else (loaded_at if loaded_at > now else now)
                prev_start = now
                continue
            if b_pass == 0:
                raise InputError("simulation stalled: waiting requests fit neither the token budget nor the KV "
                                 "cache; raise max_batched_tokens or the KV capacity")
            pf_tokens = sum(chunk_tok) if chunk_tok else 0
            ctx_pass = ctx_sum
            if len(chunks) < len(pf):  # partly prefilled prompts left out of this pass hold cached KV
                in_pass = set(id(e) for e, _ in chunks)
                ctx_pass -= sum(pre_len[e[0]] - e[1] for e in pf if id(e) not in in_pass)
            c_mean = ctx_pass / b_pass
            if pf_tokens == 0 and not train:
                # ---- many decode iterations at once ----------------------------------------------
                t0, slope, end = t_decode(b_pass, r, c_mean)
                if draft:
                    d0, dslope, _ = t_decode(b_pass, 1, c_mean)
                    t0, slope = t0 + draft * d0, slope + draft * dslope
                s = slope * g
                while heap and not bucket_get(heap[0]):
                    buckets.pop(heappop(heap), None)
                k = heap[0] - (it - lag) + 1 if heap else 1
                if end != inf:
                    ke = int((end - c_mean) / g) + 1
                    if ke < k:
                        k = ke
                pend = 0
                if loads_async and pf:  # prompts waiting for their loads: the segment ends when one is loaded
                    pend = 0 if v1 else sum(e[1] for e in pf)  # V1 holds only computed tokens
                    wait = min(ready[e[0]] for e in pf) - now
                    ka = _passes_to(wait, t0, s, k) if wait > 0 else 1  # loaded: it joins the next pass
                    if ka < k:
                        k = ka
                if on_demand and cap != inf:  # iterations until the KV pool is full (at least 1)
                    kc = int((room - ctx_sum - pend - nseq * ovh + 1e-9) / ((nd + pad) * g))
                    if kc < 1:
                        kc = 1
                    if kc < k:
                        k = kc
                if recv_every > 1 and not blocked and (a0[p0] < inf or a1[p1] < inf):
                    kr = recv_every - since_recv  # passes until the scheduler next takes in requests
                    if kr < k:
                        k = kr if kr > 0 else 1
                elif not blocked:
                    dt = (a0[p0] if a0[p0] < a1[p1] else a1[p1]) - now  # until the next arrival
                    if admit_every > 1 and nseq >= admit_min:  # the first admitting pass at or after the next arrival (or at once: re-queued ones)
                        ka = 1 if requeue or dt <= 0 else _passes_to(dt, t0, s, k)
                        ka += -(phase + ka) % admit_every
                        if ka < k:
                            k = ka
                    elif dt <= 0:
                        k = 1
                    elif dt < k * t0 + s * k * (k - 1) / 2.0:
                        ka = _passes_to(dt, t0, s, k)
                        if ka < k:
                            k = ka
                if v1 and preempted_now and requeue:  # V1: a pass that preempted admits nothing; the next may
                    k = 1
                if k < 1:
                    k = 1
                if ns == seg_cap:
                    mv_it0, mv_start, mv_k, mv_t0, mv_sl, mv_b, mv_tok, mv_d = seg.grow(ns)
                    seg_cap = seg.capacity
                mv_it0[ns] = it
                mv_start[ns] = now
                mv_k[ns] = k
                mv_t0[ns] = t0
                mv_sl[ns] = s
                mv_b[ns] = b_pass
                mv_tok[ns] = (nd + pad) * r
                mv_d[ns] = nd
                ns += 1
                if streaming:  # k passes of nd chunks each: D_k = max(max(D_0, E_1) + k·σ, E_k + σ) (OutputStage)
                    e_k = now + k * t0 + s * k * (k - 1) / 2.0
                    if nd:
                        sig = out_a + out_b * nd
                        out_free = max((out_free if out_free > now + t0 else now + t0) + k * sig, e_k + sig)
                    outs.append(out_free if out_free > e_k else e_k)
                now += k * t0 + s * k * (k - 1) / 2.0
                ctx_sum += (nd + pad) * g * k
                it += k
                since_recv += k
                phase = (phase + k) % admit_every
                last_decode = True
                if free_tok and on_demand and ctx_sum + pend + free_tok + nseq * ovh > room + 1e-9:
                    # the decode tokens grew into unused cached blocks: evict them (pf holds loading prompts at most)
                    k_ev = evict(lru, cached, pinned, ceil((ctx_sum + pend + free_tok + nseq * ovh - room - 1e-9)
                                                    / blk))
                    free_tok -= k_ev * blk
                    evicted += k_ev
            else:
                grow = (nd + pad) * g  # context the decoding sequences gain in this pass
                if separate:  # a prefill-only pass: the decoding sequences wait for it (vLLM V0, SGLang's default)
                    parts = [(c, pre_len[e[0]] - e[1]) for e, c in chunks]
                    b_pass, n_tok, grow = len(chunks), pf_tokens, 0.0
                    t = mixed(0, r, 0.0, parts) if mixed is not None else t_pass(
                        b_pass, n_tok, sum(x for _, x in parts) / b_pass)
                    lag += 1  # not a decode pass: the decode clock it − lag stays where it was
                else:
                    n_tok = (nd + pad) * r + pf_tokens
                    if mixed is None:
                        t = t_pass(b_pass, n_tok, c_mean)
                        c_dec = c_mean
                    else:  # each part at its own context: chunk j on x_j cached tokens, decodes on the rest
                        parts, x_sum = [], 0  # (chunk tokens, cached tokens before it); Σ cached
                        for e, c in chunks:
                            x = pre_len[e[0]] - e[1]
                            parts.append((c, x))
                            x_sum += x
                        dec_sum = ctx_pass - x_sum if parts else ctx_pass
                        t = mixed(nd + pad, r, dec_sum, parts)
                        c_dec = dec_sum / (nd + pad) if nd + pad else 0.0
                    if draft and nd + pad:
                        t += draft * t_pass(nd + pad, nd + pad, c_dec)
                if load_acc:  # the host tier's loads for prompts admitted into this pass, before it runs
                    t += load_acc
                    load_s_all += load_acc
                    load_acc = 0.0
                if ns == seg_cap:
                    mv_it0, mv_start, mv_k, mv_t0, mv_sl, mv_b, mv_tok, mv_d = seg.grow(ns)
                    seg_cap = seg.capacity
                mv_it0[ns] = it
                mv_start[ns] = now
                mv_k[ns] = 1
                mv_t0[ns] = t
                mv_sl[ns] = 0.0
                mv_b[ns] = b_pass
                mv_tok[ns] = n_tok
                mv_d[ns] = 0 if separate else nd
                ns += 1
                now += t
                ctx_sum += grow + pf_tokens
                firsts = 0  # prompts this pass completes: their first tokens are streamed with the decodes'
                for e, c in chunks:
                    e[1] -= c
                    if pc and pfx[e[0]] >= 0 and cached[pfx[e[0]]] < fb[e[0]]:
                        # its whole prefix blocks computed so far, past the cached ones, become the cache's as
                        # each chunk completes them (vLLM V1 caches full blocks as they are computed); stored
                        # once from now on (held grows only by unpinned blocks below them that it now pins)
                        q, rid = pfx[e[0]], e[0]
                        s_q, anc = starts[q], ancs[q]
                        dpt = int((pre_len[rid] - e[1]) // blk)  # global blocks of its path computed so far
                        if dpt > s_q + fb[rid]:
                            dpt = s_q + fb[rid]
                        k_dc = cache_ancestors(anc, cached, dpt) if anc else 0
                        if dpt - s_q > cached[q]:
                            k_dc += dpt - s_q - cached[q]
                            cached[q] = dpt - s_q
                        if k_dc:  # it now uses its path to dpt, pinning any unpinned blocks below
                            sh[rid] += k_dc
                            old = depth[rid]
                            k_dp = (pin(users, pinned, q, dpt - s_q if dpt > s_q else 0)
                                    - release(users, pinned, q, old - s_q if old > s_q else 0))
                            if anc:  # deeper pins first, so releasing the shallower ones unpins nothing
                                k_dp += pin_ancestors(anc, users, pinned, cached, lru, dpt)
                                k_dp -= release_ancestors(anc, users, pinned, lru, old)
                            depth[rid] = dpt
                            room -= (k_dp - k_dc) * blk
                            free_tok += (k_dc - k_dp) * blk
                            if q in lru and cached[q] == pinned[q]:
                                del lru[q]
                            if hc is not None:  # written through to host memory
                                hc.store_path(anc, q, cached, now)
                    if e[1] <= 0:
                        firsts += 1
                        rid = e[0]
                        pf.remove(e)
                        state[rid], pf_it[rid] = 2, it - lag
                        if first_it[rid] < 0:
                            first_it[rid] = it
                        nd += 1
                        fin = it - lag + rem[rid]
                        fin_it[rid] = fin
                        if fin in buckets:
                            buckets[fin].append(rid)
                        else:
                            buckets[fin] = [rid]
                            heappush(heap, fin)
                if streaming:  # this pass's chunks: the decodes' (none in a prefill-only pass) and the first tokens
                    b_out = (0 if separate else nd - firsts) + firsts
                    if b_out:
                        out_free = (out_free if out_free > now else now) + out_a + out_b * b_out
                    outs.append(out_free if out_free > now else now)
                it += 1
                phase = (phase + 1) % admit_every
                last_decode = False  # a pass with prompts: SGLang's skipper receives right after it
                if free_tok and on_demand:
                    pending = sum(e[1] for e in pf) if pf and not v1 else 0
                    if ctx_sum + free_tok + pending + nseq * ovh > room + 1e-9:
                        k_ev = evict(lru, cached, pinned, ceil((ctx_sum + free_tok + pending + nseq * ovh - room - 1e-9)
                                                        / blk))
                        free_tok -= k_ev * blk
                        evicted += k_ev
            # ---- finishes ---------------------------------------------------------------------------
            while heap and heap[0] < it - lag:
                key = heappop(heap)
                for rid in buckets.pop(key, ()):
                    if state[rid] != 2 or fin_it[rid] != key:
                        continue
                    state[rid] = 3
                    fin_it[rid] = key + lag  # the pass it finished in (keys count decode passes)
                    done += 1
                    if sessions and nxt[rid]:  # its answer releases the turns that wait for it
                        for j in nxt[rid]:
                            v = (out_free if streaming else now) + dout + think[j]  # the user has read the answer
                            snd[j] = v
                            v += din[j]
                            k = bisect_right(a0, v, p0, filled)  # into the queue of sent requests, in arrival order
                            a0_a[k + 1:filled + 1] = a0_a[k:filled]
                            q0_a[k + 1:filled + 1] = q0_a[k:filled]
                            a0[k], q0[k], arr[j] = v, j, v
                            filled += 1
                    elif next_send < n:  # the closed-loop client sends its next request on this completion
                        v = (out_free if streaming else now) + dout  # the client has the last token then
                        if rel[next_send] > v:
                            v = rel[next_send]
                        snd[next_send] = v
                        v += din[next_send]
                        if v < a0[next_send - 1]:
                            v = a0[next_send - 1]
                        v += svc[next_send]
                        a0[next_send] = arr[next_send] = v
                        next_send += 1
                    nd -= 1
                    reserved -= reserve[rid]
                    if pc and pfx[rid] >= 0:  # unpin its prefix (as on preemption)
                        q = pfx[rid]
                        room -= sh[rid] * blk
                        k_un = unpin_path(users, pinned, lru, ancs[q], q, starts[q], depth[rid])
                        if k_un:
                            room += k_un * blk
                            free_tok += k_un * blk
                        last_use[q] = now  # its path's blocks were in use until now
                        if cached[q] > ever[q]:
                            ever[q] = cached[q]
                        for x, _, _ in ancs[q]:
                            last_use[x] = now
                            if cached[x] > ever[x]:
                                ever[x] = cached[x]
                    if pc and tails and ends[rid]:  # its answer is part of its prefix: its blocks stay cached,
                        o = mine[rid]  # unpinned (they leave its context below)
                        k_ans = keep_answer(ancs[o], cached, pinned, lru, o, starts[o], ends[rid])
                        free_tok += k_ans * blk
                        last_use[o] = now
                        if cached[o] > ever[o]:
                            ever[o] = cached[o]
                        if hc is not None and k_ans:
                            hc.store_path(ancs[o], o, cached, now)
                    if static:
                        pad += 1
                    else:
                        ctx_sum -= pre_len[rid] + rem[rid] * g
                        nseq -= 1
            if static and nd == 0 and pad:
                ctx_sum, pad, nseq = 0.0, 0, 0
                stack.clear()
            elif len(stack) > prune_at:
                # finished ids only matter to the preemption scan, which skips them: dropping them keeps
                # the order of the others, so the scan picks the same victim (memory, not results)
                stack[:] = [x for x in stack if state[x] != 3]
                prune_at = max(PRUNE_STACK_AT, 2 * len(stack))
            if progress is not None and it >= next_report:
                progress(done - reported)
                reported, next_report = done, it + report_every
        if progress is not None:
            progress(done - reported)
        # free the loop's per-request state before the trace's temporaries are made (peak memory)
        del mv_it0, mv_start, mv_k, mv_t0, mv_sl, mv_b, mv_tok, mv_d, admit_it, pf_it, first_it, fin_it
        del pre_len, rem, q0, q1, a0, a1, npre, state, reserve, pre_len_a, rem_a, q0_a, q1_a, a0_a, a1_a
        del state_a, reserve_a, buckets, heap, stack, requeue
        tr = self._trace(seg.trimmed(ns), its, npre_a, arr_a, np.asarray(outs) if streaming else None)
        if loop is not None:
            loop.sends_s = snd_a
        if not pc:
            return tr
        ru = np.array(reuse, dtype=float).reshape(-1, 3)  # (seconds, reusable blocks, hit blocks) per record
        tr = replace(tr, prefix_hit_tokens=np.maximum(hit_a, 0.0), prefill_tokens_saved=saved,
                     prefix_evictions=evicted, prefix_cached_blocks=int(sum(cached)), block_tokens=self.block_tokens,
                     reuse_interval_s=ru[:, 0].copy(), reuse_tokens=ru[:, 1] * blk, reuse_hit_tokens=ru[:, 2] * blk)
        if hc is None:
            return tr
        hc.drain(inf)  # the writes still in flight land
        tr = replace(tr, host_hit_tokens=np.maximum(hh_a, 0.0), host_loaded_tokens=loaded, host_load_s=load_s_all,
                     host_evictions=hc.mem.evicted, host_cached_blocks=hc.mem.used)
        if hc.disk is None:
            return tr
        return replace(tr, disk_capacity_blocks=hc.cap2, disk_loaded_tokens=disk_loaded, disk_evictions=hc.disk.evicted,
                       disk_cached_blocks=hc.disk.used)

    def saved_prefill_s(self, trace: Trace, host_only: bool = False) -> float:
        """Seconds of prefill the cache hits saved: per request with a hit H of prompt P at its first admission,
        the step model's time of its prompt prefilled alone minus that of the P − H new tokens on H cached
        tokens (the mixed pass, else the table's pass), summed. An isolated-prefill estimate: inside a batch the
        weights are read once for all, so the saving is the marginal compute and attention of the H tokens
        (what `roofline prices infer` charges as the cache-hit discount, docs/pricing.md). `host_only`: the part the
        host tier's loads saved, from the HBM hit H − L (L = Trace.host_hit_tokens) to H."""
        if trace.prefix_hit_tokens is None or (host_only and trace.host_hit_tokens is None):
            return 0.0
        hit = trace.prefix_hit_tokens
        base = hit - trace.host_hit_tokens if host_only else np.zeros_like(hit)  # the hit without the host tier's part
        sel = hit > base
        pairs, count = np.unique(np.stack([trace.prompt_tokens[sel], base[sel], hit[sel]], axis=1), axis=0,
                                 return_counts=True)
        total = 0.0
        for (p, h0, h), k in zip(pairs.tolist(), count.tolist()):
            if self.mixed is not None:
                full, part = self.mixed(0, 1, 0.0, [(p - h0, h0)]), self.mixed(0, 1, 0.0, [(p - h, h)])
            else:
                full, part = self.table.t(1, p - h0, h0), self.table.t(1, p - h, h)
            total += k * (full - part)
        return total

    def _trace(self, cols, its, npre, arrival, outs=None) -> Trace:
        w, dep = self.workload, self.deployment
        it0, start, k, t0, sl, b, tok, dec = cols
        admit, _ = iteration_times(it0, start, t0, sl, its[0])
        _, finish = iteration_times(it0, start, t0, sl, its[3])
        # the output stage: a token reaches the client when the output server has sent its pass's chunks (the
        # segment's last pass, where finishes and first tokens fall: OutputStage), not at the pass's end
        late = None if outs is None else outs - (start + k * t0 + sl * k * (k - 1) / 2.0)
        if late is not None:
            finish = finish + late[np.searchsorted(it0, its[3], side="right") - 1]
        if self.prefilled:
            first = self.given_first_s
            assert first is not None  # a prefilled run is given its first-token times
        else:
            _, first = iteration_times(it0, start, t0, sl, its[2])
            if late is not None:
                first = first + late[np.searchsorted(it0, its[2], side="right") - 1]
        return Trace(arrival, admit, first, finish, w.prompt_tokens, w.output_tokens, w.priority,
                     npre, start, k, t0, sl, b, tok, dep.gpus, dep.usd_per_gpu_hour, self.policy.kind,
                     seg_decodes=dec)


def simulate(workload: Workload, deployment: Deployment, policy: Policy = Policy(), *, seed: int = 0,
             progress=None) -> Trace:
    """Run one simulation and return its Trace (see Simulation)."""
    return Simulation(workload, deployment, policy, seed=seed).run(progress)
