"""Start-up (issue 15): ``windowfit --help`` loads no command's module, and the summaries it shows are the
commands' own; each command imports what it runs and no more; the fast path of ``report --json`` and ``check
--format json`` of a Claude Code session imports no other format, no shape, store, pool or Typer, and compiles
no value class's methods it does not use (at the end)."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

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


RUN_PROBE = """
import sys
from windowfit.cli.app import app
try:
    app(sys.argv[1:], prog_name="windowfit")
except SystemExit:
    pass
print(" ".join(sorted(sys.modules)), file=sys.stderr)
"""

ROOT = Path(__file__).parent.parent
SMALL = ROOT / "sample_transcripts" / "en_coding_session.jsonl"
"""A messages file: detection tries every specific format before the fallback claims it."""
CLAUDE_CODE = ROOT / "tests" / "data" / "claude_code" / "branch.jsonl"

NEVER_FOR_A_REPORT = (
    "windowfit.fitting.audit",
    "windowfit.fitting.columns",
    "windowfit.fitting.fit",
    # not pricing: the table of models gives a report the window of the model its file records (issue 13 item 4)
    "windowfit.fitting.replay",
    "windowfit.fitting.request",
    "windowfit.fitting.rows",
    "windowfit.fitting.store.base",
    "windowfit.fitting.store.sqlite",
    "windowfit.fitting.suggest",
    "windowfit.fitting.tokenizers",
    "windowfit.cli.fit_cmd",
    "concurrent.futures",
    "multiprocessing",
    "rich.markdown",
    "rich.progress",
    "sqlite3",
)
"""What no ``report`` of one file (in a pipe) needs: the fit, replay, store, audit and tokenizers, a pool,
rich's progress bar and typer's help rendering, and no store (a report uses one of its constants)."""


def loaded_by(*args: str) -> tuple[set[str], str]:
    """The modules a ``windowfit ARGS`` run imported, in a fresh process, and what it printed."""
    result = subprocess.run([sys.executable, "-c", RUN_PROBE, *args], capture_output=True, text=True)
    return set(result.stderr.strip().splitlines()[-1].split()), result.stdout


def test_report_of_a_claude_code_session_imports_the_fold_and_nothing_it_does_not_run() -> None:
    modules, stdout = loaded_by("report", str(CLAUDE_CODE), "--json")
    assert json.loads(stdout)["transcripts"]  # the command ran
    assert "windowfit.fitting.ccfold" in modules
    # nor importlib.resources and the zip and tempfile modules it imports (the rules file is read beside the
    # module; a messages file's detection tries inspect_ai, which reads zips)
    assert not modules & {*NEVER_FOR_A_REPORT, "hashlib", "windowfit.cli.render", "importlib.resources", "zipfile"}
    assert not {m for m in modules if m.startswith("rich")}  # no console made: nothing printed but the JSON
    formats = sorted(m.rpartition(".")[2] for m in modules if m.startswith("windowfit.fitting.formats."))
    # claude_code, which detection asks first by its keys, and the registry's plumbing: no other format, not
    # even messages (the fold reads the session's lines itself)
    assert formats == ["_jsonl", "base", "claude_code", "registry"]


def test_report_json_of_a_messages_file_renders_no_table() -> None:
    modules, stdout = loaded_by("report", str(SMALL), "--json")
    assert json.loads(stdout)["transcripts"]
    assert "windowfit.fitting.formats.messages" in modules
    assert not modules & {*NEVER_FOR_A_REPORT, "hashlib", "windowfit.cli.render"}
    assert not {m for m in modules if m.startswith("rich")}


def test_a_failing_report_json_still_prints_its_error_through_the_console(tmp_path: Path) -> None:
    """The consoles are made when first used: an error is still printed, one line, as before."""
    missing = tmp_path / "missing.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "windowfit", "report", str(missing), "--json"], capture_output=True, text=True
    )
    assert result.returncode == 3
    assert result.stdout == ""
    assert result.stderr == f"error: {missing}: no such file\n"


def test_a_text_report_renders_with_rich_but_starts_no_bar_in_a_pipe() -> None:
    modules, stdout = loaded_by("report", str(SMALL))
    assert "tokens" in stdout
    assert {"windowfit.cli.render", "rich.table"} <= modules
    assert not modules & set(NEVER_FOR_A_REPORT)


def test_check_imports_no_replay_audit_tokenizers_pool_or_store_file() -> None:
    modules, stdout = loaded_by("check", str(SMALL), "--budget", "100000", "--format", "json")
    assert json.loads(stdout)
    assert "windowfit.fitting.fit" in modules
    assert "windowfit.fitting.pricing" in modules  # the table of models: the window of the recorded model
    never = {
        "windowfit.fitting.audit",
        "windowfit.fitting.replay",
        "windowfit.fitting.rows",
        "windowfit.fitting.store.sqlite",
        "windowfit.fitting.suggest",
        "windowfit.fitting.tokenizers",
        "concurrent.futures",
        "multiprocessing",
        "rich.markdown",
        "rich.progress",
        "sqlite3",
    }
    assert not modules & never


def test_fit_of_a_claude_code_session_planned_from_its_fold_writes_and_streams_nothing() -> None:
    """``fit`` without -o of a session the fold plans imports neither the request writer (fitting.request) nor
    a streamed file's fit (fitting.columns_fit): cli/fit_cmd.py imports them where they run (issue 15)."""
    modules, stdout = loaded_by("fit", str(CLAUDE_CODE.with_name("parallel.jsonl")), "--budget", "100")
    assert "too-long" in stdout  # the command ran: the session is too long for 100
    assert "windowfit.fitting.ccplan" in modules  # planned from the fold
    assert not modules & {"windowfit.fitting.request", "windowfit.fitting.columns_fit"}


# --------------------------------------------------------------------------
# The fast path (cli/fast.py, the ``windowfit`` entry point) of a Claude Code session: issue 15 halved its start-up
# above ``python -c pass`` (benchmarks/README.md, "Start-up of report and check"); these keep what it no longer
# does from coming back unnoticed.

FAST_PROBE = """
import sys
sys.argv = ["windowfit", *sys.argv[1:]]
from windowfit.cli.fast import main
try:
    main()
except SystemExit:
    pass
from windowfit.fitting import estimate
from windowfit.fitting._frozen import _OnFirstUse, _setstate
made = sorted(
    c.__qualname__
    for m in list(sys.modules.values())
    if getattr(m, "__name__", "").startswith("windowfit.")
    for c in vars(m).values()
    if isinstance(c, type) and c.__module__ == m.__name__ and c.__dict__.get("__setstate__") is _setstate
    and not isinstance(c.__dict__["__init__"], _OnFirstUse)
)
import dataclasses
compiled_at_import = sorted(  # dataclasses whose methods dataclasses compiled when their module was imported
    c.__qualname__
    for m in list(sys.modules.values())
    if getattr(m, "__name__", "").startswith("windowfit.")
    for c in vars(m).values()
    if isinstance(c, type) and c.__module__ == m.__name__ and dataclasses.is_dataclass(c)
    and c.__dict__.get("__setstate__") is not _setstate
)
print(" ".join(sorted(sys.modules)), file=sys.stderr)
print(" ".join(made), file=sys.stderr)
print(" ".join(compiled_at_import), file=sys.stderr)
print(estimate._SEED_COUNTER is None, estimate._cjk_run.cache_info().currsize, file=sys.stderr)
"""

ONE_PASS = ROOT / "tests" / "data" / "claude_code" / "parallel.jsonl"
"""A session the fold reads in one pass (parallel calls, no branch): what most sessions are."""

NEVER_ON_THE_FAST_PATH = frozenset(
    {
        # formats detection no longer tries before claude_code (it asks claude_code first by its keys)
        "windowfit.fitting.formats.codex",
        "windowfit.fitting.formats.responses",
        "windowfit.fitting.formats._document",
        "windowfit.fitting.formats._sniff",
        "windowfit.fitting.formats.messages",
        "windowfit.fitting.wire.responses",
        "windowfit.fitting.wire.openai",
        # the documents' TypedDicts (serialize reads them for the type checker only)
        "windowfit.fitting.json_shapes",
        # what a plan needs only with --add-notice or a store, and a messages file's columns
        "windowfit.fitting.notice",
        "windowfit.fitting.store",
        "windowfit.fitting.store.base",
        "windowfit.fitting.store.content",
        "windowfit.fitting.columns",
        # a pool's (one file is scanned in this process) and write_atomic's
        "signal",
        "threading",
        "concurrent.futures",
        "multiprocessing",
        # Typer, its click and rich: the fast path prints JSON only
        "typer",
        "rich",
    }
)
"""What neither ``report --json`` nor ``check --format json`` of a Claude Code session imports."""


MUTABLE_DATACLASSES = {"Estimator", "_Counted", "_Sizer", "_Stubbing", "_FoldStubbing", "_Reference"}
"""The dataclasses of the fast path that are not ``@frozen`` values (whose methods are compiled on first use):
the estimator and check's working state, mutable, and ``_frozen``'s own reference."""


class FastRun(NamedTuple):
    modules: set[str]
    """The modules imported."""
    made: set[str]
    """The ``@frozen`` classes whose ``__init__`` was compiled (on first use)."""
    compiled_at_import: set[str]
    """The other dataclasses imported: their methods were compiled when their module was."""
    seed: str
    """Whether the seed counter's table is still unbuilt, and how many CJK classes were compiled."""
    stdout: str


def fast_run(*args: str) -> FastRun:
    """What a ``windowfit ARGS`` run through the entry point did, in a fresh process."""
    result = subprocess.run([sys.executable, "-c", FAST_PROBE, *args], capture_output=True, text=True)
    modules, made, at_import, seed = result.stderr.strip().splitlines()[-4:]
    return FastRun(set(modules.split()), set(made.split()), set(at_import.split()), seed, result.stdout)


@pytest.mark.parametrize("session", [ONE_PASS, CLAUDE_CODE], ids=["one pass", "tree"])
def test_report_json_of_a_session_imports_no_other_format_shape_store_pool_or_typer(session: Path) -> None:
    run = fast_run("report", str(session), "--json")
    assert json.loads(run.stdout)["transcripts"]  # the command ran
    assert not run.modules & NEVER_ON_THE_FAST_PATH
    assert not {m for m in run.modules if m.startswith(("rich.", "typer.", "windowfit.fitting.store."))}
    assert run.compiled_at_import <= MUTABLE_DATACLASSES, "a value class of the fast path: make it @frozen"


@pytest.mark.parametrize("session", [ONE_PASS, CLAUDE_CODE], ids=["one pass", "tree"])
def test_check_json_of_a_session_imports_no_other_format_shape_store_pool_or_typer(session: Path) -> None:
    run = fast_run("check", str(session), "--budget", "100000", "--format", "json")
    assert json.loads(run.stdout)["transcripts"]
    assert "windowfit.fitting.ccplan" in run.modules  # planned from the fold
    assert not run.modules & NEVER_ON_THE_FAST_PATH
    assert not {m for m in run.modules if m.startswith(("rich.", "typer.", "windowfit.fitting.store."))}
    assert run.compiled_at_import <= MUTABLE_DATACLASSES, "a value class of the fast path: make it @frozen"


def test_the_one_pass_fold_imports_neither_the_loader_s_checks_nor_makes_a_message_or_a_block() -> None:
    """The providers' rules and the repairs (validate, repair) are the loaded transcript's and the tree fold's;
    the one pass builds no ``Message`` and no block, so their ``__init__`` is never compiled (an instance made at
    import would compile it: ``report._plain``), nor the seed counter's table or the CJK class for ASCII text."""
    run = fast_run("report", str(ONE_PASS), "--json")
    assert not run.modules & {"windowfit.fitting.validate", "windowfit.fitting.repair"}
    assert not run.made & {"Message", "Text", "Thinking", "ToolCall", "ToolResult", "Image", "Other", "Verbatim"}
    assert not run.made & {"ToolDef", "Usage", "Skipped", "Defect", "Turn", "Round", "Single", "MessageEstimate"}
    assert {"Report", "Size", "Transcript"} <= run.made  # what the fold does make
    assert run.seed == "True 0"
