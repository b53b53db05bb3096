"""The event loop of a git revision against the working tree's, on the benchmarks/simulate.py workload (no
prefixes), timed interleaved in one process, with every Trace array compared.

Used for the prefix-caching change (issue 20): the loop without prefixes must not get slower than noise and its
results must stay bit-identical. Run: .venv/bin/python benchmarks/simulate_ab.py REV [runs] [requests]
(REV e.g. ccd975c, the loop before the cache). The old core.py is loaded from `git show REV:...` as a module of
the installed package, so it must be import-compatible with today's package (true for ccd975c).
"""

from __future__ import annotations

import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from roofline.catalog import get_catalog
from roofline.simulate import Policy, Simulation, roofline_deployment

sys.path.insert(0, str(Path(__file__).resolve().parent))
from simulate import workload  # noqa: E402  (the benchmark's own workload)


def old_core(rev: str):
    src = subprocess.run(["git", "show", f"{rev}:src/roofline/simulate/core.py"], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parent.parent).stdout
    path = Path(tempfile.mkdtemp()) / "core_old.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("roofline.simulate._core_old", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def main(rev: str, runs: int = 9, n: int = 100_000) -> None:
    cat = get_catalog()
    dep = roofline_deployment(cat.model("llama-3-70b"), cat.system("dgx-h100"))
    pol = Policy("continuous", max_seqs=256, max_batched_tokens=8192)
    wl = workload(n)
    sims = {"before": old_core(rev).Simulation(wl, dep, pol), "after": Simulation(wl, dep, pol)}
    times: dict = {k: [] for k in sims}
    for i in range(runs):
        for name in (("before", "after") if i % 2 == 0 else ("after", "before")):
            t0 = time.perf_counter()
            sims[name].run()
            times[name].append(time.perf_counter() - t0)
    a, b = sims["before"].run(), sims["after"].run()
    same = all(np.array_equal(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__
               if isinstance(getattr(a, f), np.ndarray))
    for name, t in times.items():
        print(f"{name:<8} best {min(t):.3f} s ({n / min(t):,.0f} requests/s), median {statistics.median(t):.3f} s")
    print(f"after / before: best {min(times['after']) / min(times['before']):.3f}, median "
          f"{statistics.median(times['after']) / statistics.median(times['before']):.3f}; {runs} interleaved runs "
          f"of {n:,} requests; every Trace array identical: {same}")


if __name__ == "__main__":
    main(sys.argv[1], *(int(x) for x in sys.argv[2:4]))
