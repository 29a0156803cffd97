"""Prices as data (issue 14): a table of models with what a million tokens of
each kind costs, read from ``prices.json`` beside this module or from a file
of the same shape (``replay --prices FILE``), and the row a log's model picks.

Every row carries the page it was read from and the day it was read; a model
whose prices were not found on its provider's own page is not in the table,
and a log whose model matches no row is priced at nothing, never at a guess."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Literal

import orjson

from ._frozen import frozen
from .errors import InputError, Location

Provider = Literal["anthropic", "openai", "google"]
PROVIDERS: tuple[Provider, ...] = ("anthropic", "openai", "google")
TTLS = ("5m", "1h")
Ttl = Literal["5m", "1h"]
_PRICE_KEYS = ("input", "cache_write_5m", "cache_write_1h", "cache_read", "output")
_LONG_KEYS = ("input", "cache_read", "output")
_LONG_WRITE_KEYS = ("cache_write_5m", "cache_write_1h")
_OPTIONAL_KEYS = ("long_context", "cache_storage_per_hour", "aliases", "note", "window")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_SNAPSHOT = re.compile(r"^-(\d{8}|\d{4}-\d{2}-\d{2})$")


@frozen
class LongContext:
    """The prices of a request whose prompt is longer than ``above`` tokens (Gemini's "prompts > 200k
    tokens" tier, Claude Sonnet 4's and 4.5's over 200K input tokens): they replace the row's own for the
    whole request, as Google and Anthropic bill it."""

    above: int
    input: float
    cache_read: float
    output: float
    cache_write_5m: float | None = None
    """The tier's cache write prices, where the provider charges a write premium (Anthropic)."""
    cache_write_1h: float | None = None


@frozen
class BetaWindow:
    """A longer context window the model has only with a beta header sent (Claude Sonnet 4.5's 1M tokens with
    ``context-1m-2025-08-07``): a transcript does not record the header, so the plain window is the one used."""

    tokens: int
    header: str
    source: str


@frozen
class Window:
    """A model's context window and largest output, in tokens, read from its provider's own page."""

    tokens: int
    max_output: int
    read_on: str
    source: str
    beta: BetaWindow | None = None


@frozen
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
    long_context: LongContext | None = None
    """The tier of prompts longer than a threshold, where the page gives one (Gemini 2.5 Pro, 3.1 Pro)."""
    cache_storage_per_hour: float | None = None
    """Google's storage price of an explicit cache, USD per million tokens per hour. Recorded, not charged:
    replay models implicit caching (what Gemini CLI relies on), which stores nothing billed."""
    aliases: tuple[str, ...] = ()
    """Other ids the row prices (a preview id a log records for the model the page lists)."""
    note: str = ""
    """What the page says that the numbers alone do not (a tier, the copy of the page read)."""
    window: Window | None = None
    """The model's context window, where its provider's page was read for it (``windows.window_for``)."""

    def at(self, prompt_tokens: int) -> Price:
        """The prices of a request of ``prompt_tokens``: the long-context tier's above its threshold."""
        tier = self.long_context
        if tier is None or prompt_tokens <= tier.above:
            return self
        writes = (tier.cache_write_5m, tier.cache_write_1h)
        return replace(
            self,
            input=tier.input,
            cache_read=tier.cache_read,
            output=tier.output,
            cache_write_5m=self.cache_write_5m if writes[0] is None else writes[0],
            cache_write_1h=self.cache_write_1h if writes[1] is None else writes[1],
            long_context=None,
        )

    def write(self, ttl: Ttl) -> float:
        """What a token written to the cache costs: the write premium for ``ttl``, or the plain input price
        where the provider has none."""
        premium = self.cache_write_5m if ttl == "5m" else self.cache_write_1h
        return self.input if premium is None else premium


@frozen
class PriceTable:
    rows: tuple[Price, ...]
    path: str

    def row(self, model: str) -> Price | None:
        """The row for a model id as a log records it: the row of that very id, or the row whose id it is
        followed by a dated snapshot suffix; None when no row matches (never the nearest guess)."""
        for p in self.rows:
            for name in (p.model, *p.aliases):
                if model == name or (model.startswith(name) and _SNAPSHOT.match(model[len(name) :])):
                    return p
        return None

    def amended_by(self, other: PriceTable) -> PriceTable:
        """This table with ``other``'s rows in it: each replaces the row of its model, or is added (a
        ``--prices`` file amends the shipped table, row by row, rather than replacing it)."""
        replaced = {p.model for p in other.rows}
        kept = tuple(p for p in self.rows if p.model not in replaced)
        return PriceTable(other.rows + kept, f"{other.path} over {self.path}")


def default_table() -> PriceTable:
    """The table that ships with windowfit (``fitting/prices.json``)."""
    return parse_table(Path(__file__).with_name("prices.json").read_bytes(), "prices.json")


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
        rows.append(_row(row, path, i, partial(_line_of, data, i)))  # the line only for an error: 4 ms a row
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


def _row(row: object, path: str, index: int, line: Callable[[], int | None]) -> Price:
    def bad(message: str) -> InputError:
        return InputError(Location(path, line()), f"models[{index}]: {message}")

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
    unknown = set(row) - {"model", "provider", "read_on", "source", *_PRICE_KEYS, *_OPTIONAL_KEYS}
    if unknown:
        raise bad(f"unknown key(s): {', '.join(sorted(unknown))}")
    long_context = _long_context(row.get("long_context"), bad)
    storage = row.get("cache_storage_per_hour")
    if storage is not None and (isinstance(storage, bool) or not isinstance(storage, (int, float)) or storage < 0):
        raise bad('"cache_storage_per_hour" must be a price in USD per million tokens per hour (a number >= 0)')
    aliases = row.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and a for a in aliases):
        raise bad('"aliases" must be a list of model ids')
    note = row.get("note", "")
    if not isinstance(note, str):
        raise bad('"note" must be a string')
    window = _window(row.get("window"), bad)
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
        long_context,
        None if storage is None else float(storage),
        tuple(aliases),
        note,
        window,
    )


def _window(value: object, bad: Callable[[str], InputError]) -> Window | None:
    if value is None:
        return None
    what = (
        '"window" must be an object: "tokens" and "max_output" (numbers of tokens), "read_on" (YYYY-MM-DD), '
        '"source" (the page), and optionally "beta": "tokens", "header" and "source"'
    )
    if not isinstance(value, dict) or not {"tokens", "max_output", "read_on", "source"} <= set(value):
        raise bad(what)
    if set(value) - {"tokens", "max_output", "read_on", "source", "beta"}:
        raise bad(what)
    tokens, most, read_on, source = value["tokens"], value["max_output"], value["read_on"], value["source"]
    if not (_tokens(tokens) and _tokens(most) and _DATE.match(str(read_on)) and _page(source)):
        raise bad(what)
    beta = value.get("beta")
    if beta is not None:
        if not isinstance(beta, dict) or set(beta) != {"tokens", "header", "source"}:
            raise bad(what)
        if not (
            _tokens(beta["tokens"]) and isinstance(beta["header"], str) and beta["header"] and _page(beta["source"])
        ):
            raise bad(what)
        beta = BetaWindow(beta["tokens"], beta["header"], beta["source"])
    return Window(tokens, most, str(read_on), source, beta)


def _tokens(value: object) -> bool:
    return type(value) is int and value >= 1


def _page(value: object) -> bool:
    return isinstance(value, str) and value.startswith(("http://", "https://"))


def _long_context(value: object, bad: Callable[[str], InputError]) -> LongContext | None:
    if value is None:
        return None
    what = (
        '"long_context" must be an object: "above" (a number of tokens) and the input, cache_read and output '
        "prices (and the cache_write_5m and cache_write_1h prices, both or neither)"
    )
    if not isinstance(value, dict) or not {"above", *_LONG_KEYS} <= set(value) <= {
        "above",
        *_LONG_KEYS,
        *_LONG_WRITE_KEYS,
    }:
        raise bad(what)
    above = value["above"]
    if isinstance(above, bool) or not isinstance(above, int) or above < 1:
        raise bad(what)
    writes = [k for k in _LONG_WRITE_KEYS if k in value]
    if len(writes) == 1:
        raise bad(what)
    prices = [value[k] for k in (*_LONG_KEYS, *writes)]
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 for v in prices):
        raise bad(what)
    read = [float(v) for v in prices]
    return LongContext(above, *read[:3], *(read[3:] or (None, None)))


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
