"""The pre-fix truncation of the field report, kept to compare against: cut
only at the start of a user message, keeping the first message, a note and
the newest whole turns that fit (at least the newest one). A transcript with
one turn has nowhere to cut, so it is sent whole, however large."""

from __future__ import annotations

from dataclasses import replace

from .estimate import Estimator
from .fit import TRUNCATION_NOTE
from .transcript import Message, Text, Transcript, split_turns


def legacy_fit(transcript: Transcript, *, budget: int, estimator: Estimator) -> Transcript:
    """The request the old harness would have sent."""
    messages = transcript.messages
    total = estimator.request(transcript)
    if total <= budget or not messages:
        return transcript
    note = Message("user", (Text(TRUNCATION_NOTE),))
    used = estimator.preamble(transcript) + estimator.message(messages[0]).tokens + estimator.message(note).tokens
    turns = [t for t in split_turns(messages) if t.start >= 1]
    keep_from = None
    for turn in reversed(turns):
        cost = sum(estimator.message(m).tokens for m in messages[turn.start : turn.stop])
        if used + cost > budget:
            break
        used += cost
        keep_from = turn.start
    if not turns:
        return transcript  # one turn: nowhere to cut, the whole history goes out
    if keep_from is None:
        keep_from = turns[-1].start  # the smallest cut it can make, still over the budget
    return replace(transcript, messages=(messages[0], note, *messages[keep_from:]))
