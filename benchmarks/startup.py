"""Benchmark: start-up of one-configuration commands, whole processes (issue 13, item 9).

Times, as fresh processes, the bare interpreter (`python -c pass`), `import roofline`, `roofline --help`
and `roofline step` for one configuration (Llama 3 70B on a DGX H100, batch 64, context 4,096), the
median and minimum of several runs each, and prints each against the interpreter and the 0.25 s target
for one configuration. The package's byte-code is compiled first (as pip does on install; with
PYTHONDONTWRITEBYTECODE set and no cache every run recompiles all modules, ~45 ms more). Nothing passes
or fails on one sample; a loaded machine shows in the minimum.
Usage: .venv/bin/python benchmarks/startup.py [repeats]
"""

import compileall
import os
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _timing import wall  # noqa: E402

TARGET_S = 0.25


def main(repeats: int = 9) -> None:
    py = sys.executable
    cli = os.path.join(os.path.dirname(py), "roofline")
    cases = [
        ("python -c pass", [py, "-c", "pass"]),
        ("import roofline", [py, "-c", "import roofline"]),
        ("roofline --help", [cli, "--help"]),
        ("roofline step (one configuration)", [cli, "step", "-m", "llama-3-70b", "-s", "dgx-h100", "-b", "64",
                                               "-c", "4096"]),
        ("roofline step --json", [cli, "step", "-m", "llama-3-70b", "-s", "dgx-h100", "-b", "64", "-c", "4096",
                                  "--json"]),
    ]
    import roofline

    compileall.compile_dir(os.path.dirname(roofline.__file__), quiet=1)  # the byte-code an install writes
    wall([py, "-c", "import roofline.engine"], repeat=1)  # warm the file cache once
    base = None
    print(f"start-up, median (min) of {repeats} fresh processes; load average {os.getloadavg()[0]:.2f}")
    for name, cmd in cases:
        med, low = wall(cmd, repeat=repeats)
        base = med if base is None else base
        extra = f"  target {TARGET_S:.2f} s: {'met' if med <= TARGET_S else 'MISSED'}" if "step" in name else ""
        print(f"  {name:36s} {med:6.3f} s ({low:.3f})  {med / base:5.1f}x the bare interpreter{extra}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 9)
