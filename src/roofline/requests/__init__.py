"""The request layer: one validated request model per operation and one function that answers it.

    from roofline.requests import StepRequest, run_step
    d = run_step(StepRequest.of(model="llama-3-70b", system="dgx-h100", batch=64, context=4096))

`run_X(XRequest)` returns exactly the dict `roofline X --json` prints. The CLI (`roofline.cli`), the
library's public functions and the HTTP API enter here, so every input rule is written once
(`rules.py`, plain functions; each request class declares its fields with them and validates in plain
Python with `XRequest.of`, or through a pydantic v2 model generated on first use with
`XRequest.model_validate` — base.py). Bad input raises `InputError` (one line; the CLI exits 1) or `UsageError` (options
that cannot be combined or a missing option; exit 2). See docs/inputs.md.

Importing this package is free: each request module loads on first use of its names (pydantic only for
model_validate/model_json_schema).
"""

from __future__ import annotations

import importlib

_WHERE = {
    "StepRequest": "step", "run_step": "step",
    "SweepRequest": "sweep", "run_sweep": "sweep", "sweep_columns": "sweep",
    "PlanRequest": "plan", "run_plan": "plan",
    "SimulateRequest": "simulate", "run_simulate": "simulate",
    "TrainRequest": "train", "run_train": "train", "OvertrainRequest": "train", "run_overtrain": "train",
    "PricesRequest": "prices", "run_prices": "prices", "TiersRequest": "prices", "run_tiers": "prices",
    "CatalogRequest": "catalog", "run_catalog": "catalog",
    "BoardRequest": "board", "run_board": "board",
    "UsageError": "rules", "InputError": "rules",
}

#: operation name -> (request class name, run function name): what the HTTP API and tests iterate over.
OPERATIONS = {
    "step": ("StepRequest", "run_step"), "sweep": ("SweepRequest", "run_sweep"),
    "plan": ("PlanRequest", "run_plan"), "simulate": ("SimulateRequest", "run_simulate"),
    "train": ("TrainRequest", "run_train"), "overtrain": ("OvertrainRequest", "run_overtrain"),
    "prices": ("PricesRequest", "run_prices"), "tiers": ("TiersRequest", "run_tiers"),
    "catalog": ("CatalogRequest", "run_catalog"), "board": ("BoardRequest", "run_board"),
}

__all__ = sorted(_WHERE) + ["OPERATIONS", "run"]


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'roofline.requests' has no attribute {name!r}")


def run(operation: str, data: dict | None = None, *, style: str = "python", **kwargs) -> dict:
    """Validate `data` for `operation` (a key of OPERATIONS) and answer it: the --json dict."""
    from .rules import UsageError

    if operation not in OPERATIONS:
        raise UsageError(f"unknown operation {operation!r}; expected one of {', '.join(OPERATIONS)}")
    cls_name, fn_name = OPERATIONS[operation]
    req = __getattr__(cls_name).of(data, style=style, **kwargs)
    return __getattr__(fn_name)(req)
