"""Where ``report --json`` spends its time over the folder of real-shaped Claude Code sessions of
``bench_ccusage.py`` and ``bench_folder.py``, part by part and in-process (no start-up), as ratios to a bare
``orjson.loads`` loop over every line timed in the same run (1.0).

The parts, as one job runs them file by file with the cyclic collector off: the Claude Code reader (lines to
nodes: ``claude_code._read``), building the transcripts from the nodes (the parentUuid tree, merging split
assistant lines, the loader's defects), the estimator (``predict_size``: every message's estimate), the report
over those estimates (``build_report``), and the JSON document. The general reader (``_read_general``, what
the fast one replaced and is tested against) is timed beside it.

Run ``python benchmarks/bench_split.py`` (200 sessions, best of 3; ``--quick``: 40, best of 1).
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from bench_folder import bare_loop
from common import OUT
from rich.console import Console
from rich.table import Table
from sessions import benchmark_folder, folder_parser

from windowfit.fitting._json import encode
from windowfit.fitting.estimate import make_estimator
from windowfit.fitting.formats import Input, claude_code
from windowfit.fitting.report import build_report
from windowfit.fitting.serialize import report_document
from windowfit.fitting.size import predict_size

MB = 1_000_000


def timed(repeat: int, run: Callable[[], Any]) -> float:
    """Best of ``repeat``, the collector off as in a folder scan; what ``run`` returns is freed untimed."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            kept = run()
            best = min(best, time.perf_counter() - start)
        finally:
            gc.enable()
        del kept
    return best


def main() -> None:
    bench = benchmark_folder(folder_parser(__doc__.splitlines()[0]).parse_args(), OUT)
    files, size, repeat = bench.files, bench.size, bench.repeat
    inputs = [Input(str(f), keep_text=False) for f in files]  # what report loads (it never writes a transcript)
    console = Console()
    console.print(
        f"{len(files)} sessions, {size / MB:.0f} MB; load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )

    def read() -> list[Any]:
        return [claude_code._read(i, skip_invalid=False) for i in inputs]

    def read_general() -> list[Any]:
        return [claude_code._read_general(i, skip_invalid=False) for i in inputs]

    base = timed(repeat, lambda: bare_loop(files))
    fast = timed(repeat, read)
    general = timed(repeat, read_general)
    gc.disable()
    nodes = read()
    built = timed(repeat, lambda: [claude_code._transcripts(f) for f in nodes])
    transcripts = [claude_code._transcripts(f) for f in nodes]
    gc.enable()

    def estimate() -> list[Any]:
        out = []
        for ts in transcripts:
            est = make_estimator()
            out.append([(t, est, predict_size(t, est)) for t in ts])
        return out

    gc.disable()
    sized = estimate()
    gc.enable()
    estimated = timed(repeat, estimate)
    reported = timed(repeat, lambda: [build_report(t, est, size=s) for run in sized for t, est, s in run])
    reports = [build_report(t, est, size=s) for run in sized for t, est, s in run]
    rendered = timed(repeat, lambda: encode(report_document(reports, estimator="seed"), indent=True, sort_keys=True))

    table = Table("part", "seconds", "x bare loop")
    rows = [
        ("orjson.loads loop over every line", base),
        ("reader, fast (claude_code._read)", fast),
        ("reader, general (claude_code._read_general)", general),
        ("nodes to transcripts (claude_code._transcripts)", built),
        ("estimator (predict_size: every message)", estimated),
        ("report (build_report over the estimates)", reported),
        ("JSON document (report_document + encode)", rendered),
        ("all of windowfit's parts (fast reader)", fast + built + estimated + reported + rendered),
    ]
    for name, seconds in rows:
        table.add_row(name, f"{seconds:.2f}", f"{seconds / base:.2f}")
    console.print(table)
    console.print(f"best of {repeat}; load average after {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(main())
