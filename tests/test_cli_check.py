"""``windowfit check``: the CI pre-flight. One line per transcript, a summary,
exit codes, ``--fail-on``, JSON and GitHub annotations.

All runs use ``--budget 2000 --overhead 0`` on ``tests/data/fit`` (see
``test_cli_fit.py`` for how each number is hand-computed):

| file | before | after | outcome |
| --- | --- | --- | --- |
| cleared.jsonl | 2,601 | 582 | cleared (t1..t4 stubbed) |
| fits.jsonl | 18 | 18 | fits (4+1+2+3+3+2+3: "You are terse." 14 chars -> 4, ...) |
| long/toolong.jsonl | 3,010 | 3,052 | too-long (the newest result alone is 3,000) |
| rounds.jsonl | 834 | 834 | fits |
| turns.jsonl | 707 | 707 | fits |

fits.jsonl without overheads: "You are terse." 4, "Hi" 1, "Hello." 2,
"List files." 3, "Listing." + "ls" + "{}" = 12 chars -> 3, "a.txt" 2,
"One file." 3: 18.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import Result

from windowfit.cli.fit_cmd import _gh

DATA = Path(__file__).parent / "data" / "fit"
OPTIONS = ("--budget", "2000", "--overhead", "0")
TOO_LONG_CAUSE = "the newest tool result alone is 3,000 tokens, over the 2,000 budget"

Run = Callable[..., Result]
Golden = Callable[[str, str], None]


@pytest.fixture
def in_data(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(DATA)
    return DATA


def test_text_lists_every_transcript_found_recursively(run_cli: Run, golden: Golden, in_data: Path) -> None:
    result = run_cli("check", ".", *OPTIONS)
    assert result.exit_code == 1
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines == [
        "ok   cleared.jsonl  cleared: 2,601 → 582 tokens (budget 2,000)",
        "ok   fits.jsonl  fits: 18 → 18 tokens (budget 2,000)",
        f"FAIL long/toolong.jsonl  too-long: 3,010 → 3,052 tokens (too long for the 2,000 budget) — {TOO_LONG_CAUSE}",
        "ok   rounds.jsonl  fits: 834 → 834 tokens (budget 2,000)",
        "ok   turns.jsonl  fits: 707 → 707 tokens (budget 2,000)",
        "5 checked, 1 failed (fail on: too-long or worse)",
    ]
    golden("check_text.txt", result.stdout)


def test_passes_when_everything_fits_or_is_cleared(run_cli: Run, in_data: Path) -> None:
    result = run_cli("check", "fits.jsonl", "cleared.jsonl", "turns.jsonl", "rounds.jsonl", *OPTIONS)
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == "4 checked, 0 failed (fail on: too-long or worse)"
    assert "FAIL" not in result.stdout


def test_fail_on_cleared_fails_a_cleared_transcript_but_not_one_that_fits(run_cli: Run, in_data: Path) -> None:
    result = run_cli("check", "fits.jsonl", "cleared.jsonl", *OPTIONS, "--fail-on", "cleared")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "ok   fits.jsonl  fits: 18 → 18 tokens (budget 2,000)",
        "FAIL cleared.jsonl  cleared: 2,601 → 582 tokens (budget 2,000)",
        "2 checked, 1 failed (fail on: cleared or worse)",
    ]


def test_fail_on_is_a_threshold(run_cli: Run, in_data: Path) -> None:
    # rounds.jsonl at 500 with --min-clear-ratio 10 is rounds-dropped: it fails "turns-dropped or worse"
    # and passes "too-long".
    args = ("check", "rounds.jsonl", "--budget", "500", "--overhead", "0", "--min-clear-ratio", "10")
    assert run_cli(*args, "--fail-on", "turns-dropped").exit_code == 1
    assert run_cli(*args, "--fail-on", "too-long").exit_code == 0


def test_window_says_which_limit_a_failing_transcript_crossed(run_cli: Run, in_data: Path) -> None:
    # Issue 7 item 7. toolong.jsonl's smallest request is 3,052 tokens: over a 3,000 window
    # (the provider rejects it), but under a 4,000 one (too long for the budget only).
    over = run_cli("check", "long/toolong.jsonl", "fits.jsonl", *OPTIONS, "--window", "3000")
    assert over.exit_code == 1
    assert over.stdout.splitlines()[:2] == [
        f"FAIL long/toolong.jsonl  too-long: 3,010 → 3,052 tokens (over the 3,000 window; budget 2,000) — "
        f"{TOO_LONG_CAUSE}",
        "ok   fits.jsonl  fits: 18 → 18 tokens (budget 2,000, window 3,000)",
    ]
    under = run_cli("check", "long/toolong.jsonl", *OPTIONS, "--window", "4000")
    assert under.exit_code == 1
    assert under.stdout.startswith(
        "FAIL long/toolong.jsonl  too-long: 3,010 → 3,052 tokens "
        "(too long for the 2,000 budget, under the 4,000 window)"
    )
    document = json.loads(
        run_cli("check", "long/toolong.jsonl", *OPTIONS, "--window", "3000", "--format", "json").stdout
    )
    assert [t["crossed"] for t in document["transcripts"]] == ["window"]
    github = run_cli("check", "long/toolong.jsonl", *OPTIONS, "--window", "3000", "--format", "github").stdout
    assert github.rstrip().endswith(
        f"(Cause: {TOO_LONG_CAUSE}.) The smallest request, 3,052 tokens, is over the 3,000 window."
    )


@pytest.mark.parametrize(
    "args",
    [
        ("report", "fits.jsonl"),
        ("fit", "fits.jsonl"),
        ("check", "fits.jsonl"),
        ("replay", "fits.jsonl"),
    ],
)
def test_a_budget_above_the_window_is_a_usage_error(run_cli: Run, in_data: Path, args: tuple[str, ...]) -> None:
    result = run_cli(*args, "--budget", "2000", "--window", "1999")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "--budget 2,000 is larger than --window 1,999" in result.stderr


def test_json_format(run_cli: Run, golden: Golden, in_data: Path) -> None:
    result = run_cli("check", ".", *OPTIONS, "--format", "json")
    assert result.exit_code == 1
    assert result.stderr == ""
    document = json.loads(result.stdout)
    assert {"schema", "estimator", "budget", "window", "fail_on", "passed", "transcripts"} <= document.keys()
    assert document["budget"] == 2000
    assert document["window"] is None
    assert document["fail_on"] == "too-long"
    assert document["passed"] is False
    rows = [
        (t["path"], t["outcome"], t["tokens_before"], t["tokens_after"], t["failed"]) for t in document["transcripts"]
    ]
    assert rows == [
        ("cleared.jsonl", "cleared", 2601, 582, False),
        ("fits.jsonl", "fits", 18, 18, False),
        ("long/toolong.jsonl", "too-long", 3010, 3052, True),
        ("rounds.jsonl", "fits", 834, 834, False),
        ("turns.jsonl", "fits", 707, 707, False),
    ]
    assert [t["cause"] for t in document["transcripts"]] == [None, None, TOO_LONG_CAUSE, None, None]
    assert [t["crossed"] for t in document["transcripts"]] == [None, None, "budget", None, None]
    too_long = document["transcripts"][2]["too_long"]
    assert too_long["alone"] == {"kind": "result", "label": "the newest tool result", "tokens": 3000, "call_id": "r1"}
    assert too_long["tokens"] == sum(p["tokens"] for p in too_long["parts"]) == 3052
    golden("check_json.json", result.stdout)


def test_json_format_passes(run_cli: Run, in_data: Path) -> None:
    result = run_cli("check", "fits.jsonl", *OPTIONS, "--format", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["passed"] is True


def test_github_format_annotates_only_failures(run_cli: Run, golden: Golden, in_data: Path) -> None:
    # a passing file makes no annotation: a folder of 1,000 transcripts must not bury the one that fails
    result = run_cli("check", ".", *OPTIONS, "--format", "github")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines == [
        "::error file=long/toolong.jsonl,title=windowfit too-long::This conversation has grown too long for the "
        "model to read in one go. Start a new chat for the next step — everything built so far is kept. "
        f"(Cause: {TOO_LONG_CAUSE}.)",
    ]
    golden("check_github.txt", result.stdout)


def test_github_format_escapes_properties(run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # "%" -> %25 everywhere; in properties also "," -> %2C and ":" -> %3A
    shutil.copy(DATA / "long" / "toolong.jsonl", tmp_path / "50%,a:b.jsonl")
    monkeypatch.chdir(tmp_path)
    result = run_cli("check", ".", *OPTIONS, "--format", "github")
    assert result.exit_code == 1
    assert result.stdout.startswith("::error file=50%25%2Ca%3Ab.jsonl,title=windowfit too-long::")


def test_quiet_lists_only_failures(run_cli: Run, in_data: Path) -> None:
    result = run_cli("check", ".", *OPTIONS, "--quiet")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("FAIL long/toolong.jsonl")
    assert lines[1] == "5 checked, 1 failed (fail on: too-long or worse)"


def test_github_escaping_of_messages_and_properties() -> None:
    assert _gh("100% done\r\nnext line") == "100%25 done%0D%0Anext line"
    # a message keeps its commas and colons; only properties escape them
    assert _gh("a, b: c") == "a, b: c"
    assert _gh("a, b: c\n%", prop=True) == "a%2C b%3A c%0A%25"


def test_missing_budget_is_a_usage_error(run_cli: Run, in_data: Path) -> None:
    result = run_cli("check", ".")
    assert result.exit_code == 2
    assert "--budget" in result.stderr
    assert result.stdout == ""


def test_zero_budget_is_a_usage_error(run_cli: Run, in_data: Path) -> None:
    result = run_cli("check", ".", "--budget", "0")
    assert result.exit_code == 2
    assert result.stdout == ""


def test_unreadable_transcript_exits_3(run_cli: Run, tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"role":"user","content":"hi"}\nnot json\n', encoding="utf-8")
    result = run_cli("check", str(tmp_path), *OPTIONS)
    assert result.exit_code == 3
    assert f"{tmp_path / 'bad.jsonl'}:2:1" in " ".join(result.stderr.split())


def test_directory_without_transcripts_exits_3(run_cli: Run, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("nothing here", encoding="utf-8")
    result = run_cli("check", str(tmp_path), *OPTIONS)
    assert result.exit_code == 3
    assert "no transcript files" in " ".join(result.stderr.split())


# Issue 8: check lists every defect fit would repair, with its line.
DEFECTIVE = (
    b'{"role":"user","content":"hi"}\n'
    b'{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read","input":{}}]}\n'
    b'{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a"},'
    b'{"type":"tool_result","tool_use_id":"t1","content":"a"}]}\n'
    b'{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read","input":{}}]}\n'
    b'{"role":"user","content":"are you there?"}\n'
)


def test_text_lists_each_defect_with_its_line_issue_8(run_cli: Run, tmp_path: Path) -> None:
    source = tmp_path / "defective.jsonl"
    source.write_bytes(DEFECTIVE)
    result = run_cli("check", str(source), "--budget", "100000")
    assert result.exit_code == 0
    lines = [" ".join(line.split()) for line in result.stdout.splitlines()]
    assert lines[0].startswith(f"ok {source}")
    assert [line.split(": ")[1] for line in lines[1:4]] == ["duplicate-result", "duplicate-call-id", "unanswered-call"]
    assert [line.split(": ")[0] for line in lines[1:4]] == [f"{source}:3", f"{source}:4", f"{source}:4"]


def test_json_lists_each_defect_with_its_line_issue_8(run_cli: Run, tmp_path: Path) -> None:
    source = tmp_path / "defective.jsonl"
    source.write_bytes(DEFECTIVE)
    result = run_cli("check", str(source), "--budget", "100000", "--format", "json")
    assert result.exit_code == 0
    (row,) = json.loads(result.stdout)["transcripts"]
    assert [(d["kind"], d["line"], d["call_id"]) for d in row["defects"]] == [
        ("duplicate-result", 3, "t1"),
        ("duplicate-call-id", 4, "t1"),
        ("unanswered-call", 4, "t1-dup2"),
    ]


def test_github_annotates_each_defect_as_a_warning_on_its_line_issue_8(run_cli: Run, tmp_path: Path) -> None:
    source = tmp_path / "defective.jsonl"
    source.write_bytes(DEFECTIVE)
    result = run_cli("check", str(source), "--budget", "100000", "--format", "github")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert [line.split("::")[1].split(",title")[0] for line in lines] == [
        f"warning file={_gh(str(source), prop=True)},line=3",
        f"warning file={_gh(str(source), prop=True)},line=4",
        f"warning file={_gh(str(source), prop=True)},line=4",
    ]


def test_check_uses_the_anchored_size_and_says_so(run_cli: Run) -> None:
    # anchored: 135 measured + 18 for its reply = 153 (worked out in test_cli_report.PARALLEL)
    parallel = str(Path(__file__).parent / "data" / "claude_code" / "parallel.jsonl")
    result = run_cli("check", parallel, "--budget", "152", "--format", "json")
    (row,) = json.loads(result.stdout)["transcripts"]
    assert (row["size_source"], row["tokens_before"]) == ("anchored", 153)
    assert row["outcome"] != "fits"
    result = run_cli("check", parallel, "--budget", "152")
    assert "anchored on usage at line 11" in " ".join(result.stdout.split())


def test_a_session_s_subagents_are_rows_of_their_own_and_an_empty_one_no_error(
    run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    """An agent file without messages beside a session made check exit 3 on the session; each subagent is
    its own row, its verdict beside its own file."""
    folder = tmp_path / "with_subagents"
    shutil.copytree(Path(__file__).parent / "data" / "claude_code" / "with_subagents", folder)
    (folder / "session" / "subagents" / "agent-aempty.jsonl").write_bytes(b"")
    result = run_cli("check", str(folder / "session.jsonl"), "--budget", "100000", "--format", "json")
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)["transcripts"]
    sub = str(folder / "session" / "subagents" / "agent-a1b2c3d.jsonl")
    assert [(r["path"], r["name"], r["outcome"]) for r in rows] == [
        (str(folder / "session.jsonl"), None, "fits"),
        (sub, "subagent agent-a1b2c3d", "fits"),
    ]
