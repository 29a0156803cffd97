"""GitHub Copilot CLI session events (``~/.copilot/session-state/<session>/events.jsonl``,
earlier ``~/.copilot/session-state/<session>.jsonl``).

Each line is an event ``{type, data, id, timestamp, parentId}`` (as written by
Copilot CLI 1.0.34, ``producer: copilot-agent``). The ones that make the
conversation: ``session.start`` (first line), ``system.message {role, content}``
(the system prompt, written again before each user message),
``user.message {content, transformedContent}`` (what the user typed, and what
was sent), ``assistant.message {messageId, content, toolRequests[] {toolCallId,
name, arguments}, reasoningText, reasoningOpaque}``, and
``tool.execution_complete {toolCallId, success, result {content}, error}``.
Every other event (turn marks, model changes, ``tool.execution_start``,
``session.shutdown``) is counted by type.

Earlier versions wrote one JSON document per session,
``~/.copilot/history-session-state/<session>.json``: ``{sessionId, startTime,
chatMessages, timeline}``, where ``chatMessages`` are the Chat Completions
messages sent (``tool_calls``, ``role: tool``) and ``timeline`` is what the
terminal showed (counted by entry type).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from .._json import InputTexts, dumps
from ..errors import EmptyTranscript, Location, UnknownShape
from ..transcript import Block, Defect, Message, Skipped, Source, Text, ToolCall, ToolResult, Transcript
from ..validate import check_messages
from ..wire.openai import message_from_json, transcript_from_messages
from ._jsonl import LineReader, loads_document
from ._sniff import scan_head
from .base import Format, Input
from .codex import _Tail, line_defects

NAME = "copilot_cli"


def _text(raw: Any, where: Location, what: str) -> str:
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise UnknownShape(where, f"{what} is a {type(raw).__name__}, not text")
    return raw


@dataclass(slots=True)
class _Events:
    """The conversation while the events are read."""

    path: str
    messages: list[Message] = field(default_factory=list)
    pending: list[Message] = field(default_factory=list)
    """Results read since the last assistant message with calls, in the order they completed."""
    system: tuple[Block, ...] = ()
    systems: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    names: dict[str, str] = field(default_factory=dict)
    reasoning: int = 0
    transformed: int = 0
    model: str = ""
    version: str = ""

    def flush(self) -> None:
        self.messages.extend(self.pending)
        self.pending.clear()

    def read(self, lineno: int, obj: Any, line: bytes | None = None) -> None:
        """Read one event; ``line``: its text, to find each tool request's ``arguments`` as the file
        spelled them (written back so, SPEC section 6, invariant 9)."""
        where = Location(self.path, lineno)
        source = Source(self.path, lineno)
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            raise UnknownShape(where, "not a Copilot CLI event: no type")
        kind = obj["type"]
        data = obj.get("data")
        if not isinstance(data, dict):
            raise UnknownShape(where, f"{kind} event without a data object")
        if kind == "system.message":
            self.systems += 1
            self.system = (Text(_text(data.get("content"), where, "system.message content")),)
        elif kind == "user.message":
            text = data.get("transformedContent")
            if isinstance(text, str):
                self.transformed += 1
            else:
                text = _text(data.get("content"), where, "user.message content")
            self.flush()
            self.messages.append(Message("user", (Text(text),), source))
        elif kind == "assistant.message":
            self._assistant(data, where, source, line)
        elif kind == "tool.execution_complete":
            self._result(data, where, source)
        else:
            self.kinds[kind] += 1
            if kind == "session.start" and isinstance(data.get("copilotVersion"), str):
                self.version = data["copilotVersion"]
            elif kind == "session.model_change" and isinstance(data.get("newModel"), str):
                self.model = data["newModel"]

    def _assistant(self, data: dict[str, Any], where: Location, source: Source, line: bytes | None) -> None:
        if data.get("parentToolCallId"):
            self.kinds["assistant.message/subagent"] += 1  # a sub-agent's own conversation, not this one's
            return
        self.flush()
        blocks: list[Block] = []
        text = _text(data.get("content"), where, "assistant.message content")
        if text:
            blocks.append(Text(text))
        if data.get("reasoningText") or data.get("reasoningOpaque"):
            self.reasoning += 1
        requests = data.get("toolRequests") or []
        if not isinstance(requests, list):
            raise UnknownShape(where, "toolRequests is not a list")
        for req in requests:
            if not isinstance(req, dict) or not isinstance(req.get("toolCallId"), str):
                raise UnknownShape(where, "a tool request has no toolCallId")
            args = req.get("arguments", {})
            name = str(req.get("name", ""))
            blocks.append(
                ToolCall(req["toolCallId"], name, dumps(args), arguments=args if isinstance(args, str) else "")
            )
            self.names[req["toolCallId"]] = name
        if blocks:
            spelled = InputTexts(line, "arguments").blocks(tuple(blocks)) if line and requests else tuple(blocks)
            self.messages.append(Message("assistant", spelled, source))
        else:
            self.kinds["assistant.message/empty"] += 1

    def _result(self, data: dict[str, Any], where: Location, source: Source) -> None:
        call_id = data.get("toolCallId")
        if not isinstance(call_id, str):
            raise UnknownShape(where, "tool.execution_complete without a toolCallId")
        if data.get("parentToolCallId"):
            self.kinds["tool.execution_complete/subagent"] += 1
            return
        result = data.get("result")
        error = data.get("error")
        if isinstance(result, dict) and isinstance(result.get("content"), str):
            text = result["content"]
        elif isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        elif isinstance(error, str):
            text = error
        else:
            text = dumps(result if result is not None else error)
        failed = data.get("success") is False
        name = self.names.get(call_id, "")
        self.pending.append(Message("tool", (ToolResult(call_id, (Text(text),), failed, name),), source))

    def transcript(self, skipped: list[Skipped]) -> Transcript:
        self.flush()
        if not self.messages:
            raise EmptyTranscript(Location(self.path), "no messages in this Copilot CLI session")
        defects = [Defect(v.source, v.kind, v.detail) for v in check_messages(self.messages, "openai")]
        notes = [
            f"system prompt: the last of {self.systems} system.message event(s)"
            if self.systems
            else "the session records no system.message: the system prompt Copilot sent is not counted",
            "Copilot CLI does not record its tool definitions: not counted",
        ]
        if self.transformed:
            notes.append(
                f"{self.transformed} user message(s) read as sent (transformedContent), not as typed (content)"
            )
        if self.reasoning:
            notes.append(
                f"{self.reasoning} assistant message(s) with reasoning: not counted (sent back encrypted, "
                "and a Chat Completions body does not carry it)"
            )
        extra = {k: v for k, v in (("model", self.model),) if v}
        return Transcript(
            system=self.system,
            tools=(),
            messages=tuple(self.messages),
            source=Source(self.path),
            format=NAME,
            dialect="openai",
            skipped=tuple(skipped),
            extra=dumps(extra) if extra else "",
            defects=tuple(defects),
            line_kinds=tuple(sorted(self.kinds.items())),
            notes=tuple(notes),
        )


def _load_history(source: Input, skip_invalid: bool) -> Transcript:
    """The older session document: its ``chatMessages`` are Chat Completions messages."""
    doc = loads_document(source.read_all(), source.path)
    raw = doc.get("chatMessages") if isinstance(doc, dict) else None
    if not isinstance(raw, list):
        raise UnknownShape(Location(source.path, 1), "not a Copilot CLI session: no chatMessages list")
    messages: list[Message] = []
    skipped: list[Skipped] = []
    for index, obj in enumerate(raw):
        try:
            if not isinstance(obj, dict):
                raise UnknownShape(Location(source.path), f"chatMessages[{index}] is not an object")
            messages.append(message_from_json(obj, Source(source.path)))
        except UnknownShape as exc:
            if not skip_invalid:
                raise
            skipped.append(Skipped(Source(source.path), f"chatMessages[{index}]: {exc.message}"))
    if not messages:
        raise EmptyTranscript(Location(source.path), "no messages in this Copilot CLI session")
    timeline = doc.get("timeline")
    kinds: Counter[str] = Counter(
        f"timeline/{e.get('type')}" for e in (timeline if isinstance(timeline, list) else ()) if isinstance(e, dict)
    )
    t = transcript_from_messages(messages, source=Source(source.path), fmt=NAME)
    defects = tuple(Defect(v.source, v.kind, v.detail) for v in check_messages(t.messages, "openai"))
    notes = (
        "older Copilot CLI session document: chatMessages read as Chat Completions messages",
        "Copilot CLI does not record its tool definitions: not counted",
    )
    return replace(t, skipped=tuple(skipped), defects=defects, line_kinds=tuple(sorted(kinds.items())), notes=notes)


def load(source: Input, *, skip_invalid: bool) -> tuple[Transcript, ...]:
    if source.is_document():
        return (_load_history(source, skip_invalid),)
    reader = LineReader(source.path, skip_invalid)
    events = _Events(source.path)
    tail = _Tail()
    for lineno, obj, text in reader.entries(tail.follow(source.lines())):
        try:
            events.read(lineno, obj, text if source.keep_text else None)
        except UnknownShape as exc:
            if not skip_invalid:
                raise
            reader.skipped.append(Skipped(Source(source.path, lineno), exc.message))
    transcript = events.transcript(reader.skipped)
    found = line_defects(reader.skipped, tail)
    return (replace(transcript, defects=tuple(sorted((*found, *transcript.defects), key=_where))),)


def _where(defect: Defect) -> int:
    return defect.source.line or 0


_START = re.compile(rb'"type"\s*:\s*"session\.start"')


def sniff(head: bytes) -> bool:
    """The first line is a ``session.start`` event: ``type`` and ``data`` keys,
    with ``"producer": "copilot-agent"`` or a ``copilotVersion`` in it; or (the
    older document) a ``sessionId`` and ``chatMessages`` or ``timeline``."""
    shape = scan_head(head)
    if shape.opening == "{" and "sessionId" in shape.keys and {"chatMessages", "timeline"} & set(shape.keys):
        return True
    if shape.opening != "{" or (shape.complete and not {"type", "data"} <= set(shape.keys)):
        return False
    first = shape.first_line
    return bool(_START.search(first)) and (b'"copilot-agent"' in first or b'"copilotVersion"' in first)


FORMAT = Format(
    name=NAME,
    description="GitHub Copilot CLI session events (~/.copilot/session-state/<session>/events.jsonl)",
    sniff=sniff,
    load=load,
    records_system=False,
)
