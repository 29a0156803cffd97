"""The ``windowfit`` command: argument parsing, file I/O and output around
the pure ``fitting`` core."""

from __future__ import annotations

from typing import Annotated

import typer

from windowfit import __version__
from windowfit.fitting import build_report
from windowfit.fitting.serialize import report_document

from .audit_cmd import audit_command
from .fit_cmd import check, fit
from .mcp_cmd import mcp_command
from .render import print_reports
from .replay_cmd import replay_command
from .shared import (
    Budget,
    EstimatorName,
    Files,
    FromFormat,
    JsonFlag,
    Overhead,
    PreambleOption,
    SizeChoice,
    SizeModeOption,
    SkipInvalid,
    Strict,
    Window,
    check_limits,
    estimator_from,
    load_all,
    out,
    print_json,
    size_of,
)
from .store_cmd import fetch_command, store_command

app = typer.Typer(
    name="windowfit",
    help="Keep long LLM agent conversations inside the context window.\n\n"
    "Load JSONL transcripts, estimate their tokens per writing script, and fit them to a budget.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_show_locals=False,
)


def _print_version(value: bool) -> None:
    if value:
        out.print(f"windowfit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Keep long LLM agent conversations inside the context window.

    Exit codes: 0 ok, 1 too long / check failed, 2 usage, 3 bad input, 4 cannot write output.
    """


@app.command()
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
    check_limits(budget, window)
    est = estimator_from(estimator, overhead)
    loaded = load_all(files, fmt=from_, skip_invalid=skip_invalid, strict=strict, keep_text=False)
    reports = [
        build_report(t, est, budget=budget, window=window, top=top, size=size_of(t, est, size, preamble))
        for t in loaded.transcripts
    ]
    if json_:
        print_json(report_document(reports, estimator=est.rule.name, skipped=loaded.skipped))
    else:
        print_reports(out, reports, details=details)


app.command()(fit)
app.command()(check)
app.command("replay")(replay_command)
app.command("audit")(audit_command)
app.command("fetch")(fetch_command)
app.command("store")(store_command)
app.command("mcp")(mcp_command)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
