"""Run a CLI command in-process and capture its `--json` output: the server's path for an operation that has
no request model in `roofline.requests` yet.

The request model of such an operation is generated from the command's own options (names, Python types,
defaults and help text as the CLI declares them), so the HTTP body uses the CLI's parameter names with
underscores (`weights_dtype`, `usd_per_gpu_hour`) and is validated by pydantic before the command runs. The
command then parses the same values exactly as from a terminal, so its checks and error messages are the CLI's.
Options that read or write files on the server (`--plot`, `--csv`, `--trace`, `--dataset`, `--write-docs`,
the global `--catalog`) are not exposed. Commands print through `print(...)`, so calls hold one lock while
stdout is redirected; each call takes about 0.5 ms plus the command's own work.
"""

from __future__ import annotations

import contextlib
import io
import threading
from dataclasses import dataclass
from typing import Any

#: options that touch the server's file system (or the terminal) and so are not part of the HTTP API
HIDDEN = frozenset({"json", "plot", "csv", "trace", "write_docs", "dataset", "rows", "help", "all_layouts"})

_LOCK = threading.Lock()
_CLICK = None


@dataclass(frozen=True)
class Param:
    name: str
    opts: tuple[str, ...]
    secondary: tuple[str, ...]
    annotation: Any
    default: Any
    required: bool
    flag: bool
    multiple: bool
    argument: bool
    help: str


class CliError(Exception):
    """A command refused its input: `status` 400 (library error) or 422 (usage error), one-line `message`."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def click_root():
    """The CLI's click command tree, built once (typer rebuilds it on every `app(...)` call, ~20 ms)."""
    global _CLICK
    if _CLICK is None:
        import typer

        from ..cli import app, register

        register()  # every command (a one-command CLI run registers only its own)
        _CLICK = typer.main.get_command(app)
    return _CLICK


def command(path: tuple[str, ...]):
    """The click command at `path` (e.g. ("prices", "show")); None if the CLI has no such command."""
    cmd = click_root()
    for part in path:
        sub = getattr(cmd, "commands", {}).get(part)
        if sub is None:
            return None
        cmd = sub
    return cmd


def params(path: tuple[str, ...]) -> list[Param]:
    """The command's parameters exposed over HTTP, in declaration order."""
    out = []
    for p in command(path).params:
        if p.name in HIDDEN:
            continue
        out.append(Param(p.name, tuple(p.opts), tuple(getattr(p, "secondary_opts", ()) or ()), _annotation(p), p.default,
                         bool(p.required), bool(getattr(p, "is_flag", False)), bool(p.multiple),
                         p.param_type_name == "argument", getattr(p, "help", None) or ""))
    return out


#: click's parameter type names (a range's name starts with its base type's) -> the Python type
_CLICK_TYPES = {"float": float, "int": int, "bool": bool}


def _annotation(p) -> Any:
    """The option's Python type: typer >= 0.29 keeps the declared annotation on the parameter; older typer
    leaves click's type (FLOAT, INT, BOOL, their ranges, Choice, text), mapped back here."""
    ann = getattr(getattr(p, "type_descriptor", None), "annotation", None)
    if ann is None:
        name = str(getattr(p.type, "name", ""))
        ann = next((t for k, t in _CLICK_TYPES.items() if name.startswith(k)), str)
    return list[ann] if p.multiple and ann is not None and getattr(ann, "__origin__", None) is not list else ann  # type: ignore[valid-type]


def request_model(op: str, path: tuple[str, ...]):
    """A pydantic model of the command's options: unknown fields are refused, types are the CLI's."""
    from pydantic import ConfigDict, Field, create_model

    fields = {}
    for p in params(path):
        ann = p.annotation
        if p.default is None and not p.required:
            ann = ann | None
        default = ... if p.required else p.default
        fields[p.name] = (ann, Field(default, description=p.help or None))
    name = "".join(part.capitalize() for part in op.replace("-", "_").split("_")) + "CliRequest"
    return create_model(name, __config__=ConfigDict(extra="forbid", strict=False), **fields)  # type: ignore[call-overload]


def argv(path: tuple[str, ...], values: dict) -> list[str]:
    """The command line that gives the command these values (the ones left at their default are omitted)."""
    args: list[str] = list(path)
    positional: list[str] = []
    for p in params(path):
        v = values.get(p.name, p.default)
        if v is None or (v == p.default and not p.argument and not p.required):
            continue
        if p.argument:
            positional += [_text(x) for x in (v if isinstance(v, (list, tuple)) else [v])]
        elif p.flag:
            if v:
                args.append(p.opts[0])
            elif p.secondary:
                args.append(p.secondary[0])
        elif p.multiple:
            for x in v:
                args += [p.opts[0], _text(x)]
        else:
            args += [p.opts[0], _text(v)]
    return args + ["--json"] + (["--"] + positional if positional else [])


def _text(v) -> str:
    return repr(v) if isinstance(v, float) else str(v)


def run(path: tuple[str, ...], values: dict) -> str:
    """The JSON text the command prints for these values; CliError with the CLI's one-line message otherwise."""
    from ..errors import RooflineError

    try:  # typer >= 0.2x vendors click; older releases use click itself
        from typer._click.exceptions import ClickException
    except ImportError:  # pragma: no cover - depends on the installed typer
        from click import ClickException  # type: ignore[assignment]
    import typer

    line = argv(path, values)
    out, err = io.StringIO(), io.StringIO()
    with _LOCK, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            click_root().main(args=line, standalone_mode=False, prog_name="roofline")
        except RooflineError as exc:
            raise CliError(400, str(exc)) from None
        except ClickException as exc:
            raise CliError(422, exc.format_message().rstrip(".")) from None
        except (typer.Exit, SystemExit) as exc:
            code = getattr(exc, "exit_code", getattr(exc, "code", 1))
            if code:
                raise CliError(400, err.getvalue().strip().splitlines()[-1] if err.getvalue().strip()
                               else f"the command exited with status {code}") from None
        except OSError as exc:
            raise CliError(400, f"{exc.strerror or exc}") from None
    return out.getvalue()
