"""Private JSON plumbing shared by the wire shapes and the file formats: compact
JSON text, the keys a shape does not model (kept to be written back), and
blocks kept verbatim with their base64 payloads left uncounted."""

from __future__ import annotations

from typing import Any

import orjson

from .transcript import JsonText, Other


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
