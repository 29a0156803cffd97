"""Private: reading one large JSON document piece by piece (the members of its
top-level array or object, each with the line it starts on, without holding the
file), and telling a JSON document from JSON Lines."""

from __future__ import annotations

import codecs
import json
import mmap
import os
import re
import sys
from array import array
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO, TypeAlias

import orjson

from .._frozen import frozen
from .._json import _STRING_RE, LENIENT_DECODER, MAX_DEPTH, _value_end, check_depth, depth_error, loads_or_lenient
from ..errors import InvalidJson, InvalidUtf8, Location
from ._jsonl import BOM
from ._sniff import scan_head
from .base import SNIFF_BYTES, Input

CHUNK_CHARS = 1 << 20
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = LENIENT_DECODER  # 1E400 kept as it is spelled, not read as inf (which JSON writes as null)
_BLANK_BYTES = re.compile(rb"[ \t\r\n]*")
Buffer: TypeAlias = bytes | mmap.mmap
"""A document's bytes: read (stdin) or a mapped file; both slice into bytes."""


@frozen
class Member:
    """One member of a container: its key (None in an array), value, the line its
    value starts on, and its JSON text (to locate what is inside it)."""

    key: str | None
    value: Any
    line: int
    text: str


def _invalid(path: str, line: int, column: int | None, what: str) -> InvalidJson:
    return InvalidJson(Location(path, line, column), f"invalid JSON: {what}")


class _Buffer:
    """Decoded text read ahead from a stream. Text already consumed is dropped
    only when more is read, and lines are counted forward from a mark, so many
    small members cost linear time."""

    def __init__(self, stream: BinaryIO, path: str) -> None:
        self.stream = stream
        self.path = path
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.text = ""
        self.pos = 0
        self.eof = False
        self.mark = 0
        """An offset in ``text`` at or before ``pos`` ..."""
        self.mark_line = 1
        """... and the line it is on."""
        self.column = 0
        """0-based column of ``text[0]`` in its line."""

    def line_at(self, pos: int) -> int:
        """The 1-based line of ``text[pos]``, for ``pos`` at or after the mark (which moves there)."""
        self.mark_line += self.text.count("\n", self.mark, pos)
        self.mark = pos
        return self.mark_line

    def where(self, pos: int) -> tuple[int, int]:
        """The 1-based line and column of ``text[pos]``."""
        newline = self.text.rfind("\n", 0, pos)
        return self.line_at(pos), pos - newline if newline >= 0 else self.column + pos + 1

    def fill(self, chars: int = CHUNK_CHARS) -> None:
        """Drop the text consumed, then read at least ``chars`` more characters' worth."""
        if self.pos:
            line, column = self.where(self.pos)
            self.text, self.pos, self.mark, self.mark_line, self.column = self.text[self.pos :], 0, 0, line, column - 1
        data = self.stream.read(max(chars, CHUNK_CHARS))
        try:
            self.text += self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            raise InvalidUtf8(
                Location(self.path, self.line_at(len(self.text))),
                f"invalid UTF-8 (byte 0x{exc.object[exc.start]:02x})",
                hint="convert the file to UTF-8 first",
            ) from None
        self.eof = not data

    def peek(self) -> str:
        """The next non-blank character ("" at the end of the input)."""
        while True:
            self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.text) or self.eof:
                return self.text[self.pos : self.pos + 1]
            self.fill()

    def expect(self, chars: str) -> str:
        found = self.peek()
        if not found or found not in chars:
            raise _invalid(self.path, *self.where(self.pos), f"expected {' or '.join(map(repr, chars))}")
        self.pos += 1
        return found

    def value(self) -> tuple[Any, int, str]:
        """The next JSON value, the line it starts on, and its text."""
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                if self.eof:
                    raise _invalid(self.path, *self.where(exc.pos), exc.msg) from None
                self.fill(len(self.text) - self.pos)  # doubling: a huge value is re-read O(log n) times
                continue
            # A number cut at the end of the text read so far would parse as a shorter one.
            if end < len(self.text) or self.eof:
                start, self.pos = self.pos, end
                return value, self.line_at(start), self.text[start:end]
            self.fill()


def iter_members(stream: BinaryIO, path: str) -> Iterator[Member]:
    """The members of the document's top-level array or object, in order. A
    document that is neither yields one member holding the whole value."""
    buf = _Buffer(stream, path)
    first = buf.peek()
    if first not in ("[", "{"):
        value, line, text = buf.value()
        yield Member(None, check_depth(value, Location(path, line), text), line, text)
    else:
        buf.pos += 1
        closing = "]" if first == "[" else "}"
        if buf.peek() == closing:
            buf.pos += 1
        else:
            while True:
                key: str | None = None
                if first == "{":
                    raw_key, _, _ = buf.value()
                    if not isinstance(raw_key, str):
                        raise _invalid(path, *buf.where(buf.pos), "an object key must be a string")
                    key = raw_key
                    buf.expect(":")
                value, line, text = buf.value()
                yield Member(key, check_depth(value, Location(path, line), text), line, text)
                if buf.expect("," + closing) == closing:
                    break
    if buf.peek():
        raise _invalid(path, *buf.where(buf.pos), "extra data after the document")


def locate_members(text: str, start: int = 0) -> Iterator[tuple[str | None, int, Any]]:
    """The members of the array or object that opens at ``text[start]`` (after
    blanks): each one's key (None in an array), offset in ``text`` and value."""
    for key, pos, _, value in locate_spans(text, start):
        yield key, pos, value


def locate_spans(text: str, start: int = 0) -> Iterator[tuple[str | None, int, int, Any]]:
    """``locate_members``, with where each value's text ends."""
    pos = _WS.match(text, start).end()  # type: ignore[union-attr]
    opening = text[pos : pos + 1]
    if opening not in ("[", "{"):
        return
    closing = "]" if opening == "[" else "}"
    pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    if text[pos : pos + 1] == closing:
        return
    while True:
        key: str | None = None
        if opening == "{":
            key, pos = _DECODER.raw_decode(text, pos)
            pos = _WS.match(text, pos).end() + 1  # type: ignore[union-attr]  # past ':'
            pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        value, end = _DECODER.raw_decode(text, pos)
        yield key, pos, end, value
        pos = _WS.match(text, end).end()  # type: ignore[union-attr]
        if text[pos : pos + 1] != ",":
            return
        pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]


def is_document(source: Input) -> bool:
    """Whether the input is one JSON document rather than JSON Lines, from its
    first bytes when they tell (reading the first line only when they do not)."""
    head = source.head()
    if head.lstrip().startswith(b"//"):
        return False  # comment lines: JSON Lines
    shape = scan_head(head)
    if shape.more:
        return False
    if shape.multiline or (shape.complete and len(head) < SNIFF_BYTES):
        return True
    found = long_line_document(source)
    return source.is_document() if found is None else found


# --------------------------------------------------------------------------
# One document on one long line, read from its bytes member by member


@contextmanager
def document_bytes(source: Input) -> Iterator[Buffer]:
    """The input's bytes: stdin's as read, a file's mapped rather than read (a 500 MB body is not copied into
    the process; the pages it touches can be handed back with ``release``)."""
    if source.data is not None:
        yield source.data
        return
    with open(source.path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if not size:
            yield b""
            return
        try:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # a file system that cannot map it: read it then
            mapped = None
        if mapped is None:
            yield f.read()
            return
        with mapped:
            yield mapped


class MappedFile:
    """A file kept mapped after loading, for the JSON texts a writer may ask for (``FileSpan``): a loader
    that keeps them as bytes holds a second copy of the file (issue 11, item 5)."""

    __slots__ = ("_map",)

    def __init__(self, mapped: mmap.mmap) -> None:
        self._map = mapped

    def text(self, start: int, stop: int) -> bytes:
        """The bytes ``[start, stop)``; the pages behind are handed back once copied."""
        data = self._map[start:stop]
        if hasattr(mmap, "MADV_DONTNEED"):
            first = start - start % mmap.PAGESIZE
            if stop > first:
                self._map.madvise(mmap.MADV_DONTNEED, first, min(stop, len(self._map)) - first)
        return data


@dataclass(frozen=True, slots=True, eq=False)
class FileSpan:
    """One JSON value's text left in a mapped file (``transcript.StoredText``)."""

    file: MappedFile
    start: int
    stop: int

    def read(self) -> bytes:
        return self.file.text(self.start, self.stop)

    def __reduce__(self) -> tuple[type[bytes], tuple[bytes]]:
        return bytes, (self.read(),)  # pickled (sent to another process) as the bytes: a map does not travel


class LineFile(MappedFile):
    """A mapped JSON Lines file and where each line's JSON text lies in it (``LineSpan``): two machine
    integers a line instead of the line's bytes."""

    __slots__ = ("starts", "stops")

    def __init__(self, mapped: mmap.mmap) -> None:
        super().__init__(mapped)
        self.starts = array("q", [0])  # by line number (1-based)
        self.stops = array("q", [0])

    def track(self, lines: Iterator[bytes]) -> Iterator[bytes]:
        """``lines``, recording each one's text as ``_jsonl.LineReader`` strips it (blanks, a first line's
        byte order mark)."""
        pos = 0
        for raw in lines:
            lead = len(raw) - len(raw.lstrip())
            line = raw.strip()
            if len(self.starts) == 1 and line.startswith(BOM):
                rest = line[len(BOM) :]
                lead += len(BOM) + len(rest) - len(rest.lstrip())
                line = rest.strip()
            self.starts.append(pos + lead)
            self.stops.append(pos + lead + len(line))
            pos += len(raw)
            yield raw


@dataclass(frozen=True, slots=True, eq=False)
class LineSpan:
    """One line's JSON text left in a mapped JSON Lines file (``transcript.StoredText``); ``line`` is the
    message's own ``Source.line`` object, so a span costs one small object."""

    file: LineFile
    line: int

    def read(self) -> bytes:
        return self.file.text(self.file.starts[self.line], self.file.stops[self.line])

    def __reduce__(self) -> tuple[type[bytes], tuple[bytes]]:
        return bytes, (self.read(),)


MAP_TEXTS_FROM = 1 << 20
"""The smallest file whose texts ``mapped_file`` leaves in the file: a map holds a file descriptor (before
Python 3.13) as long as its transcript lives, and a program holding a thousand small transcripts must not run
out of them; below a megabyte the texts cost little."""


def mapped_file(source: Input, kind: type[MappedFile] = MappedFile) -> MappedFile | None:
    """``source``'s file mapped for ``FileSpan``s (or, as a ``LineFile``, ``LineSpan``s); None for bytes in
    memory, a file under ``MAP_TEXTS_FROM`` or one that cannot be mapped (the caller keeps bytes then)."""
    if source.data is not None:
        return None
    try:
        with open(source.path, "rb") as f:
            if os.fstat(f.fileno()).st_size < max(MAP_TEXTS_FROM, 1):
                return None
            if sys.version_info >= (3, 13):
                return kind(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ, trackfd=False))
            return kind(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    except (OSError, ValueError):
        return None


def release(buf: Buffer, end: int) -> None:
    """Hand the pages of a mapped file before ``end`` back to the system: parsed, they are not read again, and
    a mapped file's resident pages count in the process's memory. Bytes in memory are left alone."""
    if isinstance(buf, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        end -= end % mmap.PAGESIZE
        if end > 0:
            buf.madvise(mmap.MADV_DONTNEED, 0, end)


def _blank_end(buf: Buffer, pos: int) -> int:
    return _BLANK_BYTES.match(buf, pos).end()  # type: ignore[union-attr]  # matches the empty string at worst


def document_start(buf: Buffer) -> int:
    """Where the document's value opens: after a byte order mark and blanks."""
    return _blank_end(buf, len(BOM) if buf[: len(BOM)] == BOM else 0)


def parse_member(raw: bytes, path: str, levels: int) -> Any:
    """One member's value, parsed from its text; ValueError if it is not JSON, or if, ``levels`` deep inside
    the document, it nests deeper than the document may (the whole document's reading decides then)."""
    try:
        value = loads_or_lenient(raw)
    except orjson.JSONDecodeError as exc:
        raise ValueError(str(exc)) from None
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH - levels:
        nested: Any = value
        for _ in range(levels):
            nested = [nested]
        if depth_error(nested, Location(path)) is not None:
            raise ValueError("nested too deep")
    return value


@frozen
class Spans:
    """A document's top-level members (an object's: key, start, end of each value's text) and the spans of its
    messages (an array document's items, or an object's ``messages`` items), as arrays of offsets."""

    opening: bytes
    members: list[tuple[str | None, int, int]]
    starts: array[int] | None
    ends: array[int] | None

    @property
    def elements(self) -> Iterator[tuple[int, int]]:
        return zip(self.starts or (), self.ends or (), strict=True)

    @property
    def has_messages(self) -> bool:
        return self.starts is not None


def _blank(buf: Buffer, pos: int) -> int:
    """The end of the blanks at ``pos``; ValueError if they hold a line break (not one line then)."""
    end = _blank_end(buf, pos)
    if end > pos and b"\n" in buf[pos:end]:
        raise ValueError("a line break")
    return end


def _walk(buf: Buffer, start: int, member: Callable[[str | None, int], int]) -> int:
    """Walk the array or object opening at ``buf[start]`` member by member, never scanning it whole:
    ``member(key, start)`` reads each value and says where it ends. The end of the container; ValueError
    where its punctuation is not JSON's."""
    close = b"}" if buf[start : start + 1] == b"{" else b"]"
    i = _blank(buf, start + 1)
    if buf[i : i + 1] == close:
        return i + 1
    while True:
        key: str | None = None
        if close == b"}":
            found = _STRING_RE.match(buf, i)
            if found is None:
                raise ValueError("expected a key")
            try:
                key = loads_or_lenient(found.group())
            except orjson.JSONDecodeError as exc:
                raise ValueError(str(exc)) from None
            i = _blank(buf, found.end())
            if buf[i : i + 1] != b":":
                raise ValueError("expected ':'")
            i = _blank(buf, i + 1)
        i = _blank(buf, member(key, i))
        mark = buf[i : i + 1]
        if mark == b",":
            i = _blank(buf, i + 1)
        elif mark == close:
            return i + 1
        else:
            raise ValueError("expected ',' or the end")


def one_line_spans(buf: Buffer, path: str) -> Spans | None:
    """The spans of a document that is one JSON value alone on its first line, without parsing or scanning it
    whole; None when it is not that (or its text is not plainly well-formed: the ordinary reading decides
    then, with its own errors). Every member is parsed once to be sure it is JSON, one at a time, and dropped,
    and the pages behind are handed back as it goes."""
    start = document_start(buf)
    opening = buf[start : start + 1]
    if opening not in (b"{", b"["):
        return None
    members: list[tuple[str | None, int, int]] = []
    starts: array[int] | None = None
    ends: array[int] | None = None

    def value(raw: bytes, levels: int) -> None:
        if b"\n" in raw:
            raise ValueError("a line break")
        parse_member(raw, path, levels)

    def element(_: str | None, a: int) -> int:
        b = _value_end(buf, a)  # type: ignore[arg-type]
        if b < 0:
            raise ValueError("a value without its end")
        value(buf[a:b], 2)
        release(buf, b)
        assert starts is not None and ends is not None
        starts.append(a)
        ends.append(b)
        return b

    def member(key: str | None, a: int) -> int:
        nonlocal starts, ends
        if key == "messages" and buf[a : a + 1] == b"[":
            starts, ends = array("q"), array("q")
            b = _walk(buf, a, element)
        else:
            b = _value_end(buf, a)  # type: ignore[arg-type]
            if b < 0:
                raise ValueError("a value without its end")
            value(buf[a:b], 1)
            release(buf, b)
        members.append((key, a, b))
        return b

    try:
        if opening == b"[":
            starts, ends = array("q"), array("q")
            end = _walk(buf, start, element)
        else:
            end = _walk(buf, start, member)
    except ValueError:
        return None
    if _blank_end(buf, end) != len(buf):
        return None  # more after it: not this case
    keys = [key for key, _, _ in members]
    if len(set(keys)) != len(keys):
        return None  # a repeated key: the parser's own reading says which one counts, and in which place
    return Spans(opening, members, starts, ends)


def long_line_document(source: Input) -> bool | None:
    """``source.is_document()`` for one JSON value longer than the sniffed head on a line of its own, told by
    scanning its bytes instead of parsing the line whole (which held the line, the parser's work and every
    string of it at once); None when the head does not show that case or the scan cannot tell."""
    shape = scan_head(source.head())
    if not shape.opening or shape.complete or shape.multiline or shape.more:
        return None
    spans = spans_of(source)
    if spans is None:
        return None
    return spans.opening == b"[" or "role" not in {key for key, _, _ in spans.members}


_LAST: list[tuple[tuple[str, int, int, int], Spans | None]] = []
"""The last input ``spans_of`` scanned, and its spans: detecting, handing over and reading one file ask for
them up to three times, and each scan parses every member."""


def spans_of(source: Input) -> Spans | None:
    """``one_line_spans`` of the input, remembered for the last file asked about while it is unchanged (path,
    inode, size and modification time; bytes in memory are scanned each time, and never kept here)."""
    if source.data is not None:
        with document_bytes(source) as buf:
            return one_line_spans(buf, source.path)
    try:
        st = os.stat(source.path)
    except OSError:
        return None
    key = (source.path, st.st_ino, st.st_size, st.st_mtime_ns)
    if _LAST and _LAST[0][0] == key:
        return _LAST[0][1]
    with document_bytes(source) as buf:
        spans = one_line_spans(buf, source.path)
    _LAST[:] = [(key, spans)]
    return spans
