"""The Claude Code session format: split assistant lines merged, parallel results
found, branches and duplicated history left out, compaction, sidechains and
subagent files, defects; exact counts on the real corpus."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import DATA, require_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import transcripts

from windowfit.fitting import (
    Estimator,
    Image,
    Message,
    Source,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Transcript,
    fit,
    make_estimator,
)
from windowfit.fitting.errors import EmptyTranscript, InvalidJson, UnknownShape
from windowfit.fitting.formats import Input, claude_code, discover, load, load_path
from windowfit.fitting.repair import NO_RESULT_TEXT
from windowfit.fitting.size import predict_size
from windowfit.fitting.validate import check_request

HERE = DATA / "claude_code"
CORPUS = ("corpus", "transcripts", "claude_code")
MOREDIP = "moredip_session-share__0ccf1a04-1b4c-43b6-8aa5-79e41db43a68"


def load_file(path: Path | str, *, skip_invalid: bool = False) -> tuple[Transcript, ...]:
    return load_path(path, fmt="claude_code", skip_invalid=skip_invalid)


def kinds(t: Transcript) -> dict[str, int]:
    return dict(Counter(d.kind for d in t.defects))


def lines(t: Transcript) -> list[int | None]:
    return [m.source.line for m in t.messages]


def jsonl(*values: Any) -> bytes:
    return b"".join((v if isinstance(v, bytes) else orjson.dumps(v)) + b"\n" for v in values)


def envelope(uuid: str, parent: str | None, kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message = {"id": extra.pop("msg_id", f"msg_{uuid}"), **message}
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": "s",
        "type": kind,
        "message": message,
        "uuid": uuid,
        **extra,
    }


# --------------------------------------------------------------------------
# Hand-written fixtures


def test_split_assistant_lines_merge_and_parallel_results_are_found() -> None:
    (t,) = load_file(HERE / "parallel.jsonl")
    assert (t.format, t.dialect, t.name, t.system, t.tools, t.skipped) == ("claude_code", "anthropic", "", (), (), ())
    assert t.messages == (
        Message("user", (Text("Read a.txt and b.txt"),)),
        Message(
            "assistant",
            (
                Thinking("Two files: read both at once.", '{"signature":"c2lnbmF0dXJl"}'),
                Text("Reading both files."),
                ToolCall("toolu_A", "Read", '{"file_path":"/home/dev/demo/a.txt"}'),
                ToolCall("toolu_B", "Read", '{"file_path":"/home/dev/demo/b.txt"}'),
            ),
        ),
        # line 8 answers toolu_A and points at line 5 (not on the chain from the last line): taken in
        Message(
            "user", (ToolResult("toolu_A", (Text("hello from a"),)), ToolResult("toolu_B", (Text("привет из b"),)))
        ),
        Message("assistant", (Text("a.txt says hello, b.txt says привет."),)),
    )
    assert lines(t) == [2, 3, 8, 11]
    assert all(m.source.path == str(HERE / "parallel.jsonl") for m in t.messages)
    # one point per assistant message although every split line repeats the usage
    assert [
        (u.before, u.input_tokens, u.cache_creation_tokens, u.cache_read_tokens, u.source.line) for u in t.usage
    ] == [
        (1, 10, 100, 0, 3),
        (3, 5, 20, 110, 11),
    ]
    assert t.line_kinds == (
        ("file-history-snapshot", 1),
        ("progress", 1),
        ("queue-operation", 1),
        ("summary", 1),
        ("system", 1),
    )
    assert t.defects == ()
    assert claude_code.NO_PREAMBLE_NOTE in t.notes
    assert any("took in 1 line" in n for n in t.notes)
    assert check_request(t) == ()


def test_tool_use_result_copy_is_not_counted() -> None:
    (t,) = load_file(HERE / "parallel.jsonl")
    # toolUseResult repeats each file 500 times; only the message's own content is sent
    assert Estimator().message(t.messages[2]).tokens < 50


def test_branch_keeps_the_chain_that_ends_at_the_last_message() -> None:
    (t,) = load_file(HERE / "branch.jsonl")
    assert [m.content for m in t.messages] == [
        (Text("Name a colour."),),
        (Text("Red."),),
        (Text("Another one, but warm."),),
        (Text("Orange."),),
    ]
    assert lines(t) == [1, 2, 5, 6]
    (defect,) = t.defects
    assert (defect.kind, defect.source) == ("branch", Source(str(HERE / "branch.jsonl"), 3))
    assert "lines 3-4" in defect.detail and "forks from line 2" in defect.detail
    assert any("left out 2 message line(s) on 1 other branch" in n for n in t.notes)
    assert [u.before for u in t.usage] == [1, 3]


def test_compact_boundary_starts_the_live_context() -> None:
    (t,) = load_file(HERE / "compact.jsonl")
    assert len(t.messages) == 7  # the whole session, across the boundary (followed by logicalParentUuid)
    assert t.context_start == 4
    assert t.messages[4].content[0] == Text(
        "This session is being continued from a previous conversation that ran out of context. "
        "Summary: a story that went on and on."
    )
    live = t.live()
    assert [m.source.line for m in live.messages] == [6, 7, 8]
    assert [(u.before, u.source.line) for u in live.usage] == [(2, 8)]
    assert [(u.before, u.source.line) for u in t.usage] == [(1, 2), (3, 4), (6, 8)]
    assert t.line_kinds == (("system", 1),)
    assert any("compacted at line 5" in n for n in t.notes)


def test_inline_sidechain_is_a_subagent_transcript() -> None:
    main, sub = load_file(HERE / "sidechain.jsonl")
    assert (main.name, sub.name) == ("", "subagent 1")
    assert lines(main) == [1, 2, 7, 8]
    assert lines(sub) == [3, 4, 5, 6]
    assert sub.messages[0] == Message("user", (Text("List the files."),))
    assert sub.messages[2].content == (ToolResult("toolu_L", (Text("a.txt\nb.txt"),)),)
    assert main.messages[2].content == (ToolResult("toolu_T", (Text("Two files: a.txt and b.txt."),)),)
    assert (main.defects, sub.defects) == ((), ())
    assert sub.source == main.source


def test_session_loads_its_subagents_folder() -> None:
    path = HERE / "with_subagents" / "session.jsonl"
    main, sub = load_file(path)
    assert (main.name, sub.name) == ("", "subagent agent-a1b2c3d")
    assert sub.source.path == str(HERE / "with_subagents" / "session" / "subagents" / "agent-a1b2c3d.jsonl")
    assert [m.source.path for m in sub.messages] == [sub.source.path] * 2
    assert any("loaded 1 subagent transcript(s)" in n for n in main.notes)
    # from stdin there is no folder to look in
    (alone,) = load(Input("-", path.read_bytes()), fmt="claude_code")
    assert alone.messages == main.messages


def test_discover_does_not_list_subagents_of_a_found_session() -> None:
    folder = HERE / "with_subagents"
    assert list(discover([folder])) == [folder / "session.jsonl"]
    # pointed at the subagents folder itself, the session is not found: its files are listed
    subagents = folder / "session" / "subagents"
    assert list(discover([subagents])) == [subagents / "agent-a1b2c3d.jsonl"]


def test_subagent_file_on_its_own() -> None:
    (t,) = load_file(HERE / "with_subagents" / "session" / "subagents" / "agent-a1b2c3d.jsonl")
    assert t.name == "subagent agent-a1b2c3d"
    assert [m.role for m in t.messages] == ["user", "assistant"]


def test_redacted_line_is_invalid_json_unless_skipped() -> None:
    path = HERE / "defects.jsonl"
    with pytest.raises(InvalidJson) as info:
        load_file(path)
    assert str(info.value).startswith(f"{path}:3:")
    assert "--skip-invalid" in info.value.hint


def test_defects_are_recorded_with_their_lines() -> None:
    path = HERE / "defects.jsonl"
    (t,) = load_file(path, skip_invalid=True)
    assert [s.source.line for s in t.skipped] == [3]
    assert lines(t) == [1, 2, 4, 5, 6]
    assert [(d.source.line, d.kind) for d in t.defects] == [
        (2, "unanswered-call"),  # its result sat on the broken line
        (4, "broken-link"),  # parent r-1 was the broken line: the chain goes on through it
        (4, "unanswered-call"),
        (5, "orphan-result"),
    ]
    assert "toolu_9" in t.defects[3].detail
    assert "continued with line 3" in t.defects[1].detail
    # the loader records, the fit repairs: no invented results here
    assert sum(len(m.tool_results) for m in t.messages) == 1


def test_duplicated_history_is_kept_once() -> None:
    (t,) = load_file(HERE / "duplicate.jsonl")
    assert lines(t) == [5, 6, 7, 8, 9, 10]
    (defect,) = t.defects
    assert (defect.kind, defect.source.line) == ("duplicate-history", 1)
    assert "lines 1-4" in defect.detail and "1 tool call(s) with the same ids" in defect.detail
    assert check_request(t) == ()


def test_a_call_repeated_on_the_chain_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    call = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}
    path.write_bytes(
        jsonl(
            envelope("u1", None, "user", "hi"),
            envelope("a1", "u1", "assistant", [call]),
            envelope("r1", "a1", "user", [result]),
            envelope("a2", "r1", "assistant", [call]),
            envelope("r2", "a2", "user", [result]),
            envelope("a3", "r2", "assistant", "ok"),
        )
    )
    (t,) = load_file(path)
    assert lines(t) == [1, 2, 3, 6]
    assert [(d.source.line, d.kind) for d in t.defects] == [(4, "duplicate-history"), (5, "duplicate-history")]
    assert check_request(t) == ()


def test_unknown_line_types_are_counted_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        jsonl(
            envelope("u1", None, "user", "hi"),
            {"type": "attachment", "uuid": "x1", "parentUuid": "u1", "sessionId": "s", "attachment": {}},
            {"type": "telemetry-from-the-future", "sessionId": "s"},
            {"sessionId": "s"},
            envelope("a1", "x1", "assistant", [{"type": "text", "text": "hello"}]),
        )
    )
    (t,) = load_file(path)
    assert lines(t) == [1, 5]  # walked through the attachment line
    assert dict(t.line_kinds) == {"attachment": 1, "telemetry-from-the-future": 1, "unknown": 1}


def test_bad_shapes_raise_located_errors_or_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        jsonl(envelope("u1", None, "user", "hi"), [1, 2], {"type": "user", "uuid": "u2", "parentUuid": "u1"})
    )
    with pytest.raises(UnknownShape, match=r"s\.jsonl:2: not a Claude Code line"):
        load_file(path)
    path.write_bytes(jsonl(envelope("u1", None, "user", "hi"), {"type": "user", "uuid": "u2", "parentUuid": "u1"}))
    with pytest.raises(UnknownShape, match=r"s\.jsonl:2: a user line without a 'message' object"):
        load_file(path)
    (t,) = load_file(path, skip_invalid=True)
    assert [s.source.line for s in t.skipped] == [2]
    assert lines(t) == [1]


def test_a_file_without_messages_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(jsonl({"type": "summary", "summary": "x", "leafUuid": "u"}))
    with pytest.raises(EmptyTranscript):
        load_file(path)


# --------------------------------------------------------------------------
# Sniffing


def test_sniff_first_line_longer_than_the_head(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(jsonl(envelope("u1", None, "user", "x" * 100_000)))
    assert claude_code.sniff(Input(str(path)).head())
    assert not claude_code.sniff(b'{"role": "user", "content": "' + b"x" * 70_000)


def test_sniff_skips_comment_lines() -> None:
    assert claude_code.sniff(
        b"// a note\n" + jsonl({"type": "queue-operation", "operation": "enqueue", "sessionId": "s"})
    )
    assert not claude_code.sniff(jsonl({"role": "user", "content": "hi"}))


# --------------------------------------------------------------------------
# The real corpus
#
# Counts established with a throwaway script (stdlib json and re, not this loader):
# it parses every line, links nodes by uuid/parentUuid (logicalParentUuid across a
# compact boundary; an unresolved parent falls back to the previous node of the same
# sidechain class), walks back from the last message line of each class (main, and
# each sidechain tree), adds off-chain lines that carry another block of a chained
# assistant message or results of chained calls, then merges lines in file order
# (same message.id; consecutive result lines) and counts messages, tool_use and
# tool_result blocks, assistant messages with non-zero usage, unanswered calls and
# orphan results by adjacency, broken links crossed, and left-out branches (a branch
# repeating message ids of the chain counts as duplicate history).
#
# Against SOURCES.md: tool_use/tool_result, unanswered and orphan counts match for
# every file but general-tool-calls, where SOURCES counts both copies of the history
# (110 tool_use / 109 tool_result blocks); the kept (later) copy holds 49 / 48, the
# left-out copy 61 / 61 (45 calls in both, 16 parallel calls that the re-recorded copy
# lost). Line kinds equal SOURCES' types minus user/assistant (system includes
# compact_boundary and api_error lines). SOURCES lists 15 Claude Code files, not 16.

Row = tuple[str, int, int, int, int, int, dict[str, int]]
"""name, messages, tool calls, tool results, usage points, context start, defects by kind"""

SUBAGENTS = ["a5bdbc1", "a9cad17", "aa5ef13", "ac27727", "afbbf75"]
SUBAGENT_ROW = (4, 1, 1, 2, 0, {})

EXPECTED: dict[str, tuple[int, dict[str, int], list[Row]]] = {
    "M-Thisness_M-Claude__21037e11-89de-484d-abba-8705254aa991.jsonl": (
        28,
        {"progress": 240, "file-history-snapshot": 16, "summary": 13, "queue-operation": 12, "system": 8},
        [("", 273, 172, 164, 139, 0, {"broken-link": 21, "unanswered-call": 10, "orphan-result": 2})],
    ),
    "M-Thisness_M-Claude__3af9b1a7-6512-4883-ad18-320658ced099.jsonl": (
        35,
        {"file-history-snapshot": 21, "system": 9, "queue-operation": 4, "summary": 1},
        [("", 223, 168, 152, 114, 202, {"broken-link": 20, "unanswered-call": 16})],
    ),
    "M-Thisness_M-Claude__43391f62-680a-4688-9dd8-3637467d6b23.jsonl": (
        0,
        {"file-history-snapshot": 10, "system": 5},
        [("", 79, 40, 39, 38, 0, {"unanswered-call": 1})],
    ),
    "M-Thisness_M-Claude__agent-abc3cb6.jsonl": (0, {}, [("subagent agent-abc3cb6", 22, 39, 39, 11, 0, {})]),
    "M-Thisness_M-Claude__c76e5be5-ffd2-4901-a935-885527c83a61.jsonl": (
        1,
        {"file-history-snapshot": 30, "system": 17, "queue-operation": 8, "summary": 1},
        [("", 646, 296, 295, 320, 0, {"unanswered-call": 1})],
    ),
    "d-kimuson_claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl": (
        0,
        {},
        [("", 21, 13, 13, 10, 0, {}), ("subagent 1", 6, 2, 2, 3, 0, {}), ("subagent 2", 14, 6, 6, 7, 0, {})],
    ),
    "d-kimuson_claude-code-viewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl": (
        0,
        {"summary": 1},
        [
            ("", 19, 11, 11, 9, 0, {}),
            ("subagent 1", 18, 8, 8, 9, 0, {}),
            ("subagent 2", 68, 33, 33, 34, 0, {}),
            ("subagent 3", 80, 39, 39, 40, 0, {}),
            ("subagent 4", 50, 24, 24, 25, 0, {}),
            ("subagent 5", 106, 52, 52, 53, 0, {}),
        ],
    ),
    f"{MOREDIP}.jsonl": (
        0,
        {"queue-operation": 14, "system": 11, "file-history-snapshot": 10, "progress": 1, "summary": 1},
        [("", 30, 7, 7, 11, 0, {"branch": 1}), *((f"subagent agent-{a}", *SUBAGENT_ROW) for a in SUBAGENTS)],
    ),
    "moredip_session-share__general-tool-calls.jsonl": (
        2,
        {"progress": 127, "file-history-snapshot": 17, "queue-operation": 8, "summary": 4},
        [("", 125, 49, 48, 54, 0, {"duplicate-history": 1, "unanswered-call": 1})],
    ),
    "moredip_session-share__images-in-tool-results.jsonl": (
        2,
        {},
        # an excerpt: the first line's parent is not in the file
        [("", 2, 1, 1, 1, 0, {"broken-link": 1})],
    ),
    **{
        f"{MOREDIP}/subagents/agent-{a}.jsonl": (0, {"progress": 2}, [(f"subagent agent-{a}", *SUBAGENT_ROW)])
        for a in SUBAGENTS
    },
}
BROKEN = {name for name, (skipped, _, _) in EXPECTED.items() if skipped and "M-Thisness" in name}
"""Files with lines that are not JSON (the other skipped lines are // comments, never an error)."""


def corpus_path(name: str) -> Path:
    return require_shared(*CORPUS, name)


def test_expected_covers_every_corpus_file() -> None:
    root = require_shared(*CORPUS)
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*.jsonl")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_counts(name: str) -> None:
    skipped, line_kinds, rows = EXPECTED[name]
    transcripts = load_file(corpus_path(name), skip_invalid=True)
    first = transcripts[0]
    assert len(first.skipped) == skipped
    assert dict(first.line_kinds) == line_kinds
    got = [
        (
            t.name,
            len(t.messages),
            sum(len(m.tool_calls) for m in t.messages),
            sum(len(m.tool_results) for m in t.messages),
            len(t.usage),
            t.context_start,
            kinds(t),
        )
        for t in transcripts
    ]
    assert got == rows
    for t in transcripts:
        assert (t.format, t.dialect, t.system, t.tools) == ("claude_code", "anthropic", (), ())
        assert claude_code.NO_PREAMBLE_NOTE in t.notes
        assert all(d.source.line for d in t.defects)
        # the loader repairs nothing: what is left are only the defects it recorded
        assert {v.kind for v in check_request(t)} <= {"unanswered-call", "orphan-result"}
    if name in BROKEN:
        with pytest.raises(InvalidJson):
            load_file(corpus_path(name))


def test_corpus_parallel_results_are_on_the_chain() -> None:
    """Lines 5-7 are three parallel Task calls; results 8 and 9 point at lines 5 and 6."""
    main = load_file(corpus_path(f"{MOREDIP}.jsonl"))[0]
    assert [m.source.line for m in main.messages[:4]] == [2, 3, 8, 11]
    assert [len(main.messages[1].tool_calls), len(main.messages[2].tool_results)] == [3, 3]


def test_corpus_compaction_and_duplicate_history() -> None:
    t = load_file(corpus_path("M-Thisness_M-Claude__3af9b1a7-6512-4883-ad18-320658ced099.jsonl"), skip_invalid=True)[0]
    summary = t.messages[t.context_start]
    assert summary.source.line == 483
    assert isinstance(summary.content[0], Text)
    assert summary.content[0].text.startswith("This session is being continued")
    (dup,) = (
        d
        for d in load_file(corpus_path("moredip_session-share__general-tool-calls.jsonl"))[0].defects
        if d.kind == "duplicate-history"
    )
    assert dup.source.line == 5
    assert "45 tool call(s) with the same ids" in dup.detail and "16 of its tool calls" in dup.detail


def test_corpus_screenshot_is_priced_as_an_image() -> None:
    (t,) = load_file(corpus_path("moredip_session-share__images-in-tool-results.jsonl"))
    (result,) = t.messages[1].tool_results
    images = [b for b in result.content if isinstance(b, Image)]
    assert len(images) == 1 and images[0].byte_size > 400_000
    # ~605k characters of base64 would be ~150k tokens as text
    assert Estimator().message(t.messages[1]).tokens < 5_000


# --------------------------------------------------------------------------
# The command line on every corpus file


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_report_and_fit(name: str, run_cli: Any, tmp_path: Path) -> None:
    path = str(corpus_path(name))
    flags = ["--skip-invalid"] if name in BROKEN else []
    report = run_cli("report", path, *flags)
    assert report.exit_code == 0, report.stderr
    out = tmp_path / "out.json"
    # 60,000: the system prompt and tools these sessions do not record are inferred from
    # their usage (up to about 25,500 tokens) and count in the budget; 20,000 was too-long.
    fitted = run_cli("fit", path, "--budget", "60000", "-o", str(out), *flags)
    assert fitted.exit_code in (0, 1), fitted.stderr
    if fitted.exit_code == 0:
        (request,) = load_path(out, fmt="messages")
        assert check_request(request) == ()
    same = run_cli("fit", path, "--budget", "60000", "--to", "same", "-o", str(tmp_path / "same.json"), *flags)
    assert same.exit_code in (2, 3)
    assert "hint:" in same.stderr


def test_the_model_of_the_newest_reply_is_kept_for_the_request_body() -> None:
    # Issue 7 item 6: Claude Code records the model on each reply (not system, tools or max_tokens);
    # Claude Code's own "<synthetic>" replies name no model.
    data = jsonl(
        envelope("u1", None, "user", "hi"),
        envelope("a1", "u1", "assistant", [{"type": "text", "text": "hello"}]),
        envelope("u2", "a1", "user", "again"),
        envelope("a2", "u2", "assistant", [{"type": "text", "text": "no"}]),
    )
    values = [orjson.loads(line) for line in data.splitlines()]
    values[1]["message"]["model"] = "claude-opus-4-5"
    values[3]["message"]["model"] = "<synthetic>"
    (t,) = load(Input("-", jsonl(*values)), fmt="claude_code")
    assert orjson.loads(t.extra) == {"model": "claude-opus-4-5"}
    (bare,) = load(Input("-", jsonl(*values[:1])), fmt="claude_code")
    assert bare.extra == ""


def test_a_reply_split_over_lines_takes_its_largest_output_count(tmp_path: Path) -> None:
    # Claude Code writes one line per content block, each with the usage as it was
    # streaming: the first says 1 output token, the last the real count.
    lines = (DATA / "claude_code" / "parallel.jsonl").read_text(encoding="utf-8").splitlines()
    counts = iter((1, 1, 1, 250))
    out = []
    for line in lines:
        obj = orjson.loads(line)
        message = obj.get("message")
        if isinstance(message, dict) and message.get("id") == "msg_01":
            message["usage"]["output_tokens"] = next(counts)
        out.append(orjson.dumps(obj).decode())
    path = tmp_path / "split.jsonl"
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    (t,) = load(Input(str(path)))
    assert [u.output_tokens for u in t.usage] == [250, 12]


def test_a_compaction_s_recorded_count_sizes_the_first_request_after_it(tmp_path: Path) -> None:
    """Newer Claude Code versions record ``postTokens`` on the boundary: the context left, without system
    prompt and tools. The first request after the compaction is sized on it (the preamble given here)."""
    raw = (HERE / "compact.jsonl").read_bytes().splitlines()
    boundary = orjson.loads(raw[4])
    assert boundary["subtype"] == "compact_boundary"
    boundary["compactMetadata"] = {"trigger": "manual", "preTokens": 9000, "postTokens": 4321}
    path = tmp_path / "s.jsonl"
    path.write_bytes(jsonl(*raw[:4], boundary, raw[5]))  # cut at the summary: nothing measured since
    (t,) = load_file(path)
    assert (t.context_start, t.compacted_tokens, t.compacted_line) == (4, 4321, 5)
    size = predict_size(t, make_estimator(), preamble=1000)
    assert (size.source, size.tokens, size.anchor_line) == ("anchored", 1000 + 4321, 5)
    assert any("recorded 4,321 tokens left (postTokens)" in n for n in t.notes)
    (plain,) = load_file(HERE / "compact.jsonl")  # without postTokens: as before
    assert plain.compacted_tokens == 0


def _with_compaction_agent(tmp_path: Path) -> tuple[Path, Path]:
    """The with_subagents session and, in its subagents folder, a compaction agent's file as Claude Code
    writes one: the compaction's own API call, its instruction and the summary, whose usage counts the
    session's whole conversation (sent with it, not written in the file)."""
    folder = tmp_path / "with_subagents"
    shutil.copytree(HERE / "with_subagents", folder)
    agent = "acompact-5e6f7a8b9c0d1e2f"
    common = {"isSidechain": True, "sessionId": "11111111-2222-4333-8444-555555555555", "agentId": agent}
    prompt = envelope("c-1", None, "user", "Your task is to create a detailed summary of the conversation so far.")
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 200, "cache_read_input_tokens": 40_000}
    summary = envelope("c-2", "c-1", "assistant", [{"type": "text", "text": "Summary: a haiku was written."}])
    summary["message"]["usage"] = {**usage, "output_tokens": 9}
    path = folder / "session" / "subagents" / f"agent-{agent}.jsonl"
    path.write_bytes(jsonl({**prompt, **common}, {**summary, **common}))
    return folder / "session.jsonl", path


def test_a_compaction_agent_s_preamble_is_its_session_s(tmp_path: Path) -> None:
    session, agent_file = _with_compaction_agent(tmp_path)
    main, sub, compaction = load_file(session)
    assert compaction.name == "subagent agent-acompact-5e6f7a8b9c0d1e2f"
    est = make_estimator()
    own = predict_size(compaction, est)
    first = main.usage[0]
    session_preamble = first.total - sum(est.message(m).tokens for m in main.messages[: first.before])
    assert (own.preamble_tokens, own.preamble_source, own.preamble_line) == (session_preamble, "inferred", None)
    assert own.preamble_tokens < 1000 < 40_203  # not the session's conversation its request also held
    assert own.measured_tokens == 40_203  # the request itself is still measured
    assert any(f"inferred from usage at line 2 of {session}" in n for n in compaction.notes)
    assert predict_size(sub, est).preamble_line == 2  # an ordinary subagent infers its own
    # alone, the session is not at hand: no preamble rather than the conversation as one
    (alone,) = load_file(agent_file)
    assert predict_size(alone, est).preamble_source == "none"
    assert any("not inferred from it (its session is not loaded with it)" in n for n in alone.notes)


def test_the_fold_leaves_a_compaction_agent_to_the_loader(tmp_path: Path) -> None:
    from windowfit.fitting.ccfold import fold_claude_code, fold_claude_code_all

    session, agent_file = _with_compaction_agent(tmp_path)
    why: list[str] = []
    assert fold_claude_code_all(Input(str(session), keep_text=False), make_estimator(), why=why) is None
    assert why == [f"{agent_file.name} in subagents/: a compaction agent's file (its preamble is its session's: "
                   "claude_code.load infers it)"]  # fmt: skip
    why = []
    assert fold_claude_code(Input(str(agent_file), keep_text=False), make_estimator(), why=why) is None
    assert why[0].startswith("a compaction agent's file")
    plain: list[str] = []  # without the compaction agent the fold takes the session
    agent_file.unlink()
    assert fold_claude_code_all(Input(str(session), keep_text=False), make_estimator(), why=plain) is not None


@pytest.mark.parametrize("content", [b"", b'{"type":"queue-operation","operation":"enqueue","sessionId":"s"}\n'])
def test_a_subagent_file_without_messages_is_left_out_not_an_error(tmp_path: Path, content: bytes) -> None:
    """A subagent that never wrote a message made the whole session an error; its siblings still load."""
    folder = tmp_path / "with_subagents"
    shutil.copytree(HERE / "with_subagents", folder)
    (folder / "session" / "subagents" / "agent-aempty.jsonl").write_bytes(content)
    main, sub = load_file(folder / "session.jsonl")
    assert sub.name == "subagent agent-a1b2c3d"
    assert "left out 1 file(s) of subagents/ without messages: agent-aempty.jsonl" in main.notes
    with pytest.raises(EmptyTranscript):  # named on its own it is still an empty file
        load_file(folder / "session" / "subagents" / "agent-aempty.jsonl")


# --------------------------------------------------------------------------
# One API reply over several lines, its parallel calls' results written between them (issue 13, items 6-7)


@st.composite
def interleaved_sessions(draw: st.DrawFn) -> tuple[bytes, Transcript, list[list[int]]]:
    """A generated transcript written as Claude Code writes it: a line per block of each reply (sharing its
    message id and usage), the results of its calls one per line, each after its call's line and before or
    among the reply's later lines, in any order; every line hangs from the line before it. Also the transcript
    and, per reply, the lines it was written on."""
    t = draw(transcripts(shapes=("anthropic",), max_parallel=4, sizes=st.integers(0, 3000)))
    values: list[dict[str, Any]] = []
    reply_lines: list[list[int]] = []
    cached = 0

    def add(kind: str, content: Any, msg_id: str = "", usage: Any = None) -> int:
        parent = values[-1]["uuid"] if values else None
        value = envelope(f"u{len(values) + 1}", parent, kind, content, **({"msg_id": msg_id} if msg_id else {}))
        if usage is not None:
            value["message"]["usage"] = usage
        values.append(value)
        return len(values)

    messages = t.messages
    i = 0
    while i < len(messages):
        m = messages[i]
        if m.role == "user":
            add("user", "".join(b.text for b in m.content if isinstance(b, Text)))
            i += 1
            continue
        results = messages[i + 1].tool_results if i + 1 < len(messages) and messages[i + 1].tool_results else ()
        blocks = list(m.content)
        where = {b.id: k for k, b in enumerate(blocks) if isinstance(b, ToolCall)}
        after: dict[int, list[ToolResult]] = {}  # results written after the reply's block k
        for r in draw(st.permutations(list(results))):
            after.setdefault(draw(st.integers(where[r.call_id], len(blocks) - 1)), []).append(r)
        usage = {"input_tokens": draw(st.integers(1, 9)), "cache_read_input_tokens": cached}
        cached += draw(st.integers(100, 5000))
        written = []
        for k, b in enumerate(blocks):
            block = (
                {"type": "tool_use", "id": b.id, "name": b.name, "input": orjson.loads(b.input_json)}
                if isinstance(b, ToolCall)
                else {"type": "text", "text": b.text if isinstance(b, Text) else ""}
            )
            step = {**usage, "output_tokens": 1 if k < len(blocks) - 1 else 200}
            written.append(add("assistant", [block], msg_id=f"msg_{i}", usage=step))
            for r in after.get(k, ()):
                text = "".join(x.text for x in r.content if isinstance(x, Text))
                result = {"type": "tool_result", "tool_use_id": r.call_id, "content": text, "is_error": r.is_error}
                add("user", [result])
        reply_lines.append(written)
        i += 2 if results else 1
    return jsonl(*values), t, reply_lines


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session=interleaved_sessions(), share=st.floats(0.05, 1.2))
def test_a_reply_written_between_its_results_is_one_message_measured_once(
    session: tuple[bytes, Transcript, list[list[int]]], share: float
) -> None:
    data, original, reply_lines = session
    (t,) = load(Input("session.jsonl", data), fmt="claude_code")
    # the messages of the transcript that was written, whatever the layout of its lines
    assert [m.role for m in t.messages] == [m.role for m in original.messages]
    for got, want in zip(t.messages, original.messages, strict=True):
        assert [c.id for c in got.tool_calls] == [c.id for c in want.tool_calls]
        assert sorted(r.call_id for r in got.tool_results) == sorted(r.call_id for r in want.tool_results)
    assert [m.source.line for m in t.messages if m.role == "assistant"] == [lines[0] for lines in reply_lines]
    # one measurement per reply (message id), at its first line, with the reply's own output count
    assert [u.source.line for u in t.usage] == [lines[0] for lines in reply_lines]
    assert [t.messages[u.before].role for u in t.usage] == ["assistant"] * len(reply_lines)
    assert all(u.output_tokens == 200 for u in t.usage)
    assert t.defects == () and check_request(t) == ()
    # a fit neither loses a recorded result nor invents one
    estimator = Estimator()
    budget = max(1, int(share * estimator.request(t)))
    fitted = fit(t, budget=budget, estimator=estimator)
    assert fitted.plan.repairs == ()
    assert check_request(fitted.transcript) == ()
    sent = {r.call_id for m in fitted.transcript.messages for r in m.tool_results}
    assert sent == {c.id for m in fitted.transcript.messages for c in m.tool_calls}
    assert not any(
        NO_RESULT_TEXT in x.text
        for m in fitted.transcript.messages
        for r in m.tool_results
        for x in r.content
        if isinstance(x, Text)
    )
