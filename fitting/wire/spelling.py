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

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

import orjson

from .._json import _BLANKS, SPELLED, container_ends, encode, members, reads_as, spelled_extras
from ..transcript import Block, Image, Joined, JsonText, Message, Other, Text, Thinking, ToolCall, ToolDef, ToolResult

Found = list[tuple[str | None, int, int, int]]
Texts = dict[int, bytes]
"""The file's text of each block a message still holds as read, by the block's ``id``."""

_A_RESULT = frozenset({"type", "tool_use_id", "content", "is_error"})
_A_MESSAGE = frozenset({"role", "content"})
_O_MESSAGE = frozenset({"role", "content", "tool_calls", "tool_call_id", "name"})
_O_UNNAMED = _O_MESSAGE - {"name"}  # a user's or an assistant's ``name`` is an extra key (``wire.openai``)


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
    if isinstance(verbatim, Joined):  # each joined message's blocks as its own text spells them
        texts: Texts = {}
        content: tuple[Block, ...] = ()
        for part in verbatim.parts:
            spelled, found_texts = respelled(part, openai_shape=openai_shape)
            texts.update(found_texts)
            content += spelled.content
        return Message(message.role, content, message.source, message.extra, verbatim), texts
    if verbatim is None or not verbatim.stored:
        return message, {}
    text, read = verbatim.json[0], verbatim.content  # read now, where a loader left it in the file
    texts = {}
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
            known = (_O_MESSAGE if message.role == "tool" else _O_UNNAMED) | (
                {"reasoning_content"} if message.role == "assistant" else set()
            )
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


# --------------------------------------------------------------------------
# Read time: the blocks of a log line (Claude Code, Anthropic logs), whose text is not kept

_A_KNOWN: dict[type, frozenset[str]] = {
    Text: frozenset({"type", "text"}),
    Thinking: frozenset({"type", "thinking"}),
    ToolCall: frozenset({"type", "id", "name", "input"}),
    ToolResult: _A_RESULT,
}


def _as_read(block: Block, text: bytes) -> bool:
    """Whether writing ``block`` from its parsed values gives the file's spelling of what it does not model:
    its extra keys' compact JSON (or an unmodelled block's, an image's) is in ``text`` as it is. A cheap
    test (a substring search), true for almost every line a harness writes."""
    kind = type(block)
    if kind is Text or kind is ToolCall or kind is Thinking:  # the most frequent first
        extra = block.extra  # type: ignore[union-attr]
        return not extra or extra.encode("utf-8", "surrogatepass")[1:-1] in text
    if isinstance(block, (Other, Image)):
        return not block.raw or block.raw.encode("utf-8", "surrogatepass") in text
    if isinstance(block, ToolResult) and not all(_as_read(b, text) for b in block.content):
        return False
    extra = block.extra
    return not extra or extra.encode("utf-8", "surrogatepass")[1:-1] in text


def _spelled_block(block: Block, text: bytes, start: int, end: int, ends: dict[int, int]) -> Block:
    """``block``, read from ``text[start:end]``, holding the file's spelling of what it does not model."""
    span = text[start:end]
    if isinstance(block, (Other, Image)):
        if not block.raw or span == block.raw.encode("utf-8", "surrogatepass"):
            return block
        if not reads_as(span, block.raw):
            return block
        spelled = SPELLED + span.decode("utf-8", "surrogatepass")
        if isinstance(block, Other):  # counted as compact JSON, as before
            return replace(block, raw=spelled, counted=block.counted or block.raw)
        return replace(block, raw=spelled)
    if span[:1] != b"{":
        return block
    found = members(text, start, ends)
    out = block
    if block.extra:
        extra = spelled_extras(text, found, _A_KNOWN[type(block)], block.extra)
        if extra != block.extra:
            out = replace(block, extra=extra)
    if isinstance(block, ToolResult) and isinstance(out, ToolResult) and block.content:
        where = _value(found, "content")
        if where is not None and text[where[0] : where[0] + 1] == b"[":
            content = _spelled_items(block.content, text, members(text, where[0], ends), ends)
            if content is not block.content:
                out = replace(out, content=content)
    return out


def _spelled_items(blocks: tuple[Block, ...], text: bytes, items: Found, ends: dict[int, int]) -> tuple[Block, ...]:
    if len(items) != len(blocks):
        return blocks
    out = tuple(_spelled_block(b, text, start, end, ends) for b, (_, _, start, end) in zip(blocks, items, strict=True))
    return blocks if all(a is b for a, b in zip(out, blocks, strict=True)) else out


def _at(text: bytes, path: tuple[str | int, ...], ends: dict[int, int]) -> int | None:
    """Where the value at ``path`` (keys and array indexes) in the JSON ``text`` starts, or None."""
    start = 0
    for step in path:
        found = members(text, start, ends)
        if isinstance(step, int):
            if not 0 <= step < len(found):
                return None
            start = found[step][2]
        else:
            where = _value(found, step)
            if where is None:
                return None
            start = where[0]
    return start


def _array_at(raw: bytes, path: tuple[str | int, ...], count: int) -> tuple[dict[int, int], Found] | None:
    """The container ends of ``raw`` and the items of the array at ``path`` in it, when that array holds
    ``count`` items (one per block or message read from it); None otherwise. Raises what ``members`` raises
    on text that is not JSON."""
    ends = container_ends(raw)
    start = _at(raw, path, ends)
    items = None if start is None else members(raw, start, ends)
    return None if items is None or len(items) != count else (ends, items)


def _encoded(text: bytes | str) -> bytes:
    return text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text


def spelled_blocks(
    blocks: tuple[Block, ...], text: bytes | str | None, path: tuple[str | int, ...] = ("message", "content")
) -> tuple[Block, ...]:
    """``blocks``, read (Anthropic's shape) from the array at ``path`` in the JSON ``text`` (one block per
    item), with the file's spelling of what windowfit does not model in them: extra keys (``cache_control``,
    ``citations``, ...) and unmodelled blocks and images, where the file spelled them otherwise than compact
    JSON (``1E+2``, integers past 64 bits, repeated keys, ``NaN``, spacing). Only such blocks keep text, so a
    log's reader keeps no line's text (SPEC section 6, invariant 9). The very tuple when nothing changes."""
    if text is None or not blocks:
        return blocks
    raw = text if type(text) is bytes else _encoded(text)
    for block in blocks:
        if not _as_read(block, raw):
            break
    else:
        return blocks
    try:
        ends = container_ends(raw)
        start = _at(raw, path, ends)
        return blocks if start is None else _spelled_items(blocks, raw, members(raw, start, ends), ends)
    except (ValueError, orjson.JSONDecodeError):
        return blocks


def spelled_messages(
    messages: tuple[Message, ...], text: bytes | str | None, path: tuple[str | int, ...]
) -> tuple[Message, ...]:
    """``spelled_blocks`` for the Anthropic messages read one to one from the array at ``path`` in ``text``
    (a logged request body): their blocks, and their own extra keys, as the file spelled them."""
    if text is None or not messages:
        return messages
    raw = _encoded(text)
    if all(
        all(_as_read(b, raw) for b in m.content) and (not m.extra or m.extra.encode()[1:-1] in raw) for m in messages
    ):
        return messages
    try:
        found_items = _array_at(raw, path, len(messages))
        if found_items is None:
            return messages
        ends, items = found_items
        out = []
        for m, (_, _, begin, _) in zip(messages, items, strict=True):
            if raw[begin : begin + 1] != b"{":
                out.append(m)
                continue
            found = members(raw, begin, ends)
            where = _items(raw, found, "content", ends)
            content = m.content if where is None else _spelled_items(m.content, raw, where, ends)
            extra = spelled_extras(raw, found, _A_MESSAGE, m.extra) if m.extra else m.extra
            out.append(m if content is m.content and extra == m.extra else replace(m, content=content, extra=extra))
        return tuple(out)
    except (ValueError, orjson.JSONDecodeError):
        return messages


# --------------------------------------------------------------------------
# A request body's own keys (``model``, ``max_tokens``, ...), outside its messages, system prompt and tools

REQUEST_PARTS = frozenset({"system", "tools", "messages"})
"""The members of a body read into the model; the others are its request-level keys (``Transcript.extra``)."""


def spelled_request_keys(extra: JsonText, found: Iterable[tuple[str | None, bytes]]) -> JsonText:
    """``extra`` (a body's request-level keys as compact JSON) as the file spelled them, from the body's
    members ``found`` (each one's key and value text, in the file's order): ``extra`` itself where compact
    JSON is how the file has them, else their members' texts in an object marked ``SPELLED``."""
    if not extra:
        return extra
    kept = b",".join(encode(key) + b":" + value for key, value in found if key not in REQUEST_PARTS)
    whole = b"{" + kept + b"}"
    if whole == extra.encode("utf-8", "surrogatepass") or not reads_as(whole, extra):
        return extra
    return SPELLED + whole.decode("utf-8", "surrogatepass")


def body_bytes(body: dict[str, Any], extra: JsonText) -> bytes:
    """``body`` (a request body built from a transcript whose request-level keys are ``extra``) as indented
    JSON bytes, those keys written first as the file spelled them when ``extra`` holds that spelling and the
    body carries them all (a body of the file's own dialect)."""
    if extra[:1] != SPELLED:
        return encode(body, indent=True) + b"\n"
    text = extra[1:].encode("utf-8", "surrogatepass")
    try:
        found = members(text, 0, container_ends(text))
    except ValueError:
        return encode(body, indent=True) + b"\n"
    keys = {key for key, _, _, _ in found}
    if not keys <= body.keys():
        return encode(body, indent=True) + b"\n"
    rest = encode({k: v for k, v in body.items() if k not in keys}, indent=True)
    head = b",\n  ".join(text[begin:end] for _, begin, _, end in found)
    if rest == b"{}":
        return b"{\n  " + head + b"\n}\n"
    return b"{\n  " + head + b"," + rest[1:] + b"\n"


def value_text(text: bytes | str | None, path: tuple[str | int, ...]) -> bytes | None:
    """The JSON text of the value at ``path`` (keys and array indexes, the last a key; a repeated key's last
    copy, the one that counts) in the JSON ``text``, or None where there is none or the text is not JSON."""
    if text is None or not path or not isinstance(path[-1], str):
        return None
    raw = _encoded(text)
    try:
        ends = container_ends(raw)
        start = _at(raw, path[:-1], ends)
        where = None if start is None or raw[start : start + 1] != b"{" else _value(members(raw, start, ends), path[-1])
    except (ValueError, orjson.JSONDecodeError):
        return None
    return None if where is None else raw[where[0] : where[1]]


def spelled_body_keys(extra: JsonText, text: bytes | str | None, path: tuple[str | int, ...] = ()) -> JsonText:
    """``spelled_request_keys`` for the body at ``path`` in the JSON ``text`` (a logged request); ``extra``
    itself, found without a walk, when the file spells it as compact JSON."""
    if not extra or text is None:
        return extra
    raw = _encoded(text)
    if extra.encode("utf-8", "surrogatepass")[1:-1] in raw:
        return extra
    try:
        ends = container_ends(raw)
        start = _at(raw, path, ends)
        if start is None:
            return extra
        return spelled_request_keys(extra, ((k, raw[a:b]) for k, _, a, b in members(raw, start, ends)))
    except (ValueError, orjson.JSONDecodeError):
        return extra


# --------------------------------------------------------------------------
# Read time: Responses items (Codex rollouts, Responses files), whose text is not kept either


def _raw_found(block: Block, text: bytes) -> bool:
    """Whether ``block`` is not an unmodelled one, or its compact JSON is in ``text`` as it is."""
    return type(block) is not Other or not block.raw or block.raw.encode("utf-8", "surrogatepass") in text


def spelled_parts(
    blocks: tuple[Block, ...], text: bytes | str | None, path: tuple[str | int, ...]
) -> tuple[Block, ...]:
    """``blocks``, read one per item from the array at ``path`` in the JSON ``text`` (a Responses item's
    ``content`` or ``output`` parts), with each unmodelled part (``input_file``, ...) holding the file's
    spelling where it is not compact JSON (``spelled_blocks``). Text and image parts are written in the
    Chat Completions shape, not the file's: they are left as they are. The very tuple when nothing changes."""
    if text is None or not blocks or all(type(b) is not Other for b in blocks):
        return blocks
    raw = _encoded(text)
    if all(_raw_found(b, raw) for b in blocks):
        return blocks
    try:
        found_items = _array_at(raw, path, len(blocks))
        if found_items is None:
            return blocks
        ends, items = found_items
        out = tuple(
            _spelled_block(b, raw, begin, end, ends) if type(b) is Other else b
            for b, (_, _, begin, end) in zip(blocks, items, strict=True)
        )
    except (ValueError, orjson.JSONDecodeError):
        return blocks
    return blocks if all(a is b for a, b in zip(out, blocks, strict=True)) else out


def spelled_item(block: Other, text: bytes | str | None, path: tuple[str | int, ...]) -> Other:
    """``block``, an unmodelled item (``web_search_call``) read from the object at ``path`` in the JSON
    ``text``, holding the file's spelling of it where that is not compact JSON."""
    if text is None or not block.raw:
        return block
    raw = _encoded(text)
    if block.raw.encode("utf-8", "surrogatepass") in raw:
        return block
    try:
        ends = container_ends(raw)
        start = _at(raw, path, ends)
        if start is None:
            return block
        start = _BLANKS.match(raw, start).end()  # type: ignore[union-attr]  # matches the empty string at worst
        end = ends.get(start)
        if end is None:
            return block
        out = _spelled_block(block, raw, start, end, ends)
    except (ValueError, orjson.JSONDecodeError):
        return block
    return out if isinstance(out, Other) else block


def item_texts(text: bytes | None, path: tuple[str | int, ...]) -> list[bytes] | None:
    """The text of each item of the array at ``path`` in the JSON ``text`` (a compaction's replacement
    history), found in one walk, so that each item is looked for in its own text rather than the whole
    line's; None when there is no such array."""
    if text is None:
        return None
    try:
        ends = container_ends(text)
        start = _at(text, path, ends)
        return None if start is None else [text[begin:end] for _, _, begin, end in members(text, start, ends)]
    except (ValueError, orjson.JSONDecodeError):
        return None


# --------------------------------------------------------------------------
# Read time: OpenAI chat messages of a log (openai_chat), whose text is not kept

_O_CALL = frozenset({"id", "type", "function"})


def _extra_found(extra: JsonText, text: bytes) -> bool:
    return not extra or extra.encode("utf-8", "surrogatepass")[1:-1] in text


def _chat_as_read(message: Message, text: bytes) -> bool:
    """Whether ``message``'s extra keys, its parts' and its calls' are in ``text`` as compact JSON."""
    if not _extra_found(message.extra, text):
        return False
    for block in message.content:
        if isinstance(block, ToolResult):
            if not all(_as_read(b, text) for b in block.content):
                return False
        elif not _as_read(block, text):
            return False
    return True


def _spelled_calls(
    calls: tuple[Block, ...], text: bytes, items: Found | None, ends: dict[int, int]
) -> tuple[Block, ...]:
    """OpenAI ``tool_calls`` (read one per item of ``items``) with their extra keys as the file spelled them."""
    if items is None or len(items) != len(calls):
        return calls
    out: list[Block] = []
    for call, (_, _, start, _) in zip(calls, items, strict=True):
        if isinstance(call, ToolCall) and call.extra and text[start : start + 1] == b"{":
            extra = spelled_extras(text, members(text, start, ends), _O_CALL, call.extra)
            if extra != call.extra:
                call = replace(call, extra=extra)
        out.append(call)
    return calls if all(a is b for a, b in zip(out, calls, strict=True)) else tuple(out)


def spelled_chat_message(
    message: Message,
    text: bytes | str | None,
    *,
    find: Callable[[], bytes | None] | None = None,
    ignored: frozenset[str] = frozenset(),
) -> Message:
    """``message``, read by ``wire.openai`` from a message object, with what windowfit does not model in it
    as the file spelled it, where that is not compact JSON: its own extra keys, its content parts' (a text
    part's extra keys, an image or unmodelled part), its ``tool_calls``' extra keys. ``text`` is looked in
    for their compact JSON (a substring search); only where that fails is the message's own text (``text``,
    or what ``find`` gives) walked. ``ignored``: keys the reader dropped (never written). The very message
    when nothing changes (SPEC section 6, invariant 9)."""
    if text is None:
        return message
    raw = _encoded(text)
    if _chat_as_read(message, raw):
        return message
    if find is not None:
        found_text = find()
        if found_text is None:
            return message
        raw = found_text
    try:
        ends = container_ends(raw)
        found = members(raw, 0, ends)
        content = message.content
        if message.role == "tool":
            if len(content) == 1 and isinstance(content[0], ToolResult):
                result = content[0]
                items = _items(raw, found, "content", ends)
                if items is not None and result.content:
                    inner = _spelled_items(result.content, raw, items, ends)
                    if inner is not result.content:
                        content = (replace(result, content=inner),)
        else:
            thinking = 1 if message.role == "assistant" and content and isinstance(content[0], Thinking) else 0
            calls = sum(1 for b in content if isinstance(b, ToolCall)) if message.role == "assistant" else 0
            parts = content[thinking : len(content) - calls]
            items = _items(raw, found, "content", ends)
            spelled = parts if items is None or not parts else _spelled_items(parts, raw, items, ends)
            called = content[len(content) - calls :]
            if calls:
                called = _spelled_calls(called, raw, _items(raw, found, "tool_calls", ends), ends)
            if spelled is not parts or (calls and called is not content[len(content) - calls :]):
                content = (*content[:thinking], *spelled, *(called if calls else ()))
        extra = message.extra
        if extra and '"developer"' not in extra:  # the role it came as is kept compact
            known = (_O_MESSAGE if message.role == "tool" else _O_UNNAMED) | ignored
            if message.role == "assistant":
                known |= {"reasoning_content"}
            if message.role == "tool" and _value(found, "tool_call_id") is None:
                known |= {"tool_call_ids"}
            extra = spelled_extras(raw, found, frozenset(known), extra)
    except (ValueError, orjson.JSONDecodeError):
        return message
    if content is message.content and extra == message.extra:
        return message
    return replace(message, content=content, extra=extra)


class ItemTexts:
    """The texts of the items of the array at ``path`` in a JSON ``text`` (a line holding a conversation),
    found in one walk the first time one is asked for: a line whose every part is found as compact JSON is
    never walked."""

    __slots__ = ("_items", "path", "text")

    def __init__(self, text: bytes, path: tuple[str | int, ...]) -> None:
        self.text, self.path = text, path
        self._items: list[bytes] | None = None

    def get(self, index: int) -> bytes | None:
        if self._items is None:
            self._items = item_texts(self.text, self.path) or []
        return self._items[index] if index < len(self._items) else None


# --------------------------------------------------------------------------
# Read time: a value the reader keeps as compact JSON (a local shell call's ``action``, an output object)


def spelled_value(compact: JsonText, text: bytes | str | None, path: tuple[str | int, ...]) -> JsonText:
    """The text of the value at ``path`` in the JSON ``text``, whose compact JSON is ``compact``, where the
    file spells it otherwise (``1E+2``, spacing, escapes, repeated keys); "" where compact JSON is how the
    file has it (found by a substring search), or the text is not found."""
    if text is None or not compact:
        return ""
    raw = _encoded(text)
    if compact.encode("utf-8", "surrogatepass") in raw:
        return ""
    try:
        ends = container_ends(raw)
        start = _at(raw, path, ends)
        if start is None:
            return ""
        start = _BLANKS.match(raw, start).end()  # type: ignore[union-attr]  # matches the empty string at worst
        end = ends.get(start)
        if end is None:
            return ""
        span = raw[start:end]
        return span.decode("utf-8", "surrogatepass") if reads_as(span, compact) else ""
    except (ValueError, orjson.JSONDecodeError, UnicodeDecodeError):
        return ""


# --------------------------------------------------------------------------
# Read time: a request body's tool definitions


def spelled_tools(
    tools: tuple[ToolDef, ...], text: bytes | str | None, path: tuple[str | int, ...]
) -> tuple[ToolDef, ...]:
    """``tools``, read one per item from the array at ``path`` in the JSON ``text`` (a body's ``tools``),
    each holding the file's text of its definition (``ToolDef.text``) where the file spells it otherwise
    than compact JSON; ``raw`` and ``schema_json`` (what is counted) stay compact. A definition the reader
    reshaped (a Responses tool, flat) is not found as it was read and stays as it is. The very tuple when
    nothing changes."""
    if text is None or not tools:
        return tools
    raw = _encoded(text)
    if all(not t.raw or t.raw.encode("utf-8", "surrogatepass") in raw for t in tools):
        return tools
    try:
        found_items = _array_at(raw, path, len(tools))
        if found_items is None:
            return tools
        _, items = found_items
        out = []
        for tool, (_, _, start, end) in zip(tools, items, strict=True):
            span = raw[start:end]
            if tool.raw and span != tool.raw.encode("utf-8", "surrogatepass") and reads_as(span, tool.raw):
                tool = replace(tool, text=span.decode("utf-8", "surrogatepass"))
            out.append(tool)
    except (ValueError, orjson.JSONDecodeError, UnicodeDecodeError):
        return tools
    return tools if all(a is b for a, b in zip(out, tools, strict=True)) else tuple(out)
