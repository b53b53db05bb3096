"""`trtllm-bench throughput`, simulated: the offline maximum-throughput runs of TensorRT-LLM's perf-overview
tables replayed through the serving simulator with the engine settings the benchmark itself chooses.

What the benchmark does (NVIDIA/TensorRT-LLM, tensorrt_llm/bench; docs perf-overview.md "Reproducing
Benchmarked Results"): a dataset of N requests of fixed ISL/OSL (prepare_dataset.py token-norm-dist, stdev 0;
N from the page's table, e.g. 3,000 for 1,024/1,024) is queued at once; the PyTorch executor runs in-flight
batching without chunked prefill (trtllm-bench's default), each iteration holding at most `max_batch_size`
requests and `max_num_tokens` tokens (decode tokens + whole prompts), each request's KV reserved for ISL + OSL
at admission (the GUARANTEED_NO_EVICT capacity scheduler); with attention data parallelism each of the dp
ranks schedules its own requests under these limits. The reported figure is output tokens / (first request
to last completion) / GPUs.

The limits, when the command line does not give them, come from trtllm-bench's heuristic
(tensorrt_llm/bench/build/tuning.py calc_engine_setting + finetune_setting; benchmark/utils/general.py
get_settings), which reads the Hugging Face config, not the model's real KV layout:

    bytes/token  = 2 · layers · max(tp, num_key_value_heads) · head_size · bytes(kv)      [GiB units]
    engine       = checkpoint elements · bytes(quant algo)
    requests     = f · (tp·pp · device GiB − engine) / (bytes/token · (ISL + OSL))
    raw_bs       = min(requests, 4096) / pp;     raw_tokens = min(raw_bs · (1 + ISL/OSL), 32768)
    max_bs       = max(64, 32⌈raw_bs/32⌉) if raw_bs < 256, 128⌈raw_bs/128⌉ if < 1024, else 256⌈raw_bs/256⌉
    max_tokens   = max(2048, 256⌈raw/256⌉) if raw < 4096, 512⌈raw/512⌉ if < 8192, else 1024⌈raw/1024⌉
    without chunked prefill: max_tokens = max(max_tokens, ISL + max_bs)

for the tuned quantisations (NVFP4, FP8, FP8 block scales, none); any other (e.g. gpt-oss's MXFP4) takes
BuildConfig's defaults, 2,048 requests and 8,192 tokens. For MLA models the config's num_key_value_heads is
the number of attention heads and there is no head_dim (DeepSeek's own configuration class, loaded with
trust_remote_code), so head_size = hidden / heads: the heuristic counts ~20× the real KV bytes and picks a
small max_batch_size (DeepSeek-R1 NVFP4 on 4 B200: 384 per rank where the KV cache would hold ~1,000).

Ignores: the device's reported memory (we use the catalog's HBM), warm-up requests, CUDA-graph padding of
batch sizes, the attention-DP balancer's waits (attention_dp_config), and everything the simulator ignores.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .. import model as M
from ..errors import InputError

#: trtllm-bench's tuned quantisations → bytes per checkpoint element (tuning.BYTES_PER_ELEM; NO_QUANT 2.0)
TUNED_QUANT_BYTES = {"nvfp4": 0.5, "fp8": 1.0, "fp8_block_scales": 1.0, "none": 2.0}
#: BuildConfig defaults taken for any other quantisation (build.py DEFAULT_MAX_BATCH_SIZE / _NUM_TOKENS)
DEFAULT_MAX_BATCH_SIZE, DEFAULT_MAX_NUM_TOKENS = 2048, 8192
#: checkpoint elements per weight: packed NVFP4 holds two weights per uint8 element plus one FP8 scale per 16
ELEMENTS_PER_WEIGHT = {"fp4": 0.5 + 1.0 / 16.0}
GIB = float(1 << 30)


def checkpoint_quant(row: dict) -> str:
    """The checkpoint's quantisation as trtllm-bench sees it: the row's `bench_quant`, else from the formats
    (fp4 anywhere → nvfp4, fp8 → fp8, 16-bit → none)."""
    q = row.get("bench_quant")
    if q is not None:
        return str(q).lower()
    formats = {str(row.get("weights_dtype", "bf16")).lower(), str(row.get("expert_weights_dtype") or "").lower()}
    return "nvfp4" if "fp4" in formats else "fp8" if "fp8" in formats else "none"


def hf_kv_bytes_per_token(m: M.Model, tp: int, kv_dtype: str) -> float:
    """trtllm-bench's KV bytes per token (module docstring): from the config's heads, not the real cache."""
    heads, head_size = (m.heads, m.d_model // m.heads) if m.mla else (m.kv_heads, m.head_dim)
    kv_bytes = 1.0 if kv_dtype.lower() in ("fp8", "int8") else 2.0
    return 2.0 * m.layers * max(int(tp), heads) * head_size * kv_bytes


def checkpoint_elements(m: M.Model, weights_dtype: str, expert_weights_dtype: str | None = None) -> float:
    """Elements in the checkpoint's safetensors (what trtllm-bench's param_count sums)."""
    routed = M.params_total(m) - M.dense_params(m)
    per = lambda d: ELEMENTS_PER_WEIGHT.get(str(d).lower(), 1.0)  # noqa: E731
    return M.dense_params(m) * per(weights_dtype) + routed * per(expert_weights_dtype or weights_dtype)


def _round_up(x: float, floor: int, tiers) -> int:
    """x rounded up to the step of its tier ((below, step) pairs, the last with below = inf), at least `floor`."""
    step = next(st for below, st in tiers if x < below)
    return int(max(floor, step * math.ceil(x / step)))


def finetune(requests: float, isl: int, osl: int, pp: int = 1) -> tuple[int, int]:
    """tuning.finetune_setting (optimistic tuning): (max_batch_size, max_num_tokens) from the requests the
    KV cache is estimated to hold: the batch to steps of 32 below 256, 128 below 1,024, else 256 (at least 64);
    the tokens to steps of 256 below 4,096, 512 below 8,192, else 1,024 (at least 2,048)."""
    raw_bs = min(requests, 4096) / pp
    raw_tok = min(raw_bs * (1 + isl / osl), 32768)
    return (_round_up(raw_bs, 64, ((256, 32), (1024, 128), (math.inf, 256))),
            _round_up(raw_tok, 2048, ((4096, 256), (8192, 512), (math.inf, 1024))))


def bench_settings(m: M.Model, hbm_bytes: float, row: dict) -> tuple[int, int]:
    """(max_batch_size, max_num_tokens) per scheduler (per attention-DP rank) that trtllm-bench runs `row`
    with: the row's `max_batch_size` / `max_num_tokens` where the source states them, else the heuristic
    (module docstring). trtllm-bench's --tp is the row's tp × dp (attention DP shares the TP group)."""
    isl, osl = int(row["input_tokens"]), int(row["output_tokens"])
    if row.get("max_batch_size") and row.get("max_num_tokens"):
        return int(row["max_batch_size"]), int(row["max_num_tokens"])
    quant = checkpoint_quant(row)
    if quant in TUNED_QUANT_BYTES:
        tp, pp = int(row.get("tp", 1)) * int(row.get("dp", 1)), int(row.get("pp", 1))
        f = float(row.get("kv_cache_fraction", 0.90))
        engine = checkpoint_elements(m, str(row.get("weights_dtype", "bf16")), row.get("expert_weights_dtype"))
        available = tp * pp * hbm_bytes / GIB - engine * TUNED_QUANT_BYTES[quant] / GIB
        per_req = hf_kv_bytes_per_token(m, tp, str(row.get("kv_dtype", "bf16"))) / GIB * (isl + osl)
        requests = f * available / per_req
        if requests < 1:
            raise InputError(f"{row['id']}: trtllm-bench's heuristic finds room for {requests:.2f} requests; the "
                             "row cannot run as stated (give max_batch_size and max_num_tokens)")
        bs, tok = finetune(requests, isl, osl, pp)
    else:
        bs, tok = DEFAULT_MAX_BATCH_SIZE, DEFAULT_MAX_NUM_TOKENS
    bs = int(row.get("max_batch_size") or bs)
    tok = int(row.get("max_num_tokens") or tok)
    if not row.get("chunked_prefill", False):
        tok = max(tok, isl + bs)
    return bs, tok


def run(m, system, layout, efficiency, row: dict, which: str, prompts, outputs, policy: str, max_seqs: int,
        budget: int, preemption: bool, kv_tokens: float, engine: str, recv_interval: int = 1, arrivals=None,
        reuse: dict | None = None, concurrency: int | None = None):
    """The Trace of a benchmark's requests all queued at t = 0 (a closed-loop client at `max_seqs` concurrency,
    or an offline run) through the serving simulator: the row's layout and formats, its efficiency corner,
    the engine's overheads at the same corner, `policy` with `max_seqs` sequences and `budget` tokens a pass,
    KV reserved at admission or grown on demand (`preemption`), new requests taken in every `recv_interval` decode
    passes (SGLang's --scheduler-recv-interval); `arrivals` (seconds, the client's sends) instead of all at t = 0.
    `reuse`: a dict that keeps the first run's step table and mixed-pass model for the next runs of the same
    deployment, policy and lengths. `concurrency` C: a closed-loop client (closed_loop_client) over the releases."""
    from ..simulate import Policy, Simulation
    from ..simulate.overheads import EngineOverheads, engine_policy, run_with_engine, with_engine
    from ..simulate.steptable import deployment
    from ..simulate.workload import make_workload

    dep = deployment(m, system, layout, efficiency=efficiency, weights_dtype=str(row.get("weights_dtype", "bf16")),
                     kv_dtype=str(row.get("kv_dtype", "bf16")), expert_weights_dtype=row.get("expert_weights_dtype"))
    dep = replace(dep, kv_capacity_tokens=float(kv_tokens))
    ovh = EngineOverheads.load(engine, which=which)
    dep = with_engine(dep, ovh)
    pol = engine_policy(Policy(policy, max_seqs=int(max_seqs), max_batched_tokens=int(budget), preemption=preemption,
                               recv_interval=int(recv_interval)), ovh)
    wl = make_workload(np.zeros(len(prompts)) if arrivals is None else arrivals, prompts, outputs)
    reuse = {} if reuse is None else reuse

    def one(w, closed_loop=None):
        sim = Simulation(w, dep, pol, seed=0, table=reuse.get("table"), mixed=reuse.get("mixed", True),
                         closed_loop=closed_loop)
        reuse.setdefault("table", sim.table)
        reuse.setdefault("mixed", sim.mixed if sim.mixed is not None else False)
        return sim.run()

    if concurrency is not None:
        return closed_loop_client(wl, ovh, int(concurrency), one), ovh
    return run_with_engine(wl, ovh, one), ovh


def closed_loop_rows(simulate, n: int, concurrency: int):
    """A `serving_benchmark` row's closed loop: `simulate(sends, concurrency) -> (Trace, overheads)` (scenarios.py) at
    concurrency C over n requests released at t = 0, solved inside the run (closed_loop_client)."""
    return simulate(None, concurrency)


def closed_loop_client(workload, overheads, concurrency: int, one):
    """bench_serving's --max-concurrency C client over `workload` (its arrival_s the client's releases), solved inside
    one run of `one(workload, closed_loop) -> Trace` (simulate/core.ClosedLoop: the next request sent on each
    completion; simulate/overheads.run_closed_loop): the user's frame Trace. Replaced 2026-11-26 (after serving set
    w) the fixed point over whole runs (closed_loop_run), which had stopped short of it; the reproduction tests of
    the sets registered with it call that instead (tests/conftest.py)."""
    from ..simulate.overheads import run_closed_loop

    return run_closed_loop(workload, overheads, concurrency, one)


def simulated_run(meas, m, which: str, extra: dict, efficiency, system, layout, kv_tokens: float):
    """The Trace of the row's trtllm-bench run: N requests at t = 0, fixed lengths, in-flight batching (policy
    'continuous', no preemption: KV reserved at admission) under bench_settings × dp, the row's efficiency
    corner `which` and TensorRT-LLM's engine overheads at the same corner (catalog engines.yaml `trtllm`)."""
    r = meas.row
    if "requests" not in r:
        raise InputError(f"{meas.id}: scenario trtllm_bench_throughput needs `requests` (the dataset's "
                         "$num_requests from the source's table)")
    n, isl, osl = int(r["requests"]), int(r["input_tokens"]), int(r["output_tokens"])
    bs, tok = bench_settings(m, system.accelerator.hbm_bytes, r)
    ranks = int(layout.dp)
    tr, _ = run(m, system, layout, efficiency, r, which, np.full(n, float(isl)), np.full(n, float(osl)),
                "continuous", bs * ranks, tok * ranks, False, kv_tokens, str(r.get("engine", "trtllm")))
    return tr, (bs, tok)


def throughput_per_gpu(trace, gpus: int) -> float:
    """trtllm-bench's 'Per GPU Output Throughput': output tokens over first arrival to last completion."""
    span = float(np.max(trace.finish_s) - np.min(trace.arrival_s))
    return float(np.sum(trace.output_tokens)) / span / gpus


# ---- serving benchmarks at a fixed concurrency (vLLM/SGLang bench_serving --max-concurrency C) -----------------
#: what a serving_benchmark row measures -> the metric family it is scored under
QUANTITIES = {"output_throughput_per_gpu": "throughput", "median_tpot_s": "decode",
              "median_tokens_per_s_per_user": "decode", "median_ttft_s": "prefill", "median_e2e_s": "decode"}


def engine_scheduler(engine: str, hbm_bytes: float) -> dict:
    """The serving engine's scheduler where a run's launch script leaves it at its default (per scheduler, i.e.
    per attention-DP rank; docs/validation.md "Benchmarks replayed through the simulator"):

    - vllm (V1): chunked prefill always on (mixed passes, policy 'chunked'); EngineArgs.get_batch_defaults for the
      OpenAI server: max_num_batched_tokens 8,192 and max_num_seqs 1,024 on GPUs with >= 70 GiB (not A100), else
      2,048 and 256; KV = gpu_memory_utilization 0.90 of the total memory, grown on demand with preemption.
    - sglang: chunked prefill without --enable-mixed-chunk: prompts run in prefill-only passes (policy 'separate')
      of --chunked-prefill-size tokens, 2,048 below 35 GiB, 8,192 below 160 GiB (H100, H200), 16,384 above (B200,
      MI300X, MI355X) (server_args); max running requests set by the KV pool; mem_fraction_static 0.88 of the total.
    - trtllm (trtllm-serve, PyTorch backend): max_batch_size 2,048 and max_num_tokens 8,192 (BuildConfig defaults),
      no chunked prefill (whole prompts in mixed passes, policy 'continuous'), KV = 0.90 of the free memory, reserved
      at admission (GUARANTEED_NO_EVICT)."""
    mib = hbm_bytes / float(1 << 20)
    if engine == "vllm":
        big = mib >= 70 * 1024
        return dict(policy="chunked", max_num_seqs=1024 if big else 256, max_num_batched_tokens=8192 if big else 2048,
                    kv_cache_fraction=0.90, kv_memory_of="total", preemption=True)
    if engine == "sglang":
        chunk = 2048 if mib < 35 * 1024 else 8192 if mib < 160 * 1024 else 16384
        return dict(policy="separate", max_num_seqs=None, max_num_batched_tokens=chunk, kv_cache_fraction=0.88,
                    kv_memory_of="total", preemption=True)
    if engine == "trtllm":
        return dict(policy="continuous", max_num_seqs=DEFAULT_MAX_BATCH_SIZE, max_num_batched_tokens=DEFAULT_MAX_NUM_TOKENS,
                    kv_cache_fraction=0.90, kv_memory_of="free", preemption=False)
    raise InputError(f"engine {engine!r} has no scheduler defaults; expected vllm, sglang or trtllm (or give the "
                     f"row's policy, max_num_seqs, max_num_batched_tokens, kv_cache_fraction and kv_memory_of)")


def benchmark_lengths(row: dict, n: int):
    """Prompt and output lengths of bench_serving's random dataset: integers uniform in [⌊ratio·L⌋, L] for each
    (ratio = `random_range_ratio`, 1 = fixed), seeded by the row id (the run's own draws are not published)."""
    import zlib

    rng = np.random.default_rng([zlib.crc32(str(row["id"]).encode()), 2025])
    ratio = float(row.get("random_range_ratio", 1.0))
    if not 0.0 < ratio <= 1.0:
        raise InputError(f"{row['id']}: random_range_ratio must be in (0, 1], got {ratio:g}")
    out = []
    for key in ("input_tokens", "output_tokens"):
        hi = int(row[key])
        lo = max(1, int(math.floor(ratio * hi)))
        out.append(rng.integers(lo, hi + 1, size=n).astype(float))
    return out[0], out[1]


SCHEDULER_KEYS = ("policy", "max_num_seqs", "max_num_batched_tokens", "kv_cache_fraction", "kv_memory_of", "preemption")


def serving_settings(row: dict, hbm_bytes: float) -> dict:
    """The engine's scheduler for the row: its engine's defaults (engine_scheduler; engine vllm, sglang or trtllm)
    overridden by the row's own keys (SCHEDULER_KEYS); another engine must give them all (max_num_seqs may be
    left out: no cap but the concurrency's)."""
    eng = str(row.get("engine", "none"))
    base = engine_scheduler(eng, hbm_bytes) if eng in ("vllm", "sglang", "trtllm") else {"max_num_seqs": None}
    out = {**base, **{k: row[k] for k in SCHEDULER_KEYS if k in row}}
    missing = [k for k in SCHEDULER_KEYS if k not in out]
    if missing:
        raise InputError(f"{row['id']}: engine {eng!r} has no scheduler defaults; give {', '.join(missing)}")
    return out


#: the change in sends (s) at which the closed-loop client's fixed point stops
CLOSED_LOOP_TOLERANCE_S = 1e-4


def closed_loop_iterations(n: int, concurrency: int) -> int:
    """Most simulations `closed_loop_run` takes for n requests at concurrency C: a run is causal (closed_loop_run), so
    each iteration makes at least the next completion after the last exact one exact, and n − C + 1 iterations reach the fixed point
    (a whole wave of C per iteration when the waves stay in step, often far fewer); plus ⌈n/C⌉ + 10 for the
    pass-segment round-off that can leave a send a few tenths of a millisecond off for another round. Until
    2026-11-26 (after serving set w) the loop stopped after ⌈n/C⌉ + 1 iterations, short of the fixed point where
    desynchronised completions fix fewer than a wave per iteration (disclosed per set)."""
    c = max(1, min(int(concurrency), int(n)))
    return int(n) - c + 1 + -(-int(n) // c) + 10


def closed_loop_sends(finish_s, concurrency: int, release_s=None) -> np.ndarray:
    """bench_serving's --max-concurrency C client: the first C requests are sent at t = 0 and request C + j when the
    (j + 1)-th response completes (its semaphore), with no think time. `release_s` (sorted): when the client's own
    schedule releases each request (a --request-rate under the cap; default all at t = 0) — a request is sent at the
    later of its release and its slot."""
    n = len(finish_s)
    sends = np.zeros(n)
    c = min(int(concurrency), n)
    sends[c:] = np.sort(np.asarray(finish_s, dtype=float))[: n - c]
    return sends if release_s is None else np.maximum(sends, np.asarray(release_s, dtype=float))


def closed_loop_run(simulate, n: int, concurrency: int, release_s=None, iterations: int | None = None):
    """The fixed point of a closed-loop client (closed_loop_sends) over `simulate(sends) -> Trace`: start from every
    request sent at its release (t = 0 by default; the engine's slots then gate them), resend from the completions,
    until the sends move by less than CLOSED_LOOP_TOLERANCE_S (at most `iterations` runs, default
    closed_loop_iterations(n, C)). Returns the last Trace. A run is causal but for where it cuts its decode segments (at
    every known arrival, so a later send can move earlier pass times by round-off), so each iteration makes at least the
    next completion exact; short of the fixed point more than C requests can be in flight, which the client never
    allows. The one-pool paths solve the loop inside the run instead (closed_loop_client); this stays for the
    two-pool disaggregated policy and for the reproduction of the sets registered with it."""
    sends = np.zeros(n) if release_s is None else np.asarray(release_s, dtype=float)
    for _ in range(closed_loop_iterations(n, concurrency) if iterations is None else iterations):
        tr = simulate(sends)
        new = closed_loop_sends(tr.finish_s, concurrency, release_s)
        done = float(np.max(np.abs(new - sends))) < CLOSED_LOOP_TOLERANCE_S
        sends = new
        if done:
            break
    return tr


def benchmark_metrics(trace, overheads, gpus: int, closed_loop: bool = False) -> dict:
    """bench_serving's figures of a run: output tokens/s per GPU over the run, and the medians of TTFT, TPOT
    ((last − first token)/(output − 1)), end-to-end latency and 1/TPOT. TTFT is from the client's send: the
    request's arrival under a closed-loop client (its request-in and tokenising delay inside), else (every request
    queued at t = 0) from its admission plus that delay."""
    first, fin = np.asarray(trace.first_token_s), np.asarray(trace.finish_s)
    out = np.asarray(trace.output_tokens, dtype=float)
    if closed_loop:
        ttft = first - np.asarray(trace.arrival_s)
    else:
        ttft = first - np.asarray(trace.admit_s) + overheads.arrival_delay_s(np.asarray(trace.prompt_tokens))
    tpot = np.where(out > 1, (fin - first) / np.maximum(out - 1, 1), np.nan)
    tpot = tpot[np.isfinite(tpot)]
    return {"output_throughput_per_gpu": throughput_per_gpu(trace, gpus), "median_ttft_s": float(np.median(ttft)),
            "median_tpot_s": float(np.median(tpot)), "median_tokens_per_s_per_user": 1.0 / float(np.median(tpot)),
            "median_e2e_s": float(np.median(ttft + fin - first))}
