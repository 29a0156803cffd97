"""The "atif" format: Agent Trajectory Interchange Format trajectories (Harbor,
terminal-bench; schema ``ATIF-v1.0`` to ``ATIF-v1.5``): one JSON object with
``schema_version``, ``session_id``, ``agent`` and ``steps``. A ``system`` step
is a system message, a ``user`` step a user message, an ``agent`` step an
assistant message (``reasoning_content``, ``message``, ``tool_calls``) followed
by its ``observation.results``: a result naming one of the step's calls
(``source_call_id``) is that call's result, any other is user text (agents that
do not call tools, like Terminus, report terminal output that way). A step's
``metrics`` (``prompt_tokens``, of which ``cached_tokens`` were cache hits) is
the measured size of the request that produced it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson

from .._json import InputTexts, check_depth, dumps, list_field, loads_or_lenient
from ..errors import EmptyTranscript, InvalidJson, Location, UnknownShape
from ..transcript import Message, Source, Transcript, Usage
from ..wire import openai
from ._sniff import scan_head
from .base import Format, Input

NAME = "atif"


def sniff(head: bytes) -> bool:
    shape = scan_head(head)
    return (
        shape.opening == "{"
        and "schema_version" in shape.keys
        and b'"ATIF-v' in shape.first_line[:4096]
        and not shape.more
    )


def _count(obj: Any, key: str) -> int:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, int) else 0


def _text(value: Any) -> Any:
    """A message or result's content: a string, or (ATIF 1.5) a list of parts kept as parts."""
    return value if isinstance(value, (str, list)) or value is None else dumps(value)


def _step_messages(step: dict[str, Any], where: Location, inputs: InputTexts | None = None) -> list[dict[str, Any]]:
    """A step as Chat Completions messages; ``inputs``: the trajectory's text, where each call's
    ``arguments`` is found as the file spelled it (written back so, SPEC section 6, invariant 9)."""
    source = step.get("source")
    if source in ("system", "user"):
        return [{"role": source, "content": _text(step.get("message"))}]
    if source != "agent":
        raise UnknownShape(where, f"unknown step source {source!r} (expected 'system', 'user' or 'agent')")
    calls = [c for c in list_field(step, "tool_calls", where) if isinstance(c, dict)]
    ids = {c["tool_call_id"] for c in calls if isinstance(c.get("tool_call_id"), str)}
    assistant: dict[str, Any] = {"role": "assistant", "content": _text(step.get("message")) or None}
    if calls:
        assistant["tool_calls"] = [
            {
                "id": c.get("tool_call_id"),
                "type": "function",
                "function": {"name": c.get("function_name", ""), "arguments": _arguments(c, inputs)},
            }
            for c in calls
        ]
    if isinstance(step.get("reasoning_content"), str) and step["reasoning_content"]:
        assistant["reasoning_content"] = step["reasoning_content"]
    out = [assistant]
    observation = step.get("observation")
    results = list_field(observation, "results", where) if isinstance(observation, dict) else ()
    answered: set[Any] = set()
    loose: list[str] = []
    for result in results:
        if not isinstance(result, dict):
            continue
        content = result.get("content")
        call = result.get("source_call_id")
        if isinstance(call, str) and call in ids and call not in answered:
            answered.add(call)
            out.append({"role": "tool", "tool_call_id": call, "content": _text(content) or ""})
        elif isinstance(content, str) and content:
            loose.append(content)
    if loose:
        out.append({"role": "user", "content": "\n\n".join(loose)})
    return out


def _arguments(call: dict[str, Any], inputs: InputTexts | None) -> str:
    compact = dumps(call.get("arguments", {}))
    return (inputs.find(compact) or compact) if inputs is not None and "arguments" in call else compact


def load(source: Input, *, skip_invalid: bool) -> tuple[Transcript, ...]:
    try:
        data = source.read_all()
        doc = check_depth(loads_or_lenient(data), Location(source.path), data)
    except orjson.JSONDecodeError as exc:
        raise InvalidJson(Location(source.path), f"invalid JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("steps"), list):
        raise UnknownShape(Location(source.path, 1), "an ATIF trajectory is an object with a 'steps' list")
    src = Source(source.path)
    inputs = InputTexts(data, "arguments") if source.keep_text and b'"arguments"' in data else None
    messages: list[Message] = []
    measured: list[tuple[int, dict[str, Any]]] = []
    for number, step in enumerate(doc["steps"], 1):
        where = Location(f"{source.path} step {number}")
        if not isinstance(step, dict):
            raise UnknownShape(where, "the step is not an object")
        chat = _step_messages(step, where, inputs)
        if step.get("source") == "agent" and isinstance(step.get("metrics"), dict):
            measured.append((len(messages), step["metrics"]))
        for m in chat:
            message = openai.message_from_json(m, src)
            if message.content:
                messages.append(message)
    if not messages:
        raise EmptyTranscript(Location(source.path), "the trajectory has no steps with content")
    t = openai.transcript_from_messages(messages, source=src, fmt=NAME)
    lead = len(messages) - len(t.messages)
    usage = []
    for before, metrics in measured:
        extra = metrics.get("extra")
        created = _count(extra, "cache_creation_input_tokens")
        cached = _count(metrics, "cached_tokens")
        prompt = _count(metrics, "prompt_tokens")
        if prompt and before - lead > 0:
            usage.append(Usage(before - lead, max(prompt - cached - created, 0), created, cached, src))
    notes = [
        "observation results that answer no tool call of their step are user text",
        "the trajectory does not record tool definitions",
    ]
    return (replace(t, usage=tuple(usage), notes=tuple(notes)),)


FORMAT = Format(
    name=NAME,
    description="ATIF agent trajectories (Harbor, terminal-bench): steps with tool calls, observations and metrics",
    sniff=sniff,
    load=load,
)
