"""SPEC section 6, invariant 9: messages the fit did not touch are written
exactly as they came (issue 8, item 3). Files are generated as raw JSON text
(string contents, extra keys, odd number spellings, duplicate keys, spacing),
fitted with a budget that clears results, and the output's messages are
compared byte for byte with the input's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import require_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowfit.fitting import make_estimator
from windowfit.fitting.fit import TRUNCATION_NOTE, apply_plan, plan_fit
from windowfit.fitting.formats import load_path
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


def _fit(path: Path, fraction: float, steps: bool = False) -> tuple[bytes, set[str], int]:
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
        write_transcript(apply_plan(transcript, plan), to="same"),
        cleared,
        sum(d.stop - d.start for d in plan.dropped),
    )


def _answers(text: str) -> set[str]:
    """The call ids whose results a message text carries."""
    value = orjson.loads(text)
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
        if _answers(text) & cleared or orjson.loads(text).get("content") in (TRUNCATION_NOTE, NOTE_BLOCKS):
            continue  # touched: a cleared result's message, or the truncation note
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
