"""Fitted bodies a strict validator accepts (issue 13, item 9): the truncation note stages 2 and 3 add is a text
block of the user message beside it, not a user message of its own, so no fitted body has two messages of one
role in a row that the input did not have already (Bedrock's Converse API rejects them; the Anthropic API merges
them). Checked on the bodies ``fit -o`` writes, in each wire, for generated transcripts and the corpus."""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from conftest import require_shared
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from strategies import subagents, transcripts

from windowfit.fitting import Transcript, make_estimator
from windowfit.fitting.fit import TRUNCATION_NOTE, apply_plan, plan_fit
from windowfit.fitting.formats import load_path
from windowfit.fitting.request import write_transcript

WIRES = ("anthropic", "openai", "same")


NOTE_BLOCK = {"type": "text", "text": TRUNCATION_NOTE}


def _key(message: dict[str, Any], part: slice = slice(None)) -> str:
    """What tells a body's message apart whatever stage 1 did to it: its role, and its content (``part`` of it:
    a text content is its one text block) with each tool result's content left out (a stub keeps the call id)."""
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if isinstance(content, list):
        content = [
            {"tool_use_id": b.get("tool_use_id")} if isinstance(b, dict) and b.get("type") == "tool_result" else b
            for b in content[part]
        ]
    if message.get("role") == "tool":
        content = None
    return json.dumps([message.get("role"), message.get("tool_call_id"), content, message.get("tool_calls")])


def _note_at(message: dict[str, Any]) -> int | None:
    content = message.get("content")
    return content.index(NOTE_BLOCK) if isinstance(content, list) and NOTE_BLOCK in content else None


def _messages(data: bytes) -> list[dict[str, Any]]:
    """A written request's messages: a body's, or a messages file's lines (its system line left out)."""
    try:
        value = json.loads(data)
    except json.JSONDecodeError:
        value = None
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        found: list[dict[str, Any]] = value["messages"]
    else:
        found = [json.loads(line) for line in data.splitlines() if line.strip()]
    return [m for m in found if m.get("role") != "system"]


def _pairs(messages: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    """The keys of each two messages in a row of one role (results of one round, ``tool`` messages, aside). Of
    the message the note joins, the messages it joined stand beside the others: what comes after the note for the
    message after it, what comes before the note for the message before it."""
    for a, b in pairwise(messages):
        if a.get("role") == b.get("role") and a.get("role") in ("user", "assistant"):
            at, bt = _note_at(a), _note_at(b)
            yield (
                _key(a) if at is None else _key(a, slice(at + 1, None)),
                _key(b) if bt is None else _key(b, slice(None, bt)),
            )


def new_pairs(transcript: Transcript, budget: int, wire: str) -> tuple[str, list[tuple[str, str]]]:
    """The outcome of fitting ``transcript`` to ``budget``, and the pairs of messages of one role in a row in the
    body written in ``wire`` that the input, written in that wire, does not have."""
    est = make_estimator()
    plan = plan_fit(transcript, budget=budget, estimator=est)
    if not plan.fits:
        return plan.outcome, []
    # the input as fitting sends it when it fits: repaired (a repair that drops an orphan result's message
    # leaves the messages beside it in a row, a defect of the input the fit does not add)
    whole = apply_plan(transcript, plan_fit(transcript, budget=10**12, estimator=est))
    before = set(_pairs(_messages(write_transcript(whole, to=wire))))  # type: ignore[arg-type]
    written = _messages(write_transcript(apply_plan(transcript, plan), to=wire))  # type: ignore[arg-type]
    if plan.note:  # the note is inside a message, never one of its own
        assert not any(m.get("content") in (TRUNCATION_NOTE, [NOTE_BLOCK]) for m in written)
        assert sum(TRUNCATION_NOTE in json.dumps(m) for m in written) == 1
    return plan.outcome, [p for p in _pairs(written) if p not in before]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(transcripts(), subagents()), st.floats(0.01, 1.2), st.sampled_from(("anthropic", "openai")))
def test_no_fitted_body_has_two_messages_of_a_role_in_a_row_the_input_did_not(
    transcript: Transcript, fraction: float, wire: str
) -> None:
    budget = max(1, int(make_estimator().request(transcript) * fraction))
    outcome, added = new_pairs(transcript, budget, wire)
    event(f"{outcome} ({transcript.dialect} to {wire})")
    assert added == []


CORPUS = ("transcripts/claude_code", "transcripts/codex", "transcripts/anthropic_messages", "transcripts/openai_chat")


@pytest.mark.slow
@pytest.mark.parametrize("folder", CORPUS)
def test_no_fitted_corpus_body_has_two_messages_of_a_role_in_a_row_the_input_did_not(folder: str) -> None:
    root = require_shared("corpus", folder)
    truncated = 0
    for path in sorted(p for p in root.iterdir() if p.is_file()):
        longest = sorted(load_path(path, skip_invalid=True), key=lambda t: -len(t.messages))
        for transcript in longest[:3]:
            transcript = transcript.live()
            size = make_estimator().request(transcript)
            for fraction in (0.1, 0.3):
                for wire in WIRES if transcript.format == "messages" else WIRES[:2]:
                    outcome, added = new_pairs(transcript, max(1, int(size * fraction)), wire)
                    assert added == [], (path.name, fraction, wire)
                    truncated += outcome in ("turns-dropped", "rounds-dropped")
    assert truncated, "some fit should have left messages out"


def test_the_note_joins_the_first_message_and_the_next_turn_into_one_user_message(tmp_path: Path) -> None:
    """Stage 2 keeps the first message and the newest turn: both user messages. On the wire they and the note
    are one user message, the first message's blocks first, each as the file spelled it."""
    big = "word " * 2_000
    lines = [
        '{"role": "user", "content": [{"type": "text", "text": "first", "n": 1E+2}]}',
        f'{{"role":"assistant","content":"{big}"}}',
        '{"role":"user","content":"second"}',
        '{"role":"assistant","content":"ok"}',
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n")
    (transcript,) = load_path(path)
    plan = plan_fit(transcript, budget=200)
    assert plan.outcome == "turns-dropped"
    written = write_transcript(apply_plan(transcript, plan), to="same").decode().splitlines()
    assert written == [
        '{"role":"user","content":[{"type": "text", "text": "first", "n": 1E+2},'
        f'{{"type":"text","text":"{TRUNCATION_NOTE}"}},{{"type":"text","text":"second"}}]}}',
        '{"role":"assistant","content":"ok"}',
    ]
