"""The ``windowfit`` command's entry point, and its fast path: ``report PATH... --json [--jobs N]``, the form a
folder's scan by a script takes, run without Typer (importing Typer and building its command cost about a
third of the command's start-up, issue 15). Any other command line, and any such line with an option, a
spelling or a value the parse below does not know for certain (``-j2``, ``--jobs=0``, ``--``, a path
beginning with ``-``, a flag given twice, a shell completion's variables), goes to Typer: help, usage errors
and every other option keep Typer's words. The fast path calls ``report_run.report_json_command`` with the
values Typer gives ``report`` for the same line (``tests/test_cli_fast.py`` checks the defaults against
``report``'s signature and the output against Typer's, byte for byte), and ends as Typer's ``main`` ends."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

_JOBS = ("--jobs", "-j")

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


def parse_report_json(args: Sequence[str]) -> tuple[list[str], int | None] | None:
    """The paths and ``--jobs`` of ``report PATH... --json [--jobs N]`` (in any order); None for any other
    command line."""
    if len(args) < 3 or args[0] != "report":
        return None
    paths: list[str] = []
    jobs: int | None = None
    json_ = False
    i = 1
    while i < len(args):
        arg = args[i]
        if arg == "--json":
            if json_:
                return None
            json_ = True
        elif arg in _JOBS or arg.startswith("--jobs="):
            if jobs is not None:
                return None
            if arg.startswith("--jobs="):
                value = arg[len("--jobs=") :]
            else:
                i += 1
                if i == len(args):
                    return None
                value = args[i]
            if not (value.isascii() and value.isdigit() and value[0] != "0" and len(value) <= 6):
                return None  # 0, a sign, a space, other digits or a huge number: Typer's parse and words
            jobs = int(value)
        elif not arg or arg.startswith("-"):
            return None  # an option Typer reads (or "-", stdin, or "--")
        else:
            paths.append(arg)
        i += 1
    if not json_ or not paths:
        return None
    return paths, jobs


def _completing() -> bool:
    """A shell asking Typer for completions (``_WINDOWFIT_COMPLETE`` and the like)."""
    return any(name.startswith("_") and name.endswith("_COMPLETE") for name in os.environ)


def main() -> None:
    """``windowfit``: the fast path where it applies, else Typer's app."""
    parsed = None if _completing() else parse_report_json(sys.argv[1:])
    if parsed is None:
        from .app import main as typer_main

        typer_main()
        return
    paths, jobs = parsed
    try:
        from .report_run import report_json_command
        from .shared import SizeChoice

        options = dict(REPORT_DEFAULTS, size=SizeChoice(REPORT_DEFAULTS["size"]))
        report_json_command(paths, jobs=jobs, **options)  # type: ignore[arg-type]
    except BaseException as exc:  # as Typer's main ends on it (typer.core._main, typer.main.Typer.__call__)
        _end(exc)
    sys.exit(0)


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
