"""Where independent tasks run: in this process, on a local Dask cluster, or on an existing one.

`run_tasks(fn, tasks, names, workers=..., scheduler=...)` returns `[fn(*t) for t in tasks]` in task
order, whatever runs them, so a task's result never depends on the executor: each task carries its
own inputs (seeds included, derived from the run's seed by the caller), and results are gathered by
index, not by completion order.

- `workers=1` (or a small job under `workers=None`): a plain loop in this process — no Dask import.
- `workers=N >= 2`: a `dask.distributed.LocalCluster` of N single-threaded worker processes bound to
  127.0.0.1 (no dashboard), started for the call and closed after it. The simulator is pure Python
  holding the GIL, so processes, not threads, give parallelism.
- `scheduler="tcp://HOST:PORT"`: a `Client` on an existing Dask scheduler (a `dask-scheduler` on a
  laptop, a SLURM job through dask-jobqueue, a Kubernetes deployment; see docs/distributed.md). The
  workers there must have the same `roofline` installed.

Failures: bad input (a RooflineError) is never retried; it is raised again with the task's name
(`scenario 'rate=5 layout=TP3': TP 3 does not divide ...`). On Dask, any other exception is retried
`retries` times and a task whose worker process dies is re-run by the scheduler (up to its
`allowed-failures`, default 3); the last error is raised as a RooflineError naming the task, and the
other tasks are cancelled. In process, such an exception is a bug and propagates unchanged. Dask is
imported only here and only when a cluster is used, so `import roofline` and one-off simulations stay
light. Why Dask rather than Ray: docs/distributed.md.
"""

from __future__ import annotations

import os
from typing import Callable, Sequence

from .errors import InputError, RooflineError

# Below this much work (the caller's estimate, e.g. simulated requests) `workers=None` stays in
# process: a LocalCluster takes ~1-3 s to start its processes, more than such a grid takes to run.
IN_PROCESS_BELOW = 200_000


def default_workers(work: float, tasks: int) -> int:
    """Workers for `workers=None`: 1 (in process) for small jobs or a single task, else one per core."""
    if tasks < 2 or work < IN_PROCESS_BELOW:
        return 1
    return max(1, min(tasks, os.cpu_count() or 1))


def check_workers(workers: int | None, scheduler: str | None) -> None:
    """One-line InputError for a bad --workers / --scheduler."""
    if workers is not None and (int(workers) != workers or workers < 1):
        raise InputError(f"--workers must be a whole number >= 1, got {workers}; 1 runs in this process")
    if scheduler is not None:
        if workers is not None and workers > 1:
            raise InputError("give --workers or --scheduler, not both: the scheduler's cluster has its own workers")
        if "://" not in scheduler or not scheduler.split("://", 1)[1]:
            raise InputError(f"--scheduler {scheduler!r} is not an address; expected tcp://HOST:PORT of a running "
                             f"Dask scheduler")


def run_tasks(fn: Callable, tasks: Sequence[tuple], names: Sequence[str], *, workers: int | None = 1,
              scheduler: str | None = None, retries: int = 2, progress: Callable[[int], None] | None = None,
              work: float = 0.0) -> list:
    """[fn(*t) for t in tasks] in task order, in process or on Dask (module docstring). `names` label
    the tasks in errors; `progress(k)` is called as tasks finish; `work` sizes `workers=None`."""
    if len(names) != len(tasks):
        raise ValueError("one name per task")
    check_workers(workers, scheduler)
    if retries < 0:
        raise InputError(f"retries must be >= 0, got {retries}")
    n_workers = default_workers(work, len(tasks)) if workers is None else int(workers)
    if scheduler is None and (n_workers == 1 or len(tasks) <= 1):
        return _in_process(fn, tasks, names, progress)
    return _on_dask(fn, tasks, names, n_workers, scheduler, retries, progress)


def _in_process(fn, tasks, names, progress) -> list:
    """In this process: no retries (nothing can die but this process, and the simulation is deterministic);
    a RooflineError gets the task's name, anything else is a bug and propagates unchanged."""
    out = []
    for t, name in zip(tasks, names):
        try:
            out.append(fn(*t))
        except RooflineError as exc:
            raise _named(exc, name) from None
        if progress is not None:
            progress(1)
    return out


def local_cluster(n_workers: int):
    """A dask.distributed LocalCluster of `n_workers` single-threaded processes on 127.0.0.1, no dashboards.

    Dask's nannies start workers with MALLOC_TRIM_THRESHOLD_=65536, which pins glibc's mmap threshold:
    every NumPy array over 128 kB is then mapped and unmapped afresh, and the simulator spent twice the
    CPU time in a worker as in this process (measured: 0.50 vs 0.26 s for one 40,000-request scenario;
    0.30 s with it unset). None unsets it (distributed.nanny._get_env_variables).
    The workers' statistical profiler (a thread sampling the task's stack every 10 ms) is off and the
    event-loop tick is 1 s instead of 20 ms: every wake-up takes the GIL from the simulation thread,
    which on a busy machine can wait long to get it back (no dashboard here shows the profiles anyway)."""
    import dask
    from distributed import LocalCluster

    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
                          "distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "1s"}):
        return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                            dashboard_address=None, worker_dashboard_address=None, silence_logs=50)


def _on_dask(fn, tasks, names, n_workers, scheduler, retries, progress) -> list:
    try:
        from distributed import Client, as_completed
    except ImportError:  # pragma: no cover - dask[distributed] is a dependency
        raise InputError("running on several workers needs dask[distributed]; pip install 'dask[distributed]' "
                         "or use --workers 1") from None
    cluster = None
    try:
        if scheduler is None:
            cluster = local_cluster(n_workers)
            client = Client(cluster)
        else:
            try:
                client = Client(scheduler, timeout="10s")
            except OSError as exc:
                raise InputError(f"cannot reach the Dask scheduler at {scheduler}: {exc}; start one with "
                                 f"`dask scheduler` or check the address") from None
        with client:
            futures = [client.submit(_guarded, fn, *t, key=f"roofline-task-{i}-{os.getpid()}-{id(tasks)}",
                                     pure=False, retries=retries) for i, t in enumerate(tasks)]
            index = {f.key: i for i, f in enumerate(futures)}
            out: list = [None] * len(tasks)
            for f in as_completed(futures):
                i = index[f.key]
                if f.status != "finished":
                    err = f.exception()
                    for g in futures:
                        g.cancel()
                    if isinstance(err, RooflineError):
                        raise _named(err, names[i]) from None
                    raise RooflineError(f"scenario {names[i]!r} failed after {retries + 1} attempts: "
                                        f"{type(err).__name__}: {err}") from None
                ok, value = f.result()
                f.release()
                if not ok:  # bad input, returned rather than raised so that it is not retried
                    for g in futures:
                        g.cancel()
                    raise _named(value, names[i]) from None
                out[i] = value
                if progress is not None:
                    progress(1)
            return out
    finally:
        if cluster is not None:
            cluster.close()


def _guarded(fn, *args):
    """Run on a worker: (True, result), or (False, error) for a RooflineError (bad input: retrying cannot
    help, so it is returned instead of raised; anything else raises and is retried)."""
    try:
        return True, fn(*args)
    except RooflineError as exc:
        try:  # an error class with its own constructor would not unpickle on the client
            return False, type(exc)(str(exc))
        except TypeError:
            return False, InputError(str(exc))


def _named(exc: RooflineError, name: str) -> RooflineError:
    """The same kind of error, its message prefixed with the task's name."""
    msg = f"scenario {name!r}: {exc}"
    try:
        return type(exc)(msg)
    except TypeError:  # an error class with its own constructor (UnknownEntryError)
        return InputError(msg)
