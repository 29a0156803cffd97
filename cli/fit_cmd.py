"""``windowfit fit`` (write the fitted request, show the diff) and
``windowfit check`` (the CI pre-flight)."""

from __future__ import annotations

import gc
import os
import re
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from enum import Enum
from functools import partial, wraps
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ParamSpec

import typer

from windowfit.fitting import Transcript, WindowfitError
from windowfit.fitting._frozen import frozen
from windowfit.fitting.columns import Columns, columns_from_stream, is_plain
from windowfit.fitting.errors import FileChanged, InputError, Location, OptionError
from windowfit.fitting.estimate import Estimator
from windowfit.fitting.fit import (
    DEFAULTS,
    OUTCOMES,
    FitOptions,
    Limit,
    Plan,
    apply_plan,
    crossed,
    fitted_shape,
    keep_cleared,
    too_long_message,
)
from windowfit.fitting.formats import Format, Input
from windowfit.fitting.formats.messages import NAME as FORMAT_NAME
from windowfit.fitting.formats.messages import LineTexts, file_changed, message_of_line, stream_messages, write_lines
from windowfit.fitting.serialize import plan_document
from windowfit.fitting.size import Size, predict_size
from windowfit.fitting.store import PAGE_TOKENS, Entry, ResultStore, open_store
from windowfit.fitting.transcript import Dialect, Source
from windowfit.fitting.validate import Violation, check_request, new_violations, unsendable

if TYPE_CHECKING:
    from windowfit.fitting.ccplan import FoldedPlan  # imported where a Claude Code file is fitted

# Imported where they run: writing a request (fitting.request) and a streamed file's fit (fitting.columns_fit),
# which a Claude Code session planned from its fold, fit without -o, does neither of (tests/test_cli_startup.py).

from .check_run import (  # the workers' side, without Typer; the names kept here for fit and the tests
    FAST_FOLD_ENV,
    _options,
    _plan,
    _plan_columns,
    check_json_command,
    check_settings,
    scan_checks,
)
from .check_run import Checked as Checked
from .check_run import _folded_check as _folded_check
from .check_run import check_stream as check_stream
from .check_run import check_work as check_work
from .check_run import summary_plan as summary_plan
from .exit_codes import ExitCode
from .options import (
    Budget,
    EstimatorName,
    Files,
    FromFormat,
    Index,
    Jobs,
    JsonFlag,
    Name,
    Overhead,
    PreambleOption,
    SizeModeOption,
    SkipInvalid,
    Strict,
    Window,
)
from .render_fit import OUTCOME_STYLE, render_plan
from .rows_out import RowsOutput, scan_rows
from .shared import (
    OutputRefused,
    SizeChoice,
    check_limits,
    err,
    estimator_from,
    fail,
    load_all,
    out,
    output_target,
    pick,
    print_json,
    scan_all,
    size_of,
    write_atomic,
)
from .steps import BatchTokens, CutStep
from .terminal import markup_safe, visible


class Target(str, Enum):
    auto = "auto"
    same = "same"
    anthropic = "anthropic"
    openai = "openai"


class DiffMode(str, Enum):
    summary = "summary"
    full = "full"


class CheckFormat(str, Enum):
    text = "text"
    json = "json"
    github = "github"
    jsonl = "jsonl"
    parquet = "parquet"


class FailOn(str, Enum):
    cleared = "cleared"
    turns_dropped = "turns-dropped"
    rounds_dropped = "rounds-dropped"
    too_long = "too-long"


BatchSize = Annotated[
    int,
    typer.Option(
        "--batch-size",
        min=0,
        help="Clear tool results this many at a time (1 is the cache-hostile behaviour; 0: by --batch-tokens only).",
    ),
]
Protected = Annotated[
    float,
    typer.Option(
        "--protected-fraction", min=0.0, max=1.0, help="Share of the budget the newest tool results keep whole."
    ),
]
MinRatio = Annotated[
    float,
    typer.Option("--min-clear-ratio", min=0.0, help="Clear a result only if it is at least this many times its stub."),
]
AddNotice = Annotated[
    bool,
    typer.Option(
        "--add-notice",
        help="Tell the agent, in the system prompt, that old tool results get cleared and not to stop to save space.",
    ),
]


P = ParamSpec("P")


def _collector_off(command: Callable[P, None]) -> Callable[P, None]:
    """``command`` with the cyclic collector off throughout, as ``scan_one`` has it while a file loads: the plan
    and the diff are made over the loaded transcript, whose objects each pass of the collector walks again
    (fit took 0.529 CPU s with it, 0.505 without, on a 50 MB Claude Code session: benchmarks/README.md); the
    reference counts free them, and the process ends when the command does."""

    @wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        collecting = gc.isenabled()
        gc.disable()
        try:
            command(*args, **kwargs)
        finally:
            if collecting:
                gc.enable()

    return run


@_collector_off
def fit(
    file: Annotated[str, typer.Argument(help="One transcript file, a folder, or - for stdin.", show_default=False)],
    budget: Annotated[int, typer.Option("--budget", "-b", min=1, help="Your token budget per request.")],
    window: Window = None,
    output: Annotated[
        str | None,
        typer.Option("--output", "-o", help="Write the fitted request here (- for stdout). Without it, only the diff."),
    ] = None,
    to: Annotated[
        Target,
        typer.Option(
            "--to",
            help="Output shape: the input's own (same), or an Anthropic or OpenAI request body. "
            "auto: same, except for logs (Claude Code, Codex, ...), which get their API's request body.",
        ),
    ] = Target.auto,
    batch_size: BatchSize = DEFAULTS.batch_size,
    protected_fraction: Protected = DEFAULTS.protected_fraction,
    min_clear_ratio: MinRatio = DEFAULTS.min_clear_ratio,
    add_notice: AddNotice = DEFAULTS.add_notice,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            "-s",
            help="Keep every cleared result in this store (a SQLite file, created if missing, or a postgresql:// "
            "URL); the stubs name their handles, for windowfit fetch and the windowfit_fetch tool.",
            show_default=False,
        ),
    ] = None,
    batch_tokens: BatchTokens = DEFAULTS.batch_tokens,
    cut_step: CutStep = None,
    carried_cut: Annotated[
        int | None,
        typer.Option(
            "--carried-cut",
            min=1,
            help="An earlier request of this conversation was cut at message N (the 'cut' of its fit --json): "
            "the messages before N stay out, and the cut stays there or moves forward, as replay carries it.",
            show_default=False,
        ),
    ] = DEFAULTS.carried_cut,
    json_: JsonFlag = False,
    system: Annotated[
        Path | None,
        typer.Option(
            "--system",
            exists=True,
            dir_okay=False,
            help="A text file with the system prompt, for files that do not record it (replaces a recorded one). "
            "Counted in the budget.",
        ),
    ] = None,
    tools: Annotated[
        Path | None,
        typer.Option(
            "--tools",
            exists=True,
            dir_okay=False,
            help="A JSON array of tool definitions (Anthropic or OpenAI shape; converted to the output's), "
            "for files that do not record them. Counted in the budget.",
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="The model to name in the request body, if the file does not.")
    ] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option("--max-tokens", min=1, help="The reply's token limit for the request body, if the file has none."),
    ] = None,
    diff: Annotated[
        DiffMode, typer.Option("--diff", help="summary, or full: the request message by message.")
    ] = DiffMode.summary,
    index: Index = None,
    name: Name = None,
    all_: Annotated[
        bool,
        typer.Option(
            "--all", help="Fit every transcript of a folder or a multi-transcript file: -o names a directory."
        ),
    ] = False,
    estimator: EstimatorName = "seed",
    overhead: Overhead = 1.0,
    skip_invalid: SkipInvalid = False,
    from_: FromFormat = None,
    size: SizeModeOption = SizeChoice.auto,
    preamble: PreambleOption = None,
) -> None:
    """Fit a transcript to a budget and show what was cleared or dropped, and why.

    Clears old tool results in batches, then keeps whole turns, then whole tool rounds.

    Exit code 1 when even the newest round cannot fit (too-long): nothing is written.

    With --store, each cleared result is kept there and its stub names the handle to fetch it by.

    With --carried-cut N (an earlier request's cut), one step of a replay with --cut-step is reproduced.

    Example: windowfit fit sample_transcripts/ru_subagent_chapters.jsonl --budget 50000 -o fitted.jsonl
    """
    if json_ and output == "-":
        fail(OptionError("--json and -o - both want stdout; write the request to a file instead"))
    check_limits(budget, window)
    options = _options(
        budget, batch_size, protected_fraction, min_clear_ratio, add_notice, batch_tokens, cut_step, carried_cut
    )
    if store is not None:
        options = replace(options, page_tokens=PAGE_TOKENS)
    est = estimator_from(estimator, overhead)
    # The file's JSON text is kept only for what is written out: the request (-o), and the cleared results a
    # store keeps as the file spelled them. The plan and the diff are the same without it (tests/test_fit_keep_text.py).
    keep_text = output is not None or store is not None
    streams = (
        not all_ and index is None and name is None and carried_cut is None and store is None
        and system is None and tools is None and model is None and max_tokens is None
        and to in (Target.auto, Target.same) and (not json_ or output is None) and diff is DiffMode.summary
        and from_ is None and file != "-" and Path(file).is_file()
    )  # fmt: skip
    if streams:
        work = partial(fit_stream, estimator=est, size=size, preamble=preamble, options=options, json_=json_)
        found = scan_all([file], _loaded, fmt=None, skip_invalid=skip_invalid, keep_text=keep_text, stream_work=work)
        value = found.values[0] if len(found.values) == 1 else None
        if value is not None and not isinstance(value, (Transcript, Streamed)):  # a FoldedPlan
            _fit_folded(value, est, json_=json_, window=window, budget=budget)
            return
        if len(found.values) == 1 and isinstance(found.values[0], Streamed):
            if _fit_streamed(found.values[0], est, options, output=output, file=file, window=window, budget=budget):
                return
            transcripts = load_all([file], fmt=from_, skip_invalid=skip_invalid, keep_text=keep_text).transcripts
        else:
            transcripts = [t for t in found.values if isinstance(t, Transcript)]
    else:
        transcripts = load_all([file], fmt=from_, skip_invalid=skip_invalid, keep_text=keep_text).transcripts
    if all_:
        if index is not None or name is not None:
            fail(OptionError("--all fits every transcript: leave out --index and --name"))
        if carried_cut is not None:
            fail(OptionError("--carried-cut is a message index of one conversation: leave out --all"))
        if output is None or output == "-" or json_:
            fail(OptionError("--all writes one file per transcript: pass -o DIR (a directory), without --json"))
        parts = (system, tools, model, max_tokens)
        with _stores(store) as kept:
            _fit_all(transcripts, Path(output), file, est, budget, to, parts, options, (size, preamble), kept)
        return
    chosen = pick(
        transcripts, source=file, index=index, name=name, other="or fit them all, one file each: --all -o DIR"
    )
    transcript = _with_parts(chosen.live(), system, tools, model, max_tokens)
    if preamble is None and (system is not None or tools is not None):
        preamble = est.preamble(transcript)  # the given parts are what the request sends
    predicted = size_of(chosen, est, size, preamble)
    plan = _plan(transcript, est, options, predicted)
    fitted = apply_plan(transcript, plan)
    before = check_request(transcript)
    after = check_request(fitted, to.value if to in (Target.anthropic, Target.openai) else fitted.dialect)
    added = new_violations(before, after)
    if added:  # a bug in windowfit, not bad input: crash loudly
        raise AssertionError("the fitted request breaks the provider's rules: " + "; ".join(map(str, added)))

    stored = 0
    if store is not None and plan.fits:
        # Before the request is written: a stub never names a handle the store does not hold.
        with _stores(store) as kept:
            stored = len(_keep(transcript, plan, kept))

    data: bytes | None = None
    if output is not None and plan.fits:
        from windowfit.fitting.request import target_dialect, write_transcript, writes_body

        try:
            data = write_transcript(fitted, to=to.value)
        except WindowfitError as exc:
            fail(exc)
        if writes_body(fitted, to.value):
            _warn_missing(fitted, target_dialect(fitted, to.value))
    if output is not None and output != "-" and plan.fits:
        assert data is not None
        _write_output(output, file, data)
    _show(plan, transcript, before, after, stored, data, output=output, json_=json_, diff=diff, window=window,
          budget=budget, est=est, store=store)  # fmt: skip


def _write_output(output: str, file: str, data: bytes | Iterable[bytes]) -> None:
    """Write the fitted request to ``-o output`` (not stdout), all at once or not at all."""
    try:
        target = output_target(Path(output), inputs=[file])
    except OutputRefused as exc:
        err.print(f"[bold red]error:[/] {markup_safe(str(exc))}")
        err.print("[dim]hint: pass another path to -o[/]")
        raise typer.Exit(ExitCode.OUTPUT) from None
    try:
        write_atomic(target, data)
    except OSError as exc:
        err.print(f"[bold red]error:[/] cannot write {markup_safe(output)}: {markup_safe(exc.strerror or str(exc))}")
        raise typer.Exit(ExitCode.OUTPUT) from None


def _show(
    plan: Plan,
    transcript: Transcript,
    before: tuple[Violation, ...],
    after: tuple[Violation, ...],
    stored: int,
    data: bytes | Iterable[bytes] | None,
    *,
    output: str | None,
    json_: bool,
    diff: DiffMode,
    window: int | None,
    budget: int,
    est: Estimator,
    store: str | None,
) -> None:
    """What ``fit`` prints (the diff or ``--json``), then the request on stdout for ``-o -``; exit 1 if it
    does not fit."""
    if json_:
        print_json(
            plan_document(
                plan,
                transcript,
                estimator=est.rule.name,
                window=window,
                input_violations=before,
                output_violations=after,
            )
        )
    else:
        console = err if output == "-" else out
        console.print(render_plan(plan, transcript, full=diff is DiffMode.full))
        if not plan.fits and window is not None:
            console.print(
                f"[bold red]The smallest request, {plan.tokens_after:,} tokens, is "
                f"{limits_phrase(plan, crossed(plan, window), budget, window)}.[/]"
            )
        repaired_keys = {(r.defect, r.call_id) for r in plan.repairs}
        kept_as_is = [v for v in before if v.key not in repaired_keys]
        if kept_as_is:
            console.print(
                f"[yellow]The input already breaks the provider's rules in {len(kept_as_is)} place(s) "
                "(kept as they are):[/]"
            )
            for v in kept_as_is[:10]:
                console.print(f"  [yellow]{markup_safe(str(v))}[/]")
        if stored:
            assert store is not None
            console.print(
                f"kept {stored:,} cleared result{'s' if stored != 1 else ''} in {markup_safe(_shown(store))} "
                f"(windowfit fetch HANDLE --store {markup_safe(_shown(store))})",
                soft_wrap=True,
            )
        if output and output != "-" and plan.fits:
            console.print(f"wrote {markup_safe(output)}")
    if output == "-" and data is not None:
        for chunk in [data] if isinstance(data, bytes) else data:
            sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
    if not plan.fits:
        raise typer.Exit(ExitCode.FAILED)


@frozen
class Streamed:
    """A messages file ``fit`` read one message at a time: its columns, the line of each plain message and
    the check of its text (``text_check``), its planned size, and what the file was (``_stamp``) when read."""

    item: Input
    fmt: str
    columns: Columns
    plain_lines: array[int]
    plain_checks: array[int]
    size: Size
    stamp: tuple[int, ...]


def _loaded(transcripts: tuple[Transcript, ...]) -> list[Transcript | Streamed | FoldedPlan]:
    return list(transcripts)


def _stamp(path: str) -> tuple[int, ...]:
    """What tells that a file changed: its device, inode, size and modification time."""
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def fit_stream(
    item: Input,
    chosen: Format,
    skip_invalid: bool,
    *,
    estimator: Estimator,
    size: SizeChoice,
    preamble: int | None,
    options: FitOptions | None = None,
    json_: bool = False,
) -> list[Transcript | Streamed | FoldedPlan] | None:
    """``fit``'s reading of a messages file of JSON Lines without a system prompt into columns (as
    ``check_stream``), with each plain message's line and the check of its text; None where it loads the
    file instead. Raises ``FileChanged`` when the file changed while it was read. A Claude Code session
    (without -o: ``item`` keeps no text) is planned from the fold of its lines (``fitting.ccplan.fold_plan``,
    with ``options``), for the diff or ``--json``; the columns are for the diff only."""
    from windowfit.fitting.formats.claude_code import NAME as CLAUDE_CODE  # loaded with the format registry

    if chosen.name == CLAUDE_CODE:
        return _fold_planned(item, estimator, options, size, preamble, skip_invalid)
    if json_:
        return None
    from windowfit.fitting.columns_fit import plain_lines_of

    stamp = _stamp(item.path)
    try:
        found = stream_messages(item, chosen.name, skip_invalid=skip_invalid, keep_text=True, plain=is_plain)
        if found is None:
            return None
        # 4 B a plain message each; a message without its line (-1) or text overflows: the file is loaded
        lines: array[int] = array("I")
        checks: array[int] = array("I")  # the text of a plain message is read again only where it is kept
        columns = columns_from_stream(plain_lines_of(found, lines, checks), found.header, estimator)
        if columns.header.system or columns.header.format != FORMAT_NAME:
            return None  # a system prompt's lines are written as the file spells them: the loader keeps them
        predicted = predict_size(columns.header, estimator, mode=size.value, preamble=preamble)
    except (WindowfitError, ValueError, RecursionError, OSError, OverflowError):
        return None
    if _stamp(item.path) != stamp:
        raise file_changed(item.path, None, "its size, modification time or inode is not what it was")
    predicted = replace(predicted, tokens=predicted.tokens + columns.total, estimated_tokens=columns.total)
    return [Streamed(item, chosen.name, columns, lines, checks, predicted, stamp)]


def _fold_planned(
    item: Input,
    est: Estimator,
    options: FitOptions | None,
    size: SizeChoice,
    preamble: int | None,
    skip_invalid: bool = False,
) -> list[Transcript | Streamed | FoldedPlan] | None:
    """``fit``'s plan of a Claude Code session from the fold of its lines; None to load it (a shape the fold
    leaves to the loader, an option it does not plan for, the file's text kept for -o, or the fold turned off)."""
    if options is None or os.environ.get(FAST_FOLD_ENV) == "0":
        return None
    from windowfit.fitting.ccplan import fold_plan  # only a Claude Code file needs it

    try:
        found = fold_plan(item, est, options, size_mode=size.value, preamble=preamble, skip_invalid=skip_invalid)
    except (WindowfitError, ValueError, RecursionError, OSError):
        return None  # the loader words it
    return None if found is None else [found]


def _fit_folded(folded: FoldedPlan, est: Estimator, *, json_: bool, window: int | None, budget: int) -> None:
    """``fit`` of a session ``fold_plan`` planned: the diff or ``--json`` of the loaded transcript, from its
    skeleton (which holds every message's role and line, and every call and result: what they read)."""
    skeleton = folded.skeleton
    assert skeleton is not None
    # The fitted request's shape, without its stubs: a stub keeps all check_request reads (fitted_shape).
    shape = fitted_shape(skeleton, folded.plan)
    before = check_request(skeleton)
    after = before if shape is skeleton else check_request(shape, shape.dialect)
    del shape
    added = new_violations(before, after)
    if added:  # a bug in windowfit, not bad input: crash loudly
        raise AssertionError("the fitted request breaks the provider's rules: " + "; ".join(map(str, added)))
    _show(folded.plan, skeleton, before, after, 0, None, output=None, json_=json_, diff=DiffMode.summary,
          window=window, budget=budget, est=est, store=None)  # fmt: skip


def _fit_streamed(
    streamed: Streamed,
    est: Estimator,
    o: FitOptions,
    *,
    output: str | None,
    file: str,
    window: int | None,
    budget: int,
) -> bool:
    """``fit`` of a streamed file: planned on its columns, the request written a message at a time (the
    untouched messages as their lines' text, read again and checked), the diff the loaded file gives. False
    (nothing done) where only the loaded transcript words what to say: the file is then loaded."""
    from windowfit.fitting.columns_fit import fitted_skeleton, lined

    skeleton = streamed.columns.skeleton()
    plan = _plan_columns(streamed.columns, est, o, streamed.size, skeleton)
    fitted = fitted_skeleton(skeleton, plan)
    if output is not None and plan.fits and unsendable(fitted) is not None:
        return False  # the loaded transcript words why (a stand-in has no blocks to name)
    before = check_request(skeleton)
    after = check_request(fitted, fitted.dialect)
    del fitted
    added = new_violations(before, after)
    if added:  # a bug in windowfit, not bad input: crash loudly
        raise AssertionError("the fitted request breaks the provider's rules: " + "; ".join(map(str, added)))
    data: Iterable[bytes] | None = None
    if output is not None and plan.fits:
        data = _chunks(_fitted_lines(streamed, skeleton, plan))
    try:
        if output is not None and output != "-" and data is not None:
            _write_output(output, file, data)
        shown = lined(skeleton, plan, streamed.plain_lines)
        del skeleton
        _show(plan, shown, before, after, 0, data, output=output, json_=False, diff=DiffMode.summary, window=window,
              budget=budget, est=est, store=None)  # fmt: skip
    except FileChanged as exc:
        fail(exc)
    return True


def _fitted_lines(streamed: Streamed, skeleton: Transcript, plan: Plan) -> Iterator[bytes]:
    """The fitted request's lines: the kept plain messages as their text, read again from the file and
    checked against the first reading; raises ``FileChanged`` (before the last line) where the file changed."""
    from windowfit.fitting.columns_fit import fitted_header, fitted_messages

    texts = LineTexts(streamed.item)
    lines, checks = streamed.plain_lines, streamed.plain_checks
    where = Source(streamed.item.path)
    try:
        yield from write_lines(
            fitted_header(skeleton, plan),
            fitted_messages(
                skeleton, plan, lambda k: texts.text(lines[k], checks[k]), partial(message_of_line, source=where)
            ),
        )
        if _stamp(streamed.item.path) != streamed.stamp:
            raise texts.changed(None, "its size, modification time or inode is not what it was")
    finally:
        texts.close()


def _chunks(lines: Iterable[bytes], size: int = 1 << 20) -> Iterator[bytes]:
    """``lines`` joined into pieces of about ``size`` bytes."""
    piece: list[bytes] = []
    n = 0
    for line in lines:
        piece.append(line)
        n += len(line)
        if n >= size:
            yield b"".join(piece)
            piece.clear()
            n = 0
    if piece:
        yield b"".join(piece)


def _fit_all(
    transcripts: list[Transcript],
    directory: Path,
    source: str,
    est: Estimator,
    budget: int,
    to: Target,
    parts: tuple[Path | None, Path | None, str | None, int | None],
    options: FitOptions,
    sizing: tuple[SizeChoice, int | None],
    store: ResultStore | None = None,
) -> None:
    """``fit --all -o DIR``: each transcript fitted and written to ``DIR/<NNN>-<name><ext>`` (its index, then its
    name or file name: stable for the same input); one line each; exit 1 if any is too long (it is not written)."""
    from windowfit.fitting.request import write_transcript, writes_body

    if directory.exists() and not directory.is_dir():
        err.print(f"[bold red]error:[/] cannot write {markup_safe(str(directory))}: --all needs a directory")
        raise typer.Exit(ExitCode.OUTPUT)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        err.print(f"[bold red]error:[/] cannot create {markup_safe(str(directory))}: {markup_safe(exc.strerror or '')}")
        raise typer.Exit(ExitCode.OUTPUT) from None
    too_long = 0
    for i, original in enumerate(transcripts):
        transcript = _with_parts(original.live(), *parts)
        size, preamble = sizing
        if preamble is None and (parts[0] is not None or parts[1] is not None):
            preamble = est.preamble(transcript)  # the given parts are what the request sends
        plan = _plan(transcript, est, options, size_of(original, est, size, preamble))
        if not plan.fits:
            too_long += 1
            out.print(f"[red]too-long[/] {markup_safe(transcript.label)}: {plan.tokens_after:,} tokens (not written)")
            continue
        fitted = apply_plan(transcript, plan)
        added = new_violations(
            check_request(transcript),
            check_request(fitted, to.value if to in (Target.anthropic, Target.openai) else fitted.dialect),
        )
        if added:  # a bug in windowfit, not bad input: crash loudly
            raise AssertionError("the fitted request breaks the provider's rules: " + "; ".join(map(str, added)))
        if store is not None:
            _keep(transcript, plan, store)
        try:
            data = write_transcript(fitted, to=to.value)
        except WindowfitError as exc:
            fail(exc)
        ext = ".json" if writes_body(fitted, to.value) else (Path(transcript.source.path).suffix or ".jsonl")
        target = directory / f"{i:03d}-{_slug(transcript.name or Path(transcript.source.path).stem)}{ext}"
        try:
            write_atomic(output_target(target, inputs=[source, transcript.source.path]), data)
        except OutputRefused as exc:
            err.print(f"[bold red]error:[/] {markup_safe(str(exc))}")
            raise typer.Exit(ExitCode.OUTPUT) from None
        except OSError as exc:
            err.print(f"[bold red]error:[/] cannot write {markup_safe(str(target))}: {markup_safe(exc.strerror or '')}")
            raise typer.Exit(ExitCode.OUTPUT) from None
        out.print(
            f"[{OUTCOME_STYLE[plan.outcome]}]{plan.outcome}[/] {markup_safe(transcript.label)}: "
            f"{plan.tokens_before:,} → {plan.tokens_after:,} tokens, wrote {markup_safe(str(target))}"
        )
    out.print(f"{len(transcripts) - too_long} written, {too_long} too long")
    if too_long:
        raise typer.Exit(ExitCode.FAILED)


@contextmanager
def _stores(target: str | None) -> Iterator[ResultStore | None]:
    """The store ``--store`` names, opened (created if missing), or None without one."""
    if target is None:
        yield None
        return
    try:
        kept = open_store(target)
    except WindowfitError as exc:
        fail(exc)
    with kept:
        yield kept


def _keep(transcript: Transcript, plan: Plan, store: ResultStore | None) -> tuple[Entry, ...]:
    assert store is not None
    try:
        return keep_cleared(transcript, plan, store, source=transcript.label)
    except WindowfitError as exc:
        fail(exc)


def _shown(target: str) -> str:
    """A store as messages name it: a URL without its password."""
    return re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", target)


def _slug(text: str) -> str:
    """A file-name-safe form of a transcript's name."""
    slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in text).strip("-.")
    return slug[:80] or "transcript"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(Location(str(path)), exc.strerror or "cannot read") from None


def _with_parts(
    transcript: Transcript, system: Path | None, tools: Path | None, model: str | None, max_tokens: int | None
) -> Transcript:
    """The transcript with what the user gave for the parts its file does not record."""
    from windowfit.fitting.request import tools_from_json, with_request_parts

    try:
        system_text = _read(system).decode() if system else None
        tool_defs = tools_from_json(_read(tools), str(tools)) if tools else None
    except UnicodeDecodeError as exc:
        fail(InputError(Location(str(system)), f"not UTF-8 text: {exc.reason}"))
    except WindowfitError as exc:
        fail(exc)
    if system and transcript.system:
        err.print("[yellow]note:[/] --system replaces the system prompt recorded in the file")
    if tools and transcript.tools:
        err.print("[yellow]note:[/] --tools replaces the tool definitions recorded in the file")
    return with_request_parts(transcript, system=system_text, tools=tool_defs, model=model, max_tokens=max_tokens)


MISSING_WORDS = {"model": "model", "max_tokens": "max_tokens", "system": "system prompt", "tools": "tool definitions"}
MISSING_OPTIONS = {
    "model": "--model NAME",
    "max_tokens": "--max-tokens N",
    "system": "--system FILE",
    "tools": "--tools FILE",
}


def _warn_missing(fitted: Transcript, dialect: Dialect) -> None:
    """Say on stderr what the written request body lacks because the file does not record it."""
    from windowfit.fitting.request import missing_parts

    missing = missing_parts(fitted, to=dialect)
    if not missing:
        return
    listed = _listing([MISSING_WORDS[m] for m in missing], "or")
    why = (
        "; its messages call tools, and the API rejects tool calls without tool definitions"
        if "tools" in missing
        else ""
    )
    err.print(
        f"[yellow]warning:[/] the {dialect} request body has no {listed}: "
        f"{markup_safe(fitted.label)} does not record {'it' if len(missing) == 1 else 'them'}{why}"
    )
    err.print(f"[dim]hint: pass {_listing([MISSING_OPTIONS[m] for m in missing], 'and')}[/]")


def _listing(items: list[str], conjunction: str) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {conjunction} {items[-1]}"


def check(
    files: Files,
    budget: Budget = None,
    window: Window = None,
    format_: Annotated[
        CheckFormat,
        typer.Option(
            "--format",
            help="text, json, github (workflow annotations), or jsonl / parquet (one flat row per transcript).",
        ),
    ] = CheckFormat.text,
    fail_on: Annotated[
        FailOn,
        typer.Option(
            "--fail-on",
            help="Fail when any transcript's outcome is this or "
            "worse (cleared < turns-dropped < rounds-dropped < "
            "too-long).",
        ),
    ] = FailOn.too_long,
    batch_size: BatchSize = DEFAULTS.batch_size,
    protected_fraction: Protected = DEFAULTS.protected_fraction,
    min_clear_ratio: MinRatio = DEFAULTS.min_clear_ratio,
    batch_tokens: BatchTokens = DEFAULTS.batch_tokens,
    cut_step: CutStep = None,
    estimator: EstimatorName = "seed",
    overhead: Overhead = 1.0,
    skip_invalid: SkipInvalid = False,
    strict: Strict = False,
    from_: FromFormat = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Text: list only the transcripts that fail, then the summary.")
    ] = False,
    size: SizeModeOption = SizeChoice.auto,
    preamble: PreambleOption = None,
    jobs: Jobs = None,
    output: RowsOutput = None,
) -> None:
    """Pre-flight transcripts in CI: one line each with its outcome and tokens.

    Exit code 1 if any would be too long (or, with --fail-on, any milder outcome).

    Example: windowfit check sample_transcripts/ --budget 100000 --format github
    """
    if budget is None:
        fail(OptionError("check needs --budget"))
    if format_ is CheckFormat.json:
        failed = check_json_command(
            files, budget=budget, window=window, fail_on=fail_on.value, batch_size=batch_size,
            protected_fraction=protected_fraction, min_clear_ratio=min_clear_ratio, batch_tokens=batch_tokens,
            cut_step=cut_step, estimator=estimator, overhead=overhead, skip_invalid=skip_invalid, strict=strict,
            from_=from_, size=size, preamble=preamble, jobs=jobs,
        )  # fmt: skip
        if failed:
            raise typer.Exit(ExitCode.FAILED)
        return
    check_limits(budget, window)
    options = _options(budget, batch_size, protected_fraction, min_clear_ratio, False, batch_tokens, cut_step)
    estimator_from(estimator, overhead)  # a usage error before any file is read
    threshold = OUTCOMES.index(fail_on.value)
    if format_ in (CheckFormat.jsonl, CheckFormat.parquet):
        flat = scan_rows(
            files, kind=format_.value, output=output, fmt=from_, skip_invalid=skip_invalid, strict=strict, jobs=jobs,
            estimator=estimator, overhead=overhead, budget=budget, window=window, size=size, preamble=preamble,
            check=check_settings(
                estimator=estimator, overhead=overhead, window=window, threshold=threshold, fit_options=options,
                size=size, preamble=preamble,
            ),
        )  # fmt: skip
        if any(OUTCOMES.index(r.outcome or "fits") >= threshold or r.crossed == "window" for r in flat):
            raise typer.Exit(ExitCode.FAILED)
        return
    loaded = scan_checks(
        files, estimator=estimator, overhead=overhead, window=window, threshold=threshold, fit_options=options,
        size=size, preamble=preamble, from_=from_, skip_invalid=skip_invalid, strict=strict, jobs=jobs,
        progress=format_ is CheckFormat.text,
    )  # fmt: skip
    rows = loaded.values
    any_failed = any(c.failed for c in rows)
    for c in rows:
        path, p, limit, f = c.path, c.plan, c.limit, c.failed
        tokens = f"{p.outcome}: {p.tokens_before:,} → {p.tokens_after:,} tokens"
        summary = (
            f"[{c.name}] " if c.name else ""
        ) + f"{tokens} ({limits_phrase(p, limit, budget, c.window.tokens, c.window.words())}{_sized(p)})"
        if p.cause:
            summary += f" — {p.cause}"
        if format_ is CheckFormat.github:
            for r in p.repairs:  # a defect needs a look even in a passing file
                line = f",line={r.source.line}" if r.source.line else ""
                props = f"file={_gh(path, prop=True)}{line},title={_gh('windowfit ' + r.defect, prop=True)}"
                sys.stdout.write(f"::warning {props}::{_gh(r.why + ' (call ' + r.call_id + '; fit repairs it)')}\n")
            if not f:  # errors are for what fails: a passing file makes none
                continue
            level = "error"
            message = summary
            if p.outcome == "too-long":
                message = too_long_message(p)
                if limit == "window":
                    message += (
                        f" The smallest request, {p.tokens_after:,} tokens, is over the {c.window.tokens:,} window"
                        f"{c.window.words()}."
                    )
            props = f"file={_gh(path, prop=True)},title={_gh('windowfit ' + p.outcome, prop=True)}"
            sys.stdout.write(f"::{level} {props}::{_gh(message)}\n")
        elif not (quiet and not f):
            mark = "[red]FAIL[/]" if f else "[green]ok[/]  "
            out.print(
                f"{mark} {markup_safe(path)}  [{OUTCOME_STYLE[p.outcome]}]{markup_safe(summary)}[/]", soft_wrap=True
            )
            for r in p.repairs:  # what fit repairs first: the input breaks the provider's rules here
                where = f"{r.source.path}:{r.source.line}" if r.source.line else r.source.path
                out.print(
                    f"     [yellow]{markup_safe(where)}: {r.defect}: {markup_safe(r.why)} "
                    f"(call {markup_safe(r.call_id)}; fit repairs it)[/]",
                    soft_wrap=True,
                )
    if format_ is CheckFormat.text:
        n_failed = sum(1 for c in rows if c.failed)
        skipped = f", {len(loaded.skipped)} skipped (not transcripts windowfit reads)" if loaded.skipped else ""
        out.print(
            f"{len(rows)} checked, {n_failed} failed{skipped} (fail on: {fail_on.value} or worse)", soft_wrap=True
        )
    if any_failed:
        raise typer.Exit(ExitCode.FAILED)


def limits_phrase(plan: Plan, limit: Limit | None, budget: int, window: int | None, source: str = "") -> str:
    """The limits a check line names: the one crossed first, then the other; ``source`` after the window says
    where it came from (``WindowChoice.words``: the recorded model's)."""
    if limit == "window":
        return f"over the {window:,} window{source}; budget {budget:,}"
    under = f", under the {window:,} window{source}" if window is not None else ""
    if limit == "budget":
        return f"too long for the {budget:,} budget{under}"
    return f"budget {budget:,}" + (f", window {window:,}{source}" if window is not None else "")


def _sized(plan: Plan) -> str:
    """How the size was made, when it is not the plain estimate of the file."""
    size = plan.size
    if size is not None and size.anchored:
        line = f" at line {size.anchor_line}" if size.anchor_line is not None else ""
        return f"; anchored on usage{line}"
    if size is not None and size.preamble_source in ("inferred", "given"):
        return f"; preamble {size.preamble_tokens:,} {size.preamble_source}"
    return ""


def _gh(text: str, *, prop: bool = False) -> str:
    """Escape a GitHub workflow command's message (or, with ``prop``, a property)."""
    text = visible(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))
    return text.replace(",", "%2C").replace(":", "%3A") if prop else text
