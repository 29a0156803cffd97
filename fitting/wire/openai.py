"""The OpenAI Chat Completions wire shapes: messages (system, user, assistant
with ``tool_calls``, ``tool``), content parts, tools and request bodies."""

from __future__ import annotations

import contextlib
from typing import Any

import orjson

from .._json import (
    MAX_DEPTH,
    SPELLED,
    check_depth,
    dumps,
    extras,
    input_text_of,
    list_field,
    loads,
    loads_or_lenient,
    other_block,
    plain,
    str_field,
    with_extra,
)
from ..errors import Location, UnknownShape
from ..images import decoded_size, sniff_dimensions
from ..transcript import (
    Block,
    Image,
    Message,
    Other,
    Source,
    Text,
    Thinking,
    ToolCall,
    ToolDef,
    ToolResult,
    Transcript,
)
from .anthropic import block_to_json, request_keys, tool_from_json
from .spelling import Texts, respelled

_MESSAGE = frozenset({"role", "content", "tool_calls", "tool_call_id", "name"})
_UNNAMED = _MESSAGE - {"name"}
"""The keys modelled on a message other than a ``tool`` one: a user's or an assistant's ``name`` is an extra
key (written back), a tool message's is its result's ``name``."""
_REQUEST = frozenset({"messages", "tools"})
ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


def _part_from_json(obj: Any, where: Location) -> Block:
    if isinstance(obj, str):
        return Text(obj)
    if not isinstance(obj, dict):
        raise UnknownShape(where, "a content part must be an object")
    kind = str_field(obj, "type")
    if kind in ("text", "input_text", "output_text") and isinstance(obj.get("text"), str):
        return Text(obj["text"], extras(obj, frozenset({"type", "text"})))
    if kind == "image_url":
        url = str((obj.get("image_url") or {}).get("url", "")) if isinstance(obj.get("image_url"), dict) else ""
        if url.startswith("data:") and ";base64," in url:
            media, data = url[5:].split(";base64,", 1)
            dims = sniff_dimensions(data)
            return Image(media, decoded_size(data), dims[0] if dims else None, dims[1] if dims else None, dumps(obj))
        return Image("", 0, None, None, dumps(obj))
    return other_block(str(kind), obj)


def _content_from_json(raw: Any, where: Location) -> tuple[Block, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (Text(raw),) if raw else ()
    if isinstance(raw, list):
        return tuple(_part_from_json(p, where) for p in raw)
    raise UnknownShape(where, "message 'content' must be a string, a list of parts, or null")


def arguments_call(call_id: str, name: str, raw: Any, where: Location, extra: str = "") -> ToolCall:
    """A call whose arguments are a JSON string (this API's shape): counted as compact JSON, written back
    as the string it came as. Arguments nested too deep to be written back are a located error."""
    if isinstance(raw, str) and raw.count("[") + raw.count("{") > MAX_DEPTH:
        with contextlib.suppress(orjson.JSONDecodeError, ValueError, RecursionError):
            check_depth(loads_or_lenient(raw), where, raw)
    compact, text, verbatim = input_text_of(raw)
    return ToolCall(call_id, name, compact, extra, verbatim, text)


def message_from_json(obj: dict[str, Any], source: Source) -> Message:
    where = Location(source.path, source.line)
    role = str_field(obj, "role")
    if role not in ROLES:
        raise UnknownShape(where, f"unknown message role {role!r}")
    content = _content_from_json(obj.get("content"), where)
    extra = extras(obj, _MESSAGE if role == "tool" else _UNNAMED)
    if role in ("system", "developer"):
        if role == "developer":
            extra = merge_extra_text(extra, {"role": "developer"})
        return Message("system", content, source, extra)
    if role == "tool":
        call_id = obj.get("tool_call_id")
        ids = obj.get("tool_call_ids")  # SWE-agent's history: a list, holding one id
        if call_id is None and isinstance(ids, list) and len(ids) == 1:
            call_id = ids[0]
            extra = extras(obj, _MESSAGE | {"tool_call_ids"})
        if not isinstance(call_id, str):
            raise UnknownShape(where, "a 'tool' message needs a 'tool_call_id' (or 'tool_call_ids' holding one id)")
        return Message("tool", (ToolResult(call_id, content, False, str(obj.get("name") or "")),), source, extra)
    if role == "assistant":
        calls = []
        for call in list_field(obj, "tool_calls", where):
            if not isinstance(call, dict) or not isinstance(call.get("id"), str):
                raise UnknownShape(where, "each tool call needs an 'id'")
            fn = call["function"] if isinstance(call.get("function"), dict) else {}
            calls.append(
                arguments_call(
                    call["id"],
                    str(fn.get("name", "")),
                    fn.get("arguments"),
                    where,
                    extras(call, frozenset({"id", "type", "function"})),
                )
            )
        reasoning = obj.get("reasoning_content")
        thinking: tuple[Block, ...] = (Thinking(reasoning),) if isinstance(reasoning, str) and reasoning else ()
        return Message(
            "assistant", thinking + content + tuple(calls), source, extras(obj, _UNNAMED | {"reasoning_content"})
        )
    return Message("user", content, source, extra)


def merge_extra_text(extra: str, more: dict[str, Any]) -> str:
    merged = loads(extra) if extra else {}
    merged.update(more)
    return dumps(merged)


def request_from_json(body: dict[str, Any], source: Source, fmt: str) -> Transcript:
    where = Location(source.path, source.line)
    raw = body.get("messages")
    if not isinstance(raw, list) or not all(isinstance(m, dict) for m in raw):
        raise UnknownShape(where, "a request body needs a 'messages' list of objects")
    return transcript_from_messages(
        [message_from_json(m, source) for m in raw],
        tools=tuple(tool_from_json(t, where) for t in list_field(body, "tools", where)),
        source=source,
        fmt=fmt,
        extra=extras(body, _REQUEST),
    )


def transcript_from_messages(
    messages: list[Message], *, tools: tuple[ToolDef, ...] = (), source: Source, fmt: str, extra: str = ""
) -> Transcript:
    """Leading system messages become the system prompt; later ones stay."""
    system: list[Block] = []
    i = 0
    while i < len(messages) and messages[i].role == "system":
        system.extend(messages[i].content)
        i += 1
    return Transcript(tuple(system), tools, tuple(messages[i:]), source, fmt, "openai", (), extra)


# --------------------------------------------------------------------------
# Writing


def _part_to_json(block: Block, same: bool = False, texts: Texts | None = None) -> Any:
    """A content part. In the dialect it was read from (``same``), a part still as read is its file's text
    (``texts``), and a text part keeps its extra keys and an unmodelled part its object; from another
    dialect, those are text."""
    if texts:
        found = texts.get(id(block))
        if found is not None and isinstance(block, (Text, Image, Other)):
            return orjson.Fragment(found)
    if isinstance(block, Text):
        return (
            with_extra({"type": "text", "text": block.text}, block.extra)
            if same
            else {"type": "text", "text": block.text}
        )
    if isinstance(block, Image):
        raw = loads(plain(block.raw)) if block.raw else {}
        if isinstance(raw, dict) and raw.get("type") == "image_url":
            # the file's spelling of it (``spelling.spelled_chat_message``), in its own dialect
            return orjson.Fragment(plain(block.raw)) if same and block.raw[:1] == SPELLED else raw
        source = raw.get("source") if isinstance(raw, dict) else None
        if isinstance(source, dict) and source.get("type") == "base64":
            url = f"data:{source.get('media_type', '')};base64,{source.get('data', '')}"
            return {"type": "image_url", "image_url": {"url": url}}
        return {"type": "text", "text": f"[image {block.media_type}, {block.byte_size} bytes, not kept]"}
    if isinstance(block, Thinking):
        return {"type": "text", "text": block.text}
    if isinstance(block, Other):
        if same and block.raw[:1] == SPELLED:  # the file's spelling of it (``spelling.spelled_parts``)
            return orjson.Fragment(plain(block.raw))
        raw = loads(block.raw) if same else None
        if isinstance(raw, dict):
            return raw
        return {"type": "text", "text": dumps(loads(block.raw)) if block.raw[:1] == SPELLED else block.raw}
    return {"type": "text", "text": dumps(block_to_json(block))}


def _content_to_json(blocks: tuple[Block, ...], same: bool = False, texts: Texts | None = None) -> str | list[Any]:
    # A string only for zero or one text block: joining several would glue their texts together; and not
    # for a text part kept as it came (in a list, with its extra keys).
    if not blocks:
        return ""
    only = blocks[0]
    if len(blocks) == 1 and isinstance(only, Text) and not (same and (only.extra or (texts and id(only) in texts))):
        return only.text
    return [_part_to_json(b, same, texts) for b in blocks]


def messages_to_json(messages: tuple[Message, ...], *, same_dialect: bool, exact: bool = False) -> list[Any]:
    """OpenAI messages. A user message carrying tool results (Anthropic shape)
    becomes one ``tool`` message per result, then a user message for any rest.
    ``exact`` (to be written as bytes): what a message still holds as read is the
    file's own text (fragments, ``wire.spelling``)."""
    same = same_dialect
    out: list[Any] = []
    for m in messages:
        texts: Texts = {}
        if exact and same_dialect:
            own = m.exact_json
            if own and _writes_as(m, own):  # unchanged, and the file's text is what would be written
                out.append(orjson.Fragment(own))
                continue
            m, texts = respelled(m, openai_shape=True)
        extra = m.extra if same_dialect else ""
        if m.role in ("user", "tool"):
            rest: list[Block] = []
            for b in m.content:
                if isinstance(b, ToolResult):
                    obj: dict[str, Any] = {
                        "role": "tool",
                        "tool_call_id": b.call_id,
                        "content": _content_to_json(b.content, same, texts),
                    }
                    if b.name:
                        obj["name"] = b.name
                    out.append(with_extra(obj, extra) if m.role == "tool" else obj)
                else:
                    rest.append(b)
            if rest or (m.role == "user" and not m.tool_results):
                out.append(with_extra({"role": "user", "content": _content_to_json(tuple(rest), same, texts)}, extra))
            continue
        if m.role == "system":
            out.append(with_extra({"role": "system", "content": _content_to_json(m.content, same, texts)}, extra))
            continue
        text = tuple(b for b in m.content if not isinstance(b, (ToolCall, Thinking)))
        obj = {"role": "assistant", "content": _content_to_json(text, same, texts) if text else None}
        calls = [
            orjson.Fragment(texts[id(c)])
            if id(c) in texts
            else with_extra(
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments or c.input_text or c.input_json},
                },
                c.extra if same_dialect else "",
            )
            for c in m.tool_calls
        ]
        if calls:
            obj["tool_calls"] = calls
        out.append(with_extra(obj, extra))
    return out


def _writes_as(message: Message, text: bytes) -> bool:
    """Whether the message object ``text`` (the message's own, as read) holds what writing ``message`` from the
    model gives, in any key order and spelling: then ``text`` is written as it came (SPEC section 6, invariant
    9). Not for a message the reader reshaped (several ``tool`` messages, keys it does not send)."""
    try:
        read = orjson.loads(text)
    except orjson.JSONDecodeError:  # NaN and the like: written from the model, respelled
        return False
    return [read] == messages_to_json((message,), same_dialect=True)


def tool_to_json(tool: ToolDef) -> Any:
    """A tool definition: the file's text of it where it holds one (``spelling.spelled_tools``), else a dict."""
    if tool.dialect == "openai" and tool.text:
        return orjson.Fragment(tool.text)
    if tool.dialect == "openai" and tool.raw:
        raw = loads(tool.raw)
        if isinstance(raw, dict):
            return raw
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": loads(tool.schema_json or "{}")},
    }


def request_to_json(transcript: Transcript, *, exact: bool = False) -> dict[str, Any]:
    """A Chat Completions body. Request-level keys the file recorded (model,
    max_tokens, ...) come first; from another dialect only those that translate.
    ``exact``: see ``messages_to_json``."""
    same = transcript.dialect == "openai"
    body: dict[str, Any] = {}
    if transcript.extra:
        extra = loads(transcript.extra)
        body.update(extra if same else request_keys(extra, limit_key="max_completion_tokens"))
    messages = messages_to_json(transcript.messages, same_dialect=same, exact=exact)
    kept = transcript.system_verbatim.of(transcript.system) if exact and same and transcript.system_verbatim else None
    if kept is not None:  # the leading system messages, as the file spelled them
        messages[:0] = [orjson.Fragment(t) for t in kept]
    elif transcript.system:
        messages.insert(0, {"role": "system", "content": _content_to_json(transcript.system, same)})
    body["messages"] = messages
    if transcript.tools:
        body["tools"] = [tool_to_json(t) for t in transcript.tools]
    return body


def looks_openai(obj: dict[str, Any]) -> bool:
    """A message object in the OpenAI shape."""
    role = str_field(obj, "role")
    if role in ("tool", "developer", "function") or "tool_calls" in obj or "tool_call_id" in obj:
        return True
    content = obj.get("content")
    return isinstance(content, list) and any(
        isinstance(p, dict) and str_field(p, "type") in ("image_url", "input_text", "output_text") for p in content
    )
