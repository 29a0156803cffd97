"""Which Claude Code sessions ``report`` folds straight from their lines (``fitting/ccfold.py``; a session
with a subagents folder together with its subagent files), and why the others are left to the loader: for
each ``*.jsonl`` file under the folders given (default: the shared corpus's Claude Code sessions), ``fold`` or
``loader`` and the first reason the fold gave. With ``--prefixes``, also how many of each file's prefixes (the
first n lines, for every n) fold. Run it on your own sessions to see how many take the fast path, e.g.

    python benchmarks/probe_fold_coverage.py ~/.claude/projects --skip-invalid

The reasons come from the fold itself (``fold_claude_code_all(..., why=[])``, which ``report`` calls);
nothing here is timed.

Each file (and prefix) is also counted for the plans ``fit`` and ``check`` make from the fold
(``ccplan.fold_plan``, with ``--skip-invalid`` as given): ``plan`` where it plans the file, and ``one-pass``
where the one pass alone (``_fold_lines``, all fold_plan read before it read the tree fold's sessions) would."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from windowfit.fitting import make_estimator
from windowfit.fitting.ccfold import _fold_lines, fold_claude_code_all
from windowfit.fitting.ccplan import fold_plan
from windowfit.fitting.errors import WindowfitError
from windowfit.fitting.fit import DEFAULTS
from windowfit.fitting.formats import Input
from windowfit.fitting.formats.claude_code import subagent_files

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "transcripts" / "claude_code"


def reason(item: Input, skip_invalid: bool) -> str | None:
    """None where the fold takes ``item``, else the first reason it gave."""
    why: list[str] = []
    try:
        reports = fold_claude_code_all(item, make_estimator(), skip_invalid=skip_invalid, why=why)
    except (WindowfitError, ValueError, RecursionError, OSError) as exc:  # report falls back to the loader
        return f"raised {type(exc).__name__}: {exc}"
    return None if reports is not None else (why[0] if why else "(no reason given)")


def plans(item: Input, skip_invalid: bool) -> tuple[bool, bool]:
    """Whether ``fold_plan`` plans ``item`` (for ``fit`` and ``check``), and whether the one pass alone would."""
    est = make_estimator()
    try:
        planned = fold_plan(item, est, replace(DEFAULTS, budget=10**9), skip_invalid=skip_invalid) is not None
        one_pass = not (item.data is None and subagent_files(item.path))
        one_pass = one_pass and _fold_lines(item, est.rule) is not None  # type: ignore[arg-type]
    except (WindowfitError, ValueError, RecursionError, OSError):  # fit and check fall back to the loader
        return False, False
    return planned, one_pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path, help="folders (or files) of Claude Code sessions")
    parser.add_argument("--skip-invalid", action="store_true", help="as report --skip-invalid")
    parser.add_argument("--prefixes", action="store_true", help="also count the prefixes that fold")
    args = parser.parse_args()
    folders = args.folders or [CORPUS]
    files = sorted({p for f in folders for p in ([f] if f.is_file() else f.rglob("*.jsonl"))})
    if not files:
        print("no .jsonl files found", file=sys.stderr)
        return 1
    folded = prefixes = prefix_folded = planned = one_pass = prefix_planned = prefix_one_pass = 0
    width = max(len(str(p)) for p in files)
    for path in files:
        item = Input(str(path), keep_text=False)
        why = reason(item, args.skip_invalid)
        folded += why is None
        plan, alone = plans(item, args.skip_invalid)
        planned += plan
        one_pass += alone
        extra = ""
        if args.prefixes:
            lines = path.read_bytes().splitlines(keepends=True)
            took = plan_took = alone_took = 0
            for n in range(1, len(lines) + 1):
                cut = Input(str(path), b"".join(lines[:n]), keep_text=False)
                took += reason(cut, args.skip_invalid) is None
                p, a = plans(cut, args.skip_invalid)
                plan_took += p
                alone_took += a
            prefixes += len(lines)
            prefix_folded += took
            prefix_planned += plan_took
            prefix_one_pass += alone_took
            extra = f"  prefixes {took}/{len(lines)} (plan {plan_took}, one-pass {alone_took})"
        kind = "plan    " if plan else "one-pass" if alone else "loader  "
        print(f"{path!s:<{width}}  {'fold  ' if why is None else 'loader'}  {kind}{extra}  {why or ''}")
    skipping = ", skipping invalid lines" if args.skip_invalid else ""
    print(f"\n{folded} of {len(files)} file(s) fold{skipping}")
    print(f"{planned} of {len(files)} file(s) planned by fold_plan (fit, check); the one pass alone: {one_pass}")
    if args.prefixes:
        print(f"{prefix_folded} of {prefixes} prefixes fold")
        print(f"{prefix_planned} of {prefixes} prefixes planned by fold_plan; the one pass alone: {prefix_one_pass}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
