"""Replaying a request log: the recorded requests grouped into conversations
(a request continues the conversation whose newest request its messages
extend, cache marks aside), each conversation replayed as the requests it
holds, in the order sent."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import require_shared
from hypothesis import given, settings
from hypothesis import strategies as st

from windowfit.fitting import Message, Source, Text, Transcript, make_estimator
from windowfit.fitting.fit import plan_fit
from windowfit.fitting.formats import load_path
from windowfit.fitting.replay import WindowfitPolicy, replay
from windowfit.fitting.replay.requests import is_recorded_request, replay_targets, target_of

DATA = Path(__file__).parent / "data" / "anthropic_log"
INTERLEAVED = DATA / "interleaved.jsonl"
# interleaved.jsonl, as written by hand: line 1, 3 and 4 are one Claude Code-like conversation
# (the same system prompt and tools; 1, 3 and 5 messages; the cache mark moves to the newest
# block each time), line 2 a title call whose one message is line 1's but whose system prompt
# is another, line 5 a quota probe. Usage: 3+40+0, 3+110+40, 3+115+150 tokens.


def test_a_request_log_groups_into_conversations_by_extension() -> None:
    transcripts = load_path(INTERLEAVED)
    assert all(is_recorded_request(t) for t in transcripts)
    targets = replay_targets(transcripts)
    assert [t.members for t in targets] == [(0, 2, 3), (1,), (4,)]
    main = targets[0]
    assert [r.held for r in main.requests] == [1, 3, 5]
    assert [r.line for r in main.requests] == [1, 3, 4]
    assert main.transcript.name == "conversation of 3 recorded requests, lines 1-4"
    assert [(u.before, u.total) for u in main.transcript.usage] == [(1, 43), (3, 153), (5, 268)]
    assert main.transcript.messages == transcripts[3].messages


def test_a_request_names_its_conversation_up_to_it() -> None:
    transcripts = load_path(INTERLEAVED)
    target = target_of(transcripts, 2)
    assert target.members == (0, 2)
    assert [r.held for r in target.requests] == [1, 3]
    assert [u.total for u in target.transcript.usage] == [43, 153]
    assert target_of(transcripts, 1).members == (1,)


def test_a_changed_message_starts_a_new_conversation() -> None:
    transcripts = list(load_path(INTERLEAVED))
    third = transcripts[3]
    changed = Message("user", (Text("Summarise c.txt instead."),), third.messages[0].source)
    transcripts[3] = replace(third, messages=(changed, *third.messages[1:]))
    assert [t.members for t in replay_targets(transcripts)] == [(0, 2), (1,), (3,), (4,)]


def test_sessions_are_not_grouped() -> None:
    session = load_path(Path(__file__).parent / "data" / "replay" / "six_reads.jsonl")[0]
    assert not is_recorded_request(session)
    targets = replay_targets([session, session])
    assert [(t.members, t.recorded) for t in targets] == [((0,), False), ((1,), False)]


def _request(conversation: int, held: int, line: int) -> Transcript:
    """Request ``held`` of conversation ``conversation``: alternating user and assistant messages."""
    messages = tuple(
        Message("user" if i % 2 == 0 else "assistant", (Text(f"c{conversation} m{i}"),), Source("log", line))
        for i in range(held)
    )
    return Transcript((), (), messages, Source("log", line), format="anthropic_log", name=f"request {line}")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_interleaved_conversations_come_apart_in_order(lengths: list[int], rnd: object) -> None:
    # Each conversation c sends requests of 1, 3, 5, ... messages; any interleaving of them
    # (each conversation's requests in order) gives the conversations back.
    queues = [[2 * k + 1 for k in range(n)] for n in lengths]
    order: list[tuple[int, int]] = []
    while any(queues):
        c = rnd.choice([i for i, q in enumerate(queues) if q])  # type: ignore[attr-defined]
        order.append((c, queues[c].pop(0)))
    transcripts = [_request(c, held, line) for line, (c, held) in enumerate(order, start=1)]
    targets = replay_targets(transcripts)
    assert len(targets) == len(lengths)
    for target in targets:
        conversations = {order[i][0] for i in target.members}
        assert len(conversations) == 1
        (c,) = conversations
        assert [r.held for r in target.requests] == [2 * k + 1 for k in range(lengths[c])]


def test_each_step_is_a_recorded_request_and_consecutive_ones_share_their_prefix() -> None:
    transcripts = load_path(INTERLEAVED)
    target = replay_targets(transcripts)[0]
    estimator = make_estimator(overhead=0.0)
    (run,) = replay(target.transcript, [WindowfitPolicy], budget=10_000, estimator=estimator, requests=target.requests)
    assert [(s.messages, s.line, s.measured_tokens) for s in run.steps] == [(1, 1, 43), (3, 3, 153), (5, 4, 268)]
    # Everything fits: each request is the previous one plus the newest round, so a prefix cache
    # could serve the whole previous request.
    assert [s.shared_prefix_tokens for s in run.steps[1:]] == [s.sent_tokens for s in run.steps[:-1]]
    assert not any(s.prefix_break for s in run.steps)


def test_clearing_an_older_result_breaks_the_prefix_at_that_request() -> None:
    transcripts = load_path(INTERLEAVED)
    target = replay_targets(transcripts)[0]
    estimator = make_estimator(overhead=0.0)
    # With overheads off: the instruction is 26 chars (7 tokens), each call "read_file" plus
    # {"path":"a.txt"} 25 chars (7), each result 400 chars (100). The third request is
    # 7 + 7 + 100 + 7 + 100 = 221 plus the preamble, over a budget of 200 + preamble: the
    # older result is cleared, the newest (protected) stays.
    preamble = estimator.preamble(target.transcript)
    (run,) = replay(
        target.transcript,
        [lambda s, b: WindowfitPolicy(s, b, batch_size=1)],
        budget=200 + preamble,
        estimator=estimator,
        requests=target.requests,
    )
    assert [s.raw_tokens - preamble for s in run.steps] == [7, 114, 221]
    assert [s.cleared for s in run.steps] == [0, 0, 1]
    assert [s.prefix_break for s in run.steps] == [False, False, True]


def test_the_real_claude_trace_log_replays_its_main_conversation_as_recorded() -> None:
    log = require_shared("corpus", "transcripts", "anthropic_messages", "zkcpku_claude-trace-dev__test-traffic.jsonl")
    transcripts = load_path(log)
    targets = replay_targets(transcripts)
    longest = max(targets, key=lambda t: len(t.requests))
    # The Claude Code main loop (claude-sonnet-4, 17 tools) up to its compaction request at line 35,
    # read off the file: one request per user message, 1, 3, ..., 25 messages.
    assert [r.line for r in longest.requests] == [6, 8, 10, 13, 15, 17, 19, 23, 25, 27, 29, 31, 33]
    assert [r.held for r in longest.requests] == list(range(1, 26, 2))
    estimator = make_estimator()
    (run,) = replay(
        longest.transcript, [WindowfitPolicy], budget=20_000, estimator=estimator, requests=longest.requests
    )
    assert all(s.measured_tokens is not None for s in run.steps)
    # Each replayed request is the recorded one fitted, as fit fits that request on its own.
    for step, request in zip(run.steps, longest.requests, strict=True):
        plan = plan_fit(transcripts[request.index], budget=20_000, estimator=estimator)
        assert (step.sent_tokens, step.outcome) == (plan.tokens_after, plan.outcome)


def test_the_fixture_is_what_its_comment_says() -> None:
    rows = [json.loads(line) for line in INTERLEAVED.read_text().splitlines()]
    assert [len(r["request"]["body"]["messages"]) for r in rows] == [1, 1, 3, 5, 1]


@pytest.mark.parametrize("index", [0, 2, 3])
def test_every_request_of_a_conversation_names_it(index: int) -> None:
    transcripts = load_path(INTERLEAVED)
    assert target_of(transcripts, index).members == (0, 2, 3)[: (0, 2, 3).index(index) + 1]
