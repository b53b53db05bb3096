"""Post hoc what-if of AIConfigurator's generated launch settings on the scored draws of its measurement set (sets ab,
ac, af and aq).

    .venv/bin/python scripts/posthoc_aic_launch.py [--sets ab,ac,af,aq] [--workers 2]

Those runs were encoded with each engine's default scheduler budget and unique prompts. AIConfigurator's own benchmark
generator (ai-dynamo/aiconfigurator@095f58a51c4c src/aiconfigurator/generator/rule_plugin/benchmark/{vllm,trtllm}.rule)
writes an aggregated worker's token budget as max_batch_size + isl + 1500 (vLLM's --max-num-batched-tokens;
TensorRT-LLM's max_num_tokens, rounded up to its 32-token blocks), and its aiperf recipe (backend_templates/benchmark/
bench_run.sh.j2) sets no --num-dataset-entries, so aiperf draws the prompts from its default 100 entries after
2 x concurrency warm-up requests (run key prompt_pool). Prefix caching: vLLM's is on by default and the generator's
vLLM and SGLang templates add no flag against it; its TensorRT-LLM template writes enable_block_reuse false. Each run
is simulated at seed 0 with the central factors as registered and with those settings (vLLM: budget and pool;
TensorRT-LLM: budget; SGLang: pool), scored against the measured values, per engine family. The registered
predictions stay what docs/validation_serving_*.md score; this is a disclosed post hoc check (found after the values
were seen), printed, never written into a set.
"""

from __future__ import annotations

from posthoc_sampling import report, run_what_ifs, what_if_args


def launch(run: dict, doc: dict) -> dict:
    """The run keys AIConfigurator's benchmark generator and recipe would have set for `run` (module docstring)."""
    c = int(run.get("max_concurrency") or 1)
    isl = int(doc["datasets"][run["dataset"]]["prompt_range"][0])
    pool = {"prompt_pool": {"entries": 100, "warmup": 2 * c}}
    if run["engine"].startswith("vllm"):
        return {"max_batched_tokens": c + isl + 1500, **pool}
    if run["engine"].startswith("trtllm"):
        return {"max_batched_tokens": -(-(c + isl + 1500) // 32) * 32}
    return pool


def main() -> None:
    from roofline.validate import serving as S

    a = what_if_args(__doc__.splitlines()[0], "ab,ac,af,aq")
    jobs, family = [], {}
    for s in a.sets.split(","):
        doc = S.load_runs(set_name=s)
        for r in doc["runs"]:
            jobs.append((s, r["id"], [("registered", None), ("AIC launch", launch(r, doc))]))
            family[(s, r["id"])] = S._engine_family(r["engine"])
    parts = run_what_ifs(jobs, a.workers)
    rows = [(family[job[:2]], label, metric, err) for job, part in zip(jobs, parts) for label, _, metric, err in part]
    print(f"{len(jobs)} runs of sets {a.sets}; seed 0, central factors")
    for fam in ("vllm", "trtllm", "sglang"):
        mine = [(label, f"{fam} {metric.split('_')[0]}", metric, err) for f, label, metric, err in rows if f == fam]
        if mine:
            print(f"{fam}:")
            report(mine, ["registered", "AIC launch"], per_group=("ttft_mean", "tpot_mean"))


if __name__ == "__main__":
    main()
