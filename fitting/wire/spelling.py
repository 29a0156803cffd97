"""The file's own spelling of a message that is written from the model (SPEC section 6, invariant 9).

A fit rebuilds a message it changes (a cleared result, a repair); a conversion (``--to anthropic``)
rebuilds every one. Such a message was read from JSON text, which the formats that write back keep
(``Message.verbatim``). From that text, when the message is written, ``respelled`` gives the writer:

- the text of every block the message still holds as read, to be written as it is (its keys, their
  order, number spellings such as ``1E+2``, integers past 64 bits, repeated keys, a string content that
  stays a string);
- the file's spelling of what it does not model in the parts it rebuilds: the message's own extra keys,
  and a cleared result's (``cache_control``, ...), kept as the members' texts where they differ from
  compact JSON (``_json.spelled_extras``).

Reading a file walks nothing: only the messages written from the model pay for the walk, when written.
It follows the readers of ``wire.anthropic`` and ``wire.openai``: a message object's ``content`` array
holds one block per item (OpenAI: after the reasoning, before the calls of ``tool_calls``)."""

from __future__ import annotations

from dataclasses import replace

import orjson

from .._json import container_ends, members, spelled_extras
from ..transcript import Block, Message, Thinking, ToolCall, ToolResult

Found = list[tuple[str | None, int, int, int]]
Texts = dict[int, bytes]
"""The file's text of each block a message still holds as read, by the block's ``id``."""

_A_RESULT = frozenset({"type", "tool_use_id", "content", "is_error"})
_A_MESSAGE = frozenset({"role", "content"})
_O_MESSAGE = frozenset({"role", "content", "tool_calls", "tool_call_id", "name"})


def _value(found: Found, key: str) -> tuple[int, int] | None:
    """Where the value of ``key`` (its last copy, the one that counts) starts and ends."""
    for name, _, start, end in reversed(found):
        if name == key:
            return start, end
    return None


def _items(text: bytes, found: Found, key: str, ends: dict[int, int]) -> Found | None:
    """The items of the array that is the value of ``key``, or None when it is not an array."""
    where = _value(found, key)
    if where is None or text[where[0] : where[0] + 1] != b"[":
        return None
    return members(text, where[0], ends)


def _map(texts: Texts, blocks: tuple[Block, ...], text: bytes, items: Found | None) -> bool:
    """Record the text of each of ``blocks`` (read from ``items``, one each); False if they do not pair."""
    if items is None or len(items) != len(blocks):
        return False
    for block, (_, _, start, end) in zip(blocks, items, strict=True):
        texts[id(block)] = text[start:end]
    return True


def _stubs(
    content: tuple[Block, ...], read: tuple[Block, ...], text: bytes, items: Found, ends: dict[int, int]
) -> tuple[Block, ...]:
    """``content`` with each result that replaced the one read at its place (a cleared result, with the
    extra keys it was read with) holding the file's spelling of those keys."""
    out = list(content)
    for i, (block, old) in enumerate(zip(content, read, strict=False)):
        if (
            isinstance(block, ToolResult)
            and isinstance(old, ToolResult)
            and block is not old
            and block.extra
            and block.extra == old.extra
            and block.call_id == old.call_id
            and i < len(items)
            and text[items[i][2] : items[i][2] + 1] == b"{"
        ):
            found = members(text, items[i][2], ends)
            out[i] = replace(block, extra=spelled_extras(text, found, _A_RESULT, block.extra))
    return tuple(out)


def respelled(message: Message, *, openai_shape: bool) -> tuple[Message, Texts]:
    """``message``, about to be written from the model, with the file's spelling of its extra keys (and
    of a cleared result's), and the texts of the blocks it still holds as read (see the module). Read by
    ``wire.openai`` if ``openai_shape``, else by ``wire.anthropic``. Nothing is respelled for a message
    without its text, or whose text does not walk as its reader read it."""
    verbatim = message.verbatim
    if verbatim is None or not verbatim.stored:
        return message, {}
    text, read = verbatim.json[0], verbatim.content  # read now, where a loader left it in the file
    texts: Texts = {}
    try:
        ends = container_ends(text)
        found = members(text, 0, ends)
        content = message.content
        if openai_shape:
            thinking = 1 if read and isinstance(read[0], Thinking) else 0
            calls = sum(1 for b in read if isinstance(b, ToolCall)) if message.role == "assistant" else 0
            if message.role == "tool" and len(read) == 1 and isinstance(read[0], ToolResult):
                _map(texts, read[0].content, text, _items(text, found, "content", ends))
            elif message.role != "tool":
                _map(texts, read[thinking : len(read) - calls], text, _items(text, found, "content", ends))
                if calls:
                    _map(texts, read[len(read) - calls :], text, _items(text, found, "tool_calls", ends))
            known = _O_MESSAGE | ({"reasoning_content"} if message.role == "assistant" else set())
            if message.role == "tool" and _value(found, "tool_call_id") is None:
                known |= {"tool_call_ids"}
        else:
            items = _items(text, found, "content", ends)
            if _map(texts, read, text, items) and items is not None and content is not read:
                content = _stubs(content, read, text, items, ends)
            known = _A_MESSAGE
        extra = message.extra
        if extra and not (message.role == "system" and '"developer"' in extra):  # a role it came as: compact
            extra = spelled_extras(text, found, frozenset(known), extra)
    except (ValueError, orjson.JSONDecodeError):
        return message, {}
    if content is message.content and extra == message.extra:
        return message, texts
    return Message(message.role, content, message.source, extra, message.verbatim), texts
