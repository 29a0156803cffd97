"""Is a pool's extra CPU work the pool adds, or the same work run slower because two processes run at once?

``check`` (or ``report --json``) over the folder ``bench_folder.py`` generates, split in two halves by file
(every other file), each half's CPU seconds (``time.process_time``) measured three ways: in this process; in
one forked child at a time (what a worker pays for being forked: copy-on-write, caches and imports, its
collector); and in two forked children running at once (what a worker of ``--jobs 2`` pays). The first two
differ only by the fork; the last two only by running together. Alternated ``--rounds`` times, the least of
each kept; the load average is printed, since other processes on the cores inflate the last figure too.

Run ``python benchmarks/probe_contention.py check`` (or ``report``; ``--quick`` for the 40-session folder;
``--profile 20`` then profiles the children both ways and shows the 20 dearest functions, each one's own CPU
seconds alone, together, and the ratio).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from common import OUT, cache_bytecode

from windowfit.cli import fit_cmd, report_cmd
from windowfit.cli.scan import Task, scan_one
from windowfit.cli.shared import SizeChoice
from windowfit.fitting.fit import DEFAULTS
from windowfit.fitting.formats import Input


def tasks_for(kind: str, files: Sequence[Path]) -> list[Task[Any]]:
    """The tasks ``windowfit check --budget 100000 --format json`` (or ``report --json``) gives its pool."""
    work: Callable[..., Any]
    stream: Callable[..., Any]
    if kind == "check":
        settings: dict[str, Any] = {
            "estimator": "seed", "overhead": 1.0, "window": None, "size": SizeChoice.auto, "preamble": None,
            "budget": 100_000, "threshold": 3, "fit_options": replace(DEFAULTS, budget=100_000),
        }  # fmt: skip
        work, stream = partial(fit_cmd.check_work, **settings), partial(fit_cmd.check_stream, **settings)
    else:
        options = report_cmd.ReportOptions("seed", 1.0, None, None, 10, SizeChoice.auto, None)
        work = partial(report_cmd.json_work, work=partial(report_cmd.report_work, options=options))
        stream = partial(report_cmd.json_stream, stream=partial(report_cmd.report_stream, options=options))
    return [Task(Input(str(f)), None, False, True, False, work, stream) for f in files]


def cpu_of(tasks: Sequence[Task[Any]]) -> float:
    start = time.process_time()
    for task in tasks:
        scan_one(task)
    return time.process_time() - start


def in_children(halves: Sequence[Sequence[Task[Any]]], *, together: bool, profile: str = "") -> float:
    """The CPU seconds of each half in a forked child, one child at a time or all at once, summed; with
    ``profile``, each child runs under ``cProfile`` (CPU-time clock) and writes its stats to ``profile-<i>``."""
    read, write = os.pipe()
    pids = []
    for i, half in enumerate(halves):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            if profile:
                profiler = cProfile.Profile(time.process_time)
                spent = profiler.runcall(cpu_of, half)
                profiler.dump_stats(f"{profile}-{i}")
            else:
                spent = cpu_of(half)
            os.write(write, f"{spent}\n".encode())
            os._exit(0)
        pids.append(pid)
        if not together:
            os.waitpid(pid, 0)
    for pid in pids if together else []:
        os.waitpid(pid, 0)
    os.close(write)
    with os.fdopen(read) as got:
        return sum(float(line) for line in got)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["check", "report"])
    parser.add_argument("--quick", action="store_true", help="the 40-session folder")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", type=int, metavar="N", default=0, help="then profile both ways, show N functions")
    options = parser.parse_args()
    root = OUT / ("folder-40-200" if options.quick else "folder-200-200")
    files = sorted(root.rglob("*.jsonl"))
    if not files:
        raise SystemExit(f"no folder at {root}: run benchmarks/bench_folder.py first")
    print(cache_bytecode())
    tasks = tasks_for(options.kind, files)
    halves = [tasks[0::2], tasks[1::2]]
    here, alone, together = [], [], []
    print(f"{options.kind}: {len(files)} files; load average before {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for _ in range(options.rounds):
        alone.append(in_children(halves, together=False))
        together.append(in_children(halves, together=True))
        here.append(sum(cpu_of(h) for h in halves))
        print(
            f"  round: this process {here[-1]:.2f}, one child at a time {alone[-1]:.2f}, two at once {together[-1]:.2f}"
        )
    print(
        f"least CPU-s: this process {min(here):.2f}; one child at a time {min(alone):.2f} "
        f"({min(alone) / min(here):.2f}x); two at once {min(together):.2f} ({min(together) / min(alone):.2f}x one "
        f"at a time); load average after {', '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )

    if options.profile:
        compare_profiles(halves, options.profile)


def compare_profiles(halves: Sequence[Sequence[Task[Any]]], shown: int) -> None:
    """Each function's own CPU seconds under ``cProfile``, one child at a time against two at once: a part of
    the work that slows more than the rest when two run together (a cache or memory bound) stands out."""
    own: list[dict[tuple[str, int, str], float]] = []
    with tempfile.TemporaryDirectory() as folder:
        for together in (False, True):
            base = os.path.join(folder, "together" if together else "alone")
            in_children(halves, together=together, profile=base)
            stats = pstats.Stats(*[f"{base}-{i}" for i in range(len(halves))])
            own.append({k: v[2] for k, v in stats.stats.items()})
    alone, together = own
    print(f"under cProfile: one child at a time {sum(alone.values()):.2f} CPU-s, two at once "
          f"{sum(together.values()):.2f}; load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    for key in sorted(alone, key=lambda k: -alone[k])[:shown]:
        name = f"{os.path.basename(key[0])}:{key[1]}({key[2]})"
        print(f"  {alone[key]:7.3f} {together.get(key, 0.0):7.3f} {together.get(key, 0.0) / alone[key]:5.2f}x  {name}")


if __name__ == "__main__":
    main()
