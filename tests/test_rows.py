"""One flat row per transcript (issue 15, "beyond one machine"): the pure ``fitting.rows`` function agrees with
``check --format json``, the CLI writes it as JSON lines and Parquet, and Ray Data mapping it over a dataset
of paths gives the rows of the single-machine run."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from typer.testing import Result

from windowfit.fitting.rows import ROW_FIELDS, file_rows, row_of_path

Run = Callable[..., Result]
SAMPLES = sorted((ROOT / "sample_transcripts").glob("*.jsonl"))
BUDGET = 5000


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rows")
    for sample in SAMPLES:
        shutil.copy(sample, root / sample.name)
    return root


def _single_machine(folder: Path) -> list[dict[str, Any]]:
    return [r.as_dict() for p in sorted(folder.glob("*.jsonl")) for r in file_rows(p, budget=BUDGET)]


def test_rows_say_what_check_json_says(run_cli: Run, folder: Path) -> None:
    result = run_cli("check", str(folder), "--budget", str(BUDGET), "--format", "json")
    checked = json.loads(result.stdout)["transcripts"]
    rows = _single_machine(folder)
    assert len(rows) == len(checked) == len(SAMPLES)
    for row, c in zip(rows, checked, strict=True):
        assert (row["path"], row["outcome"], row["tokens"], row["tokens_after"]) == (
            c["path"],
            c["outcome"],
            c["tokens_before"],
            c["tokens_after"],
        )
        assert (row["preamble_tokens"], row["size_source"], row["crossed"]) == (
            c["preamble_tokens"],
            c["size_source"],
            c["crossed"],
        )
        assert row["bytes"] == Path(row["path"]).stat().st_size


def test_rows_from_bytes_are_the_rows_from_the_path() -> None:
    path = SAMPLES[0]
    assert file_rows(str(path), path.read_bytes(), budget=BUDGET) == file_rows(path, budget=BUDGET)


def test_a_row_without_a_budget_has_no_outcome() -> None:
    (row,) = file_rows(SAMPLES[0])
    assert (row.outcome, row.tokens_after, row.budget) == (None, None, None)
    assert row.tokens > 0


@pytest.mark.parametrize("command", ["check", "report"])
def test_jsonl_on_stdout_is_one_row_per_transcript_in_order(run_cli: Run, folder: Path, command: str) -> None:
    result = run_cli(command, str(folder), "--budget", str(BUDGET), "--format", "jsonl")
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines == _single_machine(folder)
    assert all(list(line) == list(ROW_FIELDS) for line in lines)


def test_every_row_matches_its_published_schema(folder: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "docs" / "schema" / "rows.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    assert schema["required"] == list(ROW_FIELDS)
    rows = _single_machine(folder) + [r.as_dict() for r in file_rows(SAMPLES[0])]
    for row in rows:
        validator.validate(row)
    assert not validator.is_valid({**rows[0], "extra": 1})


def test_jsonl_is_the_same_over_two_jobs(run_cli: Run, folder: Path) -> None:
    one = run_cli("check", str(folder), "--budget", str(BUDGET), "--format", "jsonl", "--jobs", "1")
    two = run_cli("check", str(folder), "--budget", str(BUDGET), "--format", "jsonl", "--jobs", "2")
    assert (two.exit_code, two.stdout) == (one.exit_code, one.stdout)


def test_check_jsonl_fails_when_a_row_fails(run_cli: Run, folder: Path) -> None:
    result = run_cli("check", str(folder), "--budget", "100", "--format", "jsonl")
    assert result.exit_code == 1
    assert {json.loads(line)["outcome"] for line in result.stdout.splitlines()} == {"too-long"}


def test_parquet_holds_the_jsonl_rows(run_cli: Run, folder: Path, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    target = tmp_path / "rows.parquet"
    result = run_cli("report", str(folder), "--budget", str(BUDGET), "--format", "parquet", "-o", str(target))
    assert result.exit_code == 0, result.stderr
    table = pq.read_table(target)
    assert table.column_names == list(ROW_FIELDS)
    assert table.to_pylist() == _single_machine(folder)


def test_parquet_needs_a_file(run_cli: Run, folder: Path) -> None:
    result = run_cli("report", str(folder), "--format", "parquet")
    assert result.exit_code == 2
    assert "-o FILE" in result.stderr


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # ray's own deprecated settings, warned on import
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_ray_data_maps_the_row_function_to_the_single_machine_rows(folder: Path) -> None:
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        items = [{"item": str(p), "budget": BUDGET} for p in sorted(folder.glob("*.jsonl"))]
        rows = ray.data.from_items(items).flat_map(row_of_path).take_all()
    finally:
        ray.shutdown()
    key = lambda r: (r["path"], r["index"])  # noqa: E731 - Ray Data keeps no order across blocks
    assert sorted(rows, key=key) == sorted(_single_machine(folder), key=key)


@pytest.mark.parametrize("collecting", [True, False])
def test_rows_leave_the_collector_as_they_found_it(collecting: bool, tmp_path: Path) -> None:
    """``file_rows`` turns the cyclic collector off while it reads (as the CLI's scan does) and restores the
    caller's setting afterwards, also when the file cannot be read."""
    import gc

    from windowfit.fitting.errors import WindowfitError

    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(SAMPLES[0].read_bytes().splitlines()[0] + b"\n{not json\n")
    was = gc.isenabled()
    (gc.enable if collecting else gc.disable)()
    try:
        file_rows(SAMPLES[0], budget=BUDGET)
        assert gc.isenabled() is collecting
        with pytest.raises(WindowfitError):
            file_rows(broken)
        assert gc.isenabled() is collecting
    finally:
        (gc.enable if was else gc.disable)()


def test_parquet_without_pyarrow_names_the_extra_to_install_from_the_checkout(
    run_cli: Run, folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    result = run_cli("report", str(folder), "--format", "parquet", "-o", str(tmp_path / "rows.parquet"))
    assert result.exit_code == 2, result.stderr
    assert "pip install '.[parquet]'" in result.stderr  # windowfit is not on PyPI: no 'windowfit[parquet]'
    assert not (tmp_path / "rows.parquet").exists()


FIT_OPTIONS = [
    ("--batch-size", "1"),
    ("--protected-fraction", "0.6"),
    ("--min-clear-ratio", "8"),
    ("--batch-size", "0", "--batch-tokens", "300"),
]


@pytest.mark.parametrize("options", FIT_OPTIONS, ids=[" ".join(o) for o in FIT_OPTIONS])
def test_check_jsonl_rows_are_check_json_under_every_fit_option(
    run_cli: Run, folder: Path, options: tuple[str, ...]
) -> None:
    """A fleet's rows come from check's own function with check's options: the same outcome and tokens as
    ``check --format json`` on the same files, whatever the fit options (not the defaults' plan)."""
    files = [str(folder), str(ROOT / "tests" / "data" / "fit"), str(ROOT / "tests" / "data" / "claude_code")]
    common = ("--budget", "2000", "--window", "2500", "--overhead", "0", "--skip-invalid", *options)
    checked = json.loads(run_cli("check", *files, *common, "--format", "json").stdout)["transcripts"]
    result = run_cli("check", *files, *common, "--format", "jsonl")
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == (1 if any(c["failed"] for c in checked) else 0)
    assert [(r["path"], r["name"], r["outcome"], r["tokens_after"], r["crossed"], r["defects"]) for r in rows] == [
        (c["path"], c["name"] or "", c["outcome"], c["tokens_after"], c["crossed"], len(c["defects"])) for c in checked
    ]
    # a row's tokens are the file's predicted size; check's tokens_before, the repaired request's
    assert [r["tokens"] for r in rows if not r["defects"]] == [c["tokens_before"] for c in checked if not c["defects"]]


def test_the_fit_options_change_check_on_these_files(run_cli: Run, folder: Path) -> None:
    """The files above are ones the options move (else the test before could not fail)."""
    files = [str(folder), str(ROOT / "tests" / "data" / "fit"), str(ROOT / "tests" / "data" / "claude_code")]
    common = ("--budget", "2000", "--overhead", "0", "--skip-invalid", "--format", "json")

    def after(*options: str) -> list[int]:
        return [
            c["tokens_after"] for c in json.loads(run_cli("check", *files, *common, *options).stdout)["transcripts"]
        ]

    default = after()
    assert all(after(*options) != default for options in FIT_OPTIONS)
