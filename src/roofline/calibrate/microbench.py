"""Microbenchmarks of this machine: matmul FLOP/s by rows and dtype, memory bandwidth, op overhead.

Backends: PyTorch (CPU, or CUDA when `device='cuda'` and available) when installed, else NumPy. Every
timing is the minimum over repeats (the least-disturbed run; STREAM convention, McCalpin 1995).

    matmul FLOP/s(M)   = 2·M·K·N / t                    (rows M = tokens in a pass; K = N = `width`)
    copy bandwidth     = 2·bytes / t                    (read + write; STREAM 'copy')
    weight streaming   = K·N·b / t of x[1×K] @ W[K×N]   (matrix-vector: every weight read once)
    attention stream   = bytes of Kᵀ / t of q[B·K,G,H] @ Kᵀ[B·K,H,S]  (decode-attention KV read)
    op overhead        = t of a tiny elementwise op      (dispatch cost, no data)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError


def torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def resolve_backend(backend: str = "auto", device: str = "cpu") -> str:
    if backend not in ("auto", "torch", "numpy"):
        raise InputError(f"backend must be auto, torch or numpy, got {backend!r}")
    if device not in ("cpu", "cuda"):
        raise InputError(f"device must be cpu or cuda, got {device!r}")
    if backend == "auto":
        backend = "torch" if torch_available() else "numpy"
    if backend == "torch" and not torch_available():
        raise InputError("backend torch requested but PyTorch is not installed; pip install torch or use --backend numpy")
    if device == "cuda":
        if not torch_available():
            raise InputError("--device cuda needs PyTorch with CUDA; install it (pip install -e '.[calibrate]' "
                             "on a GPU machine) or use --device cpu")
        import torch

        if backend != "torch" or not torch.cuda.is_available():
            raise InputError("device cuda needs PyTorch with a visible CUDA GPU; use --device cpu")
    return backend


@dataclass(frozen=True)
class Microbench:
    backend: str
    device: str
    device_name: str
    matmul_rows: tuple[int, ...]
    matmul_width: int
    matmul_flops_per_s: dict[str, tuple[float, ...]]  # dtype -> FLOP/s per row count
    copy_bytes_per_s: float
    matvec_bytes_per_s: float
    op_overhead_s: float
    attention_bytes_per_s: float
    versions: dict = field(default_factory=dict)

    def peak(self, dtype: str) -> float:
        return max(self.matmul_flops_per_s[dtype])


class _Ops:
    """Backend-neutral array operations used by the benchmarks and the decode model."""

    def __init__(self, backend: str, device: str = "cpu"):
        self.backend, self.device = backend, device
        if backend == "torch":
            import torch

            self.t = torch

    def randn(self, shape, dtype="fp32", seed=0):
        if self.backend == "torch":
            g = self.t.Generator().manual_seed(seed)
            dt = {"fp32": self.t.float32, "bf16": self.t.bfloat16, "fp16": self.t.float16}[dtype]
            return (self.t.randn(*shape, generator=g) * 0.02).to(dtype=dt, device=self.device)
        if dtype != "fp32":
            raise InputError(f"the NumPy backend benchmarks fp32 only, not {dtype}")
        return (np.random.default_rng(seed).standard_normal(shape, dtype=np.float32) * 0.02)

    def sync(self):
        if self.backend == "torch" and self.device == "cuda":
            self.t.cuda.synchronize()

    def timeit(self, fn, repeats: int = 5, min_time_s: float = 0.0) -> float:
        fn()
        self.sync()
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            self.sync()
            best = min(best, time.perf_counter() - t0)
        return best


def _versions(backend: str) -> dict:
    import platform

    v = {"python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine(),
         "processor": platform.processor() or platform.machine()}
    if backend == "torch":
        import torch

        v["torch"] = str(torch.__version__)
        v["torch_threads"] = torch.get_num_threads()
        if torch.cuda.is_available():
            v["cuda"] = str(torch.version.cuda)
    return v


def _device_name(backend: str, device: str) -> str:
    if device == "cuda":
        import torch

        return torch.cuda.get_device_name(0)
    import os
    import platform

    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{name} ({os.cpu_count()} logical CPUs)"


def run_microbenchmarks(backend: str = "auto", device: str = "cpu", *, rows=(1, 4, 16, 64, 256, 1024),
                        width: int = 2048, copy_mib: int = 256, dtypes=("fp32",), repeats: int = 5) -> Microbench:
    """All microbenchmarks (a few seconds on a laptop CPU with the defaults)."""
    backend = resolve_backend(backend, device)
    ops = _Ops(backend, device)
    flops = {}
    for dt in dtypes:
        W = ops.randn((width, width), dt, seed=1)
        per = []
        for m in rows:
            x = ops.randn((m, width), dt, seed=2)
            t = ops.timeit(lambda: x @ W, repeats)
            per.append(2.0 * m * width * width / t)
        flops[dt] = tuple(per)
    n = copy_mib * 2**20 // 4
    src, dst = ops.randn((n,), seed=3), ops.randn((n,), seed=4)
    if backend == "torch":
        copy_t = ops.timeit(lambda: dst.copy_(src), repeats)
    else:
        copy_t = ops.timeit(lambda: np.copyto(dst, src), repeats)
    copy_bw = 2.0 * n * 4 / copy_t
    k = int(np.sqrt(n))  # matrix of ~copy_mib MiB
    Wv, xv = ops.randn((k, k), seed=5), ops.randn((1, k), seed=6)
    mv_t = ops.timeit(lambda: xv @ Wv, repeats)
    # decode attention shape: q[B·K, G, H] @ Kᵀ[B·K, H, S], S = 4096 cached tokens (KV bytes read once)
    ctx, bk = 4096, 64
    q, kt = ops.randn((bk, 4, 64), seed=9), ops.randn((bk, 64, ctx), seed=10)
    att_t = ops.timeit(lambda: q @ kt, repeats)
    a, b = ops.randn((8,), seed=7), ops.randn((8,), seed=8)
    reps = 2000

    def tiny():
        for _ in range(reps):
            a + b

    op_t = ops.timeit(tiny, 3) / reps
    return Microbench(backend=backend, device=device, device_name=_device_name(backend, device),
                      matmul_rows=tuple(int(r) for r in rows), matmul_width=width, matmul_flops_per_s=flops,
                      copy_bytes_per_s=copy_bw, matvec_bytes_per_s=k * k * 4 / mv_t, op_overhead_s=op_t,
                      attention_bytes_per_s=bk * 64 * ctx * 4 / att_t,
                      versions=_versions(backend))


def fit_half_rows(rows, flops_per_s) -> float:
    """T_½ of η(M) = M/(M + T_½) fitted to measured FLOP/s by rows (η relative to the maximum).

    Each point gives T_½ = M·(1/η − 1); the median of the points is robust to one noisy size.
    """
    r = np.asarray(rows, dtype=float)
    eta = np.asarray(flops_per_s, dtype=float) / np.max(flops_per_s)
    est = r * (1.0 / np.clip(eta, 1e-6, 1.0) - 1.0)
    return float(max(np.median(est), 1e-3))
