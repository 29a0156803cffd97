"""Shared fixtures: golden files, a deterministic terminal for the CLI, and the
skip rule for tests that read ``../shared/`` (the spec, seeds and corpus)."""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from rich.console import Console
from typer.testing import CliRunner, Result

# CI machines are small and shared: no per-example deadlines and no "too slow"
# health check by default (tests that care set their own settings on top).
settings.register_profile("windowfit", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("windowfit")


TESTS = Path(__file__).parent
ROOT = TESTS.parent
GOLDEN = TESTS / "golden"
DATA = TESTS / "data"
SHARED = Path(__file__).parents[2] / "shared"
"""``../shared`` seen from the repository root: present for developers and CI, absent in an sdist."""

TERMINAL_ENV = {"COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"}
# Variables that would override the ones above (rich reads them) or make output depend on the host.
HOST_ENV = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "CLICOLOR_FORCE", "LINES", "JUPYTER_COLUMNS")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="Rewrite tests/golden/* from the current output instead of comparing with it.",
    )


_NOT_SLOW = pytest.StashKey[dict[str, int]]()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Before ``-m`` deselects anything, count each test module's tests that are
    not marked ``slow``: the fast lane (``pytest -m "not slow"``) must run some
    of every module (``tests/test_fast_lane.py``)."""
    counts = config.stash.setdefault(_NOT_SLOW, {})
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        counts[module] = counts.get(module, 0) + (item.get_closest_marker("slow") is None)


@pytest.fixture
def not_slow_per_module(request: pytest.FixtureRequest) -> dict[str, int]:
    """Test module (``tests/test_fit.py``) -> how many of its collected tests are not marked ``slow``."""
    return request.config.stash.get(_NOT_SLOW, {})


def require_shared(*parts: str) -> Path:
    """The path ``../shared/<parts>``, or skip the calling test when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (tests that read ../shared/ need the project checkout)")
    return path


@pytest.fixture
def shared_dir() -> Path:
    """``../shared`` (spec, seeds, corpus); skips the test when it is absent."""
    return require_shared()


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Callable[[str, str], None]:
    """``golden("name.txt", actual)`` compares ``actual`` with ``tests/golden/name.txt``,
    or rewrites that file when pytest runs with ``--update-golden``."""
    update = bool(request.config.getoption("--update-golden"))

    def check(name: str, actual: str) -> None:
        path = GOLDEN / name
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(actual, encoding="utf-8", newline="\n")
            return
        if not path.exists():
            pytest.fail(f"{path} is missing: run pytest with --update-golden to create it")
        expected = path.read_text(encoding="utf-8")
        if actual != expected:
            diff = "".join(
                difflib.unified_diff(
                    expected.splitlines(keepends=True),
                    actual.splitlines(keepends=True),
                    fromfile=f"golden/{name}",
                    tofile="actual",
                )
            )
            pytest.fail(f"output differs from golden/{name} (refresh with --update-golden if intended):\n{diff}")

    return check


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A fixed terminal: 100 columns, ``TERM=dumb``, ``NO_COLOR=1``, no host overrides.

    rich reads ``COLUMNS`` and ``NO_COLOR`` (and picks its colour system) when a
    ``Console`` is *constructed*, and the CLI's consoles are module globals built
    at import time, so setting the environment afterwards is not enough. This
    fixture therefore also swaps every ``Console`` held by a loaded ``cli``
    module for a twin built under the fixed environment (same stream, same
    settings), which writes lazily to whatever ``sys.stdout``/``sys.stderr`` is
    current, i.e. ``CliRunner``'s capture.
    """
    for name in HOST_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in TERMINAL_ENV.items():
        monkeypatch.setenv(name, value)
    import windowfit.cli.app
    import windowfit.cli.shared

    windowfit.cli.app.load_commands()  # every cli module that holds a console (commands load lazily)
    windowfit.cli.shared.out, windowfit.cli.shared.err  # noqa: B018  # made on first use: made now, to be swapped

    twins: dict[int, Console] = {}
    for module_name, module in list(sys.modules.items()):
        if module is None or not (module_name == "windowfit.cli" or module_name.startswith("windowfit.cli.")):
            continue
        for attr, value in list(vars(module).items()):
            if isinstance(value, Console):
                twin = twins.setdefault(
                    id(value), type(value)(stderr=value.stderr, soft_wrap=value.soft_wrap, highlight=False)
                )
                monkeypatch.setattr(module, attr, twin)
    yield


@pytest.fixture
def run_cli(terminal: None) -> Callable[..., Result]:
    """Invoke ``windowfit`` in-process: ``run_cli("report", path, input=b"...")``.

    stdout and stderr are kept apart (``result.stdout``, ``result.stderr``);
    exceptions other than exits propagate, so a crash fails the test loudly.
    """
    from windowfit.cli.app import app

    runner = CliRunner()

    def invoke(*args: str, input: bytes | str | None = None) -> Result:
        return runner.invoke(app, list(args), input=input, catch_exceptions=False)

    return invoke


EVERY_POLICY = [
    "windowfit",
    "windowfit-cache",
    "windowfit-batch-1",
    "legacy",
    "keep-last",
    "anthropic-clear-tool-uses",
    "gemini-cli-masking",
    "claude-code-idle-clear",
    "openhands-observation-masking",
    "langchain-trim-last",
    "send-everything",
]
"""Every default policy, in the order ``standard_policies`` gives them and replay shows them."""
