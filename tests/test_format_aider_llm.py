"""The aider_llm format: aider's --llm-history-file log (``.aider.llm.history``).
Each ``TO LLM`` block is one request as aider sent it, its messages the
``-------``-separated, role-prefixed lines of ``utils.format_messages``; the
``LLM RESPONSE`` blocks are not part of any request."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import DATA
from typer.testing import Result

from windowfit.fitting.errors import InvalidUtf8
from windowfit.fitting.formats import FORMATS, SPECIFIC, Input, detect, discover, load_path
from windowfit.fitting.replay.requests import replay_targets
from windowfit.fitting.transcript import Image, Text

Run = Callable[..., Result]
LOG = DATA / "aider_llm" / ".aider.llm.history"
SNIFF = FORMATS["aider_llm"].sniff


def texts(blocks: tuple[object, ...]) -> list[str]:
    return [b.text for b in blocks if isinstance(b, Text)]


def test_each_request_is_a_transcript_with_its_system_prompt() -> None:
    first, second, summary = load_path(LOG)
    assert [t.name for t in (first, second, summary)] == [
        "request 1 (line 1, 2025-03-02T10:15:00)",
        "request 2 (line 18, 2025-03-02T10:15:30)",
        "request 3 (line 52, 2025-03-02T10:16:02)",
    ]
    # SYSTEM lines, prefix removed; the empty line was written "SYSTEM " (one trailing space)
    assert texts(first.system) == [
        "Act as an expert software developer.\nAlways use best practices when coding.\n\nReply in English."
    ]
    assert [m.role for m in first.messages] == ["user", "assistant", "user"]
    assert texts(first.messages[0].content) == [
        "Here are summaries of some files present in my git repository.\n\ncalc.py:\n│def add(a, b):"
    ]
    # line 1 the header, 2 and 7 separators, 3-6 SYSTEM, 8-11 USER, 12 separator, 13 ASSISTANT, 14, 15 USER
    assert [m.source.line for m in first.messages] == [8, 13, 15]
    assert first.format == "aider_llm" and first.dialect == "openai"


def test_responses_are_not_part_of_the_requests() -> None:
    first, second, _ = load_path(LOG)
    assert texts(first.messages[-1].content) == ["Make add() handle None."]
    # the response to request 1 is in request 2 as aider sent it back, and nowhere else
    assert texts(second.messages[3].content) == ["Please add calc.py to the chat so I can edit it."]
    every = [t for tr in load_path(LOG) for m in tr.messages for t in texts(m.content)]
    assert not any("<<<<<<< SEARCH" in t for t in every)


def test_list_content_keeps_its_image_as_an_image() -> None:
    summary = load_path(LOG)[2]
    parts = summary.messages[1].content
    assert texts(parts) == ["What is in this screenshot?"]
    (image,) = [b for b in parts if isinstance(b, Image)]
    assert image.media_type == "image/png" and (image.width, image.height) == (1, 1)


def test_replay_groups_the_requests_that_extend_each_other() -> None:
    targets = replay_targets(load_path(LOG))
    assert [t.members for t in targets] == [(0, 1), (2,)]
    assert [r.held for r in targets[0].requests] == [3, 5]


def test_sniffing_claims_the_log_and_nothing_else() -> None:
    head = Input(str(LOG)).head()
    assert [f.name for f in SPECIFIC if f.sniff(head)] == ["aider_llm"]
    assert detect(Input(str(LOG))).name == "aider_llm"
    real = DATA / "aider_real" / ".aider.llm.history"  # the same format, written by aider itself
    others = [p for p in DATA.rglob("*") if p.is_file() and p not in (LOG, real)]
    assert others
    for path in others:
        assert not SNIFF(Input(str(path)).head()), path
    assert not SNIFF(b"# aider chat started at 2025-03-02 10:15:00\n")
    assert not SNIFF(b'{"role": "user", "content": "TO LLM 2025-03-02T10:15:00"}\n')


def test_folder_scans_pick_up_llm_history_files(tmp_path: Path) -> None:
    shutil.copy(LOG, tmp_path / ".aider.llm.history")
    (tmp_path / "notes.txt").write_text("TO LLM 2025-03-02T10:15:00\n")
    assert list(discover([tmp_path])) == [tmp_path / ".aider.llm.history"]


def test_invalid_utf8_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / ".aider.llm.history"
    path.write_bytes(LOG.read_bytes().replace(b"Reply in English.", b"Reply in \xff.", 1))
    with pytest.raises(InvalidUtf8) as caught:
        load_path(path)
    assert str(caught.value).startswith(f"{path}:6:")  # "SYSTEM Reply in English." is line 6


def test_replay_and_fit_on_the_log(run_cli: Run, tmp_path: Path) -> None:
    result = run_cli("replay", str(LOG), "--budget", "1000", "--no-chart")
    assert result.exit_code == 0, result.stderr
    assert "2 recorded requests replayed, in the order sent" in result.stdout
    out = tmp_path / "next.json"
    fit = run_cli("fit", str(LOG), "--budget", "1000", "--index", "1", "-o", str(out))
    assert fit.exit_code == 0, fit.stderr
    assert '"role": "system"' in out.read_text() or '"role":"system"' in out.read_text()
