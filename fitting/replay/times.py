"""When each request was sent, from the timestamps a log records (issue 14):
a provider's prompt cache keeps a prefix for a lifetime (5 minutes or an hour),
so a request sent longer than that after the one before reads nothing from it.

JSONL logs (Claude Code, Codex, claude-trace) put a ``timestamp`` on each line;
a step's time is its reply's line's. Files without timestamps give none, and
then every request is taken to follow the one before within the lifetime."""

from __future__ import annotations

from datetime import datetime

import orjson


def line_times(path: str) -> dict[int, float]:
    """Seconds since the epoch of each line of a JSONL file that records a top-level ``timestamp``
    (ISO 8601, or a number of seconds or milliseconds), by 1-based line; empty for any other file."""
    times: dict[int, float] = {}
    try:
        with open(path, "rb") as f:
            for number, line in enumerate(f, start=1):
                if b'"timestamp"' not in line:
                    continue
                try:
                    value = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                at = _seconds(value.get("timestamp")) if isinstance(value, dict) else None
                if at is not None:
                    times[number] = at
    except OSError:
        return {}
    return times


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
