"""`board`: the lecture's board from its own inputs, or the board next to the engine — the request and the
function that answers it.

`run_board(BoardRequest)` returns exactly the dict `roofline board --json` prints: `roofline.board.board(...)`'s
fields (SI units) from the board's inputs alone, or, with `model` and `system`, `roofline.board.compare(...)`'s
walk from the board to the engine (docs/roofline.md, "The board from the command line").
"""

from __future__ import annotations

from typing import Any, Optional

from . import rules
from .base import Dtype, OptReal, OptText, OptWhole, Real, Request, Whole

#: one shared KV layer × 2 × 128 dims × 8 KV heads × 1 byte: the lecture's frontier guess (T35)
DEFAULT_KV_BYTES = 2048.0
#: the lecture's frontier active parameters [S 01:29:51] when neither params_active nor sparsity is given
DEFAULT_ACTIVE = 1e11
#: the lecture's R ≈ 300 [S 00:18:25] when neither ratio nor flops is given
DEFAULT_RATIO = 300.0


class BoardRequest(Request):
    """The board's inputs (per-GPU hardware, parameters, KV bytes, context, batch, prices, stages, hops, fast
    mode, sparse attention, traffic, price ratio), or `model` + `system` for the side-by-side walk."""

    ratio: OptReal(gt=0, fix="about 300 on most GPUs (spec §1.4)") = None
    flops: OptReal(gt=0, fix="dense FLOP/s per GPU, e.g. 9e15 for B200 fp4") = None
    bandwidth: Real(gt=0, fix="HBM bytes/s per GPU, e.g. 8e12") = 8e12
    gpus: Whole(1, fix="the GPUs of one scale-up domain, e.g. 72") = 72
    bytes_per_weight: Real(gt=0, le=8, fix="0.5 (fp4), 1 (fp8) or 2 (bf16)") = 1.0
    params_total: Real(gt=0, fix="e.g. 1e12 for a 1T-parameter model") = 1e12
    params_active: OptReal(gt=0, fix="e.g. 1e11") = None
    sparsity: OptReal(ge=1, fix="s = N_total/N_active is at least 1") = None
    kv_bytes: OptReal(ge=0, fix="KV bytes per token of context, e.g. 2048") = None
    kv_layers: OptWhole(1) = None
    head_dim: OptWhole(1) = None
    kv_heads: OptWhole(1) = None
    kv_element_bytes: Real(gt=0, le=8, fix="1 (fp8) or 2 (bf16)") = 1.0
    context: Real(ge=0, fix="tokens attended per sequence, 0 or more") = 1e5
    batch: Real(gt=0, fix="use at least one sequence") = 2000.0
    len_pass: Whole(1, fix="1 for decode, the prompt length for prefill") = 1
    usd_per_gpu_hour: Real(gt=0, fix="e.g. 2 (the lecture's)") = 2.0
    capacity: OptReal(gt=0, fix="HBM bytes per GPU, e.g. 288e9") = None
    step_s: OptReal(gt=0, fix="e.g. 0.02 for the lecture's 20 ms train") = None
    stages: Whole(1, fix="1 for no pipelining") = 1
    ep: OptWhole(1) = None
    hop_s: Real(ge=0, fix="seconds per stage boundary, 0 to ignore") = 0.0
    fast_batch: OptReal(gt=0, fix="a batch smaller than batch") = None
    sparse_c: OptReal(gt=0, fix="the KV read is c·sqrt(context) tokens; omit it for dense attention") = None
    traffic: OptReal(gt=0, fix="global tokens/s, e.g. 1e8 to 5e8") = None
    output_over_input: OptReal(gt=0, fix="an API's output/input price ratio, 3 to 5") = None
    model: Optional[Any] = None
    system: Optional[Any] = None
    weights_dtype: Dtype = "fp8"
    kv_dtype: Dtype = "fp8"
    plot: OptText = None

    def check(self) -> None:
        from . import resolve

        f = self.flag
        if (self.model is None) != (self.system is None):
            raise rules.UsageError(f"give both {f('model')} and {f('system')} for the side-by-side table, or neither "
                                   f"for the board from its own inputs")
        if self.plot is not None:
            rules.output_path(f("plot"), self.plot, (".png", ".svg", ".pdf"))
        if self.model is not None:
            self._model = resolve.model(self.model, f("model"))
            self._system = resolve.system(self.system, f("system"))
            return
        if self.ratio is not None and self.flops is not None:
            raise rules.UsageError(f"give either {f('ratio')} or {f('flops')}, not both; R = (FLOP/s/2)·b_w/BW")
        if self.params_active is not None and self.sparsity is not None:
            raise rules.UsageError(f"give either {f('params_active')} or {f('sparsity')}, not both; "
                                   f"s = N_total/N_active")
        arch = (self.kv_layers, self.head_dim, self.kv_heads)
        if any(a is not None for a in arch) and (self.kv_bytes is not None or any(a is None for a in arch)):
            raise rules.UsageError(f"give {f('kv_bytes')}, or all of {f('kv_layers')}, {f('head_dim')} and "
                                   f"{f('kv_heads')} (with {f('kv_element_bytes')}) for kv = layers x 2 x head_dim x "
                                   f"kv_heads x bytes, not both")


def run_board(req: BoardRequest) -> dict:
    """The `roofline board --json` dict (without the plot, which the CLI draws from the same request)."""
    from ..board import compare

    if req.model is not None:
        return compare(req._model, req._system, req.batch, req.context, weights_dtype=req.weights_dtype,
                       kv_dtype=req.kv_dtype)
    return board_of(req).to_dict()


def board_of(req: BoardRequest):
    """The `roofline.board.Board` of a request without model and system (defaults filled in)."""
    from ..board import board

    kv = req.kv_bytes
    if req.kv_layers is not None:
        from ..lecture import kv_from_architecture

        kv = float(kv_from_architecture(req.kv_layers, req.head_dim, req.kv_heads, req.kv_element_bytes))
    return board(params_total=req.params_total,
                 params_active=(DEFAULT_ACTIVE if req.params_active is None and req.sparsity is None
                                else req.params_active),
                 sparsity=req.sparsity, kv_bytes=DEFAULT_KV_BYTES if kv is None else kv, context=req.context,
                 batch=req.batch, ratio=(DEFAULT_RATIO if req.ratio is None and req.flops is None else req.ratio),
                 flops_per_s=req.flops, bandwidth_bytes_per_s=req.bandwidth, gpus=req.gpus,
                 bytes_per_weight=req.bytes_per_weight, usd_per_gpu_hour=req.usd_per_gpu_hour,
                 len_pass=req.len_pass, capacity_bytes=req.capacity, step_s=req.step_s, stages=req.stages, ep=req.ep,
                 hop_s=req.hop_s, fast_batch=req.fast_batch, sparse_c=req.sparse_c,
                 traffic_tokens_per_s=req.traffic, output_over_input=req.output_over_input)
