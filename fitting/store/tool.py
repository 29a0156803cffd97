"""The agent fetches by itself: a ready ``windowfit_fetch`` tool definition for
the Anthropic and OpenAI APIs, and the handler a harness calls with the
model's tool input, whose return it sends back as the tool result.

The handler never raises for what the model asked: an unknown handle, a page
out of range or a malformed input comes back as text the model can read and
act on. Only a store that cannot be used at all (``StoreUnavailable``) raises,
since that is the harness's problem, not the model's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import PageOutOfRange, UnknownHandle
from .base import ResultStore

TOOL_NAME = "windowfit_fetch"

TOOL_DESCRIPTION = (
    "Read back a tool result that was cleared from this conversation to keep it within the model's context. "
    "A cleared result's stub names its handle (wf-...) and its page count. Ask for one page at a time "
    "(page 1 first), or pass search to get only the lines of the result that contain a text, with their "
    "page and line numbers."
)

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "handle": {
            "type": "string",
            "description": "The handle the stub names, e.g. wf-0123456789abcdef0123456789abcdef.",
        },
        "page": {
            "type": "integer",
            "minimum": 1,
            "description": "Which page to read, from 1 to the page count the stub names. Default 1.",
        },
        "search": {
            "type": "string",
            "description": "Optional: return only the lines that contain this text (case-insensitive), "
            "with their page and line numbers, instead of a page.",
        },
    },
    "required": ["handle"],
    "additionalProperties": False,
}
"""The tool input's JSON schema (the same for every API)."""

ANTHROPIC_TOOL: dict[str, Any] = {"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "input_schema": INPUT_SCHEMA}
"""For the Anthropic Messages API's ``tools``."""

OPENAI_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "parameters": INPUT_SCHEMA},
}
"""For the OpenAI Chat Completions API's ``tools``."""

RESPONSES_TOOL: dict[str, Any] = {
    "type": "function",
    "name": TOOL_NAME,
    "description": TOOL_DESCRIPTION,
    "parameters": INPUT_SCHEMA,
}
"""For the OpenAI Responses API's ``tools``."""

SEARCH_MAX_CHARS = 8000
"""How much a search returns at most (about one page of matches); the rest are counted, not shown."""
SEARCH_LINE_CHARS = 400
"""A matching line longer than this is shown cut, with an ellipsis."""


def _error(message: str) -> str:
    return f"[windowfit_fetch error] {message}"


def _parsed(tool_input: Mapping[str, Any] | str) -> Mapping[str, Any] | str:
    """The input as a mapping, or the error text for the model."""
    if isinstance(tool_input, str):  # OpenAI sends the arguments as a JSON string
        try:
            tool_input = json.loads(tool_input or "{}")
        except ValueError:
            return _error('the input is not JSON; send {"handle": "wf-...", "page": 1}')
    if not isinstance(tool_input, Mapping):
        return _error('the input must be an object: {"handle": "wf-...", "page": 1}')
    return tool_input


def handle_tool_call(store: ResultStore, tool_input: Mapping[str, Any] | str) -> str:
    """Answer one ``windowfit_fetch`` call: a page of the entry (with a header
    naming it and, if more follow, how to get the next), or with ``search`` its
    matching lines. ``tool_input`` is the model's input: a mapping (Anthropic)
    or a JSON string (OpenAI's ``arguments``)."""
    parsed = _parsed(tool_input)
    if isinstance(parsed, str):
        return parsed
    handle, page, search = parsed.get("handle"), parsed.get("page", 1), parsed.get("search")
    if not isinstance(handle, str) or not handle.strip():
        return _error("handle is missing: pass the wf-... handle the stub names")
    handle = handle.strip()
    if page is None:
        page = 1
    if isinstance(page, bool) or not isinstance(page, (int, float, str)):
        return _error(f"page must be a whole number from 1, not {page!r}")
    try:
        number = int(page)
    except ValueError:
        return _error(f"page must be a whole number from 1, not {page!r}")
    if search is not None and not isinstance(search, str):
        return _error("search must be a text")
    try:
        if search:
            return _search(store, handle, search)
        found = store.page(handle, number)
    except UnknownHandle:
        return _error(f"no result is kept under {handle}; check the handle in the stub (wf- and 32 hex digits)")
    except PageOutOfRange:
        pages = store.entry(handle).pages
        return _error(f"{handle} has {pages} page{'s' if pages != 1 else ''}; ask for a page from 1 to {pages}")
    header = (
        f"[windowfit_fetch] {found.handle}, page {found.page} of {found.pages}: the result of "
        f"{found.tool or 'a tool'} (call {found.call_id}), {found.tokens:,} tokens on this page."
    )
    more = (
        f"\n[windowfit_fetch] page {found.page + 1} of {found.pages} follows: call windowfit_fetch with page "
        f"{found.page + 1}."
        if found.page < found.pages
        else ""
    )
    return f"{header}\n{found.text}{more}"


def _lines(store: ResultStore, handle: str) -> Iterator[tuple[int, int, str]]:
    """Every line of the entry as (page where it starts, 1-based line number, text without its line break)."""
    first = store.page(handle, 1)
    line_no, line_page, pending = 1, 0, ""
    for number in range(1, first.pages + 1):
        parts = (first.text if number == 1 else store.page(handle, number).text).split("\n")
        for i, part in enumerate(parts):
            ends = i < len(parts) - 1
            if not line_page and (part or ends):
                line_page = number
            pending += part  # a line cut across pages continues on the next one
            if ends:
                yield line_page, line_no, pending
                line_no, line_page, pending = line_no + 1, 0, ""
    if pending:
        yield line_page, line_no, pending


def _search(store: ResultStore, handle: str, search: str) -> str:
    needle = search.casefold()
    entry = store.entry(handle)
    shown: list[str] = []
    used = 0
    matches = 0
    for page, line_no, line in _lines(store, handle):
        if needle not in line.casefold():
            continue
        matches += 1
        cut = line if len(line) <= SEARCH_LINE_CHARS else line[: SEARCH_LINE_CHARS - 1] + "…"
        row = f"page {page}, line {line_no}: {cut}"
        if used + len(row) <= SEARCH_MAX_CHARS:
            shown.append(row)
            used += len(row) + 1
    header = (
        f"[windowfit_fetch] {handle}: {matches} line{'s' if matches != 1 else ''} of the result of "
        f"{entry.tool or 'a tool'} (call {entry.call_id}, {entry.pages} page{'s' if entry.pages != 1 else ''}) "
        f"contain{'s' if matches == 1 else ''} {search!r}."
    )
    rest = matches - len(shown)
    more = f"\n[windowfit_fetch] {rest} more not shown: search for something narrower, or read a page." if rest else ""
    return "\n".join([header, *shown]) + more
