"""``check|report --format jsonl|parquet``: one flat row per transcript (``fitting.rows``), written as JSON
lines (stdout or ``-o``) or a Parquet file (``-o``, with the ``parquet`` extra) for DuckDB and friends."""

from __future__ import annotations

import os
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from windowfit.fitting import Transcript, WindowfitError
from windowfit.fitting._json import encode
from windowfit.fitting.errors import OptionError
from windowfit.fitting.formats import Format, Input

from .exit_codes import ExitCode
from .scan import Stream, Work
from .shared import OutputRefused, SizeChoice, estimator_from, fail, output_target, scan_all, write_atomic

if TYPE_CHECKING:
    from windowfit.fitting.rows import Row

    from .check_run import Checked

RowsOutput = Annotated[
    str | None,
    typer.Option("--output", "-o", help="With --format jsonl or parquet: write the rows here (parquet needs it)."),
]


def rows_work(
    transcripts: tuple[Transcript, ...],
    *,
    estimator: str,
    overhead: float,
    budget: int | None,
    window: int | None,
    size: SizeChoice,
    preamble: int | None,
) -> list[Row]:
    """One file's rows (the pure ``fitting.rows.transcript_rows``), sized by the file they came from."""
    from windowfit.fitting.rows import transcript_rows  # with fit.py: only where rows are asked for

    path = transcripts[0].source.path if transcripts else ""
    try:
        rows = transcript_rows(
            transcripts,
            size_bytes=_size_bytes(path),
            estimator=estimator,
            overhead=overhead,
            budget=budget,
            window=window,
            size=size.value,
            preamble=preamble,
        )
    except WindowfitError as exc:
        fail(exc)
    return list(rows)


def rows_stream(
    item: Input,
    chosen: Format,
    skip_invalid: bool,
    *,
    estimator: str,
    overhead: float,
    budget: int | None,
    window: int | None,
    size: SizeChoice,
    preamble: int | None,
) -> list[Row] | None:
    """``rows_work``'s row of a Claude Code session, from the fold of its lines without loading it
    (``fitting.rows.folded_rows``: the same row); None to have the file loaded (another format, a shape the fold
    leaves to the loader, a session over the budget, or ``WINDOWFIT_FASTFOLD=0``)."""
    from windowfit.fitting.formats.claude_code import NAME as CLAUDE_CODE  # loaded with the format registry
    from windowfit.fitting.rows import FAST_FOLD_ENV, folded_rows

    if chosen.name != CLAUDE_CODE or os.environ.get(FAST_FOLD_ENV) == "0":
        return None
    rows = folded_rows(
        item,
        size_bytes=_size_bytes(item.path),
        estimator=estimator,
        overhead=overhead,
        budget=budget,
        window=window,
        size=size.value,
        preamble=preamble,
    )
    return None if rows is None else list(rows)


def _size_bytes(path: str) -> int:
    """The size of the file a row came from, as ``rows_work`` gives it (0 for stdin)."""
    try:
        return os.stat(path).st_size
    except OSError:  # stdin
        return 0


def check_rows_work(transcripts: tuple[Transcript, ...], **settings: Any) -> list[Row]:
    """``check --format jsonl|parquet``: the rows of one file's checks, made by ``check_work`` with check's
    settings (``check_run.check_settings``: its fit options too), so the rows say what ``check`` says."""
    from .check_run import check_work

    return _check_rows(check_work(transcripts, **settings), settings)


def check_rows_stream(item: Input, chosen: Format, skip_invalid: bool, **settings: Any) -> list[Row] | None:
    """``check_rows_work`` of a file ``check_stream`` reads without loading it; None to have it loaded."""
    from .check_run import check_stream

    found = check_stream(item, chosen, skip_invalid, **settings)
    return None if found is None else _check_rows(found, settings)


def _check_rows(checks: list[Checked], settings: dict[str, Any]) -> list[Row]:
    from windowfit.fitting.rows import row_of

    if not checks:
        return []
    estimator = estimator_from(settings["estimator"], settings["overhead"]).rule.name
    size_bytes = _size_bytes(checks[0].path)
    rows = []
    for index, c in enumerate(checks):
        if c.plan.size is None:
            raise AssertionError("check planned without a predicted size")  # every check predicts one
        window = c.window.tokens  # the window it was checked against: --window, else its model's
        rows.append(
            row_of(c.path, index, c.name, c.format, size_bytes, c.messages, estimator, window, c.plan.size, c.plan)
        )
    return rows


def scan_rows(
    files: list[str],
    *,
    kind: str,
    output: str | None,
    fmt: str | None,
    skip_invalid: bool,
    strict: bool,
    jobs: int | None,
    estimator: str,
    overhead: float,
    budget: int | None,
    window: int | None,
    size: SizeChoice,
    preamble: int | None,
    check: dict[str, Any] | None = None,
) -> list[Row]:
    """``check|report --format jsonl|parquet``: every file's rows, scanned as ``scan_all`` scans, then
    written (``write_rows``); returned for the caller's exit code. With ``check`` (``check_run.check_settings``),
    the rows of check's own checks."""
    settings: dict[str, Any] = {
        "estimator": estimator,
        "overhead": overhead,
        "budget": budget,
        "window": window,
        "size": size,
        "preamble": preamble,
    }  # the loaded and the folded rows take the same settings
    work: Work[Row] = partial(rows_work, **settings)
    stream: Stream[Row] = partial(rows_stream, **settings)
    if check is not None:
        work, stream = partial(check_rows_work, **check), partial(check_rows_stream, **check)
    found = scan_all(
        files, work, fmt=fmt, skip_invalid=skip_invalid, strict=strict, jobs=jobs, progress=False, stream_work=stream
    )
    write_rows(found.values, kind=kind, output=output, inputs=files)
    return found.values


def write_rows(rows: list[Row], *, kind: str, output: str | None, inputs: list[str]) -> None:
    """The rows as JSON lines or Parquet, to ``output`` (``-`` or None: stdout, JSON lines only)."""
    if kind == "parquet":
        if output is None or output == "-":
            fail(OptionError("--format parquet writes a binary file: pass -o FILE"))
        data = _parquet(rows)
    else:
        data = b"".join(encode(r.as_dict()) + b"\n" for r in rows)  # a lone surrogate in a name: its escape
        if output is None or output == "-":
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
            return
    from .shared import err  # the console: made only when one is used
    from .terminal import markup_safe

    try:
        write_atomic(output_target(Path(output), inputs=inputs), data)
    except OutputRefused as exc:
        err.print(f"[bold red]error:[/] {markup_safe(str(exc))}")
        raise typer.Exit(ExitCode.OUTPUT) from None
    except OSError as exc:
        err.print(f"[bold red]error:[/] cannot write {markup_safe(output)}: {markup_safe(exc.strerror or '')}")
        raise typer.Exit(ExitCode.OUTPUT) from None


def _parquet(rows: list[Row]) -> bytes:
    try:
        import pyarrow as pa  # type: ignore[import-not-found, import-untyped, unused-ignore]
        import pyarrow.parquet as pq  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        error = OptionError("--format parquet needs pyarrow")
        error.hint = "install windowfit's parquet extra from its checkout: pip install '.[parquet]'"
        fail(error)
    table = pa.Table.from_pylist([r.as_dict() for r in rows], schema=_schema(pa))
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return bytes(sink.getvalue().to_pybytes())


def _schema(pa: object) -> object:
    from windowfit.fitting.rows import ROW_FIELDS

    types = {
        "index": "int64",
        "bytes": "int64",
        "messages": "int64",
        "tokens": "int64",
        "preamble_tokens": "int64",
        "budget": "int64",
        "window": "int64",
        "tokens_after": "int64",
        "defects": "int64",
    }
    return pa.schema([(name, getattr(pa, types.get(name, "string"))()) for name in ROW_FIELDS])  # type: ignore[attr-defined]
