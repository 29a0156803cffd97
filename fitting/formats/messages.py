"""The "messages" format: JSON Lines with one message per line (Anthropic- or
OpenAI-shaped, ``role: system`` allowed), or one JSON document holding a
request body ``{"system"?, "tools"?, "messages": [...]}`` or a message array."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import orjson

from .._json import encode, member_spans, str_field, with_input_texts
from ..errors import EmptyTranscript, Location, UnknownShape
from ..transcript import Dialect, Message, Skipped, Source, Transcript, Verbatim
from ..wire import anthropic, openai
from ..wire.bodies import body_from_transcript, messages_keeping, transcript_from_body
from ._jsonl import BOM, LineReader, loads_document
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
    items: Iterable[tuple[int | None, Any, bytes | None]],
    path: str,
    *,
    skip_invalid: bool,
    skipped: list[Skipped],
    fmt: str = NAME,
    keep_text: bool = True,
) -> Transcript:
    messages: list[Message] = []
    dialects: set[Dialect] = set()
    for line, obj, text in items:
        source = Source(path, line)
        try:
            message, dialect = message_from_json(obj, source)
        except UnknownShape as exc:
            if not skip_invalid:
                raise
            skipped.append(Skipped(source, exc.message))
            continue
        if text is not None and keep_text:
            content = with_input_texts(message.content, text)
            message = Message(message.role, content, source, message.extra, Verbatim((text,), content))
        messages.append(message)
        if dialect:
            dialects.add(dialect)
    if not messages:
        raise EmptyTranscript(Location(path), "no messages found", hint="is this the right file?")
    transcript = openai.transcript_from_messages(messages, source=Source(path), fmt=fmt)
    found: Dialect = "openai" if "openai" in dialects else "anthropic"
    leading = messages[: len(messages) - len(transcript.messages)]  # system messages, now the system prompt
    texts = tuple(m.exact_json for m in leading)
    return Transcript(
        transcript.system,
        transcript.tools,
        transcript.messages,
        transcript.source,
        fmt,
        found,
        tuple(skipped),
        system_verbatim=_verbatim_system(texts, transcript.system),
    )


def _verbatim_system(texts: Iterable[bytes | None], system: tuple[Any, ...]) -> Verbatim | None:
    kept = tuple(t for t in texts if t is not None)
    return Verbatim(kept, system) if kept else None


def _with_verbatim(transcript: Transcript, text: bytes, members: list[tuple[str | None, int, int]]) -> Transcript:
    """``transcript`` (read from a document) with each message's JSON text, and
    the system prompt's, as the document spells them (invariant 9)."""
    leading = len(members) - len(transcript.messages)  # OpenAI system messages, now the system prompt
    if leading < 0:
        return transcript
    spans = [text[a:b] for _, a, b in members]
    messages = tuple(
        Message(m.role, content, m.source, m.extra, Verbatim((raw,), content))
        for m, raw in zip(transcript.messages, spans[leading:], strict=True)
        for content in (with_input_texts(m.content, raw),)
    )
    return replace(transcript, messages=messages, system_verbatim=_verbatim_system(spans[:leading], transcript.system))


def _spans(data: bytes, is_array: bool) -> tuple[bytes, list[tuple[str | None, int, int]], bytes | None]:
    """The document's text, the spans of its messages, and the system value's JSON text (a body's)."""
    text = data[len(BOM) :] if data.startswith(BOM) else data
    top = member_spans(text)
    if is_array:
        return text, top, None
    found = {key: (a, b) for key, a, b in top}  # a repeated key: the last one counts, as in the parsed value
    system = text[slice(*found["system"])] if "system" in found else None
    return text, member_spans(text, found["messages"][0]), system


def _document(data: bytes, path: str, *, skip_invalid: bool, keep_text: bool = True) -> Transcript:
    value = loads_document(data, path)
    if isinstance(value, dict) and "messages" in value:
        transcript = transcript_from_body(value, source=Source(path), fmt=REQUEST)
        del value  # the parsed document: its strings live on in the blocks, its containers are freed
        if not keep_text:
            return transcript
        try:
            text, members, system = _spans(data, False)
        except ValueError:  # a text the standard decoder refuses: written from the model then
            return transcript
        transcript = _with_verbatim(transcript, text, members)
        if system is not None and transcript.dialect == "anthropic":
            transcript = replace(transcript, system_verbatim=Verbatim((system,), transcript.system))
        return transcript
    if isinstance(value, list):
        with_texts = transcript_from_objects(
            ((None, m, None) for m in value), path, skip_invalid=skip_invalid, skipped=[]
        )
        # Skipped items (--skip-invalid) break the pairing of items and messages: keep no text then.
        if with_texts.skipped or not keep_text:
            return with_texts
        try:
            text, members, _ = _spans(data, True)
        except ValueError:
            return with_texts
        return _with_verbatim(with_texts, text, members)
    if isinstance(value, dict) and "role" in value:
        raw = data[len(BOM) :].strip() if data.startswith(BOM) else data.strip()
        return transcript_from_objects(
            [(1, value, raw)], path, skip_invalid=skip_invalid, skipped=[], keep_text=keep_text
        )
    raise UnknownShape(
        Location(path),
        "not a request body, a message array or a message",
        hint="see the README's list of formats, or pass --from",
    )


def load(source: Input, *, skip_invalid: bool) -> tuple[Transcript, ...]:
    if source.is_document():
        return (_document(source.read_all(), source.path, skip_invalid=skip_invalid, keep_text=source.keep_text),)
    reader = LineReader(source.path, skip_invalid)
    transcript = transcript_from_objects(
        reader.entries(source.lines()),
        source.path,
        skip_invalid=skip_invalid,
        skipped=reader.skipped,
        keep_text=source.keep_text,
    )
    return (transcript,)


def sniff(head: bytes) -> bool:
    text = head.lstrip()
    while text.startswith(b"//"):  # comment lines, which the line reader skips
        text = text.partition(b"\n")[2].lstrip()
    return text.startswith((b"{", b"[")) and (b'"role"' in head or b'"messages"' in head)


def _exact(message: Message) -> orjson.Fragment | None:
    exact = message.exact_json
    return None if exact is None else orjson.Fragment(exact)


def write(transcript: Transcript) -> bytes:
    """The fitted transcript in the shape it was read: a request body read
    stays a body; messages are written one per line, an Anthropic system prompt
    on a first ``role: system`` line. What the fit did not change (each message,
    the system prompt) is written as the file spelled it (invariant 9)."""
    body = body_from_transcript(transcript)
    kept = transcript.system_verbatim.of(transcript.system) if transcript.system_verbatim else None
    system: list[Any] | None = [orjson.Fragment(t) for t in kept] if kept is not None else None
    messages = messages_keeping(transcript, _exact)
    built_system = body["messages"][: 1 if transcript.system else 0]  # OpenAI: the first message
    if transcript.format == REQUEST:
        if transcript.dialect == "openai":
            body["messages"] = [*(built_system if system is None else system), *messages]
        else:
            if system is not None:
                body["system"] = system[0]  # a body's system value, as the file spelled it
            body["messages"] = messages
        return encode(body, indent=True) + b"\n"
    if system is None and transcript.dialect == "openai":
        system = built_system
    elif system is None:
        system = [{"role": "system", "content": body["system"]}] if "system" in body else []
    return b"".join(encode(line) + b"\n" for line in (*system, *messages))


FORMAT = Format(
    name=NAME,
    description="messages JSONL (one Anthropic or OpenAI message per line) or one request body / message array",
    sniff=sniff,
    load=load,
    write=write,
    variants=(REQUEST,),
)
