"""The "copilot_cli" format: GitHub Copilot CLI session events (``events.jsonl``);
the real session in ``../shared/corpus/new-formats/copilot_cli/`` and a small fixture."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from conftest import DATA, require_shared
from typer.testing import Result

from windowfit.fitting import Transcript, fit
from windowfit.fitting.errors import InputError, InvalidJson
from windowfit.fitting.formats import load_path
from windowfit.fitting.formats.copilot_cli import sniff
from windowfit.fitting.request import write_transcript
from windowfit.fitting.transcript import Dialect, Text, ToolCall, ToolResult
from windowfit.fitting.validate import check_request
from windowfit.fitting.wire.bodies import transcript_from_body

COPILOT = DATA / "copilot_cli"
CORPUS_FILE = "Mai0313_VibeCodingTracker__copilot.jsonl"


def corpus_session() -> Path:
    return require_shared("corpus", "new-formats", "copilot_cli", CORPUS_FILE)


def load_one(path: Path, **kwargs: bool) -> Transcript:
    (transcript,) = load_path(path, **kwargs)
    return transcript


def shape(t: Transcript) -> list[tuple[str, list[str]]]:
    out = []
    for m in t.messages:
        kinds = []
        for b in m.content:
            if isinstance(b, ToolCall):
                kinds.append(f"call {b.id}")
            elif isinstance(b, ToolResult):
                kinds.append(f"result {b.call_id}" + (" error" if b.is_error else ""))
            else:
                kinds.append(type(b).__name__.lower())
        out.append((m.role, kinds))
    return out


# --------------------------------------------------------------------------
# The real session (Copilot CLI 1.0.34, claude-sonnet-4.6)


def events(path: Path) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def test_corpus_session_calls_and_results_are_counted_as_the_file_holds_them() -> None:
    path = corpus_session()
    rows = events(path)
    requests = [r["toolCallId"] for e in rows if e["type"] == "assistant.message" for r in e["data"]["toolRequests"]]  # type: ignore[index]
    completed = [e["data"]["toolCallId"] for e in rows if e["type"] == "tool.execution_complete"]  # type: ignore[index]
    t = load_one(path)
    assert t.format == "copilot_cli" and t.dialect == "openai"
    assert [c.id for m in t.messages for c in m.tool_calls] == requests
    assert sorted(r.call_id for m in t.messages for r in m.tool_results) == sorted(completed)
    assert (len(requests), len(completed)) == (11, 13)
    # two executions in the file answer no request of the model: reported, not hidden
    unrequested = sorted(set(completed) - set(requests))
    assert sorted(d.detail.split()[2] for d in t.defects if d.kind == "orphan-result") == unrequested
    assert sum(m.role == "user" for m in t.messages) == sum(e["type"] == "user.message" for e in rows)
    system = [e["data"]["content"] for e in rows if e["type"] == "system.message"]  # type: ignore[index]
    assert t.system == (Text(system[-1]),)  # type: ignore[arg-type]


@pytest.mark.parametrize("to", ["openai", "anthropic"])
def test_corpus_session_fits_to_a_valid_request(to: Dialect) -> None:
    # the recorded system prompt alone is about 9,500 estimated tokens: 12,000 leaves room to clear
    t = load_one(corpus_session())
    fitted = fit(t, budget=12_000)
    assert fitted.plan.fits
    assert fitted.plan.cleared
    body = orjson.loads(write_transcript(fitted.transcript, to=to))
    assert check_request(transcript_from_body(body, dialect=to), to) == ()
    assert bool(body.get("system")) or body["messages"][0]["role"] == "system"


def test_corpus_session_report(run_cli: Callable[..., Result]) -> None:
    result = run_cli("report", str(corpus_session()))
    assert result.exit_code == 0
    assert "(copilot_cli, openai)" in " ".join(result.stdout.split())  # the header may wrap at a long path


# --------------------------------------------------------------------------
# Fixture: tests/data/copilot_cli/events.jsonl


def test_events_structure() -> None:
    with pytest.raises(InvalidJson) as caught:
        load_one(COPILOT / "events.jsonl")
    assert caught.value.location.line == 11
    t = load_one(COPILOT / "events.jsonl", skip_invalid=True)
    # results in the order the tools completed (call_2 failed first), right after their calls
    assert shape(t) == [
        ("user", ["text"]),
        ("assistant", ["text", "call call_1", "call call_2"]),
        ("tool", ["result call_2 error"]),
        ("tool", ["result call_1"]),
        ("assistant", ["text"]),
    ]
    assert t.system == (Text("You are the GitHub Copilot CLI."),)
    assert t.messages[0].content == (
        Text("<current_datetime>2026-02-01</current_datetime>\n\nWhy does the build fail?"),
    )
    results = [r for m in t.messages for r in m.tool_results]
    assert [(r.name, r.content) for r in results] == [
        ("bash", (Text("make: *** No rule to make target 'al'.  Stop."),)),
        ("view", (Text("all: al\n\tcc main.c\n"),)),
    ]
    assert orjson.loads(t.messages[1].tool_calls[1].input_json) == {"command": "make"}
    assert orjson.loads(t.extra) == {"model": "gpt-5"}
    assert dict(t.line_kinds) == {
        "assistant.turn_end": 1,
        "assistant.turn_start": 1,
        "session.model_change": 1,
        "session.shutdown": 1,
        "session.start": 1,
        "tool.execution_start": 2,
    }
    assert [(d.kind, d.source.line) for d in t.defects] == [("unparseable-line", 11)]
    assert not any("Check the Makefile" in str(b) for m in t.messages for b in m.content)
    assert check_request(t) == ()
    assert t.usage == ()


def test_unanswered_request_is_a_defect(tmp_path: Path) -> None:
    lines = (COPILOT / "events.jsonl").read_bytes().splitlines()
    kept = [
        line
        for line in lines
        if b'"call_1", "success"' not in line
        and not line.startswith(b'{"type": "tool.execution_start", "data": {"toolCallId": "call_3"')
    ]
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(kept) + b"\n")
    t = load_one(path)
    assert [(d.kind, d.source.line) for d in t.defects] == [("unanswered-call", 6)]


def test_sniff_claims_the_session_start_line_only() -> None:
    assert sniff((COPILOT / "events.jsonl").read_bytes())
    assert not sniff(b'{"type": "session.start", "data": {"sessionId": "x"}}\n')
    assert not sniff(b'{"type": "user.message", "data": {"content": "hi", "producer": "copilot-agent"}}\n')
    assert not sniff(b'{"role": "user", "content": "session.start copilot-agent"}\n')
    assert sniff((COPILOT / "history-session.json").read_bytes())
    assert not sniff(b'{"sessionId": "s", "projectHash": "h", "messages": []}')  # Gemini CLI


def test_forcing_copilot_cli_on_another_shape_is_an_error() -> None:
    with pytest.raises(InputError):
        load_path(DATA / "codex" / "modern.jsonl", fmt="copilot_cli")


def test_cli_fit_writes_an_openai_body(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = run_cli("fit", str(COPILOT / "events.jsonl"), "--skip-invalid", "--budget", "100000", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    body = orjson.loads(out.read_bytes())
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert body["model"] == "gpt-5"


# --------------------------------------------------------------------------
# The older session document: tests/data/copilot_cli/history-session.json


def test_older_session_document_reads_its_chat_messages() -> None:
    t = load_one(COPILOT / "history-session.json")
    assert t.format == "copilot_cli" and t.dialect == "openai"
    assert t.system == (Text("You are GitHub Copilot CLI."),)
    assert shape(t) == [
        ("user", ["text"]),
        ("assistant", ["text", "call call_v1"]),
        ("tool", ["result call_v1"]),
        ("assistant", ["text"]),
        ("user", ["text"]),
    ]
    call = t.messages[1].tool_calls[0]
    assert (call.name, orjson.loads(call.input_json)) == (
        "str_replace_editor",
        {"command": "view", "path": "/w/notes.txt"},
    )
    assert t.messages[2].tool_results[0].content == (Text("1. buy milk\n2. call Ana\n"),)
    # the timeline is what the terminal showed: counted, not read
    assert dict(t.line_kinds) == {
        "timeline/copilot": 2,
        "timeline/tool_call_completed": 1,
        "timeline/tool_call_requested": 1,
        "timeline/user": 1,
    }
    assert t.defects == ()


def test_forcing_copilot_cli_on_a_document_of_another_shape_names_the_line() -> None:
    # the registry names the format that does claim the file (issue 9, item 5)
    with pytest.raises(InputError) as caught:
        load_path(DATA / "openai_chat" / "mixed.json", fmt="copilot_cli")
    assert caught.value.location.line == 1
    assert "openai_chat" in caught.value.message
