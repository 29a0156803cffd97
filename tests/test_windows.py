"""Windows from the model (issue 13): the table of models gives the window of the model a file records, ``--window``
overrides it, ``check`` says where its window came from in each format, and the tail read of a Claude Code file
names the model the loader records."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import ROOT, SHARED
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import Result

from windowfit.fitting.errors import InputError
from windowfit.fitting.formats import Input, load
from windowfit.fitting.pricing import Price, default_table, parse_table, recorded_model
from windowfit.fitting.windows import last_reply_model, window_for

Run = Callable[..., Result]
TABLE = default_table()
WINDOWED = [row for row in TABLE.rows if row.window is not None]


def test_the_table_gives_windows_with_their_page_and_day() -> None:
    assert {r.model for r in WINDOWED} >= {"claude-sonnet-4-5", "claude-opus-4-6", "claude-haiku-4-5"}
    for row in WINDOWED:
        assert row.window is not None
        assert row.window.source.startswith("https://") and len(row.window.read_on) == 10
        assert 1 <= row.window.max_output < row.window.tokens


def test_the_1m_variant_behind_a_beta_header_is_noted_not_taken() -> None:
    choice = window_for(None, "claude-sonnet-4-5-20250929")
    assert (choice.tokens, choice.model) == (200_000, "claude-sonnet-4-5")
    assert choice.beta is not None and (choice.beta.tokens, choice.beta.header) == (1_000_000, "context-1m-2025-08-07")
    assert "context-1m-2025-08-07 beta header" in choice.words()


@given(st.integers(min_value=1, max_value=10**9), st.one_of(st.none(), st.sampled_from([r.model for r in WINDOWED])))
def test_the_option_always_wins(window: int, model: str | None) -> None:
    choice = window_for(window, model)
    assert (choice.tokens, choice.model, choice.words()) == (window, None, "")


@given(st.sampled_from(WINDOWED), st.sampled_from(["", "-20251101", "-2025-11-01"]))
def test_a_model_and_its_dated_snapshots_take_its_row_s_window(row: Price, suffix: str) -> None:
    assert row.window is not None
    choice = window_for(None, row.model + suffix)
    assert (choice.tokens, choice.model) == (row.window.tokens, row.model)


@given(st.one_of(st.none(), st.text(max_size=30)))
def test_no_row_no_window(model: str | None) -> None:
    if model and TABLE.row(model) is not None and TABLE.row(model).window is not None:  # type: ignore[union-attr]
        return
    assert window_for(None, model).tokens is None


@pytest.mark.parametrize(
    "window",
    [{"tokens": 0, "max_output": 1}, {"tokens": 10, "max_output": 1, "read_on": "2026-12-07", "source": "x"}],
)
def test_a_bad_window_is_an_input_error_naming_its_row(window: dict[str, object]) -> None:
    row = {"model": "m", "provider": "openai", "input": 1, "cache_read": 0, "output": 1, "read_on": "2026-12-07"}
    row |= {"source": "https://example.com", "cache_write_5m": None, "cache_write_1h": None, "window": window}
    with pytest.raises(InputError, match=r"models\[0\]: \"window\" must be"):
        parse_table(json.dumps({"models": [row]}).encode(), "t.json")


def _claude_code_files() -> list[Path]:
    """The test data's sessions, and the corpus's where ../shared is there."""
    local = sorted((ROOT / "tests" / "data" / "claude_code").rglob("*.jsonl"))
    return local + sorted((SHARED / "corpus" / "transcripts" / "claude_code").rglob("*.jsonl"))


@pytest.mark.parametrize("chunk", [1 << 16, 64])
def test_the_tail_read_names_the_model_the_loader_records(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr("windowfit.fitting.windows.TAIL_CHUNK", chunk)  # lines cut across reads too
    for path in _claude_code_files():
        (first, *_) = load(Input(str(path)), skip_invalid=True)
        assert last_reply_model(Input(str(path))) == recorded_model(first.extra), path
        assert last_reply_model(Input(str(path), path.read_bytes())) == recorded_model(first.extra), path


def _session(tmp_path: Path, model: str, measured: int) -> Path:
    """A Claude Code session whose one reply records ``model`` and a request of ``measured`` input tokens."""
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": "hi"}},
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {
                "model": model,
                "id": "msg_1",
                "role": "assistant",
                "content": [{"type": "text", "text": "hello"}],
                "usage": {"input_tokens": measured, "output_tokens": 5},
            },
        },
        {"type": "user", "uuid": "u2", "parentUuid": "a1", "message": {"role": "user", "content": "go on"}},
    ]
    common = {"isSidechain": False, "sessionId": "11111111-2222-4333-8444-555555555555", "version": "2.1.16"}
    path = tmp_path / f"{model}.jsonl"
    path.write_text("".join(json.dumps(common | line) + "\n" for line in lines))
    return path


@pytest.mark.parametrize("fold", ["1", "0"])
def test_check_fails_a_session_over_its_model_s_window_and_says_so(
    run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fold: str
) -> None:
    monkeypatch.setenv("WINDOWFIT_FASTFOLD", fold)  # the fold and the loader say the same
    small, large = (
        _session(tmp_path, "claude-opus-4-5-20251101", 250_000),
        _session(tmp_path, "claude-opus-4-6", 250_000),
    )
    result = run_cli("check", str(small), str(large), "--budget", "300000")
    assert result.exit_code == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("FAIL") and "over the 200,000 window from the model claude-opus-4-5;" in lines[0]
    assert lines[1].startswith("ok") and "window 1,000,000 from the model claude-opus-4-6" in lines[1]
    document = json.loads(run_cli("check", str(small), str(large), "--budget", "300000", "--format", "json").stdout)
    assert [(t["window"], t["window_model"], t["crossed"], t["failed"]) for t in document["transcripts"]] == [
        (200_000, "claude-opus-4-5", "window", True),
        (1_000_000, "claude-opus-4-6", None, False),
    ]
    rows = run_cli("check", str(small), str(large), "--budget", "300000", "--format", "jsonl").stdout.splitlines()
    assert [(json.loads(r)["window"], json.loads(r)["crossed"]) for r in rows] == [
        (200_000, "window"),
        (1_000_000, None),
    ]


def test_the_window_option_overrides_the_model_s(run_cli: Run, tmp_path: Path) -> None:
    small = _session(tmp_path, "claude-opus-4-5-20251101", 250_000)
    result = run_cli("check", str(small), "--budget", "300000", "--window", "400000")
    assert result.exit_code == 0, result.stdout
    assert "window 400,000;" in result.stdout and "from the model" not in result.stdout
    (checked,) = json.loads(
        run_cli("check", str(small), "--budget", "300000", "--window", "400000", "--format", "json").stdout
    )["transcripts"]
    assert (checked["window"], checked["window_model"], checked["failed"]) == (400_000, None, False)


def test_a_model_without_a_window_in_the_table_is_checked_against_none(run_cli: Run, tmp_path: Path) -> None:
    unknown = _session(tmp_path, "claude-opus-9", 250_000)
    (checked,) = json.loads(run_cli("check", str(unknown), "--budget", "300000", "--format", "json").stdout)[
        "transcripts"
    ]
    assert (checked["window"], checked["window_model"], checked["failed"]) == (None, None, False)


@pytest.mark.parametrize("fold", ["1", "0"])
def test_report_measures_a_session_against_its_model_s_window(
    run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fold: str
) -> None:
    monkeypatch.setenv("WINDOWFIT_FASTFOLD", fold)
    small = _session(tmp_path, "claude-opus-4-5-20251101", 250_000)
    (report,) = json.loads(run_cli("report", str(small), "--json").stdout)["transcripts"]
    assert (report["window"], report["window_model"], report["fits_window"]) == (200_000, "claude-opus-4-5", False)
    assert "over the 200,000 window of the model claude-opus-4-5 by" in report["verdict"]
    (given,) = json.loads(run_cli("report", str(small), "--window", "400000", "--json").stdout)["transcripts"]
    assert (given["window"], given["window_model"], given["fits_window"]) == (400_000, None, True)
