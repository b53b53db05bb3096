// roofline serve, the other chapters: the serving simulator, training and over-training, prices and memory
// tiers, validation against published measurements.
"use strict";

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
