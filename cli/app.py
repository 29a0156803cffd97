"""The ``windowfit`` command: argument parsing, file I/O and output around
the pure ``fitting`` core. Each command's module is imported when that command runs (``cli/lazy.py``), so
``windowfit --help`` starts as fast as Typer does."""

from __future__ import annotations

from typing import Annotated

import typer

from .lazy import LazyCommand, LazyGroup

COMMANDS = (
    LazyCommand(
        "report",
        "windowfit.cli.report_cmd",
        "report",
        "Measure transcripts: tokens by script, role and block kind, and the largest tool results.",
    ),
    LazyCommand(
        "fit",
        "windowfit.cli.fit_cmd",
        "fit",
        "Fit a transcript to a budget and show what was cleared or dropped, and why.",
    ),
    LazyCommand(
        "check",
        "windowfit.cli.fit_cmd",
        "check",
        "Pre-flight transcripts in CI: one line each with its outcome and tokens.",
    ),
    LazyCommand(
        "replay",
        "windowfit.cli.replay_cmd",
        "replay_command",
        "Replay a session request by request under several policies: rejections, prefix-cache reuse, breaks.",
    ),
    LazyCommand(
        "audit",
        "windowfit.cli.audit_cmd",
        "audit_command",
        "Audit the token estimate against real tokenizers and the provider's own counts.",
    ),
    LazyCommand(
        "fetch",
        "windowfit.cli.store_cmd",
        "fetch_command",
        "Print one page of a cleared tool result, by the handle its stub names.",
    ),
    LazyCommand(
        "store",
        "windowfit.cli.store_cmd",
        "store_command",
        "List the cleared results a store keeps, with their totals; drop old ones with --older-than.",
    ),
    LazyCommand(
        "mcp",
        "windowfit.cli.mcp_cmd",
        "mcp_command",
        "Serve a result store to MCP clients over stdio, so the agent fetches cleared results by handle itself.",
    ),
)
"""Every command, in the order ``--help`` lists them, with the summary it shows."""


class WindowfitGroup(LazyGroup):
    lazy = COMMANDS


app = typer.Typer(
    name="windowfit",
    help="Keep long LLM agent conversations inside the context window.\n\n"
    "Load JSONL transcripts, estimate their tokens per writing script, and fit them to a budget.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_show_locals=False,
    cls=WindowfitGroup,
)


def _print_version(value: bool) -> None:
    if value:
        from windowfit import __version__

        typer.echo(f"windowfit {__version__}")
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


def load_commands() -> None:
    """Import every command's module (tests that swap the consoles those modules hold need them all loaded)."""
    for command in COMMANDS:
        command.load()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
