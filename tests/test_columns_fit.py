"""``fit`` on a messages file read into columns (``fitting.columns_fit``, issue 11 item 5): the request it
writes and everything it prints must be what it wrote and printed loading the file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_columns import _messages_file, _tiny_lines
from typer.testing import CliRunner

from windowfit.cli.app import app
from windowfit.cli.exit_codes import ExitCode
from windowfit.fitting import Message, Source, Text, ToolCall, ToolResult, Transcript
from windowfit.fitting.columns import columns_from_transcript, is_plain, plan_columns
from windowfit.fitting.columns_fit import fitted_messages
from windowfit.fitting.estimate import make_estimator
from windowfit.fitting.fit import apply_plan, plan_fit, sent

ROOT = Path(__file__).resolve().parent.parent
STREAMED: list[int] = []


def _fit(
    monkeypatch: pytest.MonkeyPatch, folder: Path, args: list[str], *, stream: bool
) -> tuple[int, bytes, str, bytes]:
    """``windowfit fit ARGS`` run in ``folder`` (its -o names ``out.jsonl`` there): exit code, stdout, stderr and
    the bytes written; streamed into columns where it streams, or loaded as before."""
    from windowfit.cli import fit_cmd

    real = fit_cmd._fit_streamed

    def counted(*a: object, **k: object) -> bool:
        done = True  # also when it exits (too long)
        try:
            done = real(*a, **k)  # type: ignore[arg-type]
            return done
        finally:
            STREAMED.append(int(done))

    out = folder / "out.jsonl"
    out.unlink(missing_ok=True)
    here = os.getcwd()
    with monkeypatch.context() as patch:
        if stream:
            patch.setattr(fit_cmd, "_fit_streamed", counted)
        else:
            patch.setattr(fit_cmd, "stream_messages", lambda *a, **k: None)
        os.chdir(folder)
        try:
            result = CliRunner().invoke(app, ["fit", *args])
        finally:
            os.chdir(here)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout_bytes, result.stderr, out.read_bytes() if out.exists() else b""


@st.composite
def _fit_args(draw: st.DrawFn) -> list[str]:
    """Options that reach every stage: small budgets, batches by count or tokens, cut steps, the notice; every
    output (``-o FILE``, ``-o -``, none) and mode (text, ``--json``, each ``--diff``)."""
    args = ["--budget", str(draw(st.integers(1, 30_000)))]
    batch_tokens = draw(st.none() | st.integers(1, 3_000))
    if batch_tokens is not None:
        args += ["--batch-tokens", str(batch_tokens)]
    args += ["--batch-size", str(draw(st.integers(0 if batch_tokens is not None else 1, 5)))]
    cut = draw(st.none() | st.integers(1, 5_000))
    if cut is not None:
        args += ["--cut-step", str(cut)]
    if draw(st.booleans()):
        args.append("--add-notice")
    args += ["--min-clear-ratio", draw(st.sampled_from(["0", "2"]))]
    args += ["--estimator", draw(st.sampled_from(["seed", "safe"]))]
    args += draw(st.sampled_from([["-o", "out.jsonl"], ["-o", "-"], []]))
    # The modes that need the whole transcript (every message's line and fate) load it: the same output too.
    args += draw(st.sampled_from([[], [], ["--diff", "summary"], ["--diff", "full"], ["--json"]]))
    return args


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(_messages_file(), _fit_args())
def test_fit_streams_the_same_request_and_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file: tuple[bytes, bool], args: list[str]
) -> None:
    """Generated messages files (tool rounds, parallel calls, defects, text observations, both dialects, a byte
    order mark, CRLF, blank and comment lines, a cut or damaged line): ``fit`` writes the same bytes and prints
    the same diff through the columns as loading the file."""
    text, damaged = file
    (tmp_path / "t.jsonl").write_bytes(text)
    full = ["t.jsonl", *args, *(["--skip-invalid"] if damaged else [])]
    assert _fit(monkeypatch, tmp_path, full, stream=True) == _fit(monkeypatch, tmp_path, full, stream=False)


def test_fit_on_tiny_lines_streams_every_stage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of tiny lines with a call, a result and a defect, at budgets reaching each stage and too long."""
    lines: list[object] = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"{i} Съешь же 東京"} for i in range(400)
    ]
    rounds = [
        [
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"r{k}", "name": "cat", "input": {}}]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"r{k}", "content": "y " * (4_000 if k < 6 else 60)}
                ],
            },
        ]
        for k in range(36)
    ]
    lines[201:201] = rounds[0] + rounds[1]  # two rounds in an old turn; the newest turn: four big, 30 small
    lines += [{"role": "user", "content": "go on"}, *(m for r in rounds[2:] for m in r)]
    lines.append({"role": "assistant", "content": [{"type": "text", "text": "done"}]})
    (tmp_path / "r.jsonl").write_bytes(b"".join(orjson.dumps(line) + b"\r\n" for line in lines))
    _tiny_lines(tmp_path / "t.jsonl")  # a system line: loaded
    STREAMED.clear()
    outcomes = set()
    for name in ("r.jsonl", "t.jsonl"):
        for budget in ("100000", "12000", "4000", "1000", "5"):
            for extra in ([], ["--add-notice"], ["--cut-step", "auto"], ["-o", "-"], ["--batch-size", "1"]):
                args = [name, "--budget", budget, "--skip-invalid", "-o", "out.jsonl", *extra]
                streamed = _fit(monkeypatch, tmp_path, args, stream=True)
                assert streamed == _fit(monkeypatch, tmp_path, args, stream=False), args
                outcomes.add(streamed[1].decode().split("\n")[0].split()[-1] if streamed[1] else "")
    assert STREAMED == [1] * 25, STREAMED  # every run on r.jsonl streamed; t.jsonl (a system line) loaded
    assert {"fits", "cleared", "turns-dropped", "rounds-dropped", "too-long"} <= outcomes


def test_every_sample_fits_the_same_streamed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sample transcripts and the messages files of the test data, at three budgets."""
    found = sorted((ROOT / "sample_transcripts").rglob("*.jsonl")) + sorted((ROOT / "tests" / "data").rglob("*.jsonl"))
    STREAMED.clear()
    for path in (p for p in found if p.is_file() and p.stat().st_size < 3_000_000):
        for budget in ("500", "8000", "60000"):
            args = [str(path), "--budget", budget, "-o", "out.jsonl"]
            assert _fit(monkeypatch, tmp_path, args, stream=True) == _fit(monkeypatch, tmp_path, args, stream=False)
    assert sum(STREAMED) >= 3


def test_the_fitted_messages_are_apply_plans() -> None:
    """``fitted_messages`` over the skeleton, asking for each kept plain message by its ordinal in increasing
    order, gives ``apply_plan``'s messages."""
    messages = [
        Message("user" if i % 2 == 0 else "assistant", (Text(f"{i} " * 30),), Source("f", i)) for i in range(60)
    ]
    messages[21:21] = [
        Message("assistant", (ToolCall("c", "ls", "{}"),), Source("f", 100)),
        Message("user", (ToolResult("c", (Text("z " * 2_000),)),), Source("f", 101)),
        Message("assistant", (ToolCall("d", "ls", "{}"),), Source("f", 102)),
    ]
    plain = [m for m in messages if is_plain(m)]
    transcript = Transcript((), (), tuple(messages))
    est = make_estimator()
    columns = columns_from_transcript(transcript, est)
    outcomes = set()
    for budget in (100_000, 2_000, 900, 300):
        plan = plan_fit(transcript, budget=budget, estimator=est)
        assert plan_columns(columns, budget=budget, estimator=est) == plan
        asked: list[int] = []

        def ask(k: int, asked: list[int] = asked) -> Message:
            asked.append(k)
            return plain[k]

        joined = sent(apply_plan(transcript, plan).messages)
        assert tuple(fitted_messages(columns.skeleton(), plan, ask, lambda m: m)) == tuple(joined)
        assert asked == sorted(set(asked))
        outcomes.add(plan.outcome)
    assert {"fits", "turns-dropped"} <= outcomes


@pytest.mark.parametrize("output", ["file", "-"])
@pytest.mark.parametrize("how", ["kept line", "same size and time", "appended", "first pass"])
def test_a_file_changed_while_read_is_a_located_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, output: str
) -> None:
    """The file rewritten between the two passes (a kept line changed, one changed with its size and
    modification time kept, a line appended) or during the first: exit 3 with one error line naming the
    file (and the line, where one differs), no traceback, nothing written to ``-o FILE``."""
    from windowfit.cli import fit_cmd

    path = tmp_path / "t.jsonl"
    lines = [orjson.dumps({"role": "user" if i % 2 == 0 else "assistant", "content": f"{i} hello"}) for i in range(400)]
    path.write_bytes(b"\n".join(lines) + b"\n")

    def rewrite() -> None:
        text, stat = path.read_bytes(), path.stat()
        if how == "appended":
            path.write_bytes(text + b'{"role": "user", "content": "more"}\n')
        else:
            path.write_bytes(text.replace(b"399 hello", b"399 HELLO" if how == "same size and time" else b"399 hi!"))
        if how == "same size and time":
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
            assert fit_cmd._stamp(str(path)) == (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)

    if how == "first pass":
        real_columns = fit_cmd.columns_from_stream

        def read_then_rewrite(*a: Any, **k: Any) -> Any:
            found = real_columns(*a, **k)
            rewrite()
            return found

        monkeypatch.setattr(fit_cmd, "columns_from_stream", read_then_rewrite)
    else:
        real_texts = fit_cmd.LineTexts

        def rewrite_then_read(source: Any) -> Any:
            rewrite()
            return real_texts(source)

        monkeypatch.setattr(fit_cmd, "LineTexts", rewrite_then_read)
    out = tmp_path / "out.jsonl"
    target = str(out) if output == "file" else "-"
    result = CliRunner().invoke(app, ["fit", str(path), "--budget", "2000", "-o", target])
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.stderr
    where = f"{path}:400" if how in ("kept line", "same size and time") else str(path)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: {where}: changed while windowfit read it: " + errors[0].rsplit(": ", 1)[-1]]
    assert not out.exists()
