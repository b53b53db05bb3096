"""Evaluate each published measurement with the library (roofline.step + the efficiency model).

Every scenario is a function of one measurement row (data/measurements.yaml) returning the predicted
value in the row's unit, for the central efficiency factors and for the two corners of their spread
(efficiency.WHICH): the interval [low, high] is the range of the prediction over those corners.

Scenarios (formulas; L_d = layers, T = tokens of a pass):
- static_batch_throughput: t = t_prefill(B, I) + Σ_{c=I}^{I+O−2} t_decode(B, c);  value = B·O/(t·n)
  (the first output token comes from the prefill; TensorRT-LLM's static-batch benchmark).
- e2e_latency_s: the same t.   ttft_s: t_prefill(B, I).   decode_step_s: t_decode(B, C).
- decode_tokens_per_s_per_sequence: 1/t_decode(B, C).
- decode_node_throughput: B/t_decode(B, C) · 8/n (output tokens/s per 8-GPU node).
- prefill_mfu: T·2N_matmul / (t_prefill · n · P).
- training_mfu (Narayanan et al. 2021 §2.2 bubble; Kaplan 2020 6N):
      t_token = p_count·(F_mm/η_gemm + F_attn/η_attn)/P · (1 + (p−1)/(v·m))
      p_count = 3 forward-equivalents (forward + backward), 4 with activation recomputation
      MFU = useful FLOPs per token / (t_token · P), useful = 3F_mm (model6n), 3(F_mm+F_attn)
      (with_attention) or p_count·(F_mm+F_attn) (hardware: counts recomputation, as Megatron does)
  Ignores data-parallel gradient all-reduce and TP communication not hidden by overlap, optimizer
  step, stragglers and failures — so it over-predicts MFU; the error report shows by how much.
  (Uses this self-contained model until the training module of issue 5 lands.)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from .. import model as M
from ..catalog import get_catalog, parse_model
from ..efficiency import WHICH, family_for, gemm_efficiency, predict_pass
from ..errors import InputError
from ..hardware import single_accelerator_system

METRICS = ("decode", "throughput", "prefill", "training_mfu")
RATE_SCENARIOS = {"static_batch_throughput", "decode_tokens_per_s_per_sequence", "decode_node_throughput",
                  "prefill_mfu", "training_mfu"}


@dataclass(frozen=True)
class Measurement:
    id: str
    metric: str
    scenario: str
    model: str
    accelerator: str
    chips: int
    measured: float
    unit: str
    source: str
    date: str
    reliability: str
    sharding: str
    row: dict  # the full row (scenario inputs)


@dataclass(frozen=True)
class Evaluation:
    measurement: Measurement
    predicted: float
    low: float
    high: float

    @property
    def error(self) -> float:
        """Signed relative error (predicted − measured)/measured."""
        return self.predicted / self.measurement.measured - 1.0

    @property
    def covered(self) -> bool:
        return self.low <= self.measurement.measured <= self.high


@lru_cache(maxsize=None)
def load_dataset(path: str | None = None) -> tuple[dict, tuple[Measurement, ...]]:
    """(extra models by id, measurements) from the packaged YAML (or `path`)."""
    import yaml

    if path is None:
        text = (resources.files("roofline.validate") / "data" / "measurements.yaml").read_text()
        name = "roofline/validate/data/measurements.yaml"
    else:
        with open(path) as fh:
            text = fh.read()
        name = path
    doc = yaml.safe_load(text)
    models = {}
    for i, row in enumerate(doc.get("models") or []):
        m = parse_model(dict(row), f"{name}: models[{i}]")
        models[m.id] = m
    out = []
    seen = set()
    for i, row in enumerate(doc.get("measurements") or []):
        where = f"{name}: measurements[{i}]"
        for key in ("id", "metric", "scenario", "model", "accelerator", "chips", "measured", "source", "date"):
            if key not in row:
                raise InputError(f"{where}: missing {key!r}; every measurement needs it")
        if row["metric"] not in METRICS:
            raise InputError(f"{where}: metric {row['metric']!r} not one of {', '.join(METRICS)}")
        if row["scenario"] not in SCENARIOS:
            raise InputError(f"{where}: scenario {row['scenario']!r} not one of {', '.join(SCENARIOS)}")
        if row["id"] in seen:
            raise InputError(f"{where}: duplicate id {row['id']!r}")
        seen.add(row["id"])
        out.append(Measurement(
            id=row["id"], metric=row["metric"], scenario=row["scenario"], model=row["model"],
            accelerator=row["accelerator"], chips=int(row["chips"]), measured=float(row["measured"]),
            unit=str(row.get("unit", "")), source=str(row["source"]), date=str(row["date"]),
            reliability=str(row.get("reliability", "medium")), sharding=str(row.get("sharding", "tensor")),
            row=dict(row)))
    return models, tuple(out)


def _model(name: str, extra: dict) -> M.Model:
    return extra[name] if name in extra else get_catalog().model(name)


def _pass(meas: Measurement, m, phase, batch, context, prompt=1, which="mid"):
    r = meas.row
    system = single_accelerator_system(get_catalog().accelerator(meas.accelerator), meas.chips)
    return predict_pass(m, system, batch, context, phase=phase, prompt=prompt,
                        weights_dtype=r.get("weights_dtype", "bf16"), kv_dtype=r.get("kv_dtype", "bf16"),
                        chips=meas.chips, tensor_parallel=int(r.get("tensor_parallel", 1)), which=which)


def _batch_run_s(meas, m, which):
    r = meas.row
    B, I, O = r["batch"], r["input_tokens"], r["output_tokens"]
    t = _pass(meas, m, "prefill", B, 0, prompt=I, which=which).step_s
    if O > 1:
        t = t + float(np.sum(_pass(meas, m, "decode", B, np.arange(I, I + O - 1), which=which).step_s))
    return float(t)


def _static_batch_throughput(meas, m, which):
    r = meas.row
    return r["batch"] * r["output_tokens"] / (_batch_run_s(meas, m, which) * meas.chips)


def _e2e_latency(meas, m, which):
    return _batch_run_s(meas, m, which)


def _ttft(meas, m, which):
    return float(_pass(meas, m, "prefill", meas.row["batch"], 0, prompt=meas.row["input_tokens"], which=which).step_s)


def _decode_step(meas, m, which):
    return float(_pass(meas, m, "decode", meas.row["batch"], meas.row["context"], which=which).step_s)


def _decode_speed(meas, m, which):
    return 1.0 / _decode_step(meas, m, which)


def _node_throughput(meas, m, which):
    return meas.row["batch"] / _decode_step(meas, m, which) * 8.0 / meas.chips


def _prefill_mfu(meas, m, which):
    r = meas.row
    acc = get_catalog().accelerator(meas.accelerator)
    t = _pass(meas, m, "prefill", r["batch"], 0, prompt=r["input_tokens"], which=which).step_s
    flops = r["batch"] * r["input_tokens"] * M.matmul_flops_per_token(m)
    return float(flops / (t * meas.chips * acc.peak_flops(r.get("weights_dtype", "bf16"))))


def training_mfu(m: M.Model, acc, *, seq_len: int, pipeline: int = 1, microbatches: int = 1, interleave: int = 1,
                 recompute: bool = False, definition: str = "with_attention", dtype: str = "bf16",
                 which: str = "mid") -> float:
    """Predicted training MFU (formula in the module docstring)."""
    if definition not in ("model6n", "with_attention", "hardware"):
        raise InputError(f"mfu_definition must be model6n, with_attention or hardware, got {definition!r}")
    fam = family_for(acc)
    f_mm = M.matmul_flops_per_token(m)
    f_attn = float(M.prefill_attention_flops_per_token(m, seq_len))
    passes = 4.0 if recompute else 3.0
    eta_g = float(gemm_efficiency(seq_len, fam, dtype, which))
    eta_a = fam.attention_compute.pick(which)
    bubble = (pipeline - 1) / (interleave * microbatches)
    flops_time = passes * (f_mm / eta_g + f_attn / eta_a) * (1.0 + bubble)  # FLOP at peak-equivalent
    useful = {"model6n": 3 * f_mm, "with_attention": 3 * (f_mm + f_attn),
              "hardware": passes * (f_mm + f_attn)}[definition]
    return useful / flops_time


def _training(meas, m, which):
    r = meas.row
    acc = get_catalog().accelerator(meas.accelerator)
    return training_mfu(m, acc, seq_len=r["seq_len"], pipeline=r.get("pipeline", 1),
                        microbatches=r.get("microbatches", 1), interleave=r.get("interleave", 1),
                        recompute=bool(r.get("recompute", False)), definition=r.get("mfu_definition", "with_attention"),
                        dtype=r.get("weights_dtype", "bf16"), which=which)


SCENARIOS = {
    "static_batch_throughput": _static_batch_throughput,
    "e2e_latency_s": _e2e_latency,
    "ttft_s": _ttft,
    "decode_step_s": _decode_step,
    "decode_tokens_per_s_per_sequence": _decode_speed,
    "decode_node_throughput": _node_throughput,
    "prefill_mfu": _prefill_mfu,
    "training_mfu": _training,
}


def evaluate(meas: Measurement, extra_models: dict | None = None) -> Evaluation:
    """Predict one measurement: central value and the interval over the efficiency corners."""
    m = _model(meas.model, extra_models or {})
    fn = SCENARIOS[meas.scenario]
    vals = {w: fn(meas, m, w) for w in WHICH}
    return Evaluation(meas, vals["mid"], min(vals["fast"], vals["slow"]), max(vals["fast"], vals["slow"]))


def evaluate_all(path: str | None = None) -> list[Evaluation]:
    """Evaluate every packaged measurement (or those of `path`)."""
    models, rows = load_dataset(path)
    return [evaluate(r, models) for r in rows]
