"""The "messages" format: JSON Lines with one message per line (Anthropic- or
OpenAI-shaped, ``role: system`` allowed), or one JSON document holding a
request body ``{"system"?, "tools"?, "messages": [...]}`` or a message array."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from .._json import str_field
from ..errors import EmptyTranscript, Location, UnknownShape
from ..transcript import Dialect, Message, Skipped, Source, Transcript
from ..wire import anthropic, openai
from ..wire.bodies import body_from_transcript, transcript_from_body
from ._jsonl import LineReader, loads_document
from .base import Format, Input

NAME = "messages"
REQUEST = "request"
"""The ``Transcript.format`` of a request body read from a file (or given to ``fit_request``)."""


def message_from_json(obj: Any, source: Source) -> tuple[Message, Dialect | None]:
    """One message object of either dialect; the dialect it revealed, if any."""
    if not isinstance(obj, dict) or "role" not in obj:
        raise UnknownShape(
            Location(source.path, source.line),
            "not a message: expected an object with a 'role'",
            hint="see the README's list of formats, or pass --from",
        )
    if str_field(obj, "role") in ("system", "developer") or openai.looks_openai(obj):
        return openai.message_from_json(obj, source), "openai" if obj.get("role") != "system" else None
    message = anthropic.message_from_json(obj, source)
    return message, "anthropic" if anthropic.looks_anthropic(obj) else None


def transcript_from_objects(
    items: Iterable[tuple[int | None, Any]],
    path: str,
    *,
    skip_invalid: bool,
    skipped: list[Skipped],
    fmt: str = NAME,
) -> Transcript:
    messages: list[Message] = []
    dialects: set[Dialect] = set()
    for line, obj in items:
        source = Source(path, line)
        try:
            message, dialect = message_from_json(obj, source)
        except UnknownShape as exc:
            if not skip_invalid:
                raise
            skipped.append(Skipped(source, exc.message))
            continue
        messages.append(message)
        if dialect:
            dialects.add(dialect)
    if not messages:
        raise EmptyTranscript(Location(path), "no messages found", hint="is this the right file?")
    transcript = openai.transcript_from_messages(messages, source=Source(path), fmt=fmt)
    found: Dialect = "openai" if "openai" in dialects else "anthropic"
    return Transcript(
        transcript.system, transcript.tools, transcript.messages, transcript.source, fmt, found, tuple(skipped)
    )


def _document(data: bytes, path: str, *, skip_invalid: bool) -> Transcript:
    value = loads_document(data, path)
    if isinstance(value, dict) and "messages" in value:
        return transcript_from_body(value, source=Source(path), fmt=REQUEST)
    if isinstance(value, list):
        return transcript_from_objects(((None, m) for m in value), path, skip_invalid=skip_invalid, skipped=[])
    if isinstance(value, dict) and "role" in value:
        return transcript_from_objects([(1, value)], path, skip_invalid=skip_invalid, skipped=[])
    raise UnknownShape(
        Location(path),
        "not a request body, a message array or a message",
        hint="see the README's list of formats, or pass --from",
    )


def load(source: Input, *, skip_invalid: bool) -> tuple[Transcript, ...]:
    if source.is_document():
        return (_document(source.read_all(), source.path, skip_invalid=skip_invalid),)
    reader = LineReader(source.path, skip_invalid)
    transcript = transcript_from_objects(
        reader.values(source.lines()), source.path, skip_invalid=skip_invalid, skipped=reader.skipped
    )
    return (transcript,)


def sniff(head: bytes) -> bool:
    text = head.lstrip()
    while text.startswith(b"//"):  # comment lines, which the line reader skips
        text = text.partition(b"\n")[2].lstrip()
    return text.startswith((b"{", b"[")) and (b'"role"' in head or b'"messages"' in head)


def write(transcript: Transcript) -> bytes:
    """The fitted transcript in the shape it was read: a request body read
    stays a body; messages are written one per line, an Anthropic system prompt
    on a first ``role: system`` line."""
    body = body_from_transcript(transcript)
    if transcript.format == REQUEST:
        return orjson.dumps(body, option=orjson.OPT_INDENT_2) + b"\n"
    lines = []
    if transcript.dialect == "anthropic" and "system" in body:
        lines.append({"role": "system", "content": body["system"]})
    lines.extend(body["messages"])
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


FORMAT = Format(
    name=NAME,
    description="messages JSONL (one Anthropic or OpenAI message per line) or one request body / message array",
    sniff=sniff,
    load=load,
    write=write,
    variants=(REQUEST,),
)
