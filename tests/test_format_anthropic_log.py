"""The anthropic_log format: Anthropic request bodies logged one per line, bare
or wrapped in HTTP captures (claude-trace); each request is a transcript with
the response's usage as its measured size. Exact counts on the corpus, fixtures
for each kind of line, and sniffing."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import DATA, require_shared
from typer.testing import Result

from windowfit.fitting.errors import EmptyTranscript, InvalidJson
from windowfit.fitting.formats import FORMATS, Input, detect, load_path
from windowfit.fitting.transcript import Source, Usage
from windowfit.fitting.validate import check_request

Run = Callable[..., Result]

CLAUDE_TRACE = ("corpus", "transcripts", "anthropic_messages", "zkcpku_claude-trace-dev__test-traffic.jsonl")
FIXTURES = DATA / "anthropic_log"
BODY = {
    "model": "claude-sonnet-4-20250514",
    "max_tokens": 1024,
    "system": [{"type": "text", "text": "You are Claude Code."}],
    "messages": [{"role": "user", "content": "Hi"}],
}


# --------------------------------------------------------------------------
# The corpus


def test_claude_trace_counts() -> None:
    # Counted with a throwaway script using the stdlib json module on the raw file: 64 lines, each a
    # POST to /v1/messages whose body has messages: 252 messages (user 158, assistant 94), 63 system
    # blocks (18 requests have no system), 85 tool_use and 85 tool_result blocks, 17 requests with
    # tools, models {claude-3-5-haiku-20241022: 47, claude-sonnet-4-20250514: 17}, largest request 27
    # messages with 11 tool_use / 11 tool_result (line 35). Every response has usage: 18 in a JSON
    # body, 46 in the message_start event of a streamed body_raw; summed input 5,853, cache creation
    # 45,598, cache read 279,790 tokens. Matches SOURCES.md (64 lines, 17 with tools, the models, the
    # largest request).
    path = require_shared(*CLAUDE_TRACE)
    ts = load_path(path)
    messages = [m for t in ts for m in t.messages]
    assert len(ts) == 64
    assert {(t.format, t.dialect) for t in ts} == {("anthropic_log", "anthropic")}
    assert len(messages) == 252
    assert dict(Counter(m.role for m in messages)) == {"user": 158, "assistant": 94}
    assert sum(len(t.system) for t in ts) == 63
    assert sum(len(m.tool_calls) for m in messages) == 85
    assert sum(len(m.tool_results) for m in messages) == 85
    assert sum(1 for t in ts if t.tools) == 17
    assert [d for t in ts for d in t.defects] == []
    assert [s for t in ts for s in t.skipped] == []
    assert [k for t in ts for k in t.line_kinds] == []
    usage = [u for t in ts for u in t.usage]
    assert len(usage) == 64
    assert all(t.usage[0].before == len(t.messages) for t in ts)
    assert sum(u.input_tokens for u in usage) == 5853
    assert sum(u.cache_creation_tokens for u in usage) == 45598
    assert sum(u.cache_read_tokens for u in usage) == 279790
    largest = max(ts, key=lambda t: len(t.messages))
    assert largest.name == "request 35 (line 35, claude-sonnet-4-20250514)"
    assert (len(largest.messages), sum(len(m.tool_calls) for m in largest.messages)) == (27, 11)
    # output 1,206: the final count of the last message_delta, not message_start's snapshot
    assert largest.usage == (Usage(27, 3, 12072, 0, Source(str(path), 35), 1206),)
    assert all(m.source == Source(str(path), 35) for m in largest.messages)
    models = Counter(t.name.rsplit(", ", 1)[1].rstrip(")") for t in ts)
    assert models == {"claude-3-5-haiku-20241022": 47, "claude-sonnet-4-20250514": 17}


@pytest.mark.parametrize("index", ["0", "34"])
def test_corpus_report_and_fit(run_cli: Run, tmp_path: Path, index: str) -> None:
    path = str(require_shared(*CLAUDE_TRACE))
    if index == "0":
        assert run_cli("report", path).exit_code == 0
    out = tmp_path / "out.json"
    result = run_cli("fit", path, "--index", index, "--budget", "20000", "-o", str(out))
    assert result.exit_code in (0, 1), result.stderr
    if result.exit_code == 0:
        (fitted,) = load_path(out)
        assert (fitted.format, fitted.dialect) == ("request", "anthropic")
        assert check_request(fitted) == ()
    refused = run_cli("fit", path, "--budget", "20000", "--to", "same", "-o", str(tmp_path / "same.json"))
    assert refused.exit_code in (2, 3)
    assert "hint" in refused.stderr


# --------------------------------------------------------------------------
# Fixtures


def test_captures_one_transcript_per_messages_request() -> None:
    path = FIXTURES / "captures.jsonl"
    ts = load_path(path)
    assert [t.name for t in ts] == [
        "request 1 (line 1, claude-3-5-haiku-20241022)",
        "request 2 (line 3, claude-sonnet-4-20250514)",
        "request 3 (line 5, claude-sonnet-4-20250514)",
    ]
    first, streamed, rejected = ts
    # what is not a Messages request is counted, on the file's first transcript
    assert first.line_kinds == (("GET /v1/models", 1), ("POST /v1/messages/count_tokens", 1))
    assert first.usage == (Usage(1, 12, 0, 0, Source(str(path), 1), 1),)  # from the JSON body
    assert streamed.usage == (Usage(3, 4, 300, 15000, Source(str(path), 3), 1),)  # from message_start
    assert [(d.kind, d.source.line) for d in rejected.defects] == [("orphan-result", 5), ("error-response", 5)]
    assert rejected.usage == ()
    # request-level keys are kept for the output body, the response is not part of the transcript
    assert json.loads(streamed.extra) == {"model": "claude-sonnet-4-20250514", "max_tokens": 1024, "stream": True}
    assert [m.role for m in streamed.messages] == ["user", "assistant", "user"]


def test_bare_bodies_one_per_line() -> None:
    ts = load_path(FIXTURES / "bodies.jsonl")
    assert [(t.name, len(t.messages), len(t.tools), len(t.system)) for t in ts] == [
        ("request 1 (line 1, claude-sonnet-4-20250514)", 1, 1, 1),
        ("request 2 (line 3, claude-sonnet-4-20250514)", 3, 1, 1),
    ]
    assert ts[0].line_kinds == (("note", 1),)
    assert all(t.usage == () for t in ts)  # a bare body carries no response


def test_one_capture_as_a_pretty_printed_document() -> None:
    (t,) = load_path(FIXTURES / "capture.json")
    assert (t.format, len(t.messages), [u.total for u in t.usage]) == ("anthropic_log", 3, [12])


def test_broken_line_is_located_or_skipped(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes((FIXTURES / "captures.jsonl").read_bytes() + b'{"request": {"body": \n')
    with pytest.raises(InvalidJson) as exc:
        load_path(path)
    assert exc.value.location.line == 6
    ts = load_path(path, skip_invalid=True)
    assert [s.source.line for s in ts[0].skipped] == [6]


def test_a_log_without_requests_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text('{"request": {"method": "GET", "url": "https://x/v1/models", "body": null}}\n' * 2)
    with pytest.raises(EmptyTranscript, match="GET /v1/models 2"):
        load_path(path)


def test_one_body_alone_is_the_messages_formats_request(tmp_path: Path) -> None:
    path = tmp_path / "body.json"
    path.write_text(json.dumps(BODY))
    assert detect(Input(str(path))).name == "messages"
    (t,) = load_path(path, fmt="anthropic_log")  # even when forced
    assert (t.format, t.dialect) == ("request", "anthropic")


def test_long_first_lines(tmp_path: Path) -> None:
    """Lines longer than the 64 KB a sniffer sees: JSON Lines of bodies, or one body alone."""
    big = {**BODY, "messages": [{"role": "user", "content": "x" * 70_000}]}
    lines = tmp_path / "log.jsonl"
    lines.write_text(json.dumps(big) + "\n" + json.dumps(BODY) + "\n")
    assert detect(Input(str(lines))).name == "anthropic_log"
    assert [len(t.messages) for t in load_path(lines)] == [1, 1]
    alone = tmp_path / "body.jsonl"
    alone.write_text(json.dumps(big) + "\n")
    (t,) = load_path(alone)
    assert t.format == "request"


# --------------------------------------------------------------------------
# Sniffing


def test_plain_message_lines_are_not_a_log() -> None:
    sniff = FORMATS["anthropic_log"].sniff
    assert not sniff(b'{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "yo"}\n')
    assert not sniff(json.dumps(BODY).encode())  # one body: the messages format's document
    assert sniff((json.dumps(BODY) + "\n").encode() * 2)
    openai_lines = b'{"model": "gpt-4o", "messages": [{"role": "system", "content": "s"}]}\n' * 2
    assert not sniff(openai_lines)
    assert FORMATS["openai_chat"].sniff(openai_lines)
