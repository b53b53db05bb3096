"""Evaluate each published measurement with the library (the pass engine with the efficiency model;
training rows with training.train_step, which runs its forward through the same engine).

Every scenario is a function of one measurement row (data/measurements.yaml) returning the predicted
value in the row's unit, for the central efficiency factors and for the two corners of their spread
(efficiency.WHICH): the interval [low, high] is the range of the prediction over those corners.

Inference passes are engine.step with the family's factors (efficiency.realistic) under the row's layout
(tp, ep, pp, dp) on the row's system (a catalog or dataset system, else `chips` copies of the accelerator
on one scale-up domain): TP all-reduces, EP dispatch/combine and stage p2p on their tiers.

Scenarios (formulas; B batch, I input, O output tokens, n GPUs):
- static_batch_throughput (TensorRT-LLM gptSessionBenchmark, static batching): all B sequences start
  together; the prefill emits the first token, then O−1 decode steps at growing context:
      t_run = t_prefill(B, I) + Σ_{c=I}^{I+O−2} t_decode(B, c);   value = B·O/(t_run·n) per GPU
- max_throughput_kv_capacity (trtllm-bench throughput, requests fed at an infinite rate): the same t_run
  at the concurrency B the engine's KV cache admits (kv_capacity_batch: trtllm-bench's own heuristic,
  each request reserving I + O tokens, capped at 4096); value = B·O/(t_run·n) per GPU.
- trtllm_bench_throughput (trtllm-bench throughput as it runs, validate/bench.py): the row's `requests`
  (the source's $num_requests) queued at once and replayed through the serving simulator — in-flight
  batching without chunked prefill under the benchmark's own max_batch_size / max_num_tokens per
  attention-DP rank (stated in the row, else trtllm-bench's heuristic), KV reserved at admission,
  TensorRT-LLM's engine overheads — value = output tokens / (first arrival to last completion) / n.
- serving_benchmark (vLLM/SGLang bench_serving at --max-concurrency C, SemiAnalysis InferenceMAX; validate/bench.py):
  the row's `requests` (default 10·C) with bench_serving's random lengths (uniform in [ratio·L, L]) queued at
  once, at most C in the engine, replayed through the serving simulator under the engine's scheduler (vllm:
  chunked prefill, 8,192 tokens and 1,024 sequences a pass on >= 70 GiB GPUs; sglang: prefill-only passes of
  8,192/16,384 tokens; trtllm: whole prompts, 2,048 x 8,192; the row's own settings where its launch gave them)
  and the engine's overheads (and SGLang's --scheduler-recv-interval, row key `recv_interval`, where the launch
  sets it; row key `client`: all_at_once, the default, queues every request at t = 0, closed_loop sends request
  C + j when the (j + 1)-th response completes, solved as a fixed point of the simulation); value = the row's
  `quantity`: output tokens/s per GPU over the run, or the median TTFT (from the send: the request's admission
  when all are queued at t = 0, its closed-loop send otherwise), TPOT, 1/TPOT or e2e.
- e2e_latency_s: the same t_run, with O decode steps after the prefill when the row sets
  `first_token_from_prefill: false` (the source counts O generated tokens after the context phase).
- ttft_s: one prefill pass t_prefill(B, I) (TensorRT-LLM 'first token latency' = the context phase).
- decode_step_s: t_decode(B, C).   decode_tokens_per_s_per_sequence: 1/t_decode(B, C); with multi-token
  prediction (mtp_draft_tokens γ, mtp_acceptance α, draft_fraction f) E/t of engine.step's speculative step
  (a verify pass of γ + 1 tokens plus γ·f decode steps, E = (1 − α^(γ+1))/(1 − α)).
- prefill_node_throughput: B·I/t_prefill(B, I) · 8/n input tokens/s per 8-GPU node.
- decode_node_throughput (DeepSeek day 6): one decode step of B sequences, each verifying
  1 + d tokens (MTP: d draft tokens, acceptance a) at KV length C; value = B·(1 + a·d)/t · 8/n
  output tokens/s per 8-GPU node.
- prefill_mfu: B·I·2N_matmul / (t_prefill · n · P).
- training_mfu: training.train_step with the row's Layout (tp, pp, dp, micro_batch, micro_batches,
  schedule, virtual_stages, zero, recompute, sequence_parallel) and FLOP convention (mfu_definition: model → MFU,
  hardware → HFU, which counts recomputation as Megatron 2021 and BLOOM do); η_compute = the family's
  GEMM curve at b·s rows, scale-up/scale-out efficiencies from the family (efficiency.py).
- training_tokens_per_s_per_gpu: the same train_step; value = G·s/(t_step·n). weights_dtype is the GEMMs'
  dtype (fp8 for FP8 recipes); the attention core runs at bf16 peak (training.train_step).
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources

import numpy as np

from .. import model as M
from ..catalog import get_catalog, parse_accelerator, parse_model, parse_system
from ..efficiency import WHICH, Factor, family_efficiency, family_for, kv_read_multiplier
from ..engine import step
from ..errors import InputError
from ..hardware import single_accelerator_system
from ..layout import Layout
from ..memory import kv_capacity_tokens

METRICS = ("decode", "throughput", "prefill", "training_mfu", "training_throughput")
RATE_SCENARIOS = {"static_batch_throughput", "max_throughput_kv_capacity", "trtllm_bench_throughput", "decode_tokens_per_s_per_sequence",
                  "decode_node_throughput", "prefill_node_throughput", "prefill_mfu", "training_mfu", "training_tokens_per_s_per_gpu"}


@dataclass(frozen=True)
class Measurement:
    id: str
    metric: str
    scenario: str
    model: str
    accelerator: str
    chips: int
    measured: float
    unit: str
    source: str
    date: str
    reliability: str
    sharding: str
    row: dict  # the full row (scenario inputs)


@dataclass(frozen=True)
class Evaluation:
    measurement: Measurement
    predicted: float
    low: float
    high: float

    @property
    def error(self) -> float:
        """Signed relative error (predicted − measured)/measured."""
        return self.predicted / self.measurement.measured - 1.0

    @property
    def covered(self) -> bool:
        return self.low <= self.measurement.measured <= self.high


@lru_cache(maxsize=None)
def load_dataset(path: str | None = None) -> tuple[dict, tuple[Measurement, ...]]:
    """(extra accelerators, models and systems by id, measurements) from the packaged YAML (or `path`)."""
    import yaml

    if path is None:
        text = (resources.files("roofline.validate") / "data" / "measurements.yaml").read_text()
        name = "roofline/validate/data/measurements.yaml"
    else:
        with open(path) as fh:
            text = fh.read()
        name = path
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"{name}: not valid YAML ({str(exc).splitlines()[0]}); fix the file") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("measurements"), list):
        raise InputError(f"{name}: expected a mapping with a `measurements:` list (and optional accelerators, "
                         "models, systems sections); see roofline/validate/data/measurements.yaml")
    extra: dict = {}
    accs = dict(get_catalog().accelerators)
    for i, row in enumerate(doc.get("accelerators") or []):  # hardware as the source ran it (e.g. power-capped)
        acc = parse_accelerator(dict(row), f"{name}: accelerators[{i}]")
        extra[acc.id] = accs[acc.id] = acc
    for i, row in enumerate(doc.get("models") or []):
        m = parse_model(dict(row), f"{name}: models[{i}]")
        extra[m.id] = m
    for i, row in enumerate(doc.get("systems") or []):
        sy = parse_system(dict(row), f"{name}: systems[{i}]", accs)
        extra[sy.id] = sy
    out = []
    seen = set()
    for i, row in enumerate(doc.get("measurements") or []):
        where = f"{name}: measurements[{i}]"
        for key in ("id", "metric", "scenario", "model", "accelerator", "chips", "measured", "source", "date"):
            if key not in row:
                raise InputError(f"{where}: missing {key!r}; every measurement needs it")
        if row["metric"] not in METRICS:
            raise InputError(f"{where}: metric {row['metric']!r} not one of {', '.join(METRICS)}")
        if row["scenario"] not in SCENARIOS:
            raise InputError(f"{where}: scenario {row['scenario']!r} not one of {', '.join(SCENARIOS)}")
        if row["id"] in seen:
            raise InputError(f"{where}: duplicate id {row['id']!r}")
        seen.add(row["id"])
        out.append(Measurement(
            id=row["id"], metric=row["metric"], scenario=row["scenario"], model=row["model"],
            accelerator=row["accelerator"], chips=int(row["chips"]), measured=float(row["measured"]),
            unit=str(row.get("unit", "")), source=str(row["source"]), date=str(row["date"]),
            reliability=str(row.get("reliability", "medium")), sharding=_sharding(row),
            row=dict(row)))
    return extra, tuple(out)


def _sharding(row) -> str:
    """Label for the report: how the row's chips are modelled."""
    if row.get("sharding"):
        return str(row["sharding"])
    if row["scenario"].startswith("training"):
        return "train-layout"
    lay = [f"{k.upper()}{row[k]}" for k in ("tp", "ep", "pp", "dp") if int(row.get(k, 1)) > 1]
    return " ".join(lay) if lay else "1 chip"


def _model(name: str, extra: dict) -> M.Model:
    return extra[name] if name in extra else get_catalog().model(name)


def _accelerator(meas: Measurement, extra: dict):
    a = meas.accelerator
    return extra[a] if a in extra else get_catalog().accelerator(a)


def _system(meas: Measurement, extra: dict):
    r = meas.row
    if r.get("system"):
        sid = r["system"]
        return extra[sid] if sid in extra else get_catalog().system(sid)
    return single_accelerator_system(_accelerator(meas, extra), meas.chips)


def _layout(meas) -> Layout:
    """The row's inference layout: tp, ep, pp, dp, domains, and the production-layout fields cp, moe_tp,
    redundant_experts and attention (heads | batch)."""
    r = meas.row
    moe_tp = r.get("moe_tp")
    return Layout(tp=int(r.get("tp", 1)), ep=int(r.get("ep", 1)), pp=int(r.get("pp", 1)), dp=int(r.get("dp", 1)),
                  domains=int(r.get("domains", 1)), cp=int(r.get("cp", 1)),
                  expert_tp=None if moe_tp is None else int(moe_tp),
                  redundant_experts=int(r.get("redundant_experts", 0)), attention=str(r.get("attention", "heads")))


def _speculation(meas):
    """A decode row's multi-token prediction / speculative decoding (mtp_draft_tokens γ, mtp_acceptance α,
    draft_fraction f, default 0: the draft is free), or None."""
    from ..speculative import Speculation

    r = meas.row
    d = int(r.get("mtp_draft_tokens", 0))
    return Speculation(d, float(r.get("mtp_acceptance", 0.0)), float(r.get("draft_fraction", 0.0))) if d else None


#: the kernel times the inference rows are predicted with: "factor" (the family's cited factors) or "tables"
#: (measured kernel tables where covered; `evaluate(..., kernels="tables")`)
_KERNELS: ContextVar[str] = ContextVar("kernels", default="factor")


def row_engine(meas) -> str:
    """Whose measured kernels a row is predicted with in table mode: the engine its id or source names
    (vllm, sglang), else TensorRT-LLM (fixed before the pre-registered comparison of issue 19)."""
    text = f"{meas.id} {meas.source}".lower()
    return "vllm" if "vllm" in text else "sglang" if "sglang" in text else "trtllm"


def _with_tables(meas, m, res, phase, batch, context, prompt, which, extra):
    """`res` (the factor pass) with its GEMM, attention, TP all-reduce and EP terms from measured kernel
    tables where the row's accelerator, dtypes and shapes are covered (kernel_pass.corner_terms / apply):
    central value from the row's engine, corners from the spread across engines widened by extrapolation."""
    from ..kernel_pass import apply, corner_terms

    r = meas.row
    lay = _layout(meas)
    terms, scale = corner_terms(m, _system(meas, extra or {}), batch, context, which=which, engine=row_engine(meas),
                                phase=phase, prompt=prompt, tp=lay.tp, ep=lay.ep, pp=lay.pp, dp=lay.dp,
                                moe_tp=lay.moe_tp, weights_dtype=str(r.get("weights_dtype", "bf16")),
                                kv_dtype=str(r.get("kv_dtype", "bf16")), expert_weights_dtype=r.get("expert_weights_dtype"))
    if r.get("ideal_network"):  # the factor model's ideal network stays: no measured all-reduce
        terms = replace(terms, tp_covered=np.zeros_like(terms.tp_covered))
    step_s, _, _ = apply(res, terms, overlap_comm=bool(r.get("overlap_comm", False)), scale=(scale, scale, scale))
    return replace(res, step_s=step_s)


def _efficiency(meas, m, which="mid", extra=None):
    """The row's efficiency factors at corner `which`: its accelerator family's, with the row's network,
    overlap, decode-attention kernel and routed-expert format."""
    r = meas.row
    fam = family_for(_accelerator(meas, extra or {}))
    if r.get("ideal_network"):  # communication of a layout the engine cannot express: bandwidth only
        fam = replace(fam, scale_up_step_latency_s=Factor(0.0, 0.0, 0.0, "ideal network"),
                      scale_up_bandwidth=Factor(1.0, 1.0, 1.0, "ideal network"))
    return family_efficiency(fam, r.get("weights_dtype", "bf16"), which,
                             overlap_comm=bool(r.get("overlap_comm", False)),
                             kv_read_multiplier=kv_read_multiplier(m, _decode_attention(meas) == "per-query-head", which),
                             expert_weights_dtype=r.get("expert_weights_dtype"))


def _pass(meas, m, phase, batch, context, prompt=1, which="mid", extra=None, speculation=None):
    r = meas.row
    wd = r.get("weights_dtype", "bf16")
    ewd = r.get("expert_weights_dtype")  # the routed experts' format where it differs (FP4 MoE checkpoints)
    eff = _efficiency(meas, m, which, extra)
    res = step(m, _system(meas, extra or {}), batch, context, layout=_layout(meas), phase=phase, prompt=prompt,
               weights_dtype=wd, expert_weights_dtype=ewd, kv_dtype=r.get("kv_dtype", "bf16"), efficiency=eff,
               check=False,
               check_context=False, details=False, speculation=speculation)
    if _KERNELS.get() == "tables" and speculation is None:
        res = _with_tables(meas, m, res, phase, batch, context, prompt, which, extra)
    return res


def _decode_attention(meas) -> str:
    kind = str(meas.row.get("decode_attention", "shared"))
    if kind not in ("shared", "per-query-head"):
        raise InputError(f"{meas.id}: decode_attention must be shared or per-query-head, got {kind!r}")
    return kind


def _batch_run_s(meas, m, which, extra=None, batch=None):
    r = meas.row
    B, I, O = (r["batch"] if batch is None else batch), r["input_tokens"], r["output_tokens"]
    steps = O - 1 if r.get("first_token_from_prefill", True) else O
    t = _pass(meas, m, "prefill", B, 0, prompt=I, which=which, extra=extra).step_s
    if steps > 0:
        t = t + float(np.sum(_pass(meas, m, "decode", B, np.arange(I, I + steps), which=which, extra=extra).step_s))
    return float(t)


def _throughput_at(meas, m, which, extra, batch):
    """B·O/(t_run·n): output tokens/s per GPU of the static-batch run at batch B."""
    return batch * meas.row["output_tokens"] / (_batch_run_s(meas, m, which, extra, batch=batch) * meas.chips)


def _static_batch_throughput(meas, m, which, extra):
    return _throughput_at(meas, m, which, extra, meas.row["batch"])


def _kv_cache_tokens(meas, m, extra=None, fraction=None, of: str = "free") -> float:
    """Tokens the row's KV cache holds: kv_cache_fraction (default 0.90; or `fraction`) of the memory the weights
    leave (TensorRT-LLM's kv_cache_free_gpu_mem_fraction; memory.kv_capacity_tokens of="free"), or with of="total"
    of the whole memory less the weights (vLLM's gpu_memory_utilization, SGLang's mem_fraction_static)."""
    r = meas.row
    fraction = float(r.get("kv_cache_fraction", 0.90) if fraction is None else fraction)
    if not 0.0 < fraction <= 1.0:
        raise InputError(f"{meas.id}: kv_cache_fraction must be in (0, 1] (a share of free memory), got {fraction:g}")
    return float(kv_capacity_tokens(m, _system(meas, extra or {}), _layout(meas),
                                    weights_dtype=str(r.get("weights_dtype", "bf16")),
                                    expert_weights_dtype=r.get("expert_weights_dtype"),
                                    kv_dtype=str(r.get("kv_dtype", "bf16")), usable_memory=fraction, of=of))


def kv_capacity_batch(meas, m, extra=None) -> int:
    """Concurrent requests an engine that reserves each request's whole KV (input + output tokens) up front
    can hold: trtllm-bench's heuristic (tensorrt_llm/bench/build/tuning.py, calc_engine_setting and
    finetune_setting), which the TensorRT-LLM perf-overview tables were run with:

        cache tokens = memory.kv_capacity_tokens(of="free", usable = f)    f = kv_cache_fraction (row; 0.90)
                     = f·(HBM − weights per GPU) per GPU, over each GPU's share of a token's KV
        B            = min(cache tokens / (ISL + OSL), 4096) / pp

    (KV heads replicated when tp exceeds them.) Ignores activation and runtime buffers (inside 1 − f) and
    the GiB-vs-GB reading of device memory."""
    r = meas.row
    requests = _kv_cache_tokens(meas, m, extra) / (r["input_tokens"] + r["output_tokens"])
    if requests < 1:
        raise InputError(f"{meas.id}: the KV cache holds {requests:.2f} requests; the row cannot run as stated")
    return max(1, int(min(requests, 4096) // int(r.get("pp", 1))))


def _max_throughput(meas, m, which, extra):
    """Offline maximum throughput (requests fed at an infinite rate): the static-batch run at the engine's
    KV-capacity concurrency (kv_capacity_batch) — in steady state each request still costs one prefill and
    OSL decode steps at batch B over contexts ISL..ISL+OSL."""
    return _throughput_at(meas, m, which, extra, kv_capacity_batch(meas, m, extra))


def _bench_run(meas, m, which, extra):
    """The simulated trtllm-bench run of the row at corner `which` (validate/bench.py), memoised in the catalog
    (an overlay is another catalog) per dataset, row and corner: a validation evaluates each row several times
    (report, plot, tables)."""
    from .bench import simulated_run

    key = (id(extra), meas.id, repr(sorted(meas.row.items())), which)
    runs = get_catalog().parsed.setdefault("validate_bench_runs", {})
    if key not in runs:
        runs[key], _ = simulated_run(meas, m, which, extra, _efficiency(meas, m, which, extra), _system(meas, extra),
                                     _layout(meas), _kv_cache_tokens(meas, m, extra))
    return runs[key]


def _bench_throughput(meas, m, which, extra):
    """trtllm-bench throughput simulated (validate/bench.py): the row's `requests` queued at once, in-flight
    batching under the benchmark's own max_batch_size / max_num_tokens per attention-DP rank, KV reserved at
    admission, TensorRT-LLM's engine overheads; output tokens/s per GPU over the whole run. With measured
    kernel tables (which time passes, not schedules) the static-batch run at the simulated run's mean number
    of decoding sequences."""
    from .bench import throughput_per_gpu

    tr = _bench_run(meas, m, which, extra)
    if _KERNELS.get() == "tables":
        span = float(np.max(tr.finish_s) - np.min(tr.arrival_s))
        mean_batch = float(np.sum(np.asarray(tr.finish_s) - np.asarray(tr.first_token_s))) / span
        return _throughput_at(meas, m, which, extra, max(1, int(round(mean_batch))))
    return throughput_per_gpu(tr, meas.chips)


#: row keys that label or report a measurement rather than set its inputs
_ROW_LABELS = ("id", "metric", "quantity", "unit", "measured", "heldout_for", "notes", "source", "date", "reliability")


def _serving_benchmark(meas, m, which, extra):
    """A serving benchmark at a fixed client concurrency (bench_serving --max-concurrency C, validate/bench.py):
    the row's `requests` (default 10·C, InferenceMAX's) of bench_serving's random lengths queued at once, at most C
    in the engine, through the serving simulator under the engine's scheduler (its defaults where the launch left
    them, bench.engine_scheduler) and overheads; value = the row's `quantity` (bench.QUANTITIES). Measured kernel
    tables are not applied (they time passes, not schedules): table mode predicts these rows with the factors."""
    from . import bench
    from .bench import QUANTITIES, benchmark_lengths, benchmark_metrics, run, serving_settings

    r = meas.row
    q = str(r.get("quantity", ""))
    if q not in QUANTITIES:
        raise InputError(f"{meas.id}: serving_benchmark needs `quantity`, one of {', '.join(QUANTITIES)}; got {q!r}")
    # one run per row: a row's lengths are drawn with its own id as the seed (bench.benchmark_lengths), so the three
    # rows of a benchmark are three draws, as they were predicted
    inputs = {k: v for k, v in r.items() if k not in _ROW_LABELS}
    key = (id(extra), meas.id, repr(sorted(inputs.items())), which)
    runs = get_catalog().parsed.setdefault("validate_bench_runs", {})
    if key not in runs:
        system, lay = _system(meas, extra), _layout(meas)
        c = int(r["concurrency"])
        n = int(r.get("requests", 10 * c))
        prompts, outputs = benchmark_lengths(r, n)
        st = serving_settings(r, system.accelerator.engine_memory_bytes)
        ranks = int(lay.dp)
        cap = c if st["max_num_seqs"] is None else min(c, int(st["max_num_seqs"]) * ranks)
        kv = _kv_cache_tokens(meas, m, extra, float(st["kv_cache_fraction"]), str(st["kv_memory_of"]))
        engine = str(r.get("overheads", r.get("engine", "none")))
        client = str(r.get("client", "all_at_once"))
        if client not in ("all_at_once", "closed_loop"):
            raise InputError(f"{meas.id}: client must be all_at_once or closed_loop, got {client!r}")
        eff = _efficiency(meas, m, which, extra)
        reuse: dict = {}  # the closed loop's runs share one step table and mixed-pass model

        def simulate(sends=None, concurrency=None):
            return run(m, system, lay, eff, r, which, prompts, outputs, str(st["policy"]), cap,
                       int(st["max_num_batched_tokens"]) * ranks, bool(st["preemption"]), kv, engine,
                       int(r.get("recv_interval", 1)), sends, reuse, concurrency)

        if client == "closed_loop":  # bench_serving's semaphore, solved inside the run (bench.closed_loop_rows)
            tr, ovh = bench.closed_loop_rows(simulate, n, c)
        else:
            tr, ovh = simulate()
        runs[key] = benchmark_metrics(tr, ovh, meas.chips, closed_loop=client == "closed_loop")
    return float(runs[key][q])


def _e2e_latency(meas, m, which, extra):
    return _batch_run_s(meas, m, which, extra)


def _ttft(meas, m, which, extra):
    r = meas.row
    return float(_pass(meas, m, "prefill", r["batch"], 0, prompt=r["input_tokens"], which=which, extra=extra).step_s)


def _decode_step(meas, m, which, extra):
    return float(_pass(meas, m, "decode", meas.row["batch"], meas.row["context"], which=which, extra=extra).step_s)


def _decode_speed(meas, m, which, extra):
    """Tokens/s per sequence: 1/step, or E/step with multi-token prediction (engine.step's speculation)."""
    sp = _speculation(meas)
    if sp is None:
        return 1.0 / _decode_step(meas, m, which, extra)
    r = _pass(meas, m, "decode", meas.row["batch"], meas.row["context"], which=which, extra=extra, speculation=sp)
    return float(r.tokens_per_s_per_sequence)


def _prefill_node_throughput(meas, m, which, extra):
    """Input tokens/s per 8-GPU node of one prefill pass of B prompts of I tokens on the n GPUs."""
    r = meas.row
    t = _pass(meas, m, "prefill", r["batch"], 0, prompt=r["input_tokens"], which=which, extra=extra).step_s
    return float(r["batch"] * r["input_tokens"] / t * 8.0 / meas.chips)


def _node_throughput(meas, m, which, extra):
    r = meas.row
    d, a = int(r.get("mtp_draft_tokens", 0)), float(r.get("mtp_acceptance", 0.0))
    if d:  # a verify pass: 1 + d tokens per sequence against the cached context
        t = float(_pass(meas, m, "prefill", r["batch"], r["context"], prompt=1 + d, which=which, extra=extra).step_s)
    else:
        t = _decode_step(meas, m, which, extra)
    return r["batch"] * (1.0 + a * d) / t * 8.0 / meas.chips


def _prefill_mfu(meas, m, which, extra):
    r = meas.row
    acc = _accelerator(meas, extra)
    t = _pass(meas, m, "prefill", r["batch"], 0, prompt=r["input_tokens"], which=which, extra=extra).step_s
    flops = r["batch"] * r["input_tokens"] * M.matmul_flops_per_token(m)
    return float(flops / (t * meas.chips * acc.peak_flops(r.get("weights_dtype", "bf16"))))


def _train_step(meas, m, which, extra):
    """training.train_step with the row's published layout (module docstring)."""
    from ..training import train_step

    r = meas.row
    system = _system(meas, extra)
    dtype = r.get("weights_dtype", "bf16")
    lay = Layout(tp=int(r.get("tp", 1)), pp=int(r.get("pp", 1)), dp=int(r.get("dp", 1)),
                 micro_batch=int(r.get("micro_batch", 1)), micro_batches=int(r.get("micro_batches", 1)),
                 schedule=r.get("schedule", "1f1b"), virtual_stages=int(r.get("virtual_stages", 1)),
                 zero=int(r.get("zero", 1)), recompute=r.get("recompute", "none"),
                 sequence_parallel=bool(r.get("sequence_parallel", True)), cp=int(r.get("cp", 1)))
    if lay.gpus != meas.chips:
        raise InputError(f"{meas.id}: layout tp·pp·dp = {lay.gpus} GPUs, but chips = {meas.chips}; fix the row")
    eff = replace(family_efficiency(family_for(system.accelerator), dtype, which),
                  overlap_dp=float(r.get("overlap_dp", 0.0)), overlap_pp=float(r.get("overlap_pp", 0.0)),
                  overlap_tp=float(r.get("overlap_tp", 0.0)))
    return train_step(m, system, lay, r["seq_len"], efficiency=eff, causal=bool(r.get("causal", True)), dtype=dtype,
                      flash_attention=bool(r.get("flash_attention", True)), dropout=bool(r.get("dropout", False)))


def _training(meas, m, which, extra):
    st = _train_step(meas, m, which, extra)
    definition = meas.row.get("mfu_definition", "model")
    if definition not in ("model", "hardware"):
        raise InputError(f"{meas.id}: mfu_definition must be model or hardware, got {definition!r}")
    return float(st.mfu if definition == "model" else st.hfu)


def _training_tokens(meas, m, which, extra):
    return float(_train_step(meas, m, which, extra).tokens_per_s) / meas.chips


SCENARIOS = {
    "static_batch_throughput": _static_batch_throughput,
    "max_throughput_kv_capacity": _max_throughput,
    "trtllm_bench_throughput": _bench_throughput,
    "serving_benchmark": _serving_benchmark,
    "e2e_latency_s": _e2e_latency,
    "ttft_s": _ttft,
    "decode_step_s": _decode_step,
    "decode_tokens_per_s_per_sequence": _decode_speed,
    "decode_node_throughput": _node_throughput,
    "prefill_node_throughput": _prefill_node_throughput,
    "prefill_mfu": _prefill_mfu,
    "training_mfu": _training,
    "training_tokens_per_s_per_gpu": _training_tokens,
}


def evaluate(meas: Measurement, extra: dict | None = None, kernels: str = "factor") -> Evaluation:
    """Predict one measurement: central value and the interval over the efficiency corners. `kernels`
    "tables" takes the inference rows' kernel terms from measured tables where covered (training rows keep
    the factor model: the tables are inference kernels)."""
    if kernels not in ("factor", "tables"):
        raise InputError(f"kernels must be factor or tables, got {kernels!r}")
    extra = extra or {}
    m = _model(meas.model, extra)
    fn = SCENARIOS[meas.scenario]
    token = _KERNELS.set(kernels)
    try:
        vals = {w: fn(meas, m, w, extra) for w in WHICH}
    finally:
        _KERNELS.reset(token)
    return Evaluation(meas, vals["mid"], min(vals.values()), max(vals.values()))


def evaluate_all(path: str | None = None, kernels: str = "factor") -> list[Evaluation]:
    """Evaluate every packaged measurement (or those of `path`), with the factor model or measured kernels."""
    extra, rows = load_dataset(path)
    return [evaluate(r, extra, kernels) for r in rows]
