"""``fitting.validate``: the providers' structural rules, on hand-made message
lists whose violations (kind, message index, call id) are known by construction."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from strategies import damaged_transcripts, transcripts

from windowfit.fitting.transcript import Block, Message, Role, Source, Text, Thinking, ToolCall, ToolResult, Transcript
from windowfit.fitting.validate import (
    Violation,
    _valid,
    check_messages,
    check_messages_general,
    check_request,
    new_violations,
)


def user(*blocks: Text | ToolResult | str) -> Message:
    return Message("user", tuple(Text(b) if isinstance(b, str) else b for b in blocks))


def assistant(*blocks: Text | ToolCall | ToolResult | str) -> Message:
    return Message("assistant", tuple(Text(b) if isinstance(b, str) else b for b in blocks))


def tool(call_id: str, text: str = "ok") -> Message:
    """An OpenAI ``tool`` message."""
    return Message("tool", (ToolResult(call_id, (Text(text),)),))


def call(call_id: str, name: str = "read") -> ToolCall:
    return ToolCall(call_id, name, '{"path":"a.txt"}')


def result(call_id: str, text: str = "contents") -> ToolResult:
    return ToolResult(call_id, (Text(text),))


def found(violations: tuple[Violation, ...]) -> list[tuple[str, int, str]]:
    return [(v.kind, v.message_index, v.call_id) for v in violations]


# --------------------------------------------------------------------------
# Valid conversations


def test_valid_anthropic_conversation_with_parallel_calls_has_no_violations() -> None:
    messages = [
        user("Read a and b."),
        assistant("Reading both.", call("a"), call("b")),
        user(result("a"), result("b"), "and here is a follow-up"),  # results first, then text: allowed
        assistant(call("c")),
        user(result("c")),
        assistant("Done."),
    ]
    assert check_messages(messages, "anthropic") == ()


def test_valid_openai_conversation_with_parallel_calls_has_no_violations() -> None:
    messages = [
        user("Read a and b."),
        assistant(call("a"), call("b")),
        tool("a"),
        tool("b"),
        assistant(call("c")),
        tool("c"),
        assistant("Done."),
    ]
    assert check_messages(messages, "openai") == ()


def test_results_may_answer_parallel_calls_in_any_order() -> None:
    messages = [user("go"), assistant(call("a"), call("b")), tool("b"), tool("a")]
    assert check_messages(messages, "openai") == ()


def test_empty_and_plain_conversations_are_valid() -> None:
    assert check_messages([], "anthropic") == ()
    assert check_messages([user("hi"), assistant("hello"), user("bye")], "anthropic") == ()


# --------------------------------------------------------------------------
# Each kind of violation


def test_unanswered_call_is_reported_at_the_calling_message() -> None:
    # message 1 calls a and b; message 2 answers only a; message 3 is plain text
    messages = [user("go"), assistant(call("a"), call("b")), user(result("a")), user("next")]
    assert found(check_messages(messages)) == [("unanswered-call", 1, "b")]


def test_call_followed_by_plain_text_is_unanswered() -> None:
    messages = [user("go"), assistant(call("a")), user("never mind"), assistant("ok")]
    assert found(check_messages(messages)) == [("unanswered-call", 1, "a")]


def test_call_at_the_very_end_is_unanswered() -> None:
    messages = [user("go"), assistant(call("a"))]
    assert found(check_messages(messages)) == [("unanswered-call", 1, "a")]


def test_orphan_result_without_any_call() -> None:
    messages = [user("go"), assistant("thinking"), user(result("x"))]
    assert found(check_messages(messages)) == [("orphan-result", 2, "x")]


def test_orphan_result_as_the_first_message() -> None:
    messages = [user(result("x")), assistant("ok")]
    assert found(check_messages(messages)) == [("orphan-result", 0, "x")]


def test_orphan_result_for_another_call() -> None:
    # message 2 answers a and also carries a result for z, which nothing called
    messages = [user("go"), assistant(call("a")), user(result("a"), result("z"))]
    assert found(check_messages(messages)) == [("orphan-result", 2, "z")]


def test_result_separated_from_its_call_is_an_orphan_and_the_call_unanswered() -> None:
    # message 2 (plain text) sits between the call (1) and its result (3)
    messages = [user("go"), assistant(call("a")), user("wait"), user(result("a"))]
    assert found(check_messages(messages)) == [("unanswered-call", 1, "a"), ("orphan-result", 3, "a")]


def test_second_result_for_the_same_call_is_a_duplicate() -> None:
    # Issue 8: a copy of an answered call's result is its own defect, so that the
    # repair drops the copy and keeps the first (not both, which left the call unanswered).
    messages = [user("go"), assistant(call("a")), tool("a"), tool("a")]
    assert found(check_messages(messages, "openai")) == [("duplicate-result", 3, "a")]


def test_result_in_an_assistant_message_is_in_the_wrong_role() -> None:
    messages = [user("go"), assistant(call("a")), user(result("a")), assistant(result("q"), "text")]
    assert found(check_messages(messages)) == [("result-in-wrong-role", 3, "q")]


def test_result_in_a_system_message_is_in_the_wrong_role() -> None:
    messages = [user("go"), Message("system", (result("s"),))]
    assert found(check_messages(messages)) == [("result-in-wrong-role", 1, "s")]


def test_results_not_first_is_an_anthropic_rule_only() -> None:
    # text before the result in the answering user message (message 2)
    messages = [user("go"), assistant(call("a")), user("Here:", result("a"))]
    assert found(check_messages(messages, "anthropic")) == [("results-not-first", 2, "a")]
    assert check_messages(messages, "openai") == ()


def test_results_not_first_when_text_sits_between_results() -> None:
    messages = [user("go"), assistant(call("a"), call("b")), user(result("a"), "between", result("b"))]
    assert found(check_messages(messages, "anthropic")) == [("results-not-first", 2, "a")]


def test_results_not_first_is_also_found_in_a_message_without_calls_before_it() -> None:
    messages = [user("note", result("x"))]
    assert found(check_messages(messages, "anthropic")) == [("results-not-first", 0, "x"), ("orphan-result", 0, "x")]


def test_duplicate_call_id_across_messages() -> None:
    messages = [
        user("go"),
        assistant(call("a")),
        user(result("a")),
        assistant(call("a")),  # the same id again
        user(result("a")),
    ]
    assert found(check_messages(messages)) == [("duplicate-call-id", 3, "a")]


def test_duplicate_call_id_within_one_message() -> None:
    messages = [user("go"), assistant(call("a"), call("a")), user(result("a"))]
    # Two calls expect two results: the second call is unanswered too (the repair
    # renames it and answers it).
    assert found(check_messages(messages)) == [("duplicate-call-id", 1, "a"), ("unanswered-call", 1, "a")]


def test_violations_come_in_message_order() -> None:
    messages = [
        user(result("x")),  # 0: orphan
        assistant(call("a")),  # 1: unanswered (message 2 is text)
        user("text"),
        assistant(result("y")),  # 3: wrong role
    ]
    assert found(check_messages(messages)) == [
        ("orphan-result", 0, "x"),
        ("unanswered-call", 1, "a"),
        ("result-in-wrong-role", 3, "y"),
    ]


# --------------------------------------------------------------------------
# Requests, locations, and what a fit added


def test_check_request_uses_the_transcript_dialect_unless_told() -> None:
    messages = (user("go"), assistant(call("a")), user("Here:", result("a")))
    anthropic = Transcript((), (), messages, dialect="anthropic")
    openai = Transcript((), (), messages, dialect="openai")
    assert found(check_request(anthropic)) == [("results-not-first", 2, "a")]
    assert check_request(openai) == ()
    assert found(check_request(openai, "anthropic")) == [("results-not-first", 2, "a")]


def test_violation_names_file_line_and_message() -> None:
    messages = [
        Message("user", (Text("go"),), Source("chat.jsonl", 1)),
        Message("assistant", (call("a"),), Source("chat.jsonl", 2)),
    ]
    (violation,) = check_messages(messages)
    assert str(violation) == "chat.jsonl:2: message 1: tool call a (read) has no result right after it"
    assert violation.key == ("unanswered-call", "a")


def test_new_violations_ignores_those_already_in_the_input() -> None:
    before = check_messages([user("go"), assistant(call("a")), user("text")])  # a unanswered at 1
    # after a fit the same defect sits at another index, and a new one appeared
    after = check_messages([user("go"), user("note"), assistant(call("a")), user(result("z"))])
    assert found(after) == [("unanswered-call", 2, "a"), ("orphan-result", 3, "z")]
    assert found(new_violations(before, after)) == [("orphan-result", 3, "z")]


def test_new_violations_is_empty_when_nothing_changed() -> None:
    violations = check_messages([user(result("x"))])
    assert new_violations(violations, violations) == ()
    assert new_violations((), ()) == ()


# --------------------------------------------------------------------------
# The fast check against the general one (the ground truth)


IDS = ("a", "b", "c")
BLOCKS: st.SearchStrategy[Block] = st.one_of(
    st.builds(Text, st.sampled_from(("x", "y"))),
    st.builds(Thinking, st.just("t")),
    st.builds(call, st.sampled_from(IDS)),
    st.builds(result, st.sampled_from(IDS)),
)
ROLES: st.SearchStrategy[Role] = st.sampled_from(("user", "assistant", "tool", "system"))
MESSAGES = st.lists(
    st.builds(lambda role, blocks: Message(role, tuple(blocks)), ROLES, st.lists(BLOCKS, max_size=4)), max_size=8
)


@given(MESSAGES, st.sampled_from(("anthropic", "openai")))
def test_check_messages_is_the_general_check_on_any_messages(messages: list[Message], dialect: str) -> None:
    assert check_messages(messages, dialect) == check_messages_general(messages, dialect)  # type: ignore[arg-type]


@given(st.one_of(transcripts(max_turns=3, max_rounds=4), damaged_transcripts(max_turns=3, max_rounds=4)))
def test_check_messages_is_the_general_check_on_generated_sessions(transcript: Transcript) -> None:
    for dialect in ("anthropic", "openai"):
        assert check_messages(transcript.messages, dialect) == check_messages_general(transcript.messages, dialect)


def test_the_fast_check_passes_valid_messages_without_the_general_one() -> None:
    """Valid rounds (parallel calls, results first, OpenAI tool messages) are proved valid by the fast look."""
    anthropic = [
        user("go"),
        assistant("t", call("a"), call("b")),
        user(result("a"), result("b"), "more"),
        assistant("ok"),
    ]
    openai = [user("go"), assistant(call("a"), call("b")), tool("a"), tool("b"), assistant("ok")]
    assert _valid(anthropic, True) and _valid(openai, False)
    assert not _valid([user("go"), assistant(call("a")), user("no result")], True)
