"""``windowfit mcp``: a result store served over the Model Context Protocol (stdio), so an agent in Claude Code,
Codex, Gemini CLI or any MCP client fetches the results that fitting cleared, by the handle its stub names.

The official ``mcp`` SDK is the ``mcp`` extra and is imported only when the command runs (``windowfit --help`` stays
fast); the SDK's 1.x (``FastMCP``) and 2.x (``MCPServer``) servers share the few calls used here.
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any

import typer

from windowfit.fitting.errors import StoreError
from windowfit.fitting.store import Entry, Page, ResultStore, open_store

from .exit_codes import ExitCode
from .shared import err, fail
from .terminal import markup_safe

SERVER_NAME = "windowfit"
FETCH_TOOL = "windowfit_fetch"
LIST_TOOL = "windowfit_list"
LISTED = 50
"""The most entries ``windowfit_list`` returns by default (newest first)."""

INSTRUCTIONS = (
    "When this conversation grew too long, windowfit cleared old tool results and kept each one in a store. "
    "A cleared result's stub names its handle (wf- and 32 hex digits), its size and its page count. "
    f"Call {FETCH_TOOL} with that handle to read it back, one page at a time (page 1 first), or with search "
    f"to jump to the first page that mentions something. {LIST_TOOL} lists what the store holds."
)
FETCH_DESCRIPTION = (
    "Read back a tool result that windowfit cleared from the conversation, by the handle its stub names "
    "(wf- and 32 hex digits). Returns one page (about 2,000 tokens) after a header line saying which page of how "
    "many it is; ask for the next page with page. With search, returns the first page, from page on, that contains "
    "that text (case-insensitive)."
)
LIST_DESCRIPTION = (
    "List the tool results windowfit keeps in its store, newest first: handle, tool, call id, estimated tokens, "
    "pages, and the transcript each came from."
)


def page_header(page: Page, *, matched: str | None = None) -> str:
    """The line before a page's text: where it is in its entry and how to get the next one."""
    what = f"{page.handle} page {page.page} of {page.pages} ({page.tool} result, call {page.call_id}, "
    what += f"about {page.tokens:,} tokens)"
    if matched is not None:
        what += f", the first page from there that contains {matched!r}"
    if page.page < page.pages:
        return f"[{what}; next: page={page.page + 1}]"
    return f"[{what}; the last page]"


def fetch_text(store: ResultStore, handle: str, page: int = 1, search: str | None = None) -> str:
    """What ``windowfit_fetch`` answers: the header line, a newline, and the page's text exactly."""
    if not search:
        found = store.page(handle, page)
        return f"{page_header(found)}\n{found.text}"
    needle = search.casefold()
    first = store.page(handle, page)
    for number in range(page, first.pages + 1):
        found = first if number == page else store.page(handle, number)
        if needle in found.text.casefold():
            return f"{page_header(found, matched=search)}\n{found.text}"
    raise StoreError(f"no page of {handle} from page {page} on contains {search!r}", "fetch without search")


def list_text(entries: tuple[Entry, ...], limit: int = LISTED) -> str:
    """What ``windowfit_list`` answers: one line per entry, newest first."""
    if not entries:
        return "The store is empty: nothing has been cleared into it yet."
    newest = sorted(entries, key=lambda e: (-e.created, e.handle))[:limit]
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
        try:
            with open_store(target, create=False) as store:
                return fetch_text(store, handle.strip(), page, search)
        except StoreError as error:
            raise tool_error(f"{error}{f' (hint: {error.hint})' if error.hint else ''}") from error

    def list_entries(limit: int = LISTED) -> str:
        try:
            with open_store(target, create=False) as store:
                return list_text(store.entries(), max(1, limit))
        except StoreError as error:
            raise tool_error(f"{error}{f' (hint: {error.hint})' if error.hint else ''}") from error

    server.tool(name=FETCH_TOOL, description=FETCH_DESCRIPTION)(fetch)
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
