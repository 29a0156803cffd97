"""The OpenAI Responses API wire shapes: input items (``message``, ``reasoning``,
``function_call`` / ``function_call_output``, custom and local shell calls) and
tool definitions, read into neutral messages. The ``responses`` and ``codex``
file formats both read their items with ``ItemReader``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from .._json import dumps, other_block, str_field
from ..errors import Location, UnknownShape
from ..images import decoded_size, sniff_dimensions
from ..transcript import (
    Block,
    Defect,
    Image,
    Message,
    Source,
    Text,
    Thinking,
    ToolCall,
    ToolDef,
    ToolResult,
)
from ..validate import check_messages
from . import anthropic
from .openai import arguments_call
from .spelling import spelled_item, spelled_parts, spelled_value

CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})
ASSISTANT_ONLY = frozenset({"reasoning", "web_search_call"})
ITEM_TYPES = CALLS | OUTPUTS | ASSISTANT_ONLY | {"message"}
"""The item types read into messages; any other (``ghost_snapshot``,
``compaction``, ``item_reference``, ...) is counted by the caller and skipped."""

LOCAL_SHELL = "local_shell"
"""The tool name given to ``local_shell_call`` items, which carry none."""

_TEXT_PARTS = frozenset({"input_text", "output_text", "text", "summary_text", "reasoning_text"})


def item_type(item: dict[str, Any]) -> str:
    """An item's type; an item with a ``role`` and no type is a message (the API's "easy" input)."""
    kind = str_field(item, "type")
    if isinstance(kind, str):
        return kind
    return "message" if "role" in item else ""


def _image(part: dict[str, Any]) -> Block:
    """``input_image`` as an image block written back in the Chat Completions shape."""
    url = part.get("image_url")
    if not isinstance(url, str) or not url:
        return other_block("input_image", part)
    chat: dict[str, Any] = {"type": "image_url", "image_url": {"url": url}}
    if isinstance(part.get("detail"), str):
        chat["image_url"]["detail"] = part["detail"]
    if url.startswith("data:") and ";base64," in url:
        media, data = url[5:].split(";base64,", 1)
        dims = sniff_dimensions(data)
        return Image(media, decoded_size(data), dims[0] if dims else None, dims[1] if dims else None, dumps(chat))
    return Image("", 0, None, None, dumps(chat))


def content_blocks(raw: Any, where: Location) -> tuple[Block, ...]:
    """A message's (or an output's) content: a string or a list of parts."""
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (Text(raw),) if raw else ()
    if not isinstance(raw, list):
        raise UnknownShape(where, "'content' must be a string or a list of parts")
    blocks: list[Block] = []
    for part in raw:
        if isinstance(part, str):
            blocks.append(Text(part))
        elif not isinstance(part, dict):
            raise UnknownShape(where, "a content part must be an object")
        elif str_field(part, "type") in _TEXT_PARTS and isinstance(part.get("text"), str):
            blocks.append(Text(part["text"]))
        elif part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
            blocks.append(Text(part["refusal"]))
        elif part.get("type") == "input_image":
            blocks.append(_image(part))
        else:
            blocks.append(other_block(str(part.get("type")), part))
    return tuple(blocks)


def _output_content(
    raw: Any, where: Location, text: bytes | str | None = None, path: tuple[str | int, ...] = ()
) -> tuple[tuple[Block, ...], bool]:
    """A call's output and whether it reports a failure. Sent as it is: a JSON
    *string* holding JSON (Codex's ``{"output": ..., "metadata": ...}``) stays
    that string, escapes and all. Older Codex wrote a failure as ``{content, success}``.
    Another object is sent as a text of its JSON: the file's text of it (at ``path`` in ``text``)."""
    if isinstance(raw, dict) and "content" in raw:
        return content_blocks(raw.get("content"), where), raw.get("success") is False
    if isinstance(raw, dict):
        compact = dumps(raw)
        return (Text(spelled_value(compact, text, path) or compact),), False
    return content_blocks(raw, where), False


def _reasoning_text(item: dict[str, Any]) -> str:
    """The readable part of a reasoning item: its summaries and any plain reasoning
    text. ``encrypted_content`` is opaque base64 and is never counted."""
    texts = []
    for key in ("summary", "content"):
        for part in item.get(key) or ():
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
    return "\n\n".join(texts)


def _call_id(item: dict[str, Any], kind: str, where: Location) -> str:
    """The id that pairs a call with its output; local shell items may carry only ``id``."""
    call_id = item.get("call_id") or (item.get("id") if kind.startswith("local_shell") else None)
    if not isinstance(call_id, str) or not call_id:
        raise UnknownShape(where, f"a {kind} item needs a 'call_id'")
    return call_id


def _call(
    item: dict[str, Any], kind: str, where: Location, text: bytes | str | None = None, path: tuple[str | int, ...] = ()
) -> ToolCall:
    call_id = _call_id(item, kind, where)
    if kind == "function_call":
        return arguments_call(call_id, str(item.get("name", "")), item.get("arguments"), where)
    if kind == "custom_tool_call":
        # A freeform tool's input is raw text (e.g. an apply_patch body), not JSON: it is
        # kept as {"input": text}, the object a function-shaped request can carry.
        return ToolCall(call_id, str(item.get("name", "")), dumps({"input": item.get("input", "")}))
    action = item.get("action") or {}
    compact = dumps(action)
    spelled = spelled_value(compact, text, (*path, "action")) if isinstance(action, (dict, list)) else ""
    return ToolCall(call_id, LOCAL_SHELL, compact, input_text=spelled)


@dataclass(slots=True)
class ItemReader:
    """Builds messages from Responses items, one at a time, in order.

    Consecutive model-side items (reasoning, assistant text, tool calls) make
    ONE assistant message, so parallel calls share it; each output becomes a
    ``tool`` message; developer and system messages become ``system`` messages.
    """

    messages: list[Message] = field(default_factory=list)
    call_lines: dict[str, int | None] = field(default_factory=dict)
    """Where each call was read (for defects)."""
    reasoning_items: int = 0
    _blocks: list[Block] = field(default_factory=list)
    _source: Source | None = None

    @property
    def begun(self) -> int:
        """Messages read so far, counting the assistant message still being built."""
        return len(self.messages) + (self._source is not None)

    def role_at(self, index: int) -> str:
        """The role of message ``index`` (the one being built is an assistant)."""
        return self.messages[index].role if index < len(self.messages) else "assistant"

    def close(self) -> None:
        """End the assistant message being built, if any."""
        if self._source is not None:
            self.messages.append(Message("assistant", tuple(self._blocks), self._source))
            self._blocks, self._source = [], None

    def _assistant(self, blocks: Iterable[Block], source: Source) -> None:
        if self._source is None:
            self._source = source
        self._blocks.extend(blocks)

    def _append(self, message: Message) -> None:
        self.close()
        self.messages.append(message)

    def add(
        self, item: dict[str, Any], source: Source, text: bytes | str | None = None, path: tuple[str | int, ...] = ()
    ) -> bool:
        """Read one item. False when its type is not one that becomes a message
        (the caller counts it); raises ``UnknownShape`` for a malformed item.
        ``text`` is the JSON text the item is at ``path`` in (a line): its unmodelled
        parts and items keep that text where it is not compact JSON (``wire.spelling``)."""
        where = Location(source.path, source.line)
        kind = item_type(item)
        if kind == "message":
            role = str_field(item, "role")
            content = spelled_parts(content_blocks(item.get("content"), where), text, (*path, "content"))
            if role == "assistant":
                self._assistant(content, source)
            elif role == "user":
                self._append(Message("user", content, source))
            elif role in ("developer", "system"):
                extra = dumps({"role": "developer"}) if role == "developer" else ""
                self._append(Message("system", content, source, extra))
            else:
                raise UnknownShape(where, f"unknown message role {role!r}")
        elif kind == "reasoning":
            self.reasoning_items += 1
            self._assistant((Thinking(_reasoning_text(item)),), source)
        elif kind in CALLS:
            call = _call(item, kind, where, text, path)
            self.call_lines.setdefault(call.id, source.line)
            self._assistant((call,), source)
        elif kind == "web_search_call":
            self._assistant((spelled_item(other_block(kind, item), text, path),), source)
        elif kind in OUTPUTS:
            call_id = _call_id(item, kind, where)
            output = item.get("output")
            content, failed = _output_content(output, where, text, (*path, "output"))
            if content and text is not None:
                inner = (*path, "output", "content") if isinstance(output, dict) else (*path, "output")
                content = spelled_parts(content, text, inner)
            self._append(Message("tool", (ToolResult(call_id, content, failed),), source))
        else:
            return False
        return True

    def finish(self) -> list[Message]:
        self.close()
        return self.messages


def defects_of(messages: list[Message], starts: Iterable[int], call_lines: dict[str, int | None]) -> list[Defect]:
    """Calls without results and results without calls, per context segment
    (a compaction's replacement history repeats earlier calls: not a defect)."""
    bounds = sorted({0, *starts, len(messages)})
    defects = []
    for a, b in pairwise(bounds):
        for v in check_messages(messages[a:b], "openai"):
            source = v.source
            if v.kind == "unanswered-call" and call_lines.get(v.call_id) is not None:
                source = Source(source.path, call_lines[v.call_id])
            defects.append(Defect(source, v.kind, v.detail))
    return defects


def tool_from_json(obj: Any, where: Location) -> ToolDef | None:
    """A Responses tool definition (flat ``{type: function, name, parameters}``)
    in the Chat Completions shape; None for built-in tools (web search, ...)."""
    if not isinstance(obj, dict):
        raise UnknownShape(where, "a tool definition must be an object")
    if obj.get("type") == "function" and "function" not in obj:
        fn = {k: obj[k] for k in ("name", "description", "parameters", "strict") if k in obj}
        return anthropic.tool_from_json({"type": "function", "function": fn}, where)
    if obj.get("type") == "function":
        return anthropic.tool_from_json(obj, where)
    return None
