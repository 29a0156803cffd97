"""The "messages" format: JSON Lines with one message per line (Anthropic- or
OpenAI-shaped, ``role: system`` allowed), or one JSON document holding a
request body ``{"system"?, "tools"?, "messages": [...]}`` or a message array."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, BinaryIO

import orjson

from .._json import encode, loads_or_lenient, member_spans, str_field, with_input_texts
from ..errors import EmptyTranscript, FileChanged, Location, UnknownShape
from ..transcript import Block, Dialect, Message, Skipped, Source, ToolCall, ToolDef, Transcript, Verbatim
from ..wire import anthropic, openai
from ..wire.bodies import body_dialect, body_from_transcript, messages_keeping, transcript_from_body
from ..wire.spelling import body_bytes, spelled_request_keys, spelled_tools
from ._document import (
    Buffer,
    FileSpan,
    LineFile,
    LineSpan,
    Spans,
    document_bytes,
    long_line_document,
    mapped_file,
    parse_member,
    release,
    spans_of,
)
from ._jsonl import BOM, LineReader, line_text, loads_document
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
    lines: LineFile | None = None,
) -> Transcript:
    """The transcript of ``items`` (line, value, its JSON text); with ``lines``, the file the texts lie in
    mapped, which each message keeps a ``LineSpan`` of instead of its text."""
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
            message = _with_text(message, text, text if lines is None or line is None else LineSpan(lines, line))
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


def _with_text(message: Message, text: bytes, stored: bytes | LineSpan) -> Message:
    """``message``, read from the JSON ``text``, keeping that text (``stored``: it, or its span of the file)."""
    content = with_input_texts(message.content, text)
    return Message(message.role, content, message.source, message.extra, Verbatim(stored, content))


def message_of_line(text: bytes, source: Source) -> Message:
    """The message of a line's JSON ``text`` as ``load`` reads it, with its text (for ``fit``'s request written a
    line at a time: a message the truncation note joins, ``fitting.columns_fit``)."""
    return _with_text(message_from_json(loads_or_lenient(text), source)[0], text, text)


def _verbatim_system(texts: Iterable[bytes | None], system: tuple[Any, ...]) -> Verbatim | None:
    kept = tuple(t for t in texts if t is not None)
    return Verbatim(kept, system) if kept else None


def _with_verbatim(transcript: Transcript, text: bytes, members: list[tuple[str | None, int, int]]) -> Transcript:
    """``transcript`` (read from a document) with each message's JSON text, and
    the system prompt's, as the document spells them (invariant 9)."""
    return _with_texts(transcript, [text[a:b] for _, a, b in members])


def _with_texts(transcript: Transcript, spans: Sequence[bytes | FileSpan]) -> Transcript:
    """``transcript`` with each message's JSON text given (its bytes, or its span of the mapped file),
    system messages' first."""
    leading = len(spans) - len(transcript.messages)  # OpenAI system messages, now the system prompt
    if leading < 0:
        return transcript
    messages = tuple(
        Message(m.role, content, m.source, m.extra, Verbatim((raw,), content))
        for m, raw in zip(transcript.messages, spans[leading:], strict=True)
        for content in (_input_texts(m.content, raw),)
    )
    system = [s if isinstance(s, bytes) else s.read() for s in spans[:leading]]  # a few system messages
    return replace(transcript, messages=messages, system_verbatim=_verbatim_system(system, transcript.system))


def _input_texts(content: tuple[Block, ...], raw: bytes | FileSpan) -> tuple[Block, ...]:
    """``with_input_texts``, reading a span's text only for a message with tool calls."""
    if isinstance(raw, bytes):
        return with_input_texts(content, raw)
    return with_input_texts(content, raw.read()) if any(isinstance(b, ToolCall) for b in content) else content


def _spans(
    data: bytes, is_array: bool
) -> tuple[bytes, list[tuple[str | None, int, int]], bytes | None, list[tuple[str | None, int, int]]]:
    """The document's text, the spans of its messages, the system value's JSON text (a body's), and the spans
    of the body's own members."""
    text = data[len(BOM) :] if data.startswith(BOM) else data
    top = member_spans(text)
    if is_array:
        return text, top, None, []
    found = {key: (a, b) for key, a, b in top}  # a repeated key: the last one counts, as in the parsed value
    system = text[slice(*found["system"])] if "system" in found else None
    return text, member_spans(text, found["messages"][0]), system, top


def _document(data: bytes, path: str, *, skip_invalid: bool, keep_text: bool = True) -> Transcript:
    value = loads_document(data, path)
    if isinstance(value, dict) and "messages" in value:
        transcript = transcript_from_body(value, source=Source(path), fmt=REQUEST)
        del value  # the parsed document: its strings live on in the blocks, its containers are freed
        if not keep_text:
            return transcript
        try:
            text, members, system, top = _spans(data, False)
        except ValueError:  # a text the standard decoder refuses: written from the model then
            return transcript
        transcript = _with_verbatim(transcript, text, members)
        tools = next((text[a:b] for k, a, b in reversed(top) if k == "tools"), None)
        transcript = replace(
            transcript,
            extra=spelled_request_keys(transcript.extra, ((k, text[a:b]) for k, a, b in top)),
            tools=spelled_tools(transcript.tools, tools, ()),
        )
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
            text, members, _, _ = _spans(data, True)
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


def _one_line(source: Input, *, skip_invalid: bool) -> Transcript | None:
    """A document alone on one long line, read member by member from the file's pages (handed back as they
    are read) instead of parsed whole: the file's bytes, the parser's work and the strings are never all held
    at once. The same transcript as ``_document``; None where that reading must decide (not such a document,
    a text the scan cannot vouch for, a single message)."""
    spans = spans_of(source)
    if spans is None or not spans.has_messages:
        return None
    mapped = mapped_file(source) if source.keep_text else None
    with document_bytes(source) as buf:
        path, keep_text = source.path, source.keep_text
        texts: list[bytes | FileSpan] = []  # each message's JSON text, for a writer: left in the file if mapped
        values = []
        for a, b in spans.elements:
            raw = buf[a:b]
            values.append(parse_member(raw, path, 2))
            release(buf, b)
            if keep_text:
                texts.append(raw if mapped is None else FileSpan(mapped, a, b))
            del raw
        if spans.opening == b"[":
            transcript = transcript_from_objects(
                ((None, m, None) for m in values), path, skip_invalid=skip_invalid, skipped=[]
            )
            del values
            if transcript.skipped or not keep_text:
                return transcript
            return _with_texts(transcript, texts)
        body = _head(buf, spans, path)
        body["messages"] = values
        del values
        transcript = transcript_from_body(body, source=Source(path), fmt=REQUEST)
        del body
        if not keep_text:
            return transcript
        transcript = _with_texts(transcript, texts)
        del texts
        keys = ((key, buf[a:b]) for key, a, b in spans.members if key != "messages")
        tools = next((buf[a:b] for key, a, b in reversed(spans.members) if key == "tools"), None)
        transcript = replace(
            transcript,
            extra=spelled_request_keys(transcript.extra, keys),
            tools=spelled_tools(transcript.tools, None if tools is None else bytes(tools), ()),
        )
        found = next(((a, b) for key, a, b in spans.members if key == "system"), None)
        if found is not None and transcript.dialect == "anthropic":
            system = buf[found[0] : found[1]] if mapped is None else FileSpan(mapped, *found)
            transcript = replace(transcript, system_verbatim=Verbatim((system,), transcript.system))
        return transcript


def _head(buf: Buffer, spans: Spans, path: str) -> dict[str, Any]:
    """A body's members but its messages (an empty list in their place)."""
    return {key or "": [] if key == "messages" else parse_member(buf[a:b], path, 1) for key, a, b in spans.members}


def load(source: Input, *, skip_invalid: bool) -> tuple[Transcript, ...]:
    long_line = long_line_document(source)
    if long_line if long_line is not None else source.is_document():
        fast = _one_line(source, skip_invalid=skip_invalid) if long_line else None
        if fast is not None:
            return (fast,)
        return (_document(source.read_all(), source.path, skip_invalid=skip_invalid, keep_text=source.keep_text),)
    reader = LineReader(source.path, skip_invalid)
    found = mapped_file(source, LineFile) if source.keep_text else None
    lines = found if isinstance(found, LineFile) else None
    transcript = transcript_from_objects(
        reader.entries(source.lines() if lines is None else lines.track(source.lines())),
        source.path,
        skip_invalid=skip_invalid,
        skipped=reader.skipped,
        keep_text=source.keep_text,
        lines=lines,
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
        return body_bytes(body, transcript.extra)
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


# --------------------------------------------------------------------------
# Streaming: one message at a time, for commands that keep only a summary


@dataclass(slots=True)
class MessageStream:
    """A messages file read one message at a time, none of them kept: iterate ``messages`` once, then
    ``header()`` is the transcript ``load`` gives without its messages (system prompt, tools, dialect, skipped
    lines). Loading the file instead gives the same messages, in order (``fitting.report.fold_report``)."""

    path: str
    fmt: str
    messages: Iterator[Message]
    tools: tuple[ToolDef, ...] = ()
    extra: str = ""
    system: list[Block] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    dialect: Dialect = "anthropic"
    plain: Callable[[Message], bool] | None = None
    """With ``keep_text``: the messages that keep no text. Of each, ``check`` is the ``text_check`` of its
    JSON text while it is the message the stream yielded last (a caller that writes it reads it again)."""
    check: int = -1

    def header(self) -> Transcript:
        system, skipped = tuple(self.system), tuple(self.skipped)
        return Transcript(system, self.tools, (), Source(self.path), self.fmt, self.dialect, skipped, self.extra)


def stream(
    source: Input, *, skip_invalid: bool, keep_text: bool = False, plain: Callable[[Message], bool] | None = None
) -> MessageStream | None:
    """``source`` (in this format) as a stream of its messages; None where only ``load`` reads it (a document
    over several lines, a single message, a text the scan cannot vouch for). An error it raises is one
    ``load`` may word differently: a caller that wants ``load``'s words loads the file again. With
    ``keep_text`` (JSON Lines only: None for a document), each message holds its line's JSON text as ``load``
    reads it (``Verbatim``, invariant 9), as bytes: the stream does not keep the message. Except, with
    ``plain``, the messages it holds true of: they keep only ``MessageStream.check``."""
    long_line = long_line_document(source)
    if not (long_line if long_line is not None else source.is_document()):
        reader = LineReader(source.path, skip_invalid)
        found = MessageStream(source.path, NAME, iter(()), skipped=reader.skipped, plain=plain)
        objects = ((line, obj, text if keep_text else None) for line, obj, text in reader.entries(source.lines()))
        found.messages = _objects(found, objects, skip_invalid=skip_invalid, openai_leading=True)
        return found
    if not long_line or keep_text:
        return None
    spans = spans_of(source)
    if spans is None or not spans.has_messages:
        return None
    with document_bytes(source) as buf:
        head = _head(buf, spans, source.path) if spans.opening == b"{" else None
    found = MessageStream(source.path, NAME if head is None else REQUEST, iter(()))
    values = _elements(source, spans)
    if head is None:
        found.messages = _objects(
            found, ((None, v, None) for v in values), skip_invalid=skip_invalid, openai_leading=True
        )
        return found
    if "system" in head:
        dialect: Dialect = "anthropic"
    elif any(isinstance(m, dict) and (openai.looks_openai(m) or m.get("role") == "system") for m in values):
        dialect = "openai"  # the body's dialect is told by any of its messages: one pass to find it
    else:
        dialect = body_dialect(head)
    empty = transcript_from_body(head, dialect=dialect, source=Source(source.path), fmt=REQUEST)
    found.tools, found.extra, found.system, found.dialect = empty.tools, empty.extra, list(empty.system), dialect
    found.messages = _body_messages(found, _elements(source, spans), dialect)
    return found


def _elements(source: Input, spans: Spans) -> Iterator[Any]:
    """The document's messages, parsed one at a time, the pages behind handed back."""
    with document_bytes(source) as buf:
        for a, b in spans.elements:
            value = parse_member(buf[a:b], source.path, 2)
            release(buf, b)
            yield value


def _body_messages(found: MessageStream, values: Iterator[Any], dialect: Dialect) -> Iterator[Message]:
    source = Source(found.path)
    where = Location(found.path)
    leading = dialect == "openai"
    for value in values:
        if not isinstance(value, dict):
            raise UnknownShape(where, "each message must be an object")
        if dialect == "anthropic":
            yield anthropic.message_from_json(value, source)
            continue
        message = openai.message_from_json(value, source)
        if leading and message.role == "system":
            found.system.extend(message.content)
            continue
        leading = False
        yield message


def _objects(
    found: MessageStream,
    objects: Iterable[tuple[int | None, Any, bytes | None]],
    *,
    skip_invalid: bool,
    openai_leading: bool,
) -> Iterator[Message]:
    """``transcript_from_objects`` one message at a time: leading system messages go to the system prompt.
    A message given its JSON text keeps it, as ``transcript_from_objects`` keeps it."""
    dialects: set[Dialect] = set()
    leading, any_message = openai_leading, False
    for line, obj, text in objects:
        source = Source(found.path, line)
        try:
            message, dialect = message_from_json(obj, source)
        except UnknownShape as exc:
            if not skip_invalid:
                raise
            found.skipped.append(Skipped(source, exc.message))
            continue
        if text is not None:
            if found.plain is not None and found.plain(message):
                found.check = text_check(text)
            else:
                content = with_input_texts(message.content, text)
                message = Message(message.role, content, source, message.extra, Verbatim(text, content))
        any_message = True
        if dialect:
            dialects.add(dialect)
        found.dialect = "openai" if "openai" in dialects else "anthropic"
        if leading and message.role == "system":
            found.system.extend(message.content)
            continue
        leading = False
        yield message
    if not any_message:
        raise EmptyTranscript(Location(found.path), "no messages found", hint="is this the right file?")


def stream_messages(
    source: Input,
    fmt: str,
    *,
    skip_invalid: bool,
    keep_text: bool = False,
    plain: Callable[[Message], bool] | None = None,
) -> MessageStream | None:
    """``source``, detected as ``fmt``, as a stream of messages when ``load`` would read it as this format:
    a messages file, or the bare request body the request-log format hands over; else None."""
    from . import anthropic_log  # it imports this module

    if fmt == NAME or (fmt == anthropic_log.NAME and anthropic_log.hands_over(source)):
        return stream(source, skip_invalid=skip_invalid, keep_text=keep_text, plain=plain)
    return None


def write_lines(header: Transcript, messages: Iterable[Message | bytes]) -> Iterator[bytes]:
    """``write`` of ``header`` with ``messages`` as its messages, a line at a time, for messages JSON Lines
    without a system prompt read from the file (``header.system_verbatim`` is None; a notice may be there):
    the same bytes, without holding the messages (``fitting.columns_fit``). A message given as bytes is the
    JSON text of one the fit left alone, as the file spelled it: written as it is."""
    if header.format == REQUEST or header.messages or header.system_verbatim is not None:
        raise ValueError("write_lines writes messages JSON Lines from a header without messages")
    body = body_from_transcript(header)
    if header.dialect == "openai":
        system: list[Any] = body["messages"][: 1 if header.system else 0]
    else:
        system = [{"role": "system", "content": body["system"]}] if "system" in body else []
    for line in system:
        yield encode(line) + b"\n"
    build = anthropic.messages_to_json if header.dialect == "anthropic" else openai.messages_to_json
    run: list[Message] = []  # as ``messages_keeping``: the messages without their text, built together
    for message in messages:
        exact = message if isinstance(message, bytes) else _exact(message)
        if exact is None:
            assert isinstance(message, Message)
            run.append(message)
            continue
        if run:
            for built in build(tuple(run), same_dialect=True, exact=True):
                yield encode(built) + b"\n"
            run.clear()
        yield (exact if isinstance(exact, bytes) else encode(exact)) + b"\n"
    for built in build(tuple(run), same_dialect=True, exact=True):
        yield encode(built) + b"\n"


def text_check(text: bytes) -> int:
    """What ``LineTexts`` checks a line's text against: its CRC-32."""
    return zlib.crc32(text)


class LineTexts:
    """The JSON text of lines of a JSON Lines file read again, asked for in the order of their numbers, each
    checked against the ``text_check`` its text had when it was first read; ``close`` when done. Raises
    ``FileChanged`` (located at the line) where the file no longer holds that text: it changed in between."""

    __slots__ = ("_at", "_file", "_source")

    def __init__(self, source: Input) -> None:
        self._source = source
        self._file: BinaryIO | None = None
        self._at = 0

    def text(self, number: int, check: int) -> bytes:
        """Line ``number``'s text (a later line than any asked for before)."""
        if self._file is None:
            self._file = self._source.open()  # the lines ``Input.lines`` gives
        for raw in self._file:
            self._at += 1
            if self._at == number:
                text = line_text(number, raw)
                if text_check(text) != check:
                    raise self.changed(number, "this line is not what it was")
                return text
        raise self.changed(number, "this line is gone")

    def changed(self, number: int | None, what: str) -> FileChanged:
        return file_changed(self._source.path, number, what)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def file_changed(path: str, line: int | None, what: str) -> FileChanged:
    """The error for a file that changed since it was first read (``what`` says how it was found)."""
    where = Location(path, line)
    return FileChanged(where, f"changed while windowfit read it: {what}", hint=CHANGED_HINT)


CHANGED_HINT = "run it again once nothing is writing to the file"
