"""The "codex" format: Codex CLI rollouts, current ({timestamp, type, payload})
and legacy (no envelope) layouts; the real rollout in the corpus, and small
fixtures for parallel calls, custom tools, compaction and broken files."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from conftest import DATA, require_shared
from typer.testing import Result

from windowfit.fitting import Estimator, Thinking, Transcript
from windowfit.fitting.errors import InvalidJson, UnknownShape
from windowfit.fitting.formats import load_path
from windowfit.fitting.formats.codex import sniff
from windowfit.fitting.transcript import Other, Text, ToolCall, ToolResult
from windowfit.fitting.validate import check_request

CODEX = DATA / "codex"
CORPUS_FILE = "AcidicSoil_codex-session-view__rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"


def corpus_rollout() -> Path:
    return require_shared("corpus", "transcripts", "codex", CORPUS_FILE)


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
                kinds.append(f"result {b.call_id}")
            else:
                kinds.append(type(b).__name__.lower())
        out.append((m.role, kinds))
    return out


def texts(t: Transcript) -> list[str]:
    return [b.text for m in t.messages for b in m.content if isinstance(b, Text)]


# --------------------------------------------------------------------------
# The corpus rollout (Codex CLI 0.58.0, gpt-5.1-codex)


def test_corpus_rollout_counts() -> None:
    t = load_one(corpus_rollout())
    # Counted with a throwaway stdlib-json script over the raw lines: 279 lines; response_item
    # payload types message 2 (both role user), reasoning 38, function_call 39,
    # function_call_output 39, ghost_snapshot 1 (as SOURCES.md lists). Every model-side item run
    # (reasoning and/or function_call, between outputs) is one assistant message: 39 runs.
    assert (t.format, t.dialect, t.name) == ("codex", "openai", "")
    assert len(t.messages) == 80
    assert Counter(m.role for m in t.messages) == {"user": 2, "assistant": 39, "tool": 39}
    assert sum(len(m.tool_calls) for m in t.messages) == 39
    assert sum(len(m.tool_results) for m in t.messages) == 39
    assert sum(isinstance(b, Thinking) for m in t.messages for b in m.content) == 38
    assert t.skipped == ()
    assert t.defects == ()  # every call answered right after it (SOURCES.md: unanswered 0)
    assert t.context_start == 0  # no compaction
    # SOURCES.md's record types, with messages taken out: 279 lines = 118 item lines read as
    # messages + these 161.
    assert dict(t.line_kinds) == {
        "event_msg/agent_reasoning": 39,
        "event_msg/token_count": 79,
        "event_msg/user_message": 1,
        "response_item/ghost_snapshot": 1,
        "session_meta": 1,
        "turn_context": 40,
    }
    assert t.system == ()  # session_meta says "instructions": null
    assert any("does not record the instructions" in n for n in t.notes)
    assert orjson.loads(t.extra) == {"model": "gpt-5.1-codex"}  # from turn_context


def test_corpus_rollout_usage_points() -> None:
    t = load_one(corpus_rollout())
    # 79 token_count events: 1 with info null, 78 with counts, each measurement written twice
    # (once before the response's items, once after them with the same totals): 39 requests,
    # one per assistant message. Each held every message before its response.
    assert len(t.usage) == 39
    assert [u.before for u in t.usage] == list(range(2, 80, 2))
    first, last = t.usage[0], t.usage[-1]
    assert (first.source.line, first.input_tokens, first.cache_read_tokens, first.total) == (9, 10128, 0, 10128)
    # line 274: last_token_usage input_tokens 52645, cached_input_tokens 52096 (cached ones are part
    # of input_tokens in OpenAI's accounting)
    assert (last.source.line, last.input_tokens, last.cache_read_tokens, last.total) == (274, 549, 52096, 52645)
    assert all(u.cache_creation_tokens == 0 for u in t.usage)


def test_corpus_tool_output_is_counted_as_sent() -> None:
    path = corpus_rollout()
    t = load_one(path)
    raw = orjson.loads(path.read_bytes().splitlines()[11])["payload"]["output"]  # line 12
    result = t.messages[3].tool_results[0]
    assert result.content == (Text(raw),)
    assert raw.startswith('{"output":"LM Studio configuration.md\\nREADME.md')  # JSON in a string, escapes kept


def test_corpus_rollout_report_and_fit(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    path = str(corpus_rollout())
    assert run_cli("report", path).exit_code == 0
    out = tmp_path / "out.json"
    result = run_cli("fit", path, "--budget", "20000", "-o", str(out))
    assert result.exit_code in (0, 1), result.stderr
    if result.exit_code == 0:
        body = orjson.loads(out.read_bytes())
        assert body["model"] == "gpt-5.1-codex"
        fitted = load_one(out)
        assert check_request(fitted) == ()
        # the first message's block stays first and as it came (the truncation note may join it: issue 13 item 9)
        assert fitted.messages[0].content[0] == Text(load_one(Path(path)).messages[0].content[0].text)  # type: ignore[union-attr]
    same = run_cli("fit", path, "--budget", "20000", "--to", "same", "-o", str(tmp_path / "same.json"))
    assert same.exit_code in (2, 3)
    assert "hint:" in same.stderr
    assert not (tmp_path / "same.json").exists()


# --------------------------------------------------------------------------
# Fixtures


def test_modern_rollout_structure() -> None:
    t = load_one(CODEX / "modern.jsonl")
    assert t.system == (Text("You are Codex, a coding agent. Be precise."),)  # base_instructions.text
    assert [(d.name, d.dialect) for d in t.tools] == [("lookup_ticket", "openai")]  # dynamic_tools
    assert shape(t) == [
        ("system", ["text"]),  # the developer message stays in place, as a system message
        ("user", ["text"]),
        ("user", ["text"]),
        ("assistant", ["thinking", "text", "call call_A1"]),
        ("tool", ["result call_A1"]),
        ("assistant", ["thinking", "call call_A2"]),
        ("tool", ["result call_A2"]),
        ("assistant", ["text"]),
    ]
    assert [m.source.line for m in t.messages] == [2, 3, 4, 8, 12, 15, 18, 19]
    assert orjson.loads(t.messages[0].extra) == {"role": "developer"}
    assert dict(t.line_kinds) == {
        "event_msg/agent_message": 1,
        "event_msg/task_complete": 1,
        "event_msg/token_count": 5,
        "event_msg/user_message": 1,
        "response_item/ghost_snapshot": 1,
        "session_meta": 1,
        "turn_context": 1,
    }
    # Here each token_count follows its response's items: the request measured ends before them.
    # The event at line 13 repeats line 11's totals and is not a new request.
    assert [(u.before, u.input_tokens, u.cache_read_tokens, u.source.line) for u in t.usage] == [
        (3, 5000, 0, 11),
        (5, 436, 4864, 17),
        (7, 314, 5136, 21),
    ]
    assert t.defects == ()


def test_reasoning_counts_its_summary_not_its_encrypted_content() -> None:
    t = load_one(CODEX / "modern.jsonl")
    thinking = [b for m in t.messages for b in m.content if isinstance(b, Thinking)]
    assert thinking == [Thinking("**Looking for the rounding code**"), Thinking("")]
    assert all("gAAAA" not in (b.text + b.extra) for b in thinking)
    est = Estimator()
    assert est.block(thinking[1]) == est.rule.block_overhead_tokens  # an opaque item costs its overhead only


def test_legacy_rollout() -> None:
    t = load_one(CODEX / "legacy.jsonl")
    assert (t.format, t.dialect) == ("codex", "openai")
    assert t.system == (Text("Prefer small diffs."),)  # the header's instructions
    assert shape(t) == [
        ("user", ["text"]),
        ("user", ["text"]),
        ("assistant", ["thinking", "call call_L1"]),
        ("tool", ["result call_L1"]),
        ("assistant", ["call call_L2"]),
        ("tool", ["result call_L2"]),
        ("assistant", ["text"]),
    ]
    shell = t.messages[4].tool_calls[0]
    assert (shell.name, orjson.loads(shell.input_json)["command"]) == (
        "local_shell",
        ["wc", "-l", "tests/test_cart.py"],
    )
    assert dict(t.line_kinds) == {"record_type/state": 3, "session_meta": 1}
    assert t.usage == () and t.defects == ()


def test_parallel_calls_share_one_assistant_message() -> None:
    t = load_one(CODEX / "parallel.jsonl")
    assert shape(t) == [
        ("user", ["text"]),
        ("assistant", ["thinking", "call call_P1", "call call_P2", "call call_P3"]),
        ("tool", ["result call_P2"]),  # outputs in the order they finished
        ("tool", ["result call_P1"]),
        ("tool", ["result call_P3"]),
        ("assistant", ["text"]),
    ]
    assert t.defects == ()
    assert check_request(t) == ()


def test_custom_tool_call_and_web_search() -> None:
    t = load_one(CODEX / "custom_tool.jsonl")
    assert shape(t) == [
        ("user", ["text"]),
        ("assistant", ["call call_C1"]),
        ("tool", ["result call_C1"]),
        ("assistant", ["other", "text"]),
    ]
    patch = t.messages[1].tool_calls[0]
    assert patch.name == "apply_patch"
    assert orjson.loads(patch.input_json) == {
        "input": "*** Begin Patch\n*** Update File: README.md\n@@\n-teh app\n+the app\n*** End Patch\n"
    }
    search = t.messages[3].content[0]
    assert isinstance(search, Other) and search.kind == "web_search_call"


def test_compaction_restarts_the_live_context() -> None:
    t = load_one(CODEX / "compacted.jsonl")
    # first compaction (line 9, no replacement history): Codex's rebuilt history is the newest
    # real user messages, then the summary as a user message (environment context left out)
    assert [m.content for m in t.messages[6:9]] == [
        (Text(text),)
        for text in [
            "Port the billing module to the new API.",
            "Also keep the old function names.",
            "Another language model started this task. Summary: billing.py read; keep old names.",
        ]
    ]
    assert [m.source.line for m in t.messages[5:9]] == [7, 9, 9, 9]
    # second compaction (line 14) carries its replacement history: the live context is that, then
    # what came after
    assert t.context_start == 11
    live = t.live()
    assert shape(live) == [("user", ["text"]), ("user", ["text"]), ("assistant", ["text"])]
    assert [m.source.line for m in live.messages] == [14, 14, 16]
    assert [u.before for u in t.usage] == [9] and live.usage == ()  # measured before the last compaction
    assert dict(t.line_kinds)["compacted"] == 2
    # line 15: the count Codex estimates itself after compacting (input_tokens 0) is not a measurement
    assert dict(t.line_kinds)["event_msg/token_count"] == 2
    assert any("1 compaction item(s) not modelled" in n for n in t.notes)
    assert t.defects == ()  # calls repeated by a replacement history are not duplicates


def test_interrupted_rollout_defects() -> None:
    path = CODEX / "interrupted.jsonl"
    with pytest.raises(InvalidJson) as info:
        load_one(path)
    assert (info.value.location.line, "--skip-invalid" in info.value.hint) == (7, True)
    t = load_one(path, skip_invalid=True)
    assert shape(t) == [("user", ["text"]), ("tool", ["result call_GONE"]), ("assistant", ["call call_M1"])]
    assert [(d.kind, d.source.line) for d in t.defects] == [
        ("comment-line", 2),
        ("orphan-result", 4),
        ("unanswered-call", 5),
        ("truncated-line", 7),  # the last line, cut off and with no newline: still being written
    ]
    assert [s.source.line for s in t.skipped] == [2, 7]
    assert dict(t.line_kinds) == {"future_record": 1, "session_meta": 1}


def test_fit_writes_an_openai_body_for_the_next_request(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    out = tmp_path / "next.json"
    result = run_cli("fit", str(CODEX / "modern.jsonl"), "--budget", "100000", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    body = orjson.loads(out.read_bytes())
    assert body["model"] == "gpt-5.1-codex"
    assert body["messages"][0] == {"role": "system", "content": "You are Codex, a coding agent. Be precise."}
    assert [m["role"] for m in body["messages"]] == [
        "system", "system", "user", "user", "assistant", "tool", "assistant", "tool", "assistant"
    ]  # fmt: skip
    assert body["messages"][5]["content"].startswith('{"output":"12:')
    assert [t["function"]["name"] for t in body["tools"]] == ["lookup_ticket"]
    assert check_request(load_one(out)) == ()


def test_malformed_item_is_located_or_skipped(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    lines = (CODEX / "parallel.jsonl").read_bytes().splitlines(keepends=True)
    lines.insert(2, b'{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"x"}}\n')
    bad.write_bytes(b"".join(lines))
    with pytest.raises(UnknownShape) as info:
        load_one(bad)
    assert info.value.location.line == 3
    t = load_one(bad, skip_invalid=True)
    assert [s.source.line for s in t.skipped] == [3]
    assert len(t.messages) == 6


# --------------------------------------------------------------------------
# Detection


def test_sniff_long_first_lines() -> None:
    long_meta = (
        b'{"timestamp":"2025-12-01T10:00:00.000Z","type":"session_meta","payload":{"base_instructions":{"text":"'
    )
    assert sniff(long_meta + b"x" * 70_000)
    assert sniff(b'{"id":"5973b6c0","timestamp":"2025-07-20T09:15:00.000Z","instructions":"' + b"y" * 70_000)
    assert not sniff(b'{"type":"summary","summary":"x","leafUuid":"u"}\n')
    assert not sniff(b'{"role":"user","content":"hi"}\n')
    assert not sniff(b'{"id":"1","timestamp":"t","type":"user","message":{}}\n')
