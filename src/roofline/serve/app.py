"""The FastAPI application: the JSON API under /api (one POST route per operation, OpenAPI docs at /docs) and
the single-page front-end under / (static HTML/CSS/JS and the vendored Plotly bundle; no CDN, works offline).

Every error is one JSON object {"detail": one line, "field": name or null}: 422 for a body that is not JSON or a
field of the wrong type or name, 413 for a body or request over the server's limits (`limits`), 400 for input
the library refuses (the CLI's own message), 503 when too many requests already wait, 500 for a fault in the
library (one line, no traceback).
"""

import time
from pathlib import Path

from . import limits
from .ops import CONSTANT, Operation, available, execute

STATIC = Path(__file__).parent / "static"


def create_app():
    """Build the application (imports FastAPI; call once per server)."""
    from fastapi import FastAPI, Request
    from fastapi.responses import FileResponse, JSONResponse, Response
    from fastapi.staticfiles import StaticFiles

    from .. import __version__

    app = FastAPI(title="roofline", version=__version__, docs_url=None, redoc_url=None,
                  description="The math of how LLMs are trained and served, as a JSON API mirroring "
                              "`roofline ... --json` (same keys, SI units), and an interactive page at /.")
    ops = available()
    from .ops import CONSTANT_ANSWERS as cache  # input-free answers: once per process

    @app.middleware("http")
    async def body_limit(request: Request, call_next):
        size = request.headers.get("content-length")
        if size is not None and size.isdigit() and int(size) > limits.MAX_BODY_BYTES:
            return _error(JSONResponse, 413, f"request body of {int(size):,} bytes exceeds this server's limit of "
                                             f"{limits.MAX_BODY_BYTES:,}; send only the operation's fields")
        return await call_next(request)

    def answer(op: Operation, raw: bytes, layout: str = "rows") -> Response:
        from . import bridge
        from .ops import Refused, parse_body

        timing = "app;dur=0;desc=cached"
        try:
            if len(raw) > limits.MAX_BODY_BYTES:  # a body sent without Content-Length (chunked)
                return _error(JSONResponse, 413, f"request body of {len(raw):,} bytes exceeds this server's limit "
                                                 f"of {limits.MAX_BODY_BYTES:,}; send only the operation's fields")
            text: str | bytes
            if op.name in CONSTANT and layout == "rows" and op.name in cache:
                text = cache[op.name]
            else:
                t0 = time.perf_counter()
                text = execute(op, parse_body(raw), layout)
                timing = f"app;dur={(time.perf_counter() - t0) * 1e3:.1f}"
                if op.name in CONSTANT and layout == "rows":
                    cache[op.name] = text
        except Refused as exc:
            return _error(JSONResponse, exc.status, exc.message, exc.field)
        except limits.LimitError as exc:
            return _error(JSONResponse, 413, str(exc))
        except bridge.CliError as exc:
            return _error(JSONResponse, exc.status, exc.message)
        except Exception as exc:  # noqa: BLE001 - a library fault: one line to the client, no traceback
            from ..errors import RooflineError

            if isinstance(exc, RooflineError):
                return _error(JSONResponse, 400, str(exc))
            why = " ".join(str(exc).split())  # one line whatever the exception says
            return _error(JSONResponse, 500, f"internal error in {op.name}: {type(exc).__name__}: {why}; "
                                             f"please report it with the request body")
        kind = "application/octet-stream" if isinstance(text, bytes) else "application/json"
        return Response(content=text, media_type=kind, headers={"Server-Timing": timing})

    for op in ops.values():
        _route(app, op, answer, Request)

    @app.get("/api", summary="The operations this server answers and its limits")
    def index_api():
        return {"operations": {n: {"cli": "roofline " + " ".join(o.path) + " --json", "via": o.via,
                                   "fields": o.fields} for n, o in ops.items()},
                "limits": {k.lower(): v for k, v in vars(limits).items() if k.startswith("MAX_")}}

    @app.get("/docs", include_in_schema=False)
    def docs():  # Swagger UI from the vendored swagger-ui-dist, not FastAPI's default CDN: works offline
        from fastapi.openapi.docs import get_swagger_ui_html

        return get_swagger_ui_html(openapi_url="/openapi.json", title="roofline API",
                                   swagger_js_url="/static/vendor/swagger-ui-bundle.js",
                                   swagger_css_url="/static/vendor/swagger-ui.css", swagger_favicon_url="data:,")

    @app.get("/", include_in_schema=False)
    def page():
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


def _route(app, op: Operation, answer, Request) -> None:
    schema = op.model.model_json_schema()
    from .ops import SERVER_ONLY

    for name in SERVER_ONLY:  # fields the server refuses are not advertised
        schema.get("properties", {}).pop(name, None)
    extra = {"requestBody": {"content": {"application/json": {"schema": schema}}, "required": False}}
    summary = f"`roofline {' '.join(op.path)} --json`" + (" (in-process CLI)" if op.via == "cli" else "")

    kind = "slow" if op.name in SLOW else "fast"

    async def endpoint(request: Request):
        raw = await request.body()
        return await _queued(kind, answer, op, raw, request.query_params.get("layout", "rows"))

    app.add_api_route(f"/api/{op.name}", endpoint, methods=["POST"], summary=summary, openapi_extra=extra,
                      name=op.name.replace("/", "_"))
    if op.name in CONSTANT or not any(f.is_required() for f in op.model.model_fields.values()):
        async def get_endpoint():
            return await _queued(kind, answer, op, b"")

        app.add_api_route(f"/api/{op.name}", get_endpoint, methods=["GET"], summary=summary + " with its defaults",
                          name=op.name.replace("/", "_") + "_get")


#: operations that can take a second or more: they queue on their own worker, so a simulation never delays a step
SLOW = frozenset({"simulate", "validate", "plan", "prices/infer", "train"})
_POOLS: dict = {}


def _pool(kind: str):
    """One worker thread per kind. The work is NumPy-light Python under the GIL, so more threads would not
    answer faster; with glibc each extra thread also keeps its own malloc arena, and under load a pool of 40
    threads grew the server from 119 MB to 1.7 GB of resident memory under 32 clients asking for simulations, where
    one worker stayed at 224 MB (the simulation's own working set; measured with benchmarks/serve.py's mix)."""
    from concurrent.futures import ThreadPoolExecutor

    if kind not in _POOLS:
        _POOLS[kind] = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"roofline-{kind}")
    return _POOLS[kind]


_WAITING: dict[str, int] = {}


async def _queued(kind: str, answer, *args):
    """Run `answer(*args)` on the kind's worker; past limits.MAX_QUEUED waiting requests, 503 at once (with
    Retry-After) rather than an ever longer queue: the server's memory and latency stay bounded."""
    import asyncio

    from fastapi.responses import JSONResponse

    if _WAITING.get(kind, 0) >= limits.MAX_QUEUED:
        r = _error(JSONResponse, 503, f"the server is busy ({limits.MAX_QUEUED} {kind} requests waiting); retry in a "
                                      f"few seconds")
        r.headers["Retry-After"] = "2"
        return r
    _WAITING[kind] = _WAITING.get(kind, 0) + 1
    try:
        return await asyncio.get_running_loop().run_in_executor(_pool(kind), answer, *args)
    finally:
        _WAITING[kind] -= 1


def _error(JSONResponse, status: int, detail: str, field: str | None = None):
    return JSONResponse({"detail": detail, "field": field}, status_code=status)
