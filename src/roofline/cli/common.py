"""Options and resolvers shared by several commands (model/system selection, dtypes, efficiencies)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

ModelOpt = Annotated[str, typer.Option("--model", "-m", help="Model id (see `roofline catalog models`) or a path to a Hugging Face config.json.")]
SystemOpt = Annotated[Optional[str], typer.Option("--system", "-s", help="Scale-up domain id (see `roofline catalog systems`).")]
AcceleratorOpt = Annotated[Optional[str], typer.Option("--accelerator", "-a", help="Accelerator id, used with --gpus instead of --system.")]
GpusOpt = Annotated[Optional[int], typer.Option("--gpus", "-g", help="Accelerators used (default: the whole system).")]
WeightsDtypeOpt = Annotated[str, typer.Option("--weights-dtype", help="Weight format: bf16, fp8, fp4, int8, int4 (bytes/param 2, 1, 0.5, 1, 0.5).")]
ExpertWeightsDtypeOpt = Annotated[Optional[str], typer.Option("--expert-weights-dtype", help="MoE models: the routed experts' format when it differs from --weights-dtype (NVFP4/MXFP4 checkpoints keep attention and dense layers in bf16/fp8), e.g. --weights-dtype bf16 --expert-weights-dtype fp4.")]
MoeKernelOpt = Annotated[str, typer.Option("--moe-kernel", help="With measured kernel tables and a mixture-of-experts model: the fused MoE kernel the launch runs, whose measured rows time the routed experts where they cover the shape: trtllm-gen (TensorRT-LLM's moe_config backend TRTLLM; FlashInfer's trtllm_*_moe kernels as SGLang's and vLLM's FlashInfer TRTLLM paths run them, read from those collectors' rows). auto (default): the engine's own rows.")]
Fp8ScalesOpt = Annotated[str, typer.Option("--fp8-scales", help="With measured kernel tables and FP8 weights: how the checkpoint scales them, tensor (per-tensor or per-channel: ModelOpt / llm-compressor FP8, --quantization fp8) or block (128x128 weight blocks: DeepSeek-V3/R1, Qwen3-*-FP8, whose config.json has weight_block_size); only that format's MoE rows are read, and with block the dense GEMMs read the block-scaled rows (not on vLLM). auto (default): per-tensor rows first, then block-scaled.")]
KvDtypeOpt = Annotated[str, typer.Option("--kv-dtype", help="KV-cache format: bf16, fp8, fp4, int8.")]
PriceOpt = Annotated[Optional[float], typer.Option("--usd-per-gpu-hour", help="Rental price, USD per accelerator-hour (default: the catalog's).")]
ComputeEffOpt = Annotated[float, typer.Option("--compute-efficiency", help="Achieved fraction of peak FLOP/s, (0, 1]; 1 = pure roofline.")]
MemoryEffOpt = Annotated[float, typer.Option("--memory-efficiency", help="Achieved fraction of peak HBM bandwidth, (0, 1]; 1 = pure roofline.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object (SI units) instead of a table.")]


def resolve_hardware(system: str | None, accelerator: str | None, gpus: int | None):
    """(System, chips) from --system, or --accelerator with --gpus: the request layer's rule
    (roofline.requests.resolve.hardware), for commands not yet routed through a request."""
    from ..requests import resolve, rules

    if gpus is not None:
        rules.whole("--gpus", gpus)
    return resolve.hardware(system, accelerator, gpus)


def resolve_model(name: str):
    """A catalog id or a config.json path (checked as UTF-8 text): roofline.requests.resolve.model."""
    from ..requests import resolve

    return resolve.model(name, "--model")


def check_one_tp_group(model, system, chips: int) -> None:
    """--realistic without a layout runs the GPUs as one TP group (roofline.requests.step.one_tp_group)."""
    from ..requests.step import one_tp_group

    one_tp_group(model, system, chips)
