import os

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(autouse=True)
def _reset_user_catalogs():
    """Each test starts from the packaged catalog (the CLI's --catalog adds files process-wide)."""
    from roofline.catalog import reset_user_files

    reset_user_files()
    yield
    reset_user_files()


@pytest.fixture
def factors_before_kernel_latency():
    """The nvidia and amd efficiency rows as they were before per-launch kernel latencies (2026-11-24), as a
    catalog overlay: predictions pre-registered before that change are recomputed with the factors that made
    them (tests/data/efficiency_before_kernel_latency.yaml)."""
    from pathlib import Path

    from roofline.catalog import add_catalog_file

    add_catalog_file(Path(__file__).parent / "data" / "efficiency_before_kernel_latency.yaml")
    yield


def _engines_without(tmp_path, figures=(), keys=()):
    """The packaged engine rows less some figures and row keys, added as a catalog overlay (every other figure
    is today's): predictions pre-registered before a change are recomputed with the rows that made them. Fixtures
    of one test compose: each call removes what every earlier call of the test removed too."""
    from importlib import resources

    import yaml

    from roofline.catalog import add_catalog_file

    state = tmp_path / "engines_before_removed.yaml"
    if state.exists():
        before = yaml.safe_load(state.read_text())
        figures, keys = (*before["figures"], *figures), (*before["keys"], *keys)
    state.write_text(yaml.safe_dump({"figures": list(figures), "keys": list(keys)}))
    rows = yaml.safe_load(resources.files("roofline.catalog").joinpath("data/engines.yaml").read_text())["engines"]
    for row in rows:
        for name in figures:
            row["figures"].pop(name, None)
        for name in keys:
            row.pop(name, None)
    path = tmp_path / "engines_before.yaml"
    path.write_text(yaml.safe_dump({"engines": rows}))
    add_catalog_file(path)


@pytest.fixture
def vllm_filter_before_flashinfer(tmp_path):
    """Row vllm's top-k/top-p filter as set ca was registered: V1's PyTorch sort path, row vllm-v0.14's today
    (2026-11-28, after set ca was scored: FlashInfer's sampler, vLLM's default since PR #40376), as an overlay."""
    from importlib import resources

    import yaml

    from roofline.catalog import add_catalog_file

    rows = {r["id"]: r for r in yaml.safe_load(resources.files("roofline.catalog").joinpath("data/engines.yaml")
                                               .read_text())["engines"]}
    row = rows["vllm"]
    row["figures"].update({k: rows["vllm-v0.14"]["figures"][k] for k in ("filter_s_per_pass", "filter_s_per_logit")})
    path = tmp_path / "engines_vllm_filter_before.yaml"
    path.write_text(yaml.safe_dump({"engines": [row]}))
    add_catalog_file(path)
    yield


@pytest.fixture
def engines_before_eager_floor(tmp_path):
    """The engine rows before the host floor of passes outside CUDA graphs (2026-11-26: `eager_s_per_kernel`,
    and the `cuda_graph_max_batch` limit that uses it)."""
    _engines_without(tmp_path, figures=("eager_s_per_kernel",), keys=("cuda_graph_max_batch",))
    yield


@pytest.fixture
def engines_before_schedule_ahead(tmp_path):
    """The engine rows before `schedule_ahead` (2026-11-26, after serving set v was scored: vLLM V1's asynchronous
    scheduling, SGLang's overlap loop and TensorRT-LLM's overlap executor form the next batch while one runs)."""
    _engines_without(tmp_path, keys=("schedule_ahead",))
    yield


@pytest.fixture
def datasheet_memory(monkeypatch):
    """KV pools sized from the datasheet capacity, as every serving set up to w and the scenario rows were
    registered (2026-11-26: from the memory the driver reports, accelerators.yaml `device_memory_gib`;
    Accelerator.engine_memory_bytes)."""
    from roofline.hardware import Accelerator

    monkeypatch.setattr(Accelerator, "engine_memory_bytes", property(lambda self: self.hbm_bytes))
    yield


@pytest.fixture
def step_table_without_graph_breaks(monkeypatch):
    """The step table's batch grid without the largest CUDA-graphed batch and the next one, as every serving set up
    to z and the scenario rows were registered (2026-11-26: OverheadStep.batch_breaks, so a pass at the graph limit
    is not read as a blend of the graphed time and the eager floor)."""
    from roofline.simulate.overheads import OverheadStep

    monkeypatch.setattr(OverheadStep, "batch_breaks", property(lambda self: ()))
    yield


@pytest.fixture
def tokeniser_in_parallel(monkeypatch):
    """Every request tokenised at once (a pure delay before the scheduler), as every serving set up to ad and the
    scenario rows were registered (2026-11-27: one tokeniser, first come first served, simulate/overheads.py
    SERIAL_TOKENIZER)."""
    import roofline.simulate.overheads as O

    monkeypatch.setattr(O, "SERIAL_TOKENIZER", False)
    yield


@pytest.fixture
def itl_from_every_sequence(monkeypatch):
    """ITL gaps counted for every sequence in a pass, prompt chunks included, as every serving set up to af and the
    scenario rows were registered (2026-11-27: validate/serving.py ITL_GAPS_FROM_DECODES)."""
    import roofline.validate.serving as S

    monkeypatch.setattr(S, "ITL_GAPS_FROM_DECODES", False)
    yield


@pytest.fixture
def itl_first_gap_one_pass(monkeypatch):
    """Under policy 'separate' every prompt started since the last decode pass takes that pass alone as its first
    inter-token gap, as every serving set up to ak was registered (2026-11-27: validate/serving.py
    ITL_FIRST_GAP_FROM_ITS_PREFILL)."""
    import roofline.validate.serving as S

    monkeypatch.setattr(S, "ITL_FIRST_GAP_FROM_ITS_PREFILL", False)
    yield


@pytest.fixture
def moe_per_expert_gemms(monkeypatch):
    """A routed-expert shape without MoE rows composed from per-expert GEMMs, as every serving set up to am was
    registered (2026-11-27: kernel_pass.MOE_PER_EXPERT_GEMMS)."""
    from roofline import kernel_pass as KP

    monkeypatch.setattr(KP, "MOE_PER_EXPERT_GEMMS", True)
    yield


@pytest.fixture
def dense_gemms_per_tensor(monkeypatch):
    """Dense GEMMs of a block-scaled FP8 checkpoint read from the per-tensor FP8 rows, as every serving set up to at
    was registered (2026-11-27: kernel_pass.BLOCK_SCALED_DENSE)."""
    from roofline import kernel_pass as KP

    monkeypatch.setattr(KP, "BLOCK_SCALED_DENSE", False)
    yield


@pytest.fixture
def moe_shape_not_transferred(monkeypatch):
    """A routed-expert shape without MoE rows not read from the nearest measured shape, as every serving set up to am
    was registered (2026-11-27: kernel_pass.MOE_SHAPE_TRANSFER)."""
    from roofline import kernel_pass as KP

    monkeypatch.setattr(KP, "MOE_SHAPE_TRANSFER", False)
    yield


@pytest.fixture
def moe_tokens_not_gathered(monkeypatch):
    """A MoE group serving several attention groups all-reduces one group's tokens over its GPUs, as serving set al
    was registered (2026-11-27: layout.MOE_GATHERS_GROUPS)."""
    from roofline import layout as LY

    monkeypatch.setattr(LY, "MOE_GATHERS_GROUPS", False)
    yield


@pytest.fixture
def collective_sizes_in_bytes(monkeypatch):
    """The collective tables' size axis read as bytes (it counts 16-bit elements), as every serving set up to af and
    the scenario rows were registered (2026-11-27: kernels.COLLECTIVE_SIZE_IN_ELEMENTS)."""
    from roofline import kernels as K

    monkeypatch.setattr(K, "COLLECTIVE_SIZE_IN_ELEMENTS", False)
    yield


@pytest.fixture
def launches_counted_twice(monkeypatch):
    """The launches inside a measured table's op (a linear layer's input quantisation, the fused MoE op's own
    kernels) left in the factor model's overhead beside the table's time, as every serving set up to ac and the
    scenario rows were registered (2026-11-27: model.kernels_inside_measured_ops)."""
    import numpy as np

    from roofline import model as M

    real = M.kernels_inside_measured_ops
    monkeypatch.setattr(M, "kernels_inside_measured_ops",
                        lambda m, lp=False, lpe=None: tuple(0 * np.asarray(x) for x in real(m, lp, lpe)))
    yield


@pytest.fixture
def closed_loop_rounds_before_fixed_point(monkeypatch):
    """The closed-loop client as every serving set up to w was registered: the fixed point over whole runs
    (bench.closed_loop_run) stopped after ceil(n/C) + 1 rounds (2026-11-26: now solved inside the run,
    bench.closed_loop_client)."""
    from dataclasses import replace

    import numpy as np

    from roofline.simulate.overheads import run_with_engine
    from roofline.validate import bench

    def rounds(wl, ovh, c, one):
        return bench.closed_loop_run(lambda s: run_with_engine(replace(wl, arrival_s=np.asarray(s, dtype=float)), ovh, one),
                                     wl.n, c, release_s=wl.arrival_s, iterations=-(-wl.n // max(1, min(c, wl.n))) + 1)

    monkeypatch.setattr(bench, "closed_loop_client", rounds)
    yield


@pytest.fixture
def closed_loop_rounds_before_fixed_point_rows(monkeypatch):
    """The scenario rows' closed-loop client as MoE set 6 was registered: the fixed point over whole runs stopped
    after 12 rounds (bench.closed_loop_run; 2026-11-26: now solved inside the run, bench.closed_loop_rows)."""
    from roofline.validate import bench

    def rounds(simulate, n, c):
        last = {}

        def once(sends):
            last["tr"], last["ovh"] = simulate(sends)
            return last["tr"]

        return bench.closed_loop_run(once, n, c, iterations=12), last["ovh"]

    monkeypatch.setattr(bench, "closed_loop_rows", rounds)
    yield


@pytest.fixture
def engines_before_graph_limit(tmp_path):
    """The engine rows before the CUDA-graph batch limit (2026-11-26, after serving set g was scored)."""
    _engines_without(tmp_path, keys=("cuda_graph_max_batch",))
    yield


@pytest.fixture
def engines_before_per_worker_families(tmp_path):
    """The engine rows before the per-worker term was restricted to NVIDIA (2026-11-26, after sets h and i)."""
    _engines_without(tmp_path, keys=("per_worker_families",))
    yield


@pytest.fixture
def mixed_without_kernel_tables(monkeypatch):
    """Mixed and prefill passes from the factor model even with `kernels: tables`, as before 2026-11-26 (measured
    kernels in mixed passes, disclosed on sets f-h)."""
    from roofline.simulate.steptable import MixedPass

    monkeypatch.setattr(MixedPass, "_tabulate_kernels", lambda self, *args: None)
    yield


@pytest.fixture
def kernels_with_fp4_alias(monkeypatch):
    """The catalog's fp4 read Blackwell's measured nvfp4 rows, as set o's predictions were registered (2026-11-26;
    withdrawn after set o was scored, disclosed there)."""
    from roofline import kernels as K

    monkeypatch.setitem(K._DTYPE_ALIAS, "fp4", "nvfp4")
    yield


@pytest.fixture
def moe_rows_balanced(monkeypatch):
    """The measured MoE rows read at a balanced router, as every serving set up to o was registered (the power-law
    rows, AIConfigurator's default, were adopted on 2026-11-26 before set p; docs/kernels.md "MoE routing")."""
    from roofline import kernels as K

    monkeypatch.setattr(K, "MOE_ROUTING", "balanced")
    yield


@pytest.fixture
def run_cli(capsys):
    """Run the CLI in-process; return (exit code, stdout, stderr)."""
    from roofline.cli import main

    def run(*args):
        try:
            code = main(list(args))
        except SystemExit as exc:
            code = exc.code
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


@pytest.fixture
def stores_free_and_at_once(monkeypatch):
    """Host- and disk-tier writes free and visible at once, as sets cl and cn were registered (2026-11-28:
    simulate.prefixes.WRITES_QUEUE)."""
    from roofline.simulate import prefixes

    monkeypatch.setattr(prefixes, "WRITES_QUEUE", False)
    yield


@pytest.fixture
def one_shot_all_reduce_on_pcie(monkeypatch):
    """One-shot all-reduce for any TP group on every fabric, as every set up to cq was registered (2026-11-29:
    engine.PEER_ALL_REDUCE_LIMIT)."""
    from roofline import engine

    monkeypatch.setattr(engine, "PEER_ALL_REDUCE_LIMIT", False)
    yield
