"""Issue 14, the remaining production layouts (brief h14c): `plan` searching Pope et al. 2022's layouts and overlap,
partially weight-gathered layouts, and two small fixes — each checked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from roofline import get_model, get_system
from roofline import model as M
from roofline.simulate.pools import kv_transfer_s


def test_kv_transfer_is_timed_on_the_slower_pool():
    """llama-3-70b: 327,680 B of bf16 KV per token, a 1,000-token prompt 3.2768e8 B. A 2-GPU prefill replica handing
    to an 8-GPU decode replica on DGX H100 (50 GB/s NIC per GPU, 10 us) is limited by the prefill side's 2 NICs:
    3.2768e8/(2 x 5e10) + 1e-5 = 3.2868e-3 s; swapped (8 prefill, 2 decode) the same; 8 and 8: 8.292e-4 s."""
    m, s = get_model("llama-3-70b"), get_system("dgx-h100")
    assert kv_transfer_s(m, s, 1000, chips=8, prefill_chips=2) == pytest.approx(3.2868e-3, rel=1e-12)
    assert kv_transfer_s(m, s, 1000, chips=2, prefill_chips=8) == pytest.approx(3.2868e-3, rel=1e-12)
    assert kv_transfer_s(m, s, 1000, chips=8, prefill_chips=8) == pytest.approx(8.292e-4, rel=1e-12)
    assert M.kv_bytes_per_sequence(m, 1000, "bf16") == 327_680_000


# ---- item 1: plan searches the Pope et al. 2022 layouts and overlap --------------------------------------------
def _palm_plan(**kw):
    from roofline.planner import Workload, plan

    return plan(get_model("palm-540b"), get_system("gb200-nvl72"), [1], Workload(1024, 1024), weights_dtypes=["bf16"],
                kv_dtypes=["bf16"], **kw)


def test_plan_picks_batch_attention_for_palm_and_step_agrees_by_hand(run_cli):
    """PaLM 540B (multi-query: 1 KV head) decoding on one GB200 NVL72 in bf16: with heads-sharded attention every TP
    rank holds the whole KV; sharded by batch each holds 1/TP of it (Pope et al. 2022 §3.3). The plan's best row is
    TP 8 with attention by batch, batch 406, and its TPOT is `step` with the same flags. By hand (context = 1024 +
    1024/2 = 1536): matmul params per token = 118 layers x (q 18432x48x256 + k, v 2x18432x256 + out 48x256x18432
    + SwiGLU 3x18432x73728 + 2 norm scales of 18432) + the final norm and the tied 256000x18432 head =
    540,358,649,856 (model.py counts 2 FLOPs per parameter, every parameter); attention FLOPs/token = 4 x 118 x 48 x
    256 x 1537; compute = 406 x (2 x params + attention)/8 / peak; memory = (params x 2 B/8 + 406 x 1536 x
    120,832 B/8 + 406 x 120,832 B/8)/HBM; step = max(compute, memory, collectives) (the pure roofline overlaps
    them). With attention by heads the KV term is 8x (shard = min(8, 1) = 1), so that row is slower."""
    import json

    p = _palm_plan()
    best = p.best()
    assert (best["tp"], best["dp"], best["pp"], best["attention"], best["weight_stationary"], best["batch"]) == \
        (8, 1, 1, "batch", "1d", 406)
    heads = _palm_plan(pope_layouts=False).best()
    assert best["tokens_per_s_per_gpu"] > 1.05 * heads["tokens_per_s_per_gpu"]  # the new dimension wins
    code, out, err = run_cli("step", "-m", "palm-540b", "-s", "gb200-nvl72", "--tp", "8", "--attention", "batch",
                             "--batch", "406", "--context", "1536", "--json")
    assert code == 0, err
    st = json.loads(out)
    assert st["step_s"] == pytest.approx(best["tpot_s"], rel=1e-12)
    acc = get_system("gb200-nvl72").accelerator
    params = (118 * (18432 * 48 * 256 + 2 * 18432 * 256 + 48 * 256 * 18432 + 3 * 18432 * 73728 + 2 * 18432)
              + 18432 + 256000 * 18432)
    assert params == 540_358_649_856
    attn = 4 * 118 * 48 * 256 * 1537
    compute = 406 * (2 * params + attn) / 8 / acc.peak_flops("bf16")
    kv_token = 118 * 2 * 1 * 256 * 2
    assert kv_token == 120_832
    memory = (params * 2 / 8 + 406 * 1536 * kv_token / 8 + 406 * kv_token / 8) / acc.hbm_bytes_per_s
    assert st["compute_s"] == pytest.approx(compute, rel=1e-9)
    assert st["memory_s"] == pytest.approx(memory, rel=1e-9)
    assert st["step_s"] == pytest.approx(max(compute, memory, st["comm_s"]), rel=1e-12)
    code, out, err = run_cli("step", "-m", "palm-540b", "-s", "gb200-nvl72", "--tp", "8", "--batch", "406",
                             "--context", "1536", "--json")
    by_heads = json.loads(out)
    assert by_heads["kv_read_s"] == pytest.approx(8 * st["kv_read_s"], rel=1e-12)
    assert by_heads["step_s"] > st["step_s"]


def test_plan_rows_carry_the_new_dimensions_into_names_and_the_simulate_command():
    """A realistic plan has rows with attention by batch, 2D weight-stationary and overlap; each row's printed name,
    `simulate` command and `plan --simulate` grid name carry them, and the grid name reads back to the same layout."""
    from roofline.plan_simulate import layout_name
    from roofline.planner import layout_label
    from roofline.requests.plan import PlanRequest, run_plan, simulate_command
    from roofline.simulate.grid import layout_overlap, parse_layout

    req = PlanRequest.of(model="palm-540b", system="gb200-nvl72", domains="1", realistic=True, all=True, overlap=True)
    d = run_plan(req)
    rows = d["layouts"]
    want = {("batch", "2d", True), ("batch", "1d", True), ("heads", "2d", False), ("heads", "1d", True)}
    seen = {(r["attention"], r["weight_stationary"], r["overlap"]) for r in rows}
    assert want <= seen
    for key in want:
        r = next(r for r in rows if (r["attention"], r["weight_stationary"], r["overlap"]) == key)
        label = layout_label(r, None)
        assert ("attention-by-batch" in label) == (key[0] == "batch")
        assert ("2D-weight-stationary" in label) == (key[1] == "2d")
        assert label.endswith(" overlap") == key[2]
        argv = simulate_command(req, r)["argv"]
        assert (("--attention", "batch") in zip(argv, argv[1:])) == (key[0] == "batch")
        assert (("--weight-stationary", "2d") in zip(argv, argv[1:])) == (key[1] == "2d")
        assert ("--overlap" in argv) == key[2]
        name = layout_name(r)
        lay = parse_layout(name)
        assert (lay.tp, lay.pp, lay.dp, lay.attention, lay.weight_stationary) == (
            r["tp"], r["pp"], r["dp"], key[0], key[1])
        assert layout_overlap(name) == key[2]


def test_plan_overlap_row_equals_step_overlap():
    """An overlap row's TPOT is `step --realistic --overlap` with the row's layout (the family's factors with the
    collectives overlapped: max(kernels, comm) instead of their sum), and is below the same row without overlap
    (searched with overlap off: where overlap is on the plan drops that dominated twin)."""
    from roofline.planner import Workload, plan
    from roofline.requests.step import StepRequest, run_step

    p = plan(get_model("palm-540b"), get_system("gb200-nvl72"), [1], Workload(1024, 1024), weights_dtypes=["bf16"],
             kv_dtypes=["bf16"], realistic=True, overlap_search=True)
    r = next(r for r in p.rows() if r["overlap"] and r["attention"] == "batch" and r["pp"] == 1)
    rows = plan(get_model("palm-540b"), get_system("gb200-nvl72"), [1], Workload(1024, 1024), weights_dtypes=["bf16"],
                kv_dtypes=["bf16"], realistic=True, overlap_search=False).rows(pareto_only=False)
    off = next((x for x in rows if all(x[k] == r[k] for k in (
        "tp", "pp", "dp", "attention", "weight_stationary", "batch"))), None)
    common = dict(model="palm-540b", system="gb200-nvl72", tp=r["tp"], attention=r["attention"],
                  weight_stationary=r["weight_stationary"], batch=r["batch"], context=1536, realistic=True,
                  weights_dtype="bf16", kv_dtype="bf16")
    on = run_step(StepRequest.of(common, overlap=True))
    assert on["realistic"]["step_s"] == pytest.approx(r["tpot_s"], rel=1e-9)
    plain = run_step(StepRequest.of(common))
    assert plain["realistic"]["step_s"] > on["realistic"]["step_s"]
    assert off is not None
    assert off["tpot_s"] == pytest.approx(plain["realistic"]["step_s"], rel=1e-9)


# ---- item 2: partially weight-gathered layouts (Pope et al. 2022 §3.2.3) --------------------------------------
PALM_W = 540_358_649_856  # matmul parameters per token (test above), PaLM 540B


def _palm_prefill(ws, batch, prompt):
    from roofline.requests.step import StepRequest, run_step

    return run_step(StepRequest.of(model="palm-540b", system="tpu-v5p-256", tp=64, attention="batch",
                                   weight_stationary=ws, phase="prefill", batch=batch, prompt=prompt))


def _hand_gathered_comm_s(g, batch, prompt):
    """Per pass on 64 chips (TPU v5p: 600 GB/s per chip per direction, 1 us per hop), 118 layers, bf16, weights
    all-gathered over groups of g, m = 64/g chips sharing each gathered slice:
      all-gather   (g−1)/g · (W/118 · 2 B · g/64)/β + (g−1)·α                         per layer
      all-reduce   min(ring 2(m−1)/m·x/β + 2(m−1)α, one-shot (m−1)·x/β + 2α), x = (T/g)·18432·2 B,
                   twice per layer (attention block and MLP: 118 + 118 dense-MLP layers)
      all-to-all   (m−1)/m · (T·48·(256 + 256)·2 B/64)/β + α (if m > 1)                per layer
    with T = batch·prompt tokens."""
    beta, alpha = 600e9, 1e-6
    T, m = batch * prompt, 64 // g
    ag = (g - 1) / g * (PALM_W / 118 * 2 * g / 64) / beta + (g - 1) * alpha
    x = T / g * 18432 * 2
    ar = 0.0 if m == 1 else min(2 * (m - 1) / m * x / beta + 2 * (m - 1) * alpha, (m - 1) * x / beta + 2 * alpha)
    a2a = 0.0 if m == 1 else (m - 1) / m * (T * 48 * 512 * 2 / 64) / beta + alpha
    return 118 * ag + 236 * ar + 118 * a2a


@pytest.mark.parametrize("ws,g", [("gathered:4", 4), ("gathered:16", 16), ("gathered", 64)])
@pytest.mark.parametrize("batch,prompt", [(64, 256), (512, 2048)])
def test_weight_gathered_variants_by_hand(ws, g, batch, prompt):
    """X-, XY- and XYZ-weight-gathered PaLM 540B on 64 TPU v5p chips (a 4x4x4 torus: X = 4, XY = 16, XYZ = 64
    GPUs per all-gather) at 16K and 1M tokens per pass: the TP collectives equal the hand formula."""
    d = _palm_prefill(ws, batch, prompt)
    assert d["tp_comm_s"] == pytest.approx(_hand_gathered_comm_s(g, batch, prompt), rel=1e-9)


def test_weight_gathered_crossover_pope():
    """The crossover Pope et al. 2022 describe (§3.2.3, Fig. 3): moving weights costs the same whatever the tokens,
    moving activations grows with them, so the best layout moves from 2D weight-stationary through X- and
    XY- to XYZ-weight-gathered as the tokens per pass grow. Their optimum N = √(B·L·n/F) chips per all-gather:
    16K tokens √(16384·64/73728) = 3.8 (X, N = 4, is the best gathered variant; 2D still beats it), 1M tokens
    √(1048576·64/73728) = 30 (between XY = 16 and XYZ = 64; XYZ wins here)."""
    small = {ws: _palm_prefill(ws, 64, 256)["tp_comm_s"] for ws in ("2d", "gathered:2", "gathered:4", "gathered:8",
                                                                     "gathered:16", "gathered")}
    big = {ws: _palm_prefill(ws, 512, 2048)["tp_comm_s"] for ws in ("2d", "gathered:4", "gathered:16", "gathered")}
    assert small["2d"] < small["gathered:4"] < small["gathered:16"] < small["gathered"]
    assert small["gathered:4"] < min(small["gathered:2"], small["gathered:8"])
    assert big["gathered"] < big["gathered:16"] < big["gathered:4"] < big["2d"]
    assert (64 * 256 * 64 / 73728) ** 0.5 == pytest.approx(3.77, abs=0.01)
    assert (512 * 2048 * 64 / 73728) ** 0.5 == pytest.approx(30.2, abs=0.1)
    # the whole-group gather costs the same at 16K and 1M tokens (only weights move)
    assert small["gathered"] == pytest.approx(big["gathered"], rel=1e-12)


def test_network_weight_gathered_by_hand():
    """network.weight_gathered_s on n = 16 GPUs at 100 GB/s, α = 1 us, a 1 GB layer and 64 MB of activations (T·E·b),
    one block: g = 16 (XYZ) moves only weights, 15/16 · 1e9/1e11 + 15e-6 = 9.390e-3 s; g = 1 is the 1D all-reduce of
    64 MB over 16 (ring 2·15/16 · 6.4e7/1e11 + 30e-6 = 1.230e-3 s, one-shot 15 · 6.4e-4 + 2e-6 = 9.602e-3: ring);
    g = 4: all-gather of 1e9·4/16 over 4 (3/4 · 2.5e-3 + 3e-6 = 1.878e-3) + all-reduce of 1.6e7 over 4 (ring 2·3/4 ·
    1.6e-4 + 6e-6 = 2.46e-4, one-shot 3 · 1.6e-4 + 2e-6 = 4.82e-4: ring) = 2.124e-3 s."""
    from roofline.network import weight_gathered_s

    def t(g):
        return float(weight_gathered_s(1e9, 6.4e7, g, 16, 1e11, 1e-6, blocks=1))

    assert t(16) == pytest.approx(15 / 16 * 1e-2 + 15e-6, rel=1e-12)
    assert t(1) == pytest.approx(2 * 15 / 16 * 6.4e-4 + 30e-6, rel=1e-12)
    assert t(4) == pytest.approx(0.75 * 2.5e-3 + 3e-6 + 1.5 * 1.6e-4 + 6e-6, rel=1e-12)


def test_plan_simulate_runs_the_rows_layout_with_overlap():
    """`plan --simulate` builds each row's deployment from its grid name: ATTNBATCH WS2D OVERLAP gives a replica whose
    step time is `step --realistic --overlap` with attention by batch and the 2D layout (the family's factors with
    overlap_comm), below the same layout without OVERLAP."""
    from roofline.requests.step import StepRequest, run_step
    from roofline.simulate.grid import GridContext, Scenario, deployment_for

    m, s = get_model("palm-540b"), get_system("gb200-nvl72")
    ctx = GridContext(m, s, realistic=True)
    on = deployment_for(ctx, Scenario(layout="TP8 EP1 PP1 DP1 ATTNBATCH WS2D OVERLAP"))
    off = deployment_for(ctx, Scenario(layout="TP8 EP1 PP1 DP1 ATTNBATCH WS2D"))
    lay = on.step.layout
    assert (lay.tp, lay.attention, lay.weight_stationary) == (8, "batch", "2d")
    assert on.step.efficiency.overlap_comm and not on.step.realistic and off.step.realistic
    t_on, t_off = (float(np.ravel(d.step.step_times(np.array([64.0]), np.array([64.0]), np.array([1536.0])))[0])
                   for d in (on, off))
    ref = run_step(StepRequest.of(model="palm-540b", system="gb200-nvl72", tp=8, attention="batch",
                                  weight_stationary="2d", batch=64, context=1536, realistic=True, overlap=True))
    assert t_on == pytest.approx(ref["realistic"]["step_s"], rel=1e-9)
    assert t_on < t_off


def test_plan_searches_overlap_only_when_asked(run_cli):
    """Overlap is opt-in, as `step --overlap` is: a realistic plan has no overlap rows unless --overlap is given,
    and --overlap without --realistic is refused in one line (the pure roofline already overlaps)."""
    from roofline.requests.plan import PlanRequest, run_plan

    rows = run_plan(PlanRequest.of(model="palm-540b", system="gb200-nvl72", domains="1", realistic=True,
                                   all=True))["layouts"]
    assert rows and not any(r["overlap"] for r in rows)
    code, out, err = run_cli("plan", "-m", "palm-540b", "-s", "gb200-nvl72", "--overlap")
    assert code == 2 and out == "" and err.strip().count("\n") == 0 and "--overlap needs --realistic" in err


def test_grid_layout_names_read_back_the_weight_gathered_layout():
    """`simulate --grid 'layout=TP8 WSGATHERED'` is the weight-gathered replica (Pope et al. 2022 §3.2.3), and its
    grid name reads back to the same Layout; WS2D and WSGATHERED together are refused (one weight layout)."""
    from roofline.errors import InputError
    from roofline.simulate.grid import layout_label, parse_layout

    lay = parse_layout("TP8 WSGATHERED")
    assert (lay.tp, lay.weight_stationary) == (8, "gathered")
    assert layout_label(lay) == "TP8 EP1 PP1 DP1 WSGATHERED" and parse_layout(layout_label(lay)) == lay
    with pytest.raises(InputError, match="WS2D or WSGATHERED"):
        parse_layout("TP8 WS2D WSGATHERED")
