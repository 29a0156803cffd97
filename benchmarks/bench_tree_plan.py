"""``check`` and ``fit --budget N`` on a real Claude Code main session that only the tree fold reads (issue 15):
planned from the fold (``ccplan.fold_plan`` over ``ccfold._fold_tree``, the default) against the loaded file
(``WINDOWFIT_FASTFOLD=0``), in turns, CPU seconds, best of N; and as ratios to a bare ``orjson.loads`` loop over
the file's lines timed in the same process.

The session is the largest main session of the shared corpus (its real defects: broken lines skipped with
``--skip-invalid``, unanswered calls that repair answers, a branch), or the file given. In-process, the plan
alone (``fold_plans`` against ``load``, ``predict_size`` and ``plan_fit`` of each transcript, checked equal first; a
file of several transcripts, such as bench_report.py's ``--defects`` session, is timed for ``check`` only, as
``fit`` loads it); as commands,
what a user runs (``windowfit check FILE --budget N --skip-invalid``, ``windowfit fit ...``).

Run ``python benchmarks/bench_tree_plan.py`` (``--repeat N``, ``--budget N``, ``FILE``)."""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import orjson
from bench_fit import child_cpu

from windowfit.cli.fit_cmd import FAST_FOLD_ENV
from windowfit.fitting import make_estimator
from windowfit.fitting.ccplan import fold_plan, fold_plans
from windowfit.fitting.fit import DEFAULTS, plan_fit
from windowfit.fitting.formats import Input, load
from windowfit.fitting.size import predict_size

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "transcripts" / "claude_code"


def bare_loop(path: Path) -> int:
    """The baseline: read the file and ``orjson.loads`` each line (the damaged ones passed over)."""
    n = 0
    with path.open("rb") as f:
        for line in f:
            try:
                orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            n += 1
    return n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("file", nargs="?", type=Path, help="a Claude Code session (default: the corpus's largest)")
    parser.add_argument("--budget", type=int, default=30_000, help="the budget (default 30,000)")
    parser.add_argument("--repeat", type=int, default=7, help="best of N, in turns (default 7)")
    args = parser.parse_args()
    path: Path = args.file or max(
        (p for p in CORPUS.glob("*.jsonl") if "agent-" not in p.name), key=lambda p: p.stat().st_size
    )
    item = Input(str(path), keep_text=False)
    options = replace(DEFAULTS, budget=args.budget)

    def folded() -> object:
        found = fold_plans(item, make_estimator(), options, skip_invalid=True)
        assert found is not None, "fold_plans leaves this file to the loader"
        return [f.plan for f in found]

    def loaded() -> object:
        est = make_estimator()
        return [
            plan_fit(session.live(), budget=args.budget, estimator=est, size=predict_size(session, est))
            for session in load(item, skip_invalid=True)
        ]

    assert folded() == loaded()
    works: dict[str, Callable[[], object]] = {"baseline": lambda: bare_loop(path), "fold": folded, "load": loaded}
    best = {name: float("inf") for name in works}
    for _ in range(args.repeat):
        for name, work in works.items():
            gc.collect()
            start = time.process_time()
            work()
            best[name] = min(best[name], time.process_time() - start)
    windowfit = str(Path(sys.executable).with_name("windowfit"))
    argv = {
        "check": [windowfit, "check", str(path), "--budget", str(args.budget), "--skip-invalid"],
        "fit": [windowfit, "fit", str(path), "--budget", str(args.budget), "--skip-invalid"],
    }
    if fold_plan(item, make_estimator(), options, skip_invalid=True) is None:
        del argv["fit"]  # several transcripts (sidechains): fit loads the file
    commands = {}
    for name, command in argv.items():
        commands[f"{name} (fold)"] = child_cpu(command)
        commands[f"{name} (FASTFOLD=0)"] = child_cpu(["env", f"{FAST_FOLD_ENV}=0", *command])
    took = {name: float("inf") for name in commands}
    for _ in range(args.repeat):
        for name, run in commands.items():
            took[name] = min(took[name], run())
    print(f"{path.name}: {path.stat().st_size / 1e6:.2f} MB, budget {args.budget:,}, best of {args.repeat}, in turns")
    print(f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")
    base = best["baseline"]
    print(f"  in-process  bare orjson loop            {base * 1e3:8.1f} ms  1.00x")
    print(f"  in-process  fold_plans (tree fold)      {best['fold'] * 1e3:8.1f} ms  {best['fold'] / base:.2f}x")
    print(f"  in-process  load + predict + plan_fit   {best['load'] * 1e3:8.1f} ms  {best['load'] / base:.2f}x")
    print(f"  in-process  fold / load                 {best['fold'] / best['load']:.2f}")
    for name in argv:
        fast, slow = took[f"{name} (fold)"], took[f"{name} (FASTFOLD=0)"]
        print(f"  command  windowfit {name:<5}  fold {fast:.3f} s  FASTFOLD=0 {slow:.3f} s  ratio {fast / slow:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
