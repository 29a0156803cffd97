"""``windowfit`` commands of this checkout against the same commands of another commit, as processes run in
turns: the folder's ``report --json`` with one job and two (and their ratio), ``report --json`` of the 201 MB
Claude Code session and of its first three lines (the start-up), each the least wall and CPU seconds (the
command and its workers, from ``wait4``) of ``--rounds`` runs. What ``bench_folder.py`` and ``bench_report.py``
time for this checkout alone, for a before and after on a shared machine: a neighbour's burst falls on both.

Run ``python benchmarks/bench_commands_against.py`` (against ``main``; ``--ref COMMIT`` for another,
``--rounds N``, ``--quick`` for the 40-session folder; ``--check`` adds the folder's ``check --format json`` at
budget 100,000 and its CPU seconds against report's; ``--folder-only`` leaves out the 201 MB session). The other
commit is exported with ``git archive`` into a temporary folder (the built C extensions copied beside it,
bytecode written as for this checkout) and run by this checkout's interpreter with that folder's ``src`` first
on ``PYTHONPATH``; this checkout is run the same way from an export of its working tree's files, so both pay
the same path search.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_folder import machine_parallelism
from common import OUT, ROOT
from sessions import benchmark_folder

from windowfit.cli.scan import cpu_count

MB = 1_000_000


def export(ref: str | None, into: Path) -> Path:
    """``ref``'s files (None: this checkout's working tree) under ``into``, ready to import from ``into/src``."""
    into.mkdir(parents=True)
    if ref is None:
        tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(
            b"\0"
        )
        for name in filter(None, tracked):
            source = ROOT / name.decode()
            target = into / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_symlink():
                target.symlink_to(os.readlink(source))
            elif source.is_file():
                shutil.copy2(source, target)
    else:
        archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    for built in (ROOT / "fitting").glob("*.so"):
        shutil.copy2(built, into / "fitting" / built.name)
    for package in ("fitting", "cli"):
        compileall.compile_dir(into / package, quiet=1)
    return into / "src"


def run(source: Path, args: list[str]) -> tuple[float, float]:
    """One ``python -m windowfit ARGS`` from ``source``, output thrown away: wall and CPU seconds."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "windowfit", *args], stdout=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"windowfit {' '.join(args)} failed ({source})")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="main", help="the commit to compare with (default main)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="the 40-session folder")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--check", action="store_true", help="the folder's check --format json (budget 100,000) beside report"
    )
    parser.add_argument("--folder-only", action="store_true", help="not the 201 MB session nor its 3 lines")
    options = parser.parse_args()
    folder = benchmark_folder(options, OUT).folder
    session = OUT / "report_claude_200mb.jsonl"
    tiny = OUT / "report_claude_3_lines.jsonl"
    commands = {
        "report DIR --json --jobs 1": ["report", str(folder), "--json", "--jobs", "1"],
        "report DIR --json --jobs 2": ["report", str(folder), "--json", "--jobs", "2"],
    }
    if options.check:
        check = ["check", str(folder), "--budget", "100000", "--format", "json"]
        commands["check DIR --format json --jobs 1"] = [*check, "--jobs", "1"]
        commands["check DIR --format json --jobs 2"] = [*check, "--jobs", "2"]
    if session.exists() and not options.folder_only:  # written by bench_report.py --claude-code
        commands["report 201 MB session --json"] = ["report", str(session), "--json"]
    if tiny.exists() and not options.folder_only:
        commands["report its 3 first lines --json"] = ["report", str(tiny), "--json"]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    print(f"this checkout: {commit.stdout.strip()} and its working tree; against {options.ref}; {cpu_count()} CPUs")
    print(
        f"load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())}; cores free to 2 processes "
        f"(bench_folder.machine_parallelism): {machine_parallelism(2):.2f}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        sources = {"this": export(None, Path(tmp) / "this"), options.ref: export(options.ref, Path(tmp) / "ref")}
        runs: dict[tuple[str, str], list[tuple[float, float]]] = {(n, c): [] for n in sources for c in commands}
        for turn in range(options.rounds):
            for label, args in commands.items():
                # each version first every other round
                for name, source in list(sources.items())[:: 1 if turn % 2 else -1]:
                    runs[name, label].append(run(source, args))
    best = {key: (min(w for w, _ in got), min(c for _, c in got)) for key, got in runs.items()}
    median = {key: sorted(w for w, _ in got)[len(got) // 2] for key, got in runs.items()}
    print(
        f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}; cores free to 2 processes: "
        f"{machine_parallelism(2):.2f}"
    )
    print(f"least of {options.rounds} rounds, in turns; seconds wall / CPU")
    print(f"{'command':34} {options.ref:>15} {'this':>15} {'this ÷ ' + options.ref:>14}")
    for label in commands:
        (rw, rc), (tw, tc) = best[options.ref, label], best["this", label]
        print(f"{label:34} {rw:6.3f} / {rc:6.3f} {tw:6.3f} / {tc:6.3f} {tw / rw:6.2f} / {tc / rc:5.2f}")
    if options.check:
        for name in (options.ref, "this"):
            check, report = best[name, "check DIR --format json --jobs 1"], best[name, "report DIR --json --jobs 1"]
            print(
                f"{name}: check ÷ report, --jobs 1: {check[1] / report[1]:.2f} in CPU, {check[0] / report[0]:.2f} wall"
            )
    for name in (options.ref, "this"):
        one, two = best[name, "report DIR --json --jobs 1"][0], best[name, "report DIR --json --jobs 2"][0]
        one_m, two_m = median[name, "report DIR --json --jobs 1"], median[name, "report DIR --json --jobs 2"]
        print(
            f"{name}: report DIR --jobs 2 is {one / two:.2f}x --jobs 1 (least wall times; "
            f"medians {one_m:.3f} and {two_m:.3f} s: {one_m / two_m:.2f}x)"
        )


if __name__ == "__main__":
    main()
