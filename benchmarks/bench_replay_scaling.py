"""How replay's time grows with the session: replay of generated sessions at
two sizes (10,000 and 80,000 tiny messages; 2,500 and 20,000 requests with
real-sized results), each next to load + report of the same file, timed in
the same process. Linear growth gives time(big) / time(small) of about 8.

Run ``python benchmarks/bench_replay_scaling.py`` (``--quick`` for 1/4 the sizes:
the ratio of sizes stays 8). The sessions are generated once into ``benchmarks/out/``.

``--past-triggers`` times each default policy alone on sessions whose small size is
already past every policy's trigger (the budget, Anthropic's 100,000 tokens, Gemini
CLI's 50,000 + 30,000, OpenHands' window, an idle gap for Claude Code's clearing), and
subtracts the replay of the first K messages, where K is where the last policy started
acting: what is left is the requests past every trigger, whose growth is linear at
(big - K) / (small - K).
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import orjson
from bench_replay import session as sized_session
from common import best_of, ensure_generated
from rich.console import Console
from rich.table import Table

from sample_transcripts import prose
from windowfit import fitting
from windowfit.fitting.replay import POLICIES, Step, WindowfitPolicy, replay, standard_policies
from windowfit.fitting.transcript import Transcript

GENERATOR_VERSION = 1


def _turns(rng: random.Random, messages: int, one_turn: bool, result: Callable[[int], str]) -> Iterator[dict[str, Any]]:
    """``messages`` messages of turns: a question, tool rounds (0, 1, 3 or 40, drawn from ``rng``; with
    ``one_turn``, a subagent: one instruction, then tool rounds only) whose results are ``result(call)``, and
    an answer."""
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
            text = result(call)
            yield {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": text}]}
            written += 2
        yield {"role": "assistant", "content": f"answer {written}"}
        written += 1


def tiny_session(seed: int, messages: int, *, one_turn: bool = False) -> Iterator[dict[str, Any]]:
    """``messages`` tiny messages: turns of a question, then a few tool rounds
    with results of a few words, then an answer; with ``one_turn``, a subagent:
    one instruction, then tiny tool rounds only (stage 3's case)."""
    rng = random.Random(seed)
    return _turns(rng, messages, one_turn, lambda call: "ok " * rng.randint(1, 30))


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


PAST_BUDGET = 20_000
IDLE_EVERY = 200
"""Every this many messages the generated timestamps leave a gap of more than an hour (Claude Code's idle
clearing reacts to it); otherwise the messages are 10 seconds apart."""


def mixed_session(seed: int, messages: int, *, one_turn: bool = False) -> Iterator[dict[str, Any]]:
    """``messages`` messages of turns with tool rounds (0, 1, 3 or 40 per turn; with ``one_turn``, a subagent:
    one instruction, then tool rounds only) whose results are 20 to 3,000 characters of code and Russian
    prose: large enough that Gemini CLI masks them and the 100,000-token trigger is crossed early."""
    rng = random.Random(seed)
    makers: tuple[Callable[[random.Random, int], str], ...] = (prose.python_module, prose.russian_prose)
    pool = [make(rng, rng.choice((20, 200, 800, 3000))) for make in makers for _ in range(48)]
    return _turns(rng, messages, one_turn, lambda call: f"read {call}\n{rng.choice(pool)}")


def _mixed_file(one_turn: bool) -> Callable[[int], Path]:
    kind = "subagent" if one_turn else "turns"

    def make(messages: int) -> Path:
        return ensure_generated(
            f"scaling_past_{kind}_{messages}.jsonl",
            GENERATOR_VERSION,
            lambda out: out.writelines(
                orjson.dumps(item) + b"\n" for item in mixed_session(13, messages, one_turn=one_turn)
            ),
        )

    return make


def idle_times(transcript: Transcript) -> dict[int, float]:
    """When each line was written: 10 seconds apart, with an idle gap of two hours every ``IDLE_EVERY`` messages."""
    times: dict[int, float] = {}
    for i, m in enumerate(transcript.messages):
        if m.source.line is not None:
            times[m.source.line] = 10.0 * i + 7200.0 * (i // IDLE_EVERY)
    return times


def _report(transcript: Transcript) -> object:
    return fitting.build_report(transcript, fitting.make_estimator())


def _replay_one(transcript: Transcript, name: str, times: Mapping[int, float]) -> object:
    (policy,) = (p for p in POLICIES if p.name == name)
    return replay(transcript, [policy.factory()], budget=PAST_BUDGET, estimator=fitting.make_estimator(), times=times)


def _acts(step: Step) -> bool:
    """The policy changed this request: it cleared, masked, cut or trimmed (not merely found it over the budget)."""
    return step.cleared > 0 or step.outcome not in ("fits", "over-budget")


def first_acting(transcript: Transcript, times: Mapping[int, float]) -> dict[str, int]:
    """Per policy, how many messages the first request it changed held (a policy that changes nothing, as
    ``send-everything``: the first it found over the budget)."""
    runs = replay(transcript, standard_policies(), budget=PAST_BUDGET, estimator=fitting.make_estimator(), times=times)
    last = len(transcript.messages)
    return {
        run.policy: next(
            (s.messages for s in run.steps if _acts(s)),
            next((s.messages for s in run.steps if s.outcome != "fits"), last),
        )
        for run in runs
    }


def past_triggers(console: Console, scale: int, repeat: int) -> None:
    small_n, big_n = 10_000 // scale, 80_000 // scale
    for label, one_turn in (("turns of tool rounds", False), ("a subagent (one turn)", True)):
        with console.status(f"{label}: generating and timing"):
            (small,) = fitting.load_path(_mixed_file(one_turn)(small_n))
            (big,) = fitting.load_path(_mixed_file(one_turn)(big_n))
            small_times, big_times = idle_times(small), idle_times(big)
            acting = first_acting(small, small_times)
            k = max(acting.values())
            head = replace(small, messages=small.messages[:k])
            head_times = idle_times(head)
            base = best_of(repeat, partial(fitting.load_path, big.source.path)) + best_of(repeat, partial(_report, big))
            base_small = best_of(repeat, partial(fitting.load_path, small.source.path)) + best_of(
                repeat, partial(_report, small)
            )
            rows = []
            for policy in POLICIES:
                t_head = best_of(repeat, partial(_replay_one, head, policy.name, head_times))
                t_small = best_of(repeat, partial(_replay_one, small, policy.name, small_times))
                t_big = best_of(repeat, partial(_replay_one, big, policy.name, big_times))
                rows.append((policy.name, acting[policy.name], t_head, t_small, t_big))
        linear = (big_n - k) / (small_n - k)
        table = Table(
            title=f"past every trigger: {label}, budget {PAST_BUDGET:,}: {small_n:,} vs {big_n:,} messages; every "
            f"policy acts by message {k:,} (K); best of {repeat}; linear growth past K = {linear:.2f}"
        )
        for col in (
            "policy",
            "acts at",
            "s to K",
            f"s at {small_n:,}",
            f"s at {big_n:,}",
            "growth",
            "growth past K",
            "x (load + report) at big",
        ):
            table.add_column(col, justify="left" if col == "policy" else "right", no_wrap=col == "policy")
        total = [0.0, 0.0, 0.0]
        for name, at, t_head, t_small, t_big in rows:
            total = [total[0] + t_head, total[1] + t_small, total[2] + t_big]
            table.add_row(
                name,
                f"{at:,}",
                f"{t_head:.3f}",
                f"{t_small:.3f}",
                f"{t_big:.3f}",
                f"{t_big / t_small:.1f}",
                f"{(t_big - t_head) / (t_small - t_head):.2f}",
                f"{t_big / base:.2f}",
            )
        table.add_row(
            "every policy (sum)",
            "",
            f"{total[0]:.3f}",
            f"{total[1]:.3f}",
            f"{total[2]:.3f}",
            f"{total[2] / total[1]:.1f}",
            f"{(total[2] - total[0]) / (total[1] - total[0]):.2f}",
            f"{total[2] / base:.2f}",
        )
        table.add_row(
            "load + report (linear code's growth here)",
            "",
            "",
            f"{base_small:.3f}",
            f"{base:.3f}",
            f"{base / base_small:.1f}",
            "",
            "1.00",
        )
        console.print(table)


def profile_growth(console: Console, scale: int, name: str) -> None:
    """cProfile of one policy's replay at both sizes of the past-trigger session with turns: per function,
    how its calls and its own time grew. Linear code grows every call count by the size ratio."""
    import cProfile
    import pstats

    small_n, big_n = 10_000 // scale, 80_000 // scale
    stats = {}
    for size in (small_n, big_n):
        (transcript,) = fitting.load_path(_mixed_file(False)(size))
        times = idle_times(transcript)
        profiler = cProfile.Profile()
        profiler.enable()
        _replay_one(transcript, name, times)
        profiler.disable()
        stats[size] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    small, big = stats[small_n], stats[big_n]
    total = sum(v[2] for v in big.values()) / sum(v[2] for v in small.values())
    table = Table(
        title=f"cProfile of {name}: {small_n:,} vs {big_n:,} messages (past every trigger, turns of tool rounds); "
        f"own time grew {total:.2f} in all"
    )
    for col in ("function", "calls at big", "calls grew", "own time grew", "own s at big"):
        table.add_column(col, justify="left" if col == "function" else "right", no_wrap=col == "function")
    ranked = sorted(((v[2], k) for k, v in big.items() if k in small), reverse=True)
    for _, key in ranked[:15]:
        b, a = big[key], small[key]
        where = f"{key[0].rsplit('/', 1)[-1]}:{key[2]}"
        table.add_row(where, f"{b[1]:,}", f"{b[1] / max(a[1], 1):.2f}", f"{b[2] / max(a[2], 1e-9):.2f}", f"{b[2]:.3f}")
    console.print(table)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a quarter of the sizes (the ratio of sizes stays 8)")
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs of each step (default 3)")
    parser.add_argument(
        "--past-triggers", action="store_true", help="each default policy alone, on sessions past every trigger"
    )
    parser.add_argument("--profile", metavar="POLICY", help="cProfile one policy at both past-trigger sizes")
    args = parser.parse_args(argv)
    scale = 4 if args.quick else 1
    console = Console()
    if args.profile:
        profile_growth(console, scale, args.profile)
        return
    if args.past_triggers:
        past_triggers(console, scale, args.repeat)
        return
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
