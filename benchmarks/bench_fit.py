"""Fitting a transcript of at least 100,000 messages, as a ratio to reporting
the same file (load and estimate), both timed in the same process.

Run ``python benchmarks/bench_fit.py`` (``--quick`` for 20,000 messages).
The transcript is generated once into ``benchmarks/out/``.

``--claude-code`` (``--megabytes``, default 50) times ``fit FILE --budget B`` on a real-shaped Claude Code
session (benchmarks/sessions.py) against ``report`` on it, which folds the lines (fitting/ccfold.py), as
``fit`` now plans from the fold too (fitting/ccplan.py ``fold_plan``), and against ``fit`` with the fold off
(``WINDOWFIT_FASTFOLD=0``: it loads them, as before issue 15): in-process (what each command does once its
options are parsed) and as commands, CPU time, best of N, in turns; and the loader alone against the bare
orjson loop.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import os
import random
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
from common import best_of, ensure_generated
from rich.console import Console
from rich.table import Table

from sample_transcripts import prose
from windowfit import fitting
from windowfit.fitting.fit import apply_plan, plan_fit

GENERATOR_VERSION = 1
ROUNDS_PER_TURN = 50
Json = dict[str, Any]


def session(seed: int, rounds: int) -> Iterator[Json]:
    """A system prompt, then turns of ``ROUNDS_PER_TURN`` rounds with 200–3,000-char results."""
    rng = random.Random(seed)
    makers: tuple[Callable[[random.Random, int], str], ...] = (prose.python_module, prose.russian_prose)
    pool = [make(rng, rng.randint(200, 3000)) for make in makers for _ in range(48)]
    yield {"role": "system", "content": "You are a coding agent. " + prose.english_paragraph(rng, 3)}
    for i in range(rounds):
        if i % ROUNDS_PER_TURN == 0:
            yield {"role": "user", "content": f"Task {i // ROUNDS_PER_TURN}: {prose.english_sentence(rng)}"}
        call_id = f"toolu_{i:08d}"
        yield {
            "role": "assistant",
            "content": [
                {"type": "text", "text": prose.english_sentence(rng)},
                {"type": "tool_use", "id": call_id, "name": "Read", "input": {"file_path": f"src/f{i}.py"}},
            ],
        }
        body = f"read {i}\n{rng.choice(pool)}"  # unique first line: no two messages are equal
        yield {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": body}]}


def ensure_transcript(rounds: int, console: Console) -> Path:
    with console.status(f"writing fit_{rounds}_rounds.jsonl (once)"):
        return ensure_generated(
            f"fit_{rounds}_rounds.jsonl",
            GENERATOR_VERSION,
            lambda out: out.writelines(orjson.dumps(item) + b"\n" for item in session(11, rounds)),
        )


def cpu_best(repeat: int, works: dict[str, Callable[[], object]]) -> dict[str, float]:
    """The least CPU time (``process_time``) of each work over ``repeat`` rounds, taken in turns (each work
    once a round) so that a neighbour's burst on the shared machine does not fall on one of them only."""
    best = {name: float("inf") for name in works}
    for _ in range(repeat):
        for name, work in works.items():
            gc.collect()
            start = time.process_time()
            kept = work()
            best[name] = min(best[name], time.process_time() - start)
            del kept
    return best


def child_cpu(command: list[str]) -> Callable[[], float]:
    """A run of ``command`` (stdout and stderr to /dev/null) that returns the child's CPU seconds."""

    def run() -> float:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 1):  # 1: fit's too-long, still a full run
            raise RuntimeError(f"{' '.join(command)} exited {done.returncode}")
        return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    return run


def claude_code(args: argparse.Namespace, console: Console) -> None:
    """``fit`` against ``report`` on one Claude Code session: in-process, as commands, and the loader alone."""
    from bench_report import MB, ensure_claude_session, parse_lines

    from windowfit.cli.fit_cmd import FAST_FOLD_ENV
    from windowfit.cli.fit_cmd import fit as fit_command
    from windowfit.cli.report_cmd import ReportOptions, report_file
    from windowfit.cli.shared import SizeChoice
    from windowfit.fitting.formats import Input, load

    path = ensure_claude_session(args.megabytes * MB, console)
    options = ReportOptions("seed", 1.0, None, None, 10, SizeChoice.auto, None)

    def collector_off(work: Callable[[], object]) -> object:
        collecting = gc.isenabled()
        gc.disable()
        try:
            return work()
        finally:
            if collecting:
                gc.enable()

    def fit_in_process() -> object:
        """``windowfit fit FILE --budget B``'s own work: the command's function, its diff printed to nowhere."""
        with contextlib.redirect_stdout(io.StringIO()) as shown, contextlib.suppress(SystemExit):
            fit_command(str(path), budget=args.budget)  # SystemExit: too-long exits 1 after its work
        return shown

    def fit_loaded() -> object:
        """``fit_in_process`` with the fold off (``WINDOWFIT_FASTFOLD=0``): it loads the file, as before issue 15."""
        os.environ[FAST_FOLD_ENV] = "0"
        try:
            return fit_in_process()
        finally:
            del os.environ[FAST_FOLD_ENV]

    works: dict[str, Callable[[], object]] = {
        "baseline": lambda: parse_lines(path),
        "loader": lambda: collector_off(lambda: load(Input(str(path), keep_text=False))),
        "loader_text": lambda: collector_off(lambda: load(Input(str(path), keep_text=True))),
        "report": lambda: collector_off(lambda: report_file(Input(str(path), keep_text=False), options)),
        "fit": fit_in_process,
        "fit_loaded": fit_loaded,
    }
    with console.status("in-process: baseline, loaders, report, fit, in turns"):
        cpu = cpu_best(args.repeat, works)
    table = Table(title=f"{path.name}: {path.stat().st_size / MB:,.0f} MB, budget {args.budget:,} "
                  f"(CPU seconds, best of {args.repeat}, in turns)")  # fmt: skip
    for col in ("step", "CPU s", "x baseline", "x report"):
        table.add_column(col, justify="left" if col == "step" else "right")
    names = {
        "baseline": "baseline: read + orjson.loads per line",
        "loader": "loader: claude_code.load (collector off), as fit without -o",
        "loader_text": "loader with the file's text (keep_text), as fit -o",
        "report": "report in-process: report_file (the fold)",
        "fit": "fit in-process: the fit command's function (the fold's plan)",
        "fit_loaded": "fit in-process, WINDOWFIT_FASTFOLD=0 (loads the file)",
    }
    for key, name in names.items():
        table.add_row(name, f"{cpu[key]:.2f}", f"{cpu[key] / cpu['baseline']:.2f}", f"{cpu[key] / cpu['report']:.2f}")
    if not args.no_cli:
        windowfit = str(Path(sys.executable).with_name("windowfit"))
        fit_argv = [windowfit, "fit", str(path), "--budget", str(args.budget)]
        commands = {
            "report": child_cpu([windowfit, "report", str(path)]),
            "fit": child_cpu(fit_argv),
            "fit_loaded": child_cpu(["env", f"{FAST_FOLD_ENV}=0", *fit_argv]),
        }
        best = {name: float("inf") for name in commands}
        with console.status("commands: report, fit, in turns"):
            for _ in range(args.repeat):
                for name, run in commands.items():
                    best[name] = min(best[name], run())
        table.add_row("windowfit report FILE (command)", f"{best['report']:.2f}", "", "1.00")
        table.add_row(
            f"windowfit fit FILE --budget {args.budget} (command)",
            f"{best['fit']:.2f}",
            "",
            f"{best['fit'] / best['report']:.2f}",
        )
        table.add_row(
            f"{FAST_FOLD_ENV}=0 windowfit fit FILE --budget {args.budget} (command)",
            f"{best['fit_loaded']:.2f}",
            "",
            f"{best['fit_loaded'] / best['report']:.2f}",
        )
    console.print(f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} (1, 5, 15 min)")
    console.print(table)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="10,000 rounds (20,000 messages) instead of 50,000")
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs of each step (default 3)")
    parser.add_argument("--budget", type=int, default=400_000, help="the fit budget (default 400,000)")
    parser.add_argument("--claude-code", action="store_true", help="fit against report on a Claude Code session")
    parser.add_argument("--megabytes", type=int, default=50, help="the Claude Code session's size (default 50)")
    parser.add_argument("--no-cli", action="store_true", help="with --claude-code: in-process only")
    args = parser.parse_args(argv)
    console = Console(width=130)
    if args.claude_code:
        claude_code(args, console)
        return
    rounds = 10_000 if args.quick else 50_000
    path = ensure_transcript(rounds, console)
    (transcript,) = fitting.load_path(path)
    n = len(transcript.messages)

    load = best_of(args.repeat, lambda: fitting.load_path(path))
    report = best_of(args.repeat, lambda: fitting.build_report(transcript, fitting.make_estimator()))

    def fit_once() -> object:
        est = fitting.make_estimator()
        return apply_plan(transcript, plan_fit(transcript, budget=args.budget, estimator=est))

    fit = best_of(args.repeat, fit_once)
    shared = fitting.make_estimator()
    fitting.build_report(transcript, shared)  # warm the memo, as a harness calling on every request would
    warm = best_of(
        args.repeat, lambda: apply_plan(transcript, plan_fit(transcript, budget=args.budget, estimator=shared))
    )
    plan = plan_fit(transcript, budget=args.budget, estimator=shared)

    table = Table(
        title=f"{path.name}: {n:,} messages, {plan.tokens_before:,} tokens, budget {args.budget:,} "
        f"-> {plan.outcome}, {plan.tokens_after:,} (best of {args.repeat})"
    )
    for col in ("step", "seconds", "ratio to report"):
        table.add_column(col, justify="left" if col == "step" else "right")
    rows = [
        ("load (load_path)", load),
        ("report: build_report, fresh estimator", report),
        ("fit: plan_fit + apply_plan, fresh estimator", fit),
        ("fit with the estimates already memoised", warm),
        ("load + report", load + report),
        ("load + fit", load + fit),
    ]
    for name, seconds in rows:
        base = load + report if name.startswith("load +") else report
        table.add_row(name, f"{seconds:.2f}", f"{seconds / base:.2f}")
    console.print(table)
    console.print(
        f"fit adds {fit / (load + report):.2f}x of (load + report) when estimating from scratch, "
        f"{warm / (load + report):.2f}x when the estimates are memoised"
    )


if __name__ == "__main__":
    main()
