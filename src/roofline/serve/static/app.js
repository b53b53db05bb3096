// roofline serve, the loop: read the page and its inputs from the URL hash (#/board?model=...&system=...), build
// its controls, and on every change write the inputs back to the URL (a shareable permalink), wait out a
// 120 ms debounce, ask the server, drop stale answers and redraw; slow operations show the elapsed time.
"use strict";

// ---------- the loop: controls -> URL -> debounced request -> plots ----------
let seq = 0, timer = null, specs = [], current = null;
async function show() {
  const { page, params } = readHash();
  const P = PAGES[page];
  document.title = `${P.title} — roofline`;
  for (const a of document.querySelectorAll("nav a")) a.setAttribute("aria-current", a.dataset.page === page ? "page" : "false");
  intro(P.intro); detail(""); readout([]);
  document.getElementById("plots").innerHTML = "";
  status("loading…", "busy");
  current = page;
  try {
    specs = await P.controls();
  } catch (e) {
    status(e.message, "error");
    document.body.dataset.busy = "false"; document.body.dataset.rendered = String(++seq);
    return;
  }
  if (current !== page) return;
  plots(P.plots);
  const ctx = { set(name, value) { document.getElementById("in-" + name).value = value; changed(); } };
  const changed = () => { clearTimeout(timer); timer = setTimeout(() => update(page, ctx), DEBOUNCE_MS); };
  buildControls(specs, params, changed);
  update(page, ctx);
}
async function update(page, ctx) {
  const values = readControls(specs);
  writeHash(page, values);
  const mine = ++seq, t0 = performance.now();
  const P = PAGES[page];
  document.body.dataset.busy = "true";
  status(P.slow ? "simulating… 0.0 s" : "computing…", "busy");
  const tick = P.slow ? setInterval(() => status(`simulating… ${((performance.now() - t0) / 1000).toFixed(1)} s`, "busy"), 100) : null;
  try {
    const shown = await P.render(values, ctx);
    if (mine !== seq) return;
    status(`updated in ${Math.round(performance.now() - t0)} ms`);
    window.rooflineLast = Object.assign({ page, ms: performance.now() - t0, seq: mine }, shown);
  } catch (e) {
    if (mine === seq) status(e.message, "error");
  } finally {
    if (tick) clearInterval(tick);
    if (mine === seq) { document.body.dataset.busy = "false"; document.body.dataset.rendered = String(mine); }
  }
}
window.addEventListener("hashchange", () => { if (location.hash !== written) show(); });
show();
