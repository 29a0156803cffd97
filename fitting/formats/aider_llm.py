"""The "aider_llm" format: the requests aider sent, as it logs them with
``--llm-history-file`` (``.aider.llm.history`` by convention). aider's
``InputOutput.log_llm_history`` appends a header line ``<KIND> <timestamp>``
(``TO LLM`` before each request, ``LLM RESPONSE`` after it) and then the
content; ``utils.format_messages`` writes a request as one ``-------`` line per
message followed by its content, every line prefixed with the role in capitals
(``SYSTEM``, ``USER``, ``ASSISTANT``); ``format_content("ASSISTANT", ...)``
writes a response the same way. Each request is a transcript (a request log:
``replay`` replays them); the responses are not part of it, and no token
counts are logged."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import EmptyTranscript, InvalidUtf8, Location
from ..transcript import Source, Transcript
from ..wire import openai
from .base import Format, Input

NAME = "aider_llm"
HEADER = re.compile(r"^(TO LLM|LLM RESPONSE) (\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\s*$")
SEPARATOR = "-------"
ROLES = {"SYSTEM": "system", "USER": "user", "ASSISTANT": "assistant"}
_LIST_ITEM = re.compile(r"^(type|text|[A-Za-z_]+ URL|[a-z_]+): ?(.*)$", re.DOTALL)


def sniff(head: bytes) -> bool:
    """A first line ``TO LLM <timestamp>`` or ``LLM RESPONSE <timestamp>``: nothing else starts so."""
    first = head.lstrip(b"\r\n").split(b"\n", 1)[0].decode("utf-8", errors="replace")
    return HEADER.match(first.rstrip("\r")) is not None


@dataclass(slots=True)
class _Message:
    role: str
    line: int
    lines: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Request:
    line: int
    timestamp: str
    messages: list[_Message] = field(default_factory=list)
    responded: bool = False


def _strip_role(line: str, role: str) -> str | None:
    """The line without its ``ROLE `` prefix, or None when it has none (a continuation line)."""
    if line == role:
        return ""
    return line[len(role) + 1 :] if line.startswith(role + " ") else None


def _content(message: _Message) -> Any:
    """The message's content: the text, or the parts of a list content (``type: ...`` items)."""
    if not message.lines or not message.lines[0].startswith("type: "):
        return "\n".join(message.lines)
    parts: list[dict[str, Any]] = []
    key, value = "", ""

    def flush() -> None:
        if key == "text":
            parts.append({"type": "text", "text": value})
        elif key.endswith(" URL"):
            parts.append({"type": "image_url", "image_url": {"url": value}})
        elif key and key != "type":
            parts.append({"type": "text", "text": f"{key}: {value}"})

    for line in message.lines:
        match = _LIST_ITEM.match(line)
        if match:
            flush()
            key, value = match.group(1), match.group(2)
        else:
            value += "\n" + line
    flush()
    return parts


def _requests(lines: list[str]) -> tuple[list[_Request], int]:
    """The logged requests, and how many lines came before the first header."""
    requests: list[_Request] = []
    current: _Request | None = None
    in_response = False
    preamble = 0
    for number, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        header = HEADER.match(line)
        if header:
            if header.group(1) == "TO LLM":
                current = _Request(number, header.group(2))
                requests.append(current)
                in_response = False
            else:
                in_response = True
                if current is not None:
                    current.responded = True
            continue
        if current is None:
            preamble += bool(line.strip())
            continue
        if in_response:
            continue
        if line == SEPARATOR:
            current.messages.append(_Message("", number + 1))
            continue
        if not current.messages:
            current.messages.append(_Message("", number))
        message = current.messages[-1]
        if not message.role:
            word = line.split(" ", 1)[0]
            if word in ROLES:
                message.role = word
                message.line = number
        stripped = _strip_role(line, message.role) if message.role else None
        message.lines.append(stripped if stripped is not None else line)
    return requests, preamble


def load(source: Input, *, skip_invalid: bool) -> tuple[Transcript, ...]:
    del skip_invalid  # a text log has no line that cannot be read, once it is UTF-8
    data = source.read_all()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvalidUtf8(
            Location(source.path, line), "not UTF-8 text", hint="aider writes UTF-8: convert the file first"
        ) from None
    requests, preamble = _requests(text.splitlines())
    transcripts: list[Transcript] = []
    for n, request in enumerate(requests, 1):
        src = Source(source.path, request.line)
        messages = [
            openai.message_from_json({"role": ROLES[m.role], "content": _content(m)}, Source(source.path, m.line))
            for m in request.messages
            if m.role and any(x.strip() for x in m.lines)
        ]
        if not any(m.role != "system" for m in messages):
            continue
        t = openai.transcript_from_messages(messages, source=src, fmt=NAME)
        transcripts.append(replace(t, name=f"request {n} (line {request.line}, {request.timestamp})"))
    if not transcripts:
        raise EmptyTranscript(
            Location(source.path), "no 'TO LLM' request with messages in this file", hint="is this the right file?"
        )
    notes = [
        "each logged request is a transcript of its own; aider's log records no token counts",
        "aider rebuilds each request (the files in the chat come after the earlier turns), so replay groups its "
        "requests by turn",
    ]
    if preamble:
        notes.append(f"{preamble} line(s) before the first 'TO LLM' header are left out")
    transcripts[0] = replace(transcripts[0], notes=tuple(notes))
    return tuple(transcripts)


FORMAT = Format(
    name=NAME,
    description="aider's LLM history (--llm-history-file, .aider.llm.history): the requests it sent",
    sniff=sniff,
    load=load,
    scan_names=("*.llm.history",),
    records_requests=True,
)
