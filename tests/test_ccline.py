"""The compiled scanner of Claude Code lines (fitting/_ccline.c) against its Python reference
(``ccfold._record`` of ``orjson.loads``): wherever the scanner reads a line, orjson reads it too and the
record and the tokens per block kind are the Python path's, bit for bit; on each hazard it does not guess but
leaves the line to the Python path (None); and the whole fold is the same with the scanner and without it,
on generated sessions and the corpus. tests/test_ccfold.py compares the fold (with the scanner, where built)
with the loader's report."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections import defaultdict
from fractions import Fraction
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import DATA, require_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import texts
from test_ccfold import sessions

from windowfit.fitting import ccfold, estimate, make_estimator
from windowfit.fitting.estimate import ScriptRule
from windowfit.fitting.formats import Input

needs_scanner = pytest.mark.skipif(not ccfold.SCANNER, reason="the compiled scanner is not built here")

RULES: list[ScriptRule] = [
    r
    for r in (make_estimator().rule, make_estimator(overhead=0.0).rule, make_estimator(overhead=2.5).rule)
    if type(r) is ScriptRule
] + [ScriptRule("odd", Fraction("3.7"), Fraction("0.9"), Fraction("1.3"), 5, 7)]


def both(rule: ScriptRule, raw: bytes) -> tuple[Any, Any, dict[str, int], dict[str, int]]:
    """The scanner's record of ``raw`` and its tokens per kind; the Python path's ("error" if orjson refuses
    the line) and its tokens per kind."""
    scanner = ccfold._scanner(rule)
    assert scanner is not None
    record = scanner.scan(raw)
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return record, "error", dict(scanner.kinds()), {}
    by_kind: defaultdict[str, int] = defaultdict(int)
    reference = ccfold._record(rule, value, by_kind)
    return record, reference, dict(scanner.kinds()), dict(by_kind)


def check(rule: ScriptRule, raw: bytes) -> Any:
    """The scanner's record of ``raw``, asserted to be the Python path's where it gives one."""
    record, reference, kinds, by_kind = both(rule, raw)
    if record is not None:
        assert reference != "error", raw
        assert record == reference, raw
        assert kinds == by_kind, raw
    else:
        assert kinds == {}
    return record


# -- generated lines ------------------------------------------------------------------------------------

_SPECIAL = st.sampled_from(
    [
        '"',
        "\\",
        "/",
        "\x00",
        "\x01",
        "\x08",
        "\t",
        "\n",
        "\x0b",
        "\x0c",
        "\r",
        "\x1f",
        "\x7f",
        "\u2028",
        "\u2029",
        "\x85",
        "\ufeff",
        "\U0001f600",
        "\U00020000",
        "\uffff",
    ]
)
TEXT = st.one_of(texts(0, 12), st.lists(st.one_of(texts(0, 3), _SPECIAL), max_size=8).map("".join))
PLAIN = st.text(alphabet="abcXYZ_-0189.:/", max_size=12)
"""Ids, names and keys that orjson writes without escapes."""


def _sometimes(usual: st.SearchStrategy[Any], odd: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``usual`` four times in five, else ``odd``."""
    return st.integers(0, 4).flatmap(lambda i: odd if i == 0 else usual)


def json_values(key: st.SearchStrategy[str], huge: bool) -> st.SearchStrategy[Any]:
    ints = st.integers(-(10**18) + 1, 10**18 - 1)
    if huge:
        ints = _sometimes(ints, st.one_of(st.integers(-(2**63), 2**64 - 1), st.sampled_from([10**18, -(2**63)])))
    leaves = st.one_of(st.none(), st.booleans(), ints, TEXT)
    if huge:
        leaves = _sometimes(leaves, st.floats(allow_nan=False, allow_infinity=False))
    return st.recursive(leaves, lambda c: st.lists(c, max_size=4) | st.dictionaries(key, c, max_size=4), max_leaves=12)


def _maybe(draw: st.DrawFn, d: dict[str, Any], key: str, value: Any, odd: st.SearchStrategy[Any]) -> None:
    """Sets ``d[key]`` to ``value`` mostly, now and then to a value of another type or leaves it out."""
    roll = draw(st.integers(0, 30))
    if roll == 0:
        return
    d[key] = draw(odd) if roll == 1 else value


ODD = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.just([]), st.just({}), st.just(1.5))
NO_FLOAT: st.SearchStrategy[Any] = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.just([]), st.just({}))
"""Values of other types for a tool input, which the scanner reads whatever the block (a float defers)."""


@st.composite
def blocks(draw: st.DrawFn, hazards: bool) -> Any:
    ids = _sometimes(PLAIN, TEXT) if hazards else PLAIN
    kinds = ["text", "thinking", "tool_use", "tool_result"]
    kind = draw(st.sampled_from(kinds * 5 + ["image", "other"]))
    b: dict[str, Any] = {"type": kind}
    if kind in ("text", "thinking"):
        _maybe(draw, b, kind, draw(TEXT), ODD)
        if kind == "thinking":
            b["signature"] = "c2ln"
    elif kind == "tool_use":
        _maybe(draw, b, "id", draw(ids), ODD)
        _maybe(draw, b, "name", draw(ids), ODD)
        _maybe(draw, b, "input", draw(json_values(ids if hazards else PLAIN, hazards)), ODD if hazards else NO_FLOAT)
    elif kind == "tool_result":
        _maybe(draw, b, "tool_use_id", draw(ids), ODD)
        parts = st.lists(
            st.one_of(
                st.builds(lambda t: {"type": "text", "text": t}, TEXT),
                st.builds(lambda t: {"type": "image", "text": t}, TEXT),
                st.just({"text": "x"}),
                st.just("x"),
            ),
            max_size=3,
        )
        _maybe(draw, b, "content", draw(st.one_of(TEXT, parts)), ODD)
        if draw(st.booleans()):
            b["is_error"] = draw(st.booleans())
    elif kind == "image":
        b["source"] = {"type": "base64", "data": "AAAA"}
    if draw(st.integers(0, 40)) == 0:
        return draw(ODD)  # not a dict
    if draw(st.integers(0, 3)) == 0:
        b = dict(draw(st.permutations(list(b.items()))))
    return b


@st.composite
def lines(draw: st.DrawFn, hazards: bool = True) -> Any:
    ids = _sometimes(PLAIN, TEXT) if hazards else PLAIN
    kind = draw(st.sampled_from(["user", "assistant"] * 4 + ["system", "progress", "summary", "", None, 1]))
    line: dict[str, Any] = {}
    _maybe(draw, line, "parentUuid", draw(ids), ODD)
    _maybe(draw, line, "isSidechain", draw(st.booleans()), ODD)
    line["userType"] = "external"
    _maybe(draw, line, "type", kind, ODD)
    _maybe(draw, line, "uuid", draw(ids), ODD)
    if draw(st.integers(0, 4)) == 0:
        _maybe(draw, line, "agentId", draw(ids), ODD)
    if kind == "system" or draw(st.integers(0, 10)) == 0:
        _maybe(draw, line, "subtype", draw(st.sampled_from(["compact_boundary", "local_command", "x"])), ODD)
    roll = draw(st.integers(0, 9))
    listed = st.lists(blocks(hazards), min_size=roll // 9, max_size=4)
    content = draw(ODD if roll == 0 else TEXT if roll < 3 else listed)
    message: dict[str, Any] = {"role": "user" if kind == "user" else "assistant"}
    _maybe(draw, message, "id", draw(ids), ODD)
    _maybe(draw, message, "content", content, ODD)
    if draw(st.booleans()):
        ints = st.integers(0, 10**6)
        if hazards:
            ints = _sometimes(ints, st.one_of(st.integers(-(2**63), 2**64 - 1), ODD))
        usage: dict[str, Any] = {}
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"):
            _maybe(draw, usage, key, draw(ints), ODD)
        usage["service_tier"] = "standard"
        message["usage"] = usage if draw(st.integers(0, 10)) else draw(ODD)
    _maybe(draw, line, "message", message, ODD)
    line["timestamp"] = "2026-11-01T00:00:06.000Z"
    if draw(st.integers(0, 3)) == 0:
        line = dict(draw(st.permutations(list(line.items()))))
    return line


def encodings(value: Any) -> st.SearchStrategy[bytes]:
    """``value`` as a line: orjson's text, or json's with every non-ASCII character escaped (surrogate pairs)
    or with spaces, or indented; with a newline or CRLF at the end or none."""

    def dump(how: int) -> bytes:
        if how == 0:
            return orjson.dumps(value)
        if how == 1:
            return json.dumps(value, ensure_ascii=True).encode()
        if how == 2:
            return json.dumps(value, ensure_ascii=False, separators=(" , ", " :\t")).encode()
        return (" \r\n" + json.dumps(value, ensure_ascii=False, indent=1)).encode()

    return st.tuples(st.integers(0, 3), st.sampled_from([b"\n", b"\r\n", b"", b"  \n"])).map(
        lambda t: dump(t[0]) + t[1]
    )


def mutations(raw: bytes) -> st.SearchStrategy[bytes]:
    """``raw`` broken or bent in one place: cut short, a byte put in or taken out, a key read twice or
    written with an escape, a byte order mark, a second value."""
    n = len(raw)
    at = st.integers(0, n)
    return st.one_of(
        at.map(lambda i: raw[:i]),
        st.tuples(at, st.integers(0, 255)).map(lambda t: raw[: t[0]] + bytes([t[1]]) + raw[t[0] :]),
        at.map(lambda i: raw[:i] + raw[i + 1 :]),
        st.sampled_from(
            [
                b'"type":',
                b'"uuid":',
                b'"id":',
                b'"content":',
                b'"text":',
                b'"input_tokens":',
                b'"tool_use_id":',
                b'"name":',
                b'"input":',
                b'"message":',
                b'"isSidechain":',
            ]
        ).map(lambda k: raw.replace(k, k + b'"dup",' + k, 1)),
        st.sampled_from([b'"type"', b'"uuid"', b'"text"', b'"content"', b'"id"']).map(
            lambda k: raw.replace(k, b'"\\u00' + f"{k[1]:02x}".encode() + k[2:], 1)
        ),
        st.just(b"\xef\xbb\xbf" + raw),
        st.just(raw.rstrip() + b" {}"),
        st.just(raw.replace(b"\xe2\x80\xa8", b"\xed\xa0\x80", 1)),
        st.just(raw.replace(b"\\ud83d", b"\\udc00", 1)),
    )


@needs_scanner
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), rule=st.sampled_from(RULES))
def test_a_scanned_line_is_read_as_the_python_path_reads_it(data: st.DataObject, rule: ScriptRule) -> None:
    raw = data.draw(lines().flatmap(encodings))
    if data.draw(st.integers(0, 2)) == 0:
        raw = data.draw(mutations(raw))
    check(rule, raw)


@needs_scanner
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), rule=st.sampled_from(RULES))
def test_an_ordinary_line_is_scanned_not_deferred(data: st.DataObject, rule: ScriptRule) -> None:
    """Without the hazards (floats, huge ints, escaped ids and keys, broken text), the scanner vouches for
    every line the Python path reads (a compaction aside, which it leaves to the Python path's words, and a
    line with an image, whose size the Python path reads from its header)."""
    raw = data.draw(lines(hazards=False).flatmap(encodings))
    record, reference, _, _ = both(rule, raw)
    value = orjson.loads(raw)
    compaction = value.get("type") == "system" and value.get("subtype") == "compact_boundary"
    if reference is not None and not compaction and not _has_image(value):
        assert record is not None, raw
    check(rule, raw)


def _has_image(value: Any) -> bool:
    """Whether a parsed line holds an image block, in its content or in a tool result's."""
    message = value.get("message") if isinstance(value, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return False
    for b in content:
        if isinstance(b, dict):
            inner = b.get("content")
            if b.get("type") == "image" or (
                isinstance(inner, list) and any(isinstance(p, dict) and p.get("type") == "image" for p in inner)
            ):
                return True
    return False


@needs_scanner
@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=40))
def test_the_table_groups_as_the_counter_counts(text: str) -> None:
    ccfold._scanner(RULES[0])
    assert ccfold._TABLE[0].groups(text) == estimate._groups(text)


# -- each hazard defers --------------------------------------------------------------------------------

BASE: dict[str, Any] = {
    "parentUuid": "p",
    "isSidechain": False,
    "type": "assistant",
    "uuid": "u",
    "message": {
        "id": "m",
        "content": [
            {"type": "text", "text": "héllo 日本 😀"},
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": "/a", "n": [1, -2, True, None]}},
        ],
        "usage": {"input_tokens": 4, "output_tokens": 7},
    },
}
GOOD = orjson.dumps(BASE)

HAZARDS = {
    "a byte order mark": b"\xef\xbb\xbf" + GOOD,
    "invalid UTF-8": GOOD.replace("é".encode(), b"\xc3\x28"),
    "an overlong UTF-8 form": GOOD.replace("é".encode(), b"\xc0\xa9"),
    "a surrogate in UTF-8": GOOD.replace("é".encode(), b"\xed\xa0\x80"),
    "a lone high surrogate escape": GOOD.replace("é".encode(), b"\\ud83d"),
    "a lone low surrogate escape": GOOD.replace("é".encode(), b"\\ude00"),
    "a high surrogate before another escape": GOOD.replace("é".encode(), b"\\ud83d\\u0041"),
    "a control character": GOOD.replace("é".encode(), b"\x01"),
    # the same hazards right after a run of two- or three-byte characters (the scanner decodes runs apart)
    "a surrogate after a run of CJK": GOOD.replace("日本".encode(), "日本語".encode() + b"\xed\xa0\x80"),
    "an overlong form after a run of CJK": GOOD.replace("日本".encode(), "日本語".encode() + b"\xe0\x80\xaf"),
    "a cut character after a run of CJK": GOOD.replace("日本".encode(), "日本語".encode() + b"\xe6\x97"),
    "a bad continuation after a run of CJK": GOOD.replace("日本".encode(), "日本".encode() + b"\xe6\x28\x97"),
    "invalid UTF-8 after a run of Cyrillic": GOOD.replace("é".encode(), "Жжж".encode() + b"\xd0\x28"),
    "an overlong form after a run of Cyrillic": GOOD.replace("é".encode(), "Жжж".encode() + b"\xc1\xbf"),
    "a lone continuation after a run of Cyrillic": GOOD.replace("é".encode(), "Жжж".encode() + b"\x80"),
    "a float in a tool input": GOOD.replace(b"-2", b"-2.0"),
    "an exponent in a tool input": GOOD.replace(b"-2", b"2e1"),
    "minus zero in a tool input": GOOD.replace(b"-2", b"-0"),
    "an int past 18 digits in a tool input": GOOD.replace(b"-2", b"1" + b"0" * 18),
    "an int past 18 digits in usage": GOOD.replace(b":7", b":" + b"9" * 19),
    "an exponent that may overflow": GOOD.replace(b'"m"', b"1e400"),
    "a duplicate key inside a tool input": GOOD.replace(b'"path":"/a"', b'"path":"/a","path":"/b"'),
    "a duplicate top-level key": GOOD.replace(b'"uuid":"u"', b'"uuid":"u","uuid":"v"'),
    "a duplicate message key": GOOD.replace(b'"id":"m"', b'"id":"m","id":"n"'),
    "a duplicate block key": GOOD.replace(b'"type":"text"', b'"type":"text","type":"text"'),
    "a duplicate usage key": GOOD.replace(b'"output_tokens":7', b'"output_tokens":7,"output_tokens":8'),
    "an escaped key": GOOD.replace(b'"uuid"', b'"\\u0075uid"'),
    "an escaped key inside a tool input": GOOD.replace(b'"path"', b'"pa\\u0074h"'),
    "an escaped id": GOOD.replace(b'"t1"', b'"t\\u0031"'),
    "nesting past the bound": GOOD.replace(b'"/a"', b"[" * 200 + b"]" * 200),
    "a trailing comma": GOOD.replace(b"None", b"").replace(b"null]", b"null,]"),
    "NaN": GOOD.replace(b'"m"', b"NaN"),
    "a second value": GOOD + b" {}",
    "a cut line": GOOD[:-5],
    "a leading zero": GOOD.replace(b":4", b":04"),
    "a bad escape": GOOD.replace("é".encode(), b"\\x"),
    "a compaction": orjson.dumps({"type": "system", "subtype": "compact_boundary", "uuid": "u", "parentUuid": "p"}),
    "a tool result in a reply": GOOD.replace(b'"type":"text","text"', b'"type":"tool_result","tool_use_id":"x","t"'),
    "an empty message": orjson.dumps({**BASE, "message": {"id": "m", "content": []}}),
    "a message that is not a dict": orjson.dumps({**BASE, "message": "hi"}),
    "a line that is not a dict": b"[1, 2]",
    "a blank line": b"  \n",
    "a comment line": b"// note\n",
}


@needs_scanner
@pytest.mark.parametrize(
    "text", ["日本語のテキスト" * 40, "Съешь же ещё этих мягких" * 40, "日本Жж語ё" * 30, "Ωμέγα\uffff\ue000\u0800" * 9]
)
def test_runs_of_two_and_three_byte_characters_count_as_the_python_path_counts(text: str) -> None:
    raw = GOOD.replace("日本".encode(), text.encode())
    for rule in RULES:
        assert check(rule, raw) is not None


# -- string()'s blocks (fitting/_ccline.c reads strings 32 bytes at a time where SSE2 is there) ----------

BLOCK = 32
"""The bytes string() reads at once: every case below puts its piece at each offset around two blocks."""

GOOD_PIECES: dict[str, bytes] = {
    "ascii": b"ab",
    "two-byte": "Жé".encode(),
    "three-byte": "日本".encode(),
    "four-byte": "😀".encode(),
    "a three-byte character in a lead's mixed pair (U+4DC0, other beside U+4E00, cjk)": "\u4dc0\u4e00".encode(),
    "E0 at its lowest, ED at its highest": "\u0800\ud7ff".encode(),
    "F0 at its lowest, F4 at its highest": "\U00010000\U0010ffff".encode(),
    "U+FFFF and a private use character": "\uffff\ue000".encode(),
    "a character in a 64-code-point block split between groups (U+A960 cjk, U+A95F other)": "\ua95f\ua960".encode(),
    "DEL": b"\x7f",
    "an escaped newline": b"\\n",
    "an escaped quote": b'\\"',
    "an escaped backslash": b"\\\\",
    "an escaped slash": b"\\/",
    "an escaped control character": b"\\u0001",
    "an escaped two-byte character": b"\\u00e9",
    "an escaped three-byte character": b"\\u65e5",
    "an escaped surrogate pair": b"\\ud83d\\ude00",
    "two escapes in a row": b'\\\\\\"',
}
BAD_PIECES: dict[str, bytes] = {
    "a lone continuation byte": b"\x80",
    "a lone BF": b"\xbf",
    "a two-byte lead alone": b"\xd0",
    "a two-byte lead before ASCII": b"\xd0a",
    "a three-byte character cut short": b"\xe6\x97",
    "a four-byte character cut short": b"\xf0\x9f\x98",
    "a continuation byte too many": "é".encode() + b"\x80",
    "C0 (overlong)": b"\xc0\x80",
    "C1 (overlong)": b"\xc1\xbf",
    "E0 overlong": b"\xe0\x9f\xbf",
    "a surrogate": b"\xed\xa0\x80",
    "F0 overlong": b"\xf0\x8f\xbf\xbf",
    "past U+10FFFF": b"\xf4\x90\x80\x80",
    "F5": b"\xf5\x80\x80\x80",
    "FF": b"\xff",
    "a control byte": b"\x01",
    "a tab": b"\t",
    "a unit separator": b"\x1f",
    "a lone high surrogate escape": b"\\ud83d",
    "a bad escape": b"\\x",
    "a quote cut from its escape": b"\\",
}
FILLERS = {"ascii": "abcdefgh", "two-byte": "Съешь же", "three-byte": "日本語のテキスト", "mixed": "Жa日😀"}


def _content_line(text: bytes) -> bytes:
    """A user line whose content is the string ``text`` (raw bytes between the quotes), then more keys."""
    return (
        b'{"type":"user","uuid":"u","message":{"role":"user","content":"'
        + text
        + b'"},"timestamp":"'
        + b"t" * 40
        + b'"}\n'
    )


def _input_line(text: bytes) -> bytes:
    """An assistant line calling a tool whose input holds the string ``text``: its characters are counted as
    orjson writes them again, escapes and all."""
    return (
        b'{"type":"assistant","uuid":"u","message":{"id":"m","role":"assistant","content":[{"type":"tool_use",'
        b'"id":"t","name":"Bash","input":{"command":"' + text + b'","n":1}}]},"timestamp":"' + b"t" * 40 + b'"}\n'
    )


LINES = {"content": _content_line, "tool input": _input_line}


def _around_blocks(piece: bytes, filler: str) -> list[bytes]:
    """The piece after the filler's first n bytes for every n up to past two blocks (n cut back to whole
    characters), with more filler after it."""
    data = (filler * BLOCK).encode()
    starts = {data[:n].decode("utf-8", "ignore").encode(): None for n in range(2 * BLOCK + 8)}
    return [start + piece + (filler * 6).encode() for start in starts]


@needs_scanner
@pytest.mark.parametrize("line", sorted(LINES))
@pytest.mark.parametrize("filler", sorted(FILLERS))
@pytest.mark.parametrize("name", sorted(GOOD_PIECES))
def test_valid_text_at_every_offset_of_a_block_is_counted_as_the_python_path_counts(
    name: str, filler: str, line: str
) -> None:
    for text in _around_blocks(GOOD_PIECES[name], FILLERS[filler]):
        for rule in RULES[:2]:
            assert check(rule, LINES[line](text)) is not None, text


@needs_scanner
@pytest.mark.parametrize("line", sorted(LINES))
@pytest.mark.parametrize("filler", sorted(FILLERS))
@pytest.mark.parametrize("name", sorted(BAD_PIECES))
def test_invalid_text_at_every_offset_of_a_block_defers(name: str, filler: str, line: str) -> None:
    for text in _around_blocks(BAD_PIECES[name], FILLERS[filler]):
        raw = LINES[line](text)
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(raw)
        assert check(RULES[0], raw) is None, text


_PIECE = st.one_of(
    st.sampled_from(sorted(GOOD_PIECES.values())),
    texts(1, 4).map(lambda t: orjson.dumps(t)[1:-1]),
    st.integers(0, 2 * BLOCK).map(lambda n: b"x" * n),
    st.integers(0, BLOCK).map(lambda n: "Ж".encode() * n),
    st.integers(0, BLOCK).map(lambda n: "日".encode() * n),
)


@needs_scanner
@settings(max_examples=1500, deadline=None)
@given(
    pieces=st.lists(_PIECE, max_size=12),
    bad=st.one_of(st.none(), st.sampled_from(sorted(BAD_PIECES.values()))),
    at=st.integers(0, 12),
    rule=st.sampled_from(RULES),
)
def test_mixed_text_is_counted_or_deferred_as_the_python_path_reads_it(
    pieces: list[bytes], bad: bytes | None, at: int, rule: ScriptRule
) -> None:
    """ASCII, two-, three- and four-byte characters and escapes in every mix, and now and then one invalid
    piece among them: the scanner's record is the Python path's, it reads every line orjson reads, and it
    leaves every other one."""
    if bad is not None:
        pieces.insert(min(at, len(pieces)), bad)
    make = _input_line if at % 2 else _content_line
    raw = make(b"".join(pieces) or b"x")  # an empty message is the Python path's to refuse
    try:
        orjson.loads(raw)
        valid = True
    except orjson.JSONDecodeError:
        valid = False  # a bad piece (unless it made an escape with the piece after it)
    assert check(rule, raw) is not None if valid else check(rule, raw) is None, raw


def _groups_of(text: str, ranges: list[tuple[int, int, int]], fallback: int, groups: bytes) -> tuple[int, int, int]:
    """Each character's group under ``ranges`` (later ones over earlier ones, as Table builds them)."""
    out = [0, 0, 0]
    for ch in text:
        cls = fallback
        for first, last, c in ranges:
            if first <= ord(ch) <= last:
                cls = c
        out[groups[cls]] += 1
    return out[0], out[1], out[2]


_EDGES = [0x80, 0x7FF, 0x800, 0xFFF, 0x1000, 0x3000, 0x4DC0, 0x4E00, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x1F600]
_POINTS = st.one_of(
    st.sampled_from(_EDGES).flatmap(lambda e: st.integers(max(0x80, e - 70), min(0x10FFFF, e + 70))),
    st.integers(0x80, 0x10FFFF),
).filter(lambda c: not 0xD800 <= c <= 0xDFFF)


@needs_scanner
@settings(max_examples=300, deadline=None)
@given(
    ranges=st.lists(
        st.tuples(_POINTS, st.integers(0, 5000), st.integers(1, 3)).map(
            lambda t: (t[0], min(0x10FFFF, t[0] + t[1]), t[2])
        ),
        max_size=6,
    ),
    groups=st.sampled_from([bytes([0, 0, 1, 2]), bytes([0, 2, 1, 0]), bytes([0, 1, 1, 1]), bytes([0, 2, 2, 1])]),
    fallback=st.integers(1, 3),
    data=st.data(),
)
def test_a_table_of_any_ranges_counts_each_character_in_its_group(
    ranges: list[tuple[int, int, int]], groups: bytes, fallback: int, data: st.DataObject
) -> None:
    """Ranges that split a lead byte's code points (or a pair's 64, or the two-byte characters) between
    groups: the blocks' pair table and two-byte shortcut are derived from the table, so the characters on
    both sides of every edge count in their own group."""
    from windowfit.fitting._ccline import Scanner, Table

    ranges = [(0, 0x7F, 0), *ranges]
    near = [c for first, last, _ in ranges[1:] for c in (first - 1, first, last, last + 1)]
    near = [c for c in near if 0x80 <= c <= 0x10FFFF and not 0xD800 <= c <= 0xDFFF] or [0x416]
    chars = st.one_of(st.sampled_from(near).map(chr), st.sampled_from("a Жé日本😀"))
    text = data.draw(st.lists(chars, min_size=1, max_size=80).map("".join))
    table = Table(4, fallback, ranges, groups)
    assert table.groups(text) == _groups_of(text, ranges, fallback, groups)
    scanner = Scanner(table, 1, 1, 1, 1, 0)
    for spaced in (text, " ".join(text), "x" * 31 + text):
        record = scanner.scan(_content_line(orjson.dumps(spaced)[1:-1]))
        assert record is not None
        assert record[7:10] == _groups_of(spaced, ranges, fallback, groups), spaced


_BUILD_SCALAR = """
from setuptools import Extension, setup
setup(name="scalar", script_args=["-q", "build_ext", "--inplace"],
      ext_modules=[Extension("_ccline", [{source!r}], define_macros=[("CCLINE_SCALAR", "1")])])
"""


@pytest.fixture(scope="module")
def scalar_build(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """fitting/_ccline.c built without its SSE2 blocks (-DCCLINE_SCALAR): the build of every machine without
    SSE2, which the blocks are held to. Skips where no C compiler builds it."""
    import importlib.machinery
    import importlib.util

    where = tmp_path_factory.mktemp("scalar")
    source = Path(ccfold.__file__).with_name("_ccline.c")
    if not source.exists():
        pytest.skip("fitting/_ccline.c is not beside ccfold.py")
    built = subprocess.run(
        [sys.executable, "-c", _BUILD_SCALAR.format(source=str(source))], cwd=where, capture_output=True
    )
    found = sorted(where.glob("_ccline*.so")) + sorted(where.glob("_ccline*.pyd"))
    if built.returncode != 0 or not found:
        pytest.skip(f"no scalar build: {built.stderr.decode(errors='replace')[-400:]}")
    loader = importlib.machinery.ExtensionFileLoader("_ccline", str(found[0]))
    spec = importlib.util.spec_from_file_location("_ccline", found[0], loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _scanner_of(module: Any, rule: ScriptRule) -> Any:
    """A scanner of ``module``'s build as ``ccfold._scanner`` makes one of the installed build's."""
    fallback, explicit = estimate._check_classes(estimate._SEED_CLASSES)
    groups = bytes(estimate._GROUP_CODES[c.group] for c in estimate._SEED_CLASSES)
    table = module.Table(len(estimate._SEED_CLASSES), fallback, [(a, b, i) for i, (a, b) in explicit], groups)
    wa, wc, wo, denominator = rule._weights
    return module.Scanner(table, wa, wc, wo, denominator, rule.block_overhead_tokens, *ccfold.FLOOR_RULE._weights)


def _same_from_both_builds(scalar: Any, rule: ScriptRule, data: bytes) -> None:
    installed, alone = _scanner_of(sys.modules[ccfold._Scanner.__module__], rule), _scanner_of(scalar, rule)
    assert installed.scan_lines(data, True) == alone.scan_lines(data, True), data
    assert installed.kinds() == alone.kinds()


@needs_scanner
def test_the_scalar_build_reads_every_piece_at_every_offset_as_the_blocks_do(scalar_build: Any) -> None:
    lines = [
        make(text)
        for pieces in (GOOD_PIECES, BAD_PIECES)
        for piece in pieces.values()
        for filler in FILLERS.values()
        for text in _around_blocks(piece, filler)
        for make in (_content_line, _input_line)
    ]
    assert sum(_scanner_of(scalar_build, RULES[0]).scan(raw) is not None for raw in lines) > len(lines) // 3
    for rule in RULES:
        _same_from_both_builds(scalar_build, rule, b"".join(lines))


@needs_scanner
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    raw=st.one_of(
        lines().flatmap(encodings),
        st.lists(_PIECE, min_size=1, max_size=12).map(lambda p: _content_line(b"".join(p))),
        st.binary(max_size=80),
    ),
    rule=st.sampled_from(RULES),
)
def test_the_scalar_build_reads_generated_lines_as_the_blocks_do(
    scalar_build: Any, raw: bytes, rule: ScriptRule
) -> None:
    _same_from_both_builds(scalar_build, rule, raw)


@needs_scanner
def test_the_line_the_hazards_are_made_from_is_scanned() -> None:
    record = check(RULES[0], GOOD)
    assert record is not None and record[:7] == ("assistant", "u", "p", False, "", "m", (4, 0, 0, 7))


@needs_scanner
@pytest.mark.parametrize("name", sorted(HAZARDS))
def test_the_scanner_defers_on_each_hazard(name: str) -> None:
    raw = HAZARDS[name]
    assert raw != GOOD
    for rule in RULES:
        assert check(rule, raw) is None, name


@needs_scanner
def test_escapes_and_whitespace_are_counted_as_orjson_writes_them_again() -> None:
    """A tool input's characters are those of orjson's compact text, whatever the line's spelling."""
    value: dict[str, Any] = {
        "a": '\x00\x1f\x7f\t\n"\\/\u2028é日😀',
        "b": [1, -22, True, False, None, {}, []],
        "c": {"d": ""},
    }
    spellings = [
        orjson.dumps(value),
        json.dumps(value).encode(),
        json.dumps(value, ensure_ascii=False, indent=3).encode(),
        json.dumps(value).replace("\\u00e9", "\\u00E9").encode(),
    ]
    records = []
    for spelling in spellings:
        line = orjson.dumps(
            {
                **BASE,
                "message": {
                    **BASE["message"],
                    "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}],
                },
            }
        ).replace(b"{}", spelling)
        record = check(RULES[0], line)
        assert record is not None, spelling
        records.append(record)
    assert all(r == records[0] for r in records)
    text = estimate._groups("Read" + orjson.dumps(value).decode())
    assert records[0][7:10] == text


# -- the whole fold ------------------------------------------------------------------------------------


def fold_both(item: Input, rule: ScriptRule) -> tuple[Any, Any]:
    def state(folded: Any) -> Any:
        return None if folded is None else {k: getattr(folded, k) for k in folded.__slots__}

    return state(ccfold._fold_lines(item, rule)), state(ccfold._fold_lines(item, rule, compiled=False))


@needs_scanner
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=sessions(), rule=st.sampled_from(RULES))
def test_generated_sessions_fold_the_same_with_the_scanner_and_without(data: bytes, rule: ScriptRule) -> None:
    compiled, pure = fold_both(Input("session.jsonl", data, keep_text=False), rule)
    assert compiled == pure


@needs_scanner
def test_the_corpus_folds_and_scans_the_same_with_the_scanner_and_without() -> None:
    files = sorted(require_shared("corpus", "transcripts", "claude_code").rglob("*.jsonl"))
    files += sorted(DATA.joinpath("claude_code").rglob("*.jsonl"))
    scanned = 0
    for path in files:
        for rule in RULES:
            compiled, pure = fold_both(Input(str(path), keep_text=False), rule)
            assert compiled == pure, path
        for raw in path.read_bytes().splitlines(keepends=True):
            scanned += check(RULES[0], raw) is not None
    assert scanned >= 1000  # 2,5xx of the corpus's lines on 2026-12-02


def test_the_pure_path_is_what_windowfit_pure_gives() -> None:
    code = "from windowfit.fitting import ccfold; print(ccfold.SCANNER, ccfold._scanner(ccfold.ScriptRule()))"
    env = {**os.environ, "WINDOWFIT_PURE": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "None"]


def test_without_the_scanner_the_fold_reads_every_line_in_python(monkeypatch: pytest.MonkeyPatch) -> None:
    path = Path(DATA, "claude_code")
    files = sorted(path.rglob("*.jsonl"))
    assert files
    rule = RULES[0]
    before = [ccfold._fold_lines(Input(str(p), keep_text=False), rule, compiled=False) for p in files]
    monkeypatch.setattr(ccfold, "SCANNER", False)
    assert ccfold._scanner(rule) is None
    after = [ccfold._fold_lines(Input(str(p), keep_text=False), rule) for p in files]
    assert [None if f is None else f.tokens for f in before] == [None if f is None else f.tokens for f in after]


@needs_scanner
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(
        st.one_of(lines().flatmap(encodings), st.sampled_from([b"\n", b"  \n", b"// c\n", b"\r\n", b"{", b"x"])),
        max_size=8,
    ),
    chunk=st.integers(1, 300),
)
def test_lines_read_a_chunk_at_a_time_are_the_lines_of_the_file(parts: list[bytes], chunk: int) -> None:
    """Lines across chunks, longer than a chunk, the last without its newline: each as iterating the file
    gives it, scanned as scan() scans it alone."""
    data = b"".join(p if p.endswith(b"\n") or not p else p + b"\n" for p in parts[:-1]) + (parts[-1] if parts else b"")
    scanner = ccfold._scanner(RULES[0])
    assert scanner is not None
    got = list(ccfold._lines(io.BytesIO(data), scanner, chunk))
    alone = ccfold._scanner(RULES[0])
    assert alone is not None
    expected = [alone.scan(raw) or raw for raw in io.BytesIO(data)]
    assert got == expected
    assert scanner.kinds() == alone.kinds()
    assert list(ccfold._lines(io.BytesIO(data), None)) == list(io.BytesIO(data))


def test_the_scanner_is_built_wherever_the_counter_is() -> None:
    """Both are optional extensions of one build: one without the other is a broken build, not a choice."""
    assert ccfold.SCANNER == estimate.COMPILED


JSONISH = st.lists(
    st.sampled_from(
        [
            b"{",
            b"}",
            b"[",
            b"]",
            b'"',
            b":",
            b",",
            b"\\",
            b"u",
            b"d8",
            b"00",
            b"e",
            b"-",
            b"0",
            b"1",
            b".",
            b" ",
            b"\n",
            b"true",
            b"null",
            b'"type"',
            b'"user"',
            b'"message"',
            b'"content"',
            b'"uuid"',
            b'"input"',
            b'"tool_use"',
            b'"id"',
            b"\xc3",
            b"\xa9",
            b"\xe6\x97\xa5",
            b"\xf0\x9f\x98\x80",
            b"\xff",
        ]
    ),
    max_size=60,
).map(b"".join)
"""Byte soup of JSON's pieces, for the scanner's refusals."""


@needs_scanner
@settings(max_examples=1000, deadline=None)
@given(raw=st.one_of(st.binary(max_size=80), JSONISH), rule=st.sampled_from(RULES))
def test_bytes_of_any_kind_are_read_as_the_python_path_reads_them_or_left_to_it(raw: bytes, rule: ScriptRule) -> None:
    check(rule, raw)
    scanner = ccfold._scanner(rule)
    assert scanner is not None
    items, used = scanner.scan_lines(raw, True)
    assert used == len(raw) and b"".join(i for i in items if isinstance(i, bytes)) == b"".join(
        raw for raw in io.BytesIO(raw) if scanner.scan(raw) is None
    )


# -- each line's kinds, for the tree fold (issue #15) --------------------------------------------------


@needs_scanner
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(
        st.one_of(lines().flatmap(encodings), st.sampled_from([b"\n", b"  \n", b"// c\n", b"{", b"x"])), max_size=8
    ),
    chunk=st.integers(1, 300),
    rule=st.sampled_from(RULES),
)
def test_each_scanned_line_keeps_its_kinds_as_the_python_path_sums_them(
    parts: list[bytes], chunk: int, rule: ScriptRule
) -> None:
    """``kinds_of`` of a line ``scan_lines`` read (numbered from 1 across chunks) is the tokens per kind
    ``_record`` adds for it (a kind met with no tokens included); a line left to Python counts nothing; the
    lines together are ``kinds()``."""
    data = b"".join(p if p.endswith(b"\n") else p + b"\n" for p in parts)
    scanner = ccfold._scanner(rule)
    assert scanner is not None
    items = list(ccfold._lines(io.BytesIO(data), scanner, chunk))
    for n, (raw, item) in enumerate(zip(io.BytesIO(data), items, strict=True), start=1):
        expected: defaultdict[str, int] = defaultdict(int)
        if not isinstance(item, bytes):
            ccfold._record(rule, orjson.loads(raw), expected)
        assert dict(scanner.kinds_of([n])) == dict(expected), raw
    assert scanner.kinds_of(range(1, len(items) + 1)) == scanner.kinds()
    assert scanner.kinds_of([]) == [] and scanner.kinds_of([0, len(items) + 1]) == []


def tree_both(item: Input, rule: ScriptRule, skip_invalid: bool, compiled: bool = True) -> tuple[Any, Any]:
    """The tree fold's state as ``report`` reaches it (the one pass, then ``_fold_tree`` going on from the
    lines it read; without the scanner unless ``compiled``) and as ``_fold_tree`` alone reads the file from
    its start; None where the one pass takes the file."""

    def state(found: Any) -> Any:
        return None if found is None else [{k: getattr(f, k) for k in f.__slots__} for f in found]

    with item.open() as f:
        reading = ccfold._Reading(f, ccfold._scanner(rule) if compiled else None)
        if ccfold._one_pass(item, rule, reading) is not None:
            return None, None
        handed = state(ccfold._fold_tree(item, rule, skip_invalid, [], reading))
    return handed, state(ccfold._fold_tree(item, rule, skip_invalid, []))


@needs_scanner
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=sessions(), rule=st.sampled_from(RULES), skip_invalid=st.booleans())
def test_the_tree_fold_goes_on_from_the_one_pass_as_it_reads_alone(
    data: bytes, rule: ScriptRule, skip_invalid: bool
) -> None:
    """Handed over or reading alone, with the scanner or without it (every line's kinds then kept by
    ``_Reading.read``), the tree fold comes to the same sums, nodes' folds and defects."""
    item = Input("session.jsonl", data, keep_text=False)
    handed, alone = tree_both(item, rule, skip_invalid)
    assert handed == alone
    pure, _ = tree_both(item, rule, skip_invalid, compiled=False)
    assert pure == handed


@needs_scanner
def test_the_corpus_tree_folds_go_on_from_the_one_pass_as_they_read_alone() -> None:
    files = sorted(require_shared("corpus", "transcripts", "claude_code").rglob("*.jsonl"))
    files += sorted(DATA.joinpath("claude_code").rglob("*.jsonl"))
    handed_over = 0
    for path in files:
        for rule in RULES:
            for skip_invalid in (False, True):
                handed, alone = tree_both(Input(str(path), keep_text=False), rule, skip_invalid)
                assert handed == alone, path
                handed_over += handed is not None
    assert handed_over >= 20  # 9 of the corpus's files, 4 rules, both ways: the fold takes most of them
