"""Where the fold of a Claude Code session from its lines (``fitting/ccfold.py``) spends its CPU time, part by
part, against reading the lines and ``orjson.loads`` of each; and how many prefixes of the shared corpus's
Claude Code sessions it takes (the rest it leaves to the loader).

Run ``python benchmarks/bench_ccfold_parts.py`` after ``python benchmarks/bench_report.py --claude-code``
(which writes the session into ``benchmarks/out/``); ``--quick`` for the 20 MB one. CPU seconds
(``process_time``), best of ``--repeat``, the parts taken in turns; each of the first four rows includes the
ones above it. The compiled scan (fitting/_ccline.c) reads the lines a chunk at a time and hands the fold a
record per line; without it built (or with ``WINDOWFIT_PURE=1``) its rows are the Python pass again.
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from collections.abc import Callable
from pathlib import Path

import orjson
from common import OUT

from windowfit.fitting import ccfold, make_estimator
from windowfit.fitting._json import bracket_count
from windowfit.fitting.formats import Input

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "transcripts" / "claude_code"


def parts(path: Path) -> dict[str, Callable[[], object]]:
    rule = make_estimator().rule
    estimator = make_estimator()

    def read() -> None:
        with open(path, "rb") as f:
            for _ in f:
                pass

    def loads() -> None:
        with open(path, "rb") as f:
            for line in f:
                orjson.loads(line)

    def brackets() -> None:
        with open(path, "rb") as f:
            for line in f:
                orjson.loads(line)
                bracket_count(line)

    def blocks() -> None:
        kinds = {"text": 0, "thinking": 0, "tool_call": 0, "tool_result": 0}
        with open(path, "rb") as f:
            for line in f:
                value = orjson.loads(line)
                bracket_count(line)
                message = value.get("message")
                if message is not None:
                    ccfold._blocks(rule, message.get("content"), value.get("type") == "assistant", kinds)

    def fold_lines_python() -> object:
        return ccfold._fold_lines(Input(str(path), keep_text=False), rule, compiled=False)

    def scan() -> None:
        with open(path, "rb") as f:
            for _ in ccfold._lines(f, ccfold._scanner(rule)):
                pass

    def fold_lines() -> object:
        return ccfold._fold_lines(Input(str(path), keep_text=False), rule)

    folded = fold_lines()
    assert folded is not None, "the fold leaves this file to the loader"

    def report() -> object:
        return ccfold._report(str(path), folded, estimator, None, None, 10, "auto", None)  # type: ignore[arg-type]

    return {
        "read the lines": read,
        "+ orjson.loads (the baseline)": loads,
        "+ bracket_count (the depth bound)": brackets,
        "+ blocks: kinds, ids, characters per class": blocks,
        "the whole pass in Python (_fold_lines, no scanner)": fold_lines_python,
        "the compiled scan alone (_lines, 1 MB chunks)": scan,
        "the whole pass (_fold_lines, with the scanner)": fold_lines,
        "then _report (rows, size, sorting)": report,
    }


def corpus_prefixes() -> tuple[int, int, int]:
    """Files, prefixes (every first N lines of every file) and how many of them the fold takes."""
    estimator = make_estimator()
    files = sorted(CORPUS.rglob("*.jsonl"))
    total = taken = 0
    for path in files:
        lines = path.read_bytes().splitlines(keepends=True)
        for n in range(1, len(lines) + 1):
            total += 1
            item = Input(str(path), b"".join(lines[:n]), keep_text=False)
            taken += ccfold.fold_claude_code(item, estimator) is not None
    return len(files), total, taken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="the 20 MB session instead of the 200 MB one")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    path = OUT / ("report_claude_20mb.jsonl" if args.quick else "report_claude_200mb.jsonl")
    if not path.exists():
        raise SystemExit(f"{path} is missing: run benchmarks/bench_report.py --claude-code{' --quick' * args.quick}")
    gc.disable()  # as the command has it
    work = parts(path)
    best = dict.fromkeys(work, float("inf"))
    for _ in range(args.repeat):
        for name, run in work.items():
            start = time.process_time()
            run()
            best[name] = min(best[name], time.process_time() - start)
    gc.enable()
    base = best["+ orjson.loads (the baseline)"]
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{path.name}, {path.stat().st_size / 1e6:.0f} MB, load average {load}; CPU s, best of {args.repeat}:")
    for name, seconds in best.items():
        print(f"  {name:50} {seconds:6.3f} {seconds / base:5.2f}x")
    if CORPUS.is_dir():
        files, total, taken = corpus_prefixes()
        print(f"corpus: {files} Claude Code files, {total} prefixes, {taken} taken by the fold")


if __name__ == "__main__":
    main()
