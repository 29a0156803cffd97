"""The "openhands" format: an OpenHands event stream (a trajectory export: a
JSON array of action and observation events). Messages are rebuilt the way
OpenHands' ``ConversationMemory`` sends them: an action that called tools is
the assistant message of its ``tool_call_metadata.model_response``, sent once
every call of that response has its observation; each such observation is the
call's tool result; ``finish`` is the agent's last text."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .._json import list_field
from ..errors import EmptyTranscript, Location, UnknownShape
from ..transcript import Block, Message, Role, Skipped, Source, Text, ToolDef, Transcript, Usage
from ..wire import openai
from ..wire.anthropic import tool_from_json
from ._document import iter_members
from ._sniff import is_openhands_event, scan_head
from .base import Format, Input

NAME = "openhands"


def sniff(head: bytes) -> bool:
    shape = scan_head(head)
    return shape.opening == "[" and shape.item_opening == "{" and is_openhands_event(shape.item_keys)


@dataclass(slots=True)
class _Pending:
    """An assistant response waiting for its calls' observations."""

    message: Message
    usage: tuple[int, int, int] | None
    waiting: set[str]
    results: dict[str, Message] = field(default_factory=dict)
    order: tuple[str, ...] = ()


@dataclass(slots=True)
class _Stream:
    path: str
    messages: list[Message] = field(default_factory=list)
    system: list[Block] = field(default_factory=list)
    tools: list[ToolDef] = field(default_factory=list)
    usage: list[Usage] = field(default_factory=list)
    pending: dict[str, _Pending] = field(default_factory=dict)
    kinds: Counter[str] = field(default_factory=Counter)

    def emit(self, p: _Pending) -> None:
        if p.usage is not None:
            self.usage.append(Usage(len(self.messages), *p.usage, source=p.message.source))
        self.messages.append(p.message)
        self.messages.extend(p.results[i] for i in p.order if i in p.results)


def _usage(response: dict[str, Any]) -> tuple[int, int, int] | None:
    """(input without cache, cache creation, cache read) of a LiteLLM response's usage."""
    usage = response.get("usage")
    if not isinstance(usage, dict) or not isinstance(usage.get("prompt_tokens"), int):
        return None
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    creation = usage.get("cache_creation_input_tokens") or 0
    read = usage.get("cache_read_input_tokens") or cached or 0
    if not isinstance(creation, int) or not isinstance(read, int):
        return None
    return max(usage["prompt_tokens"] - creation - read, 0), creation, read


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _add_event(stream: _Stream, event: dict[str, Any], source: Source) -> None:
    where = Location(source.path, source.line)
    meta = event.get("tool_call_metadata")
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    assert isinstance(args, dict)
    if "action" in event:
        action = event["action"]
        role: Role = "user" if event.get("source") == "user" else "assistant"
        if action == "system":
            stream.system.append(Text(_text(args.get("content"))))
            stream.tools.extend(tool_from_json(t, where) for t in list_field(args, "tools", where))
        elif action == "message":
            stream.messages.append(
                Message(role, (Text(_text(args.get("content")) or _text(event.get("message"))),), source)
            )
        elif action == "finish":
            thought = _text(args.get("thought"))
            if isinstance(meta, dict):
                measured = _usage(meta["model_response"]) if isinstance(meta.get("model_response"), dict) else None
                if measured is not None:
                    stream.usage.append(Usage(len(stream.messages), *measured, source=source))
                content = _text(_response_message(meta, where).get("content"))
                thought = f"{thought}\n{content}" if thought and content and thought != content else thought or content
            stream.messages.append(Message(role, (Text(thought),), source))
        elif isinstance(meta, dict):
            response = meta.get("model_response")
            if not isinstance(response, dict):
                raise UnknownShape(where, "tool_call_metadata without a model_response")
            key = str(response.get("id", ""))
            if key not in stream.pending:  # one response's several calls arrive as several actions
                message = openai.message_from_json({"role": "assistant", **_response_message(meta, where)}, source)
                ids = tuple(c.id for c in message.tool_calls)
                stream.pending[key] = _Pending(message, _usage(response), set(ids), order=ids)
        else:
            stream.kinds[f"action {action}"] += 1
    elif "observation" in event:
        if not isinstance(meta, dict) or not isinstance(meta.get("tool_call_id"), str):
            stream.kinds[f"observation {event['observation']}"] += 1
            return
        response = meta.get("model_response")
        key = str(response.get("id", "")) if isinstance(response, dict) else ""
        call_id = meta["tool_call_id"]
        result = openai.message_from_json(
            {
                "role": "tool",
                "tool_call_id": call_id,
                "name": meta.get("function_name", ""),
                "content": _text(event.get("content")),
            },
            source,
        )
        p = stream.pending.get(key)
        if p is None or call_id not in p.waiting:
            stream.kinds["observation without its action"] += 1
            return
        p.results[call_id] = result
        p.waiting.discard(call_id)
        if not p.waiting:
            stream.emit(stream.pending.pop(key))
    else:
        raise UnknownShape(where, "not an OpenHands event: no 'action' or 'observation'")


def _response_message(meta: dict[str, Any], where: Location) -> dict[str, Any]:
    """The assistant message of a tool call's model response."""
    response = meta.get("model_response")
    choices = response.get("choices") if isinstance(response, dict) else None
    message = (
        choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    )
    if not isinstance(message, dict):
        raise UnknownShape(where, "a model_response without choices[0].message")
    return {k: v for k, v in message.items() if k in ("content", "tool_calls")}


def load(source: Input, *, skip_invalid: bool) -> tuple[Transcript, ...]:
    stream = _Stream(source.path)
    skipped: list[Skipped] = []
    with source.open() as f:
        for member in iter_members(f, source.path):
            where = Source(source.path, member.line)
            try:
                if member.key is not None or not isinstance(member.value, dict):
                    raise UnknownShape(
                        Location(source.path, member.line), "not an OpenHands event stream: expected an array of events"
                    )
                _add_event(stream, member.value, where)
            except UnknownShape as exc:
                if not skip_invalid:
                    raise
                skipped.append(Skipped(where, exc.message))
    if not stream.messages:
        raise EmptyTranscript(Location(source.path), "no messages in this event stream", hint="is this the right file?")
    notes = ["tool results are the observations' content; OpenHands adds a line or two of its own formatting"]
    if not stream.system:
        notes.append("this stream records no system prompt or tool definitions: the estimate leaves them out")
    unanswered = sum(len(p.waiting) for p in stream.pending.values())
    if unanswered:
        notes.append(f"{unanswered} tool call(s) with no observation are left out, as OpenHands leaves them out")
    return (
        Transcript(
            tuple(stream.system),
            tuple(stream.tools),
            tuple(stream.messages),
            Source(source.path),
            NAME,
            "openai",
            tuple(skipped),
            usage=tuple(stream.usage),
            line_kinds=tuple(sorted(stream.kinds.items())),
            notes=tuple(notes),
        ),
    )


FORMAT = Format(
    name=NAME,
    description="OpenHands event stream (a trajectory: a JSON array of action and observation events)",
    sniff=sniff,
    load=load,
    records_system=False,
)
