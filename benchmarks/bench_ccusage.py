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
from common import OUT, best_of, cache_bytecode
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


def run_once(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """One run's wall time and CPU time (user + system of the process and the workers it waited for, from
    ``wait4``: on a shared machine the steadier of the two, waiting for a core does not count)."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0 and not ("check" in command and code == 1):  # check exits 1 when a session is too long
        raise SystemExit(f"{' '.join(command)} exited {code}")
    return wall, usage.ru_utime + usage.ru_stime


def timed(repeat: int, commands: list[list[str]], env: dict[str, str] | None = None) -> list[tuple[float, float]]:
    """The best wall and CPU time of each command over ``repeat`` rounds, the commands run in turns (ABAB)
    within each round, so that a change of the machine's load falls on all of them."""
    best = [(float("inf"), float("inf"))] * len(commands)
    for _ in range(repeat):
        for i, command in enumerate(commands):
            wall, cpu = run_once(command, env)
            best[i] = (min(best[i][0], wall), min(best[i][1], cpu))
    return best


def main() -> None:
    parser = folder_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--against",
        metavar="COMMAND",
        help="another windowfit to time in turns with this one, e.g. '/tmp/old/bin/python -m windowfit' "
        "(a checkout of main with its own interpreter or PYTHONPATH)",
    )
    options = parser.parse_args()
    bench = benchmark_folder(options, OUT)
    root, folder, files, size = bench.root, bench.folder, bench.files, bench.size  # root: a ~/.claude
    repeat = bench.repeat
    console = Console()
    console.print(
        f"{len(files)} sessions, {size / MB:.0f} MB; {os.cpu_count()} CPUs, "
        f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    console.print(cache_bytecode())  # as a wheel's install writes it: else every run compiles windowfit anew
    base = best_of(repeat, lambda: bare_loop(files))
    base_cpu = min(_cpu(files) for _ in range(repeat))
    windowfit = [shutil.which("windowfit") or "windowfit"]
    rows: list[tuple[str, float, float]] = [("orjson.loads loop (1 core)", base, base_cpu)]
    binary = ccusage()
    if binary is None:
        console.print("[yellow]npm not found: ccusage skipped[/]")
    else:
        env = {**os.environ, "CLAUDE_CONFIG_DIR": str(root), "HOME": str(root)}
        session = [str(binary), "claude", "session", "--json", "--offline"]
        (multi, single) = timed(repeat, [session, [*session, "--single-thread"]], env)
        rows.append((f"{CCUSAGE} claude session --json", *multi))
        rows.append((f"{CCUSAGE} ... --single-thread", *single))
    cpus = str(os.cpu_count())
    lines = [
        ("report --json --jobs 1", ["report", str(folder), "--json", "--jobs", "1"]),
        (f"report --json --jobs {cpus}", ["report", str(folder), "--json", "--jobs", cpus]),
        (
            "check --format json --jobs 1",
            ["check", str(folder), "--budget", "100000", "--format", "json", "--jobs", "1"],
        ),
        (
            f"check --format json --jobs {cpus}",
            ["check", str(folder), "--budget", "100000", "--format", "json", "--jobs", cpus],
        ),
    ]
    against = options.against.split() if options.against else None
    for name, args in lines:
        commands = [[*windowfit, *args]] + ([[*against, *args]] if against else [])
        found = timed(repeat, commands)
        rows.append((f"windowfit {name}", *found[0]))
        if against:
            rows.append((f"  against: {name}", *found[1]))
    table = Table("run", "seconds", "MB/s", "× bare loop", "CPU s", "CPU × loop")
    for name, seconds, cpu in rows:
        table.add_row(name, f"{seconds:.2f}", f"{size / MB / seconds:.0f}", f"{seconds / base:.2f}", f"{cpu:.2f}",
                      f"{cpu / base_cpu:.2f}")  # fmt: skip
    console.print(table)
    console.print(f"best of {repeat}; load average after {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


def _cpu(files: list[Path]) -> float:
    """The bare loop's CPU time (this process's)."""
    start = time.process_time()
    bare_loop(files)
    return time.process_time() - start


if __name__ == "__main__":
    sys.exit(main())
