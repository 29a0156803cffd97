"""The "gemini_cli" format: Gemini CLI chat recordings, the JSON document
(``session-*.json``) and the newer JSONL session (metadata line, records
re-appended by id, ``$set`` and ``$rewindTo`` lines); the real recording in
``../shared/corpus/new-formats/gemini_cli/`` and small fixtures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import DATA, require_shared
from typer.testing import Result

from windowfit.fitting import Transcript, fit
from windowfit.fitting.errors import EmptyTranscript, InputError, InvalidJson, UnknownShape
from windowfit.fitting.formats import load_path
from windowfit.fitting.formats.gemini_cli import sniff
from windowfit.fitting.request import write_transcript
from windowfit.fitting.transcript import Dialect, Text, ToolCall, ToolResult
from windowfit.fitting.validate import check_request
from windowfit.fitting.wire.bodies import transcript_from_body

GEMINI = DATA / "gemini_cli"
CORPUS_FILE = "codemie-ai_codemie-code__gemini-session-2025-12-01T21-45-5b959dae.json"


def corpus_session() -> Path:
    return require_shared("corpus", "new-formats", "gemini_cli", CORPUS_FILE)


def load_one(path: Path, **kwargs: bool) -> Transcript:
    (transcript,) = load_path(path, **kwargs)
    return transcript


def shape(t: Transcript) -> list[tuple[str, list[str]]]:
    """Each message's role and block kinds (calls and results with their ids)."""
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


def fits_and_passes_the_rules(t: Transcript, budget: int, to: Dialect) -> None:
    """Fitted at ``budget``, something is cleared, and the body written passes the provider's rules."""
    fitted = fit(t, budget=budget)
    assert fitted.plan.fits
    assert fitted.plan.cleared
    body = orjson.loads(write_transcript(fitted.transcript, to=to))
    assert check_request(transcript_from_body(body, dialect=to), to) == ()


# --------------------------------------------------------------------------
# The real recording (Gemini CLI, gemini-3-pro-image-preview)


def test_corpus_session_calls_and_results_are_counted_as_the_file_holds_them() -> None:
    path = corpus_session()
    records = orjson.loads(path.read_bytes())["messages"]
    calls = [c for r in records for c in r.get("toolCalls") or ()]
    answered = [c for c in calls if c.get("result") is not None]
    t = load_one(path)
    assert t.format == "gemini_cli" and t.dialect == "openai"
    assert [c.id for m in t.messages for c in m.tool_calls] == [c["id"] for c in calls]
    assert [r.call_id for m in t.messages for r in m.tool_results] == [c["id"] for c in answered]
    assert len(calls) == 10  # SOURCES.md: 14 messages, 10 tool calls
    assert sum(m.role == "user" for m in t.messages) == sum(r["type"] == "user" for r in records)
    assert t.defects == ()


def test_corpus_session_usage_is_the_recorded_tokens() -> None:
    path = corpus_session()
    records = orjson.loads(path.read_bytes())["messages"]
    # Gemini's input count includes the cached part: read without the cache is input - cached.
    # Its output count leaves the thoughts out: the reply's output is output + thoughts.
    expected = [
        (
            r["tokens"]["input"] - r["tokens"]["cached"],
            r["tokens"]["cached"],
            r["tokens"]["output"] + r["tokens"]["thoughts"],
        )
        for r in records
        if r["type"] == "gemini" and r.get("tokens", {}).get("input")
    ]
    t = load_one(path)
    assert [(u.input_tokens, u.cache_read_tokens, u.output_tokens) for u in t.usage] == expected
    assert all(u.cache_creation_tokens == 0 for u in t.usage)
    # each measured request ends just before the response it produced
    assert all(t.messages[u.before].role == "assistant" for u in t.usage)
    assert t.usage[0].before == 1 and t.usage[0].total == 2752


@pytest.mark.parametrize("to", ["openai", "anthropic"])
def test_corpus_session_fits_to_a_valid_request(to: Dialect) -> None:
    fits_and_passes_the_rules(load_one(corpus_session()), budget=8000, to=to)


def test_corpus_session_report_and_fit(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    path = str(corpus_session())
    assert run_cli("report", path).exit_code == 0
    out = tmp_path / "out.json"
    result = run_cli("fit", path, "--budget", "8000", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    body = orjson.loads(out.read_bytes())
    assert body["model"] == "gemini-3-pro-image-preview"
    assert check_request(transcript_from_body(body, dialect="openai"), "openai") == ()
    same = run_cli("fit", path, "--budget", "8000", "--to", "same", "-o", str(tmp_path / "same.json"))
    assert same.exit_code in (2, 3)
    assert not (tmp_path / "same.json").exists()


# --------------------------------------------------------------------------
# Fixtures: tests/data/gemini_cli/session.json and session.jsonl


def test_json_recording_structure() -> None:
    t = load_one(GEMINI / "session.json")
    assert shape(t) == [
        ("user", ["text"]),
        ("assistant", ["call list_directory-1-a", "call read_file-1-b"]),
        ("tool", ["result list_directory-1-a"]),
        ("tool", ["result read_file-1-b"]),
        ("assistant", ["call run_shell_command-1-c"]),
        ("tool", ["result run_shell_command-1-c error"]),
        ("assistant", ["text"]),
    ]
    results = [r for m in t.messages for r in m.tool_results]
    assert [r.content for r in results] == [
        (Text("setup.py\nREADME.md"),),
        (Text("from setuptools import setup\nsetup(name='demo')\n"),),
        (Text("exit code 1: no such command"),),
    ]
    assert [r.name for r in results] == ["list_directory", "read_file", "run_shell_command"]
    call = t.messages[1].tool_calls[1]
    assert orjson.loads(call.input_json) == {"file_path": "/src/setup.py"}
    # info and error records are shown to the user, never sent; thoughts are not sent back
    assert dict(t.line_kinds) == {"message/error": 1, "message/info": 1}
    assert not any("I will list the folder first." in str(b) for m in t.messages for b in m.content)
    assert any("1 thought summary" in n for n in t.notes)
    assert orjson.loads(t.extra) == {"model": "gemini-2.5-pro"}
    # lines of the records in the pretty-printed file: the id of m2 is on line 14, of m6 on line 134
    assert t.messages[1].source.line == 14
    assert t.messages[6].source.line == 134


def test_json_recording_usage() -> None:
    t = load_one(GEMINI / "session.json")
    # tokens {input 1200, cached 200}, {1500, 0}, {1700, 1500}; each before its gemini message
    # (messages 1, 4 and 6 in the structure above)
    # output: 30 + 12 thoughts, 20 + 0, 10 + 0
    assert [(u.before, u.input_tokens, u.cache_read_tokens, u.output_tokens) for u in t.usage] == [
        (1, 1000, 200, 42),
        (4, 1500, 0, 20),
        (6, 200, 1500, 10),
    ]
    assert [u.total for u in t.usage] == [1200, 1500, 1700]


def test_jsonl_session_last_copy_wins_rewind_drops_and_broken_line_is_located() -> None:
    with pytest.raises(InvalidJson) as caught:
        load_one(GEMINI / "session.jsonl")
    assert caught.value.location.line == 8
    t = load_one(GEMINI / "session.jsonl", skip_invalid=True)
    # line 3 is m2 while its calls ran (no results); line 4 is m2 again, answered: it wins,
    # in m2's place. m7 (line 6) is dropped by the rewind on line 7.
    assert shape(t) == [
        ("user", ["text"]),
        ("assistant", ["call list_directory-1-a", "call read_file-1-b"]),
        ("tool", ["result list_directory-1-a"]),
        ("tool", ["result read_file-1-b"]),
        ("user", ["text", "text"]),
        ("assistant", ["text"]),
    ]
    assert t.messages[1].source.line == 4
    assert t.messages[4].content == (Text("Thanks, "), Text("summarise it."))
    assert [s.source.line for s in t.skipped] == [8]
    assert [d.kind for d in t.defects] == ["unparseable-line"]
    assert dict(t.line_kinds) == {"$rewindTo": 1, "$set": 1, "metadata": 1}
    assert [(u.before, u.input_tokens, u.cache_read_tokens) for u in t.usage] == [(1, 1000, 200), (5, 2000, 0)]
    assert check_request(t) == ()


def test_unanswered_call_is_a_defect(tmp_path: Path) -> None:
    doc: dict[str, Any] = orjson.loads((GEMINI / "session.json").read_bytes())
    del doc["messages"][1]["toolCalls"][0]["result"]
    path = tmp_path / "session-x.json"
    path.write_bytes(orjson.dumps(doc))
    t = load_one(path)
    # orjson writes the document on one line: the call is on line 1
    assert [(d.kind, d.source.line) for d in t.defects] == [("unanswered-call", 1)]
    assert "list_directory-1-a" in t.defects[0].detail


def test_sniff_claims_the_metadata_first_and_nothing_else() -> None:
    assert sniff((GEMINI / "session.json").read_bytes())
    assert sniff((GEMINI / "session.jsonl").read_bytes())
    # a Claude Code line carries a sessionId, never a projectHash
    assert not sniff(b'{"parentUuid": null, "sessionId": "s", "type": "user"}\n')
    assert not sniff(b'{"messages": [], "sessionId": "s", "projectHash": "h"}')
    assert not sniff(b'[{"sessionId": "s", "projectHash": "h"}]')


def test_forcing_gemini_cli_on_another_shape_is_an_error_naming_the_line() -> None:
    with pytest.raises(InputError) as claimed:  # another format claims it: the registry says which
        load_path(DATA / "codex" / "modern.jsonl", fmt="gemini_cli", skip_invalid=True)
    assert claimed.value.location.line == 1
    assert "codex" in claimed.value.message
    with pytest.raises(UnknownShape) as caught:  # no format claims it: the loader says what it missed
        load_path(DATA / "fit" / "fits.jsonl", fmt="gemini_cli", skip_invalid=True)
    assert caught.value.location.line == 1
    assert "metadata" in caught.value.message
    with pytest.raises(InputError):
        load_path(DATA / "openai_chat" / "mixed.json", fmt="gemini_cli")


def test_cli_report_and_fit_on_the_fixture(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    result = run_cli("report", str(GEMINI / "session.json"))
    assert result.exit_code == 0
    assert "(gemini_cli, openai)" in result.stdout
    out = tmp_path / "out.json"
    fitted = run_cli("fit", str(GEMINI / "session.json"), "--budget", "100000", "-o", str(out))
    assert fitted.exit_code == 0, fitted.stderr
    body = orjson.loads(out.read_bytes())
    assert [m["role"] for m in body["messages"]] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]


def test_a_session_with_only_its_metadata_line_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "session-new.jsonl"
    path.write_bytes((GEMINI / "session.jsonl").read_bytes().splitlines()[0] + b"\n")
    with pytest.raises(EmptyTranscript):
        load_one(path)


@pytest.mark.parametrize("bad", [[None], "200", 1.5, {"n": 1}, True, -3])
def test_mistyped_token_counts_count_as_none_not_a_crash(tmp_path: Path, bad: object) -> None:
    # The fuzzer found "cached": [null] raising TypeError from int(); a count that is not a
    # non-negative integer is read as no count, as Claude Code's usage is.
    doc: dict[str, Any] = orjson.loads((GEMINI / "session.json").read_bytes())
    first = next(r for r in doc["messages"] if r.get("type") == "gemini" and r.get("tokens"))
    first["tokens"] = {**first["tokens"], "cached": bad, "output": bad, "thoughts": bad}
    path = tmp_path / "session.json"
    path.write_bytes(orjson.dumps(doc))
    t = load_one(path)
    assert (t.usage[0].input_tokens, t.usage[0].cache_read_tokens, t.usage[0].output_tokens) == (1200, 0, 0)
