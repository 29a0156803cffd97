"""Peak memory of ``report`` and ``check`` over a folder of about 1 GB against the same command over its
largest file alone (issue 15: at most 2x), and over that 201 MB file against its size (streamed, not read
whole).

The folder is ``bench_folder.py``'s 200 generated sessions (296 MB) with three copies of ``bench_report.py
--claude-code``'s 201 MB session and two of ``bench_fit.py --claude-code``'s 50 MB one beside them, written
once under ``benchmarks/out/gb-folder``. Each command runs ``--repeat`` times; the peak is the largest
resident set of the command or any worker it waited for, the most over the runs, measured by a small launcher
(``bench_folder.peak``: a child's peak starts at its parent's, and this process has generated the files).

Run ``python benchmarks/bench_gb_folder.py`` (``--repeat 1`` for one run of each).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from bench_folder import peak
from bench_report import MB, ensure_claude_session
from common import OUT, cache_bytecode
from rich.console import Console
from rich.table import Table
from sessions import benchmark_folder, folder_parser

COPIES = {"big": (201, 3), "mid": (50, 2)}
"""Name: (megabytes of the generated session, how many copies go into the folder)."""


def ensure_gb_folder(console: Console) -> tuple[Path, Path]:
    """The folder (written once) and its largest file."""
    sessions = benchmark_folder(folder_parser("").parse_args([]), OUT)
    root = OUT / "gb-folder"
    big_dir = root / "projects" / "-home-dev-big"
    largest = big_dir / "big-1.jsonl"
    if not largest.exists():
        if root.exists():
            shutil.rmtree(root)
        shutil.copytree(sessions.root, root)
        big_dir.mkdir(parents=True)
        for name, (megabytes, copies) in COPIES.items():
            source = ensure_claude_session(megabytes * MB, console)
            for i in range(1, copies + 1):
                shutil.copyfile(source, big_dir / f"{name}-{i}.jsonl")
    return root, largest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    console = Console()
    console.print(cache_bytecode())
    root, largest = ensure_gb_folder(console)
    files = sorted(root.rglob("*.jsonl"))
    folder_mb = sum(f.stat().st_size for f in files) / MB
    largest_mb = largest.stat().st_size / MB
    title = f"{len(files)} files, {folder_mb:,.0f} MB; largest {largest_mb:,.0f} MB (peak of {args.repeat} runs)"
    table = Table(title=title)
    headers = ("command", "--jobs", "folder MiB", "largest file alone MiB", "folder ÷ largest", "largest ÷ its size")
    for header in headers:
        table.add_column(header, justify="left" if header == "command" else "right")
    commands = {"report": ["--json"], "check": ["--budget", "100000", "--format", "json"]}
    for command, options in commands.items():
        with console.status(f"{command} of the largest file"):
            alone = max(peak([command, str(largest), *options]) for _ in range(args.repeat))
        for jobs in (1, 2):
            with console.status(f"{command} of the folder, --jobs {jobs}"):
                folder = max(peak([command, str(root), *options, "--jobs", str(jobs)]) for _ in range(args.repeat))
            table.add_row(
                command,
                str(jobs),
                f"{folder / 2**20:,.0f}",
                f"{alone / 2**20:,.0f}",
                f"{folder / alone:.2f}",
                f"{alone / largest.stat().st_size:.2f}",
            )
    console.print(table)


if __name__ == "__main__":
    main()
