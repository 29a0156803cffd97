"""The progress bar (issue 15, item 6): on a terminal once a scan runs longer than about a second, never in a
pipe (CliRunner) and never with JSON output, even on a terminal."""

from __future__ import annotations

import io
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import ROOT
from rich.console import Console
from typer.testing import Result

from windowfit.cli import shared
from windowfit.cli.terminal import SafeConsole

Run = Callable[..., Result]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for sample in sorted((ROOT / "sample_transcripts").glob("*.jsonl")):
        shutil.copy(sample, tmp_path / sample.name)
    return tmp_path


@pytest.fixture
def tty(monkeypatch: pytest.MonkeyPatch, run_cli: Run) -> io.StringIO:
    """stderr as a terminal that records what it is sent, and a bar that starts at once."""
    monkeypatch.setenv("TERM", "xterm")  # rich draws no live display on a dumb terminal
    screen = io.StringIO()
    console: Console = SafeConsole(file=screen, force_terminal=True, width=100, highlight=False, soft_wrap=True)
    monkeypatch.setattr(shared, "err", console)
    monkeypatch.setattr(shared, "PROGRESS_AFTER_SECONDS", 0.0)
    return screen


@pytest.mark.parametrize(
    "args",
    [
        ("report", "--table"),
        ("check", "--budget", "5000"),
        ("report", "--json"),
        ("check", "--budget", "9", "--format", "json"),
    ],
)
def test_a_pipe_never_shows_the_bar(run_cli: Run, folder: Path, args: tuple[str, ...]) -> None:
    result = run_cli(args[0], str(folder), *args[1:])
    assert "loading" not in result.stderr
    assert "\x1b[" not in result.stderr


def test_a_terminal_shows_the_bar_for_a_long_scan(run_cli: Run, folder: Path, tty: io.StringIO) -> None:
    result = run_cli("report", str(folder), "--table")
    assert result.exit_code == 0
    assert "loading" in tty.getvalue()


@pytest.mark.parametrize("args", [("report", "--json"), ("check", "--budget", "5000", "--format", "json")])
def test_json_never_shows_the_bar_even_on_a_terminal(
    run_cli: Run, folder: Path, tty: io.StringIO, args: tuple[str, ...]
) -> None:
    result = run_cli(args[0], str(folder), *args[1:])
    assert result.exit_code == 0
    assert "loading" not in tty.getvalue()


def test_a_short_scan_on_a_terminal_shows_no_bar(
    run_cli: Run, folder: Path, tty: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shared, "PROGRESS_AFTER_SECONDS", 3600.0)
    assert run_cli("report", str(folder), "--table").exit_code == 0
    assert "loading" not in tty.getvalue()


FOLDER_COMMANDS = [
    ("report", "--table"),
    ("check", "--budget", "5000"),
    ("audit", "--provider-only"),
]


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("args", FOLDER_COMMANDS, ids=lambda a: a[0])
def test_every_folder_command_shows_the_bar_on_a_terminal_with_any_jobs(
    run_cli: Run, folder: Path, tty: io.StringIO, args: tuple[str, ...], jobs: str
) -> None:
    """With a pool the bar still advances as each file's result comes back (the workers are started before the
    bar's thread), to the last file."""
    result = run_cli(args[0], str(folder), *args[1:], "--jobs", jobs)
    assert result.exit_code in (0, 1)
    shown = tty.getvalue()
    files = len(list(folder.glob("*.jsonl")))
    assert "loading" in shown
    assert f"{files}/{files}" in shown  # every file counted


@pytest.mark.parametrize(
    "args",
    [("report", "--json"), ("check", "--budget", "5000", "--format", "json"), ("audit", "--provider-only", "--json")],
    ids=lambda a: a[0],
)
def test_json_never_shows_the_bar_with_a_pool(
    run_cli: Run, folder: Path, tty: io.StringIO, args: tuple[str, ...]
) -> None:
    result = run_cli(args[0], str(folder), *args[1:], "--jobs", "2")
    assert result.exit_code in (0, 1)
    assert "loading" not in tty.getvalue()
    assert "\x1b[" not in result.stderr


REPLAY = ("replay", str(ROOT / "sample_transcripts" / "ru_subagent_chapters.jsonl"), "--budget", "30000")


def test_replay_shows_a_bar_over_its_requests_on_a_terminal(run_cli: Run, tty: io.StringIO) -> None:
    """Replaying is the long part of ``replay`` (every policy over every request), after the loading."""
    result = run_cli(*REPLAY)
    assert result.exit_code == 0
    assert "replaying" in tty.getvalue()


def test_replay_shows_no_bar_in_a_pipe_or_with_json(run_cli: Run, tty: io.StringIO) -> None:
    result = run_cli(*REPLAY, "--json")
    assert result.exit_code == 0
    assert "replaying" not in tty.getvalue()
    piped = run_cli(*REPLAY)  # CliRunner's stderr is no terminal
    assert "replaying" not in piped.stderr
    assert "\x1b[" not in piped.stderr


def test_replay_tells_its_progress_up_to_every_request_of_every_policy() -> None:
    from windowfit.fitting import formats, make_estimator
    from windowfit.fitting.fit import FitOptions
    from windowfit.fitting.formats import Input
    from windowfit.fitting.replay import replay, standard_policies
    from windowfit.fitting.replay.run import PROGRESS_STEPS

    transcript = formats.load(Input(str(ROOT / "sample_transcripts" / "ru_subagent_chapters.jsonl")))[0]
    policies = standard_policies(options=FitOptions(30_000))
    told: list[tuple[int, int]] = []
    runs = replay(
        transcript, policies, budget=30_000, estimator=make_estimator("seed"), progress=lambda d, t: told.append((d, t))
    )
    total = sum(len(r.steps) for r in runs)
    assert told, "no progress told"
    assert all(t == total for _, t in told)
    assert [d for d, _ in told] == sorted(d for d, _ in told)
    assert told[-1] == (total, total)
    assert len(told) >= len(policies)
    assert all(b - a <= PROGRESS_STEPS for (a, _), (b, _) in zip([(0, 0), *told[:-1]], told, strict=True))
