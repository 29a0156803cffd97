"""The atif format: ATIF trajectories (Harbor, terminal-bench). Agent steps are
assistant messages, their observation results the calls' results (or user text
when they answer no call), their metrics the measured request sizes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import DATA
from typer.testing import Result

from windowfit.fitting.errors import UnknownShape
from windowfit.fitting.formats import FORMATS, Input, detect, load_path
from windowfit.fitting.transcript import Source, Thinking, Usage
from windowfit.fitting.validate import check_request

Run = Callable[..., Result]
FIXTURES = DATA / "atif"
SNIFF = FORMATS["atif"].sniff


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.name)
def test_calls_results_and_usage_as_the_file_holds_them(path: Path) -> None:
    steps = json.loads(path.read_text())["steps"]
    (t,) = load_path(path)
    assert detect(Input(str(path))).name == "atif"
    calls = sum(len(s.get("tool_calls") or ()) for s in steps)
    answered = sum(1 for s in steps for r in (s.get("observation") or {}).get("results", ()) if r.get("source_call_id"))
    assert sum(len(m.tool_calls) for m in t.messages) == calls
    assert sum(len(m.tool_results) for m in t.messages) == answered
    prompts = [s["metrics"]["prompt_tokens"] for s in steps if s["source"] == "agent" and "metrics" in s]
    assert [u.total for u in t.usage] == prompts
    assert check_request(t) == ()


def test_tool_calls_fixture() -> None:
    path = FIXTURES / "tool_calls.json"
    (t,) = load_path(path)
    assert [b.text for b in t.system] == ["You are a careful shell agent."]  # type: ignore[union-attr]
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert isinstance(t.messages[1].content[0], Thinking)
    # step 3: prompt_tokens 820 of which cached 700 and (metrics.extra) cache creation 100
    assert t.usage[0] == Usage(1, 20, 100, 700, Source(str(path)))


def test_results_that_answer_no_call_are_user_text() -> None:
    (t,) = load_path(FIXTURES / "terminus_no_tool_calls.json")
    assert [m.role for m in t.messages] == ["user", "assistant", "user", "assistant"]
    assert t.messages[2].content[0].text == "7 /etc/hosts\n$ "  # type: ignore[union-attr]


def test_an_unknown_step_source_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"schema_version": "ATIF-v1.4", "steps": [{"step_id": 1, "source": "tool"}]}))
    with pytest.raises(UnknownShape, match="step source 'tool'") as info:
        load_path(path)
    assert "step 1" in str(info.value.location)


def test_sniffing() -> None:
    assert SNIFF(b'{"schema_version": "ATIF-v1.5", "session_id": "x", "agent": {}, "steps": [')
    assert not SNIFF(b'{"schema_version": "2", "steps": []}')
    assert not SNIFF(b'{"messages": [{"role": "user", "content": "ATIF-v1"}]}')


def test_fit_writes_a_valid_request(run_cli: Run, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = run_cli("fit", str(FIXTURES / "tool_calls.json"), "--budget", "100000", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    (fitted,) = load_path(out)
    assert (fitted.format, fitted.dialect) == ("request", "openai")
    assert check_request(fitted) == ()


def test_call_ids_that_are_not_strings_are_a_clean_error_not_a_crash(tmp_path: Path) -> None:
    """A list where an id belongs (found by the fuzzer: the set of call ids raised TypeError, a traceback)."""
    agent = {"step_id": 2, "source": "agent", "message": "ok"}
    call = {"tool_call_id": "c1", "function_name": "f", "arguments": {}}
    loose = {**agent, "tool_calls": [call], "observation": {"results": [{"source_call_id": ["c1"], "content": "r"}]}}
    path = tmp_path / "loose.json"
    path.write_text(json.dumps({"schema_version": "ATIF-v1.4", "steps": [{"step_id": 1, "source": "user"}, loose]}))
    (t,) = load_path(path)
    assert [m.role for m in t.messages][-1] == "user"  # the result answers no call: user text
    bad = {**agent, "tool_calls": [{**call, "tool_call_id": ["c1"]}]}
    path.write_text(json.dumps({"schema_version": "ATIF-v1.4", "steps": [{"step_id": 1, "source": "user"}, bad]}))
    with pytest.raises(UnknownShape, match="'id'"):
        load_path(path)


@pytest.mark.parametrize("wrong", [True, 5, "x", {"a": 1}])
@pytest.mark.parametrize("field", ["tool_calls", "results"])
def test_a_list_field_of_another_type_is_a_located_error(tmp_path: Path, field: str, wrong: object) -> None:
    """Found by the corpus fuzzer: ``"observation": {"results": true}`` raised TypeError (a traceback)."""
    agent: dict[str, object] = {"step_id": 2, "source": "agent", "message": "ok"}
    agent.update({"tool_calls": wrong} if field == "tool_calls" else {"observation": {"results": wrong}})
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps({"schema_version": "ATIF-v1.4", "steps": [{"step_id": 1, "source": "user"}, agent]}))
    with pytest.raises(UnknownShape, match=f"'{field}' must be a list") as info:
        load_path(path)
    assert "step 2" in str(info.value.location)
