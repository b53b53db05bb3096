"""Deployments built from several runs of the core: prefill/decode disaggregation and fast/slow modes.

Disaggregation (DistServe, Zhong et al. OSDI 2024 §3; Splitwise, Patel et al. ISCA 2024 §4): a
prefill pool runs prompts only (its pass yields the first token), the KV cache then crosses the
scale-out network, t_kv = kv_bytes_per_sequence(prompt) / (chips · BW_out) + hop latency, and a
decode pool continues from that KV. Ignores contention on the links between transfers and the
decode pool's back-pressure on the prefill pool.

Fast/slow modes (lecture §1.8 [D 00:01:01, S 00:01:40]): the same model served at a small batch
(fast) and a large batch (slow). `mode_trade` measures, by simulation under saturation, the
per-request speed ratio S = TPOT_slow/TPOT_fast and the price ratio M = $/token fast / $/token slow;
the lecture's reconstruction (§1.8 [I], T15) predicts S = 2.5, M = 6 for B_n = 2.5·B*, B_f = B*/6.
A shared deployment with priority classes is the core's `priority` field: it reorders the queue
(TTFT) but cannot change the speed of a shared batch.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .. import model as M
from .core import DEFAULT_BLOCK_TOKENS, Simulation, Trace
from .metrics import summarize
from .policies import Policy
from .steptable import Deployment
from .workload import Workload, make_workload


def kv_transfer_s(model: M.Model, system, prompt_tokens, *, kv_dtype: str = "bf16", chips: int | None = None,
                  prefill_chips: int | None = None):
    """Seconds to move a prompt's KV from the prefill to the decode pool over the scale-out NICs:

        t = kv_bytes(prompt) / (min(n_p, n_d) · BW_out) + α_out

    n_d = `chips` (the decode replica's GPUs), n_p = `prefill_chips` (the prefill replica's; default n_d): every GPU
    of each side sends or receives its shard on its own NIC, so the side with fewer NICs is the bottleneck (the
    slower side; both pools sit on the same system, so per-GPU bandwidth is the same). Source: the lecture's
    alpha–beta cost (network.p2p_s) applied to DistServe's KV hand-off (Zhong et al. OSDI 2024 §4). Ignores the
    transfer's contention with other transfers and its overlap with the prefill's last layers."""
    n = min(int(chips or system.chips), int(prefill_chips or chips or system.chips))
    return (M.kv_bytes_per_sequence(model, prompt_tokens, kv_dtype) / (n * system.scale_out_bytes_per_s)
            + system.scale_out_latency_s)


@dataclass(frozen=True)
class Disaggregated:
    trace: Trace  # whole requests; segments and cost are the decode pool's, gpus are both pools'
    prefill: Trace
    decode: Trace | None
    transfer_s: np.ndarray
    prefill_simulation: Simulation | None = None  # the prefill pool's run (its prefix cache, its step model)


def disaggregated(workload: Workload, prefill: Deployment, decode: Deployment, transfer_s,
                  prefill_policy: Policy = Policy("continuous"), decode_policy: Policy = Policy("continuous"),
                  *, seed: int = 0, progress=None, prefix_cache: bool | None = None,
                  block_tokens: int = DEFAULT_BLOCK_TOKENS) -> Disaggregated:
    """Run the prefill pool, move each KV (`transfer_s`, per request or one number), run the decode pool.
    Shared prefixes are cached on the prefill pool (`prefix_cache`, `block_tokens`: see Simulation); the decode
    pool receives every prompt's whole KV (its memory sharing is not modelled)."""
    pre_wl = replace(workload, output_tokens=np.ones_like(workload.output_tokens))
    sim = Simulation(pre_wl, prefill, replace(prefill_policy, speculation=None), seed=seed, prefix_cache=prefix_cache,
                     block_tokens=block_tokens)
    tp = sim.run()
    x = np.broadcast_to(np.asarray(transfer_s, dtype=float), workload.arrival_s.shape)
    ready = tp.first_token_s + x
    finish = tp.first_token_s.copy()
    todo = np.flatnonzero(workload.output_tokens > 1)
    td = None
    if todo.size:
        order = todo[np.argsort(ready[todo], kind="stable")]
        dwl = make_workload(ready[order], workload.prompt_tokens[order], workload.output_tokens[order],
                            workload.priority[order])
        td = Simulation(dwl, decode, decode_policy, seed=seed + 1, first_token_s=tp.first_token_s[order]).run(progress)
        finish[order] = td.finish_s
    gpus = prefill.gpus + decode.gpus
    price = (prefill.gpus * prefill.usd_per_gpu_hour + decode.gpus * decode.usd_per_gpu_hour) / gpus
    seg = td if td is not None else tp
    trace = Trace(workload.arrival_s, tp.admit_s, tp.first_token_s, finish, workload.prompt_tokens,
                  workload.output_tokens, workload.priority, tp.preemptions + (0 if td is None else 0),
                  seg.seg_start_s, seg.seg_iters, seg.seg_t0_s, seg.seg_slope_s, seg.seg_batch, seg.seg_tokens,
                  gpus, price, "disaggregated", tp.prefix_hit_tokens, tp.prefill_tokens_saved, tp.prefix_evictions,
                  tp.prefix_cached_blocks, tp.block_tokens, seg.seg_decodes)
    return Disaggregated(trace, tp, td, x, sim)


def mode_trade(deployment: Deployment, b_slow: int, b_fast: int, *, prompt: int = 1, output: int = 200,
               waves: int = 3, policy: str = "continuous") -> dict:
    """Simulate the same deployment saturated at batch b_slow and at b_fast (every request waiting at
    t = 0, `waves` full batches each); return speeds (1/median TPOT), $/M tokens and their ratios."""
    out = {}
    for name, b in (("slow", b_slow), ("fast", b_fast)):
        wl = make_workload(np.zeros(int(waves * b)), prompt, output)
        pol = Policy(policy, max_seqs=int(b), max_batched_tokens=max(int(b) * prompt, int(b)))
        s = summarize(Simulation(wl, deployment, pol).run())
        out[f"{name}_speed_tokens_per_s"] = 1.0 / s.tpot_p50_s
        out[f"{name}_usd_per_million_tokens"] = s.usd_per_million_tokens
        out[f"{name}_batch"] = b
    out["speed_ratio"] = out["fast_speed_tokens_per_s"] / out["slow_speed_tokens_per_s"]
    out["price_ratio"] = out["fast_usd_per_million_tokens"] / out["slow_usd_per_million_tokens"]
    return out
