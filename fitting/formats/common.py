"""Small pieces the dialect modules share: compact JSON and extras."""

from __future__ import annotations

from typing import Any

import orjson

from ..transcript import JsonText


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


def loads(text: JsonText) -> Any:
    return orjson.loads(text)
