"""Repairs before fitting: a call with no result gets a synthetic result, a
result with no call is dropped, and the fitted request is always valid."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import damaged_transcripts, transcripts

from windowfit.fitting import Message, Source, Text, ToolCall, ToolResult, Transcript, build_report, make_estimator
from windowfit.fitting.fit import apply_plan, plan_fit
from windowfit.fitting.repair import DEFECT_OF, NO_RESULT_TEXT, repair, repair_defects
from windowfit.fitting.validate import check_messages, check_request


def t(*messages: Message, dialect: str = "anthropic") -> Transcript:
    return Transcript((), (), messages, dialect=dialect)  # type: ignore[arg-type]


def test_valid_transcript_comes_back_unchanged() -> None:
    valid = t(
        Message("user", (Text("hi"),)),
        Message("assistant", (ToolCall("a", "read", "{}"),)),
        Message("user", (ToolResult("a", (Text("x"),)),)),
    )
    assert repair(valid) == (valid, ())
    assert repair(valid)[0] is valid


def test_interrupted_call_gets_a_synthetic_result_right_after_it() -> None:
    # The session was interrupted after the assistant called two tools; one answer was recorded.
    broken = t(
        Message("user", (Text("go"),)),
        Message("assistant", (ToolCall("a", "read", "{}"), ToolCall("b", "grep", "{}"))),
        Message("user", (ToolResult("a", (Text("x"),)),)),
        Message("user", (Text("are you there?"),)),
    )
    fixed, repairs = repair(broken)
    assert [(r.kind, r.call_id, r.message_index) for r in repairs] == [("synthetic-result", "b", 1)]
    results = fixed.messages[2].content
    assert [b.call_id for b in results if isinstance(b, ToolResult)] == ["a", "b"]
    synthetic = results[1]
    assert isinstance(synthetic, ToolResult) and synthetic.is_error
    assert synthetic.content == (Text(NO_RESULT_TEXT),) and "no result was recorded" in NO_RESULT_TEXT
    assert fixed.messages[3] == broken.messages[3]
    assert check_request(fixed) == ()


def test_call_with_no_results_message_at_all_gets_one() -> None:
    broken = t(
        Message("user", (Text("go"),)),
        Message("assistant", (ToolCall("a", "read", "{}"),)),
        Message("user", (Text("next question"),)),
    )
    fixed, _ = repair(broken)
    assert [m.role for m in fixed.messages] == ["user", "assistant", "user", "user"]
    assert fixed.messages[2].tool_results[0].call_id == "a"
    assert check_request(fixed) == ()


def test_openai_shape_answers_with_a_tool_message() -> None:
    broken = t(Message("user", (Text("go"),)), Message("assistant", (ToolCall("a", "read", "{}"),)), dialect="openai")
    fixed, _ = repair(broken)
    assert fixed.messages[-1].role == "tool" and fixed.messages[-1].tool_results[0].call_id == "a"


def test_orphan_result_is_dropped_and_an_emptied_message_goes_too() -> None:
    broken = t(
        Message("user", (Text("go"),)),
        Message("assistant", (Text("thinking"),)),
        Message("user", (ToolResult("ghost", (Text("x"),)),)),
        Message("user", (Text("more"),)),
    )
    fixed, repairs = repair(broken)
    assert [(r.kind, r.call_id, r.message_index) for r in repairs] == [("dropped-result", "ghost", 2)]
    assert [m.content[0] for m in fixed.messages] == [Text("go"), Text("thinking"), Text("more")]


def test_plan_records_repairs_and_the_fitted_request_is_valid() -> None:
    broken = t(Message("user", (Text("go"),)), Message("assistant", (ToolCall("a", "read", "{}"),)))
    plan = plan_fit(broken, budget=10_000)
    assert [r.kind for r in plan.repairs] == ["synthetic-result"]
    out = apply_plan(broken, plan)
    assert check_request(out) == ()
    assert plan.tokens_after == make_estimator().request(out)


@st.composite
def damaged(draw: st.DrawFn) -> Transcript:
    """A generated transcript with some results and some calls deleted."""
    transcript = draw(transcripts(max_turns=3, max_rounds=5))
    messages = []
    for m in transcript.messages:
        content = tuple(
            b for b in m.content if not (isinstance(b, (ToolResult, ToolCall)) and draw(st.integers(0, 5)) == 0)
        )
        if content:
            messages.append(replace(m, content=content))
    return replace(transcript, messages=tuple(messages))


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged(), st.floats(0.02, 1.2))
def test_any_damaged_transcript_is_repaired_and_fitted_into_a_valid_request(
    transcript: Transcript, fraction: float
) -> None:
    before = check_messages(transcript.messages, transcript.dialect)
    fixed, repairs = repair(transcript)
    assert check_request(fixed) == ()
    orphan_kinds = {"unanswered-call": "synthetic-result", "orphan-result": "dropped-result"}
    assert sorted((orphan_kinds[v.kind], v.call_id) for v in before if v.kind in orphan_kinds) == sorted(
        (r.kind, r.call_id) for r in repairs
    )
    budget = max(1, int(make_estimator().request(transcript) * fraction))
    plan = plan_fit(transcript, budget=budget)
    out = apply_plan(transcript, plan)
    assert check_request(out) == ()
    assert out.messages[0] == fixed.messages[0]


# --------------------------------------------------------------------------
# Issue 8: duplicates and reused call ids


def at(line: int, role: str, *content: object) -> Message:
    return Message(role, tuple(content), Source("t.jsonl", line))  # type: ignore[arg-type]


def test_a_result_repeated_in_its_message_keeps_the_first_copy_issue_8() -> None:
    # Issue 8: both copies were dropped, leaving the call unanswered (and fit crashed).
    broken = t(
        at(1, "user", Text("go")),
        at(2, "assistant", ToolCall("a", "read", "{}")),
        at(3, "user", ToolResult("a", (Text("first"),)), ToolResult("a", (Text("second"),))),
    )
    fixed, repairs = repair(broken)
    assert [(r.kind, r.call_id, r.message_index, r.source.line) for r in repairs] == [
        ("dropped-duplicate-result", "a", 2, 3)
    ]
    assert fixed.messages[2].content == (ToolResult("a", (Text("first"),)),)
    assert check_request(fixed) == ()


def test_a_result_repeated_in_the_next_tool_message_is_dropped_issue_8() -> None:
    broken = t(
        at(1, "user", Text("go")),
        at(2, "assistant", ToolCall("a", "read", "{}")),
        at(3, "tool", ToolResult("a", (Text("x"),))),
        at(4, "tool", ToolResult("a", (Text("x"),))),
        dialect="openai",
    )
    fixed, repairs = repair(broken)
    assert [(r.kind, r.source.line) for r in repairs] == [("dropped-duplicate-result", 4)]
    assert [m.role for m in fixed.messages] == ["user", "assistant", "tool"]


def test_a_reused_call_id_is_renamed_in_the_call_and_its_result_issue_8() -> None:
    broken = t(
        at(1, "user", Text("go")),
        at(2, "assistant", ToolCall("a", "read", "{}")),
        at(3, "user", ToolResult("a", (Text("x"),))),
        at(4, "assistant", ToolCall("a", "read", "{}")),
        at(5, "user", ToolResult("a", (Text("y"),))),
    )
    fixed, repairs = repair(broken)
    assert [(r.kind, r.call_id, r.source.line) for r in repairs] == [("renamed-call-id", "a", 4)]
    assert fixed.messages[3].tool_calls[0].id == "a-dup2"
    assert fixed.messages[4].tool_results[0].call_id == "a-dup2"
    assert fixed.messages[2] == broken.messages[2]
    assert check_request(fixed) == ()


def test_one_id_twice_in_one_message_is_renamed_not_called_unanswered() -> None:
    broken = t(
        at(1, "user", Text("go")),
        at(2, "assistant", ToolCall("a", "read", "{}"), ToolCall("a", "grep", "{}")),
        at(3, "user", ToolResult("a", (Text("x"),)), ToolResult("a", (Text("y"),))),
    )
    assert [v.kind for v in check_messages(broken.messages)] == ["duplicate-call-id"]
    fixed, repairs = repair(broken)
    assert [r.kind for r in repairs] == ["renamed-call-id"]
    assert [b.call_id for b in fixed.messages[2].tool_results] == ["a", "a-dup2"]
    assert check_request(fixed) == ()


def test_repair_defects_name_the_defect_and_its_line() -> None:
    broken = t(
        at(1, "user", Text("go")),
        at(2, "assistant", ToolCall("a", "read", "{}")),
        at(3, "user", ToolResult("ghost", (Text("x"),))),
    )
    found = [(d.kind, d.source.line) for d in repair_defects(broken)]
    assert sorted(found) == [("orphan-result", 3), ("unanswered-call", 2)]


def violations_repair_fixes(transcript: Transcript) -> bool:
    """The input's only violations are ones ``repair`` fixes."""
    return all(v.kind in DEFECT_OF.values() for v in check_messages(transcript.messages, transcript.dialect))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged_transcripts(), st.floats(0.02, 1.2))
def test_any_transcript_with_repairable_defects_fits_into_a_valid_request(
    transcript: Transcript, fraction: float
) -> None:
    assume(violations_repair_fixes(transcript))
    budget = max(1, int(make_estimator().request(transcript) * fraction))
    plan = plan_fit(transcript, budget=budget)
    out = apply_plan(transcript, plan)
    assert check_request(out) == ()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged_transcripts())
def test_report_lists_exactly_the_defects_fit_repairs(transcript: Transcript) -> None:
    # Issue 8: report listed none of them for plain message files.
    plan = plan_fit(transcript, budget=10**9)
    report = build_report(transcript, make_estimator())
    assert sorted((d.kind, d.source.line) for d in report.defects) == sorted(
        (r.defect, r.source.line) for r in plan.repairs
    )
    # The same kinds and lines as the providers' rules find in the input (an analysis of its own).
    fixable = [v for v in check_messages(transcript.messages, transcript.dialect) if v.kind in DEFECT_OF.values()]
    assert sorted((d.kind, d.source.line) for d in report.defects) == sorted((v.kind, v.source.line) for v in fixable)
