"""Private: reading JSON and JSON Lines with located errors (file, line, column)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from .._json import check_depth, depth_error, loads_or_lenient
from ..errors import InvalidJson, InvalidUtf8, Location
from ..transcript import Skipped, Source

BOM = b"\xef\xbb\xbf"
"""A UTF-8 byte order mark, which some editors put at the start of a file."""


def _utf8_error(data: bytes, path: str, first_line: int = 1) -> InvalidUtf8 | None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + data.count(b"\n", 0, exc.start)
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        return InvalidUtf8(
            Location(path, line, column),
            f"invalid UTF-8 (byte 0x{data[exc.start]:02x})",
            hint="convert the file to UTF-8 first",
        )
    return None


def loads_document(data: bytes, path: str) -> Any:
    """Parse a whole file as one JSON value, or raise a located error."""
    try:
        return check_depth(loads_or_lenient(data[len(BOM) :] if data.startswith(BOM) else data), Location(path), data)
    except orjson.JSONDecodeError as exc:
        bad = _utf8_error(data, path)
        if bad is not None:
            raise bad from None
        raise InvalidJson(Location(path, exc.lineno, exc.colno), f"invalid JSON: {exc.msg}") from None


def line_text(number: int, raw: bytes) -> bytes:
    """The JSON text of line ``number`` (1-based) as ``LineReader.entries`` reads it: without surrounding
    whitespace and, on the first line, a byte order mark."""
    line = raw.strip()
    if number == 1 and line.startswith(BOM):
        line = line[len(BOM) :].strip()
    return line


class LineReader:
    """Iterates the JSON values of a JSON Lines input, remembering skipped lines.

    Blank lines are ignored. With ``skip_invalid`` a line that is not JSON is
    recorded in ``skipped`` instead of raising; so is a line starting with
    ``//`` (comment lines some tools add), which is never an error. (A plain
    class: a dataclass's methods cost start-up, issue 15.)
    """

    __slots__ = ("path", "skip_invalid", "skipped")

    def __init__(self, path: str, skip_invalid: bool = False) -> None:
        self.path = path
        self.skip_invalid = skip_invalid
        self.skipped: list[Skipped] = []

    def values(self, lines: Iterable[bytes]) -> Iterator[tuple[int, Any]]:
        for lineno, value, _ in self.entries(lines):
            yield lineno, value

    def entries(self, lines: Iterable[bytes]) -> Iterator[tuple[int, Any, bytes]]:
        """Each value with its line number and its JSON text exactly as the line holds it
        (without surrounding whitespace)."""
        for lineno, raw in enumerate(lines, start=1):
            line = line_text(lineno, raw)
            if not line:
                continue
            if line.startswith(b"//"):
                self.skipped.append(Skipped(Source(self.path, lineno), "comment line"))
                continue
            try:
                value = loads_or_lenient(line)
            except orjson.JSONDecodeError as exc:
                bad = _utf8_error(raw, self.path, lineno)
                error: InvalidJson | InvalidUtf8 = bad or InvalidJson(
                    Location(self.path, lineno, exc.colno + (len(raw) - len(raw.lstrip()))),
                    f"invalid JSON: {exc.msg}",
                    hint="pass --skip-invalid to skip lines that are not JSON",
                )
                if not self.skip_invalid:
                    raise error from None
                self.skipped.append(Skipped(Source(self.path, lineno), error.message))
                continue
            deep = depth_error(value, Location(self.path, lineno), line)
            if deep is None:
                yield lineno, value, line
            elif not self.skip_invalid:
                raise deep
            else:
                self.skipped.append(Skipped(Source(self.path, lineno), deep.message))
