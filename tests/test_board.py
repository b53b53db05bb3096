"""`roofline board --json`: every board-formula example of spec §9 from flags alone, the board next to
the engine, and the command's errors. Lecture conventions (§9): W in bytes with b_w = 1, R = 300."""

import json

import pytest


@pytest.fixture
def board(run_cli):
    def run(*args):
        code, out, err = run_cli("board", *map(str, args), "--json")
        assert code == 0, err
        return json.loads(out)

    return run


# (id, flags, JSON key, expected, relative tolerance)
EXAMPLES = [
    ("T01 B* = R·s", ["--ratio", 300, "--sparsity", 8], "critical_batch", 2400, 1e-12),
    ("T03 B* from 700B/37B", ["--ratio", 300, "--params-total", 700e9, "--params-active", 37e9], "critical_batch",
     5675.7, 1e-3),
    ("T04 Rubin drain", ["--capacity", 288e9, "--bandwidth", 20e12], "drain_time_s", 0.0144, 1e-9),
    ("T05 worst case 2·t", ["--step-s", 0.020], "worst_case_latency_s", 0.040, 1e-12),
    ("T06 64 steps/s", ["--batch", 2000, "--step-s", 1 / 64], "tokens_per_s", 128_000, 1e-12),
    ("T07 at 20 ms", ["--batch", 2000, "--step-s", 0.020], "tokens_per_s", 100_000, 1e-12),
    # ctx* = W_active/(R·kv) = 1e11/(300 · 3,333.33) = 1e5
    ("T09 MFU at 2·ctx*", ["--kv-bytes", 1e11 / 3e7, "--context", 2e5], "mfu_weights_amortised", 0.5, 1e-9),
    ("T10 crossover with KV", ["--sparsity", 8, "--params-total", 8e11, "--kv-bytes", 1e11 / 3e7, "--context", 5e4],
     "critical_batch_with_kv", 4800, 1e-9),
    ("T12 latency floor", ["--params-total", 1e12, "--bandwidth", 8e12, "--gpus", 72], "latency_floor_s",
     1.736e-3, 1e-3),
    ("T13 cost per token", ["--gpus", 72, "--usd-per-gpu-hour", 2, "--step-s", 0.020, "--batch", 2000],
     "usd_per_token", 4.0e-7, 1e-9),
    ("T14 batch-1 penalty", ["--ratio", 300, "--sparsity", 8], "batch1_cost_ratio", 2400, 1e-9),
    ("T15 fast-mode speed", ["--sparsity", 8, "--kv-bytes", 0, "--batch", 6000, "--fast-batch", 400],
     "fast_speedup", 2.5, 1e-9),
    ("T15 fast-mode price", ["--sparsity", 8, "--kv-bytes", 0, "--batch", 6000, "--fast-batch", 400],
     "fast_price_ratio", 6.0, 1e-9),
    ("T25 20 → 30 ms", ["--step-s", 0.020, "--stages", 4, "--hop-s", 0.0025], "token_latency_s", 0.030, 1e-12),
    ("T26 weight fetch NVL72", ["--params-total", 1e12, "--gpus", 72, "--bandwidth", 8e12], "latency_floor_s",
     1.736e-3, 1e-3),
    ("T26 weight fetch 8xH100", ["--params-total", 1e12, "--gpus", 8, "--bandwidth", 3.35e12], "latency_floor_s",
     37.3e-3, 1e-3),
    ("T34 ctx* of kv 1,666.67 B", ["--params-active", 1e11, "--kv-bytes", 1e11 / (300 * 2e5)], "balanced_context",
     2e5, 1e-9),
    ("T08 systems for 1e8 tok/s", ["--batch", 2000, "--step-s", 1 / 64, "--traffic", 1e8], "systems_for_traffic",
     781.25, 1e-12),
    ("T08 systems for 5e8 tok/s", ["--batch", 2000, "--step-s", 1 / 64, "--traffic", 5e8], "systems_for_traffic",
     3906.25, 1e-12),
    ("T35 kv from architecture fp8", ["--kv-layers", 1, "--head-dim", 128, "--kv-heads", 8], "kv_bytes_per_token",
     2048, 0),
    ("T36 kv from architecture bf16", ["--kv-layers", 1, "--head-dim", 128, "--kv-heads", 8, "--kv-element-bytes", 2],
     "kv_bytes_per_token", 4096, 0),
    ("T37 decode MFU from 5x price", ["--output-over-input", 5], "decode_mfu_from_price", 0.2, 1e-12),
    ("T45 H100 R", ["--flops", 989e12, "--bytes-per-weight", 2, "--bandwidth", 3.35e12], "ratio", 295.2, 1e-3),
    ("T45 B200 R", ["--flops", 9e15, "--bytes-per-weight", 0.5, "--bandwidth", 8e12], "ratio", 281.3, 1e-3),
    ("T45 GB200 R", ["--flops", 1e16, "--bytes-per-weight", 0.5, "--bandwidth", 8e12], "ratio", 312.5, 1e-3),
    ("T45 A100 R", ["--flops", 312e12, "--bytes-per-weight", 2, "--bandwidth", 2.039e12], "ratio", 153.0, 1e-3),
]


@pytest.mark.parametrize("name,flags,key,expected,tol", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_board_reproduces_lecture_example(board, name, flags, key, expected, tol):
    assert board(*flags)[key] == pytest.approx(expected, rel=tol)


def test_T02_two_to_three_times_B_star_is_compute_bound(board):
    """'Double or triple' B*: with KV ignored the step is 2× and 3× the latency floor (compute-bound)."""
    for mult in (2, 3):
        d = board("--sparsity", 8, "--kv-bytes", 0, "--batch", mult * 2400)
        assert d["bound"] == "compute"
        assert d["step_s"] == pytest.approx(mult * d["latency_floor_s"], rel=1e-12)


def test_T11_memory_over_compute_is_two_at_B_star_and_ctx_star(board):
    d = board("--sparsity", 8, "--kv-bytes", 1e11 / 3e7, "--params-total", 8e11, "--batch", 2400, "--context", 1e5)
    assert d["balanced_context"] == pytest.approx(1e5, rel=1e-12)
    assert d["memory_to_compute_ratio"] == pytest.approx(2.0, rel=1e-12)


@pytest.mark.parametrize("P,total_gb", [(1, 23.305), (2, 15.4925), (4, 11.58625), (8, 9.633125)])
def test_T23_T24_memory_per_gpu_with_stages(board, P, total_gb):
    d = board("--params-total", 1e12, "--ep", 64, "--batch", 2400, "--context", 1e5, "--kv-bytes", 2048,
              "--stages", P)
    assert d["memory_per_gpu_bytes"] == pytest.approx(total_gb * 1e9, rel=1e-9)
    assert d["kv_per_gpu_bytes"] == pytest.approx(7.68e9, rel=1e-9)  # P cancels
    assert d["micro_batches"] == P and d["batch_in_flight"] == P * 2400  # T24


def test_T38_prefill_memory_per_token_falls_as_one_over_len(board):
    one = board("--len-pass", 1, "--batch", 64, "--context", 1e4)
    many = board("--len-pass", 1000, "--batch", 64, "--context", 1e4)
    mem = lambda d: (d["t_weights_s"] + d["t_kv_s"]) / (d["batch"] * d["len_pass"])  # noqa: E731
    comp = lambda d: d["t_compute_s"] / (d["batch"] * d["len_pass"])  # noqa: E731
    assert mem(one) == pytest.approx(1000 * mem(many), rel=1e-12)
    assert comp(one) == pytest.approx(comp(many), rel=1e-12)


def test_T37_price_ratio_implies_a_batch_below_B_star(board):
    """§5.3 [I]: p = B*/B + ctx/ctx*; a 5x premium at ctx = ctx*/2 means B = B*/4.5, well below 'two to three
    times B*' — the tension the spec's §8 item 9 notes. The board's own memory/compute ratio there is p."""
    d = board("--sparsity", 8, "--params-total", 8e11, "--kv-bytes", 1e11 / 3e7, "--context", 5e4,
              "--output-over-input", 5)
    assert d["batch_for_price_ratio"] == pytest.approx(2400 / 4.5, rel=1e-12)
    at = board("--sparsity", 8, "--params-total", 8e11, "--kv-bytes", 1e11 / 3e7, "--context", 5e4,
               "--batch", d["batch_for_price_ratio"])
    assert at["memory_to_compute_ratio"] == pytest.approx(5.0, rel=1e-9)


@pytest.mark.parametrize("B", [1, 10, 2999, 3000, 3001, 6000, 1e5])
def test_T46_latency_vs_batch(board, B):
    d = board("--params-total", 1e12, "--params-active", 1e11, "--ratio", 300, "--bandwidth", 1, "--gpus", 1,
              "--kv-bytes", 0, "--batch", B)
    assert d["step_s"] == pytest.approx(1e12 if B <= 3000 else B * 1e11 / 300, rel=1e-12)


def test_sparse_attention_reads_c_sqrt_context(board):
    dense = board("--context", 1e4, "--batch", 8)
    sparse = board("--context", 1e4, "--batch", 8, "--sparse-c", 2)
    assert sparse["t_kv_s"] == pytest.approx(dense["t_kv_s"] * 2 * 100 / 1e4, rel=1e-12)


def test_board_is_the_engine_with_its_switches_off():
    """Cross-check: lecture board == roofline.step with attention FLOPs, touched experts and KV writes off,
    once compute counts the same parameters (the walk's 'embedding' row changes compute only)."""
    from roofline.board import compare
    from roofline.catalog import get_catalog

    cat = get_catalog()
    r = compare(cat.model("lecture-frontier-moe"), cat.system("gb200-nvl72"), 2048, 1e5)
    board_row, emb = r["walk"][0], r["walk"][1]
    assert emb["weight_read_s"] == pytest.approx(board_row["weight_read_s"], rel=1e-12)
    assert emb["kv_read_s"] == pytest.approx(board_row["kv_read_s"], rel=1e-12)
    m = cat.model("lecture-frontier-moe")
    frac = (m.vocab * m.d_model) / r["board"]["params_active"]
    assert emb["compute_s"] == pytest.approx(board_row["compute_s"] * (1 - frac), rel=1e-9)
    assert r["walk"][-1]["step_s"] == pytest.approx(r["engine"]["step_s"], rel=1e-12)


def test_side_by_side_json_and_batch1_penalty(run_cli):
    code, out, err = run_cli("board", "-m", "lecture-frontier-moe", "-s", "gb200-nvl72", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert [w["step"] for w in d["walk"]] == ["board", "embedding", "touched experts", "attention FLOPs", "KV writes"]
    pen = {x["quantity"]: x for x in d["differences"]}["batch-1 cost penalty (×)"]
    R = d["board"]["ratio"]
    assert pen["board"] == pytest.approx(R * d["board"]["sparsity"], rel=1e-9)
    # the engine reads only the k routed experts at B = 1: its penalty sits near R, far below R·s
    assert 0.8 * R < pen["engine"] < 1.2 * R
    # one shared KV layer read by 64 layers of 64 heads: decode attention is compute-bound in fp8
    assert d["attention_flops_per_kv_byte"] == pytest.approx(1024, rel=1e-9)
    assert d["attention_flops_per_kv_byte"] > d["ridge_flops_per_byte"]


def test_side_by_side_table(run_cli):
    code, out, err = run_cli("board", "-m", "lecture-frontier-moe", "-s", "gb200-nvl72")
    assert code == 0, err
    assert "touched experts" in out and "batch-1 cost penalty" in out


def test_board_plot(run_cli, tmp_path):
    p = tmp_path / "b.png"
    code, out, err = run_cli("board", "--plot", str(p), "--json")
    assert code == 0, err and p.stat().st_size > 10_000


@pytest.mark.parametrize("args,code,msg", [
    (["--ratio", "300", "--flops", "1e15"], 2, "error: give either --ratio or --flops, not both"),
    (["--params-active", "1e11", "--sparsity", "8"], 2, "error: give either --params-active or --sparsity, not both"),
    (["-m", "lecture-frontier-moe"], 2, "error: give both --model and --system"),
    (["--kv-bytes", "2048", "--kv-layers", "1", "--head-dim", "128", "--kv-heads", "8"], 2,
     "error: give --kv-bytes, or all"),
    (["--kv-layers", "1"], 2, "error: give --kv-bytes, or all"),
    (["--params-total", "1e10", "--params-active", "1e11"], 1, "error: active parameters 1e+11 exceed total 1e+10"),
    (["--batch", "0"], 1, "error: --batch must be > 0 and finite, got 0; use at least one sequence"),
    (["--gpus", "0"], 1, "error: --gpus must be a whole number >= 1, got 0"),
    (["--sparsity", "0.5"], 1, "error: --sparsity must be >= 1"),
    (["--sparse-c", "0"], 1, "error: --sparse-c must be > 0"),
    (["--traffic", "0"], 1, "error: --traffic must be > 0"),
    (["--plot", "x.txt"], 1, "error: --plot 'x.txt' must end in .png or .svg or .pdf"),
    (["-m", "nope", "-s", "gb200-nvl72"], 1, "error: unknown model 'nope'"),
])
def test_board_errors(run_cli, args, code, msg):
    got, out, err = run_cli("board", *args)
    assert got == code
    assert err.startswith(msg) and len(err.strip().splitlines()) == 1


def test_board_request_is_what_the_cli_prints(run_cli):
    """The request layer answers `board` exactly as `roofline board --json` prints it (CLI, Python and HTTP)."""
    from roofline.requests.board import BoardRequest, run_board

    code, out, err = run_cli("board", "--sparsity", "8", "--context", "5e4", "--json")
    assert code == 0, err
    assert json.loads(out) == json.loads(json.dumps(run_board(BoardRequest.of(sparsity=8, context=5e4))))


def test_critical_batch_is_where_the_board_flips(board):
    """Property: below B_x the board is memory-bound, above it compute-bound, for several contexts."""
    for ctx in (0, 2e4, 5e4, 1e5):
        bx = board("--context", ctx)["critical_batch_with_kv"]
        assert board("--context", ctx, "--batch", bx * 0.99)["bound"] == "memory"
        assert board("--context", ctx, "--batch", bx * 1.01)["bound"] == "compute"


def test_rubin_ultra_nvl576_is_the_lectures_five_hundred_and_something():
    """[S 00:41:21]: Rubin's scale-up domain is 'five hundred and something' (576 dies): a preliminary row
    whose per-package figures reproduce NVIDIA's rack totals (5 EF FP8, 4.6 PB/s HBM4e)."""
    from roofline.catalog import get_catalog

    s = get_catalog().system("nvl576")
    assert s.id == "rubin-ultra-nvl576" and s.preliminary and s.chips * 4 == 576
    assert s.chips * s.accelerator.peak_flops("fp8") == pytest.approx(5e18, rel=0.01)
    assert s.hbm_bytes_per_s == pytest.approx(4.6e15, rel=0.01)


def test_sweep_plot_draws_one_curve_and_critical_batch_per_context(monkeypatch, tmp_path, run_cli):
    """sweep --plot with several contexts: one latency curve per context, each labelled with the critical
    batch the engine reports for that context (its bound flip)."""
    import roofline.plots.roofline as P
    from roofline import get_model, get_system, step

    figs = []
    monkeypatch.setattr(P, "save", lambda fig, path: figs.append(fig) or path)
    code, out, err = run_cli("sweep", "-m", "llama-3.1-70b", "-s", "dgx-h100", "--context", "500,1000,32000",
                             "--plot", str(tmp_path / "s.png"))
    assert code == 0, err
    labels = [ln.get_label() for ln in figs[0].axes[0].get_lines() if ln.get_label().startswith("ctx")]
    assert len(labels) == 3
    for ctx, label in zip((500, 1000, 32000), labels):
        crit = float(step(get_model("llama-3.1-70b"), get_system("dgx-h100"), 1, ctx).critical_batch_with_kv)
        assert (f"critical batch {crit:,.0f}" in label) if crit != float("inf") else ("memory-bound" in label)


def test_pipeline_hop_is_the_figure_step_pp_charges(run_cli):
    """One hop figure everywhere: board.pipeline_hop_s (catalog α + one micro-batch's activations over β) times
    P boundaries equals the pipeline communication `step --pp` prints for a rack per stage."""
    from roofline import get_model, get_system
    from roofline.board import pipeline_hop_s

    code, out, err = run_cli("step", "-m", "lecture-frontier-moe", "-s", "gb200-nvl72", "--tp", "8", "--dp", "8",
                             "--ep", "64", "--pp", "4", "--domains", "4", "-b", "8192", "-c", "100000",
                             "--weights-dtype", "fp8", "--kv-dtype", "fp8", "--json")
    assert code == 0, err
    d = json.loads(out)
    m, s = get_model("lecture-frontier-moe"), get_system("gb200-nvl72")
    hop = float(pipeline_hop_s(s, 8192 / 4, m.d_model, 64))
    assert d["pp_comm_s"] == pytest.approx(4 * hop, rel=1e-9)
    assert s.scale_out_latency_s < hop < 1e-4  # microseconds, not the lecture's milliseconds
