"""Claude Code sessions streamed for ``audit`` (``claude_code.stream``): the chain chosen over stand-ins for the
blocks, then each chosen message read again from its own lines. The streamed transcripts are the loaded ones
and the streamed audits the loaded audits: on every session of the corpus, the test data, and generated
sessions with branches, sidechains, compactions, split assistant replies, broken lines and subagent files."""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import DATA, require_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_format_claude_code import interleaved_sessions
from test_format_claude_code_fast import session_lines
from test_report_fold import Words
from typer.testing import CliRunner

from windowfit.cli import audit_cmd
from windowfit.cli.app import app
from windowfit.fitting import Transcript
from windowfit.fitting.audit import audit_session, audit_transcript
from windowfit.fitting.errors import InputError
from windowfit.fitting.estimate import make_estimator
from windowfit.fitting.formats import Input, claude_code
from windowfit.fitting.formats._jsonl import LineReader
from windowfit.fitting.transcript import Text

CORPUS = ("corpus", "transcripts", "claude_code")
SEED = make_estimator("seed")


def _by_lines(source: Input, *, skip_invalid: bool) -> Any:
    """``_read``'s file, made by ``_line_node`` one line at a time, as the stream reads it."""
    out = claude_code._File(source.path)
    reader = LineReader(source.path, skip_invalid)
    kinds: Counter[str] = Counter()
    with source.open() as f:
        for line, raw in enumerate(f, start=1):
            node = claude_code._line_node(reader, kinds, line, raw, source.keep_text)
            if node is not None:
                out.nodes.append(node)
    out.line_kinds, out.skipped = kinds, reader.skipped
    return out


def _outcome(read: Any, source: Input, skip_invalid: bool) -> Any:
    try:
        f = read(source, skip_invalid=skip_invalid)
    except InputError as exc:
        return (type(exc), str(exc))
    nodes = [tuple(getattr(n, name) for name in n.__slots__) for n in f.nodes]  # a node has no ``==``
    return (f.path, nodes, dict(f.line_kinds), f.skipped)


def _streamed(source: Input, skip_invalid: bool) -> Any:
    """What the stream gives, as ``load`` would: its transcripts with their messages read, or the error (a
    list)."""
    try:
        streams = claude_code.stream(source, skip_invalid=skip_invalid)
    except InputError as exc:
        return [type(exc), str(exc)]
    return tuple(replace(s.header, messages=tuple(s.messages())) for s in streams)


def _loaded(source: Input, skip_invalid: bool) -> Any:
    try:
        return claude_code.load(source, skip_invalid=skip_invalid)
    except InputError as exc:
        return [type(exc), str(exc)]


def _sources(found: Any) -> Any:
    """Message sources are not part of equality: compared too."""
    return [[m.source for m in t.messages] for t in found] if isinstance(found, tuple) else found


def assert_streams_as_loaded(source: Input, skip_invalid: bool) -> None:
    streamed, loaded = _streamed(source, skip_invalid), _loaded(source, skip_invalid)
    assert streamed == loaded
    assert _sources(streamed) == _sources(loaded)
    if not isinstance(loaded, tuple):
        return
    for s, t in zip(claude_code.stream(source, skip_invalid=skip_invalid), loaded, strict=True):
        # The header holds no text: every message is there, each block a stand-in of the same kind and ids.
        assert [[claude_code._stand_in(b) for b in m.content] for m in t.messages] == [
            list(m.content) for m in s.header.messages
        ]
        assert not any(isinstance(b, Text) and b.text for m in s.header.messages for b in m.content)
        assert_audits_as_loaded(s, t)


def assert_audits_as_loaded(s: claude_code.SessionStream, t: Transcript) -> None:
    expected = audit_transcript(t, SEED, [Words()], top=3)
    assert audit_session(s.header, s.messages(), SEED, [Words()], top=3) == expected
    lean = audit_session(s.header, s.messages(), SEED, [Words()], top=3, keep_rows=False)
    assert lean == replace(expected, tokenizers=tuple(replace(a, messages=(), blocks=()) for a in expected.tokenizers))


def _files() -> list[Path]:
    return sorted(claude_code.session_of(p) for p in DATA.joinpath("claude_code").rglob("*.jsonl"))


@pytest.mark.parametrize("keep_text", [False, True])
def test_the_line_reader_is_read_on_the_corpus_and_the_test_data(keep_text: bool) -> None:
    files = sorted(require_shared(*CORPUS).rglob("*.jsonl")) + _files()
    for path in files:
        for skip in (True, False):
            source = Input(str(path), keep_text=keep_text)
            assert _outcome(_by_lines, source, skip) == _outcome(claude_code._read, source, skip), path


def test_every_real_session_streams_and_audits_as_loaded() -> None:
    files = sorted({claude_code.session_of(p) for p in require_shared(*CORPUS).rglob("*.jsonl")})
    assert files
    for path in files:
        for skip in (True, False):
            assert_streams_as_loaded(Input(str(path), keep_text=False), skip)


def test_the_test_sessions_stream_and_audit_as_loaded() -> None:
    """With subagent files (``with_subagents/``), compaction, branches, parallel calls and defects."""
    for path in sorted(set(_files())):
        for skip in (True, False):
            assert_streams_as_loaded(Input(str(path), keep_text=False), skip)
            assert_streams_as_loaded(Input(str(path), path.read_bytes()), skip)  # stdin: no subagents


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=session_lines(), skip=st.booleans(), keep_text=st.booleans())
def test_odd_generated_lines_read_stream_and_audit_as_loaded(data: bytes, skip: bool, keep_text: bool) -> None:
    source = Input("session.jsonl", data, keep_text=keep_text)
    assert _outcome(_by_lines, source, skip) == _outcome(claude_code._read, source, skip)
    assert_streams_as_loaded(source, skip)


# --------------------------------------------------------------------------
# Sessions shaped as Claude Code writes them: a chain, with its forks, sidechains, compactions, split replies,
# redacted lines and subagent files.


def _line(value: dict[str, Any]) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


@st.composite
def chained_session(draw: st.DrawFn, agent: str = "") -> bytes:
    uuids: list[str] = []
    calls: list[str] = []
    out: list[bytes] = []
    words = st.text(st.sampled_from("ab Жж東 \n{}"), max_size=12)
    for n in range(draw(st.integers(1, 25))):
        uuid = f"{agent}u{n}"
        fork = draw(st.integers(0, 9))
        parent: str | None = uuids[-1] if uuids else None
        if fork == 0 and uuids:
            parent = draw(st.sampled_from(uuids))  # a branch (an edit, a retry)
        elif fork == 1:
            parent = draw(st.sampled_from([None, "redacted-id"]))
        side = bool(agent) or draw(st.integers(0, 7)) == 0
        envelope: dict[str, Any] = {"parentUuid": parent, "isSidechain": side, "sessionId": "s"}
        if side and draw(st.booleans()):
            envelope["agentId"] = agent or "a7"
        shape = draw(st.sampled_from(["user", "assistant", "split", "call", "result", "compact", "progress", "cut"]))
        usage = {
            "input_tokens": draw(st.integers(0, 50)),
            "cache_creation_input_tokens": draw(st.integers(0, 9)),
            "cache_read_input_tokens": draw(st.integers(0, 900)),
            "output_tokens": draw(st.integers(0, 30)),
        }
        if shape == "user":
            body = draw(st.one_of(words, st.lists(st.builds(lambda t: {"type": "text", "text": t}, words), max_size=2)))
            out.append(_line({**envelope, "type": "user", "message": {"role": "user", "content": body}, "uuid": uuid}))
        elif shape in ("assistant", "split", "call"):
            message_id = f"m{draw(st.integers(0, n))}"
            parts: list[dict[str, Any]] = [{"type": "text", "text": draw(words)}]
            if shape == "split":
                parts = [{"type": "thinking", "thinking": draw(words), "signature": "x"}, *parts]
            if shape == "call":
                call = f"c{draw(st.integers(0, n))}"  # sometimes a repeat: a duplicate or a reused id
                calls.append(call)
                parts = [{"type": "tool_use", "id": call, "name": "Bash", "input": {"cmd": draw(words)}}]
            for i, part in enumerate(parts):  # a reply is written a block a line, each line its own uuid
                at = uuid if i == 0 else f"{uuid}.{i}"
                message = {"role": "assistant", "id": message_id, "model": "claude-x", "content": [part]}
                if draw(st.booleans()):
                    message["usage"] = usage
                out.append(_line({**envelope, "type": "assistant", "message": message, "uuid": at}))
                envelope["parentUuid"] = at
            uuid = envelope["parentUuid"]
        elif shape == "result":
            call = draw(st.sampled_from(calls)) if calls and draw(st.integers(0, 5)) else "orphan"
            result = {"type": "tool_result", "tool_use_id": call, "content": draw(words)}
            if draw(st.booleans()):
                result["is_error"] = draw(st.booleans())
            message = {"role": "user", "content": [result]}
            out.append(_line({**envelope, "type": "user", "message": message, "uuid": uuid, "toolUseResult": {}}))
        elif shape == "compact":
            boundary = {**envelope, "parentUuid": None, "logicalParentUuid": parent, "type": "system"}
            out.append(_line({**boundary, "subtype": "compact_boundary", "uuid": uuid}))
            summary = {"role": "user", "content": "This session is being continued. " + draw(words)}
            out.append(_line({**envelope, "parentUuid": uuid, "type": "user", "message": summary, "uuid": uuid + "s"}))
            uuid += "s"
        elif shape == "progress":
            out.append(_line({**envelope, "type": "progress", "uuid": uuid}))
        else:  # a line a redaction tool cut: its links can still be read
            whole = _line({**envelope, "type": "user", "message": {"role": "user", "content": draw(words)}})
            out.append(whole[: draw(st.integers(len(whole) // 2, len(whole) - 1))] + f'"uuid":"{uuid}"'.encode())
        uuids.append(uuid)
    if draw(st.booleans()):
        out.append(_line({"type": "summary", "summary": "s", "leafUuid": uuids[-1]}))
    return b"\n".join(out) + b"\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    session=chained_session(),
    subagents=st.lists(chained_session(agent="a"), max_size=2),
    skip=st.booleans(),
    keep_text=st.booleans(),
)
def test_generated_sessions_stream_and_audit_as_loaded(
    session: bytes, subagents: list[bytes], skip: bool, keep_text: bool
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "session.jsonl"
        path.write_bytes(session)
        if subagents:
            (Path(folder) / "session" / "subagents").mkdir(parents=True)
        for i, text in enumerate(subagents):
            (Path(folder) / "session" / "subagents" / f"agent-{i}.jsonl").write_bytes(text)
        assert_streams_as_loaded(Input(str(path), keep_text=keep_text), skip)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session=interleaved_sessions(), keep_text=st.booleans())
def test_a_reply_written_between_its_results_streams_as_loaded(session: Any, keep_text: bool) -> None:
    """Issue 13 item 6: one message holds the lines of a reply, and the next its results' lines between them."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "session.jsonl"
        path.write_bytes(session[0])
        assert_streams_as_loaded(Input(str(path), keep_text=keep_text), False)


# --------------------------------------------------------------------------
# The command


def _audit(args: list[str], monkeypatch: pytest.MonkeyPatch, *, stream: bool) -> tuple[int, str, str]:
    with monkeypatch.context() as patch:
        if not stream:
            patch.setattr(audit_cmd, "_audit_sessions", lambda *a, **k: None)
        result = CliRunner().invoke(app, ["audit", *args])
    return result.exit_code, result.stdout, result.stderr


def test_the_audit_command_streams_sessions_with_the_same_output(monkeypatch: pytest.MonkeyPatch) -> None:
    files = [str(p) for p in sorted(set(_files()))]
    session = claude_code.FORMAT
    for path in files:  # each is streamed, not loaded after a failed stream
        found = audit_cmd.audit_stream(
            Input(path, keep_text=False), session, True, estimator="seed", tokenizers=(), top=3, keep_rows=False
        )
        assert found is not None, path
    for extra in (["--provider-only"], ["--provider-only", "--suggest", "--json"], ["-t", "cl100k_base", "--top", "2"]):
        args = [*files, "--skip-invalid", *extra]
        assert _audit(args, monkeypatch, stream=True) == _audit(args, monkeypatch, stream=False)


def test_a_session_that_changes_between_the_passes_is_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second pass checks each block against its stand-in; the command then loads the file (as it is now)."""
    path = tmp_path / "session.jsonl"
    original = DATA.joinpath("claude_code", "parallel.jsonl").read_bytes()
    path.write_bytes(original)
    (s, *_) = claude_code.stream(Input(str(path), keep_text=False), skip_invalid=False)
    path.write_bytes(original.replace(b'"id":"toolu_A"', b'"id":"toolu_Z"'))
    with pytest.raises(claude_code.ChangedWhileRead):
        list(s.messages())
    path.write_bytes(b"\n".join(original.split(b"\n")[:2]))
    with pytest.raises(claude_code.ChangedWhileRead):
        list(s.messages())

    stream = claude_code.stream
    changed = original.replace(b'"id":"toolu_A"', b'"id":"toolu_Z"')

    def changing(source: Input, *, skip_invalid: bool) -> tuple[claude_code.SessionStream, ...]:
        streams = stream(source, skip_invalid=skip_invalid)
        path.write_bytes(changed)
        return streams

    path.write_bytes(original)
    monkeypatch.setattr(claude_code, "stream", changing)
    streamed = _audit([str(path), "--provider-only", "--json"], monkeypatch, stream=True)
    loaded = _audit([str(path), "--provider-only", "--json"], monkeypatch, stream=False)
    assert streamed == loaded
    assert streamed[0] == 0 and '"path"' in streamed[1]
