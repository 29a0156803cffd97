"""``replay`` on columns (``fitting.replay.replay_columns``, issue 11 item 5): a messages file is read one
message at a time into a role and an estimate per plain message, with each message's line, and replayed on a
skeleton of shared stand-ins. Every run, and the command's output, must be the loaded replay's."""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import damaged_transcripts, observed_transcripts, transcripts
from typer.testing import CliRunner

from windowfit.cli.app import app
from windowfit.fitting import Transcript, WindowfitError
from windowfit.fitting.columns import PLAIN_SOURCE
from windowfit.fitting.estimate import make_estimator
from windowfit.fitting.fit import FitOptions
from windowfit.fitting.formats import Input, detect, load
from windowfit.fitting.formats import messages as messages_format
from windowfit.fitting.replay import (
    PolicyFactory,
    Run,
    Session,
    lined_columns,
    replay,
    replay_columns,
    standard_policies,
)
from windowfit.fitting.replay.presets import AnthropicClearToolUses, ClaudeCodeIdleClear, GeminiCliMasking
from windowfit.fitting.replay.run import MISSING
from windowfit.fitting.replay.times import line_times

ROOT = Path(__file__).resolve().parent.parent
SLOW = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
RULES = ("seed", "safe")


def _anthropic(session: Session, budget: int) -> AnthropicClearToolUses:
    return AnthropicClearToolUses(session, budget, trigger=budget // 2, keep=1)


def _gemini(session: Session, budget: int) -> GeminiCliMasking:
    return GeminiCliMasking(session, budget, protect=budget // 4, prunable=budget // 8)


def _idle(session: Session, budget: int) -> ClaudeCodeIdleClear:
    return ClaudeCodeIdleClear(session, budget, gap=60.0, keep=1)


def _policies(options: FitOptions, keep: int) -> list[PolicyFactory]:
    """Every default policy with the fit's options drawn, and the presets at thresholds a small generated
    session crosses (their defaults need 100,000 tokens)."""
    return [*standard_policies(keep=keep, options=options), _anthropic, _gemini, _idle]


@st.composite
def _options(draw: st.DrawFn) -> tuple[int, FitOptions, int]:
    """A budget that reaches every stage, the windowfit policies' options (batches, cut steps), keep-last's N."""
    budget = draw(st.integers(1, 20_000))
    batch_tokens = draw(st.none() | st.integers(1, 3_000))
    options = FitOptions(
        budget,
        batch_size=draw(st.integers(0 if batch_tokens is not None else 1, 4)),
        batch_tokens=batch_tokens,
        cut_step=draw(st.none() | st.integers(1, 5_000)),
    )
    return budget, options, draw(st.integers(0, 4))


def _same_runs(a: tuple[Run, ...], b: tuple[Run, ...]) -> None:
    assert [r.policy for r in a] == [r.policy for r in b]
    for x, y in zip(a, b, strict=True):
        assert x == y, x.policy  # every step (``Steps`` compares step by step) and every total


@SLOW
@given(
    st.one_of(transcripts(), damaged_transcripts(), observed_transcripts()),
    _options(),
    st.sampled_from(RULES),
    st.none() | st.integers(0, 3_000),
)
def test_the_columns_replay_as_the_transcript(
    transcript: Transcript, drawn: tuple[int, FitOptions, int], rule: str, preamble: int | None
) -> None:
    """Generated transcripts (tool rounds, parallel calls, both dialects, text observations, and the defects
    ``repair`` fixes): each policy's run on the columns is the loaded run, step for step, and the session it
    reads is the loaded one (only the plain messages' content is gone)."""
    budget, options, keep = drawn
    lines = {i: 10 + 3 * i for i in range(len(transcript.messages))}  # lines and times: the idle gap is read
    transcript = replace(
        transcript,
        messages=tuple(replace(m, source=replace(m.source, line=lines[i])) for i, m in enumerate(transcript.messages)),
    )
    times = {line: 100.0 * i * i for i, line in lines.items()}
    kwargs: dict[str, Any] = {"budget": budget, "window": budget * 2, "preamble": preamble, "times": times}
    expected = replay(transcript, _policies(options, keep), estimator=make_estimator(rule), **kwargs)
    fresh = make_estimator(rule)  # its own memo: the columns must not lean on what the loaded replay estimated
    lined = lined_columns(iter(transcript.messages), lambda: replace(transcript, messages=()), fresh)
    assert list(lined.lines) == list(lines.values())
    _same_runs(replay_columns(lined, _policies(options, keep), estimator=fresh, **kwargs), expected)


def test_the_session_on_columns_is_the_loaded_one() -> None:
    """Every value a policy reads of the session, on a transcript with a repair (an orphan dropped, a
    synthetic result inserted) between plain messages; its plain messages are the shared stand-ins."""
    from windowfit.fitting import Message, Source, Text, ToolCall, ToolResult
    from windowfit.fitting.repair import repair

    messages = [
        Message("user", (Text("a" * 40),), Source("f", 1)),
        Message("assistant", (ToolCall("c", "ls", "{}"),), Source("f", 2)),
        Message("user", (Text("b" * 400),), Source("f", 3)),
        Message("user", (ToolResult("zz", (Text("orphan"),)),), Source("f", 4)),
        Message("assistant", (Text("c" * 4_000),), Source("f", 5)),
        Message("assistant", (ToolCall("d", "ls", "{}"),), Source("f", 6)),
        Message("user", (ToolResult("d", (Text("out " * 500),)),), Source("f", 7)),
        Message("assistant", (Text("done"),), Source("f", 8)),
    ]
    transcript = Transcript((), (), tuple(messages))
    est = make_estimator()
    loaded = Session.of(repair(transcript)[0], est)
    captured: list[Session] = []

    def capture(session: Session, budget: int) -> Any:
        captured.append(session)
        return standard_policies()[0](session, budget)

    lined = lined_columns(iter(messages), lambda: replace(transcript, messages=()), est)
    runs = replay_columns(lined, [capture], budget=300, estimator=est)
    (session,) = captured
    for name in ("tokens", "before", "turn_starts", "unit_starts", "round_starts", "steps", "result_messages"):
        assert list(getattr(session, name)) == list(getattr(loaded, name)), name
    for name in ("preamble", "results", "head_stop", "note_tokens"):
        assert getattr(session, name) == getattr(loaded, name), name
    assert len(set(loaded.tokens)) > 3 and len(session.transcript.messages) == len(loaded.transcript.messages)
    assert sum(m.source is PLAIN_SOURCE for m in session.transcript.messages) == 4
    assert [s.line for s in runs[0].steps] == [
        s.line for s in replay(transcript, standard_policies()[:1], budget=300, estimator=est)[0].steps
    ]
    with pytest.raises(ValueError, match="another rule"):
        replay_columns(lined, [], budget=1, estimator=make_estimator("safe"))
    with pytest.raises(ValueError, match="one line"):
        replay_columns(replace(lined, lines=lined.lines[:-1]), [], budget=1, estimator=est)


@st.composite
def _messages_file(draw: st.DrawFn) -> tuple[bytes, bool]:
    """A transcript as messages JSON Lines, maybe with a timestamp on each line (the idle gap policy reads
    them), with what the line reader strips or skips (a byte order mark, CRLF endings, blanks around a line,
    blank and comment lines), and maybe a cut or damaged line (read with ``--skip-invalid``)."""
    t = draw(st.one_of(transcripts(), damaged_transcripts(), observed_transcripts()))
    lines = messages_format.write(replace(t, format=messages_format.NAME)).splitlines()
    if draw(st.booleans()):
        gaps = draw(st.lists(st.integers(0, 8_000), min_size=len(lines), max_size=len(lines)))
        stamped, at = [], 1_767_225_600
        for line, gap in zip(lines, gaps, strict=True):
            at += gap
            value = orjson.loads(line)
            if isinstance(value, dict):
                value["timestamp"] = at
            stamped.append(orjson.dumps(value))
        lines = stamped
    damaged = draw(st.booleans())
    if damaged:
        at_line = draw(st.integers(0, len(lines)))
        bad = draw(st.sampled_from([b'{"role": "user", "content": "cut', b"not json", b'{"no": "role"}', b"[1]"]))
        lines.insert(at_line, bad)
    out = []
    for line in lines:
        out.append(draw(st.sampled_from([b"", b" ", b"\n", b"// note\n"])) + line)
        out.append(draw(st.sampled_from([b"\n", b"\r\n", b"  \n"])))
    bom = draw(st.sampled_from([b"", b"\xef\xbb\xbf"]))
    return bom + b"".join(out), damaged


def _loaded_runs(path: Path, kwargs: dict[str, Any], policies: list[PolicyFactory], skip: bool) -> tuple[Run, ...]:
    transcript = load(Input(str(path), keep_text=False), skip_invalid=skip)[0]
    return replay(transcript.live(), policies, times=line_times(str(path)), **kwargs)


def _streamed_runs(
    path: Path, kwargs: dict[str, Any], policies: list[PolicyFactory], skip: bool
) -> tuple[Run, ...] | None:
    """As ``replay`` streams a file (``cli.replay_cmd.replay_stream``)."""
    source = Input(str(path), keep_text=False)
    found = messages_format.stream_messages(source, detect(source).name, skip_invalid=skip)
    if found is None:
        return None
    lined = lined_columns(found.messages, found.header, kwargs["estimator"])
    return replay_columns(lined, policies, times=line_times(str(path)), **kwargs)


@SLOW
@given(_messages_file(), _options(), st.sampled_from(RULES))
def test_a_streamed_messages_file_replays_as_loaded(
    tmp_path: Path, file: tuple[bytes, bool], drawn: tuple[int, FitOptions, int], rule: str
) -> None:
    text, damaged = file
    path = tmp_path / "t.jsonl"
    path.write_bytes(text)
    budget, options, keep = drawn
    try:
        kwargs: dict[str, Any] = {"budget": budget, "window": budget * 2, "estimator": make_estimator(rule)}
        expected = _loaded_runs(path, kwargs, _policies(options, keep), damaged)
    except WindowfitError:  # a file the loader refuses: the stream stops or passes (replay then loads it)
        with contextlib.suppress(WindowfitError, ValueError):
            assert _streamed_runs(path, kwargs, _policies(options, keep), damaged) is None
        return
    kwargs["estimator"] = make_estimator(rule)
    streamed = _streamed_runs(path, kwargs, _policies(options, keep), damaged)
    assert streamed is not None
    _same_runs(streamed, expected)


def test_every_sample_messages_file_replays_as_loaded() -> None:
    """The sample transcripts and test data that stream (messages files, bare request bodies)."""
    found = sorted((ROOT / "sample_transcripts").rglob("*.json*")) + sorted((ROOT / "tests" / "data").rglob("*.json*"))
    replayed = 0
    for path in (p for p in found if p.is_file()):
        try:
            loaded = load(Input(str(path), keep_text=False))
        except WindowfitError:
            continue
        if len(loaded) != 1 or loaded[0].usage or loaded[0].context_start:
            continue  # not a messages file
        for budget in (300, 5_000):
            kwargs: dict[str, Any] = {"budget": budget, "window": 2 * budget, "estimator": make_estimator()}
            try:
                streamed = _streamed_runs(path, kwargs, standard_policies(), False)
            except (WindowfitError, ValueError):
                break
            if streamed is None:
                break
            kwargs["estimator"] = make_estimator()
            _same_runs(streamed, _loaded_runs(path, kwargs, standard_policies(), False))
            replayed += 1
    assert replayed >= 10


STREAMED: list[bool] = []


def _replay(monkeypatch: pytest.MonkeyPatch, args: list[str], *, stream: bool) -> tuple[int, str, str, list[Any]]:
    """``windowfit replay ARGS``: streamed into columns where it streams, or loaded as before; with the runs
    ``--plot`` is given (the image is drawn from them alone)."""
    from windowfit.cli import replay_cmd

    plotted: list[Any] = []
    real = replay_cmd.replay_stream

    def counted(*a: Any, **k: Any) -> Any:
        found = real(*a, **k)
        STREAMED.append(found is not None)
        return found

    with monkeypatch.context() as patch:
        patch.setattr(replay_cmd, "replay_stream", counted if stream else lambda *a, **k: None)
        patch.setattr(replay_cmd, "save_plot", lambda runs, path, **k: plotted.append((runs, path, k)))
        result = CliRunner().invoke(app, ["replay", *args])
    return result.exit_code, result.stdout, result.stderr, plotted


def _tool_heavy_lines(path: Path) -> None:
    """Tiny lines, a system line, defects (an unanswered call, an orphan result), and tool rounds whose
    results add up past every default preset's threshold (Anthropic's 100,000 input tokens, Gemini CLI's
    50,000 + 30,000), with timestamps and an idle gap of two hours (Claude Code's 60 minutes)."""
    import random

    rng = random.Random(5)
    lines: list[dict[str, object]] = [{"role": "system", "content": "You are terse."}]
    for i in range(200):
        lines.append({"role": "user" if i % 2 == 0 else "assistant", "content": f"{i} Съешь же 東京"})
    for k in range(90):
        # Gemini CLI's shell tool and Claude Code's (whose idle clearing clears only its own tools' results).
        call = {"type": "tool_use", "id": f"c{k}", "name": "Bash" if k % 2 else "run_shell_command", "input": {"n": k}}
        output = "Output: " + "\n".join(f"line {j} " + "x" * rng.randrange(10, 90) for j in range(90))
        lines.append({"role": "assistant", "content": [call]})
        lines.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"c{k}", "content": output}]})
        lines.append({"role": "assistant", "content": f"step {k}"})
        lines.append({"role": "user", "content": "go on"})
    lines.insert(30, {"role": "assistant", "content": [{"type": "tool_use", "id": "lost", "name": "ls", "input": {}}]})
    lines.insert(90, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "nobody", "content": "x"}]})
    at = 1_767_225_600
    for i, line in enumerate(lines):
        at += 7_200 if i == len(lines) // 2 else 30
        line["timestamp"] = at
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines) + b"not json\n")


def test_the_replay_command_streams_the_same_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``replay`` on a messages file (streamed into columns) prints what it printed loading the file: the
    table and charts, ``--json``, the runs ``--plot`` draws, with every default policy past its threshold."""
    path = tmp_path / "t.jsonl"
    _tool_heavy_lines(path)
    STREAMED.clear()
    runs = 0
    for args in (
        ["--budget", "40000", "--json"],
        ["--budget", "40000", "--window", "60000", "--cut-step", "auto", "--plot", str(tmp_path / "p.png")],
        ["--budget", "900", "--json", "--preamble", "500", "--model", "claude-sonnet-4-5"],
        ["--budget", "20000", "-p", "windowfit", "-p", "gemini-cli-masking", "--keep", "1", "--batch-size", "2"],
    ):
        full = [str(path), "--skip-invalid", *args]
        streamed = _replay(monkeypatch, full, stream=True)
        loaded = _replay(monkeypatch, full, stream=False)
        assert streamed[:3] == loaded[:3], args
        assert streamed[3] == loaded[3]
        runs += 1
    assert [True] * runs == STREAMED  # every run above was streamed
    document = orjson.loads(
        _replay(monkeypatch, [str(path), "--skip-invalid", "-b", "40000", "--json"], stream=True)[1]
    )
    cleared = {r["policy"]: r["retrievable_results"] for r in document["runs"]}
    for name in ("anthropic-clear-tool-uses", "gemini-cli-masking", "claude-code-idle-clear", "windowfit", "keep-last"):
        assert cleared[name] > 0, name  # each crossed its own threshold
    assert document["runs"][0]["steps"][-1]["line"] is not None


def test_the_samples_replay_the_same_streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each sample transcript, as the command prints it, streamed and loaded; a folder is loaded."""
    STREAMED.clear()
    for path in sorted((ROOT / "sample_transcripts").glob("*.jsonl")):
        for args in (["--budget", "3000", "--window", "8000"], ["--budget", "20000", "--json"]):
            full = [str(path), *args]
            assert _replay(monkeypatch, full, stream=True)[:3] == _replay(monkeypatch, full, stream=False)[:3]
    assert STREAMED and all(STREAMED)
    STREAMED.clear()
    folder = [str(ROOT / "sample_transcripts"), "--budget", "3000", "--index", "1"]
    assert _replay(monkeypatch, folder, stream=True)[:3] == _replay(monkeypatch, folder, stream=False)[:3]
    assert not STREAMED
    lines = {
        s["line"]
        for r in orjson.loads(_replay(monkeypatch, [str(path), "-b", "3000", "--json"], stream=True)[1])["runs"]
        for s in r["steps"]
    }
    assert lines and MISSING not in lines and None not in lines


def test_a_finished_column_takes_the_narrowest_integer_that_holds_it() -> None:
    """A run's integer columns, once done, are copied into the narrowest signed machine integer that holds
    every value (a token count past 2**31 stays in 8 bytes), the same values."""
    from array import array

    from windowfit.fitting.replay.run import narrowed

    cases = (
        ([0, 127, -1], 1),
        ([128, -128], 2),
        ([-(2**15) - 1, 2**15 - 1], 4),
        ([2**31 - 1, -(2**31)], 4),
        ([2**31], 8),
        ([-(2**31) - 1, 0], 8),
    )
    for values, size in cases:
        out = narrowed(array("q", values))
        assert out.itemsize == size and list(out) == values, values
    assert narrowed(array("q")).itemsize == 8
    assert narrowed(array("B", [3])).typecode == "B"
