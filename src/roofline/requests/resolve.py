"""Catalog look-ups shared by the requests (no pydantic): a model by id, record or config.json path;
hardware from a system or an accelerator with a GPU count; a layout checked by the layout module."""

from __future__ import annotations

import math

from ..errors import InputError
from . import rules


def model(value, name: str = "model"):
    """A catalog id or alias, a Hugging Face config.json path, or a Model record (returned as is)."""
    from ..model import Model

    if isinstance(value, Model):
        return value
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{name} must be a catalog model id (see `roofline catalog models`), a config.json path "
                         f"or a roofline Model, got {rules._shown(value)} ({type(value).__name__})")
    if value.endswith(".json"):
        import json

        from ..catalog.hf import model_from_hf_dict
        from ..errors import CatalogError

        text = rules.text_file(value, f"{name} file", "a Hugging Face config.json")
        try:
            cfg = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CatalogError(f"{value} is not valid JSON (line {exc.lineno}, column {exc.colno}); "
                               f"fix the file or download it again") from None
        if not isinstance(cfg, dict):
            raise CatalogError(f"{value}: expected a JSON object with model_type, hidden_size, ...")
        from pathlib import Path

        p = Path(value)
        return model_from_hf_dict(cfg, name=p.parent.name or p.stem, where=value)
    from ..catalog import model as catalog_model

    return catalog_model(value)


def system(value, name: str = "system"):
    from ..hardware import System

    if isinstance(value, System):
        return value
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{name} must be a system id (see `roofline catalog systems`) or a roofline System, got "
                         f"{rules._shown(value)} ({type(value).__name__})")
    from ..catalog import system as catalog_system

    return catalog_system(value)


def hardware(system_id, accelerator_id, gpus, flags=("--system", "--accelerator", "--gpus")):
    """(System, chips) from a system (all its GPUs, or `gpus` of them), or an accelerator with `gpus`."""
    from ..catalog import get_catalog
    from ..hardware import single_accelerator_system

    s_flag, a_flag, g_flag = flags
    rules.exclusive(**{s_flag: system_id, a_flag: accelerator_id})
    if system_id is not None:
        sysrec = system(system_id, s_flag)
        chips = sysrec.chips if gpus is None else gpus
        if chips < 1 or chips > sysrec.chips:
            raise InputError(f"{g_flag} must be between 1 and {sysrec.chips} for {sysrec.id}, got {chips}; "
                             f"use a larger system or fewer GPUs")
        return sysrec, chips
    if accelerator_id is not None:
        n = 1 if gpus is None else gpus
        return single_accelerator_system(get_catalog().accelerator(accelerator_id), n), n
    raise InputError(f"no hardware given: pass {s_flag} ID (e.g. dgx-h100) or {a_flag} ID {g_flag} N")


def layout(model, system, tp, ep, pp, dp, domains, batch=None, cp=1, expert_tp=None, redundant_experts=0,
           attention="heads", weight_stationary="1d", **training):
    """The layout module's rules (TP vs heads and the domain, EP vs expert slots, MoE TP, PP vs layers, GPUs vs
    domains, batch vs sequence slots); returns the checked Layout."""
    from ..layout import Layout, validate

    lay = Layout(tp=tp, ep=ep, pp=pp, dp=dp, domains=domains, cp=cp, expert_tp=expert_tp,
                 redundant_experts=redundant_experts, attention=attention, weight_stationary=weight_stationary,
                 **training)
    validate(model, system, lay, batch, training=bool(training))
    return lay


def sparse_attention(text):
    """--sparse-attention sqrt:C | topk:K as an engine.SparseAttention (None when not given)."""
    from ..engine import SparseAttention

    return None if text is None else SparseAttention.parse(text)


def moe_imbalance(value, model, flag: str):
    """--moe-imbalance as the engine takes it: a number, "sampling", or a model.ExpertSkew for powerlaw:A (the
    model's E experts, capped at 1/k a pick) and loads:FILE (a CSV of per-expert token counts: one row per MoE
    layer, or one row for all, E non-negative numbers each; '#' lines are comments)."""
    if not model.moe and (value == "sampling" or (not isinstance(value, str) and float(value) != 1.0)):
        shown = value if isinstance(value, str) else f"{float(value):g}"
        raise rules.InputError(f"{flag} {shown} describes routed experts' load; {model.id} is dense (no experts): "
                               f"drop {flag} or pick a mixture-of-experts model")
    if not isinstance(value, str) or value == "sampling":
        return value
    from ..model import ExpertSkew

    kind, _, arg = value.partition(":")
    if not model.moe:
        raise rules.UsageError(f"{flag} {value} describes routed experts; {model.id} has none: drop it")
    experts = model.moe.experts
    if kind == "powerlaw":
        return ExpertSkew.powerlaw(float(arg), experts, model.moe.active)
    text = rules.text_file(arg, f"{flag} loads file", f"a CSV of {experts} per-expert token counts per line")
    rows = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cells = [c.strip() for c in line.split(",")]
        try:
            row = [float(c) for c in cells]
        except ValueError:
            raise rules.InputError(f"{arg} line {i}: not a list of numbers; give {experts} comma-separated "
                                   f"token counts per line") from None
        if len(row) != experts:
            raise rules.InputError(f"{arg} line {i}: {len(row)} values, {model.id} has {experts} routed experts; "
                                   f"give one count per expert")
        if not all(math.isfinite(x) and x >= 0 for x in row) or sum(row) <= 0:
            raise rules.InputError(f"{arg} line {i}: counts must be finite, >= 0 and not all 0")
        rows.append(row)
    if not rows:
        raise rules.InputError(f"{arg} holds no rows of counts; give one line of {experts} counts per MoE layer")
    if len(rows) not in (1, model.moe_layers):
        raise rules.InputError(f"{arg} has {len(rows)} rows; give one (all layers) or {model.moe_layers} "
                               f"({model.id}'s MoE layers)")
    return ExpertSkew.from_loads(rows, arg)
