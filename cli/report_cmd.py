"""``windowfit report``: measure transcripts (a folder one file at a time, over ``--jobs`` processes)."""

from __future__ import annotations

from enum import Enum
from functools import partial
from typing import Annotated

import typer

from .options import (
    Budget,
    EstimatorName,
    Files,
    FromFormat,
    Jobs,
    JsonFlag,
    Overhead,
    PreambleOption,
    SizeModeOption,
    SkipInvalid,
    Strict,
    Window,
)
from .report_run import (  # the workers' side, without Typer; the names kept here for the tests and benchmarks
    FAST_FOLD_ENV,
    FRAGMENT_INDENT,
    ReportOptions,
    claude_code_fold,
    json_stream,
    json_work,
    report_file,
    report_fragment,
    report_json,
    report_json_command,
    report_json_parts,
    report_stream,
    report_work,
)
from .rows_out import RowsOutput, scan_rows
from .shared import SizeChoice, check_limits, estimator_from, scan_all

__all__ = [
    "FAST_FOLD_ENV",
    "FRAGMENT_INDENT",
    "ReportFormat",
    "ReportOptions",
    "claude_code_fold",
    "json_stream",
    "json_work",
    "report",
    "report_file",
    "report_fragment",
    "report_json",
    "report_json_parts",
    "report_stream",
    "report_work",
]


class ReportFormat(str, Enum):
    text = "text"
    jsonl = "jsonl"
    parquet = "parquet"


def report(
    files: Files,
    budget: Budget = None,
    window: Window = None,
    json_: JsonFlag = False,
    estimator: EstimatorName = "seed",
    overhead: Overhead = 1.0,
    skip_invalid: SkipInvalid = False,
    strict: Strict = False,
    from_: FromFormat = None,
    size: SizeModeOption = SizeChoice.auto,
    preamble: PreambleOption = None,
    jobs: Jobs = None,
    format_: Annotated[
        ReportFormat,
        typer.Option("--format", help="text (or --json), or jsonl / parquet: one flat row per transcript."),
    ] = ReportFormat.text,
    output: RowsOutput = None,
    top: Annotated[int, typer.Option("--top", min=0, help="How many of the largest tool results to list.")] = 10,
    details: Annotated[
        bool | None,
        typer.Option(
            "--details/--table",
            help="Every report in full, or only the per-transcript table (default: full for up to 5 transcripts).",
        ),
    ] = None,
) -> None:
    """Measure transcripts: tokens by script, role and block kind, and the largest tool results.

    Shows message, turn and tool-round counts, and a bar of the request against the budget and the window.
    The total is the predicted size of the next request: anchored on the provider's measured usage where
    the file records it, with the system prompt and tools the file leaves out inferred from it.

    Example: windowfit report sample_transcripts/ru_subagent_chapters.jsonl --budget 400000 --window 1000000
    """
    if json_ and format_ is ReportFormat.text:
        report_json_command(
            files, budget=budget, window=window, estimator=estimator, overhead=overhead, skip_invalid=skip_invalid,
            strict=strict, from_=from_, size=size, preamble=preamble, jobs=jobs, top=top,
        )  # fmt: skip
        return
    check_limits(budget, window)
    estimator_from(estimator, overhead)  # a usage error before any file is read
    if format_ is not ReportFormat.text:
        scan_rows(
            files, kind=format_.value, output=output, fmt=from_, skip_invalid=skip_invalid, strict=strict, jobs=jobs,
            estimator=estimator, overhead=overhead, budget=budget, window=window, size=size, preamble=preamble,
        )  # fmt: skip
        return
    options = ReportOptions(estimator, overhead, budget, window, top, size, preamble)
    work = partial(report_work, options=options)
    stream = partial(report_stream, options=options)
    scanned = scan_all(
        files, work, fmt=from_, skip_invalid=skip_invalid, strict=strict, jobs=jobs, progress=True, stream_work=stream
    )
    from .render import print_reports  # rich's tables: only for text
    from .shared import out

    print_reports(out, scanned.values, details=details)
