"""``windowfit audit``: the estimator against real tokenizers and the provider's
own counts, with a verdict, and (``--suggest``) constants fitted to the data."""

from __future__ import annotations

from functools import partial
from typing import Annotated

import typer

from windowfit.fitting import Transcript, WindowfitError
from windowfit.fitting.audit import TranscriptAudit, audit_messages, audit_session, audit_transcript
from windowfit.fitting.errors import OptionError
from windowfit.fitting.estimate import SEED, ScriptRule
from windowfit.fitting.formats import Format, Input, claude_code
from windowfit.fitting.formats.messages import stream_messages
from windowfit.fitting.serialize import audit_document
from windowfit.fitting.suggest import Sample, Suggestion
from windowfit.fitting.suggest import suggest as fit_suggestion
from windowfit.fitting.tokenizers import DEFAULT_TOKENIZER, KNOWN_TOKENIZERS, Tokenizer, load_tokenizer

from .options import EstimatorName, Files, FromFormat, Jobs, JsonFlag, SkipInvalid, Strict
from .render import plural
from .render_audit import render_audit, render_suggestion
from .shared import (
    estimator_from,
    fail,
    out,
    print_json,
    scan_all,
)


def load_tokenizers(names: list[str]) -> list[Tokenizer]:
    """Loaded once per process (``load_tokenizer`` keeps them): forked workers inherit the parent's, spawned
    ones load their own."""
    try:
        return [load_tokenizer(name) for name in dict.fromkeys(names)]
    except WindowfitError as exc:
        fail(exc)


def audit_work(
    transcripts: tuple[Transcript, ...], *, estimator: str, tokenizers: tuple[str, ...], top: int
) -> list[TranscriptAudit]:
    """One file's audits, with an estimator (and memo) of its own."""
    est = estimator_from(estimator, 1.0)
    loaded = load_tokenizers(list(tokenizers)) if tokenizers else []
    return [audit_transcript(t, est, loaded, top=top) for t in transcripts]


def audit_stream(
    item: Input,
    chosen: Format,
    skip_invalid: bool,
    *,
    estimator: str,
    tokenizers: tuple[str, ...],
    top: int,
    keep_rows: bool,
) -> list[TranscriptAudit] | None:
    """``audit_work``'s audit of a messages file, its messages counted as they are read and dropped (and their
    rows too unless ``keep_rows``, which ``--suggest`` needs); None for another format, or when the stream stops
    on an error (the file is then loaded, and the loader words it)."""
    try:
        if chosen.name == claude_code.NAME:
            return _audit_sessions(item, skip_invalid, estimator, tokenizers, top, keep_rows)
        found = stream_messages(item, chosen.name, skip_invalid=skip_invalid)
        if found is None:
            return None
        est = estimator_from(estimator, 1.0)
        loaded = load_tokenizers(list(tokenizers)) if tokenizers else []
        return [audit_messages(found.messages, found.header, est, loaded, top=top, keep_rows=keep_rows)]
    except (WindowfitError, ValueError, RecursionError, OSError):
        return None


def _audit_sessions(
    item: Input, skip_invalid: bool, estimator: str, tokenizers: tuple[str, ...], top: int, keep_rows: bool
) -> list[TranscriptAudit]:
    """A Claude Code session's audits (its subagents' too), each transcript's texts read again one message at a
    time instead of held: the chain is chosen over lines whose blocks hold no text (``claude_code.stream``)."""
    est = estimator_from(estimator, 1.0)
    loaded = load_tokenizers(list(tokenizers)) if tokenizers else []
    return [
        audit_session(s.header, s.messages(), est, loaded, top=top, keep_rows=keep_rows)
        for s in claude_code.stream(item, skip_invalid=skip_invalid)
    ]


def audit_command(
    files: Files,
    tokenizer: Annotated[
        list[str] | None,
        typer.Option(
            "--tokenizer",
            "-t",
            help=f"A real tokenizer to compare with (repeat for several): {', '.join(KNOWN_TOKENIZERS)}, "
            "or a path to a tokenizer.json or .tiktoken file. Needs windowfit\\[tokenizers]. "
            f"Default: {DEFAULT_TOKENIZER}.",
            show_default=False,
        ),
    ] = None,
    provider_only: Annotated[
        bool,
        typer.Option(
            "--provider-only", help="Compare only with the provider's own counts in the files (no tokenizer needed)."
        ),
    ] = False,
    estimator: EstimatorName = "seed",
    suggest: Annotated[
        bool,
        typer.Option(
            "--suggest",
            help="Fit per-class characters per token on two thirds of the messages here (for every --tokenizer; "
            "with no --tokenizer, the growth between the provider's counts when the files record them), with a "
            "margin picked from the other third, as an --estimator value.",
        ),
    ] = False,
    top: Annotated[int, typer.Option("--top", min=0, help="How many of the worst blocks and points to list.")] = 5,
    json_: JsonFlag = False,
    skip_invalid: SkipInvalid = False,
    strict: Strict = False,
    from_: FromFormat = None,
    jobs: Jobs = None,
) -> None:
    """Audit the token estimate against real tokenizers and the provider's own counts.

    Per script class and kind of content (prose, code, JSON, logs): estimate / real; the blocks it
    under-estimates most; and whether it is safe: no message under-estimated.

    Example: windowfit audit sample_transcripts/ru_subagent_chapters.jsonl -t cl100k_base -t mistral-tekken --suggest
    """
    if provider_only and tokenizer:
        fail(OptionError("--provider-only compares with no tokenizer; leave out --tokenizer"))
    est = estimator_from(estimator, 1.0)
    names = () if provider_only else tuple(dict.fromkeys(tokenizer or [DEFAULT_TOKENIZER]))
    tokenizers = load_tokenizers(list(names)) if names else []
    work = partial(audit_work, estimator=estimator, tokenizers=names, top=top)
    stream = partial(audit_stream, estimator=estimator, tokenizers=names, top=top, keep_rows=suggest)
    progress = not json_
    loaded = scan_all(
        files,
        work,
        fmt=from_,
        skip_invalid=skip_invalid,
        strict=strict,
        jobs=jobs,
        progress=progress,
        stream_work=stream,
    )
    audits = loaded.values

    suggestion: Suggestion | None = None
    # --suggest fits the seed's three classes; a finer rule (safe) is compared with the seed's.
    base = est.rule if isinstance(est.rule, ScriptRule) else SEED
    # A tokenizer counts exactly the file's text; the provider's counts grow by what the model saw (Claude 3+
    # has no offline tokenizer): with no --tokenizer, they are the ground truth when the files record them.
    usage: list[Sample] = [s for a in audits for s in a.usage_samples]
    from_usage = not tokenizers or (not tokenizer and bool(usage))
    if suggest:
        samples = usage if from_usage else [s for a in audits for s in a.tokenizer_samples()]
        try:
            suggestion = fit_suggestion(samples, base=base)
        except WindowfitError as exc:
            fail(exc)

    if json_:
        print_json(
            audit_document(
                audits,
                estimator=est.rule.name,
                tokenizers=tokenizers,
                suggestion=suggestion,
                base=base,
                skipped=loaded.skipped,
            )
        )
        return
    for i, audit in enumerate(audits):
        if i:
            out.rule()
        out.print(render_audit(audit, top=top))
    if suggestion is not None:
        out.rule()
        if not from_usage:
            sources = f"every message, for {', '.join(t.name for t in tokenizers)}"
        else:
            discarded = sum(a.usage_discarded for a in audits)
            sources = "the growth between consecutive provider counts" + (
                f"; {plural(discarded, 'step')} with more tokens than bytes left out" if discarded else ""
            )
        out.print(render_suggestion(suggestion, base, sources))
