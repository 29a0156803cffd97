"""Where ``windowfit fit FILE --budget B`` spends its CPU on a Claude Code session the fold plans: the fit
command's function run in-process, each part timed (CPU seconds) by wrapping the module functions it calls,
best of N per part, with ``report_file`` (what ``report`` does once its options are parsed) timed in turns.

Run ``python benchmarks/probe_fit_parts.py`` (``--megabytes``, default 50, the session of bench_fit.py
``--claude-code``; ``--budget``, default 400,000; ``--repeat``, default 5). A part the checkout does not have
(``fit._result_refs`` before issue 15's stage 1 on arrays) is left out, so the same script times an older
checkout too: ``PYTHONPATH=OTHER/src python benchmarks/probe_fit_parts.py``. Nested parts are indented: their
time is inside their parent's. The parts are best of N each, so they need not sum to the total.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import importlib
import io
import os
import time
from collections.abc import Callable
from typing import Any

import common  # noqa: F401  (the repository on sys.path, for sessions.py)

PARTS = (
    ("windowfit.cli.fit_cmd", "_fold_planned", "fold_plan (the fold, the skeleton, the plan)"),
    ("windowfit.fitting.ccplan", "_fold_lines", "  the fold of the lines (ccfold._fold_lines)"),
    ("windowfit.fitting.ccplan", "_skeleton", "  the skeleton (ccplan._skeleton)"),
    ("windowfit.fitting.ccplan", "_plan", "  fit._plan on the skeleton"),
    ("windowfit.fitting.fit", "repair", "    repair (check and call ids)"),
    ("windowfit.fitting.fit", "result_refs", "    result_refs (each result and its stub)"),
    ("windowfit.fitting.fit", "_result_refs", "    _result_refs (each result and its stub's parts)"),
    ("windowfit.fitting.fit", "clear_into", "    clear_into (stubbed messages, stage 1)"),
    ("windowfit.fitting.fit", "split_units", "    split_units (stage 3's rounds)"),
    ("windowfit.cli.fit_cmd", "_fit_folded", "the diff of the plan (_fit_folded)"),
    ("windowfit.cli.fit_cmd", "apply_plan", "  apply_plan of the skeleton"),
    ("windowfit.cli.fit_cmd", "check_request", "  check_request (before and after)"),
    ("windowfit.cli.fit_cmd", "_show", "  the rendered diff (_show)"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--megabytes", type=int, default=50)
    parser.add_argument("--budget", type=int, default=400_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from bench_report import MB, ensure_claude_session
    from rich.console import Console

    from windowfit.cli.fit_cmd import fit as fit_command
    from windowfit.cli.report_cmd import ReportOptions, report_file
    from windowfit.cli.shared import SizeChoice
    from windowfit.fitting.formats import Input

    console = Console(width=120)
    path = ensure_claude_session(args.megabytes * MB, console)
    spent: dict[str, float] = {}

    def timed(label: str, work: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(work)
        def run(*a: Any, **k: Any) -> Any:
            start = time.process_time()
            try:
                return work(*a, **k)
            finally:
                spent[label] = spent.get(label, 0.0) + time.process_time() - start

        return run

    shown = []
    for module_name, name, label in PARTS:
        module = importlib.import_module(module_name)
        if hasattr(module, name):
            setattr(module, name, timed(label, getattr(module, name)))
            shown.append(label)
    options = ReportOptions("seed", 1.0, None, None, 10, SizeChoice.auto, None)
    best: dict[str, float] = {}
    for _ in range(args.repeat):
        gc.collect()
        start = time.process_time()
        gc.disable()
        try:
            report_file(Input(str(path), keep_text=False), options)
        finally:
            gc.enable()
        best["report"] = min(best.get("report", float("inf")), time.process_time() - start)
        spent.clear()
        gc.collect()
        start = time.process_time()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
            fit_command(str(path), budget=args.budget)
        best["fit"] = min(best.get("fit", float("inf")), time.process_time() - start)
        for label, seconds in spent.items():
            best[label] = min(best.get(label, float("inf")), seconds)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{path.name}, budget {args.budget:,}: CPU s, best of {args.repeat}, in turns; load average {load}")
    print(f"{'report in-process (report_file)':54s} {best['report']:6.3f}")
    ratio = best["fit"] / best["report"]
    print(f"{'fit in-process (the fit command function)':54s} {best['fit']:6.3f}  {ratio:.2f}x report")
    for label in shown:
        if label in best:
            print(f"{label:54s} {best[label]:6.3f}")


if __name__ == "__main__":
    main()
