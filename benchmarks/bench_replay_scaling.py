"""How replay's time grows with the session: replay of generated sessions at
two sizes (10,000 and 80,000 tiny messages; 2,500 and 20,000 requests with
real-sized results), each next to load + report of the same file, timed in
the same process. Linear growth gives time(big) / time(small) of about 8.

Run ``python benchmarks/bench_replay_scaling.py`` (``--quick`` for 1/4 the sizes:
the ratio of sizes stays 8). The sessions are generated once into ``benchmarks/out/``.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from bench_replay import session as sized_session
from common import best_of, ensure_generated
from rich.console import Console
from rich.table import Table

from windowfit import fitting
from windowfit.fitting.replay import WindowfitPolicy, replay, standard_policies

GENERATOR_VERSION = 1


def tiny_session(seed: int, messages: int, *, one_turn: bool = False) -> Iterator[dict[str, Any]]:
    """``messages`` tiny messages: turns of a question, then a few tool rounds
    with results of a few words, then an answer; with ``one_turn``, a subagent:
    one instruction, then tiny tool rounds only (stage 3's case)."""
    rng = random.Random(seed)
    yield {"role": "system", "content": "You are a coding agent."}
    written, call = 0, 0
    while written < messages:
        yield {"role": "user", "content": f"question {written}: what does f{rng.randint(0, 999)} do?"}
        written += 1
        for _ in range(messages if one_turn else rng.choice((0, 1, 3, 40))):
            if written + 3 > messages:
                break
            call_id = f"toolu_{call:08d}"
            call += 1
            yield {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": call_id, "name": "Read", "input": {"n": call}}],
            }
            text = "ok " * rng.randint(1, 30)
            yield {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": text}]}
            written += 2
        yield {"role": "assistant", "content": f"answer {written}"}
        written += 1


@dataclass(frozen=True, slots=True)
class Case:
    """One session shape at two sizes."""

    label: str
    unit: str
    small: int
    big: int
    budget: int
    file: Callable[[int], Path]


def _tiny_file(messages: int) -> Path:
    return ensure_generated(
        f"scaling_tiny_{messages}.jsonl",
        GENERATOR_VERSION,
        lambda out: out.writelines(orjson.dumps(item) + b"\n" for item in tiny_session(11, messages)),
    )


def _tiny_subagent_file(messages: int) -> Path:
    return ensure_generated(
        f"scaling_tiny_subagent_{messages}.jsonl",
        GENERATOR_VERSION,
        lambda out: out.writelines(orjson.dumps(item) + b"\n" for item in tiny_session(11, messages, one_turn=True)),
    )


def _sized_file(rounds: int) -> Path:
    return ensure_generated(
        f"scaling_sized_{rounds}.jsonl",
        GENERATOR_VERSION,
        lambda out: out.writelines(orjson.dumps(item) + b"\n" for item in sized_session(5, rounds)),
    )


def measure(path: Path, budget: int, repeat: int) -> dict[str, float]:
    (transcript,) = fitting.load_path(path)
    load = best_of(repeat, lambda: fitting.load_path(path))
    report = best_of(repeat, lambda: fitting.build_report(transcript, fitting.make_estimator()))
    one = best_of(
        repeat,
        lambda: replay(
            transcript, [lambda s, b: WindowfitPolicy(s, b)], budget=budget, estimator=fitting.make_estimator()
        ),
    )
    four = best_of(
        repeat,
        lambda: replay(transcript, standard_policies(), budget=budget, estimator=fitting.make_estimator()),
    )
    every = f"replay, every default policy ({len(standard_policies())})"
    return {"load + report": load + report, "replay, windowfit": one, every: four}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a quarter of the sizes (the ratio of sizes stays 8)")
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs of each step (default 3)")
    args = parser.parse_args(argv)
    scale = 4 if args.quick else 1
    console = Console()
    cases = (
        Case("tiny messages", "messages", 10_000 // scale, 80_000 // scale, 2_000, _tiny_file),
        Case("tiny messages, one turn", "messages", 10_000 // scale, 80_000 // scale, 2_000, _tiny_subagent_file),
        Case("a subagent, 200-2,500-char results", "requests", 2_500 // scale, 20_000 // scale, 400_000, _sized_file),
    )
    for case in cases:
        with console.status(f"{case.label}: generating and timing"):
            small = measure(case.file(case.small), case.budget, args.repeat)
            big = measure(case.file(case.big), case.budget, args.repeat)
        table = Table(
            title=f"{case.label}, budget {case.budget:,}: {case.small:,} vs {case.big:,} {case.unit} "
            f"(best of {args.repeat}; linear growth = {case.big / case.small:.0f})"
        )
        for col in ("step", f"s at {case.small:,}", f"s at {case.big:,}", "growth", "x (load + report) at big"):
            table.add_column(col, justify="left" if col == "step" else "right")
        base = big["load + report"]
        for name in small:
            table.add_row(
                name,
                f"{small[name]:.3f}",
                f"{big[name]:.3f}",
                f"{big[name] / small[name]:.1f}",
                f"{big[name] / base:.2f}",
            )
        console.print(table)


if __name__ == "__main__":
    main()
