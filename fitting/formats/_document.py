"""Private: reading one large JSON document piece by piece (the members of its
top-level array or object, each with the line it starts on, without holding the
file), and telling a JSON document from JSON Lines."""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from .._json import LENIENT_DECODER, check_depth
from ..errors import InvalidJson, InvalidUtf8, Location
from ._sniff import scan_head
from .base import SNIFF_BYTES, Input

CHUNK_CHARS = 1 << 20
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = LENIENT_DECODER  # 1E400 kept as it is spelled, not read as inf (which JSON writes as null)


@dataclass(frozen=True, slots=True)
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
        yield key, pos, value
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
    return source.is_document()
