"""Serving-engine overheads: the CPU-side costs an engine adds to the GPU passes (`simulate --engine NAME`).

Two kinds, with cited figures per engine family in catalog/data/engines.yaml (docs/simulator.md "Engine
overheads"):

- Per engine step (`OverheadStep`, a StepModel wrapper): every pass takes

      t_pass = t_inner(B, n, c) + τ_pass + τ_worker·(tp − 1) + τ_seq·⌈B/dp⌉    (dp attention-DP schedulers; 1
                                                                            without a layout)

  τ_pass = scheduler + sampling + host sync per step, τ_seq = per sequence in the pass (sampling, output
  processing, detokenisation); requests that sample through a top-k/top-p filter (`with_top_k_top_p`, `--sampling`)
  add the row's filter to both, filter_s_per_pass to τ_pass and filter_s_per_logit·V (the model's vocabulary) to τ_seq
  (vLLM V1's PyTorch path sorts the whole vocabulary; docs/simulator.md "Sampling through a top-k/top-p filter"), τ_worker = per step and per tensor-parallel worker process beyond the first
  (the engines that run one Python worker per GPU and wait for all of them each step: the driver's input
  broadcast and the slowest worker's launch; 0 for engines whose host work overlaps the GPU's). All are the
  part of that host work exposed on the GPU's critical path (what Nsight shows as GPU idle between steps),
  so they add to the pass. Linear in B, so the step table's linear
  interpolation in batch stays exact; the mixed-pass evaluator (steptable.mixed_pass) adds the same
  `overhead_s(B)` through `.inner`.
- Per pass outside CUDA graphs (`eager_floor_s`): a pass that carries prompt tokens runs eagerly in the
  engines that graph decode-only batches alone (SGLang without --enable-piecewise-cuda-graph, TensorRT-LLM's
  PyTorch backend, vLLM V0), so its host must issue every kernel from Python; when that takes longer than the
  GPU's work the pass is host-bound (the overhead-bound regime of He, "Making Deep Learning Go Brrrr From
  First Principles", 2022):

      t_pass = max(t_inner, τ_eager·K) + τ_pass + τ_worker·(tp − 1) + τ_seq·⌈B/dp⌉     (passes with prompt tokens)

  K = model.kernels_per_pass (the GEMM, elementwise and attention kernels of one forward on one GPU, with the
  activation-quantisation kernels of low-precision GEMMs), τ_eager = eager_s_per_kernel, the host time per
  counted kernel (each stands for several Python-level ops: views, metadata, scales). Applied by the mixed-pass
  evaluator to every pass with a prompt chunk, and to decode passes whose batch (per attention-DP scheduler)
  exceeds the engine's largest captured CUDA graph (`cuda_graph_max_batch`: such batches run eagerly too);
  other decode passes never. Ignores: host/GPU overlap short of perfect (the max is the overlapped bound; a
  sync point per layer would add the two), and the host's CPU model (the figure is one machine's).
- Per request (`shift_arrivals` / `restore_trace`): a request reaches the scheduler after request_in_s (HTTP,
  protocol, chat template, IPC: a pure delay) and its tokenising, tokenize_s_per_token·prompt, done by ONE tokeniser
  for all requests, first come first served (vLLM's OpenAI server tokenises on a thread pool of one worker,
  `ThreadPoolExecutor(max_workers=1)` in serving_engine.py since PR #10635, 2024-11-25; issue #25301, 2025-09-20:
  "requests are forced to wait in a serialized queue for preprocessing"; SGLang's TokenizerManager and
  TensorRT-LLM's OpenAI server tokenise in one server process too): a burst of arrivals reaches the scheduler
  spread by their tokenising times (`fifo_arrivals`, Lindley's recursion), not all at once. Each of its tokens
  reaches the user first_token_out_s after the pass that made it (detokenise, stream the chunk). TTFT and
  end-to-end latency are measured from the user's arrival; TPOT is unchanged by the per-request terms (the first
  and last tokens are streamed with the same delay). Ignores: the API server's event loop as a server of its own
  (its per-request CPU time is inside request_in_s, a pure delay; vLLM RFC #12705, 2025-02-03: "the API server runs
  in a single process, utilizing a single CPU"; `SERIAL_REQUEST_IN` serves request-in one request at a time with the
  tokenising, a hypothesis the blind sets aj and ak declared as their alternative: no material change on their
  bursts) and tokenisers with several workers.

Relation to the realistic families (efficiency.yaml): a family's `pass_overhead_s` estimates the same
per-step host work, so `with_engine` sets it to 0 when an engine is given (the engine's τ_pass + τ_seq·B
replace it); `layer_overhead_s` (kernel launch gaps inside the forward) is GPU-side and kept.
Ignores: CPU contention between the API server and the engine under load (the figures are those of the
engines' split-process designs), multi-step scheduling (one host round per n steps; its admission boundaries can be given as the policy's
admit_interval), eager decode in engines whose row has no eager floor (the vllm row: vLLM V1's --enforce-eager;
`cuda_graph_max_batch` 0 gives the floor to every decode pass where the row has one), and network time between the user and the server.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace

import numpy as np

from ..efficiency import WHICH, Factor
from ..errors import CatalogError, InputError
from .steptable import Deployment, EngineStep
from .workload import Workload

#: The figures every engine row gives (catalog/data/engines.yaml documents each).
FIGURES = ("request_in_s", "tokenize_s_per_token", "first_token_out_s", "per_pass_s", "per_sequence_s", "per_worker_s",
           "eager_s_per_kernel", "filter_s_per_pass", "filter_s_per_logit")
#: Figures a row may leave out (then 0 at every corner).
OPTIONAL = ("per_worker_s", "eager_s_per_kernel", "filter_s_per_pass", "filter_s_per_logit")
#: Requests' sampling (`simulate --sampling`, the validator's run key `sampling`): greedy (argmax, inside per_pass_s) or
#: top-k-top-p (a top-k and/or top-p filter over the whole vocabulary each pass: the row's filter_s_* figures).
SAMPLING = ("greedy", "top-k-top-p")
#: The engine name that adds nothing (today's pass times, bit-identical results).
NO_ENGINE = "none"


def _rows() -> dict[str, dict]:
    """The catalog's engine rows by id (packaged + --catalog files; later rows override), parsed once."""
    from ..catalog import get_catalog

    cat = get_catalog()
    rows = cat.parsed.get("engines")
    if rows is None:
        rows = {}
        for where, row in cat.raw.get("engines", []):
            rows[str(row["id"]).lower()] = _parse(row, where)
        cat.parsed["engines"] = rows
    return rows


def _parse(row: dict, where: str) -> dict:
    """A catalog `engines:` row → {name, date, figures: {figure: Factor}} (format in engines.yaml)."""
    if not isinstance(row.get("figures"), dict):
        raise CatalogError(f"{where}: an engines row needs `id` and a `figures:` mapping")
    unknown = set(row) - {"id", "name", "date", "figures", "notes", "cuda_graph_max_batch", "per_worker_families",
                          "schedule_ahead"}
    if unknown:
        raise CatalogError(f"{where}: unknown key {sorted(unknown)[0]!r}; expected id, name, date, figures, notes, "
                           "cuda_graph_max_batch, per_worker_families, schedule_ahead")
    ahead = row.get("schedule_ahead", [0, "not given: synchronous scheduling"])
    if (not isinstance(ahead, list) or len(ahead) != 2 or not isinstance(ahead[1], str) or isinstance(ahead[0], bool)
            or ahead[0] not in (0, 1)):
        raise CatalogError(f"{where}: schedule_ahead must be [0 or 1, \"source\"] (1: the next batch is scheduled "
                           f"while this one runs), got {ahead!r}")
    fams = row.get("per_worker_families")
    if fams is not None and (not isinstance(fams, list) or len(fams) != 2 or not isinstance(fams[1], str)
                             or not isinstance(fams[0], list) or not fams[0]
                             or not all(isinstance(f, str) for f in fams[0])):
        raise CatalogError(f"{where}: per_worker_families must be [[accelerator vendor, ...], \"source\"], got {fams!r}")
    graph = row.get("cuda_graph_max_batch", [math.inf, "not given: every decode batch is graphed"])
    if (not isinstance(graph, list) or len(graph) != 2 or not isinstance(graph[1], str)
            or isinstance(graph[0], bool) or not isinstance(graph[0], (int, float)) or not graph[0] >= 1):
        raise CatalogError(f"{where}: cuda_graph_max_batch must be [largest graphed decode batch >= 1, \"source\"], "
                           f"got {graph!r}")
    if str(row["id"]).lower() == NO_ENGINE:
        raise CatalogError(f"{where}: engine id {NO_ENGINE!r} is reserved for no overheads; pick another id")
    figs = row["figures"]
    missing = [n for n in FIGURES if n not in figs and n not in OPTIONAL]
    extra = [n for n in figs if n not in FIGURES]
    if missing or extra:
        bad = f"missing {missing[0]!r}" if missing else f"unknown figure {extra[0]!r}"
        raise CatalogError(f"{where}: {bad}; figures are {', '.join(FIGURES)}")
    out = {}
    for name in FIGURES:
        v = figs.get(name, [0.0, 0.0, 0.0, "not given: 0"])
        if (not isinstance(v, list) or len(v) != 4 or not isinstance(v[3], str)
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v[:3])):
            raise CatalogError(f"{where}: figure {name!r} must be [value, low, high, \"source\"], got {v!r}")
        if not all(np.isfinite(v[:3])) or min(v[:3]) < 0:
            raise CatalogError(f"{where}: figure {name!r} needs finite values >= 0 seconds, got {v[:3]}")
        try:
            out[name] = Factor(float(v[0]), float(v[1]), float(v[2]), v[3])
        except InputError as exc:
            raise CatalogError(f"{where}: figure {name!r}: {exc}") from None
    return {"name": str(row.get("name", row["id"])), "date": str(row.get("date", "")), "figures": out,
            "cuda_graph_max_batch": float(graph[0]), "cuda_graph_source": graph[1],
            "schedule_ahead": int(ahead[0]), "schedule_ahead_source": ahead[1],
            "per_worker_families": None if fams is None else tuple(str(f).lower() for f in fams[0])}


def engine_names() -> tuple[str, ...]:
    """Valid `--engine` values: none, then the catalog's engines in alphabetical order."""
    return (NO_ENGINE, *sorted(_rows()))


@dataclass(frozen=True)
class EngineOverheads:
    """One engine family's overheads at `which` ('mid': central figures; 'fast': the low corner of every
    figure; 'slow': the high corner — the efficiency families' convention). All seconds."""

    engine: str = NO_ENGINE
    request_in_s: float = 0.0
    tokenize_s_per_token: float = 0.0
    first_token_out_s: float = 0.0
    per_pass_s: float = 0.0
    per_sequence_s: float = 0.0
    per_worker_s: float = 0.0
    eager_s_per_kernel: float = 0.0
    filter_s_per_pass: float = 0.0
    filter_s_per_logit: float = 0.0
    filter_vocab: int = 0  # the vocabulary the requests' top-k/top-p filter runs over (with_top_k_top_p); 0: greedy
    cuda_graph_max_batch: float = math.inf
    per_worker_families: tuple | None = None  # vendors the per-worker term applies on (None: all)
    schedule_ahead: int = 0  # 1: the engine schedules the next batch while this one runs (Policy.schedule_ahead)
    which: str = "mid"
    sources: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        for name in FIGURES:
            v = getattr(self, name)
            if not (np.isfinite(v) and v >= 0):
                raise InputError(f"engine overhead {name} must be a time >= 0 s, got {v!r}")
        if not self.cuda_graph_max_batch >= 0:
            raise InputError(f"cuda_graph_max_batch must be a batch >= 0 (inf: every decode batch graphed; 0: none, "
                             f"as vLLM's --enforce-eager), got {self.cuda_graph_max_batch!r}")

    @classmethod
    def load(cls, engine: str, which: str = "mid") -> "EngineOverheads":
        """The catalog row `engine` at `which`; 'none' gives every figure 0."""
        if which not in WHICH:
            raise InputError(f"which must be one of {', '.join(WHICH)}, got {which!r}")
        key = str(engine).lower()
        if key == NO_ENGINE:
            return cls(NO_ENGINE, which=which)
        rows = _rows()
        if key not in rows:
            raise InputError(f"unknown engine {engine!r}; expected one of {', '.join(engine_names())}")
        figs = rows[key]["figures"]
        # every figure is a time: the 'fast' corner is the low one
        vals = {n: figs[n].pick(which, faster_when_high=False) for n in FIGURES}
        return cls(key, which=which, sources={**{n: figs[n].source for n in FIGURES},
                                              "cuda_graph_max_batch": rows[key]["cuda_graph_source"],
                                              "schedule_ahead": rows[key]["schedule_ahead_source"]},
                   cuda_graph_max_batch=rows[key]["cuda_graph_max_batch"], schedule_ahead=rows[key]["schedule_ahead"],
                   per_worker_families=rows[key]["per_worker_families"], **vals)

    def for_system(self, system) -> "EngineOverheads":
        """These overheads on `system`'s accelerators: the per-worker term only on the vendors the row lists under
        `per_worker_families` (every vendor when it lists none)."""
        fams = self.per_worker_families
        vendor = str(getattr(getattr(system, "accelerator", None), "vendor", "")).lower()
        if fams is None or not self.per_worker_s or not vendor or vendor in fams:
            return self
        return replace(self, per_worker_s=0.0)

    def in_process(self, text: bool = False) -> "EngineOverheads":
        """These overheads for a client that calls the engine in its own process (MLPerf's LoadGen harnesses,
        vLLM's benchmark_latency.py / LLM.generate, TensorRT-LLM's gptSessionBenchmark and trtllm-bench): no HTTP
        request, no server-side tokeniser (the client sends token ids) and no first token streamed back, so
        request_in_s, tokenize_s_per_token and first_token_out_s are 0; the per-pass and per-sequence costs, the
        eager floor and the CUDA-graph limit stay. `text`: the client sends text (AccelMark's harness passes the
        prompt string to AsyncLLMEngine.generate), so the engine tokenises it in process and tokenize_s_per_token
        stays."""
        return replace(self, request_in_s=0.0, first_token_out_s=0.0,
                       tokenize_s_per_token=self.tokenize_s_per_token if text else 0.0)

    def with_top_k_top_p(self, vocab: int) -> "EngineOverheads":
        """These overheads for requests that sample through a top-k and/or top-p filter over a `vocab`-entry
        vocabulary: every pass gains filter_s_per_pass + filter_s_per_logit·vocab per sequence (`step_pass_s`,
        `step_sequence_s`). A row without the filter figures cannot say what the filter costs: InputError."""
        if self.filter_s_per_pass == 0 and self.filter_s_per_logit == 0:
            raise InputError(f"engine {self.engine!r}'s catalog row gives no top-k/top-p filter cost (filter_s_per_pass, "
                             f"filter_s_per_logit); add them to its row with --catalog, or leave sampling greedy")
        if not (int(vocab) == vocab and vocab >= 1):
            raise InputError(f"the top-k/top-p filter needs the model's vocabulary (a whole number >= 1), got {vocab!r}")
        return replace(self, filter_vocab=int(vocab))

    @property
    def step_pass_s(self) -> float:
        """τ_pass with the top-k/top-p filter's fixed part where the requests use one (with_top_k_top_p)."""
        return self.per_pass_s + (self.filter_s_per_pass if self.filter_vocab else 0.0)

    @property
    def step_sequence_s(self) -> float:
        """τ_seq with the filter's part where the requests use one: filter_s_per_logit · vocabulary per sequence."""
        return self.per_sequence_s + self.filter_s_per_logit * self.filter_vocab

    @property
    def is_none(self) -> bool:
        return all(getattr(self, n) == 0.0 for n in FIGURES)

    def arrival_delay_s(self, prompt_tokens) -> np.ndarray:
        """Seconds from the user's send to the scheduler with the tokeniser free: request_in_s +
        tokenize_s_per_token·prompt (`fifo_arrivals` adds the wait for the tokeniser)."""
        return self.request_in_s + self.tokenize_s(prompt_tokens)

    def tokenize_s(self, prompt_tokens) -> np.ndarray:
        """The tokeniser's service time of each request: tokenize_s_per_token·prompt (one tokeniser, first come
        first served: module docstring)."""
        return self.tokenize_s_per_token * np.asarray(prompt_tokens, dtype=float)

    def ttft_overhead_s(self, prompt_tokens: float) -> float:
        """The per-request part of TTFT for a prompt of `prompt_tokens`: request-in + tokenise + first-token-out
        (the prefill pass's own per-pass overhead is in the pass)."""
        return float(self.arrival_delay_s(prompt_tokens)) + self.first_token_out_s

    def pass_overhead_s(self, batch, workers: int = 1):
        """τ_pass + τ_worker·(workers − 1) + τ_seq·batch: what every pass of `batch` sequences gains on `workers`
        tensor-parallel worker processes."""
        return self.step_pass_s + self.per_worker_s * (workers - 1) + self.step_sequence_s * batch

    def to_dict(self) -> dict:
        """The figures used, under `engine_*` keys (the --json record)."""
        return {"engine": self.engine, "engine_which": self.which,
                **{f"engine_{n}": getattr(self, n) for n in FIGURES},
                "engine_cuda_graph_max_batch": None if math.isinf(self.cuda_graph_max_batch) else self.cuda_graph_max_batch,
                "engine_schedule_ahead": self.schedule_ahead,
                "engine_sampling": SAMPLING[1] if self.filter_vocab else SAMPLING[0], "engine_filter_vocab": self.filter_vocab}

    def terms(self, prompt_tokens, mean_batch: float, tokens_per_pass: float = 1.0, workers: int = 1) -> dict:
        """The overheads as their own --json terms of a run: `ttft_overhead_s` = request-in + tokenise +
        first-token-out for the median prompt of `prompt_tokens` (the prefill pass's per-pass share is inside
        the pass); `tpot_overhead_s` = (per_pass_s + per_worker_s · (workers − 1) + per_sequence_s · mean_batch) /
        tokens per decode pass (1;
        the expected tokens per verify step under speculation) — the per-pass share of each output token at
        the run's time-weighted mean batch; and the figures used (`to_dict`)."""
        return {**self.to_dict(), "ttft_overhead_s": self.ttft_overhead_s(float(np.median(prompt_tokens))),
                "tpot_overhead_s": float(self.pass_overhead_s(mean_batch, workers)) / tokens_per_pass}


@dataclass(frozen=True)
class OverheadStep:
    """A StepModel wrapper: every pass of `inner` plus per_pass_s + per_sequence_s·batch/schedulers.

    `schedulers`: host processes that each schedule and post-process their own share of the pass's sequences
    in parallel — the attention data-parallel ranks (vLLM/SGLang DP attention and TensorRT-LLM's attention DP
    run one scheduler per rank); 1 otherwise (TP ranks all see the whole batch).
    Same protocol as EngineStep: `step_times(batch, tokens, context)` and `__call__` over broadcasting arrays.
    `.inner` and `overhead_s(batch)` let steptable.mixed_pass evaluate a mixed pass from the inner engine's
    terms and add the same overhead (batch = decoding sequences + prefill chunks in the pass); `eager_floor_s`
    is the host floor of a pass outside CUDA graphs (module docstring): `step_times` applies it to batches above
    `graph_max_batch`; passes with prompt tokens get it from the mixed-pass evaluator, which knows the chunks
    (the table's passes of several tokens per sequence may be graphed verify passes)."""

    inner: object
    per_pass_s: float = 0.0
    per_sequence_s: float = 0.0
    schedulers: int = 1
    eager_floor_s: float = 0.0
    graph_max_batch: float = math.inf
    ungraphed_s: float = 0.0  # UNGRAPHED_PASSES: seconds a pass of more than graph_max_tokens tokens adds
    graph_max_tokens: float = math.inf

    def __post_init__(self):
        for name in ("per_pass_s", "per_sequence_s", "eager_floor_s"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v >= 0):
                raise InputError(f"{name} must be a time >= 0 s, got {v!r}")
        if int(self.schedulers) != self.schedulers or self.schedulers < 1:
            raise InputError(f"schedulers must be a whole number >= 1, got {self.schedulers!r}")

    @property
    def batch_breaks(self) -> tuple[float, ...]:
        """Batches where the pass time jumps: the largest graphed batch (schedulers × graph_max_batch), above
        which a pass takes the eager floor. StepTable puts it and the next whole batch on its batch grid, so
        its linear interpolation never blends a graphed pass with an eager one."""
        if self.eager_floor_s > 0 and np.isfinite(self.graph_max_batch):
            return (float(self.schedulers * self.graph_max_batch),)
        return ()

    def overhead_s(self, batch):
        """Seconds one pass of `batch` sequences gains (scalar in, float out; array in, array out): the busiest
        scheduler's share, ⌈batch/schedulers⌉ sequences (batch itself with one scheduler, so the step table's
        linear interpolation in the batch stays exact there)."""
        if self.schedulers == 1:
            b = float(batch) if np.ndim(batch) == 0 else np.asarray(batch, dtype=float)
            return self.per_pass_s + self.per_sequence_s * b
        if np.ndim(batch) == 0:
            return self.per_pass_s + self.per_sequence_s * math.ceil(float(batch) / self.schedulers)
        return self.per_pass_s + self.per_sequence_s * np.ceil(np.asarray(batch, dtype=float) / self.schedulers)

    def eager(self, batch, prompt=False):
        """Whether a pass runs outside CUDA graphs: it carries prompt tokens, or its decode batch (each
        scheduler's share) exceeds the engine's largest graphed batch. Broadcasts over `batch`."""
        return np.asarray(prompt) | (np.asarray(batch, dtype=float) / self.schedulers > self.graph_max_batch)

    def step_times(self, batch, tokens, context):
        """Inner step + overhead; a batch above the graph limit takes at least the eager floor (the table's
        passes with prompt tokens get it through the mixed-pass evaluator, which knows the chunks)."""
        fn = getattr(self.inner, "step_times", self.inner)
        b = np.asarray(batch, dtype=float)
        t = np.asarray(fn(batch, tokens, context), dtype=float)
        if self.eager_floor_s and np.isfinite(self.graph_max_batch):
            t = np.where(self.eager(b), np.maximum(t, self.eager_floor_s), t)
        if self.ungraphed_s:  # a pass of more tokens than the largest graph runs outside graphs (UNGRAPHED_PASSES)
            t = t + np.where(b * np.asarray(tokens, dtype=float) > self.graph_max_tokens, self.ungraphed_s, 0.0)
        return t + self.overhead_s(b)

    __call__ = step_times


def _without_pass_overhead(step):
    """A realistic EngineStep with its family's pass_overhead_s set to 0 (the engine's figures replace that
    estimate): the same factors as an explicit Efficiency. Anything else is returned unchanged."""
    if not isinstance(step, EngineStep):
        return step
    if step.efficiency is not None and step.efficiency.family != "ideal":  # a family's factors given explicitly
        return replace(step, efficiency=replace(step.efficiency, pass_overhead_s=0.0))  # (e.g. with overlap)
    if not step.realistic:
        return step
    from ..efficiency import realistic

    eff = realistic(step.system.accelerator, step.weights_dtype, step.which)
    return replace(step, efficiency=replace(eff, pass_overhead_s=0.0), realistic=False)


def workers_of(dep: Deployment) -> tuple[int, int]:
    """(tensor-parallel worker processes, attention-DP schedulers) of a deployment's layout (through an engine's
    OverheadStep); (1, 1) without one."""
    step = dep.step.inner if isinstance(dep.step, OverheadStep) else dep.step
    lay = getattr(step, "layout", None)
    if lay is None or lay.perfect:
        return 1, 1
    return int(lay.tp), int(lay.dp)


def eager_floor_s(step, overheads: EngineOverheads) -> float:
    """τ_eager·K: the host time of one forward issued kernel by kernel outside CUDA graphs (module docstring), K
    from model.kernels_per_pass at the step's weight (and expert weight) format; 0 for a step model that is not
    the pass engine's, or an engine without the figure."""
    if not overheads.eager_s_per_kernel or not isinstance(step, EngineStep):
        return 0.0
    from ..model import kernels_per_pass

    def low(dtype) -> bool:
        return str(dtype).lower() not in ("bf16", "fp16", "fp32")

    experts = step.options.get("expert_weights_dtype")
    gemm, ew, attn = kernels_per_pass(step.model, low(step.weights_dtype), None if experts is None else low(experts))
    return overheads.eager_s_per_kernel * float(gemm + np.asarray(ew) + attn)


def with_engine(dep: Deployment, overheads: EngineOverheads) -> Deployment:
    """`dep` with its steps wrapped in OverheadStep (the family's pass_overhead_s replaced by the engine's
    figures under --realistic); `dep` itself when the engine adds nothing."""
    if overheads.is_none:
        return dep
    overheads = overheads.for_system(getattr(dep.step, "system", None))
    workers, schedulers = workers_of(dep)
    ungraphed, graph_tokens = 0.0, math.inf
    model = getattr(dep.step, "model", None)
    if UNGRAPHED_PASSES and overheads.engine in V1_ROWS and model is not None:
        ungraphed = UNGRAPHED_S_PER_LAYER * model.layers
        graph_tokens = overheads.cuda_graph_max_batch if np.isfinite(overheads.cuda_graph_max_batch) else UNGRAPHED_TOKENS
    step = OverheadStep(_without_pass_overhead(dep.step), overheads.step_pass_s + overheads.per_worker_s * (workers - 1),
                        overheads.step_sequence_s, schedulers, eager_floor_s(dep.step, overheads),
                        overheads.cuda_graph_max_batch, ungraphed, graph_tokens)
    return replace(dep, step=step)


#: A hypothesis, not the default (2026-11-29, after set co's values were seen; docs/simulator.md "Engine overheads",
#: Passes outside CUDA graphs): vLLM V1 replays CUDA graphs for passes of up to its largest capture size in tokens (512
#: by default: min(2 x max_num_seqs, 512), vllm/config/scheduler.py of 0.11.0, config/vllm.py of 0.19.0; the run's
#: cuda_graph_max_batch where given); a larger pass (a prompt chunk of more than 512 tokens) runs its Inductor code
#: launched from Python (v1/worker/gpu_model_runner.py of 0.11.0 l.1927-1944; cudagraph_dispatcher.py), and takes
#: UNGRAPHED_S_PER_LAYER per layer more than its kernels: AIConfigurator's calibration on H200 with vLLM 0.18.0
#: (ai-dynamo/aiconfigurator PR #1166: measured TTFT above kernel time by 41, 45 and 52 ms on Qwen3 0.6B, 8B and 14B at
#: 9,000-token prompts, about 1.4 ms a layer; the merged model 0.8 ms a layer over its data set). Added after a set,
#: so off until a blind set declares it. Applies to the engine rows of V1 (V1_ROWS).
UNGRAPHED_PASSES = False
UNGRAPHED_S_PER_LAYER = 0.8e-3
UNGRAPHED_TOKENS = 512
V1_ROWS = ("vllm", "vllm-v0.14", "vllm-v1-sync", "vllm-v1-sync-fullgraph")


# ---- per-request delays without touching the event loop ---------------------------------------------
#: one tokeniser for all requests (module docstring); False: every request tokenised at once, a pure delay (as the
#: serving sets up to ad were registered; tests/conftest.py `tokeniser_in_parallel`)
SERIAL_TOKENIZER = True
#: the API server's request-in work served one request at a time by the same server as the tokeniser (module
#: docstring, "Ignores"): off, request_in_s is a pure delay. A hypothesis, not the default: post hoc on the closed loops
#: of sets ae, ag and ah it fragmented the simulated waves as the measured TTFT spread says the real ones are (ITL
#: 19.6 -> 14.6% on ag), but at concurrency 200 (set ai) it queued whole waves (TTFT 18.7 -> 31.8%); declared blind as
#: the alternative of sets aj and ak (bursts of 100), where it changed nothing material (end-to-end 38.3 against 38.7%,
#: 41.6 against 42.1%).
SERIAL_REQUEST_IN = False


def serial_service_s(overheads: "EngineOverheads", prompt_tokens) -> np.ndarray:
    """Each request's service time at the API server's one serial server: its tokenising, plus its request-in work
    where SERIAL_REQUEST_IN; the rest of arrival_delay_s is a pure delay before that server."""
    s = overheads.tokenize_s(prompt_tokens)
    return s + overheads.request_in_s if SERIAL_REQUEST_IN else s


def fifo_arrivals(arrival_s, prompt_tokens, overheads: EngineOverheads) -> np.ndarray:
    """Each request's arrival at the scheduler: request_in_s after the user's send it joins the one tokeniser's
    queue (in that order) and leaves it tokenize_s later (core.fifo_departures: D_i = max(A_i, D_{i-1}) + S_i)."""
    from .core import fifo_departures

    if not SERIAL_TOKENIZER:
        return np.asarray(arrival_s, dtype=float) + overheads.arrival_delay_s(prompt_tokens)
    service = serial_service_s(overheads, prompt_tokens) * np.ones(np.shape(arrival_s))
    a = np.asarray(arrival_s, dtype=float) + (0.0 if SERIAL_REQUEST_IN else overheads.request_in_s)  # + pure delay
    order = np.argsort(a, kind="stable")
    out = np.empty_like(a)
    out[order] = fifo_departures(a[order], service[order])
    return out


def shift_arrivals(workload: Workload, overheads: EngineOverheads) -> tuple[Workload, np.ndarray]:
    """(the workload as the scheduler sees it, order): arrivals as `fifo_arrivals` (request-in, then the one
    tokeniser, first come first served), re-sorted (stably) by that time.
    `order[i]` is the index in `workload` of the i-th request of the shifted workload. Every per-request
    column (prompt, output, priority, stage, ...) moves with its request."""
    if workload.after is not None:
        raise InputError("a workload of sessions (each turn sent after an answer) runs through its closed loop "
                         "(run_closed_loop), which sends each turn as its answer arrives; its arrivals cannot be shifted "
                         "ahead of the run")
    n = workload.n
    shifted = fifo_arrivals(workload.arrival_s, workload.prompt_tokens, overheads)
    order = np.argsort(shifted, kind="stable")
    cols = {f.name: np.asarray(getattr(workload, f.name))[order] for f in fields(workload)
            if isinstance(getattr(workload, f.name), np.ndarray) and len(getattr(workload, f.name)) == n}
    cols["arrival_s"] = shifted[order]
    return replace(workload, **cols), order


def restore_trace(trace, workload: Workload, order: np.ndarray, overheads: EngineOverheads):
    """The Trace of a run on `shift_arrivals`'s workload, back in `workload`'s order with the user's arrival
    times, first-token and finish times plus first_token_out_s (each token reaches the user that long after
    its pass). Admission stays the scheduler's time. Segment columns (seg_*) are the loop's clock: unchanged."""
    n = workload.n
    back = {}
    for f in fields(trace):
        v = getattr(trace, f.name)
        if f.name.startswith("seg_") or not isinstance(v, np.ndarray) or v.shape != (n,):
            continue
        out = np.empty_like(v)
        out[order] = v
        back[f.name] = out
    back["arrival_s"] = np.asarray(workload.arrival_s, dtype=float).copy()
    back["first_token_s"] = back["first_token_s"] + overheads.first_token_out_s
    back["finish_s"] = back["finish_s"] + overheads.first_token_out_s
    return replace(trace, **back)


def run_closed_loop(workload: Workload, overheads: EngineOverheads, concurrency: int, run):
    """A closed-loop client (core.ClosedLoop: at most `concurrency` requests in flight, the next sent on each
    completion; for a workload of sessions, Workload.after and think_s, each turn sent `think_s` after the answer it
    waits for) over
    `run(workload, closed_loop) -> Trace` in the scheduler's frame: the workload's arrival_s are the client's
    releases; returns the Trace in the user's frame — each request's arrival is its send (its scheduler arrival less
    request-in and tokenising), its first token and finish first_token_out_s later, as restore_trace. Sessions take
    the tokeniser's time as a pure delay (their sends are not in one order a FIFO server could be solved in ahead)."""
    from .core import ClosedLoop

    after, think_s = workload.after, workload.think_s  # sessions, or None
    delay_in = np.asarray(overheads.arrival_delay_s(workload.prompt_tokens), dtype=float) * np.ones(workload.n)
    service = (serial_service_s(overheads, workload.prompt_tokens) * np.ones(workload.n)
               if SERIAL_TOKENIZER and after is None else None)
    loop = ClosedLoop(int(concurrency), delay_in, float(overheads.first_token_out_s), service_s=service, after=after,
                      think_s=think_s)
    tr = run(workload, loop)
    out = overheads.first_token_out_s
    return replace(tr, arrival_s=np.asarray(loop.sends_s, dtype=float), first_token_s=np.asarray(tr.first_token_s) + out,
                   finish_s=np.asarray(tr.finish_s) + out)


def engine_policy(policy, overheads: EngineOverheads):
    """`policy` as the engine schedules it: the row's `schedule_ahead` (an engine that schedules the next batch while
    the current one runs; Policy.schedule_ahead) on the continuous batching policies; static and train batches keep
    their own rule."""
    if not overheads.schedule_ahead or policy.kind not in ("continuous", "chunked", "separate"):
        return policy
    return replace(policy, schedule_ahead=int(overheads.schedule_ahead))


def run_with_engine(workload: Workload, overheads: EngineOverheads, run):
    """`run(workload)` → Trace on the shifted workload, returned in the user's frame (`restore_trace`); with no
    per-request overheads `run(workload)` as it is."""
    if overheads.request_in_s == 0 and overheads.tokenize_s_per_token == 0 and overheads.first_token_out_s == 0:
        return run(workload)
    shifted, order = shift_arrivals(workload, overheads)
    return restore_trace(run(shifted), workload, order, overheads)
