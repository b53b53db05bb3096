// roofline serve, core: the API client, number formatting, the URL state and the form controls shared by the
// pages (pages_*.js add themselves to PAGES; app.js runs the loop). Every number comes from /api/<op>, which
// answers exactly what `roofline <op> --json` prints (SI units); these files only draw.
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

// ---------- pages (pages_*.js) ----------
const PAGES = {};
