"""What ``windowfit report`` runs, without Typer: each file's reports as the workers make them (loaded,
streamed or folded), and ``report --json`` whole (``report_json_command``), which both ``report`` and the fast
path of ``cli/fast.py`` call."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, NamedTuple

from windowfit.fitting import Transcript, WindowfitError, build_report
from windowfit.fitting._json import encode
from windowfit.fitting.ccfold import fold_claude_code_all
from windowfit.fitting.formats import Format, Input, SkippedFile, detect, load
from windowfit.fitting.formats.claude_code import NAME as CLAUDE_CODE
from windowfit.fitting.report import Report, fold_report
from windowfit.fitting.serialize import report_document_of, report_to_dict
from windowfit.fitting.windows import WindowChoice, last_reply_model, window_for, window_of

from .scan import Stream, Work
from .shared import SizeChoice, check_limits, estimator_from, scan_all, size_of

if TYPE_CHECKING:
    from windowfit.fitting.json_shapes import TranscriptReportJson


def report_json_command(
    files: list[str],
    *,
    budget: int | None,
    window: int | None,
    estimator: str,
    overhead: float,
    skip_invalid: bool,
    strict: bool,
    from_: str | None,
    size: SizeChoice,
    preamble: int | None,
    jobs: int | None,
    top: int,
) -> None:
    """``report --json``: every transcript's report, made into its JSON object where it is made (in the
    workers, with a pool), and the document written a piece at a time."""
    check_limits(budget, window)
    est = estimator_from(estimator, overhead)
    options = ReportOptions(estimator, overhead, budget, window, top, size, preamble)
    work = partial(report_work, options=options)
    stream = partial(report_stream, options=options)
    documents = scan_all(
        files,
        partial(json_work, work=work),
        fmt=from_,
        skip_invalid=skip_invalid,
        strict=strict,
        jobs=jobs,
        progress=False,
        stream_work=partial(json_stream, stream=stream),
    )
    # what print_json writes for the same document, a piece at a time
    for part in report_json_parts(documents.values, estimator=est.rule.name, skipped=documents.skipped):
        sys.stdout.write(part.decode())
    sys.stdout.write("\n")


def json_work(transcripts: tuple[Transcript, ...], *, work: Work[Report]) -> list[bytes]:
    """``work``'s reports as ``report --json`` prints them (``report_fragment``)."""
    return [report_fragment(report_to_dict(r)) for r in work(transcripts)]


def json_stream(item: Input, chosen: Format, skip_invalid: bool, *, stream: Stream[Report]) -> list[bytes] | None:
    """``stream``'s reports as ``report --json`` prints them; None where it reads no stream."""
    reports = stream(item, chosen, skip_invalid)
    return None if reports is None else [report_fragment(report_to_dict(r)) for r in reports]


FRAGMENT_INDENT = b"\n    "
"""A line break inside one of the document's ``transcripts``: two levels of orjson's two-space indent."""
_PLACEHOLDER = "windowfit: the transcripts go here"


def report_fragment(report: TranscriptReportJson) -> bytes:
    """One transcript's object as it stands in ``report --json``'s indented document, made where the report is
    (in a worker, with a pool): the parent then only joins bytes, instead of unpickling every report's objects
    and encoding the whole document alone. JSON strings hold no raw line break, so indenting every line break
    of the object's own indented text is exact."""
    return encode(report, indent=True, sort_keys=True).replace(b"\n", FRAGMENT_INDENT)


def report_json(fragments: Sequence[bytes], *, estimator: str, skipped: Sequence[SkippedFile]) -> bytes:
    """``encode(report_document_of(reports, ...), indent=True, sort_keys=True)``, byte for byte, from the
    reports' ``report_fragment``: ``report_json_parts`` joined."""
    return b"".join(report_json_parts(fragments, estimator=estimator, skipped=skipped))


def report_json_parts(fragments: Sequence[bytes], *, estimator: str, skipped: Sequence[SkippedFile]) -> list[bytes]:
    """``report_json``'s document in pieces, to be written one after another (the command never holds the
    whole document, a copy of every fragment, nor its text): the document is encoded with one placeholder in
    ``transcripts`` (its last key, sorted: nothing is written after the placeholder but the brackets that close
    it), and the fragments, separated as orjson separates an array's items there, take its place."""
    document = encode(
        report_document_of([_PLACEHOLDER], estimator=estimator, skipped=skipped),  # type: ignore[list-item]
        indent=True,
        sort_keys=True,
    )
    head, mark, tail = document.rpartition(encode(_PLACEHOLDER))
    if not mark or not fragments:  # pragma: no cover - the placeholder is always there; a scan finds a report
        raise ValueError("report_json needs the placeholder and at least one report")
    parts = [head]
    for i, fragment in enumerate(fragments):
        if i:
            parts.append(b",\n    ")
        parts.append(fragment)
    parts.append(tail)
    return parts


class ReportOptions(NamedTuple):
    """What one file's report is made with: the same for the loaded and the streamed file, and small enough
    to go to a worker (a named tuple, not a dataclass: no methods to build at start-up)."""

    estimator: str
    overhead: float
    budget: int | None
    window: int | None
    top: int
    size: SizeChoice
    preamble: int | None


def report_work(transcripts: tuple[Transcript, ...], *, options: ReportOptions) -> list[Report]:
    """One file's reports, with an estimator (and memo) of its own, so nothing of the file outlives it."""
    o = options
    est = estimator_from(o.estimator, o.overhead)
    return [
        _windowed(
            build_report(t, est, budget=o.budget, window=o.window, top=o.top, size=size_of(t, est, o.size, o.preamble)),
            window_of(o.window, t),
        )
        for t in transcripts
    ]


def _windowed(report: Report, window: WindowChoice) -> Report:
    """``report`` against ``window``: ``--window``, else the window of the model its file records."""
    if window.model is None:
        return report  # --window (the report's own), or no window
    return replace(report, window=window.tokens, window_model=window.model)


def report_stream(
    item: Input,
    chosen: Format,
    skip_invalid: bool,
    *,
    options: ReportOptions,
) -> list[Report] | None:
    """``report_work``'s report of a messages file, folded over its messages as they are read (a file of a
    million tiny lines is never held), or of a Claude Code session folded from its lines (``claude_code_fold``);
    None for another format, or when the stream stops on an error (the file is then loaded, and the loader
    words the error)."""
    if chosen.name == CLAUDE_CODE:
        return claude_code_fold(item, options, skip_invalid=skip_invalid)
    from windowfit.fitting.formats.messages import stream_messages  # not for a Claude Code session

    try:
        found = stream_messages(item, chosen.name, skip_invalid=skip_invalid)
        if found is None:
            return None
        o = options
        est = estimator_from(o.estimator, o.overhead)
        report = fold_report(
            found.messages,
            found.header,
            est,
            budget=o.budget,
            window=o.window,
            top=o.top,
            size_mode=o.size.value,
            preamble=o.preamble,
        )
        return [_windowed(report, window_of(o.window, found.header()))]
    except (WindowfitError, ValueError, RecursionError, OSError):
        return None


FAST_FOLD_ENV = "WINDOWFIT_FASTFOLD"
"""Set to 0 to read every Claude Code file with the loader (the benchmarks compare the two paths)."""


def claude_code_fold(item: Input, options: ReportOptions, *, skip_invalid: bool = False) -> list[Report] | None:
    """``report_work``'s report of a Claude Code session, folded from its lines without building its messages
    (``fitting.ccfold``; unreadable lines skipped as the loader skips them with ``skip_invalid``); None for a
    file of a shape the fold leaves to the loader, or when it is turned off."""
    if os.environ.get(FAST_FOLD_ENV) == "0":
        return None
    o = options
    est = estimator_from(o.estimator, o.overhead)
    try:
        found = fold_claude_code_all(
            item,
            est,
            budget=o.budget,
            window=o.window,
            top=o.top,
            size_mode=o.size.value,
            preamble=o.preamble,
            skip_invalid=skip_invalid,
        )
    except (WindowfitError, ValueError, RecursionError, OSError):
        return None
    if found is None or o.window is not None:
        return found
    paths = [r.path for r in found]
    if len(set(paths)) != len(paths):
        return None  # sidechains beside the main chain: each records its own model, which the loader reads
    # each report is of one file (a session, its subagents' files): the model its last reply records
    return [_windowed(r, window_for(None, last_reply_model(Input(r.path)))) for r in found]


def report_file(item: Input, options: ReportOptions, *, fast: bool = True, skip_invalid: bool = False) -> list[Report]:
    """One file's reports as ``report`` makes them in one process: from the fold where it vouches for the
    file (``fast``), else loaded (what ``bench_report.py --claude-code`` times both ways). As the command does,
    only what detection reads as a Claude Code session is folded: the fold reads any JSON lines it is given."""
    if fast and detect(item).name == CLAUDE_CODE:
        folded = claude_code_fold(item, options, skip_invalid=skip_invalid)
        if folded is not None:
            return folded
    return report_work(load(item, skip_invalid=skip_invalid), options=options)
