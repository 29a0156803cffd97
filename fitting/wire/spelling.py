"""A message read from JSON text, given the file's own spelling of what windowfit keeps without modelling
it (SPEC section 6, invariant 9): the extra keys of the message and of its blocks, unmodelled blocks
(``Other``), images and tool inputs. Each keeps its compact JSON where the file spells it so, and holds
the file's text (marked ``SPELLED``) only where it differs, so a rebuilt message writes every block it
did not change with the numbers, repeated keys and key order the file had.

The walk follows the readers of ``wire.anthropic`` and ``wire.openai``: a message object's ``content``
array holds one block per item (OpenAI: after the reasoning, before the calls of ``tool_calls``)."""

from __future__ import annotations

from dataclasses import replace

import orjson

from .._json import container_ends, members, spelled, spelled_extras
from ..transcript import Block, Image, Message, Other, Text, Thinking, ToolCall, ToolResult

Found = list[tuple[str | None, int, int, int]]
Ends = dict[int, int]

_A_KNOWN = {
    Text: frozenset({"type", "text"}),
    Thinking: frozenset({"type", "thinking"}),
    ToolCall: frozenset({"type", "id", "name", "input"}),
    ToolResult: frozenset({"type", "tool_use_id", "content", "is_error"}),
}
_A_MESSAGE = frozenset({"role", "content"})
_O_PART = frozenset({"type", "text"})
_O_CALL = frozenset({"id", "type", "function"})
_O_MESSAGE = frozenset({"role", "content", "tool_calls", "tool_call_id", "name"})


def _needs(block: Block, *, inputs: bool) -> bool:
    """Whether ``block`` holds anything the file may spell otherwise than compact JSON."""
    if isinstance(block, (Other, Image)):
        return True
    if isinstance(block, ToolCall):
        return bool(block.extra) or (inputs and not block.input_text and block.given is None)
    if isinstance(block, ToolResult):
        return bool(block.extra) or any(_needs(b, inputs=inputs) for b in block.content)
    return bool(block.extra)


def _value(found: Found, key: str) -> tuple[int, int] | None:
    """Where the value of ``key`` (its last copy, the one that counts) starts and ends."""
    for name, _, start, end in reversed(found):
        if name == key:
            return start, end
    return None


def _whole(block: Other | Image, span: bytes) -> Block:
    """An unmodelled block or an image as the file spelled it; what is counted stays compact."""
    if isinstance(block, Image):
        raw = spelled(span, block.raw) if block.raw else block.raw
        return block if raw == block.raw else replace(block, raw=raw)
    raw = spelled(span, block.raw)
    if raw == block.raw:
        return block
    return replace(block, raw=raw, counted=block.counted or block.raw)


def _block(block: Block, text: bytes, start: int, end: int, dialect: str, ends: Ends) -> Block:
    """``block``, read from the item ``text[start:end]`` of a content array, with the file's spellings."""
    if isinstance(block, (Other, Image)):
        return _whole(block, text[start:end])
    if text[start : start + 1] != b"{":
        return block
    found = members(text, start, ends)
    known = _A_KNOWN[type(block)] if dialect == "anthropic" else _O_PART
    extra = spelled_extras(text, found, known, block.extra)
    if isinstance(block, ToolCall) and dialect == "anthropic":
        input_text = block.input_text
        where = _value(found, "input")
        if not input_text and block.given is None and where is not None:
            span = text[where[0] : where[1]]
            input_text = "" if span == block.input_json.encode() else span.decode("utf-8", "surrogatepass")
        if extra == block.extra and input_text == block.input_text:
            return block
        return replace(block, extra=extra, input_text=input_text)
    if isinstance(block, ToolResult):
        content = block.content
        where = _value(found, "content")
        if where is not None and any(_needs(b, inputs=True) for b in content):
            content = _content(content, text, where[0], where[1], dialect, ends)
        if extra == block.extra and content is block.content:
            return block
        return replace(block, extra=extra, content=content)
    return block if extra == block.extra else replace(block, extra=extra)


def _content(
    content: tuple[Block, ...], text: bytes, start: int, end: int, dialect: str, ends: Ends
) -> tuple[Block, ...]:
    """``content`` read from the value ``text[start:end]``: an array of one item per block (the very
    tuple when nothing is spelled otherwise), or one unmodelled value."""
    if text[start : start + 1] != b"[":
        if len(content) == 1 and isinstance(content[0], Other):
            return (_whole(content[0], text[start:end]),)
        return content
    items = members(text, start, ends)
    if len(items) != len(content):
        return content
    out = tuple(
        _block(b, text, a, z, dialect, ends) if _needs(b, inputs=True) else b
        for b, (_, _, a, z) in zip(content, items, strict=True)
    )
    return content if all(x is y for x, y in zip(out, content, strict=True)) else out


def _openai(message: Message, text: bytes, found: Found, ends: Ends) -> Message:
    content = message.content
    thinking = 1 if content and isinstance(content[0], Thinking) else 0
    calls = len(message.tool_calls) if message.role == "assistant" else 0
    if message.role == "tool" and len(content) == 1 and isinstance(content[0], ToolResult):
        result = content[0]
        where = _value(found, "content")
        inner = _content(result.content, text, *where, "openai", ends) if where else result.content
        content = content if inner is result.content else (replace(result, content=inner),)
    else:
        parts = content[thinking : len(content) - calls]
        where = _value(found, "content")
        if where is not None and any(_needs(b, inputs=False) for b in parts):
            spelt = _content(parts, text, *where, "openai", ends)
            if spelt is not parts:
                content = (*content[:thinking], *spelt, *content[len(content) - calls :])
        where = _value(found, "tool_calls")
        if calls and where is not None and any(c.extra for c in message.tool_calls):
            items = members(text, where[0], ends)
            if len(items) == calls:
                spelt_calls = tuple(
                    replace(c, extra=spelled_extras(text, members(text, a, ends), _O_CALL, c.extra))
                    if c.extra and text[a : a + 1] == b"{"
                    else c
                    for c, (_, _, a, _z) in zip(content[len(content) - calls :], items, strict=True)
                    if isinstance(c, ToolCall)
                )
                content = (*content[: len(content) - calls], *spelt_calls)
    known = _O_MESSAGE | ({"reasoning_content"} if message.role == "assistant" else set())
    if message.role == "tool" and "tool_call_id" not in {k for k, *_ in found}:
        known |= {"tool_call_ids"}
    extra = spelled_extras(text, found, frozenset(known), message.extra)
    return _message(message, content, extra)


def _message(message: Message, content: tuple[Block, ...], extra: str) -> Message:
    if content is message.content and extra == message.extra:
        return message
    return Message(message.role, content, message.source, extra, message.verbatim)


def spell_message(message: Message, text: bytes, *, openai_shape: bool) -> Message:
    """``message`` (read from the message object ``text``, by ``wire.openai`` if ``openai_shape`` else by
    ``wire.anthropic``) with the file's spelling of its extra keys, unmodelled blocks, images and (Anthropic)
    tool inputs; the very message when the file spells them all as compact JSON. A text that does not
    walk as expected leaves the message as it was read."""
    needs = bool(message.extra) or any(_needs(b, inputs=not openai_shape) for b in message.content)
    if not needs:
        return message
    if message.role == "system" and '"developer"' in message.extra:
        return message  # its extra holds the role it came as, which the file does not spell: left compact
    try:
        ends = container_ends(text)
        found = members(text, 0, ends)
        if openai_shape:
            return _openai(message, text, found, ends)
        where = _value(found, "content")
        content = message.content
        if where is not None:
            content = _content(content, text, *where, "anthropic", ends)
        return _message(message, content, spelled_extras(text, found, _A_MESSAGE, message.extra))
    except (ValueError, orjson.JSONDecodeError):
        return message


def respelled(message: Message, *, openai_shape: bool) -> Message:
    """``message`` about to be written from the model, with the file's spelling (``spell_message``) of every
    block it still holds as read, and of its extra keys: found in the message's text as the file held it
    (``Message.verbatim``, kept by the formats that write back), so only the messages a fit rebuilds pay
    for the walk, when they are written. The very message when there is nothing to respell."""
    verbatim = message.verbatim
    if verbatim is None or not verbatim.json:
        return message
    if not message.extra and not any(_needs(b, inputs=False) for b in message.content):
        return message
    original = Message(message.role, verbatim.content, message.source, message.extra)
    spelt = spell_message(original, verbatim.json[0], openai_shape=openai_shape)
    if spelt is original:
        return message
    by_id = {id(o): s for o, s in zip(verbatim.content, spelt.content, strict=True)}
    content = tuple(by_id.get(id(b), b) for b in message.content)
    # A cleared result is a new block: its own extra keys are those it was read with, at the same place.
    content = (
        tuple(
            replace(b, extra=s.extra)
            if isinstance(b, ToolResult)
            and isinstance(o, ToolResult)
            and isinstance(s, ToolResult)
            and b is not o
            and b.call_id == o.call_id
            and b.extra == o.extra
            else b
            for b, o, s in zip(content, verbatim.content, spelt.content, strict=False)
        )
        + content[len(verbatim.content) :]
    )
    return Message(message.role, content, message.source, spelt.extra, message.verbatim)
