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
    """Decoded text read ahead from a stream; ``line`` is the line of ``text[0]``."""

    def __init__(self, stream: BinaryIO, path: str) -> None:
        self.stream = stream
        self.path = path
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.text = ""
        self.pos = 0
        self.line = 1
        self.eof = False

    def fill(self, chars: int = CHUNK_CHARS) -> None:
        data = self.stream.read(max(chars, CHUNK_CHARS))
        try:
            self.text += self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            raise InvalidUtf8(
                Location(self.path, self.line + self.text.count("\n")),
                f"invalid UTF-8 (byte 0x{exc.object[exc.start]:02x})",
                hint="convert the file to UTF-8 first",
            ) from None
        self.eof = not data

    def compact(self) -> None:
        """Forget the text already read."""
        if self.pos:
            self.line += self.text.count("\n", 0, self.pos)
            self.text = self.text[self.pos :]
            self.pos = 0

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
            where = self.line + self.text.count("\n", 0, self.pos)
            column = self.pos - self.text.rfind("\n", 0, self.pos)
            raise _invalid(self.path, where, column, f"expected {' or '.join(map(repr, chars))}")
        self.pos += 1
        return found

    def value(self) -> tuple[Any, int, str]:
        """The next JSON value, the line it starts on, and its text."""
        self.peek()
        self.compact()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, 0)
            except json.JSONDecodeError as exc:
                if self.eof:
                    line = self.line + exc.lineno - 1
                    raise _invalid(self.path, line, exc.colno, exc.msg) from None
                self.fill(len(self.text))  # doubling: a huge value is re-read O(log n) times
                continue
            # A number cut at the end of the text read so far would parse as a shorter one.
            if end < len(self.text) or self.eof:
                self.pos = end
                return value, self.line, self.text[:end]
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
                        raise _invalid(path, buf.line, None, "an object key must be a string")
                    key = raw_key
                    buf.expect(":")
                value, line, text = buf.value()
                yield Member(key, value, line, text)
                if buf.expect("," + closing) == closing:
                    break
    if buf.peek():
        raise _invalid(path, buf.line + buf.text.count("\n", 0, buf.pos), None, "extra data after the document")


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

