"""Private JSON plumbing shared by the wire shapes and the file formats: compact
JSON text, the keys a shape does not model (kept to be written back), blocks
kept verbatim with their base64 payloads left uncounted, JSON that orjson
refuses only for ``NaN``/``Infinity`` or lone surrogates, and tool inputs found
again in the text they were read from, to be written back as they came."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

import orjson

from .errors import Location, UnknownShape
from .transcript import Block, JsonText, Other, ToolCall

T = TypeVar("T")

MAX_DEPTH = 200
"""The deepest nesting of arrays and objects windowfit reads. orjson writes at most 254 levels, and a value read
from a line is written back a few levels deeper (inside a request body's message and block), so deeper input is
refused where it is read, with its location, rather than failing when it is counted or written."""


def bracket_count_pure(data: bytes) -> int:
    """How many ``[`` and ``{`` bytes ``data`` holds."""
    return data.count(b"[") + data.count(b"{")


bracket_count: Callable[[bytes], int] = bracket_count_pure
"""``bracket_count_pure``, in one pass of the compiled extension where it is built (two ``bytes.count`` calls
cost a third of the time orjson takes to parse the line)."""
if os.environ.get("WINDOWFIT_PURE", "") in ("", "0"):  # estimate.PURE_ENV
    with contextlib.suppress(ImportError):  # not built, or built before brackets() was added
        from ._classcount import brackets as bracket_count


def depth_error(value: Any, where: Location, text: bytes | str | None = None) -> UnknownShape | None:
    """An error if ``value`` nests arrays and objects deeper than ``MAX_DEPTH``, else None. With the JSON
    ``text`` it was parsed from, a text holding fewer brackets than the limit is passed without a walk."""
    if isinstance(text, str) and text.count("[") + text.count("{") <= MAX_DEPTH:
        return None
    if isinstance(text, bytes) and (len(text) <= MAX_DEPTH or bracket_count(text) <= MAX_DEPTH):
        return None
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_DEPTH:
            return UnknownShape(
                where, f"JSON nested more than {MAX_DEPTH} levels deep; windowfit reads at most {MAX_DEPTH}"
            )
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return None


def check_depth(value: T, where: Location, text: bytes | str | None = None) -> T:
    """``value``, or a located error if it nests deeper than ``MAX_DEPTH``."""
    error = depth_error(value, where, text)
    if error is not None:
        raise error
    return value


def str_field(obj: dict[str, Any], key: str) -> str | None:
    """``obj[key]`` if it is a string, else None: a discriminator (``type``, ``role``) of another type matches
    nothing, instead of failing a set lookup (a list is not hashable)."""
    value = obj.get(key)
    return value if isinstance(value, str) else None


def list_field(obj: dict[str, Any], key: str, where: Location, what: str = "") -> list[Any]:
    """``obj[key]`` as a list: missing or null is empty, any other type a located error."""
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise UnknownShape(where, f"{what or repr(key)} must be a list, not {type_name(value)}")
    return value


def type_name(value: Any) -> str:
    """The JSON name of a value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


class Constant(float):
    """``NaN``, ``Infinity``, ``-Infinity`` or a number too large for a double, as read by the lenient
    parser: a float that keeps its spelling, written back as that spelling (orjson would write ``null``)."""

    spelling: str

    def __new__(cls, spelling: str) -> Constant:
        value = super().__new__(cls, spelling.replace("Infinity", "inf"))
        value.spelling = spelling
        return value


def _number(spelling: str) -> float:
    value = float(spelling)
    return value if math.isfinite(value) else Constant(spelling)


LENIENT_DECODER = json.JSONDecoder(parse_constant=Constant, parse_float=_number)
"""The standard library's decoder, keeping ``NaN``, ``Infinity`` and numbers past a double's range
(``1E400``) as ``Constant`` spellings: for readers that decode JSON text themselves."""
_LENIENT = LENIENT_DECODER
_LENIENT_HINTS = (b"NaN", b"Infinity", b"\\ud", b"\\uD")
"""What a text orjson refuses must hold for the lenient parser to be worth a try."""


def loads_lenient(data: bytes | str) -> Any:
    """``data`` parsed by the standard library, which also takes ``NaN``, ``Infinity``, numbers past a
    double's range and lone surrogates (a ``\\ud800`` escape), the values orjson refuses. Raises
    ValueError (or RecursionError) for anything else that is not JSON."""
    text = data.decode() if isinstance(data, bytes) else data
    value, end = _LENIENT.raw_decode(text, len(text) - len(text.lstrip(" \t\r\n")))
    if text[end:].strip(" \t\r\n"):
        raise ValueError("extra data")
    return value


def loads_or_lenient(data: bytes | str) -> Any:
    """``data`` parsed by orjson or, where orjson refuses it, by ``loads_lenient``; raises orjson's error
    when neither reads it (its message and position are the ones to report)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
        if "infinity" not in exc.msg and not any(hint in raw for hint in _LENIENT_HINTS):
            raise
        try:
            return loads_lenient(raw)
        except (ValueError, RecursionError):
            raise exc from None


_SURROGATE = re.compile("[\ud800-\udfff]")


def _string_text(text: str) -> str:
    """A string's JSON text, lone surrogates written as the ``\\uXXXX`` escapes they were read from."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(text, ensure_ascii=False))


def _default(value: Any) -> Any:
    if isinstance(value, Constant):
        return orjson.Fragment(value.spelling)
    raise TypeError(f"not JSON: {type(value).__name__}")


def _fragmented(value: Any) -> Any:
    """``value`` with what orjson cannot write (strings holding lone surrogates, integers past 64 bits)
    replaced by their JSON text as fragments; an object with such a key becomes one fragment."""
    if isinstance(value, str):
        return orjson.Fragment(_string_text(value)) if _SURROGATE.search(value) else value
    if isinstance(value, bool) or not isinstance(value, (int, dict, list, tuple)):
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**64 else orjson.Fragment(str(value))
    if isinstance(value, dict):
        if any(_SURROGATE.search(k) for k in value if isinstance(k, str)):
            items = (f"{_string_text(str(k))}:{encode(v).decode()}" for k, v in value.items())
            return orjson.Fragment("{" + ",".join(items) + "}")
        return {k: _fragmented(v) for k, v in value.items()}
    return [_fragmented(v) for v in value]


def encode(value: Any, *, indent: bool = False, sort_keys: bool = False) -> bytes:
    """``value`` as JSON bytes (indented by two spaces if ``indent``): orjson, keeping the spellings of
    ``NaN``-like constants read leniently, and the texts of lone surrogates and integers past 64 bits that
    orjson cannot write."""
    option = (orjson.OPT_INDENT_2 if indent else 0) | (orjson.OPT_SORT_KEYS if sort_keys else 0)
    try:
        return orjson.dumps(value, default=_default, option=option)
    except orjson.JSONEncodeError:
        return orjson.dumps(_fragmented(value), default=_default, option=option)


def dumps(value: Any) -> JsonText:
    """Compact JSON text, keys in input order (what is sent)."""
    return encode(value).decode()


def extras(obj: dict[str, Any], known: frozenset[str]) -> JsonText:
    """The keys of ``obj`` that are not ``known``, as compact JSON ("" if none)."""
    rest = {k: v for k, v in obj.items() if k not in known}
    return dumps(rest) if rest else ""


def merge_extra(obj: dict[str, Any], extra: JsonText) -> dict[str, Any]:
    """``obj`` with the keys of ``extra`` added back (modelled keys win)."""
    if extra:
        for key, value in loads(plain(extra)).items():
            obj.setdefault(key, value)
    return obj


BINARY_MIN_CHARS = 256
BINARY_KEYS = frozenset({"data", "file_data", "image_url", "url"})


def _elide_binary(value: Any) -> tuple[Any, int]:
    """``value`` with long base64 strings (or data: URLs) replaced by "", and how many."""
    if isinstance(value, dict):
        out, n = {}, 0
        for key, item in value.items():
            if (
                isinstance(item, str)
                and len(item) >= BINARY_MIN_CHARS
                and key in BINARY_KEYS
                and (item.startswith("data:") or " " not in item[:BINARY_MIN_CHARS])
            ):
                out[key], n = "", n + 1
            else:
                out[key], k = _elide_binary(item)
                n += k
        return out, n
    if isinstance(value, list):
        items = [_elide_binary(v) for v in value]
        return [v for v, _ in items], sum(k for _, k in items)
    return value, 0


def other_block(kind: str, obj: Any) -> Other:
    """A block windowfit does not model, kept verbatim; base64 payloads inside
    it (PDF documents, audio, files) are not counted as characters."""
    raw = dumps(obj)
    elided, payloads = _elide_binary(obj)
    return Other(kind, raw, dumps(elided) if payloads else "", payloads)


_LONG_INTEGER = re.compile(r"\d{20}")
"""Twenty digits in a row: maybe an integer past 64 bits, which orjson reads as a float."""


def loads(text: JsonText) -> Any:
    """Compact JSON (as ``dumps`` made it) parsed back to the value it was made from: integers past 64 bits
    stay exact integers (read by the standard library then), so writing the value again gives the same text."""
    if _LONG_INTEGER.search(text):
        try:
            return loads_lenient(text)
        except (ValueError, RecursionError):
            pass
    return loads_or_lenient(text)


# --------------------------------------------------------------------------
# Tool inputs, found again in the text they were read from

_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'
_STRING_RE = re.compile(_STRING)
_TOKEN = re.compile(_STRING + rb"|[\[\]{}]")
_SCALAR = re.compile(_STRING + rb"|[^,\]}\s]+")
_KEYS: dict[str, re.Pattern[bytes]] = {}


def container_ends(text: bytes) -> dict[int, int]:
    """Where each array and object of the JSON ``text`` ends, by where it starts: one pass over the text,
    for a walk that visits containers inside containers (``members(text, start, ends)``)."""
    ends: dict[int, int] = {}
    opened: list[int] = []
    for token in _TOKEN.finditer(text):
        mark = token.group()
        if mark in (b"{", b"["):
            opened.append(token.start())
        elif mark in (b"}", b"]") and opened:
            ends[opened.pop()] = token.end()
    return ends


def _value_end(text: bytes, start: int, ends: dict[int, int] | None = None) -> int:
    """The end of the JSON value that starts at ``text[start]``, or -1."""
    if text[start : start + 1] not in (b"{", b"["):
        found = _SCALAR.match(text, start)
        return found.end() if found else -1
    if ends is not None:
        return ends.get(start, -1)
    depth = 0
    for token in _TOKEN.finditer(text, start):
        mark = token.group()
        if mark in (b"{", b"["):
            depth += 1
        elif mark in (b"}", b"]"):
            depth -= 1
            if depth == 0:
                return token.end()
    return -1


_BLANKS = re.compile(rb"[ \t\r\n]*")


def members(text: bytes, start: int = 0, ends: dict[int, int] | None = None) -> list[tuple[str | None, int, int, int]]:
    """The members of the array or object opening at or after ``text[start]`` (JSON bytes, read by orjson
    already): each one's key (None in an array), where the member starts (its key, or its value in an array)
    and where its value's text starts and ends (``ends``: ``container_ends(text)``, for a walk). Raises
    ValueError if the text there is not an array or an object."""
    i = _BLANKS.match(text, start).end()  # type: ignore[union-attr]  # matches the empty string at worst
    opening = text[i : i + 1]
    if opening not in (b"[", b"{"):
        raise ValueError("not an array or an object")
    close = b"]" if opening == b"[" else b"}"
    found: list[tuple[str | None, int, int, int]] = []
    i = _BLANKS.match(text, i + 1).end()  # type: ignore[union-attr]
    if text[i : i + 1] == close:
        return found
    while True:
        key: str | None = None
        begin = i
        if close == b"}":
            match = _STRING_RE.match(text, i)
            if match is None:
                raise ValueError("expected a key")
            quoted = match.group()
            key = quoted[1:-1].decode() if b"\\" not in quoted else loads_or_lenient(quoted)  # most keys: no escape
            i = _BLANKS.match(text, match.end()).end()  # type: ignore[union-attr]
            if text[i : i + 1] != b":":
                raise ValueError("expected ':'")
            i = _BLANKS.match(text, i + 1).end()  # type: ignore[union-attr]
        end = _value_end(text, i, ends)
        if end < 0:
            raise ValueError("a value without its end")
        found.append((key, begin, i, end))
        i = _BLANKS.match(text, end).end()  # type: ignore[union-attr]
        if text[i : i + 1] == b",":
            i = _BLANKS.match(text, i + 1).end()  # type: ignore[union-attr]
            continue
        if text[i : i + 1] == close:
            return found
        raise ValueError(f"expected ',' or {close!r}")


def member_spans(text: bytes, start: int = 0) -> list[tuple[str | None, int, int]]:
    """The members of the array or object opening at or after ``text[start]`` (see ``members``): each one's
    key (None in an array) and where its value's text starts and ends, so a writer can emit a member exactly
    as the file spelled it, without decoding or parsing the text again."""
    return [(key, a, b) for key, _, a, b in members(text, start)]


# --------------------------------------------------------------------------
# Spelled JSON: a value's text as the file held it, where that differs from compact JSON

SPELLED = " "
"""What opens a ``JsonText`` that holds a value as the file spelled it (``1E+2``, integers past 64 bits,
repeated keys, spacing) rather than as compact JSON: compact JSON never starts with a blank, and the text
still parses to the same value. Only extra keys are kept so (``spelled_extras``), and writers emit them as
they are (``with_extra``); nothing counts them."""


def plain(text: JsonText) -> JsonText:
    """``text`` without its ``SPELLED`` mark: JSON text to parse, show or embed."""
    return text[1:] if text[:1] == SPELLED else text


def spelled_extras(
    text: bytes, found: list[tuple[str | None, int, int, int]], known: frozenset[str], compact: JsonText
) -> JsonText:
    """An object's members (``found`` in ``text``) that are not ``known``, as the file spelled them: ``compact``
    (their compact JSON, as ``extras`` made it) when that is how the file has them, else the members' own
    texts (repeated keys and all) in an object marked ``SPELLED``."""
    if not compact:
        return compact
    kept = b",".join(text[begin:end] for key, begin, _, end in found if key not in known)
    if kept == compact.encode()[1:-1]:
        return compact
    whole = b"{" + kept + b"}"
    same = _compact(whole) == compact or _compact_lenient(whole) == compact
    return SPELLED + whole.decode("utf-8", "surrogatepass") if same else compact


def with_extra(obj: dict[str, Any], extra: JsonText) -> Any:
    """``obj`` with the keys of ``extra`` added back (modelled keys win): a dict, or where ``extra`` is the
    file's spelling of them, the object's text with those members after its own, as they came (a
    fragment; ``spelled_extras`` left the modelled keys out, so none is repeated)."""
    if extra[:1] != SPELLED:
        return merge_extra(obj, extra)
    inner = extra[2:-1]
    head = encode(obj)[:-1]
    return orjson.Fragment(head + (b"," if len(head) > 1 else b"") + inner.encode("utf-8", "surrogatepass") + b"}")


def _escaped(text: bytes, quote: int) -> bool:
    """Whether the quote at ``text[quote]`` is escaped (inside a string)."""
    n = 0
    while quote - n > 0 and text[quote - n - 1] == 0x5C:
        n += 1
    return n % 2 == 1


def _compact(span: bytes) -> JsonText | None:
    try:
        return dumps(loads_or_lenient(span))
    except (orjson.JSONDecodeError, ValueError, RecursionError):
        return None


def _compact_lenient(span: bytes) -> JsonText | None:
    """``span`` as compact JSON read by the standard library, which keeps integers past 64 bits exact: the
    reading of a document orjson refused as a whole (for a ``NaN`` elsewhere in it)."""
    try:
        return dumps(loads_lenient(span))
    except (ValueError, RecursionError):
        return None


def reads_as(span: bytes, compact: JsonText) -> bool:
    """Whether the JSON text ``span`` holds the value whose compact JSON is ``compact`` (read by orjson, or by
    the standard library, which keeps integers past 64 bits exact)."""
    return _compact(span) == compact or _compact_lenient(span) == compact


class InputTexts:
    """The values of one key (``input``) in a JSON text, in order, matched to tool calls read from that
    text: each call gets the first value after the previous match whose compact JSON is its
    ``input_json``, so the call is written back with the file's own spelling of its input."""

    def __init__(self, text: bytes | str, key: str = "input") -> None:
        self.text = text.encode() if isinstance(text, str) else text
        pattern = _KEYS.get(key)
        if pattern is None:
            pattern = _KEYS[key] = re.compile(b'"' + re.escape(key.encode()) + rb'"[ \t\r\n]*:[ \t\r\n]*')
        self.pattern = pattern
        self.pos = 0

    def find(self, compact: JsonText) -> JsonText | None:
        """The text of the next value that reads as ``compact``: "" when it is spelled exactly so, None
        when none is found."""
        wanted = compact.encode()
        for key in self.pattern.finditer(self.text, self.pos):
            if _escaped(self.text, key.start()):
                continue
            start = key.end()
            end = _value_end(self.text, start)
            if end < 0:
                continue
            span = self.text[start:end]
            if span == wanted or _compact(span) == compact or _compact_lenient(span) == compact:
                self.pos = end
                return "" if span == wanted else span.decode()
        return None

    def blocks(self, content: tuple[Block, ...]) -> tuple[Block, ...]:
        """``content`` with each tool call carrying its input's text where the file spelled it otherwise
        than compact JSON; the very tuple if nothing changed."""
        if not any(isinstance(b, ToolCall) for b in content):
            return content
        out: list[Block] = []
        changed = False
        for block in content:
            if isinstance(block, ToolCall) and not block.input_text and block.given is None:
                text = self.find(block.input_json)
                if text:
                    block, changed = replace(block, input_text=text), True
            out.append(block)
        return tuple(out) if changed else content


def with_input_texts(content: tuple[Block, ...], text: bytes | str | None, key: str = "input") -> tuple[Block, ...]:
    """``content`` (read from the JSON ``text``) with its tool calls' inputs as ``text`` spells them."""
    if text is None or not any(isinstance(b, ToolCall) for b in content):
        return content
    return InputTexts(text, key).blocks(content)


def input_text_of(raw: Any) -> tuple[JsonText, JsonText, str]:
    """A call's input given as a JSON string (OpenAI ``arguments``): its compact JSON (what is counted),
    the string itself where it spells the JSON otherwise (written back), and the string when it is not
    JSON at all (kept as sent: the input is that string then)."""
    if not isinstance(raw, str):
        return dumps(raw if raw is not None else {}), "", ""
    try:
        compact = dumps(loads_or_lenient(raw))
    except (orjson.JSONDecodeError, ValueError, RecursionError):
        return dumps(raw), "", raw
    return compact, (raw if raw != compact else ""), ""
