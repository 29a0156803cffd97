"""``--jobs``: a folder scanned over a pool of processes prints exactly what one process prints, in the same
order: reports, checks, JSON, skipped-file warnings and errors (issue 15, item 2)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import DATA, ROOT
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import Result

Run = Callable[..., Result]
SAMPLES = ROOT / "sample_transcripts"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Sessions, foreign files (skipped with a warning) and a session with a broken line, in sorted order
    so that a pool that returned results as they finish would shuffle the output."""
    root = tmp_path_factory.mktemp("jobs")
    for i, sample in enumerate(sorted(SAMPLES.glob("*.jsonl"))):
        shutil.copy(sample, root / f"{i:02d}-{sample.name}")
    for foreign in ("empty.jsonl", "package.json"):
        shutil.copy(DATA / "scan" / foreign, root / f"03-{foreign}")
    broken = (SAMPLES / "en_coding_session.jsonl").read_bytes().splitlines(keepends=True)
    broken.insert(2, b"{not json\n")
    (root / "02-broken.jsonl").write_bytes(b"".join(broken))
    return root


CASES = {
    "report-text": ("report", "--table", "--skip-invalid"),
    "report-json": ("report", "--json", "--skip-invalid"),
    "check-text": ("check", "--budget", "5000", "--skip-invalid"),
    "check-json": ("check", "--budget", "5000", "--format", "json", "--skip-invalid"),
    "check-github": ("check", "--budget", "200", "--format", "github", "--skip-invalid"),
    "audit-text": ("audit", "-t", "cl100k_base", "--skip-invalid"),
    "audit-json": ("audit", "--json", "--provider-only", "--skip-invalid"),
}


@pytest.mark.parametrize("case", CASES)
def test_two_jobs_print_byte_for_byte_what_one_job_prints(run_cli: Run, folder: Path, case: str) -> None:
    command, *args = CASES[case]
    one = run_cli(command, str(folder), *args, "--jobs", "1")
    two = run_cli(command, str(folder), *args, "--jobs", "2")
    assert one.exit_code in (0, 1), one.stderr
    assert one.stdout.count("\n") >= 3  # the run saw the sessions
    assert "skipped:" in one.stderr
    assert (two.exit_code, two.stdout, two.stderr) == (one.exit_code, one.stdout, one.stderr)


def test_an_error_in_a_worker_is_raised_as_one_process_raises_it(run_cli: Run, folder: Path) -> None:
    """With --strict the broken line stops the scan: the same located error and exit code."""
    one = run_cli("check", str(folder), "--budget", "5000", "--strict", "--jobs", "1")
    two = run_cli("check", str(folder), "--budget", "5000", "--strict", "--jobs", "2")
    assert one.exit_code == 3
    assert "02-broken.jsonl:3" in one.stderr
    assert (two.exit_code, two.stdout, two.stderr) == (one.exit_code, one.stdout, one.stderr)


def test_jobs_must_be_at_least_one(run_cli: Run, folder: Path) -> None:
    assert run_cli("report", str(folder), "--jobs", "0").exit_code == 2


def test_spawned_workers_print_what_one_job_prints(run_cli: Run, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where fork is not safe (macOS, Windows, a process with threads) the workers are spawned: the tasks and
    results cross as pickles, with the same output."""
    import multiprocessing

    from windowfit.cli import scan

    monkeypatch.setattr(scan, "_can_fork", lambda: False)  # the pool, not the forked workers
    monkeypatch.setattr(scan, "_context", lambda: multiprocessing.get_context("spawn"))
    args = ("check", str(folder), "--budget", "5000", "--format", "json", "--skip-invalid")
    one = run_cli(*args, "--jobs", "1")
    two = run_cli(*args, "--jobs", "2")
    assert (two.exit_code, two.stdout, two.stderr) == (one.exit_code, one.stdout, one.stderr)


@given(st.lists(st.integers(min_value=0, max_value=10**7), max_size=300), st.integers(min_value=2, max_value=16))
def test_the_pool_gets_every_file_once_largest_first_in_shrinking_runs(sizes: list[int], workers: int) -> None:
    from windowfit.cli.scan import chunk_plan

    chunks = chunk_plan(sizes, workers)
    sent = [i for chunk in chunks for i in chunk]
    assert sorted(sent) == list(range(len(sizes)))  # every task once
    assert all(chunks)  # no empty run
    assert [sizes[i] for i in sent] == sorted(sizes, reverse=True)  # the largest files first
    # Guided runs: each holds about a (4 x workers)-th of what was left, so no run but a single file holds more
    # than a worker's fair share of what remained when it was cut.
    left = sum(sizes)
    for chunk in chunks:
        taken = sum(sizes[i] for i in chunk)
        assert len(chunk) == 1 or taken - sizes[chunk[-1]] < left / (4 * workers)
        left -= taken


@pytest.mark.parametrize("workers", [1, 2])
def test_the_count_of_files_done_rises_to_every_file_while_results_keep_their_order(folder: Path, workers: int) -> None:
    """A progress bar's count: told as runs finish (largest files first with a pool), never past the files."""
    from functools import partial

    from windowfit.cli.report_cmd import ReportOptions, report_work
    from windowfit.cli.scan import Task, start_scan
    from windowfit.cli.shared import SizeChoice
    from windowfit.fitting.formats import Input

    work = partial(report_work, options=ReportOptions("seed", 1.0, None, None, 3, SizeChoice.auto, None))
    paths = sorted(str(p) for p in folder.glob("*.jsonl") if "broken" not in p.name and "empty" not in p.name)
    tasks = [Task(Input(p), None, False, True, False, work) for p in paths]
    counts: list[int] = []
    out = [task.item.path for task, _ in start_scan(tasks, workers=workers, finished=counts.append)]
    assert out == paths
    assert counts == sorted(counts) and counts[-1] == len(paths)


def _fails_on_marked(transcripts: tuple[object, ...], *, marked: str) -> list[str]:
    """A work that raises on the file whose path ends with ``marked`` (module-level: a pool pickles it)."""
    from windowfit.fitting import Transcript

    names = [t.source.path for t in transcripts if isinstance(t, Transcript)]
    if any(name.endswith(marked) for name in names):
        raise ValueError(f"work failed on {marked}")
    return names


@pytest.mark.parametrize("workers", [2, 3])
@pytest.mark.parametrize("position", [0, 0.5, 1])
def test_a_file_that_raises_in_any_process_raises_after_every_result_before_it(
    folder: Path, workers: int, position: float
) -> None:
    """The parent scans runs of files too (the ones no worker has started): whichever process a failing file
    lands in, the results before it come out in order, then its error, raised by the parent, as with one job."""
    from functools import partial

    from windowfit.cli.scan import Task, start_scan
    from windowfit.fitting.formats import Input

    paths = sorted(str(p) for p in folder.glob("*.jsonl") if "broken" not in p.name and "empty" not in p.name)
    assert len(paths) >= 3
    marked = paths[round(position * (len(paths) - 1))]
    work = partial(_fails_on_marked, marked=marked)
    tasks = [Task(Input(p), None, False, True, False, work) for p in paths]
    for jobs in (1, workers):
        seen: list[str] = []
        with pytest.raises(ValueError, match="work failed on"):
            for task, done in start_scan(tasks, workers=jobs):
                seen.append(task.item.path)
                assert list(done.values) == [task.item.path]
        assert seen == paths[: paths.index(marked)]


def _dies_in_a_worker(transcripts: tuple[object, ...], *, parent: int, marked: str) -> list[str]:
    """A work that kills the worker process that reads ``marked`` (never the parent): a crash, not an error."""
    import os

    from windowfit.fitting import Transcript

    names = [t.source.path for t in transcripts if isinstance(t, Transcript)]
    if os.getpid() != parent and any(name.endswith(marked) for name in names):
        os._exit(9)
    return names


@pytest.mark.parametrize("workers", [2, 3])
def test_the_runs_of_a_worker_that_dies_are_scanned_by_the_parent(folder: Path, workers: int) -> None:
    """Every file is read in a worker at least once, one of them kills it: the parent scans the runs that worker
    had taken, and the results are every file's, in order, as with one job."""
    import os
    from functools import partial

    from windowfit.cli.scan import Task, start_scan
    from windowfit.fitting.formats import Input

    paths = sorted(str(p) for p in folder.glob("*.jsonl") if "broken" not in p.name and "empty" not in p.name)
    for marked in paths:
        work = partial(_dies_in_a_worker, parent=os.getpid(), marked=marked)
        tasks = [Task(Input(p), None, False, True, False, work) for p in paths]
        out = [(task.item.path, list(done.values)) for task, done in start_scan(tasks, workers=workers)]
        assert out == [(p, [p]) for p in paths]


def test_a_fork_refused_leaves_no_worker_running(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first worker is forked, the second fork fails (no memory, too many processes): the error is raised
    and the first worker is stopped and reaped, not left reading the runs."""
    import os
    from functools import partial

    from windowfit.cli import scan
    from windowfit.cli.report_cmd import ReportOptions, report_work
    from windowfit.cli.shared import SizeChoice
    from windowfit.fitting.formats import Input

    forked: list[int] = []
    real_fork = os.fork

    def fork_once() -> int:
        if forked:
            raise OSError(11, "Resource temporarily unavailable")
        pid = real_fork()
        if pid:
            forked.append(pid)
        return pid

    work = partial(report_work, options=ReportOptions("seed", 1.0, None, None, 3, SizeChoice.auto, None))
    paths = sorted(str(p) for p in folder.glob("*.jsonl") if "broken" not in p.name and "empty" not in p.name)
    tasks = [scan.Task(Input(p), None, False, True, False, work) for p in paths]
    monkeypatch.setattr(scan.os, "fork", fork_once)
    monkeypatch.setattr(scan, "_can_fork", lambda: True)
    with pytest.raises(OSError, match="Resource temporarily unavailable"):
        scan.start_scan(tasks, workers=3)
    assert len(forked) == 1
    with pytest.raises(ProcessLookupError):  # reaped: no such process any more
        os.kill(forked[0], 0)
