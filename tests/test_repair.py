"""Repairs before fitting: a call with no result gets a synthetic result, a
result with no call is dropped, and the fitted request is always valid."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import transcripts

from windowfit.fitting import Message, Text, ToolCall, ToolResult, Transcript, make_estimator
from windowfit.fitting.fit import apply_plan, plan_fit
from windowfit.fitting.repair import NO_RESULT_TEXT, repair
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
