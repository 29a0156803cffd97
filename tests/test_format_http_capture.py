"""The http_capture format: one request/response pair saved as an object with
``method``, ``path`` (or ``url``), ``headers``, ``body`` and ``response``. The
body is read in its own dialect, the response's usage is its measured size."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import DATA
from typer.testing import Result

from windowfit.fitting.errors import UnknownShape
from windowfit.fitting.formats import FORMATS, Input, detect, load_path
from windowfit.fitting.transcript import Source, Usage
from windowfit.fitting.validate import check_request

Run = Callable[..., Result]
FIXTURES = DATA / "http_capture"
SNIFF = FORMATS["http_capture"].sniff


def calls_in(body: dict[str, object]) -> int:
    """Tool calls counted from the raw body, without the loader."""
    n = 0
    for m in body["messages"]:  # type: ignore[attr-defined]
        n += len(m.get("tool_calls") or ())
        if isinstance(m.get("content"), list):
            n += sum(1 for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use")
    return n


@pytest.mark.parametrize("name", ["anthropic_tool_round.json", "openai_chat.json"])
def test_a_capture_is_one_transcript_with_its_calls(name: str) -> None:
    path = FIXTURES / name
    raw = json.loads(path.read_text())
    body = json.loads(raw["body"]) if isinstance(raw["body"], str) else raw["body"]
    (t,) = load_path(path)
    assert detect(Input(str(path))).name == t.format == "http_capture"
    assert sum(len(m.tool_calls) for m in t.messages) == calls_in(body)
    assert check_request(t) == ()


def test_anthropic_usage_and_dialect() -> None:
    path = FIXTURES / "anthropic_tool_round.json"
    (t,) = load_path(path)
    assert t.dialect == "anthropic"
    assert [b.text for b in t.system] == ["You are a coding agent."]  # type: ignore[union-attr]
    assert [tool.name for tool in t.tools] == ["read_file"]
    assert t.usage == (Usage(5, 12, 300, 40, Source(str(path), 1), 9),)
    assert t.messages[-1].tool_results[0].is_error


def test_openai_usage_takes_the_cached_part_out() -> None:
    path = FIXTURES / "openai_chat.json"
    (t,) = load_path(path)
    assert t.dialect == "openai"
    # prompt_tokens 60, of which cached_tokens 10 (the fixture's response)
    assert t.usage == (Usage(3, 50, 0, 10, Source(str(path), 1), 5),)


def test_error_response_is_a_defect(tmp_path: Path) -> None:
    raw = json.loads((FIXTURES / "anthropic_tool_round.json").read_text())
    raw["response"] = {"status": 529, "body": {"type": "error"}}
    path = tmp_path / "overloaded.json"
    path.write_text(json.dumps(raw))
    (t,) = load_path(path)
    assert [d.kind for d in t.defects] == ["error-response"]
    assert t.usage == ()


def test_a_capture_of_another_endpoint_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text(json.dumps({"method": "GET", "path": "/v1/models", "headers": {}, "body": None, "response": {}}))
    assert SNIFF(path.read_bytes())
    with pytest.raises(UnknownShape, match="GET /v1/models"):
        load_path(path)


def test_sniffing() -> None:
    assert SNIFF(b'{"method": "POST", "path": "/v1/messages", "headers": {}, "body": {"messages": []}}')
    assert not SNIFF(b'{"request": {"method": "POST", "url": "x", "body": {}}, "response": {}}')  # claude-trace
    assert not SNIFF(b'{"messages": [{"role": "user", "content": "hi"}]}')
    assert not SNIFF(b'{"method": "POST", "body": {}}')  # no path or url
    lines = b'{"method": "POST", "path": "/v1/messages", "body": {}}\n{"method": "POST", "path": "/", "body": {}}\n'
    assert not SNIFF(lines)  # one pair per file


def test_fit_writes_a_valid_request(run_cli: Run, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = run_cli("fit", str(FIXTURES / "anthropic_tool_round.json"), "--budget", "2000", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    (fitted,) = load_path(out)
    assert (fitted.format, fitted.dialect) == ("request", "anthropic")
    assert check_request(fitted) == ()
