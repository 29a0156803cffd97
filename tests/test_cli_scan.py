"""Folder scans that never stop at one foreign file, never picking one transcript silently, and errors that say
what a file is (issue 9, items 1, 2 and 5).

tests/data/scan holds one transcript (``session.jsonl``, a copy of fit/fits.jsonl) and three files that are not
(see its README); binary files are written here into a temporary folder.
"""

from __future__ import annotations

import gzip
import io
import json
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import DATA, require_shared
from typer.testing import Result

Run = Callable[..., Result]
SCAN = DATA / "scan"
FOREIGN = {
    str(SCAN / "empty.jsonl"): "the file is empty",
    str(SCAN / "gemini-session.json"): "",  # the messages loader's own words; checked to be non-empty
    str(SCAN / "package.json"): "not a transcript format windowfit knows",
}
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"


def _zip(member: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(member, data)
    return buffer.getvalue()


# --------------------------------------------------------------------------
# 1. Folder scans skip what they cannot read, and count it


def test_check_on_a_folder_skips_each_foreign_file_with_one_warning(run_cli: Run) -> None:
    result = run_cli("check", str(SCAN), "--budget", "100")
    assert result.exit_code == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("skipped:")]
    assert sorted(w.split(": ")[1] for w in warnings) == sorted(FOREIGN)
    assert "3 file(s) skipped" in result.stderr
    assert result.stdout.splitlines()[-1] == (
        "1 checked, 0 failed, 3 skipped (not transcripts windowfit reads) (fail on: too-long or worse)"
    )


@pytest.mark.parametrize("command", ["report", "check", "audit"])
def test_json_lists_each_skipped_file_with_its_reason(run_cli: Run, command: str) -> None:
    args = {"report": ("--json",), "check": ("--budget", "100", "--format", "json"), "audit": ("--json",)}[command]
    extra = ("--provider-only",) if command == "audit" else ()
    result = run_cli(command, str(SCAN), *args, *extra)
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert [t["path"] for t in document["transcripts"]] == [str(SCAN / "session.jsonl")]
    skipped = {f["path"]: f["reason"] for f in document["skipped_files"]}
    assert skipped.keys() == FOREIGN.keys()
    for path, reason in FOREIGN.items():
        assert skipped[path].endswith(reason) and skipped[path]


def test_replay_json_lists_the_skipped_files(run_cli: Run) -> None:
    result = run_cli("replay", str(SCAN), "--budget", "100", "--json")
    assert result.exit_code == 0, result.stderr
    assert {f["path"] for f in json.loads(result.stdout)["skipped_files"]} == FOREIGN.keys()


def test_a_named_file_is_never_skipped(run_cli: Run) -> None:
    for path in FOREIGN:
        result = run_cli("check", str(SCAN / "session.jsonl"), path, "--budget", "100")
        assert result.exit_code == 3, path
        assert "skipped" not in result.stderr


@pytest.mark.parametrize("command", ["report", "check", "audit", "replay"])
def test_strict_makes_a_foreign_file_in_a_folder_an_error(run_cli: Run, command: str) -> None:
    extra = {"check": ("--budget", "100"), "replay": ("--budget", "100"), "audit": ("--provider-only",)}
    result = run_cli(command, str(SCAN), "--strict", *extra.get(command, ()))
    assert result.exit_code == 3
    assert "error:" in result.stderr and str(SCAN / "empty.jsonl") in result.stderr


def test_a_known_format_with_a_broken_line_follows_skip_invalid_in_a_folder(run_cli: Run) -> None:
    # claude_code/defects.jsonl has a truncated line: a file windowfit reads, broken, not a foreign file.
    folder = DATA / "claude_code"
    assert run_cli("check", str(folder), "--budget", "1000").exit_code == 3
    result = run_cli("check", str(folder), "--budget", "1000", "--skip-invalid")
    assert result.exit_code == 0
    assert "skipped:" not in result.stderr


def test_a_folder_of_nothing_but_foreign_files_has_no_transcripts(run_cli: Run, tmp_path: Path) -> None:
    shutil.copy(SCAN / "package.json", tmp_path)
    result = run_cli("check", str(tmp_path), "--budget", "100")
    assert result.exit_code == 3
    assert "no transcripts found" in result.stderr


def test_binary_files_in_a_folder_are_skipped_saying_what_they_are(run_cli: Run, tmp_path: Path) -> None:
    # a zip no format claims (an Inspect .eval is a zip too, and its own loader reads it)
    shutil.copy(SCAN / "session.jsonl", tmp_path)
    (tmp_path / "log.eval.json").write_bytes(_zip("notes.txt", b"hi"))
    (tmp_path / "old.jsonl").write_bytes(gzip.compress((SCAN / "session.jsonl").read_bytes()))
    (tmp_path / "shot.json").write_bytes(PNG)
    result = run_cli("check", str(tmp_path), "--budget", "100", "--format", "json")
    assert result.exit_code == 0, result.stderr
    reasons = {Path(f["path"]).name: f["reason"] for f in json.loads(result.stdout)["skipped_files"]}
    assert reasons == {
        "log.eval.json": "a zip archive (an Inspect .eval log?), not a transcript",
        "old.jsonl": "gzip-compressed, not a transcript",
        "shot.json": "a PNG image, not a transcript",
    }


# --------------------------------------------------------------------------
# 5. Clear errors: binary inputs, a forced --from that does not fit


@pytest.mark.parametrize(
    ("data", "said", "hint"),
    [
        (_zip("notes.txt", b"hi"), "a zip archive (an Inspect .eval log?), not a transcript", "unzip it first"),
        (gzip.compress(b'{"role":"user","content":"hi"}\n'), "gzip-compressed, not a transcript", "gunzip"),
        (PNG, "a PNG image, not a transcript", ""),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", "a JPEG image, not a transcript", ""),
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "a PDF document, not a transcript", ""),
        (
            b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00",
            "a binary file (it holds NUL bytes), not text, not a transcript",
            "",
        ),
    ],
    ids=["zip", "gzip", "png", "jpeg", "pdf", "elf"],
)
def test_a_binary_file_gets_an_error_that_says_what_it_is(
    run_cli: Run, tmp_path: Path, data: bytes, said: str, hint: str
) -> None:
    path = tmp_path / "input.jsonl"
    path.write_bytes(data)
    for forced in ((), ("--from", "messages"), ("--from", "codex")):
        result = run_cli("report", str(path), *forced)
        assert result.exit_code == 3
        assert result.stderr.splitlines()[0] == f"error: {path}: {said}"
        assert hint in result.stderr


def test_utf16_text_is_not_called_binary(run_cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "utf16.jsonl"
    path.write_bytes('{"role":"user","content":"hi"}\n'.encode("utf-16-le"))
    result = run_cli("report", str(path))
    assert result.exit_code == 3
    assert "binary" not in result.stderr


def test_forcing_codex_on_a_claude_code_session_names_the_line(run_cli: Run) -> None:
    path = DATA / "claude_code" / "parallel.jsonl"
    result = run_cli("fit", str(path), "--budget", "1000", "--from", "codex", "-o", "-")
    assert result.exit_code == 3
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"error: {path}:1: not a codex file: this is Claude Code session JSONL (claude_code)")
    assert "leave out --from codex" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("forced", ["claude_code", "responses", "openai_chat", "anthropic_log"])
def test_forcing_another_specific_format_on_a_codex_rollout_is_an_error(run_cli: Run, forced: str) -> None:
    path = next((DATA / "codex").glob("*.jsonl"))
    result = run_cli("report", str(path), "--from", forced)
    assert result.exit_code == 3
    assert f"not a {forced} file" in result.stderr and "(codex)" in result.stderr


def test_forcing_the_format_a_file_is_in_still_reads_it(run_cli: Run) -> None:
    path = DATA / "claude_code" / "parallel.jsonl"
    assert run_cli("report", str(path), "--from", "claude_code").exit_code == 0


# --------------------------------------------------------------------------
# 2. Never pick silently


@pytest.fixture
def two_sessions(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    shutil.copy(DATA / "fit" / "fits.jsonl", folder / "a.jsonl")
    shutil.copy(DATA / "fit" / "turns.jsonl", folder / "b.jsonl")
    return folder


@pytest.mark.parametrize("command", ["fit", "replay"])
def test_several_transcripts_without_a_choice_is_a_usage_error_listing_them(
    run_cli: Run, two_sessions: Path, command: str
) -> None:
    result = run_cli(command, str(two_sessions), "--budget", "1000")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    # fits.jsonl: a system prompt and 6 messages; turns.jsonl: 10 messages
    assert lines[:3] == [
        f"    0  {two_sessions / 'a.jsonl'}  (6 messages)",
        f"    1  {two_sessions / 'b.jsonl'}  (10 messages)",
        f"error: {two_sessions} holds 2 transcripts: pick one with --index N or --name NAME",
    ]
    assert result.stdout == ""


def test_fit_usage_error_offers_all(run_cli: Run, two_sessions: Path) -> None:
    result = run_cli("fit", str(two_sessions), "--budget", "1000")
    assert "--all -o DIR" in result.stderr


def test_index_and_name_pick_the_same_transcript(run_cli: Run, two_sessions: Path) -> None:
    by_index = run_cli("fit", str(two_sessions), "--budget", "1000", "--index", "1", "--json")
    by_name = run_cli("fit", str(two_sessions), "--budget", "1000", "--name", "b.jsonl", "--json")
    by_path = run_cli("fit", str(two_sessions), "--budget", "1000", "--name", str(two_sessions / "b.jsonl"), "--json")
    assert by_index.exit_code == by_name.exit_code == by_path.exit_code == 0
    assert json.loads(by_index.stdout)["path"] == str(two_sessions / "b.jsonl")
    assert by_index.stdout == by_name.stdout == by_path.stdout


def test_a_name_that_matches_nothing_lists_what_there_is(run_cli: Run, two_sessions: Path) -> None:
    result = run_cli("replay", str(two_sessions), "--budget", "1000", "--name", "c.jsonl")
    assert result.exit_code == 2
    assert "--name 'c.jsonl': none of the 2 transcripts" in result.stderr
    assert "a.jsonl" in result.stderr and "b.jsonl" in result.stderr


def test_index_and_name_together_are_a_usage_error(run_cli: Run, two_sessions: Path) -> None:
    result = run_cli("fit", str(two_sessions), "--budget", "1000", "--index", "0", "--name", "a.jsonl")
    assert result.exit_code == 2


def test_one_transcript_needs_no_choice(run_cli: Run) -> None:
    assert run_cli("fit", str(DATA / "fit" / "fits.jsonl"), "--budget", "100").exit_code == 0


def test_fit_all_writes_one_file_per_transcript_with_stable_names(
    run_cli: Run, two_sessions: Path, tmp_path: Path
) -> None:
    out = tmp_path / "fitted"
    result = run_cli("fit", str(two_sessions), "--budget", "1000", "--all", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["000-a.jsonl", "001-b.jsonl"]
    for name, source in (("000-a.jsonl", "a.jsonl"), ("001-b.jsonl", "b.jsonl")):
        alone = tmp_path / f"alone-{source}"
        assert run_cli("fit", str(two_sessions / source), "--budget", "1000", "-o", str(alone)).exit_code == 0
        assert (out / name).read_bytes() == alone.read_bytes()
    assert result.stdout.splitlines()[-1] == "2 written, 0 too long"
    again = run_cli("fit", str(two_sessions), "--budget", "1000", "--all", "-o", str(out))
    assert again.exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == ["000-a.jsonl", "001-b.jsonl"]


def test_fit_all_writes_nothing_too_long_and_exits_1(run_cli: Run, tmp_path: Path) -> None:
    out = tmp_path / "fitted"
    result = run_cli("fit", str(DATA / "fit"), "--budget", "1000", "--overhead", "0", "--all", "-o", str(out))
    assert result.exit_code == 1
    names = sorted(p.name for p in out.iterdir())
    assert len(names) == 4 and not any("toolong" in n for n in names)
    assert "too-long" in result.stdout


@pytest.mark.parametrize("extra", [(), ("-o", "-"), ("-o", "x", "--json"), ("-o", "x", "--index", "0")])
def test_fit_all_needs_a_directory_and_no_choice(run_cli: Run, two_sessions: Path, extra: tuple[str, ...]) -> None:
    assert run_cli("fit", str(two_sessions), "--budget", "1000", "--all", *extra).exit_code == 2


# --------------------------------------------------------------------------
# Done when: a folder of every corpus file, a PNG and an unrelated JSON file is checked, never exit 3


@pytest.mark.slow
def test_a_folder_of_every_corpus_file_a_png_and_a_foreign_json_is_checked(run_cli: Run, tmp_path: Path) -> None:
    folder = tmp_path / "everything"
    for part in ("new-formats", "transcripts"):
        shutil.copytree(require_shared("corpus", part), folder / part)
    (folder / "screenshot.png").write_bytes(PNG)
    (folder / "screenshot.json").write_bytes(PNG)
    shutil.copy(SCAN / "package.json", folder / "package.json")
    # --skip-invalid: a corpus Claude Code session has a line that is not JSON (a file windowfit reads, broken;
    # without the option that stops the scan, as for a named file).
    result = run_cli("check", str(folder), "--budget", "200000", "--format", "json", "--skip-invalid")
    assert result.exit_code in (0, 1), result.stderr
    document = json.loads(result.stdout)
    assert document["transcripts"]
    skipped = {Path(f["path"]).name for f in document["skipped_files"]}
    assert {"package.json", "screenshot.json"} <= skipped
    assert "screenshot.png" not in skipped  # not a transcript file name: a folder search does not pick it


def test_a_claude_code_session_is_its_own_pick_and_says_so(run_cli: Run) -> None:
    session = DATA / "claude_code" / "with_subagents" / "session.jsonl"
    result = run_cli("fit", str(session), "--budget", "100000", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["path"] == str(session)
    assert "its own session; the 1 other transcript(s) in it (subagents)" in result.stderr
    sub = run_cli("fit", str(session), "--budget", "100000", "--name", "subagent agent-a1b2c3d", "--json")
    assert sub.exit_code == 0
    assert json.loads(sub.stdout)["name"] == "subagent agent-a1b2c3d"
