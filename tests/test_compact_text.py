"""The compact paths of issue 11, item 5: a long-line body's messages keep their JSON text as spans of the
mapped file (read when written), and the estimator shares equal estimates. Each must give what the ordinary
load gives: the same transcript, plan and written bytes as the same file read from bytes in memory (where the
loader keeps each text as bytes), on generated, damaged and corpus files."""

from __future__ import annotations

import pickle
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from conftest import require_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import damaged_transcripts, transcripts

from windowfit.fitting import Estimator, Transcript, WindowfitError, apply_plan, plan_fit
from windowfit.fitting.formats import Input, _document, format_of, load
from windowfit.fitting.formats import messages as messages_format
from windowfit.fitting.formats._document import FileSpan, LineSpan, long_line_document
from windowfit.fitting.formats.base import SNIFF_BYTES
from windowfit.fitting.transcript import Verbatim
from windowfit.fitting.wire.anthropic import request_to_json


@pytest.fixture(autouse=True)
def _map_every_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Leave the texts of every file in it, however small (the loaders do so from a megabyte on)."""
    monkeypatch.setattr(_document, "MAP_TEXTS_FROM", 0)


def _spans(t: Transcript) -> int:
    """How many texts ``t`` keeps as spans of a mapped file."""
    held = [m.verbatim for m in t.messages] + [t.system_verbatim]
    stored = [s for v in held if v is not None for s in (v.stored if isinstance(v.stored, tuple) else (v.stored,))]
    return sum(isinstance(s, (FileSpan, LineSpan)) for s in stored)


def _written(t: Transcript, budget: int) -> tuple[object, bytes]:
    plan = plan_fit(t, budget=budget, estimator=Estimator())
    fmt = format_of(t)
    assert fmt is not None and fmt.write is not None
    return plan, fmt.write(apply_plan(t, plan))


def _same_as_in_memory(path: Path, budget: int) -> Transcript:
    """Load ``path`` mapped and from its bytes: assert they agree; the mapped load."""
    (mapped,) = load(Input(str(path)), skip_invalid=False)
    (in_memory,) = load(Input(str(path), path.read_bytes()), skip_invalid=False)
    assert _spans(in_memory) == 0
    assert mapped == in_memory
    assert [m.exact_json for m in mapped.messages] == [m.exact_json for m in in_memory.messages]
    assert mapped.system_verbatim == in_memory.system_verbatim
    assert _written(mapped, budget) == _written(in_memory, budget)
    again = pickle.loads(pickle.dumps(mapped))  # a span travels as its bytes
    assert _spans(again) == 0
    assert _written(again, budget) == _written(in_memory, budget)
    return mapped


def _body(t: Transcript, *, system: bool) -> bytes:
    body = {"model": "m", "max_tokens": 100, **request_to_json(t), "pad": "x" * SNIFF_BYTES}
    if not system:
        body.pop("system", None)
    return orjson.dumps(body).replace(b'"max_tokens":100', b'"max_tokens":1E+2')  # a spelling to keep


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.one_of(transcripts(), damaged_transcripts()), st.integers(200, 20_000), st.booleans())
def test_a_mapped_long_line_body_fits_and_writes_as_one_read_from_bytes(
    tmp_path: Path, t: Transcript, budget: int, system: bool
) -> None:
    path = tmp_path / "body.json"
    path.write_bytes(_body(t, system=system))
    assert long_line_document(Input(str(path))) is True
    try:
        mapped = _same_as_in_memory(path, budget)
    except WindowfitError:  # an unsendable request, say: the in-memory reading must refuse it alike
        return
    assert _spans(mapped) >= len(mapped.messages)  # the mapped reading did keep spans, not bytes


@st.composite
def _decorated_lines(draw: st.DrawFn) -> bytes:
    """A transcript as messages JSON Lines, with what the line reader strips or skips: a byte order mark,
    CRLF endings, blanks around a line, blank and comment lines."""
    t = draw(st.one_of(transcripts(), damaged_transcripts()))
    lines = messages_format.write(replace(t, format=messages_format.NAME)).splitlines()
    out = []
    for line in lines:
        out.append(draw(st.sampled_from([b"", b" ", b"\t", b"\n", b"// note\n"])) + line)
        out.append(draw(st.sampled_from([b"\n", b"\r\n", b"  \n", b"\n\n"])))
    bom = draw(st.sampled_from([b"", b"\xef\xbb\xbf", b"\xef\xbb\xbf  "]))
    return bom + b"".join(out)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(_decorated_lines(), st.integers(200, 20_000))
def test_a_mapped_lines_file_fits_and_writes_as_one_read_from_bytes(tmp_path: Path, text: bytes, budget: int) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(text)
    try:
        mapped = _same_as_in_memory(path, budget)
    except WindowfitError:
        return
    assert _spans(mapped) >= len(mapped.messages)
    for m in mapped.messages:  # each span is the line as it stands in the file, stripped
        assert m.exact_json is not None and m.exact_json in text and m.exact_json == m.exact_json.strip()


def test_a_span_reads_the_file_as_it_was_written(tmp_path: Path) -> None:
    text = b'{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}], "x": "'
    text += b"y" * SNIFF_BYTES + b'"}'
    path = tmp_path / "b.json"
    path.write_bytes(text)
    (t,) = load(Input(str(path)), skip_invalid=False)
    assert [m.exact_json for m in t.messages] == [
        b'{"role": "user", "content": "a"}',
        b'{"role": "assistant", "content": "b"}',
    ]
    first = t.messages[0].verbatim
    assert first is not None and isinstance(first.stored[0], FileSpan)
    assert first == Verbatim((b'{"role": "user", "content": "a"}',), first.content)
    assert hash(first) == hash(Verbatim((b'{"role": "user", "content": "a"}',), first.content))


def _messages_files(root: Path) -> int:
    """Hold every file under ``root`` the messages format loads (JSON Lines, a body on one or many lines,
    a bare body the request-log format hands over) to ``_same_as_in_memory``; how many there were."""
    tried = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.stat().st_size < 20_000_000):
        try:
            found = load(Input(str(path), path.read_bytes()), skip_invalid=False)
            if len(found) != 1 or found[0].format not in (messages_format.NAME, messages_format.REQUEST):
                continue
            _same_as_in_memory(path, 20_000)
            tried += 1
        except WindowfitError:
            continue
    return tried


def test_real_messages_files_fit_as_read_from_bytes() -> None:
    if not _messages_files(require_shared("corpus")):  # the corpus of 2026-12-01 holds none
        pytest.skip("no file of the messages format in the corpus")


def test_sample_messages_files_fit_as_read_from_bytes() -> None:
    assert _messages_files(Path(__file__).parent.parent / "sample_transcripts") >= 3


def test_a_small_file_keeps_its_texts_as_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_document, "MAP_TEXTS_FROM", 1 << 20)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"role": "user", "content": "a"}\n')
    (t,) = load(Input(str(path)), skip_invalid=False)
    assert _spans(t) == 0 and t.messages[0].exact_json == b'{"role": "user", "content": "a"}'
