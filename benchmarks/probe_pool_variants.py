"""Does a change to the pool make ``check --jobs 2`` scale better? ``windowfit check DIR --budget 100000 --format
json`` over the folder of ``bench_folder.py`` with one job, two jobs, and two jobs with one change each, run as
commands in turns (``--rounds`` times), each its least wall time and least user and system CPU (the command and
its workers, from ``wait4``), its minor page faults and context switches. The changes are made by this script in
the command's process before windowfit runs, none in windowfit itself:

- ``pin``: each worker pins itself to one CPU (``os.sched_setaffinity``) before its first file;
- ``gc-off``: each worker freezes what it inherited and keeps the collector off for its whole life
  (``scan_one`` turns it off only while a file is read);
- ``name-order``: the runs sent to the workers keep ``chunk_plan``'s lengths but take the files in name order
  instead of largest first.

Run ``python benchmarks/probe_pool_variants.py`` (``--quick`` for the 40-session folder). On a shared machine
the spread between rounds is larger than any of these changes; run it on a quiet one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from common import OUT
from sessions import benchmark_folder, folder_parser

VARIANT_ENV = "WINDOWFIT_POOL_VARIANT"

LAUNCH = f"""
import gc, os, sys
import windowfit.cli.scan as scan
variant = os.environ.get({VARIANT_ENV!r}, "")
if variant in ("pin", "gc-off"):
    original = scan._scan_in_worker
    started = []
    def _scan_in_worker(tasks):
        if not started:
            started.append(True)
            if variant == "pin":
                cpus = sorted(os.sched_getaffinity(0))
                os.sched_setaffinity(0, {{cpus[os.getpid() % len(cpus)]}})  # forked workers have no pool identity
            else:
                gc.freeze()
                gc.disable()
        return original(tasks)
    _scan_in_worker.__module__, _scan_in_worker.__qualname__ = scan.__name__, "_scan_in_worker"
    scan._scan_in_worker = _scan_in_worker
elif variant == "name-order":
    planned = scan.chunk_plan
    def chunk_plan(sizes, workers):
        files = iter(range(len(sizes)))
        return [[next(files) for _ in run] for run in planned(sizes, workers)]
    scan.chunk_plan = chunk_plan
from windowfit.cli.app import main
sys.argv[0] = "windowfit"
sys.exit(main())
"""


def run(args: list[str], variant: str) -> tuple[float, float, float, int, int, int]:
    import time

    env = {**os.environ, VARIANT_ENV: variant}
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", LAUNCH, *args], stdout=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"windowfit {' '.join(args)} failed")
    seconds = time.perf_counter() - start
    return seconds, usage.ru_utime, usage.ru_stime, usage.ru_minflt, usage.ru_nvcsw, usage.ru_nivcsw


def main() -> None:
    parser = folder_parser(__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    options = parser.parse_args()
    folder: Path = benchmark_folder(options, OUT).folder
    args = ["check", str(folder), "--budget", "100000", "--format", "json", "--jobs"]
    runs = {
        "--jobs 1": ([*args, "1"], ""),
        "--jobs 2": ([*args, "2"], ""),
        "--jobs 2, pin": ([*args, "2"], "pin"),
        "--jobs 2, gc-off": ([*args, "2"], "gc-off"),
        "--jobs 2, name-order": ([*args, "2"], "name-order"),
    }
    print(f"load average before: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    got: dict[str, list[tuple[float, float, float, int, int, int]]] = {name: [] for name in runs}
    for _ in range(options.rounds):
        for name, (argv, variant) in runs.items():
            got[name].append(run(argv, variant))
    one = min(r[0] for r in got["--jobs 1"])
    for name, rows in got.items():
        wall = min(r[0] for r in rows)
        print(
            f"{name:22s} wall {wall:.2f} s ({one / wall:.2f}x --jobs 1), user {min(r[1] for r in rows):.2f}, "
            f"sys {min(r[2] for r in rows):.2f} CPU-s; minor faults {min(r[3] for r in rows)}, "
            f"context switches {min(r[4] for r in rows)} + {min(r[5] for r in rows)} involuntary; "
            f"walls {' '.join(f'{r[0]:.2f}' for r in rows)}"
        )
    print(f"load average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(main())
