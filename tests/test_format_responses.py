"""The "responses" format and the Responses-item reader Codex shares: a JSON
array of items, a request body ``{"input": [...]}``, and one item per line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from conftest import DATA
from typer.testing import Result

from windowfit.fitting import Transcript
from windowfit.fitting.errors import UnknownShape
from windowfit.fitting.formats import Input, detect, load_path
from windowfit.fitting.formats.responses import sniff
from windowfit.fitting.transcript import Source, Text, Thinking, ToolCall, ToolResult
from windowfit.fitting.validate import check_request
from windowfit.fitting.wire.responses import ItemReader

RESPONSES = DATA / "responses"
HERE = Source("<test>")


def load_one(path: Path, **kwargs: bool) -> Transcript:
    (transcript,) = load_path(path, **kwargs)
    return transcript


def shape(t: Transcript) -> list[tuple[str, list[str]]]:
    out = []
    for m in t.messages:
        kinds = []
        for b in m.content:
            if isinstance(b, ToolCall):
                kinds.append(f"call {b.id}")
            elif isinstance(b, ToolResult):
                kinds.append(f"result {b.call_id}")
            else:
                kinds.append(type(b).__name__.lower())
        out.append((m.role, kinds))
    return out


def test_array_of_items() -> None:
    t = load_one(RESPONSES / "items.json")
    assert (t.format, t.dialect) == ("responses", "openai")
    assert shape(t) == [
        ("user", ["text"]),  # the "easy" message form, with no type
        ("assistant", ["thinking", "call call_W1", "call call_W2"]),  # parallel calls: one message
        ("tool", ["result call_W1"]),
        ("tool", ["result call_W2"]),
        ("assistant", ["text"]),
    ]
    assert [m.source.line for m in t.messages] == [2, 3, 6, 7, 9]  # each item's line in the array
    assert t.messages[1].content[0] == Thinking("Two cities: call the tool twice.")
    assert t.messages[2].tool_results[0].content == (Text('{"temp_c": 3, "sky": "snow"}'),)  # the string as sent
    assert t.messages[3].tool_results[0].content == (Text("temp_c=7 sky=rain"),)  # a list of parts
    assert dict(t.line_kinds) == {"item_reference": 1}  # not a message: counted, skipped
    assert t.defects == ()
    assert check_request(t) == ()


def test_request_body() -> None:
    t = load_one(RESPONSES / "body.json")
    assert t.system == (Text("You answer weather questions with the tool."),)
    assert [(d.name, d.dialect) for d in t.tools] == [("get_weather", "openai")]
    assert orjson.loads(t.tools[0].schema_json)["required"] == ["city"]
    assert any("1 built-in tool(s)" in n for n in t.notes)  # web_search: not a function
    assert orjson.loads(t.extra) == {"model": "gpt-5"}  # Responses-only keys (reasoning) are not kept
    assert shape(t) == [
        ("system", ["text"]),
        ("user", ["text"]),
        ("assistant", ["call call_T1"]),
        ("tool", ["result call_T1"]),
        ("assistant", ["call call_T2"]),
    ]
    assert [m.source.line for m in t.messages] == [10, 11, 12, 13, 14]
    # the last call has no output yet: a defect, never an invented result
    assert [(d.kind, d.source.line) for d in t.defects] == [("unanswered-call", 14)]


def test_items_one_per_line() -> None:
    t = load_one(RESPONSES / "items.jsonl")
    assert shape(t) == [
        ("user", ["text"]),
        ("assistant", ["call call_X1"]),
        ("tool", ["result call_X1"]),
        ("assistant", ["call call_X2"]),
        ("tool", ["result call_X2"]),  # local_shell_call_output names its call by "id"
        ("tool", ["result call_NOPE"]),
        ("assistant", ["text"]),
    ]
    patch = t.messages[1].tool_calls[0]
    assert orjson.loads(patch.input_json)["input"].startswith("*** Begin Patch\n")
    shell = t.messages[3].tool_calls[0]
    assert (shell.name, orjson.loads(shell.input_json)["command"]) == ("local_shell", ["pytest", "-q"])
    failed = t.messages[5].tool_results[0]
    assert (failed.content, failed.is_error) == ((Text("tool crashed"),), True)  # {content, success: false}
    assert [(d.kind, d.source.line) for d in t.defects] == [("orphan-result", 6)]


def test_fit_writes_a_chat_completions_body(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = run_cli("fit", str(RESPONSES / "body.json"), "--budget", "5000", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    body = orjson.loads(out.read_bytes())
    assert body["model"] == "gpt-5"
    assert body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
    assert body["messages"][0]["role"] == "system"
    assert check_request(load_one(out)) == ()  # the unanswered call got the fit's synthetic result
    assert run_cli("report", str(RESPONSES / "items.jsonl")).exit_code == 0


def test_item_reader_groups_model_items() -> None:
    reader = ItemReader()
    reader.add({"role": "user", "content": "go"}, HERE)
    reader.add({"type": "reasoning", "summary": [], "encrypted_content": "gAAAAopaque"}, HERE)
    reader.add({"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"}, HERE)
    assert (len(reader.messages), reader.begun, reader.role_at(1)) == (1, 2, "assistant")
    reader.add({"type": "function_call", "call_id": "b", "name": "f", "arguments": "{ }"}, HERE)
    reader.add({"type": "function_call_output", "call_id": "a", "output": "1"}, HERE)
    assert not reader.add({"type": "ghost_snapshot", "ghost_commit": {}}, HERE)  # caller counts it
    reader.add({"type": "function_call_output", "call_id": "b", "output": ""}, HERE)
    messages = reader.finish()
    assert [m.role for m in messages] == ["user", "assistant", "tool", "tool"]
    calls = messages[1].tool_calls
    assert [(c.id, c.input_json, c.input_text) for c in calls] == [("a", "{}", ""), ("b", "{}", "{ }")]
    assert messages[3].tool_results[0].content == ()


def test_malformed_item_raises_or_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(b'[\n{"role": "user", "content": "hi"},\n{"type": "function_call", "name": "f"}\n]\n')
    with pytest.raises(UnknownShape) as info:
        load_one(path)
    assert info.value.location.line == 3
    t = load_one(path, skip_invalid=True)
    assert [s.source.line for s in t.skipped] == [3]
    assert shape(t) == [("user", ["text"])]


def test_sniff() -> None:
    for name in ("items.json", "body.json", "items.jsonl"):
        assert detect(Input(str(RESPONSES / name))).name == "responses"
    assert sniff(b'{"model": "gpt-5", "input": "Say hi"}')
    assert sniff(b'{"type": "function_call_output", "call_id": "c", "output": "' + b"z" * 70_000)  # cut by the head
    # not Responses items: an Anthropic Messages response (also "type": "message"), chat messages and bodies,
    # a Codex rollout line
    anthropic = (
        orjson.dumps(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": "hi"}],
                "stop_reason": "end_turn",
            }
        )
        + b"\n"
    )
    assert not sniff(anthropic)
    assert not sniff(b'[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]')
    assert not sniff(b'{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}')
    assert not sniff(b'{"role":"user","content":"hi"}\n{"role":"assistant","content":"yo"}\n')
    assert not sniff(
        b'{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":"x"}}\n'
    )
