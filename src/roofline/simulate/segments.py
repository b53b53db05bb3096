"""The event loop's record of the clock: segments of k identical-shape iterations, kept in preallocated
NumPy columns, and the reconstruction of any iteration's start and end time from them (core.py).

Step j of a segment (j = 0 .. k−1) takes t0 + slope·j (context grows by one token per sequence per
iteration, the step table is linear in context within a piece), so iteration i of the segment starting
at iteration it0 and time s0 starts at s0 + j·t0 + slope·j(j−1)/2 with j = i − it0.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def view(a: np.ndarray) -> Any:
    """A memoryview of a 1-D array: scalar reads and writes at list speed without boxing into NumPy scalars
    (NumPy's type stubs do not declare the buffer protocol, hence the Any)."""
    return memoryview(a)  # type: ignore[arg-type]


def iteration_times(seg_it0, seg_start, seg_t0, seg_slope, iters):
    """(start, end) times of iterations `iters` from the segments: j = i − it0 within its segment,
    start = s0 + j·t0 + slope·j(j−1)/2, end = start + t0 + slope·j."""
    g = np.searchsorted(seg_it0, iters, side="right") - 1
    j = iters - seg_it0[g]
    start = seg_start[g] + j * seg_t0[g] + seg_slope[g] * j * (j - 1) / 2.0
    return start, start + seg_t0[g] + seg_slope[g] * j


class Segments:
    """The loop's segment record: eight preallocated NumPy columns (iteration of the first pass, start
    time, passes k, first step t0, slope, sequences per pass, tokens per pass, decoding sequences per pass),
    written one row at a time through memoryviews (as fast as list appends, 8 bytes a value instead of a list
    slot plus a Python object: 1.5·10^6 segments take 96 MB instead of about 390 MB)."""

    DTYPES = (np.int64, float, np.int64, float, float, float, float, float)

    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        self.cols = [np.empty(self.capacity, dtype=d) for d in self.DTYPES]
        self.views = tuple(view(c) for c in self.cols)

    def grow(self, used: int):
        """Double the capacity, keeping the first `used` rows; returns the new views."""
        self.capacity *= 2
        new = [np.empty(self.capacity, dtype=d) for d in self.DTYPES]
        for a, b in zip(new, self.cols):
            a[:used] = b[:used]
        self.views = ()  # release the old buffers' exports before dropping them
        self.cols = new
        self.views = tuple(view(c) for c in self.cols)
        return self.views

    def trimmed(self, used: int) -> list[np.ndarray]:
        """The used rows: views of the columns (the unused tail was never written, so never resident)."""
        self.views = ()
        return [c[:used] for c in self.cols]
