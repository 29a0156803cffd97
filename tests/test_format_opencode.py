"""The opencode format: opencode's session storage, a folder. Each session is
a transcript; an assistant message is one model message per step followed by
that step's tool results, as opencode sends them; step-finish tokens are the
measured sizes. Folder scans recognise a storage folder by its layout."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import DATA
from typer.testing import Result

from windowfit.fitting.errors import InvalidJson, UnknownFormat
from windowfit.fitting.formats import Input, detect, discover, load_path
from windowfit.fitting.formats.opencode import COMPACTED_OUTPUT, INTERRUPTED_OUTPUT, claims_directory
from windowfit.fitting.formats.registry import directory_format
from windowfit.fitting.transcript import Text, Thinking, ToolCall, ToolResult
from windowfit.fitting.validate import check_request

Run = Callable[..., Result]
STORAGE = DATA / "opencode" / "storage"
MAIN = "ses_a1b2c3d4e001AbCdEfGhIjKlMn"
CHILD = "ses_a1b2c3d4f001ZyXwVuTsRqPoNm"
PROJECT = "4b0ea68d7af9a6031a7ffda7ad66e0cb83315750"


def texts(blocks: tuple[object, ...]) -> list[str]:
    return [b.text for b in blocks if isinstance(b, Text)]


def test_the_storage_root_gives_one_transcript_per_session_oldest_first() -> None:
    main, child = load_path(STORAGE)
    assert main.name == f"session {MAIN} (Fix the failing add test)"
    assert child.name == f"session {CHILD} (Find callers of add (@general subagent)), subagent of {MAIN}"
    assert main.source.path == str(STORAGE / "message" / MAIN)
    assert {main.format, child.format} == {"opencode"}


def test_messages_are_rebuilt_step_by_step_as_opencode_sends_them() -> None:
    main = load_path(STORAGE)[0]
    m = main.messages
    # user; 3 steps of the first reply (assistant + results, assistant + results, assistant);
    # user; the errored reply left out; the reply whose bash call is still running + its result.
    assert [x.role for x in m] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    # the ignored text part and the text/plain file part are not sent; the synthetic text part is
    assert texts(m[0].content) == [
        "The add test fails. Fix it.",
        'Called the Read tool with the following input: {"filePath":"calc.py"}',
    ]
    assert [type(b) for b in m[1].content] == [Thinking, ToolCall]
    read = m[2].content[0]
    assert isinstance(read, ToolResult) and read.call_id == "toolu_01" and not read.is_error
    assert texts(read.content) == ["def test_add():\n    assert add(2, 2) == 4\n" * 10]
    assert texts(m[3].content) == ["Running the tests."]
    assert [c.name for c in m[3].tool_calls] == ["bash", "grep"]
    failed, compacted = m[4].content
    assert isinstance(failed, ToolResult) and failed.is_error and texts(failed.content) == ["pytest: command not found"]
    assert isinstance(compacted, ToolResult) and texts(compacted.content) == [COMPACTED_OUTPUT]
    assert texts(m[5].content) == ["add() subtracted; fixed it in calc.py."]
    assert texts(m[6].content) == ["Now run the whole suite."]
    running = m[8].content[0]
    assert isinstance(running, ToolResult) and running.is_error and texts(running.content) == [INTERRUPTED_OUTPUT]
    assert check_request(main) == ()


def test_step_finish_tokens_are_the_measured_size_of_each_step() -> None:
    main, child = load_path(STORAGE)
    # the fixture's three step-finish parts: input + cache write + cache read, output + reasoning
    assert [(u.before, u.input_tokens, u.cache_creation_tokens, u.cache_read_tokens) for u in main.usage] == [
        (1, 200, 3600, 0),
        (3, 150, 200, 3600),
        (5, 40, 150, 3800),
    ]
    assert [u.output_tokens for u in main.usage] == [40 + 12, 25, 30]
    assert [(u.before, u.total) for u in child.usage] == [(1, 500)]


def test_what_is_not_sent_is_counted_and_said() -> None:
    main = load_path(STORAGE)[0]
    assert dict(main.line_kinds) == {"ignored text part": 1, "patch part": 1, "user file part": 1}
    assert any("1 assistant message(s) that ended in an error" in n for n in main.notes)
    assert json.loads(main.extra) == {"model": "claude-sonnet-4-20250514"}


@pytest.mark.parametrize(
    ("folder", "sessions"),
    [
        (STORAGE, [MAIN, CHILD]),
        (STORAGE.parent, [MAIN, CHILD]),  # opencode's data folder, holding storage/
        (STORAGE / "message" / CHILD, [CHILD]),  # one session's messages
        (STORAGE / "session" / PROJECT, [MAIN, CHILD]),  # a project's sessions
    ],
    ids=["root", "data-folder", "session", "project"],
)
def test_each_kind_of_folder_is_read_as_its_sessions(folder: Path, sessions: list[str]) -> None:
    assert claims_directory(folder)
    assert detect(Input(str(folder))).name == "opencode"
    assert [t.name.split()[1] for t in load_path(folder)] == sessions


def test_ordinary_folders_are_not_claimed_and_scanned_as_before() -> None:
    for folder in (DATA, DATA / "atif", STORAGE / "part", STORAGE / "message", STORAGE / "part" / "msg_x"):
        assert directory_format(folder) is None, folder
    with pytest.raises(UnknownFormat, match="is a directory"):
        detect(Input(str(DATA / "atif")))


def test_a_folder_scan_takes_the_storage_as_one_input(tmp_path: Path) -> None:
    shutil.copytree(STORAGE, tmp_path / "home" / ".local" / "share" / "opencode" / "storage")
    shutil.copy(DATA / "atif" / "tool_calls.json", tmp_path / "home" / "trajectory.json")
    found = list(discover([tmp_path]))
    assert found == [tmp_path / "home" / ".local" / "share" / "opencode", tmp_path / "home" / "trajectory.json"]


def test_a_broken_file_is_a_located_error_or_skipped(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    shutil.copytree(STORAGE, storage)
    broken = storage / "part" / "msg_a1b2c3d4e103AAAAAAAAAAAAAA" / "prt_a1b2c3d4e301AAAAAAAAAAAAAA.json"
    broken.write_text('{"type": "text", "text": "Now run')
    with pytest.raises(InvalidJson) as caught:
        load_path(storage)
    assert str(caught.value).startswith(f"{broken}:1:")
    main = load_path(storage, skip_invalid=True)[0]
    assert [s.source.path for s in main.skipped] == [str(broken)]
    assert "Now run the whole suite." not in [t for m in main.messages for t in texts(m.content)]


def test_forcing_another_format_on_the_storage_is_an_error() -> None:
    with pytest.raises(UnknownFormat, match="it is opencode storage"):
        load_path(STORAGE, fmt="codex")


def test_report_check_and_fit_read_the_storage(run_cli: Run, tmp_path: Path) -> None:
    report = run_cli("report", str(STORAGE), "--table")
    assert report.exit_code == 0, report.stderr
    assert MAIN in report.stdout and CHILD in report.stdout
    folder = tmp_path / "scan"
    shutil.copytree(STORAGE, folder / "opencode" / "storage")
    (folder / "notes.json").write_text('{"not": "a transcript"}')
    check = run_cli("check", str(folder), "--budget", "100000")
    assert check.exit_code == 0, check.stderr
    assert "1 file(s) skipped" in check.stderr
    fitted = tmp_path / "next.json"
    fit = run_cli(
        "fit",
        str(STORAGE),
        "--budget",
        "100000",
        "--name",
        f"session {MAIN} (Fix the failing add test)",
        "-o",
        str(fitted),
    )
    assert fit.exit_code == 0, fit.stderr
    body = json.loads(fitted.read_text())
    assert len(body["messages"]) == 9
