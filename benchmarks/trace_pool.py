"""Where a folder run's time goes with a pool: the parent's CPU before the workers start and after them (the
serial part), and each job's runs (the parent's own among them), busy time, CPU and when it stopped (the
imbalance at the end).

Run ``python benchmarks/trace_pool.py report DIR --json --jobs 2 > /dev/null`` (any ``windowfit`` arguments);
the trace goes to stderr. CPU seconds change less than wall seconds on a busy
machine: on two free cores the run takes about the parent's CPU plus the workers' CPU halved. Timestamps are
seconds from this script's start, which is after the interpreter's own start (``python -c pass``).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import Any

T0 = time.perf_counter()
LOG = os.path.join(tempfile.gettempdir(), f"windowfit-trace-{os.getpid()}.log")
marks: list[tuple[float, float, float, str]] = []


def mark(what: str) -> None:
    t = os.times()
    marks.append((time.perf_counter() - T0, t.user + t.system, t.children_user + t.children_system, what))


import windowfit.cli.scan as scan  # noqa: E402 - the clock starts before windowfit's imports
import windowfit.cli.shared as shared  # noqa: E402

original_worker = scan._scan_in_worker
original_here = scan._scan_here
original_start = scan.start_scan


def _scan_in_worker(tasks: Sequence[Any]) -> list[Any]:
    start, cpu = time.perf_counter(), time.process_time()
    done = original_worker(tasks)
    end, spent = time.perf_counter(), time.process_time() - cpu
    before = time.process_time()
    pickle.dumps(done)
    pickled = time.process_time() - before
    with open(LOG, "a") as log:
        log.write(f"{os.getpid()} {start - T0:.4f} {end - T0:.4f} {spent:.4f} {len(tasks)} {pickled:.4f}\n")
    return done


_scan_in_worker.__module__ = scan.__name__  # pickled by name into the worker: found as the module's own
_scan_in_worker.__qualname__ = "_scan_in_worker"
scan._scan_in_worker = _scan_in_worker  # type: ignore[assignment]


def _scan_here(tasks: Sequence[Any]) -> list[Any]:
    """The runs the parent takes itself (it is one of the jobs): logged as the workers' are, never pickled."""
    start, cpu = time.perf_counter(), time.process_time()
    done = original_here(tasks)
    end, spent = time.perf_counter(), time.process_time() - cpu
    with open(LOG, "a") as log:
        log.write(f"{os.getpid()} {start - T0:.4f} {end - T0:.4f} {spent:.4f} {len(tasks)} 0\n")
    return done


scan._scan_here = _scan_here  # type: ignore[assignment]


def start_scan(tasks: Sequence[Any], *, workers: int, **options: Any) -> Iterator[Any]:
    mark(f"pool of {workers} starts ({len(tasks)} files)")
    results = original_start(tasks, workers=workers, **options)
    mark("workers started")

    def collected() -> Iterator[Any]:
        yield from results
        mark("last result in")

    return collected()


shared.start_scan = start_scan  # type: ignore[assignment]


def main() -> None:
    from windowfit.cli.app import main as windowfit

    mark("windowfit's app imported")
    sys.argv = ["windowfit", *sys.argv[1:]]
    with contextlib.suppress(SystemExit):
        windowfit()
    mark("end")
    for at, own, children, what in marks:
        print(f"{at:7.3f} s  parent CPU {own:.3f} s, workers' CPU {children:.3f} s  {what}", file=sys.stderr)
    if not os.path.exists(LOG):
        return
    runs: dict[str, list[list[float]]] = {}
    with open(LOG) as log:
        for line in log:
            pid, *values = line.split()
            runs.setdefault(pid, []).append([float(v) for v in values])
    os.remove(LOG)
    ends = []
    for pid, worker in runs.items():
        ends.append(worker[-1][1])
        who = "parent" if int(pid) == os.getpid() else "worker"
        print(
            f"{who} {pid}: {len(worker)} runs, {sum(int(r[3]) for r in worker)} files, first at {worker[0][0]:.3f} s, "
            f"last done at {worker[-1][1]:.3f} s, busy {sum(r[1] - r[0] for r in worker):.3f} s, "
            f"CPU {sum(r[2] for r in worker):.3f} s, pickling its results {sum(r[4] for r in worker):.3f} CPU-s",
            file=sys.stderr,
        )
    print(f"jobs stopped {max(ends) - min(ends):.3f} s apart", file=sys.stderr)


if __name__ == "__main__":
    main()
