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


def best(repeat: int, command: list[str]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="best of 5")
    parser.add_argument("--repeat", type=int, default=15)
    options = parser.parse_args()
    repeat = 5 if options.quick else options.repeat
    windowfit = shutil.which("windowfit") or "windowfit"
    note = cache_bytecode()
    sample = str(Path(__file__).resolve().parents[1] / "sample_transcripts" / "en_coding_session.jsonl")
    runs = {
        'python -c "pass"': [sys.executable, "-c", "pass"],
        'python -c "import typer"': [sys.executable, "-c", "import typer"],
        'python -c "import windowfit.fitting"': [sys.executable, "-c", "import windowfit.fitting"],
        "windowfit --help": [windowfit, "--help"],
        "windowfit --version": [windowfit, "--version"],
        "windowfit report --help": [windowfit, "report", "--help"],
        "windowfit check --help": [windowfit, "check", "--help"],
        "windowfit report SMALL --json": [windowfit, "report", sample, "--json"],
        "windowfit check SMALL --format json": [windowfit, "check", sample, "--budget", "100000", "--format", "json"],
    }
    seconds = {name: best(repeat, command) for name, command in runs.items()}
    base = seconds['python -c "import typer"']
    table = Table("run", "seconds (best)", "× import typer")
    for name, s in seconds.items():
        table.add_row(name, f"{s:.3f}", f"{s / base:.2f}")
    console = Console()
    console.print(table)
    console.print(f"SMALL: {sample} (a command's start plus one small file); {note}")
    console.print(f"best of {repeat}; load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(main())
