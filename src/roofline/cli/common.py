"""Options and resolvers shared by several commands (model/system selection, dtypes, efficiencies)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

ModelOpt = Annotated[str, typer.Option("--model", "-m", help="Model id (see `roofline catalog models`) or a path to a Hugging Face config.json.")]
SystemOpt = Annotated[Optional[str], typer.Option("--system", "-s", help="Scale-up domain id (see `roofline catalog systems`).")]
AcceleratorOpt = Annotated[Optional[str], typer.Option("--accelerator", "-a", help="Accelerator id, used with --gpus instead of --system.")]
GpusOpt = Annotated[Optional[int], typer.Option("--gpus", "-g", help="Accelerators used (default: the whole system).")]
WeightsDtypeOpt = Annotated[str, typer.Option("--weights-dtype", help="Weight format: bf16, fp8, fp4, int8, int4 (bytes/param 2, 1, 0.5, 1, 0.5).")]
KvDtypeOpt = Annotated[str, typer.Option("--kv-dtype", help="KV-cache format: bf16, fp8, fp4, int8.")]
PriceOpt = Annotated[Optional[float], typer.Option("--usd-per-gpu-hour", help="Rental price, USD per accelerator-hour (default: the catalog's).")]
ComputeEffOpt = Annotated[float, typer.Option("--compute-efficiency", help="Achieved fraction of peak FLOP/s, (0, 1]; 1 = pure roofline.")]
MemoryEffOpt = Annotated[float, typer.Option("--memory-efficiency", help="Achieved fraction of peak HBM bandwidth, (0, 1]; 1 = pure roofline.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object (SI units) instead of a table.")]


def resolve_hardware(system: str | None, accelerator: str | None, gpus: int | None):
    """(System, chips) from --system, or --accelerator with --gpus; one clear error otherwise."""
    from ..catalog import get_catalog
    from ..errors import InputError
    from ..hardware import single_accelerator_system

    cat = get_catalog()
    if system and accelerator:
        raise InputError("give either --system or --accelerator (with --gpus), not both")
    if system:
        sysrec = cat.system(system)
        chips = sysrec.chips if gpus is None else gpus
        if chips < 1 or chips > sysrec.chips:
            raise InputError(f"--gpus must be between 1 and {sysrec.chips} for {sysrec.id}, got {chips}; "
                             f"use a larger system or fewer GPUs")
        return sysrec, chips
    if accelerator:
        n = 1 if gpus is None else gpus
        return single_accelerator_system(cat.accelerator(accelerator), n), n
    raise InputError("no hardware given: pass --system ID (e.g. dgx-h100) or --accelerator ID --gpus N")


def resolve_model(name: str):
    from ..catalog import model

    return model(name)


def check_one_tp_group(model, system, chips: int) -> None:
    """--realistic without a layout runs the GPUs as one TP group: that must be a valid TP degree."""
    from ..errors import InputError
    from ..layout import check_tensor_parallel

    try:
        check_tensor_parallel(model, system, chips)
    except InputError as exc:
        raise InputError(f"--realistic without --tp/--ep/--pp/--dp runs the {chips} GPUs as one TP group, but "
                         f"{exc}; give a layout (step/plan), e.g. --tp 8 --dp {max(chips // 8, 1)}, or fewer "
                         f"GPUs with -a ACCELERATOR -g N") from None
