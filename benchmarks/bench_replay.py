"""Replaying a 20,000-request session, as a ratio to loading and estimating it
(``report``), and to the naive replay that fits every request from scratch,
all timed in the same process.

Run ``python benchmarks/bench_replay.py`` (``--quick`` for 4,000 requests).
The session is generated once into ``benchmarks/out/``.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
from common import best_of, ensure_generated
from rich.console import Console
from rich.table import Table

from sample_transcripts import prose
from windowfit import fitting
from windowfit.fitting.fit import plan_fit
from windowfit.fitting.replay import WindowfitPolicy, replay, standard_policies

GENERATOR_VERSION = 1
NAIVE_SAMPLE = 200
"""The naive replay is timed on this many evenly spread requests and scaled up."""


def session(seed: int, rounds: int) -> Iterator[dict[str, Any]]:
    """One instruction, then ``rounds`` tool rounds with 200–2,500-char results (a long subagent)."""
    rng = random.Random(seed)
    makers: tuple[Callable[[random.Random, int], str], ...] = (prose.python_module, prose.russian_prose)
    pool = [make(rng, rng.randint(200, 2500)) for make in makers for _ in range(48)]
    yield {"role": "system", "content": "You are a subagent. " + prose.english_paragraph(rng, 3)}
    yield {"role": "user", "content": "Read every file and check it against the notes."}
    for i in range(rounds):
        call_id = f"toolu_{i:08d}"
        yield {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": call_id, "name": "Read", "input": {"file_path": f"src/f{i}.py"}},
            ],
        }
        body = f"read {i}\n{rng.choice(pool)}"
        yield {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": body}]}
    yield {"role": "assistant", "content": "Done."}


def ensure_session(rounds: int, console: Console) -> Path:
    with console.status(f"writing replay_{rounds}_rounds.jsonl (once)"):
        return ensure_generated(
            f"replay_{rounds}_rounds.jsonl",
            GENERATOR_VERSION,
            lambda out: out.writelines(orjson.dumps(item) + b"\n" for item in session(5, rounds)),
        )


def timed(run: Callable[[], object]) -> float:
    return best_of(1, run)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="4,000 requests instead of 20,000")
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs of each step (default 3)")
    parser.add_argument("--budget", type=int, default=400_000, help="the budget (default 400,000)")
    args = parser.parse_args(argv)
    console = Console()
    rounds = 4_000 if args.quick else 20_000
    path = ensure_session(rounds, console)
    (transcript,) = fitting.load_path(path)

    load = best_of(args.repeat, lambda: fitting.load_path(path))
    report = best_of(args.repeat, lambda: fitting.build_report(transcript, fitting.make_estimator()))
    one = best_of(
        args.repeat,
        lambda: replay(
            transcript, [lambda s, b: WindowfitPolicy(s, b)], budget=args.budget, estimator=fitting.make_estimator()
        ),
    )
    every = best_of(
        args.repeat,
        lambda: replay(
            transcript, standard_policies(), budget=args.budget, estimator=fitting.make_estimator(), window=1_000_000
        ),
    )
    runs = replay(
        transcript, standard_policies(), budget=args.budget, estimator=fitting.make_estimator(), window=1_000_000
    )
    steps = runs[0].requests

    # The naive replay: plan_fit on every request from scratch (estimates memoised, as a harness would).
    estimator = fitting.make_estimator()
    fitting.build_report(transcript, estimator)
    sample = [steps * k // NAIVE_SAMPLE for k in range(NAIVE_SAMPLE)]
    ends = [i for i, m in enumerate(transcript.messages) if m.role == "assistant" and i > 0]

    def naive_sample() -> None:
        for k in sample:
            plan_fit(
                replace(transcript, messages=transcript.messages[: ends[k]]), budget=args.budget, estimator=estimator
            )

    naive = timed(naive_sample) * steps / len(sample)

    table = Table(
        title=f"{path.name}: {len(transcript.messages):,} messages, {steps:,} requests, budget "
        f"{args.budget:,} (best of {args.repeat})"
    )
    for col in ("step", "seconds", "x (load + report)"):
        table.add_column(col, justify="left" if col == "step" else "right")
    base = load + report
    for name, seconds in [
        ("load (load_path)", load),
        ("report (estimate every message)", report),
        ("load + report", base),
        ("replay, windowfit policy", one),
        (f"replay, every default policy ({len(runs)})", every),
        ("load + replay (windowfit)", load + one),
        (f"naive replay: plan_fit per request (scaled from {len(sample)})", naive),
    ]:
        table.add_row(name, f"{seconds:.2f}", f"{seconds / base:.2f}")
    console.print(table)
    console.print(f"incremental replay is {naive / one:,.0f}x faster than fitting every request from scratch")
    for run in runs:
        console.print(
            f"  {run.policy}: {run.rejections:,} rejected, {run.prefix_breaks:,} prefix breaks "
            f"({run.prefix_breaks / max(run.requests, 1):.1%} of requests), "
            f"{run.cached_tokens / max(run.sent_tokens, 1):.0%} of sent tokens cacheable"
        )


if __name__ == "__main__":
    main()
