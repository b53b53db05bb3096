"""Validation against published measurements: dataset (data/measurements.yaml), scenarios, metrics.

`evaluate_all()` predicts every measurement with roofline.step and the efficiency model;
`metrics.by_metric()` gives median |error|, MAPE, worst case, bias and interval coverage.
"""

from .metrics import BOUNDS, GOALS, by_metric, summarize
from .scenarios import evaluate, evaluate_all, load_dataset

__all__ = ["BOUNDS", "GOALS", "by_metric", "summarize", "evaluate", "evaluate_all", "load_dataset"]
