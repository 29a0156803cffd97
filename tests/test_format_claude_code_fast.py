"""The Claude Code loader's fast line reader (``claude_code._read``) against its general path
(``claude_code._read_general``, which goes through ``LineReader.entries`` and ``anthropic.block_from_json``):
the same nodes, line counts, skipped lines and errors, on the corpus and on generated sessions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import DATA, require_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowfit.fitting._json import bracket_count, bracket_count_pure
from windowfit.fitting.errors import InputError
from windowfit.fitting.formats import Input, claude_code, load

CORPUS = ("corpus", "transcripts", "claude_code")


def both(source: Input, *, skip_invalid: bool) -> tuple[Any, Any]:
    """What each path makes of ``source``: its file (nodes, kinds, skipped), or the error it raised."""

    def run(read: Any) -> Any:
        try:
            f = read(source, skip_invalid=skip_invalid)
        except InputError as exc:
            return (type(exc), str(exc))
        return (f.path, [_fields(node) for node in f.nodes], dict(f.line_kinds), f.skipped)

    return run(claude_code._read), run(claude_code._read_general)


def _fields(node: Any) -> tuple[Any, ...]:
    """A node's values, slot by slot: ``claude_code._Node`` is a plain slotted class, compared by identity."""
    return tuple(getattr(node, name) for name in type(node).__slots__)


def corpus_files() -> list[Path]:
    return sorted(require_shared(*CORPUS).rglob("*.jsonl"))


@pytest.mark.parametrize("keep_text", [False, True])
def test_fast_reader_matches_the_general_one_on_the_corpus(keep_text: bool) -> None:
    files = corpus_files() + sorted(DATA.joinpath("claude_code").rglob("*.jsonl"))
    assert files
    for path in files:
        for skip in (True, False):
            fast, general = both(Input(str(path), keep_text=keep_text), skip_invalid=skip)
            assert fast == general, path


def test_fast_loader_gives_the_general_transcripts_on_the_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    for path in corpus_files():
        fast = claude_code.load(Input(str(path)), skip_invalid=True)
        with monkeypatch.context() as m:
            m.setattr(claude_code, "_read", claude_code._read_general)
            general = claude_code.load(Input(str(path)), skip_invalid=True)
        assert fast == general, path
        # Message sources are not part of equality: compare them too.
        assert [[x.source for x in t.messages] for t in fast] == [[x.source for x in t.messages] for t in general]


# --------------------------------------------------------------------------
# Generated sessions: every shape the fast path builds directly, and the ones it hands on.

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 2**70), st.text(max_size=8))
_json = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
)
_ids = st.sampled_from(["a", "b", "c", "d", "e", "toolu_1", "toolu_2"])
_odd = st.one_of(st.none(), st.integers(0, 3), st.lists(st.text(max_size=3), max_size=2), st.booleans())


def _dumps(value: Any) -> bytes:
    """Compact JSON; integers past 64 bits too (orjson refuses them, the lenient reader takes them)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _or_odd(draw: st.DrawFn, strategy: st.SearchStrategy[Any]) -> Any:
    """Mostly a value of ``strategy``; one time in eight a value of another type."""
    return draw(_odd) if draw(st.integers(0, 7)) == 0 else draw(strategy)


def _maybe_extra(draw: st.DrawFn, block: dict[str, Any]) -> dict[str, Any]:
    if draw(st.integers(0, 3)) == 0:
        block[draw(st.sampled_from(["cache_control", "signature", "citations", "caller"]))] = draw(_json)
    return block


@st.composite
def blocks(draw: st.DrawFn, depth: int = 0) -> Any:
    kind = draw(st.sampled_from(["text", "tool_use", "tool_result", "thinking"] * 3 + ["image", "other", "str", "odd"]))
    if kind == "str":
        return draw(st.text(max_size=6))
    if kind == "odd":  # a block the general reader refuses or keeps as it is
        return draw(st.one_of(_odd, st.just({"type": 3}), st.just({"text": "no type"})))
    if kind == "text":
        return _maybe_extra(draw, {"type": "text", "text": _or_odd(draw, st.text(max_size=12))})
    if kind == "thinking":
        return _maybe_extra(draw, {"type": "thinking", "thinking": _or_odd(draw, st.text(max_size=12))})
    if kind == "tool_use":
        block: dict[str, Any] = {
            "type": "tool_use",
            "id": _or_odd(draw, _ids),
            "name": _or_odd(draw, st.text(max_size=5)),
        }
        if draw(st.booleans()):
            block["input"] = draw(_json)
        return _maybe_extra(draw, block)
    if kind == "tool_result":
        block = {"type": "tool_result", "tool_use_id": _or_odd(draw, _ids)}
        if draw(st.booleans()):
            inner = st.text(max_size=12)
            block["content"] = _or_odd(draw, inner | st.lists(blocks(depth + 1), max_size=2) if depth < 2 else inner)
        if draw(st.booleans()):
            block["is_error"] = _or_odd(draw, st.booleans())
        return _maybe_extra(draw, block)
    if kind == "image":
        return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    return {"type": draw(st.sampled_from(["document", "server_tool_use", "x"])), "data": draw(_json)}


@st.composite
def session_lines(draw: st.DrawFn) -> bytes:
    uuids = ["u1", "u2", "u3", "u4", "u5", "u6"]
    out: list[bytes] = []
    if draw(st.integers(0, 6)) == 0:
        out.append(b"\xef\xbb\xbf")
    for _ in range(draw(st.integers(1, 12))):
        shape = draw(st.integers(0, 14))
        if shape <= 9:
            kind = draw(st.sampled_from(["user", "assistant"]))
            message: Any = {"role": kind}
            content = _or_odd(draw, st.text(max_size=8) | st.lists(blocks(), min_size=1, max_size=3))
            if draw(st.integers(0, 8)):
                message["content"] = content
            if kind == "assistant":
                message["id"] = _or_odd(draw, st.sampled_from(["m1", "m2", "m3"]))
                message["model"] = _or_odd(draw, st.sampled_from(["claude-x", "<synthetic>"]))
                if draw(st.booleans()):
                    message["usage"] = _or_odd(
                        draw,
                        st.fixed_dictionaries(
                            {},
                            optional={
                                k: st.integers(0, 900) | st.integers(0, 900) | _odd
                                for k in (
                                    "input_tokens",
                                    "cache_creation_input_tokens",
                                    "cache_read_input_tokens",
                                    "output_tokens",
                                )
                            },
                        ),
                    )
            envelope: dict[str, Any] = {
                "parentUuid": _or_odd(draw, st.sampled_from([None, "gone", *uuids])),
                "isSidechain": _or_odd(draw, st.booleans()),
                "sessionId": "s",
                "type": kind,
                "message": _or_odd(draw, st.just(message)),
                "uuid": _or_odd(draw, st.sampled_from(uuids)),
            }
            if draw(st.integers(0, 4)) == 0:
                envelope["agentId"] = _or_odd(draw, st.sampled_from(["a1", "a2"]))
            out.append(_dumps(envelope))
        elif shape <= 11:
            line: dict[str, Any] = {"type": draw(st.sampled_from(["system", "progress", "summary", "", 5]))}
            if draw(st.booleans()):
                line["uuid"] = _or_odd(draw, st.sampled_from(uuids))
                line["parentUuid"] = draw(st.sampled_from([None, *uuids]))
            if draw(st.booleans()):
                line["subtype"] = "compact_boundary"
                line["logicalParentUuid"] = _or_odd(draw, st.sampled_from(uuids))
            out.append(_dumps(line))
        else:
            out.append(
                draw(
                    st.sampled_from(
                        [
                            b"",
                            b"   ",
                            b"// a comment",
                            b'{"parentUuid":"u1","type":"user","message":{"content":"cut',
                            b'{"parentUuid":null,"isSidechain":true,"x":NaN,"uuid":"u9"}',
                            b"[1, 2]",
                            b'"just a string"',
                            b"  " + orjson.dumps({"type": "user", "message": {"content": "padded"}}) + b"\t",
                            b'{"type":"user","message":{"content":"\xff"}}',
                            b"[" * 250 + b"]" * 250,
                            b'{"parentUuid":"u2","uuid":"u7","type":"assistant","message":{"content":['
                            + b'{"type":"tool_use","id":"d","name":"n","input":'
                            + b"[" * 210
                            + b"]" * 210
                            + b"}]}}",
                            b'{"type":"assistant","message":{"content":[{"type":"tool_use","id":"x","name":"n",'
                            b'"input": {"a" :  1E+2}}]},"uuid":"u8"}',
                        ]
                    )
                )
            )
    body = b"\n".join(out)
    if out and out[0] == b"\xef\xbb\xbf" and len(out) > 1:
        body = out[0] + b"\n".join(out[1:])
    return body + (b"\n" if draw(st.booleans()) else b"")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=session_lines(), skip=st.booleans(), keep_text=st.booleans())
def test_fast_reader_matches_the_general_one_on_generated_sessions(data: bytes, skip: bool, keep_text: bool) -> None:
    fast, general = both(Input("session.jsonl", data, keep_text=keep_text), skip_invalid=skip)
    assert fast == general


@given(
    st.binary(max_size=300) | st.lists(st.sampled_from([b"[", b"{", b"]", b"}", b"a", b"\xdb", b"\xfb"])).map(b"".join)
)
def test_bracket_count_is_two_counts(raw: bytes) -> None:
    assert bracket_count(raw) == bracket_count_pure(raw) == raw.count(b"[") + raw.count(b"{")


@pytest.mark.parametrize(
    ("folder", "fmt"), [("claude_code", "claude_code"), ("codex", "codex"), ("claude_code", None), ("codex", None)]
)
def test_jsonl_sessions_are_streamed_not_read_whole(
    folder: str, fmt: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 15: a JSON Lines session is read line by line from the file object, never as one bytes object
    (detecting the format reads the first 64 KiB only)."""
    files = sorted(DATA.joinpath(folder).glob("*.jsonl"))
    assert files
    expected = [load(Input(str(f)), fmt=fmt, skip_invalid=True) for f in files]

    def whole(*_: Any, **__: Any) -> bytes:
        raise AssertionError("read whole")

    monkeypatch.setattr(Input, "read_all", whole)
    monkeypatch.setattr(Path, "read_bytes", whole)
    reads: list[int] = []
    opened: list[str] = []
    real_open = Input.open

    def counting_open(self: Input) -> Any:
        opened.append(self.path)
        stream = real_open(self)
        real_read = stream.read

        def read(size: int = -1) -> bytes:
            reads.append(size)
            return real_read(size)

        stream.read = read  # type: ignore[method-assign]
        return stream

    monkeypatch.setattr(Input, "open", counting_open)
    assert [load(Input(str(f)), fmt=fmt, skip_invalid=True) for f in files] == expected
    assert set(opened) == {str(f) for f in files}  # the loader read each file through its stream
    assert -1 not in reads  # and never read() the rest of it at once
