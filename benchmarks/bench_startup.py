"""Start-up: ``windowfit --help`` (and a command's ``--help``) as a ratio to ``python -c "import typer"``,
each run as a fresh process, timed in the same run.

Run ``python benchmarks/bench_startup.py`` (best of 15; ``--quick`` for best of 5). A ``report`` and a ``check``
of one small bundled sample show what a command's own imports cost, the serial start of every folder run.
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
        "--python", help="run every row with this interpreter (`PYTHON -m windowfit`), e.g. another venv's"
    )
    options = parser.parse_args()
    repeat = 5 if options.quick else options.repeat
    python = options.python or sys.executable
    windowfit = [python, "-m", "windowfit"] if options.python else [shutil.which("windowfit") or "windowfit"]
    note = cache_bytecode()
    sample = str(Path(__file__).resolve().parents[1] / "sample_transcripts" / "en_coding_session.jsonl")
    runs = {
        'python -c "pass"': [python, "-c", "pass"],
        'python -c "import typer"': [python, "-c", "import typer"],
        'python -c "import windowfit.fitting"': [python, "-c", "import windowfit.fitting"],
        "windowfit --help": [*windowfit, "--help"],
        "windowfit --version": [*windowfit, "--version"],
        "windowfit report --help": [*windowfit, "report", "--help"],
        "windowfit check --help": [*windowfit, "check", "--help"],
        "windowfit report SMALL --json": [*windowfit, "report", sample, "--json"],
        "windowfit check SMALL --format json": [*windowfit, "check", sample, "--budget", "100000", "--format", "json"],
    }
    seconds = {name: best(repeat, command) for name, command in runs.items()}
    base, base_cpu = seconds['python -c "import typer"']
    table = Table("run", "seconds (best)", "× import typer", "CPU ms (best)", "CPU × import typer")
    for name, (s, c) in seconds.items():
        table.add_row(name, f"{s:.3f}", f"{s / base:.2f}", f"{c * 1000:.0f}", f"{c / base_cpu:.2f}")
    console = Console()
    console.print(table)
    typer = subprocess.run([python, "-c", "import typer; print(typer.__version__)"], capture_output=True, text=True)
    console.print(f"SMALL: {sample} (a command's start plus one small file); {note}")
    console.print(f"{python}: typer {typer.stdout.strip()}")
    console.print(f"best of {repeat}; load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(main())
