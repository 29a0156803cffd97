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
import contextlib
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

    def fold_tree() -> object:
        return ccfold._fold_tree(Input(str(path), keep_text=False), rule, False)

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
        "the tree fold instead (_fold_tree, with the scanner)": fold_tree,
        "then _report (rows, size, sorting)": report,
    }


def corpus_prefixes(skip_invalid: bool) -> tuple[int, int, int, int]:
    """Files, how many ``report``'s fold takes (``fold_claude_code_all``: every transcript of the file),
    prefixes (every first N lines of every file) and how many of them it takes, with ``skip_invalid``."""
    estimator = make_estimator()
    files = sorted(CORPUS.rglob("*.jsonl"))
    total = taken = whole = 0
    for path in files:
        item = Input(str(path), keep_text=False)
        whole += ccfold.fold_claude_code_all(item, estimator, skip_invalid=skip_invalid) is not None
        lines = path.read_bytes().splitlines(keepends=True)
        for n in range(1, len(lines) + 1):
            total += 1
            item = Input(str(path), b"".join(lines[:n]), keep_text=False)
            taken += ccfold.fold_claude_code_all(item, estimator, skip_invalid=skip_invalid) is not None
    return len(files), whole, total, taken


def corpus_sessions(repeat: int) -> tuple[int, float, float, float]:
    """On the corpus's files the fold takes with ``--skip-invalid`` that the one pass leaves (trees, broken
    lines, images): how many, and the CPU seconds (best of ``repeat``, summed over the files, taken in turns) of
    the bare loop, of ``report``'s fold (the one pass tried first) and of the loader with ``build_report``."""
    from windowfit.cli.report_cmd import ReportOptions, report_work
    from windowfit.cli.shared import SizeChoice
    from windowfit.fitting.formats import load

    options = ReportOptions("seed", 1.0, None, None, 10, SizeChoice.auto, None)
    rule = make_estimator().rule
    files = []
    for path in sorted(CORPUS.rglob("*.jsonl")):
        item = Input(str(path), keep_text=False)
        if ccfold._fold_lines(item, rule) is None and ccfold.fold_claude_code(
            item, make_estimator(), skip_invalid=True
        ):
            files.append(item)

    def bare() -> None:
        for item in files:
            with open(item.path, "rb") as f:
                for line in f:
                    with contextlib.suppress(orjson.JSONDecodeError):  # the broken lines
                        orjson.loads(line)

    def fold() -> None:
        for item in files:
            ccfold.fold_claude_code(item, make_estimator(), skip_invalid=True)

    def loaded() -> None:
        for item in files:
            report_work(load(item, skip_invalid=True), options=options)

    best = [float("inf")] * 3
    for _ in range(repeat):
        for k, run in enumerate((bare, fold, loaded)):
            start = time.process_time()
            run()
            best[k] = min(best[k], time.process_time() - start)
    return len(files), best[0], best[1], best[2]


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
        for skip_invalid in (False, True):
            files, whole, total, taken = corpus_prefixes(skip_invalid)
            print(
                f"corpus{' (--skip-invalid)' if skip_invalid else ''}: {whole} of {files} Claude Code files and "
                f"{taken} of {total} prefixes taken by the fold"
            )
        n, bare, fold, loaded = corpus_sessions(args.repeat)
        print(
            f"corpus, the {n} files only the tree fold takes: bare loop {bare:.3f} s, fold {fold:.3f} s "
            f"({fold / bare:.2f}x), loader + build_report {loaded:.3f} s ({loaded / bare:.2f}x)"
        )


if __name__ == "__main__":
    main()
