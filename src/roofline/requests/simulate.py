"""`simulate`: the discrete-event serving simulator on a catalog model and system — the request and
`run_simulate`, which returns the `roofline simulate --json` dict (docs/simulator.md).

Context rule: every request must fit the model's context. A trace row that does not is an error naming
its line; the medians of generated lengths must fit, and lognormal draws are redrawn (never clipped)
above caps that keep prompt + output within the context (prompt cap = min(16 x median, the context's
prompt share), output cap = min(16 x median, context - prompt cap)).
"""

from __future__ import annotations

from typing import Any, Optional

from . import resolve, rules
from .base import (
    Choice,
    Dtype,
    Fraction,
    FractionZero,
    Imbalance,
    KvMemory,
    KvReserve,
    OptDtype,
    OptReal,
    OptText,
    OptWhole,
    Price,
    Real,
    Text,
    Whole,
    describe,
)
from .layout_opts import LayoutOptions

POLICIES = ("continuous", "chunked", "separate", "static", "train", "disaggregated")
#: a closed loop (--max-concurrency) under --policy disaggregated is solved by whole runs of both pools, up to
#: validate.bench.closed_loop_iterations of them: at most this many (one pool solves it inside one run)
MAX_CLOSED_LOOP_ROUNDS = 2000


class SimulateRequest(LayoutOptions):
    """Requests (generated or a CSV trace) replayed through roofline step times under a batching policy."""

    model: Any
    system: Optional[Any] = None
    accelerator: Optional[str] = None
    gpus: OptWhole(1) = None
    policy: Choice(*POLICIES) = "continuous"
    max_seqs: Whole(1, fix="zero capacity serves nobody") = 256
    max_batched_tokens: Whole(1, fix="zero capacity serves nobody") = 8192
    interval_s: Real(gt=0, le=3600, fix="train departure interval in seconds, e.g. 0.02") = 0.020
    no_preemption: bool = False
    recv_interval: Whole(1, 10_000) = 1  # SGLang --scheduler-recv-interval: new requests every N decode-only passes
    admit_interval: Whole(1, 10_000, fix="admit waiting requests on every K-th pass, as AMD's MLPerf vLLM patch; 1 = off") = 1
    admit_min_running: Whole(0, 10**7, fix="gate admissions only while at least M sequences run; 0 = always") = 0
    long_prefill_token_threshold: Whole(0, 10**7, fix="most tokens of one prompt per pass, as vLLM's --long-prefill-token-threshold; 0 = off") = 0
    max_prefill_tokens: Whole(0, 10**7, fix="SGLang's --max-prefill-tokens: the prompt tokens a pass starts; 0 = off") = 0
    kv_admission: Choice("prompt", "chunk") = "prompt"  # KV a prompt must find free: its whole prompt, or the pass's chunk (vLLM V1)
    stream_s_per_chunk: Real(ge=0, le=1, fix="seconds of the output process per streamed chunk, e.g. 4e-05; 0 = off") = 0.0
    stream_s_per_pass: Real(ge=0, le=1, fix="seconds of the output process per pass's message, e.g. 0.0002; 0 = off") = 0.0
    max_concurrency: OptWhole(1, fix="requests in flight at once, as `vllm bench serve --max-concurrency`, e.g. 16") = None
    sessions: OptWhole(1, 10**6, fix="users chatting at once, each sending its next turn after the answer, e.g. 32") = None
    turns: Whole(1, 10**4, fix="turns per conversation, e.g. 4") = 4
    think_s: Real(ge=0, le=1e5, fix="mean seconds a user takes between an answer and the next turn, e.g. 1") = 1.0
    kernels: Choice("auto", "factor", "tables") = "auto"  # with --realistic: passes from measured kernel tables (auto: where the engine family's exist)
    moe_activations: Choice("auto", "bf16", "fp8") = "auto"  # FP4 experts' activation format in the MoE tables
    fp8_scales: Choice("auto", "tensor", "block") = "auto"  # FP8 experts' scaling in the MoE tables (kernel_pass.FP8_SCALES)
    moe_kernel: Choice("auto", "trtllm-gen") = "auto"  # the launch's fused MoE kernel (kernels.MOE_KERNELS)
    rate: Real(gt=0, le=1e7, fix="mean arrival rate in requests/s, e.g. 10") = 10.0
    arrivals: Choice("poisson", "gamma") = "poisson"
    cv: Real(ge=0.001, le=1000, fix="coefficient of variation of gamma gaps, e.g. 2") = 2.0
    requests: Whole(1, 10**7, fix="requests to simulate, e.g. 1000") = 1000
    duration: OptReal(gt=0, le=1e7, fix="seconds of arrivals, e.g. 60") = None
    stages: OptText = None
    ramp_up: OptText = None
    window_s: OptReal(gt=0, le=1e7, fix="window length in seconds, e.g. 10") = None
    lengths: Choice("fixed", "lognormal") = "lognormal"
    prompt_tokens: Whole(1, rules.MAX_TOKENS) = 1024
    output_tokens: Whole(1, rules.MAX_TOKENS) = 256
    sigma: Real(ge=0, le=10, fix="log-sd of lognormal lengths, e.g. 1") = 1.0
    trace: OptText = None
    shared_prefix_tokens: Whole(0, rules.MAX_TOKENS, fix="tokens of the shared system prompt, 0 = none") = 0
    prefix_groups: Whole(1, 10**6, fix="number of distinct system prompts, e.g. 4") = 1
    prompt_pool: Whole(0, 10**7, fix="unique prompts the client draws from, e.g. 100 (aiperf's default); 0 = every prompt unique") = 0
    pool_warmup: Whole(0, 10**7, fix="warm-up requests from the pool before the run, e.g. 2 x the concurrency") = 0
    prefix_cache: Choice("auto", "on", "off") = "auto"
    block_size: Whole(1, 4096, fix="KV block size in tokens: vLLM 16, SGLang 1") = 16
    kv_offload_gib: Real(ge=0, le=1e6, fix="GiB of host memory for the KV tier behind the prefix cache, e.g. 64; 0 = none") = 0.0
    kv_offload_gb_per_s: OptReal(gt=0, le=1e5, fix="host-to-GPU copy rate per GPU in GB/s, e.g. 53 (PCIe Gen5 x16)") = None
    kv_offload_sync: bool = False  # the pass waits for a request's load (LMCache); else loads run beside the passes
    kv_offload_tier: Text = "ddr-dgx-h100"  # the tiers catalog row that prices the host tier's memory
    kv_disk_gib: Real(ge=0, le=1e9, fix="GiB of local flash or file system for a KV tier behind host memory, e.g. 2048; 0 = none") = 0.0
    kv_disk_gb_per_s: OptReal(gt=0, le=1e5, fix="read rate of the disk tier for the whole replica in GB/s, e.g. 14 (a PCIe Gen5 NVMe drive)") = None
    kv_disk_tier: Text = "flash-gen6"  # the tiers catalog row (flash or disk) that prices the disk tier and gives its rate
    kv_memory_fraction: KvMemory = 0.9  # a fraction, or an engine's own default by name (memory.KV_MEMORY_RULES)
    kv_memory_of: Choice("total", "free") = "total"
    kv_reserve: KvReserve = "none"  # memory per GPU kept from the KV pool besides the weights (memory.kv_reserve_bytes)
    fast_fraction: FractionZero = 0.0
    spec_gamma: Whole(0, 64, fix="draft tokens per step, 0 = off") = 0
    spec_alpha: Real(ge=0, lt=1, fix="acceptance rate per draft token in [0, 1), e.g. 0.7") = 0.7
    draft_fraction: Real(ge=0, le=1, fix="cost of one draft token as a fraction of a decode step") = 0.05
    prefill_gpus: OptWhole(1) = None
    prefill_layout: OptText = None  # the prefill pool's layout as 'tp=8,cp=2' (LayoutOptions' rules)
    moe_imbalance: Imbalance = 1.0
    ttft_target_s: Real(gt=0, le=1e6) = 1.0
    tpot_target_s: Real(gt=0, le=1e6) = 0.1
    seed: Whole(0, 2**63 - 1) = 0
    weights_dtype: Dtype = "bf16"
    expert_weights_dtype: OptDtype = None  # the routed experts' format when it differs (FP4 MoE checkpoints)
    kv_dtype: Dtype = "bf16"
    usd_per_gpu_hour: Price = None
    compute_efficiency: Fraction = 1.0
    memory_efficiency: Fraction = 1.0
    realistic: bool = False
    overlap: bool = False
    engine: Text = "none"
    in_process: bool = False  # the client calls the engine in process: no per-request HTTP/tokeniser/streaming costs
    in_process_text: bool = False  # with in_process: the client sends text, so the engine still tokenises
    sampling: Choice("greedy", "top-k-top-p") = "greedy"  # top-k-top-p: every pass gains the engine's filter cost
    cuda_graph_max_batch: OptWhole(0, fix="the largest decode batch the engine captures in a CUDA graph, e.g. 160; 0 for --enforce-eager") = None
    plot: OptText = None

    def check(self) -> None:
        f = self.flag
        self._model = resolve.model(self.model, f("model"))
        self._system, self._chips = resolve.hardware(self.system, self.accelerator, self.gpus,
                                                     (f("system"), f("accelerator"), f("gpus")))
        fs = {k for k in type(self).fields() if self.changed(k)}
        from ..simulate.overheads import engine_names

        rules.choice(f("engine"), self.engine, engine_names())
        if self.in_process and self.engine.lower() == "none":
            raise rules.UsageError(f"{f('in_process')} drops the {f('engine')}'s per-request costs (HTTP, tokeniser, "
                                   f"first-token streaming); give {f('engine')}, e.g. vllm, or drop {f('in_process')}")
        if self.in_process_text and not self.in_process:
            raise rules.UsageError(f"{f('in_process_text')} says what an in-process client sends; give "
                                   f"{f('in_process')} with it, or drop {f('in_process_text')}")
        if self.sampling != "greedy" and self.engine.lower() == "none":
            raise rules.UsageError(f"{f('sampling')} {self.sampling} adds the {f('engine')}'s top-k/top-p filter cost to "
                                   f"every pass; give {f('engine')}, e.g. vllm, or drop {f('sampling')}")
        if self.admit_interval > 1 and self.recv_interval > 1:
            raise rules.UsageError(f"{f('admit_interval')} ({self.admit_interval}) and {f('recv_interval')} "
                                   f"({self.recv_interval}) are two engines' admission gates (AMD's vLLM patch, "
                                   f"SGLang's); give one of them")
        if self.admit_interval > 1 and self.policy in ("static", "train", "disaggregated"):
            raise rules.UsageError(f"{f('admit_interval')} gates a continuous scheduler's admissions; {f('policy')} "
                                   f"{self.policy} admits by its own rule; use continuous, chunked or separate, or "
                                   f"drop {f('admit_interval')}")
        if (self.stream_s_per_chunk or self.stream_s_per_pass) and self.policy == "disaggregated":
            raise rules.UsageError(f"{f('stream_s_per_chunk')} and {f('stream_s_per_pass')} put one output stage after "
                                   f"one pool's passes; {f('policy')} disaggregated has two: drop them or pick "
                                   f"another policy")
        if self.admit_min_running and self.admit_interval == 1:
            raise rules.UsageError(f"{f('admit_min_running')} ({self.admit_min_running}) says when "
                                   f"{f('admit_interval')} gates admissions; give {f('admit_interval')} too, or drop it")
        if isinstance(self.kv_memory_fraction, str) and self.kv_memory_of != "total":
            raise rules.UsageError(f"{f('kv_memory_fraction')} {self.kv_memory_fraction} is SGLang's "
                                   f"--mem-fraction-static, a share of the whole memory; drop {f('kv_memory_of')} "
                                   f"{self.kv_memory_of} or give a number")
        if self.cuda_graph_max_batch is not None and self.engine.lower() == "none":
            raise rules.UsageError(f"{f('cuda_graph_max_batch')} is the {f('engine')}'s CUDA-graph limit (decode batches "
                                   f"above it run eagerly); give {f('engine')}, e.g. sglang")
        if self.kernels == "tables" and not self.realistic:
            raise rules.UsageError(f"{f('kernels')} tables replaces terms of the realistic pass; add {f('realistic')} "
                                   f"or drop {f('kernels')}")
        self._kernels = self.kernels
        if self.kernels == "auto":  # the tables are loaded only when an engine is named
            self._kernels = "factor"
            if self.realistic and self.engine.lower() != "none":
                from ..kernels import default_kernels

                self._kernels = default_kernels(self._system.accelerator.id, self.engine, realistic=True,
                                                expert_weights_dtype=self.expert_weights_dtype)
        if self.moe_activations != "auto" and (self._kernels != "tables" or self.expert_weights_dtype != "fp4"
                                               or self.weights_dtype not in ("bf16", "fp16")):
            raise rules.UsageError(f"{f('moe_activations')} picks the activation format of MXFP4 experts' measured MoE "
                                   f"rows; it needs measured kernel tables ({f('kernels')} tables, or auto with an "
                                   f"engine family) and {f('expert_weights_dtype')} fp4 beside 16-bit weights; drop it")
        rules.fp8_scales(f, self.fp8_scales, self._kernels, self._model, self.weights_dtype, self.expert_weights_dtype,
                         self.engine)
        rules.moe_kernel(f, self.moe_kernel, self._kernels, self._model)
        if self.trace is not None:
            given = [f(k) for k in ("rate", "requests", "duration", "stages", "ramp_up", "arrivals", "lengths", "prompt_tokens",
                                    "output_tokens", "sigma", "cv") if k in fs and getattr(self, k) is not None]
            if given:
                raise rules.UsageError(f"{f('trace')} gives the arrivals and lengths; drop {', '.join(given)}")
            self._trace_text = rules.text_file(self.trace, f"{f('trace')} file", "a CSV trace with columns "
                                               "arrival_s,prompt_tokens,output_tokens[,priority]")
        if self.sessions is not None:  # chat users: their answers pace the sends (simulate/workload.chat_sessions)
            given = [f(k) for k in ("rate", "duration", "stages", "ramp_up", "trace", "arrivals", "cv", "prompt_pool",
                                    "pool_warmup", "max_concurrency", "fast_fraction") if k in fs]
            if given:
                raise rules.UsageError(f"{f('sessions')} users send each turn after the answer before it, so they set "
                                       f"the arrivals and the load; drop {', '.join(given)}")
            if self.policy == "disaggregated":
                raise rules.UsageError(f"{f('sessions')} is a closed loop inside one pool's run; {f('policy')} "
                                       f"disaggregated has two: pick another policy")
        elif {"turns", "think_s"} & fs:
            raise rules.UsageError(f"{f('turns')} and {f('think_s')} shape the conversations of {f('sessions')}; add "
                                   f"{f('sessions')} N or drop them")
        if self.stages is not None:  # the stages give the rates and the durations (simulate/workload.staged)
            for k in ("rate", "duration", "requests"):
                if k in fs:
                    raise rules.UsageError(f"{f('stages')} and {f(k)} cannot be used together: each stage gives its "
                                           f"rate and duration; drop {f(k)}")
            from ..simulate.workload import parse_stages

            self._stages = parse_stages(self.stages, f("stages"))
        if self.ramp_up is not None:  # vLLM's ramp: -n requests at a rate rising with the request index
            for k in ("rate", "duration", "stages"):
                if k in fs:
                    raise rules.UsageError(f"{f('ramp_up')} and {f(k)} cannot be used together: the ramp gives the "
                                           f"rates of {f('requests')} requests; drop {f(k)}")
            from ..simulate.workload import parse_ramp

            self._ramp = parse_ramp(self.ramp_up, f("ramp_up"))
        if self.trace is not None and {"shared_prefix_tokens", "prefix_groups"} & fs:
            raise rules.UsageError(f"{f('trace')} gives each request's prefix (columns prefix_id, "
                                   f"shared_prefix_tokens); drop {f('shared_prefix_tokens')}/{f('prefix_groups')}")
        if self.prompt_pool:  # each prompt recurs whole: it is its own prefix (simulate/workload.with_prompt_pool),
            # on one of the system prompts of shared_prefix_tokens where given (a tree of prefixes)
            if "trace" in fs:
                raise rules.UsageError(f"{f('prompt_pool')} makes each prompt recur whole, its own prefix; "
                                       f"{f('trace')} gives prefixes too: drop one of them")
            if self.policy == "disaggregated" and self.pool_warmup:
                raise rules.UsageError(f"{f('pool_warmup')} warms one pool's prefix cache; {f('policy')} "
                                       f"disaggregated has two: drop {f('pool_warmup')}")
        elif "pool_warmup" in fs:
            raise rules.UsageError(f"{f('pool_warmup')} counts warm-up requests drawn from {f('prompt_pool')}; "
                                   f"add {f('prompt_pool')} N or drop it")
        if self.kv_offload_gib:  # a host tier behind the prefix cache (simulate/prefixes.HostTier)
            if self.prefix_cache == "off":
                raise rules.UsageError(f"{f('kv_offload_gib')} puts a host-memory tier behind the prefix cache; "
                                       f"{f('prefix_cache')} off has none: drop one of them")
            if self.policy == "disaggregated":
                raise rules.UsageError(f"{f('kv_offload_gib')} models one pool's host tier; {f('policy')} "
                                       f"disaggregated has two: pick another policy or drop it")
            from ..catalog.prices import memory_tier

            self._offload_tier = memory_tier(self.kv_offload_tier)
            if self._offload_tier.medium not in ("ddr", "cxl"):
                raise rules.UsageError(f"{f('kv_offload_tier')} {self.kv_offload_tier} is a {self._offload_tier.medium} "
                                       f"tier; the host tier is memory the CPU addresses: give a ddr or cxl row of "
                                       f"`roofline tiers`, e.g. ddr-dgx-h100")
            if self.kv_offload_gb_per_s is None and not self._system.accelerator.host_link_bytes_per_s:
                raise rules.UsageError(f"the catalog has no measured host-link rate for {self._system.accelerator.id}; "
                                       f"give {f('kv_offload_gb_per_s')}, e.g. 53 for PCIe Gen5 x16")
            if self.kv_disk_gib:  # a disk tier behind host memory
                self._disk_tier = memory_tier(self.kv_disk_tier)
                if self._disk_tier.medium not in ("flash", "disk"):
                    raise rules.UsageError(f"{f('kv_disk_tier')} {self.kv_disk_tier} is a {self._disk_tier.medium} "
                                           f"tier; the disk tier is storage behind host memory: give a flash or disk "
                                           f"row of `roofline tiers`, e.g. flash-gen6")
            else:
                for k in ("kv_disk_gb_per_s", "kv_disk_tier"):
                    if k in fs and getattr(self, k) and (k != "kv_disk_tier" or self.kv_disk_tier != "flash-gen6"):
                        raise rules.UsageError(f"{f(k)} sets {f('kv_disk_gib')}'s disk tier; add {f('kv_disk_gib')} N "
                                               f"or drop it")
        else:
            for k in ("kv_offload_gb_per_s", "kv_offload_sync", "kv_offload_tier", "kv_disk_gib", "kv_disk_gb_per_s",
                      "kv_disk_tier"):
                if k in fs and getattr(self, k) and (k not in ("kv_offload_tier", "kv_disk_tier")
                                                     or getattr(self, k) not in ("ddr-dgx-h100", "flash-gen6")):
                    what = "a disk tier sits behind" if k.startswith("kv_disk") else "sets how"
                    raise rules.UsageError(f"{f(k)} {what} {f('kv_offload_gib')}'s host tier; add "
                                           f"{f('kv_offload_gib')} N or drop it")
        if "prefix_groups" in fs and not self.shared_prefix_tokens:
            raise rules.UsageError(f"{f('prefix_groups')} counts the system prompts of {f('shared_prefix_tokens')}; "
                                   f"add {f('shared_prefix_tokens')} N or drop it")
        if self.trace is None and self.shared_prefix_tokens and self.lengths == "fixed" \
                and self.prompt_tokens < self.shared_prefix_tokens + 1:
            raise rules.InputError(f"{f('prompt_tokens')} {self.prompt_tokens} cannot hold the "
                                   f"{self.shared_prefix_tokens}-token shared prefix plus one token; raise it above "
                                   f"{self.shared_prefix_tokens} or lower {f('shared_prefix_tokens')}")
        if self.duration is not None and "requests" in fs:  # --duration generates its own count
            rules.exclusive(**{f("requests"): self.requests, f("duration"): self.duration})
        if self.prefill_gpus is not None:
            if self.policy != "disaggregated":
                raise rules.UsageError(f"{f('prefill_gpus')} sizes the prefill pool of {f('policy')} disaggregated; "
                                       f"add {f('policy')} disaggregated or drop it")
            if self.prefill_gpus > self._system.chips:
                raise rules.InputError(f"{f('prefill_gpus')} must be between 1 and {self._system.chips} for "
                                       f"{self._system.id}, got {self.prefill_gpus}")
        if self.spec_gamma == 0 and ({"spec_alpha", "draft_fraction"} & fs):
            raise rules.UsageError(f"{f('spec_alpha')} and {f('draft_fraction')} need {f('spec_gamma')} >= 1 "
                                   f"(speculative decoding on)")
        if "interval_s" in fs and self.policy != "train":
            raise rules.UsageError(f"{f('interval_s')} is the departure interval of {f('policy')} train; add it or "
                                   f"drop {f('interval_s')}")
        if self.overlap and not self.realistic:
            raise rules.UsageError(f"{f('overlap')} overlaps communication with compute in the realistic model (the "
                                   f"pure roofline already takes their max); add {f('realistic')} or drop {f('overlap')}")
        if self.realistic and (self.compute_efficiency != 1.0 or self.memory_efficiency != 1.0):
            raise rules.UsageError(f"{f('realistic')} uses the efficiency model's own factors; drop "
                                   f"{f('compute_efficiency')}/{f('memory_efficiency')} or {f('realistic')}")
        if self.trace is None:
            rules.context_fits(self._model, self.prompt_tokens + self.output_tokens,
                               f"{f('prompt_tokens')} + {f('output_tokens')} =",
                               f"lower them to fit {self._model.max_context:,} tokens")
        rules.dtype_supported(f("weights_dtype"), self._system.accelerator, self.weights_dtype)
        rules.expert_dtype(f("expert_weights_dtype"), self._model, self._system.accelerator, self.expert_weights_dtype)
        self._layouts(f)
        if self.realistic and self._layout is None:
            from .step import one_tp_group

            one_tp_group(self._model, self._system, self._chips)
        if self.plot is not None:
            self._plot = rules.output_dir(f("plot"), self.plot)


    def _layouts(self, f) -> None:
        """The replica's layout (the LayoutOptions fields: the deployment, or the decode pool of --policy
        disaggregated), the prefill pool's (--prefill-layout) and --moe-imbalance, with step's rules."""
        self._imbalance = resolve.moe_imbalance(self.moe_imbalance, self._model, f("moe_imbalance"))
        pre = f"{f('policy')} disaggregated {f('prefill_layout')} cp={self.cp}" + (f",tp={self.tp}" if self.tp else "")
        self._layout = self.layout_for(self._model, self._system, gpus=self.gpus, auto_domains=True, cp_allowed=(
            f"one layout runs prefill and decode passes alike here, and a decode token cannot be split; give CP to "
            f"a prefill pool of its own: {pre}"))
        self._prefill_layout = None
        if self.prefill_layout is None:
            return
        if self.policy != "disaggregated":
            raise rules.UsageError(f"{f('prefill_layout')} lays out the prefill pool of {f('policy')} disaggregated; "
                                   f"add {f('policy')} disaggregated or drop it")
        if self.prefill_gpus is not None:
            raise rules.UsageError(f"{f('prefill_layout')} sets the prefill pool's GPUs (TP x DP x PP x CP); drop "
                                   f"{f('prefill_gpus')}")
        from .layout_opts import from_text

        opts = from_text(self.prefill_layout, f("prefill_layout"))
        try:
            self._prefill_layout = opts.layout_for(self._model, self._system, phase="prefill", auto_domains=True)
        except rules.InputError as exc:
            raise type(exc)(f"{f('prefill_layout')} {self.prefill_layout!r}: {exc}") from None


def pool(req: SimulateRequest, layout, chips: int, opts: dict):
    """One pool's Deployment: a replica of `layout` (KV capacity from the layout's memory, steps with its
    communication), else `chips` GPUs with perfect sharding (or one TP group under --realistic)."""
    from ..simulate.steptable import deployment, roofline_deployment

    extra: dict = {} if req.moe_imbalance == 1.0 else {"moe_imbalance": req._imbalance}
    if req.kv_reserve != "none":  # the engine's own reserve, per GPU of this pool's layout
        from ..layout import Layout
        from ..memory import kv_reserve_bytes

        lay = layout if layout is not None else Layout(tp=chips) if req.realistic else Layout.sharded(chips)
        extra["kv_reserve_bytes"] = kv_reserve_bytes(req.kv_reserve, req._model, lay, engine=req.engine,
                                                     max_batched_tokens=req.max_batched_tokens, max_seqs=req.max_seqs)
    if layout is None:
        return roofline_deployment(req._model, req._system, chips=chips, **opts, **extra)
    return deployment(req._model, req._system, layout, **opts, **extra)


def workload(req: SimulateRequest, rng):
    """The request's workload: its CSV trace (every row within the model's context), or generated
    arrivals with generated lengths (medians within the context; draws capped as the module says), their prompts
    drawn from a pool of `prompt_pool` entries where it is set (`workload_and_warmup`)."""
    return workload_and_warmup(req, rng)[0]


def workload_and_warmup(req: SimulateRequest, rng):
    """(`workload`, the prefix ids the pool's warm-up requests left cached, or False): with `prompt_pool` N the
    generated requests send entries of a pool of N (prompt, output) pairs drawn once from the same lengths
    (simulate/workload.with_prompt_pool), after `pool_warmup` warm-up requests from the same stream."""
    import numpy as np

    from ..simulate.workload import generate, ramped, read_trace, requests_for_duration, staged, staged_requests

    maxc = req._model.max_context or rules.MAX_TOKENS
    # a prompt pool's system prompts go on its entries (with_prompt_pool), not on the generated requests
    sp = 0 if req.prompt_pool else req.shared_prefix_tokens
    if req.trace:
        wl = read_trace(req.trace)
        total = wl.prompt_tokens + wl.output_tokens
        if np.any(total > maxc):
            k = int(np.argmax(total > maxc))
            raise rules.InputError(f"{req.trace} line {k + 2}: prompt_tokens + output_tokens = {total[k]:,.0f} exceeds "
                                   f"{req._model.id}'s max_context {maxc:,}; shorten that request or use a model "
                                   f"with a longer context")
    elif req.sessions is not None:  # users chatting: their sessions (Workload.after, think_s) pace the sends
        from ..simulate.workload import chat_sessions

        wl = chat_sessions(rng, req.requests, req.sessions, req.turns, req.think_s, lengths_kind=req.lengths,
                           prompt_tokens=req.prompt_tokens, output_tokens=req.output_tokens, sigma=req.sigma,
                           max_context=maxc, shared_prefix_tokens=req.shared_prefix_tokens,
                           prefix_groups=req.prefix_groups)
    elif req.stages is not None:
        n = staged_requests(req._stages)
        if n > 10**7:
            raise rules.InputError(f"{req.flag('stages')} asks for about {n:,} requests (rate x duration summed), "
                                   f"more than 10,000,000; shorten the stages or lower their rates")
        wl = staged(rng, req._stages, arrivals=req.arrivals, cv=req.cv, lengths_kind=req.lengths,
                    prompt_tokens=req.prompt_tokens, output_tokens=req.output_tokens, sigma=req.sigma,
                    max_context=maxc, shared_prefix_tokens=sp,
                    prefix_groups=req.prefix_groups)
    elif req.ramp_up is not None:
        wl = ramped(rng, req.requests, *req._ramp, arrivals=req.arrivals, cv=req.cv, lengths_kind=req.lengths,
                    prompt_tokens=req.prompt_tokens, output_tokens=req.output_tokens, sigma=req.sigma,
                    max_context=maxc, shared_prefix_tokens=sp,
                    prefix_groups=req.prefix_groups)
    else:
        n = req.requests
        if req.duration is not None:
            n = requests_for_duration(req.rate, req.duration)
            if n > 10**7:
                raise rules.InputError(f"{req.flag('rate')} x {req.flag('duration')} asks for about {n:,} requests, "
                                       f"more than 10,000,000; shorten the duration or lower the rate")
        wl = generate(rng, rate_per_s=req.rate, n=n, arrivals=req.arrivals, cv=req.cv, lengths_kind=req.lengths,
                      prompt_tokens=req.prompt_tokens, output_tokens=req.output_tokens, sigma=req.sigma,
                      max_context=maxc, duration_s=req.duration, shared_prefix_tokens=sp,
                      prefix_groups=req.prefix_groups)
    warm: Any = False
    if req.prompt_pool:
        from ..simulate.workload import draw_lengths, with_prompt_pool

        n_sys = req.shared_prefix_tokens
        entries = draw_lengths(rng, req.prompt_pool, lengths_kind=req.lengths, prompt_tokens=req.prompt_tokens,
                               output_tokens=req.output_tokens, sigma=req.sigma, max_context=maxc,
                               min_prompt=n_sys + 1 if n_sys else 1)
        wl, warm = with_prompt_pool(rng, wl, req.prompt_pool, req.pool_warmup, entries, n_sys, req.prefix_groups)
    if req.fast_fraction:
        from dataclasses import replace

        wl = replace(wl, priority=(rng.random(wl.n) >= req.fast_fraction).astype(np.int64))
    return wl, warm


def kv_memory_fraction(req: SimulateRequest, chips: int) -> float:
    """The request's KV memory fraction: its number, or the named engine default (memory.sglang_mem_fraction_static)
    for its GPU, its replica's GPUs (the layout's tp x dp x pp, else `chips` as one TP group), its token budget (SGLang's
    chunked-prefill size), its CUDA-graph bound where given and its speculation."""
    if not isinstance(req.kv_memory_fraction, str):
        return float(req.kv_memory_fraction)
    from ..memory import replica_kv_fraction

    return replica_kv_fraction(req.kv_memory_fraction, req._system, chips, req._layout,
                               chunked_prefill_size=req.max_batched_tokens, cuda_graph_max_bs=req.cuda_graph_max_batch,
                               speculative=req.spec_gamma > 0)


def run_simulate(req: SimulateRequest, progress=None) -> dict:
    """The `roofline simulate --json` dict (header, summary, per-class figures with --fast-fraction).
    `progress(n)` is called as requests finish."""
    return simulate(req, progress)[0]


def simulate(req: SimulateRequest, progress=None):
    """(the --json dict, the simulation's Trace): the CLI draws `--plot` from the trace."""
    import numpy as np

    from ..efficiency import Efficiency
    from ..simulate import OutputStage, Policy, Simulation, Targets
    from ..simulate.metrics import summarize
    from ..simulate.overheads import EngineOverheads, engine_policy, run_with_engine, with_engine
    from ..speculative import Speculation

    m, sysrec, chips = req._model, req._system, req._chips
    targets = Targets(req.ttft_target_s, req.tpot_target_s)
    spec = Speculation(req.spec_gamma, req.spec_alpha, req.draft_fraction) if req.spec_gamma else None
    disagg = req.policy == "disaggregated"
    pol = Policy("continuous" if disagg else req.policy, req.max_seqs, req.max_batched_tokens, req.interval_s,
                 not req.no_preemption, spec, req.recv_interval, req.long_prefill_token_threshold,
                 req.admit_interval, req.admit_min_running, max_prefill_tokens=req.max_prefill_tokens,
                 kv_admission=req.kv_admission)
    rng = np.random.default_rng(req.seed)
    wl, warm = workload_and_warmup(req, rng)
    eff = None if req.realistic else Efficiency(compute=req.compute_efficiency, memory=req.memory_efficiency)
    opts: dict[str, Any] = dict(efficiency=eff, weights_dtype=req.weights_dtype, kv_dtype=req.kv_dtype,
                usd_per_gpu_hour=req.usd_per_gpu_hour, realistic=req.realistic,
                usable_memory=kv_memory_fraction(req, chips), kv_memory_of=req.kv_memory_of)
    if req.expert_weights_dtype is not None:
        opts["expert_weights_dtype"] = req.expert_weights_dtype
    if req.overlap:  # the family's factors with communication overlapped, given explicitly (as `step --overlap`)
        from ..efficiency import realistic

        opts.update(efficiency=realistic(sysrec.accelerator, req.weights_dtype, "mid", overlap_comm=True,
                                         expert_weights_dtype=req.expert_weights_dtype), realistic=False)
    ovh = EngineOverheads.load(req.engine).for_system(sysrec)  # --engine none: every figure 0, nothing wrapped
    if req.in_process:  # an in-process client (offline benchmarks, MLPerf harnesses): no per-request server costs
        ovh = ovh.in_process(text=req.in_process_text)
    if req.cuda_graph_max_batch is not None:  # the launch's own limit (SGLang --cuda-graph-max-bs ...)
        from dataclasses import replace

        ovh = replace(ovh, cuda_graph_max_batch=float(req.cuda_graph_max_batch))
    if req.sampling == "top-k-top-p":  # the engine's filter over the model's vocabulary in every pass
        ovh = ovh.with_top_k_top_p(req._model.vocab)
    pol = engine_policy(pol, ovh)  # the row's scheduling one batch ahead (vLLM V1 async scheduling)
    from ..layout import Layout

    # without a layout, --realistic runs the GPUs as one TP group (roofline_deployment); --overlap keeps that group
    lay = req._layout if req._layout is not None or not req.overlap else Layout(tp=chips)
    dep = pool(req, lay, chips, opts)
    if req._kernels == "tables":  # passes from the --engine family's measured kernel tables (trtllm for none)
        from ..simulate.steptable import with_kernel_tables

        dep = with_kernel_tables(dep, req.engine, req.moe_activations, req.fp8_scales, req.moe_kernel)
    dep = with_engine(dep, ovh)
    advance = progress or (lambda n=1: None)
    cache: dict[str, Any] = dict(prefix_cache={"auto": None, "on": True, "off": False}[req.prefix_cache],
                                 block_tokens=req.block_size)
    if req.kv_offload_gib:  # the host tier behind the prefix cache, sized for this replica's layout
        from ..simulate.prefixes import host_tier

        rate = (req.kv_offload_gb_per_s * 1e9 if req.kv_offload_gb_per_s is not None
                else sysrec.accelerator.host_link_bytes_per_s)
        host_lay = lay if lay is not None else (Layout(tp=chips) if req.realistic else Layout.sharded(chips))
        disk_rate = 0.0
        if req.kv_disk_gib:  # its read rate: the flag, else the tier row's
            disk_rate = req.kv_disk_gb_per_s * 1e9 if req.kv_disk_gb_per_s is not None else req._disk_tier.bytes_per_s
        cache["host_tier"] = host_tier(m, host_lay, req.kv_dtype, req.kv_offload_gib, rate, req.kv_offload_sync,
                                       req.kv_disk_gib, disk_rate)
    stream = (OutputStage(req.stream_s_per_pass, req.stream_s_per_chunk)
              if req.stream_s_per_chunk or req.stream_s_per_pass else None)  # the output path's own stage
    sims: list = []  # the Simulation whose prefills the cache serves (its step model prices the saved prefill)
    if disagg:
        from ..simulate.pools import disaggregated, kv_transfer_s

        pdep = with_engine(pool(req, req._prefill_layout, req.prefill_gpus or chips, opts), ovh)

        def run(w, closed_loop=None):  # closed_loop: unused (a two-pool closed loop is solved by rounds below)
            res = disaggregated(w, pdep, dep, kv_transfer_s(m, sysrec, w.prompt_tokens, kv_dtype=req.kv_dtype,
                                                            chips=dep.gpus, prefill_chips=pdep.gpus), pol, pol, seed=req.seed,
                                progress=advance, **cache)
            sims.append(res.prefill_simulation)
            return res.trace
    else:
        def run(w, closed_loop=None):
            sims.append(Simulation(w, dep, pol, seed=req.seed, closed_loop=closed_loop, warm_prefixes=warm, stream=stream,
                                   **cache))
            return sims[-1].run(advance)
    if wl.after is not None:  # sessions (--sessions, or a trace's after_request/think_s): each turn sent after the
        from ..simulate.overheads import run_closed_loop  # answer before it, inside the run

        f = req.flag
        if req.max_concurrency is not None or disagg:
            raise rules.InputError(f"the trace's sessions (columns after_request, think_s) are the client's closed loop; "
                                   f"drop {f('max_concurrency') if req.max_concurrency is not None else f('policy') + ' disaggregated'}")
        tr = run_closed_loop(wl, ovh, 1, run)  # tr.arrival_s: the sends (not in request order)
    elif req.max_concurrency is None:
        tr = run_with_engine(wl, ovh, run)
    elif not disagg:  # the client's semaphore inside the run: the next request sent on each completion
        from dataclasses import replace

        from ..validate.bench import closed_loop_client

        tr = closed_loop_client(wl, ovh, int(req.max_concurrency), run)
        wl = replace(wl, arrival_s=np.asarray(tr.arrival_s, dtype=float))
    else:  # two pools: the fixed point over whole runs (validate/bench.closed_loop_run), one per round
        from dataclasses import replace

        from ..simulate.workload import Workload
        from ..validate.bench import closed_loop_iterations, closed_loop_run

        n, c = len(wl.arrival_s), int(req.max_concurrency)
        rounds = closed_loop_iterations(n, c)
        if rounds > MAX_CLOSED_LOOP_ROUNDS:
            f = req.flag
            raise rules.InputError(f"{f('max_concurrency')} {c} over {n:,} requests under --policy disaggregated is a "
                                   f"closed loop solved by up to {rounds:,} whole runs of both pools (at most "
                                   f"{MAX_CLOSED_LOOP_ROUNDS:,}); lower {f('requests')}/{f('duration')}, or drop the "
                                   f"disaggregated policy (one pool solves the loop in one run)")
        tick, advance = advance, (lambda n=1: None)  # the rounds run silently (`run` reads `advance`); ticks at the end

        def once(sends) -> Any:
            sims.clear()
            w: Workload = replace(wl, arrival_s=np.asarray(sends, dtype=float))
            return run_with_engine(w, ovh, run)

        tr = closed_loop_run(once, n, c, release_s=wl.arrival_s)
        wl = replace(wl, arrival_s=np.asarray(tr.arrival_s, dtype=float))
        tick(n)
    s = summarize(tr, targets)
    d = {"model": m.id, "system": sysrec.id, "gpus": tr.gpus, "policy": req.policy, "seed": req.seed,
         "max_seqs": req.max_seqs, "kv_capacity_tokens": dep.kv_capacity_tokens, **s.to_dict()}
    if req.long_prefill_token_threshold:
        d["long_prefill_token_threshold"] = req.long_prefill_token_threshold
    if req.max_prefill_tokens:
        d["max_prefill_tokens"] = req.max_prefill_tokens
    if req.kv_admission != "prompt":
        d["kv_admission"] = req.kv_admission
    if req.kv_reserve != "none":
        d["kv_reserve"], d["kv_reserve_bytes"] = req.kv_reserve, dep.kv_reserve_bytes
    if stream is not None:
        d["stream_s_per_chunk"], d["stream_s_per_pass"] = req.stream_s_per_chunk, req.stream_s_per_pass
    if req.admit_interval > 1:
        d["admit_interval"], d["admit_min_running"] = req.admit_interval, req.admit_min_running
    if req.realistic:  # which kernel times the realistic passes took (--kernels; auto resolved in check)
        d["kernels"] = req._kernels
        if req._kernels == "tables":
            from ..kernels import table_family

            d["kernel_tables"] = table_family(req.engine) or "trtllm"
    if req._layout is not None or req._prefill_layout is not None:  # the pools' layouts and GPUs
        d.update(layout=None if req._layout is None else str(req._layout), decode_gpus=dep.gpus)
        if disagg:
            d.update(prefill_layout=None if req._prefill_layout is None else str(req._prefill_layout),
                     prefill_gpus=pdep.gpus)
    from ..simulate.capacity import run_saturation

    d.update(run_saturation(wl, tr, dep, pdep if disagg else None, pol))
    if req.max_concurrency is not None or wl.after is not None:  # a closed loop offers what it is served: only
        from ..simulate.capacity import GROWTH_LIMIT  # a growing queue saturates

        d.update(closed_loop=True, saturated=bool(d["queue_growth_s_per_s"] > GROWTH_LIMIT))
        if req.max_concurrency is not None:
            d["max_concurrency"] = int(req.max_concurrency)
        elif req.sessions is not None:
            d.update(sessions=int(req.sessions), turns=int(req.turns), think_s=float(req.think_s))
        else:  # a trace's sessions: its users are the requests that wait for none
            d.update(sessions=int(np.sum(wl.after < 0)), trace_sessions=True)
    if wl.has_prefixes:  # prefix cache figures (simulate/metrics.prefix_cache_metrics; docs/simulator.md)
        from ..simulate.metrics import prefix_cache_metrics

        d["prefix_cache"] = "on" if sims[-1].prefix_cache else "off"
        if req.prompt_pool:
            d["prompt_pool"] = {"entries": req.prompt_pool, "warmup": req.pool_warmup}
        if sims[-1].prefix_cache:
            d.update(prefix_cache_metrics(tr))
            if d.get("prefix_reuse_idle_p50_s"):  # the cheapest tier to hold KV that long (roofline tiers)
                from ..catalog.prices import memory_tiers
                from ..tiers import tier_for_hold

                tiers = list(memory_tiers().values())
                i50, i90 = tier_for_hold([d["prefix_reuse_idle_p50_s"], d["prefix_reuse_idle_p90_s"]], tiers)
                d.update(prefix_reuse_tier_p50=tiers[int(i50)].id, prefix_reuse_tier_p90=tiers[int(i90)].id)
            d["prefill_gpu_s_saved"] = sims[-1].saved_prefill_s(tr) * (pdep if disagg else dep).gpus
            if req.kv_offload_gib:  # what the host tier costs against the prefill its loads saved, per hour of the run
                tier, hours = req._offload_tier, max(s.makespan_s, 1e-12) / 3600.0
                saved = sims[-1].saved_prefill_s(tr, host_only=True) * dep.gpus
                d.update(host_tier_row=tier.id,
                         host_tier_usd_per_hour=req.kv_offload_gib * 2.0**30 * tier.usd_per_byte_s * 3600.0,
                         host_prefill_gpu_s_saved=saved,
                         host_prefill_usd_per_hour_saved=saved / 3600.0 * dep.usd_per_gpu_hour / hours)
                if req.kv_disk_gib:
                    d.update(disk_tier_row=req._disk_tier.id, disk_tier_usd_per_hour=req.kv_disk_gib * 2.0**30
                             * req._disk_tier.usd_per_byte_s * 3600.0)
    if req.stages is not None or req.window_s is not None:  # per stage / per window lists (metrics.py)
        from ..simulate.metrics import stage_metrics, windows

        if req.stages is not None:
            d["stages"] = stage_metrics(tr, req._stages, d.get("capacity_requests_per_s"))
        if req.window_s is not None:
            d["windows"] = windows(tr, req.window_s, d.get("capacity_requests_per_s"))
    if not ovh.is_none:
        from ..simulate.overheads import workers_of

        d.update(ovh.terms(wl.prompt_tokens, s.mean_batch, spec.tokens_per_step if spec else 1.0, workers_of(dep)[0]))
        d["engine_in_process"] = bool(req.in_process)
        d["engine_in_process_text"] = bool(req.in_process_text)
        if req.realistic:  # the family's per-pass estimate the engine's figures replaced
            from ..efficiency import family_for
            from ..validate.serving import history_for

            d["engine_replaced_pass_overhead_s"] = family_for(sysrec.accelerator).pass_overhead_s.value
            # how far the blind serving predictions of this engine family have been from the measured values, at
            # runs of this run's predicted load where enough were scored (validate.serving.error_bands by_load)
            hist = history_for(d["engine"], {k: d.get(k) for k in ("ttft_p50_s", "tpot_p50_s", "e2e_p50_s")},
                               d.get("load"))
            if hist is not None:
                d["validation_history"] = hist
    if req.fast_fraction:
        for name, c in (("fast", 0), ("slow", 1)):
            if np.any(tr.priority == c):
                sc = summarize(tr, targets, mask=tr.priority == c)
                d.update({f"{name}_{k}": getattr(sc, k) for k in ("requests", "ttft_p50_s", "ttft_p99_s",
                                                                    "tpot_p50_s", "e2e_p50_s")})
    return rules.finite(d, describe(req)), tr
