"""Fuzzing every loader and the fit with mutated real lines (issue 8, item 8).

A real line of every format (tests/data, and the shared corpus when present) gets one of its values replaced
by arbitrary JSON, a key removed, or its bytes cut or corrupted; the result goes through
``windowfit.fitting.formats.load`` (detection, or each format by name) and what loads through ``plan_fit`` and
``apply_plan``. Only windowfit's own errors may escape, and every fitted request keeps the SPEC section 6
invariants, checked by the property tests of tests/test_fit.py (their bodies, reused here).

The default run keeps a small budget; the ``slow`` lane runs longer and over the corpus; benchmarks/fuzz.py
runs for as long as asked.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_fit
from conftest import require_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowfit.fitting import Transcript
from windowfit.fitting.errors import WindowfitError
from windowfit.fitting.formats import FORMATS, Input, load
from windowfit.fitting.validate import check_request

DATA = Path(__file__).parent / "data"
MAX_FILE_BYTES = 64_000
"""Real files small enough to be mutated many times in a run."""

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def sources(root: Path) -> list[Path]:
    return sorted(
        p for p in root.rglob("*") if p.suffix in (".jsonl", ".json") and 0 < p.stat().st_size <= MAX_FILE_BYTES
    )


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield (*prefix, i)
            yield from _paths(item, (*prefix, i))


def _replace(value: Any, path: tuple[Any, ...], new: Any, *, delete: bool) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        out = dict(value)
        if delete and not rest:
            del out[head]
        else:
            out[head] = _replace(value[head], rest, new, delete=delete)
        return out
    out_list = list(value)
    if delete and not rest:
        del out_list[head]
    else:
        out_list[head] = _replace(value[head], rest, new, delete=delete)
    return out_list


@st.composite
def mutated(draw: st.DrawFn, files: list[Path]) -> tuple[str, bytes]:
    """One real file with one line mutated: a value replaced or removed, or its bytes cut or corrupted."""
    path = draw(st.sampled_from(files))
    data = path.read_bytes()
    lines = data.splitlines(keepends=True) if path.suffix == ".jsonl" else [data]
    index = draw(st.integers(0, len(lines) - 1))
    line = lines[index]
    how = draw(st.sampled_from(("value", "value", "delete", "cut", "byte")))
    if how in ("value", "delete"):
        try:
            value = json.loads(line)
        except ValueError:
            how = "cut"
        else:
            paths = list(_paths(value))
            if paths:
                where = draw(st.sampled_from(paths))
                new = draw(json_values) if how == "value" else None
                line = json.dumps(_replace(value, where, new, delete=how == "delete")).encode() + b"\n"
            else:
                how = "cut"
    if how == "cut" and line:
        line = line[: draw(st.integers(0, len(line) - 1))]
    elif how == "byte" and line:
        at = draw(st.integers(0, len(line) - 1))
        line = line[:at] + bytes([draw(st.integers(0, 255))]) + line[at + 1 :]
    return path.name, b"".join([*lines[:index], line, *lines[index + 1 :]])


ALWAYS = (
    test_fit.test_inv1_fitted_request_is_within_budget_or_too_long,
    test_fit.test_inv6_same_input_and_options_give_byte_identical_output,
    test_fit.test_inv7_the_input_transcript_is_never_modified,
)
"""The properties that hold for any input, including one the fit must repair first (an orphan result)."""

VALID_ONLY = (
    test_fit.test_inv2_every_call_has_its_result_and_every_result_its_call,
    test_fit.test_inv3_system_prompt_and_first_message_are_kept_unchanged,
    test_fit.test_inv4_stages_run_in_order_and_only_when_needed,
    test_fit.test_inv5_cleared_results_are_a_prefix_of_candidates_in_whole_batches,
)
"""The properties stated for a valid input (the fit counts and keeps the input as given)."""


def check_fit(transcript: Transcript, fraction: float, batch: int) -> None:
    """The SPEC section 6 properties of tests/test_fit.py (their bodies), on one loaded transcript."""
    if not transcript.messages:
        return
    budget = max(1, int(test_fit.total(transcript) * fraction))
    case = test_fit.Case(transcript, budget, batch)
    valid = check_request(transcript) == ()
    for prop in ALWAYS + (VALID_ONLY if valid else ()):
        prop.hypothesis.inner_test(case)  # type: ignore[attr-defined]
    _, out = test_fit.fitted(case)
    assert check_request(out) == (), "a fitted request is valid even when its input was not"


def fuzz_one(name: str, data: bytes, fmt: str | None, fraction: float, batch: int, skip_invalid: bool) -> None:
    try:
        transcripts = load(Input(name, data), fmt=fmt, skip_invalid=skip_invalid)
    except WindowfitError:
        return
    for transcript in transcripts:
        try:
            check_fit(transcript, fraction, batch)
        except WindowfitError:  # the fit's own refusal (nothing sendable after its repairs), never a crash
            continue


def fuzz_test(files: list[Path], max_examples: int) -> Any:
    @settings(max_examples=max_examples, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        mutated(files),
        st.none() | st.sampled_from(sorted(FORMATS)),
        st.floats(0.01, 1.2),
        st.sampled_from((1, 4)),
        st.booleans(),
    )
    def run(case: tuple[str, bytes], fmt: str | None, fraction: float, batch: int, skip_invalid: bool) -> None:
        fuzz_one(*case, fmt, fraction, batch, skip_invalid)

    return run


def test_fuzz_loaders_and_fit_with_mutated_real_lines() -> None:
    fuzz_test(sources(DATA), max_examples=60)()


@pytest.mark.slow
def test_fuzz_long_run_over_the_corpus() -> None:
    files = sources(DATA) + sources(require_shared("corpus"))
    fuzz_test(files, max_examples=400)()
