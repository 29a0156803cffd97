"""``windowfit report``: output (golden), JSON on stdout only, inputs (files,
directories, stdin), exit codes and error locations on stderr; help for every
command."""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from rich.console import Console
from typer.testing import Result

from windowfit.cli.exit_codes import ExitCode

Run = Callable[..., Result]
Golden = Callable[[str, str], None]

ROOT = Path(__file__).parents[1]
BILINGUAL = "tests/data/report/bilingual.jsonl"
"""Six messages, Russian and English, two read_file rounds. By hand, with the
default overheads (message 4, block 3):

1. user "Перескажи главы 1 и 2." 7 ASCII + 15 Cyrillic: 1.75 + 7.5 -> 10, + 4 + 3 = 17
2. assistant "Reading chapter 1." (18) + read_file (9) + {"path":"ch1.md"} (17) = 44 ASCII -> 11, + 4 + 3 * 2 = 21
3. result "Жили-были " * 100: 800 Cyrillic + 200 ASCII -> 400 + 50 = 450, + 4 + 3 + 3 = 460
4. assistant "Теперь глава 2." 11 Cyrillic + 4 ASCII, + read_file {"path":"ch2.md"} 26 ASCII:
   5.5 + 30 / 4 = 13, + 4 + 3 * 2 = 23
5. result "Once upon a time. " * 200: 3,600 ASCII -> 900, + 10 = 910
6. assistant "Глава 1: дед и баба. Chapter 2: a fairy tale." 13 Cyrillic + 32 ASCII: 6.5 + 8 -> 15, + 7 = 22

Total 17 + 21 + 460 + 23 + 910 + 22 = 1,453; ASCII 3,913 and other 839 characters.
"""
BILINGUAL_TOKENS = 1453


@pytest.fixture
def at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from the repository root, so paths in the output are the short relative ones."""
    monkeypatch.chdir(ROOT)


def flat(text: str) -> str:
    """Text with line breaks and runs of spaces collapsed (rich wraps long lines)."""
    return " ".join(text.split())


# --------------------------------------------------------------------------
# Output


def test_text_report_matches_golden(run_cli: Run, golden: Golden, at_root: None) -> None:
    result = run_cli("report", BILINGUAL, "--budget", "1000", "--window", "2000")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    golden("report_bilingual.txt", result.stdout)
    # the numbers computed by hand above, as the reader sees them
    text = flat(result.stdout)
    assert "6 messages · 1 turn · 2 tool rounds · 2 tool calls · 2 tool results" in text
    assert "1,453 tokens" in text
    assert "over the 1,000 budget by 453 tokens; within the 2,000 window" in text


def test_terminal_fixture_fixes_every_cli_console(terminal: None) -> None:
    # rich reads COLUMNS and NO_COLOR when a Console is built; the fixture rebuilds the CLI's module-level ones
    consoles = [
        value
        for name, module in list(sys.modules.items())
        if name == "windowfit.cli" or name.startswith("windowfit.cli.")
        for value in vars(module).values()
        if isinstance(value, Console)
    ]
    assert consoles
    assert all((c.width, c.no_color, c.color_system) == (100, True, None) for c in consoles)


def test_console_is_100_columns_without_colour(run_cli: Run, at_root: None) -> None:
    result = run_cli("report", BILINGUAL, "--budget", "1000", "--window", "2000")
    widths = [len(line) for line in result.stdout.splitlines()]
    assert max(widths) <= 100
    assert "\x1b[" not in result.stdout


def test_json_report_is_the_only_thing_on_stdout(run_cli: Run, at_root: None) -> None:
    result = run_cli("report", BILINGUAL, "--budget", "1000", "--window", "2000", "--json")
    assert result.exit_code == 0
    assert result.stderr == ""
    doc = orjson.loads(result.stdout)  # fails if anything else was printed
    assert set(doc) == {"schema", "estimator", "transcripts", "skipped_files"}
    assert doc["skipped_files"] == []
    assert (doc["schema"], doc["estimator"]) == (1, "seed")
    (report,) = doc["transcripts"]
    # docs/json.md: keys are only ever added within a schema version
    assert set(report) >= {
        "path",
        "format",
        "dialect",
        "counts",
        "tokens",
        "preamble_tokens",
        "scripts",
        "by_role",
        "by_kind",
        "largest_results",
        "tools",
        "budget",
        "window",
        "fits_budget",
        "fits_window",
        "verdict",
    }
    assert report["path"] == BILINGUAL
    assert report["tokens"] == BILINGUAL_TOKENS
    assert report["counts"] == {
        "messages": 6,
        "turns": 1,
        "rounds": 2,
        "tool_calls": 2,
        "tool_results": 2,
        "skipped_lines": 0,
    }
    assert [(s["class"], s["chars"]) for s in report["scripts"]] == [("ascii", 3913), ("cjk", 0), ("other", 839)]
    # results on their own: 900 + 3 + 3 and 450 + 3 + 3; 906 / 1,000 of the budget
    assert [(r["call_id"], r["tokens"], r["line"], r["budget_share"]) for r in report["largest_results"]] == [
        ("toolu_02", 906, 5, 0.906),
        ("toolu_01", 456, 3, 0.456),
    ]
    assert (report["fits_budget"], report["fits_window"]) == (False, True)
    assert report["verdict"] == "over the 1,000 budget by 453 tokens; within the 2,000 window"


def test_json_keys_are_sorted(run_cli: Run, at_root: None) -> None:
    stdout = run_cli("report", BILINGUAL, "--json").stdout
    doc = orjson.loads(stdout)
    assert list(doc) == sorted(doc)
    assert list(doc["transcripts"][0]) == sorted(doc["transcripts"][0])


def test_overhead_zero_leaves_the_text_rule(run_cli: Run, at_root: None) -> None:
    doc = orjson.loads(run_cli("report", BILINGUAL, "--json", "--overhead", "0").stdout)
    # 10 + 11 + 450 + 13 + 900 + 15 = 1,399
    assert doc["transcripts"][0]["tokens"] == 1399


def test_top_limits_the_largest_results(run_cli: Run, at_root: None) -> None:
    doc = orjson.loads(run_cli("report", BILINGUAL, "--json", "--top", "1").stdout)
    assert [r["call_id"] for r in doc["transcripts"][0]["largest_results"]] == ["toolu_02"]


def test_paths_are_shown_literally_not_as_markup(run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # regression: the title passed the path through markup escaping although it is not markup,
    # so "[bold]notes.jsonl" was shown as "\[bold]notes.jsonl"
    shutil.copy(ROOT / BILINGUAL, tmp_path / "[bold]notes.jsonl")
    monkeypatch.chdir(tmp_path)
    result = run_cli("report", "[bold]notes.jsonl")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0].startswith("[bold]notes.jsonl  (messages, anthropic)")


# --------------------------------------------------------------------------
# Inputs


def test_several_files_and_a_directory_searched_recursively(
    run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "runs" / "deep").mkdir(parents=True)
    for name in ("runs/b.jsonl", "runs/deep/a.jsonl", "single.jsonl"):
        shutil.copy(ROOT / BILINGUAL, tmp_path / name)
    (tmp_path / "runs" / "notes.txt").write_text("not a transcript")
    monkeypatch.chdir(tmp_path)
    result = run_cli("report", "single.jsonl", "runs", "--json")
    assert result.exit_code == 0
    paths = [t["path"] for t in orjson.loads(result.stdout)["transcripts"]]
    assert paths == ["single.jsonl", str(Path("runs/b.jsonl")), str(Path("runs/deep/a.jsonl"))]

    text = run_cli("report", "single.jsonl", "runs")
    assert text.exit_code == 0
    assert "All transcripts" in text.stdout
    assert text.stdout.count("over the") == 0  # no budget given: no verdict against one
    assert flat(text.stdout).count("1,453") >= 6  # three reports and three summary rows


def test_dash_reads_stdin(run_cli: Run) -> None:
    data = (ROOT / BILINGUAL).read_bytes()
    result = run_cli("report", "-", "--json", input=data)
    assert result.exit_code == 0
    (report,) = orjson.loads(result.stdout)["transcripts"]
    assert (report["path"], report["tokens"]) == ("<stdin>", BILINGUAL_TOKENS)


# --------------------------------------------------------------------------
# Errors and exit codes


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run inside ``tmp_path`` so error locations are short relative paths."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_bad(directory: Path) -> None:
    good = (ROOT / BILINGUAL).read_bytes().splitlines(keepends=True)
    # line 2 is cut short: 32 characters, so the parser stops at column 33
    (directory / "bad.jsonl").write_bytes(good[0] + b'{"role": "user", "content": "hi"\n' + good[1])


def test_invalid_json_exits_3_with_location_on_stderr(run_cli: Run, in_tmp: Path) -> None:
    write_bad(in_tmp)
    for extra in ((), ("--json",)):
        result = run_cli("report", "bad.jsonl", *extra)
        assert result.exit_code == ExitCode.BAD_INPUT == 3
        assert result.stdout == ""
        assert "error: bad.jsonl:2:33: invalid JSON" in flat(result.stderr)
        assert "hint: pass --skip-invalid" in flat(result.stderr)


def test_skip_invalid_reports_the_skipped_count(run_cli: Run, in_tmp: Path) -> None:
    write_bad(in_tmp)
    result = run_cli("report", "bad.jsonl", "--skip-invalid")
    assert result.exit_code == 0
    assert re.search(
        r"2 messages · 1 turn · 1 tool round · 1 tool call · 0 tool results · 1 lines? skipped", flat(result.stdout)
    )
    doc = orjson.loads(run_cli("report", "bad.jsonl", "--skip-invalid", "--json").stdout)
    assert doc["transcripts"][0]["counts"]["skipped_lines"] == 1


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        (lambda d: None, ["missing.jsonl"], "error: missing.jsonl: no such file"),
        (lambda d: (d / "empty.jsonl").write_bytes(b""), ["empty.jsonl"], "error: empty.jsonl: the file is empty"),
        (lambda d: (d / "blank.jsonl").write_bytes(b"\n \n"), ["blank.jsonl"], "error: blank.jsonl: the file is empty"),
        (
            lambda d: (d / "nothing").mkdir() or (d / "nothing" / "readme.txt").write_text("x"),
            ["nothing"],
            "error: nothing: no transcript files",
        ),
        (
            lambda d: (d / "latin1.jsonl").write_bytes(b'{"role":"user","content":"caf\xe9"}\n'),
            ["latin1.jsonl"],
            "error: latin1.jsonl:1:30: invalid UTF-8",
        ),
        (
            lambda d: (d / "foo.jsonl").write_bytes(b'{"role":"user","content":"hi"}\n{"foo": 1}\n'),
            ["foo.jsonl"],
            "error: foo.jsonl:2: not a message",
        ),
    ],
    ids=["missing", "empty", "blank", "no-transcripts", "utf8", "not-a-message"],
)
def test_bad_input_exits_3(
    run_cli: Run, in_tmp: Path, setup: Callable[[Path], object], args: list[str], message: str
) -> None:
    setup(in_tmp)
    result = run_cli("report", *args)
    assert result.exit_code == ExitCode.BAD_INPUT
    assert result.stdout == ""
    assert message in flat(result.stderr)


@pytest.mark.parametrize(
    "args",
    [["--nope"], ["--budget", "0"], ["--budget", "lots"], ["--top", "-1"], []],
    ids=["unknown-option", "budget-0", "budget-text", "top-negative", "no-files"],
)
def test_bad_command_line_exits_2(run_cli: Run, at_root: None, args: list[str]) -> None:
    result = run_cli("report", *args, *([BILINGUAL] if args else []))
    assert result.exit_code == ExitCode.USAGE == 2
    assert result.stdout == ""


def test_unknown_estimator_exits_2(run_cli: Run, at_root: None) -> None:
    result = run_cli("report", BILINGUAL, "--estimator", "nope")
    assert result.exit_code == ExitCode.USAGE
    assert "unknown estimator 'nope'" in flat(result.stderr)


def test_unknown_format_name_is_a_usage_error(run_cli: Run, at_root: None) -> None:
    # issue 8: a mistyped --from is a mistake on the command line (exit 2), not bad input (it was 3)
    result = run_cli("report", BILINGUAL, "--from", "nope")
    assert result.exit_code == ExitCode.USAGE
    assert "unknown format 'nope'" in flat(result.stderr)


# --------------------------------------------------------------------------
# Help


def command_names() -> list[str]:
    from windowfit.cli.app import app

    return [c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands if c.callback]


def test_the_app_has_commands() -> None:
    assert "report" in command_names()


@pytest.mark.parametrize("name", command_names())
def test_every_command_has_help_with_an_example(run_cli: Run, name: str) -> None:
    result = run_cli(name, "--help")
    assert result.exit_code == 0
    assert "Example:" in result.stdout


def test_many_transcripts_show_one_table_row_each(run_cli: Run, tmp_path: Path) -> None:
    # Six files: more than DETAILS_UP_TO (5), so only the per-transcript table is shown.
    for i in range(6):
        (tmp_path / f"s{i}.jsonl").write_text('{"role":"user","content":"' + "a" * (400 * i) + '"}\n')
    result = run_cli("report", str(tmp_path), "--budget", "250")
    assert result.exit_code == 0, result.stderr
    assert "Tokens by script" not in result.stdout
    assert "6 transcripts: one line each" in result.stdout
    # s5 is 2,000 ASCII chars = 500 + 4 + 3 = 507 tokens: 257 over a 250 budget
    assert "+257 over budget" in result.stdout
    detailed = run_cli("report", str(tmp_path), "--details")
    assert detailed.stdout.count("Tokens by script") == 6


def test_plain_messages_list_the_defects_fit_repairs_issue_8(run_cli: Run, tmp_path: Path) -> None:
    # Issue 8: report listed no defects for plain message files, though fit repaired them.
    source = tmp_path / "interrupted.jsonl"
    source.write_bytes(
        b'{"role":"user","content":[{"type":"tool_result","tool_use_id":"ghost","content":"x"},'
        b'{"type":"text","text":"hi"}]}\n'
        b'{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read","input":{}}]}\n'
    )
    result = run_cli("report", str(source), "--json")
    assert result.exit_code == 0
    (document,) = orjson.loads(result.stdout)["transcripts"]
    defects = document["defects"]
    assert [(d["kind"], d["line"]) for d in defects] == [("orphan-result", 1), ("unanswered-call", 2)]
    text = flat(run_cli("report", str(source)).stdout)
    assert "Defects: orphan-result 1, unanswered-call 1" in text
    assert f"{source}:2: unanswered-call:" in text


PARALLEL = "tests/data/claude_code/parallel.jsonl"
"""A Claude Code session with two measured requests, by hand: the first (line 3)
held message 0, "Read a.txt and b.txt" (20 ASCII -> 5, + 4 + 3 = 12 estimated), and
measured 10 + 100 cache write = 110; the second (line 11) held messages 0-2 and
measured 5 + 20 + 110 cache read = 135, and its reply (message 3, the last) recorded
12 output tokens against 18 estimated."""


def test_report_anchors_on_measured_usage_and_infers_the_preamble(run_cli: Run, at_root: None) -> None:
    result = run_cli("report", PARALLEL, "--json")
    assert result.exit_code == 0
    (report,) = orjson.loads(result.stdout)["transcripts"]
    assert (report["size_source"], report["preamble_source"]) == ("anchored", "inferred")
    assert report["preamble_tokens"] == 110 - 12
    assert report["tokens"] == 135 + 18  # the last measured request + its reply (estimate > recorded 12)
    assert report["size"]["measured_line"] == 11
    assert report["size"]["preamble_line"] == 3


def test_report_text_says_which_parts_are_measured_inferred_or_estimated(run_cli: Run, at_root: None) -> None:
    result = run_cli("report", PARALLEL)
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "next request: measured 135 at line 11 + its reply 18 + estimated 0 after it" in text
    assert "system prompt and tools, not in the file: ≈98 tokens, inferred from usage at line 3" in text


def test_size_estimate_forces_the_pure_estimate(run_cli: Run, at_root: None) -> None:
    result = run_cli("report", PARALLEL, "--json", "--size", "estimate")
    (report,) = orjson.loads(result.stdout)["transcripts"]
    assert report["size_source"] == "estimate"
    assert report["tokens"] == report["preamble_tokens"] + report["size"]["estimated_tokens"]


def test_preamble_is_given_for_files_without_usage(run_cli: Run, at_root: None) -> None:
    result = run_cli("report", BILINGUAL, "--json", "--preamble", "25600")
    (report,) = orjson.loads(result.stdout)["transcripts"]
    assert (report["preamble_source"], report["preamble_tokens"]) == ("given", 25600)
    assert report["tokens"] == BILINGUAL_TOKENS + 25600
    result = run_cli("report", BILINGUAL, "--preamble", "-1")
    assert result.exit_code == 2


def test_report_text_says_what_paging_would_have_bounded_a_data_tool(run_cli: Run) -> None:
    result = run_cli("report", str(ROOT / "sample_transcripts" / "data_tool_search.jsonl"))
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "search_mentions: paged at 2,000 tokens (windowfit's offload), its 8 results would have put" in text
