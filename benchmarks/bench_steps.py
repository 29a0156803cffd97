"""Cuts that rarely move (issue 14 item 5): how often each windowfit policy
breaks the prompt's prefix, and why, on a long single-turn session or a file.

Run ``python benchmarks/bench_steps.py`` for the issue's figure: the 600-round
session of ``sample_transcripts/generate.py`` (``long_single_turn``, written once
to ``benchmarks/out/``) at a 60,000-token budget. ``--file F`` replays the longest
session of a transcript file instead (its estimate only: for a log whose system
prompt is inferred from usage, ``windowfit replay`` gives the figures).
``--grid`` also tries other batch and step sizes for windowfit-cache (how its
defaults were chosen).

Each prefix break is put in one class: a batch cleared with no cut change, a
cut that moved forward, a cut that moved back to an earlier position, or a
request sent whole (stage 1 alone fits) after a cut. The last two happen only
to a policy that does not carry its cut (``windowfit`` without ``--cut-step``):
the policies with cut steps carry it from request to request, so SPEC
invariant 10 holds (docs/contract.md, "The cut is carried").
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from common import ensure_generated
from rich.console import Console
from rich.table import Table

from sample_transcripts.generate import compact, long_single_turn
from windowfit import fitting
from windowfit.fitting.replay import POLICY_NAMES, PolicyFactory, WindowfitPolicy, policy_named, replay
from windowfit.fitting.replay.run import _shared_prefix
from windowfit.fitting.replay.session import Sent, Session

GENERATOR_VERSION = 1
POLICIES = ("windowfit", "windowfit-cache", "windowfit-batch-1")


def ensure_session(rounds: int) -> Path:
    return ensure_generated(
        f"long_single_turn_{rounds}.jsonl",
        GENERATOR_VERSION,
        lambda out: out.writelines((compact(m) + "\n").encode() for m in long_single_turn(rounds=rounds)),
    )


def cut_of(sent: Sent) -> int:
    """Where the kept tail starts (0: nothing dropped)."""
    return sent.segments[-1][0] if sent.outcome in ("turns-dropped", "rounds-dropped") else 0


def break_kinds(session: Session, factory: PolicyFactory, budget: int) -> Counter[str]:
    """Each prefix break of one policy's replay, by cause."""
    policy = factory(session, budget)
    kinds: Counter[str] = Counter()
    previous: Sent | None = None
    for n in session.steps:
        sent = policy.request(n)
        if previous is not None and _shared_prefix(session, policy, previous, sent)[1]:
            before, now = cut_of(previous), cut_of(sent)
            if now == before:
                kinds["batch cleared"] += 1
            elif now > before:
                kinds["cut forward"] += 1
            elif now == 0:
                kinds["back to stage 1"] += 1
            else:
                kinds["cut back"] += 1
        previous = sent
    return kinds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=600, help="rounds of the generated session (default 600)")
    parser.add_argument("--budget", type=int, default=60_000, help="the budget (default 60,000)")
    parser.add_argument("--file", type=Path, help="replay this transcript instead (its longest session)")
    parser.add_argument("--grid", action="store_true", help="also try other batch and step sizes")
    args = parser.parse_args(argv)
    console = Console(width=150)
    estimator = fitting.make_estimator()
    path = args.file if args.file else ensure_session(args.rounds)
    transcripts = [t.live() for t in fitting.load_path(path, skip_invalid=True)]
    sessions = [Session.of(t, estimator) for t in transcripts]
    transcript, session = max(zip(transcripts, sessions, strict=True), key=lambda ts: len(ts[1].steps))
    budget = args.budget
    names = [n for n in POLICY_NAMES if n in POLICIES]
    runs = replay(transcript, [policy_named(n).factory() for n in names], budget=budget, estimator=estimator)
    table = Table(title=f"{path.name}: {runs[0].requests:,} requests, budget {budget:,}")
    for col in ("policy", "rejected", "breaks", "share", "uncached", "sent", "why the prefix broke"):
        table.add_column(col, justify="left" if col in ("policy", "why the prefix broke") else "right")
    for name, run in zip(names, runs, strict=True):
        kinds = break_kinds(session, policy_named(name).factory(), budget)
        why = ", ".join(f"{k} {v}" for k, v in kinds.most_common())
        table.add_row(
            name,
            f"{run.rejections:,}",
            f"{run.prefix_breaks:,}",
            f"{run.prefix_breaks / max(run.requests, 1):.1%}",
            f"{run.uncached_tokens:,}",
            f"{run.sent_tokens:,}",
            why,
        )
    console.print(table)
    if not args.grid:
        return
    grid = Table(title="windowfit-cache with other sizes (shares of the budget)")
    for col in ("batch tokens", "cut step", "breaks", "share", "uncached", "sent"):
        grid.add_column(col, justify="right")
    for batch in (0.125, 0.25, 1 / 3, 0.5):
        for step in (0.25, 0.5):

            def make(s: Session, b: int, batch: float = batch, step: float = step) -> WindowfitPolicy:
                return WindowfitPolicy(s, b, batch_size=0, batch_tokens=int(b * batch), cut_step=int(b * step))

            (run,) = replay(transcript, [make], budget=budget, estimator=estimator)
            grid.add_row(
                f"{batch:.3g}",
                f"{step:.3g}",
                f"{run.prefix_breaks:,}",
                f"{run.prefix_breaks / max(run.requests, 1):.1%}",
                f"{run.uncached_tokens:,}",
                f"{run.sent_tokens:,}",
            )
    console.print(grid)


if __name__ == "__main__":
    main()
