"""``report`` and ``check`` over a folder of real-shaped Claude Code sessions: one job against two (and more),
as ratios to a bare ``orjson.loads`` loop over every line timed in the same process, and peak RSS over the
folder against the peak over its largest file.

Run ``python benchmarks/bench_folder.py`` (200 sessions; ``--quick`` for 40). The folder is generated once
into ``benchmarks/out/``. The machine may be shared: the load average is printed with the figures.
"""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson
from common import OUT, best_of
from rich.console import Console
from rich.table import Table
from sessions import benchmark_folder, folder_parser

from windowfit.fitting.rows import file_rows

MB = 1_000_000


def bare_loop(files: list[Path]) -> int:
    n = 0
    for path in files:
        with open(path, "rb") as f:
            for line in f:
                orjson.loads(line)
                n += 1
    return n


def burn(n: int) -> int:
    x = 0
    for i in range(n):
        x += i * i
    return x


def machine_parallelism(jobs: int, n: int = 4_000_000) -> float:
    """How many cores this shared machine gives right now: ``jobs`` pure-Python loops one after another,
    against the same loops over a pool of ``jobs`` processes (``jobs`` on an idle machine, 1.0 when the other
    cores are busy). The folder's speed-up can be no better than this."""
    import multiprocessing

    serial = best_of(3, lambda: [burn(n) for _ in range(jobs)])
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        pool.map(burn, [1] * jobs)
        parallel = best_of(3, lambda: pool.map(burn, [n] * jobs))
    return serial / parallel


def run(args: list[str]) -> tuple[float, int]:
    """Seconds and peak RSS (bytes) of one ``windowfit`` run, its output thrown away."""
    start = time.perf_counter()
    child = subprocess.Popen([shutil.which("windowfit") or "windowfit", *args], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0 and not (args[0] == "check" and code == 1):
        raise SystemExit(f"windowfit {' '.join(args)} failed")
    return elapsed, usage.ru_maxrss * 1024


def best_run(repeat: int, args: list[str]) -> tuple[float, int]:
    runs = [run(args) for _ in range(repeat)]
    return min(t for t, _ in runs), max(m for _, m in runs)


def main() -> None:
    parser = folder_parser(__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[2])
    options = parser.parse_args()
    bench = benchmark_folder(options, OUT)
    folder, files, size, repeat = bench.folder, bench.files, bench.size, bench.repeat
    largest = max(files, key=lambda f: f.stat().st_size)
    console = Console()
    console.print(
        f"{len(files)} sessions, {size / MB:.0f} MB (largest {largest.stat().st_size / MB:.1f} MB); "
        f"{os.cpu_count()} CPUs, load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    for jobs in options.jobs:
        console.print(
            f"cores available to {jobs} processes now (a CPU loop, serial ÷ pooled): {machine_parallelism(jobs):.2f}"
        )
    base = best_of(repeat, lambda: bare_loop(files))
    rows = best_of(repeat, lambda: [file_rows(f, budget=100_000) for f in files])
    cpu = time.process_time()
    for f in files:
        file_rows(f, budget=100_000)
    rows_cpu = time.process_time() - cpu  # CPU time, not wall: what a cluster bills for
    cpu = time.process_time()
    for f in files:  # as the CLI's scan runs each file: the cyclic collector off meanwhile
        gc.disable()
        try:
            file_rows(f, budget=100_000)
        finally:
            gc.enable()
    rows_no_gc = time.process_time() - cpu
    table = Table("run", "seconds", "MB/s", "× bare loop", "× --jobs 1", "peak RSS MiB")
    table.add_row("orjson.loads loop", f"{base:.2f}", f"{size / MB / base:.0f}", "1.00", "", "")
    table.add_row(
        "fitting.rows.file_rows, in-process", f"{rows:.2f}", f"{size / MB / rows:.0f}", f"{rows / base:.2f}", "", ""
    )
    commands = {
        "report": ["report", str(folder), "--json"],
        "check": ["check", str(folder), "--budget", "100000", "--format", "json"],
    }
    peaks: dict[str, int] = {}
    for name, args in commands.items():
        one, peak = best_run(repeat, [*args, "--jobs", "1"])
        peaks[name] = peak
        table.add_row(
            f"{name} --jobs 1",
            f"{one:.2f}",
            f"{size / MB / one:.0f}",
            f"{one / base:.2f}",
            "1.00",
            f"{peak / 2**20:.0f}",
        )
        for jobs in options.jobs:
            many, _ = best_run(repeat, [*args, "--jobs", str(jobs)])
            table.add_row(
                f"{name} --jobs {jobs}",
                f"{many:.2f}",
                f"{size / MB / many:.0f}",
                f"{many / base:.2f}",
                f"{one / many:.2f}",
                "",
            )
    console.print(table)
    memory = Table("peak RSS, --jobs 1", "folder MiB", "largest file MiB", "folder ÷ largest")
    for name, args in commands.items():
        _, alone = run([args[0], str(largest), *args[2:], "--jobs", "1"])
        memory.add_row(name, f"{peaks[name] / 2**20:.0f}", f"{alone / 2**20:.0f}", f"{peaks[name] / alone:.2f}")
    console.print(memory)
    console.print(f"load average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for jobs in options.jobs:
        console.print(f"cores available to {jobs} processes after: {machine_parallelism(jobs):.2f}")
    console.print(
        f"file_rows CPU time with the collector off per file: {rows_no_gc:.2f} s against {rows_cpu:.2f} s "
        f"({1 - rows_no_gc / rows_cpu:.0%} less)"
    )
    per_mb = rows_cpu / (size / MB)
    mean = size / len(files) / MB
    console.print(
        f"file_rows: {per_mb * 1000:.1f} CPU-ms per MB; a million sessions of this folder's mean size "
        f"({mean:.2f} MB) ≈ {per_mb * mean * 1_000_000 / 3600:,.1f} CPU hours"
    )


if __name__ == "__main__":
    sys.exit(main())
