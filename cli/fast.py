"""The ``windowfit`` command's entry point, and its fast path: ``report PATH... --json [--jobs N]`` and
``check PATH... --budget N --format json [--jobs N]``, the forms a script's scan of a folder takes, run
without Typer (importing Typer and building its command were about a third of report's start-up, issue 15).
Any other command line, and any such line with an option, a spelling or a value the parse below is not
certain of (``-j2``, ``--jobs 0``, ``--``, a path beginning with ``-``, an option given twice, a shell's
completion variables), goes to Typer: help, usage errors and every other option keep Typer's words.

The fast path calls ``report_run.report_json_command`` (``check_run.check_json_command``), the function
``report --json`` (``check --format json``) calls, with the values Typer gives the command for the same line
(``tests/test_cli_fast.py`` holds the defaults to the commands' signatures and the output, errors and exit
codes to Typer's, byte for byte), and ends as Typer's ``main`` ends."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

REPORT_DEFAULTS: dict[str, object] = {
    "budget": None,
    "window": None,
    "estimator": "seed",
    "overhead": 1.0,
    "skip_invalid": False,
    "strict": False,
    "from_": None,
    "size": "auto",
    "preamble": None,
    "top": 10,
}
"""What Typer gives ``report``'s other options when the line leaves them out: their defaults
(``tests/test_cli_fast.py`` holds them to ``report``'s signature). ``size`` is ``SizeChoice.auto``, which
equals its value."""


def _number(value: str) -> int | None:
    """A positive integer as written plainly (``1``, ``200000``), else None: 0, a sign, a space, leading
    zeros, other digits, a huge number and an option are left to Typer's parse and words."""
    if value.isascii() and value.isdigit() and value[0] != "0" and len(value) <= 12:
        return int(value)
    return None


def _parse(args: Sequence[str], command: str, flags: dict[str, str]) -> tuple[list[str], dict[str, str]] | None:
    """The paths and the options of ``COMMAND PATH... [OPTION VALUE]...``: each option in ``flags`` (its
    spellings, ``--name value``, ``-n value`` or ``--name=value``, to its name) at most once; None for any
    other line (another option, a path beginning with ``-``, ``-`` for stdin, ``--``)."""
    if not args or args[0] != command:
        return None
    paths: list[str] = []
    found: dict[str, str] = {}
    i = 1
    while i < len(args):
        arg = args[i]
        spelling, equals, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        name = flags.get(spelling)
        if name is not None:
            if name in found:
                return None
            if not equals and name != "--json":
                i += 1
                if i == len(args):
                    return None
                value = args[i]
            elif equals and name == "--json":
                return None
            found[name] = value
        elif not arg or arg.startswith("-"):
            return None  # an option Typer reads (or "-", stdin, or "--")
        else:
            paths.append(arg)
        i += 1
    return (paths, found) if paths else None


_REPORT_FLAGS = {"--json": "--json", "--jobs": "--jobs", "-j": "--jobs"}
_CHECK_FLAGS = {"--budget": "--budget", "-b": "--budget", "--format": "--format", "--jobs": "--jobs", "-j": "--jobs"}


def parse_report_json(args: Sequence[str]) -> tuple[list[str], int | None] | None:
    """The paths and ``--jobs`` of ``report PATH... --json [--jobs N]`` (in any order); None for any other
    command line."""
    parsed = _parse(args, "report", _REPORT_FLAGS)
    if parsed is None or "--json" not in parsed[1]:
        return None
    paths, found = parsed
    jobs = _number(found["--jobs"]) if "--jobs" in found else None
    if "--jobs" in found and jobs is None:
        return None
    return paths, jobs


def parse_check_json(args: Sequence[str]) -> tuple[list[str], int, int | None] | None:
    """The paths, ``--budget`` and ``--jobs`` of ``check PATH... --budget N --format json [--jobs N]`` (in any
    order); None for any other command line."""
    parsed = _parse(args, "check", _CHECK_FLAGS)
    if parsed is None or parsed[1].get("--format") != "json" or "--budget" not in parsed[1]:
        return None
    paths, found = parsed
    budget = _number(found["--budget"])
    jobs = _number(found["--jobs"]) if "--jobs" in found else None
    if budget is None or ("--jobs" in found and jobs is None):
        return None
    return paths, budget, jobs


def check_defaults() -> dict[str, object]:
    """What Typer gives ``check``'s other options when the line leaves them out (``fit.DEFAULTS``' for the
    plan's; ``tests/test_cli_fast.py`` holds them to ``check``'s signature). ``fail_on`` and ``size`` are
    their enums' values."""
    from windowfit.fitting.fit import DEFAULTS

    return {
        "window": None,
        "fail_on": "too-long",
        "batch_size": DEFAULTS.batch_size,
        "protected_fraction": DEFAULTS.protected_fraction,
        "min_clear_ratio": DEFAULTS.min_clear_ratio,
        "batch_tokens": DEFAULTS.batch_tokens,
        "cut_step": None,
        "estimator": "seed",
        "overhead": 1.0,
        "skip_invalid": False,
        "strict": False,
        "from_": None,
        "size": "auto",
        "preamble": None,
    }


def _completing() -> bool:
    """A shell asking Typer for completions (``_WINDOWFIT_COMPLETE`` and the like)."""
    return any(name.startswith("_") and name.endswith("_COMPLETE") for name in os.environ)


def main() -> None:
    """``windowfit``: the fast path where it applies, else Typer's app."""
    args = sys.argv[1:]
    report = None if _completing() else parse_report_json(args)
    check = None if _completing() or report is not None else parse_check_json(args)
    if report is None and check is None:
        from .app import main as typer_main

        typer_main()
        return
    failed = False
    try:
        from .shared import SizeChoice

        if report is not None:
            from .report_run import report_json_command

            options = dict(REPORT_DEFAULTS, size=SizeChoice(REPORT_DEFAULTS["size"]))
            report_json_command(report[0], jobs=report[1], **options)  # type: ignore[arg-type]
        elif check is not None:
            from .check_run import check_json_command

            defaults = check_defaults()
            options = dict(defaults, size=SizeChoice(defaults["size"]))
            failed = check_json_command(check[0], budget=check[1], jobs=check[2], **options)  # type: ignore[arg-type]
    except BaseException as exc:  # as Typer's main ends on it (typer.core._main, typer.main.Typer.__call__)
        _end(exc)
    sys.exit(1 if failed else 0)  # ExitCode.FAILED, as check's typer.Exit gives it


def _end(exc: BaseException) -> None:
    """End on ``exc`` as Typer's ``main`` does: its exit code for ``typer.Exit``, 130 for an interrupt, 1 for
    a closed pipe (quietly), rich's traceback for a bug."""
    import errno

    if isinstance(exc, SystemExit):
        raise exc
    from typer import _click
    from typer.exceptions import Exit
    from typer.main import _typer_developer_exception_attr_name, except_hook
    from typer.models import DeveloperExceptionConfig

    if isinstance(exc, Exit):
        sys.exit(exc.exit_code)
    if isinstance(exc, KeyboardInterrupt):
        sys.exit(130)
    if isinstance(exc, OSError) and exc.errno == errno.EPIPE:
        sys.stdout = _click.utils.PacifyFlushWrapper(sys.stdout)
        sys.stderr = _click.utils.PacifyFlushWrapper(sys.stderr)
        sys.exit(1)
    if isinstance(exc, Exception) and not isinstance(exc, _click.exceptions.ClickException):
        from .app import app

        sys.excepthook = except_hook
        setattr(
            exc,
            _typer_developer_exception_attr_name,
            DeveloperExceptionConfig(
                pretty_exceptions_enable=app.pretty_exceptions_enable,
                pretty_exceptions_show_locals=app.pretty_exceptions_show_locals,
                pretty_exceptions_short=app.pretty_exceptions_short,
            ),
        )
    raise exc
