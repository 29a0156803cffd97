"""Fitting a transcript of at least 100,000 messages, as a ratio to reporting
the same file (load and estimate), both timed in the same process.

Run ``python benchmarks/bench_fit.py`` (``--quick`` for 20,000 messages).
The transcript is generated once into ``benchmarks/out/``.
"""

from __future__ import annotations

import argparse
import random
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="10,000 rounds (20,000 messages) instead of 50,000")
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs of each step (default 3)")
    parser.add_argument("--budget", type=int, default=400_000, help="the fit budget (default 400,000)")
    args = parser.parse_args(argv)
    console = Console()
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
