"""The fast path of ``report PATH... --json [--jobs N]`` (``cli/fast.py``, issue 15): which command lines it
takes (every other goes to Typer), the values it runs ``report`` with (``report``'s own defaults), and its
output, errors and exit codes: those of the same line run through Typer, byte for byte."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require_shared

from windowfit.cli import fast
from windowfit.cli.fit_cmd import check
from windowfit.cli.report_cmd import report

SAMPLES = Path(__file__).parents[1] / "sample_transcripts"

FAST = [sys.executable, "-m", "windowfit"]
"""The command as installed (``python -m windowfit`` and the ``windowfit`` script both start in ``cli.fast``)."""
TYPER = [sys.executable, "-c", "import sys; from windowfit.cli.app import main; sys.argv[0] = 'windowfit'; main()"]
"""The same command line through Typer's app alone."""


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["report", "a.jsonl", "--json"], (["a.jsonl"], None)),
        (["report", "--json", "a", "b"], (["a", "b"], None)),
        (["report", "a", "--json", "--jobs", "2"], (["a"], 2)),
        (["report", "a", "-j", "12", "--json"], (["a"], 12)),
        (["report", "--jobs=3", "a", "--json"], (["a"], 3)),
        (["report", "dir/with space", "--json"], (["dir/with space"], None)),
    ],
)
def test_the_fast_path_takes_report_json_with_paths_and_jobs(
    args: list[str], expected: tuple[list[str], int | None]
) -> None:
    assert fast.parse_report_json(args) == expected


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["report"],
        ["report", "a"],  # text: rich's tables
        ["report", "--json"],  # no path: Typer's usage error
        ["check", "a", "--json"],
        ["--version"],
        ["report", "a", "--json", "--json"],
        ["report", "a", "--json", "--jobs", "1", "--jobs", "2"],
        ["report", "a", "--json", "--jobs"],
        ["report", "a", "--json", "--jobs", "0"],
        ["report", "a", "--json", "--jobs", "01"],
        ["report", "a", "--json", "--jobs", "+2"],
        ["report", "a", "--json", "--jobs", " 2"],
        ["report", "a", "--json", "--jobs", "٢"],
        ["report", "a", "--json", "--jobs", "9999999999999"],
        ["report", "a", "--json", "--jobs", "--json"],
        ["report", "a", "--json", "-j2"],
        ["report", "a", "--json", "--budget", "100"],
        ["report", "a", "--json", "--help"],
        ["report", "a", "--json", "--"],
        ["report", "-", "--json"],
        ["report", "", "--json"],
        ["report", "a", "--jso"],
        ["report", "a", "--JSON"],
        ["report", "a", "--json", "--details"],
    ],
)
def test_every_other_command_line_goes_to_typer(args: list[str]) -> None:
    assert fast.parse_report_json(args) is None


def test_the_fast_path_runs_report_with_report_s_own_defaults() -> None:
    """Every option the fast path does not parse has the value Typer gives it when absent: the default in
    ``report``'s signature (``--json`` and ``--jobs`` aside, which the line gives)."""
    defaults = {name: p.default for name, p in inspect.signature(report).parameters.items() if p.default is not p.empty}
    for name in ("json_", "jobs", "format_", "output", "details"):
        defaults.pop(name)
    assert defaults == fast.REPORT_DEFAULTS


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["check", "a", "--budget", "100000", "--format", "json"], (["a"], 100000, None)),
        (["check", "--format=json", "-b", "5", "a", "b", "--jobs", "2"], (["a", "b"], 5, 2)),
        (["check", "a", "--budget=7", "--format", "json", "-j", "1"], (["a"], 7, 1)),
    ],
)
def test_the_fast_path_takes_check_json_with_paths_budget_and_jobs(
    args: list[str], expected: tuple[list[str], int, int | None]
) -> None:
    assert fast.parse_check_json(args) == expected


@pytest.mark.parametrize(
    "args",
    [
        ["check", "a", "--format", "json"],  # no budget: check's own error
        ["check", "a", "--budget", "100"],  # text
        ["check", "a", "--budget", "100", "--format", "github"],
        ["check", "a", "--budget", "100", "--format", "jsonl"],
        ["check", "a", "--budget", "0", "--format", "json"],
        ["check", "a", "--budget", "1e5", "--format", "json"],
        ["check", "a", "--budget", "100", "--format", "json", "--window", "200"],
        ["check", "a", "--budget", "100", "--format", "json", "--fail-on", "cleared"],
        ["check", "a", "--budget", "100", "--format", "json", "--format", "json"],
        ["check", "a", "--budget", "100", "--format", "json", "--json"],
        ["check", "a", "--budget", "100", "--format", "json", "--jobs", "0"],
        ["check", "a", "--budget", "100", "--format", "json", "-q"],
        ["check", "-", "--budget", "100", "--format", "json"],
        ["check", "--budget", "100", "--format", "json"],
        ["report", "a", "--budget", "100", "--format", "json"],
    ],
)
def test_every_other_check_line_goes_to_typer(args: list[str]) -> None:
    assert fast.parse_check_json(args) is None


def test_the_fast_check_runs_check_with_check_s_own_defaults() -> None:
    defaults = {
        name: getattr(p.default, "value", p.default)
        for name, p in inspect.signature(check).parameters.items()
        if p.default is not p.empty
    }
    for name in ("budget", "format_", "jobs", "quiet", "output"):
        defaults.pop(name)
    assert defaults == fast.check_defaults()


def _both(args: list[str], cwd: Path | None = None) -> tuple[subprocess.CompletedProcess[bytes], ...]:
    runs = tuple(subprocess.run([*command, *args], capture_output=True, cwd=cwd) for command in (FAST, TYPER))
    return runs


def _same(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    quick, typer = _both(args, cwd)
    assert quick.stdout == typer.stdout
    assert quick.stderr == typer.stderr
    assert quick.returncode == typer.returncode
    return quick


def test_a_folder_s_report_json_is_typer_s_byte_for_byte() -> None:
    done = _same(["report", str(SAMPLES), "--json"])
    assert done.returncode == 0
    assert done.stdout.startswith(b"{\n")


def test_files_and_jobs_are_typer_s_byte_for_byte() -> None:
    files = sorted(str(p) for p in SAMPLES.glob("*.jsonl"))
    assert len(files) >= 3
    done = _same(["report", *files[:3], "--jobs", "2", "--json"])
    assert done.returncode == 0


def test_skipped_files_warn_as_typer_warns(tmp_path: Path) -> None:
    (tmp_path / "notes.jsonl").write_text('{"hello": 1}\n')
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "s.jsonl").write_bytes((SAMPLES / "en_coding_session.jsonl").read_bytes())
    done = _same(["report", str(tmp_path), "--json"])
    assert b"skipped" in done.stderr


def test_errors_exit_as_typer_exits(tmp_path: Path) -> None:
    missing = _same(["report", str(tmp_path / "missing.jsonl"), "--json"])
    assert missing.returncode == 3
    assert b"no such file" in missing.stderr
    (tmp_path / "broken.jsonl").write_text('{"role": "user", "content": "hi"}\n{not json\n')
    broken = _same(["report", str(tmp_path / "broken.jsonl"), "--json"])
    assert broken.returncode == 3
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = _same(["report", str(empty), "--json"])
    assert nothing.returncode != 0


def test_the_real_corpus_reports_as_through_typer() -> None:
    corpus = require_shared("corpus", "transcripts")
    _same(["report", str(corpus), "--json", "--jobs", "2"])


@pytest.mark.parametrize("budget", ["1000", "20000", "100000000"])
def test_a_folder_s_check_json_is_typer_s_byte_for_byte(budget: str) -> None:
    done = _same(["check", str(SAMPLES), "--budget", budget, "--format", "json"])
    assert done.returncode in (0, 1)
    assert done.stdout.startswith(b"{\n")


def test_check_s_errors_and_jobs_are_typer_s(tmp_path: Path) -> None:
    assert _same(["check", str(tmp_path / "missing.jsonl"), "--budget", "10", "--format", "json"]).returncode == 3
    _same(["check", str(SAMPLES), "--budget", "5000", "--format", "json", "--jobs", "2"])


def test_the_real_corpus_checks_as_through_typer() -> None:
    corpus = require_shared("corpus", "transcripts")
    _same(["check", str(corpus), "--budget", "100000", "--format", "json", "--jobs", "2"])  # a broken file: exit 3


PROBE = """
import sys
from windowfit.cli.fast import main
sys.argv = ["windowfit", *sys.argv[1:]]
try:
    main()
except SystemExit as e:
    print(e.code, sorted({m.split(".")[0] for m in sys.modules} & {"typer", "click", "rich"}), file=sys.stderr)
"""


@pytest.mark.parametrize(
    "line", [["report", "{path}", "--json"], ["check", "{path}", "--budget", "100000000", "--format", "json"]]
)
def test_the_fast_path_imports_neither_typer_nor_rich(line: list[str]) -> None:
    path = str(SAMPLES / "en_coding_session.jsonl")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *(a.format(path=path) for a in line)], capture_output=True, text=True
    )
    assert done.stderr.strip() == "0 []"


RAISING = """
import sys
import typer
import windowfit.cli.report_cmd, windowfit.cli.report_run
from windowfit.cli.{module} import main

def raising(*args, **kwargs):
    raise {error}

windowfit.cli.report_run.report_json_command = windowfit.cli.report_cmd.report_json_command = raising
sys.argv = ["windowfit", "report", "a.jsonl", "--json"]
main()
"""


@pytest.mark.parametrize(
    ("error", "code"),
    [("KeyboardInterrupt()", 130), ("typer.Exit(4)", 4), ("BrokenPipeError(32, 'Broken pipe')", 1)],
)
def test_the_fast_path_ends_on_an_exception_as_typer_does(error: str, code: int) -> None:
    fast_run, typer_run = (
        subprocess.run([sys.executable, "-c", RAISING.format(module=m, error=error)], capture_output=True)
        for m in ("fast", "app")
    )
    assert fast_run.returncode == typer_run.returncode == code
    assert fast_run.stdout == typer_run.stdout
    assert fast_run.stderr == typer_run.stderr
