"""Scheduling policies of the serving simulator (records only; the event loop is in core.py).

- 'continuous': iteration-level batching (Orca, Yu et al. OSDI 2022 §3): every iteration admits
  waiting requests while the batch has fewer than `max_seqs` sequences, whole prompts fit in the
  `max_batched_tokens` budget (a prompt longer than the budget runs alone) and their KV fits; their
  prefill runs in the same pass as the decodes.
- 'chunked': chunked prefill (Sarathi-Serve, Agrawal et al. OSDI 2024 §4): decodes first, prompts
  split into chunks that fill the rest of the token budget.
- 'separate': prefill-only passes (vLLM's V0 scheduler without chunked prefill, SGLang's default without
  --enable-mixed-chunk): whenever waiting prompts can be admitted, a pass carries only them (split into chunks of
  at most `max_batched_tokens`, as SGLang's --chunked-prefill-size does) and the decoding sequences wait for it;
  otherwise a pass decodes every running sequence. Each prefill pass adds its time to the running sequences' TPOT.
- 'static': a batch of up to `max_seqs` forms only when the previous batch is done; finished
  sequences keep their slot as padding until the whole batch ends (HF generate-style).
- 'train': the lecture's train departures [S 00:22:13–00:23:25]: a pass departs every `interval_s`
  (or when the previous one ends, if it overruns), carrying everything aboard (at most `max_seqs`);
  a request boards the next departure, so its first token waits at most interval + step (T05).

`long_prefill_token_threshold` L (vLLM's --long-prefill-token-threshold; 0 = off): under 'chunked', a prompt
takes at most L tokens of any one pass, so one long prompt no longer fills the whole budget and several prompts are
prefilled side by side (vLLM V1 Scheduler.schedule: num_new_tokens = min(remaining, L, budget), for running and
waiting requests alike).

`max_prefill_tokens` P (SGLang's --max-prefill-tokens; 0 = off): under 'chunked' or 'separate', SGLang's PrefillAdder
caps the prompt tokens a pass starts: its input budget is P less the pass's decode tokens (under 'chunked', SGLang's
--enable-mixed-chunk, which subtracts the running batch) less the prompt tokens already in the pass, and a waiting
prompt whose new tokens reach what is left is admitted only as the pass's first prompt (python/sglang/srt/managers/
schedule_policy.py, PrefillAdder.add_one_req: "if real_input_tokens >= self.rem_input_tokens and len(self.can_run_list)
!= 0: return AddReqResult.OTHER"). So with P = isl + 1500 (AIConfigurator's generator) a pass starts one prompt of isl
tokens, not as many as the chunk budget holds.

`recv_interval` N (SGLang's --scheduler-recv-interval, its SchedulerRecvSkipper): while only decode passes run, the
scheduler takes in newly arrived requests every N of them (after a pass with prompts, or when idle, at once), so a
request arriving during a long decode stretch waits up to N − 1 passes before it can be admitted; 1 = every pass.

`admit_interval` K with `admit_min_running` M (AMD's MLPerf vLLM scheduler patch, env VLLM_SUBSEQUENT_DECODE_STEPS =
K − 1 and VLLM_MIN_REQUEST_DECODE_STEP = M; mlcommons/inference_results_v6.0 closed/AMD/setup/llama2-70b-99/patches/
llama2-70b_vllm_gfx950.patch, vllm/v1/core/sched/scheduler.py hunk): a step counter cycles through K passes of every
kind, and waiting requests are admitted only on its first pass, or on any pass while fewer than M sequences run. An
idle engine spins through empty steps to the admitting one at once. Unlike `recv_interval`, prefill and mixed passes
count too, so a request waits up to K − 1 passes of any kind; 1 = every pass (off).

`schedule_ahead` 1 (an engine that schedules the next batch while the current one runs: vLLM V1's asynchronous
scheduling, EngineCore.step_with_batch_queue with a batch queue of 2 — vllm/v1/engine/core.py, the default from
v0.14, PR #27614): pass k + 1 is scheduled when pass k starts, so a request that arrives while pass k runs can join
pass k + 2 at the earliest, one pass later than under synchronous scheduling (0). An engine with nothing running
schedules an arriving request at once. Only the admission waits: prompt chunks and decode steps of running
requests go back to back as before.

KV memory (vLLM, Kwon et al. SOSP 2023 §4.5): `preemption=True` allocates KV as sequences grow and,
when the pool is full, preempts the most recently admitted sequence (recompute: it re-queues at the
front and re-prefills prompt + generated tokens); `preemption=False` reserves prompt + output at
admission and never preempts.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError, require_positive
from ..speculative import Speculation

POLICIES = ("continuous", "chunked", "separate", "static", "train")
#: What a waiting prompt must find free in the KV pool to be admitted (`Policy.kv_admission`): "prompt", its whole
#: remaining prompt (vLLM V0's BlockSpaceManager.can_allocate, SGLang's PrefillAdder), held until it is prefilled; or
#: "chunk", only the tokens this pass computes (vLLM V1: Scheduler.schedule allocates num_new_tokens of a waiting
#: request, KVCacheManager.allocate_slots refuses only when they exceed the free blocks; vllm 0.11.0
#: v1/core/sched/scheduler.py l.471, kv_cache_manager.py l.271), each later chunk allocated as it is scheduled, a
#: running request that finds no room preempting the most recently admitted one, prefilling or decoding, which
#: recomputes from scratch (l.255-284), and no waiting request admitted in a pass that preempted (l.335).
KV_ADMISSION = ("prompt", "chunk")


@dataclass(frozen=True)
class Policy:
    kind: str = "continuous"
    max_seqs: int = 256
    max_batched_tokens: int = 8192
    interval_s: float = 0.020
    preemption: bool = True
    speculation: Speculation | None = None
    recv_interval: int = 1  # SGLang --scheduler-recv-interval: new requests taken in every N decode-only passes
    long_prefill_token_threshold: int = 0  # vLLM --long-prefill-token-threshold: most tokens of one prompt per pass (0 = off)
    admit_interval: int = 1  # AMD's MLPerf vLLM patch: waiting requests admitted on every K-th pass only (1 = off)
    admit_min_running: int = 0  # ... and only while at least this many sequences run (VLLM_MIN_REQUEST_DECODE_STEP)
    max_prefill_tokens: int = 0  # SGLang --max-prefill-tokens: cap on the prompt tokens a pass starts (0 = off)
    schedule_ahead: int = 0  # 1: the next pass is scheduled when this one starts (vLLM V1 async scheduling); 0: at its end
    kv_admission: str = "prompt"  # KV a prompt must find free to be admitted: its whole prompt, or this pass's chunk (V1)

    def __post_init__(self):
        if self.kind not in POLICIES:
            raise InputError(f"unknown policy {self.kind!r}; expected one of {', '.join(POLICIES)}")
        for name in ("max_seqs", "max_batched_tokens", "recv_interval", "admit_interval"):
            v = getattr(self, name)
            if int(v) != v or v < 1:
                raise InputError(f"{name} must be a whole number >= 1, got {v}; zero capacity serves nobody")
        lp = self.long_prefill_token_threshold
        if int(lp) != lp or lp < 0:
            raise InputError(f"--long-prefill-token-threshold must be a whole number >= 0 (0 = off), got {lp}")
        if lp and self.kind != "chunked":
            raise InputError(f"--long-prefill-token-threshold ({lp}) caps prompt chunks, so it needs policy 'chunked', got "
                             f"{self.kind!r}; drop it or use --policy chunked")
        mp = self.max_prefill_tokens
        if int(mp) != mp or mp < 0:
            raise InputError(f"--max-prefill-tokens must be a whole number >= 0 (0 = off), got {mp}")
        if mp and self.kind not in ("chunked", "separate"):
            raise InputError(f"--max-prefill-tokens ({mp}) caps the prompts a chunked-prefill pass starts, so it needs "
                             f"policy 'chunked' or 'separate', got {self.kind!r}; drop it or pick one of those")
        am = self.admit_min_running
        if int(am) != am or am < 0:
            raise InputError(f"--admit-min-running must be a whole number >= 0 (0 = gate at any batch), got {am}")
        if self.schedule_ahead not in (0, 1):
            raise InputError(f"schedule_ahead must be 0 (synchronous scheduling) or 1 (the next pass scheduled while "
                             f"this one runs), got {self.schedule_ahead!r}")
        if self.kv_admission not in KV_ADMISSION:
            raise InputError(f"kv admission must be one of {', '.join(KV_ADMISSION)}, got {self.kv_admission!r}; prompt "
                             "(the whole prompt's KV free at admission) or chunk (vLLM V1: only the pass's chunk)")
        if self.kv_admission == "chunk" and (self.kind != "chunked" or not self.preemption):
            raise InputError(f"kv admission 'chunk' allocates a prompt's KV chunk by chunk and preempts when it runs out, "
                             f"so it needs policy 'chunked' with preemption; got policy {self.kind!r}"
                             f"{'' if self.preemption else ' without preemption'}")
        if self.admit_interval > 1 and self.recv_interval > 1:
            raise InputError(f"--admit-interval ({self.admit_interval}) and --recv-interval ({self.recv_interval}) are "
                             "two engines' admission gates (AMD's vLLM patch, SGLang's); give one of them")
        if self.admit_interval > 1 and self.kind in ("static", "train"):
            raise InputError(f"--admit-interval gates a continuous scheduler's admissions; policy {self.kind!r} "
                             "admits by its own rule; drop it or use continuous, chunked or separate")
        require_positive("train interval", self.interval_s, fix="departures need a positive interval in seconds")


@dataclass(frozen=True)
class Targets:
    """Service-level targets for goodput: a request counts when TTFT <= ttft_s and TPOT <= tpot_s
    (DistServe, Zhong et al. OSDI 2024 §2: goodput = requests/s meeting both SLOs)."""

    ttft_s: float = 1.0
    tpot_s: float = 0.1

    def __post_init__(self):
        require_positive("TTFT target", self.ttft_s)
        require_positive("TPOT target", self.tpot_s)
