"""Private: what a sniffer can tell from an input's first bytes. The shape of
the first JSON value (``scan_head``), and the tests that two formats use to
split one shape between them (``head_dialect``, ``is_capture``), kept here so
that each side of a split asks the same question."""

from __future__ import annotations

import json
import re

from .._frozen import frozen
from ..transcript import Dialect

_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}:,]|"')


@frozen
class HeadShape:
    """What the first bytes of an input show about its first JSON value."""

    opening: str
    """``{``, ``[`` or "" (not a container)."""
    keys: tuple[str, ...]
    """Keys of the first value (an object), as far as the bytes go."""
    item_opening: str
    """For an array: how its first item opens (``{``, ``[``, or "")."""
    item_keys: tuple[str, ...]
    """For an array whose first item is an object: that item's keys seen."""
    complete: bool
    """The first value ends within the bytes."""
    more: bool
    """Another value follows the first one (JSON Lines)."""
    multiline: bool
    """The first value spans several lines (a pretty-printed document)."""
    first_line: bytes
    """The bytes of the first value (up to the end of the bytes seen)."""

    @property
    def lines_of_values(self) -> bool:
        """JSON Lines, or maybe (one long line not seen to its end)."""
        return self.more or (not self.complete and not self.multiline)


def scan_head(head: bytes) -> HeadShape:
    """The shape of the first JSON value in ``head``, read tolerantly (the
    bytes may end anywhere). Skips ``//`` comment lines before it."""
    text = head.lstrip()
    while text.startswith(b"//"):
        text = text.partition(b"\n")[2].lstrip()
    opening = text[:1].decode("ascii", "replace")
    if opening not in ("[", "{"):
        return HeadShape("", (), "", (), False, False, False, text.partition(b"\n")[0])
    keys: list[str] = []
    item_keys: list[str] = []
    item_opening = ""
    depth = 0
    end: int | None = None
    previous = b""
    first_item_done = False
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token == b'"':
            break  # a string cut by the end of the bytes
        if token in (b"{", b"["):
            depth += 1
            if opening == "[" and depth == 2 and not item_opening:
                item_opening = token.decode()
        elif token in (b"}", b"]"):
            depth -= 1
            first_item_done = first_item_done or depth == 1
            if depth == 0:
                end = match.end()
                break
        elif token == b":" and previous.startswith(b'"'):
            try:
                key = json.loads(previous)
            except ValueError:
                key = ""
            if depth == 1 and opening == "{":
                keys.append(key)
            elif depth == 2 and opening == "[" and item_opening == "{" and not first_item_done:
                item_keys.append(key)
        previous = token
    value = text[:end] if end is not None else text
    rest = text[end:].strip() if end is not None else b""
    return HeadShape(
        opening,
        tuple(keys),
        item_opening,
        tuple(item_keys),
        end is not None,
        bool(rest),
        b"\n" in value.rstrip(),
        value,
    )


# --------------------------------------------------------------------------
# Splitting request bodies between anthropic_log and openai_chat

_ANTHROPIC_MARKS = re.compile(
    rb'"type"\s*:\s*"(?:tool_use|tool_result|thinking|redacted_thinking)"|"input_schema"\s*:|"cache_control"\s*:'
)
_OPENAI_MARKS = re.compile(
    rb'"role"\s*:\s*"(?:system|developer|tool)"|"tool_calls"\s*:|"tool_call_id"\s*:|"type"\s*:\s*"function"'
)


def head_dialect(keys: tuple[str, ...], text: bytes) -> Dialect:
    """The dialect of a body with ``messages`` whose keys and first bytes are
    given: Anthropic if it has a top-level ``system`` or Anthropic blocks,
    OpenAI if it has OpenAI shapes; undecided, a request log (``model`` or
    ``max_tokens``) is Anthropic and a bare conversation is OpenAI."""
    if "system" in keys or _ANTHROPIC_MARKS.search(text):
        return "anthropic"
    if _OPENAI_MARKS.search(text):
        return "openai"
    return "anthropic" if "model" in keys or "max_tokens" in keys else "openai"


def is_capture(keys: tuple[str, ...], text: bytes) -> bool:
    """An HTTP capture line: a ``request`` object wrapping the body."""
    return bool(keys) and keys[0] == "request" and b'"body"' in text


def is_openhands_event(keys: tuple[str, ...]) -> bool:
    """An OpenHands event: an ``id``, a ``source`` and an ``action`` or an
    ``observation`` (openai_chat refuses arrays of these; openhands takes them)."""
    return "id" in keys and "source" in keys and ("action" in keys or "observation" in keys)
