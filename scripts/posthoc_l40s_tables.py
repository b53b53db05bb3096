"""Post hoc what-if of AIConfigurator's measured L40S kernel tables on set cl (derived after the set was scored).

    .venv/bin/python scripts/posthoc_l40s_tables.py [--sets cl] [--workers 2]

Set cl (llm-d's offload evaluation on 2x L40S) was registered on the factor model, since the project had no L40S
kernel tables: `--kernels auto` picks tables only where the engine family's GEMM tables cover the accelerator. After the
set was scored, scripts/derive_kernel_tables.py derived the L40S tables that aiconfigurator-core 0.12.0 ships (the same
wheel as every other accelerator's), so auto now picks them on L40S. Each run the registered predictions did not call
past saturation is simulated at seed 0 with the central factors on the factor model (as registered), the tables and the
hybrid, and scored against the measured values (mean APE per family). The registered predictions stay what
docs/validation_serving_cl.md scores; this is a disclosed post hoc check, printed, never written into a set
(docs/simulator.md, "Set cl").
"""

from __future__ import annotations

from posthoc_sampling import report, run_what_ifs, unsaturated_runs, what_if_args


def main() -> None:
    a = what_if_args(__doc__.splitlines()[0], "cl")
    jobs = unsaturated_runs(a.sets)
    variants = [(k, {"kernels": k}) for k in ("factor", "tables", "hybrid")]
    rows = [x for part in run_what_ifs([(s, r, variants) for s, r in jobs], a.workers) for x in part]
    print(f"{len(jobs)} runs of sets {a.sets} not called past saturation; seed 0, central factors")
    report(rows, [label for label, _ in variants], per_group=("tpot_mean", "tpot_p50"))


if __name__ == "__main__":
    main()
