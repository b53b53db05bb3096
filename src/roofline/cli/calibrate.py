"""`roofline calibrate`: microbenchmark this machine, write an accelerator profile, check a real decode.

`roofline calibrate-check --accelerator-file FILE` re-runs the decode check against any profile file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .render import fmt, print_json, progress, table

AcceleratorFileOpt = Annotated[Optional[Path], typer.Option(
    "--accelerator-file", help="Accelerator profile YAML (as written by `roofline calibrate`, or any file with an "
    "`accelerators:` list in the catalog format); its first row is used.")]
BackendOpt = Annotated[str, typer.Option("--backend", help="auto (PyTorch if installed, else NumPy), torch or numpy.")]
DeviceOpt = Annotated[str, typer.Option("--device", help="cpu, or cuda (needs PyTorch with a GPU).")]


def _ints(text: str, what: str) -> tuple[int, ...]:
    from ..errors import InputError

    try:
        vals = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise InputError(f"{what} must be comma-separated whole numbers like 1,4,16, got {text!r}") from None
    if not vals or min(vals) < 1:
        raise InputError(f"{what} must be whole numbers >= 1, got {text!r}")
    return vals


def _decode_table(points, title):
    import numpy as np

    rows = [[p.batch, p.context, f"{p.measured_s * 1e3:.2f}", f"{p.predicted_s * 1e3:.2f}",
             f"[{p.low_s * 1e3:.1f}, {p.high_s * 1e3:.1f}]", f"{p.error:+.1%}"] for p in points]
    med = float(np.median([abs(p.error) for p in points]))
    table(title, ["batch", "context", "measured ms", "predicted ms", "interval ms", "error"], rows,
          caption=f"median |error| {med:.1%} over {len(points)} configurations")
    return med


def _run_check(acc, fam, batches, contexts, backend, device, json, extra=None):
    from ..calibrate.decode import decode_check

    rounds = 3
    with progress(rounds * len(batches) * len(contexts), "decode check (interleaved rounds)", quiet=json) as advance:
        pts = decode_check(acc, fam, batches=batches, contexts=contexts, backend=backend, device=device,
                           rounds=rounds, progress=advance)
    if json:
        import numpy as np

        d = dict(extra or {})
        d["decode"] = [{"batch": p.batch, "context": p.context, "measured_s": p.measured_s,
                        "predicted_s": p.predicted_s, "low_s": p.low_s, "high_s": p.high_s, "error": p.error}
                       for p in pts]
        d["median_abs_error"] = float(np.median([abs(p.error) for p in pts]))
        return print_json(d)
    _decode_table(pts, f"decode check on {acc.name}")


def register(app: typer.Typer) -> None:
    @app.command("calibrate")
    def calibrate_cmd(
        out: Annotated[Path, typer.Option("--out", help="Directory for profile.yaml and calibration.yaml.")] = Path("calibration"),
        backend: BackendOpt = "auto",
        device: DeviceOpt = "cpu",
        batches: Annotated[str, typer.Option("--batches", help="Decode-check batch sizes, comma-separated.")] = "1,4,16",
        contexts: Annotated[str, typer.Option("--contexts", help="Decode-check contexts (cached tokens), comma-separated.")] = "128,512,1024",
        no_decode: Annotated[bool, typer.Option("--no-decode", help="Only the microbenchmarks and the profile.")] = False,
        usd_per_hour: Annotated[float, typer.Option("--usd-per-hour", help="Nominal price written into the profile (USD per device-hour).")] = 0.1,
        tdp_w: Annotated[float, typer.Option("--tdp-w", help="Nominal power written into the profile (W).")] = 100.0,
        json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
    ) -> None:
        """Microbenchmark matmul FLOP/s and memory bandwidth, save a profile, then check a real decode."""
        import yaml

        from ..calibrate.decode import OPS_PER_LAYER, OPS_PER_PASS
        from ..calibrate.microbench import run_microbenchmarks
        from ..calibrate.profile import calibrated_family, profile_document
        from ..catalog import parse_accelerator
        from ..efficiency import factor_table
        from ..errors import InputError
        from ..requests.rules import output_dir

        output_dir("--out", out)  # before the ~20 s of microbenchmarks
        b, c = _ints(batches, "--batches"), _ints(contexts, "--contexts")
        if usd_per_hour <= 0 or tdp_w <= 0:
            raise InputError("--usd-per-hour and --tdp-w must be > 0")
        with progress(None, "microbenchmarks (matmul by size, bandwidth)", quiet=json):
            mb = run_microbenchmarks(backend, device)
        doc = profile_document(mb, usd_per_hour=usd_per_hour, tdp_w=tdp_w)
        acc = parse_accelerator(doc["accelerators"][0], "calibrated profile")
        fam = calibrated_family(mb, OPS_PER_LAYER, OPS_PER_PASS)
        out.mkdir(parents=True, exist_ok=True)
        (out / "profile.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
        details = {"backend": mb.backend, "device": mb.device, "device_name": mb.device_name, "versions": mb.versions,
                   "matmul_width": mb.matmul_width, "matmul_rows": list(mb.matmul_rows),
                   "matmul_flops_per_s": {k: list(v) for k, v in mb.matmul_flops_per_s.items()},
                   "copy_bytes_per_s": mb.copy_bytes_per_s, "matvec_bytes_per_s": mb.matvec_bytes_per_s,
                   "attention_bytes_per_s": mb.attention_bytes_per_s, "op_overhead_s": mb.op_overhead_s,
                   "factors": {n: {"value": v, "low": lo, "high": hi} for n, v, lo, hi, _ in factor_table(fam)}}
        (out / "calibration.yaml").write_text(yaml.safe_dump(details, sort_keys=False))
        if not json:
            table(f"microbenchmarks ({mb.backend}, {mb.device_name})", ["quantity", "value"],
                  [[f"matmul {dt} FLOP/s, rows {r} x {mb.matmul_width}^2", fmt(f)]
                   for dt, v in mb.matmul_flops_per_s.items() for r, f in zip(mb.matmul_rows, v)]
                  + [["copy bandwidth B/s", fmt(mb.copy_bytes_per_s)],
                     ["matrix-vector weight streaming B/s", fmt(mb.matvec_bytes_per_s)],
                     ["decode-attention KV streaming B/s", fmt(mb.attention_bytes_per_s)],
                     ["op dispatch overhead s", fmt(mb.op_overhead_s)]],
                  caption=f"profile written to {out / 'profile.yaml'}")
        if no_decode:
            return print_json(details) if json else None
        _run_check(acc, fam, b, c, mb.backend, device, json, extra={"profile": doc, "calibration": details})

    @app.command("calibrate-check")
    def check_cmd(
        accelerator_file: AcceleratorFileOpt = None,
        backend: BackendOpt = "auto",
        device: DeviceOpt = "cpu",
        batches: Annotated[str, typer.Option("--batches", help="Batch sizes, comma-separated.")] = "1,4,16",
        contexts: Annotated[str, typer.Option("--contexts", help="Contexts (cached tokens), comma-separated.")] = "128,512,1024",
        json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of a table.")] = False,
    ) -> None:
        """Time the real decode and compare with the prediction from --accelerator-file's profile."""
        from ..calibrate.decode import OPS_PER_LAYER, OPS_PER_PASS
        from ..calibrate.microbench import run_microbenchmarks
        from ..calibrate.profile import calibrated_family, load_profile
        from ..catalog import get_catalog
        from ..errors import InputError

        if accelerator_file is None:
            raise InputError("--accelerator-file is required: a profile written by `roofline calibrate`")
        acc = load_profile(accelerator_file)
        get_catalog().accelerators[acc.id] = acc  # also usable by id for the rest of this process
        b, c = _ints(batches, "--batches"), _ints(contexts, "--contexts")
        # the overhead and bandwidth-efficiency factors still come from (quick) microbenchmarks
        with progress(None, "microbenchmarks (quick)", quiet=json):
            mb = run_microbenchmarks(backend, device, rows=(1, 4, 16, 64, 256), copy_mib=64, repeats=3)
        _run_check(acc, calibrated_family(mb, OPS_PER_LAYER, OPS_PER_PASS), b, c, mb.backend, device, json)
