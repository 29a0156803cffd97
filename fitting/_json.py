"""Private JSON plumbing shared by the wire shapes and the file formats: compact
JSON text, the keys a shape does not model (kept to be written back), and
blocks kept verbatim with their base64 payloads left uncounted."""

from __future__ import annotations

from typing import Any, TypeVar

import orjson

from .errors import Location, UnknownShape
from .transcript import JsonText, Other

T = TypeVar("T")

MAX_DEPTH = 200
"""The deepest nesting of arrays and objects windowfit reads. orjson writes at most 254 levels, and a value read
from a line is written back a few levels deeper (inside a request body's message and block), so deeper input is
refused where it is read, with its location, rather than failing when it is counted or written."""


def depth_error(value: Any, where: Location, text: bytes | str | None = None) -> UnknownShape | None:
    """An error if ``value`` nests arrays and objects deeper than ``MAX_DEPTH``, else None. With the JSON
    ``text`` it was parsed from, a text holding fewer brackets than the limit is passed without a walk."""
    if isinstance(text, str):
        text = text.encode()
    if text is not None and text.count(b"[") + text.count(b"{") <= MAX_DEPTH:
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


def dumps(value: Any) -> JsonText:
    """Compact JSON text, keys in input order (what is sent)."""
    return orjson.dumps(value).decode()


def extras(obj: dict[str, Any], known: frozenset[str]) -> JsonText:
    """The keys of ``obj`` that are not ``known``, as compact JSON ("" if none)."""
    rest = {k: v for k, v in obj.items() if k not in known}
    return dumps(rest) if rest else ""


def merge_extra(obj: dict[str, Any], extra: JsonText) -> dict[str, Any]:
    """``obj`` with the keys of ``extra`` added back (modelled keys win)."""
    if extra:
        for key, value in orjson.loads(extra).items():
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


def loads(text: JsonText) -> Any:
    return orjson.loads(text)
