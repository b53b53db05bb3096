"""Production layouts outside `step` (issue 14): the shared layout options in `sweep` and `simulate`, the
disaggregated prefill pool's layout, and `plan`'s MoE TP x EP and CP dimensions with the ready `simulate`
command — each checked against `step`/the engine or a hand calculation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from roofline.catalog import get_catalog

CAT = get_catalog()

LAYOUTS = [  # (model, system, layout flags, phase flags, batch, context)
    ("deepseek-v3", "gb200-nvl72", "--ep 72 --dp 72 --redundant-experts 32 --weights-dtype fp8 --kv-dtype fp8", "", 4608,
     4096),
    ("llama-3-70b", "dgx-h100", "--tp 4 --dp 2", "", 64, 2048),
    ("llama-3-70b", "dgx-h100", "--tp 4 --cp 2", "--phase prefill --prompt 8192", 2, 0),
    ("mixtral-8x7b", "dgx-h100", "--tp 8 --ep 4 --moe-tp 2 --moe-imbalance 1.3", "", 128, 1024),
    ("palm-540b", "tpu-v5p-256", "--tp 64 --attention batch --weight-stationary 2d", "", 512, 2000),
]


@pytest.mark.parametrize("model,system,lay,phase,b,c", LAYOUTS)
def test_a_sweep_point_is_the_step_at_that_point(run_cli, model, system, lay, phase, b, c):
    """Every column a sweep point shares with `step --json` is the same number (one engine, one layout)."""
    base = ["-m", model, "-s", system, *lay.split(), *phase.split(), "--json"]
    code, out, err = run_cli("step", *base, "-b", str(b), "-c", str(c))
    assert code == 0, err
    st = json.loads(out)
    code, out, err = run_cli("sweep", *base, "--batch", f"{b // 2},{b}", "--context", str(c))
    assert code == 0, err
    sw = json.loads(out)[-1]
    shared = [k for k in sw if k in st and isinstance(sw[k], (int, float)) and not isinstance(sw[k], bool)]
    assert {"step_s", "compute_s", "tokens_per_s", "memory_per_gpu_bytes"} <= set(shared)
    for k in shared:
        assert sw[k] == pytest.approx(st[k], rel=1e-12), k


def test_the_realistic_sweep_uses_the_layout_and_overlap(run_cli):
    base = ["-m", "mixtral-8x7b", "-s", "dgx-h100", "--tp", "8", "--ep", "4", "--moe-tp", "2", "--realistic",
            "--overlap", "--json"]
    st = json.loads(run_cli("step", *base, "-b", "128", "-c", "1024")[1])["realistic"]
    sw = json.loads(run_cli("sweep", *base, "--batch", "128", "--context", "1024")[1])[0]
    assert (sw["realistic_step_s"], sw["realistic_low_s"], sw["realistic_high_s"]) == pytest.approx(
        (st["step_s"], st["low_s"], st["high_s"]), rel=1e-12)
    no = json.loads(run_cli("sweep", *base[:-2], "--json", "--batch", "128", "--context", "1024")[1])[0]
    assert sw["realistic_step_s"] < no["realistic_step_s"]  # overlapping communication can only shorten the pass


@pytest.mark.parametrize("flags", ["--tp 3", "--tp 8 --dp 2", "--ep 2", "--tp 4 --cp 2", "-g 4 --tp 2",
                                   "--tp 4 --pp 2 --batch 1"])
def test_sweep_refuses_a_layout_in_steps_words(run_cli, flags):
    """One implementation: the same bad layout gives the same line (and exit code) from step and sweep."""
    args = ["-m", "llama-3-70b", "-s", "dgx-h100", *flags.split()]
    s = run_cli("step", *args)
    w = run_cli("sweep", *args)
    assert s[0] == w[0] in (1, 2)
    assert s[2].strip() == w[2].strip() and len(w[2].strip().splitlines()) == 1


def test_simulate_runs_a_replica_of_the_layout_with_its_kv_capacity(run_cli):
    """llama-3-8b on a DGX H100 as TP 2 x DP 2: 4 GPUs; KV capacity by hand = dp·(0.9·HBM − W/tp)/(kv/min(tp, K))
    with HBM the 79.2 GiB the driver reports = 2·(76.54 GB − 16.06 GB/2)/(131,072 B/2) = 2,090,638.9 tokens."""
    from roofline import model as M

    m, h100 = CAT.model("llama-3-8b"), CAT.system("dgx-h100").accelerator
    code, out, err = run_cli("simulate", "-m", "llama-3-8b", "-s", "dgx-h100", "--tp", "2", "--dp", "2", "-n", "50",
                             "--json")
    assert code == 0, err
    d = json.loads(out)
    w, kv = M.weight_bytes(m, "bf16"), M.kv_bytes_per_token(m, "bf16")
    assert (w, kv, m.kv_heads) == (16060522496.0, 131072.0, 8)
    assert d["kv_capacity_tokens"] == pytest.approx(2 * (0.9 * h100.engine_memory_bytes - w / 2) / (kv / 2), rel=1e-12)
    assert d["kv_capacity_tokens"] == pytest.approx(2090638.9, abs=0.1)
    assert (d["gpus"], d["layout"]) == (4, "TP2 EP1 PP1 DP2")


def test_a_lone_request_decodes_at_the_layouts_step_time(run_cli):
    """One request at a time (rate far below capacity, fixed lengths): each TPOT is the layout's decode step at
    batch dp·pp = 2 (the busiest DP group still holds one sequence) — the engine's step within the step table's
    interpolation (0.5%)."""
    from roofline.engine import step
    from roofline.layout import Layout

    code, out, err = run_cli("simulate", "-m", "llama-3-8b", "-s", "dgx-h100", "--tp", "2", "--dp", "2", "-n", "5",
                             "--rate", "0.01", "--lengths", "fixed", "--prompt-tokens", "512", "--output-tokens",
                             "65", "--json")
    assert code == 0, err
    d = json.loads(out)
    m, s = CAT.model("llama-3-8b"), CAT.system("dgx-h100")
    # contexts 512 ... 575 over the 64 decode steps: mean 543.5; the step is linear in context
    t = float(step(m, s, 2, 543.5, layout=Layout(tp=2, dp=2), details=False, check=False).step_s)
    assert d["tpot_mean_s"] == pytest.approx(t, rel=5e-3)


def test_disaggregated_prefill_pool_with_context_parallelism(run_cli):
    """--prefill-layout tp=4,cp=2: the prefill pool is 8 GPUs, the decode pool the layout flags' 4; a lone
    request's TTFT is the CP prefill pass (step --phase prefill --cp 2 at batch 1) within the table's 0.5%."""
    code, out, err = run_cli("simulate", "-m", "llama-3-70b", "-s", "dgx-h100", "--policy", "disaggregated", "--tp",
                             "4", "--prefill-layout", "tp=4,cp=2", "-n", "3", "--rate", "0.01", "--lengths", "fixed",
                             "--prompt-tokens", "4096", "--output-tokens", "8", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert (d["prefill_gpus"], d["decode_gpus"], d["gpus"]) == (8, 4, 12)
    assert d["prefill_layout"] == "TP4 EP1 PP1 DP1 CP2"
    st = json.loads(run_cli("step", "-m", "llama-3-70b", "-s", "dgx-h100", "--tp", "4", "--cp", "2", "--phase",
                            "prefill", "--prompt", "4096", "--json")[1])
    assert d["ttft_mean_s"] == pytest.approx(st["step_s"], rel=5e-3)
    # CP halves the prompt's GEMM rows per GPU: the CP 2 pool's first token comes sooner than TP 4 alone
    one = json.loads(run_cli("simulate", "-m", "llama-3-70b", "-s", "dgx-h100", "--policy", "disaggregated", "--tp",
                             "4", "--prefill-layout", "tp=4", "-n", "3", "--rate", "0.01", "--lengths", "fixed",
                             "--prompt-tokens", "4096", "--output-tokens", "8", "--json")[1])
    assert d["ttft_mean_s"] < 0.6 * one["ttft_mean_s"]


def test_layout_flags_round_trip():
    from roofline.layout import Layout
    from roofline.requests.layout_opts import flags, from_text, parse_text

    lay = Layout(tp=8, ep=9, dp=9, expert_tp=8, redundant_experts=32, attention="batch", weight_stationary="2d",
                 domains=2)
    f = flags(lay)
    assert f == ["--tp", "8", "--ep", "9", "--dp", "9", "--moe-tp", "8", "--redundant-experts", "32", "--attention",
                 "batch", "--weight-stationary", "2d", "--domains", "2"]
    text = ",".join(f"{k[2:]}={v}" for k, v in zip(f[::2], f[1::2]))
    assert parse_text(text, "--x") == {"tp": 8, "ep": 9, "dp": 9, "moe_tp": 8, "redundant_experts": 32,
                                       "attention": "batch", "weight_stationary": "2d", "domains": 2}
    opts = from_text(text, "--x")
    assert opts.layout_fields() == parse_text(text, "--x")
    assert flags(Layout()) == []


DSV3, NVL72 = CAT.model("deepseek-v3"), CAT.system("gb200-nvl72")


def test_plan_searches_moe_tp_and_its_rows_are_the_engines():
    """Hybrid MoE TP x EP rows (moe_tp neither tp nor 1) are searched, and their TPOT and TTFT equal the engine's
    scalar step with that expert_tp; the replica's tokens/s is the plan formula output/(output·TPOT/B + TTFT/B_p)."""
    from roofline.engine import step
    from roofline.layout import Layout
    from roofline.planner import Workload, plan

    p = plan(DSV3, NVL72, [1, 2], Workload(1024, 1024))
    c = p.columns
    hybrid = np.flatnonzero((c["ep"] > 1) & (c["moe_tp"] != np.where(c["dp"] % c["ep"] == 0, c["tp"], 1))
                            & (c["cp"] == 1))
    assert hybrid.size > 0
    assert (c["tp"][hybrid] * c["dp"][hybrid] % (c["moe_tp"][hybrid] * c["ep"][hybrid]) == 0).all()
    for i in hybrid[:: max(1, hybrid.size // 5)]:
        kw = dict(weights_dtype=str(c["weights_dtype"][i]), kv_dtype=str(c["kv_dtype"][i]), details=False, check=False)
        lay = Layout(tp=int(c["tp"][i]), ep=int(c["ep"][i]), pp=int(c["pp"][i]), dp=int(c["dp"][i]),
                     redundant_experts=int(c["redundant_experts"][i]), expert_tp=int(c["moe_tp"][i]), domains=2,
                     attention=str(c["attention"][i]), weight_stationary=str(c["weight_stationary"][i]))
        assert c["tpot_s"][i] == pytest.approx(float(step(DSV3, NVL72, int(c["batch"][i]), 1024 + 512, layout=lay,
                                                          **kw).step_s), rel=1e-12)
        b_p = int(c["dp"][i]) * int(c["pp"][i])
        assert c["ttft_s"][i] == pytest.approx(float(step(DSV3, NVL72, b_p, 0, layout=lay, phase="prefill",
                                                          prompt=1024, **kw).step_s), rel=1e-12)
        per_replica = 1024 / (1024 * c["tpot_s"][i] / c["batch"][i] + c["ttft_s"][i] / b_p)
        assert c["tokens_per_s_per_gpu"][i] == pytest.approx(
            c["replicas"][i] * per_replica / (c["domains"][i] * NVL72.chips), rel=1e-12)


def test_plan_cp_rows_prefill_with_cp_and_decode_with_the_dp_groups():
    """A CP c row of a replica with dp groups: TTFT is the prefill of dp/c·pp prompts each split over c ranks
    (Layout dp = dp/c, cp = c), TPOT the decode of all dp groups (cp = 1); B_p = dp/c·pp in the formula; prefill
    activations per GPU fall by tp·cp. Long prompts on H100s put CP on the frontier."""
    from roofline.engine import step
    from roofline.layout import Layout
    from roofline.planner import Workload, plan

    m, s = CAT.model("llama-3.1-70b"), CAT.system("dgx-h100")
    p = plan(m, s, [1, 2, 4], Workload(65536, 512))
    c = p.columns
    rows = np.flatnonzero(c["cp"] > 1)
    assert rows.size > 0 and (c["cp"][np.flatnonzero(p.pareto)] > 1).any()
    for i in rows[:: max(1, rows.size // 4)]:
        tp, dp, pp, cp = (int(c[k][i]) for k in ("tp", "dp", "pp", "cp"))
        kw = dict(weights_dtype=str(c["weights_dtype"][i]), kv_dtype=str(c["kv_dtype"][i]), details=False, check=False)
        sty = dict(attention=str(c["attention"][i]), weight_stationary=str(c["weight_stationary"][i]))
        pre = step(m, s, dp // cp * pp, 0, layout=Layout(tp=tp, pp=pp, dp=dp // cp, cp=cp, domains=4, **sty),
                   phase="prefill", prompt=65536, **kw)
        dec = step(m, s, int(c["batch"][i]), 65536 + 256, layout=Layout(tp=tp, pp=pp, dp=dp, domains=4, **sty), **kw)
        assert (c["ttft_s"][i], c["tpot_s"][i]) == pytest.approx((float(pre.step_s), float(dec.step_s)), rel=1e-12)
        per_replica = 512 / (512 * c["tpot_s"][i] / c["batch"][i] + c["ttft_s"][i] / (dp // cp * pp))
        assert c["tokens_per_s_per_gpu"][i] == pytest.approx(
            c["replicas"][i] * per_replica / (c["domains"][i] * s.chips), rel=1e-12)


def test_plans_simulate_command_reproduces_its_step_time(run_cli):
    """`plan --json` gives a ready `simulate` command for its best row; running it, the simulated mean TPOT lies
    between the plan's two readings of a decode token at the simulated mean batch B̄:
      low  = t_decode(B̄)                          (prefill chunks ride in the decode passes for free),
      high = t_decode(B̄) / (1 − λ·TTFT/B_p)       (the plan's formula: prefill passes added, not overlapped)
    — the tolerance is the plan's own prefill share λ·TTFT/B_p (17% here) plus 3% for the spread of the batch
    and context around their means."""
    from roofline.engine import step
    from roofline.layout import Layout

    code, out, err = run_cli("plan", "-m", "llama-3-8b", "-s", "dgx-h100", "--tpot-ms", "20", "--json")
    assert code == 0, err
    d = json.loads(out)
    sim = d["simulate"]
    best = max((r for r in d["layouts"] if r["pareto"]), key=lambda r: r["tokens_per_s_per_gpu"])
    argv = sim["argv"]
    assert argv[:2] == ["roofline", "simulate"] and sim["ignores"] == []
    assert argv[argv.index("--max-seqs") + 1] == str(best["batch"])
    rate = best["tokens_per_s_per_gpu"] * best["domains"] * 8 / best["replicas"] / 1024
    assert sim["rate_requests_per_s"] == pytest.approx(0.9 * rate, rel=1e-3)
    code, out, err = run_cli(*argv[1:], "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["gpus"] == best["gpus"]
    lay = Layout(tp=best["tp"], ep=best["ep"], pp=best["pp"], dp=best["dp"], attention=best["attention"],
                 weight_stationary=best["weight_stationary"])
    b = r["mean_batch"]
    lo, hi = (float(step(CAT.model("llama-3-8b"), CAT.system("dgx-h100"), x, 1024 + 512, layout=lay,
                         weights_dtype=best["weights_dtype"], kv_dtype=best["kv_dtype"], details=False,
                         check=False).step_s) for x in (math.floor(b), math.ceil(b)))
    t_dec = lo + (hi - lo) * (b - math.floor(b))
    share = sim["rate_requests_per_s"] * best["ttft_s"] / (best["dp"] * best["pp"])
    assert 0.05 < share < 0.5
    assert t_dec * 0.97 <= r["tpot_mean_s"] <= t_dec / (1 - share) * 1.03


def test_plan_disaggregated_pools_by_hand():
    """plan --disaggregated, Llama-3.1-70B on DGX H100s, 32K prompts: every frontier pair's figures from the engine —
    s_d = g_d·output·TPOT/B (decode layout), s_p = g_p·TTFT_p/B_p (prefill layout with its CP), tokens/s per GPU =
    output/(s_p + s_d), TTFT = TTFT_p + kv_bytes(prompt)/(min(g_p, g_d)·BW_out) + latency — and no single-group prefill
    layout of the same formats (TP 1..8, CP 1..8 on one DP group) that fits needs fewer GPU-seconds per prompt."""
    from roofline import model as M
    from roofline.engine import step
    from roofline.layout import Layout
    from roofline.memory import activation_bytes, memory_per_gpu
    from roofline.planner import Workload, plan

    m, s = CAT.model("llama-3.1-70b"), CAT.system("dgx-h100")
    p = plan(m, s, [1, 2], Workload(32768, 512), disaggregated=True)
    rows = p.extra["disaggregated"]
    assert rows
    usable = 0.9 * s.accelerator.hbm_bytes
    for r in rows[:: max(1, len(rows) // 4)]:
        kw = dict(weights_dtype=r["weights_dtype"], kv_dtype=r["kv_dtype"], details=False, check=False)
        d, q = r["decode"], r["prefill"]
        tpot = float(step(m, s, r["batch"], 32768 + 256, layout=Layout(tp=d["tp"], pp=d["pp"], dp=d["dp"], domains=2,
                          attention=d["attention"], weight_stationary=d["weight_stationary"]), **kw).step_s)
        b_p = q["dp"] * q["pp"]
        ttft_p = float(step(m, s, b_p, 0, layout=Layout(tp=q["tp"], pp=q["pp"], dp=q["dp"], cp=q["cp"], domains=2,
                                                         attention=q["attention"],
                                                         weight_stationary=q["weight_stationary"]),
                            phase="prefill", prompt=32768, **kw).step_s)
        g_d, g_p = d["tp"] * d["dp"] * d["pp"], q["tp"] * q["dp"] * q["cp"] * q["pp"]
        s_d, s_p = g_d * 512 * tpot / r["batch"], g_p * ttft_p / b_p
        assert (r["tpot_s"], r["prefill_ttft_s"]) == pytest.approx((tpot, ttft_p), rel=1e-12)
        assert r["tokens_per_s_per_gpu"] == pytest.approx(512 / (s_p + s_d), rel=1e-12)
        assert r["prefill_gpu_share"] == pytest.approx(s_p / (s_p + s_d), rel=1e-12)
        xfer = (M.kv_bytes_per_sequence(m, 32768, r["kv_dtype"]) / (min(g_p, g_d) * s.scale_out_bytes_per_s)
                + s.scale_out_latency_s)  # the slower side's NICs
        assert r["ttft_s"] == pytest.approx(ttft_p + xfer, rel=1e-12)
        for tp in (1, 2, 4, 8):
            for cp in (1, 2, 4, 8):
                lay = Layout(tp=tp, cp=cp, domains=2)
                mem = memory_per_gpu(m, lay, 1, 32768, bytes_per_weight=0.5 if r["weights_dtype"] == "fp4" else
                                     (1.0 if r["weights_dtype"] == "fp8" else 2.0),
                                     bytes_per_kv=1.0 if r["kv_dtype"] == "fp8" else 2.0).total_bytes
                if float(mem) + activation_bytes(m, 32768, "bf16") / (tp * cp) > usable:
                    continue
                t = float(step(m, s, 1, 0, layout=lay, phase="prefill", prompt=32768, **kw).step_s)
                assert tp * cp * t >= s_p * (1 - 1e-9)


def test_plan_disaggregated_cli(run_cli):
    code, out, err = run_cli("plan", "-m", "llama-3-8b", "-s", "dgx-h100", "--disaggregated", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["disaggregated"] and {"decode", "prefill", "prefill_gpu_share", "ttft_s"} <= set(d["disaggregated"][0])
    assert "disaggregated" not in json.loads(run_cli("plan", "-m", "llama-3-8b", "-s", "dgx-h100", "--json")[1])
    code, out, err = run_cli("plan", "-m", "llama-3-8b", "-s", "dgx-h100", "--disaggregated")
    assert code == 0 and "disaggregated prefill and decode pools" in out
