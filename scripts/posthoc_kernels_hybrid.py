"""Post hoc what-if of the run key `kernels: hybrid` on the scored vLLM H100 runs of sets v and cj.

    .venv/bin/python scripts/posthoc_kernels_hybrid.py [--sets v,cj] [--workers 2]

On both sets the declared alternative, the factor model, was closer than the registered kernel tables in TPOT and end
to end, and the tables closer in TTFT. `kernels: hybrid` takes decode-only passes from the factors and passes that carry
prompt tokens from the tables. Each run the registered predictions did not call past saturation is simulated at seed 0
with the central factors on the tables, the factor model and the hybrid, and scored against the measured values (mean
APE per family). The registered predictions stay what docs/validation_serving_*.md score; this is a disclosed post hoc
check (found after the sets' values were seen), printed, never written into a set (docs/simulator.md, "Set cj").
"""

from __future__ import annotations

from posthoc_sampling import report, run_what_ifs, unsaturated_runs, what_if_args


def main() -> None:
    a = what_if_args(__doc__.splitlines()[0], "v,cj")
    jobs = unsaturated_runs(a.sets, lambda r: r["engine"].startswith("vllm") and r.get("kernels") == "tables")
    variants = [(k, {"kernels": k}) for k in ("tables", "factor", "hybrid")]
    rows = [x for part in run_what_ifs([(s, r, variants) for s, r in jobs], a.workers) for x in part]
    print(f"{len(jobs)} vLLM runs on kernel tables of sets {a.sets}, not called past saturation; seed 0, central factors")
    report(rows, [label for label, _ in variants])


if __name__ == "__main__":
    main()
