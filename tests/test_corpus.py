"""Smoke tests on the real corpus in ``../shared/corpus/transcripts`` (skipped
when it is absent), for the data the messages loader reads: tau-bench's OpenAI
message arrays and the Anthropic request bodies inside a claude-trace capture.
The files themselves are in formats of their own (Claude Code, Codex, claude-trace,
SWE-agent); loading those is the job of their format modules, not tested here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from windowfit.fitting import Estimator, Round, Transcript, build_report, fit, split_units
from windowfit.fitting.formats import Input, load
from windowfit.fitting.request import missing_parts, write_transcript
from windowfit.fitting.transcript import Dialect
from windowfit.fitting.validate import check_request
from windowfit.fitting.wire import anthropic, openai
from windowfit.fitting.wire.bodies import transcript_from_body

TAU_BENCH = ("corpus", "transcripts", "openai_chat", "sierra-research_tau-bench__gpt-4o-airline.json")
CLAUDE_TRACE = ("corpus", "transcripts", "anthropic_messages", "zkcpku_claude-trace-dev__test-traffic.jsonl")


def corpus_file(shared_dir: Path, parts: tuple[str, ...]) -> Path:
    path = shared_dir.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent")
    return path


def assert_rounds_pair_calls_with_results(t: Transcript) -> None:
    """Every round's results answer exactly its calls (when the data has them all)."""
    for unit in split_units(t.messages):
        if isinstance(unit, Round):
            answered = [r.call_id for m in t.messages[unit.start + 1 : unit.stop] for r in m.tool_results]
            assert set(answered) <= set(unit.call_ids)


def normalise_arguments(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages with each tool call's ``arguments`` parsed (the writer re-serialises them compactly)."""
    out = []
    for m in messages:
        calls = m.get("tool_calls")
        if calls:
            m = {
                **m,
                "tool_calls": [
                    {**c, "function": {**c["function"], "arguments": orjson.loads(c["function"]["arguments"])}}
                    for c in calls
                ],
            }
        out.append(m)
    return out


@pytest.mark.slow
def test_tau_bench_trajectories_load_and_round_trip(shared_dir: Path) -> None:
    items = orjson.loads(corpus_file(shared_dir, TAU_BENCH).read_bytes())
    # SOURCES.md: 200 trajectories, 5,308 messages, 1,164 tool calls and 1,164 tool messages
    assert len(items) == 200
    messages = calls = tool_messages = 0
    est = Estimator()
    for i, item in enumerate(items):
        (t,) = load(Input(f"tau-bench[{i}]", orjson.dumps(item["traj"])))
        # plain-text conversations look the same in both dialects: undecided reads as anthropic
        assert t.dialect == ("openai" if any(m.tool_calls for m in t.messages) else "anthropic")
        assert len(t.system) == 1  # each trajectory opens with its policy as a system message
        messages += len(t.messages) + 1
        calls += sum(len(m.tool_calls) for m in t.messages)
        tool_messages += sum(1 for m in t.messages if m.role == "tool")
        assert_rounds_pair_calls_with_results(t)
        assert build_report(t, est).tokens > 0
        # what the writer sends is the input, up to the arguments' whitespace
        assert normalise_arguments(openai.request_to_json(t)["messages"]) == normalise_arguments(item["traj"])
    assert (messages, calls, tool_messages) == (5308, 1164, 1164)


def canonical_anthropic(body: dict[str, Any]) -> dict[str, Any]:
    """The body as the writer emits it: string contents as one text block, no ``is_error: false``."""
    body = orjson.loads(orjson.dumps(body))
    if isinstance(body.get("system"), str):
        body["system"] = [{"type": "text", "text": body["system"]}]
    for m in body["messages"]:
        if isinstance(m["content"], str):
            m["content"] = [{"type": "text", "text": m["content"]}]
        for block in m["content"]:
            if block.get("type") == "tool_result":
                if isinstance(block.get("content"), str):
                    block["content"] = [{"type": "text", "text": block["content"]}] if block["content"] else []
                if block.get("is_error") is False:
                    del block["is_error"]
    return body


def test_claude_trace_request_bodies_load_and_round_trip(shared_dir: Path) -> None:
    path = corpus_file(shared_dir, CLAUDE_TRACE)
    est = Estimator()
    largest = (0, 0, 0)
    lines = path.read_bytes().splitlines()
    # SOURCES.md: 64 request/response lines; the largest request has 27 messages, 11 tool_use / 11 tool_result
    assert len(lines) == 64
    for n, line in enumerate(lines, start=1):
        body = orjson.loads(line)["request"]["body"]
        (t,) = load(Input(f"{path.name}:{n}", orjson.dumps(body)))
        assert (t.format, t.dialect) == ("request", "anthropic")
        assert_rounds_pair_calls_with_results(t)
        uses = sum(len(m.tool_calls) for m in t.messages)
        results = sum(len(m.tool_results) for m in t.messages)
        largest = max(largest, (len(t.messages), uses, results))
        assert build_report(t, est).tokens > est.preamble(t)
        assert anthropic.request_to_json(t) == canonical_anthropic(body)
    assert largest == (27, 11, 11)


@pytest.mark.parametrize("to", ["anthropic", "openai"])
def test_claude_trace_requests_become_bodies_that_can_be_sent(shared_dir: Path, to: Dialect) -> None:
    # Issue 7 item 6: every logged request, fitted and written for either API, keeps the
    # model, max_tokens, system and tools it recorded, and passes the provider's rules.
    path = corpus_file(shared_dir, CLAUDE_TRACE)
    transcripts = load(Input(str(path)))
    assert len(transcripts) > 1 and all(t.format == "anthropic_log" for t in transcripts)
    with_tools = 0
    for t in transcripts:
        recorded = orjson.loads(t.extra)
        fitted = fit(t, budget=10_000)
        if not fitted.plan.fits:
            continue
        body = orjson.loads(write_transcript(fitted.transcript, to=to))
        written = transcript_from_body(body, dialect=to)
        assert check_request(written, to) == ()
        assert body["model"] == recorded["model"]
        assert body["max_tokens" if to == "anthropic" else "max_completion_tokens"] == recorded["max_tokens"]
        assert len(body.get("tools", ())) == len(t.tools)
        assert bool(written.system) == bool(t.system)
        with_tools += bool(t.tools)
        assert missing_parts(fitted.transcript, to=to) == ()
    assert with_tools > 0
