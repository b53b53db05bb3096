// roofline serve, the serving chapters: the roofline board, MoE on racks, pipelining, the planner's frontier.
"use strict";

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
