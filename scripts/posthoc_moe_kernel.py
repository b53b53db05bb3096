"""Post hoc what-if of naming the TensorRT-LLM-gen fused MoE kernel (run key `moe_kernel: trtllm-gen`) on the scored
TensorRT-LLM runs of DeepSeek-R1 with block-scaled FP8 experts on B200.

    .venv/bin/python scripts/posthoc_moe_kernel.py [--sets ab,ac,af,aq,ar,as,at,au,av,aw] [--workers 2]

As registered, those runs time their routed experts from AIConfigurator's TensorRT-LLM MoE rows, which on Blackwell
are DeepGEMM's (the default CUTLASS backend's block-scaled FP8 method on SM100). SemiAnalysis InferenceX's launch
script for this model, GPU and engine (benchmarks/dsr1_fp8_b200_trt.sh) sets `moe_config: backend: TRTLLM` except at
concurrency >= 256 with 1k prompts; those kernels are timed from the rows AIConfigurator's SGLang collector measured
for FlashInfer's trtllm_fp8_block_scale_moe (kernels.MOE_KERNELS). Each run is simulated at seed 0 with the central
factors, as registered and with `moe_kernel: trtllm-gen`, and both are scored against the measured values, grouped by
the TensorRT-LLM image the row records (its engine_version). The registered predictions stay what
docs/validation_serving_*.md score; this is a disclosed post hoc check (found after their values were seen), printed,
never written into a set.
"""

from __future__ import annotations

import re

from posthoc_sampling import report, run_what_ifs, what_if_args


def image(run: dict) -> str:
    """The TensorRT-LLM version the run's engine_version names (the row's backend_version)."""
    m = re.search(r"TensorRT-LLM (\S+)", str(run.get("engine_version", "")))
    return m.group(1) if m else "unknown"


def main() -> None:
    from roofline.validate import serving as S

    a = what_if_args(__doc__.splitlines()[0], "ab,ac,af,aq,ar,as,at,au,av,aw")
    jobs, where = [], {}
    for s in a.sets.split(","):
        for r in S.load_runs(set_name=s)["runs"]:
            if (r["model"] in ("deepseek-r1", "deepseek-v3") and r["engine"].startswith("trtllm")
                    and r.get("fp8_scales") == "block" and r.get("kernels") == "tables" and "b200" in r["system"]):
                jobs.append((s, r["id"]))
                where[(s, r["id"])] = image(r)
    variants = [("registered", None), ("trtllm-gen", {"moe_kernel": "trtllm-gen"})]
    parts = run_what_ifs([(s, r, variants) for s, r in jobs], a.workers)
    print(f"{len(jobs)} TensorRT-LLM DeepSeek-R1 runs with block-scaled FP8 experts on B200 (sets {a.sets}); seed 0, "
          "central factors")
    for job, part in zip(jobs, parts):
        cells = "  ".join(f"{label} {metric} {100 * err:+.0f}%" for label, _, metric, err in part)
        print(f"  {job[1][:62]:62} {where[job]:>16}  {cells}")
    rows = [(label, where[job], metric, err) for job, part in zip(jobs, parts) for label, _, metric, err in part]
    report(rows, [label for label, _ in variants], per_group=("tpot_mean",))
    for img in sorted({where[j] for j in jobs}):
        print(f"image {img}:")
        report([r for r in rows if r[1] == img], [label for label, _ in variants], per_group=("tpot_mean",))


if __name__ == "__main__":
    main()
