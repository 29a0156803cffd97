"""What every command shares: consoles, option types, error handling,
loading inputs, and JSON output."""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple, NoReturn, TypeVar, cast

from windowfit.fitting import Transcript, WindowfitError, make_estimator
from windowfit.fitting._json import encode
from windowfit.fitting.errors import (
    InputError,
    InvalidJson,
    InvalidUtf8,
    Location,
    NoTranscripts,
    OptionError,
    StoreError,
    StoreUnavailable,
)
from windowfit.fitting.estimate import Estimator
from windowfit.fitting.formats import Format, Input, SkippedFile, discover
from windowfit.fitting.formats.registry import FALLBACK_NAME
from windowfit.fitting.size import Size, predict_size

from .exit_codes import ExitCode
from .scan import Scanned, Stream, Task, Work, start_scan, workers_for

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from .terminal import SafeConsole

T = TypeVar("T")

out: SafeConsole
"""The console of results (stdout), made when first read."""
err: SafeConsole
"""The console of errors, warnings and the progress bar (stderr), made when first read."""


def __getattr__(name: str) -> Any:
    """``out`` and ``err``, made when first read: rich's console is a good part of every command's start-up,
    and a command printing JSON (``report --json``) writes to neither unless it fails."""
    if name not in ("out", "err"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .terminal import SafeConsole

    if name == "out":
        console = SafeConsole(highlight=False, soft_wrap=False)
    else:
        console = SafeConsole(stderr=True, highlight=False, soft_wrap=True)  # one error, one line, even in CI logs
    globals()[name] = console
    return console


def _err() -> SafeConsole:
    """``err`` for this module's own functions (a module's ``__getattr__`` answers only other modules)."""
    console: SafeConsole | None = globals().get("err")
    return __getattr__("err") if console is None else console


def _safe(text: str) -> str:
    """``terminal.markup_safe``, imported (with rich) only when there is something to print."""
    from .terminal import markup_safe

    return markup_safe(text)


class SizeChoice(str, Enum):
    auto = "auto"
    estimate = "estimate"


def fail(error: WindowfitError) -> NoReturn:
    """Print a domain error as one line (plus its hint) and exit."""
    _err().print(f"[bold red]error:[/] {_safe(str(error))}")
    if error.hint:
        _err().print(f"[dim]hint: {_safe(error.hint)}[/]")
    import typer  # only to fail: the fast path of report --json starts without it (cli/fast.py)

    raise typer.Exit(exit_code_of(error))


def exit_code_of(error: WindowfitError) -> ExitCode:
    """Bad input (3) for what cannot be read, output (4) for a store that cannot
    be written or reached, usage (2) for the rest."""
    if isinstance(error, StoreUnavailable):
        return ExitCode.OUTPUT
    if isinstance(error, (InputError, StoreError)):
        return ExitCode.BAD_INPUT
    return ExitCode.USAGE


def check_limits(budget: int | None, window: int | None) -> None:
    """The budget is our own ceiling under the model's window: one above it is a usage error."""
    if budget is not None and window is not None and budget > window:
        error = OptionError(f"--budget {budget:,} is larger than --window {window:,}")
        error.hint = (
            "the budget is your own ceiling under the model's hard limit: pass a --budget of at most the window"
        )
        fail(error)


def size_of(transcript: Transcript, est: Estimator, mode: SizeChoice, preamble: int | None) -> Size:
    """The predicted size of the next request after ``transcript`` (a whole session)."""
    try:
        return predict_size(transcript, est, mode=mode.value, preamble=preamble)
    except WindowfitError as exc:
        fail(exc)


def estimator_from(name: str, overhead: float) -> Estimator:
    try:
        return make_estimator(name, overhead=overhead)
    except WindowfitError as exc:
        fail(exc)


class Loaded(NamedTuple):
    """What the inputs held: the transcripts, and the files a folder scan passed over."""

    transcripts: list[Transcript]
    skipped: list[SkippedFile]


BROKEN_LINES = (InvalidJson, InvalidUtf8)
"""Errors of a file in a format windowfit reads that has broken lines (not JSON, not UTF-8): ``--skip-invalid``
decides, not the scan. A shape the loader does not know (``UnknownShape``) is a foreign file: skipped."""


PROGRESS_AFTER_SECONDS = 1.0
"""A scan still running after this long shows a progress bar (on a terminal; never in a pipe or with JSON)."""
PROGRESS_BYTES = 50_000_000
"""Inputs larger than this show the bar from the start (one big file is one step)."""


@contextmanager
def counted_progress(description: str, *, enabled: bool = True) -> Iterator[Callable[[int, int], None]]:
    """A callback ``tick(done, total)`` for long work after the loading (``replay``'s requests): a bar on
    stderr once the work runs longer than ``PROGRESS_AFTER_SECONDS``, on a terminal only (never in a pipe),
    and never unless ``enabled`` (JSON output); gone when the work ends."""
    show = enabled and _err().is_terminal
    bar = _progress_bar() if show else _NoBar()
    counter = bar.add_task(description, total=None)
    begin = time.monotonic()
    started = False

    def tick(done: int, total: int) -> None:
        nonlocal started
        bar.update(counter, completed=done, total=total)
        if show and not started and time.monotonic() - begin > PROGRESS_AFTER_SECONDS:
            bar.start()
            started = True

    try:
        yield tick
    finally:
        if started:
            bar.stop()


def load_all(
    files: list[str], *, fmt: str | None, skip_invalid: bool, strict: bool = False, keep_text: bool = True
) -> Loaded:
    """Load every transcript named, with a progress bar when it takes a while.

    A file named on the command line that cannot be read is an error. A file found in a folder that is not a
    transcript windowfit reads (unknown shape, empty, binary, another format than ``--from``) is skipped with a
    warning and listed in ``Loaded.skipped``, unless ``strict``; one in a format windowfit reads with broken
    lines follows ``skip_invalid`` as a named file does. ``keep_text=False`` (commands that never write a
    transcript) loads the model without each message's JSON text, a copy of the file."""
    scanned = scan_all(files, _keep, fmt=fmt, skip_invalid=skip_invalid, strict=strict, jobs=1, keep_text=keep_text)
    return Loaded(scanned.values, scanned.skipped)


def _keep(transcripts: tuple[Transcript, ...]) -> list[Transcript]:
    return list(transcripts)


def scan_all(
    files: list[str],
    work: Work[T],
    *,
    fmt: str | None,
    skip_invalid: bool,
    strict: bool = False,
    jobs: int | None = 1,
    progress: bool = True,
    keep_text: bool = False,
    stream_work: Stream[T] | None = None,
) -> Scanned[T]:
    """What ``work`` keeps of every transcript named, file by file: each is loaded, summarised and dropped
    before the next (memory follows the largest file, not the folder), over ``jobs`` processes (``None``: one
    per CPU for a large folder), with a progress bar on a terminal when it takes a while (unless not
    ``progress``). Skips and errors as ``load_all`` says, in the same order whatever ``jobs`` is. The work
    sees no message's JSON text unless ``keep_text`` (only a writer needs it). ``stream_work`` reads a file of a
    format it streams without loading it (memory follows one message, not the file)."""
    try:
        inputs: list[Input] = []
        scanned: set[str] = set()  # found in a directory, not named by the user
        for name in files:
            if name == "-":
                inputs.append(Input("<stdin>", read_stream(sys.stdin.buffer, "<stdin>"), keep_text))
            elif _is_stream(name):
                with open(name, "rb") as stream:
                    inputs.append(Input(name, read_stream(stream, name), keep_text))
            else:
                found = [Input(str(p), keep_text=keep_text) for p in discover([name])]
                if Path(name).is_dir():
                    scanned.update(i.path for i in found if Path(i.path) != Path(name))
                inputs.extend(found)
        for item in inputs:
            if item.data is None and not Path(item.path).exists():
                raise InputError(_loc(item.path), "no such file")
        sizes = [len(i.data) if i.data is not None else Path(i.path).stat().st_size for i in inputs]
        values: list[T] = []
        skipped: list[SkippedFile] = []
        show = progress and _err().is_terminal
        tasks = [Task(item, fmt, skip_invalid, item.path in scanned, strict, work, stream_work) for item in inputs]
        bar = _progress_bar() if show else _NoBar()
        counter = bar.add_task("loading", total=len(inputs))
        begin = time.monotonic()
        started = show and sum(sizes) > PROGRESS_BYTES  # a big file: the bar from the start

        def finished(files: int) -> None:
            nonlocal started
            bar.update(counter, completed=files)
            if show and not started and time.monotonic() - begin > PROGRESS_AFTER_SECONDS:
                bar.start()
                started = True

        # The pool is started before the bar's thread (Progress starts none until start()).
        results = start_scan(tasks, workers=workers_for(jobs, inputs), finished=finished)
        if started:
            bar.start()
        try:
            for task, done in results:
                if done.skipped is not None:
                    skipped.append(done.skipped)
                    _err().print(f"[yellow]skipped:[/] {_safe(done.warning)}")
                values.extend(done.values)
                if show:  # the name made safe only for a bar that shows it
                    bar.update(counter, description=f"loading {_safe(Path(task.item.path).name)}")
        finally:
            if started:
                bar.stop()
        if skipped:
            _err().print(
                f"[yellow]{len(skipped)} file(s) skipped[/]: not transcripts windowfit reads "
                "(--strict makes that an error)"
            )
        if not values:
            raise NoTranscripts(_loc(", ".join(files)), "no transcripts found")
        return Scanned(values, skipped)
    except WindowfitError as exc:
        fail(exc)
    except IsADirectoryError as exc:
        fail(InputError(_loc(str(exc.filename)), "is a directory"))
    except OSError as exc:
        fail(InputError(_loc(str(exc.filename)), exc.strerror or "cannot read"))


def _progress_bar() -> Progress:
    """``scan_all``'s bar on a terminal (rich.progress is imported only then)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_err(),
        transient=True,
    )


class _NoBar:
    """``scan_all``'s bar where none is shown (not a terminal, or not asked for): what a disabled ``Progress``
    does, which is nothing."""

    def add_task(self, description: str, total: float | None = None) -> TaskID:
        return cast("TaskID", 0)

    def update(
        self,
        task_id: TaskID,
        *,
        completed: float | None = None,
        total: float | None = None,
        description: str | None = None,
    ) -> None:
        pass

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


def pick(
    transcripts: Sequence[Transcript], *, source: str, index: int | None, name: str | None, other: str
) -> Transcript:
    """The one transcript ``--index`` or ``--name`` names, or the only one, or a file's own session when the
    others are named parts of it (a Claude Code session's subagents: said on stderr); otherwise a usage error
    that lists what there is, never a silent first pick. ``other`` is what else the command can do with all."""
    if index is not None and name is not None:
        fail(OptionError("pass --index or --name, not both"))
    if index is not None:
        if index >= len(transcripts):
            fail(OptionError(f"{source} holds {len(transcripts)} transcript(s); --index {index} is out of range"))
        return transcripts[index]
    if name is not None:
        found = [t for t in transcripts if name in (t.name, t.label, t.source.path, Path(t.source.path).name)]
        if len(found) == 1:
            return found[0]
        _list(transcripts)
        how = "none" if not found else f"{len(found)}"
        fail(OptionError(f"--name {name!r}: {how} of the {len(transcripts)} transcripts in {source} match"))
    if len(transcripts) == 1:
        return transcripts[0]
    unnamed = [t for t in transcripts if not t.name]
    if not Path(source).is_dir() and len(unnamed) == 1 and unnamed[0].source.path == source:
        rest = len(transcripts) - 1
        _err().print(
            f"[dim]note: {_safe(source)}: its own session; the {rest} other transcript(s) in it "
            "(subagents) are picked with --index N or --name NAME[/]"
        )
        return unnamed[0]
    _list(transcripts)
    error = OptionError(f"{source} holds {len(transcripts)} transcripts: pick one with --index N or --name NAME")
    error.hint = other
    fail(error)


LISTED = 20
"""How many transcripts a usage error lists."""


def _list(transcripts: Sequence[Transcript]) -> None:
    """The transcripts on stderr, by index: what ``--index`` and ``--name`` take."""
    for i, t in enumerate(transcripts[:LISTED]):
        _err().print(f"  {i:>3}  {_safe(t.label)}  ({len(t.messages):,} messages)")
    if len(transcripts) > LISTED:
        _err().print(f"  ... and {len(transcripts) - LISTED:,} more")


def broken_lines(error: InputError, chosen: Format | None) -> bool:
    """A file in a specific format windowfit reads, with lines it cannot read (not a foreign file)."""
    return isinstance(error, BROKEN_LINES) and chosen is not None and chosen.name != FALLBACK_NAME


def skip_reason(error: InputError) -> str:
    """An error's words without the path (a skipped file's ``reason``)."""
    line = error.location.line
    return f"line {line}: {error.message}" if line is not None else error.message


STREAM_LIMIT_BYTES = int(os.environ.get("WINDOWFIT_STREAM_LIMIT", 1 << 30))
"""The most read from stdin or a FIFO (which may never end): 1 GiB, or ``WINDOWFIT_STREAM_LIMIT`` bytes."""


def _is_stream(name: str) -> bool:
    """A FIFO or character device named as an input: read once, with a limit."""
    try:
        mode = os.stat(name).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


def read_stream(stream: BinaryIO, name: str) -> bytes:
    """Everything a stream holds, up to ``STREAM_LIMIT_BYTES``; a terminal is refused rather than waited on."""
    if stream.isatty():
        raise InputError(Location(name), "is a terminal, not a transcript", hint="pipe a transcript in, or name a file")
    chunks: list[bytes] = []
    size = 0
    while chunk := stream.read(1 << 20):
        size += len(chunk)
        if size > STREAM_LIMIT_BYTES:
            raise InputError(
                Location(name),
                f"more than {STREAM_LIMIT_BYTES:,} bytes from a stream",
                hint="save it to a file and pass the file, or raise WINDOWFIT_STREAM_LIMIT",
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _loc(path: str) -> Location:
    return Location(path)


def print_json(document: object) -> None:
    # encode: a lone surrogate a transcript held (a \ud800 escape) is written as that escape, not a crash
    sys.stdout.write(encode(document, indent=True, sort_keys=True).decode() + "\n")


class OutputRefused(Exception):
    """An output path windowfit will not write: the input, a device, a FIFO, a directory."""


def output_target(path: Path, *, inputs: Sequence[str] = ()) -> Path:
    """The regular file to write for ``path``: through a symlink to the file it names (the link stays a link),
    never over one of ``inputs`` (compared by device and inode, so links and other spellings are caught), and
    never onto a device, FIFO, socket or directory."""
    target = Path(os.path.realpath(path))
    try:
        st = target.stat()
    except FileNotFoundError:
        if not target.parent.is_dir():
            raise OutputRefused(f"cannot write {path}: no such directory {target.parent}") from None
        return target
    if stat.S_ISDIR(st.st_mode):
        raise OutputRefused(f"cannot write {path}: it is a directory")
    if not stat.S_ISREG(st.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "a device"
        raise OutputRefused(f"refusing to write {path}: it is {kind}, not a regular file")
    for name in inputs:
        if name == "-":
            continue
        try:
            if os.path.samefile(name, target):
                raise OutputRefused(f"refusing to overwrite the input {name}")
        except FileNotFoundError:
            continue
    return target


class _Interrupted(BaseException):
    """A catchable signal arrived while an output was being written."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_interrupted(signum: int, frame: object) -> None:
    raise _Interrupted(signum)


def write_atomic(path: Path, data: bytes | Iterable[bytes]) -> None:
    """Write ``data`` to ``path`` all at once or not at all: a temporary file in the same directory, then a rename.

    On Linux the temporary file is anonymous (``O_TMPFILE``) until the moment it is renamed, so even ``kill -9``
    leaves nothing behind; elsewhere (and on file systems without it) a hidden named file is removed on any
    exception and on SIGTERM or SIGHUP. The output keeps the mode a plain ``open()`` would give it.
    """
    import signal  # only here: its enums cost every command's start-up otherwise

    cleanup_signals = tuple(s for s in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None)
    umask = os.umask(0)
    os.umask(umask)
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~umask
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    previous = {s: signal.getsignal(s) for s in cleanup_signals} if _main_thread() else {}
    for s in previous:
        signal.signal(s, _raise_interrupted)
    try:
        fd = _anonymous_file(path.parent, mode)
        if fd is None:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            named = True
        else:
            named = False
        with os.fdopen(fd, "wb") as f:
            for chunk in [data] if isinstance(data, bytes) else data:  # a request written a piece at a time
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
            if not named:
                # linkat(AT_SYMLINK_FOLLOW) through /proc gives the anonymous file its temporary name;
                # a src_dir_fd makes CPython call linkat rather than link, which would not follow.
                proc = os.open("/proc/self/fd", os.O_RDONLY)
                try:
                    os.link(str(f.fileno()), tmp, src_dir_fd=proc, follow_symlinks=True)
                finally:
                    os.close(proc)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except _Interrupted as stop:
        tmp.unlink(missing_ok=True)
        raise SystemExit(128 + stop.signum) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _anonymous_file(directory: Path, mode: int) -> int | None:
    """An unnamed file in ``directory`` (Linux ``O_TMPFILE``), or None where that is not possible."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(directory, flag | os.O_WRONLY, mode)
    except OSError:
        return None
