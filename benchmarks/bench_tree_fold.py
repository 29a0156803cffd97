"""The tree fold of ``report`` (``fitting/ccfold.py``: the one pass, then ``_fold_tree`` where it gives up) on
sessions with defects, as a ratio to the bare loop (read + ``orjson.loads`` per line), this checkout against an
older commit (``--old``, default 7272a36: main before the tree fold read each file once).

The inputs: the shared corpus's Claude Code files that only the tree fold takes (``fold_claude_code`` with
``--skip-invalid``, as ``bench_ccfold_parts.py`` picks them), and a generated real-shaped session with defects
(``sessions.write_session(defects=True)``: branches, a broken link, unanswered calls, sidechains; about
``--megabytes``, default 200, written once into ``benchmarks/out/``; 0 for none), folded as ``report`` folds
it (``fold_claude_code_all``); and, where ``bench_report.py --claude-code`` has written it, the session of that
size without defects, which the one pass takes (what keeping its lines for a hand-over costs there). Beside
``report``'s fold, each side times the tree fold alone (no one pass first: what deciding up front, never
wrongly, would cost) and, on the corpus, the loader with ``build_report``. Each side runs in its own
process (the old one from a ``git archive`` of ``--old`` with its C extensions built there), which times the
bare loop and the folds in turns, best of ``--inner``, in CPU seconds (``process_time``), garbage collection
off as the command has it; the parent runs the two sides in turns (``--rounds`` times, ABAB) and keeps each
side's best ratio.

    PATH=$PWD/.venv/bin:$PATH python benchmarks/bench_tree_fold.py [--megabytes 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
from common import OUT, ROOT

CORPUS = ROOT.parent / "shared" / "corpus" / "transcripts" / "claude_code"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus/transcripts/claude_code")
MB = 1_000_000


def defects_session(megabytes: int) -> Path:
    """The generated session with defects (``bench_report.py --claude-code --defects``'s), written once."""
    from bench_report import ensure_claude_session
    from rich.console import Console

    return ensure_claude_session(megabytes * MB, Console(stderr=True), defects=True)


def worker(inner: int, defects: str, clean: str) -> None:
    """One side: the CPU seconds of the bare loop and of the fold on each input, as JSON on stdout."""
    from windowfit.fitting import ccfold, make_estimator
    from windowfit.fitting.formats import Input

    rule = make_estimator().rule
    inputs: dict[str, tuple[list[Path], bool]] = {}
    if CORPUS.is_dir():
        corpus = []
        for path in sorted(CORPUS.rglob("*.jsonl")):
            item = Input(str(path), keep_text=False)
            if ccfold._fold_lines(item, rule) is None and ccfold.fold_claude_code(
                item, make_estimator(), skip_invalid=True
            ):
                corpus.append(path)
        inputs["corpus"] = (corpus, False)
    if defects:
        inputs["defects"] = ([Path(defects)], True)
    if clean:  # the one pass takes it: what keeping its records for a hand-over costs where none is needed
        inputs["clean"] = ([Path(clean)], True)
    found: dict[str, object] = {}
    for name, (files, every) in inputs.items():

        def bare(files: list[Path] = files) -> None:
            for path in files:
                with open(path, "rb") as f:
                    for line in f:
                        with contextlib.suppress(orjson.JSONDecodeError):  # the corpus's broken lines
                            orjson.loads(line)

        def fold(files: list[Path] = files, every: bool = every) -> None:
            for path in files:
                item = Input(str(path), keep_text=False)
                run = ccfold.fold_claude_code_all if every else ccfold.fold_claude_code
                assert run(item, make_estimator(), skip_invalid=True) is not None, path

        def tree(files: list[Path] = files) -> None:
            """The tree fold without the one pass before it: what deciding up front, never wrongly, would
            cost (the file's own reports, a subagents folder aside)."""
            for path in files:
                estimator = make_estimator()
                found = ccfold._fold_tree(Input(str(path), keep_text=False), rule, True)
                assert found is not None, path
                for f in found:
                    ccfold._report(str(path), f, estimator, None, None, 10, "auto", None)

        def loader(files: list[Path] = files) -> None:
            from windowfit.cli.report_cmd import ReportOptions, report_work
            from windowfit.cli.shared import SizeChoice
            from windowfit.fitting.formats import load

            options = ReportOptions("seed", 1.0, None, None, 10, SizeChoice.auto, None)
            for path in files:
                report_work(load(Input(str(path), keep_text=False), skip_invalid=True), options=options)

        works = {"bare": bare, "fold": fold, "tree": tree}
        if name == "corpus":
            works["loader"] = loader
        best = dict.fromkeys(works, float("inf"))
        gc.disable()
        for _ in range(inner):
            for key, work in works.items():
                start = time.process_time()
                work()
                best[key] = min(best[key], time.process_time() - start)
            gc.collect()
        gc.enable()
        found[name] = {"files": len(files), "bytes": sum(p.stat().st_size for p in files), **best}
    print(orjson.dumps(found).decode())


def old_checkout(rev: str, where: Path) -> Path:
    """``git archive`` of ``rev`` into ``where`` with its C extensions built in place: its ``src`` for
    ``PYTHONPATH``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    build = (
        "from setuptools import Distribution, Extension\n"
        "d = Distribution({'ext_modules': [Extension(n, sources=[f'fitting/{n}.c']) for n in ('_ccline', "
        "'_classcount')], 'script_args': ['build_ext', '--build-lib', 'fitting', '--build-temp', 'build']})\n"
        "d.parse_command_line()\nd.run_commands()\n"
    )
    subprocess.run([sys.executable, "-c", build], cwd=where, check=True, capture_output=True)
    return where / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--old", default="7272a36", help="the commit to compare with (default 7272a36)")
    parser.add_argument("--megabytes", type=int, default=200, help="the generated session (0: none)")
    parser.add_argument("--rounds", type=int, default=3, help="turns of the two sides (ABAB)")
    parser.add_argument("--inner", type=int, default=3, help="best of N inside each side's process")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--defects", default="", help=argparse.SUPPRESS)
    parser.add_argument("--clean", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.inner, args.defects, args.clean)
        return
    defects = str(defects_session(args.megabytes)) if args.megabytes else ""
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "fitting"], capture_output=True)
    clean = OUT / f"report_claude_{args.megabytes}mb.jsonl"  # bench_report.py --claude-code's, if written
    command = [sys.executable, __file__, "--worker", "--inner", str(args.inner), "--defects", defects]
    command += ["--clean", str(clean) if args.megabytes and clean.exists() else ""]
    best: dict[tuple[str, str], float] = {}
    shown: dict[str, dict[str, float]] = {}
    loads = [os.getloadavg()[0]]
    started = time.strftime("%H:%M", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="bench_tree_fold_") as tmp:
        old_src = old_checkout(args.old, Path(tmp))
        sides = {args.old: {**os.environ, "PYTHONPATH": str(old_src)}, "this checkout": dict(os.environ)}
        for _ in range(args.rounds):
            for side, env in sides.items():
                env.pop("WINDOWFIT_PURE", None)
                out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
                for name, figures in orjson.loads(out).items():
                    ratio = figures["fold"] / figures["bare"]
                    if ratio < best.get((side, name), float("inf")):
                        best[side, name] = ratio
                        shown[f"{side}/{name}"] = figures
                loads.append(os.getloadavg()[0])
    print(
        f"{started}-{time.strftime('%H:%M', time.gmtime())} UTC, this checkout {head.stdout.strip()}"
        f"{' (fitting/ modified)' if dirty.stdout else ''} against {args.old}; load average (1 min) "
        f"{min(loads):.1f}-{max(loads):.1f}; CPU s, best of {args.inner} in each process, best of {args.rounds} turns:"
    )
    for (side, name), ratio in sorted(best.items(), key=lambda kv: (kv[0][1], kv[0][0] != args.old)):
        f = shown[f"{side}/{name}"]
        what = f"{f['files']} file(s), {f['bytes'] / MB:.1f} MB"
        others = f"; the tree fold alone {f['tree'] / f['bare']:.2f}x"
        if "loader" in f:
            others += f", loader + build_report {f['loader'] / f['bare']:.2f}x"
        print(
            f"  {name:8} {what:22} {side:14} bare {f['bare']:.3f} s, report's fold {f['fold']:.3f} s: "
            f"{ratio:.2f}x{others}"
        )


if __name__ == "__main__":
    main()
