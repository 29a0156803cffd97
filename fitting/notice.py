"""SPEC section 4: the agent must be told about its safety net. Detect such a
notice in a system prompt, and the notice windowfit adds when asked."""

from __future__ import annotations

import re
from dataclasses import replace

from .transcript import Block, Text, Thinking, Transcript

NOTICE = (
    "Context management: when this conversation grows beyond what the model can read in one request, "
    "the oldest tool results are cleared (replaced by a short note) and the newest ones are kept whole. "
    "So do not stop a long task, or skip work, to save space: keep going. If you need something from a "
    "cleared result, run the tool again (for example, re-read the file)."
)
"""The notice ``--add-notice`` appends to the system prompt."""

# Both halves must be present: (a) old tool results get cleared/removed and
# (b) the agent should not stop (or should re-read) because of it.
_CLEARING = (
    re.compile(
        r"(old|earl|previous|prior)\w*\s+(tool\s+)?(results?|outputs?)\b.{0,80}?"
        r"\b(clear|remov|evict|truncat|drop)",
        re.I | re.S,
    ),
    re.compile(
        r"\b(clear|remov|evict|truncat|drop)\w*\b.{0,80}?\b(old|earl|previous|prior)\w*\s+(tool\s+)?"
        r"(results?|outputs?)",
        re.I | re.S,
    ),
    # Stems, not one inflection: "очищаются"/"очищены", "удаляются"/"будут удалены", "убираются"/"уберут".
    re.compile(r"(стар|прежн|предыдущ)\w*\s+результат\w*.{0,80}?(очищ|очист|удал|убира|убер|убра)", re.I | re.S),
)
_KEEP_GOING = (
    re.compile(r"\b(do\s+not|don['’]t|never)\s+stop\b", re.I),  # typographic apostrophe too
    re.compile(r"\b(re-?read|run\s+the\s+tool\s+again|call\s+the\s+tool\s+again)", re.I),
    re.compile(r"не\s+останавлива|прочита\w*\s+(файл\s+)?снова|запусти\w*\s+.{0,30}снова", re.I),
)


def system_text(blocks: tuple[Block, ...]) -> str:
    return "\n".join(b.text for b in blocks if isinstance(b, (Text, Thinking)))


def has_notice(text: str) -> bool:
    """Whether a system prompt tells the agent that old tool results get
    cleared and that it must not stop (or should re-run the tool) because of it."""
    return any(p.search(text) for p in _CLEARING) and any(p.search(text) for p in _KEEP_GOING)


def with_notice(transcript: Transcript) -> Transcript:
    """The transcript with ``NOTICE`` appended to its system prompt, unless it has one."""
    if has_notice(system_text(transcript.system)):
        return transcript
    return replace(transcript, system=(*transcript.system, Text(NOTICE)))
