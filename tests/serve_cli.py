"""Shared by the serve tests: what `roofline ... --json` prints for an HTTP body, run in-process once per
distinct command line (the CLI is deterministic; `roofline validate` alone takes tens of seconds)."""

import contextlib
import functools
import io
import json


def cli_json(path, body) -> object:
    from roofline.serve import bridge

    return json.loads(_run(tuple(bridge.argv(tuple(path), body))))


@functools.cache
def _run(argv: tuple) -> str:
    from roofline.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code
    assert code in (0, None), f"roofline {' '.join(argv)}: {err.getvalue().strip()}"
    return out.getvalue()
