"""Efficiency: the achieved fractions of peak and fixed costs the pass engine divides its ideal terms by.

One record, `Efficiency`, carries every factor the engine uses. `Efficiency()` is the pure roofline: every
fraction 1, every fixed cost 0, elementwise kernels ignored and the whole pass bounded by one max over
compute, memory and communication (the lecture's "at least this much", [S 00:02:37]). The realistic
prediction is the same engine with the factors of the accelerator's family (`family_efficiency`), read
from the catalog file `catalog/data/efficiency.yaml` (value, low, high and source of every factor), so
a `--catalog FILE` with an `efficiency:` section overrides them like any other catalog row.

The realistic model's shape (engine.py applies it):

    η_gemm(T)  = η_max · T / (T + T_½)                        GEMM efficiency vs rows T = tokens in pass
    t_gemm     = max(F_matmul/(P·η_gemm), (W + KV_write)/(BW·η_w))       each kernel class bound by its
    t_attn     = max(F_attn/(P_attn·η_attn), KV_read·G/(BW·η_kv))         own resource (per-kernel roofline)
    t_ew       = φ · elementwise bytes / (BW·η_w16)           norms, residual adds, rotary, activation, casts
    t_pass     = t_gemm + t_attn + t_ew + t_comm + L·τ_layer + τ_pass

Sources of the shape: the saturating GEMM curve is the tile-occupancy argument (a GEMM with T rows fills
⌈T/128⌉ of the 128-row output tiles of CUTLASS/cuBLAS kernels; NVIDIA "Matrix Multiplication Background
User's Guide", §"Dimension quantization effects"); the per-kernel roofline is Williams, Waterman &
Patterson, "Roofline" (CACM 2009) applied operator by operator, as LLM-Viewer (arXiv 2402.16363) and GenZ
(arXiv 2406.01698) do per layer; NVIDIA "Getting Started with CUDA Graphs" (2019) for µs-scale launch gaps.
Each factor in the data file names the microbenchmark or kernel-level figure it comes from. NO factor
was fitted to the end-to-end cases of roofline.validate.

Ignores: wave quantization at specific shapes, clock throttling under sustained load (folded into the
spread), the K and N sizes of a GEMM.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

import numpy as np

from .errors import CatalogError, InputError, require_fraction, require_positive
from .hardware import Accelerator

WHICH = ("mid", "fast", "slow")  # central value; optimistic corner; pessimistic corner
LOW_PRECISION = ("fp8", "int8", "fp6", "fp4")  # formats whose GEMMs use the low-precision factors


@dataclass(frozen=True)
class Factor:
    """One efficiency factor: central value, spread (low, high) and where it comes from."""

    value: float
    low: float
    high: float
    source: str

    def __post_init__(self):
        if not (self.low <= self.value <= self.high):
            raise InputError(f"factor needs low <= value <= high, got {self.low}, {self.value}, {self.high}")

    def pick(self, which: str, faster_when_high: bool = True) -> float:
        """'mid' → value; 'fast' → the corner that makes the pass faster; 'slow' → the other one."""
        if which == "mid":
            return self.value
        if which not in WHICH:
            raise InputError(f"which must be one of {', '.join(WHICH)}, got {which!r}")
        want_high = (which == "fast") == faster_when_high
        return self.high if want_high else self.low


#: Factors where a larger value makes the pass slower (times and the GEMM curve's half-point).
SLOWER_WHEN_HIGH = ("gemm_half_rows", "scale_up_step_latency_s", "scale_out_step_latency_s",
                    "elementwise_traffic", "layer_overhead_s", "pass_overhead_s", "kernel_latency_s",
                    "attention_latency_s")
#: Factors a catalog row may leave out (added 2026-11-24; a user's older row keeps its meaning: no per-kernel α).
OPTIONAL_FACTORS = ("kernel_latency_s", "attention_latency_s")


@dataclass(frozen=True)
class FamilyEfficiency:
    """The factors of one accelerator family (fractions of the catalog's datasheet peaks), as cited data."""

    family: str
    gemm: Factor  # large-GEMM fraction of dense 16-bit peak
    gemm_low_precision: Factor  # large-GEMM fraction of dense fp8/int8/fp4 peak
    gemm_half_rows: Factor  # T_½: rows at which a GEMM reaches half of η_max
    weight_bandwidth: Factor  # fraction of peak HBM bandwidth when streaming 16-bit weights (GEMV/GEMM)
    weight_bandwidth_low_precision: Factor  # the same for fp8/int8/fp4 weights (scaling/dequant in the kernel)
    kv_bandwidth: Factor  # fraction of peak HBM bandwidth of decode-attention KV reads
    attention_compute: Factor  # fraction of dense peak reached by attention FLOPs (flash kernels)
    scale_up_bandwidth: Factor  # achieved fraction of per-direction scale-up link rate in collectives
    scale_up_step_latency_s: Factor  # α: latency of one algorithm step of a scale-up collective
    scale_out_bandwidth: Factor  # achieved fraction of per-direction scale-out (NIC) rate in collectives
    scale_out_step_latency_s: Factor  # α of one step across domains (NIC, switches)
    elementwise_traffic: Factor  # share of model.elementwise_bytes_per_token's unfused traffic that runs
    layer_overhead_s: Factor  # fixed time per layer per pass (kernel launch gaps, small kernels)
    pass_overhead_s: Factor  # fixed time per pass (sampling, scheduling, host work)
    date: str = ""
    #: α of one GEMM or elementwise kernel and of one attention op (model.kernels_per_pass counts them)
    kernel_latency_s: Factor = Factor(0.0, 0.0, 0.0, "not given: no per-kernel latency")
    attention_latency_s: Factor = Factor(0.0, 0.0, 0.0, "not given: no per-kernel latency")
    #: Optional measured curve ((rows, η), ...) replacing η_max·T/(T+T_½) (calibrated profiles only:
    #: `roofline calibrate` measures it at the model's own GEMM shapes); log-linear interpolation in T.
    gemm_curve: tuple = ()

    def gemm_max(self, dtype: str) -> Factor:
        return self.gemm_low_precision if dtype.lower() in LOW_PRECISION else self.gemm

    def weight_stream(self, dtype: str) -> Factor:
        return self.weight_bandwidth_low_precision if dtype.lower() in LOW_PRECISION else self.weight_bandwidth

    def pick(self, name: str, which: str) -> float:
        """The factor `name` at `which` ('fast' is the corner that makes the pass faster)."""
        return getattr(self, name).pick(which, faster_when_high=name not in SLOWER_WHEN_HIGH)


FACTOR_NAMES = tuple(f.name for f in fields(FamilyEfficiency) if f.type in ("Factor", Factor))


def parse_family(row: dict, where: str) -> FamilyEfficiency:
    """A catalog `efficiency:` row → FamilyEfficiency (format in catalog/data/efficiency.yaml)."""
    if not isinstance(row, dict) or not isinstance(row.get("factors"), dict):
        raise CatalogError(f"{where}: an efficiency row needs `id` and a `factors:` mapping")
    unknown = set(row) - {"id", "date", "factors", "notes"}
    if unknown:
        raise CatalogError(f"{where}: unknown key {sorted(unknown)[0]!r}; expected id, date, factors, notes")
    facs = row["factors"]
    missing = [n for n in FACTOR_NAMES if n not in facs and n not in OPTIONAL_FACTORS]
    extra = [n for n in facs if n not in FACTOR_NAMES]
    if missing or extra:
        bad = f"missing {missing[0]!r}" if missing else f"unknown factor {extra[0]!r}"
        raise CatalogError(f"{where}: {bad}; factors are {', '.join(FACTOR_NAMES)}")
    out = {}
    for name in FACTOR_NAMES:
        if name not in facs:  # an optional factor left out
            continue
        v = facs[name]
        if (not isinstance(v, list) or len(v) != 4 or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                           for x in v[:3]) or not isinstance(v[3], str)):
            raise CatalogError(f"{where}: factor {name!r} must be [value, low, high, \"source\"], got {v!r}")
        if not all(np.isfinite(v[:3])) or min(v[:3]) < 0:
            raise CatalogError(f"{where}: factor {name!r} needs finite values >= 0, got {v[:3]}")
        try:
            out[name] = Factor(float(v[0]), float(v[1]), float(v[2]), v[3])
        except InputError as exc:
            raise CatalogError(f"{where}: factor {name!r}: {exc}") from None
    return FamilyEfficiency(family=str(row["id"]), date=str(row.get("date", "")), **out)  # type: ignore[arg-type]


def families() -> dict[str, FamilyEfficiency]:
    """Every family of the current catalog (packaged + --catalog files), by id, plus `generic` (NVIDIA's
    factors, for vendors with no row). Parsed once per catalog."""
    from .catalog import get_catalog

    cat = get_catalog()
    fams = cat.parsed.get("efficiency")
    if fams is None:
        fams = {}
        for where, row in cat.raw.get("efficiency", []):
            fam = parse_family(row, where)
            fams[fam.family] = fam  # later rows (user catalogs) override by id
        if "nvidia" not in fams:
            raise CatalogError("the efficiency catalog has no `nvidia` family (the generic fallback); restore "
                               "catalog/data/efficiency.yaml")
        fams.setdefault("generic", replace(fams["nvidia"], family="generic"))
        cat.parsed["efficiency"] = fams
    return fams


def family_for(acc: Accelerator) -> FamilyEfficiency:
    """The efficiency family of an accelerator (by its catalog vendor); `generic` (NVIDIA's factors) otherwise."""
    fams = families()
    return fams.get(acc.vendor.lower(), fams["generic"])


# ---- the record the engine uses ---------------------------------------------------------------------
@dataclass(frozen=True)
class Efficiency:
    """Achieved fractions of peak and fixed costs. `Efficiency()` is the pure roofline (an upper bound on
    speed). Any field may be a NumPy array that broadcasts with the engine's inputs (the planner's grid).

    compute: large-GEMM fraction of dense peak FLOP/s (typ. 0.4–0.8 in serving).
    memory: fraction of peak HBM bandwidth of weight reads and KV writes (typ. 0.7–0.9; FlashMLA reaches
        3.0 of 3.35 TB/s on H800, DeepSeek FlashMLA README 2025).
    gemm_half_rows: T_½ of η_gemm(T) = compute·T/(T + T_½); 0 = flat (every GEMM at `compute`).
    gemm_curve: a measured ((rows, η), ...) curve replacing the saturating form (calibrated profiles).
    kv_memory: fraction of HBM bandwidth of KV reads (None: `memory`).
    kv_read_multiplier: KV bytes read per cached byte by the decode-attention kernel (1; G = heads/kv_heads
        for kernels that load a GQA group's KV head once per query head).
    attention: fraction of peak of the attention kernels' FLOPs (None: `compute`).
    attention_at_activation_peak: attention FLOPs at the activation dtype's peak (flash kernels compute in
        bf16/fp16) rather than the weights' (the pure roofline's optimistic choice).
    elementwise: share of the unfused elementwise traffic (model.elementwise_bytes_per_token) that runs;
        0 ignores the elementwise kernels (the lecture's board does).
    elementwise_memory: fraction of HBM bandwidth of the elementwise kernels (None: `memory`).
    scale_up, scale_out: achieved fraction of per-direction link rate in collectives.
    scale_up_latency_s, scale_out_latency_s: α of one collective step (None: the system's catalog latency).
    layer_overhead_s, pass_overhead_s: fixed time per layer per pass and per pass.
    kernel_latency_s, attention_latency_s: α of one GEMM or elementwise kernel and of one attention op, paid
        per launch (model.kernels_per_pass counts the launches of a pass).
    memory_experts: weight-streaming fraction of the routed experts when their format differs from the other
        weights' (engine.step's expert_weights_dtype; None: `memory`).
    per_kernel: True — GEMMs, attention and elementwise kernels each bound by their own resource, times
        added; False — one max over the whole pass's compute and memory (the lecture's bound).
    overlap_comm: True — communication overlapped with the kernels (max); False — added.
    overlap_tp, overlap_pp, overlap_dp: training: fraction of that communication hidden behind compute
        (0: Megatron-LM 2021 sends synchronously and reduces gradients after the flush).
    family: where the factors come from ('ideal' for the pure roofline).
    """

    compute: float = 1.0
    memory: float = 1.0
    gemm_half_rows: float = 0.0
    gemm_curve: tuple = ()
    kv_memory: float | None = None
    kv_read_multiplier: float = 1.0
    attention: float | None = None
    attention_at_activation_peak: bool = False
    elementwise: float = 0.0
    elementwise_memory: float | None = None
    scale_up: float = 1.0
    scale_out: float = 1.0
    scale_up_latency_s: float | None = None
    scale_out_latency_s: float | None = None
    layer_overhead_s: float = 0.0
    pass_overhead_s: float = 0.0
    kernel_latency_s: float = 0.0
    attention_latency_s: float = 0.0
    memory_experts: float | None = None
    per_kernel: bool = False
    overlap_comm: bool = True
    overlap_tp: float = 0.0
    overlap_pp: float = 0.0
    overlap_dp: float = 0.0
    family: str = "ideal"
    extra: dict = field(default_factory=dict, compare=False)  # provenance shown in --json (sources)

    def __post_init__(self):
        for name in ("compute", "memory", "scale_up", "scale_out"):
            require_fraction(f"{name} efficiency", getattr(self, name))
        for name in ("kv_memory", "attention", "elementwise_memory", "memory_experts"):
            if getattr(self, name) is not None:
                require_fraction(f"{name} efficiency", getattr(self, name))
        for name in ("gemm_half_rows", "elementwise", "layer_overhead_s", "pass_overhead_s", "kernel_latency_s",
                     "attention_latency_s"):
            require_positive(name.replace("_", " "), getattr(self, name), allow_zero=True)
        require_positive("KV read multiplier", self.kv_read_multiplier)
        for name in ("scale_up_latency_s", "scale_out_latency_s"):
            if getattr(self, name) is not None:
                require_positive(name.replace("_", " "), getattr(self, name), allow_zero=True)
        for name in ("overlap_tp", "overlap_pp", "overlap_dp"):
            v = np.asarray(getattr(self, name), dtype=float)
            if np.any(~np.isfinite(v) | (v < 0) | (v > 1)):
                raise InputError(f"{name} must be a fraction in [0, 1], got {float(np.ravel(v)[0]):g}; "
                                 "0 = not overlapped")

    @property
    def is_ideal(self) -> bool:
        return self == Efficiency()


def _by_format(dtype, fn):
    """fn(name) for a format name, or elementwise for an array of names (once per distinct name)."""
    if isinstance(dtype, str):
        return fn(dtype)
    names, pos = np.unique(np.asarray(dtype, dtype=str), return_inverse=True)
    return np.array([fn(n) for n in names])[pos].reshape(np.shape(dtype))


def family_efficiency(fam: FamilyEfficiency, weights_dtype="bf16", which: str = "mid", *,
                      kv_read_multiplier: float = 1.0, overlap_comm: bool = False,
                      expert_weights_dtype: str | None = None) -> Efficiency:
    """The realistic Efficiency of a family at its central factors ('mid') or a corner of their spread
    ('fast', 'slow'). `weights_dtype` picks the 16-bit or low-precision GEMM and streaming factors; it may
    be an array of format names (then those fields are arrays)."""
    if which not in WHICH:
        raise InputError(f"which must be one of {', '.join(WHICH)}, got {which!r}")
    pk = fam.pick
    return Efficiency(
        compute=_by_format(weights_dtype, lambda n: fam.gemm_max(n).pick(which)),
        memory=_by_format(weights_dtype, lambda n: fam.weight_stream(n).pick(which)),
        gemm_half_rows=pk("gemm_half_rows", which), gemm_curve=fam.gemm_curve,
        kv_memory=pk("kv_bandwidth", which), kv_read_multiplier=kv_read_multiplier,
        attention=pk("attention_compute", which), attention_at_activation_peak=True,
        elementwise=pk("elementwise_traffic", which), elementwise_memory=pk("weight_bandwidth", which),
        scale_up=pk("scale_up_bandwidth", which), scale_out=pk("scale_out_bandwidth", which),
        scale_up_latency_s=pk("scale_up_step_latency_s", which),
        scale_out_latency_s=pk("scale_out_step_latency_s", which),
        layer_overhead_s=pk("layer_overhead_s", which), pass_overhead_s=pk("pass_overhead_s", which),
        kernel_latency_s=pk("kernel_latency_s", which), attention_latency_s=pk("attention_latency_s", which),
        memory_experts=(fam.weight_stream(expert_weights_dtype).pick(which) if expert_weights_dtype else None),
        per_kernel=True, overlap_comm=overlap_comm, family=fam.family)


def realistic(acc: Accelerator, weights_dtype="bf16", which: str = "mid", **options) -> Efficiency:
    """`family_efficiency` of the accelerator's family (the `--realistic` model)."""
    return family_efficiency(family_for(acc), weights_dtype, which, **options)


def gemm_efficiency(rows, eff: Efficiency):
    """η_gemm(T) = η_max · T/(T + T_½): fraction of dense peak reached by a GEMM with T rows.

    Source: tile-occupancy argument (module docstring). With a measured `gemm_curve` the curve is
    interpolated log-linearly in T and scaled by `compute` (1.0 at 'mid' for calibrated profiles).
    Broadcasts. Ignores the K and N dimensions (assumed large) and wave quantization.
    """
    t = np.asarray(rows, dtype=float)
    if eff.gemm_curve:
        r, e = (np.asarray(c, dtype=float) for c in zip(*eff.gemm_curve))
        return np.asarray(eff.compute) * np.interp(np.log(np.maximum(t, 1e-9)), np.log(r), e)
    half = np.asarray(eff.gemm_half_rows, dtype=float)
    return np.asarray(eff.compute) * t / (t + half)


def kv_read_multiplier(model, per_query_head: bool, which: str = "mid") -> float:
    """KV bytes actually read per cached byte by the decode-attention kernel: 1 for kernels that share a
    KV head across its query-head group; G = heads/kv_heads ('mid', 'slow') or 1 ('fast': perfect L2
    reuse) for kernels that load it once per query head — TensorRT-LLM's masked multi-head attention
    before its XQA kernel (NVIDIA 'New XQA-kernel provides 2.4x more Llama-70B throughput', 2024-01-30);
    FlashAttention's pack-GQA option removes the same redundant loads. Not for MLA caches."""
    if not per_query_head:
        return 1.0
    if model.mla:
        raise InputError(f"{model.id} caches MLA latents: per-query-head decode attention applies to "
                         "MHA/GQA/MQA caches only; use shared")
    return 1.0 if which == "fast" else model.heads / model.kv_heads


def factor_table(fam: FamilyEfficiency) -> list[tuple[str, float, float, float, str]]:
    """(name, value, low, high, source) rows of a family, for docs and the CLI."""
    return [(n, getattr(fam, n).value, getattr(fam, n).low, getattr(fam, n).high, getattr(fam, n).source)
            for n in FACTOR_NAMES]
