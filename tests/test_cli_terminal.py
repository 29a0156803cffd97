"""A terminal that cannot be hijacked, and outputs that never destroy data (issue 8, items 2 and 4).

Escape sequences, C1 controls and bidi overrides in tool names, call ids, text and file names reach the
terminal only as visible escapes, in every command and mode; ``-o`` and ``--plot`` write regular files only.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import Result

from windowfit.cli import shared
from windowfit.cli.terminal import visible

Run = Callable[..., Result]

ESC = "\x1b"
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\u202eevil\x9b31m"
"""Retitles the terminal (OSC 0), clears the screen, reverses the text that follows, and a C1 CSI."""

RAW = (ESC, "\x07", "\u202e", "\x9b")


def _hostile_transcript(path: Path, *, big: int = 4000) -> Path:
    lines = [
        {"role": "user", "content": f"please {HOSTILE}"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": f"call{HOSTILE}", "name": f"read{HOSTILE}", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"call{HOSTILE}", "content": "x" * big + HOSTILE}],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c2", "name": "read", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c2", "content": "y" * big}]},
        {"role": "assistant", "content": "done"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _assert_clean(result: Result) -> None:
    for stream in (result.stdout, result.stderr):
        for raw in RAW:
            assert raw not in stream, f"raw {raw!r} reached the terminal"


def test_visible_escapes_only_control_characters() -> None:
    assert visible("Привет, 世界 😀\tok\n") == "Привет, 世界 😀\tok\n"
    assert visible("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert visible("\u202eevil") == "\\u202eevil"
    assert visible("\x9b\x7f\x00") == "\\x9b\\x7f\\x00"


@pytest.mark.parametrize(
    "args",
    [
        ("report", "{f}", "--budget", "1000"),
        ("report", "{f}", "--details"),
        ("fit", "{f}", "--budget", "1200"),
        ("fit", "{f}", "--budget", "1200", "--diff", "full"),
        ("fit", "{f}", "--budget", "10"),
        ("check", "{f}", "--budget", "1200"),
        ("check", "{f}", "--budget", "10", "--format", "github"),
        ("replay", "{f}", "--budget", "1200"),
        ("audit", "{f}"),
    ],
)
def test_no_escape_sequence_reaches_the_terminal(run_cli: Run, tmp_path: Path, args: tuple[str, ...]) -> None:
    folder = tmp_path / f"dir{HOSTILE}"
    folder.mkdir()
    path = _hostile_transcript(folder / f"s{HOSTILE}.jsonl")
    result = run_cli(*(a.replace("{f}", str(path)) for a in args))
    _assert_clean(result)
    assert "\\x1b" in result.stdout + result.stderr  # shown, not dropped


def test_json_output_keeps_control_characters_escaped_as_json(run_cli: Run, tmp_path: Path) -> None:
    path = _hostile_transcript(tmp_path / "s.jsonl")
    result = run_cli("fit", str(path), "--budget", "1200", "--json")
    assert ESC not in result.stdout
    assert "\\u001b" in result.stdout
    json.loads(result.stdout)


def test_file_names_in_errors_are_shown_escaped(run_cli: Run, tmp_path: Path) -> None:
    bad = tmp_path / f"bad{HOSTILE}.jsonl"
    bad.write_text("{not json\n")
    result = run_cli("report", str(bad))
    assert result.exit_code == 3
    _assert_clean(result)


# -- output targets ---------------------------------------------------------------------------------------------


@pytest.fixture
def fittable(tmp_path: Path) -> Path:
    return _hostile_transcript(tmp_path / "in.jsonl")


def test_fit_refuses_a_fifo(run_cli: Run, fittable: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result = run_cli("fit", str(fittable), "--budget", "1200", "-o", str(fifo))
    assert result.exit_code == 4
    assert "FIFO" in result.stderr
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_fit_refuses_a_device(run_cli: Run, fittable: Path) -> None:
    result = run_cli("fit", str(fittable), "--budget", "1200", "-o", os.devnull)
    assert result.exit_code == 4
    assert "device" in result.stderr
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_fit_refuses_a_directory(run_cli: Run, fittable: Path, tmp_path: Path) -> None:
    result = run_cli("fit", str(fittable), "--budget", "1200", "-o", str(tmp_path))
    assert result.exit_code == 4
    assert "directory" in result.stderr


def test_fit_refuses_its_input_through_a_symlink_and_a_hard_link(run_cli: Run, fittable: Path, tmp_path: Path) -> None:
    before = fittable.read_bytes()
    soft = tmp_path / "soft.jsonl"
    soft.symlink_to(fittable)
    hard = tmp_path / "hard.jsonl"
    os.link(fittable, hard)
    for target in (soft, hard):
        result = run_cli("fit", str(fittable), "--budget", "1200", "-o", str(target))
        assert result.exit_code == 4, result.stderr
        assert "refusing to overwrite the input" in result.stderr
    assert fittable.read_bytes() == before


def test_fit_writes_through_a_symlink_and_keeps_the_link(run_cli: Run, fittable: Path, tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    real.write_text("old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    result = run_cli("fit", str(fittable), "--budget", "1200", "-o", str(link))
    assert result.exit_code == 0, result.stderr
    assert link.is_symlink()
    assert real.read_text() != "old\n"


def test_replay_plot_refuses_the_transcript_and_a_name_without_a_type(run_cli: Run, tmp_path: Path) -> None:
    session = _hostile_transcript(tmp_path / "session")
    before = session.read_bytes()
    no_type = run_cli("replay", str(session), "--budget", "1200", "--plot", str(session))
    assert no_type.exit_code == 2
    assert session.read_bytes() == before
    named = tmp_path / "session.png"
    named.write_bytes(before)
    refused = run_cli("replay", str(named), "--budget", "1200", "--plot", str(named))
    assert refused.exit_code == 4
    assert named.read_bytes() == before


@pytest.mark.parametrize("anonymous", [True, False])
def test_an_interrupted_write_leaves_nothing_behind(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, anonymous: bool
) -> None:
    if not anonymous:
        monkeypatch.setattr(shared, "_anonymous_file", lambda directory, mode: None)

    def interrupted(src: object, dst: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(shared.os, "replace", interrupted)
    target = tmp_path / "out.jsonl"
    with pytest.raises(KeyboardInterrupt):
        shared.write_atomic(target, b"x" * 100_000)
    assert list(tmp_path.iterdir()) == []


def test_a_terminal_on_stdin_is_refused_not_waited_on(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty:
        def isatty(self) -> bool:
            return True

    with pytest.raises(shared.InputError, match="terminal"):
        shared.read_stream(Tty(), "<stdin>")  # type: ignore[arg-type]


def test_a_stream_longer_than_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch, run_cli: Run) -> None:
    monkeypatch.setattr(shared, "STREAM_LIMIT_BYTES", 1000)
    result = run_cli("report", "-", input=b'{"role": "user", "content": "hi"}\n' * 100)
    assert result.exit_code == 3
    assert "more than 1,000 bytes" in result.stderr
