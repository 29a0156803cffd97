"""What ``windowfit check`` runs, without Typer: each file's check as the workers make it (loaded, streamed
into columns, or planned from the fold of a Claude Code session's lines), and ``check --format json`` whole
(``check_json_command``), which both ``check`` and the fast path of ``cli/fast.py`` call."""

from __future__ import annotations

import os
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

from windowfit.fitting import Transcript, WindowfitError
from windowfit.fitting.errors import OptionError
from windowfit.fitting.estimate import Estimator
from windowfit.fitting.fit import OUTCOMES, FitOptions, Limit, Plan, auto_cut_step, crossed, plan_fit
from windowfit.fitting.formats import Format, Input
from windowfit.fitting.serialize import check_document
from windowfit.fitting.size import Size, predict_size
from windowfit.fitting.windows import WindowChoice, last_reply_model, window_for, window_of

from .scan import Scanned
from .shared import SizeChoice, check_limits, estimator_from, fail, print_json, scan_all, size_of

if TYPE_CHECKING:
    from windowfit.fitting.columns import Columns


def check_json_command(
    files: list[str],
    *,
    budget: int,
    window: int | None,
    fail_on: str,
    batch_size: int,
    protected_fraction: float,
    min_clear_ratio: float,
    batch_tokens: int | None,
    cut_step: str | None,
    estimator: str,
    overhead: float,
    skip_invalid: bool,
    strict: bool,
    from_: str | None,
    size: SizeChoice,
    preamble: int | None,
    jobs: int | None,
) -> bool:
    """``check --format json``: every transcript's check, one JSON document on stdout; True if any fails the
    run (``fail_on`` or worse, or over the window: the command then exits 1)."""
    check_limits(budget, window)
    options = _options(budget, batch_size, protected_fraction, min_clear_ratio, False, batch_tokens, cut_step)
    est = estimator_from(estimator, overhead)
    threshold = OUTCOMES.index(fail_on)
    loaded = scan_checks(
        files, estimator=estimator, overhead=overhead, window=window, threshold=threshold, fit_options=options,
        size=size, preamble=preamble, from_=from_, skip_invalid=skip_invalid, strict=strict, jobs=jobs, progress=False,
    )  # fmt: skip
    rows = loaded.values
    print_json(
        check_document(
            [(c.path, c.name, c.plan, c.failed, c.window) for c in rows],
            estimator=est.rule.name,
            budget=budget,
            window=window,
            fail_on=OUTCOMES[threshold],
            skipped=loaded.skipped,
        )
    )
    return any(c.failed for c in rows)


def scan_checks(
    files: list[str],
    *,
    estimator: str,
    overhead: float,
    window: int | None,
    threshold: int,
    fit_options: FitOptions,
    size: SizeChoice,
    preamble: int | None,
    from_: str | None,
    skip_invalid: bool,
    strict: bool,
    jobs: int | None,
    progress: bool,
) -> Scanned[Checked]:
    """Every file's checks (``check_work`` of a loaded file, ``check_stream`` of one it reads without loading),
    in the inputs' order: what ``check`` prints in each of its formats."""
    settings = check_settings(
        estimator=estimator, overhead=overhead, window=window, threshold=threshold, fit_options=fit_options,
        size=size, preamble=preamble,
    )  # fmt: skip
    work = partial(check_work, **settings)
    stream = partial(check_stream, **settings)
    return scan_all(
        files, work, fmt=from_, skip_invalid=skip_invalid, strict=strict, jobs=jobs, progress=progress,
        stream_work=stream,
    )  # fmt: skip


def check_settings(
    *,
    estimator: str,
    overhead: float,
    window: int | None,
    threshold: int,
    fit_options: FitOptions,
    size: SizeChoice,
    preamble: int | None,
) -> dict[str, Any]:
    """What ``check_work`` and ``check_stream`` take besides the file: the loaded and the streamed check, and
    the rows of ``check --format jsonl|parquet`` made of them (``rows_out.check_rows_work``), take the same."""
    return {
        "estimator": estimator,
        "overhead": overhead,
        "budget": fit_options.budget,
        "window": window,
        "threshold": threshold,
        "fit_options": fit_options,
        "size": size,
        "preamble": preamble,
    }


def cut_step_of(value: str | None, budget: int) -> int | None:
    """``--cut-step``'s tokens: a number, ``auto`` (a quarter of the budget), or None (off)."""
    if value is None:
        return None
    if value.strip().lower() == "auto":
        return auto_cut_step(budget)
    try:
        step = int(value.replace(",", "").replace("_", ""))
    except ValueError:
        raise OptionError(f"--cut-step takes a number of tokens or auto, not {value!r}") from None
    if step < 1:
        raise OptionError(f"--cut-step must be at least 1 token, not {step}")
    return step


def _options(
    budget: int,
    batch_size: int,
    protected: float,
    min_ratio: float,
    add_notice: bool,
    batch_tokens: int | None,
    cut_step: str | None,
    carried_cut: int | None = None,
) -> FitOptions:
    try:
        step = cut_step_of(cut_step, budget)
        return FitOptions(
            budget,
            batch_size,
            protected,
            min_ratio,
            add_notice,
            batch_tokens=batch_tokens,
            cut_step=step,
            carried_cut=carried_cut,
        )
    except OptionError as exc:
        fail(exc)


def _plan(transcript: Transcript, est: Estimator, options: FitOptions, size: Size) -> Plan:
    try:
        return plan_fit(
            transcript,
            budget=options.budget,
            estimator=est,
            batch_size=options.batch_size,
            protected_fraction=options.protected_fraction,
            min_clear_ratio=options.min_clear_ratio,
            add_notice=options.add_notice,
            size=size,
            batch_tokens=options.batch_tokens,
            cut_step=options.cut_step,
            page_tokens=options.page_tokens,
            carried_cut=options.carried_cut,
        )
    except WindowfitError as exc:
        fail(exc)


def _plan_columns(
    columns: Columns, est: Estimator, options: FitOptions, size: Size, skeleton: Transcript | None = None
) -> Plan:
    """``_plan`` of the transcript ``columns`` holds (``fitting.columns.plan_columns``): the same plan."""
    from windowfit.fitting.columns import plan_columns

    try:
        return plan_columns(
            columns, budget=options.budget, estimator=est, size=size, batch_size=options.batch_size,
            protected_fraction=options.protected_fraction, min_clear_ratio=options.min_clear_ratio,
            add_notice=options.add_notice, page_tokens=options.page_tokens, batch_tokens=options.batch_tokens,
            cut_step=options.cut_step, skeleton=skeleton,
        )  # fmt: skip
    except WindowfitError as exc:
        fail(exc)


class Checked(NamedTuple):
    """One transcript's check: what the output shows of it (the transcript itself is dropped). A named tuple,
    not a dataclass: no methods to build at start-up."""

    path: str
    name: str
    plan: Plan
    """The plan's outcome, tokens, cause, repairs and size; without the per-message and per-result detail
    (``summary_plan``), which no check output shows."""
    limit: Limit | None
    failed: bool
    format: str
    messages: int
    """How many messages the transcript has (a row of it: ``rows_out.check_rows_work``)."""
    window: WindowChoice
    """The window it is checked against: ``--window``, else its recorded model's (``fitting.windows``)."""


def _checked(t: Transcript, plan: Plan, window: int | None, threshold: int, messages: int) -> Checked:
    """One transcript's check line: its plan's summary, the limit it crosses and whether that fails the run."""
    return _checked_at(t.source.path, t.name, plan, window_of(window, t), threshold, t.format, messages)


def _checked_at(
    path: str, name: str, plan: Plan, window: WindowChoice, threshold: int, format: str, messages: int
) -> Checked:
    """``_checked`` of the transcript named ``name`` in ``path``, against ``window``."""
    limit = crossed(plan, window.tokens)
    failed = OUTCOMES.index(plan.outcome) >= threshold or limit == "window"
    return Checked(path, name, summary_plan(plan), limit, failed, format, messages, window)


def check_work(
    transcripts: tuple[Transcript, ...],
    *,
    estimator: str,
    overhead: float,
    budget: int,
    window: int | None,
    threshold: int,
    fit_options: FitOptions,
    size: SizeChoice,
    preamble: int | None,
) -> list[Checked]:
    """One file's checks, with an estimator (and memo) of its own."""
    est = estimator_from(estimator, overhead)
    checked = []
    for session in transcripts:
        t = session.live()
        predicted = size_of(session, est, size, preamble)
        plan = _plan(t, est, fit_options, predicted)
        checked.append(_checked(t, plan, window, threshold, len(session.messages)))
    return checked


def check_stream(
    item: Input,
    chosen: Format,
    skip_invalid: bool,
    *,
    estimator: str,
    overhead: float,
    budget: int,
    window: int | None,
    threshold: int,
    fit_options: FitOptions,
    size: SizeChoice,
    preamble: int | None,
) -> list[Checked] | None:
    """``check_work``'s check of a messages file, read one message at a time into columns (a role and an
    estimate a plain message, ``fitting.columns``): a file of a million tiny lines is never held as messages.
    None for another format, or when the stream stops on an error (the file is then loaded, and the loader
    words the error). A Claude Code session that fits is checked from the fold of its lines (``_folded_check``)."""
    from windowfit.fitting.formats.claude_code import NAME as CLAUDE_CODE  # loaded with the format registry

    if chosen.name == CLAUDE_CODE:
        return _folded_check(
            item, estimator=estimator, overhead=overhead, window=window, threshold=threshold,
            fit_options=fit_options, size=size, preamble=preamble, skip_invalid=skip_invalid,
        )  # fmt: skip
    # a messages file's only (a Claude Code session is folded): the stream, its columns and their plan
    from windowfit.fitting.columns import columns_from_stream
    from windowfit.fitting.formats.messages import stream_messages

    try:
        found = stream_messages(item, chosen.name, skip_invalid=skip_invalid)
        if found is None:
            return None
        est = estimator_from(estimator, overhead)
        columns = columns_from_stream(found.messages, found.header, est)
        predicted = predict_size(columns.header, est, mode=size.value, preamble=preamble)
    except (WindowfitError, ValueError, RecursionError, OSError):
        return None
    predicted = replace(predicted, tokens=predicted.tokens + columns.total, estimated_tokens=columns.total)
    plan = _plan_columns(columns, est, fit_options, predicted)
    header, messages = columns.header, len(columns)
    del columns
    return [_checked(header, plan, window, threshold, messages)]


FAST_FOLD_ENV = "WINDOWFIT_FASTFOLD"
"""Set to 0 to load every Claude Code file (``report_cmd.FAST_FOLD_ENV``: one switch for both commands)."""


def _folded_check(
    item: Input,
    *,
    estimator: str,
    overhead: float,
    window: int | None,
    threshold: int,
    fit_options: FitOptions,
    size: SizeChoice,
    preamble: int | None,
    skip_invalid: bool = False,
) -> list[Checked] | None:
    """``check_work``'s check of a Claude Code session, from the fold of its lines without loading it
    (``fitting.ccplan.fold_plans``: the same summary plans, fitting or not, one a transcript, sidechains beside
    the main chain too); None to load the file (a shape the fold leaves to the loader, an option it does not
    plan for, or the fold turned off)."""
    if os.environ.get(FAST_FOLD_ENV) == "0":
        return None
    from windowfit.fitting.ccplan import fold_plans  # only a folder of Claude Code sessions needs it
    from windowfit.fitting.formats.claude_code import NAME as CLAUDE_CODE

    est = estimator_from(estimator, overhead)
    try:
        found = fold_plans(
            item, est, fit_options, size_mode=size.value, preamble=preamble, summary=True, skip_invalid=skip_invalid
        )
    except (WindowfitError, ValueError, RecursionError, OSError):
        return None
    if found is None:
        return None
    if window is None and len(found) > 1:
        return None  # sidechains beside the main chain: each records its own model, which the loader reads
    chosen = window_for(window, last_reply_model(item) if window is None else None)
    return [_checked_at(f.path, f.name, f.plan, chosen, threshold, CLAUDE_CODE, f.messages) for f in found]


def summary_plan(plan: Plan) -> Plan:
    """``plan`` without what only ``fit`` shows: every message's estimate and every result's reference. A worker
    of a folder check sends each plan back pickled, and those tuples were most of its bytes (2.35 MB over 200
    sessions of ``benchmarks/bench_folder.py``, 0.26 s to pickle and 0.29 s to unpickle in one loaded process,
    against 3.9 s for the checks; 0.09 MB and 0.01 s without them)."""
    return replace(
        plan, message_tokens=(), results=(), protected=(), too_small=(), candidates=(), batches=(), kept=(), dropped=()
    )
