"""``report`` and ``check`` over a folder of real-shaped Claude Code sessions: one job against two (and more),
as ratios to a bare ``orjson.loads`` loop over every line timed in the same process, and peak RSS over the
folder against the peak over its largest file.

Run ``python benchmarks/bench_folder.py`` (200 sessions; ``--quick`` for 40). The folder is generated once
into ``benchmarks/out/``. The machine may be shared: the load average and how many cores a pool of each size
got (``machine_parallelism``) are printed with the figures, and the CPU seconds of the parent and of the
workers, which a busy machine does not change as much as the wall time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import orjson
from common import OUT, best_of, cache_bytecode
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


@dataclass(frozen=True)
class Ran:
    seconds: float
    peak: int
    """Peak RSS in bytes of the largest process (``wait4``: the command or one of its workers)."""
    cpu: float
    """CPU seconds of the command and its workers."""


def run(args: list[str], *, sample: bool = False, env: dict[str, str] | None = None) -> tuple[Ran, int]:
    """One ``windowfit`` run, its output thrown away, and (with ``sample``) the peak of the proportional set
    size summed over the command and its workers, read from ``/proc`` every 10 ms (0 without it): forked
    workers share the parent's pages, so their RSS added up would count those twice."""
    start = time.perf_counter()
    child = subprocess.Popen([shutil.which("windowfit") or "windowfit", *args], stdout=subprocess.DEVNULL, env=env)
    total = 0
    while sample and child.poll() is None:
        total = max(total, tree_pss(child.pid))
        time.sleep(0.01)
    _, status, usage = os.wait4(child.pid, 0) if child.returncode is None else (0, 0, None)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status) if usage is not None else child.returncode
    if code != 0 and not (args[0] == "check" and code == 1):
        raise SystemExit(f"windowfit {' '.join(args)} failed")
    if usage is None:  # reaped by poll: no rusage of its own
        return Ran(elapsed, 0, 0.0), total
    return Ran(elapsed, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime), total


PEAK = (
    "import resource, subprocess, sys; code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code)"
)
"""A small launcher that runs a command and prints the largest peak resident set (KiB) of it and the workers it
waited for, and its exit status."""


def peak(args: list[str]) -> int:
    """The peak resident set (bytes) of the largest process of ``windowfit ARGS`` (the command or a worker), run
    by the small launcher ``PEAK``. A child's peak starts at its parent's high-water mark (the kernel keeps it
    across exec), and this benchmark's own process has read the folder by then: measured from here
    (``run``'s ``wait4``), every command showed this process's peak (28 MiB) rather than its own."""
    command = [shutil.which("windowfit") or "windowfit", *args]
    done = subprocess.run([sys.executable, "-c", PEAK, *command], capture_output=True, text=True, check=True)
    kib, code = (int(x) for x in done.stdout.split())
    if code != 0 and not (args[0] == "check" and code == 1):
        raise SystemExit(f"windowfit {' '.join(args)} failed")
    return kib * 1024


def tree_pss(pid: int) -> int:
    """The proportional set size (bytes) of ``pid`` and its children now; 0 where ``/proc`` cannot say."""
    total = 0
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    for p in [str(pid), *children]:
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
                    break
        except (OSError, ValueError):
            pass
    return total


def best_run(repeat: int, args: list[str], env: dict[str, str] | None = None) -> Ran:
    runs = [run(args, env=env)[0] for _ in range(repeat)]
    fastest = min(runs, key=lambda r: r.seconds)
    return Ran(fastest.seconds, max(r.peak for r in runs), min(r.cpu for r in runs))


def sent_back(files: list[Path]) -> list[tuple[str, float, float, int]]:
    """What each command's workers send the parent over the folder: the work's CPU seconds, the CPU seconds
    to pickle the results and unpickle them (the parent unpickles alone), and their bytes, in this process."""
    import pickle
    from dataclasses import replace
    from functools import partial

    from windowfit.cli import fit_cmd, report_cmd
    from windowfit.cli.scan import Task, scan_one
    from windowfit.cli.shared import SizeChoice
    from windowfit.fitting.fit import DEFAULTS
    from windowfit.fitting.formats import Input

    common = {"estimator": "seed", "overhead": 1.0, "window": None, "size": SizeChoice.auto, "preamble": None}
    reports = report_cmd.ReportOptions("seed", 1.0, None, None, 10, SizeChoice.auto, None)
    work = partial(report_cmd.report_work, options=reports)
    stream = partial(report_cmd.report_stream, options=reports)
    check_settings = {**common, "budget": 100_000, "threshold": 3, "fit_options": replace(DEFAULTS, budget=100_000)}
    check = partial(fit_cmd.check_work, **check_settings)
    check_stream = partial(fit_cmd.check_stream, **check_settings)
    kinds = {
        "report --json (JSON objects)": (
            partial(report_cmd.json_work, work=work),
            partial(report_cmd.json_stream, stream=stream),
        ),
        "report, text (Report objects)": (work, stream),
        "check (summary plans)": (check, check_stream),
        "check (whole plans, as before)": (check, check_stream),
    }
    found = []
    summary = fit_cmd.summary_plan
    for name, (each, streamed) in kinds.items():
        fit_cmd.summary_plan = (lambda plan: plan) if "whole" in name else summary  # type: ignore[assignment]
        # keep_text=False as the command's scan reads them (with the text kept, the fold refuses every file)
        tasks = [Task(Input(str(f), keep_text=False), None, False, True, False, each, streamed) for f in files]
        cpu = time.process_time()
        dones = [scan_one(t) for t in tasks]
        spent = time.process_time() - cpu
        cpu = time.process_time()
        blobs = [pickle.dumps(d, pickle.HIGHEST_PROTOCOL) for d in dones]
        for b in blobs:
            pickle.loads(b)
        found.append((name, spent, time.process_time() - cpu, sum(map(len, blobs))))
    fit_cmd.summary_plan = summary  # type: ignore[assignment]
    return found


def main() -> None:
    parser = folder_parser(__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[2])
    options = parser.parse_args()
    bench = benchmark_folder(options, OUT)
    folder, files, size, repeat = bench.folder, bench.files, bench.size, bench.repeat
    largest = max(files, key=lambda f: f.stat().st_size)
    console = Console()
    console.print(cache_bytecode())
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
    rows_cpu = time.process_time() - cpu  # CPU time, not wall: what a cluster bills for (file_rows turns the
    # cyclic collector off while it reads, as the command line's scan does)
    # Without a budget every session here is made into its row from the fold of its lines (at 100,000 most are
    # over the budget and loaded to plan their fit): report --format jsonl's rows
    report_rows = best_of(repeat, lambda: [file_rows(f) for f in files])
    cpu = time.process_time()
    for f in files:
        file_rows(f)
    report_rows_cpu = time.process_time() - cpu
    table = Table("run", "seconds", "MB/s", "× bare loop", "× --jobs 1", "cores free", "CPU s", title="time")
    table.add_row("orjson.loads loop", f"{base:.2f}", f"{size / MB / base:.0f}", "1.00", "", "", "")
    table.add_row(
        "fitting.rows.file_rows, in-process", f"{rows:.2f}", f"{size / MB / rows:.0f}", f"{rows / base:.2f}",
        "", "", "",
    )  # fmt: skip
    table.add_row(
        "fitting.rows.file_rows, no budget, in-process", f"{report_rows:.2f}", f"{size / MB / report_rows:.0f}",
        f"{report_rows / base:.2f}", "", "", "",
    )  # fmt: skip
    commands = {
        "report": ["report", str(folder), "--json"],
        "check": ["check", str(folder), "--budget", "100000", "--format", "json"],
    }
    for name, args in commands.items():
        # The cores a pool gets, measured just before its runs: on a shared machine it moves within a minute.
        free = {jobs: machine_parallelism(jobs) for jobs in options.jobs}
        one = best_run(repeat, [*args, "--jobs", "1"])
        table.add_row(
            f"{name} --jobs 1", f"{one.seconds:.2f}", f"{size / MB / one.seconds:.0f}", f"{one.seconds / base:.2f}",
            "1.00", "", f"{one.cpu:.2f}",
        )  # fmt: skip
        # The same without the fold of Claude Code files from their lines (fitting/ccfold.py; for check, of the
        # sessions that fit, fitting/ccplan.py)
        loaded = best_run(repeat, [*args, "--jobs", "1"], env={**os.environ, "WINDOWFIT_FASTFOLD": "0"})
        table.add_row(
            f"{name} --jobs 1, WINDOWFIT_FASTFOLD=0", f"{loaded.seconds:.2f}", f"{size / MB / loaded.seconds:.0f}",
            f"{loaded.seconds / base:.2f}", f"{one.seconds / loaded.seconds:.2f}", "", f"{loaded.cpu:.2f}",
        )  # fmt: skip
        for jobs in options.jobs:
            many = best_run(repeat, [*args, "--jobs", str(jobs)])
            table.add_row(
                f"{name} --jobs {jobs}", f"{many.seconds:.2f}", f"{size / MB / many.seconds:.0f}",
                f"{many.seconds / base:.2f}", f"{one.seconds / many.seconds:.2f}", f"{free[jobs]:.2f}",
                f"{many.cpu:.2f}",
            )  # fmt: skip
    console.print(table)
    memory = Table(
        "command",
        "--jobs",
        "largest process, folder MiB",
        "largest file alone MiB",
        "folder ÷ largest",
        "all processes (PSS), folder MiB",
        "÷ largest file alone (PSS)",
        title="peak memory",
    )
    for name, args in commands.items():
        alone = peak([args[0], str(largest), *args[2:], "--jobs", "1"])
        alone_pss = run([args[0], str(largest), *args[2:], "--jobs", "1"], sample=True)[1]
        for jobs in [1, *options.jobs]:
            most = peak([*args, "--jobs", str(jobs)])
            pss = run([*args, "--jobs", str(jobs)], sample=True)[1]
            memory.add_row(
                name, str(jobs), f"{most / 2**20:.1f}", f"{alone / 2**20:.1f}", f"{most / alone:.2f}",
                f"{pss / 2**20:.0f}" if pss else "", f"{pss / alone_pss:.2f}" if pss and alone_pss else "",
            )  # fmt: skip
    console.print(memory)
    crossing = Table("results of", "work CPU s", "pickle + unpickle CPU s", "share", "MB", title="sent back")
    for name, spent, pickled, size_ in sent_back(files):
        crossing.add_row(name, f"{spent:.2f}", f"{pickled:.3f}", f"{pickled / spent:.1%}", f"{size_ / MB:.2f}")
    console.print(crossing)
    console.print(f"load average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for jobs in options.jobs:
        console.print(f"cores available to {jobs} processes after: {machine_parallelism(jobs):.2f}")
    mean = size / len(files) / MB
    for said, spent in (("file_rows at budget 100,000", rows_cpu), ("file_rows without a budget", report_rows_cpu)):
        per_mb = spent / (size / MB)
        console.print(
            f"{said}: {per_mb * 1000:.1f} CPU-ms per MB; a million sessions of this folder's mean size "
            f"({mean:.2f} MB) ≈ {per_mb * mean * 1_000_000 / 3600:,.1f} CPU hours"
        )


if __name__ == "__main__":
    sys.exit(main())
