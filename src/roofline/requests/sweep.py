"""`sweep`: every (batch, context) point of a grid — the request, the chunked evaluation and the
streaming writers (CSV, Parquet) that let 10^8 and more points go to disk without being held.

Points are the batch-major product of the two grids (point i = batch[i // n_context], context[i %
n_context]); they are evaluated `chunk_points` at a time by one vectorised `roofline.step` call per
chunk, so memory stays bounded (about 0.5 kB per point of a chunk, whatever the sweep's size).
`bound` is a small integer column (0 = compute, 1 = memory, 2 = network: BOUND_NAMES), a dictionary column in
Parquet; `run_sweep` (the --json list, small sweeps only) spells it out.
"""

from __future__ import annotations

from typing import Any, Optional

from . import resolve, rules
from .base import Choice, Dtype, Field, Fraction, Imbalance, OptDtype, OptText, OptWhole, Price, Whole, describe
from .layout_opts import LayoutOptions

#: value of the `bound` column -> its name
BOUND_NAMES = ("compute", "memory", "network")  # engine.BOUNDS
#: step-result columns written per point, after batch and context (and before bound, fits)
KEYS = ("compute_s", "weight_read_s", "kv_read_s", "step_s", "tokens_per_s", "tokens_per_s_per_sequence",
        "usd_per_million_tokens", "mfu", "memory_per_gpu_bytes")
REALISTIC_KEYS = ("realistic_step_s", "realistic_low_s", "realistic_high_s")
#: the largest sweep printed as a table or JSON list (the rest go to --csv/--parquet)
MAX_PRINTED_POINTS = 100_000
#: automatic chunk: points per vectorised call (about 0.5 kB of temporaries per point -> ~100 MB)
DEFAULT_CHUNK_POINTS = 200_000
#: bytes on disk per point, upper estimates used to refuse outputs that cannot fit (measured in
#: benchmarks/sweep_stream.py: CSV ~200 B/point for 13 columns; Parquet with zstd ~48 B/point, under 6 B per column)
CSV_BYTES_PER_POINT = 220
PARQUET_BYTES_PER_COLUMN = 6.0


def parse_grid(text, name: str):
    """'1,8,64' -> [1, 8, 64]; '1:4096:13' -> 13 log-spaced values from 1 to 4096 (rounded, unique);
    a list of numbers is taken as given. Values must be whole numbers (batch >= 1, context >= 0)."""
    import numpy as np

    from ..errors import InputError

    bad = InputError(f"{name} {rules._shown(text)} is not a grid; expected a comma list like 1,8,64 or a log range "
                     f"start:stop:count like 1:4096:13 with 0 < start <= stop and count >= 1")
    if isinstance(text, (list, tuple)):
        given = [rules.whole(name, v, minimum=0) for v in text]
        if not given:
            raise bad
        return np.asarray(given, dtype=float)
    if not isinstance(text, str):
        raise bad
    try:
        if ":" in text:
            a, b, n = text.split(":")
            lo, hi, k = float(a), float(b), int(n)
            if not (0 < lo <= hi < float(rules.MAX_TOKENS)) or not 1 <= k <= 10**7:
                raise ValueError
            return np.unique(np.round(np.geomspace(lo, hi, k)))
        vals = np.array([float(v) for v in text.split(",") if v.strip()])
        if vals.size == 0 or not np.all(np.isfinite(vals)) or np.any(vals != np.round(vals)) or np.any(vals < 0):
            raise ValueError
        return vals
    except ValueError:
        raise bad from None


class SweepRequest(LayoutOptions):
    """A grid of batch x context for one model on one piece of hardware (or one replica of a layout: the
    LayoutOptions fields, with `step`'s rules), written where asked."""

    model: Any
    system: Optional[Any] = None
    accelerator: Optional[str] = None
    gpus: OptWhole(1) = None
    batch: Any = "1:4096:13"
    context: Any = "4096"
    phase: Choice("decode", "prefill") = "decode"
    prompt: Whole(1, rules.MAX_TOKENS) = 1
    weights_dtype: Dtype = "bf16"
    expert_weights_dtype: OptDtype = None  # the routed experts' format when it differs (FP4 MoE checkpoints)
    kv_dtype: Dtype = "bf16"
    usd_per_gpu_hour: Price = None
    compute_efficiency: Fraction = 1.0
    memory_efficiency: Fraction = 1.0
    moe_imbalance: Imbalance = 1.0
    overlap: bool = False
    realistic: bool = False
    sparse_attention: Optional[str] = None
    spec_gamma: Whole(0, 64) = 0
    spec_alpha: float = 0.7
    draft_fraction: float = 0.05
    csv: OptText = None
    parquet: OptText = None
    plot: OptText = None
    chunk_points: OptWhole(1000, 10**8) = None
    as_json: bool = Field(False, alias="json")

    def check(self) -> None:
        import numpy as np

        f = self.flag
        self._model = resolve.model(self.model, f("model"))
        self._imbalance = resolve.moe_imbalance(self.moe_imbalance, self._model, f("moe_imbalance"))
        self._system, self._chips = resolve.hardware(self.system, self.accelerator, self.gpus,
                                                     (f("system"), f("accelerator"), f("gpus")))
        self._batches = parse_grid(self.batch, f("batch"))
        self._contexts = parse_grid(self.context, f("context"))
        if np.any(self._batches < 1):
            raise rules.InputError(f"{f('batch')} values must be >= 1, got {self._batches.min():g}; use at least "
                                   f"one sequence")
        if self.phase == "decode" and self.prompt != 1:
            raise rules.UsageError(f"{f('prompt')} applies to {f('phase')} prefill only; drop it or add "
                                   f"{f('phase')} prefill")
        rules.speculation(f("spec_alpha"), self.spec_alpha, f("draft_fraction"), self.draft_fraction)
        if self.spec_gamma and self.phase != "decode":
            raise rules.UsageError(f"{f('spec_gamma')} drafts tokens for decode; drop it or use {f('phase')} decode")
        new = self.prompt if self.phase == "prefill" else 1 + self.spec_gamma
        rules.context_fits(self._model, float(self._contexts.max()) + new, f"{f('context')} + new tokens =")
        rules.dtype_supported(f("weights_dtype"), self._system.accelerator, self.weights_dtype)
        rules.expert_dtype(f("expert_weights_dtype"), self._model, self._system.accelerator, self.expert_weights_dtype)
        if self.overlap and not self.realistic:
            raise rules.UsageError(f"{f('overlap')} overlaps communication with compute in the realistic model (the "
                                   f"pure roofline already takes their max); add {f('realistic')} or drop {f('overlap')}")
        self._layout = self.layout_for(self._model, self._system, batch=self._batches, phase=self.phase,
                                       gpus=self.gpus)
        if self.realistic and self._layout is None:
            from .step import one_tp_group

            one_tp_group(self._model, self._system, self._chips)
        if self.csv is not None:
            rules.output_path(f("csv"), self.csv, (".csv",))
        if self.parquet is not None:
            rules.output_path(f("parquet"), self.parquet, (".parquet", ".pq"))
        if self.plot is not None:
            if self._layout is not None:
                raise rules.UsageError(f"{f('plot')} draws the perfect-sharding curves, not a layout's; drop "
                                       f"{f('plot')} or the layout flags (plot the --csv/--parquet columns instead)")
            rules.output_path(f("plot"), self.plot, (".png", ".svg", ".pdf"))
        n = self.points
        if (self.as_json or not (self.csv or self.parquet or self.plot)) and n > MAX_PRINTED_POINTS:
            raise rules.InputError(f"{n:,} points are too many to print (at most {MAX_PRINTED_POINTS:,}); write them "
                                   f"with {f('parquet')} FILE or {f('csv')} FILE, or use a coarser grid")
        check_disk(self, n)

    @property
    def points(self) -> int:
        return int(self._batches.size * self._contexts.size)

    @property
    def columns(self) -> tuple[str, ...]:
        return ("batch", "context", *KEYS, *(REALISTIC_KEYS if self.realistic else ()), "bound", "fits")


def check_disk(req: SweepRequest, n: int) -> None:
    """Refuse up front an output file that cannot fit in the free space of its folder."""
    import shutil
    from pathlib import Path

    ncols = len(req.columns)
    for field, per_point in (("csv", CSV_BYTES_PER_POINT * ncols / 13), ("parquet", PARQUET_BYTES_PER_COLUMN * ncols)):
        path = getattr(req, field)
        if path is None:
            continue
        need = n * per_point
        free = shutil.disk_usage(Path(path).resolve().parent).free
        if need > free:
            raise rules.InputError(f"{req.flag(field)} {path}: {n:,} points need about {need / 1e9:,.1f} GB, only "
                                   f"{free / 1e9:,.1f} GB free there; free space, write elsewhere or use a coarser grid")


def _engine_pass(req: SweepRequest, B, C, *, efficiency=None, layout=None, times_only=False):
    """The engine's array core on the chunk's points, with the inputs `engine.step` derives from the
    request: `step` itself also solves the critical batch by bisection (64 core evaluations per point),
    which a sweep's columns do not include, so the sweep calls the core once per chunk. With --spec-gamma the
    speculative step of `engine.step` (engine.speculative_pass: a verify pass of γ + 1 tokens plus γ drafts)."""
    import numpy as np

    from ..efficiency import LOW_PRECISION, Efficiency
    from ..engine import core, speculative_pass
    from ..hardware import usd_per_gpu_hour
    from ..layout import Layout
    from ..memory import DEFAULT_USABLE_MEMORY
    from ..units import dtype_bytes

    sysrec, acc = req._system, req._system.accelerator
    L = np.asarray(float(req.prompt) if req.phase == "prefill" else 1.0)
    eff = efficiency or Efficiency(compute=req.compute_efficiency, memory=req.memory_efficiency)
    ewd = req.expert_weights_dtype if req.expert_weights_dtype not in (None, req.weights_dtype) else None
    experts = (dtype_bytes(ewd), acc.peak_flops(ewd), ewd in LOW_PRECISION) if ewd else None
    lay = layout or req._layout or Layout.sharded(req._chips)
    kw = dict(b_w=dtype_bytes(req.weights_dtype), b_kv=dtype_bytes(req.kv_dtype), b_act=dtype_bytes("bf16"),
              peak_w=acc.peak_flops(req.weights_dtype), peak_act=acc.peak_flops("bf16"), eff=eff,
              low_precision=req.weights_dtype in LOW_PRECISION, imbalance=req._imbalance,
              price=usd_per_gpu_hour(sysrec, req.usd_per_gpu_hour), usable_memory=DEFAULT_USABLE_MEMORY,
              sparse=resolve.sparse_attention(req.sparse_attention), experts=experts)
    if req.spec_gamma:
        from ..speculative import Speculation

        dec = core(req._model, sysrec, lay, B, C, L, req.phase, **kw)
        sp = Speculation(req.spec_gamma, req.spec_alpha, req.draft_fraction)
        return speculative_pass(req._model, sysrec, lay, B, C, dec, sp, kw)[0]
    return core(req._model, sysrec, lay, B, C, L, req.phase, times_only=times_only, **kw)


def evaluate_chunk(req: SweepRequest, start: int, stop: int) -> dict:
    """Columns for points [start, stop) as NumPy arrays (bound as uint8 codes into BOUND_NAMES)."""
    import numpy as np

    idx = np.arange(start, stop, dtype=np.int64)
    nc = req._contexts.size
    B = req._batches[idx // nc]
    C = req._contexts[idx % nc]
    r = _engine_pass(req, B, C)
    shape = B.shape
    cols = {"batch": B, "context": C}
    for k in KEYS:
        cols[k] = np.broadcast_to(getattr(r, k), shape)
    if req.realistic:  # the family's cited factors on the same points (the layout, else the GPUs as one TP group)
        from ..efficiency import realistic
        from ..layout import Layout

        for key, which in zip(REALISTIC_KEYS, ("mid", "fast", "slow")):
            eff = realistic(req._system.accelerator, req.weights_dtype, which, overlap_comm=req.overlap,
                            expert_weights_dtype=req.expert_weights_dtype)
            t = _engine_pass(req, B, C, efficiency=eff, layout=req._layout or Layout(tp=req._chips), times_only=True)
            cols[key] = np.broadcast_to(getattr(t, "step_s", t), shape)
    cols["bound"] = np.broadcast_to(np.asarray(r.bound).astype(np.uint8), shape)
    cols["fits"] = np.broadcast_to(r.fits, shape)
    for k in KEYS + (REALISTIC_KEYS if req.realistic else ()):
        if not np.isfinite(cols[k]).all():
            rules.finite_array_check(k, cols[k], describe(req))
    return cols


def chunks(req: SweepRequest, chunk_points: int | None = None):
    """Yield (start, stop, columns) over the whole sweep, `chunk_points` points at a time."""
    n = req.points
    size = chunk_points or req.chunk_points or DEFAULT_CHUNK_POINTS
    for start in range(0, n, size):
        stop = min(start + size, n)
        yield start, stop, evaluate_chunk(req, start, stop)


def _arrow_table(cols: dict):
    import pyarrow as pa

    arrays, names = [], []
    for k, v in cols.items():
        if k == "bound":
            arrays.append(pa.DictionaryArray.from_arrays(pa.array(v, type=pa.uint8()),
                                                         pa.array(list(BOUND_NAMES))))
        elif k in ("batch", "context"):
            arrays.append(pa.array(v.astype("int64")))
        else:
            arrays.append(pa.array(v))
        names.append(k)
    return pa.Table.from_arrays(arrays, names=names)


def write(req: SweepRequest, progress=None) -> int:
    """Evaluate the sweep chunk by chunk, streaming to the --csv and --parquet files as it goes: the next
    chunk is computed while a writer thread encodes the previous one (NumPy and Arrow both release the
    GIL), with at most two chunks queued, so memory stays bounded. A failure part-way removes the partial
    files. Returns the number of points written."""
    import os
    import queue
    import threading

    paths = [p for p in (req.csv, req.parquet) if p]
    writers: dict = {}
    todo: queue.Queue = queue.Queue(maxsize=2)
    failed: list[BaseException | None] = []

    def drain():
        while True:
            item = todo.get()
            if item is None:
                return
            if failed:
                continue
            try:
                _write_table(req, writers, _arrow_table(item))
            except BaseException as exc:  # reported by the main thread
                failed.append(exc)

    worker = threading.Thread(target=drain, name="sweep-writer", daemon=True)
    worker.start()
    try:
        for start, stop, cols in chunks(req):
            if failed:
                break
            todo.put(cols)
            if progress:
                progress(stop - start)
    except BaseException:
        failed.append(None)
        raise
    finally:
        todo.put(None)
        worker.join()
        for w in writers.values():
            w.close()
        if failed:
            for p in paths:
                if os.path.exists(p):
                    os.remove(p)
    if failed and failed[0] is not None:  # the writer thread's error (disk full, permissions, ...)
        raise failed[0]
    return req.points


def _write_table(req: SweepRequest, writers: dict, table) -> None:
    if req.csv:
        if "csv" not in writers:
            import pyarrow.csv as pacsv

            writers["csv"] = pacsv.CSVWriter(req.csv, table.schema)
        writers["csv"].write_table(table)
    if req.parquet:
        if "parquet" not in writers:
            import pyarrow.parquet as pq

            writers["parquet"] = pq.ParquetWriter(req.parquet, table.schema, compression="zstd",  # ~48 B/point
                                                  use_dictionary=["bound"], write_statistics=False)
        writers["parquet"].write_table(table)


def run_sweep(req: SweepRequest) -> list[dict]:
    """The `roofline sweep --json` list: one dict per point, bound spelled out (small sweeps only; the
    request refuses more than MAX_PRINTED_POINTS without an output file)."""
    rows: list[dict] = []
    for _, _, cols in chunks(req):
        names = list(cols)
        data = [cols[k].tolist() for k in names]
        bi = names.index("bound")
        for vals in zip(*data):
            row = dict(zip(names, vals))
            row["bound"] = BOUND_NAMES[vals[bi]]
            rows.append(row)
    return rows
