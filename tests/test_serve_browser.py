"""`roofline serve` in a real browser: headless Chromium (Debian's `chromium`, never a downloaded one) driven by
Playwright for Python. For every page: it loads without console errors, a control changed from the keyboard
updates the plot and the permalink, and every number in the page's readout equals the CLI's --json for the
inputs the page sent. Screenshots go to tests/artifacts/serve/ (gitignored).

Skipped, with the reason, when Playwright or a Chromium is missing, unless ROOFLINE_REQUIRE_BROWSER=1 (CI sets
it after installing `chromium`), where a missing browser fails instead. ROOFLINE_CHROMIUM names another binary.
"""

import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

ARTIFACTS = Path(__file__).parent / "artifacts" / "serve"
REQUIRED = os.environ.get("ROOFLINE_REQUIRE_BROWSER") == "1"


def _chromium() -> str | None:
    for name in (os.environ.get("ROOFLINE_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and (shutil.which(name) or Path(name).is_file()):
            return shutil.which(name) or name
    return None


def _skip(reason: str):
    if REQUIRED:
        pytest.fail(f"{reason} (ROOFLINE_REQUIRE_BROWSER=1)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def server():
    pytest.importorskip("fastapi")
    import uvicorn

    from roofline.serve import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not srv.started and time.time() < deadline:
        time.sleep(0.05)
    assert srv.started, "the test server did not start"
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _skip("browser tests skipped: playwright is not installed (pip install -e '.[dev]')")
    exe = _chromium()
    if exe is None:
        _skip("browser tests skipped: no Chromium found (apt-get install chromium, or set ROOFLINE_CHROMIUM)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, headless=True, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    pg.errors = []
    pg.on("console", lambda m: pg.errors.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
    pg.on("pageerror", lambda e: pg.errors.append(f"page error: {e}"))
    pg.outside = []  # requests to anywhere but the test server: the pages must work offline
    pg.on("request", lambda r: pg.outside.append(r.url) if not r.url.startswith(("http://127.0.0.1:", "data:")) else None)
    yield pg
    ctx.close()


def _rendered(pg, after: str = "") -> str:
    pg.wait_for_function("(a) => document.body.dataset.rendered && document.body.dataset.rendered !== a && "
                         "document.body.dataset.busy === 'false'", arg=after, timeout=240_000)  # validate computes 200+ rows once
    status = pg.inner_text("#status")
    assert not pg.eval_on_selector("#status", "e => e.classList.contains('error')"), status
    return pg.evaluate("document.body.dataset.rendered")


def _plot_data(pg) -> str:
    return pg.evaluate("JSON.stringify([...document.querySelectorAll('.plot')].map(d => [(d.data || []).map(t => [t.x, t.y, t.z]), "
                       "(d.layout || {}).shapes, (d.layout || {}).title]))")


def _lookup(d, key: str):
    for part in key.split("."):
        if isinstance(d, list):
            d = d[int(part)] if part.isdigit() else next(x for x in d if part in (x.get("group"), x.get("id"), x.get("metric")))
        else:
            d = d[part]
    return d


def _check_numbers_equal_cli(pg):
    """Every readout cell with a data-key equals the CLI's --json for the body the page sent last."""
    from roofline.serve.ops import OPERATIONS
    from serve_cli import cli_json

    last = pg.evaluate("window.rooflineLast")
    cells = pg.eval_on_selector_all("#readout td[data-key]", "tds => tds.map(t => [t.dataset.key, t.dataset.value])")
    assert cells, "the page shows no numbers"
    answers = {None: cli_json(OPERATIONS[last["op"]], last["body"])}
    for name, more in (last.get("more") or {}).items():  # a second operation on the page (key "name:path")
        answers[name] = cli_json(OPERATIONS[more["op"]], more["body"])
    for key, shown in cells:
        name, _, path = key.rpartition(":")
        want = _lookup(answers[name or None], path)
        if isinstance(want, bool) or want is None or isinstance(want, str):
            assert shown == {True: "true", False: "false", None: "null"}.get(want, want), key
        else:
            assert float(shown) == pytest.approx(want, rel=1e-12), key
    return last


# page -> how to change one control from the keyboard: (control name, key presses or option to select)
CHANGES = {
    "board": ("batch", ["ArrowRight", "ArrowRight"]),
    "moe": ("ep", ["ArrowRight"]),
    "pipeline": ("per_stage", ["ArrowLeft"]),
    "plan": ("pick", None),
    "simulate": ("rate", ["ArrowRight", "ArrowRight"]),
    "train": ("pp", "2"),
    "prices": ("kv_bytes", ["PageUp"]),
    "validate": ("metric", "decode"),
}


@pytest.mark.parametrize("name", list(CHANGES))
def test_page_loads_changes_and_matches_cli(server, page, name):
    page.goto(f"{server}/#/{name}")
    seq = _rendered(page)
    assert page.eval_on_selector_all(".plot .main-svg", "e => e.length") >= 1, "no plot drawn"
    titles = page.eval_on_selector_all(".plot .g-xtitle, .plot .g-ytitle", "e => e.map(x => x.textContent)")
    assert titles and all(t.strip() for t in titles), "every axis has a title"
    assert any("(" in t for t in titles), f"axis titles carry units: {titles}"
    _check_numbers_equal_cli(page)
    before, url_before = _plot_data(page), page.url
    control, action = CHANGES[name]
    if name == "plan":  # pick a frontier layout from the list with the keyboard
        page.focus("#detail button[data-index='3']")
        page.keyboard.press("Enter")
    elif isinstance(action, list):
        page.focus(f"#in-{control}")
        for key in action:
            page.keyboard.press(key)
    else:
        page.focus(f"#in-{control}")
        page.select_option(f"#in-{control}", action)
    _rendered(page, seq)
    assert _plot_data(page) != before, "the plot did not change"
    assert page.url != url_before and f"{control}=" in page.url, "the permalink did not follow the control"
    last = _check_numbers_equal_cli(page)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    assert page.errors == [], page.errors
    assert page.outside == [], page.outside
    if name == "plan":
        assert last["pick"] == 3


def test_permalink_restores_the_inputs(server, page):
    page.goto(f"{server}/#/board?model=llama-3-8b&system=hgx-h200&contexts=2048&bmax=10&batch=3&weights_dtype=fp8&kv_dtype=bf16")
    _rendered(page)
    assert page.input_value("#in-model") == "llama-3-8b" and page.input_value("#in-batch") == "3"
    last = _check_numbers_equal_cli(page)
    assert last["body"]["batch"] == 8 and last["body"]["system"] == "hgx-h200"
    assert page.errors == [], page.errors


def test_a_refused_input_shows_one_line_and_the_page_recovers(server, page):
    page.goto(f"{server}/#/board")
    _rendered(page)
    page.fill("#in-contexts", "1024,abc")
    page.wait_for_function("document.getElementById('status').classList.contains('error') && "
                           "document.body.dataset.busy === 'false'", timeout=30_000)
    msg = page.inner_text("#status")
    assert "context" in msg and "'1024,abc'" in msg and "\n" not in msg
    failed = page.evaluate("document.body.dataset.rendered")
    page.fill("#in-contexts", "1024")
    _rendered(page, failed)
    assert page.errors == [e for e in page.errors if "400" in e or "422" in e]  # only the refused request itself


def test_api_docs_render_offline(server, page):
    """/docs is Swagger UI from the vendored files: it lists the operations without any network but 127.0.0.1."""
    page.goto(f"{server}/docs")
    page.wait_for_selector(".opblock", timeout=30_000)
    assert page.locator(".opblock").count() >= 10
    assert page.outside == [], page.outside


def test_a_pasted_permalink_on_the_same_page_takes_effect(server, page):
    page.goto(f"{server}/#/board")
    seq = _rendered(page)
    page.evaluate("location.hash = '#/board?model=llama-3-8b&system=dgx-h100&contexts=4096&bmax=8&batch=2'")
    _rendered(page, seq)
    assert page.input_value("#in-model") == "llama-3-8b" and page.input_value("#in-contexts") == "4096"
    assert page.evaluate("window.rooflineLast.body.batch") == 4
