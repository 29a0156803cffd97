"""SPEC section 6, invariant 9: messages the fit did not touch are written
exactly as they came (issue 8, item 3). Files are generated as raw JSON text
(string contents, extra keys, odd number spellings, duplicate keys, spacing),
fitted with a budget that clears results, and the output's messages are
compared byte for byte with the input's."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import require_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowfit.fitting import make_estimator
from windowfit.fitting._json import encode, loads_or_lenient
from windowfit.fitting.errors import EmptyTranscript
from windowfit.fitting.fit import TRUNCATION_NOTE, apply_plan, plan_fit
from windowfit.fitting.formats import Input, load, load_path
from windowfit.fitting.request import Fitter, write_transcript

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ODD_NUMBERS = ("1E+2", "-0.0", "1.50", "12345678901234567890", "0e0", "-1e-7", "100")
"""Spellings a re-serialiser changes (orjson writes 100.0, 0.0, 1.5, ...)."""

DECODER = json.JSONDecoder()
NOTE_BLOCKS = [{"type": "text", "text": TRUNCATION_NOTE}]


def _members(text: str, start: int) -> list[str]:
    """The texts of the array items starting at ``text[start]`` ('['), found by
    the standard library's decoder (independent of windowfit's reader)."""
    out: list[str] = []
    i = start + 1
    while True:
        while text[i] in " \t\r\n,":
            i += 1
        if text[i] == "]":
            return out
        _, end = DECODER.raw_decode(text, i)
        out.append(text[i:end])
        i = end


def message_texts(data: bytes, *, body: bool) -> list[str]:
    """Each message's JSON text: a line of a JSONL file, or an item of a body's
    ``messages`` array (found after the ``"messages":`` key)."""
    text = data.decode()
    if not body:
        return [line.strip() for line in text.splitlines() if line.strip()]
    key = text.index('"messages"')
    return _members(text, text.index("[", key))


# --------------------------------------------------------------------------
# Raw JSON text, generated


@st.composite
def odd_object(draw: st.DrawFn) -> str:
    """A JSON object's text with odd number spellings and, maybe, a repeated key."""
    members = [f'"n{k}":{draw(st.sampled_from(ODD_NUMBERS))}' for k in range(draw(st.integers(1, 3)))]
    if draw(st.booleans()):
        members.append('"n0":7')
    return "{" + ",".join(members) + "}"


@st.composite
def message_text(draw: st.DrawFn, fields: list[tuple[str, str]]) -> str:
    """A message object's text: the given members (key, value text), extra keys
    with odd numbers (a repeated one, maybe) and some spacing around separators."""
    members = list(fields)
    if draw(st.booleans()):
        members.append(("x_meta", draw(odd_object())))
    if draw(st.booleans()):
        members += [("x_dup", "1"), ("x_dup", draw(st.sampled_from(ODD_NUMBERS)))]
    colon, comma = draw(st.sampled_from(((":", ","), (": ", ", "), (" : ", " ,"))))
    return "{" + comma.join(f"{json.dumps(k)}{colon}{v}" for k, v in members) + "}"


def _s(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


@st.composite
def conversation(draw: st.DrawFn, dialect: str) -> list[str]:
    """Message texts: a question (string content), tool rounds with big results
    and odd tool inputs, and an answer (string content)."""
    texts = [draw(message_text([("role", '"user"'), ("content", _s("Please look at the files."))]))]
    for k in range(draw(st.integers(3, 9))):
        call_id = f"call_{k}"
        result = _s(f"line {k}: " + "data " * draw(st.integers(200, 1200)))
        tool_input = draw(odd_object())
        if dialect == "anthropic":
            call = f'{{"type":"tool_use","id":"{call_id}","name":"Read","input":{tool_input}}}'
            texts.append(draw(message_text([("role", '"assistant"'), ("content", f"[{call}]")])))
            answer = f'{{"type":"tool_result","tool_use_id":"{call_id}","content":{result}}}'
            texts.append(draw(message_text([("role", '"user"'), ("content", f"[{answer}]")])))
        else:
            function = f'{{"name":"Read","arguments":{_s(tool_input)}}}'
            call = f'{{"id":"{call_id}","type":"function","function":{function}}}'
            texts.append(
                draw(message_text([("role", '"assistant"'), ("content", "null"), ("tool_calls", f"[{call}]")]))
            )
            texts.append(
                draw(message_text([("role", '"tool"'), ("tool_call_id", f'"{call_id}"'), ("content", result)]))
            )
    texts.append(draw(message_text([("role", '"assistant"'), ("content", _s("Done: 1E+2 files."))])))
    return texts


@st.composite
def input_files(draw: st.DrawFn) -> tuple[bytes, bool, list[str]]:
    """A file's bytes, whether it is a request body, and its messages' texts."""
    dialect = draw(st.sampled_from(("anthropic", "openai")))
    texts = draw(conversation(dialect))
    if not draw(st.booleans()):
        return "".join(t + "\n" for t in texts).encode(), False, texts
    head = '"model":"m-1","max_tokens":1E+3,"temperature":0.50'
    if dialect == "anthropic" and draw(st.booleans()):
        head += ',"system":"You are terse."'
    if dialect == "openai" and draw(st.booleans()):
        texts = ['{"role":"system","content":"You are terse.","x_n":-0.0}', *texts]
    items = ",\n    ".join(texts)
    return f'{{{head},\n  "messages": [\n    {items}\n  ]\n}}\n'.encode(), True, texts


def _fit(path: Path, fraction: float, steps: bool = False, to: str = "same") -> tuple[bytes, set[str], int]:
    """The bytes ``fit --to same`` writes with a budget of ``fraction`` of the
    request, the call ids of the results it cleared, and how many messages went;
    ``steps``: with the step rules (batches by a third of the budget, cuts at steps of a quarter)."""
    (transcript,) = load_path(path)
    estimator = make_estimator()
    budget = max(1, int(plan_fit(transcript, budget=10**9, estimator=estimator).tokens_before * fraction))
    rules = {"batch_size": 0, "batch_tokens": max(1, budget // 3), "cut_step": max(1, budget // 4)} if steps else {}
    plan = plan_fit(transcript, budget=budget, estimator=estimator, **rules)
    cleared = {r.call_id for b in plan.batches for r in b.results}
    return (
        write_transcript(apply_plan(transcript, plan), to=to),  # type: ignore[arg-type]
        cleared,
        sum(d.stop - d.start for d in plan.dropped),
    )


def _joined(text: str, originals: list[str]) -> bool:
    """Whether the message ``text`` holds the truncation note, which joins the user messages beside it into one
    (``fit.sent``); then each other item of its content is an item of one of the ``originals`` (message texts) as
    it came, or the text block a string content stands for."""
    value = json.loads(text)
    if value.get("content") == TRUNCATION_NOTE:
        return True
    if not isinstance(value.get("content"), list) or NOTE_BLOCKS[0] not in value["content"]:
        return False
    strings = [json.loads(t).get("content") for t in originals]
    for item in _members(text, text.index("[", text.index('"content"'))):
        if json.loads(item) != NOTE_BLOCKS[0] and not any(item in t for t in originals):
            assert json.loads(item).get("text") in strings, f"a joined block was re-spelled: {item[:200]}"
    return True


def _answers(text: str) -> set[str]:
    """The call ids whose results a message text carries."""
    value = json.loads(text)  # the standard library: NaN and lone surrogates too
    ids = {value.get("tool_call_id")} if value.get("role") == "tool" else set()
    content = value.get("content")
    if isinstance(content, list):
        ids |= {b.get("tool_use_id") for b in content if isinstance(b, dict) and b.get("type") == "tool_result"}
    return {i for i in ids if isinstance(i, str)}


@PROPERTY
@given(input_files(), st.sampled_from((0.3, 0.6, 0.9)), st.booleans())
def test_untouched_messages_are_written_byte_for_byte(
    tmp_path_factory: pytest.TempPathFactory, case: Any, fraction: float, steps: bool
) -> None:
    data, body, texts = case
    path = tmp_path_factory.mktemp("exact") / ("in.json" if body else "in.jsonl")
    path.write_bytes(data)
    written, cleared, _ = _fit(path, fraction, steps)
    # (with batches by size, a short batch is never cleared: nothing may be)
    assert cleared or fraction == 0.9 or steps, "the budget should have cleared something"
    originals = set(texts)
    for text in message_texts(written, body=body):
        if _answers(text) & cleared or _joined(text, texts):
            continue  # touched: a cleared result's message, or the one the truncation note joins
        assert text in originals, f"an untouched message was re-shaped: {text[:200]}"


@PROPERTY
@given(input_files())
def test_a_file_that_fits_is_written_as_it_came(tmp_path_factory: pytest.TempPathFactory, case: Any) -> None:
    data, body, texts = case
    path = tmp_path_factory.mktemp("fits") / ("in.json" if body else "in.jsonl")
    path.write_bytes(data)
    written, cleared, dropped = _fit(path, 2.0)
    assert not cleared and not dropped
    assert message_texts(written, body=body) == texts
    if not body:
        assert written == data


def test_string_content_stays_a_string_next_to_a_cleared_result(tmp_path: Path) -> None:
    big = "word " * 3000
    lines = [
        '{"role":"user","content":"read both"}',
        *(
            f'{{"role":"assistant","content":[{{"type":"tool_use","id":"c{k}","name":"Read","input":{{"n":1E+2}}}}]}}\n'
            f'{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"c{k}","content":"{big}"}}]}}'
            for k in range(6)
        ),
        '{"role":"assistant","content":"done","n":12345678901234567890}',
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n")
    written, cleared, _ = _fit(path, 0.5)
    out = written.decode().splitlines()
    assert cleared
    assert out[0] == '{"role":"user","content":"read both"}'
    assert out[-1] == '{"role":"assistant","content":"done","n":12345678901234567890}'
    assert out[1] == '{"role":"assistant","content":[{"type":"tool_use","id":"c0","name":"Read","input":{"n":1E+2}}]}'


def test_the_library_returns_untouched_messages_as_the_objects_it_was_given() -> None:
    big = "word " * 3000
    messages: list[dict[str, Any]] = [{"role": "user", "content": "read them", "x": 1}]
    for k in range(8):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{k}", "type": "function", "function": {"name": "Read", "arguments": '{"n": 1E+2}'}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{k}", "content": big})
    messages.append({"role": "assistant", "content": "done"})
    body = {"model": "m", "messages": [{"role": "system", "content": "terse"}, *messages]}
    fitted = Fitter(budget=12_000).fit(body)
    assert fitted.plan.batches, "the budget should have cleared something"
    cleared = {r.call_id for b in fitted.plan.batches for r in b.results}
    out = fitted.body["messages"]
    assert out[0] is body["messages"][0]
    assert out[1] is messages[0]
    for message in out[2:]:
        if message.get("tool_call_id") in cleared:
            continue
        assert any(message is original for original in messages), message


# --------------------------------------------------------------------------
# Real files: request bodies and messages taken from the corpus


CLAUDE_TRACE = ("corpus", "transcripts", "anthropic_messages", "zkcpku_claude-trace-dev__test-traffic.jsonl")
TAU_BENCH = ("corpus", "transcripts", "openai_chat", "sierra-research_tau-bench__gpt-4o-airline.json")


def _bodies(path: Path) -> list[bytes]:
    """Each captured request body's JSON text exactly as the capture holds it."""
    out = []
    for line in path.read_bytes().splitlines():
        text = line.decode()
        if '"messages"' not in text:
            continue
        value = json.loads(text)
        body = (value.get("request") or {}).get("body")
        if isinstance(body, dict) and body.get("messages"):
            out.append(json.dumps(body, ensure_ascii=False, indent=2).encode())
    return out


def test_corpus_request_bodies_that_fit_are_written_as_they_came(tmp_path: Path) -> None:
    bodies = _bodies(require_shared(*CLAUDE_TRACE))
    assert bodies
    for k, data in enumerate(bodies):
        path = tmp_path / f"body-{k}.json"
        path.write_bytes(data)
        written, cleared, dropped = _fit(path, 2.0)
        assert not cleared and not dropped
        assert message_texts(written, body=True) == message_texts(data, body=True)


def test_corpus_messages_that_fit_are_written_as_they_came(tmp_path: Path) -> None:
    items = json.loads(require_shared(*TAU_BENCH).read_bytes())
    runs = [item["traj"] for item in items if isinstance(item, dict) and isinstance(item.get("traj"), list)][:20]
    assert runs
    checked = 0
    for k, traj in enumerate(runs):
        data = "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in traj).encode()
        path = tmp_path / f"run-{k}.jsonl"
        path.write_bytes(data)
        written, cleared, dropped = _fit(path, 2.0)
        assert not cleared and not dropped
        (transcript,) = load_path(path)
        if plan_fit(transcript, budget=10**9, estimator=make_estimator()).repairs:
            continue  # a repaired message (a reused call id, ...) is rebuilt: touched
        checked += 1
        assert written == data
    assert checked


# --------------------------------------------------------------------------
# Tool inputs: their JSON text exactly as the file spelled it, in every writer and every format

INPUT_NUMBERS = (*ODD_NUMBERS, "123456789012345678901234567890", "-98765432109876543210", "1.0e-7", "1E400")
"""Past 64 bits, orjson reads a float; 1E400 is past a double (orjson refuses it, as it refuses NaN)."""
CONSTANTS = ("NaN", "Infinity", "-Infinity")
ODD_STRINGS = ('"\\ud800"', '"a\\udfffb"', '"caf\\u00e9"', '"\\u001b[2J"', '"plain"')


@st.composite
def odd_input(draw: st.DrawFn, *, constants: bool = False) -> str:
    """A tool input's JSON text: odd number spellings, repeated keys, spacing, nesting up to 40
    levels and, with ``constants``, NaN/Infinity and lone surrogates (which orjson refuses)."""
    numbers = (*INPUT_NUMBERS[:-1], *CONSTANTS, INPUT_NUMBERS[-1]) if constants else INPUT_NUMBERS[:-1]
    strings = ODD_STRINGS if constants else ODD_STRINGS[2:]
    leaf = st.one_of(st.sampled_from(numbers), st.sampled_from(strings), st.sampled_from(("true", "null", "[]")))
    colon, comma = draw(st.sampled_from(((":", ","), (": ", ", "), (" :\t", " ,\t "))))
    members = [f'"k{k}"{colon}{draw(leaf)}' for k in range(draw(st.integers(1, 4)))]
    if draw(st.booleans()):
        members.append(f'"k0"{colon}{draw(leaf)}')  # a repeated key: the last one counts when parsed
    text = "{" + comma.join(members) + "}"
    for _ in range(draw(st.integers(0, 40))):
        text = draw(st.sampled_from(('{{"in"{c}{t}}}', "[{t}]", '{{"input"{c}{t},"x"{c}1}}'))).format(t=text, c=colon)
    return text


def _claude_code(inputs: list[str]) -> bytes:
    lines, parent = ['{"type":"user","uuid":"u0","parentUuid":null,"message":{"role":"user","content":"go"}}'], "u0"
    for k, text in enumerate(inputs):
        call = f'{{"type":"tool_use","id":"t{k}","name":"Read","input":{text}}}'
        lines.append(
            f'{{"type":"assistant","uuid":"a{k}","parentUuid":"{parent}","isSidechain":false,'
            f'"message":{{"id":"m{k}","role":"assistant","content":[{{"type":"text","text":"x"}},{call}]}}}}'
        )
        result = f'{{"type":"tool_result","tool_use_id":"t{k}","content":"ok"}}'
        lines.append(
            f'{{"type":"user","uuid":"r{k}","parentUuid":"a{k}","message":{{"role":"user","content":[{result}]}}}}'
        )
        parent = f"r{k}"
    return "".join(line + "\n" for line in lines).encode()


def _codex(inputs: list[str]) -> bytes:
    lines = [
        '{"timestamp":"t","type":"session_meta","payload":{"id":"s","cwd":"/","originator":"codex_cli_rs",'
        '"cli_version":"0.58.0","instructions":null}}',
        '{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user",'
        '"content":[{"type":"input_text","text":"go"}]}}',
    ]
    for k, text in enumerate(inputs):
        call = {"type": "function_call", "name": "shell", "arguments": text, "call_id": f"c{k}"}
        output = {"type": "function_call_output", "call_id": f"c{k}", "output": "ok"}
        lines += [json.dumps({"timestamp": "t", "type": "response_item", "payload": p}) for p in (call, output)]
    return "".join(line + "\n" for line in lines).encode()


def _anthropic_messages(inputs: list[str]) -> list[str]:
    out = ['{"role":"user","content":"go"}']
    for k, text in enumerate(inputs):
        out.append(f'{{"role":"assistant","content":[{{"type":"tool_use","id":"t{k}","name":"Read","input":{text}}}]}}')
        out.append(f'{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t{k}","content":"ok"}}]}}')
    return out


def _anthropic_log(inputs: list[str]) -> bytes:
    body = '{"model":"claude-x","max_tokens":10,"messages":[' + ",".join(_anthropic_messages(inputs)) + "]}"
    capture = '{"request":{"method":"POST","url":"https://api.anthropic.com/v1/messages","body":' + body + "}}"
    return (body + "\n" + capture + "\n").encode()


def _messages(inputs: list[str]) -> bytes:
    return "".join(line + "\n" for line in _anthropic_messages(inputs)).encode()


LOG_FORMATS = {"claude_code": _claude_code, "codex": _codex, "anthropic_log": _anthropic_log, "messages": _messages}


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[^\s"]+')


def _tokens(text: str) -> str:
    """``text`` without the blanks between its tokens: an input compact in the file is indented with the
    body it is written in, where every token (number spellings, repeated keys) stays as it came."""
    return "".join(_TOKENS.findall(text))


def _written_inputs(data: bytes, to: str) -> list[str]:
    """The tool inputs' texts in a written body: the OpenAI ``arguments`` strings, or the text after
    each ``"input":`` key of an Anthropic body (after its ``"type": "tool_use"``, indented or as the file
    spelled the block), found with the standard library's decoder."""
    if to == "openai":
        body = json.loads(data)
        return [c["function"]["arguments"] for m in body["messages"] for c in m.get("tool_calls") or ()]
    text, out = data.decode(), []
    for found in re.finditer(r'"type":\s*"tool_use"', text):
        start = re.compile(r'"input":\s*').search(text, found.end()).end()  # type: ignore[union-attr]
        _, end = DECODER.raw_decode(text, start)
        out.append(text[start:end])
    return out


@PROPERTY
@given(
    st.sampled_from(sorted(LOG_FORMATS)),
    st.lists(odd_input(), min_size=1, max_size=4),
    st.sampled_from(("anthropic", "openai")),
)
def test_tool_inputs_are_written_as_the_file_spelled_them(
    tmp_path_factory: pytest.TempPathFactory, fmt: str, inputs: list[str], to: str
) -> None:
    path = tmp_path_factory.mktemp("inputs") / "in.jsonl"
    path.write_bytes(LOG_FORMATS[fmt](inputs))
    for transcript in load_path(path, fmt=fmt):
        written = write_transcript(transcript, to=to)  # type: ignore[arg-type]
        found = _written_inputs(written, to)
        assert found == inputs or (to == "anthropic" and [_tokens(t) for t in found] == [_tokens(t) for t in inputs])


@PROPERTY
@given(st.lists(odd_input(constants=True), min_size=1, max_size=4), st.sampled_from(("same", "anthropic", "openai")))
def test_nan_infinity_and_lone_surrogates_in_inputs_are_kept(
    tmp_path_factory: pytest.TempPathFactory, inputs: list[str], to: str
) -> None:
    data = _messages(inputs)
    path = tmp_path_factory.mktemp("constants") / "in.jsonl"
    path.write_bytes(data)
    (transcript,) = load_path(path)
    written = write_transcript(transcript, to=to)  # type: ignore[arg-type]
    if to == "same":
        assert written == data
    else:
        found = _written_inputs(written, to)
        assert found == inputs or (to == "anthropic" and [_tokens(t) for t in found] == [_tokens(t) for t in inputs])


def test_a_rebuilt_message_keeps_its_tool_input_spelled_as_it_came(tmp_path: Path) -> None:
    # The second call reuses the id "a": the repair renames it, so its message is rebuilt, but its input
    # is written as the file spelled it, not re-serialised.
    text = '{"n": 1E+2, "big": 123456789012345678901234567890, "d": 1, "d": 2, "z": -0.0, "e": 1.0e-7}'
    lines = ['{"role":"user","content":"go"}']
    for given_input in ("{}", text):
        lines.append(
            '{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"R","input":' + given_input + "}]}"
        )
        lines.append('{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"ok"}]}')
    lines.append('{"role":"assistant","content":"done"}')
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n")
    (transcript,) = load_path(path)
    plan = plan_fit(transcript, budget=10**6, estimator=make_estimator())
    assert [r.kind for r in plan.repairs] == ["renamed-call-id"]
    out = write_transcript(apply_plan(transcript, plan), to="same").decode().splitlines()
    assert out[3] != lines[3] and f'"input":{text}' in out[3]


def test_spacing_in_a_tool_input_does_not_change_the_estimate(tmp_path: Path) -> None:
    estimates = []
    for k, text in enumerate(('{"path":"a.md","n":[1,2]}', '{ "path" : "a.md",\t"n" : [ 1 , 2 ] }')):
        path = tmp_path / f"in{k}.jsonl"
        path.write_text("\n".join(_anthropic_messages([text])) + "\n")
        (transcript,) = load_path(path)
        estimates.append(plan_fit(transcript, budget=10**6, estimator=make_estimator()).tokens_before)
    assert estimates[0] == estimates[1]


def test_the_library_returns_a_harness_input_as_the_dict_it_gave() -> None:
    # The third call reuses the id "c0": the repair renames it, so its message is rebuilt from the model,
    # yet its input is the harness's own dict (an integer past 64 bits and a NaN included), not a copy.
    inputs = [{"path": "a.md"}, {"path": "b.md"}, {"n": 2**70, "x": float("nan")}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for k, given_input in enumerate(inputs):
        call_id = f"c{k % 2}"
        messages.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": "R", "input": given_input}]}
        )
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "w " * 4000}]}
        )
    messages.append({"role": "assistant", "content": "done"})
    fitted = Fitter(budget=4_000).fit({"model": "m", "max_tokens": 5, "messages": messages})
    assert [r.kind for r in fitted.plan.repairs] == ["renamed-call-id"]
    assert fitted.plan.batches, "the budget should have cleared something"
    rebuilt = fitted.body["messages"][5]
    assert rebuilt is not messages[5] and rebuilt["content"][0]["id"] != "c0"
    assert rebuilt["content"][0]["input"] is inputs[2]


def test_a_command_that_never_writes_loads_no_message_texts(tmp_path: Path) -> None:
    # report, check, audit and replay load with keep_text=False: the model alone, without each message's
    # JSON text (as large as the file); what they count is the same.
    path = tmp_path / "in.jsonl"
    path.write_bytes(_messages(['{"n": 1E+2}']))
    (kept,) = load(Input(str(path)))
    (lean,) = load(Input(str(path), keep_text=False))
    assert all(m.verbatim is not None for m in kept.messages)
    assert kept.messages[1].tool_calls[0].input_text == '{"n": 1E+2}'
    assert all(m.verbatim is None for m in lean.messages)
    assert lean.messages[1].tool_calls[0].input_text == ""
    estimator = make_estimator()
    assert [estimator.message(m) for m in kept.messages] == [estimator.message(m) for m in lean.messages]


# --------------------------------------------------------------------------
# Tool inputs of the other loaders: Gemini CLI, Copilot CLI, ATIF, Inspect AI, opencode


def _gemini_records(inputs: list[str]) -> list[str]:
    out = ['{"id":"u","type":"user","content":"go"}']
    for k, text in enumerate(inputs):
        result = f'[{{"functionResponse":{{"id":"c{k}","name":"read","response":{{"output":"ok"}}}}}}]'
        call = f'{{"id":"c{k}","name":"read","args":{text},"result":{result},"status":"success"}}'
        out.append(f'{{"id":"g{k}","type":"gemini","content":"","toolCalls":[{call}]}}')
    return out


def _gemini_document(inputs: list[str]) -> bytes:
    records = ",\n    ".join(_gemini_records(inputs))
    return f'{{"sessionId": "s", "projectHash": "h",\n  "messages": [\n    {records}\n  ]\n}}\n'.encode()


def _gemini_lines(inputs: list[str]) -> bytes:
    lines = ['{"sessionId":"s","projectHash":"h","startTime":"t"}', *_gemini_records(inputs)]
    return "".join(line + "\n" for line in lines).encode()


def _copilot(inputs: list[str]) -> bytes:
    lines = [
        '{"type":"session.start","data":{"sessionId":"s","copilotVersion":"1","producer":"copilot-agent"}}',
        '{"type":"user.message","data":{"content":"go"}}',
    ]
    for k, text in enumerate(inputs):
        request = f'{{"toolCallId":"c{k}","name":"read","arguments":{text}}}'
        lines.append(
            f'{{"type":"assistant.message","data":{{"messageId":"m{k}","content":"","toolRequests":[{request}]}}}}'
        )
        lines.append(
            f'{{"type":"tool.execution_complete","data":{{"toolCallId":"c{k}","success":true,"result":{{"content":"ok"}}}}}}'
        )
    return "".join(line + "\n" for line in lines).encode()


def _atif(inputs: list[str]) -> bytes:
    steps = ['{"step_id":0,"source":"user","message":"go"}']
    for k, text in enumerate(inputs):
        call = f'{{"tool_call_id":"c{k}","function_name":"read","arguments":{text}}}'
        result = f'{{"results":[{{"source_call_id":"c{k}","content":"ok"}}]}}'
        steps.append(
            f'{{"step_id":{k + 1},"source":"agent","message":"","tool_calls":[{call}],"observation":{result}}}'
        )
    head = '"schema_version":"ATIF-v1.4","session_id":"s","agent":{"name":"a","version":"1"}'
    return f'{{{head},"steps":[{",".join(steps)}]}}'.encode()


def _inspect(inputs: list[str]) -> bytes:
    messages = ['{"role":"user","content":"go"}']
    for k, text in enumerate(inputs):
        messages.append(
            f'{{"role":"assistant","content":"","tool_calls":[{{"id":"c{k}","function":"read","arguments":{text}}}]}}'
        )
        messages.append(f'{{"role":"tool","tool_call_id":"c{k}","function":"read","content":"ok"}}')
    sample = f'{{"id":1,"epoch":1,"messages":[{",".join(messages)}]}}'
    return f'{{"version":2,"status":"success","eval":{{"task":"t"}},"samples":[{sample}]}}'.encode()


def _cline(inputs: list[str]) -> bytes:
    messages = ['{"role":"user","content":[{"type":"text","text":"<task>go</task>"}]}']
    for k, text in enumerate(inputs):
        call = f'{{"type":"tool_use","id":"c{k}","name":"read_file","input":{text}}}'
        messages.append(f'{{"role":"assistant","content":[{call}]}}')
        result = f'{{"type":"text","text":"[read_file for \'f{k}\'] Result:"}},{{"type":"text","text":"ok"}}'
        messages.append(f'{{"role":"user","content":[{result}]}}')
    return ("[" + ",\n".join(messages) + "]").encode()


LOADER_FORMATS = {
    "cline": (_cline, "in.json"),
    "gemini_cli": (_gemini_document, "in.json"),
    "gemini_cli lines": (_gemini_lines, "in.jsonl"),
    "copilot_cli": (_copilot, "in.jsonl"),
    "atif": (_atif, "in.json"),
    "inspect_ai": (_inspect, "in.json"),
}


def _same_inputs(found: list[str], inputs: list[str], to: str) -> bool:
    """The written inputs are the file's texts: exactly (OpenAI ``arguments``), or token for token (an input
    compact in the file is indented with an Anthropic body)."""
    return found == inputs or (to == "anthropic" and [_tokens(t) for t in found] == [_tokens(t) for t in inputs])


@PROPERTY
@given(
    st.sampled_from(sorted(LOADER_FORMATS)),
    st.lists(odd_input(constants=True), min_size=1, max_size=4),
    st.sampled_from(("anthropic", "openai")),
)
def test_every_loader_writes_tool_inputs_as_the_file_spelled_them(
    tmp_path_factory: pytest.TempPathFactory, fmt: str, inputs: list[str], to: str
) -> None:
    build, name = LOADER_FORMATS[fmt]
    path = tmp_path_factory.mktemp("loaders") / name
    path.write_bytes(build(inputs))
    (transcript,) = load_path(path, fmt=fmt.split()[0])
    assert len(transcript.messages) == 1 + 2 * len(inputs)
    found = _written_inputs(write_transcript(transcript, to=to), to)  # type: ignore[arg-type]
    assert _same_inputs(found, inputs, to), (found, inputs)


OPENCODE = Path(__file__).parent / "data" / "opencode" / "storage"


@PROPERTY
@given(odd_input(constants=True), st.sampled_from(("anthropic", "openai")))
def test_opencode_tool_inputs_are_written_as_the_part_file_spelled_them(
    tmp_path_factory: pytest.TempPathFactory, text: str, to: str
) -> None:
    import shutil

    text = text if text.startswith("{") else '{"in":' + text + "}"  # opencode's input is an object
    root = tmp_path_factory.mktemp("opencode") / "storage"
    shutil.copytree(OPENCODE, root)
    part = next(p for p in sorted(root.glob("part/*/*.json")) if '"type": "tool"' in p.read_text())
    value = json.loads(part.read_text())
    old = json.dumps(value["state"]["input"], indent=2).replace("\n", "\n    ")
    assert old in part.read_text()
    part.write_text(part.read_text().replace(old, text, 1))
    written = [write_transcript(t, to=to) for t in load_path(root)]  # type: ignore[arg-type]
    found = [i for data in written for i in _written_inputs(data, to)]
    assert any(_same_inputs([f], [text], to) for f in found), (found, text)


# --------------------------------------------------------------------------
# Unmodelled content (extra keys, unknown blocks, images) inside messages the fit rebuilt


@st.composite
def odd_members(draw: st.DrawFn, prefix: str) -> list[str]:
    """Members (``"key":value`` texts) a reader does not model: odd numbers, repeated keys, NaN, nesting."""
    out = [f'"{prefix}_a":{draw(odd_input(constants=True))}']
    if draw(st.booleans()):
        number = draw(st.sampled_from((*INPUT_NUMBERS, *CONSTANTS)))
        out += [f'"{prefix}_b":1', f'"{prefix}_b" : {number}']
    return out


@st.composite
def unmodelled_conversation(draw: st.DrawFn, dialect: str) -> tuple[list[str], list[str]]:
    """Message texts whose tool-result messages (the ones clearing rebuilds) carry extra keys and, in the
    Anthropic shape, unknown blocks, images and text blocks with extra keys; and the texts the written
    rebuilt messages must hold as they came."""
    texts = ['{"role":"user","content":"Please look."}']
    kept: list[str] = []
    for k in range(draw(st.integers(4, 8))):
        big = _s(f"line {k}: " + "data " * draw(st.integers(300, 900)))
        extra = draw(odd_members("x"))
        kept += extra
        if dialect == "anthropic":
            text_extra = draw(odd_members("t"))
            text_block = '{"type":"text","text":"see",' + ",".join(text_extra) + "}"
            other = (
                '{"type":"document","source":{"type":"text","data":"doc"},"n":'
                + draw(st.sampled_from(INPUT_NUMBERS))
                + "}"
            )
            image = '{"type":"image","source":{"type":"url","url":"https://x/i.png"},"w":1.50}'
            kept += [*text_extra, other, image]
            call = f'{{"type":"tool_use","id":"c{k}","name":"Read","input":{draw(odd_input())}}}'
            texts.append(f'{{"role":"assistant","content":[{call}]}}')
            result = f'{{"type":"tool_result","tool_use_id":"c{k}","content":{big}}}'
            blocks = draw(st.permutations([text_block, other, image]))
            texts.append('{"role":"user",' + ",".join(extra) + f',"content":[{result},{",".join(blocks)}]}}')
        else:
            call = f'{{"id":"c{k}","type":"function","function":{{"name":"Read","arguments":{_s(draw(odd_input()))}}}}}'
            texts.append(f'{{"role":"assistant","content":null,"tool_calls":[{call}]}}')
            texts.append('{"role":"tool",' + ",".join(extra) + f',"tool_call_id":"c{k}","content":{big}}}')
    texts.append('{"role":"assistant","content":"Done."}')
    return texts, kept


@PROPERTY
@given(st.sampled_from(("anthropic", "openai")), st.data())
def test_a_rebuilt_message_writes_what_it_does_not_model_as_the_file_spelled_it(
    tmp_path_factory: pytest.TempPathFactory, dialect: str, data: st.DataObject
) -> None:
    texts, kept = data.draw(unmodelled_conversation(dialect))
    path = tmp_path_factory.mktemp("unmodelled") / "in.jsonl"
    path.write_bytes("".join(t + "\n" for t in texts).encode())
    written, cleared, dropped = _fit(path, 0.5)
    assert cleared, "the budget should have cleared something"
    out = message_texts(written, body=False)
    rebuilt = [t for t in out if t not in texts and not _joined(t, texts)]
    assert (rebuilt or dropped) and all(_answers(t) & cleared for t in rebuilt)
    for text in rebuilt:
        k = next(iter(_answers(text)))
        original = texts[[_answers(t) for t in texts].index({k})]
        for member in kept:
            if member in original:
                assert member in text, f"{member!r} was re-spelled in {text[:300]!r}"
    (transcript,) = load_path(path)
    if dialect == "anthropic":  # the whole file as a request body (every message rebuilt): the same holds,
        # token for token (what the file spelled compact is indented with the body)
        body = _tokens(write_transcript(transcript, to="anthropic").decode())
        assert [member for member in kept if _tokens(member) not in body] == []


# --------------------------------------------------------------------------
# The library: a harness's dicts with values JSON text cannot spell the usual way


ODD_VALUES = st.one_of(
    st.integers(-(2**80), 2**80),
    st.sampled_from((float("nan"), float("inf"), -0.0, 1e300, 0.1, "caf\u00e9", "\x1b[2J", True, None)),
)
ODD_DICTS = st.dictionaries(st.sampled_from(("n", "big", "x", "Z", "a b")), ODD_VALUES, min_size=1, max_size=4)


def _fragments(value: Any) -> int:
    """How many orjson fragments ``value`` holds (a harness must get plain JSON values back)."""
    if isinstance(value, orjson.Fragment):
        return 1
    if isinstance(value, dict):
        return sum(_fragments(v) for v in value.values())
    if isinstance(value, list):
        return sum(_fragments(v) for v in value)
    return 0


@PROPERTY
@given(st.sampled_from(("anthropic", "openai")), st.lists(ODD_DICTS, min_size=4, max_size=8), st.data())
def test_the_library_returns_untouched_messages_with_odd_values_as_the_objects_it_was_given(
    dialect: str, odd: list[dict[str, Any]], data: st.DataObject
) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go", "x_meta": odd[0]}]
    answering: dict[str, dict[str, Any]] = {}
    for k, values in enumerate(odd):
        answering[f"c{k}"] = values
        big = "w " * data.draw(st.integers(1500, 4000))
        if dialect == "anthropic":
            call = {"type": "tool_use", "id": f"c{k}", "name": "R", "input": values, "x_block": values}
            messages.append({"role": "assistant", "content": [call], "x_meta": values})
            result = {"type": "tool_result", "tool_use_id": f"c{k}", "content": big, "x_block": values}
            text = {"type": "text", "text": "see", "cache_control": values}
            messages.append({"role": "user", "x_meta": values, "content": [result, text]})
        else:
            call = {"id": f"c{k}", "type": "function", "function": {"name": "R", "arguments": "{}"}, "x_call": values}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call], "x_meta": values})
            messages.append({"role": "tool", "tool_call_id": f"c{k}", "content": big, "x_meta": values})
    messages.append({"role": "assistant", "content": "done"})
    body = {"model": "m", "max_tokens": 5, "messages": messages}
    fitted = Fitter(budget=3_000).fit(body)
    assert fitted.plan.batches or fitted.plan.dropped, "the budget should have changed something"
    out = fitted.body["messages"]
    assert _fragments(fitted.body) == 0
    noted = [m for m in out if isinstance(m.get("content"), list) and NOTE_BLOCKS[0] in m["content"]]
    assert out[0] is messages[0] or (noted and out[0] is noted[0] and fitted.plan.dropped)  # joined by the note
    originals = {id(m) for m in messages}
    rebuilt = [m for m in out if id(m) not in originals]
    cleared = {r.call_id for b in fitted.plan.batches for r in b.results}
    for message in rebuilt:
        answers = {message.get("tool_call_id")} | {
            b.get("tool_use_id") for b in message.get("content") or () if isinstance(b, dict)
        }
        assert answers & cleared or any(message is m for m in noted), message
        original = next((answering[i] for i in answers if i in answering), None)
        if original is not None:
            # what it does not model comes back as the same JSON values: integers past 64 bits exact, and a
            # NaN or an infinity what JSON makes of it (null)
            expected = {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in original.items()}
            assert message["x_meta"] == expected


# --------------------------------------------------------------------------
# Cline: the '[tool for 'x'] Result:' texts become tool results (or observations), and come out as they came

CLINE = sorted((Path(__file__).parent / "data" / "cline").glob("*.json"))


def _user_texts(messages: list[Any]) -> list[str]:
    """Every text the user messages carry, in order: text blocks, and the texts inside tool results."""
    out: list[str] = []
    for message in messages:
        if message.get("role") != "user" or not isinstance(message.get("content"), list):
            continue
        for block in message["content"]:
            inner = block.get("content") if block.get("type") == "tool_result" else [block]
            out += [b["text"] for b in inner if isinstance(b, dict) and b.get("type") == "text"]
    return out


@pytest.mark.parametrize("path", CLINE, ids=lambda p: p.stem)
@pytest.mark.parametrize("fraction", [2.0, 0.5])
def test_cline_result_texts_are_written_as_they_came(path: Path, fraction: float) -> None:
    given = _user_texts(json.loads(path.read_text()))
    assert any("] Result:" in t for t in given)
    written, cleared, dropped = _fit(path, fraction, to="anthropic")
    texts = _user_texts(json.loads(written)["messages"])
    if fraction > 1:
        assert texts == given and not cleared
        return
    assert cleared or dropped
    # Each text is one the file held, in the file's order, or the stub of a cleared result (or the note).
    rest = iter(given)
    for text in texts:
        if text.startswith("[windowfit") or text == TRUNCATION_NOTE:
            continue
        assert any(text == t for t in rest), text[:120]


_CACHE_CONTROL = re.compile(r'"cache_control":\s*\{[^{}]*\}')


def test_corpus_request_bodies_written_from_the_model_keep_what_they_do_not_model(tmp_path: Path) -> None:
    # Captured Claude Code requests written with --to anthropic: every message is built from the model (the
    # way a fit rebuilds the messages it changes), and each keeps its blocks as they came: the same values,
    # and the cache marks' texts as the capture spelled them.
    bodies = [b for b in _bodies(require_shared(*CLAUDE_TRACE)) if b"cache_control" in b]
    assert bodies
    marks = 0
    for k, data in enumerate(bodies):
        path = tmp_path / f"body-{k}.json"
        path.write_bytes(data)
        written, cleared, dropped = _fit(path, 2.0, to="anthropic")
        assert not cleared and not dropped
        pairs = list(zip(message_texts(data, body=True), message_texts(written, body=True), strict=True))
        for original, text in pairs:
            before, after = json.loads(original), json.loads(text)
            if isinstance(before["content"], str):
                before["content"] = [{"type": "text", "text": before["content"]}]  # the one change of shape
            assert before == after
            for mark in _CACHE_CONTROL.findall(original):
                assert mark in text
                marks += 1
    assert marks


@PROPERTY
@given(st.sampled_from(("anthropic", "openai")), st.data())
def test_a_captured_request_written_again_keeps_what_it_does_not_model_as_captured(
    tmp_path_factory: pytest.TempPathFactory, dialect: str, data: st.DataObject
) -> None:
    # An HTTP capture is a log: its request is written from the model (every message rebuilt), and each
    # message still writes its blocks and its extra keys as the capture spelled them.
    texts, kept = data.draw(unmodelled_conversation(dialect))
    kept.append('"max_tokens":1E+2')  # the body's own keys, as captured
    body = '{"model":"m","max_tokens":1E+2,"messages":[' + ",".join(texts) + "]}"
    if data.draw(st.booleans()):
        body = _s(body)  # the body as the JSON text sent
    capture = '{"method":"POST","path":"/v1/messages","headers":{},"body":' + body + ',"response":{"status":200}}'
    path = tmp_path_factory.mktemp("capture") / "capture.json"
    path.write_text(capture)
    (transcript,) = load_path(path, fmt="http_capture")
    written = _tokens(write_transcript(transcript, to=dialect).decode())  # type: ignore[arg-type]
    # (token for token: what the capture spelled compact is indented with the body)
    assert [member for member in kept if _tokens(member) not in written] == []


def test_corpus_messages_written_from_the_model_keep_what_they_do_not_model(tmp_path: Path) -> None:
    # tau-bench trajectories (OpenAI messages) written as a body with --to openai: every message is built
    # from the model, and each comes out with the values it had, its tool calls as the file spelled them.
    items = json.loads(require_shared(*TAU_BENCH).read_bytes())
    runs = [item["traj"] for item in items if isinstance(item, dict) and isinstance(item.get("traj"), list)][:20]
    assert runs
    calls = 0
    for k, traj in enumerate(runs):
        lines = [json.dumps(m, ensure_ascii=False) for m in traj]
        path = tmp_path / f"run-{k}.jsonl"
        path.write_text("".join(line + "\n" for line in lines))
        (transcript,) = load_path(path)
        if plan_fit(transcript, budget=10**9, estimator=make_estimator()).repairs:
            continue  # a repaired message is rebuilt otherwise
        written = write_transcript(transcript, to="openai").decode()
        body = json.loads(written)
        assert body["messages"] == traj
        for line, message in zip(lines, traj, strict=True):
            for call in message.get("tool_calls") or ():
                text = json.dumps(call, ensure_ascii=False)
                assert text in line and text in written  # the call object as the file spelled it
                calls += 1
    assert calls


# --------------------------------------------------------------------------
# Logs (Claude Code, Anthropic logs): what a block does not model, in messages written from the model


@st.composite
def odd_blocks(draw: st.DrawFn) -> tuple[list[str], list[str], list[str]]:
    """An assistant's and a user's content blocks (texts) carrying what windowfit does not model, spelled
    oddly: extra keys of text, thinking, tool_use and tool_result blocks (and of a result's inner text), and
    an unmodelled block; and the members and blocks the written body must hold as they came."""
    kept: list[str] = []

    def members(prefix: str) -> str:
        found = draw(odd_members(prefix))
        kept.extend(found)
        return "," + ",".join(found)

    other = (
        '{"type":"server_tool_use","id":"srv_1","name":"web_search","input":{"q":"x"},"n":'
        + draw(st.sampled_from((*INPUT_NUMBERS, *CONSTANTS)))
        + "}"
    )
    kept.append(other)
    assistant = [
        '{"type":"thinking","thinking":"hm","signature":"c2ln"' + members("h") + "}",
        '{"type":"text","text":"see"' + members("t") + "}",
        other,
        '{"type":"tool_use","id":"c1","name":"Read","input":{"p":1}' + members("u") + "}",
    ]
    inner = '{"type":"text","text":"ok"' + members("i") + "}"
    user = ['{"type":"tool_result","tool_use_id":"c1","content":[' + inner + "]" + members("r") + "}"]
    return draw(st.permutations(assistant)), user, kept


def _claude_code_blocks(assistant: list[str], user: list[str]) -> bytes:
    lines = [
        '{"type":"user","uuid":"u0","parentUuid":null,"message":{"role":"user","content":"go"}}',
        '{"type":"assistant","uuid":"a0","parentUuid":"u0","message":{"id":"m0","role":"assistant","content":['
        + ",".join(assistant)
        + "]}}",
        '{"type":"user","uuid":"r0","parentUuid":"a0","message":{"role":"user","content":[' + ",".join(user) + "]}}",
    ]
    return "".join(line + "\n" for line in lines).encode()


def _anthropic_log_blocks(assistant: list[str], user: list[str]) -> bytes:
    messages = [
        '{"role":"user","content":"go","x_m":1E+2}',
        '{"role":"assistant","content":[' + ",".join(assistant) + "]}",
        '{"role":"user","content":[' + ",".join(user) + "]}",
    ]
    body = '{"model":"claude-x","max_tokens":1E+1,"messages":[' + ",".join(messages) + "]}"
    capture = '{"request":{"method":"POST","url":"https://api.anthropic.com/v1/messages","body":' + body + "}}"
    return (body + "\n" + capture + "\n").encode()


BLOCK_LOGS = {"claude_code": _claude_code_blocks, "anthropic_log": _anthropic_log_blocks}


@PROPERTY
@given(st.sampled_from(sorted(BLOCK_LOGS)), odd_blocks())
def test_a_log_writes_what_its_blocks_do_not_model_as_the_file_spelled_it(
    tmp_path_factory: pytest.TempPathFactory, fmt: str, blocks: tuple[list[str], list[str], list[str]]
) -> None:
    assistant, user, kept = blocks
    path = tmp_path_factory.mktemp("logs") / "in.jsonl"
    path.write_bytes(BLOCK_LOGS[fmt](assistant, user))
    transcripts = load_path(path, fmt=fmt)
    assert transcripts
    for transcript in transcripts:
        body = _tokens(write_transcript(transcript, to="anthropic").decode())
        assert [member for member in kept if _tokens(member) not in body] == []
        if fmt == "anthropic_log":  # a message's extra keys, and the body's own
            assert '"x_m":1E+2' in body and '"max_tokens":1E+1' in body


def test_a_log_line_written_as_compact_json_keeps_no_text(tmp_path: Path) -> None:
    """Only blocks whose file spelling differs from compact JSON hold text: a line as a harness writes it
    (compact, as orjson would write it) leaves the blocks as they were built (extras compact, unmarked)."""
    assistant = ['{"type":"text","text":"x","citations":[{"n":1.5}]}', '{"type":"document","n":2}']
    path = tmp_path / "in.jsonl"
    path.write_bytes(_claude_code_blocks(assistant, ['{"type":"tool_result","tool_use_id":"c1","content":"ok"}']))
    (transcript,) = load_path(path, fmt="claude_code")
    blocks = [b for m in transcript.messages for b in m.content]
    assert not any(getattr(b, "extra", "").startswith(" ") or getattr(b, "raw", "").startswith(" ") for b in blocks)
    odd = [a.replace("1.5", "1.50").replace(":2}", ":2E0}") for a in assistant]
    path.write_bytes(_claude_code_blocks(odd, ['{"type":"tool_result","tool_use_id":"c1","content":"ok"}']))
    (transcript,) = load_path(path, fmt="claude_code")
    blocks = [b for m in transcript.messages if m.role == "assistant" for b in m.content]
    assert [getattr(b, "extra", "") or getattr(b, "raw", "") for b in blocks] == [
        ' {"citations":[{"n":1.50}]}',
        ' {"type":"document","n":2E0}',
    ]
    # Written as the other dialect's body, an unmodelled block is a text of its compact JSON, as before.
    written = json.loads(write_transcript(transcript, to="openai"))
    parts = [p for m in written["messages"] if m["role"] == "assistant" for p in m["content"]]
    assert {"type": "text", "text": '{"type":"document","n":2.0}'} in parts


@PROPERTY
@given(st.data(), st.booleans(), st.sampled_from((0.5, 1.0)))
def test_a_request_bodys_own_keys_are_written_as_the_file_spelled_them(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, one_line: bool, fraction: float
) -> None:
    """``model``, ``max_tokens`` and the other keys outside ``messages`` and ``system``: first in the written
    body, in the file's order, each as the file spelled it (``1E+3`` stays ``1E+3``), fitted or not."""
    dialect = data.draw(st.sampled_from(("anthropic", "openai")))
    head = ['"model":"m-1"', f'"max_tokens":{data.draw(st.sampled_from(INPUT_NUMBERS))}', *data.draw(odd_members("q"))]
    texts = data.draw(conversation(dialect))
    system = ['"system":"You are terse."'] if dialect == "anthropic" and data.draw(st.booleans()) else []
    members = [*head[:1], *system, '"messages":[' + ",".join(texts) + "]", *head[1:]]
    separator = "," if one_line else ",\n  "
    path = tmp_path_factory.mktemp("keys") / "body.json"
    path.write_bytes(("{" + separator.join(members) + "}\n").encode())
    written, _, _ = _fit(path, fraction)
    text = written.decode()
    assert [m for m in head if _tokens(m) not in _tokens(text)] == []
    starts = [text.find(_tokens(m)[: _tokens(m).index(":") + 1]) for m in head]
    assert starts == sorted(starts) and starts[-1] < text.index('"messages"')


def test_a_long_one_line_bodys_own_keys_are_written_as_the_file_spelled_them(tmp_path: Path) -> None:
    """A body alone on one line longer than the sniffed head is read member by member (``_one_line``):
    its own keys keep their spelling there too."""
    items = ",".join(_s(f"{k}: " + "word " * 2000).join(('{"role":"user","content":', "}")) for k in range(60))
    path = tmp_path / "body.json"
    path.write_text('{"model":"m-1","max_tokens":1E+3,"messages":[' + items + '],"temperature":0.50,"x":[1.0e2]}\n')
    written = write_transcript(load_path(path)[0], to="same")
    assert written.startswith(b'{\n  "model":"m-1",\n  "max_tokens":1E+3,\n  "temperature":0.50,\n  "x":[1.0e2],\n')


# --------------------------------------------------------------------------
# Responses items (Codex rollouts, Responses files): unmodelled parts and items, in the written body


@st.composite
def odd_items(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """Responses items (texts) carrying parts and items windowfit does not model, spelled oddly: an
    ``input_file`` part of a user message, a ``web_search_call`` item, an unmodelled part of a call's
    output (a list, or ``{content, success}``); and the parts and items the written body must hold as
    they came."""

    def odd(prefix: str, head: str) -> str:
        return head + "," + ",".join(draw(odd_members(prefix))) + "}"

    part = odd("f", '{"type":"input_file","file_id":"file_1"')
    search = odd("w", '{"type":"web_search_call","id":"ws_1","status":"completed"')
    inner = odd("o", '{"type":"input_file","file_id":"file_2"')
    output = draw(st.sampled_from(("[{0}]", '{{"content":[{0}],"success":true}}'))).format(
        '{"type":"input_text","text":"ok"},' + inner
    )
    items = [
        '{"type":"message","role":"user","content":[{"type":"input_text","text":"go"},' + part + "]}",
        search,
        '{"type":"function_call","call_id":"c1","name":"read","arguments":"{}"}',
        '{"type":"function_call_output","call_id":"c1","output":' + output + "}",
    ]
    return items, [part, search, inner]


def _envelope(item: str) -> str:
    return '{"timestamp":"2025-01-01T00:00:00Z","type":"response_item","payload":' + item + "}"


def _codex(items: list[str]) -> bytes:
    meta = '{"timestamp":"2025-01-01T00:00:00Z","type":"session_meta","payload":{"id":"s","timestamp":"t"}}'
    return "".join(line + "\n" for line in (meta, *map(_envelope, items))).encode()


def _codex_legacy(items: list[str]) -> bytes:
    return "".join(line + "\n" for line in ('{"id":"s","timestamp":"2025-01-01T00:00:00Z"}', *items)).encode()


def _codex_compacted(items: list[str]) -> bytes:
    compacted = (
        '{"timestamp":"2025-01-01T00:00:01Z","type":"compacted","payload":{"message":"sum",'
        '"replacement_history":[' + ",".join(items) + "]}}"
    )
    return _codex(['{"type":"message","role":"user","content":"before"}']) + compacted.encode() + b"\n"


ITEM_FILES: dict[str, tuple[str, str, Any]] = {
    "codex": ("codex", "jsonl", _codex),
    "codex-legacy": ("codex", "jsonl", _codex_legacy),
    "codex-compacted": ("codex", "jsonl", _codex_compacted),
    "responses-lines": ("responses", "jsonl", lambda items: "".join(i + "\n" for i in items).encode()),
    "responses-array": ("responses", "json", lambda items: ("[\n  " + ",\n  ".join(items) + "\n]\n").encode()),
    "responses-body": (
        "responses",
        "json",
        lambda items: ('{"model":"gpt-x","input":[' + " ,\n ".join(items) + "] }").encode(),
    ),
}


@PROPERTY
@given(st.sampled_from(sorted(ITEM_FILES)), odd_items())
def test_responses_items_write_what_they_do_not_model_as_the_file_spelled_it(
    tmp_path_factory: pytest.TempPathFactory, layout: str, found: tuple[list[str], list[str]]
) -> None:
    items, kept = found
    fmt, ext, make = ITEM_FILES[layout]
    path = tmp_path_factory.mktemp("items") / f"in.{ext}"
    path.write_bytes(make(items))
    (transcript,) = load_path(path, fmt=fmt)
    body = _tokens(write_transcript(transcript, to="openai").decode())
    assert [part for part in kept if _tokens(part) not in body] == []


def test_a_responses_line_written_as_compact_json_keeps_no_text(tmp_path: Path) -> None:
    """Only parts whose file spelling differs from compact JSON hold text: a rollout as Codex writes it
    (compact) leaves the unmodelled parts and items as they were built (compact, unmarked)."""
    items = [
        '{"type":"message","role":"user","content":[{"type":"input_text","text":"go"},{"type":"input_file","n":1.5}]}',
        '{"type":"web_search_call","id":"ws_1","n":2}',
    ]
    path = tmp_path / "in.jsonl"
    path.write_bytes(_codex(items))
    (transcript,) = load_path(path, fmt="codex")
    raws = [getattr(b, "raw", "") for m in transcript.messages for b in m.content]
    assert raws == ["", '{"type":"input_file","n":1.5}', '{"type":"web_search_call","id":"ws_1","n":2}']
    path.write_bytes(_codex([i.replace("1.5", "1.50").replace(":2}", ":2E0}") for i in items]))
    (transcript,) = load_path(path, fmt="codex")
    raws = [getattr(b, "raw", "") for m in transcript.messages for b in m.content]
    assert raws == ["", ' {"type":"input_file","n":1.50}', ' {"type":"web_search_call","id":"ws_1","n":2E0}']


def test_a_responses_body_with_an_empty_input_list_is_the_located_empty_error(tmp_path: Path) -> None:
    """The items' texts are found between the items' starts: an empty list has none to pair."""
    path = tmp_path / "in.json"
    path.write_bytes(b'{"model":"gpt-x","input":[ ]}')
    with pytest.raises(EmptyTranscript, match="no Responses items found"):
        load_path(path, fmt="responses")


# --------------------------------------------------------------------------
# OpenAI chat logs (openai_chat): what a message, a part and a call do not model, in the written body


@st.composite
def odd_chat(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """OpenAI chat messages (texts) whose own extra keys, content parts (a text part's extra keys, an image
    part, an unmodelled part) and tool calls' extra keys are spelled oddly (``1E+2``, repeated keys, escapes
    such as ``\\u00e9`` and ``\\/``, spacing, NaN); and the members and parts the written body must hold."""
    kept: list[str] = []

    def odd(prefix: str) -> str:
        found = draw(odd_members(prefix))
        if draw(st.booleans()):
            found.append(f'"{prefix}_s" : "caf\\u00e9 \\/ \\u00e9"')
        kept.extend(found)
        return ",".join(found)

    image = '{"type":"image_url","image_url":{"url":"https://x/i.png","detail":"low"},"w":1.50}'
    audio = '{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"},"n":' + draw(odd_input()) + "}"
    kept += [image, audio]
    parts = draw(st.permutations(['{"type":"text","text":"look",' + odd("t") + "}", image, audio]))
    call = '{"id":"c1","type":"function","function":{"name":"Read","arguments":"{}"},' + odd("c") + "}"
    kept.append('"name":"al\\u00e9"')  # a user's name: an extra key (a tool message's is its result's)
    messages = [
        '{"role":"user","name":"al\\u00e9","content":[' + ",".join(parts) + "]," + odd("u") + "}",
        '{"role":"assistant","content":null,' + odd("a") + ',"tool_calls":[' + call + "]}",
        '{"role":"tool","tool_call_id":"c1",' + odd("r") + ',"content":"ok"}',
        '{"role":"assistant","content":"Done.",' + odd("d") + "}",
    ]
    return messages, kept


def _swe_agent(messages: list[str]) -> bytes:
    """A SWE-agent trajectory: its bookkeeping keys on each message are dropped, not written."""
    tagged = [m[:-1] + ',"agent":"main","message_type":"action"}' for m in messages]
    return ('{"history": [\n  ' + ",\n  ".join(tagged) + '\n], "info": {}}\n').encode()


CHAT_FILES: dict[str, tuple[str, Any]] = {
    "tau-bench": ("json", lambda ms: ('[{"task_id": 1, "messages": [' + ", ".join(ms) + "]}]\n").encode()),
    "swe-agent": ("json", _swe_agent),
    "lines": ("jsonl", lambda ms: ('{"messages":[' + ",".join(ms) + "]}\n").encode()),
    "arrays": ("jsonl", lambda ms: ("[" + ",".join(ms) + "]\n[" + ",".join(ms) + "]\n").encode()),
}


@PROPERTY
@given(st.sampled_from(sorted(CHAT_FILES)), odd_chat())
def test_openai_chat_writes_what_a_message_does_not_model_as_the_file_spelled_it(
    tmp_path_factory: pytest.TempPathFactory, layout: str, found: tuple[list[str], list[str]]
) -> None:
    """Every message of a log is written from the model: what it does not model keeps the file's tokens."""
    messages, kept = found
    ext, make = CHAT_FILES[layout]
    path = tmp_path_factory.mktemp("chat") / f"in.{ext}"
    path.write_bytes(make(messages))
    transcripts = load_path(path, fmt="openai_chat")
    assert transcripts
    for transcript in transcripts:
        body = _tokens(write_transcript(transcript, to="openai").decode())
        assert [member for member in kept if _tokens(member) not in body] == []
        assert '"agent"' not in body


# --------------------------------------------------------------------------
# Responses items the reader keeps as compact JSON: a local shell call's action, an output object


@st.composite
def odd_shell_items(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """A ``local_shell_call`` whose ``action``, and a ``function_call_output`` whose ``output`` (an object
    without ``content``), are spelled oddly; and the two values' texts, which the written body must hold
    (inside the call's arguments string and the tool message's content string)."""
    action = '{"type":"exec","command":["ls","-l"],' + ",".join(draw(odd_members("s"))) + "}"
    output = '{"stdout":"ok",' + ",".join(draw(odd_members("o"))) + "}"
    items = [
        '{"type":"message","role":"user","content":"go"}',
        '{"type":"local_shell_call","call_id":"s1","status":"completed","action":' + action + "}",
        '{"type":"local_shell_call_output","call_id":"s1","output":"done"}',
        '{"type":"function_call","call_id":"c1","name":"read","arguments":"{}"}',
        '{"type":"function_call_output","call_id":"c1","output":' + output + "}",
    ]
    return items, [action, output]


@PROPERTY
@given(st.sampled_from(sorted(ITEM_FILES)), odd_shell_items())
def test_a_shell_action_and_an_output_object_are_written_as_the_file_spelled_them(
    tmp_path_factory: pytest.TempPathFactory, layout: str, found: tuple[list[str], list[str]]
) -> None:
    items, kept = found
    fmt, ext, make = ITEM_FILES[layout]
    path = tmp_path_factory.mktemp("shell") / f"in.{ext}"
    path.write_bytes(make(items))
    (transcript,) = load_path(path, fmt=fmt)
    body = json.loads(write_transcript(transcript, to="openai"))
    strings = [c["function"]["arguments"] for m in body["messages"] for c in m.get("tool_calls") or ()]
    strings += [m["content"] for m in body["messages"] if m["role"] == "tool"]
    assert [value for value in kept if value not in strings] == []


@PROPERTY
@given(st.data())
def test_a_document_holding_one_item_is_written_as_the_file_spelled_it(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    part = '{"type":"input_file","file_id":"file_1",' + ",".join(data.draw(odd_members("f"))) + "}"
    spacing = data.draw(st.sampled_from(("", " ", "\n  ")))
    item = '{"type":"message","role":"user",' + spacing + '"content":[{"type":"input_text","text":"go"},' + part + "]}"
    path = tmp_path_factory.mktemp("item") / "in.json"
    path.write_bytes(data.draw(st.sampled_from((b"", b"\xef\xbb\xbf"))) + item.encode() + b"\n")
    (transcript,) = load_path(path, fmt="responses")
    assert _tokens(part) in _tokens(write_transcript(transcript, to="openai").decode())


# --------------------------------------------------------------------------
# Tool definitions and a captured system prompt, written as the file spelled them


@st.composite
def odd_tools(draw: st.DrawFn, dialect: str) -> list[str]:
    """Tool definitions (texts) in ``dialect``'s shape, their schemas and extra keys spelled oddly."""
    out = []
    for k in range(draw(st.integers(1, 3))):
        schema = '{"type":"object","properties":{"n":{"type":"number","maximum":' + draw(odd_input()) + "}}}"
        odd = ",".join(draw(odd_members(f"t{k}")))
        spacing = draw(st.sampled_from(("", " ")))
        if dialect == "anthropic":
            out.append(f'{{"name":"T{k}",{spacing}"description":"caf\\u00e9 \\/","input_schema":{schema},{odd}}}')
        else:
            fn = f'{{"name":"T{k}","description":"caf\\u00e9 \\/","parameters":{schema}}}'
            out.append(f'{{"type":"function",{spacing}"function":{fn},{odd}}}')
    return out


def _compact_json(text: str) -> bool:
    raw = text.encode("utf-8", "surrogatepass")
    return encode(loads_or_lenient(raw)) == raw


def _tool_files(dialect: str, tools: list[str], system: str) -> dict[str, tuple[str, str, bytes]]:
    """The files that record a body's tools (and its system prompt): layout -> (format, suffix, bytes)."""
    messages = ['{"role":"user","content":"go"}', '{"role":"assistant","content":"ok"}']
    if dialect == "anthropic":
        body = '{"model":"m","max_tokens":5,"system":' + system + ',"tools":[' + ",".join(tools) + "],"
    else:
        messages.insert(0, system)
        body = '{"model":"m","tools":[' + ",\n ".join(tools) + "],"
    body += '"messages":[' + ",".join(messages) + "]}"
    capture = '{"method":"POST","path":"/v1/messages","headers":{},"body":' + body + ',"response":{"status":200}}'
    files = {
        "body": ("messages", "json", body.encode() + b"\n"),
        "capture": ("http_capture", "json", capture.encode()),
    }
    if dialect == "anthropic":
        logged = '{"request":{"method":"POST","url":"https://api.anthropic.com/v1/messages","body":' + body + "}}"
        files["anthropic_log"] = ("anthropic_log", "jsonl", (body + "\n" + logged + "\n").encode())
    else:
        files["openai_chat"] = ("openai_chat", "jsonl", (body.replace("\n", "") + "\n").encode())
    return files


@PROPERTY
@given(st.sampled_from(("anthropic", "openai")), st.data())
def test_tool_definitions_and_a_captured_system_prompt_are_written_as_the_file_spelled_them(
    tmp_path_factory: pytest.TempPathFactory, dialect: str, data: st.DataObject
) -> None:
    tools = data.draw(odd_tools(dialect))
    odd = ",".join(data.draw(odd_members("y")))
    if dialect == "anthropic":
        blocks = f'[{{"type":"text","text":"Be terse",{odd}}}]'
        system = data.draw(st.sampled_from(('"Be terse: caf\\u00e9 \\/"', blocks)))
    else:
        system = f'{{"role":"system", "content":"Be terse: caf\\u00e9 \\/",{odd}}}'
    folder = tmp_path_factory.mktemp("tools")
    for layout, (fmt, ext, content) in _tool_files(dialect, tools, system).items():
        path = folder / f"{layout}.{ext}"
        path.write_bytes(content)
        for transcript in load_path(path, fmt=fmt):
            for to in ("same", dialect) if fmt == "messages" else (dialect,):
                written = write_transcript(transcript, to=to).decode()  # type: ignore[arg-type]
                assert [t for t in tools if t not in written] == [], (layout, to)
                # the system prompt too; a log keeps it where the model would write it otherwise (a string, or
                # blocks not spelled as compact JSON), else writes it from the model, indented with the body
                if fmt in ("messages", "http_capture") or not _compact_json(system):
                    assert system in written, (layout, to)
                else:
                    body = loads_or_lenient(written.encode("utf-8", "surrogatepass"))
                    assert encode(body["system"]) == system.encode("utf-8", "surrogatepass"), (layout, to)


# --------------------------------------------------------------------------
# openai_chat: a message the fit leaves alone is written as the file's own text


def _chat_member(draw: st.DrawFn, key: str, value: Any) -> str:
    text = json.dumps(value, ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):
        text = text.replace("/", "\\/")
    return f'"{key}"{draw(st.sampled_from([":", ": ", " : "]))}{text}'


def _chat_object(draw: st.DrawFn, members: list[tuple[str, Any]]) -> str:
    order = draw(st.permutations(members))
    sep = draw(st.sampled_from([",", ", ", ",\n  "]))
    parts = [f'"{k}":{v.text}' if isinstance(v, _Raw) else _chat_member(draw, k, v) for k, v in order]
    return "{" + sep.join(parts) + "}"


class _Raw:
    def __init__(self, text: str) -> None:
        self.text = text


CHAT_TEXT = st.text(st.sampled_from('ab /é’"\\\n東'), max_size=12)


@st.composite
def chat_conversation(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """A tau-bench style conversation's message texts (keys in any order, spaced, escaped as a writer may):
    those windowfit sends as they are, and SWE-agent ones with bookkeeping keys it leaves out."""
    texts = [_chat_object(draw, [("role", "user"), ("content", draw(CHAT_TEXT))])]
    dropped: list[str] = []
    for k in range(draw(st.integers(0, 3))):
        call = _chat_object(
            draw,
            [
                ("id", f"call_{k}"),
                ("type", "function"),
                ("function", _Raw(_chat_object(draw, [("name", "get"), ("arguments", f'{{"k": {k}}}')]))),
            ],
        )
        texts.append(_chat_object(draw, [("role", "assistant"), ("content", None), ("tool_calls", _Raw(f"[{call}]"))]))
        result = [("role", "tool"), ("tool_call_id", f"call_{k}"), ("name", "get"), ("content", draw(CHAT_TEXT))]
        texts.append(_chat_object(draw, result))
    texts.append(_chat_object(draw, [("role", "assistant"), ("content", draw(CHAT_TEXT) or "ok")]))
    if draw(st.booleans()):
        dropped.append(_chat_object(draw, [("role", "user"), ("content", "more"), ("agent", "main")]))
        texts_with = [*texts, dropped[0], _chat_object(draw, [("role", "assistant"), ("content", "done")])]
        return texts_with, dropped
    return texts, dropped


@given(chat_conversation(), st.booleans())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_openai_chat_writes_an_untouched_message_as_its_own_text(
    tmp_path: Path, conversation: tuple[list[str], list[str]], lines: bool
) -> None:
    texts, dropped = conversation
    traj = "[\n    " + ",\n    ".join(texts) + "\n  ]"
    item = '{"task_id": 1, "traj": ' + traj + "}"
    path = tmp_path / ("chat.jsonl" if lines else "chat.json")
    path.write_text((item.replace("\n", " ") + "\n") if lines else f"[\n  {item}\n]\n", encoding="utf-8")
    (t,) = load_path(path, fmt="openai_chat")
    written = message_texts(write_transcript(t), body=True)
    assert len(written) == len(texts)
    for text, out in zip(texts, written, strict=True):
        if text in dropped:  # rebuilt without SWE-agent's bookkeeping key, which is never sent
            assert orjson.loads(out) == {k: v for k, v in orjson.loads(text).items() if k != "agent"}
        else:
            assert out == (text.replace("\n", " ") if lines else text)


def test_openai_chat_corpus_messages_are_written_as_read() -> None:
    path = require_shared("corpus", "transcripts", "openai_chat", "sierra-research_tau-bench__gpt-4o-airline.json")
    data = path.read_text(encoding="utf-8")
    transcripts = load_path(path, fmt="openai_chat")
    same = renamed = 0
    for t in transcripts[:20]:
        for out in message_texts(write_transcript(t), body=True):
            if out in data:
                same += 1
            else:  # only a message whose reused call id was renamed is rebuilt
                assert "-dup" in out
                renamed += 1
    assert same > 10 * renamed > 0
