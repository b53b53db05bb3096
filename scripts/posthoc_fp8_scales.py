"""Post hoc what-if of block-scaled FP8 experts (run key `fp8_scales: block`) on the scored runs of block-scaled checkpoints.

    .venv/bin/python scripts/posthoc_fp8_scales.py [--sets ab,ac,af,i,j,n,am] [--workers 2]
    .venv/bin/python scripts/posthoc_fp8_scales.py --sets aq,ar,as,at,au,av,aw,ax,ay,az,ba --models dense

With `--models dense` it takes the dense FP8 runs instead: Qwen3-32B with FP8 weights on engines whose block-scaled GEMM
rows are read (not vLLM: kernel_pass.BLOCK_SCALED_DENSE), whose checkpoint is not recorded (Qwen/Qwen3-32B-FP8 is
block-scaled; docs/kernels.md "Block-scaled dense checkpoints"), found 2026-11-28 on sets aq-ba, each with per-tensor and
block-scaled GEMMs, with the KV cache as registered and in FP8 (AIConfigurator's per-tensor Qwen3-32B experiment sets
kvcache_quant_mode fp8; found on set bb).

The registered runs carry no `fp8_scales`, so their FP8 experts read the per-tensor MoE rows first (kernel_pass.FP8_SCALES
auto). The checkpoints of these runs are block-scaled (128 x 128 weight blocks; config.json quantization_config has
weight_block_size): deepseek-ai/DeepSeek-V3, DeepSeek-R1 and R1-0528, Qwen/Qwen3-235B-A22B-FP8 and its Instruct-2507-FP8,
and (ASSUMED in set am's header, unverified) zai-org/GLM-4.7-FP8. Every run of those models with FP8 weights and measured
kernel tables is simulated at seed 0 with the central factors twice, as registered and with `fp8_scales: block`, and both
are scored against the measured values (mean APE per family; median signed TPOT/ITL error per model, engine and GPU).
Engines whose tables have only block-scaled FP8 MoE rows (SGLang) do not move. The registered predictions stay what
docs/validation_serving_*.md score; this is a disclosed post hoc check (found after their values were seen), printed,
never written into a set.
"""

from __future__ import annotations

from posthoc_sampling import report, run_what_ifs, what_if_args

BLOCK_SCALED = ("deepseek-v3", "qwen3-235b-a22b", "glm-4.7")  # the catalog ids whose FP8 checkpoints are block-scaled
BLOCK_SCALED_DENSE = ("qwen3-32b",)  # dense models whose FP8 release is block-scaled (Qwen/Qwen3-32B-FP8)


def _takes(r: dict, dense: bool) -> bool:
    if r.get("kernels") != "tables" or "fp8" not in (str(r.get("weights_dtype")), str(r.get("expert_weights_dtype"))):
        return False
    if dense:
        return r["model"] in BLOCK_SCALED_DENSE and not r["engine"].startswith("vllm")
    return r["model"] in BLOCK_SCALED and not r["engine"].startswith("sglang")


def main() -> None:
    from roofline.validate import serving as S

    a = what_if_args(__doc__.splitlines()[0], "ab,ac,af,i,j,n,am", engines=("moe", "dense"), flag="--models")
    jobs, where = [], {}
    for s in a.sets.split(","):
        for r in S.load_runs(set_name=s)["runs"]:
            if _takes(r, a.models == "dense"):
                jobs.append((s, r["id"]))
                where[(s, r["id"])] = f"{r['model']} {r['engine']} {r['system']}"
    variants = [("registered", None), ("block", {"fp8_scales": "block"})]
    if a.models == "dense":  # the GEMM scaling by itself and with an FP8 KV cache (set bb's post hoc reading)
        variants = [(f"{scales}{kv}", {"fp8_scales": scales, **({"kv_dtype": "fp8"} if kv else {})})
                    for kv in ("", "+fp8 KV") for scales in ("tensor", "block")]
    parts = run_what_ifs([(s, r, variants) for s, r in jobs], a.workers)
    rows = [(job[0], label, where[job], metric, err) for job, part in zip(jobs, parts) for label, _, metric, err in part]
    print(f"{len(jobs)} runs of block-scaled FP8 checkpoints ({a.models}) with kernel tables (sets {a.sets}); seed 0, central factors")
    labels, per_group = [label for label, _ in variants], ("tpot_mean", "tpot_p50", "itl_mean", "itl_p50")
    for s in [*a.sets.split(","), None]:
        mine = [row[1:] for row in rows if s is None or row[0] == s]
        if mine:
            print(f"set {s}:" if s else "all:")
            report(mine, labels, per_group=per_group)


if __name__ == "__main__":
    main()
