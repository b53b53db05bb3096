"""`roofline serve`: the lecture's blackboard in the browser — a JSON API mirroring the CLI's `--json` and a
single-page front-end whose curves move with the inputs (docs/serve.md).

FastAPI and uvicorn are imported only here, when a server is built, never by `import roofline` or other commands.
"""

from __future__ import annotations


def create_app():
    """The FastAPI application (see `roofline.serve.app`)."""
    from .app import create_app as _create

    return _create()


def run(host: str = "127.0.0.1", port: int = 8000, open_browser: bool = False, log_level: str = "warning") -> None:
    """Serve the API and the page with uvicorn until interrupted; optionally open the page in a browser."""
    import uvicorn

    app = create_app()
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}/"
    if open_browser:
        import threading
        import webbrowser

        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    print(f"roofline serving on {url} (API docs at {url}docs); Ctrl-C stops it", flush=True)
    uvicorn.run(app, host=host, port=port, log_level=log_level)
