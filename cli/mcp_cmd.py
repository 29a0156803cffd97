"""``windowfit mcp``: a result store served over the Model Context Protocol (stdio), so an agent in Claude Code,
Codex, Gemini CLI or any MCP client fetches the results that fitting cleared, by the handle its stub names.

Its ``windowfit_fetch`` answers exactly as ``fitting.store.tool.handle_tool_call`` does for a harness. The official
``mcp`` SDK is the ``mcp`` extra and is imported only when the command runs (``windowfit --help`` stays fast); the
SDK's 1.x (``FastMCP``) and 2.x (``MCPServer``) servers share the few calls used here.
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any

import typer

from windowfit.fitting.errors import StoreError
from windowfit.fitting.store import Entry, open_store
from windowfit.fitting.store.tool import TOOL_DESCRIPTION, TOOL_NAME, handle_tool_call

from .exit_codes import ExitCode
from .shared import err, fail
from .terminal import markup_safe

SERVER_NAME = "windowfit"
FETCH_TOOL = TOOL_NAME
LIST_TOOL = "windowfit_list"
LISTED = 50
"""The most entries ``windowfit_list`` returns by default (newest first)."""

INSTRUCTIONS = (
    "When this conversation grew too long, windowfit cleared old tool results and kept each one in a store. "
    "A cleared result's stub names its handle (wf- and 32 hex digits), its size and its page count. "
    f"Call {FETCH_TOOL} with that handle to read it back, one page at a time (page 1 first), or with search "
    f"to get only the lines that contain a text. {LIST_TOOL} lists what the store holds."
)
LIST_DESCRIPTION = (
    "List the tool results windowfit keeps in its store, newest first: handle, tool, call id, estimated tokens, "
    "pages, and the transcript each came from."
)
ERROR_PREFIX = "[windowfit_fetch error]"
"""How ``handle_tool_call`` begins an answer that is the model's mistake (an unknown handle, a page out of range):
over MCP such an answer is a tool error, so the client marks it as one."""


def list_text(entries: tuple[Entry, ...], limit: int = LISTED) -> str:
    """What ``windowfit_list`` answers: one line per entry, newest first."""
    if not entries:
        return "The store is empty: nothing has been cleared into it yet."
    newest = entries[::-1][:limit]  # the store lists oldest first, those put together in the order put
    lines = [f"{len(entries):,} cleared result{'s' if len(entries) != 1 else ''} in the store, newest first:"]
    lines += [
        f"{e.handle}  {e.tool} call {e.call_id}, about {e.tokens:,} tokens in {e.pages} "
        f"page{'s' if e.pages != 1 else ''}, from {e.source or 'an unnamed transcript'}"
        for e in newest
    ]
    if len(entries) > limit:
        lines.append(f"... and {len(entries) - limit:,} older (ask with a larger limit)")
    return "\n".join(lines)


def _sdk() -> tuple[Any, type[Exception]]:
    """The SDK's high-level server class and its tool-error class, from mcp 2.x or 1.x."""
    try:
        server = importlib.import_module("mcp.server.mcpserver")
        exceptions = importlib.import_module("mcp.server.mcpserver.exceptions")
        return server.MCPServer, exceptions.ToolError
    except ImportError:
        pass
    server = importlib.import_module("mcp.server.fastmcp")
    exceptions = importlib.import_module("mcp.server.fastmcp.exceptions")
    return server.FastMCP, exceptions.ToolError


def build_server(target: str) -> Any:
    """An MCP server (not yet running) whose tools read the store at ``target``. Each call opens the store anew,
    so a long-lived server sees every later fit's entries and survives a database restart."""
    server_class, tool_error = _sdk()
    server = server_class(SERVER_NAME, instructions=INSTRUCTIONS, log_level="WARNING")

    def fetch(handle: str, page: int = 1, search: str | None = None) -> str:
        arguments: dict[str, object] = {"handle": handle, "page": page}
        if search is not None:
            arguments["search"] = search
        try:
            with open_store(target, create=False) as store:
                answer = handle_tool_call(store, arguments)
        except StoreError as error:
            raise tool_error(f"{error}{f' (hint: {error.hint})' if error.hint else ''}") from error
        if answer.startswith(ERROR_PREFIX):
            raise tool_error(answer)
        return answer

    def list_entries(limit: int = LISTED) -> str:
        try:
            with open_store(target, create=False) as store:
                return list_text(store.entries(), max(1, limit))
        except StoreError as error:
            raise tool_error(f"{error}{f' (hint: {error.hint})' if error.hint else ''}") from error

    # The same tool, by name and description, that a harness gives the model (fitting.store.tool).
    server.tool(name=FETCH_TOOL, description=TOOL_DESCRIPTION)(fetch)
    server.tool(name=LIST_TOOL, description=LIST_DESCRIPTION)(list_entries)
    return server


def mcp_command(
    store: Annotated[
        str,
        typer.Option(
            "--store",
            "-s",
            help="The result store to serve: a SQLite file (created empty if missing, so the server can be "
            "registered before the first fit) or a postgresql:// URL.",
        ),
    ],
) -> None:
    """Serve a result store to MCP clients over stdio, so the agent fetches cleared results by handle itself.

    Tools: windowfit_fetch (handle, page, optional search) and windowfit_list. Register it with your client,
    e.g. for Claude Code: claude mcp add windowfit -- windowfit mcp --store PATH. Needs windowfit\\[mcp].

    Example: windowfit mcp --store cleared.db
    """
    try:
        _sdk()
    except ImportError as error:
        err.print(f"[bold red]error:[/] windowfit mcp needs the MCP SDK ({markup_safe(str(error))})")
        err.print("[dim]hint: pip install 'windowfit\\[mcp]'[/]")
        raise typer.Exit(ExitCode.USAGE) from None
    try:
        # Opened once up front, so a store that is not ours or cannot be reached fails here, not on the first call.
        with open_store(store):
            pass
    except StoreError as error:
        fail(error)  # not ours: 3; locked, read-only or unreachable: 4
    build_server(store).run("stdio")
