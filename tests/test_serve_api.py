"""`roofline serve` API: every operation answers what the CLI prints with --json for the same inputs; bad bodies
get one line naming the field (422), requests over the server's limits 413, refused input 400."""

import subprocess
import sys

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")


@pytest.fixture(scope="module")
def client():
    import warnings

    with warnings.catch_warnings():  # starlette's note on httpx versions, irrelevant here
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient

    from roofline.serve import create_app

    return TestClient(create_app())


def cli_json(run_cli, path, body):
    """What `roofline <path> ... --json` prints for the same body (the bridge's argv: field -> flag)."""
    from serve_cli import cli_json as run

    return run(path, body)


# operation, CLI command path, body: one small case per operation of the issue
CASES = [
    ("step", ["step"], {"model": "llama-3-70b", "system": "dgx-h100", "batch": 64, "context": 4096}),
    ("step", ["step"], {"model": "deepseek-v3", "system": "gb200-nvl72", "batch": 512, "context": 4096, "tp": 1,
                        "ep": 64, "dp": 64, "domains": 1}),
    ("sweep", ["sweep"], {"model": "llama-3-70b", "system": "dgx-h100", "batch": "1:1024:6", "context": "1024,4096"}),
    ("plan", ["plan"], {"model": "llama-3-70b", "system": "dgx-h100", "domains": "1-2"}),
    ("simulate", ["simulate"], {"model": "llama-3-70b", "system": "dgx-h100", "requests": 60, "rate": 5.0,
                                "policy": "train", "interval_s": 0.02}),
    ("train", ["train"], {"model": "llama-3-70b", "system": "dgx-h100", "tp": 8, "pp": 4, "dp": 32}),
    ("overtrain", ["overtrain"], {"params": 7e10, "traffic": 1e7, "lifetime_days": 90.0}),
    ("tiers", ["tiers"], {"kv_bytes": 4096.0, "hold": [1.0, 600.0]}),
    ("prices/show", ["prices", "show"], {}),
    ("prices/infer", ["prices", "infer"], {}),
    ("prices/layouts", ["prices", "layouts"], {"kv_bytes": 1666.67, "top": 3}),
    ("validate", ["validate"], {}),
    ("catalog/models", ["catalog", "models"], {}),
    ("catalog/systems", ["catalog", "systems"], {}),
    ("catalog/accelerators", ["catalog", "accelerators"], {}),
    ("catalog/efficiency", ["catalog", "efficiency"], {}),
]


@pytest.mark.parametrize("op,path,body", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_api_answer_equals_cli_json(client, run_cli, op, path, body):
    r = client.post(f"/api/{op}", json=body)
    assert r.status_code == 200, r.text
    assert r.json() == cli_json(run_cli, path, body)


def test_board_when_the_cli_has_it(client, run_cli):
    from roofline.serve import bridge

    if bridge.command(("board",)) is None:
        pytest.skip("this checkout has no `roofline board` command yet")
    body = {"model": "lecture-frontier-moe", "system": "gb200-nvl72"}
    r = client.post("/api/board", json=body)
    assert r.status_code == 200, r.text
    assert r.json() == cli_json(run_cli, ["board"], body)


def test_every_operation_of_the_issue_is_served_and_documented(client):
    ops = client.get("/api").json()["operations"]
    for name in ("step", "sweep", "plan", "simulate", "train", "overtrain", "prices/show", "prices/infer", "tiers",
                 "validate", "catalog/models"):
        assert name in ops, name
    paths = client.get("/openapi.json").json()["paths"]
    assert "/api/step" in paths and "requestBody" in paths["/api/step"]["post"]
    docs = client.get("/docs")
    assert docs.status_code == 200 and "/static/vendor/swagger-ui-bundle.js" in docs.text and "cdn." not in docs.text
    assert client.get("/static/vendor/swagger-ui-bundle.js").status_code == 200


def test_constant_operations_answer_get_too(client):
    a, b = client.get("/api/catalog/systems"), client.post("/api/catalog/systems", json={})
    assert a.status_code == b.status_code == 200 and a.json() == b.json()


@pytest.mark.parametrize("raw,field,needle", [
    (b'{"model": "llama-3-70b", "system": ', None, "not valid JSON at line 1"),
    (b'[1, 2]', None, "must be a JSON object"),
    (b'{"model": "llama-3-70b", "system": "dgx-h100", "batch": "many"}', "batch", "batch"),
    (b'{"model": "llama-3-70b", "system": "dgx-h100", "bacth": 4}', "bacth", "unknown field 'bacth'"),
    (b'{"system": "dgx-h100"}', "model", "model"),
    (b'\xff\xfe', None, "not UTF-8"),
])
def test_malformed_bodies_are_422_with_one_line_naming_the_field(client, raw, field, needle):
    r = client.post("/api/step", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    d = r.json()
    assert needle in d["detail"] and "\n" not in d["detail"] and "Traceback" not in d["detail"]
    assert d["field"] == field


def test_wrong_type_on_a_cli_bridged_operation_names_the_field(client):
    r = client.post("/api/overtrain", json={"params": "lots"})
    assert r.status_code == 422 and r.json()["field"] == "params"


@pytest.mark.parametrize("op,body,needle", [
    ("sweep", {"model": "llama-3-70b", "system": "dgx-h100", "batch": "1:4096:1000", "context": "1:8000:1000"},
     "exceeds this server's limit of 100,000"),
    ("sweep", {"model": "llama-3-70b", "system": "dgx-h100", "batch": "1:4096:1000000000000"}, "1,000,000,000,000"),
    ("simulate", {"model": "llama-3-70b", "system": "dgx-h100", "requests": 1_000_000}, "limit of 20,000"),
    ("simulate", {"model": "llama-3-70b", "system": "dgx-h100", "rate": 1000.0, "duration": 600.0}, "limit of 20,000"),
    ("plan", {"model": "llama-3-70b", "system": "dgx-h100", "domains": "1-500"}, "limit of 32 counts"),
    ("step", {"model": "/etc/passwd", "system": "dgx-h100"}, "catalog model ids only"),
])
def test_requests_over_the_limits_are_413_with_one_message(client, op, body, needle):
    r = client.post(f"/api/{op}", json=body)
    assert r.status_code == 413, r.text
    assert needle in r.json()["detail"]


def test_oversized_body_is_413(client):
    r = client.post("/api/step", content=b"{" + b" " * 70_000 + b"}", headers={"content-type": "application/json"})
    assert r.status_code == 413 and "65,536" in r.json()["detail"]


def test_input_the_library_refuses_is_4xx_with_the_cli_message(client, run_cli):
    body = {"model": "llama-3-70b", "system": "dgx-h100", "batch": 100000, "context": 8000}
    r = client.post("/api/step", json=body)
    assert r.status_code == 400
    code, _, err = run_cli("step", "-m", "llama-3-70b", "-s", "dgx-h100", "-b", "100000", "-c", "8000", "--json")
    assert code == 1 and r.json()["detail"] in err
    r = client.post("/api/step", json={"model": "llama-3-7b", "system": "dgx-h100"})
    assert r.status_code in (400, 422) and "did you mean" in r.json()["detail"]


def test_page_and_vendored_library_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and "/static/vendor/plotly.min.js" in page.text and "https://" not in page.text
    js = client.get("/static/vendor/plotly.min.js")
    assert js.status_code == 200 and js.text.lstrip().startswith("/**") and "plotly.js v" in js.text[:200]
    assert "MIT" in client.get("/static/vendor/plotly.LICENSE.txt").text


def test_serve_binds_localhost_by_default_and_importing_roofline_loads_no_web_stack():
    from roofline.serve import bridge

    host = next(p for p in bridge.command(("serve",)).params if p.name == "host")
    assert host.default == "127.0.0.1"
    code = ("import sys, roofline, roofline.cli; "
            "print(any(m in sys.modules for m in ('fastapi', 'uvicorn', 'starlette', 'playwright')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_serve_refuses_a_bad_port_with_one_line(run_cli):
    code, _out, err = run_cli("serve", "--port", "70000")
    assert code == 1 and err.strip().count("\n") == 0 and "--port must be between 1 and 65535" in err


@pytest.mark.parametrize("field", ["csv", "plot", "json", "trace"])
def test_fields_naming_server_files_are_refused(client, field):
    r = client.post("/api/sweep", json={"model": "llama-3-70b", "system": "dgx-h100", field: "/tmp/x.csv"})
    assert r.status_code == 422 and r.json()["field"] == field and "not taken over HTTP" in r.json()["detail"]


@pytest.mark.parametrize("policy", ["continuous", "train"])
def test_simulate_trace_is_the_run_the_cli_summarises(client, run_cli, policy):
    """The page's distributions and timeline come from the same simulation as `roofline simulate --json`:
    its per-request latencies give the CLI's percentiles and request count; its occupancy stays within the
    pass capacity and integrates to the CLI's mean batch x utilisation x makespan."""
    import numpy as np

    if "simulate/trace" not in client.get("/api").json()["operations"]:
        pytest.skip("simulate/trace needs the request layer's SimulateRequest")
    body = {"model": "llama-3-70b", "system": "dgx-h100", "requests": 150, "rate": 8.0, "policy": policy,
            "max_seqs": 64, "seed": 3}
    r = client.post("/api/simulate/trace", json=body)
    assert r.status_code == 200, r.text
    t = r.json()
    cli = cli_json(run_cli, ["simulate"], body)
    assert t["requests"] == cli["requests"] == 150
    assert np.percentile(t["ttft_s"], 50) == pytest.approx(cli["ttft_p50_s"], rel=1e-12)
    assert np.percentile(t["ttft_s"], 99) == pytest.approx(cli["ttft_p99_s"], rel=1e-12)
    tpot = np.array([x for x in t["tpot_s"] if x is not None])
    assert np.percentile(tpot, 50) == pytest.approx(cli["tpot_p50_s"], rel=1e-12)
    occ, ts = np.array(t["occupancy"]["batch"]), np.array(t["occupancy"]["t_s"])
    assert len(ts) == len(occ) == 500 and occ.min() >= 0 and occ.max() <= 64  # a time average of passes <= max_seqs
    # sequence-seconds of all passes: the timeline's integral = mean batch (time-weighted over passes) x
    # utilisation (busy share of the makespan) x makespan, from the CLI's summary
    want = cli["mean_batch"] * cli["utilisation"] * cli["makespan_s"]
    assert np.sum(occ) * (ts[1] - ts[0]) == pytest.approx(want, rel=1e-9)


def test_simulate_trace_refuses_two_pools(client):
    if "simulate/trace" not in client.get("/api").json()["operations"]:
        pytest.skip("simulate/trace needs the request layer's SimulateRequest")
    r = client.post("/api/simulate/trace", json={"model": "llama-3-70b", "system": "dgx-h100", "requests": 20,
                                                 "policy": "disaggregated"})
    assert r.status_code == 422 and r.json()["field"] == "policy"


def test_sweep_columns_are_the_rows_transposed(client):
    body = {"model": "llama-3-70b", "system": "dgx-h100", "batch": "1:512:9", "context": "512,2048"}
    rows = client.post("/api/sweep", json=body).json()
    r = client.post("/api/sweep?layout=columns", json=body)
    assert r.status_code == 200 and "app;dur=" in r.headers["server-timing"]
    cols = r.json()
    assert list(cols) == list(rows[0]) and all(len(v) == len(rows) for v in cols.values())
    assert [dict(zip(cols, vals)) for vals in zip(*cols.values())] == rows
    bad = client.post("/api/step?layout=columns", json={"model": "llama-3-70b", "system": "dgx-h100"})
    assert bad.status_code == 422 and bad.json()["field"] == "layout"


def test_serve_on_a_taken_port_says_so_in_one_line(run_cli):
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        code, _, err = run_cli("serve", "--port", str(port))
    assert code == 1 and err.strip().count("\n") == 0
    assert f"cannot listen on 127.0.0.1:{port}" in err and "choose another --port" in err


def test_a_full_queue_answers_503_at_once(client, monkeypatch):
    from roofline.serve import app as app_module
    from roofline.serve import limits

    monkeypatch.setitem(app_module._WAITING, "fast", limits.MAX_QUEUED)
    r = client.post("/api/step", json={"model": "llama-3-70b", "system": "dgx-h100"})
    assert r.status_code == 503 and r.headers["retry-after"] == "2" and "busy" in r.json()["detail"]
    monkeypatch.setitem(app_module._WAITING, "fast", 0)
    assert client.post("/api/step", json={"model": "llama-3-70b", "system": "dgx-h100"}).status_code == 200


def test_roofline_serve_command_serves_the_page_and_api_on_localhost():
    """The real command in a child process: it says where it listens (127.0.0.1 by default), answers /api and
    the page, and stops on SIGTERM."""
    import socket
    import time

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "roofline", "serve", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        first = proc.stdout.readline()
        assert f"serving on http://127.0.0.1:{port}/" in first
        deadline, r = time.time() + 30, None
        while time.time() < deadline:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/api", timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        assert r is not None and r.status_code == 200 and "step" in r.json()["operations"]
        assert "plotly.min.js" in httpx.get(f"http://127.0.0.1:{port}/", timeout=5).text
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_sweep_binary_columns_decode_to_the_rows(client):
    """?layout=binary: a JSON header and little-endian arrays whose values are exactly the rows' numbers."""
    import json

    import numpy as np

    body = {"model": "llama-3-70b", "system": "dgx-h100", "batch": "1:512:9", "context": "512,2048"}
    rows = client.post("/api/sweep", json=body).json()
    r = client.post("/api/sweep?layout=binary", json=body)
    assert r.status_code == 200 and r.headers["content-type"] == "application/octet-stream"
    blob = r.content
    h = int.from_bytes(blob[:4], "little")
    head = json.loads(blob[4:4 + h])
    assert head["format"] == "roofline-columns-1" and head["points"] == len(rows) and (4 + h) % 8 == 0
    data = blob[4 + h:]
    cols = {}
    for c in head["columns"]:
        raw = data[c["offset"]:c["offset"] + c["bytes"]]
        v = np.frombuffer(raw, "<f8" if c["dtype"] == "float64" else "u1")
        cols[c["name"]] = ([head["categories"]["bound"][i] for i in v] if c["name"] == "bound"
                           else [bool(x) for x in v] if c["dtype"] == "bool" else v.tolist())
    assert [c["name"] for c in head["columns"]] == list(rows[0])
    assert [dict(zip(cols, vals)) for vals in zip(*cols.values())] == rows


def test_chunked_oversized_body_is_413(client):
    def chunks():
        for _ in range(40):
            yield b" " * 4096

    r = client.post("/api/step", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413 and "65,536" in r.json()["detail"]


def test_a_library_fault_is_500_with_one_line(client, monkeypatch):
    from roofline.serve import app as app_module

    def boom(*args, **kwargs):
        raise RuntimeError("first line\nsecond line")

    monkeypatch.setattr(app_module, "execute", boom)
    r = client.post("/api/step", json={"model": "llama-3-70b", "system": "dgx-h100"})
    assert r.status_code == 500 and "\n" not in r.json()["detail"]
    assert r.json()["detail"].startswith("internal error in step: RuntimeError: first line second line")
