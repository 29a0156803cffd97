"""The openai_chat format: many OpenAI chat conversations per file (tau-bench's
result array, a SWE-agent trajectory's history, JSON Lines of conversations),
exact counts on the corpus, hand-written fixtures for each quirk, the streaming
document reader, and sniffing."""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import DATA, require_shared
from typer.testing import Result

from windowfit.fitting import ToolCall, ToolResult, Transcript
from windowfit.fitting.errors import InvalidJson, UnknownShape
from windowfit.fitting.formats import Input, _document, detect, load_path
from windowfit.fitting.formats._document import iter_members
from windowfit.fitting.formats._sniff import scan_head
from windowfit.fitting.validate import check_request

Run = Callable[..., Result]

CORPUS = ("corpus", "transcripts", "openai_chat")
TAU_BENCH = "sierra-research_tau-bench__gpt-4o-airline.json"
SWE_AGENT = "SWE-agent_SWE-agent__marshmallow-code__marshmallow-1867.function_calling_replace_from_source.traj"
FIXTURES = DATA / "openai_chat"


def corpus(name: str) -> Path:
    return require_shared(*CORPUS, name)


def counts(transcripts: tuple[Transcript, ...]) -> dict[str, Any]:
    """What a test compares with the counts established from the raw file."""
    messages = [m for t in transcripts for m in t.messages]
    return {
        "transcripts": len(transcripts),
        "system": sum(len(t.system) for t in transcripts),
        "messages": len(messages),
        "roles": dict(Counter(m.role for m in messages)),
        "calls": sum(len(m.tool_calls) for m in messages),
        "results": sum(len(m.tool_results) for m in messages),
        "defects": dict(Counter(d.kind for t in transcripts for d in t.defects)),
        "skipped": sum(len(t.skipped) for t in transcripts),
        "line_kinds": [k for t in transcripts for k in t.line_kinds],
        "usage": sum(len(t.usage) for t in transcripts),
    }


# --------------------------------------------------------------------------
# The corpus


def test_tau_bench_counts() -> None:
    # Counted with a throwaway script using the stdlib json module on the raw file: 200 results, each
    # a `traj` of 5,308 messages in all (system 200, user 1,490, assistant 2,454, tool 1,164), 1,164
    # tool calls, 1,164 tool messages, each call answered in order by the tool message(s) right after
    # it; 73 calls reuse an id already used earlier in their trajectory. SOURCES.md gives 5,308
    # messages, 1,164 calls and 1,164 tool messages: its 5,308 counts each trajectory's leading system
    # message, which becomes the transcript's system prompt, so 5,308 - 200 = 5,108 messages remain.
    # (SOURCES.md also says "1 physical line": the file is pretty-printed over 53,013 lines.)
    ts = load_path(corpus(TAU_BENCH))
    assert counts(ts) == {
        "transcripts": 200,
        "system": 200,
        "messages": 5108,
        "roles": {"user": 1490, "assistant": 2454, "tool": 1164},
        "calls": 1164,
        "results": 1164,
        "defects": {"duplicate-call-id": 73},
        "skipped": 0,
        "line_kinds": [],
        "usage": 0,
    }
    assert {(t.format, t.dialect) for t in ts} == {("openai_chat", "openai")}
    assert ts[0].name == "task 0 trial 0"
    assert len({t.name for t in ts}) == 200
    assert any("user_cost" in note for note in ts[0].notes)  # why no measured usage
    for t in ts:
        assert check_request(t) == ()  # the reused ids were renamed, call and result alike


def test_tau_bench_message_lines_point_at_the_message_objects() -> None:
    path = corpus(TAU_BENCH)
    lines = path.read_text(encoding="utf-8").splitlines()
    ts = load_path(path)
    for t in (ts[0], ts[99], ts[199]):
        assert t.source.line is not None and lines[t.source.line - 1].strip() == "{"
        for m in t.messages:
            assert m.source.path == str(path) and m.source.line is not None
            assert lines[m.source.line - 1].strip() == "{"
            assert f'"role": "{m.role}"' in "".join(lines[m.source.line : m.source.line + 3])


def test_swe_agent_counts() -> None:
    # Counted with the stdlib json module: `history` holds 28 messages (system 1, user 1, assistant 13,
    # tool 13), 13 tool calls, 13 tool messages each with a one-id `tool_call_ids`; call ids are reused
    # 4 times (call_5iDd... four times, call_ahTo... twice). Matches SOURCES.md. The system message is
    # the system prompt, so 27 messages remain. info.model_stats sums tokens over all calls (0 here,
    # a replayed demonstration): no per-request counts, so no usage.
    ts = load_path(corpus(SWE_AGENT))
    assert counts(ts) == {
        "transcripts": 1,
        "system": 1,
        "messages": 27,
        "roles": {"user": 1, "assistant": 13, "tool": 13},
        "calls": 13,
        "results": 13,
        "defects": {"duplicate-call-id": 4},
        "skipped": 0,
        "line_kinds": [],
        "usage": 0,
    }
    (t,) = ts
    assert t.name == ""  # the file holds one conversation
    assert check_request(t) == ()
    renamed = [c.id for m in t.messages for c in m.tool_calls if "-dup" in c.id]
    assert renamed == [
        "call_5iDdbOYybq7L19vqXmR0DPaU-dup2",
        "call_ahToD2vM0aQWJPkRmy5cumru-dup2",
        "call_5iDdbOYybq7L19vqXmR0DPaU-dup3",
        "call_5iDdbOYybq7L19vqXmR0DPaU-dup4",
    ]
    assert all(m.extra == "" for m in t.messages)  # agent/message_type/thought/action are not sent
    assert any("model_stats" in note for note in t.notes)
    assert (t.messages[0].source.line, t.messages[-1].source.line) == (2793, 3141)


@pytest.mark.parametrize("name", [TAU_BENCH, SWE_AGENT])
def test_corpus_report_and_fit(run_cli: Run, tmp_path: Path, name: str) -> None:
    path = str(corpus(name))
    assert run_cli("report", path).exit_code == 0
    out = tmp_path / "out.json"
    result = run_cli("fit", path, "--index", "0", "--budget", "20000", "-o", str(out))
    assert result.exit_code in (0, 1), result.stderr
    if result.exit_code == 0:
        (fitted,) = load_path(out)
        assert fitted.dialect == "openai"
        assert check_request(fitted) == ()
    refused = run_cli("fit", path, "--budget", "20000", "--to", "same", "-o", str(tmp_path / "same.json"))
    assert refused.exit_code in (2, 3)
    assert "hint" in refused.stderr


def test_largest_tau_bench_trajectory_fits_under_a_small_budget(run_cli: Run, tmp_path: Path) -> None:
    path = corpus(TAU_BENCH)
    ts = load_path(path)
    index = max(range(len(ts)), key=lambda i: len(ts[i].messages))
    out = tmp_path / "out.json"
    result = run_cli("fit", str(path), "--index", str(index), "--budget", "4000", "-o", str(out))
    assert result.exit_code in (0, 1), result.stderr
    if result.exit_code == 0:
        (fitted,) = load_path(out)
        assert check_request(fitted) == ()


# --------------------------------------------------------------------------
# Fixtures, one per quirk


def test_tau_bench_like_results_one_transcript_each() -> None:
    ts = load_path(FIXTURES / "trajectories.json")
    assert [t.name for t in ts] == ["task 7 trial 0", "task 8 trial 0"]
    first, second = ts
    assert first.line_kinds == (("empty conversation", 1),)  # task 7 trial 1 has an empty traj
    assert [m.source.line for m in first.messages] == [8, 9, 16, 17, 24, 25]
    # call_a is used twice: the second call and its result are renamed together
    calls = [c.id for m in first.messages for c in m.tool_calls]
    results = [r.call_id for m in first.messages for r in m.tool_results]
    assert calls == results == ["call_a", "call_a-dup2"]
    assert [(d.kind, d.source.line) for d in first.defects] == [("duplicate-call-id", 17)]
    # an interrupted round: the loader records it and invents nothing (fit answers it)
    assert [(d.kind, d.source.line) for d in second.defects] == [("unanswered-call", 43)]
    assert [r.call_id for m in second.messages for r in m.tool_results] == ["call_b"]


def test_swe_agent_like_history() -> None:
    (t,) = load_path(FIXTURES / "swe_agent.traj")
    assert t.name == "" and len(t.system) == 1
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert t.messages[2].tool_results[0].call_id == "call_1"  # from tool_call_ids: ["call_1"]
    # one tool message answering two calls: kept for the first, the second is left unanswered
    assert [(d.kind, d.source.line) for d in t.defects] == [("unanswered-call", 18), ("several-call-ids", 30)]
    assert t.messages[4].tool_results[0].call_id == "call_2"
    assert all(m.extra == "" for m in t.messages)
    assert any("tokens_sent 1200" in note for note in t.notes)
    assert any("'trajectory'" in note for note in t.notes)


def test_mixed_conversation_shapes_in_one_array() -> None:
    ts = load_path(FIXTURES / "mixed.json")
    assert [t.name for t in ts] == [
        "conversation 1 (line 2)",
        "conversation 2 (line 13)",
        "conversation 3 (line 17)",
        "conversation 4 (line 18)",
    ]
    body, array, conversation, history = ts
    assert (len(body.system), [td.name for td in body.tools]) == (1, ["read"])
    assert orjson.loads(body.extra) == {"model": "gpt-4o", "temperature": 0}  # request keys, kept
    assert [m.role for m in array.messages] == ["user", "assistant"]
    assert [m.role for m in conversation.messages] == ["user", "assistant"]
    assert [d.kind for d in history.defects] == ["orphan-result"]


def test_conversations_one_per_line() -> None:
    ts = load_path(FIXTURES / "fine_tune.jsonl")
    assert [(t.name, len(t.system), len(t.messages)) for t in ts] == [
        ("conversation 1 (line 1)", 1, 2),
        ("conversation 2 (line 2)", 0, 4),
    ]
    assert isinstance(ts[1].messages[1].content[0], ToolCall)
    assert isinstance(ts[1].messages[2].content[0], ToolResult)


def test_broken_line_is_located_or_skipped(tmp_path: Path) -> None:
    good = (FIXTURES / "fine_tune.jsonl").read_bytes()
    path = tmp_path / "broken.jsonl"
    path.write_bytes(good + b'{"messages": [\n')
    with pytest.raises(InvalidJson) as exc:
        load_path(path, fmt="openai_chat")
    assert exc.value.location.line == 3
    ts = load_path(path, fmt="openai_chat", skip_invalid=True)
    assert len(ts) == 2 and [s.source.line for s in ts[0].skipped] == [3]


def test_item_that_is_not_a_conversation(tmp_path: Path) -> None:
    path = tmp_path / "items.json"
    path.write_text('[\n  {"traj": [{"role": "user", "content": "hi"}]},\n  {"score": 1}\n]\n')
    with pytest.raises(UnknownShape) as exc:
        load_path(path)
    assert exc.value.location.line == 3
    (t,) = load_path(path, skip_invalid=True)
    assert [s.source.line for s in t.skipped] == [3]


def test_broken_document_is_located(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[\n  {"traj": [{"role": "user", "content": "hi"}]},\n  {"traj": [{"role": }]}\n]\n')
    with pytest.raises(InvalidJson) as exc:
        load_path(path)
    assert (exc.value.location.line, exc.value.location.column) == (3, 22)


def test_a_message_array_or_request_body_stays_with_the_messages_format(tmp_path: Path) -> None:
    array = tmp_path / "array.json"
    array.write_text(json.dumps([{"role": "user", "content": "hi"}], indent=2))
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "x"}]}))
    for path in (array, body):
        assert detect(Input(str(path))).name == "messages"
        # forced with --from, the format hands them over too
        (t,) = load_path(path, fmt="openai_chat")
        assert t.format in ("messages", "request")


# --------------------------------------------------------------------------
# The streaming document reader


def test_members_are_the_same_whatever_the_chunk_size(monkeypatch: pytest.MonkeyPatch) -> None:
    text = '[\n  1234567,\n  -8.5e3, "a\\nb",\n  {"k": [1, 2, {"x": "é中"}]},\n  [],\n  null\n]\n'
    expected = json.loads(text)
    for chunk in range(1, 40):
        monkeypatch.setattr(_document, "CHUNK_CHARS", chunk)
        members = list(iter_members(io.BytesIO(text.encode()), "t.json"))
        assert [m.value for m in members] == expected
        assert [m.line for m in members] == [2, 3, 3, 4, 5, 6]
        assert all(json.loads(m.text) == m.value for m in members)


def test_object_members_and_trailing_garbage(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_document, "CHUNK_CHARS", 3)
    members = list(iter_members(io.BytesIO(b'\xef\xbb\xbf{"a": 1, "b": {"c": []}}'), "t.json"))
    assert [(m.key, m.value) for m in members] == [("a", 1), ("b", {"c": []})]
    with pytest.raises(InvalidJson):
        list(iter_members(io.BytesIO(b'{"a": 1} {"b": 2}'), "t.json"))


# --------------------------------------------------------------------------
# Sniffing


def test_head_shapes() -> None:
    shape = scan_head(b'[\n  {"task_id": 1, "info": {"role": "x"}, "traj": [')
    assert (shape.opening, shape.item_opening, shape.item_keys) == ("[", "{", ("task_id", "info", "traj"))
    assert (shape.complete, shape.multiline) == (False, True)
    shape = scan_head(b'{"messages": []}\n{"messages": []}\n')
    assert (shape.keys, shape.complete, shape.more) == (("messages",), True, True)
    shape = scan_head(b'{"trajectory": [{"action": "ls", "thought": "a \\"quoted\\" {brace')
    assert (shape.keys, shape.complete, shape.lines_of_values) == (("trajectory",), False, True)


# --------------------------------------------------------------------------
# Issue 9 item 4: SWE-agent's text protocol (tool output as plain user text)

SWE_TEXT = ("corpus", "new-formats", "swe_agent_text", "SWE-agent_SWE-agent__ctf_i_got_id_demo.traj")


def test_swe_agent_text_protocol_observations_are_cleared_at_a_small_budget() -> None:
    from windowfit.fitting.fit import fit
    from windowfit.fitting.transcript import Text

    path = require_shared(*SWE_TEXT)
    history = orjson.loads(path.read_bytes())["history"]
    # counted from the file: a user message right after an assistant message with an action
    expected = [
        history[i]["action"].split()[0]
        for i in range(len(history) - 1)
        if history[i]["role"] == "assistant" and history[i].get("action") and history[i + 1]["role"] == "user"
    ]
    (t,) = load_path(path)
    observed = [b.observation_of for m in t.messages for b in m.content if isinstance(b, Text) and b.observation_of]
    assert observed == expected and len(expected) == 20
    fitted = fit(t, budget=8_000)
    cleared = [r for r in fitted.plan.cleared if r.call_id.startswith("obs-")]
    assert fitted.plan.outcome in ("cleared", "turns-dropped") and cleared
    for dialect in ("anthropic", "openai"):
        assert check_request(fitted.transcript, dialect) == ()
    stubs = [
        b
        for m in fitted.transcript.messages
        for b in m.content
        if isinstance(b, Text) and "tool output cleared" in b.text
    ]
    assert len(stubs) == len(cleared)
