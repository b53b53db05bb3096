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


def finetune(requests: float, isl: int, osl: int, pp: int = 1) -> tuple[int, int]:
    """tuning.finetune_setting (optimistic tuning): (max_batch_size, max_num_tokens) from the requests the
    KV cache is estimated to hold."""
    raw_bs = min(requests, 4096) / pp
    raw_tok = min(raw_bs * (1 + isl / osl), 32768)
    if raw_bs < 256:
        bs = max(64, 32 * math.ceil(raw_bs / 32))
    elif raw_bs < 1024:
        bs = 128 * math.ceil(raw_bs / 128)
    else:
        bs = 256 * math.ceil(raw_bs / 256)
    if raw_tok < 4096:
        tok = max(2048, 256 * math.ceil(raw_tok / 256))
    elif raw_tok < 8192:
        tok = 512 * math.ceil(raw_tok / 512)
    else:
        tok = 1024 * math.ceil(raw_tok / 1024)
    return int(bs), int(tok)


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


def simulated_run(meas, m, which: str, extra: dict, efficiency, system, layout, kv_tokens: float):
    """The Trace of the row's run: N requests at t = 0, fixed lengths, in-flight batching (policy
    'continuous', no preemption: KV reserved at admission) under bench_settings × dp, the row's efficiency
    corner `which` and TensorRT-LLM's engine overheads at the same corner (catalog engines.yaml `trtllm`)."""
    from ..simulate import Policy, Simulation
    from ..simulate.overheads import EngineOverheads, run_with_engine, with_engine
    from ..simulate.steptable import deployment
    from ..simulate.workload import make_workload

    r = meas.row
    if "requests" not in r:
        raise InputError(f"{meas.id}: scenario trtllm_bench_throughput needs `requests` (the dataset's "
                         "$num_requests from the source's table)")
    n, isl, osl = int(r["requests"]), int(r["input_tokens"]), int(r["output_tokens"])
    bs, tok = bench_settings(m, system.accelerator.hbm_bytes, r)
    ranks = int(layout.dp)
    dep = deployment(m, system, layout, efficiency=efficiency, weights_dtype=str(r.get("weights_dtype", "bf16")),
                     kv_dtype=str(r.get("kv_dtype", "bf16")), expert_weights_dtype=r.get("expert_weights_dtype"))
    dep = replace(dep, kv_capacity_tokens=float(kv_tokens))
    ovh = EngineOverheads.load(str(r.get("engine", "trtllm")), which=which)
    dep = with_engine(dep, ovh)
    pol = Policy("continuous", max_seqs=bs * ranks, max_batched_tokens=tok * ranks, preemption=False)
    wl = make_workload(np.zeros(n), isl, osl)
    return run_with_engine(wl, ovh, lambda w: Simulation(w, dep, pol, seed=0).run()), (bs, tok)


def throughput_per_gpu(trace, gpus: int) -> float:
    """trtllm-bench's 'Per GPU Output Throughput': output tokens over first arrival to last completion."""
    span = float(np.max(trace.finish_s) - np.min(trace.arrival_s))
    return float(np.sum(trace.output_tokens)) / span / gpus
