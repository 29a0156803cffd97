"""``build_report``: counts, tokens by script/role/kind, the largest results,
data tools (SPEC section 5), and the verdict against budget and window."""

from __future__ import annotations

from dataclasses import replace

import pytest

from windowfit.fitting import SEED, Estimator, Message, Source, Text, ToolCall, ToolResult, Transcript, build_report
from windowfit.fitting.report import ClassRow, ResultRow, ToolRow
from windowfit.fitting.serialize import report_document, report_to_dict
from windowfit.fitting.transcript import Block, Defect, Role, Skipped, Usage

TEXT_ONLY = Estimator(SEED.scaled_overhead(0))


def msg(line: int, role: Role, *content: Block) -> Message:
    return Message(role, content, Source("t.jsonl", line))


def small_transcript() -> Transcript:
    """Two turns, two tool rounds (one of two parallel calls), one skipped line.

    The comments give each message's tokens under the pure text rule (ASCII/4, CJK/1, other/2).
    """
    return Transcript(
        system=(Text("Be brief."),),  # 9 ASCII -> 3
        tools=(),
        messages=(
            msg(1, "user", Text("Read the logs")),  # 13 ASCII -> 4
            msg(
                2,
                "assistant",
                Text("On it."),  # 6 ASCII
                ToolCall("c1", "grep", '{"q":"err"}'),  # 4 + 11 ASCII
                ToolCall("c2", "read_file", '{"p":"a"}'),  # 9 + 9 ASCII
            ),  # 39 ASCII -> ceil(9.75) = 10
            msg(
                3,
                "user",
                ToolResult("c1", (Text("x" * 40),)),  # 40 ASCII -> 10
                ToolResult("c2", (Text("Я" * 100),)),  # 100 other -> 50
            ),  # 60
            msg(4, "assistant", ToolCall("c3", "grep", '{"q":"warn"}')),  # 4 + 12 ASCII -> 4
            msg(5, "user", ToolResult("c3", (Text("日" * 30),))),  # 30 CJK -> 30
            msg(6, "assistant", Text("Done.")),  # 5 ASCII -> 2
            msg(8, "user", Text("Thanks")),  # 6 ASCII -> 2 (line 7 was skipped)
            msg(9, "assistant", Text("OK")),  # 2 ASCII -> 1
        ),
        source=Source("t.jsonl"),
        skipped=(Skipped(Source("t.jsonl", 7), "invalid JSON: unexpected character"),),
    )


# messages 4 + 10 + 60 + 4 + 30 + 2 + 2 + 1 = 113, plus the system prompt 3
SMALL_TOKENS = 116


def test_counts() -> None:
    r = build_report(small_transcript(), TEXT_ONLY)
    assert (r.path, r.format, r.dialect) == ("t.jsonl", "messages", "anthropic")
    assert (r.messages, r.turns, r.rounds, r.tool_calls, r.tool_results, r.skipped_lines) == (8, 2, 2, 3, 3, 1)
    assert (r.tokens, r.preamble_tokens) == (SMALL_TOKENS, 3)


def test_total_with_default_overheads() -> None:
    # 116 text + 8 messages * 4 + 14 blocks * 3 (1 + 3 + 2 results + 2 inner + 1 + 2 + 1 + 1 + 1 + 1 + 1)
    # + system prompt overheads 4 + 3 = 116 + 32 + 42 + 7 = 197
    r = build_report(small_transcript(), Estimator())
    assert r.tokens == 197
    assert dict(r.by_kind)["message overhead"] == 32


def test_tokens_by_script_class() -> None:
    r = build_report(small_transcript(), TEXT_ONLY)
    # ASCII 13 + 39 + 40 + 16 + 5 + 6 + 2 + 9 (system) = 130 -> 32.5; CJK 30 -> 30; other 100 -> 50; sum 112.5
    assert r.classes == (
        ClassRow("ascii", 130, 4.0, 32.5, pytest.approx(32.5 / 112.5)),
        ClassRow("cjk", 30, 1.0, 30.0, pytest.approx(30 / 112.5)),
        ClassRow("other", 100, 2.0, 50.0, pytest.approx(50 / 112.5)),
    )


def test_tokens_by_role_and_block_kind() -> None:
    r = build_report(small_transcript(), TEXT_ONLY)
    # user 4 + 60 + 30 + 2 = 96; assistant 10 + 4 + 2 + 1 = 17; system 3
    assert r.by_role == (("user", 96), ("assistant", 17), ("system", 3))
    # each block on its own, rounded up: results 10 + 50 + 30; calls ceil(15/4)=4 + ceil(18/4)=5 + 4;
    # texts 4 + ceil(6/4)=2 + 2 + 2 + 1; no "message overhead" row when it is 0
    assert r.by_kind == (("tool_result", 90), ("tool_call", 13), ("text", 11))


def test_largest_results_in_size_order_with_tool_names() -> None:
    r = build_report(small_transcript(), TEXT_ONLY)
    assert r.largest_results == (
        ResultRow("read_file", "c2", 50, 2, 3),
        ResultRow("grep", "c3", 30, 4, 5),
        ResultRow("grep", "c1", 10, 2, 3),
    )
    assert [row.call_id for row in build_report(small_transcript(), TEXT_ONLY, top=2).largest_results] == ["c2", "c3"]
    assert build_report(small_transcript(), TEXT_ONLY, top=0).largest_results == ()


def test_equal_results_keep_transcript_order() -> None:
    t = Transcript(
        (),
        (),
        (
            msg(1, "assistant", ToolCall("a", "t", "{}"), ToolCall("b", "t", "{}")),
            msg(2, "user", ToolResult("a", (Text("xxxx"),))),
            msg(3, "user", ToolResult("b", (Text("yyyy"),))),
        ),
    )
    assert [row.call_id for row in build_report(t, TEXT_ONLY).largest_results] == ["a", "b"]


def test_result_without_a_call_uses_its_own_name_or_a_question_mark() -> None:
    t = Transcript(
        (),
        (),
        (
            msg(1, "tool", ToolResult("x1", (Text("abcd"),), name="search")),
            msg(2, "user", ToolResult("x2", (Text("abcd"),))),
        ),
    )
    assert [row.tool for row in build_report(t, TEXT_ONLY).largest_results] == ["search", "?"]


def test_per_tool_sizes() -> None:
    r = build_report(small_transcript(), TEXT_ONLY)
    assert r.tools == (
        ToolRow("read_file", calls=1, results=1, result_tokens=50, max_result_tokens=50, grows_like_data=False),
        ToolRow("grep", calls=2, results=2, result_tokens=40, max_result_tokens=30, grows_like_data=False),
    )


def tool_history(sizes_by_tool: dict[str, list[int]]) -> Transcript:
    """One round per result, in order; a result of ``n`` tokens is ``4n`` ASCII characters."""
    messages: list[Message] = [msg(1, "user", Text("go"))]
    n = 0
    for name, sizes in sizes_by_tool.items():
        for size in sizes:
            n += 1
            messages.append(msg(len(messages) + 1, "assistant", ToolCall(f"c{n}", name, "{}")))
            messages.append(msg(len(messages) + 1, "user", ToolResult(f"c{n}", (Text("a" * 4 * size),))))
    return Transcript((), (), tuple(messages))


def test_data_tools_are_flagged_when_results_keep_growing() -> None:
    r = build_report(
        tool_history(
            {
                "search": [10, 20, 40, 80],  # 4 results, never shrinking, 80 >= 4 * 10
                "scan": [10, 20, 30, 40],  # 40 >= 4 * 10 exactly
                "status": [5, 5, 5, 5],  # flat
                "almost": [10, 20, 30, 39],  # 39 < 4 * 10
                "dips": [10, 50, 40, 80],  # shrinks once
                "few": [1, 10, 100],  # only 3 results
            }
        ),
        TEXT_ONLY,
    )
    assert {t.tool: t.grows_like_data for t in r.tools} == {
        "search": True,
        "scan": True,
        "status": False,
        "almost": False,
        "dips": False,
        "few": False,
    }
    search = next(t for t in r.tools if t.tool == "search")
    assert (search.calls, search.results, search.result_tokens, search.max_result_tokens) == (4, 4, 150, 80)


@pytest.mark.parametrize(
    ("budget", "window", "verdict", "fits_budget", "fits_window"),
    [
        (None, None, "116 tokens", True, True),
        (200, None, "fits the 200 budget (84 tokens to spare)", True, True),
        (116, None, "fits the 116 budget (0 tokens to spare)", True, True),
        (100, None, "over the 100 budget by 16 tokens", False, True),
        (None, 116, "within the 116 window", True, True),
        (
            100,
            110,
            "over the 100 budget by 16 tokens; over the 110 window by 6 tokens: the provider would reject it",
            False,
            False,
        ),
        (200, 1000, "fits the 200 budget (84 tokens to spare); within the 1,000 window", True, True),
    ],
)
def test_verdict(budget: int | None, window: int | None, verdict: str, fits_budget: bool, fits_window: bool) -> None:
    r = build_report(small_transcript(), TEXT_ONLY, budget=budget, window=window)
    assert (r.budget, r.window) == (budget, window)
    assert (r.verdict, r.fits_budget, r.fits_window) == (verdict, fits_budget, fits_window)


def test_verdict_uses_thousands_separators() -> None:
    # 4,000,000 ASCII / 4 = 1,000,000 tokens
    t = Transcript((), (), (msg(1, "user", Text("a" * 4_000_000)),))
    r = build_report(t, TEXT_ONLY, budget=400_000, window=1_000_000)
    assert r.verdict == "over the 400,000 budget by 600,000 tokens; within the 1,000,000 window"


def test_report_to_dict() -> None:
    r = build_report(small_transcript(), TEXT_ONLY, budget=200, top=1)
    d = report_to_dict(r)
    assert d["counts"] == {
        "messages": 8,
        "turns": 2,
        "rounds": 2,
        "tool_calls": 3,
        "tool_results": 3,
        "skipped_lines": 1,
    }
    assert d["tokens"] == SMALL_TOKENS
    assert d["scripts"][0] == {"class": "ascii", "chars": 130, "chars_per_token": 4.0, "tokens": 32.5, "share": 0.2889}
    # the largest result is 50 tokens: 50 / 200 = 0.25 of the budget
    assert d["largest_results"] == [
        {"tool": "read_file", "call_id": "c2", "tokens": 50, "budget_share": 0.25, "message_index": 2, "line": 3}
    ]
    assert (d["fits_budget"], d["fits_window"], d["budget"], d["window"]) == (True, True, 200, None)
    assert d["verdict"] == "fits the 200 budget (84 tokens to spare)"
    assert report_document([r], estimator="seed") == {
        "schema": 1,
        "estimator": "seed",
        "transcripts": [d],
        "skipped_files": [],
    }


def test_live_context_and_measured_usage_after_a_compaction() -> None:
    # Four messages of 100 ASCII chars = 25 tokens each with overheads off. A compaction
    # restarts the context at message 2: the live request is messages 2-3 (50 tokens), the
    # session 100. Two measured points: before message 1 (held messages 0..0: 25 estimated,
    # 40 measured: 10 input + 30 cache read) and before message 3 (after the compaction it held
    # messages 2..2: 25 estimated, 20 measured).
    messages = tuple(Message("user" if i % 2 == 0 else "assistant", (Text("a" * 100),)) for i in range(4))
    t = Transcript(
        (),
        (),
        messages,
        context_start=2,
        usage=(Usage(1, 10, 0, 30, Source("s", 2)), Usage(3, 20, 0, 0, Source("s", 4))),
    )
    # The pure estimate with the preamble given as 0: only the messages count.
    report = build_report(t, Estimator(SEED.scaled_overhead(0)), size_mode="estimate", preamble=0)
    assert (report.messages, report.tokens) == (2, 50)
    assert (report.session_messages, report.session_tokens) == (4, 100)
    assert [(u.before, u.line, u.estimated, u.measured, u.cache_read) for u in report.usage] == [
        (1, 2, 25, 40, 30),
        (3, 4, 25, 20, 0),
    ]
    assert [round(u.ratio, 3) for u in report.usage] == [0.625, 1.25]
    doc = report_to_dict(report)
    assert doc["session"] == {"messages": 4, "tokens": 100}
    assert [m["measured"] for m in doc["measured"]] == [40, 20]
    assert (doc["size_source"], doc["preamble_source"]) == ("estimate", "given")

    # By default: anchored on the request measured after the compaction (20, which held
    # message 2) plus its reply, message 3 (25 estimated, no output recorded); the preamble
    # is inferred from the first measured request: 40 measured - 25 estimated = 15, and
    # counts in the session total. The measured rows compare the provider with the estimate
    # of what the file records, so they stay as they were.
    report = build_report(t, Estimator(SEED.scaled_overhead(0)))
    assert (report.messages, report.tokens) == (2, 20 + 25)
    assert (report.preamble_tokens, report.session_tokens) == (15, 15 + 100)
    assert [u.estimated for u in report.usage] == [25, 25]
    doc = report_to_dict(report)
    assert (doc["size_source"], doc["preamble_source"], doc["preamble_tokens"]) == ("anchored", "inferred", 15)
    assert doc["size"]["measured_line"] == 4
    assert (doc["size"]["measured_tokens"], doc["size"]["reply_tokens"], doc["size"]["estimated_tokens"]) == (20, 25, 0)


def test_defects_line_kinds_and_notes_are_reported() -> None:
    t = replace(
        small_transcript(),
        defects=(Defect(Source("f", 7), "unanswered-call", "call x has no result"),),
        line_kinds=(("progress", 3),),
        notes=("followed the chain ending at line 9",),
        name="subagent a1",
    )
    doc = report_to_dict(build_report(t, Estimator()))
    assert doc["defects"] == [{"kind": "unanswered-call", "path": "f", "line": 7, "detail": "call x has no result"}]
    assert doc["line_kinds"] == {"progress": 3}
    assert doc["notes"] == ["followed the chain ending at line 9"]
    assert doc["name"] == "subagent a1"


def test_a_data_tool_is_told_what_page_size_would_have_bounded_it() -> None:
    # SPEC section 5 / issue 13: each result cut to one page of 2,000 tokens (offload's default).
    r = build_report(tool_history({"search": [500, 1500, 3000, 9000], "status": [5, 5, 5, 5]}), TEXT_ONLY)
    search = next(t for t in r.tools if t.tool == "search")
    assert (search.page_tokens, search.paged_tokens, search.largest_pages) == (2000, 500 + 1500 + 2000 + 2000, 5)
    status = next(t for t in r.tools if t.tool == "status")
    assert (status.page_tokens, status.paged_tokens, status.largest_pages) == (None, None, None)
