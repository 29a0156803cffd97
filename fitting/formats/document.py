"""Reading one large JSON document piece by piece: the members of its top-level
array or object, each with the line it starts on, without holding the file;
and a look at the keys of a JSON value from its first bytes (for sniffers)."""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from ..errors import InvalidJson, InvalidUtf8, Location
from .registry import SNIFF_BYTES, Input

CHUNK_CHARS = 1 << 20
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


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
        yield Member(None, value, line, text)
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
                yield Member(key, value, line, text)
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


# --------------------------------------------------------------------------
# Sniffing from the first bytes

_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}:,]|"')


@dataclass(frozen=True, slots=True)
class HeadShape:
    """What the first bytes of an input show about its first JSON value."""

    opening: str
    """``{``, ``[`` or "" (not a container)."""
    keys: tuple[str, ...]
    """Keys of the first value (an object), as far as the bytes go."""
    item_opening: str
    """For an array: how its first item opens (``{``, ``[``, or "")."""
    item_keys: tuple[str, ...]
    """For an array whose first item is an object: that item's keys seen."""
    complete: bool
    """The first value ends within the bytes."""
    more: bool
    """Another value follows the first one (JSON Lines)."""
    multiline: bool
    """The first value spans several lines (a pretty-printed document)."""
    first_line: bytes
    """The bytes of the first value (up to the end of the bytes seen)."""

    @property
    def lines_of_values(self) -> bool:
        """JSON Lines, or maybe (one long line not seen to its end)."""
        return self.more or (not self.complete and not self.multiline)


def scan_head(head: bytes) -> HeadShape:
    """The shape of the first JSON value in ``head``, read tolerantly (the
    bytes may end anywhere). Skips ``//`` comment lines before it."""
    text = head.lstrip()
    while text.startswith(b"//"):
        text = text.partition(b"\n")[2].lstrip()
    opening = text[:1].decode("ascii", "replace")
    if opening not in ("[", "{"):
        return HeadShape("", (), "", (), False, False, False, text.partition(b"\n")[0])
    keys: list[str] = []
    item_keys: list[str] = []
    item_opening = ""
    depth = 0
    end: int | None = None
    previous = b""
    first_item_done = False
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token == b'"':
            break  # a string cut by the end of the bytes
        if token in (b"{", b"["):
            depth += 1
            if opening == "[" and depth == 2 and not item_opening:
                item_opening = token.decode()
        elif token in (b"}", b"]"):
            depth -= 1
            first_item_done = first_item_done or depth == 1
            if depth == 0:
                end = match.end()
                break
        elif token == b":" and previous.startswith(b'"'):
            try:
                key = json.loads(previous)
            except ValueError:
                key = ""
            if depth == 1 and opening == "{":
                keys.append(key)
            elif depth == 2 and opening == "[" and item_opening == "{" and not first_item_done:
                item_keys.append(key)
        previous = token
    value = text[:end] if end is not None else text
    rest = text[end:].strip() if end is not None else b""
    return HeadShape(
        opening,
        tuple(keys),
        item_opening,
        tuple(item_keys),
        end is not None,
        bool(rest),
        b"\n" in value.rstrip(),
        value,
    )


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
