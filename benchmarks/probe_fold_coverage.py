"""Which Claude Code sessions ``report`` folds straight from their lines (``fitting/ccfold.py``; a session
with a subagents folder together with its subagent files), and why the others are left to the loader: for
each ``*.jsonl`` file under the folders given (default: the shared corpus's Claude Code sessions), ``fold`` or
``loader`` and the first reason the fold gave. With ``--prefixes``, also how many of each file's prefixes (the
first n lines, for every n) fold. Run it on your own sessions to see how many take the fast path, e.g.

    python benchmarks/probe_fold_coverage.py ~/.claude/projects --skip-invalid

The reasons come from the fold itself (``fold_claude_code_all(..., why=[])``, which ``report`` calls);
nothing here is timed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from windowfit.fitting import make_estimator
from windowfit.fitting.ccfold import fold_claude_code_all
from windowfit.fitting.errors import WindowfitError
from windowfit.fitting.formats import Input

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "transcripts" / "claude_code"


def reason(item: Input, skip_invalid: bool) -> str | None:
    """None where the fold takes ``item``, else the first reason it gave."""
    why: list[str] = []
    try:
        reports = fold_claude_code_all(item, make_estimator(), skip_invalid=skip_invalid, why=why)
    except (WindowfitError, ValueError, RecursionError, OSError) as exc:  # report falls back to the loader
        return f"raised {type(exc).__name__}: {exc}"
    return None if reports is not None else (why[0] if why else "(no reason given)")


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
    folded = prefixes = prefix_folded = 0
    width = max(len(str(p)) for p in files)
    for path in files:
        why = reason(Input(str(path), keep_text=False), args.skip_invalid)
        folded += why is None
        extra = ""
        if args.prefixes:
            lines = path.read_bytes().splitlines(keepends=True)
            took = sum(
                reason(Input(str(path), b"".join(lines[:n]), keep_text=False), args.skip_invalid) is None
                for n in range(1, len(lines) + 1)
            )
            prefixes += len(lines)
            prefix_folded += took
            extra = f"  prefixes {took}/{len(lines)}"
        print(f"{path!s:<{width}}  {'fold  ' if why is None else 'loader'}{extra}  {why or ''}")
    print(f"\n{folded} of {len(files)} file(s) fold" + (", skipping invalid lines" if args.skip_invalid else ""))
    if args.prefixes:
        print(f"{prefix_folded} of {prefixes} prefixes fold")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
