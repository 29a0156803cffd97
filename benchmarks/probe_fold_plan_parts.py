"""Where ``check``'s CPU goes in ``ccplan.fold_plans`` over the folder of ``bench_folder.py`` (budget 100,000,
``summary`` as check asks, one process, the collector off as a folder scan has it): the fold of the lines, and
the plan of each session over the budget, made on a skeleton of ``Message`` objects (``_skeleton`` and
``fit._plan``) or, from 8417cc0, by ``fit._decide`` on the fold's lists (``_FoldShape``, its reads timed too);
and report's fold (``fold_claude_code``) of the same files beside it. Each part is timed where it is called,
best of ``--repeat`` passes. It runs against whichever ``windowfit`` is imported (an earlier commit's ``src``
first on ``PYTHONPATH``): a part that code does not have is not shown.

Run ``python benchmarks/probe_fold_plan_parts.py`` (``--quick`` for 40 sessions, ``--repeat N``).
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from common import OUT
from sessions import benchmark_folder, folder_parser

import windowfit
from windowfit.fitting import ccplan, make_estimator
from windowfit.fitting.ccfold import fold_claude_code
from windowfit.fitting.fit import FitOptions
from windowfit.fitting.formats import Input

BUDGET = 100_000


def main() -> None:
    options = folder_parser(__doc__.splitlines()[0]).parse_args()
    folder = benchmark_folder(options, OUT)
    spent: dict[str, float] = {}

    def timed(part: str, run: Callable[..., Any]) -> Callable[..., Any]:
        def clocked(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            value = run(*args, **kwargs)
            spent[part] = spent.get(part, 0.0) + time.process_time() - start
            return value

        return clocked

    parts = {
        "_fold_source": "  the fold of the lines (ccfold._fold_source)",
        "_skeleton": "  the skeleton (ccplan._skeleton)",
        "_plan": "  fit._plan on the skeleton",
        "_decide": "  fit._decide on the fold's lists",
    }
    for name, part in parts.items():
        if hasattr(ccplan, name):
            setattr(ccplan, name, timed(part, getattr(ccplan, name)))
    shape = getattr(ccplan, "_FoldShape", None)
    if shape is not None:
        for name in ("result_refs", "sizer", "turn_bounds", "units"):
            setattr(shape, name, timed(f"    _FoldShape.{name}", getattr(shape, name)))
    plan_options = FitOptions(BUDGET)
    best: dict[str, float] = {}
    outcomes: dict[str, int] = {}
    for _ in range(folder.repeat):
        spent.clear()
        outcomes.clear()
        gc.disable()
        start = time.process_time()
        for path in folder.files:
            found = ccplan.fold_plans(Input(str(path), keep_text=False), make_estimator(), plan_options, summary=True)
            assert found is not None, f"fold_plans leaves {path} to the loader"
            for f in found:
                outcomes[f.plan.outcome] = outcomes.get(f.plan.outcome, 0) + 1
        spent["fold_plans (check's), all of it"] = time.process_time() - start
        start = time.process_time()
        for path in folder.files:
            fold_claude_code(Input(str(path), keep_text=False), make_estimator(), top=0)
        spent["fold_claude_code (report's), all of it"] = time.process_time() - start
        gc.enable()
        gc.collect()
        for part, seconds in spent.items():
            best[part] = min(best.get(part, float("inf")), seconds)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"windowfit from {os.path.dirname(windowfit.__file__)}")
    print(
        f"{len(folder.files)} sessions at budget {BUDGET:,}, best of {folder.repeat}: {outcomes}; load average {load}"
    )
    order = ["fold_plans (check's), all of it", *parts.values()]
    order += [p for p in best if p.startswith("    ")] + ["fold_claude_code (report's), all of it"]
    for part in order:
        if part in best:
            print(f"{part:45s} {best[part]:6.3f} CPU-s")


if __name__ == "__main__":
    sys.exit(main())
