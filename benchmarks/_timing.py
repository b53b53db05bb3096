"""Timing helpers shared by the benchmarks: medians of several runs, never one sample."""

from __future__ import annotations

import statistics
import subprocess
import time


def median_time(fn, repeat: int = 5) -> float:
    """Median wall seconds of `repeat` calls of fn()."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def wall(cmd: list[str], repeat: int = 7) -> tuple[float, float]:
    """(median, min) wall seconds of a whole process `cmd`, run `repeat` times."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)
