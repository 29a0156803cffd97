"""One flat row per transcript: the ``check``/``report`` summary as plain values, made by a pure function over a
path (or bytes and a name), so that a pool, Ray Data or any engine can map it over millions of sessions and
DuckDB can query what it writes (JSONL or Parquet).

A Claude Code session the fold of its lines vouches for (``ccfold.fold_claude_code``; with a budget, the
plan of its one pass, fitting or not, ``ccplan.fold_plan``) is made into its row from the fold, without
loading the file: the row is the one the load gives (tests/test_rows_fold.py compares the two on the corpus
and generated sessions), at about the bare ``orjson`` loop's cost rather than the loader's. Any other file,
or ``WINDOWFIT_FASTFOLD=0``, is loaded."""

from __future__ import annotations

import gc
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from ._frozen import frozen
from .ccfold import fold_claude_code
from .ccplan import fold_plan
from .errors import WindowfitError
from .estimate import make_estimator
from .fit import DEFAULTS, Limit, Outcome, Plan, crossed, plan_fit
from .formats import Input, detect, get_format, load
from .formats.claude_code import NAME as CLAUDE_CODE
from .size import PreambleSource, Size, SizeMode, SizeSource, predict_size
from .transcript import Transcript

ROW_FIELDS = (
    "path",
    "index",
    "name",
    "format",
    "bytes",
    "messages",
    "tokens",
    "size_source",
    "preamble_tokens",
    "preamble_source",
    "estimator",
    "budget",
    "window",
    "outcome",
    "tokens_after",
    "crossed",
    "defects",
)
"""The columns, in order (a Parquet file's schema, a JSONL row's keys)."""

FAST_FOLD_ENV = "WINDOWFIT_FASTFOLD"
"""Set to 0 to load every file (``cli.report_cmd.FAST_FOLD_ENV``: one switch for the rows and the commands)."""


@frozen
class Row:
    """One transcript's summary: where it is, how big, and (with a budget) what fitting it would do."""

    path: str
    index: int
    """Its place among the file's transcripts (a session, then its subagents)."""
    name: str
    format: str
    bytes: int
    """The size of the whole file it came from."""
    messages: int
    tokens: int
    """The predicted size of the next request, as ``report`` and ``check`` show it."""
    size_source: SizeSource
    preamble_tokens: int
    preamble_source: PreambleSource
    estimator: str
    budget: int | None
    window: int | None
    outcome: Outcome | None
    """``check``'s outcome at the budget (fits, cleared, ..., too-long); None without a budget."""
    tokens_after: int | None
    crossed: Limit | None
    """The limit the fitted request is still over: budget, window, or None."""
    defects: int
    """Defects fit would repair first (orphan calls and results)."""

    def as_dict(self) -> dict[str, Any]:
        """The row as ``dataclasses.asdict`` gives it (its fields are plain values), in a fifteenth of the
        time: 1.3 µs a row against 20 µs, measured 2026-12-02, which a million rows would otherwise spend."""
        return {name: getattr(self, name) for name in ROW_FIELDS}


def transcript_rows(
    transcripts: tuple[Transcript, ...],
    *,
    size_bytes: int,
    estimator: str = "seed",
    overhead: float = 1.0,
    budget: int | None = None,
    window: int | None = None,
    size: SizeMode = "auto",
    preamble: int | None = None,
) -> tuple[Row, ...]:
    """The rows of one file's transcripts, with an estimator (and memo) of their own."""
    est = make_estimator(estimator, overhead=overhead)
    rows = []
    for index, session in enumerate(transcripts):
        predicted = predict_size(session, est, mode=size, preamble=preamble)
        plan = None
        if budget is not None:
            plan = plan_fit(
                session.live(),
                budget=budget,
                estimator=est,
                batch_size=DEFAULTS.batch_size,
                protected_fraction=DEFAULTS.protected_fraction,
                min_clear_ratio=DEFAULTS.min_clear_ratio,
                size=predicted,
            )
        rows.append(
            row_of(
                *(session.source.path, index, session.name, session.format, size_bytes, len(session.messages)),
                *(est.rule.name, window, predicted, plan),
            )
        )
    return tuple(rows)


def row_of(
    path: str,
    index: int,
    name: str,
    format: str,
    size_bytes: int,
    messages: int,
    estimator: str,
    window: int | None,
    size: Size,
    plan: Plan | None,
) -> Row:
    """The row of one transcript of the file at ``path`` (``size_bytes`` long), predicted at ``size`` and, with
    a budget, planned as ``plan`` (``check``'s plan, with check's options, where ``check`` makes the rows)."""
    return Row(
        path=path,
        index=index,
        name=name,
        format=format,
        bytes=size_bytes,
        messages=messages,
        tokens=size.tokens,
        size_source=size.source,
        preamble_tokens=size.preamble_tokens,
        preamble_source=size.preamble_source,
        estimator=estimator,
        budget=None if plan is None else plan.options.budget,
        window=window,
        outcome=None if plan is None else plan.outcome,
        tokens_after=None if plan is None else plan.tokens_after,
        crossed=None if plan is None else crossed(plan, window),
        defects=0 if plan is None else len(plan.repairs),
    )


def file_rows(
    path: str | Path,
    data: bytes | None = None,
    *,
    fmt: str | None = None,
    skip_invalid: bool = False,
    estimator: str = "seed",
    overhead: float = 1.0,
    budget: int | None = None,
    window: int | None = None,
    size: SizeMode = "auto",
    preamble: int | None = None,
    fold: bool | None = None,
) -> tuple[Row, ...]:
    """The rows of the transcripts in one file (or in ``data``, named ``path``): pure, picklable, and the same
    wherever it runs. Raises the loaders' errors for a file it cannot read. A Claude Code session is made into
    its row from the fold of its lines where that vouches for it (``folded_rows``), unless ``fold`` is False
    (None: unless ``WINDOWFIT_FASTFOLD=0``); the rows are the same either way."""
    item = Input(str(path), data, keep_text=False)  # rows never write a transcript
    # detect refuses binary and foreign files with the same words as the command line
    chosen = detect(item) if fmt is None else get_format(fmt)
    if fold is None:
        fold = os.environ.get(FAST_FOLD_ENV) != "0"
    # The cyclic collector is off while the file is read and summed, as the command line's scan has it: the
    # file's objects are freed by their reference counts once the rows are made, and the collector's passes over
    # them cost about a sixth of the time (bench_folder.py's last lines).
    collecting = gc.isenabled()
    gc.disable()
    try:
        if fold and chosen.name == CLAUDE_CODE:
            size_bytes = len(data) if data is not None else Path(item.path).stat().st_size
            folded = folded_rows(
                item,
                size_bytes=size_bytes,
                estimator=estimator,
                overhead=overhead,
                budget=budget,
                window=window,
                size=size,
                preamble=preamble,
            )
            if folded is not None:
                return folded
        return _rows_of(item, data, fmt, skip_invalid, estimator, overhead, budget, window, size, preamble)
    finally:
        if collecting:
            gc.enable()


def _rows_of(
    item: Input,
    data: bytes | None,
    fmt: str | None,
    skip_invalid: bool,
    estimator: str,
    overhead: float,
    budget: int | None,
    window: int | None,
    size: SizeMode,
    preamble: int | None,
) -> tuple[Row, ...]:
    transcripts = load(item, fmt=fmt, skip_invalid=skip_invalid)
    path = item.path
    size_bytes = len(data) if data is not None else Path(path).stat().st_size
    return transcript_rows(
        transcripts,
        size_bytes=size_bytes,
        estimator=estimator,
        overhead=overhead,
        budget=budget,
        window=window,
        size=size,
        preamble=preamble,
    )


def folded_rows(
    item: Input,
    *,
    size_bytes: int,
    estimator: str = "seed",
    overhead: float = 1.0,
    budget: int | None = None,
    window: int | None = None,
    size: SizeMode = "auto",
    preamble: int | None = None,
) -> tuple[Row, ...] | None:
    """The row ``transcript_rows`` makes of the one transcript ``claude_code.load`` reads from ``item``, from
    the fold of its lines: without a budget where ``fold_claude_code`` vouches for the file, with one where
    ``fold_plan`` plans it (check's summary: the plan ``plan_fit`` makes, which has no repairs there). None
    for any other file or error: the caller loads it, and the loader words the error."""
    try:
        est = make_estimator(estimator, overhead=overhead)
        if budget is None:
            report = fold_claude_code(item, est, top=0, size_mode=size, preamble=preamble)
            if report is None or report.size is None:
                return None
            path, name, messages, predicted = report.path, report.name, report.messages, report.size
            plan = None
        else:
            found = fold_plan(
                item, est, replace(DEFAULTS, budget=budget), size_mode=size, preamble=preamble, summary=True
            )
            if found is None or found.plan.size is None:
                return None
            path, name, messages, predicted, plan = found.path, found.name, found.messages, found.plan.size, found.plan
    except (WindowfitError, ValueError, RecursionError, OSError):
        return None
    return (row_of(path, 0, name, CLAUDE_CODE, size_bytes, messages, est.rule.name, window, predicted, plan),)


def row_of_path(item: dict[str, Any]) -> list[dict[str, Any]]:
    """Ray Data's ``flat_map`` over ``from_items(paths)``: one item ``{"item": path}`` in, its rows out as dicts.

    Options ride along in the item (``{"item": path, "budget": 100000}``), so one function serves every run."""
    options = {k: v for k, v in item.items() if k != "item"}
    return [row.as_dict() for row in file_rows(item["item"], **options)]
