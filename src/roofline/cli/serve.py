"""`roofline serve`: the interactive page and the JSON API (FastAPI + uvicorn, imported only by this command)."""

from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve_cmd(
        host: Annotated[str, typer.Option("--host", help="Interface to bind; 127.0.0.1 keeps the server local to this machine.")] = "127.0.0.1",
        port: Annotated[int, typer.Option("--port", help="TCP port, 1-65535.")] = 8000,
        open_browser: Annotated[bool, typer.Option("--open", help="Open the page in the default web browser.")] = False,
    ) -> None:
        """Serve the executable blackboard: pages with the lecture's curves, and /api mirroring every --json."""
        from ..errors import InputError

        if not 1 <= port <= 65535:
            raise InputError(f"--port must be between 1 and 65535, got {port}")
        try:
            import fastapi  # noqa: F401
            import uvicorn  # noqa: F401
        except ImportError as exc:
            raise InputError(f"`roofline serve` needs {exc.name}; install it with `pip install fastapi uvicorn`") from None
        import socket

        try:  # a taken port or an address not on this machine: one line, before uvicorn logs its own
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            with socket.socket(family, socket.SOCK_STREAM) as probe:
                probe.bind((host, port))
        except OSError as exc:
            raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; choose another --port "
                             f"(e.g. --port {port + 1 if port < 65535 else 8000}) or stop what holds it") from None
        from ..serve import run

        try:
            run(host, port, open_browser)
        except OSError as exc:
            raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; choose another --port") from None
        except KeyboardInterrupt:
            pass
