"""``fitting.rows.file_rows`` over the folder of ``bench_folder.py`` in this process: the Claude Code sessions
the fold vouches for made into rows from the fold of their lines (the default) against every file loaded
(``WINDOWFIT_FASTFOLD=0``), in turns, as CPU seconds (``time.process_time``), as ratios to a bare
``orjson.loads`` loop over every line timed in the same process, and as CPU-ms per MB with the CPU hours a
million sessions of the folder's mean size would take. Without a budget (``report --format jsonl``), at the
budget bench_folder.py uses (100,000: most of its sessions do not fit, and are loaded to be planned) and at
one most of them fit under (400,000). The rows of the two paths are compared before timing.

Run ``python benchmarks/bench_rows.py`` (200 sessions, best of 3; ``--quick`` for 40, best of 1).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from bench_folder import MB, bare_loop
from common import OUT
from sessions import benchmark_folder, folder_parser

from windowfit.fitting.rows import FAST_FOLD_ENV, Row, file_rows

BUDGETS = (None, 100_000, 400_000)


def cpu(run: Callable[[], object]) -> float:
    start = time.process_time()
    run()
    return time.process_time() - start


def rows(files: list[Path], budget: int | None, *, fast: bool) -> list[Row]:
    os.environ[FAST_FOLD_ENV] = "1" if fast else "0"
    return [r for f in files for r in file_rows(f, budget=budget)]


def main() -> None:
    options = folder_parser(__doc__.splitlines()[0]).parse_args()
    bench = benchmark_folder(options, OUT)
    files, repeat, size = bench.files, bench.repeat, bench.size
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    mean = size / len(files) / MB
    print(f"{len(files)} sessions, {size / MB:.0f} MB (mean {mean:.2f} MB); load average {load}")
    for budget in BUDGETS:
        fast, loaded = rows(files, budget, fast=True), rows(files, budget, fast=False)
        assert fast == loaded, "the fold changed a row"
        fits = sum(1 for r in loaded if r.outcome == "fits")
        times: dict[str, list[float]] = {"bare loop": [], "loaded": [], "fast path": []}
        for turn in range(repeat):  # in turns, each path first every other round, so a busy spell hits each alike
            times["bare loop"].append(cpu(lambda: bare_loop(files)))
            for fast_ in (turn % 2 == 0, turn % 2 == 1):
                times["fast path" if fast_ else "loaded"].append(cpu(partial(rows, files, budget, fast=fast_)))
        best = {k: min(v) for k, v in times.items()}
        base = best["bare loop"]
        per_mb = best["fast path"] / (size / MB)
        said = "no budget" if budget is None else f"budget {budget:,} ({fits} of {len(loaded)} fit)"
        print(
            f"{said}: bare loop {base:.2f} CPU-s; rows loaded {best['loaded']:.2f} ({best['loaded'] / base:.2f}x "
            f"the loop), fast path {best['fast path']:.2f} ({best['fast path'] / base:.2f}x), fast ÷ loaded "
            f"{best['fast path'] / best['loaded']:.2f}; fast path {per_mb * 1000:.1f} CPU-ms per MB, a million "
            f"sessions of {mean:.2f} MB ≈ {per_mb * mean * 1_000_000 / 3600:,.1f} CPU hours "
            f"(loaded {best['loaded'] / (size / MB) * mean * 1_000_000 / 3600:,.1f})"
        )
    os.environ.pop(FAST_FOLD_ENV)
    print(f"load average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(main())
