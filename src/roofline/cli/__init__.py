"""Command line: typer + rich. One command per job, each calls one library function and renders it.

Every module in this package except `render` and `common` defines `register(app)`; they are discovered here, so a
new command group is a new file. Errors: one line `error: ...`, exit 1 for bad input (RooflineError),
exit 2 for usage errors; never a traceback.
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
import sys

import typer

app = typer.Typer(
    name="roofline",
    help="The math of how LLMs are trained and served: roofline step times, costs, plans, prices.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@app.callback()
def _root(
    catalog: list[str] = typer.Option(
        [], "--catalog", metavar="FILE", help="Extra catalog YAML file (accelerators/systems/models/prices/tiers); repeatable."
    ),
) -> None:
    """Global options."""
    from ..catalog import add_catalog_file
    from ..requests.rules import text_file

    for path in catalog:
        text_file(path, "--catalog file", "a catalog YAML file")  # missing, binary, non-UTF-8: one line
        add_catalog_file(path)


#: the command module(s) that register each top-level command (checked against the modules by
#: tests/test_cli_core.py): a one-command run imports and builds only its own, since typer builds the
#: parameters of every registered command on each call (60 ms for all of them)
COMMANDS = {"board": ("board",), "calibrate": ("calibrate",), "calibrate-check": ("calibrate",),
            "catalog": ("catalog", "kernels_catalog"), "plan": ("plan",), "prices": ("prices",),
            "tiers": ("prices",), "report": ("report",), "serve": ("serve",), "simulate": ("simulate",),
            "step": ("step",), "sweep": ("sweep",), "train": ("train",), "overtrain": ("train",),
            "validate": ("validate",)}
_registered: set[str] = set()


def command_modules() -> list[str]:
    """Every module of this package that defines `register(app)`."""
    return [i.name for i in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name)
            if i.name not in ("render", "common") and not i.name.startswith("_")]


def register(modules=None) -> None:
    """Register the given command modules (default: all) on `app`, each once."""
    for name in command_modules() if modules is None else modules:
        if name not in _registered:
            importlib.import_module(f"{__name__}.{name}").register(app)
            _registered.add(name)


def _register_for(args: list[str]) -> None:
    """Only the command being run (its first non-option argument), else every command (help, errors)."""
    first = next((a for a in args if not a.startswith("-")), None)
    if first in COMMANDS and "--help" not in args[: args.index(first)]:
        register(COMMANDS[first])
    else:
        register()


def hoist_catalog(argv: list[str]) -> list[str]:
    """`--catalog FILE` is a global option; accept it after the subcommand too (`roofline step --catalog
    my.yaml ...`) by moving every occurrence to the front, in order."""
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--catalog" and i + 1 < len(argv):
            front += argv[i:i + 2]
            i += 2
            continue
        (front if a.startswith("--catalog=") else rest).append(a)
        i += 1
    return front + rest


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, turning library errors into one-line messages and exit codes."""
    from ..errors import RooflineError

    try:  # typer >= 0.2x vendors click; older releases use click itself
        from typer._click.exceptions import ClickException
    except ImportError:  # pragma: no cover - depends on the installed typer
        from click import ClickException  # type: ignore[assignment]

    from ..requests.rules import UsageError

    args = hoist_catalog(list(sys.argv[1:] if argv is None else argv))
    _register_for(args)
    guard: contextlib.AbstractContextManager
    if not args or "--help" in args:  # help text needs no arithmetic: keep NumPy out of its start-up
        guard = contextlib.nullcontext()
    else:
        import numpy as np

        guard = np.errstate(over="raise", invalid="raise", divide="raise")  # inf/NaN never printed silently
    try:
        with guard:
            app(args=args, standalone_mode=False)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except RooflineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    except FloatingPointError as exc:  # a NumPy overflow/invalid/divide from the inputs given
        given = " ".join(a for a in (argv if argv is not None else sys.argv[1:]) if a != "--json")
        print(f"error: arithmetic {exc} while computing `roofline {given}`; an input is too large, too small or "
              f"zero where it divides — bring the inputs into a realistic range", file=sys.stderr)
        raise SystemExit(1) from None
    except typer.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except typer.Abort:
        print("error: aborted", file=sys.stderr)
        raise SystemExit(1) from None
    except ClickException as exc:  # usage errors: one line too, pointing at the command's --help
        ctx = getattr(exc, "ctx", None)
        where = f"; see `{ctx.command_path} --help`" if ctx is not None else ""
        print(f"error: {exc.format_message().rstrip('.')}{where}", file=sys.stderr)
        raise SystemExit(getattr(exc, "exit_code", 2) or 2) from None
    except OSError as exc:
        print(f"error: {exc.strerror or exc}: {getattr(exc, 'filename', '') or ''}; check the path", file=sys.stderr)
        raise SystemExit(1) from None
    return 0
