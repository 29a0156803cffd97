"""Turns and tool rounds (SPEC section 1): where a turn starts, and that a call
and its results always form one round."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given, settings
from strategies import subagents, transcripts

from windowfit.fitting import (
    Message,
    Round,
    Single,
    Source,
    Text,
    ToolCall,
    ToolResult,
    Transcript,
    Turn,
    split_turns,
    split_units,
)
from windowfit.fitting.transcript import count_rounds, iter_tool_results, tool_names


def user(text: str) -> Message:
    return Message("user", (Text(text),))


def assistant(text: str) -> Message:
    return Message("assistant", (Text(text),))


def calls(*ids: str, text: str = "") -> Message:
    lead = (Text(text),) if text else ()
    return Message("assistant", (*lead, *(ToolCall(i, "read_file", '{"path":"a"}') for i in ids)))


def results(*ids: str) -> Message:
    """Anthropic shape: one user message carrying every result."""
    return Message("user", tuple(ToolResult(i, (Text(f"content of {i}"),)) for i in ids))


def tool(call_id: str) -> Message:
    """OpenAI shape: one tool message per result."""
    return Message("tool", (ToolResult(call_id, (Text("ok"),), name="read_file"),))


def test_human_message_starts_a_turn_but_tool_results_do_not() -> None:
    messages = [
        user("read a"),  # 0: turn 1
        calls("c1"),  # 1
        results("c1"),  # 2: a user message with only results: not a turn start
        assistant("done"),  # 3
        user("now b"),  # 4: turn 2
        assistant("ok"),  # 5
    ]
    assert [m.starts_turn for m in messages] == [True, False, False, False, True, False]
    assert split_turns(messages) == (Turn(0, 4), Turn(4, 6))


def test_user_message_with_results_and_text_is_not_a_turn_start() -> None:
    mixed = Message("user", (ToolResult("c1", (Text("x"),)), Text("and also: hurry")))
    messages = [user("go"), calls("c1"), mixed, assistant("done")]
    assert not mixed.starts_turn
    assert split_turns(messages) == (Turn(0, 4),)


def test_transcript_opening_with_an_assistant_message_gets_a_leading_turn() -> None:
    messages = [assistant("Hi! How can I help?"), user("read a"), assistant("done")]
    assert split_turns(messages) == (Turn(0, 1), Turn(1, 3))
    assert split_turns([assistant("alone")]) == (Turn(0, 1),)
    assert split_turns([]) == ()


def test_parallel_calls_anthropic_shape_form_one_round() -> None:
    messages = [
        user("read three"),
        calls("c1", "c2", "c3", text="Reading."),
        results("c1", "c2", "c3"),
        assistant("ok"),
    ]
    assert split_units(messages) == (Single(0), Round(1, 3, ("c1", "c2", "c3")), Single(3))
    assert count_rounds(messages) == 1


def test_parallel_calls_openai_shape_form_one_round() -> None:
    messages = [user("read three"), calls("c1", "c2", "c3"), tool("c1"), tool("c2"), tool("c3"), assistant("ok")]
    assert split_units(messages) == (Single(0), Round(1, 5, ("c1", "c2", "c3")), Single(5))
    assert count_rounds(messages) == 1


def test_openai_results_out_of_order_still_close_the_round() -> None:
    messages = [calls("c1", "c2"), tool("c2"), tool("c1"), calls("c3"), tool("c3")]
    assert split_units(messages) == (Round(0, 3, ("c1", "c2")), Round(3, 5, ("c3",)))


def test_round_stops_at_the_next_assistant_when_a_result_is_missing() -> None:
    # c2 never gets a result: the round is the call message and the one result message, nothing more
    messages = [user("go"), calls("c1", "c2"), results("c1"), assistant("gave up"), user("again")]
    assert split_units(messages) == (Single(0), Round(1, 3, ("c1", "c2")), Single(3), Single(4))


def test_unanswered_call_is_a_round_of_one_message() -> None:
    assert split_units([user("go"), calls("c1")]) == (Single(0), Round(1, 2, ("c1",)))


def test_consecutive_rounds_are_separate() -> None:
    messages = [user("go"), calls("c1"), results("c1"), calls("c2"), results("c2")]
    assert split_units(messages) == (Single(0), Round(1, 3, ("c1",)), Round(3, 5, ("c2",)))


def test_subagent_is_one_turn_of_many_rounds() -> None:
    messages = [user("Read chapters 1-5 and summarise each.")]
    for n in range(1, 6):
        messages += [calls(f"c{n}"), results(f"c{n}")]
    messages.append(assistant("Summaries: ..."))
    assert split_turns(messages) == (Turn(0, 12),)
    units = split_units(messages)
    assert units == (
        Single(0),
        Round(1, 3, ("c1",)),
        Round(3, 5, ("c2",)),
        Round(5, 7, ("c3",)),
        Round(7, 9, ("c4",)),
        Round(9, 11, ("c5",)),
        Single(11),
    )
    assert count_rounds(messages) == 5


def test_split_units_of_a_slice() -> None:
    messages = [user("a"), calls("c1"), results("c1"), user("b"), calls("c2"), tool("c2"), assistant("x")]
    assert split_units(messages, 3) == (Single(3), Round(4, 6, ("c2",)), Single(6))
    assert split_units(messages, 0, 3) == (Single(0), Round(1, 3, ("c1",)))


def test_single_stop_is_start_plus_one() -> None:
    assert Single(4).stop == 5


def test_tool_names_and_results_in_order() -> None:
    messages = [user("go"), calls("c1", "c2"), results("c1", "c2")]
    assert tool_names(messages) == {"c1": "read_file", "c2": "read_file"}
    assert [(mi, bi, r.call_id) for mi, bi, r in iter_tool_results(messages)] == [(2, 0, "c1"), (2, 1, "c2")]


def test_message_source_does_not_affect_equality() -> None:
    a = Message("user", (Text("x"),), Source("a.jsonl", 1))
    b = Message("user", (Text("x"),), Source("b.jsonl", 9))
    assert a == b
    assert hash(a) == hash(b)


# --------------------------------------------------------------------------
# Properties over generated transcripts


@pytest.mark.slow
@settings(deadline=None)
@given(transcripts())
def test_turns_partition_messages_and_start_at_human_messages(transcript: Transcript) -> None:
    messages = transcript.messages
    turns = split_turns(messages)
    assert turns[0].start == 0
    assert turns[-1].stop == len(messages)
    assert all(a.stop == b.start for a, b in pairwise(turns))
    assert all(messages[t.start].starts_turn for t in turns)
    # the generator writes exactly one human message per turn
    assert len(turns) == sum(1 for m in messages if m.role == "user" and not m.tool_results)


@pytest.mark.slow
@settings(deadline=None)
@given(transcripts())
def test_every_round_holds_all_results_of_its_calls(transcript: Transcript) -> None:
    messages = transcript.messages
    units = split_units(messages)
    assert units[0].start == 0
    assert units[-1].stop == len(messages)
    assert all(a.stop == b.start for a, b in pairwise(units))
    for unit in units:
        if isinstance(unit, Round):
            answered = {r.call_id for m in messages[unit.start + 1 : unit.stop] for r in m.tool_results}
            assert answered == set(unit.call_ids)
            assert unit.call_ids == tuple(c.id for c in messages[unit.start].tool_calls)
        else:
            assert not messages[unit.start].tool_calls
            assert not messages[unit.start].tool_results


@pytest.mark.slow
@settings(deadline=None)
@given(subagents())
def test_generated_subagents_are_one_turn_of_many_rounds(transcript: Transcript) -> None:
    assert len(split_turns(transcript.messages)) == 1
    assert count_rounds(transcript.messages) >= 2
