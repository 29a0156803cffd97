"""windowfit ``report`` and ``check`` beside ccusage 20 (``ccusage claude session``) over the same folder of
real-shaped Claude Code sessions, as ratios to a bare ``orjson.loads`` loop over every line timed in the same
run (1.0). ccusage is installed once with npm into ``benchmarks/out/ccusage``; without npm its rows are
skipped with a message.

Run ``python benchmarks/bench_ccusage.py`` (200 sessions; ``--quick`` for 40).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench_folder import bare_loop
from common import OUT, best_of
from rich.console import Console
from rich.table import Table
from sessions import benchmark_folder, folder_parser

MB = 1_000_000
CCUSAGE = "ccusage@20.0.24"


def ccusage() -> Path | None:
    """The ccusage binary, installed into benchmarks/out/ccusage on first use; None without npm."""
    prefix = OUT / "ccusage"
    binary = prefix / "node_modules" / ".bin" / "ccusage"
    if binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None:
        return None
    prefix.mkdir(parents=True, exist_ok=True)
    subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), CCUSAGE], check=True)
    return binary if binary.exists() else None


def timed(repeat: int, command: list[str], env: dict[str, str] | None = None) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(command, stdout=subprocess.DEVNULL, env=env)
        best = min(best, time.perf_counter() - start)
        if done.returncode != 0 and not (command[1:2] == ["check"] and done.returncode == 1):
            raise SystemExit(f"{' '.join(command)} exited {done.returncode}")
    return best


def main() -> None:
    bench = benchmark_folder(folder_parser(__doc__.splitlines()[0]).parse_args(), OUT)
    root, folder, files, size = bench.root, bench.folder, bench.files, bench.size  # root: a ~/.claude
    repeat = bench.repeat
    console = Console()
    console.print(
        f"{len(files)} sessions, {size / MB:.0f} MB; {os.cpu_count()} CPUs, "
        f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    base = best_of(repeat, lambda: bare_loop(files))
    windowfit = shutil.which("windowfit") or "windowfit"
    rows: list[tuple[str, float]] = [("orjson.loads loop (1 core)", base)]
    binary = ccusage()
    if binary is None:
        console.print("[yellow]npm not found: ccusage skipped[/]")
    else:
        env = {**os.environ, "CLAUDE_CONFIG_DIR": str(root), "HOME": str(root)}
        session = [str(binary), "claude", "session", "--json", "--offline"]
        rows.append((f"{CCUSAGE} claude session --json", timed(repeat, session, env)))
        rows.append((f"{CCUSAGE} ... --single-thread", timed(repeat, [*session, "--single-thread"], env)))
    report = [windowfit, "report", str(folder), "--json"]
    check = [windowfit, "check", str(folder), "--budget", "100000", "--format", "json"]
    rows.append(("windowfit report --json --jobs 1", timed(repeat, [*report, "--jobs", "1"])))
    rows.append(
        (f"windowfit report --json --jobs {os.cpu_count()}", timed(repeat, [*report, "--jobs", str(os.cpu_count())]))
    )
    rows.append(("windowfit check --format json --jobs 1", timed(repeat, [*check, "--jobs", "1"])))
    rows.append(
        (
            f"windowfit check --format json --jobs {os.cpu_count()}",
            timed(repeat, [*check, "--jobs", str(os.cpu_count())]),
        )
    )
    table = Table("run", "seconds", "MB/s", "× bare loop")
    for name, seconds in rows:
        table.add_row(name, f"{seconds:.2f}", f"{size / MB / seconds:.0f}", f"{seconds / base:.2f}")
    console.print(table)
    console.print(f"best of {repeat}; load average after {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(main())
