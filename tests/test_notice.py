"""``fitting.notice``: detecting the safety-net notice in a system prompt
(SPEC section 4) and adding ours once."""

from __future__ import annotations

import pytest

from windowfit.fitting.notice import NOTICE, has_notice, system_text, with_notice
from windowfit.fitting.transcript import Message, Text, Thinking, ToolDef, Transcript

# The instruction as the Russian field report words it (seed 000, "Проблема 2").
RUSSIAN_SEED = (
    "Когда беседа вырастает за пределы того, что модель может принять, самые старые результаты "
    "инструментов очищаются, а самые новые остаются целыми, — поэтому не останавливайте длинную "
    "задачу, чтобы сэкономить место; продолжайте, а если нужно то, что очистили, прочитайте файл снова."
)


@pytest.mark.parametrize(
    "text",
    [
        NOTICE,
        "Old tool results may be removed from context to save room. Don't stop; re-read the file if you need it.",
        # a typographic apostrophe, as editors and chat UIs write it
        "Old tool results may be removed from context. Don’t stop a long task because of it.",
        "We clear the oldest tool outputs when the context fills up. Never stop early to save space.",
        "Earlier tool results get truncated; if you need one again, run the tool again.",
        RUSSIAN_SEED,
        # other inflections: "будут удалены" (will be removed), "уберут" (will take away)
        "Старые результаты инструментов будут удалены из контекста. Не останавливайся: прочитай файл снова.",
        "Предыдущие результаты уберут из контекста; запусти инструмент снова, если понадобится.",
    ],
)
def test_recognises_a_notice(text: str) -> None:
    assert has_notice(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "You are a helpful coding assistant. Use the tools to read and edit files.",
        "Be concise. Prefer small diffs. Run the tests before you finish.",
        # only the first half: clearing is mentioned, nothing tells the agent to keep going
        "Old tool results may be removed from context to save room.",
        "Старые результаты инструментов очищаются.",
        # only the second half: keep going, but nothing says results get cleared
        "Do not stop until every file is read. Re-read the file if you are unsure.",
        "Не останавливайся, пока не прочитаешь все главы.",
    ],
)
def test_ordinary_prompts_and_half_notices_are_not_a_notice(text: str) -> None:
    assert not has_notice(text)


def transcript(*system: Text | Thinking) -> Transcript:
    return Transcript(
        system=system,
        tools=(ToolDef("read", "Read a file.", "{}"),),
        messages=(Message("user", (Text("hi"),)),),
    )


def test_with_notice_appends_the_notice_to_the_system_prompt() -> None:
    before = transcript(Text("You read files."))
    after = with_notice(before)
    assert after.system == (Text("You read files."), Text(NOTICE))
    # nothing else changes, and the input is left as it was
    assert after.messages == before.messages
    assert after.tools == before.tools
    assert before.system == (Text("You read files."),)


def test_with_notice_adds_to_an_empty_system_prompt() -> None:
    assert with_notice(transcript()).system == (Text(NOTICE),)


def test_with_notice_is_idempotent() -> None:
    once = with_notice(transcript(Text("You read files.")))
    twice = with_notice(once)
    assert twice is once
    assert sum(1 for b in twice.system if isinstance(b, Text) and b.text == NOTICE) == 1


def test_with_notice_keeps_a_prompt_that_already_has_one() -> None:
    own = transcript(Text("You read files."), Text(RUSSIAN_SEED))
    assert with_notice(own) is own


def test_the_two_halves_may_sit_in_different_blocks() -> None:
    split = transcript(
        Text("Old tool results may be removed from context."), Text("Do not stop a long task to save space.")
    )
    assert (
        system_text(split.system)
        == "Old tool results may be removed from context.\nDo not stop a long task to save space."
    )
    assert with_notice(split) is split
