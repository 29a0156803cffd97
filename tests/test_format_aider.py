"""The "aider" format: ``.aider.chat.history.md``, every ``# aider chat
started at`` a session; ``####`` lines the person's input, ``>`` lines aider's
output (a text observation stage 1 can clear, issue 9 item 4)."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import DATA, require_shared

from windowfit.fitting import Transcript, make_estimator
from windowfit.fitting.fit import fit
from windowfit.fitting.formats import SPECIFIC, Input, detect, discover, load_path
from windowfit.fitting.transcript import Text
from windowfit.fitting.validate import check_request

FIXTURE = DATA / "aider" / "chat-history.md"
CORPUS = ("corpus", "new-formats", "aider", "Aider-AI_aider__chat-history.md")


def blocks(t: Transcript) -> list[tuple[str, str, str]]:
    return [(m.role, b.observation_of, b.text) for m in t.messages for b in m.content if isinstance(b, Text)]


def test_sessions_inputs_replies_and_output() -> None:
    first, second = load_path(FIXTURE)
    assert (first.format, first.name) == ("aider", "session 2025-05-02 09:14:03 (line 2)")
    assert [m.role for m in first.messages] == ["user", "assistant", "user", "assistant", "user"]
    inputs = [text for role, obs, text in blocks(first) if role == "user" and not obs]
    assert inputs == [
        "/add calc.py",
        "make divide() raise ValueError on a zero divisor",
        "/run pytest -q",
        "the test expects ZeroDivisionError; keep that instead",
    ]
    # the banner before the first input is not part of the conversation; ">>>>>>> REPLACE" is the reply's
    assert not any("Aider v0.82.2" in text for _, _, text in blocks(first))
    assert ">>>>>>> REPLACE" in first.messages[1].content[0].text  # type: ignore[union-attr]
    outputs = [text for _, obs, text in blocks(first) if obs == "aider"]
    assert len(outputs) == 4 and outputs[2].startswith("..F.....\nFAILED")
    assert [m.role for m in second.messages] == ["user", "assistant"]
    assert any("1 session(s) with no user input" in note for note in first.notes)


def test_only_aider_claims_its_files() -> None:
    for path in (FIXTURE, require_shared(*CORPUS)):
        head = Input(str(path)).head()
        assert [f.name for f in SPECIFIC if f.sniff(head)] == ["aider"]
        assert detect(Input(str(path))).name == "aider"


def test_real_history_one_transcript_per_session_with_input() -> None:
    path = require_shared(*CORPUS)
    text = path.read_text(encoding="utf-8", errors="replace")
    # counted from the file: sessions (and the part before the first header) holding a "#### " line
    parts = re.split(r"(?m)^# aider chat started at", text)
    expected = sum(1 for part in parts if re.search(r"(?m)^#### ", part))
    transcripts = load_path(path)
    assert len(transcripts) == expected == 679
    # every input line is in an input block, none is lost
    input_lines = sum(1 for line in text.splitlines() if line.startswith("#### ") and line[5:].strip())
    read = sum(
        1
        for t in transcripts
        for role, obs, block in blocks(t)
        if role == "user" and not obs
        for line in block.splitlines()
        if line.strip()
    )
    assert read == input_lines


def test_aider_output_is_cleared_at_a_small_budget_and_the_request_stays_valid() -> None:
    transcripts = load_path(require_shared(*CORPUS))
    longest = max(transcripts, key=lambda t: sum(len(b) for _, _, b in blocks(t)))
    size = make_estimator().request(longest)
    fitted = fit(longest, budget=size * 7 // 10)
    assert fitted.plan.outcome == "cleared"
    assert fitted.plan.cleared and all(r.call_id.startswith("obs-") for r in fitted.plan.cleared)
    for dialect in ("anthropic", "openai"):
        assert check_request(fitted.transcript, dialect) == ()
    stubs = [b for _, _, b in blocks(fitted.transcript) if b.startswith("[windowfit: tool output cleared]")]
    assert len(stubs) == len(fitted.plan.cleared)


def test_a_folder_scan_finds_chat_histories_but_not_other_markdown(tmp_path: Path) -> None:
    # issue 9: aider writes Markdown, which a scan of *.json/*.jsonl alone never saw
    (tmp_path / ".aider.chat.history.md").write_text("# aider chat started at 2025-01-01 10:00:00\n\n#### hi\n")
    (tmp_path / "README.md").write_text("# notes\n")
    (tmp_path / "s.jsonl").write_text('{"role": "user", "content": "hi"}\n')
    assert sorted(p.name for p in discover([tmp_path])) == [".aider.chat.history.md", "s.jsonl"]
