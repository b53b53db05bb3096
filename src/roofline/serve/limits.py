"""What one HTTP request may ask of the server: bounded work per request, refused up front with one message.

The CLI has no such limits (a terminal user owns the machine; `roofline sweep --csv` streams any size); a server
shared by a browser tab, or by anyone on the network it is bound to, must not be asked for an unbounded answer.
"""

from __future__ import annotations

MAX_SWEEP_POINTS = 100_000        # batch x context grid points in one /api/sweep answer (10^5 rows ≈ 20 MB JSON)
MAX_SIMULATED_REQUESTS = 20_000   # requests in one /api/simulate run (≈ 1-2 s of simulation)
MAX_PLAN_DOMAIN_COUNTS = 32       # distinct domain counts one /api/plan searches
MAX_PLAN_DOMAINS = 128            # largest domain count one /api/plan searches
MAX_BODY_BYTES = 65_536           # request body size
MAX_QUEUED = 256                  # requests waiting for one worker (fast or slow) before a 503 with Retry-After


class LimitError(Exception):
    """A request over a server limit: HTTP 413 with this one-line message."""


def check(op: str, body: dict) -> None:
    """Raise LimitError if the request asks for more than the limits above; library errors are left to the run."""
    model = body.get("model")
    if isinstance(model, str) and (model.endswith(".json") or "/" in model or "\\" in model):
        raise LimitError(f"model {model!r} looks like a file path; the server takes catalog model ids only "
                         f"(GET /api/catalog/models lists them); use the CLI for a local config.json")
    if op == "sweep":
        _sweep(body)
    elif op in ("simulate", "simulate/trace"):
        _simulate(body)
    elif op == "plan":
        _plan(body)


def _grid_size(text, name: str) -> int:
    from ..requests.sweep import parse_grid

    if text is None:
        return 1
    if isinstance(text, (list, tuple)):
        return len(text)
    if isinstance(text, (int, float)):
        return 1
    if ":" in str(text):  # a log range: its count bounds the points before any array is made
        parts = str(text).split(":")
        if len(parts) == 3:
            try:
                n = int(parts[2])
            except ValueError:
                n = 0
            if n > MAX_SWEEP_POINTS:
                return n
    return int(parse_grid(str(text), name).size)


def _sweep(body: dict) -> None:
    from ..errors import InputError

    try:
        n = _grid_size(body.get("batch", "1:4096:13"), "batch") * _grid_size(body.get("context", "4096"), "context")
    except InputError:
        return  # the run reports the malformed grid with the CLI's message
    if n > MAX_SWEEP_POINTS:
        raise LimitError(f"a sweep of {n:,} points exceeds this server's limit of {MAX_SWEEP_POINTS:,}; use fewer "
                         f"batch or context values, or `roofline sweep --csv` on the command line for any size")


def _simulate(body: dict) -> None:
    duration, rate = body.get("duration"), body.get("rate", 10.0)
    n = body.get("requests", 1000)
    if duration is not None and rate is not None and duration > 0 and rate > 0:
        n = int(rate * duration * 1.2 + 10 * (rate * duration) ** 0.5 + 10)  # what the CLI generates
    if isinstance(body.get("stages"), str):
        from ..errors import InputError
        from ..simulate.workload import parse_stages, staged_requests

        try:
            n = staged_requests(parse_stages(body["stages"], "stages"))  # what the stages generate
        except InputError:
            return  # the run reports the malformed stages with the CLI's message
    if n is not None and n > MAX_SIMULATED_REQUESTS:
        raise LimitError(f"a simulation of {n:,} requests exceeds this server's limit of {MAX_SIMULATED_REQUESTS:,}; "
                         f"lower requests (or rate x duration), or run `roofline simulate` on the command line")


def _plan(body: dict) -> None:
    from ..errors import InputError
    from ..requests.plan import parse_domains

    text = body.get("domains", "1")
    try:
        doms = parse_domains(text, "domains")
    except InputError:
        return
    if len(doms) > MAX_PLAN_DOMAIN_COUNTS or max(doms) > MAX_PLAN_DOMAINS:
        raise LimitError(f"a plan over domains {text!r} ({len(doms)} domain counts, up to {max(doms)}) exceeds this "
                         f"server's limit of {MAX_PLAN_DOMAIN_COUNTS} counts up to {MAX_PLAN_DOMAINS} domains; "
                         f"narrow domains (e.g. 1-16) or run `roofline plan` on the command line")
