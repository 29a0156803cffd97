"""The Anthropic Messages API wire shapes: messages, content blocks, tools and
request bodies, read into the neutral model and written back."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson

from .._json import SPELLED, dumps, extras, list_field, loads, other_block, plain, str_field, with_extra
from ..errors import Location, UnknownShape
from ..images import decoded_size, sniff_dimensions
from ..transcript import (
    Block,
    Image,
    Message,
    Source,
    Text,
    Thinking,
    ToolCall,
    ToolDef,
    ToolResult,
    Transcript,
)
from .spelling import Texts, respelled

_TEXT = frozenset({"type", "text"})
_THINKING = frozenset({"type", "thinking"})
_TOOL_USE = frozenset({"type", "id", "name", "input"})
_TOOL_RESULT = frozenset({"type", "tool_use_id", "content", "is_error"})
_MESSAGE = frozenset({"role", "content"})
_REQUEST = frozenset({"system", "tools", "messages"})
BLOCK_TYPES = frozenset(
    {
        "text",
        "thinking",
        "redacted_thinking",
        "tool_use",
        "tool_result",
        "image",
        "document",
        "server_tool_use",
        "web_search_tool_result",
    }
)


def image_from_json(obj: dict[str, Any]) -> Image:
    source = obj.get("source")
    if isinstance(source, dict) and source.get("type") == "base64" and isinstance(source.get("data"), str):
        data: str = source["data"]
        dims = sniff_dimensions(data)
        return Image(
            str(source.get("media_type", "")),
            decoded_size(data),
            dims[0] if dims else None,
            dims[1] if dims else None,
            dumps(obj),
        )
    return Image(str(source.get("media_type", "")) if isinstance(source, dict) else "", 0, None, None, dumps(obj))


def block_from_json(obj: Any, where: Location) -> Block:
    if isinstance(obj, str):
        return Text(obj)
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise UnknownShape(where, "a content block must be an object with a 'type'")
    kind = obj["type"]
    if kind == "text" and isinstance(obj.get("text"), str):
        return Text(obj["text"], extras(obj, _TEXT))
    if kind == "thinking" and isinstance(obj.get("thinking"), str):
        return Thinking(obj["thinking"], extras(obj, _THINKING))
    if kind == "tool_use" and isinstance(obj.get("id"), str):
        return ToolCall(obj["id"], str(obj.get("name", "")), dumps(obj.get("input", {})), extras(obj, _TOOL_USE))
    if kind == "tool_result" and isinstance(obj.get("tool_use_id"), str):
        raw = obj.get("content", "")
        content: tuple[Block, ...]
        if isinstance(raw, str):
            content = (Text(raw),) if raw else ()
        elif isinstance(raw, list):
            content = tuple(block_from_json(b, where) for b in raw)
        else:
            content = (other_block("content", raw),)
        return ToolResult(obj["tool_use_id"], content, bool(obj.get("is_error", False)), "", extras(obj, _TOOL_RESULT))
    if kind == "image":
        return image_from_json(obj)
    return other_block(kind, obj)


def message_from_json(obj: dict[str, Any], source: Source) -> Message:
    where = Location(source.path, source.line)
    role = obj.get("role")
    if role not in ("user", "assistant"):
        raise UnknownShape(where, f"unknown message role {role!r} (expected 'user' or 'assistant')")
    raw = obj.get("content")
    if isinstance(raw, str):
        content: tuple[Block, ...] = (Text(raw),)
    elif isinstance(raw, list):
        content = tuple(block_from_json(b, where) for b in raw)
    else:
        raise UnknownShape(where, "message 'content' must be a string or a list of blocks")
    # The literal, not the parsed string: one shared object instead of one per message (memory, issue 8).
    return Message("user" if role == "user" else "assistant", content, source, extras(obj, _MESSAGE))


def system_from_json(raw: Any, where: Location) -> tuple[Block, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (Text(raw),) if raw else ()
    if isinstance(raw, list):
        return tuple(block_from_json(b, where) for b in raw)
    raise UnknownShape(where, "'system' must be a string or a list of blocks")


def tool_from_json(obj: Any, where: Location) -> ToolDef:
    """A tool definition in either provider's shape: Anthropic (``input_schema``),
    OpenAI chat (``function.parameters``) or OpenAI Responses (flat ``parameters``)."""
    if not isinstance(obj, dict):
        raise UnknownShape(where, "a tool definition must be an object")
    if obj.get("type") == "function" and "function" not in obj and isinstance(obj.get("name"), str):
        # The Responses API's flat shape: kept as the chat shape it stands for.
        obj = {"type": "function", "function": {k: v for k, v in obj.items() if k != "type"}}
    if obj.get("type") == "function" and isinstance(obj.get("function"), dict):
        fn = obj["function"]
        return ToolDef(
            str(fn.get("name", "")),
            str(fn.get("description", "")),
            dumps(fn.get("parameters", {})),
            dumps(obj),
            "openai",
        )
    return ToolDef(
        str(obj.get("name", "")),
        str(obj.get("description", "")),
        dumps(obj.get("input_schema", {})),
        dumps(obj),
        "anthropic",
    )


def request_from_json(body: dict[str, Any], source: Source, fmt: str) -> Transcript:
    where = Location(source.path, source.line)
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise UnknownShape(where, "a request body needs a 'messages' list")
    for m in messages:
        if not isinstance(m, dict):
            raise UnknownShape(where, "each message must be an object")
    return Transcript(
        system=system_from_json(body.get("system"), where),
        tools=tuple(tool_from_json(t, where) for t in list_field(body, "tools", where)),
        messages=tuple(message_from_json(m, source) for m in messages),
        source=source,
        format=fmt,
        dialect="anthropic",
        extra=extras(body, _REQUEST),
    )


# --------------------------------------------------------------------------
# Writing


def image_to_json(image: Image) -> Any:
    if image.raw:
        raw = loads(plain(image.raw))
        if isinstance(raw, dict) and raw.get("type") == "image":
            # the file's spelling of it (``spelling.spelled_blocks``)
            return orjson.Fragment(plain(image.raw)) if image.raw[:1] == SPELLED else raw
        if isinstance(raw, dict) and raw.get("type") == "image_url":  # from OpenAI
            url = str((raw.get("image_url") or {}).get("url", ""))
            if url.startswith("data:") and ";base64," in url:
                media, data = url[5:].split(";base64,", 1)
                return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}
            return {"type": "image", "source": {"type": "url", "url": url}}
    return {"type": "text", "text": f"[image {image.media_type}, {image.byte_size} bytes, not kept]"}


def input_value(call: ToolCall) -> Any:
    """What a call's ``input`` is written as: the harness's own object, the file's text of it (a fragment
    orjson writes as it is), or the value of its compact JSON."""
    if call.given is not None:
        return call.given
    if call.input_text:
        return orjson.Fragment(call.input_text)
    return loads(call.input_json)


def keep_given_inputs(messages: tuple[Message, ...], objects: list[Any]) -> tuple[Message, ...]:
    """``messages`` (read from the message ``objects`` of a harness's body, one to one) with each tool
    call holding the very input object the harness gave, to be returned as that object."""
    out = []
    for message, obj in zip(messages, objects, strict=True):
        raw = obj.get("content") if isinstance(obj, dict) else None
        if not message.tool_calls or not isinstance(raw, list) or len(raw) != len(message.content):
            out.append(message)
            continue
        content = tuple(
            replace(b, given=item["input"])
            if isinstance(b, ToolCall) and isinstance(item, dict) and isinstance(item.get("input"), (dict, list))
            else b
            for b, item in zip(message.content, raw, strict=True)
        )
        out.append(replace(message, content=content))
    return tuple(out)


def block_to_json(block: Block, texts: Texts | None = None) -> Any:
    """A block as the Messages API has it: a dict, or a fragment holding the file's own text of it (a
    block of ``texts``, written as it came) or of its extra keys (``with_extra``)."""
    if texts:
        found = texts.get(id(block))
        if found is not None:
            return orjson.Fragment(found)
    if isinstance(block, Text):
        return with_extra({"type": "text", "text": block.text}, block.extra)
    if isinstance(block, Thinking):
        return with_extra({"type": "thinking", "thinking": block.text}, block.extra)
    if isinstance(block, ToolCall):
        return with_extra(
            {"type": "tool_use", "id": block.id, "name": block.name, "input": input_value(block)}, block.extra
        )
    if isinstance(block, ToolResult):
        out: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": block.call_id,
            "content": [block_to_json(b) for b in block.content],
        }
        if block.is_error:
            out["is_error"] = True
        return with_extra(out, block.extra)
    if isinstance(block, Image):
        return image_to_json(block)
    if block.raw[:1] == SPELLED:
        return orjson.Fragment(plain(block.raw))
    raw = loads(block.raw)
    return raw if isinstance(raw, dict) else {"type": "text", "text": block.raw}


def _results_first(content: tuple[Block, ...]) -> tuple[Block, ...]:
    results = tuple(b for b in content if isinstance(b, ToolResult))
    return results + tuple(b for b in content if not isinstance(b, ToolResult))


def messages_to_json(messages: tuple[Message, ...], *, same_dialect: bool, exact: bool = False) -> list[Any]:
    """Anthropic messages. ``tool`` messages (from OpenAI) join the user
    message that carries their siblings' results, and a user message right after
    them joins it too; ``system`` messages in the middle become user text, since
    Anthropic has no such role. ``exact`` (to be
    written as bytes): what a message still holds as read is the file's own text
    (fragments, ``wire.spelling``)."""
    out: list[Any] = []
    for m in messages:
        texts: Texts = {}
        if exact and same_dialect and m.role in ("user", "assistant"):
            m, texts = respelled(m, openai_shape=False)
        if m.role == "tool" or (m.role == "system"):
            blocks: tuple[Block, ...] = (
                m.content
                if m.role == "tool"
                else tuple(Text(f"[system] {b.text}") if isinstance(b, Text) else b for b in m.content)
            )
            if out and isinstance(out[-1], dict) and out[-1].get("_tool") and m.role == "tool":
                out[-1]["content"].extend(block_to_json(b) for b in blocks)
                continue
            out.append({"role": "user", "content": [block_to_json(b) for b in blocks], "_tool": m.role == "tool"})
            continue
        content = _results_first(m.content) if m.role == "user" else m.content
        if not same_dialect:
            # Reasoning from another provider has no Anthropic signature; Anthropic rejects it.
            content = tuple(b for b in content if not isinstance(b, Thinking))
        blocks_json = [block_to_json(b, texts) for b in content]
        if m.role == "user" and out and isinstance(out[-1], dict) and out[-1].get("_tool"):
            # after results from OpenAI ``tool`` messages: the same user message, so that roles alternate
            out[-1]["content"].extend(blocks_json)
            out[-1]["_tool"] = False
            continue
        obj: dict[str, Any] = {"role": m.role, "content": blocks_json}
        out.append(with_extra(obj, m.extra) if same_dialect else obj)
    for obj in out:
        if isinstance(obj, dict):
            obj.pop("_tool", None)
    return out


def tool_to_json(tool: ToolDef) -> Any:
    """A tool definition: the file's text of it where it holds one (``spelling.spelled_tools``), else a dict."""
    if tool.dialect == "anthropic" and tool.text:
        return orjson.Fragment(tool.text)
    if tool.dialect == "anthropic" and tool.raw:
        raw = loads(tool.raw)
        if isinstance(raw, dict):
            return raw
    return {"name": tool.name, "description": tool.description, "input_schema": loads(tool.schema_json or "{}")}


LIMIT_KEYS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
"""The output limit's names across dialects (Anthropic, OpenAI chat, Responses)."""


def request_keys(extra: dict[str, Any], *, limit_key: str = "max_tokens") -> dict[str, Any]:
    """The request-level keys of another dialect's body that mean the same in one
    whose output limit is ``limit_key``: the model, and the limit under that name
    (its own name first, then the others)."""
    out: dict[str, Any] = {}
    if isinstance(extra.get("model"), str):
        out["model"] = extra["model"]
    for key in (limit_key, *(k for k in LIMIT_KEYS if k != limit_key)):
        if isinstance(extra.get(key), int):
            out[limit_key] = extra[key]
            break
    return out


def request_to_json(transcript: Transcript, *, exact: bool = False) -> dict[str, Any]:
    """A Messages API body. Request-level keys the file recorded (model,
    max_tokens, ...) come first; from another dialect only those that translate.
    ``exact``: see ``messages_to_json``."""
    same = transcript.dialect == "anthropic"
    body: dict[str, Any] = {}
    if transcript.extra:
        extra = loads(transcript.extra)
        body.update(extra if same else request_keys(extra))
    kept = transcript.system_verbatim.of(transcript.system) if exact and same and transcript.system_verbatim else None
    if kept is not None and len(kept) == 1 and kept[0].lstrip()[:1] != b"{":
        # a body's system value (a string or a list of blocks) as the file spelled it; not a system line
        body["system"] = orjson.Fragment(kept[0])
    elif transcript.system:
        body["system"] = [block_to_json(b) for b in transcript.system]
    if transcript.tools:
        body["tools"] = [tool_to_json(t) for t in transcript.tools]
    body["messages"] = messages_to_json(transcript.messages, same_dialect=same, exact=exact)
    return body


def looks_anthropic(obj: dict[str, Any]) -> bool:
    """A message object whose content uses Anthropic block types."""
    content = obj.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and str_field(b, "type") in BLOCK_TYPES - {"text"} for b in content
    )
