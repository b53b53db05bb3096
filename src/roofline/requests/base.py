"""The request base class and the field types built on `rules`.

A request class declares its fields once, with the rule of each (`batch: Whole(1) = 1`), and its
cross-field rules in `check()`. Two ways in, same rules and messages:

- `XRequest.of(...)` (CLI and Python): plain Python, no pydantic — keeps `roofline step` fast (pydantic's
  first model costs ~60-90 ms of a ~0.2 s command);
- `XRequest.model_validate(body)`, `.model_json_schema()`, `.model_fields` (the HTTP API): a pydantic v2
  model generated on first use from the same declarations (the rules run as BeforeValidators, `check()`
  in an after-validator), so a bad body is a pydantic ValidationError naming its field.

Both return the same frozen request object, which the `run_X` functions take. Field names are the CLI
flags without the dashes (`usd_per_gpu_hour` is `--usd-per-gpu-hour`); a message names the flag when the
request came from the CLI (`style="cli"`) and the argument when it came from Python.
"""

from __future__ import annotations

import typing
from typing import Annotated, Any, Optional, Union

from . import rules
from .rules import UsageError

#: Fields whose CLI flag is not `--` + the field name with dashes.
FLAG_NAMES = {"requests": "--requests/-n", "as_json": "--json"}
_MISSING = object()


def label(field: str, style: str = "python") -> str:
    """How the caller spells a field: `--kv-bytes` from the CLI, `kv_bytes` from Python."""
    if style == "cli":
        return FLAG_NAMES.get(field, "--" + field.replace("_", "-"))
    return field


class Rule:
    """Annotated metadata: the rule `fn(label, value) -> value` of a field (None passes through)."""

    def __init__(self, fn):
        self.fn = fn


def _checked(fn) -> Rule:
    return Rule(fn)


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


def _number_or_name(n, v: str, expected: str, meaning: str) -> float:
    """A text value that names none of an option's words must be a number: that number, or one line saying what
    was expected (`expected`) and what the values mean (`meaning`)."""
    try:
        return float(v)
    except ValueError:
        raise rules.UsageError(f"{n} must be {expected}, got {rules._shown(v)}; {meaning}") from None


def _imbalance(n, v):
    if isinstance(v, str):
        if v == "sampling":
            return v
        kind, _, arg = v.partition(":")
        if kind == "powerlaw":
            try:
                a = float(arg)
            except ValueError:
                raise rules.UsageError(f"{n} powerlaw:A needs a number A, got {rules._shown(v)}; e.g. powerlaw:0.5"
                                       ) from None
            rules.number(f"{n} powerlaw exponent", a, gt=0, le=10, fix="e.g. powerlaw:0.5")
            return v
        if kind == "loads" and arg:
            return v  # the file is read and checked against the model by the request (resolve.moe_imbalance)
        v = _number_or_name(n, v, "a number >= 1, 'sampling', 'powerlaw:A' or 'loads:FILE'",
                            "1 means perfectly balanced experts, 'sampling' the busiest GPU of a balanced router for "
                            "each pass's tokens, powerlaw:A / loads:FILE hot experts (docs/parallelism.md)")
    return rules.number(n, v, ge=1, le=1e3, fix="1 = perfectly balanced experts, or 'sampling'")


#: MoE load imbalance: a number >= 1 (busiest expert GPU over the mean) or "sampling" (model.sampling_imbalance)
Imbalance = Annotated[Union[float, str], _checked(_imbalance)]


def _named_or_number(names: str, meaning: str, fix: str, expected: str, **bounds):
    """A check for a value that is one of the names in memory.<names> (imported when first checked) or a number in
    `bounds` (rules.number): a name passes as given; other text must read as a number, else one line saying what was
    `expected` ("{names}" stands for the names) and what the values mean."""
    def check(n, v):
        from .. import memory

        known = getattr(memory, names)
        if isinstance(v, str):
            if v in known:
                return v
            v = _number_or_name(n, v, expected.format(names=", ".join(known)), meaning)
        return rules.number(n, v, fix=fix, **bounds)

    return check


#: The KV memory flag: a fraction in (0, 1] or the name of an engine's own default (memory.KV_MEMORY_RULES)
KvMemory = Annotated[Union[float, str], _checked(_named_or_number(
    "KV_MEMORY_RULES", "a number is the launch's flag (vLLM --gpu-memory-utilization, SGLang --mem-fraction-static), a "
    "name the engine's own default for the GPU and launch (docs/simulator.md)",
    "the launch's KV memory flag, e.g. vLLM's --gpu-memory-utilization 0.9, or 'sglang' for SGLang's own default",
    "a number in (0, 1] or one of {names}", gt=0, le=1))]
#: Memory per GPU kept out of the KV pool besides the weights: GiB, or a rule by name (memory.KV_RESERVES)
KvReserve = Annotated[Union[float, str], _checked(_named_or_number(
    "KV_RESERVES", "a number is the memory per GPU the engine keeps from its KV pool besides the weights, 'vllm' "
    "vLLM's profiled activation peak (docs/simulator.md)", "GiB per GPU kept from the KV pool, e.g. 2, or 'vllm'",
    "a number of GiB >= 0 or one of {names}", ge=0, le=1e4))]
Fraction = Annotated[float, _checked(rules.fraction)]
FractionZero = Annotated[float, _checked(lambda n, v: rules.fraction(n, v, zero_ok=True))]
Dtype = Annotated[str, _checked(rules.dtype)]
OptDtype = Annotated[Optional[str], _checked(rules.dtype)]
Price = Annotated[Optional[float], _checked(rules.price)]


def _flag(n, v):
    if not isinstance(v, bool):
        raise rules.InputError(f"{n} must be true or false, got {rules._shown(v)}; pass a boolean")
    return v


Flag = Annotated[bool, _checked(_flag)]


def _text(n, v):
    if not isinstance(v, str) or not v.strip():
        raise rules.InputError(f"{n} must be a non-empty text, got {rules._shown(v)}; see the command's --help")
    return v


Text = Annotated[str, _checked(_text)]
OptText = Annotated[Optional[str], _checked(_text)]


class FieldSpec:
    """A field's default and alias (`as_json: bool = Field(False, alias="json")`)."""

    def __init__(self, default=_MISSING, alias: str | None = None):
        self.default, self.alias = default, alias


def Field(default=_MISSING, *, alias: str | None = None) -> Any:
    return FieldSpec(default, alias)


class _Spec:
    """One declared field: its type, rule, default and alias."""

    def __init__(self, name: str, hint, value):
        self.name = name
        self.rule = None
        base = hint
        if typing.get_origin(hint) is Annotated:
            base, *meta = typing.get_args(hint)
            self.rule = next((m.fn for m in meta if isinstance(m, Rule)), None)
        self.base = base
        args = typing.get_args(base)
        self.optional = base is Any or (typing.get_origin(base) is typing.Union and type(None) in args)
        self.kind = next((a for a in args if a is not type(None)), base) if self.optional and base is not Any else base
        spec = value if isinstance(value, FieldSpec) else FieldSpec(value)
        self.default, self.alias = spec.default, spec.alias
        self.required = self.default is _MISSING

    def validate(self, value, style: str):
        n = label(self.name, style)
        if value is None:
            if self.optional:
                return None
            raise rules.InputError(f"{n} needs a value, got None; give one or leave it out for the default")
        if self.rule is not None:
            return self.rule(n, value)
        if self.kind is bool:
            return _flag(n, value)
        if self.kind is str and not isinstance(value, str):
            raise rules.InputError(f"{n} must be a text id, got {rules._shown(value)} ({type(value).__name__})")
        return value


class _RequestMeta(type):
    @property
    def model_fields(cls):
        """The generated pydantic model's fields (the HTTP API lists and documents them)."""
        return cls.pydantic_model().model_fields


class Request(metaclass=_RequestMeta):
    """Base of every request: unknown fields refused, values frozen after validation, `check()` run last."""

    _style: str = "python"

    # ---- declarations -------------------------------------------------------------------------------
    @classmethod
    def fields(cls) -> dict[str, _Spec]:
        """name -> _Spec for every declared field (computed once per class)."""
        cached = cls.__dict__.get("_fields_cache")
        if cached is not None:
            return cached
        hints = typing.get_type_hints(cls, include_extras=True)
        specs = {name: _Spec(name, hint, getattr(cls, name, _MISSING)) for name, hint in hints.items()
                 if not name.startswith("_")}
        setattr(cls, "_fields_cache", specs)
        return specs

    # ---- the plain way in (CLI, Python) ---------------------------------------------------------------
    @classmethod
    def of(cls, data: dict | None = None, *, style: str = "python", **kwargs):
        """Validate `data`/`kwargs` into a request; raise the one-line roofline error on bad input."""
        specs = cls.fields()
        by_alias = {s.alias: name for name, s in specs.items() if s.alias}
        given: dict = {}
        for key, value in {**(data or {}), **kwargs}.items():
            name = by_alias.get(key, key)
            if name not in specs:
                raise UsageError(f"unknown input {label(key, style)!r}; see the command's --help (or the request's "
                                 f"fields) for the accepted names")
            given[name] = value
        values = {}
        for name, spec in specs.items():
            if name in given:
                values[name] = spec.validate(given[name], style)
            elif spec.required:
                raise UsageError(f"{label(name, style)} is required; give it (see --help)")
            else:
                values[name] = spec.default
        return cls._build(values, style)

    @classmethod
    def _build(cls, values: dict, style: str):
        obj = object.__new__(cls)
        obj.__dict__.update(values)
        obj.__dict__["_style"] = style
        obj.check()
        return obj

    def __setattr__(self, name, value):
        if not name.startswith("_"):
            raise AttributeError(f"requests are frozen: build a new one with {type(self).__name__}.of(...)")
        self.__dict__[name] = value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.model_dump().items())})"

    def check(self) -> None:
        """Rules between fields and against the catalog (override); resolve records into private attributes."""

    def changed(self, field: str) -> bool:
        """True when `field` differs from its default (given explicitly, whatever the caller)."""
        return getattr(self, field) != type(self).fields()[field].default

    def flag(self, field: str) -> str:
        """How this request's caller spells `field` (`--tp` from the CLI, `tp` from Python)."""
        return label(field, self._style)

    def model_dump(self, exclude_defaults: bool = False) -> dict:
        specs = type(self).fields()
        return {k: getattr(self, k) for k, s in specs.items()
                if not (exclude_defaults and getattr(self, k) == s.default)}

    # ---- the pydantic way in (HTTP API) --------------------------------------------------------------
    @classmethod
    def pydantic_model(cls):
        """The pydantic v2 model of this request, generated once from the declarations."""
        cached = cls.__dict__.get("_pydantic_cache")
        if cached is None:
            cached = _generate(cls)
            cls._pydantic_cache = cached
        return cached

    @classmethod
    def model_validate(cls, data, *, context: dict | None = None, **kwargs):
        """Validate with the generated pydantic model (errors are pydantic ValidationErrors naming the
        field); returns the request object `of` would."""
        return cls.pydantic_model().model_validate(data, context=context, **kwargs)._request

    @classmethod
    def model_json_schema(cls, *args, **kwargs) -> dict:
        return cls.pydantic_model().model_json_schema(*args, **kwargs)


def _generate(cls):
    """pydantic.create_model from a request class: each rule a BeforeValidator, `check()` after."""
    from pydantic import (
        BaseModel,
        BeforeValidator,
        ConfigDict,
        PrivateAttr,
        ValidationInfo,
        create_model,
        model_validator,
    )
    from pydantic import Field as PydField

    def runner(fn):
        def run(value, info: ValidationInfo):
            if value is None:
                return None
            return fn(label(info.field_name or "", (info.context or {}).get("style", "python")), value)

        return BeforeValidator(run)

    class Base(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True, populate_by_name=True,
                                  validate_default=False)
        _request: Any = PrivateAttr(None)

        @model_validator(mode="after")
        def _cross_checks(self, info: ValidationInfo):
            style = (info.context or {}).get("style", "python")
            self._request = cls._build({k: getattr(self, k) for k in cls.fields()}, style)
            return self

    fields = {}
    for name, spec in cls.fields().items():
        hint = Annotated[spec.base, runner(spec.rule)] if spec.rule is not None else spec.base
        default = ... if spec.required else spec.default
        fields[name] = (hint, PydField(default, alias=spec.alias) if spec.alias else default)
    return create_model(cls.__name__, __base__=Base, __module__=cls.__module__, __doc__=cls.__doc__, **fields)


def describe(req: Request) -> str:
    """The inputs a request was given (non-default fields), for messages about its outputs."""
    parts = [f"{req.flag(k)} {v}" for k, v in req.model_dump(exclude_defaults=True).items()
             if isinstance(v, (int, float, str))]
    return ", ".join(parts) or "the defaults"


def validated(cls, style: str, **kwargs) -> Any:
    """Shorthand used by the CLI: `validated(StepRequest, 'cli', model=..., ...)`."""
    return cls.of(kwargs, style=style)
