"""The pydantic side of the request layer: the base model, field types built on `rules`, and the one
conversion of a pydantic ValidationError into roofline's one-line errors.

Field names are the CLI flags without the dashes (`usd_per_gpu_hour` is `--usd-per-gpu-hour`); a
message names the flag when the request came from the CLI and the argument when it came from Python.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

from pydantic import BaseModel, BeforeValidator, ConfigDict, PrivateAttr, ValidationError, ValidationInfo, model_validator

from ..errors import RooflineError
from . import rules
from .rules import UsageError

#: Fields whose CLI flag is not `--` + the field name with dashes.
FLAG_NAMES = {"requests": "--requests/-n", "as_json": "--json"}


def label(field: str, info: ValidationInfo | None = None) -> str:
    """How the caller spells a field: `--kv-bytes` from the CLI, `kv_bytes` from Python."""
    style = (info.context or {}).get("style", "python") if info is not None else "python"
    if style == "cli":
        return FLAG_NAMES.get(field, "--" + field.replace("_", "-"))
    return field


def _checked(fn):
    """A BeforeValidator that runs `fn(label, value)` (None passes through for optional fields)."""

    def run(value, info: ValidationInfo):
        if value is None:
            return None
        return fn(label(info.field_name, info), value)

    return BeforeValidator(run)


def Whole(minimum: int = 1, maximum: int | None = None, fix: str = ""):
    return Annotated[int, _checked(lambda n, v: rules.whole(n, v, minimum=minimum, maximum=maximum, fix=fix))]


def OptWhole(minimum: int = 1, maximum: int | None = None, fix: str = ""):
    return Annotated[Optional[int],
                     _checked(lambda n, v: rules.whole(n, v, minimum=minimum, maximum=maximum, fix=fix))]


def Real(gt=None, ge=None, le=None, lt=None, fix: str = ""):
    return Annotated[float, _checked(lambda n, v: rules.number(n, v, gt=gt, ge=ge, le=le, lt=lt, fix=fix))]


def OptReal(gt=None, ge=None, le=None, lt=None, fix: str = ""):
    return Annotated[Optional[float], _checked(lambda n, v: rules.number(n, v, gt=gt, ge=ge, le=le, lt=lt, fix=fix))]


def Choice(*options: str):
    return Annotated[str, _checked(lambda n, v: rules.choice(n, v, options))]


Fraction = Annotated[float, _checked(rules.fraction)]
FractionZero = Annotated[float, _checked(lambda n, v: rules.fraction(n, v, zero_ok=True))]
Dtype = Annotated[str, _checked(rules.dtype)]
Price = Annotated[Optional[float], _checked(rules.price)]
Flag = Annotated[bool, _checked(lambda n, v: v if isinstance(v, bool) else rules.choice(n, v, ("True", "False")))]


def _text(n, v):
    if not isinstance(v, str) or not v.strip():
        raise rules.InputError(f"{n} must be a non-empty text, got {rules._shown(v)}; see the command's --help")
    return v


Text = Annotated[str, _checked(_text)]
OptText = Annotated[Optional[str], _checked(_text)]


class Request(BaseModel):
    """Base of every request: unknown fields refused, values frozen after validation."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True, populate_by_name=True,
                              validate_default=False)

    @classmethod
    def of(cls, data: dict | None = None, *, style: str = "python", **kwargs):
        """Validate `data`/`kwargs` into a request; raise the one-line roofline error on bad input."""
        payload = {**(data or {}), **kwargs}
        try:
            return cls.model_validate(payload, context={"style": style})
        except ValidationError as exc:
            raise _one_error(exc, style) from None

    _style: str = PrivateAttr(default="python")

    @model_validator(mode="after")
    def _cross_checks(self, info: ValidationInfo):
        self._style = (info.context or {}).get("style", "python")
        self.check()
        return self

    def check(self) -> None:
        """Rules between fields and against the catalog (override); resolve records into private attributes."""

    def changed(self, field: str) -> bool:
        """True when `field` differs from its default (given explicitly, whatever the caller)."""
        return getattr(self, field) != type(self).model_fields[field].default

    def flag(self, field: str) -> str:
        """How this request's caller spells `field` (`--tp` from the CLI, `tp` from Python)."""
        if self._style == "cli":
            return FLAG_NAMES.get(field, "--" + field.replace("_", "-"))
        return field


def _one_error(exc: ValidationError, style: str) -> RooflineError:
    """The first problem of a ValidationError as a roofline error (the original one when a rule raised)."""
    err = exc.errors(include_url=False)[0]
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, RooflineError):
        return cause
    loc = err.get("loc") or ()
    field = str(loc[0]) if loc else ""
    name = (FLAG_NAMES.get(field, "--" + field.replace("_", "-")) if style == "cli" else field) if field else ""
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        return UsageError(f"unknown input {name!r}; see the command's --help (or the request's fields) for the "
                          f"accepted names")
    if kind == "missing":
        return UsageError(f"{name} is required; give it (see --help)")
    if isinstance(cause, Exception):
        msg = str(cause)
    else:
        msg = err.get("msg", "invalid value")
    got = err.get("input")
    return rules.InputError(f"{name + ': ' if name else ''}{msg}"
                            + (f", got {rules._shown(got)}" if name and not isinstance(got, (dict, list)) else "")
                            + "; see --help for the accepted values")


def validated(cls, style: str, **kwargs) -> Any:
    """Shorthand used by the CLI: `validated(StepRequest, 'cli', model=..., ...)`."""
    return cls.of(kwargs, style=style)


def describe(req: Request) -> str:
    """The inputs a request was given (non-default fields), for messages about its outputs."""
    parts = [f"{req.flag(k)} {v}" for k, v in req.model_dump(exclude_defaults=True).items()
             if not isinstance(v, (dict, list))]
    return ", ".join(parts) or "the defaults"
