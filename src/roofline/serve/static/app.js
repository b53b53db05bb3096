// roofline serve: one page per chapter of the lecture. Every number comes from /api/<op>, which answers exactly
// what `roofline <op> --json` prints (SI units); this file only draws. The URL hash holds the page and its
// inputs (#/board?model=...&system=...), so a view can be shared; controls are plain form elements, usable
// from the keyboard. Requests are debounced and stale answers dropped; slow ones show elapsed time.
"use strict";

const DEBOUNCE_MS = 120;
const FONT = { family: "system-ui, sans-serif", size: 12 };
const CONFIG = { displaylogo: false, responsive: true };
const COLORS = ["#1f5fbf", "#d9480f", "#2b8a3e", "#862e9c", "#e67700", "#0b7285", "#c2255c", "#5c940d"];

// ---------- API ----------
// Answers are kept (the server's operations are deterministic), so a control that changes only part of a page's
// inputs re-renders from the answers it already has: e.g. moving the board's marker re-asks only the one step.
const answers = new Map();
async function api(op, body) {
  const key = op + " " + JSON.stringify(body || {});
  if (answers.has(key)) return answers.get(key);
  const data = await ask(op, body);
  answers.set(key, data);
  if (answers.size > 64) answers.delete(answers.keys().next().value);
  return data;
}
async function ask(op, body) {
  const res = await fetch(`/api/${op}`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body || {}),
  });
  const data = await res.json();
  if (!res.ok) throw new Error(data.detail || `${op}: HTTP ${res.status}`);
  return data;
}
const cache = {};
// The binary column layout (?layout=binary): uint32 header length, JSON header, 8-byte aligned little-endian
// arrays. Float64 columns become Float64Array views (no number is parsed); bool and category columns arrays.
function decodeColumns(buf) {
  const h = new DataView(buf).getUint32(0, true);
  const head = JSON.parse(new TextDecoder().decode(new Uint8Array(buf, 4, h)));
  const base = 4 + h, out = {};
  for (const c of head.columns) {
    if (c.dtype === "float64") { out[c.name] = new Float64Array(buf, base + c.offset, c.bytes / 8); continue; }
    const u = new Uint8Array(buf, base + c.offset, c.bytes);
    out[c.name] = c.dtype === "bool" ? Array.from(u, (x) => x === 1) : Array.from(u, (x) => head.categories[c.name][x]);
  }
  return out;
}
async function binaryColumns(op, body) {
  const key = op + "?binary " + JSON.stringify(body || {});
  if (answers.has(key)) return answers.get(key);
  const res = await fetch(`/api/${op}?layout=binary`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body || {}),
  });
  if (!res.ok) throw new Error((await res.json()).detail || `${op}: HTTP ${res.status}`);
  const cols = decodeColumns(await res.arrayBuffer());
  answers.set(key, cols);
  return cols;
}
// A sweep as rows; asked as binary columns (no JSON to parse) when the server has them.
async function sweepRows(body) {
  let cols;
  try { cols = await binaryColumns("sweep", body); } catch (e) {
    if (!/layout/.test(e.message)) throw e;  // a refused input: its message; an older server: rows
    return api("sweep", body);
  }
  const keys = Object.keys(cols), n = cols[keys[0]].length, rows = new Array(n);
  for (let i = 0; i < n; i++) { const r = {}; for (const k of keys) r[k] = cols[k][i]; rows[i] = r; }
  return rows;
}
async function catalog(what) { return cache[what] || (cache[what] = await api(`catalog/${what}`, {})); }

// ---------- formatting ----------
const SI = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
function num(x, digits = 3) {
  if (x === null || x === undefined) return "–";
  if (typeof x !== "number") return String(x);
  const a = Math.abs(x);
  for (const [f, p] of SI) if (a >= f) return (x / f).toPrecision(digits) + " " + p;
  return a !== 0 && a < 1e-3 ? x.toExponential(digits - 1) : x.toPrecision(digits);
}
function secs(s) {
  if (s === null || s === undefined) return "–";
  if (s >= 3600 * 24 * 2) return (s / 86400).toPrecision(3) + " days";
  if (s >= 3600) return (s / 3600).toPrecision(3) + " h";
  if (s >= 120) return (s / 60).toPrecision(3) + " min";
  if (s >= 1) return s.toPrecision(3) + " s";
  if (s >= 1e-3) return (s * 1e3).toPrecision(3) + " ms";
  return (s * 1e6).toPrecision(3) + " µs";
}
const bytes = (b) => (b === null || b === undefined ? "–" : num(b) + "B");
const usd = (x) => (x === null || x === undefined ? "–" : "$" + num(x));

// ---------- state in the URL ----------
function readHash() {
  const h = location.hash.replace(/^#\/?/, "");
  const [page, query] = h.split("?");
  return { page: PAGES[page] ? page : "board", params: Object.fromEntries(new URLSearchParams(query || "")) };
}
let written = "";  // the hash this page last wrote: any other change (a pasted permalink, Back) reloads the page
function writeHash(page, values) {
  const q = new URLSearchParams(values).toString();
  history.replaceState(null, "", `#/${page}?${q}`);
  written = location.hash;
}

// ---------- controls ----------
// spec: {name, label, type: select|number|text|range|check, options, value, min, max, step, show}
function buildControls(specs, params, onChange) {
  const form = document.getElementById("controls");
  form.innerHTML = "";
  for (const s of specs) {
    const label = document.createElement("label");
    const id = "in-" + s.name;
    label.htmlFor = id;
    let el;
    if (s.type === "select") {
      el = document.createElement("select");
      for (const o of s.options) {
        const opt = document.createElement("option");
        const [v, t] = Array.isArray(o) ? o : [o, o];
        opt.value = v; opt.textContent = t;
        el.appendChild(opt);
      }
    } else {
      el = document.createElement("input");
      el.type = s.type === "check" ? "checkbox" : s.type;
      for (const k of ["min", "max", "step"]) if (s[k] !== undefined) el[k] = s[k];
    }
    el.id = id; el.name = s.name;
    const v = params[s.name] !== undefined ? params[s.name] : String(s.value);
    if (s.type === "check") el.checked = v === "true"; else el.value = v;
    if (s.type === "select" && el.value !== v) el.value = String(s.value);  // a stale permalink value
    const text = document.createElement("span");
    text.textContent = s.label;
    if (s.type === "check") { label.className = "check"; label.append(el, text); } else label.append(text, el);
    if (s.type === "range") {
      const out = document.createElement("output");
      out.htmlFor = id; out.id = "out-" + s.name;
      const show = () => { out.textContent = s.show ? s.show(Number(el.value)) : el.value; };
      show();
      el.addEventListener("input", show);
      text.append(" ", out);
    }
    el.addEventListener(s.type === "range" || s.type === "text" || s.type === "number" ? "input" : "change", onChange);
    form.appendChild(label);
  }
}
function readControls(specs) {
  const out = {};
  for (const s of specs) {
    const el = document.getElementById("in-" + s.name);
    out[s.name] = s.type === "check" ? String(el.checked) : el.value;
  }
  return out;
}

// ---------- output helpers ----------
function status(text, kind) {
  const el = document.getElementById("status");
  el.textContent = text; el.className = kind || "";
}
function plots(ids) {
  const box = document.getElementById("plots");
  box.innerHTML = "";
  for (const id of ids) {
    const d = document.createElement("div");
    d.id = id; d.className = "plot"; d.setAttribute("role", "img");
    box.appendChild(d);
  }
}
function draw(id, traces, layout) {
  const el = document.getElementById(id);
  el.setAttribute("aria-label", layout.title ? layout.title.text || layout.title : id);
  Plotly.react(el, traces, Object.assign({ font: FONT, margin: { l: 70, r: 20, t: 40, b: 55 },
                                           legend: { orientation: "h", y: -0.22 } }, layout), CONFIG);
  el.dataset.points = String(traces.reduce((n, t) => n + ((t.x || t.z || []).length || 0), 0));
}
// SI exponent letters on every axis (G = 1e9, not Plotly's default "B" for billion, which reads as bytes)
const ax = (title, type) => Object.assign({ title: { text: title }, zeroline: false, exponentformat: "SI", automargin: true }, type ? { type } : {});
// rows: [label, value, formatted, key] -> the readout table; data-key/data-value hold the raw API number
function readout(rows) {
  const body = document.querySelector("#readout tbody");
  body.innerHTML = "";
  for (const [label, value, text, key] of rows) {
    const tr = document.createElement("tr");
    const th = document.createElement("th"); th.textContent = label;
    const td = document.createElement("td"); td.className = "num"; td.textContent = text;
    if (key) td.dataset.key = key;
    td.dataset.value = value === null || value === undefined ? "null" : String(value);
    tr.append(th, td); body.appendChild(tr);
  }
}
function intro(html) { document.getElementById("intro").innerHTML = html; }
function detail(html) { document.getElementById("detail").innerHTML = html || ""; }
const pow2 = (k) => Math.round(Math.pow(2, k));
const csv = (s) => String(s).split(",").map((x) => x.trim()).filter(Boolean);

async function modelOptions(filter) {
  const ms = await catalog("models");
  return ms.filter(filter || (() => true)).map((m) => [m.id, m.id]);
}
async function systemOptions() { return (await catalog("systems")).map((s) => [s.id, `${s.id} (${s.chips} × ${s.accelerator})`]); }
const DTYPES = ["bf16", "fp8", "fp4"];

// ---------- pages ----------
const PAGES = {};

PAGES.board = {
  title: "Roofline board",
  intro: "One pass of a model on a scale-up domain: the compute time against the weight and KV reads, as the " +
    "batch grows. Below the critical batch B* the pass is memory-bound and every extra sequence is nearly free; " +
    "above it the pass is compute-bound. The dotted line is the latency floor W/BW; shading marks compute-bound batches.",
  async controls() {
    return [
      { name: "model", label: "model", type: "select", options: await modelOptions(), value: "llama-3.1-70b" },
      { name: "system", label: "system", type: "select", options: await systemOptions(), value: "dgx-h100" },
      { name: "contexts", label: "contexts (tokens, comma list)", type: "text", value: "1024,8192,32768" },
      { name: "bmax", label: "largest batch", type: "range", min: 4, max: 14, step: 1, value: 12, show: (k) => pow2(k) },
      { name: "batch", label: "batch at the marker", type: "range", min: 0, max: 14, step: 1, value: 6, show: (k) => pow2(k) },
      { name: "weights_dtype", label: "weights", type: "select", options: DTYPES, value: "bf16" },
      { name: "kv_dtype", label: "KV cache", type: "select", options: DTYPES, value: "bf16" },
    ];
  },
  async render(v) {
    const contexts = csv(v.contexts);
    const common = { model: v.model, system: v.system, weights_dtype: v.weights_dtype, kv_dtype: v.kv_dtype };
    const bmax = pow2(v.bmax), b = Math.min(pow2(v.batch), bmax);
    const [rows, st] = await Promise.all([
      sweepRows({ ...common, batch: `1:${bmax}:64`, context: contexts.join(",") }),
      api("step", { ...common, batch: b, context: Number(contexts[0]) }),
    ]);
    const first = rows.filter((r) => r.context === Number(contexts[0]));
    const x = first.map((r) => r.batch);
    const traces = [
      { x, y: first.map((r) => r.weight_read_s), name: "weight read", stackgroup: "mem", line: { color: "#9bb7e6" } },
      { x, y: first.map((r) => r.kv_read_s), name: `KV read (context ${contexts[0]})`, stackgroup: "mem", line: { color: "#e6a98f" } },
      { x, y: first.map((r) => r.compute_s), name: "compute", line: { color: "#2b8a3e", width: 2 } },
    ];
    contexts.forEach((c, i) => {
      const rs = rows.filter((r) => r.context === Number(c));
      traces.push({ x: rs.map((r) => r.batch), y: rs.map((r) => r.step_s), name: `step, context ${c}`,
                    line: { color: COLORS[i % COLORS.length], width: 2.5, dash: i ? "dash" : "solid" } });
    });
    const shapes = [];
    let start = null;  // shade the compute-bound batches of the first context
    first.forEach((r, i) => {
      const cb = r.bound === "compute";
      if (cb && start === null) start = r.batch;
      if (start !== null && (!cb || i === first.length - 1)) {
        shapes.push({ type: "rect", xref: "x", yref: "paper", x0: start, x1: cb ? r.batch : first[i - 1].batch, y0: 0, y1: 1,
                      fillcolor: "rgba(43,138,62,0.08)", line: { width: 0 } });
        start = null;
      }
    });
    const bstar = st.critical_batch_with_kv || st.critical_batch;
    shapes.push({ type: "line", xref: "x", yref: "paper", x0: bstar, x1: bstar, y0: 0, y1: 1, line: { color: "#862e9c", dash: "dot" } });
    shapes.push({ type: "line", xref: "paper", yref: "y", x0: 0, x1: 1, y0: st.latency_floor_s, y1: st.latency_floor_s, line: { color: "#555", dash: "dot" } });
    shapes.push({ type: "line", xref: "x", yref: "paper", x0: b, x1: b, y0: 0, y1: 1, line: { color: "#f0a500", width: 2 } });
    draw("p-time", traces, { title: { text: `time per pass — ${v.model} on ${v.system}` },
      xaxis: ax("batch B (sequences)", "log"), yaxis: ax("time per pass (s)", "log"), shapes,
      annotations: [{ x: Math.log10(bstar), y: 1, xref: "x", yref: "paper", text: `B* ≈ ${num(bstar)}`, showarrow: false, yanchor: "bottom" },
                    { x: 0, y: Math.log10(st.latency_floor_s), xref: "paper", yref: "y", text: `floor ${secs(st.latency_floor_s)}`, showarrow: false, xanchor: "left", yanchor: "bottom" }] });
    draw("p-cost", contexts.map((c, i) => {
      const rs = rows.filter((r) => r.context === Number(c) && r.fits);
      return { x: rs.map((r) => r.batch), y: rs.map((r) => r.usd_per_million_tokens), name: `context ${c}`, line: { color: COLORS[i % COLORS.length] } };
    }), { title: { text: "cost per token (points that fit in memory)" }, xaxis: ax("batch B (sequences)", "log"),
          yaxis: ax("cost (USD per million output tokens)", "log"),
          shapes: [{ type: "line", xref: "x", yref: "paper", x0: b, x1: b, y0: 0, y1: 1, line: { color: "#f0a500", width: 2 } }] });
    // the lecture's closed-form board from the same inputs, walked to the engine one switch at a time
    const boardBody = { ...common, batch: b, context: Number(contexts[0]) };
    let walk = null;
    try { walk = await api("board", boardBody); } catch (e) { walk = null; }
    if (walk) {
      const steps = walk.walk;
      draw("p-walk", [
        { type: "bar", x: steps.map((w) => w.step), y: steps.map((w) => w.compute_s), name: "compute" },
        { type: "bar", x: steps.map((w) => w.step), y: steps.map((w) => w.weight_read_s), name: "weight read" },
        { type: "bar", x: steps.map((w) => w.step), y: steps.map((w) => w.kv_read_s), name: "KV read" },
        { x: steps.map((w) => w.step), y: steps.map((w) => w.step_s), name: "step", mode: "lines+markers",
          text: steps.map((w) => w.reason), hovertemplate: "%{x}: %{y:.3s}s<br>%{text}<extra></extra>", line: { color: "#000" } },
      ], { barmode: "group", title: { text: `the lecture's board → the engine at B=${b}, context ${contexts[0]}` },
           xaxis: ax("switch from the board's closed form toward the engine"), yaxis: ax("time per pass (s)") });
    } else {
      document.getElementById("p-walk").textContent = "this server has no `board` operation";
    }
    readout([
      ["batch at the marker", b, String(b), "batch"],
      ["context (first)", st.context, num(st.context), "context"],
      ["step time", st.step_s, secs(st.step_s), "step_s"],
      ["bound", st.bound, st.bound, "bound"],
      ["cost, USD per million tokens", st.usd_per_million_tokens, usd(st.usd_per_million_tokens), "usd_per_million_tokens"],
      ["tokens/s per sequence", st.tokens_per_s_per_sequence, num(st.tokens_per_s_per_sequence), "tokens_per_s_per_sequence"],
      ["critical batch B* (KV ignored)", st.critical_batch, num(st.critical_batch), "critical_batch"],
      ["critical batch at this context", st.critical_batch_with_kv, num(st.critical_batch_with_kv), "critical_batch_with_kv"],
      ["latency floor W/BW", st.latency_floor_s, secs(st.latency_floor_s), "latency_floor_s"],
      ["memory per GPU", st.memory_per_gpu_bytes, bytes(st.memory_per_gpu_bytes), "memory_per_gpu_bytes"],
      ["sweep points drawn", rows.length, String(rows.length), null],
      ...(walk ? [["board: critical batch R·s", walk.board.critical_batch, num(walk.board.critical_batch), "board:board.critical_batch"],
                  ["board: step time (closed form)", walk.board.step_s, secs(walk.board.step_s), "board:board.step_s"],
                  ["board: latency floor", walk.board.latency_floor_s, secs(walk.board.latency_floor_s), "board:board.latency_floor_s"]] : []),
    ]);
    return { op: "step", body: { ...common, batch: b, context: Number(contexts[0]) },
             more: walk ? { board: { op: "board", body: boardBody } } : {} };
  },
  plots: ["p-time", "p-cost", "p-walk"],
};

PAGES.moe = {
  title: "MoE on racks",
  intro: "Experts spread over expert-parallel GPUs (EP = TP × DP here, one replica). The map shows which experts " +
    "each GPU holds, rack by rack; the curve shows the all-to-all (dispatch + combine) time of one decode step as EP " +
    "grows and the experts spill over more racks, where the traffic crosses the slower scale-out network.",
  async controls() {
    return [
      { name: "model", label: "MoE model", type: "select", options: await modelOptions((m) => m.experts > 0), value: "deepseek-v3" },
      { name: "system", label: "system", type: "select", options: await systemOptions(), value: "gb200-nvl72" },
      { name: "ep", label: "EP degree", type: "range", min: 3, max: 9, step: 1, value: 6, show: (k) => pow2(k) },
      { name: "tp", label: "TP", type: "select", options: ["1", "2", "4", "8"], value: "1" },
      { name: "batch", label: "batch", type: "range", min: 4, max: 13, step: 1, value: 9, show: (k) => pow2(k) },
      { name: "context", label: "context", type: "number", min: 0, step: 1024, value: 4096 },
    ];
  },
  async render(v) {
    const model = (await catalog("models")).find((m) => m.id === v.model);
    const system = (await catalog("systems")).find((s) => s.id === v.system);
    const tp = Number(v.tp), batch = pow2(v.batch), context = Number(v.context);
    const eps = []; for (let k = 3; k <= 9; k++) if (pow2(k) <= model.experts && pow2(k) >= tp) eps.push(pow2(k));
    const ep = Math.min(Math.max(pow2(v.ep), tp), model.experts);
    const body = (e) => ({ model: v.model, system: v.system, batch, context, tp, ep: e, dp: e / tp,
                           domains: Math.ceil(e / system.chips) });
    const answers = await Promise.all(eps.map((e) => api("step", body(e)).catch((err) => ({ error: err.message }))));
    const ok = answers.map((a, i) => [eps[i], a]).filter(([, a]) => !a.error);
    const cur = answers[eps.indexOf(ep)] || (await api("step", body(ep)));
    if (cur.error) throw new Error(cur.error);
    draw("p-a2a", [
      { x: ok.map(([e]) => e), y: ok.map(([, a]) => a.ep_comm_s), name: "all-to-all (EP) per step", mode: "lines+markers" },
      { x: ok.map(([e]) => e), y: ok.map(([, a]) => a.step_s), name: "whole step", mode: "lines+markers", line: { dash: "dash" } },
      { x: [ep], y: [cur.ep_comm_s], name: "this layout", mode: "markers", marker: { size: 14, color: "#f0a500" } },
    ], { title: { text: `all-to-all time vs EP — ${v.model}, batch ${batch}` }, xaxis: ax("EP degree (GPUs holding experts)", "log"),
         yaxis: ax("time per decode step (s)", "log") });
    const doms = Math.ceil(ep / system.chips), per = model.experts / ep;
    const z = [], text = [];
    for (let d = 0; d < doms; d++) {
      const zr = [], tr = [];
      for (let g = 0; g < system.chips; g++) {
        const rank = d * system.chips + g;
        if (rank < ep) { zr.push(rank * per); tr.push(`rack ${d + 1}, GPU ${g}: experts ${rank * per}–${(rank + 1) * per - 1}`); }
        else { zr.push(null); tr.push(`rack ${d + 1}, GPU ${g}: idle`); }
      }
      z.push(zr); text.push(tr);
    }
    draw("p-map", [{ type: "heatmap", z, text, hoverinfo: "text", colorscale: "Viridis", xgap: 2, ygap: 2,
                     colorbar: { title: { text: "first expert id" } } }],
         { title: { text: `expert placement: ${model.experts} experts on EP ${ep} (${per} per GPU), ${doms} rack(s)` },
           plot_bgcolor: "#e9ecef", xaxis: ax(`GPU within the rack (0–${system.chips - 1}; grey: idle)`), yaxis: Object.assign(ax("rack (scale-up domain)"), { tickvals: z.map((_, i) => i), ticktext: z.map((_, i) => String(i + 1)) }) });
    readout([
      ["EP / TP / DP", ep, `${ep} / ${tp} / ${ep / tp}`, "ep"],
      ["racks (domains)", cur.domains, String(cur.domains), "domains"],
      ["all-to-all per step", cur.ep_comm_s, secs(cur.ep_comm_s), "ep_comm_s"],
      ["TP all-reduce per step", cur.tp_comm_s, secs(cur.tp_comm_s), "tp_comm_s"],
      ["step time", cur.step_s, secs(cur.step_s), "step_s"],
      ["weights per GPU", cur.weights_per_gpu_bytes, bytes(cur.weights_per_gpu_bytes), "weights_per_gpu_bytes"],
      ["tokens/s per GPU", cur.tokens_per_s_per_gpu, num(cur.tokens_per_s_per_gpu), "tokens_per_s_per_gpu"],
    ]);
    return { op: "step", body: body(ep) };
  },
  plots: ["p-a2a", "p-map"],
};

PAGES.pipeline = {
  title: "Pipelining",
  intro: "Pipeline stages split the layers: weights per GPU fall as 1/PP. To keep every stage busy the batch in " +
    "flight grows with PP, so the KV cache per GPU does not fall — the cancellation. Each stage boundary adds a " +
    "hop (its send time is the PP communication).",
  async controls() {
    return [
      { name: "model", label: "model", type: "select", options: await modelOptions(), value: "llama-3.1-405b" },
      { name: "system", label: "system", type: "select", options: await systemOptions(), value: "gb200-nvl72" },
      { name: "tp", label: "TP per stage", type: "select", options: ["1", "2", "4", "8"], value: "8" },
      { name: "per_stage", label: "sequences per stage", type: "range", min: 0, max: 8, step: 1, value: 4, show: (k) => pow2(k) },
      { name: "context", label: "context", type: "number", min: 0, step: 1024, value: 8192 },
      { name: "weights_dtype", label: "weights", type: "select", options: DTYPES, value: "fp8" },
    ];
  },
  async render(v) {
    const system = (await catalog("systems")).find((s) => s.id === v.system);
    const tp = Number(v.tp), per = pow2(v.per_stage), context = Number(v.context);
    const pps = [1, 2, 4, 8, 16].filter((p) => p * tp <= 8 * system.chips);
    const body = (p) => ({ model: v.model, system: v.system, tp, pp: p, batch: per * p, context,
                           weights_dtype: v.weights_dtype, domains: Math.ceil((p * tp) / system.chips) });
    const answers = await Promise.all(pps.map((p) => api("step", body(p)).catch((e) => ({ error: e.message }))));
    const ok = answers.map((a, i) => [pps[i], a]).filter(([, a]) => !a.error);
    if (!ok.length) throw new Error(answers[0].error);
    const x = ok.map(([p]) => String(p));
    draw("p-mem", [
      { type: "bar", x, y: ok.map(([, a]) => a.weights_per_gpu_bytes), name: "weights per GPU" },
      { type: "bar", x, y: ok.map(([, a]) => a.kv_per_gpu_bytes), name: "KV cache per GPU" },
    ], { barmode: "stack", title: { text: `memory per GPU as stages grow (batch = ${per} × PP)` },
         xaxis: Object.assign(ax("pipeline stages PP"), { type: "category" }), yaxis: ax("memory per GPU (bytes)") });
    draw("p-hop", [
      { x, y: ok.map(([, a]) => a.pp_comm_s), name: "PP sends per step", mode: "lines+markers" },
      { x, y: ok.map(([, a]) => a.step_s), name: "whole step", mode: "lines+markers", line: { dash: "dash" } },
    ], { title: { text: "stage-to-stage time per decode step" }, xaxis: Object.assign(ax("pipeline stages PP"), { type: "category" }),
         yaxis: ax("time per step (s)", "log") });
    const [p0, a0] = ok[ok.length - 1];
    readout([
      ["largest PP shown", p0, String(p0), "pp"],
      ["weights per GPU", a0.weights_per_gpu_bytes, bytes(a0.weights_per_gpu_bytes), "weights_per_gpu_bytes"],
      ["KV per GPU", a0.kv_per_gpu_bytes, bytes(a0.kv_per_gpu_bytes), "kv_per_gpu_bytes"],
      ["PP sends per step", a0.pp_comm_s, secs(a0.pp_comm_s), "pp_comm_s"],
      ["step time", a0.step_s, secs(a0.step_s), "step_s"],
      ["fits in HBM", a0.fits, String(a0.fits), "fits"],
    ]);
    return { op: "step", body: body(p0) };
  },
  plots: ["p-mem", "p-hop"],
};

PAGES.plan = {
  title: "Plan",
  intro: "Every TP/EP/PP/DP layout, batch and format the planner finds feasible; the Pareto frontier of tokens/s " +
    "per GPU (cost) against tokens/s per user (speed). Hover a point for its layout; click it, or pick it from the " +
    "list below with the keyboard, to see its time and memory breakdown.",
  async controls() {
    return [
      { name: "model", label: "model", type: "select", options: await modelOptions(), value: "llama-3.1-70b" },
      { name: "system", label: "system", type: "select", options: await systemOptions(), value: "dgx-h100" },
      { name: "domains", label: "domains (N or A-B)", type: "text", value: "1-2" },
      { name: "prompt", label: "prompt tokens", type: "number", min: 1, value: 1024 },
      { name: "output", label: "output tokens", type: "number", min: 1, value: 1024 },
      { name: "tpot_ms", label: "TPOT target (ms, empty = none)", type: "text", value: "" },
      { name: "pick", label: "selected layout (index)", type: "number", min: 0, value: 0 },
    ];
  },
  async render(v, ctx) {
    const body = { model: v.model, system: v.system, domains: v.domains, prompt: Number(v.prompt), output: Number(v.output) };
    if (v.tpot_ms.trim()) body.tpot_ms = Number(v.tpot_ms);
    const p = await api("plan", body);
    const rows = p.layouts;
    if (!rows.length) throw new Error(`no feasible layout: ${JSON.stringify(p.counts)}`);
    const pick = Math.min(Number(v.pick) || 0, rows.length - 1);
    const label = (r) => `TP${r.tp} EP${r.ep} PP${r.pp} DP${r.dp}, B=${r.batch}, ${r.weights_dtype}/${r.kv_dtype}, ${r.domains} dom.`;
    draw("p-front", [
      { x: rows.map((r) => r.tokens_per_s_per_user), y: rows.map((r) => r.tokens_per_s_per_gpu), mode: "lines+markers",
        text: rows.map(label), hovertemplate: "%{text}<br>%{x:.3s} tok/s/user, %{y:.3s} tok/s/GPU<extra></extra>", name: "Pareto frontier" },
      { x: [rows[pick].tokens_per_s_per_user], y: [rows[pick].tokens_per_s_per_gpu], mode: "markers", name: "selected",
        marker: { size: 15, color: "#f0a500" }, hoverinfo: "skip" },
    ], { title: { text: `${v.model} on ${v.domains} × ${v.system}: ${p.counts.feasible} feasible of ${p.counts.candidates}` },
         xaxis: ax("speed per user (output tokens/s per user)", "log"), yaxis: ax("throughput (output tokens/s per GPU)", "log") });
    const el = document.getElementById("p-front");
    el.removeAllListeners && el.removeAllListeners("plotly_click");
    el.on("plotly_click", (e) => { if (e.points[0].curveNumber === 0) ctx.set("pick", e.points[0].pointIndex); });
    const list = rows.map((r, i) => `<button type="button" data-index="${i}" aria-pressed="${i === pick}">${label(r)}</button>`).join("");
    detail(`<h3>Frontier layouts (click or Enter to select)</h3><div class="choices">${list}</div>`);
    for (const b of document.querySelectorAll("#detail button")) b.addEventListener("click", () => ctx.set("pick", b.dataset.index));
    const r = rows[pick];
    const context = Number(v.prompt) + Math.floor(Number(v.output) / 2);
    const stepBody = { model: v.model, system: v.system, batch: r.batch, context, tp: r.tp, ep: r.ep, pp: r.pp,
                       dp: r.dp, domains: r.domains, weights_dtype: r.weights_dtype, kv_dtype: r.kv_dtype };
    const st = await api("step", stepBody);
    const terms = ["compute_s", "weight_read_s", "kv_read_s", "kv_write_s", "tp_comm_s", "ep_comm_s", "pp_comm_s"];
    draw("p-break", [
      { type: "bar", x: terms.map((k) => k.replace(/_s$/, "").replace(/_/g, " ")), y: terms.map((k) => st[k]), name: "time terms", xaxis: "x", yaxis: "y" },
      { type: "bar", x: ["weights", "KV", "activations"], y: [st.weights_per_gpu_bytes, st.kv_per_gpu_bytes, st.activations_per_gpu_bytes],
        name: "memory per GPU", xaxis: "x2", yaxis: "y2", marker: { color: "#d9480f" } },
    ], { title: { text: `selected: ${label(r)}` }, grid: { rows: 1, columns: 2, pattern: "independent" }, showlegend: false,
         yaxis: ax("time per decode step (s)"), yaxis2: ax("memory per GPU (bytes)"), xaxis: ax("time term"), xaxis2: ax("memory part") });
    readout([
      ["layouts on the frontier", p.counts.pareto, String(p.counts.pareto), "counts.pareto"],
      ["selected tokens/s per GPU", r.tokens_per_s_per_gpu, num(r.tokens_per_s_per_gpu), `layouts.${pick}.tokens_per_s_per_gpu`],
      ["selected tokens/s per user", r.tokens_per_s_per_user, num(r.tokens_per_s_per_user), `layouts.${pick}.tokens_per_s_per_user`],
      ["selected TPOT", r.tpot_s, secs(r.tpot_s), `layouts.${pick}.tpot_s`],
      ["selected cost, USD per million tokens", r.usd_per_million_tokens, usd(r.usd_per_million_tokens), `layouts.${pick}.usd_per_million_tokens`],
      ["step at mid-output context", st.step_s, secs(st.step_s), "st:step_s"],
      ["memory per GPU", st.memory_per_gpu_bytes, bytes(st.memory_per_gpu_bytes), "st:memory_per_gpu_bytes"],
    ]);
    return { op: "plan", body, pick, more: { st: { op: "step", body: stepBody } } };
  },
  plots: ["p-front", "p-break"],
};

PAGES.simulate = {
  title: "Simulate",
  intro: "The discrete-event serving simulator, run twice on the same seeded workload: train departures (a batch " +
    "leaves every interval) against continuous batching. Bars compare latency percentiles; the curves are each run's " +
    "TTFT and TPOT distributions over every request and its batch occupancy over time. Simulations take a moment: " +
    "the page shows the elapsed time and stays usable.",
  async controls() {
    return [
      { name: "model", label: "model", type: "select", options: await modelOptions(), value: "llama-3.1-70b" },
      { name: "system", label: "system", type: "select", options: await systemOptions(), value: "dgx-h100" },
      { name: "rate", label: "arrival rate (requests/s)", type: "range", min: 1, max: 60, step: 1, value: 10 },
      { name: "requests", label: "requests", type: "number", min: 10, max: 20000, step: 100, value: 500 },
      { name: "interval_s", label: "train interval (s)", type: "number", min: 0.005, step: 0.005, value: 0.02 },
      { name: "max_seqs", label: "max sequences per pass", type: "number", min: 1, value: 256 },
    ];
  },
  async render(v) {
    const base = { model: v.model, system: v.system, rate: Number(v.rate), requests: Number(v.requests),
                   max_seqs: Number(v.max_seqs), seed: 0 };
    const bodies = { train: { ...base, policy: "train", interval_s: Number(v.interval_s) }, continuous: { ...base, policy: "continuous" } };
    const [train, cont] = await Promise.all([api("simulate", bodies.train), api("simulate", bodies.continuous)]);
    const keys = ["ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_p50_s", "e2e_p99_s"];
    const names = keys.map((k) => k.replace(/_s$/, "").replace("_", " "));
    draw("p-lat", [
      { type: "bar", x: names, y: keys.map((k) => train[k]), name: "train departures" },
      { type: "bar", x: names, y: keys.map((k) => cont[k]), name: "continuous batching" },
    ], { barmode: "group", title: { text: `latency, ${v.requests} requests at ${v.rate}/s` }, xaxis: ax("metric (percentile)"), yaxis: ax("latency (s)", "log") });
    let traces = null;
    try {
      traces = await Promise.all([api("simulate/trace", bodies.train), api("simulate/trace", bodies.continuous)]);
    } catch (e) { traces = null; }  // a server without the trace operation: percentiles only
    if (traces) {
      const cdf = (xs) => { const s = xs.filter((x) => x !== null).sort((a, b) => a - b); return { x: s, y: s.map((_, i) => (i + 1) / s.length) }; };
      const [tt, tc] = traces;
      draw("p-dist", [
        { ...cdf(tt.ttft_s), name: "TTFT, train", line: { color: COLORS[0] } },
        { ...cdf(tc.ttft_s), name: "TTFT, continuous", line: { color: COLORS[1] } },
        { ...cdf(tt.tpot_s), name: "TPOT, train", line: { color: COLORS[0], dash: "dash" } },
        { ...cdf(tc.tpot_s), name: "TPOT, continuous", line: { color: COLORS[1], dash: "dash" } },
      ], { title: { text: `TTFT and TPOT of every request (${tc.requests} requests)` }, xaxis: ax("latency (s)", "log"),
           yaxis: ax("share of requests at or below (fraction)") });
      draw("p-occ", [
        { x: tt.occupancy.t_s, y: tt.occupancy.batch, name: "train departures", line: { shape: "hv", color: COLORS[0], width: 1 } },
        { x: tc.occupancy.t_s, y: tc.occupancy.batch, name: "continuous batching", line: { shape: "hv", color: COLORS[1], width: 1 } },
      ], { title: { text: "batch occupancy over the run" }, xaxis: ax("time since the first arrival (s)"), yaxis: ax("sequences in the pass (count)") });
    } else {
      const q = ["mean", "p50", "p90", "p99"];
      const dist = (s, m) => q.map((p) => s[`${m}_${p}_s`]);
      draw("p-dist", [
        { x: q, y: dist(train, "ttft"), name: "TTFT, train", mode: "lines+markers" },
        { x: q, y: dist(cont, "ttft"), name: "TTFT, continuous", mode: "lines+markers" },
        { x: q, y: dist(train, "tpot"), name: "TPOT, train", mode: "lines+markers", line: { dash: "dash" } },
        { x: q, y: dist(cont, "tpot"), name: "TPOT, continuous", mode: "lines+markers", line: { dash: "dash" } },
      ], { title: { text: "TTFT and TPOT distributions (statistic of the run)" }, xaxis: Object.assign(ax("statistic"), { type: "category" }),
           yaxis: ax("latency (s)", "log") });
    }
    readout([
      ["TTFT p50, continuous", cont.ttft_p50_s, secs(cont.ttft_p50_s), "ttft_p50_s"],
      ["TPOT p50, continuous", cont.tpot_p50_s, secs(cont.tpot_p50_s), "tpot_p50_s"],
      ["throughput, continuous (tokens/s)", cont.throughput_tokens_per_s, num(cont.throughput_tokens_per_s), "throughput_tokens_per_s"],
      ["mean batch, continuous", cont.mean_batch, num(cont.mean_batch), "mean_batch"],
      ["TTFT p50, train", train.ttft_p50_s, secs(train.ttft_p50_s), "tr:ttft_p50_s"],
      ["throughput, train (tokens/s)", train.throughput_tokens_per_s, num(train.throughput_tokens_per_s), "tr:throughput_tokens_per_s"],
      ["cost, continuous (USD/M tokens)", cont.usd_per_million_tokens, usd(cont.usd_per_million_tokens), "usd_per_million_tokens"],
    ]);
    return { op: "simulate", body: bodies.continuous, more: { tr: { op: "simulate", body: bodies.train } } };
  },
  plots: ["p-lat", "p-dist", "p-occ"],
  slow: true,
};

PAGES.train = {
  title: "Training and over-training",
  intro: "Left: one training step of a TP/PP/DP layout, term by term, and the memory per GPU for each " +
    "recomputation mode. Right: how over-trained a model should be once its serving traffic is counted (lecture §4).",
  async controls() {
    return [
      { name: "model", label: "model", type: "select", options: await modelOptions(), value: "llama-3.1-70b" },
      { name: "system", label: "system", type: "select", options: await systemOptions(), value: "dgx-h100" },
      { name: "tp", label: "TP", type: "select", options: ["1", "2", "4", "8"], value: "8" },
      { name: "pp", label: "PP", type: "select", options: ["1", "2", "4", "8", "16"], value: "4" },
      { name: "dp", label: "DP", type: "select", options: ["1", "2", "4", "8", "16", "32", "64"], value: "32" },
      { name: "recompute", label: "recompute", type: "select", options: ["none", "selective", "full"], value: "selective" },
      { name: "traffic", label: "serving traffic (tokens/s, log10)", type: "range", min: 5, max: 9, step: 0.5, value: 7.5, show: (k) => num(Math.pow(10, k)) },
    ];
  },
  async render(v) {
    const tb = { model: v.model, system: v.system, tp: Number(v.tp), pp: Number(v.pp), dp: Number(v.dp), recompute: v.recompute,
                 global_batch: 1024 };
    const model = (await catalog("models")).find((m) => m.id === v.model);
    const traffic = Math.pow(10, Number(v.traffic));
    const days = [15, 30, 60, 120, 240, 480];
    const [t, ...ots] = await Promise.all([api("train", tb),
      ...days.map((d) => api("overtrain", { params: model.params_active, traffic, lifetime_days: d }))]);
    const terms = ["compute_s", "elementwise_s", "tp_comm_s", "ep_comm_s", "bubble_s", "pp_comm_s", "dp_comm_s", "optimizer_s"];
    draw("p-step", [
      { type: "bar", x: terms.map((k) => k.replace(/_s$/, "").replace(/_/g, " ")), y: terms.map((k) => t[k]), name: "step terms" },
      { type: "bar", x: Object.keys(t.memory_by_recompute), y: Object.values(t.memory_by_recompute), name: "memory per GPU",
        xaxis: "x2", yaxis: "y2", marker: { color: "#d9480f" } },
    ], { title: { text: `training step: TP${v.tp} PP${v.pp} DP${v.dp}, ${t.gpus} GPUs` }, grid: { rows: 1, columns: 2, pattern: "independent" }, showlegend: false,
         xaxis: ax("term"), yaxis: ax("time per step (s)"), xaxis2: ax("recomputation mode"), yaxis2: ax("memory per GPU (bytes)") });
    draw("p-over", [{ x: days, y: ots.map((o) => o.overtraining), mode: "lines+markers", name: "D_pre / 20N" }],
         { title: { text: `over-training of ${v.model} (${num(model.params_active)} active) at ${num(traffic)} tokens/s` },
           xaxis: ax("serving lifetime (days)", "log"), yaxis: ax("over-training factor D_pre / 20N (×)", "log") });
    const o = ots[2];
    readout([
      ["step time", t.step_s, secs(t.step_s), "step_s"],
      ["MFU", t.mfu, (100 * t.mfu).toFixed(1) + " %", "mfu"],
      ["tokens/s", t.tokens_per_s, num(t.tokens_per_s), "tokens_per_s"],
      ["pipeline bubble", t.bubble_fraction, (100 * t.bubble_fraction).toFixed(1) + " %", "bubble_fraction"],
      ["time to train on 1e12 tokens", t.time_to_train_s, secs(t.time_to_train_s), "time_to_train_s"],
      ["over-training at 60 days", o.overtraining, num(o.overtraining) + "×", "ot:overtraining"],
    ]);
    return { op: "train", body: tb,
             more: { ot: { op: "overtrain", body: { params: model.params_active, traffic, lifetime_days: 60 } } } };
  },
  plots: ["p-step", "p-over"],
};

PAGES.prices = {
  title: "Prices and memory tiers",
  intro: "Keeping one token's KV cache in a memory tier costs a retrieval plus rent for every second held; " +
    "recomputing it (rematerialisation) costs a prefill. The cheapest option changes with the hold time (lecture §5.4). " +
    "Lines are retrieve + T × hold from the API's per-tier coefficients; dots are the API's own priced hold times.",
  async controls() {
    return [
      { name: "kv_bytes", label: "KV bytes per token", type: "range", min: 256, max: 327680, step: 256, value: 2048, show: (x) => bytes(x) },
      { name: "remat_accelerator", label: "remat accelerator", type: "select", options: (await catalog("accelerators")).map((a) => a.id), value: "h100-sxm" },
    ];
  },
  async render(v) {
    const holds = [0.02, 1, 60, 300, 3600, 86400];
    const body = { kv_bytes: Number(v.kv_bytes), remat_accelerator: v.remat_accelerator, hold: holds };
    const [t, pr] = await Promise.all([api("tiers", body), api("prices/show", {})]);
    const T = []; for (let e = -3; e <= 6; e += 0.1) T.push(Math.pow(10, e));
    const traces = t.tiers.map((tier, i) => ({ x: T, y: T.map((s) => (tier.retrieve_usd_per_token + s * tier.hold_usd_per_token_s) * 1e6),
                                                name: tier.id, line: { color: COLORS[i % COLORS.length] } }));
    traces.push({ x: T, y: T.map(() => t.remat_usd_per_token * 1e6), name: "rematerialise", line: { color: "#000", dash: "dot" } });
    traces.push({ x: t.holds.map((h) => h.hold_s), y: t.holds.map((h) => h.cost_usd_per_token * 1e6), mode: "markers",
                  text: t.holds.map((h) => h.cheapest), name: "cheapest (API)", marker: { size: 10, color: "#f0a500" } });
    draw("p-tiers", traces, { title: { text: `one cached token of ${bytes(t.kv_bytes_per_token)} KV` }, xaxis: ax("hold time (s)", "log"),
                              yaxis: ax("cost (USD per million tokens)", "log") });
    const lists = pr.price_lists;
    draw("p-prices", [
      { type: "bar", x: lists.map((p) => p.id), y: lists.map((p) => p.input_usd_per_token * 1e6), name: "input" },
      { type: "bar", x: lists.map((p) => p.id), y: lists.map((p) => p.output_usd_per_token * 1e6), name: "output" },
    ], { barmode: "group", title: { text: "API list prices" }, xaxis: ax("price list"), yaxis: ax("USD per million tokens", "log") });
    readout([
      ["remat cost, USD per million tokens", t.remat_usd_per_token, usd(t.remat_usd_per_token * 1e6), "remat_usd_per_token"],
      ...t.holds.map((h, i) => [`cheapest for ${secs(h.hold_s)}`, h.cheapest, h.cheapest, `holds.${i}.cheapest`]),
      ["HBM vs remat break-even hold", t.break_even_hbm_vs_remat_s, secs(t.break_even_hbm_vs_remat_s), "break_even_hbm_vs_remat_s"],
    ]);
    return { op: "tiers", body };
  },
  plots: ["p-tiers", "p-prices"],
};

PAGES.validate = {
  title: "Validation",
  intro: "Every published measurement in the validation set against the library's prediction (log-log; the diagonal " +
    "is a perfect prediction). Hover a point for its row and source.",
  async controls() {
    const v = await api("validate", {});
    cache.validate = v;
    const metrics = [...new Set(v.measurements.map((m) => m.metric))];
    return [{ name: "metric", label: "metric", type: "select", options: [["all", "all metrics"], ...metrics.map((m) => [m, m])], value: "all" }];
  },
  async render(v) {
    const val = cache.validate || (cache.validate = await api("validate", {}));
    const rows = val.measurements.filter((m) => v.metric === "all" || m.metric === v.metric);
    const metrics = [...new Set(rows.map((m) => m.metric))];
    const units = [...new Set(rows.map((m) => m.unit))];
    const unit = units.length === 1 ? units[0] : "each row's own unit: " + units.join(", ");
    const lo = Math.min(...rows.map((m) => Math.min(m.measured, m.predicted))), hi = Math.max(...rows.map((m) => Math.max(m.measured, m.predicted)));
    draw("p-val", [
      ...metrics.map((k, i) => {
        const rs = rows.filter((m) => m.metric === k);
        return { x: rs.map((m) => m.measured), y: rs.map((m) => m.predicted), mode: "markers", name: k, marker: { color: COLORS[i % COLORS.length] },
                 text: rs.map((m) => `${m.id}<br>error ${(100 * m.error).toFixed(0)}%<br>${m.source}`), hovertemplate: "%{text}<extra></extra>" };
      }),
      { x: [lo, hi], y: [lo, hi], mode: "lines", name: "predicted = measured", line: { color: "#888", dash: "dot" } },
    ], { title: { text: `${rows.length} published measurements` }, xaxis: ax(`measured (${unit})`, "log"),
         yaxis: ax(`predicted (${unit})`, "log"), height: 560 });
    readout([
      ["rows shown", rows.length, String(rows.length), null],
      ...val.summary.filter((s) => s.group === v.metric || s.group === "all").map((s) => [`median |error|, ${s.group} (${s.count} rows)`, s.median_abs,
        (100 * s.median_abs).toFixed(1) + " %", `summary.${s.group}.median_abs`]),
    ]);
    return { op: "validate", body: {} };
  },
  plots: ["p-val"],
};

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
