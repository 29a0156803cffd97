"""Where ``check``'s CPU goes on a session that does not fit, over the folder of ``bench_folder.py``: the load, the
predicted size, and parts of ``plan_fit`` timed on their own (each after the size, so the estimator's memo is
warm as in ``check_work``), with the collector off as a folder scan has it. The parts overlap ``plan_fit``'s
total: they say what a change to one of them could take off it.

Run ``python benchmarks/probe_check_parts.py`` (200 sessions; ``--quick`` for 40).
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from common import OUT
from sessions import benchmark_folder, folder_parser

from windowfit.fitting.estimate import Estimator, make_estimator
from windowfit.fitting.fit import _Sizer, plan_fit, result_refs
from windowfit.fitting.formats import Input, load
from windowfit.fitting.repair import repair
from windowfit.fitting.size import FLOOR_RULE, predict_size
from windowfit.fitting.transcript import Message
from windowfit.fitting.validate import check_messages

T = TypeVar("T")
BUDGET = 100_000


def main() -> None:
    options = folder_parser(__doc__.splitlines()[0]).parse_args()
    files = benchmark_folder(options, OUT).files
    spent: dict[str, float] = {}

    def timed(part: str, run: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        start = time.process_time()
        value = run(*args, **kwargs)
        spent[part] = spent.get(part, 0.0) + time.process_time() - start
        return value

    def estimates(est: Estimator, messages: Sequence[Message]) -> list[int]:
        return [est.message(m).tokens for m in messages]

    floor = Estimator(FLOOR_RULE)
    outcomes: dict[str, int] = {}
    gc.disable()
    for path in files:
        session = timed("load (claude_code.load)", load, Input(str(path), keep_text=False))[0]
        est = make_estimator()
        size = timed("predict_size (every message estimated)", predict_size, session, est)
        messages = session.messages
        timed("  a second pass of estimates (memo hits)", estimates, est, messages)
        timed("  repair (check_messages and the fixes)", repair, session)
        timed("    check_messages alone", check_messages, messages, session.dialect)
        timed("  result_refs (every result and its stub)", result_refs, messages, est, None)
        zeros = [0] * len(messages)
        timed("  the anchored sizer's floors (_Sizer.of)", _Sizer.of, messages, zeros, floor, session.usage)
        plan = timed("plan_fit, all of it", plan_fit, session, budget=BUDGET, estimator=est, size=size)
        outcomes[plan.outcome] = outcomes.get(plan.outcome, 0) + 1
        del session, messages
    gc.enable()
    average = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{len(files)} sessions at budget {BUDGET:,}: {outcomes}; load average after {average}")
    for part, seconds in spent.items():
        print(f"{part:45s} {seconds:6.3f} CPU-s")


if __name__ == "__main__":
    sys.exit(main())
