"""The plan's machine-integer pieces (issue 11, item 5: ``fit`` on very many tiny messages within 3x the file)
against the plain loops they replaced: the turns (``turn_bounds``), the dropped turns, and what leaving messages
out takes off a request (``_Sizer``)."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import transcripts

from windowfit.fitting.fit import Dropped, _dropped_turns, _Sizer
from windowfit.fitting.transcript import Message, Transcript, split_turns, turn_bounds


def _turns(messages: tuple[Message, ...]) -> list[tuple[int, int]]:
    """The turns as SPEC section 3 defines them: a human user message and all up to the next, and the
    messages before the first one a turn of their own."""
    if not messages:
        return []
    starts = [i for i, m in enumerate(messages) if m.starts_turn]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    return list(pairwise([*starts, len(messages)]))


@settings(max_examples=30, deadline=None)
@given(transcripts(max_turns=6), st.data())
def test_turn_bounds_and_the_dropped_turns_are_the_turns(transcript: Transcript, data: st.DataObject) -> None:
    messages = transcript.messages
    turns = _turns(messages)
    bounds = turn_bounds(messages)
    assert list(pairwise(bounds)) == turns
    assert [(t.start, t.stop) for t in split_turns(messages)] == turns
    n = len(messages)
    tokens = data.draw(st.lists(st.integers(0, 500), min_size=n, max_size=n))
    start = data.draw(st.integers(0, n + 1))
    stop = data.draw(st.integers(0, n + 1))
    expected = []
    for a, b in turns:
        a, b = max(a, start), min(b, stop)
        if a < b:
            expected.append(Dropped("turn", a, b, sum(tokens[a:b])))
    assert _dropped_turns(bounds, tokens, start, stop) == tuple(expected)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_what_leaving_messages_out_removes(data: st.DataObject) -> None:
    """Unanchored: the estimates of ``[a, b)`` less what stage 1 saved on them, however the saves came."""
    n = data.draw(st.integers(0, 40))
    estimates = data.draw(st.lists(st.integers(0, 1_000), min_size=n, max_size=n))
    sizer = _Sizer.of([Message("user", ())] * n, estimates, None, ())
    saved = [0] * n
    if n:
        for index, tokens in data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 300)))):
            sizer.save(index, tokens)
            saved[index] += tokens
    sizer.seal()
    for _ in range(10):
        a = data.draw(st.integers(0, n))
        b = data.draw(st.integers(0, n))
        expected = sum(estimates[a:b]) - sum(saved[a:b]) if a < b else 0
        assert sizer.removed(a, b) == expected
