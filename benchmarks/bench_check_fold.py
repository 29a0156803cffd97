"""``check`` over the folder of ``bench_folder.py`` in this process: the sessions that fit checked from the fold
of their lines (``fitting/ccplan.py``, the default) against every session loaded (``WINDOWFIT_FASTFOLD=0``), in
turns, as CPU seconds (``time.process_time``) and as ratios to a bare ``orjson.loads`` loop over every line
timed in the same process. At the budget bench_folder.py uses (100,000: most of its sessions do not fit) and
at one most of them fit under (400,000). Each file goes through ``cli.scan.scan_one``, as one ``--jobs 1``
process checks it (the collector off while it reads); the two paths' checks are compared before timing.

Run ``python benchmarks/bench_check_fold.py`` (200 sessions, best of 3; ``--quick`` for 40, best of 1).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from bench_folder import bare_loop
from common import OUT
from sessions import benchmark_folder, folder_parser

from windowfit.cli import fit_cmd
from windowfit.cli.scan import Done, Task, scan_one
from windowfit.cli.shared import SizeChoice
from windowfit.fitting.fit import DEFAULTS, OUTCOMES
from windowfit.fitting.formats import Input

BUDGETS = (100_000, 400_000)


def cpu(run: Callable[[], object]) -> float:
    start = time.process_time()
    run()
    return time.process_time() - start


def checks(files: list[Path], budget: int, *, fast: bool) -> list[Done[Any]]:
    """Every file's check as ``windowfit check DIR --budget B --jobs 1`` makes it."""
    os.environ[fit_cmd.FAST_FOLD_ENV] = "1" if fast else "0"
    settings: dict[str, Any] = {
        "estimator": "seed", "overhead": 1.0, "window": None, "size": SizeChoice.auto, "preamble": None,
        "budget": budget, "threshold": OUTCOMES.index("too-long"), "fit_options": replace(DEFAULTS, budget=budget),
    }  # fmt: skip
    work = partial(fit_cmd.check_work, **settings)
    stream = partial(fit_cmd.check_stream, **settings)
    return [scan_one(Task(Input(str(f), keep_text=False), None, False, True, False, work, stream)) for f in files]


def main() -> None:
    options = folder_parser(__doc__.splitlines()[0]).parse_args()
    bench = benchmark_folder(options, OUT)
    files, repeat = bench.files, bench.repeat
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{len(files)} sessions, {bench.size / 1e6:.0f} MB; load average {load}")
    for budget in BUDGETS:
        fast, loaded = checks(files, budget, fast=True), checks(files, budget, fast=False)
        assert fast == loaded, "the fast path changed a check"
        fits = sum(1 for d in loaded for c in d.values if c.plan.outcome == "fits")
        times: dict[str, list[float]] = {"bare loop": [], "loaded": [], "fast path": []}
        for turn in range(repeat):  # in turns, each path first every other round, so a busy spell hits each alike
            times["bare loop"].append(cpu(lambda: bare_loop(files)))
            for fast in (turn % 2 == 0, turn % 2 == 1):
                times["fast path" if fast else "loaded"].append(cpu(partial(checks, files, budget, fast=fast)))
        best = {k: min(v) for k, v in times.items()}
        print(
            f"budget {budget:,} ({fits} of {len(files)} fit): bare loop {best['bare loop']:.2f} CPU-s; "
            f"check loaded {best['loaded']:.2f} ({best['loaded'] / best['bare loop']:.2f}x the loop), "
            f"fast path {best['fast path']:.2f} ({best['fast path'] / best['bare loop']:.2f}x), "
            f"fast ÷ loaded {best['fast path'] / best['loaded']:.2f}"
        )
    os.environ.pop(fit_cmd.FAST_FOLD_ENV)
    print(f"load average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(main())
