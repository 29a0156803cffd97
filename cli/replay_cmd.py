"""``windowfit replay``: every request of a session fitted by several policies,
with prefix-cache reuse, rejections, a terminal chart and an optional image."""

from __future__ import annotations

import io
from enum import Enum
from functools import partial
from pathlib import Path
from typing import Annotated

import typer

from windowfit.fitting.errors import OptionError, WindowfitError
from windowfit.fitting.estimate import Estimator
from windowfit.fitting.fit import DEFAULTS, FitOptions
from windowfit.fitting.formats import Format, Input
from windowfit.fitting.formats.messages import stream_messages
from windowfit.fitting.pricing import TTLS, Price, PriceTable, Provider, Ttl, default_table, load_table, recorded_model
from windowfit.fitting.replay import (
    KEEP_LAST,
    POLICIES,
    POLICY_NAMES,
    LinedColumns,
    PolicyFactory,
    Recorded,
    Run,
    lined_columns,
    policy_named,
    replay,
    replay_columns,
)
from windowfit.fitting.replay.cache import CacheCheck, CacheModel, check
from windowfit.fitting.replay.requests import ReplayTarget, is_recorded_request, replay_targets, target_of
from windowfit.fitting.replay.times import LineFacts, line_facts
from windowfit.fitting.serialize import replay_document
from windowfit.fitting.transcript import Transcript

from .exit_codes import ExitCode
from .options import (
    EstimatorName,
    FromFormat,
    Index,
    JsonFlag,
    Name,
    Overhead,
    PreambleOption,
    SkipInvalid,
    Strict,
    Window,
)
from .render_replay import render_chart, render_retrievable, render_table
from .shared import (
    LISTED,
    OutputRefused,
    SizeChoice,
    check_limits,
    counted_progress,
    err,
    estimator_from,
    fail,
    out,
    output_target,
    pick,
    print_json,
    scan_all,
    size_of,
    write_atomic,
)
from .steps import cut_step_of
from .terminal import markup_safe

PolicyName = Enum("PolicyName", {name: name for name in POLICY_NAMES}, type=str)  # type: ignore[misc]
"""``--policy``'s choices: the names in ``fitting.replay.POLICIES``, nothing else."""
POLICY_HELP = "; ".join(f"{p.name}: {p.description}" for p in POLICIES) + "."


def factories(names: list[str], options: FitOptions, *, keep: int) -> list[PolicyFactory]:
    return [policy_named(name).factory(options, keep=keep) for name in names]


def choose(transcripts: list[Transcript], *, source: str, index: int | None, name: str | None) -> ReplayTarget:
    """What to replay. Sessions as ``pick`` chooses them; in a request log, the recorded requests grouped into
    conversations: ``--index``/``--name`` name a request (as ``report`` lists them) and replay its conversation up
    to it; otherwise the conversation with the most requests, said on stderr, and when none has more than all the
    others a usage error listing them, largest first."""
    other = "replay replays one session at a time"
    if not any(is_recorded_request(t) for t in transcripts):
        chosen = pick(transcripts, source=source, index=index, name=name, other=other)
        return ReplayTarget(chosen, (next(i for i, t in enumerate(transcripts) if t is chosen),))
    if index is not None or name is not None:
        chosen = pick(transcripts, source=source, index=index, name=name, other=other)
        target = target_of(transcripts, next(i for i, t in enumerate(transcripts) if t is chosen))
        if len(target.requests) > 1:
            err.print(
                f"[dim]note: {markup_safe(chosen.name or chosen.label)} is the newest of the "
                f"{len(target.requests)} recorded requests of its conversation replayed here[/]"
            )
        return target
    targets = replay_targets(transcripts)
    if len(targets) == 1:
        return targets[0]
    ordered = sorted(targets, key=lambda t: (-len(t.requests), t.members[-1]))
    longest = ordered[0]
    if len(longest.requests) > 1 and len(ordered[1].requests) < len(longest.requests):
        err.print(
            f"[dim]note: {markup_safe(source)}: replaying its longest conversation, "
            f"{markup_safe(longest.transcript.name)}; the {len(targets) - 1} other(s) (side calls, a compaction, "
            "other sessions) are replayed with --index N (the conversation of request N, up to it)[/]"
        )
        return longest
    for target in ordered[:LISTED]:
        what = f"{_requests(len(target.requests))}, " if target.recorded else ""
        err.print(
            f"  {target.members[-1]:>3}  {markup_safe(target.transcript.name or target.transcript.label)}  "
            f"({what}{len(target.transcript.messages):,} messages)"
        )
    if len(ordered) > LISTED:
        err.print(f"  ... and {len(ordered) - LISTED:,} more")
    error = OptionError(
        f"{source} holds {len(targets)} conversations, none longer than the others: pick one with --index N or "
        "--name NAME"
    )
    error.hint = "each is listed by its newest request; --index N replays the conversation of request N, up to it"
    fail(error)


def check_line(c: CacheCheck) -> str:
    """Predicted cache reads and writes (send-everything under the cache model) against the recorded ones,
    with the recorded misses (a request that read less than the one before had cached) told apart."""
    error = f" ({c.read_error:+.1%})" if c.read_error is not None else ""
    line = (
        f"[dim]cache check over {c.steps:,} recorded replies (send-everything): reads predicted "
        f"{c.predicted_read:,} vs recorded {c.recorded_read:,}{error}; writes predicted {c.predicted_write:,} "
        f"vs recorded {c.recorded_write:,}"
    )
    if c.misses and c.recorded_write:  # misses rewrite only where writes are recorded (Anthropic)
        tail = f" ({c.tail_write_error:+.1%})" if c.tail_write_error is not None else ""
        which = "all" if c.turn_misses == c.misses else f"{c.turn_misses:,} of them"
        turns = f"{which} at the first request of a user turn after tool calls ({c.turn_starts:,} such turn starts)" + (
            f", writing {c.turn_miss_recorded_write:,}" if c.turn_misses != c.misses else ""
        )
        line += (
            f"; {c.misses:,} recorded misses (a request read less than the one before had cached) wrote "
            f"{c.miss_recorded_write:,} (predicted {c.miss_predicted_write:,}); {turns}; the other requests' writes "
            f"predicted "
            f"{c.predicted_write - c.miss_predicted_write:,} vs recorded {c.recorded_write - c.miss_recorded_write:,}"
            f"{tail}"
        )
    return line + "[/]"


def _requests(count: int) -> str:
    return f"{count:,} recorded request" + ("" if count == 1 else "s")


def save_plot(runs: tuple[Run, ...], path: Path, *, budget: int, window: int | None, title: str) -> None:
    """Sent tokens per request for each policy, as an image (needs matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise OptionError(
            "--plot needs matplotlib: pip install matplotlib, or windowfit's plot extra from its checkout: "
            "pip install '.[plot]'"
        ) from None
    fig, ax = plt.subplots(figsize=(10, 5), dpi=120)
    for run in runs:
        xs = [s.index for s in run.steps]
        line = ax.plot(xs, [s.sent_tokens for s in run.steps], label=run.policy, linewidth=1.2)[0]
        breaks = [s for s in run.steps if s.prefix_break]
        if breaks:
            ax.scatter(
                [s.index for s in breaks],
                [s.sent_tokens for s in breaks],
                marker="^",
                s=14,
                color=line.get_color(),
                zorder=3,
            )
        rejected = [s for s in run.steps if s.rejected]
        if rejected:
            ax.scatter(
                [s.index for s in rejected], [s.sent_tokens for s in rejected], marker="x", s=18, color="red", zorder=4
            )
    ax.axhline(budget, color="black", linestyle="--", linewidth=1, label=f"budget {budget:,}")
    if window:
        ax.axhline(window, color="red", linestyle=":", linewidth=1, label=f"window {window:,}")
    ax.set_xlabel("request (one per assistant reply)")
    ax.set_ylabel("tokens sent")
    ax.set_title(title + "\n▲ prefix break (a clearing batch or a cut), × rejected (over the window)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    image_format = path.suffix.lstrip(".").lower()
    try:
        if image_format not in fig.canvas.get_supported_filetypes():
            known = ", ".join(sorted(fig.canvas.get_supported_filetypes()))
            raise OptionError(f"--plot cannot write .{image_format} files; use one of: {known}")
        image = io.BytesIO()
        fig.savefig(image, format=image_format)
        write_atomic(path, image.getvalue())
    finally:
        plt.close(fig)


CacheTtl = Enum("CacheTtl", {t: t for t in TTLS}, type=str)  # type: ignore[misc]
SEND_EVERYTHING = "send-everything"


def price_row(table: PriceTable, model: str | None, recorded: str | None) -> Price | None:
    """The row ``--model`` (or else the model the log records) picks, said on stderr; None, said too,
    when no row matches: replay prices nothing rather than guess."""
    name = model or recorded
    if name is None:
        err.print("[dim]note: the file records no model and no --model was given: dollars are not priced[/]")
        return None
    row = table.row(name)
    origin = "--model" if model else "the model the log records"
    if row is None:
        err.print(
            f"[dim]note: {markup_safe(name)} ({origin}) has no row in {markup_safe(table.path)}: dollars are not "
            "priced (pass --model NAME for a row, or --prices FILE)[/]"
        )
        return None
    err.print(
        f"[dim]note: priced as {markup_safe(row.model)} ({origin}: {markup_safe(name)}; "
        f"{markup_safe(row.source)}, read {row.read_on})[/]"
    )
    return row


def provider_of(row: Price | None, transcript: Transcript) -> Provider:
    """Whose cache to model: the priced row's provider, or else the file's dialect."""
    if row is not None:
        return row.provider
    return "openai" if transcript.dialect == "openai" else "anthropic"


def replay_stream(item: Input, chosen: Format, skip_invalid: bool, *, estimator: Estimator) -> list[Replayable] | None:
    """A messages file (JSON Lines, or a request body or message array on one line: what ``check`` streams)
    read one message at a time into columns with each message's line (``fitting.replay.lined_columns``): a
    file of a million tiny lines is never held as messages. None for another format, a request a log
    recorded (replayed as its conversation), or when the stream stops on an error (the file is then loaded,
    and the loader words the error)."""
    try:
        found = stream_messages(item, chosen.name, skip_invalid=skip_invalid)
        if found is None:
            return None
        lined = lined_columns(found.messages, found.header, estimator)
    except (WindowfitError, ValueError, RecursionError, OSError):
        return None
    if is_recorded_request(lined.columns.header):
        return None
    return [lined]


Replayable = Transcript | LinedColumns
"""What the scan gives ``replay``: the loaded transcripts, or one messages file as columns."""


def _loaded(transcripts: tuple[Transcript, ...]) -> list[Replayable]:
    return list(transcripts)


def replay_command(
    file: Annotated[str, typer.Argument(help="One transcript file, a folder, or - for stdin.", show_default=False)],
    budget: Annotated[int, typer.Option("--budget", "-b", min=1, help="Your token budget per request.")],
    window: Window = None,
    policy: Annotated[
        list[PolicyName] | None,
        typer.Option("--policy", "-p", help=f"Policies to compare (repeat the option); default: all. {POLICY_HELP}"),
    ] = None,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=0, help="Batch size of the windowfit policy (0: by --batch-tokens only).")
    ] = DEFAULTS.batch_size,
    batch_tokens: Annotated[
        int | None,
        typer.Option(
            "--batch-tokens",
            min=1,
            help="The windowfit policies close a clearing batch once its results reach N tokens "
            "(windowfit-cache's default: a third of the budget).",
        ),
    ] = DEFAULTS.batch_tokens,
    cut_step: Annotated[
        str | None,
        typer.Option(
            "--cut-step",
            help="The windowfit policies drop turns and rounds only at fixed steps of N tokens; auto: a quarter "
            "of the budget (windowfit-cache's default).",
        ),
    ] = None,
    keep: Annotated[int, typer.Option("--keep", min=0, help="N for the keep-last policy.")] = KEEP_LAST,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Also draw the chart into this image file (needs matplotlib: windowfit\\[plot])."),
    ] = None,
    chart: Annotated[bool, typer.Option("--chart/--no-chart", help="Draw the terminal chart.")] = True,
    index: Index = None,
    name: Name = None,
    json_: JsonFlag = False,
    estimator: EstimatorName = "seed",
    overhead: Overhead = 1.0,
    skip_invalid: SkipInvalid = False,
    strict: Strict = False,
    from_: FromFormat = None,
    preamble: PreambleOption = None,
    prices: Annotated[
        Path | None,
        typer.Option(
            "--prices",
            help="A price table (the shape of windowfit's fitting/prices.json) whose rows replace those of the same "
            "model in windowfit's own, or add to it.",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", help="The price row to use; default: the model the log records."),
    ] = None,
    cache_ttl: Annotated[
        CacheTtl,
        typer.Option(
            "--cache-ttl",
            help="The prompt cache's lifetime (Anthropic's 5m or 1h) until the log records the lifetime of its "
            "replies' cache writes (Claude Code's usage does).",
        ),
    ] = CacheTtl["5m"],
) -> None:
    """Replay a session request by request under several policies: rejections, prefix-cache reuse, breaks.

    One request per assistant reply, holding everything before it, fitted as each policy's harness would.

    Dollars come from a price table (--prices, --model; the cost of the input, under each provider's prompt
    cache with a --cache-ttl lifetime and the log's timestamps).

    Example: windowfit replay sample_transcripts/ru_subagent_chapters.jsonl --budget 30000 --window 60000
    """
    check_limits(budget, window)
    est = estimator_from(estimator, overhead)
    # One messages file, with nothing to pick in it, is streamed into columns; anything else is loaded.
    streams = from_ is None and index is None and name is None and not Path(file).is_dir()
    stream = partial(replay_stream, estimator=est) if streams else None
    loaded = scan_all([file], _loaded, fmt=from_, skip_invalid=skip_invalid, strict=strict, stream_work=stream)
    lined = loaded.values[0] if len(loaded.values) == 1 else None
    requests: tuple[Recorded, ...] = ()
    if isinstance(lined, LinedColumns):
        chosen = lined.columns.header
        recorded_requests = False
    else:
        transcripts = [t for t in loaded.values if isinstance(t, Transcript)]
        target = choose(transcripts, source=file, index=index, name=name)
        chosen, requests, recorded_requests = target.transcript, target.requests, target.recorded
    transcript = chosen.live()
    names = [p.value for p in policy] if policy else list(POLICY_NAMES)
    try:
        options = FitOptions(
            budget, batch_size=batch_size, batch_tokens=batch_tokens, cut_step=cut_step_of(cut_step, budget)
        )
    except OptionError as exc:
        fail(exc)
    # Each replayed request is one the file holds: its size is the estimate, with the
    # preamble the file leaves out (inferred from usage, or given) counted in every one.
    size = size_of(chosen, est, SizeChoice.estimate, preamble)
    hidden = size.preamble_tokens if size.preamble_source in ("inferred", "given") else None
    try:
        table = default_table() if prices is None else default_table().amended_by(load_table(str(prices)))
    except WindowfitError as exc:
        fail(exc)
    row = price_row(table, model, recorded_model(chosen.extra))
    ttl: Ttl = "1h" if cache_ttl.value == "1h" else "5m"
    cache = CacheModel(provider_of(row, chosen), ttl, row)
    facts = line_facts(chosen.source.path) if chosen.source.path not in ("-", "<stdin>", "<memory>") else LineFacts()
    times = facts.times
    recorded = any(u.cache_read_tokens or u.cache_creation_tokens for u in chosen.usage)
    # Replaying what the harness sent checks the cache model against the cache reads the log records.
    extra = [SEND_EVERYTHING] if recorded and SEND_EVERYTHING not in names else []
    policies = factories(names + extra, options, keep=keep)
    with counted_progress("replaying", enabled=not json_) as tick:
        if isinstance(lined, LinedColumns):
            replayed = replay_columns(
                lined, policies, budget=budget, estimator=est, window=window, preamble=hidden, times=times,
                progress=tick, not_requests=facts.synthetic,
            )  # fmt: skip
        else:
            replayed = replay(
                transcript, policies, budget=budget, estimator=est, window=window, preamble=hidden,
                requests=requests, times=times, progress=tick, not_requests=facts.synthetic,
            )  # fmt: skip
    priced = tuple(cache.priced(r, times, facts.writes_1h) for r in replayed)
    runs = priced[: len(names)]
    checked = check(next(r for r in priced if r.policy == SEND_EVERYTHING)) if recorded else None
    if plot is not None:
        try:
            if not plot.suffix:
                raise OptionError(f"--plot {plot}: name the image with its type, e.g. {plot}.png or {plot}.svg")
            plot = output_target(plot, inputs=[file])
        except OptionError as exc:
            fail(exc)
        except OutputRefused as exc:
            err.print(f"[bold red]error:[/] {markup_safe(str(exc))}")
            raise typer.Exit(ExitCode.OUTPUT) from None
        try:
            save_plot(runs, plot, budget=budget, window=window, title=transcript.label)
        except OptionError as exc:
            fail(exc)
        except OSError as exc:
            err.print(
                f"[bold red]error:[/] cannot write {markup_safe(str(plot))}: {markup_safe(exc.strerror or str(exc))}"
            )
            raise typer.Exit(ExitCode.OUTPUT) from None
    if json_:
        print_json(
            replay_document(
                runs,
                transcript,
                budget=budget,
                window=window,
                estimator=est.rule.name,
                skipped=loaded.skipped,
                pricing=(recorded_model(chosen.extra), model, row, cache),
                cache_check=checked,
            )
        )
        return
    steps = runs[0].steps if runs else ()
    if recorded_requests:
        what = f"{_requests(len(steps))} replayed, in the order sent"
    else:
        what = f"{len(steps):,} requests replayed"
    out.print(f"[bold]{markup_safe(transcript.label)}[/]: {what}")
    measured = [s for s in steps if s.measured_tokens is not None]
    if measured:
        provider = sum(s.measured_tokens or 0 for s in measured)
        out.print(
            f"[dim]measured by the provider for {len(measured):,} of them: {provider:,} tokens unfitted "
            f"(the estimate of the same requests: {sum(s.raw_tokens for s in measured):,})[/]"
        )
    if hidden is not None:
        out.print(f"[dim]{markup_safe(size.preamble_text())}[/]")
    if checked is not None:
        out.print(check_line(checked))
    out.print(render_table(runs, budget=budget, window=window))
    out.print(render_retrievable(runs))
    if chart:
        for run in runs:
            out.print()
            out.print(render_chart(run, budget=budget, window=window))
    if plot is not None:
        out.print(f"wrote {markup_safe(str(plot))}")
