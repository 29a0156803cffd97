"""Prices as data (issue 14): a table of models with what a million tokens of
each kind costs, read from ``prices.json`` beside this module or from a file
of the same shape (``replay --prices FILE``), and the row a log's model picks.

Every row carries the page it was read from and the day it was read; a model
whose prices were not found on its provider's own page is not in the table,
and a log whose model matches no row is priced at nothing, never at a guess."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.resources import files
from typing import Literal

import orjson

from .errors import InputError, Location

Provider = Literal["anthropic", "openai", "google"]
PROVIDERS: tuple[Provider, ...] = ("anthropic", "openai", "google")
TTLS = ("5m", "1h")
Ttl = Literal["5m", "1h"]
_PRICE_KEYS = ("input", "cache_write_5m", "cache_write_1h", "cache_read", "output")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_SNAPSHOT = re.compile(r"^-(\d{8}|\d{4}-\d{2}-\d{2})$")


@dataclass(frozen=True, slots=True)
class Price:
    """One model's prices, USD per million tokens."""

    model: str
    """The model id, without a dated snapshot suffix (``claude-opus-4-5`` prices ``claude-opus-4-5-20251101``)."""
    provider: Provider
    input: float
    cache_write_5m: float | None
    """Anthropic's cache write with a 5-minute lifetime; None where the provider has no write premium."""
    cache_write_1h: float | None
    cache_read: float
    output: float
    read_on: str
    """The day the prices were read (YYYY-MM-DD)."""
    source: str
    """The page they were read from."""

    def write(self, ttl: Ttl) -> float:
        """What a token written to the cache costs: the write premium for ``ttl``, or the plain input price
        where the provider has none."""
        premium = self.cache_write_5m if ttl == "5m" else self.cache_write_1h
        return self.input if premium is None else premium


@dataclass(frozen=True, slots=True)
class PriceTable:
    rows: tuple[Price, ...]
    path: str

    def row(self, model: str) -> Price | None:
        """The row for a model id as a log records it: the row of that very id, or the row whose id it is
        followed by a dated snapshot suffix; None when no row matches (never the nearest guess)."""
        for p in self.rows:
            if model == p.model or (model.startswith(p.model) and _SNAPSHOT.match(model[len(p.model) :])):
                return p
        return None


def default_table() -> PriceTable:
    """The table that ships with windowfit (``fitting/prices.json``)."""
    resource = files("windowfit.fitting").joinpath("prices.json")
    return parse_table(resource.read_bytes(), "prices.json")


def load_table(path: str) -> PriceTable:
    """A ``--prices`` file: the shape of ``prices.json``; a bad one is an InputError naming where."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise InputError(Location(path), f"cannot read the prices file: {exc.strerror or exc}") from None
    return parse_table(data, path)


def parse_table(data: bytes, path: str) -> PriceTable:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        line = data[: exc.pos].count(b"\n") + 1 if exc.pos is not None else None
        raise InputError(Location(path, line), f"not JSON: {exc.msg}") from None
    if not isinstance(value, dict) or not isinstance(value.get("models"), list):
        raise InputError(Location(path), 'a prices file is an object with a "models" list')
    rows = []
    for i, row in enumerate(value["models"]):
        rows.append(_row(row, path, i, _line_of(data, i)))
    return PriceTable(tuple(rows), path)


def _line_of(data: bytes, index: int) -> int | None:
    """The line where the ``index``-th object of the ``models`` list starts (a best effort, for errors)."""
    start = data.find(b'"models"')
    if start < 0:
        return None
    depth, seen, pos = 0, -1, data.find(b"[", start)
    while 0 <= pos < len(data):
        c = data[pos : pos + 1]
        if c == b"{":
            if depth == 0:
                seen += 1
                if seen == index:
                    return data[:pos].count(b"\n") + 1
            depth += 1
        elif c == b"}":
            depth -= 1
        elif c == b'"':
            pos = _string_end(data, pos)
        pos += 1
    return None


def _string_end(data: bytes, pos: int) -> int:
    pos += 1
    while pos < len(data) and data[pos : pos + 1] != b'"':
        pos += 2 if data[pos : pos + 1] == b"\\" else 1
    return pos


def _row(row: object, path: str, index: int, line: int | None) -> Price:
    where = Location(path, line)

    def bad(message: str) -> InputError:
        return InputError(where, f"models[{index}]: {message}")

    if not isinstance(row, dict):
        raise bad("each model is an object")
    model, provider = row.get("model"), row.get("provider")
    if not isinstance(model, str) or not model:
        raise bad('"model" must be a model id')
    if provider not in PROVIDERS:
        raise bad(f'"provider" must be one of {", ".join(PROVIDERS)}')
    prices: dict[str, float | None] = {}
    for key in _PRICE_KEYS:
        v = row.get(key)
        optional = key.startswith("cache_write")
        if v is None and optional:
            prices[key] = None
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise bad(f'"{key}" must be a price in USD per million tokens (a number >= 0)')
        prices[key] = float(v)
    if provider == "anthropic" and (prices["cache_write_5m"] is None or prices["cache_write_1h"] is None):
        raise bad("an Anthropic model needs both cache write prices (5m and 1h)")
    read_on, source = row.get("read_on"), row.get("source")
    if not isinstance(read_on, str) or not _DATE.match(read_on):
        raise bad('"read_on" must be the day the prices were read, YYYY-MM-DD')
    if not isinstance(source, str) or not source.startswith(("http://", "https://")):
        raise bad('"source" must be the address of the page the prices were read from')
    unknown = set(row) - {"model", "provider", "read_on", "source", *_PRICE_KEYS}
    if unknown:
        raise bad(f"unknown key(s): {', '.join(sorted(unknown))}")
    return Price(
        model,
        provider,
        prices["input"] or 0.0,
        prices["cache_write_5m"],
        prices["cache_write_1h"],
        prices["cache_read"] or 0.0,
        prices["output"] or 0.0,
        read_on,
        source,
    )


def recorded_model(extra: str) -> str | None:
    """The model a transcript records (its request-level ``model`` key), if any."""
    if not extra:
        return None
    try:
        value = orjson.loads(extra)
    except orjson.JSONDecodeError:
        return None
    model = value.get("model") if isinstance(value, dict) else None
    return model if isinstance(model, str) and model else None
