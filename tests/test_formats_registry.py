"""The format registry: at most one specific sniffer claims any real file (none:
the messages fallback), and whether ``--to same`` works is the format's own say."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA, require_shared

from windowfit.fitting.errors import InputError, OptionError, UnknownFormat
from windowfit.fitting.formats import (
    FALLBACK,
    FORMATS,
    NAMES,
    SPECIFIC,
    Input,
    detect,
    discover,
    format_of,
    load_path,
)
from windowfit.fitting.formats.registry import (
    DIRECTORY_NAMES,
    FALLBACK_NAME,
    SCAN_NAMES,
    SPECIFIC_NAMES,
    directory_format,
)
from windowfit.fitting.request import write_transcript
from windowfit.fitting.wire.bodies import transcript_from_body

SUFFIXES = (".jsonl", ".json", ".traj", ".eval")
FORMAT_OF_FOLDER = {
    "anthropic_log": "anthropic_log",
    "anthropic_messages": "anthropic_log",  # the corpus files claude-trace captures under the API's name
    "claude_code": "claude_code",
    "cline": "cline",
    "codex": "codex",
    "copilot_cli": "copilot_cli",
    "gemini_cli": "gemini_cli",
    "openai_chat": "openai_chat",
    "openhands": "openhands",
    "responses": "responses",
    "swe_agent_text": "openai_chat",  # corpus/new-formats: a SWE-agent trajectory in the text protocol
    "inspect_ai": "inspect_ai",
    "http_capture": "http_capture",
    "atif": "atif",
    "opencode": "opencode",  # a folder format: its folders are checked, not its files
}
"""The format of a file, by the folder it sits in (tests/data and the corpus);
files anywhere else (tests/data/fit, replay, report) are plain messages."""


FOREIGN = "scan"
"""tests/data/scan: a folder scan's fixture, whose other files are not transcripts on purpose."""


def in_claimed_folder(path: Path, root: Path) -> bool:
    """Inside a folder a format reads as one input (opencode storage): not a transcript file of its own."""
    return any(directory_format(parent) is not None for parent in path.parents if parent.is_relative_to(root))


def transcript_files(root: Path) -> list[Path]:
    found = (p for p in root.rglob("*") if p.is_file() and p.suffix in SUFFIXES and not in_claimed_folder(p, root))
    return sorted(p for p in found if FOREIGN not in p.relative_to(root).parts[:-1] or p.name == "session.jsonl")


def claimed_folders(root: Path) -> list[Path]:
    """The folders a format reads as one input, outermost only."""
    found = [p for p in root.rglob("*") if p.is_dir() and directory_format(p) is not None]
    return sorted(
        p for p in found if not any(directory_format(q) for q in p.parents if q.is_relative_to(root) and q != p)
    )


def expected_format(path: Path, root: Path) -> str | None:
    """The specific format the file's folder names, or None for plain messages."""
    return next((FORMAT_OF_FOLDER[d] for d in path.relative_to(root).parts[:-1] if d in FORMAT_OF_FOLDER), None)


def claims(path: Path) -> list[str]:
    head = Input(str(path)).head()
    return [fmt.name for fmt in SPECIFIC if fmt.sniff(head)]


def check_detection(root: Path) -> set[str | None]:
    """Checks every transcript file and every folder a format claims under ``root``; the formats they are in."""
    seen = set()
    for path in transcript_files(root):
        expected = expected_format(path, root)
        assert claims(path) == ([expected] if expected else []), path
        assert detect(Input(str(path))).name == (expected or FALLBACK.name), path
        seen.add(expected)
    for folder in claimed_folders(root):
        expected = expected_format(folder / "x", root)
        claimed = [f.name for f in SPECIFIC if f.directory is not None and f.directory(folder)]
        assert expected is not None and claimed == [expected], folder
        seen.add(expected)
    return seen


def test_each_sample_file_is_claimed_by_its_own_format_or_falls_back_to_messages() -> None:
    assert check_detection(DATA) == {*FORMAT_OF_FOLDER.values(), None}


def test_each_corpus_transcript_is_claimed_by_exactly_its_own_format() -> None:
    corpus = require_shared("corpus", "transcripts")
    assert check_detection(corpus) == {"anthropic_log", "claude_code", "codex", "openai_chat"}


@pytest.mark.parametrize("folder", ["openhands", "swe_agent_text", "inspect_ai", "gemini_cli", "copilot_cli"])
def test_each_new_format_corpus_file_is_claimed_by_exactly_its_own_format(folder: str) -> None:
    new_formats = require_shared("corpus", "new-formats")
    files = transcript_files(new_formats / folder)
    assert files
    for path in files:
        assert claims(path) == [FORMAT_OF_FOLDER[folder]], path
        assert detect(Input(str(path))).name == FORMAT_OF_FOLDER[folder], path


def test_the_fallback_comes_after_every_specific_format() -> None:
    assert FALLBACK.name == "messages"
    assert FALLBACK not in SPECIFIC
    assert list(FORMATS) == [*(f.name for f in SPECIFIC), FALLBACK.name]


def test_each_name_is_its_module_s_format_and_names_every_format_in_order() -> None:
    """The registry lists formats by name and imports ``<name>.py`` when one is tried: ``NAMES`` is what
    ``--from`` lists before any format is imported, so it must be ``FORMATS``' order exactly."""
    assert NAMES == tuple(FORMATS) == (*SPECIFIC_NAMES, FALLBACK_NAME)
    for name in NAMES:
        assert importlib.import_module(f"windowfit.fitting.formats.{name}").FORMAT is FORMATS[name]
        assert FORMATS[name].name == name
    assert [f.name for f in SPECIFIC] == list(SPECIFIC_NAMES)
    assert FALLBACK.name == FALLBACK_NAME


def test_the_folder_scan_s_tables_are_the_formats_own_directory_readers_and_name_patterns() -> None:
    """A folder walk asks ``DIRECTORY_NAMES`` of each folder and matches ``SCAN_NAMES`` without importing the
    formats: they must say what the formats themselves say (a format added with a ``directory`` or
    ``scan_names`` and left out of the tables would make the walk miss its inputs)."""
    assert tuple(f.name for f in SPECIFIC if f.directory is not None) == DIRECTORY_NAMES
    assert tuple(pattern for f in FORMATS.values() for pattern in f.scan_names) == SCAN_NAMES


WALK_PROBE = """
import sys
from windowfit.fitting.formats import discover
found = list(discover([sys.argv[1]]))
print(len(found))
package = "windowfit.fitting.formats."
print(sorted(m[len(package) :] for m in sys.modules if m.startswith(package) and m[len(package) :] in NAMES))
""".replace("in NAMES", "in " + repr(NAMES))


def test_walking_a_folder_imports_only_the_formats_that_read_a_folder_and_the_session_rule() -> None:
    """The walk of the test data (every format's files, aider's ``.md`` histories among them) finds what it
    found when it imported every format to ask it, and imports opencode (which reads a folder) and
    claude_code (whose subagent files are left out when their session is found), no other."""
    result = subprocess.run([sys.executable, "-c", WALK_PROBE, str(DATA)], capture_output=True, text=True, check=True)
    count, modules = result.stdout.splitlines()
    assert int(count) == len(list(discover([DATA])))  # what it finds in a process that imported more
    assert any(p.name.endswith(".chat.history.md") for p in discover([DATA]))  # a scan name was matched
    assert modules == str(["claude_code", "opencode"])


DETECT_PROBE = """
import sys
from windowfit.fitting.formats import Input, NAMES, detect
print(detect(Input(sys.argv[1])).name)
package = "windowfit.fitting.formats."
print(sorted(m[len(package) :] for m in sys.modules if m.startswith(package) and m[len(package) :] in NAMES))
"""


@pytest.mark.parametrize(
    ("sample", "imported"),
    [
        ("codex/compacted.jsonl", ["codex"]),
        ("claude_code/branch.jsonl", ["claude_code"]),
        ("responses/items.jsonl", ["codex", "responses"]),
    ],
)
def test_detection_imports_the_formats_it_tries_and_no_other(sample: str, imported: list[str]) -> None:
    """Detection imports each specific format as it reaches it (codex, then responses, ...), and a Claude Code
    session's format first, by its keys (issue 15): a session loads one of the sixteen format modules."""
    result = subprocess.run(
        [sys.executable, "-c", DETECT_PROBE, str(DATA / sample)], capture_output=True, text=True, check=True
    )
    name, modules = result.stdout.splitlines()
    assert name == sample.split("/")[0]
    assert modules == str(imported)


def test_a_jsonl_file_under_a_projects_folder_imports_claude_code_alone(tmp_path: Path) -> None:
    """Where Claude Code keeps sessions (``.../projects/<project>/``) detection asks claude_code first: a
    session there imports neither codex nor responses, whatever its first bytes hold."""
    project = tmp_path / "projects" / "-home-dev-app"
    project.mkdir(parents=True)
    session = project / "branch.jsonl"
    session.write_bytes((DATA / "claude_code" / "branch.jsonl").read_bytes())
    result = subprocess.run(
        [sys.executable, "-c", DETECT_PROBE, str(session)], capture_output=True, text=True, check=True
    )
    assert result.stdout.splitlines() == ["claude_code", str(["claude_code"])]


@pytest.mark.parametrize("first", [True, False])
@pytest.mark.parametrize("root", ["data", "corpus"])
def test_asking_claude_code_first_changes_no_file_s_format(
    root: str, first: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every test and corpus file (codex rollouts, Responses items and plain messages among them) detected as
    if it lay under a ``projects`` folder, or as if no key of Claude Code's lines were seen in it, gets the
    format the usual order gives it."""
    from windowfit.fitting.formats import registry

    folder = DATA if root == "data" else require_shared("corpus")
    files = [p for p in transcript_files(folder) if p.suffix == ".jsonl"]
    assert len(files) > 10

    def detected() -> list[str]:
        names = []
        for path in files:
            try:
                names.append(detect(Input(str(path))).name)
            except InputError as exc:  # an empty file, a foreign one: the same error either way
                names.append(f"error: {exc}")
        return names

    usual = detected()
    monkeypatch.setattr(registry, "_claude_code_first", lambda path, head: first)
    assert detected() == usual
    assert "claude_code" in usual and len(set(usual)) > 2


def test_input_that_no_format_accepts_is_an_unknown_format(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text('{"note": "no role, no messages"}\n')
    assert claims(path) == []
    with pytest.raises(UnknownFormat, match="not a transcript format"):
        detect(Input(str(path)))


# --------------------------------------------------------------------------
# Writing back


def test_only_the_messages_format_writes_back() -> None:
    assert {name for name, fmt in FORMATS.items() if fmt.writes_back} == {"messages"}


@pytest.mark.parametrize("path", transcript_files(DATA), ids=lambda p: str(p.relative_to(DATA)))
def test_to_same_works_exactly_for_formats_that_write_back(path: Path) -> None:
    for transcript in load_path(path, skip_invalid=True):
        fmt = format_of(transcript)
        assert fmt is not None and transcript.format in (fmt.name, *fmt.variants)
        if fmt.writes_back:
            assert write_transcript(transcript, to="same") == write_transcript(transcript)
        else:
            with pytest.raises(OptionError, match="'--to same' cannot write one"):
                write_transcript(transcript, to="same")


def test_a_request_body_belongs_to_the_messages_format() -> None:
    body = {"system": "s", "messages": [{"role": "user", "content": "hi"}]}
    transcript = transcript_from_body(body)
    assert transcript.format == "request"
    assert format_of(transcript) is FALLBACK
    assert write_transcript(transcript, to="same").startswith(b'{\n  "system"')
