"""Start-up (issue 15, item 1): ``windowfit --help`` loads no command's module, and the summaries it shows
are the commands' own."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from windowfit.cli.app import COMMANDS


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_each_summary_is_the_first_paragraph_of_its_command_docstring(command: object) -> None:
    from windowfit.cli.lazy import LazyCommand

    assert isinstance(command, LazyCommand)
    doc = inspect.getdoc(command.load()) or ""
    assert command.summary == doc.split("\n\n")[0]


PROBE = """
import sys
from windowfit.cli.app import app
try:
    app(["--help"], prog_name="windowfit")
except SystemExit:
    pass
heavy = sorted(m for m in sys.modules if m.startswith(("windowfit.fitting", "windowfit.cli.")) and m not in
               ("windowfit.cli.app", "windowfit.cli.lazy"))
print("loaded:", heavy, "metadata" if "importlib.metadata" in sys.modules else "", file=sys.stderr)
"""


def test_top_level_help_loads_no_command_module() -> None:
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    assert "report" in result.stdout
    assert "loaded: [] \n" in result.stderr


def test_a_command_still_runs_after_help_listed_it_as_a_summary() -> None:
    from typer.testing import CliRunner

    from windowfit.cli.app import app

    runner = CliRunner()
    assert "report" in runner.invoke(app, ["--help"]).stdout
    result = runner.invoke(app, ["report", "--help"])
    assert result.exit_code == 0
    assert "--jobs" in result.stdout


LIBRARY_PROBE = """
import sys
import windowfit.fitting
print(sorted(m for m in ("windowfit.fitting.audit", "windowfit.fitting.suggest", "windowfit.fitting.tokenizers")
             if m in sys.modules))
"""


def test_importing_the_library_leaves_audit_suggest_and_tokenizers_unloaded() -> None:
    result = subprocess.run([sys.executable, "-c", LIBRARY_PROBE], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("TranscriptAudit", "audit"),
        ("audit_transcript", "audit"),
        ("suggest_rule", "suggest"),
        ("load_tokenizer", "tokenizers"),
    ],
)
def test_a_lazy_name_is_its_module_s_own(name: str, module: str) -> None:
    import importlib

    from windowfit import fitting

    assert getattr(fitting, name) is getattr(importlib.import_module(f"windowfit.fitting.{module}"), name)
    assert name in fitting.__all__


def test_an_unknown_name_is_an_attribute_error() -> None:
    from windowfit import fitting

    with pytest.raises(AttributeError):
        fitting.no_such_name  # noqa: B018


COMMAND_PROBE = """
import sys
from windowfit.cli.app import app
try:
    app(["report", sys.argv[1], "--json"], prog_name="windowfit")
except SystemExit:
    pass
print("pydantic" in sys.modules, file=sys.stderr)
"""


def test_running_a_command_imports_no_pydantic() -> None:
    """typer 0.29 parses every option through a pydantic TypeAdapter, importing pydantic on each run (about
    100 ms of CPU, more than the rest of start-up); pyproject.toml keeps typer below it."""
    sample = Path(__file__).parent.parent / "sample_transcripts" / "en_coding_session.jsonl"
    result = subprocess.run([sys.executable, "-c", COMMAND_PROBE, str(sample)], capture_output=True, text=True)
    assert json.loads(result.stdout)  # the command ran
    assert result.stderr.strip().splitlines()[-1] == "False"
