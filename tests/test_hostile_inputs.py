"""No command prints a traceback on any input (issue 8, item 1).

A matrix of bad inputs, kept here: broken bytes and documents of every kind, and every format's real lines with
fields of the wrong type (``{"type": []}``, ``"tool_calls": 1.5``, ``"cached_input_tokens": "null"``, ...) or
nested deeper than the standard library's recursion. Each kind goes through every command. A command may
succeed, fail the check (exit 1) or refuse the input (exit 3 with one located line: ``error: FILE[:LINE[:COL]]:``),
never crash; and a folder holding the bad file beside a good one is still scanned with ``--skip-invalid``.
"""

from __future__ import annotations

import copy
import gzip
import io
import json
import re
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

DATA = Path(__file__).parent / "data"
Run = Callable[..., Result]

LOCATED = re.compile(r"^error: .+?(:\d+(:\d+)?)?: \S")

WRONG_TYPES: tuple[Any, ...] = (None, [], {}, 1.5, "null", True, -1, 2**70)
"""What a wrongly typed field holds instead: each replaces a field of a real line."""

DEEP = 100_000


def _deep(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def _deep_text(depth: int, *, wrap: str = '{"role": "user", "content": ', close: str = "}") -> bytes:
    return (wrap + "[" * depth + '"x"' + "]" * depth + close + "\n").encode()


def _png() -> bytes:
    return b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("header.json", '{"version": 2}')
    return buffer.getvalue()


_CALL = b'{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x", "input": %s}]}\n'
_RESULT = b'{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": %s}]}\n'
CONSTANTS: dict[str, bytes] = {
    "infinity in input": _CALL % b'{"n": Infinity, "m": -Infinity}' + _RESULT % b'"ok"',
    "number past a double in input": _CALL % b'{"n": 1E400}' + _RESULT % b'"ok"',
    "lone surrogate in input": _CALL % b'{"s": "\\udc00x", "\\ud800": 1}' + _RESULT % b'"ok"',
    "lone surrogate in a result": _CALL % b"{}" + _RESULT % b'"r \\ud800 r"',
    "lone surrogate in a tool name": b'{"role": "assistant", "content": [{"type": "tool_use", "id": "\\ud800", '
    b'"name": "\\udfff", "input": {}}]}\n' + _RESULT.replace(b'"a"', b'"\\ud800"') % (b'"' + b"r " * 500 + b'"'),
    "nan as an extra key": b'{"role": "user", "content": "hi", "x_score": NaN}\n',
    "nan in openai arguments": b'{"role": "assistant", "content": null, "tool_calls": [{"id": "a", '
    b'"type": "function", "function": {"name": "x", "arguments": "{\\"n\\": NaN}"}}]}\n'
    b'{"role": "tool", "tool_call_id": "a", "content": "ok"}\n',
    "nan in a body": b'{"model": "m", "temperature": NaN, "messages": [{"role": "user", "content": "\\ud800"}]}',
    "nan in a claude code line": b'{"type": "user", "uuid": "u", "parentUuid": null, "message": {"role": "user", '
    b'"content": "hi"}}\n{"type": "assistant", "uuid": "a", "parentUuid": "u", "message": {"id": "m", '
    b'"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {"n": NaN}}], '
    b'"usage": {"input_tokens": NaN}}}\n',
    "nan outside a string still broken": b'{"role": "user", "content": "hi", "x": NaN\n',
}
"""NaN, Infinity, numbers past a double and lone surrogates: orjson refuses them, the standard library reads
them, and windowfit keeps them as they came (issue 8, item 3)."""

GENERIC: dict[str, bytes] = {
    "empty": b"",
    "blank lines": b"\n\n  \n",
    "bom only": b"\xef\xbb\xbf",
    "nul bytes": b"\x00" * 64,
    "nul inside a line": b'{"role": "user", "content": "a\x00b"}\n',
    "invalid utf-8": b'{"role": "user", "content": "\xff\xfe"}\n',
    "latin-1 text": '{"role": "user", "content": "café"}\n'.encode("latin-1"),
    "utf-16": '{"role": "user", "content": "hi"}\n'.encode("utf-16"),
    "not json": b"hello world\n",
    "truncated line": b'{"role": "user", "content": "hi"}\n{"role": "assistant", "cont',
    "truncated document": b'[{"role": "user", "content": "hi"}, {"role": ',
    "json scalar": b"42\n",
    "json string": b'"just a string"\n',
    "json null": b"null\n",
    "json true": b"true\n",
    "empty object": b"{}\n",
    "empty array": b"[]\n",
    "array of numbers": b"[1, 2, 3]\n",
    "array of arrays": b"[[1], [2]]\n",
    "nested empty arrays": b"[[], [[]]]\n",
    "lines of scalars": b"1\n2\n3\n",
    "lines of strings": b'"a"\n"b"\n',
    "lines of arrays": b"[1]\n[2]\n",
    "object without role": b'{"content": "hi"}\n',
    "role null": b'{"role": null, "content": "hi"}\n',
    "role number": b'{"role": 7, "content": "hi"}\n',
    "role list": b'{"role": ["user"], "content": "hi"}\n',
    "unknown role": b'{"role": "wizard", "content": "hi"}\n',
    "content number": b'{"role": "user", "content": 5}\n',
    "content object": b'{"role": "user", "content": {"text": "hi"}}\n',
    "content list of numbers": b'{"role": "user", "content": [1, 2]}\n',
    "content list of nulls": b'{"role": "user", "content": [null]}\n',
    "block type list": b'{"role": "user", "content": [{"type": [], "text": "hi"}]}\n',
    "block type null": b'{"role": "user", "content": [{"type": null}]}\n',
    "text block text number": b'{"role": "user", "content": [{"type": "text", "text": 5}]}\n',
    "tool_use input string": b'{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x", '
    b'"input": "oops"}]}\n',
    "tool_use id number": b'{"role": "assistant", "content": [{"type": "tool_use", "id": 5, "name": "x", '
    b'"input": {}}]}\n',
    "tool_use name null": b'{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": null, '
    b'"input": {}}]}\n',
    "tool_result content number": b'{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", '
    b'"content": 5}]}\n',
    "tool_result id list": b'{"role": "user", "content": [{"type": "tool_result", "tool_use_id": [], '
    b'"content": "x"}]}\n',
    "tool result repeated": b'{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x", '
    b'"input": {}}]}\n{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "r"}, '
    b'{"type": "tool_result", "tool_use_id": "a", "content": "r"}]}\n',
    "only an orphan result": b'{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "zz", '
    b'"content": "r"}]}\n',
    "image without source": b'{"role": "user", "content": [{"type": "image"}]}\n',
    "image source string": b'{"role": "user", "content": [{"type": "image", "source": "x"}]}\n',
    "image data number": b'{"role": "user", "content": [{"type": "image", "source": {"type": "base64", '
    b'"media_type": "image/png", "data": 5}}]}\n',
    "openai tool_calls float": b'{"role": "assistant", "content": null, "tool_calls": 1.5}\n',
    "openai tool_calls of strings": b'{"role": "assistant", "content": null, "tool_calls": ["x"]}\n',
    "openai function null": b'{"role": "assistant", "content": null, "tool_calls": [{"id": "a", '
    b'"type": "function", "function": null}]}\n',
    "openai arguments object": b'{"role": "assistant", "content": null, "tool_calls": [{"id": "a", '
    b'"type": "function", "function": {"name": "x", "arguments": {"a": 1}}}]}\n',
    "openai arguments not json": b'{"role": "assistant", "content": null, "tool_calls": [{"id": "a", '
    b'"type": "function", "function": {"name": "x", "arguments": "{oops"}}]}\n',
    "tool message id number": b'{"role": "tool", "tool_call_id": 5, "content": "x"}\n',
    "body tools number": b'{"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": 5}\n',
    "body tools of strings": b'{"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": ["x"]}\n',
    "body system number": b'{"model": "m", "system": 5, "messages": [{"role": "user", "content": "hi"}]}\n',
    "body messages object": b'{"model": "m", "messages": {"role": "user"}}\n',
    "body messages null": b'{"model": "m", "messages": null}\n',
    "system only": b'{"role": "system", "content": "' + b"x" * 4000 + b'"}\n',
    "huge integer": b'{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x", '
    b'"input": {"n": 123456789012345678901234567890}}]}\n',
    "nan in input": b'{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x", '
    b'"input": {"n": NaN}}]}\n',
    "lone surrogate": b'{"role": "user", "content": "\\ud800"}\n',
    **CONSTANTS,
    "duplicate keys": b'{"role": "user", "role": "assistant", "content": "hi"}\n',
    "deep content": _deep_text(DEEP),
    "deep tool input": (
        b'{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x", "input": '
        + b'{"a":' * 300
        + b"1"
        + b"}" * 300
        + b"}]}\n"
    ),
    "deep openai arguments": (
        b'{"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", '
        b'"function": {"name": "x", "arguments": "' + b'{\\"a\\":' * 300 + b"1" + b"}" * 300 + b'"}}]}\n'
    ),
    "gzip": gzip.compress(b'{"role": "user", "content": "hi"}\n'),
    "png": _png(),
    "zip": _zip(),
    "comment lines only": b"// a comment\n// another\n",
    "crlf lines": b'{"role": "user", "content": "hi"}\r\n{"role": "assistant", "content": "yo"}\r\n',
    "very long line of spaces": b" " * 200_000 + b"\n",
}


def _real_lines(path: Path) -> list[Any]:
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [json.loads(path.read_text())]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path inside a JSON value (list items by index)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield (*prefix, i)
            yield from _paths(item, (*prefix, i))


def _set(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    out = copy.deepcopy(value)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return out


# Real lines of every format, and the fields whose types the loaders trust.
MUTATED_SOURCES: dict[str, tuple[str, tuple[str, ...]]] = {
    "claude_code": (
        "claude_code/branch.jsonl",
        ("type", "message", "content", "role", "usage", "input_tokens", "cache_read_input_tokens", "parentUuid"),
    ),
    "codex": ("codex/modern.jsonl", ("type", "payload", "content", "role", "info", "cached_input_tokens", "text")),
    "responses": ("responses/items.jsonl", ("type", "call_id", "input", "output", "action", "command", "content")),
    "openai_chat": ("openai_chat/fine_tune.jsonl", ("messages", "role", "content", "tool_calls", "function")),
    "anthropic_log": ("anthropic_log/capture.json", ("request", "body", "messages", "tools", "system", "response")),
}


def _mutations() -> dict[str, bytes]:
    """Each field of ``MUTATED_SOURCES`` with three wrong types, taken in turn from ``WRONG_TYPES`` so that
    every wrong type meets every format while the matrix stays small enough for the default run."""
    cases: dict[str, bytes] = {}
    turn = 0
    for fmt, (relative, keys) in MUTATED_SOURCES.items():
        source = DATA / relative
        lines = _real_lines(source)
        for key in keys:
            for number, line in enumerate(lines):
                paths = [p for p in _paths(line) if p[-1] == key]
                if not paths:
                    continue
                path = paths[0]
                chosen = [WRONG_TYPES[(turn + k) % len(WRONG_TYPES)] for k in range(3)]
                turn += 3
                for wrong in chosen:
                    mutated = _set(line, path, wrong)
                    if mutated == line:
                        continue
                    body = [mutated if i == number else other for i, other in enumerate(lines)]
                    if source.suffix == ".jsonl":
                        data = "".join(json.dumps(item) + "\n" for item in body).encode()
                    else:
                        data = json.dumps(body[0]).encode()
                    cases[f"{fmt} {key}={json.dumps(wrong)}"] = data
                break  # the first line that has the key: one real line per field
    return cases


MUTATED = _mutations()
CASES = {**GENERIC, **MUTATED}


def test_the_matrix_holds_at_least_a_hundred_kinds() -> None:
    assert len(CASES) >= 100, len(CASES)


def _check(result: Result, *, picks_one: bool = False) -> None:
    """``picks_one``: fit and replay on a file of several transcripts stop with a usage error listing them
    (issue 9: never pick silently), which is the one exit 2 an input may cause."""
    if picks_one and result.exit_code == 2:
        assert "--index" in result.stderr, result.stderr
        return
    assert result.exit_code in (0, 1, 3), (result.exit_code, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
    if result.exit_code == 3:
        first = result.stderr.splitlines()[0]
        assert LOCATED.match(first), first


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / (re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") + ".jsonl")
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("kind", sorted(CASES))
def test_no_command_crashes(run_cli: Run, tmp_path: Path, kind: str) -> None:
    path = _write(tmp_path, kind, CASES[kind])
    out = tmp_path / "out.jsonl"
    for args in (
        ("report", str(path)),
        ("check", str(path), "--budget", "2000"),
        ("fit", str(path), "--budget", "2000", "-o", str(out)),
        ("fit", str(path), "--budget", "50", "--json"),
        ("replay", str(path), "--budget", "2000"),
    ):
        _check(run_cli(*args), picks_one=args[0] in ("fit", "replay"))
    _check(run_cli("audit", str(path)))


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_folder_scan_goes_on_past_a_bad_file(run_cli: Run, tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "scan"
    folder.mkdir()
    (folder / "good.jsonl").write_bytes(b'{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "yo"}\n')
    _write(folder, kind, CASES[kind])
    result = run_cli("check", str(folder), "--budget", "2000", "--skip-invalid")
    _check(result)
    assert result.exit_code in (0, 1), result.stderr
    assert "good.jsonl" in result.stdout


@pytest.mark.parametrize("value", ["inf", "nan", "1e308", "1001"])
def test_an_overhead_that_is_not_a_finite_factor_is_a_usage_error(run_cli: Run, value: str) -> None:
    result = run_cli("check", str(DATA / "openai_chat/fine_tune.jsonl"), "--budget", "2000", "--overhead", value)
    assert result.exit_code == 2, result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_a_bad_file_named_on_the_command_line_still_fails(run_cli: Run, tmp_path: Path) -> None:
    path = _write(tmp_path, "bad", CASES["body tools number"])
    result = run_cli("check", str(path), "--budget", "2000", "--skip-invalid")
    assert result.exit_code == 3, result.stderr
    assert LOCATED.match(result.stderr.splitlines()[0]), result.stderr


def test_a_folder_scan_counts_the_files_it_skips(run_cli: Run, tmp_path: Path) -> None:
    folder = tmp_path / "scan"
    folder.mkdir()
    (folder / "good.jsonl").write_bytes(b'{"role": "user", "content": "hi"}\n')
    _write(folder, "bad one", CASES["body tools number"])
    _write(folder, "bad two", CASES["deep tool input"])
    result = run_cli("check", str(folder), "--budget", "2000", "--skip-invalid")
    assert result.exit_code == 0, result.stderr
    assert "2 file(s) skipped" in result.stderr
    assert "bad_one.jsonl" in result.stderr and "bad_two.jsonl" in result.stderr
    assert "good.jsonl" in result.stdout


def test_nesting_deeper_than_the_limit_is_located(run_cli: Run, tmp_path: Path) -> None:
    path = _write(tmp_path, "deep", CASES["deep tool input"])
    result = run_cli("report", str(path))
    assert result.exit_code == 3, result.stderr
    assert f"{path}:1: " in result.stderr and "nested more than 200 levels" in result.stderr


@pytest.mark.parametrize(
    "kind",
    [
        "infinity in input",
        "number past a double in input",
        "lone surrogate in input",
        "lone surrogate in a result",
        "nan as an extra key",
        "nan in openai arguments",
    ],
)
def test_fit_writes_nan_infinity_and_lone_surrogates_as_they_came(run_cli: Run, tmp_path: Path, kind: str) -> None:
    path = _write(tmp_path, kind, CONSTANTS[kind])
    out = tmp_path / "out.jsonl"
    result = run_cli("fit", str(path), "--budget", "100000", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert out.read_bytes() == CONSTANTS[kind]


def test_a_lone_surrogate_is_shown_as_its_escape(run_cli: Run, tmp_path: Path) -> None:
    path = _write(tmp_path, "surrogate", CONSTANTS["lone surrogate in a tool name"])
    result = run_cli("report", str(path))
    assert result.exit_code == 0, result.stderr
    assert "\\udfff" in result.stdout
    document = run_cli("report", str(path), "--json")
    assert document.exit_code == 0 and "\\udfff" in document.stdout
