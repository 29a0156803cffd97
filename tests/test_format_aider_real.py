"""aider's two files as aider 0.86.2 wrote them (tests/data/aider_real/, made by
benchmarks/realfiles/make_aider.py against a local fake model): four requests in
``.aider.llm.history`` and four sessions in ``.aider.chat.history.md``. The
expected values are read off the files by hand (line numbers in the comments)."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import DATA

from windowfit.fitting import make_estimator
from windowfit.fitting.fit import fit
from windowfit.fitting.formats import SPECIFIC, Input, detect, discover, load_path
from windowfit.fitting.replay.requests import replay_targets
from windowfit.fitting.transcript import Text
from windowfit.fitting.validate import check_request

REAL = DATA / "aider_real"
LLM = REAL / ".aider.llm.history"
CHAT = REAL / ".aider.chat.history.md"


def texts(blocks: tuple[object, ...]) -> list[str]:
    return [b.text for b in blocks if isinstance(b, Text)]


def test_each_logged_request_is_a_transcript() -> None:
    requests = load_path(LLM)
    # the "TO LLM" header lines of the file: 1, 285, 617, 887
    assert [t.name.split(",")[0] for t in requests] == [
        "request 1 (line 1",
        "request 2 (line 285",
        "request 3 (line 617",
        "request 4 (line 887",
    ]
    assert LLM.read_text(encoding="utf-8").count("\nTO LLM ") + 1 == 4
    assert all(t.format == "aider_llm" and t.dialect == "openai" for t in requests)


def test_roles_as_sent_and_the_system_prompt_recognised() -> None:
    first, reflection, question, restored = load_path(LLM)
    # request 1: 12 "-------" lines (2 ... 212), the first a SYSTEM message, then user/assistant pairs
    assert len(first.system) == 1
    assert texts(first.system)[0].startswith("Act as an expert software developer.")
    assert [m.role for m in first.messages] == ["user", "assistant"] * 5 + ["user"]
    rules = "make add() treat None as 0\n\n# *SEARCH/REPLACE block* Rules:"
    assert texts(first.messages[-1].content)[0].startswith(rules)
    # request 2 (the test reflection) carries the edit reply and the failing test output
    assert [m.role for m in reflection.messages] == ["user", "assistant"] * 8 + ["user"]
    assert "<<<<<<< SEARCH" in texts(reflection.messages[9].content)[0]
    assert "AssertionError: add(None, 4) should be 4" in texts(reflection.messages[-1].content)[0]
    assert len(question.messages) == 11
    # request 4 restored the earlier sessions: aider sent two assistant messages in a row (lines 1083, 1100)
    # and two user messages (the /run line, then the files), kept as sent
    # (the example pair and the repository map come first: messages 0-7)
    roles = [m.role for m in restored.messages]
    assert roles[9:15] == ["assistant", "assistant", "user", "assistant", "user", "user"]
    assert texts(restored.messages[13].content)[0].strip() == "/run python3 test_calc.py"


def test_the_responses_are_not_requests() -> None:
    first, reflection, *_ = load_path(LLM)
    every = [t for m in first.messages for t in texts(m.content)]
    assert not any("I'll make `add()` check for `None`." in t for t in every)
    # the reply logged after request 1 is in request 2, as aider sent it back
    assert texts(reflection.messages[9].content)[0].startswith("I'll make `add()` check for `None`.")


def test_a_fitted_request_passes_the_providers_rules() -> None:
    estimator = make_estimator()
    for request in load_path(LLM):
        assert check_request(request, "openai") == ()
        budget = estimator.request(request) * 9 // 10
        fitted = fit(request, budget=budget)
        assert fitted.plan.outcome != "too-long"
        assert estimator.request(fitted.transcript) <= budget
        for dialect in ("openai", "anthropic"):
            assert check_request(fitted.transcript, dialect) == ()


def test_replay_each_request_its_own_conversation() -> None:
    # aider puts the chat's files after the turn's messages and drops the edit-format reminder from the
    # earlier input, so the reflection (request 2) does not start with request 1's messages
    first, reflection, *_ = load_path(LLM)
    assert texts(first.messages[8].content)[0].startswith("I have *added these files to the chat*")
    assert texts(reflection.messages[8].content) == ["make add() treat None as 0"]
    assert texts(reflection.messages[12].content)[0].startswith("I have *added these files to the chat*")
    assert [t.members for t in replay_targets(load_path(LLM))] == [(0,), (1,), (2,), (3,)]


def test_chat_history_sessions() -> None:
    sessions = load_path(CHAT)
    # "# aider chat started at" lines 2, 51, 66, 80; the /run session has its input and output only
    assert [t.name for t in sessions] == [
        "session 2026-12-01 19:51:02 (line 2)",
        "session 2026-12-01 19:51:06 (line 51)",
        "session 2026-12-01 19:51:11 (line 66)",
        "session 2026-12-01 19:51:14 (line 80)",
    ]
    first = sessions[0]
    assert [m.role for m in first.messages] == ["user", "assistant", "user", "assistant", "user"]
    assert texts(first.messages[0].content) == ["make add() treat None as 0"]
    assert ">>>>>>> REPLACE" in texts(first.messages[1].content)[0]
    assert not any("Aider v0.86.2" in t for m in first.messages for t in texts(m.content))
    outputs = [b for m in first.messages for b in m.content if isinstance(b, Text) and b.observation_of]
    assert outputs and "Applied edit to calc.py" in outputs[0].text
    assert texts(sessions[2].messages[0].content)[0] == "/run python3 test_calc.py"
    for session in sessions:
        assert check_request(session, "anthropic") == ()


def test_only_the_aider_formats_claim_them_and_a_scan_finds_both(tmp_path: Path) -> None:
    for path, name in ((LLM, "aider_llm"), (CHAT, "aider")):
        head = Input(str(path)).head()
        assert [f.name for f in SPECIFIC if f.sniff(head)] == [name]
        assert detect(Input(str(path))).name == name
    for path in (LLM, CHAT):
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    assert sorted(p.name for p in discover([tmp_path])) == [".aider.chat.history.md", ".aider.llm.history"]
