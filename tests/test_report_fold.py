"""``fold_report``, ``audit_messages`` and the messages stream (issue 8, memory): ``report`` and ``audit`` on a
messages file fold over its messages as they are read instead of loading them, and a request body alone on one
long line is read member by member. Each must give exactly what loading the file gives."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import orjson
import pytest
from conftest import require_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import damaged_transcripts, transcripts
from typer.testing import CliRunner

from windowfit.cli.app import app
from windowfit.fitting import (
    SEED,
    Estimator,
    Message,
    Source,
    Text,
    ToolCall,
    ToolResult,
    Transcript,
    WindowfitError,
    build_report,
)
from windowfit.fitting.audit import audit_messages, audit_transcript
from windowfit.fitting.estimate import make_estimator
from windowfit.fitting.formats import Input, detect, load
from windowfit.fitting.formats import messages as messages_format
from windowfit.fitting.formats._document import long_line_document
from windowfit.fitting.formats.base import SNIFF_BYTES
from windowfit.fitting.report import Report, fold_report
from windowfit.fitting.transcript import count_rounds, iter_tool_results, split_turns, tool_names
from windowfit.fitting.wire.anthropic import request_to_json

ROOT = Path(__file__).resolve().parent.parent
ESTIMATORS = (make_estimator("seed"), Estimator(SEED.scaled_overhead(0)), make_estimator("safe"))


def _folded(transcript: Transcript, estimator: Estimator, **options: object) -> Report:
    header = replace(transcript, messages=())
    return fold_report(iter(transcript.messages), header, estimator, **options)  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(transcripts(), damaged_transcripts()),
    st.sampled_from(ESTIMATORS),
    st.integers(0, 3),
    st.none() | st.integers(0, 5_000),
    st.integers(0, 2),
)
def test_the_fold_is_build_report(
    transcript: Transcript, estimator: Estimator, top: int, preamble: int | None, cut: int
) -> None:
    """Every field: counts, turns and rounds, tokens by class, role and kind, the largest results and the
    per-tool rows, the defects a fit would repair (damaged transcripts have them), the size; also for a
    transcript that opens mid-turn (its first messages cut: an assistant first, or an orphan result)."""
    transcript = replace(transcript, messages=transcript.messages[cut:])
    expected = build_report(transcript, estimator, budget=1_000, window=2_000, top=top, preamble=preamble)
    folded = _folded(transcript, estimator, budget=1_000, window=2_000, top=top, preamble=preamble)
    assert folded == expected
    # build_report folds too, so hold the counts to the transcript model's own definitions as well.
    messages = transcript.messages
    assert expected.messages == len(messages)
    assert expected.turns == len(split_turns(messages))
    assert expected.rounds == count_rounds(messages)
    assert expected.tool_calls == sum(len(m.tool_calls) for m in messages)
    results = list(iter_tool_results(messages))
    assert expected.tool_results == len(results)
    names = tool_names(messages)
    named = {(mi, r.call_id): names.get(r.call_id) or r.name or "?" for mi, _, r in results}
    assert all(row.tool == named[row.message_index, row.call_id] for row in expected.largest_results)
    assert expected.session_tokens == sum(estimator.message(m).tokens for m in messages) + expected.preamble_tokens


def test_the_fold_names_a_result_after_a_call_that_comes_later() -> None:
    """``build_report`` names a result after the last call with its id anywhere in the file, even after it."""
    messages = (
        Message("user", (Text("go"),), Source("t", 1)),
        Message("user", (ToolResult("c1", (Text("early"),)),), Source("t", 2)),
        Message("assistant", (ToolCall("c1", "grep", "{}"),), Source("t", 3)),
        Message("assistant", (ToolCall("c1", "read", "{}"),), Source("t", 4)),
    )
    transcript = Transcript((), (), messages)
    expected = build_report(transcript, ESTIMATORS[0])
    assert expected.largest_results[0].tool == "read"
    assert expected.defects  # an orphan result, unanswered calls, a reused id
    assert _folded(transcript, ESTIMATORS[0]) == expected


def test_the_fold_refuses_usage() -> None:
    """Measured usage anchors the size on what the fold does not keep: that transcript is loaded instead."""
    transcript = Transcript((), (), (), usage=())
    with pytest.raises(ValueError, match="usage"):
        fold_report(iter(()), replace(transcript, context_start=1), ESTIMATORS[0])


def _streamed(path: Path, *, skip_invalid: bool = False) -> Report | None:
    source = Input(str(path), keep_text=False)
    found = messages_format.stream_messages(source, detect(source).name, skip_invalid=skip_invalid)
    if found is None:
        return None
    return fold_report(found.messages, found.header, ESTIMATORS[0])


def _loaded(path: Path, *, skip_invalid: bool = False) -> Report | None:
    """The report of the file's one transcript (None for a file of several: not a messages file)."""
    found = load(Input(str(path), keep_text=False), skip_invalid=skip_invalid)
    return build_report(found[0], ESTIMATORS[0]) if len(found) == 1 else None


def _long_body(transcript: Transcript) -> dict[str, object]:
    """An Anthropic request body (as a harness logs it) longer than the sniffed head: the long-line path."""
    return {"model": "claude-sonnet-4-5", "max_tokens": 100, **request_to_json(transcript), "pad": "x" * SNIFF_BYTES}


def _lines(transcript: Transcript) -> bytes:
    return messages_format.write(replace(transcript, format=messages_format.NAME))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.one_of(transcripts(), damaged_transcripts()), st.booleans())
def test_a_streamed_messages_file_reports_as_loaded(tmp_path: Path, transcript: Transcript, one_line: bool) -> None:
    """Written as messages JSON Lines, or as one request body on one line longer than the sniffed head (the
    member-by-member path), then streamed: the report of the loaded file."""
    path = tmp_path / "t.jsonl"
    if one_line:
        body = _long_body(transcript)
        path.write_bytes(orjson.dumps(body) + b"\n")
        assert long_line_document(Input(str(path))) is True
    else:
        path.write_bytes(_lines(transcript))
    streamed = _streamed(path)
    assert streamed is not None
    assert streamed == _loaded(path)


def test_a_long_line_body_loads_as_parsed_whole(tmp_path: Path) -> None:
    """The member-by-member reading of a one-line body gives the transcript (and, for ``fit``, each message's
    text as the file spells it) that parsing the document whole gives."""
    messages = [
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "read", "input": {"n": 1e2}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "Съешь " * 20_000}]},
    ]
    text = orjson.dumps({"model": "m", "system": "Be terse.", "messages": messages}).replace(b"100.0", b"1E+2")
    path = tmp_path / "body.json"
    path.write_bytes(text)
    assert long_line_document(Input(str(path))) is True
    for keep_text in (True, False):
        (fast,) = load(Input(str(path), keep_text=keep_text), skip_invalid=False)
        whole = messages_format._document(text, str(path), skip_invalid=False, keep_text=keep_text)
        assert fast == whole
        assert [m.exact_json for m in fast.messages] == [m.exact_json for m in whole.messages]
        assert fast.system_verbatim == whole.system_verbatim
        assert fast.extra == whole.extra


@pytest.mark.parametrize(
    "text",
    [
        b'{"messages": [{"role": "user", "content": "a"}], "x": "' + b"y" * SNIFF_BYTES + b'"} trailing',
        b'{"messages": [{"role": "user", "content": "a"}], "x": "' + b"y" * SNIFF_BYTES + b'", "x": 1}',
        b'{"messages": [{"role": "user", "content": "a"},], "x": "' + b"y" * SNIFF_BYTES + b'"}',
        b'{"messages": [{"role": "user", "content": tru}], "x": "' + b"y" * SNIFF_BYTES + b'"}',
        b'{"role": "user", "content": "' + b"y" * SNIFF_BYTES + b'"}',
    ],
    ids=["trailing", "repeated-key", "trailing-comma", "bad-literal", "one-message"],
)
def test_what_the_scan_cannot_vouch_for_is_left_to_the_whole_reading(
    tmp_path: Path, text: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Extra data, a repeated key, broken JSON and a lone message: no member-by-member answer (the ordinary
    reading decides), and ``report`` prints what the loaded file gives, its located error included."""
    path = tmp_path / "t.json"
    path.write_bytes(text)
    assert long_line_document(Input(str(path))) in (None, False)
    assert _report(monkeypatch, [str(path)], stream=True) == _report(monkeypatch, [str(path)], stream=False)


def _report(monkeypatch: pytest.MonkeyPatch, args: list[str], *, stream: bool) -> tuple[int, str, str]:
    """``windowfit report ARGS``: streamed where it streams, or every file loaded as before the stream."""
    with monkeypatch.context() as patch:
        if not stream:
            patch.setattr("windowfit.fitting.formats.messages.stream_messages", lambda *a, **k: None)
        result = CliRunner().invoke(app, ["report", *args])
    return result.exit_code, result.stdout, result.stderr


def _files() -> list[Path]:
    found = sorted((ROOT / "sample_transcripts").rglob("*.json*")) + sorted((ROOT / "tests" / "data").rglob("*.json*"))
    return [p for p in found if p.is_file()]


def test_every_streamable_file_here_reports_as_loaded() -> None:
    """The sample transcripts and the test data: each messages file (or bare body) streamed, next to loaded."""
    streamed = 0
    for path in _files():
        try:
            expected = _loaded(path)
        except WindowfitError:  # a file the loader refuses: the stream is not asked
            continue
        try:
            found = _streamed(path)
        except (WindowfitError, ValueError):  # the command loads the file then (and words its error)
            continue
        if found is not None:
            streamed += 1
            assert found == expected, path
    assert streamed >= 10


def test_real_request_bodies_report_as_loaded() -> None:
    """Every file of the shared corpus that streams (a messages file or a bare request body)."""
    corpus = require_shared("corpus")
    for path in sorted(p for p in corpus.rglob("*") if p.is_file() and p.stat().st_size < 20_000_000):
        try:
            expected = _loaded(path)
            found = _streamed(path)
        except (WindowfitError, ValueError):  # another format's file, or one the loader refuses
            continue
        if found is not None:
            assert found == expected, path


def test_the_report_command_streams_the_same_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``report`` on a messages file (streamed) prints what it printed loading the file, in text and JSON, with
    a defect to list, a skipped line, and a folder."""
    path = tmp_path / "t.jsonl"
    lines = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"{i} Съешь же 東京"} for i in range(300)]
    lines.insert(3, {"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "ls", "input": {}}]})
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines) + b"not json\n")
    for extra in (["--skip-invalid"], ["--json", "--skip-invalid"], ["--budget", "100", "--skip-invalid"], []):
        streamed = _report(monkeypatch, [str(path), *extra], stream=True)
        assert streamed == _report(monkeypatch, [str(path), *extra], stream=False)
        assert streamed[0] == (0 if extra else 3)
    assert "unanswered" in _report(monkeypatch, [str(path), "--skip-invalid"], stream=True)[1]
    assert _report(monkeypatch, [str(tmp_path), str(ROOT / "sample_transcripts")], stream=True) == _report(
        monkeypatch, [str(tmp_path), str(ROOT / "sample_transcripts")], stream=False
    )


@dataclass(frozen=True)
class Words:
    """A fake tokenizer: one token per whitespace-separated word."""

    name: str = "words"

    def count(self, text: str) -> int:
        return len(text.split())


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.one_of(transcripts(), damaged_transcripts()), st.booleans(), st.booleans())
def test_a_streamed_audit_is_the_loaded_audit(
    tmp_path: Path, transcript: Transcript, one_line: bool, system_line: bool
) -> None:
    """``audit`` of a messages file (JSON Lines, with or without a leading system line, or a one-line body),
    its messages counted as they stream: every row of the audit of the loaded file."""
    path = tmp_path / "t.jsonl"
    if one_line:
        body = _long_body(transcript)
        path.write_bytes(orjson.dumps(body) + b"\n")
    else:
        system = orjson.dumps({"role": "system", "content": "Be terse."}) + b"\n" if system_line else b""
        path.write_bytes(system + _lines(transcript))
    source = Input(str(path), keep_text=False)
    found = messages_format.stream_messages(source, detect(source).name, skip_invalid=False)
    assert found is not None
    streamed = audit_messages(found.messages, found.header, ESTIMATORS[0], [Words()], top=3)
    (loaded,) = load(source, skip_invalid=False)
    assert streamed == audit_transcript(loaded, ESTIMATORS[0], [Words()], top=3)
    # Without --suggest the CLI keeps no row per message and block: the same sums, groups and worst rows.
    again = messages_format.stream_messages(source, detect(source).name, skip_invalid=False)
    assert again is not None
    lean = audit_messages(again.messages, again.header, ESTIMATORS[0], [Words()], top=3, keep_rows=False)
    expected = audit_transcript(loaded, ESTIMATORS[0], [Words()], top=3)
    rows_left_out = tuple(replace(t, messages=(), blocks=()) for t in expected.tokenizers)
    assert lean == replace(expected, tokenizers=rows_left_out)


def test_the_audit_command_streams_the_same_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``audit --provider-only`` and ``audit -t cl100k_base``, text and JSON, with and without ``--suggest``
    (rows kept or not): streamed as loaded."""
    path = tmp_path / "t.jsonl"
    lines = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"{i} Съешь же 東京 {'x' * i}"} for i in range(40)
    ]
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    for extra in (
        ["--provider-only"],
        ["-t", "cl100k_base"],
        ["--json", "--top", "2"],
        ["--suggest", "--top", "1"],
        ["--top", "0"],
    ):
        runs = []
        for stream in (True, False):
            with monkeypatch.context() as patch:
                if not stream:
                    patch.setattr("windowfit.cli.audit_cmd.stream_messages", lambda *a, **k: None)
                result = CliRunner().invoke(app, ["audit", str(path), *extra])
            runs.append((result.exit_code, result.stdout, result.stderr))
        assert runs[0] == runs[1]


def _hostile_bodies() -> dict[str, bytes]:
    pad = "x" * SNIFF_BYTES
    user = {"role": "user", "content": "hi"}
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "ls", "input": {"n": 1}}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}]}
    deep = {"role": "user", "content": "x", "meta": orjson.loads("[" * 199 + "]" * 199)}

    def body(messages: list[object], **keys: object) -> str:
        return orjson.dumps({"model": "claude-sonnet-4-5", **keys, "messages": messages, "pad": pad}).decode()

    plain = body([user, call, result])
    texts = {
        "nan": plain.replace('"n":1', '"n":NaN'),
        "bigint": plain.replace('"n":1', '"n":123456789012345678901234567890'),
        "exponent": plain.replace('"n":1', '"n":1E+2'),
        "surrogate": plain.replace('"ok"', '"\\ud800"'),
        "bom": "\ufeff" + plain,
        "blank-lines-after": plain + "\n\n  \n",
        "crlf-inside": plain.replace(',"pad"', ',\r\n"pad"'),
        "repeated-key": plain.replace('"model":"claude-sonnet-4-5"', '"model":"a","model":"b"'),
        "deep": body([user, deep]),
        "not-a-list": orjson.dumps({"model": "m", "messages": {"a": 1}, "pad": pad}).decode(),
        "not-an-object": body([user, 7, result]),
        "bad-system": body([user, 7], system=5),
        "orphans": body([user, result, result]),
        "array": orjson.dumps([user, call, result, {"x": pad}]).decode(),
        "openai": orjson.dumps(
            {"model": "gpt-4o", "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": pad}]}
        ).decode(),
    }
    found = {name: text.encode("utf-8", "surrogatepass") for name, text in texts.items()}
    found["invalid-utf8"] = plain.encode().replace(b'"ok"', b'"o\xff"')
    return found


@pytest.mark.parametrize("name", sorted(_hostile_bodies()))
@pytest.mark.parametrize("keep_text", [True, False])
def test_a_long_line_reads_as_parsed_whole_or_fails_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, keep_text: bool
) -> None:
    """Odd one-line documents (constants, long integers, escapes, a byte order mark, repeated keys, nesting at
    the limit, wrong shapes, broken UTF-8): the member-by-member reading gives the transcript, each message's
    text and the error that reading the line whole gives."""
    path = tmp_path / f"{name}.json"
    path.write_bytes(_hostile_bodies()[name])
    refused = {"crlf-inside", "deep", "invalid-utf8", "repeated-key"}  # left to the whole reading
    assert long_line_document(Input(str(path))) is (None if name in refused else True)

    def read() -> tuple[object, ...]:
        try:
            found = load(Input(str(path), keep_text=keep_text), skip_invalid=False)
        except WindowfitError as exc:
            return (type(exc).__name__, str(exc))
        return tuple((t, [m.exact_json for m in t.messages], t.system_verbatim, t.extra) for t in found)

    fast = read()
    with monkeypatch.context() as patch:
        patch.setattr("windowfit.fitting.formats._document.long_line_document", lambda source: None)
        patch.setattr("windowfit.fitting.formats.messages.long_line_document", lambda source: None)
        whole = read()
    assert fast == whole
