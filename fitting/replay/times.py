"""What a log records of each line that the messages do not keep (issue 14): when
it was written, the lifetime of the cache writes its reply recorded, and whether
the reply is the harness's own rather than the model's.

A provider's prompt cache keeps a prefix for a lifetime (5 minutes or an hour),
so a request sent longer than that after the one before reads nothing from it.
JSONL logs (Claude Code, Codex, claude-trace) put a ``timestamp`` on each line;
a step's time is its reply's line's. Files without timestamps give none, and
then every request is taken to follow the one before within the lifetime.

Claude Code's usage splits a reply's cache writes by lifetime
(``cache_creation.ephemeral_5m_input_tokens`` and ``ephemeral_1h_input_tokens``),
and writes replies of its own (``model: "<synthetic>"``: "No response
requested.", an API error) that no request produced."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import field
from datetime import datetime
from typing import BinaryIO

import orjson

from .._frozen import frozen

KEY = b'"timestamp"'
CHUNK = 1 << 20
SYNTHETIC = "<synthetic>"
"""The model Claude Code records on a reply it wrote itself."""


@frozen
class LineFacts:
    """What ``line_facts`` read, by 1-based line."""

    times: dict[int, float] = field(default_factory=dict)
    """When the line was written, seconds since the epoch."""
    writes_1h: dict[int, float] = field(default_factory=dict)
    """The share of the line's recorded cache writes made with the 1-hour lifetime (0 to 1), where its usage
    splits them by lifetime and wrote any."""
    synthetic: frozenset[int] = frozenset()
    """Lines of a reply the harness wrote (``model: "<synthetic>"``): no request was sent for it."""


def line_facts(path: str, chunk: int = CHUNK) -> LineFacts:
    """What each line of a JSONL file that records a top-level ``timestamp`` (ISO 8601, or a number of
    seconds or milliseconds) says (``LineFacts``); empty for any other file.

    The file is searched for the key a chunk at a time, and only a line holding it is read and parsed:
    a long line without one (a request body alone on one line) is never held whole (issue 11, item 5)."""
    times: dict[int, float] = {}
    writes_1h: dict[int, float] = {}
    synthetic: set[int] = set()
    try:
        with open(path, "rb") as scan, open(path, "rb") as read:
            for number, start in lines_with(scan, KEY, chunk):
                read.seek(start)
                try:
                    value = orjson.loads(read.readline())
                except orjson.JSONDecodeError:
                    continue
                if not isinstance(value, dict):
                    continue
                at = _seconds(value.get("timestamp"))
                if at is not None:
                    times[number] = at
                message = value.get("message")
                if isinstance(message, dict):
                    if message.get("model") == SYNTHETIC:
                        synthetic.add(number)
                    share = _share_1h(message.get("usage"))
                    if share is not None:
                        writes_1h[number] = share
    except OSError:
        return LineFacts()
    return LineFacts(times, writes_1h, frozenset(synthetic))


def line_times(path: str, chunk: int = CHUNK) -> dict[int, float]:
    """``line_facts(path).times``."""
    return line_facts(path, chunk).times


def _share_1h(usage: object) -> float | None:
    """The 1-hour share of a usage's cache writes (``cache_creation``), None where it splits none."""
    split = usage.get("cache_creation") if isinstance(usage, dict) else None
    if not isinstance(split, dict):
        return None
    counts = [split.get(k) for k in ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")]
    short, long = (c if type(c) is int and c > 0 else 0 for c in counts)
    return long / (short + long) if short + long else None


def lines_with(f: BinaryIO, key: bytes, chunk: int = CHUNK) -> Iterator[tuple[int, int]]:
    """The 1-based number and starting offset of each line of ``f`` that contains ``key``, in order,
    each once, reading ``chunk`` bytes at a time (a line is what ``for line in f`` gives)."""
    line = 1  # the number of the line that starts at `start`
    start = 0  # where the current (last unfinished) line starts
    offset = 0  # the file offset of `buffer[0]`
    buffer = b""
    reported = 0  # the last line number yielded
    while True:
        block = f.read(chunk)
        if not block:
            break
        # Carry over only the bytes that could start a key cut by the chunk boundary (or, after a key
        # found near the end, the bytes from it on); their newlines are counted in the next round.
        searched = buffer + block
        found = searched.find(key)
        scanned = 0  # newlines in searched[:scanned] are already counted in `line`/`start`
        while found != -1:
            line += searched.count(b"\n", scanned, found)
            newline = searched.rfind(b"\n", scanned, found)
            if newline != -1:
                start = offset + newline + 1
            scanned = found
            if line != reported:
                reported = line
                yield line, start
            found = searched.find(key, found + 1)
        keep = min(len(key) - 1, len(searched))
        cut = len(searched) - keep
        if cut > scanned:
            line += searched.count(b"\n", scanned, cut)
            newline = searched.rfind(b"\n", scanned, cut)
            if newline != -1:
                start = offset + newline + 1
        else:
            cut = scanned
        buffer = searched[cut:]
        offset += cut


def _seconds(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value / 1000 if value > 10**11 else float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None
