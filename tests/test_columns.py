"""The columnar conversation (``fitting.columns``, issue 11 item 5): ``check`` on a messages file reads it one
message at a time into a role and an estimate per plain message, and plans on those columns. The plan must be
the one ``plan_fit`` makes on the loaded transcript, and the command's output the one it printed loading."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import damaged_transcripts, observed_transcripts, transcripts
from typer.testing import CliRunner

from windowfit.cli.app import app
from windowfit.fitting import SEED, Estimator, Message, Source, Text, Transcript, WindowfitError
from windowfit.fitting.columns import (
    PLAIN_SOURCE,
    columns_from_stream,
    columns_from_transcript,
    is_plain,
    plan_columns,
)
from windowfit.fitting.estimate import make_estimator
from windowfit.fitting.fit import Plan, plan_fit
from windowfit.fitting.formats import Input, detect, load
from windowfit.fitting.formats import messages as messages_format
from windowfit.fitting.size import Size, predict_size

ROOT = Path(__file__).resolve().parent.parent
SLOW = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
RULES = ("seed", "safe")


@st.composite
def _options(draw: st.DrawFn) -> dict[str, object]:
    """Fit options that reach every stage: small budgets, batches by count or tokens, cut steps, a store."""
    batch_tokens = draw(st.none() | st.integers(1, 3_000))
    return {
        "budget": draw(st.integers(1, 30_000)),
        "batch_size": draw(st.integers(0 if batch_tokens is not None else 1, 5)),
        "batch_tokens": batch_tokens,
        "cut_step": draw(st.none() | st.integers(1, 5_000)),
        "add_notice": draw(st.booleans()),
        "page_tokens": draw(st.none() | st.just(1_000)),
        "min_clear_ratio": draw(st.sampled_from([0.0, 2.0])),
    }


@SLOW
@given(st.one_of(transcripts(), damaged_transcripts(), observed_transcripts()), _options(), st.sampled_from(RULES))
def test_the_columns_plan_as_the_transcript(transcript: Transcript, options: dict[str, object], rule: str) -> None:
    """Generated transcripts (tool rounds, parallel calls, both dialects, text observations, and the defects
    ``repair`` fixes): the plan on the columns is ``plan_fit``'s, field for field."""
    est = make_estimator(rule)
    expected = plan_fit(transcript, estimator=est, **options)  # type: ignore[arg-type]
    fresh = make_estimator(rule)  # its own memo: the columns must not lean on what plan_fit estimated
    columns = columns_from_transcript(transcript, fresh)
    assert plan_columns(columns, estimator=fresh, **options) == expected  # type: ignore[arg-type]
    assert all(not is_plain(m) for m in columns.kept.values())
    assert len(columns.plain_tokens) + len(columns.kept) == len(transcript.messages)


def test_a_plain_message_is_held_as_a_role_and_an_estimate() -> None:
    """Of a file of tiny lines, only the message with a call is kept as a ``Message``; every other one is a
    shared stand-in of its role in the skeleton the plan runs on."""
    messages = [Message("user" if i % 2 == 0 else "assistant", (Text(f"{i} Съешь 東京"),)) for i in range(500)]
    transcript = Transcript((), (), tuple(messages))
    est = make_estimator()
    columns = columns_from_transcript(transcript, est)
    assert not columns.kept and len(columns.plain_tokens) == 500
    assert columns.total == sum(est.message(m).tokens for m in messages)
    skeleton = columns.skeleton().messages
    assert {id(m) for m in skeleton} == {id(skeleton[0]), id(skeleton[1])}
    assert skeleton[0].source is PLAIN_SOURCE and skeleton[0].content == ()


def test_the_columns_refuse_another_rule_and_a_measured_size() -> None:
    transcript = Transcript((), (), (Message("user", (Text("hi"),)),))
    columns = columns_from_transcript(transcript, make_estimator("seed"))
    with pytest.raises(ValueError, match="another rule"):
        plan_columns(columns, budget=10, estimator=Estimator(SEED.scaled_overhead(0)))
    anchored = Size(10, "anchored", 0, "recorded", None, 0, measured_tokens=10)
    with pytest.raises(ValueError, match="usage"):
        plan_columns(columns, budget=10, estimator=make_estimator("seed"), size=anchored)
    with pytest.raises(ValueError, match="usage"):
        columns_from_transcript(replace(transcript, context_start=1), make_estimator())


@st.composite
def _messages_file(draw: st.DrawFn) -> tuple[bytes, bool]:
    """A transcript as messages JSON Lines with what the line reader strips or skips (a byte order mark, CRLF
    endings, blanks around a line, blank and comment lines), and maybe a cut or damaged line (read with
    ``--skip-invalid``, which also skips a line that is JSON but no message)."""
    t = draw(st.one_of(transcripts(), damaged_transcripts(), observed_transcripts()))
    lines = messages_format.write(replace(t, format=messages_format.NAME)).splitlines()
    damaged = draw(st.booleans())
    if damaged:
        at = draw(st.integers(0, len(lines)))
        bad = draw(st.sampled_from([b'{"role": "user", "content": "cut', b"not json", b'{"no": "role"}', b"[1]"]))
        lines.insert(at, bad)
    out = []
    for line in lines:
        out.append(draw(st.sampled_from([b"", b" ", b"\n", b"// note\n"])) + line)
        out.append(draw(st.sampled_from([b"\n", b"\r\n", b"  \n"])))
    bom = draw(st.sampled_from([b"", b"\xef\xbb\xbf"]))
    return bom + b"".join(out), damaged


def _loaded_plan(path: Path, options: dict[str, object], rule: str, skip_invalid: bool) -> Plan:
    transcript = load(Input(str(path), keep_text=False), skip_invalid=skip_invalid)[0]
    est = make_estimator(rule)
    return plan_fit(transcript, estimator=est, size=predict_size(transcript, est), **options)  # type: ignore[arg-type]


def _streamed_plan(path: Path, options: dict[str, object], rule: str, skip_invalid: bool) -> Plan | None:
    """As ``check`` plans a streamed file (``cli.fit_cmd.check_stream``)."""
    source = Input(str(path), keep_text=False)
    found = messages_format.stream_messages(source, detect(source).name, skip_invalid=skip_invalid)
    if found is None:
        return None
    est = make_estimator(rule)
    columns = columns_from_stream(found.messages, found.header, est)
    size = predict_size(columns.header, est)
    size = replace(size, tokens=size.tokens + columns.total, estimated_tokens=columns.total)
    return plan_columns(columns, estimator=est, size=size, **options)  # type: ignore[arg-type]


@SLOW
@given(_messages_file(), _options(), st.sampled_from(RULES))
def test_a_streamed_messages_file_plans_as_loaded(
    tmp_path: Path, file: tuple[bytes, bool], options: dict[str, object], rule: str
) -> None:
    text, damaged = file
    path = tmp_path / "t.jsonl"
    path.write_bytes(text)
    try:
        expected = _loaded_plan(path, options, rule, damaged)
    except WindowfitError:  # a file the loader refuses (a damaged line, no message): check loads it and says so
        try:
            streamed = _streamed_plan(path, options, rule, damaged)
        except (WindowfitError, ValueError):
            return
        assert streamed is None  # not streamed (e.g. a broken first line): check loads it, and the loader says so
        return
    assert _streamed_plan(path, options, rule, damaged) == expected


PLANNED: list[int] = []


def _check(monkeypatch: pytest.MonkeyPatch, args: list[str], *, stream: bool) -> tuple[int, str, str]:
    """``windowfit check ARGS``: streamed into columns where it streams, or every file loaded as before."""
    # check's workers import these where they stream a messages file (cli/check_run.py): patched at the source
    from windowfit.fitting import columns
    from windowfit.fitting.formats import messages

    def counted(*a: object, **k: object) -> Plan:
        PLANNED.append(1)
        return plan_columns(*a, **k)  # type: ignore[arg-type]

    with monkeypatch.context() as patch:
        if stream:
            patch.setattr(columns, "plan_columns", counted)
        else:
            patch.setattr(messages, "stream_messages", lambda *a, **k: None)
        result = CliRunner().invoke(app, ["check", *args])
    return result.exit_code, result.stdout, result.stderr


def _tiny_lines(path: Path) -> None:
    lines: list[object] = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"{i} Съешь же 東京"} for i in range(400)
    ]
    call = {"type": "tool_use", "id": "c1", "name": "ls", "input": {"n": 1e2}}
    result = {"type": "tool_result", "tool_use_id": "c1", "content": "x " * 3_000}
    lines[101:101] = [{"role": "assistant", "content": [call]}, {"role": "user", "content": [result]}]
    lines.insert(7, {"role": "assistant", "content": [{"type": "tool_use", "id": "c2", "name": "ls", "input": {}}]})
    lines.insert(0, {"role": "system", "content": "You are terse."})
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines) + b"not json\n")


def test_the_check_command_streams_the_same_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``check`` on a messages file (streamed into columns) prints what it printed loading the file: text, JSON
    and GitHub annotations, a defect to list, a skipped line, every outcome, and a folder with the samples."""
    path = tmp_path / "t.jsonl"
    _tiny_lines(path)
    PLANNED.clear()
    for budget in ("100000", "3000", "600", "5"):
        for extra in (["--format", "json"], ["--format", "github"], ["--cut-step", "auto"], ["--size", "estimate"]):
            args = [str(path), "--budget", budget, "--skip-invalid", *extra]
            streamed = _check(monkeypatch, args, stream=True)
            assert streamed == _check(monkeypatch, args, stream=False)
    assert len(PLANNED) == 16  # every streamed run planned on columns
    assert "unanswered" in _check(monkeypatch, [str(path), "-b", "600", "--skip-invalid"], stream=True)[1]
    folder = [str(tmp_path), str(ROOT / "sample_transcripts"), "--budget", "20000", "--skip-invalid"]
    for extra in ([], ["--format", "json"]):
        assert _check(monkeypatch, [*folder, *extra], stream=True) == _check(
            monkeypatch, [*folder, *extra], stream=False
        )


def test_every_sample_messages_file_plans_as_loaded() -> None:
    """The sample transcripts and test data that stream (messages files, bare request bodies)."""
    found = sorted((ROOT / "sample_transcripts").rglob("*.json*")) + sorted((ROOT / "tests" / "data").rglob("*.json*"))
    planned = 0
    for path in (p for p in found if p.is_file()):
        for budget in (200, 5_000, 50_000):
            options: dict[str, object] = {"budget": budget}
            try:
                loaded = load(Input(str(path), keep_text=False))
                if len(loaded) != 1 or loaded[0].usage or loaded[0].context_start:
                    break  # not a messages file
                expected = _loaded_plan(path, options, "seed", False)
                streamed = _streamed_plan(path, options, "seed", False)
            except (WindowfitError, ValueError):
                break
            if streamed is None:
                break
            planned += 1
            assert streamed == expected, path
    assert planned >= 10


def test_a_repair_keeps_the_order_of_the_plain_estimates() -> None:
    """A synthetic result inserted and an orphan dropped between plain messages: each plain message keeps its
    own estimate (the stand-ins come in the column's order)."""
    from windowfit.fitting import ToolCall, ToolResult

    messages = [
        Message("user", (Text("a" * 40),), Source("f", 1)),
        Message("assistant", (ToolCall("c", "ls", "{}"),), Source("f", 2)),
        Message("user", (Text("b" * 400),), Source("f", 3)),
        Message("user", (ToolResult("zz", (Text("orphan"),)),), Source("f", 4)),
        Message("assistant", (Text("c" * 4_000),), Source("f", 5)),
    ]
    transcript = Transcript((), (), tuple(messages))
    est = make_estimator()
    expected = plan_fit(transcript, budget=500, estimator=est)
    assert expected.repairs and len(set(expected.message_tokens)) > 2
    assert plan_columns(columns_from_transcript(transcript, est), budget=500, estimator=est) == expected
