"""``line_times``: the send time of each line that records a top-level ``timestamp``, found without
holding a long line that has none (issue 11, item 5)."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from windowfit.fitting.replay.times import KEY, line_facts, line_times, lines_with


def naive(data: bytes, key: bytes) -> list[tuple[int, int]]:
    out, start = [], 0
    for number, line in enumerate(io.BytesIO(data), start=1):
        if key in line:
            out.append((number, start))
        start += len(line)
    return out


pieces = st.sampled_from([b"\n", b"x", b'"', b"timestamp", KEY, b'"time', b'stamp"', b"\r\n", b"{}"])


@settings(max_examples=300, deadline=None)
@given(st.lists(pieces, max_size=40).map(b"".join), st.integers(min_value=1, max_value=24))
def test_lines_with_finds_what_a_line_by_line_search_finds(data: bytes, chunk: int) -> None:
    assert list(lines_with(io.BytesIO(data), KEY, chunk)) == naive(data, KEY)


def test_times_by_line_and_a_long_line_without_the_key(tmp_path: Path) -> None:
    lines = [
        orjson.dumps({"type": "user", "timestamp": "2026-12-01T10:00:00Z"}),
        b'{"model": "m", "messages": [' + b'"' + b"y" * 50_000 + b'"]}',
        orjson.dumps({"timestamp": 1_796_119_200_000}),  # milliseconds
        orjson.dumps({"timestamp": 1_796_119_260}),
        b'not json but has "timestamp"',
        orjson.dumps({"nested": {"timestamp": 5}}),  # not top level
    ]
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    for chunk in (7, 4096, 1 << 20):
        times = line_times(str(path), chunk)
        assert times == {1: 1_796_119_200.0, 3: 1_796_119_200.0, 4: 1_796_119_260.0}


def test_a_missing_file_has_no_times(tmp_path: Path) -> None:
    assert line_times(str(tmp_path / "absent.jsonl")) == {}


def test_facts_of_claude_code_lines_the_lifetimes_of_their_writes_and_the_harnesss_own_replies(tmp_path: Path) -> None:
    def reply(line: int, model: str, five: int, hour: int) -> bytes:
        usage = {"cache_creation": {"ephemeral_5m_input_tokens": five, "ephemeral_1h_input_tokens": hour}}
        return orjson.dumps({"timestamp": line, "message": {"model": model, "usage": usage}})

    lines = [
        reply(1, "claude-sonnet-4-5", 0, 400),
        reply(2, "claude-sonnet-4-5", 300, 100),
        reply(3, "claude-sonnet-4-5", 0, 0),  # wrote nothing: no share
        reply(4, "<synthetic>", 0, 0),
        orjson.dumps({"timestamp": 5, "message": {"model": "m", "usage": {"cache_creation_input_tokens": 9}}}),
    ]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    facts = line_facts(str(path))
    assert facts.writes_1h == {1: 1.0, 2: 0.25}
    assert facts.synthetic == frozenset({4})
    assert facts.times == {n: float(n) for n in range(1, 6)}
