"""Hardware records: accelerators, scale-up domains (systems), and the lecture's hardware ratio R.

Records are frozen and in SI units; the catalog loader builds them from YAML in human units.
Bandwidths are per chip and per direction (unidirectional): NVLink 4's "900 GB/s" on H100 is 450 GB/s
each way. Code never names a specific chip: everything comes from the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import InputError
from .units import COMPUTE_DTYPE, dtype_bytes


@dataclass(frozen=True)
class Accelerator:
    """One accelerator SKU (datasheet dense figures, no "with sparsity" headlines)."""

    id: str
    name: str
    vendor: str
    flops_per_s: dict[str, float]  # dense FLOP/s per dtype (2 FLOPs per multiply-add)
    hbm_bytes: float
    hbm_bytes_per_s: float
    scale_up_bytes_per_s: float  # per chip, per direction
    scale_out_bytes_per_s: float  # per chip, per direction (typical NIC attach)
    tdp_w: float
    usd_per_hour: float  # rental price per accelerator-hour
    price_source: str
    price_date: str
    source: str
    date: str
    preliminary: bool = False
    aliases: tuple[str, ...] = ()
    notes: str = ""
    #: total device memory as the driver reports it to software (torch.cuda.mem_get_info's total), where a
    #: catalog row gives it; 0 = not given (hbm_bytes). Datasheets round binary capacities ("80 GB" is ~80 GiB).
    device_memory_bytes: float = 0.0
    device_memory_source: str = ""
    #: host-memory-to-GPU copy rate per GPU, bytes/s (a KV tier in host DDR loads back over it: simulate's
    #: --kv-offload-gib), where a catalog row gives a measured figure; 0 = not given
    host_link_bytes_per_s: float = 0.0
    host_link_source: str = ""

    @property
    def engine_memory_bytes(self) -> float:
        """The memory a serving engine sizes its KV pool from: `device_memory_bytes` where the catalog gives
        it (vLLM's gpu_memory_utilization and SGLang's mem_fraction_static are fractions of this total),
        else the datasheet's `hbm_bytes`."""
        return self.device_memory_bytes or self.hbm_bytes

    def peak_flops(self, dtype: str) -> float:
        """Dense peak FLOP/s for matmuls in `dtype` (the compute format of weights stored as `dtype`).

        Weight-only formats with no native cores (int4, or fp4 on a chip without fp4) run on the
        16-bit cores; an explicit error is raised when not even that exists.
        """
        dtype_bytes(dtype)  # validates the name
        want = COMPUTE_DTYPE[dtype.lower()]
        for candidate in (want, "bf16", "fp16"):
            if candidate in self.flops_per_s:
                return self.flops_per_s[candidate]
        raise InputError(
            f"{self.id} lists no {_either(dict.fromkeys((want, 'bf16', 'fp16')))} throughput; choose a dtype among "
            f"{', '.join(sorted(self.flops_per_s))}"
        )

    def drain_time_s(self) -> float:
        """HBM drain time C/BW: the time to read the whole memory once (lecture §1.5, [S 00:23:40])."""
        return self.hbm_bytes / self.hbm_bytes_per_s

    def ratio(self, dtype: str) -> float:
        """Lecture's R = (MAC/s × bytes per weight) / BW = (FLOPS/2)·b_w/BW (spec §0.3, T45)."""
        return hardware_ratio(self.peak_flops(dtype), dtype_bytes(dtype), self.hbm_bytes_per_s)


@dataclass(frozen=True)
class System:
    """A scale-up domain: n accelerators that share one fast fabric (NVLink/ICI/Infinity Fabric)."""

    id: str
    name: str
    accelerator: Accelerator
    chips: int  # accelerators per scale-up domain
    scale_up_bytes_per_s: float  # per chip, per direction, inside the domain
    scale_out_bytes_per_s: float  # per chip, per direction, leaving the domain
    scale_up_latency_s: float  # one hop (or one collective step) inside the domain
    scale_out_latency_s: float  # one hop between domains (NIC + switches)
    source: str
    date: str
    preliminary: bool = False
    aliases: tuple[str, ...] = ()
    notes: str = ""
    usd_per_hour: float = field(default=0.0)  # per accelerator; defaults to the accelerator's price
    #: the largest group whose all-reduce can read peers' buffers in one shot (0: any, as over NVLink); PCIe rows 2
    one_shot_all_reduce_max_gpus: int = 0

    @property
    def hbm_bytes(self) -> float:
        return self.chips * self.accelerator.hbm_bytes

    @property
    def hbm_bytes_per_s(self) -> float:
        return self.chips * self.accelerator.hbm_bytes_per_s

    @property
    def scale_up_over_out(self) -> float:
        """BW_up/BW_out, the lecture's "about 8x" [S 00:38:47]."""
        return self.scale_up_bytes_per_s / self.scale_out_bytes_per_s


def usd_per_gpu_hour(system: System, explicit: float | None = None) -> float:
    """The one price resolver: an explicit price (--usd-per-gpu-hour), else the system's row, else its
    accelerator's rental price (USD per accelerator-hour). Raises InputError for a price <= 0 or not finite."""
    from .errors import require_positive

    if explicit is not None:
        price = explicit
    else:
        price = system.usd_per_hour or system.accelerator.usd_per_hour
    require_positive("usd per GPU-hour", price, fix="give a rental price in USD per accelerator-hour, e.g. 2.0")
    return float(price)


def hardware_ratio(flops_per_s, bytes_per_weight, bytes_per_s):
    """R = (FLOPS/2) · b_w / BW — multiplies per second times bytes per weight over bandwidth.

    Source: spec §0.3 (lecture [S 00:18:01–00:18:32]): the lecture counts multiplies, not 2 FLOPs per
    multiply-add, and measures model size in bytes. Equivalent standard reading:
    `hardware_ratio_flops = FLOPS/BW` counts FLOPs per byte and is 2/b_w times larger.
    Broadcasts over arrays.
    """
    return (flops_per_s / 2.0) * bytes_per_weight / bytes_per_s


def hardware_ratio_flops(flops_per_s, bytes_per_s):
    """Standard arithmetic-intensity ridge point FLOPS/BW in FLOP per byte (roofline model, Williams 2009)."""
    return flops_per_s / bytes_per_s


def single_accelerator_system(acc: Accelerator, chips: int = 1) -> System:
    """A domain of `chips` copies of `acc` using the accelerator's own link figures (for --accelerator --gpus)."""
    if int(chips) != chips or chips < 1:
        raise InputError(f"--gpus must be a whole number >= 1, got {chips}")
    return System(
        id=f"{acc.id}x{int(chips)}", name=f"{int(chips)} x {acc.name}", accelerator=acc, chips=int(chips),
        scale_up_bytes_per_s=acc.scale_up_bytes_per_s, scale_out_bytes_per_s=acc.scale_out_bytes_per_s,
        scale_up_latency_s=1e-6, scale_out_latency_s=5e-6, source=acc.source, date=acc.date,
        preliminary=acc.preliminary, usd_per_hour=acc.usd_per_hour,
    )


def _either(names) -> str:
    """'a', 'a or b', 'a, b or c'."""
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
