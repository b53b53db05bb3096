"""The layout options one replica is described by — shared by `step`, `sweep`, `simulate` (and, as a text, by
`simulate --prefill-layout`): the fields, their validity rules and messages, and the way back to flags.

`LayoutOptions` is a request base class: a request that inherits it gets the fields `tp ep pp dp domains cp moe_tp
redundant_experts attention weight_stationary` (all optional; none given = no layout, the lecture's perfect
sharding) and `layout_for(...)`, which applies the layout module's rules (layout.validate: TP vs heads and the
domain, EP vs expert slots, MoE TP, PP vs layers, GPUs vs domains, batch vs sequence slots) plus the request-level
ones (the GPU count agrees with the degrees; CP only where a pass has prompts). One implementation, one set of
messages, whichever command asks.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Optional

from . import rules
from .base import Choice, OptWhole, Request, _checked


def _weight_stationary(name: str, value) -> str:
    """1d, 2d, gathered, or gathered:N (N >= 2 GPUs per all-gather group; layout.validate checks N divides TP)."""
    from ..layout import gathered_group_of

    if isinstance(value, str) and (value in ("1d", "2d", "gathered") or gathered_group_of(value) is not None):
        return value
    raise rules.InputError(f"{name} must be 1d, 2d, gathered or gathered:N (N >= 2 GPUs sharing each all-gather), got "
                           f"{rules._shown(value)}; e.g. gathered:4")


WeightStationary = Annotated[Optional[str], _checked(_weight_stationary)]

#: the layout fields, in the order `flags()` writes them
FIELDS = ("tp", "ep", "pp", "dp", "cp", "moe_tp", "redundant_experts", "attention", "weight_stationary", "domains")


class LayoutOptions(Request):
    """TP/EP/PP/DP/CP degrees, MoE TP, redundant experts, attention sharding and the weight-stationary layout of
    one replica over `domains` scale-up domains (docs/parallelism.md)."""

    tp: OptWhole(1) = None
    ep: OptWhole(1) = None
    pp: OptWhole(1) = None
    dp: OptWhole(1) = None
    domains: OptWhole(1, 1024) = None
    cp: OptWhole(1, 1024) = None
    moe_tp: OptWhole(1, 1024) = None
    redundant_experts: OptWhole(0, 100_000) = None
    attention: Optional[Choice("heads", "batch")] = None
    weight_stationary: WeightStationary = None

    @property
    def has_layout(self) -> bool:
        return any(getattr(self, k) is not None for k in FIELDS)

    @property
    def layout_degrees(self) -> tuple[int, int, int, int, int]:
        return self.tp or 1, self.ep or 1, self.pp or 1, self.dp or 1, self.domains or 1

    def layout_for(self, model, system, *, batch=None, phase: str = "decode", gpus: int | None = None,
                   gpus_flag: str | None = None, cp_allowed: str | None = None, auto_domains: bool = False):
        """The checked Layout of the given fields (None when no layout field is given).

        batch: sequences per pass (a number or an array: the smallest must fill the DP x PP sequence slots);
        phase: 'decode' refuses CP (a decode step has one token per sequence); gpus: a GPU count given besides
        the layout, which must equal TP x DP x PP x CP; cp_allowed: when set, CP is refused with this text as
        the fix (a command whose passes cannot split prompts); auto_domains: without `domains`, place the replica on
        the scale-up domains it needs (a simulated pool rents them) instead of refusing more than one."""
        if not self.has_layout:
            return None
        from . import resolve

        f = self.flag
        tp, ep, pp, dp, doms = self.layout_degrees
        cp = self.cp or 1
        if auto_domains and self.domains is None:
            from ..layout import domains_per_replica

            doms = max(1, math.ceil(float(domains_per_replica(tp * dp * cp, pp, system.chips))))
        if gpus is not None and gpus != tp * dp * pp * cp:
            g = gpus_flag or f("gpus")
            raise rules.InputError(f"{g} {gpus} disagrees with the layout TP{tp} x DP{dp} x PP{pp} x CP{cp} = "
                                   f"{tp * dp * pp * cp} GPUs; drop {g} (the layout sets the GPU count) or change the "
                                   f"degrees")
        lay = resolve.layout(model, system, tp, ep, pp, dp, doms, batch=batch, cp=cp, expert_tp=self.moe_tp,
                             redundant_experts=self.redundant_experts or 0, attention=self.attention or "heads",
                             weight_stationary=self.weight_stationary or "1d")
        if cp > 1 and cp_allowed is not None:
            raise rules.UsageError(f"{f('cp')} {cp}: {cp_allowed}")
        if cp > 1 and phase == "decode":
            raise rules.UsageError(f"{f('cp')} {cp} splits a prompt's tokens over GPUs: add {f('phase')} prefill "
                                   f"(a decode step has one token per sequence; spread sequences with {f('dp')})")
        return lay

    def layout_fields(self) -> dict[str, Any]:
        """The layout fields that were given, by name."""
        return {k: getattr(self, k) for k in FIELDS if getattr(self, k) is not None}


def flags(layout, prefix: str = "--") -> list[str]:
    """CLI flags that rebuild `layout` (a scalar layout.Layout) in step/sweep/simulate: degrees > 1 and the
    non-default options only (`--tp 8 --ep 72 --dp 9 --redundant-experts 32`)."""
    out: list[str] = []
    for name, value, default in (("tp", layout.tp, 1), ("ep", layout.ep, 1), ("pp", layout.pp, 1), ("dp", layout.dp, 1),
                                 ("cp", layout.cp, 1), ("moe-tp", layout.expert_tp, None),
                                 ("redundant-experts", layout.redundant_experts, 0),
                                 ("attention", layout.attention, "heads"),
                                 ("weight-stationary", layout.weight_stationary, "1d"),
                                 ("domains", layout.domains, 1)):
        if value is not None and value != default:
            out += [f"{prefix}{name}", str(int(value)) if not isinstance(value, str) else value]
    return out


def parse_text(text: str, name: str) -> dict[str, Any]:
    """'tp=8,ep=16,dp=2' -> {'tp': 8, 'ep': 16, 'dp': 2}: a layout as one text (keys are the layout fields, with
    '-' or '_'; values whole numbers, or a word for attention and weight_stationary). The values are checked by
    LayoutOptions' own rules when the dict is built into one."""
    bad = (f"{name} {rules._shown(text)} is not a layout; expected key=value pairs separated by commas, e.g. "
           f"{name} tp=8,ep=8 (keys: {', '.join(k.replace('_', '-') for k in FIELDS)})")
    if not isinstance(text, str) or not text.strip():
        raise rules.InputError(bad)
    out: dict[str, Any] = {}
    for part in text.split(","):
        key, sep, value = (s.strip() for s in part.partition("="))
        key = key.replace("-", "_")
        if not sep or not value or key not in FIELDS:
            raise rules.InputError(bad)
        if key in out:
            raise rules.InputError(f"{name} {text!r} gives {key} twice; give each key once")
        if key in ("attention", "weight_stationary"):
            out[key] = value
        else:
            try:
                out[key] = int(value)
            except ValueError:
                raise rules.InputError(f"{name}: {key} must be a whole number, got {value!r}; e.g. {key}=8") from None
    return out


def from_text(text: str, name: str) -> LayoutOptions:
    """`parse_text` built into a LayoutOptions (each value through its field's rule; a bad one named with `name`)."""
    try:
        return LayoutOptions.of(parse_text(text, name))
    except rules.InputError as exc:
        if str(exc).startswith(name):
            raise
        raise type(exc)(f"{name}: {exc}") from None
