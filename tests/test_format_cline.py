"""The "cline" format: Cline / Roo Code / Kilo Code ``api_conversation_history.json``.
Tool output is user text headed ``[tool for 'x'] Result:``: after ``tool_use``
calls it becomes their results (issue 9: no more "no result was recorded" after
every call); after XML tool calls it is a text observation stage 1 can clear."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from conftest import DATA

from windowfit.fitting import Transcript
from windowfit.fitting.errors import UnknownShape
from windowfit.fitting.estimate import Estimator, make_estimator
from windowfit.fitting.fit import apply_plan, fit, plan_fit
from windowfit.fitting.formats import load_path
from windowfit.fitting.formats.cline import sniff, tool_of_header
from windowfit.fitting.request import write_transcript
from windowfit.fitting.size import FLOOR_RULE, predict_size
from windowfit.fitting.transcript import Text, ToolResult
from windowfit.fitting.validate import check_request

CLINE = DATA / "cline"
NATIVE = CLINE / "native_api_conversation_history.json"
XML = CLINE / "xml_api_conversation_history.json"
HEADER = re.compile(r"^\[\w+(?: for '.*')?\] Result:")


def load_one(path: Path, **kwargs: bool) -> Transcript:
    (transcript,) = load_path(path, **kwargs)
    return transcript


def raw_messages(path: Path) -> list[dict[str, object]]:
    value = orjson.loads(path.read_bytes())
    assert isinstance(value, list)
    return value


def blocks(raw: dict[str, object]) -> list[dict[str, object]]:
    content = raw["content"]
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


def test_reads_headers_as_cline_writes_them() -> None:
    assert tool_of_header("[read_file for 'src/a b.ts'] Result:") == "read_file"
    assert tool_of_header("[execute_command for 'ls'] Result:\nCommand executed.") == "execute_command"
    assert tool_of_header("[attempt_completion] Result:") == "attempt_completion"
    assert tool_of_header("Result: [read_file]") is None


def test_tool_use_calls_get_the_result_texts_that_follow_as_their_results() -> None:
    t = load_one(NATIVE)
    raw = raw_messages(NATIVE)
    calls = [b["id"] for m in raw for b in blocks(m) if b["type"] == "tool_use"]
    headers = [b for m in raw for b in blocks(m) if b["type"] == "text" and HEADER.match(str(b["text"]))]
    assert (t.format, t.dialect) == ("cline", "anthropic")
    assert [c.id for m in t.messages for c in m.tool_calls] == calls
    assert [r.call_id for m in t.messages for r in m.tool_results] == calls
    assert len(headers) == len(calls)
    # the result keeps its header and output text; the environment details stay outside it
    first = t.messages[2].tool_results[0]
    assert isinstance(first.content[0], Text) and first.content[0].text == "[read_file for 'src/app.py'] Result:"
    assert len(first.content) == 2
    assert isinstance(t.messages[2].content[-1], Text)
    assert t.messages[2].content[-1].text.startswith("<environment_details>")
    assert check_request(t) == ()
    assert any("ts" in note for note in t.notes)  # Roo's bookkeeping key is never sent


def test_xml_era_tool_output_is_a_text_observation() -> None:
    t = load_one(XML)
    assert [m.tool_calls for m in t.messages] == [()] * len(t.messages)
    observed = [
        (i, b.observation_of)
        for i, m in enumerate(t.messages)
        for b in m.content
        if isinstance(b, Text) and b.observation_of
    ]
    assert observed == [(2, "list_files"), (4, "read_file"), (6, "execute_command")]
    # a header alone on its block stays; the block after it is the output
    assert t.messages[2].content[0].observation_of == ""  # type: ignore[union-attr]


@pytest.mark.parametrize("path", [NATIVE, XML])
def test_a_small_budget_clears_tool_output_and_the_request_stays_valid(path: Path) -> None:
    t = load_one(path)
    fitted = fit(t, budget=900, batch_size=1)
    assert fitted.plan.outcome == "cleared"
    assert len(fitted.plan.cleared) >= 2
    for dialect in ("anthropic", "openai"):
        assert check_request(fitted.transcript, dialect) == ()
    cleared_text = [
        b.text if isinstance(b, Text) else str(b.content)
        for m in fitted.transcript.messages
        for b in m.content
        if isinstance(b, (Text, ToolResult))
    ]
    assert sum("cleared" in text for text in cleared_text) == len(fitted.plan.cleared)


def test_sniffs_only_arrays_with_cline_marks() -> None:
    assert sniff(NATIVE.read_bytes()[:65536])
    assert sniff(XML.read_bytes()[:65536])
    assert not sniff(b'[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]')
    assert not sniff(b'{"role": "user", "content": "[read_file for \'x\'] Result:"}\n')


def test_a_broken_message_is_located_or_skipped(tmp_path: Path) -> None:
    path = tmp_path / "api_conversation_history.json"
    path.write_text(
        '[{"role": "user", "content": "<task>x</task> <environment_details>"},\n{"role": "robot", "content": "?"}]'
    )
    with pytest.raises(UnknownShape) as info:
        load_one(path)
    assert info.value.location.line == 2
    t = load_one(path, skip_invalid=True)
    assert len(t.messages) == 1 and len(t.skipped) == 1


# --------------------------------------------------------------------------
# Newer Cline versions: metrics and provider keys stored on messages and blocks
# (the shape of a real exported task, gmfstu/Online-Card-Architecture, see docs/formats.md)

METRICS = CLINE / "metrics_api_conversation_history.json"


def test_reply_metrics_are_the_measured_size_of_their_requests() -> None:
    t = load_one(METRICS)
    # the fixture's two replies: prompt 10 + cached 9,500, prompt 12 + cached 9,700
    assert [(u.before, u.input_tokens, u.cache_read_tokens, u.output_tokens) for u in t.usage] == [
        (1, 10, 9500, 95),
        (3, 12, 9700, 40),
    ]
    assert [u.total for u in t.usage] == [9510, 9712]


def test_keys_the_api_does_not_accept_are_left_out_of_the_request() -> None:
    t = load_one(METRICS)
    body = orjson.loads(write_transcript(fit(t, budget=100_000).transcript))
    for message in body["messages"]:
        assert set(message) == {"role", "content"}
        for block in message["content"] if isinstance(message["content"], list) else ():
            assert not {"reasoning_details", "call_id", "summary"} & set(block), block
    assert any("modelInfo" in n and "text.call_id" in n for n in t.notes)
    assert check_request(t) == ()


def test_an_xml_task_with_metrics_clears_its_observations_against_the_measured_size(tmp_path: Path) -> None:
    """An XML-era task whose replies carry ``metrics`` (a measured, anchored size) and whose tool output is text
    observations: stage 1 clears them (until 2026-12-02 it raised an AssertionError: an anchored batch was
    assumed to hold tool results only). What a cleared observation takes off the measured size is the lower
    bound of its text less the upper bound of its stub, as for a result's content."""
    raw = raw_messages(XML)
    prompt = 0
    for message in raw:
        if message["role"] == "assistant":
            prompt += 1000
            message["metrics"] = {"tokens": {"prompt": prompt, "completion": 40}}
    path = tmp_path / "api_conversation_history.json"
    path.write_bytes(orjson.dumps(raw))
    t = load_one(path)
    est = make_estimator()
    size = predict_size(t, est)
    assert size.anchored and size.tokens > 4000  # the last reply's prompt, and what came after it
    plan = plan_fit(t, budget=size.tokens - 1, batch_size=1, estimator=est, size=size)
    assert plan.stages[:1] == (1,) and plan.batches
    fitted = apply_plan(t, plan)
    floor = Estimator(FLOOR_RULE)
    for batch in plan.batches:
        want = 0
        for ref in batch.results:
            text = t.messages[ref.message_index].content[ref.block_index]
            assert isinstance(text, Text) and text.observation_of
            stub = fitted.messages[ref.message_index].content[ref.block_index]
            assert isinstance(stub, Text) and "cleared" in stub.text
            want += floor.block(text) - len(stub.text.encode())
        assert batch.tokens_saved == want
    assert plan.tokens_before - plan.tokens_after == sum(b.tokens_saved for b in plan.batches)
    assert check_request(fitted, "anthropic") == ()
