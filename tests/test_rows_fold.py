"""Rows of Claude Code sessions from the fold of their lines (``fitting.rows.folded_rows``) against the rows of
the loaded file (``transcript_rows`` over ``load``: the ground truth): wherever the fold gives a row it is the
loaded one, it gives one for every session the fold vouches for (with a budget: that fits it), and the rows the
command line writes (JSON lines and Parquet, one job and two) and Ray Data maps are the same with the fold and
without it (``WINDOWFIT_FASTFOLD=0``). On the corpus's Claude Code files and their prefixes, the repository's
test data, generated sessions and a folder of the benchmark's shape; without a budget and with budgets on both
sides of each session's size, both size modes, a given preamble, a window and other overheads."""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import DATA, ROOT, require_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_ccfold import _example, sessions
from typer.testing import Result

from windowfit.cli import rows_out
from windowfit.cli.report_cmd import FAST_FOLD_ENV as COMMANDS_SWITCH
from windowfit.fitting import make_estimator
from windowfit.fitting.ccfold import fold_claude_code
from windowfit.fitting.errors import WindowfitError
from windowfit.fitting.formats import Input
from windowfit.fitting.repair import DEFECT_OF
from windowfit.fitting.rows import FAST_FOLD_ENV, ROW_FIELDS, Row, file_rows, folded_rows, row_of_path
from windowfit.fitting.size import SizeMode

Run = Callable[..., Result]
MODES: list[tuple[SizeMode, int | None]] = [("auto", None), ("estimate", None), ("auto", 7_000), ("estimate", 0)]


def rows_or_error(path: str, data: bytes | None, *, fold: bool, **options: Any) -> tuple[Row, ...] | str:
    """``file_rows`` with the fold on or off, or the words of the error it raises."""
    try:
        return file_rows(path, data, fold=fold, **options)
    except WindowfitError as exc:
        return f"{type(exc).__name__}: {exc}"


def compare(path: str, data: bytes | None = None, **options: Any) -> bool:
    """Whether the fold made ``path``'s rows with ``options``; asserts they are the loaded rows (or the same
    error), and that the fold made them wherever it vouches for the file (with a budget: when the session fits
    it, and the last usage of the file's tail is not over it)."""
    slow = rows_or_error(path, data, fold=False, **options)
    fast = rows_or_error(path, data, fold=True, **options)
    assert fast == slow
    item = Input(path, data, keep_text=False)
    size_bytes = len(data) if data is not None else Path(path).stat().st_size
    est_options = {k: options[k] for k in ("size", "preamble", "budget", "window") if k in options}
    folded = folded_rows(item, size_bytes=size_bytes, overhead=options.get("overhead", 1.0), **est_options)
    if folded is not None:
        assert folded == slow
        return True
    est = make_estimator(overhead=options.get("overhead", 1.0))
    size, preamble = options.get("size", "auto"), options.get("preamble")
    try:
        report = fold_claude_code(item, est, size_mode=size, preamble=preamble)
    except WindowfitError:
        report = None
    vouched = report is not None
    budget = options.get("budget")
    if vouched and budget is None:
        raise AssertionError(f"the fold vouches for {path} but made no row")
    if not vouched:
        return False
    # With a budget the row comes from ``fold_plan``, which plans every session the fold takes as one
    # transcript, fitting or not, defects and all (but repairs it cannot floor exactly: blocks of no overhead).
    assert report is not None
    unfloored = not est.rule.block_overhead_tokens and any(d.kind in REPAIRED for d in report.defects)
    assert unfloored or not isinstance(slow, tuple), f"the fold takes {path} but made no row at {budget}"
    return False


REPAIRED = frozenset(DEFECT_OF.values())


def loaded_tokens(path: str, data: bytes | None, size: SizeMode, preamble: int | None, overhead: float) -> int:
    """The loaded row's ``tokens_after`` at a budget all fits: a budget of exactly this fits, one less does not."""
    (row,) = file_rows(path, data, fold=False, budget=10**9, size=size, preamble=preamble, overhead=overhead)
    assert row.tokens_after is not None
    return row.tokens_after


def check_file(path: str, data: bytes | None = None, modes: list[tuple[SizeMode, int | None]] = MODES) -> int:
    """The rows of ``path`` compared without a budget and at budgets around its size, in each mode; how many
    the fold made."""
    taken = 0
    for size, preamble in modes:
        taken += compare(path, data, size=size, preamble=preamble)
        if fold_claude_code(Input(path, data, keep_text=False), make_estimator()) is None:
            continue
        tokens = loaded_tokens(path, data, size, preamble, 1.0)
        for budget in (tokens - 1, tokens, tokens + 1, 10**9):
            taken += compare(path, data, size=size, preamble=preamble, budget=max(1, budget), window=tokens)
    return taken


def test_the_folded_rows_are_the_loaded_ones_on_the_corpus() -> None:
    files = sorted(require_shared("corpus", "transcripts").rglob("*.jsonl"))
    files += sorted(DATA.joinpath("claude_code").rglob("*.jsonl"))
    files += sorted((ROOT / "sample_transcripts").glob("*.jsonl"))
    taken = sum(check_file(str(path)) for path in files)
    # Each file the fold vouches for, in 4 modes: without a budget and at 3 budgets that fit (8 files, 128 rows
    # on the corpus of 2026-12-02); 260 once fold_plan planned the tree fold's sessions (at the budget under the
    # size too, and the sessions with defects)
    assert taken >= 240


def test_every_few_prefixes_of_a_corpus_session_make_the_loaded_rows() -> None:
    """The corpus's main sessions are shapes the fold leaves to the loader; their prefixes are real lines it
    takes (see test_ccfold)."""
    taken = 0
    for path in sorted(require_shared("corpus", "transcripts", "claude_code").rglob("*.jsonl")):
        lines = path.read_bytes().splitlines(keepends=True)
        for n in range(1, len(lines) + 1, max(1, len(lines) // 8)):
            taken += check_file(str(path), b"".join(lines[:n]), modes=MODES[:1])
    assert taken >= 340  # 168 on the corpus of 2026-12-02; 380 once fold_plan planned the tree fold's sessions


BUDGET_SIDE = st.sampled_from([None, -1, 0, 1, 5_000])
"""No budget, or the budget against the loaded size: just under (never folded), at, just over, well over."""


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=sessions(),
    side=BUDGET_SIDE,
    mode=st.sampled_from(MODES),
    window=st.sampled_from([None, 10**9, 1]),
    overhead=st.sampled_from([1.0, 0.0, 2.5]),
)
def test_generated_sessions_make_the_loaded_rows(
    data: bytes, side: int | None, mode: tuple[SizeMode, int | None], window: int | None, overhead: float
) -> None:
    size, preamble = mode
    options: dict[str, Any] = {"size": size, "preamble": preamble, "overhead": overhead}
    if side is None:
        compare("session.jsonl", data, window=window, **options)
        return
    try:
        tokens = loaded_tokens("session.jsonl", data, size, preamble, overhead)
    except (WindowfitError, ValueError):  # not one transcript the loader reads: compared without a budget
        compare("session.jsonl", data, **options)
        return
    budget = max(1, tokens + side)
    if window is not None and window < budget:
        window = budget  # check refuses a window under the budget; at the budget, the window is crossed first
    compare("session.jsonl", data, budget=budget, window=window, **options)  # over the budget, folded too


def test_the_fold_makes_the_rows_of_most_generated_sessions_it_vouches_for() -> None:
    """The property above compares rows where the fold makes them: make sure it often does."""
    taken = []

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
    @given(data=sessions(), budget=st.sampled_from([None, 10**9]))
    def count(data: bytes, budget: int | None) -> None:
        taken.append(compare("session.jsonl", data, budget=budget))

    count()
    assert sum(taken) >= len(taken) // 5  # the fold vouches for about a third of them (test_ccfold)


def test_the_switch_turns_the_fold_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _example(tmp_path)
    item = Input("s.jsonl", data, keep_text=False)
    assert folded_rows(item, size_bytes=len(data)) is not None
    assert FAST_FOLD_ENV == COMMANDS_SWITCH  # one switch for the rows and the commands
    calls: list[bool] = []
    real = folded_rows

    def counted(*args: Any, **kwargs: Any) -> tuple[Row, ...] | None:
        calls.append(True)
        return real(*args, **kwargs)

    monkeypatch.setattr("windowfit.fitting.rows.folded_rows", counted)
    monkeypatch.setenv(FAST_FOLD_ENV, "0")
    off = file_rows("s.jsonl", data)
    assert not calls
    monkeypatch.delenv(FAST_FOLD_ENV)
    assert file_rows("s.jsonl", data) == off
    assert len(calls) == 1
    assert file_rows("s.jsonl", data, fold=False) == off and len(calls) == 1


def test_a_row_as_a_dict_is_its_dataclass_as_a_dict(tmp_path: Path) -> None:
    from dataclasses import asdict, fields

    assert tuple(f.name for f in fields(Row)) == ROW_FIELDS
    for row in file_rows("s.jsonl", _example(tmp_path), budget=10**9) + file_rows(
        ROOT / "sample_transcripts" / "ru_subagent_chapters.jsonl"
    ):
        assert list(row.as_dict().items()) == list(asdict(row).items())


def test_a_file_the_fold_refuses_raises_the_loaders_error(tmp_path: Path) -> None:
    data = _example(tmp_path)
    broken = data + b'{"type": "user", "broken\n'
    path = tmp_path / "broken.jsonl"
    path.write_bytes(broken)
    assert folded_rows(Input(str(path), keep_text=False), size_bytes=len(broken)) is None
    slow = rows_or_error(str(path), None, fold=False)
    assert isinstance(slow, str) and slow == rows_or_error(str(path), None, fold=True)
    assert compare(str(path), None, skip_invalid=True) is False  # the loader skips the line; the fold does not


def _folder(tmp_path: Path) -> tuple[Path, int]:
    """A folder of sessions of the benchmark's shape (some of 3 rounds, some of 12) beside the samples, and a
    budget some of them fit."""
    _example(tmp_path)  # puts benchmarks/ on sys.path
    from sessions import write_session

    folder = tmp_path / "projects"
    folder.mkdir()
    for k, rounds in enumerate([3, 12, 3, 12, 5]):
        write_session(folder / f"{k:02}.jsonl", random.Random(k), rounds)
    for sample in sorted((ROOT / "sample_transcripts").glob("*.jsonl")):
        shutil.copy(sample, folder / sample.name)
    sizes = sorted(loaded_tokens(str(p), None, "auto", None, 1.0) for p in sorted(folder.glob("0*.jsonl")))
    return folder, sizes[len(sizes) // 2]


@pytest.mark.parametrize("command", ["report", "check"])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_jsonl_and_parquet_are_the_same_with_the_fold_off(
    run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, jobs: str
) -> None:
    folder, budget = _folder(tmp_path)
    stream = "rows_stream" if command == "report" else "check_rows_stream"  # check's rows are its checks'
    streamed = getattr(rows_out, stream)
    taken: list[bool] = []

    def counted(*args: Any, **kwargs: Any) -> list[Row] | None:
        found = streamed(*args, **kwargs)
        taken.append(found is not None)
        return found

    if jobs == "1":  # a pool pickles the work and its stream: the count is of one process's rows
        monkeypatch.setattr(rows_out, stream, counted)
    pq = pytest.importorskip("pyarrow.parquet") if jobs == "1" else None
    limits = [["--budget", str(budget)], ["--budget", str(budget), "--window", str(budget + 1), "--size", "estimate"]]
    for extra in ([], *limits) if command == "report" else limits:
        argv = [command, str(folder), "--format", "jsonl", "--jobs", jobs, *extra]
        monkeypatch.delenv(FAST_FOLD_ENV, raising=False)
        fast = run_cli(*argv)
        monkeypatch.setenv(FAST_FOLD_ENV, "0")
        general = run_cli(*argv)
        assert (fast.exit_code, fast.stdout, fast.stderr) == (general.exit_code, general.stdout, general.stderr)
        assert fast.exit_code in (0, 1), fast.stderr
        assert len(fast.stdout.splitlines()) == len(list(folder.glob("*.jsonl")))
        if pq is not None:
            tables = []
            for switch in ("1", "0"):
                monkeypatch.setenv(FAST_FOLD_ENV, switch)
                target = tmp_path / f"rows{switch}.parquet"
                ran = run_cli(*argv[:2], "--format", "parquet", "-o", str(target), *argv[4:])
                assert ran.exit_code in (0, 1), ran.stderr
                tables.append(pq.read_table(target).to_pylist())
            assert tables[0] == tables[1] and len(tables[0]) == len(fast.stdout.splitlines())
    if jobs == "1":
        assert sum(taken) >= 5  # at least the sessions under the budget, and without one each of them


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # ray's own deprecated settings, warned on import
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_ray_data_maps_the_folded_rows_to_the_loaded_ones(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    folder, budget = _folder(tmp_path)
    paths = sorted(folder.glob("*.jsonl"))
    assert sum(folded_rows(Input(str(p), keep_text=False), size_bytes=0) is not None for p in paths) >= 5
    loaded = [r.as_dict() for p in paths for b in (None, budget) for r in file_rows(p, budget=b, fold=False)]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        items = [{"item": str(p), "budget": b} for p in paths for b in (None, budget)]
        rows = ray.data.from_items(items).flat_map(row_of_path).take_all()
    finally:
        ray.shutdown()
    key = lambda r: (r["path"], r["index"], r["budget"] or 0)  # noqa: E731 - Ray Data keeps no order across blocks
    assert sorted(rows, key=key) == sorted(loaded, key=key)
