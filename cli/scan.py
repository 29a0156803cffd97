"""Folder scans: each file loaded, summarised and dropped in turn, over a pool of processes when ``--jobs``
asks for one, with the results, warnings and errors in the order one process gives them."""

from __future__ import annotations

import gc
import os
import struct
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from windowfit.fitting import Transcript
from windowfit.fitting.errors import InputError
from windowfit.fitting.formats import Format, Input, SkippedFile, detect, get_format, load

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor
    from multiprocessing.context import BaseContext

T = TypeVar("T")

Work = Callable[[tuple[Transcript, ...]], list[T]]
"""What a command keeps of one file's transcripts: a small value per transcript, never the transcripts. In a
pool it must be picklable (a module-level function, or a ``functools.partial`` of one)."""

Stream = Callable[[Input, Format, bool], list[T] | None]
"""The same values as a ``Work`` read straight from the input, one message at a time, for a file whose format
it streams (``Input``, its format and ``skip_invalid``); None to have the file loaded and given to the work
(another format, or an input it cannot read: the loader then raises its own error). Picklable like a work."""

POOL_MIN_BYTES = int(os.environ.get("WINDOWFIT_POOL_BYTES", 32_000_000))
"""Without ``--jobs``, a folder smaller than this is scanned in one process: starting workers costs more."""


def cpu_count() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def workers_for(jobs: int | None, inputs: Sequence[Input]) -> int:
    """How many processes scan ``inputs``: ``--jobs`` as given, else one per CPU for a large folder."""
    if len(inputs) < 2:
        return 1
    if jobs is not None:
        return min(jobs, len(inputs))
    if sum(_size(i) for i in inputs) < POOL_MIN_BYTES:
        return 1
    return min(cpu_count(), len(inputs))


def _size(item: Input) -> int:
    if item.data is not None:
        return len(item.data)
    try:
        return Path(item.path).stat().st_size
    except OSError:
        return 0


# Task, Done and Scanned are plain classes, not dataclasses: building a dataclass's methods costs about half a
# millisecond of every start-up each (issue 15), and nothing compares or prints these.


class Task(Generic[T]):
    """One file to scan and what to keep of it: ``scanned`` when found in a folder (a foreign file is skipped),
    not named by the user (it is an error)."""

    __slots__ = ("fmt", "item", "scanned", "skip_invalid", "stream", "strict", "work")

    def __init__(
        self,
        item: Input,
        fmt: str | None,
        skip_invalid: bool,
        scanned: bool,
        strict: bool,
        work: Work[T],
        stream: Stream[T] | None = None,
    ) -> None:
        self.item = item
        self.fmt = fmt
        self.skip_invalid = skip_invalid
        self.scanned = scanned
        self.strict = strict
        self.work = work
        self.stream = stream


class Done(Generic[T]):
    """A file's result: what the work kept, or why the file was skipped (``warning``: the skip's words without
    markup, ``path: reason``); ``redo`` when it raised (errors do not cross processes: the parent runs the file
    again to raise the same error, with the same words)."""

    __slots__ = ("redo", "skipped", "values", "warning")

    def __init__(
        self,
        values: tuple[T, ...] = (),
        skipped: SkippedFile | None = None,
        warning: str = "",
        redo: bool = False,
    ) -> None:
        self.values = values
        self.skipped = skipped
        self.warning = warning
        self.redo = redo


def scan_one(task: Task[T]) -> Done[T]:
    """Load one file and keep what ``task.work`` makes of it; a foreign file in a folder is skipped, not an error.

    The cyclic collector is off meanwhile: a file's objects are freed by their reference counts when it is
    dropped, and the collector's passes over them cost 12–15% of the CPU time (measured in docs/performance.md)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _scan_one(task)
    finally:
        if collecting:
            gc.enable()


def _scan_one(task: Task[T]) -> Done[T]:
    from .shared import broken_lines, skip_reason  # cli.shared imports this module's option

    item = task.item
    chosen: Format | None = None
    try:
        chosen = get_format(task.fmt) if task.fmt else detect(item)
        streamed = task.stream(item, chosen, task.skip_invalid) if task.stream and not task.fmt else None
        if streamed is not None:
            return Done(values=tuple(streamed))
        transcripts = load(item, fmt=task.fmt, skip_invalid=task.skip_invalid)
    except InputError as exc:
        if task.strict or not task.scanned or (broken_lines(exc, chosen) and not task.skip_invalid):
            raise
        # A directory of real sessions holds empty and foreign files: say so, go on. With --skip-invalid a
        # file of a known format that still cannot be read is skipped the same way.
        return Done(skipped=SkippedFile(item.path, skip_reason(exc)), warning=str(exc))
    except OSError as exc:
        if task.strict or not task.scanned:
            raise
        reason = exc.strerror or ""
        return Done(skipped=SkippedFile(item.path, reason or "cannot read"), warning=f"{item.path}: {reason}")
    return Done(values=tuple(task.work(transcripts)))


def _scan_in_worker(tasks: Sequence[Task[T]]) -> list[Done[T]]:
    done: list[Done[T]] = []
    for task in tasks:
        try:
            done.append(scan_one(task))
        except BaseException:  # typer.Exit from a command's own check included: the parent raises it again
            done.append(Done(redo=True))
            break  # the parent stops at this file
    return done


CHUNK_SHARE = 4
"""Each run of files sent to a worker holds about ``1 / (CHUNK_SHARE × workers)`` of the bytes still unsent
(guided scheduling): the first runs are long, so a folder of small files is not one round trip per file, and
the last are single small files, so no worker is left with a long run while the others have stopped."""


def chunk_plan(sizes: Sequence[int], workers: int) -> list[list[int]]:
    """The runs of task indices the workers are sent, largest files first (a big file last would keep one
    worker busy alone at the end), each run as long as ``CHUNK_SHARE`` says."""
    order = sorted(range(len(sizes)), key=lambda i: (-sizes[i], i))
    remaining = sum(sizes)
    chunks: list[list[int]] = []
    current: list[int] = []
    target = 0.0
    taken = 0
    for i in order:
        if not current:
            target, taken = remaining / (CHUNK_SHARE * workers), 0
        current.append(i)
        taken += sizes[i]
        if taken >= target:
            chunks.append(current)
            remaining -= taken
            current = []
    if current:
        chunks.append(current)
    return chunks


class Scanned(Generic[T]):
    """What a scan kept: a value per transcript in input order, and the files passed over."""

    __slots__ = ("skipped", "values")

    def __init__(self, values: list[T], skipped: list[SkippedFile]) -> None:
        self.values = values
        self.skipped = skipped


def start_scan(
    tasks: Sequence[Task[T]], *, workers: int, finished: Callable[[int], None] | None = None
) -> Iterator[tuple[Task[T], Done[T]]]:
    """Each task with its result, in order: in this process, or over ``workers`` processes, this one among
    them: ``workers - 1`` are forked (``_forked``) where that is safe (Linux, one thread), else spawned in a
    pool (``_collect``), and this process takes the next run of files no worker has started whenever it waits
    for a result. The workers are started before this returns, so call it before any thread (a progress
    bar's) starts; the tasks and results are picklable (a spawned worker gets them as pickles). The
    runs go out largest files first (``chunk_plan``); the results still come out in the tasks' order, and
    ``finished`` is told how many files are done as they finish (a progress bar's count: the files that come
    out next may have waited for a late run)."""
    if workers <= 1:
        return _in_process(tasks, finished)
    chunks = chunk_plan([_size(t.item) for t in tasks], workers)
    if _can_fork() and len(chunks) <= MAX_FORKED_RUNS:
        return _forked(tasks, chunks, workers - 1, finished)
    from concurrent.futures import ProcessPoolExecutor  # a spawned pool's only

    context = _context()
    pool = ProcessPoolExecutor(max_workers=workers - 1, mp_context=context)
    # Forked workers share the parent's objects: frozen, their collector never walks (or copies) them.
    gc.freeze()
    try:
        futures = [pool.submit(_scan_in_worker, [tasks[i] for i in chunk]) for chunk in chunks]
    except BaseException:
        pool.shutdown(cancel_futures=True)
        raise
    finally:
        gc.unfreeze()
    return _collect(pool, tasks, chunks, futures, finished)


def _in_process(tasks: Sequence[Task[T]], finished: Callable[[int], None] | None) -> Iterator[tuple[Task[T], Done[T]]]:
    for i, task in enumerate(tasks):
        done = scan_one(task)
        if finished is not None:
            finished(i + 1)
        yield task, done


def _collect(
    pool: ProcessPoolExecutor,
    tasks: Sequence[Task[T]],
    chunks: list[list[int]],
    futures: list[Future[list[Done[T]]]],
    finished: Callable[[int], None] | None,
) -> Iterator[tuple[Task[T], Done[T]]]:
    """The results in the tasks' order. While the run holding the next result is not done, this process
    scans the first run no worker has started (its future cancelled, so no worker will), in the plan's order:
    the workers and this process both go from the largest runs to the smallest, and meet at the small ones."""
    from concurrent.futures import FIRST_COMPLETED, wait

    where = {i: (c, k) for c, chunk in enumerate(chunks) for k, i in enumerate(chunk)}
    left = [len(chunk) for chunk in chunks]
    results: dict[int, list[Done[T]]] = {}
    running = set(futures)
    sizes = {future: len(chunk) for future, chunk in zip(futures, chunks, strict=True)}
    files_done = 0
    unclaimed = 0  # futures before this one are running, done or taken here

    def take_one() -> bool:
        """Scan the first run no worker has started, here; False when there is none left."""
        nonlocal unclaimed, files_done
        while unclaimed < len(futures):
            c = unclaimed
            unclaimed += 1
            if futures[c].cancel():
                running.discard(futures[c])
                results[c] = _scan_here([tasks[i] for i in chunks[c]])
                files_done += len(chunks[c])
                if finished is not None:
                    finished(files_done)
                return True
        return False

    try:
        for i, task in enumerate(tasks):
            c, k = where[i]
            while c not in results and futures[c] in running:  # count the runs that finish meanwhile
                if take_one():
                    continue
                ended, _ = wait(running, return_when=FIRST_COMPLETED)
                running -= ended
                files_done += sum(sizes[f] for f in ended)
                if finished is not None:
                    finished(files_done)
            if c not in results:
                results[c] = futures[c].result()
            yield task, _hand_out(results, left, c, k, task)
    finally:
        pool.shutdown(cancel_futures=True)


def _hand_out(results: dict[int, list[Done[T]]], left: list[int], c: int, k: int, task: Task[T]) -> Done[T]:
    """The result of ``task``, the ``k``-th file of run ``c``, from the run's results (dropped once each of its
    files is given out: no result is held longer than needed); a file that raised, or came after one that
    did, is scanned again here, and raises as one process would have."""
    got = results[c]
    done = got[k] if k < len(got) else Done(redo=True)
    left[c] -= 1
    if not left[c]:
        del results[c]
    if done.redo:
        done = scan_one(task)
    return done


def _scan_here(tasks: Sequence[Task[T]]) -> list[Done[T]]:
    """``_scan_in_worker`` in the parent: a file that raises is scanned again when its turn comes, so that its
    error follows the output of every file before it; an interrupt (Ctrl-C) is not caught."""
    done: list[Done[T]] = []
    for task in tasks:
        try:
            done.append(scan_one(task))
        except Exception:  # typer.Exit included
            done.append(Done(redo=True))
            break
    return done


MAX_FORKED_RUNS = 16_000
"""The most runs ``_forked`` hands out: their numbers are written at once into a pipe (64 KiB, 4 bytes each)
before any process reads one. A plan of more (a folder of tens of thousands of small files) goes to the pool."""
_RUN = struct.Struct("<I")
_FRAME = struct.Struct("<IQ")
"""A worker's message: the run's number and the length of the pickle of its results that follows (0: the
worker has taken the run, so that the parent knows which runs a worker that dies leaves undone)."""


def _can_fork() -> bool:
    """Forking is safe: Linux, and no thread in this process (a thread holding a lock would leave the child
    stuck on it)."""
    import threading  # this module's pool's only, as signal is: a scan in one process imports neither

    return hasattr(os, "fork") and sys.platform == "linux" and threading.active_count() == 1


def _forked(
    tasks: Sequence[Task[T]], chunks: list[list[int]], workers: int, finished: Callable[[int], None] | None
) -> Iterator[tuple[Task[T], Done[T]]]:
    """``_collect``'s results from ``workers`` forked processes and this one, without a pool: no
    ``concurrent.futures`` or ``multiprocessing`` to import (about as long as the folder's walk), no threads
    beside this process's own scanning. The runs' numbers wait in a pipe that every process reads four bytes
    at a time, so each run is taken once, in the plan's order (largest first), by whichever process is free:
    this one takes the next whenever the result it needs next is not there yet. Each worker sends its
    results back through a pipe of its own; a worker that dies leaves its runs to this process."""
    import pickle
    import select
    import signal

    runs_read, runs_write = os.pipe()
    os.write(runs_write, b"".join(_RUN.pack(c) for c in range(len(chunks))))
    os.close(runs_write)  # every number written: a read past the last one is the end
    children: dict[int, int] = {}  # result pipe -> pid
    gc.freeze()  # the children share the parent's objects: frozen, their collector never walks (or copies) them
    try:
        for _ in range(workers):
            read_end, write_end = os.pipe()
            _widen(write_end)
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child (coverage does not follow a fork)
                os.close(read_end)
                signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends a worker at once, silently
                code = 1
                try:
                    _work_forked(tasks, chunks, runs_read, write_end, pickle.dumps)
                    code = 0
                finally:
                    os._exit(code)
            os.close(write_end)
            children[read_end] = pid
    except BaseException:  # a fork refused (no memory, too many processes): no worker is left running
        os.close(runs_read)
        for fd, pid in children.items():
            os.close(fd)
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            os.waitpid(pid, 0)
        raise
    finally:
        gc.unfreeze()
    return _collect_forked(tasks, chunks, runs_read, children, finished, pickle.loads, select.select)


PIPE_BYTES = 1 << 20
"""A result pipe's buffer (Linux's most for a process without privileges): a worker that finishes a run while
the parent is busy with one of its own writes up to this much without waiting for the parent to read it."""


def _widen(fd: int) -> None:
    import fcntl

    with suppress(OSError, AttributeError):  # not Linux, or a lower limit: the default 64 KiB
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)


def _work_forked(
    tasks: Sequence[Task[T]],
    chunks: list[list[int]],
    runs: int,
    out: int,
    dumps: Callable[..., bytes],
) -> None:  # pragma: no cover - runs in a forked child
    """A forked worker: take run after run from the pipe of runs, and send each one's results."""
    while len(taken := os.read(runs, _RUN.size)) == _RUN.size:
        (c,) = _RUN.unpack(taken)
        _write_all(out, _FRAME.pack(c, 0))
        payload = dumps(_scan_in_worker([tasks[i] for i in chunks[c]]), -1)
        _write_all(out, _FRAME.pack(c, len(payload)) + payload)


def _write_all(fd: int, data: bytes) -> None:  # pragma: no cover - runs in a forked child
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _collect_forked(
    tasks: Sequence[Task[T]],
    chunks: list[list[int]],
    runs: int,
    children: dict[int, int],
    finished: Callable[[int], None] | None,
    loads: Callable[[bytes], list[Done[T]]],
    wait_readable: Callable[..., tuple[list[int], list[int], list[int]]],
) -> Iterator[tuple[Task[T], Done[T]]]:
    import signal

    where = {i: (c, k) for c, chunk in enumerate(chunks) for k, i in enumerate(chunk)}
    left = [len(chunk) for chunk in chunks]
    results: dict[int, list[Done[T]]] = {}
    taken_by: dict[int, set[int]] = {fd: set() for fd in children}  # runs a worker took and has not sent
    pending = {fd: bytearray() for fd in children}
    open_pipes = set(children)
    none_left = False
    complete = False
    files_done = 0

    def done_with(c: int, got: list[Done[T]]) -> None:
        nonlocal files_done
        results[c] = got
        files_done += len(chunks[c])
        if finished is not None:
            finished(files_done)

    def take_one() -> bool:
        """Scan the next run no process has taken, here; False when every run is taken."""
        nonlocal none_left
        if none_left:
            return False
        taken = os.read(runs, _RUN.size)
        if len(taken) < _RUN.size:
            none_left = True
            return False
        (c,) = _RUN.unpack(taken)
        done_with(c, _scan_here([tasks[i] for i in chunks[c]]))
        return True

    def receive(fd: int) -> None:
        """What worker ``fd`` has sent: runs taken, runs done; at its end, the runs it left undone."""
        data = os.read(fd, 1 << 20)
        if not data:
            open_pipes.discard(fd)
            os.close(fd)
            for c in sorted(taken_by.pop(fd)):  # a worker that died: its runs are scanned here
                done_with(c, _scan_here([tasks[i] for i in chunks[c]]))
            return
        buffer = pending[fd]
        buffer += data
        while len(buffer) >= _FRAME.size:
            c, size = _FRAME.unpack_from(buffer)
            if not size:
                taken_by[fd].add(c)
                del buffer[: _FRAME.size]
                continue
            if len(buffer) < _FRAME.size + size:
                break
            taken_by[fd].discard(c)
            done_with(c, loads(bytes(buffer[_FRAME.size : _FRAME.size + size])))
            del buffer[: _FRAME.size + size]

    try:
        for i, task in enumerate(tasks):
            c, k = where[i]
            while c not in results:
                ready = wait_readable(list(open_pipes), [], [], 0)[0] if open_pipes else []
                if not ready and take_one():
                    continue
                if not ready:  # every run taken: wait for the workers
                    ready = wait_readable(list(open_pipes), [], [], None)[0] if open_pipes else []
                    if not ready:  # pragma: no cover - a worker died between taking the run and saying so
                        done_with(c, _scan_here([tasks[i] for i in chunks[c]]))
                for fd in ready:
                    receive(fd)
            yield task, _hand_out(results, left, c, k, task)
        complete = True
    finally:
        os.close(runs)
        for fd, pid in children.items():
            if fd in open_pipes:
                os.close(fd)
                if not complete:  # stopped early (an error, Ctrl-C): the workers' runs are not wanted
                    with suppress(ProcessLookupError):  # it may have just ended
                        os.kill(pid, signal.SIGTERM)
            os.waitpid(pid, 0)  # a worker ends when it finds no run left


def _context() -> BaseContext:
    """Fork where it is safe (a POSIX process with one thread: the workers start at once, with everything
    imported), else spawn (each worker imports windowfit anew)."""
    import multiprocessing

    if _can_fork() and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")
