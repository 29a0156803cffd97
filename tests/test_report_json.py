"""``report --json`` from fragments: each transcript's object is encoded where its report is made (in a
worker, with a pool) and the parent joins the bytes; the document must be what encoding it whole gives."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import ROOT
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import Result

from windowfit.cli.report_cmd import report_fragment, report_json
from windowfit.fitting import build_report, make_estimator
from windowfit.fitting._json import encode
from windowfit.fitting.formats import SkippedFile, load_path
from windowfit.fitting.serialize import report_document_of, report_to_dict

# Every character, lone surrogates included (encode writes those as escapes through its own fallback)
TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
SCALARS = st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | TEXT
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4), max_leaves=20
)
REPORTS = st.lists(st.dictionaries(TEXT, VALUES, max_size=5), min_size=1, max_size=4)
SKIPPED = st.lists(st.builds(SkippedFile, TEXT, TEXT), max_size=3)


def whole(reports: list[Any], estimator: str, skipped: list[SkippedFile]) -> bytes:
    """The document as ``print_json`` encoded it before: the ground truth."""
    return encode(report_document_of(reports, estimator=estimator, skipped=skipped), indent=True, sort_keys=True)


@given(REPORTS, TEXT, SKIPPED)
def test_the_joined_fragments_are_the_whole_document_byte_for_byte(
    reports: list[Any], estimator: str, skipped: list[SkippedFile]
) -> None:
    joined = report_json([report_fragment(r) for r in reports], estimator=estimator, skipped=skipped)
    assert joined == whole(reports, estimator, skipped)


def test_the_sample_sessions_reports_joined_are_the_whole_document() -> None:
    """Real reports, nested several levels (tokens by script, role and kind; the largest results)."""
    est = make_estimator("seed")
    reports = [
        report_to_dict(build_report(t, est))
        for path in sorted((ROOT / "sample_transcripts").glob("*.jsonl"))
        for t in load_path(Path(path))
    ]
    assert len(reports) >= 3
    skipped = [SkippedFile("a/b.json", "not a transcript")]
    joined = report_json([report_fragment(r) for r in reports], estimator="seed", skipped=skipped)
    assert joined == whole(reports, "seed", skipped)
    # each object (and the skipped file's) opens at the arrays' indent
    assert joined.count(b'\n    {\n      "') == len(reports) + len(skipped)


def test_report_json_prints_what_encoding_the_whole_document_prints(run_cli: Callable[..., Result]) -> None:
    """The command writes the document a piece at a time: the same bytes as ``print_json`` of the whole
    document, built in this process from the same files' reports (``report_file``, as one process makes them)."""
    from windowfit.cli.report_cmd import ReportOptions, report_file
    from windowfit.cli.shared import SizeChoice
    from windowfit.fitting.formats import Input
    from windowfit.fitting.serialize import report_document

    folder = ROOT / "sample_transcripts"
    result = run_cli("report", str(folder), "--json", "--jobs", "1")
    assert result.exit_code == 0, result.stderr
    options = ReportOptions("seed", 1.0, None, None, 10, SizeChoice.auto, None)
    paths = sorted(str(p) for p in folder.glob("*.jsonl"))
    reports = [r for p in paths for r in report_file(Input(p, keep_text=False), options)]
    document = report_document(reports, estimator="seed")
    assert result.stdout == encode(document, indent=True, sort_keys=True).decode() + "\n"
