"""Loading and reporting a large messages-JSONL transcript, as ratios to a
baseline that only parses every line with orjson, timed in the same process.

Run ``python benchmarks/bench_report.py`` (``--quick`` for ~20 MB instead of
~200 MB). The transcript is generated once into ``benchmarks/out/``.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson
from common import OUT, best_of, cache_bytecode, ensure_generated
from rich.console import Console
from rich.table import Table

from sample_transcripts import prose
from windowfit import fitting
from windowfit.fitting._json import encode
from windowfit.fitting.formats import Input, load
from windowfit.fitting.serialize import report_document
from windowfit.fitting.size import predict_size

MB = 1_000_000
GENERATOR_VERSION = 1
"""Bump when the generated transcript changes, so an old file is not reused."""
POOL_PER_LANGUAGE = 64
ROUNDS_PER_TURN = 40

Json = dict[str, Any]


# --------------------------------------------------------------------------
# The transcript


def result_pool(rng: random.Random) -> list[str]:
    """Tool-result bodies in English code, Russian prose and Japanese docs (2–12 K chars)."""
    makers: tuple[Callable[[random.Random, int], str], ...] = (
        prose.python_module,
        prose.russian_prose,
        prose.japanese_doc,
    )
    return [prose.numbered(make(rng, rng.randint(2000, 12000))) for make in makers for _ in range(POOL_PER_LANGUAGE)]


def user_turn(rng: random.Random, index: int) -> Json:
    """A human message in one of the three languages."""
    ask = rng.choice((prose.english_sentence, prose.russian_sentence, prose.japanese_sentence))(rng)
    return {"role": "user", "content": f"Task {index}: {ask}"}


def tool_round(rng: random.Random, index: int, pool: list[str]) -> tuple[Json, Json]:
    """An assistant message with 1–3 Read calls and the user message with their results.

    Each result gets a unique first line so no two messages are equal (the
    estimator memoises per message).
    """
    calls, results = [], []
    for k in range(rng.choice((1, 1, 1, 2, 3))):
        call_id = f"toolu_{index:08d}_{k}"
        path = f"src/file_{rng.randrange(10_000):04d}.txt"
        calls.append({"type": "tool_use", "id": call_id, "name": "Read", "input": {"file_path": path}})
        body = f"read {index}.{k} of {path}\n{rng.choice(pool)}"
        results.append({"type": "tool_result", "tool_use_id": call_id, "content": body})
    text = {"type": "text", "text": prose.english_sentence(rng)}
    return {"role": "assistant", "content": [text, *calls]}, {"role": "user", "content": results}


def messages(seed: int, pool: list[str]) -> Iterator[Json]:
    """An endless session: a system prompt, then turns of ``ROUNDS_PER_TURN`` tool rounds."""
    rng = random.Random(seed)
    yield {"role": "system", "content": "You are a coding agent. " + prose.english_paragraph(rng, 4)}
    index = 0
    while True:
        if index % ROUNDS_PER_TURN == 0:
            yield user_turn(rng, index // ROUNDS_PER_TURN)
        yield from tool_round(rng, index, pool)
        index += 1


def write_until(out: BinaryIO, target_bytes: int, items: Iterator[Json]) -> int:
    """Stream JSON lines until at least ``target_bytes`` are written, ending on an answered round."""
    written = 0
    for item in items:
        line = orjson.dumps(item) + b"\n"
        out.write(line)
        written += len(line)
        if written >= target_bytes and item["role"] == "user" and isinstance(item["content"], list):
            return written
    raise AssertionError("the message stream ended")


def ensure_transcript(target_bytes: int, console: Console) -> Path:
    """The generated transcript, reused when a complete one of this size is there."""
    name = f"report_{target_bytes // MB}mb.jsonl"
    with console.status(f"writing {name} ({target_bytes / MB:.0f} MB, once)"):
        pool = result_pool(random.Random(7))
        return ensure_generated(name, GENERATOR_VERSION, lambda out: write_until(out, target_bytes, messages(8, pool)))


# --------------------------------------------------------------------------
# Timing


@dataclass(frozen=True, slots=True)
class Step:
    """One measured step: best seconds over the repeats."""

    name: str
    seconds: float
    reads_file: bool = True
    """False for a step whose time does not depend on the file (MB/s is meaningless)."""


def parse_lines(path: Path) -> int:
    """The baseline: read the file and ``orjson.loads`` every line."""
    n = 0
    with open(path, "rb") as f:
        for line in f:
            orjson.loads(line)
            n += 1
    return n


def load_and_report(path: Path, split: dict[str, float]) -> tuple[fitting.Transcript, fitting.Report]:
    """What ``windowfit report --json`` does in-process (the cyclic collector off while it loads and reports,
    as the command has it); records each part's seconds in ``split``: the loader, the estimator (every
    message's estimate and the predicted size), the report over those estimates, and the JSON document.
    Returns the transcript too, so that freeing it is not timed (the CLI exits instead)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        marks = [time.perf_counter()]
        (transcript,) = load(Input(str(path), keep_text=False))  # as the command loads it
        marks.append(time.perf_counter())
        estimator = fitting.make_estimator()
        size = predict_size(transcript, estimator)
        marks.append(time.perf_counter())
        report = fitting.build_report(transcript, estimator, size=size)
        marks.append(time.perf_counter())
        encode(report_document([report], estimator="seed"), indent=True, sort_keys=True)
        marks.append(time.perf_counter())
    finally:
        if collecting:
            gc.enable()
    for name, start, end in zip(PARTS, marks[:-1], marks[1:], strict=True):
        split[name] = min(split.get(name, float("inf")), end - start)
    return transcript, report


PARTS = ("load", "estimate", "report", "json")


def windowfit_command() -> list[str]:
    """The installed ``windowfit`` next to this interpreter, or the one on PATH."""
    beside = Path(sys.executable).with_name("windowfit")
    found = str(beside) if beside.exists() else shutil.which("windowfit")
    if found is None:
        raise SystemExit("windowfit is not installed: pip install -e . first")
    return [found]


def run_cli(*args: str, env: dict[str, str] | None = None) -> None:
    """``windowfit ARGS > /dev/null``; raises if it fails."""
    done = subprocess.run(
        [*windowfit_command(), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
        env=env,
    )
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["(no stderr)"]
        raise RuntimeError(f"windowfit exited {done.returncode}: {tail[0]}")


def measure(path: Path, repeat: int, console: Console) -> tuple[list[Step], str | None, fitting.Report]:
    """Time the baseline, the library and the CLI; the CLI's error, if it failed."""
    split: dict[str, float] = {}
    last: list[fitting.Report] = []

    def library_run() -> fitting.Transcript:
        transcript, report = load_and_report(path, split)
        last[:] = [report]
        return transcript

    with console.status("baseline: orjson.loads per line"):
        baseline = best_of(repeat, lambda: parse_lines(path))
    with console.status("library: load_path + build_report + JSON"):
        library = best_of(repeat, library_run)
    steps = [Step("(a) baseline: read + orjson.loads per line", baseline)]
    steps.append(Step("    loader: load (keep_text=False)", split["load"]))
    steps.append(Step("    estimator: predict_size (every message)", split["estimate"]))
    steps.append(Step("    report: build_report over the estimates", split["report"]))
    steps.append(Step("    JSON: report_document + encode", split["json"]))
    steps.append(Step("(b) load + estimate + report + JSON", library))
    cli_error = None
    with console.status("CLI: windowfit report --json"):
        try:
            cli = best_of(repeat, lambda: run_cli("report", str(path), "--json"))
            startup = best_of(repeat, lambda: run_cli("--help"))
            steps.append(Step("(c) windowfit report --json (subprocess)", cli))
            steps.append(Step("    of which start-up (windowfit --help)", startup, reads_file=False))
        except RuntimeError as exc:
            cli_error = str(exc)
    return steps, cli_error, last[0]


# --------------------------------------------------------------------------
# A Claude Code session (benchmarks/sessions.py shapes)

CLAUDE_VERSION = 2
BYTES_PER_ROUND = 13_700
"""About what one tool round of ``sessions.write_session`` writes: the rounds a session of N bytes needs."""


def ensure_claude_session(target_bytes: int, console: Console, *, defects: bool = False) -> Path:
    """One real-shaped Claude Code session (benchmarks/sessions.py) of about ``target_bytes``, written once;
    with ``defects``, of the shape of real main sessions (branches, a broken link, unanswered calls,
    sidechains: ``write_session(defects=True)``), which ``report``'s fold takes by its tree fold."""
    from sessions import write_session

    name = f"report_claude_{'defects_' * defects}{target_bytes // MB}mb.jsonl"

    def write(out: BinaryIO) -> None:
        scratch = OUT / (name + ".scratch")
        write_session(scratch, random.Random(15), max(1, target_bytes // BYTES_PER_ROUND), defects=defects)
        out.write(scratch.read_bytes())
        scratch.unlink()

    with console.status(f"writing {name} ({target_bytes / MB:.0f} MB, once)"):
        return ensure_generated(name, CLAUDE_VERSION, write)


def claude_reports(path: Path, fast: bool, split: dict[str, float]) -> tuple[Any, list[fitting.Report]]:
    """``report --json``'s work on one Claude Code file in-process (collector off, as the command has it),
    with the fold from the lines (``fast``) or without it (``WINDOWFIT_FASTFOLD=0``); each part's best
    seconds into ``split``."""
    from windowfit.cli.report_cmd import ReportOptions, report_file
    from windowfit.cli.shared import SizeChoice

    options = ReportOptions("seed", 1.0, None, None, 10, SizeChoice.auto, None)
    side = "fast" if fast else "full"
    collecting = gc.isenabled()
    gc.disable()
    try:
        marks = [time.perf_counter()]
        reports = report_file(Input(str(path), keep_text=False), options, fast=fast)
        marks.append(time.perf_counter())
        encode(report_document(reports, estimator="seed"), indent=True, sort_keys=True)
        marks.append(time.perf_counter())
    finally:
        if collecting:
            gc.enable()
    for part, start, end in zip(("load + report", "json"), marks[:-1], marks[1:], strict=True):
        key = f"{side} {part}"
        split[key] = min(split.get(key, float("inf")), end - start)
    return None, reports


def measure_claude(path: Path, repeat: int, console: Console) -> tuple[list[Step], str | None, fitting.Report]:
    split: dict[str, float] = {}
    last: list[fitting.Report] = []

    def run(fast: bool) -> Any:
        transcripts, reports = claude_reports(path, fast, split)
        last[:] = reports[:1]
        return transcripts

    cpu: dict[str, float] = {}

    def cpu_of(name: str, work: Callable[[], object]) -> Callable[[], object]:
        def timed() -> object:
            start = time.process_time()
            kept = work()
            cpu[name] = min(cpu.get(name, float("inf")), time.process_time() - start)
            return kept

        return timed

    # Taken in turns (baseline, full, fast, then again), so that a neighbour's burst on the shared machine
    # does not fall on one of them only.
    walls = {"baseline": float("inf"), "full": float("inf"), "fast": float("inf")}
    works = {
        "baseline": cpu_of("baseline", lambda: parse_lines(path)),
        "full": cpu_of("full", lambda: run(False)),
        "fast": cpu_of("fast", lambda: run(True)),
    }
    with console.status("baseline, full path, fast path, in turns"):
        for _ in range(repeat):
            for name, work in works.items():
                walls[name] = min(walls[name], best_of(1, work))
    baseline, full, fast = walls["baseline"], walls["full"], walls["fast"]
    steps = [Step("(a) baseline: read + orjson.loads per line", baseline)]
    for side, total in (("full", full), ("fast", fast)):
        name = "loader + build_report" if side == "full" else "fold from the lines (fitting/ccfold.py)"
        steps.append(Step(f"    {side}: {name}", split[f"{side} load + report"]))
        steps.append(Step(f"    {side}: JSON", split[f"{side} json"]))
        steps.append(Step(f"(b) {side} path in-process", total))
    console.print(
        "CPU seconds (process_time, best of each), which a busy machine changes less than the wall time: "
        + ", ".join(f"{k} {v:.2f} ({v / cpu['baseline']:.2f}x)" for k, v in cpu.items())
    )
    cli_error = None
    with console.status("CLI: windowfit report --json"):
        try:
            general = {**os.environ, "WINDOWFIT_FASTFOLD": "0"}
            cli_full = cli = float("inf")
            for _ in range(repeat):  # in turns, as above
                cli_full = min(cli_full, best_of(1, lambda: run_cli("report", str(path), "--json", env=general)))
                cli = min(cli, best_of(1, lambda: run_cli("report", str(path), "--json")))
            startup = best_of(repeat, lambda: run_cli("--help"))
            tiny = OUT / "report_claude_3_lines.jsonl"  # what report costs beyond --help before any line is read
            with open(path, "rb") as f:
                tiny.write_bytes(b"".join(f.readline() for _ in range(3)))
            report_startup = best_of(repeat, lambda: run_cli("report", str(tiny), "--json"))
            steps.append(Step("(c) windowfit report --json, WINDOWFIT_FASTFOLD=0", cli_full))
            steps.append(Step("(c) windowfit report --json (fold from the lines)", cli))
            steps.append(Step("    of which start-up (windowfit --help)", startup, reads_file=False))
            steps.append(Step("    start-up of report (its first 3 lines)", report_startup, reads_file=False))
        except RuntimeError as exc:
            cli_error = str(exc)
    return steps, cli_error, last[0]


def render(steps: list[Step], size: int, repeat: int, title: str) -> Table:
    table = Table(title=title + f" (best of {repeat})")
    table.add_column("step")
    for header in ("seconds", "MB/s", "x baseline"):
        table.add_column(header, justify="right")
    baseline = steps[0].seconds
    for step in steps:
        speed = f"{size / MB / step.seconds:,.0f}" if step.reads_file else "-"
        table.add_row(step.name, f"{step.seconds:.2f}", speed, f"{step.seconds / baseline:.2f}")
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a ~20 MB transcript instead of ~200 MB")
    parser.add_argument("--megabytes", type=int, help="transcript size (default 200, quick 20)")
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs of each step (default 3)")
    parser.add_argument(
        "--claude-code",
        action="store_true",
        help="a real-shaped Claude Code session: the loader beside the fold from the lines (fitting/ccfold.py)",
    )
    parser.add_argument(
        "--defects",
        action="store_true",
        help="with --claude-code: a session with the defects of real main sessions (the fold's tree fold)",
    )
    args = parser.parse_args(argv)
    console = Console(width=130)
    target = (args.megabytes or (20 if args.quick else 200)) * MB
    if args.claude_code:
        path = ensure_claude_session(target, console, defects=args.defects)
    else:
        path = ensure_transcript(target, console)
    size = path.stat().st_size
    if args.claude_code:
        console.print(cache_bytecode())
    steps, cli_error, report = (measure_claude if args.claude_code else measure)(path, args.repeat, console)
    console.print(f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} (1, 5, 15 min)")
    title = f"{path.name}: {size / MB:,.0f} MB, {report.messages:,} messages, {report.tokens:,} tokens"
    console.print(render(steps, size, args.repeat, title))
    if cli_error:
        console.print(f"(c) skipped: {cli_error}", style="red")


if __name__ == "__main__":
    main()
