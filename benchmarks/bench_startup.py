"""Start-up: ``windowfit --help`` (and a command's ``--help``) as a ratio to ``python -c "import typer"``,
each run as a fresh process, timed in the same run.

Run ``python benchmarks/bench_startup.py`` (best of 15; ``--quick`` for best of 5). A ``report`` and a ``check``
of one small bundled sample (a messages file, which detection reaches last) and of a small Claude Code session
show what a command's own imports cost, the serial start of every folder run.
``--python A --python B`` times two installs (two venvs, a branch and its base) in turns in the same run, each
run of a row alternating between them, and adds B's CPU time over A's. ``--file FILE`` adds the whole
command on a large file: ``report FILE --json`` beside the bare loop it is measured against (read the file and
``orjson.loads`` each line, as a fresh process too), best of ``--file-repeat``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import cache_bytecode
from rich.console import Console
from rich.table import Table

BARE_LOOP = """
import sys
import orjson
with open(sys.argv[1], "rb") as f:
    for line in f:
        orjson.loads(line)
"""
"""The baseline of ``bench_report.py`` (``parse_lines``), as a process of its own: the command's start-up is in
the command's row and Python's own in this one."""


def best(repeat: int, command: list[str]) -> tuple[float, float]:
    """The best wall time and the best CPU time (user + system, from ``wait4``) of ``repeat`` fresh runs. On a
    shared machine the CPU time is the steadier of the two: waiting for a core does not count."""
    walls, cpus = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        walls.append(time.perf_counter() - start)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{command} failed")
        cpus.append(usage.ru_utime + usage.ru_stime)
    return min(walls), min(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="best of 5")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument(
        "--python",
        action="append",
        help="run every row with this interpreter (`PYTHON -m windowfit`), e.g. another venv's; twice to compare",
    )
    parser.add_argument("--file", type=Path, help="also time report FILE --json against the bare orjson loop")
    parser.add_argument("--file-repeat", type=int, default=3, help="best of N for the --file rows (default 3)")
    options = parser.parse_args()
    repeat = 5 if options.quick else options.repeat
    pythons = options.python or [sys.executable]
    note = cache_bytecode()
    root = Path(__file__).resolve().parents[1]
    sample = str(root / "sample_transcripts" / "en_coding_session.jsonl")
    session = str(root / "tests" / "data" / "claude_code" / "branch.jsonl")
    rows = {
        'python -c "pass"': ["-c", "pass"],
        'python -c "import typer"': ["-c", "import typer"],
        'python -c "import windowfit.fitting"': ["-c", "import windowfit.fitting"],
        "windowfit --help": ["--help"],
        "windowfit --version": ["--version"],
        "windowfit report --help": ["report", "--help"],
        "windowfit check --help": ["check", "--help"],
        "windowfit report SMALL --json": ["report", sample, "--json"],
        "windowfit report SESSION --json": ["report", session, "--json"],
        "windowfit check SMALL --format json": ["check", sample, "--budget", "100000", "--format", "json"],
        "windowfit check SESSION --format json": ["check", session, "--budget", "100000", "--format", "json"],
    }
    large: dict[str, list[str]] = {}
    if options.file:
        large = {
            "FILE: read + orjson.loads per line": ["-c", BARE_LOOP, str(options.file)],
            "windowfit report FILE --json": ["report", str(options.file), "--json"],
        }

    def command(python: str, args: list[str]) -> list[str]:
        if args[0] == "-c":
            return [python, *args]
        if options.python:
            return [python, "-m", "windowfit", *args]
        return [shutil.which("windowfit") or "windowfit", *args]

    # Each row's runs alternate between the interpreters, so that a neighbour's burst on the shared machine
    # falls on both rather than on one of them.
    seconds: dict[str, list[tuple[float, float]]] = {}
    for name, args in {**rows, **large}.items():
        found = [(float("inf"), float("inf"))] * len(pythons)
        for _ in range(options.file_repeat if name in large else repeat):
            for i, python in enumerate(pythons):
                wall, cpu = best(1, command(python, args))
                found[i] = (min(found[i][0], wall), min(found[i][1], cpu))
        seconds[name] = found
    table = Table("run")
    for i in range(len(pythons)):
        label = f" {chr(65 + i)}" if len(pythons) > 1 else ""
        for header in ("seconds (best)", "× import typer", "CPU ms (best)", "CPU × import typer"):
            table.add_column(header + label)
    if len(pythons) == 2:
        table.add_column("CPU B / A")
    for name, found in seconds.items():
        cells = [name]
        for i, (s, c) in enumerate(found):
            base, base_cpu = seconds['python -c "import typer"'][i]
            cells += [f"{s:.3f}", f"{s / base:.2f}", f"{c * 1000:.0f}", f"{c / base_cpu:.2f}"]
        if len(pythons) == 2:
            cells.append(f"{found[1][1] / found[0][1]:.2f}")
        table.add_row(*cells)
    console = Console()
    console.print(table)
    if large:
        bare, whole = seconds["FILE: read + orjson.loads per line"], seconds["windowfit report FILE --json"]
        for i in range(len(pythons)):
            label = f"{chr(65 + i)}: " if len(pythons) > 1 else ""
            console.print(
                f"{label}report FILE --json over the bare loop: {whole[i][1] / bare[i][1]:.2f}x CPU, "
                f"{whole[i][0] / bare[i][0]:.2f}x wall ({options.file}: {options.file.stat().st_size / 1e6:,.1f} MB, "
                f"best of {options.file_repeat})"
            )
    console.print(f"SMALL: {sample} (a command's start plus one small file); {note}")
    console.print(f"SESSION: {session} (a small Claude Code session: the fold, one format tried)")
    for i, python in enumerate(pythons):
        typer = subprocess.run([python, "-c", "import typer; print(typer.__version__)"], capture_output=True, text=True)
        label = f"{chr(65 + i)}: " if len(pythons) > 1 else ""
        console.print(f"{label}{python}: typer {typer.stdout.strip()}")
    console.print(f"best of {repeat}; load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(main())
