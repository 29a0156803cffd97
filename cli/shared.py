"""What every command shares: consoles, option types, error handling,
loading inputs, and JSON output."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Annotated, NoReturn

import orjson
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from windowfit.fitting import Transcript, WindowfitError, make_estimator
from windowfit.fitting.errors import EmptyTranscript, InputError, Location, NoTranscripts, UnknownFormat
from windowfit.fitting.estimate import ESTIMATORS, Estimator
from windowfit.fitting.formats import FORMATS, Input, discover, load

from .exit_codes import ExitCode

out = Console(highlight=False, soft_wrap=False)
err = Console(stderr=True, highlight=False, soft_wrap=True)  # one error, one line, even in CI logs

Files = Annotated[
    list[str],
    typer.Argument(help="Transcript files, directories (searched recursively), or - for stdin.", show_default=False),
]
Budget = Annotated[int | None, typer.Option("--budget", "-b", min=1, help="Your token budget per request.")]
Window = Annotated[int | None, typer.Option("--window", "-w", min=1, help="The model's context window (hard limit).")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout and nothing else.")]
EstimatorName = Annotated[
    str,
    typer.Option(
        "--estimator",
        "-e",
        help=f"Token estimator: {', '.join(ESTIMATORS)}, or custom:ascii=4,cjk=1,other=2 "
        "(chars per token by class, as audit --suggest prints it).",
    ),
]
Overhead = Annotated[
    float,
    typer.Option(
        "--overhead",
        min=0.0,
        help="Multiply the structural overheads (per message, block, tool "
        "definition) by this; 0 leaves the pure text rule.",
    ),
]
SkipInvalid = Annotated[
    bool, typer.Option("--skip-invalid", help="Skip lines that are not JSON (or not messages) and count them.")
]
FromFormat = Annotated[
    str | None, typer.Option("--from", help=f"Input format, instead of detecting it: {', '.join(FORMATS)}.")
]


def fail(error: WindowfitError) -> NoReturn:
    """Print a domain error as one line (plus its hint) and exit."""
    err.print(f"[bold red]error:[/] {escape(str(error))}")
    if error.hint:
        err.print(f"[dim]hint: {escape(error.hint)}[/]")
    raise typer.Exit(ExitCode.BAD_INPUT if isinstance(error, InputError) else ExitCode.USAGE)


def estimator_from(name: str, overhead: float) -> Estimator:
    try:
        return make_estimator(name, overhead=overhead)
    except WindowfitError as exc:
        fail(exc)


def load_all(files: list[str], *, fmt: str | None, skip_invalid: bool) -> list[Transcript]:
    """Load every transcript named, with a progress bar when it takes a while."""
    try:
        inputs: list[Input] = []
        scanned: set[str] = set()  # found in a directory, not named by the user
        for name in files:
            if name == "-":
                inputs.append(Input("<stdin>", sys.stdin.buffer.read()))
            else:
                found = [Input(str(p)) for p in discover([name])]
                if Path(name).is_dir():
                    scanned.update(i.path for i in found)
                inputs.extend(found)
        for item in inputs:
            if item.data is None and not Path(item.path).exists():
                raise InputError(_loc(item.path), "no such file")
        sizes = [len(i.data) if i.data is not None else Path(i.path).stat().st_size for i in inputs]
        transcripts: list[Transcript] = []
        show = err.is_terminal and (len(inputs) > 3 or sum(sizes) > 50_000_000)
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=True,
            disable=not show,
        ) as progress:
            task = progress.add_task("loading", total=len(inputs))
            for item in inputs:
                progress.update(task, description=f"loading {escape(Path(item.path).name)}")
                try:
                    transcripts.extend(load(item, fmt=fmt, skip_invalid=skip_invalid))
                except (EmptyTranscript, UnknownFormat) as exc:
                    if item.path not in scanned:
                        raise
                    # A directory of real sessions holds empty and foreign files: say so, go on.
                    err.print(f"[yellow]skipped:[/] {escape(str(exc))}")
                progress.advance(task)
        if not transcripts:
            raise NoTranscripts(_loc(", ".join(files)), "no transcripts found")
        return transcripts
    except WindowfitError as exc:
        fail(exc)
    except IsADirectoryError as exc:
        fail(InputError(_loc(str(exc.filename)), "is a directory"))
    except OSError as exc:
        fail(InputError(_loc(str(exc.filename)), exc.strerror or "cannot read"))


def _loc(path: str) -> Location:
    return Location(path)


def print_json(document: object) -> None:
    sys.stdout.write(orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n")


def write_atomic(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same directory and a rename."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp makes the file 0600; give the output the mode a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
