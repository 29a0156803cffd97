"""Tables that never cut a number (issue 8, item 7): at 60, 80 and 120 columns every figure stays whole.

Each command's text output is a golden file per width, and every figure of its ``--json`` twin must appear
in the text whole, with no ellipsis next to a digit.
"""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Column
from typer.testing import Result

ROOT = Path(__file__).resolve().parent.parent


Run = Callable[..., Result]
Golden = Callable[[str, str], None]

WIDTHS = (60, 80, 120)


@pytest.fixture
def at_width(run_cli: Run, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Result]]:
    """``at_width(80, "report", path)``: the CLI with its consoles ``80`` columns wide."""

    monkeypatch.chdir(ROOT)  # relative paths in the output, whatever the checkout's location

    def invoke(width: int, *args: str) -> Result:
        for name, module in list(sys.modules.items()):
            if module is None or not name.startswith("windowfit.cli"):
                continue
            for attr, value in list(vars(module).items()):
                if isinstance(value, Console):
                    twin = type(value)(stderr=value.stderr, soft_wrap=value.soft_wrap, highlight=False, width=width)
                    monkeypatch.setattr(module, attr, twin)
        return run_cli(*args)

    yield invoke


CASES: dict[str, tuple[str, ...]] = {
    "report": ("report", "sample_transcripts/en_coding_session.jsonl", "--budget", "100000", "--window", "1000000"),
    "report_many": ("report", "sample_transcripts", "--budget", "60000", "--table"),
    "fit": ("fit", "sample_transcripts/en_coding_session.jsonl", "--budget", "100000"),
    "replay": ("replay", "sample_transcripts/ru_subagent_chapters.jsonl", "--budget", "30000", "--window", "60000"),
    "audit": ("audit", "sample_transcripts/ja_tools_session.jsonl"),
}


def _figures(document: Any) -> set[int]:
    """Every integer of at least 4 digits in a JSON document: the figures a reader looks for."""
    found: set[int] = set()
    if isinstance(document, dict):
        for value in document.values():
            found |= _figures(value)
    elif isinstance(document, list):
        for value in document:
            found |= _figures(value)
    elif isinstance(document, int) and not isinstance(document, bool) and document >= 1000:
        found.add(document)
    return found


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_figure_stays_whole(at_width: Callable[..., Result], golden: Golden, case: str, width: int) -> None:
    args = CASES[case]
    text = at_width(width, *args)
    assert text.exit_code == 0, text.stderr
    golden(f"widths/{case}_{width}.txt", text.stdout)
    assert not re.search(r"\d…|…\d", text.stdout), "a figure was cut"
    for line in text.stdout.splitlines():
        assert len(line.rstrip()) <= width, f"line wider than {width}: {line!r}"


@pytest.mark.parametrize("width", WIDTHS)
def test_replay_figures_of_the_json_appear_whole_in_the_table(at_width: Callable[..., Result], width: int) -> None:
    args = CASES["replay"]
    document = json.loads(at_width(width, *args, "--json").stdout)
    text = at_width(width, *args).stdout
    for run in document["runs"]:
        for key in ("sent_tokens", "cached_tokens", "uncached_tokens"):
            if key in run:
                assert f"{run[key]:,}" in text, (key, run[key])


@pytest.mark.parametrize("width", WIDTHS)
def test_report_verdict_survives_narrow_terminals(at_width: Callable[..., Result], width: int) -> None:
    text = at_width(width, *CASES["report_many"]).stdout
    document = json.loads(at_width(width, "report", "sample_transcripts", "--budget", "60000", "--json").stdout)
    reports = document["transcripts"] if "transcripts" in document else document["reports"]
    over = [r["tokens"] - 60000 for r in reports if r["tokens"] > 60000]
    assert over, "the case must hold a transcript over the budget"
    for report in reports:
        assert f"{report['tokens']:,}" in text
    for excess in over:  # the verdict, whole
        assert f"{excess:+,} over budget" in text.replace("\n", " ") or f"{excess:+,}" in text


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=30, max_value=130),
    st.lists(st.text("abcdefghij-", min_size=1, max_size=30), min_size=1, max_size=6),
    st.integers(min_value=2, max_value=12),
    st.integers(min_value=0, max_value=10**12),
)
def test_a_table_too_wide_keeps_every_figure_whole_and_every_line_within_the_width(
    width: int, names: list[str], columns: int, seed: int
) -> None:
    """Whatever shape a WholeTable falls back to (compact, split into parts that repeat the first column, or
    ``header: value`` lines), no line is wider than the terminal and every figure appears whole."""
    from windowfit.cli.tables import WholeTable

    table = WholeTable("name", *(Column(f"figure {i}", justify="right") for i in range(columns)))
    figures = [[f"{(seed * (r + 3) * (c + 7)) % 10**9:,}" for c in range(columns)] for r in range(len(names))]
    for name, row in zip(names, figures, strict=True):
        table.add_row(name, *row)
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(table)
    text = console.export_text()
    assert all(len(line.rstrip()) <= width for line in text.splitlines())
    tokens = set(text.split())
    assert all(figure in tokens for row in figures for figure in row)
