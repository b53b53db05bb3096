"""`roofline simulate`: the discrete-event serving simulator on a catalog model and system."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ._layout import (
    AttentionOpt,
    CpOpt,
    DomainsOpt,
    DpOpt,
    EpOpt,
    MoeImbalanceOpt,
    MoeTpOpt,
    PpOpt,
    RedundantOpt,
    TpOpt,
    WeightStationaryOpt,
    layout_args,
)
from .common import (
    AcceleratorOpt,
    ComputeEffOpt,
    ExpertWeightsDtypeOpt,
    Fp8ScalesOpt,
    GpusOpt,
    JsonOpt,
    KvDtypeOpt,
    MemoryEffOpt,
    ModelOpt,
    MoeKernelOpt,
    PriceOpt,
    SystemOpt,
    WeightsDtypeOpt,
)
from .render import print_json, seconds, table

POLICY_HELP = ("continuous, chunked, separate (prefill-only passes: vLLM V0, SGLang default), static, train "
               "(departures every --interval-s) or disaggregated.")
JSON_KEYS = ("requests", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "throughput_tokens_per_s",
             "goodput_requests_per_s", "usd_per_million_tokens")


def _not_default_kv(text: str) -> bool:
    """Whether --kv-memory-fraction differs from its default 0.9 (a name, or another number)."""
    try:
        return float(text) != 0.9
    except ValueError:
        return True


def register(app: typer.Typer) -> None:
    @app.command("simulate")
    def simulate_cmd(
        model: ModelOpt,
        system: SystemOpt = None,
        accelerator: AcceleratorOpt = None,
        gpus: GpusOpt = None,
        policy: Annotated[str, typer.Option(help=POLICY_HELP)] = "continuous",
        max_seqs: Annotated[int, typer.Option(help="Most sequences in one pass (train capacity).")] = 256,
        max_batched_tokens: Annotated[int, typer.Option(help="Most new tokens in one pass (chunk budget).")] = 8192,
        interval_s: Annotated[float, typer.Option(help="Train departure interval, seconds.")] = 0.020,
        no_preemption: Annotated[bool, typer.Option("--no-preemption", help="Reserve prompt+output KV at admission instead of preempting.")] = False,
        recv_interval: Annotated[int, typer.Option("--recv-interval", help="SGLang's --scheduler-recv-interval: while only decode passes run, new requests are taken in every N of them.")] = 1,
        admit_interval: Annotated[int, typer.Option("--admit-interval", help="AMD's MLPerf vLLM patch: waiting requests are admitted only on every K-th pass (of any kind), while at least --admit-min-running sequences run (1 = off).")] = 1,
        admit_min_running: Annotated[int, typer.Option("--admit-min-running", help="With --admit-interval: the gate applies only while at least M sequences run (VLLM_MIN_REQUEST_DECODE_STEP; 0 = always).")] = 0,
        long_prefill_token_threshold: Annotated[int, typer.Option("--long-prefill-token-threshold", help="vLLM's flag of that name, with --policy chunked: a prompt takes at most N tokens of any one pass, so several prompts are prefilled side by side (0 = off).")] = 0,
        kv_admission: Annotated[str, typer.Option("--kv-admission", help="With --policy chunked: the KV a waiting prompt must find free to be admitted: prompt (default: its whole prompt, held until prefilled; vLLM V0, SGLang) or chunk (vLLM V1: only this pass's chunk, each later chunk allocated as scheduled; a sequence that finds no room preempts the most recently admitted one, prefilling or decoding, which recomputes from scratch).")] = "prompt",
        max_prefill_tokens: Annotated[int, typer.Option("--max-prefill-tokens", help="SGLang's flag of that name, with --policy chunked or separate: a pass starts at most N prompt tokens (less its decode tokens under chunked, as with --enable-mixed-chunk); a prompt that does not fit is admitted only as a pass's first (0 = off).")] = 0,
        stream_s_per_chunk: Annotated[float, typer.Option("--stream-s-per-chunk", help="The engine's output path as its own stage: seconds its one output process spends per streamed chunk (one per sequence per pass); a token reaches the client, and a --max-concurrency client sends its next request, when its pass's chunks have left it (0 = off).")] = 0.0,
        stream_s_per_pass: Annotated[float, typer.Option("--stream-s-per-pass", help="With the output stage: seconds its process spends per pass's message, beside --stream-s-per-chunk (0 = off).")] = 0.0,
        kernels: Annotated[str, typer.Option("--kernels", help="With --realistic: passes from the family's cited factors (factor) or from the measured kernel tables of the --engine family (tables: vllm*, sglang*, trtllm; none = trtllm) where covered; passes with prompt tokens too on a single TP/EP group (no PP, no attention DP). auto (default): tables when --engine names a family whose tables cover the accelerator, else factor (with --expert-weights-dtype too: the experts read their format's MoE rows).")] = "auto",
        moe_activations: Annotated[str, typer.Option("--moe-activations", help="With measured kernel tables and --expert-weights-dtype fp4 beside 16-bit layers: the activation format the launch runs the MXFP4 experts with, bf16 (Marlin/Triton/FlashInfer BF16 paths) or fp8 (MXFP8: TensorRT-LLM's TRTLLM backend, vLLM's VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1); only that format's MoE rows are read. auto (default): FP8 first on Blackwell, else BF16.")] = "auto",
        fp8_scales: Fp8ScalesOpt = "auto",
        moe_kernel: MoeKernelOpt = "auto",
        sessions: Annotated[Optional[int], typer.Option("--sessions", help="Users chatting at once (a multi-turn benchmark such as vLLM's benchmarks/multi_turn): each sends its next turn --think-s after reading the answer; a turn's prompt is the conversation so far plus a new message of --prompt-tokens, its answer --output-tokens; -n requests in all; the answers are cached for the next turn.")] = None,
        turns: Annotated[int, typer.Option("--turns", help="With --sessions: turns per conversation before the user starts a new one.")] = 4,
        think_s: Annotated[float, typer.Option("--think-s", help="With --sessions: mean seconds (exponential) between an answer and the user's next turn; 0 = at once.")] = 1.0,
        max_concurrency: Annotated[Optional[int], typer.Option("--max-concurrency", help="A benchmark client's semaphore (vllm bench serve / sglang.bench_serving --max-concurrency): at most C requests in flight, the next sent when one completes (the arrivals become release times; with --rate inf-like bursts use a large --rate).")] = None,
        rate: Annotated[float, typer.Option(help="Mean arrival rate, requests/s.")] = 10.0,
        arrivals: Annotated[str, typer.Option(help="poisson or gamma (bursty, see --cv).")] = "poisson",
        cv: Annotated[float, typer.Option(help="Coefficient of variation of gamma inter-arrival gaps.")] = 2.0,
        requests: Annotated[int, typer.Option("--requests", "-n", help="Requests to simulate.")] = 1000,
        duration: Annotated[Optional[float], typer.Option(help="Generate arrivals for this many seconds instead of --requests.")] = None,
        stages: Annotated[Optional[str], typer.Option("--stages", help="Load stages RATE:DURATION,... (requests/s : s, back to back), e.g. 8:60,20:60; Poisson (or gamma, --cv) within each; instead of --rate/--duration/--requests. Adds per-stage metrics.")] = None,
        ramp_up: Annotated[Optional[str], typer.Option("--ramp-up", help="vLLM bench serve's ramp-up over the --requests: STRATEGY:START:END, linear or exponential from START to END requests/s by request index, e.g. linear:1:20; instead of --rate.")] = None,
        window_s: Annotated[Optional[float], typer.Option("--window-s", help="Also report metrics per window of this many seconds (requests by arrival time, throughput by finish time).")] = None,
        lengths: Annotated[str, typer.Option(help="fixed or lognormal prompt/output lengths.")] = "lognormal",
        prompt_tokens: Annotated[int, typer.Option("--prompt-tokens", "--prompt", help="Prompt tokens per request (median if lognormal); --prompt as in plan.")] = 1024,
        output_tokens: Annotated[int, typer.Option("--output-tokens", "--output", help="Output tokens per request (median if lognormal); --output as in plan.")] = 256,
        sigma: Annotated[float, typer.Option(help="Log-sd of lognormal lengths.")] = 1.0,
        trace: Annotated[Optional[str], typer.Option("--trace", help="CSV trace: arrival_s,prompt_tokens,output_tokens[,priority].")] = None,
        shared_prefix_tokens: Annotated[int, typer.Option(help="Every generated prompt starts with a shared system prompt of this many tokens (0 = none); prompts stay longer. With --prompt-pool each pool entry starts with one (a tree of prefixes: system prompt, then the whole prompt).")] = 0,
        prefix_groups: Annotated[int, typer.Option(help="Distinct system prompts of --shared-prefix-tokens, each request's (with --prompt-pool each entry's) drawn uniformly.")] = 1,
        prompt_pool: Annotated[int, typer.Option("--prompt-pool", help="A client that draws each prompt from N unique ones (aiperf's --num-dataset-entries, default 100; shuffled passes), so prompts recur whole and the prefix cache serves them; each entry's prompt and output lengths drawn once from --lengths. 0 (default): every prompt unique.")] = 0,
        pool_warmup: Annotated[int, typer.Option("--pool-warmup", help="With --prompt-pool: warm-up requests drawn from the same stream before the run (aiperf's --warmup-request-count, e.g. 2 x concurrency); the entries they sent start cached.")] = 0,
        prefix_cache: Annotated[str, typer.Option(help="Prefix caching: auto (on when requests share prefixes), on or off.")] = "auto",
        block_size: Annotated[int, typer.Option(help="KV block size in tokens: only whole blocks of a prefix are reused (vLLM 16, SGLang 1).")] = 16,
        kv_offload_gib: Annotated[float, typer.Option("--kv-offload-gib", help="A KV tier in host memory behind the prefix cache, GiB for this replica (vLLM's --kv-offloading-size; LMCache, SGLang HiCache): blocks are written through as cached, and a hit loads the blocks only host memory holds, delaying its pass. 0 (default): none.")] = 0.0,
        kv_offload_gb_per_s: Annotated[Optional[float], typer.Option("--kv-offload-gb-per-s", help="Host-to-GPU copy rate per GPU for --kv-offload-gib, GB/s (default: the accelerator's measured host link, e.g. 53 on H100).")] = None,
        kv_offload_tier: Annotated[str, typer.Option("--kv-offload-tier", help="The `roofline tiers` row (ddr or cxl) that prices --kv-offload-gib's memory against the prefill its hits save (default ddr-dgx-h100).")] = "ddr-dgx-h100",
        kv_disk_gib: Annotated[float, typer.Option("--kv-disk-gib", help="With --kv-offload-gib: a KV tier on local flash or a file system behind host memory, GiB for this replica (LMCache's local disk, llm-d's file-system offload, SGLang HiCache's storage layer): written through, a hit loads the blocks only the disk holds at its read rate. 0 (default): none.")] = 0.0,
        kv_disk_gb_per_s: Annotated[Optional[float], typer.Option("--kv-disk-gb-per-s", help="Read rate of --kv-disk-gib for the whole replica, GB/s (default: the --kv-disk-tier row's, e.g. 28 for flash-gen6).")] = None,
        kv_disk_tier: Annotated[str, typer.Option("--kv-disk-tier", help="The `roofline tiers` row (flash or disk) that prices --kv-disk-gib and gives its default read rate (default flash-gen6).")] = "flash-gen6",
        kv_offload_sync: Annotated[bool, typer.Option("--kv-offload-sync", help="With --kv-offload-gib: the pass that carries a request's first chunk waits for its load (LMCache's default retrieval); default: loads run beside the passes and the request joins the first pass after its load (vLLM's offloading connector).")] = False,
        kv_memory_fraction: Annotated[str, typer.Option("--kv-memory-fraction", help="The KV pool's share of memory, as the engine's flag: vLLM --gpu-memory-utilization, SGLang --mem-fraction-static (of the whole HBM), TensorRT-LLM free_gpu_memory_fraction (with --kv-memory-of free); or 'sglang' (SGLang 0.5.3+) / 'sglang-0.4.8' (0.4.8-0.5.2): the fraction SGLang computes itself when the flag is not given, for this GPU, replica, --max-batched-tokens and --cuda-graph-max-batch.")] = "0.9",
        kv_reserve: Annotated[str, typer.Option("--kv-reserve", help="Memory per GPU the engine keeps from its KV pool besides the weights: a number of GiB, none (default), or vllm: vLLM's profiled activation peak at --max-batched-tokens and --max-seqs, the larger of the dummy forward's MLP activations and its sampler's logits (vllm-flashinfer / vllm-sort name the sampler; vllm takes the sort path on the V0 rows, FlashInfer's sampler else).")] = "none",
        kv_memory_of: Annotated[str, typer.Option("--kv-memory-of", help="total: the fraction is of the whole HBM, less the weights (vLLM, SGLang); free: of what the weights leave (TensorRT-LLM).")] = "total",
        fast_fraction: Annotated[float, typer.Option(help="Share of requests in the fast (priority) class.")] = 0.0,
        spec_gamma: Annotated[int, typer.Option(help="Speculative draft length (0 = off).")] = 0,
        spec_alpha: Annotated[float, typer.Option(help="Speculative acceptance rate per draft token.")] = 0.7,
        draft_fraction: Annotated[float, typer.Option(help="Cost of one draft token, fraction of a decode step.")] = 0.05,
        prefill_gpus: Annotated[Optional[int], typer.Option(help="Disaggregated: GPUs of the prefill pool (default: same as decode).")] = None,
        prefill_layout: Annotated[Optional[str], typer.Option("--prefill-layout", help="Disaggregated: the prefill pool's layout as key=value pairs, e.g. tp=8,cp=2 (keys as the layout flags; CP allowed here); the layout flags lay out the decode pool.")] = None,
        tp: TpOpt = None,
        ep: EpOpt = None,
        pp: PpOpt = None,
        dp: DpOpt = None,
        domains: DomainsOpt = None,
        cp: CpOpt = None,
        moe_tp: MoeTpOpt = None,
        redundant_experts: RedundantOpt = None,
        attention: AttentionOpt = None,
        weight_stationary: WeightStationaryOpt = None,
        moe_imbalance: MoeImbalanceOpt = "1",
        ttft_target_s: Annotated[float, typer.Option(help="Goodput target on time to first token, s.")] = 1.0,
        tpot_target_s: Annotated[float, typer.Option(help="Goodput target on time per output token, s.")] = 0.1,
        seed: Annotated[int, typer.Option(help="Seed of the random generator.")] = 0,
        weights_dtype: WeightsDtypeOpt = "bf16",
        expert_weights_dtype: ExpertWeightsDtypeOpt = None,
        kv_dtype: KvDtypeOpt = "bf16",
        usd_per_gpu_hour: PriceOpt = None,
        compute_efficiency: ComputeEffOpt = 1.0,
        memory_efficiency: MemoryEffOpt = 1.0,
        realistic: Annotated[bool, typer.Option("--realistic", help="Pass times from the cited efficiency model (roofline.efficiency; the GPUs as one TP group) instead of the pure roofline.")] = False,
        overlap: Annotated[bool, typer.Option("--overlap", help="With --realistic: communication overlapped with compute (two-batch overlap) instead of added.")] = False,
        engine: Annotated[str, typer.Option("--engine", help="Serving-engine overheads (catalog/data/engines.yaml): none, vllm, vllm-v0.14 (as vllm, with v0.14-v0.15's PyTorch top-k/top-p filter), vllm-v1-sync, vllm-v1-sync-fullgraph (a hypothesis: no per-worker term), vllm-v0, vllm-v0.5, sglang, sglang-v0.3, sglang-v0.4 (a hypothesis: v0.4.0-v0.5.0 on FlashInfer, a 2 ms bubble a step), trtllm (PyTorch backend) or trtllm-engine (TensorRT engine builds, as MLPerf's NVIDIA harness) — per request (HTTP, tokeniser, first-token streaming) and per pass (scheduler, sampling); replaces the family's pass overhead under --realistic.")] = "none",
        in_process: Annotated[bool, typer.Option("--in-process", help="With --engine: the client calls the engine in its own process (MLPerf harnesses, vLLM's benchmark_latency.py, TensorRT-LLM's gptSessionBenchmark / trtllm-bench): no HTTP request, server tokeniser or first-token streaming costs; the per-pass costs stay.")] = False,
        in_process_text: Annotated[bool, typer.Option("--in-process-text", help="With --in-process: the client sends text (AccelMark's harness, LLM.generate on strings), so the engine still tokenises each prompt in its own process.")] = False,
        sampling: Annotated[str, typer.Option("--sampling", help="With --engine: greedy (default; an argmax, inside the engine's per-pass figure) or top-k-top-p, requests that sample through a top-k and/or top-p filter (a model's generation_config defaults, e.g. Qwen3's top_k 20, top_p 0.95): every pass gains the engine row's filter cost, filter_s_per_pass + filter_s_per_logit x vocabulary per sequence (vllm and sglang: FlashInfer's sampler, vLLM's default since PR #40376; vllm-v0.14: V1's PyTorch sort path of v0.14-v0.15).")] = "greedy",
        cuda_graph_max_batch: Annotated[Optional[int], typer.Option("--cuda-graph-max-batch", help="With --engine: the largest decode batch the engine captures in a CUDA graph (SGLang --cuda-graph-max-bs, vLLM's max capture size); larger batches run eagerly and take the engine's host floor; 0 runs every decode pass eagerly (vLLM --enforce-eager). Default: the engine row's (engines.yaml).")] = None,
        plot: Annotated[Optional[str], typer.Option("--plot", help="Write latency, occupancy and timeline plots into this directory (with --grid: goodput_vs_rate.png).")] = None,
        grid: Annotated[Optional[str], typer.Option("--grid", help="Scenario grid: 'rate=5,10;policy=continuous,chunked;layout=pool,TP4 DP2' or a YAML file (docs/simulator.md); the other options are every scenario's defaults.")] = None,
        workers: Annotated[Optional[int], typer.Option("--workers", help="With --grid: processes on a local Dask cluster (1 = in this process; default: 1 for small grids, else one per core).")] = None,
        scheduler: Annotated[Optional[str], typer.Option("--scheduler", help="With --grid: address tcp://HOST:PORT of a running Dask scheduler to run the scenarios on.")] = None,
        json: JsonOpt = False,
    ) -> None:
        """Simulate serving MODEL on a system: TTFT, TPOT, latency percentiles, throughput, goodput, $/Mtok."""
        from ..requests.simulate import SimulateRequest, simulate
        from .render import progress as progress_bar

        if grid is not None or workers is not None or scheduler is not None:
            return run_grid_cli(model, system, accelerator, gpus, grid, workers, scheduler, json=json, plot=plot,
                                seed=seed, trace=trace, price=usd_per_gpu_hour,
                                efficiency=(compute_efficiency, memory_efficiency),
                                targets=(ttft_target_s, tpot_target_s),
                                refused=dict(policy_disaggregated=policy == "disaggregated", spec_gamma=spec_gamma,
                                             fast_fraction=fast_fraction, duration=duration, stages=stages,
                                             ramp_up=ramp_up, window_s=window_s, shared_prefix_tokens=shared_prefix_tokens,
                                             prefix_groups=prefix_groups != 1, prefix_cache=prefix_cache != "auto",
                                             prompt_pool=prompt_pool != 0 or pool_warmup != 0,
                                             block_size=block_size != 16, overlap=overlap,
                                             kv_offload=kv_offload_gib != 0 or kv_offload_gb_per_s is not None or kv_offload_sync
                                             or kv_offload_tier != "ddr-dgx-h100" or kv_disk_gib != 0
                                             or kv_disk_gb_per_s is not None or kv_disk_tier != "flash-gen6",
                                             kv_memory=_not_default_kv(kv_memory_fraction) or kv_memory_of != "total" or kv_reserve != "none",
                                             expert_weights_dtype=expert_weights_dtype is not None,
                                             recv_interval=recv_interval != 1,
                                             admit_interval=admit_interval != 1,
                                             admit_min_running=admit_min_running != 0,
                                             long_prefill_token_threshold=long_prefill_token_threshold != 0,
                                             max_prefill_tokens=max_prefill_tokens != 0,
                                             kv_admission=kv_admission != "prompt",
                                             stream=stream_s_per_chunk != 0 or stream_s_per_pass != 0,
                                             max_concurrency=max_concurrency is not None,
                                             sessions=sessions is not None or turns != 4 or think_s != 1.0,
                                             kernels=kernels != "auto", moe_activations=moe_activations != "auto",
                                             fp8_scales=fp8_scales != "auto", moe_kernel=moe_kernel != "auto",
                                             cuda_graph_max_batch=cuda_graph_max_batch is not None,
                                             in_process=in_process, in_process_text=in_process_text,
                                             sampling=sampling != "greedy",
                                             layout_flags=any(v is not None for v in layout_args(
                                                 tp, ep, pp, dp, domains, cp, moe_tp, redundant_experts, attention,
                                                 weight_stationary).values()) or moe_imbalance != "1"),
                                realistic=realistic,
                                base=dict(rate=rate, policy=policy, arrivals=arrivals, cv=cv, lengths=lengths,
                                          prompt_tokens=prompt_tokens, output_tokens=output_tokens, sigma=sigma,
                                          requests=requests, max_seqs=max_seqs, max_batched_tokens=max_batched_tokens,
                                          interval_s=interval_s, preemption=not no_preemption,
                                          weights_dtype=weights_dtype, kv_dtype=kv_dtype, engine=engine))

        req = SimulateRequest.of(
            style="cli", model=model, system=system, accelerator=accelerator, gpus=gpus, policy=policy,
            max_seqs=max_seqs, max_batched_tokens=max_batched_tokens, interval_s=interval_s,
            no_preemption=no_preemption, recv_interval=recv_interval, admit_interval=admit_interval,
            admit_min_running=admit_min_running, long_prefill_token_threshold=long_prefill_token_threshold, max_prefill_tokens=max_prefill_tokens, kv_admission=kv_admission, stream_s_per_chunk=stream_s_per_chunk, stream_s_per_pass=stream_s_per_pass, max_concurrency=max_concurrency, sessions=sessions, turns=turns, think_s=think_s, kernels=kernels, moe_activations=moe_activations, fp8_scales=fp8_scales, moe_kernel=moe_kernel, rate=rate, arrivals=arrivals, cv=cv, requests=requests, duration=duration,
            stages=stages, ramp_up=ramp_up, window_s=window_s,
            lengths=lengths, prompt_tokens=prompt_tokens, output_tokens=output_tokens, sigma=sigma, trace=trace,
            shared_prefix_tokens=shared_prefix_tokens, prefix_groups=prefix_groups, prefix_cache=prefix_cache,
            prompt_pool=prompt_pool, pool_warmup=pool_warmup, block_size=block_size, kv_offload_gib=kv_offload_gib, kv_offload_gb_per_s=kv_offload_gb_per_s, kv_offload_sync=kv_offload_sync, kv_offload_tier=kv_offload_tier, kv_disk_gib=kv_disk_gib, kv_disk_gb_per_s=kv_disk_gb_per_s, kv_disk_tier=kv_disk_tier, kv_memory_fraction=kv_memory_fraction, kv_memory_of=kv_memory_of, kv_reserve=kv_reserve,
            fast_fraction=fast_fraction, spec_gamma=spec_gamma, spec_alpha=spec_alpha,
            draft_fraction=draft_fraction, prefill_gpus=prefill_gpus, prefill_layout=prefill_layout,
            **layout_args(tp, ep, pp, dp, domains, cp, moe_tp, redundant_experts, attention, weight_stationary),
            moe_imbalance=moe_imbalance, ttft_target_s=ttft_target_s,
            tpot_target_s=tpot_target_s, seed=seed, weights_dtype=weights_dtype, cuda_graph_max_batch=cuda_graph_max_batch, in_process=in_process, in_process_text=in_process_text,
            sampling=sampling, expert_weights_dtype=expert_weights_dtype, kv_dtype=kv_dtype, usd_per_gpu_hour=usd_per_gpu_hour, compute_efficiency=compute_efficiency,
            memory_efficiency=memory_efficiency, realistic=realistic, overlap=overlap, engine=engine, plot=plot)
        n = None if trace or duration or stages else requests
        with progress_bar(n, "simulating requests", quiet=json) as advance:
            d, tr = simulate(req, advance)
        if plot:
            from pathlib import Path

            from ..plots.simulate import latency_distributions, occupancy_over_time, train_timeline
            from ..simulate import Targets

            Path(plot).mkdir(parents=True, exist_ok=True)
            latency_distributions(tr, f"{plot}/latency.png", Targets(ttft_target_s, tpot_target_s))
            occupancy_over_time(tr, f"{plot}/occupancy.png")
            train_timeline(tr, f"{plot}/timeline.png")
            if "stages" in d or "windows" in d:
                from ..plots.simulate import stages_over_time

                stages_over_time(d.get("stages"), d.get("windows"), f"{plot}/stages.png")
        if json:
            return print_json(d)
        rows = [["requests", f"{d['requests']:,}"], ["makespan", seconds(d["makespan_s"])],
                ["TTFT p50 / p99", f"{seconds(d['ttft_p50_s'])} / {seconds(d['ttft_p99_s'])}"],
                ["TPOT p50 / p99", f"{seconds(d['tpot_p50_s'])} / {seconds(d['tpot_p99_s'])}"],
                ["end-to-end p50 / p99", f"{seconds(d['e2e_p50_s'])} / {seconds(d['e2e_p99_s'])}"],
                ["throughput (output tokens/s)", f"{d['throughput_tokens_per_s']:,.0f}"],
                ["goodput (requests/s in targets)",
                 f"{d['goodput_requests_per_s']:,.3g} ({d['goodput_fraction']:.1%})"],
                ["utilisation / mean batch", f"{d['utilisation']:.1%} / {d['mean_batch']:,.1f}"],
                ["passes / preemptions", f"{d['iterations']:,} / {d['preemptions']:,}"],
                ["$ per million output tokens", f"{d['usd_per_million_tokens']:,.4g}"]]
        if d.get("capacity_requests_per_s") is not None:
            rows.append(["offered / capacity (requests/s)",
                         f"{d['offered_requests_per_s'] or float('inf'):,.3g} / {d['capacity_requests_per_s']:,.3g}"])
            if d.get("latency_sensitivity") is not None:
                rows.append(["latency sensitivity ρ/(1−ρ)", f"{d['latency_sensitivity']:.2g}: a 10% error in the "
                             f"per-token cost moves TPOT by ~{10 * d['latency_sensitivity']:.0f}%"])
        if d.get("closed_loop") and d.get("trace_sessions"):
            rows.append(["client", f"the trace's sessions: {d['sessions']:,} first requests, every other sent its "
                         "think_s after the answer it waits for (columns after_request, think_s)"])
        elif d.get("closed_loop") and "sessions" in d:
            rows.append(["client", f"{d['sessions']:,} users chatting, {d['turns']} turns a conversation, each sent "
                         f"{d['think_s']:g} s (mean) after the answer (--sessions)"])
        elif d.get("closed_loop"):
            rows.append(["client", f"closed loop: at most {d['max_concurrency']:,} in flight, the next sent as one "
                         "completes (--max-concurrency)"])
        if "kv_reserve" in d:
            rows.append([f"KV pool / kept from it per GPU (--kv-reserve {d['kv_reserve']})",
                         f"{d['kv_capacity_tokens']:,.0f} tokens / {d['kv_reserve_bytes'] / 2**30:,.2f} GiB"])
        if d["saturated"]:
            rows.insert(0, ["PAST SATURATION", f"queue grows {d['queue_growth_s_per_s']:+.2f} s/s: latencies "
                            "below measure the run's length"])
        elif d.get("transient") and d.get("load") is not None:
            rows.append(["transient", f"{d['requests']:,} requests fit in one batch of {d['capacity_batch']:.0f}: "
                         f"the load {d['load']:.2f} is the steady state's, which the run never reaches"])
        if "engine" in d:
            rows.append([f"{d['engine']} overheads in TTFT / TPOT",
                         f"{seconds(d['ttft_overhead_s'])} / {seconds(d['tpot_overhead_s'])}"])
            rows.append([f"{d['engine']} figures (engines.yaml)",
                         f"in {seconds(d['engine_request_in_s'])}, tokenise "
                         f"{seconds(d['engine_tokenize_s_per_token'])}/token, first out "
                         f"{seconds(d['engine_first_token_out_s'])}, pass {seconds(d['engine_per_pass_s'])} + "
                         f"{seconds(d['engine_per_sequence_s'])}/seq"])
            if d.get("engine_sampling") == "top-k-top-p":
                rows.append(["top-k/top-p filter (--sampling)",
                             f"{seconds(d['engine_filter_s_per_pass'])}/pass + "
                             f"{seconds(d['engine_filter_s_per_logit'] * d['engine_filter_vocab'])}/seq "
                             f"({d['engine_filter_vocab']:,}-entry vocabulary)"])
        if "kernels" in d:
            rows.append(["kernel times", "measured tables of " + d["kernel_tables"] + " (--kernels tables)"
                         if d["kernels"] == "tables" else "the accelerator family's cited factors (--kernels factor)"])
        hist = d.get("validation_history")
        if hist is not None:
            sets = f"sets {hist['sets'][0]}–{hist['sets'][-1]}"
            cls = hist.get("load_class", {})
            where = "" if not cls else (f"runs at predicted load {cls['load_from']:g}+" if cls["load_to"] is None
                                        else f"runs at predicted load {cls['load_from']:g}–{cls['load_to']:g}")
            for f, key, name in (("ttft", "ttft_p50", "TTFT"), ("itl", "tpot_p50", "TPOT"), ("e2e", "e2e_p50", "end-to-end")):
                for src, label in ((hist, sets), (cls, where)):
                    if f in src and f"{key}_band_s" in src:
                        b, lo_hi = src[f], src[f"{key}_band_s"]
                        rows.append([f"{name} p50, 80% of blind errors ({hist['engine_family']}, {label})",
                                     f"{seconds(lo_hi[0])} .. {seconds(lo_hi[1])} (measured/predicted "
                                     f"×{b['ratio_p10']:.2g}..×{b['ratio_p90']:.2g}, median ×{b['ratio_p50']:.2g}, n {b['n']})"])
        if "prefix_hit_rate" in d:
            rows.append(["prefix cache hits: tokens / requests",
                         f"{d['prefix_hit_rate']:.1%} / {d['prefix_request_hit_rate']:.1%} (block {d['prefix_block_tokens']})"])
            rows.append(["prefill saved: tokens / GPU-seconds",
                         f"{d['prefill_tokens_saved']:,.0f} / {d['prefill_gpu_s_saved']:,.4g}"])
            rows.append(["prefix blocks cached at end / evicted",
                         f"{d['prefix_cached_blocks']:,} / {d['prefix_evictions']:,}"])
            if "prefix_reuse_in_use_share" in d:
                idle = ("none idle" if d["prefix_reuse_idle_p50_s"] is None else
                        f"idle p50 {seconds(d['prefix_reuse_idle_p50_s'])} ({d['prefix_reuse_tier_p50']}) / p90 "
                        f"{seconds(d['prefix_reuse_idle_p90_s'])} ({d['prefix_reuse_tier_p90']})")
                rows.append(["reusable tokens: in use / idle for (cheapest tier to hold)",
                             f"{d['prefix_reuse_in_use_share']:.1%} / {idle}"])
                if d["prefix_reuse_idle_hit_share"] is not None:
                    rows.append(["idle reusable tokens the cache still held", f"{d['prefix_reuse_idle_hit_share']:.1%}"])
            if "host_hit_rate" in d:
                rows.append(["host tier: hit tokens / loaded tokens / load seconds",
                             f"{d['host_hit_rate']:.1%} / {d['host_loaded_tokens']:,.0f} / {d['host_load_s']:,.4g}"])
                rows.append(["host tier blocks held at end / evicted",
                             f"{d['host_cached_blocks']:,} / {d['host_evictions']:,}"])
                rows.append([f"host tier $/h ({d['host_tier_row']}) / prefill its hits saved, $/h",
                             f"{d['host_tier_usd_per_hour']:.4g} / {d['host_prefill_usd_per_hour_saved']:.4g} "
                             f"({d['host_prefill_gpu_s_saved']:,.4g} GPU-s)"])
                if "disk_loaded_tokens" in d:
                    rows.append(["disk tier: loaded tokens / blocks held at end / evicted",
                                 f"{d['disk_loaded_tokens']:,.0f} / {d['disk_cached_blocks']:,} / {d['disk_evictions']:,}"])
                    rows.append([f"disk tier $/h ({d['disk_tier_row']})", f"{d['disk_tier_usd_per_hour']:.4g}"])
        elif d.get("prefix_cache") == "off":
            rows.append(["prefix cache", "off (requests share prefixes)"])
        for name in ("fast", "slow"):
            if f"{name}_requests" in d:
                rows.append([f"{name} class TTFT p50 / TPOT p50",
                             f"{seconds(d[f'{name}_ttft_p50_s'])} / {seconds(d[f'{name}_tpot_p50_s'])}"])
        table(f"{d['model']} on {d['gpus']} x {req._system.accelerator.id}, {policy}, {d['requests']:,} requests",
              ["metric", "value"], rows, caption=f"plots in {plot}" if plot else None)
        if "stages" in d:
            stage_table(d["stages"])
        if "windows" in d:
            window_table(d["windows"])


STAGE_COLUMNS = ("stage", "time", "offered / capacity", "requests", "done req/s", "tok/s", "TTFT p50 / p99",
                 "TPOT p50 / p99", "batch", "queue", "saturated")


def stage_table(stages: list[dict]) -> None:
    """The per-stage table of `simulate --stages` (the --json `stages` list; latencies of the requests arriving
    in the stage, throughput of those finishing in it, queue = waiting for admission at its start -> end)."""

    def lat(d, k):
        return "-" if d[f"{k}_p50_s"] is None else f"{seconds(d[f'{k}_p50_s'])} / {seconds(d[f'{k}_p99_s'])}"

    body = [[str(d["index"] + 1), f"{d['start_s']:,.0f}-{d['end_s']:,.0f} s",
             f"{d['offered_rate_per_s']:,.3g} / " + ("-" if d["capacity_requests_per_s"] is None
                                                     else f"{d['capacity_requests_per_s']:,.3g}"),
             f"{d['requests']:,}", f"{d['throughput_requests_per_s']:,.3g}", f"{d['throughput_tokens_per_s']:,.0f}",
             lat(d, "ttft"), lat(d, "tpot"), "-" if d["mean_batch"] is None else f"{d['mean_batch']:,.1f}",
             f"{d['queue_start']:,} -> {d['queue_end']:,}",
             f"YES ({d['queue_growth_s_per_s']:+.2f} s/s)" if d["saturated"] else "no"] for d in stages]
    table("per stage (requests by arrival; throughput by finish)", list(STAGE_COLUMNS), body,
          caption="saturated: stage rate / capacity >= 1 or waiting time growing > 0.05 s per s (docs/simulator.md)")


WINDOW_COLUMNS = ("window", "time", "arrivals/s", "requests", "done req/s", "tok/s", "TTFT p50 / p99",
                  "TPOT p50 / p99", "batch", "queue")
#: Most windows the table prints (more are in --json and the plot).
MAX_WINDOW_ROWS = 40


def window_table(windows: list[dict]) -> None:
    """The per-window table of `simulate --window-s` (up to MAX_WINDOW_ROWS windows; '-' where no request arrived)."""
    if len(windows) > MAX_WINDOW_ROWS:
        w = windows[0]["end_s"] - windows[0]["start_s"]
        table("per window", ["windows"], [[f"{len(windows):,} windows of {w:g} s: more than {MAX_WINDOW_ROWS}, "
                                           f"see --json (windows) or --plot (stages.png)"]])
        return

    def lat(d, k):
        return "-" if d[f"{k}_p50_s"] is None else f"{seconds(d[f'{k}_p50_s'])} / {seconds(d[f'{k}_p99_s'])}"

    body = [[str(d["index"] + 1), f"{d['start_s']:,.4g}-{d['end_s']:,.4g} s", f"{d['arrival_rate_per_s']:,.3g}",
             f"{d['requests']:,}", f"{d['throughput_requests_per_s']:,.3g}", f"{d['throughput_tokens_per_s']:,.0f}",
             lat(d, "ttft"), lat(d, "tpot"), "-" if d["mean_batch"] is None else f"{d['mean_batch']:,.1f}",
             f"{d['queue_start']:,} -> {d['queue_end']:,}"] for d in windows]
    table("per window (requests by arrival; throughput by finish)", list(WINDOW_COLUMNS), body,
          caption="'-': no request arrived in the window (the drain after the last arrival)")


GRID_COLUMNS = ("scenario", "GPUs", "TTFT p50 / p99", "TPOT p50 / p99", "tok/s", "goodput req/s", "good/GPU", "$/Mtok")


def run_grid_cli(model, system, accelerator, gpus, grid, workers, scheduler, *, json, plot, seed, trace, price,
                 efficiency, targets, refused, base, realistic=False):
    """`simulate --grid`: one row per scenario (simulate.grid) on the executor asked for (roofline.executors);
    --json {"model", "system", "seed", "ttft_target_s", "tpot_target_s", "scenarios": [rows]}."""
    from ..efficiency import Efficiency
    from ..errors import InputError
    from ..executors import check_workers
    from ..simulate.grid import GridContext, parse_grid, run_grid
    from ..simulate.policies import Targets
    from ..simulate.workload import read_trace
    from .common import resolve_hardware, resolve_model
    from .render import progress as progress_bar

    if grid is None:
        raise InputError("--workers and --scheduler run the scenarios of a --grid; add --grid or drop them")
    if any(refused.values()):
        raise InputError("--grid runs pooled or laid-out deployments without --policy disaggregated, --spec-gamma, "
                         "--fast-fraction, --duration, --stages, --ramp-up, --window-s, --shared-prefix-tokens, --prefix-groups, "
                         "--prompt-pool, --pool-warmup, --prefix-cache, --block-size, --kv-offload-gib, --kv-offload-gb-per-s, --kv-offload-sync, --kv-offload-tier, --kv-disk-gib, --kv-disk-gb-per-s, --kv-disk-tier, --kv-memory-fraction, --kv-memory-of, --kv-reserve, --expert-weights-dtype, --recv-interval, --admit-interval, --admit-min-running, --long-prefill-token-threshold, --max-prefill-tokens, --kv-admission, --stream-s-per-chunk, --stream-s-per-pass, --max-concurrency, --sessions, --turns, --think-s, --kernels (a grid takes auto), --moe-activations, --fp8-scales, --moe-kernel, "
                         "--cuda-graph-max-batch, --in-process, --in-process-text, --sampling, the layout flags or "
                         "--moe-imbalance (lay out a "
                         "scenario with the grid's "
                         "layout axis); drop those options (a --trace's prefix columns are cached "
                         "with the defaults)")
    check_workers(workers, scheduler)
    m = resolve_model(model)
    sysrec, chips = resolve_hardware(system, accelerator, gpus)
    scenarios = parse_grid(grid, base)
    eff = Efficiency(*efficiency)
    if realistic and not eff.is_ideal:
        raise InputError("--realistic uses the efficiency model's own factors; drop --compute-efficiency and "
                         "--memory-efficiency or --realistic")
    ctx = GridContext(m, sysrec, chips, None if realistic else eff, price, Targets(*targets), seed,
                      read_trace(trace) if trace else None, realistic)
    with progress_bar(len(scenarios), f"simulating {len(scenarios):,} scenarios", quiet=json) as advance:
        rows = run_grid(ctx, scenarios, workers=workers, scheduler=scheduler, progress=advance)
    if plot:
        from ..plots.grid import goodput_vs_rate

        goodput_vs_rate(rows, f"{plot}/goodput_vs_rate.png", title=f"{m.id} on {sysrec.id}")
    if json:
        return print_json({"model": m.id, "system": sysrec.id, "seed": seed, "ttft_target_s": ctx.targets.ttft_s,
                           "tpot_target_s": ctx.targets.tpot_s, "scenarios": rows})
    body = [[r["scenario"] + (" (PAST SATURATION)" if r["saturated"] else ""), r["gpus"],
             f"{seconds(r['ttft_p50_s'])} / {seconds(r['ttft_p99_s'])}",
             f"{seconds(r['tpot_p50_s'])} / {seconds(r['tpot_p99_s'])}", f"{r['throughput_tokens_per_s']:,.0f}",
             f"{r['goodput_requests_per_s']:,.3g} ({r['goodput_fraction']:.0%})", f"{r['goodput_per_gpu']:,.3g}",
             f"{r['usd_per_million_tokens']:,.4g}"] for r in rows]
    table(f"{m.id} on {sysrec.id}: {len(rows):,} scenarios", list(GRID_COLUMNS), body,
          caption=f"goodput: TTFT <= {seconds(ctx.targets.ttft_s)} and TPOT <= {seconds(ctx.targets.tpot_s)}"
                  + ("; PAST SATURATION: the queue grows with the run, its latencies measure the run's length"
                     if any(r["saturated"] for r in rows) else "") + (f"; plot in {plot}" if plot else ""))
