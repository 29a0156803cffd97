"""``fitting.request``: the harness API. Fit an Anthropic or OpenAI request
body (a dict) before sending it; reuse one ``Fitter`` per conversation.

Hand computation (default overheads: +4 per message, +3 per block, +3 more for
the text block nested in a tool result; tool definitions +8):

- system "You read files." 15 chars -> 4 + 4 + 3 = 11;
- tool ``read``: "read" 4 + "Read a file." 12 + schema
  ``{"type":"object","properties":{"path":{"type":"string"}}}`` 57 = 73 chars -> 19 + 8 = 27;
  so the preamble is 11 + 27 = 38 in both dialects;
- a call ``read`` + ``{"path":"a.txt"}`` is 20 chars -> 5 tokens (+3 per block);
- a result of 4000 ASCII chars is 1000 + 3 + 3 = 1006 as a block; of 400 chars, 106;
- the stub of ``read``/``t1``/``1,006`` is 171 + 4 + 2 + 5 = 182 chars -> 46, + 3 + 3 = 52 as a block.
"""

from __future__ import annotations

import copy
import itertools
import statistics
from dataclasses import replace
from typing import Any

import orjson
import pytest
from conftest import require_shared
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import damaged_transcripts

from windowfit.fitting import Transcript, make_estimator
from windowfit.fitting.errors import OptionError, UnknownShape, UnsendableRequest
from windowfit.fitting.formats import Input, discover, load
from windowfit.fitting.notice import NOTICE
from windowfit.fitting.repair import DEFECT_OF, repair
from windowfit.fitting.request import (
    Fitter,
    body_from_transcript,
    fit_request,
    missing_parts,
    tools_from_json,
    with_request_parts,
)
from windowfit.fitting.size import backtest, cut
from windowfit.fitting.transcript import Dialect, Usage
from windowfit.fitting.validate import check_messages, check_request, unsendable
from windowfit.fitting.wire.bodies import transcript_from_body

STUB_START = "[windowfit: tool result cleared]"
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}


def anthropic_body() -> dict[str, Any]:
    # messages (default overheads):
    #   0 user "Read a.txt and b.txt." 21 chars -> 6 + 7 = 13
    #   1 assistant text "Reading both." 13 + two calls 20 + 20 = 53 chars -> 14, + 4 + 3*3 = 27
    #   2 user results t1, t2 of 4000 chars each -> 2000 + 4 + 2*(3+3) = 2016
    #   3 assistant call t3 -> 5 + 4 + 3 = 12
    #   4 user result t3 of 400 chars -> 100 + 4 + 6 = 110
    # total 38 + 13 + 27 + 2016 + 12 + 110 = 2216
    return {
        "model": "claude-x",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "You read files.", "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "read", "description": "Read a file.", "input_schema": SCHEMA}],
        "messages": [
            {"role": "user", "content": "Read a.txt and b.txt."},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Reading both."},
                    {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a.txt"}},
                    {"type": "tool_use", "id": "t2", "name": "read", "input": {"path": "b.txt"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "a" * 4000},
                    {
                        "type": "tool_result",
                        "tool_use_id": "t2",
                        "content": "b" * 4000,
                        "cache_control": {"type": "ephemeral"},
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t3", "name": "read", "input": {"path": "c.txt"}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t3", "content": "c" * 400}]},
        ],
    }


def openai_call(call_id: str, path: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "read", "arguments": f'{{"path":"{path}"}}'}}


def openai_body() -> dict[str, Any]:
    # the system message is the preamble (11), tools 27 -> 38; then
    #   0 user 21 chars -> 13
    #   1 assistant with two calls 40 chars -> 10 + 4 + 2*3 = 20
    #   2 tool t1 4000 chars -> 1000 + 4 + 3 + 3 = 1010
    #   3 tool t2 -> 1010
    #   4 assistant call t3 -> 5 + 4 + 3 = 12
    #   5 tool t3 400 chars -> 100 + 10 = 110
    # total 38 + 13 + 20 + 1010 + 1010 + 12 + 110 = 2213
    return {
        "model": "gpt-x",
        "max_tokens": 512,
        "tools": [
            {"type": "function", "function": {"name": "read", "description": "Read a file.", "parameters": SCHEMA}}
        ],
        "messages": [
            {"role": "system", "content": "You read files."},
            {"role": "user", "content": "Read a.txt and b.txt."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [openai_call("t1", "a.txt"), openai_call("t2", "b.txt")],
            },
            {"role": "tool", "tool_call_id": "t1", "content": "a" * 4000},
            {"role": "tool", "tool_call_id": "t2", "content": "b" * 4000},
            {"role": "assistant", "content": None, "tool_calls": [openai_call("t3", "c.txt")]},
            {"role": "tool", "tool_call_id": "t3", "content": "c" * 400},
        ],
    }


def anthropic_pairs_ok(messages: list[dict[str, Any]]) -> bool:
    """Every tool_use is answered by a tool_result in the very next message, and every result has its call."""
    for i, message in enumerate(messages):
        blocks = message["content"] if isinstance(message["content"], list) else []
        calls = {b["id"] for b in blocks if b.get("type") == "tool_use"}
        results = {b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"}
        if results:
            before = messages[i - 1]["content"] if i else []
            called = {b["id"] for b in before if isinstance(b, dict) and b.get("type") == "tool_use"}
            if not results <= called:
                return False
        if calls:
            if i + 1 == len(messages):
                return False
            after = messages[i + 1]["content"]
            answered = {b["tool_use_id"] for b in after if isinstance(b, dict) and b.get("type") == "tool_result"}
            if not calls <= answered:
                return False
    return True


def openai_pairs_ok(messages: list[dict[str, Any]]) -> bool:
    """Every tool call is answered by the ``tool`` messages right after it, and no tool message is stray."""
    i = 0
    while i < len(messages):
        message = messages[i]
        if message["role"] == "tool":
            return False  # a tool message not right after its calls
        calls = {c["id"] for c in message.get("tool_calls") or ()}
        i += 1
        while i < len(messages) and messages[i]["role"] == "tool":
            if messages[i]["tool_call_id"] not in calls:
                return False
            calls.discard(messages[i]["tool_call_id"])
            i += 1
        if calls:
            return False
    return True


def anthropic_result_texts(body: dict[str, Any]) -> dict[str, str]:
    out = {}
    for message in body["messages"]:
        if isinstance(message["content"], list):
            for block in message["content"]:
                if block.get("type") == "tool_result":
                    inner = block["content"]
                    out[block["tool_use_id"]] = inner if isinstance(inner, str) else "".join(b["text"] for b in inner)
    return out


# --------------------------------------------------------------------------
# A body that fits


@pytest.mark.parametrize("make", [anthropic_body, openai_body])
def test_a_body_that_fits_comes_back_as_the_same_object(make: Any) -> None:
    body = make()
    original = copy.deepcopy(body)
    fitted = fit_request(body, budget=100_000)
    assert fitted.body is body
    assert fitted.plan.outcome == "fits"
    assert body == original


def test_estimates_match_the_hand_computation() -> None:
    assert fit_request(anthropic_body(), budget=100_000).plan.tokens_before == 2216
    assert fit_request(openai_body(), budget=100_000).plan.tokens_before == 2213
    # the boundary is inclusive: exactly the estimate still fits, as the same object
    body = anthropic_body()
    assert fit_request(body, budget=2216).body is body


# --------------------------------------------------------------------------
# Over budget: same dialect, oldest results stubbed


def test_anthropic_body_over_budget_is_cleared_in_the_same_dialect() -> None:
    body = anthropic_body()
    original = copy.deepcopy(body)
    fitted = fit_request(body, budget=1500)
    # Protected (allowance 375): t3 106; + t2 1006 > 375, so t1 and t2 are the candidates: one short batch.
    # Message 2 becomes two stubs: 2 x 182 = 364 chars -> 91, + 4 + 2*(3+3) = 107; saved 2016 - 107 = 1909.
    # 2216 - 1909 = 307.
    assert fitted.plan.outcome == "cleared"
    assert fitted.plan.tokens_after == 307
    assert [r.call_id for r in fitted.plan.cleared] == ["t1", "t2"]
    out = fitted.body
    assert out is not body
    assert body == original
    assert out["model"] == "claude-x"
    assert out["max_tokens"] == 1024
    assert out["system"] == original["system"]  # cache_control included
    assert out["tools"] == original["tools"]
    assert len(out["messages"]) == 5
    texts = anthropic_result_texts(out)
    assert texts["t1"].startswith(STUB_START)
    assert "(call t1, about 1,006 tokens)" in texts["t1"]
    assert texts["t2"].startswith(STUB_START)
    assert texts["t3"] == "c" * 400
    assert anthropic_pairs_ok(out["messages"])
    # the cleared block keeps its call id and its cache_control
    t2 = out["messages"][2]["content"][1]
    assert t2["tool_use_id"] == "t2"
    assert t2["cache_control"] == {"type": "ephemeral"}


def test_openai_body_over_budget_is_cleared_in_the_same_dialect() -> None:
    body = openai_body()
    original = copy.deepcopy(body)
    fitted = fit_request(body, budget=1500)
    # As in the Anthropic case, t1 and t2 form one batch. Each tool message becomes a stub:
    # 182 chars -> 46, + 4 + 3 + 3 = 56; saved 2 x (1010 - 56) = 1908. 2213 - 1908 = 305.
    assert fitted.plan.outcome == "cleared"
    assert fitted.plan.tokens_after == 305
    out = fitted.body
    assert body == original
    assert "system" not in out
    assert out["model"] == "gpt-x"
    assert out["max_tokens"] == 512
    assert out["tools"] == original["tools"]
    messages = out["messages"]
    assert messages[0] == {"role": "system", "content": "You read files."}
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool", "assistant", "tool"]
    tools = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert tools["t1"].startswith(STUB_START)
    assert tools["t2"].startswith(STUB_START)
    assert tools["t3"] == "c" * 400
    assert messages[2]["tool_calls"] == original["messages"][2]["tool_calls"]
    assert openai_pairs_ok(messages)


@pytest.mark.parametrize("make", [anthropic_body, openai_body])
def test_too_long_body_says_so_and_keeps_pairs(make: Any) -> None:
    body = make()
    original = copy.deepcopy(body)
    fitted = fit_request(body, budget=100)
    assert fitted.plan.outcome == "too-long"
    assert not fitted.plan.fits
    assert body == original
    ok = anthropic_pairs_ok if "system" in original else openai_pairs_ok
    assert ok(fitted.body["messages"])


def test_add_notice_changes_even_a_body_that_fits() -> None:
    body = anthropic_body()
    original = copy.deepcopy(body)
    fitted = fit_request(body, budget=100_000, add_notice=True)
    assert fitted.plan.outcome == "fits"
    assert fitted.plan.notice_added
    assert fitted.body is not body
    assert fitted.body["system"] == [*original["system"], {"type": "text", "text": NOTICE}]
    assert body == original


def test_dialect_can_be_forced() -> None:
    # an OpenAI-looking body read as OpenAI explicitly gives the same answer as detection
    detected = fit_request(openai_body(), budget=1500)
    forced = fit_request(openai_body(), budget=1500, dialect="openai")
    assert forced.body == detected.body


# --------------------------------------------------------------------------
# One Fitter per conversation


def test_fitter_memoises_across_a_growing_conversation() -> None:
    fitter = Fitter(budget=100_000)
    body = anthropic_body()
    assert fitter.fit(body).body is body
    memo = fitter.estimator._memo  # the estimator's per-message cache
    assert len(memo) == 5  # one entry per message
    grown = copy.deepcopy(body)
    grown["messages"] += [
        {"role": "assistant", "content": "Both read."},
        {"role": "user", "content": "Now summarise them."},
    ]
    assert fitter.fit(grown).body is grown
    assert len(memo) == 7  # only the two new messages were estimated


def test_fitter_memoises_while_clearing_the_same_batch() -> None:
    fitter = Fitter(budget=1500)
    body = anthropic_body()
    first = fitter.fit(body)
    assert [r.call_id for r in first.plan.cleared] == ["t1", "t2"]
    size = len(fitter.estimator._memo)
    grown = copy.deepcopy(body)
    grown["messages"] += [
        {"role": "assistant", "content": "Both read."},
        {"role": "user", "content": "Now summarise them."},
    ]
    second = fitter.fit(grown)
    # the same batch is cleared, so the stubbed message is the same value and is not estimated again:
    # "Both read." 10 chars -> 3 + 7 = 10; "Now summarise them." 19 chars -> 5 + 7 = 12; 307 + 22 = 329
    assert [r.call_id for r in second.plan.cleared] == ["t1", "t2"]
    assert second.plan.tokens_after == 329
    assert len(fitter.estimator._memo) == size + 2
    # the cleared prefix is byte-identical between the two requests (the prefix cache keeps working)
    assert second.body["messages"][:5] == first.body["messages"]


def turns_body(turns: int) -> dict[str, Any]:
    """An Anthropic body of ``turns`` turns: a question, a call, and a 1,600-character result each."""
    messages: list[dict[str, Any]] = []
    for k in range(turns):
        messages += [
            {"role": "user", "content": f"q{k}"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"c{k}", "name": "read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"c{k}", "content": "a" * 1600}]},
        ]
    return {"model": "m", "max_tokens": 100, "messages": messages}


def test_with_cut_steps_a_fitter_carries_the_cut_to_the_next_request() -> None:
    # Each turn is about 400 tokens; at 1,000 the head, the note and two turns fit, three do not.
    fitter = Fitter(1000, make_estimator(overhead=0.0), min_clear_ratio=1e9, cut_step=500)
    first = fitter.fit(turns_body(4))
    assert (first.plan.options.carried_cut, first.plan.cut) == (None, 6)
    assert fitter.carried_cut == 6
    second = fitter.fit(turns_body(5))  # the conversation grew by a turn: the cut is carried, and moves on
    assert (second.plan.options.carried_cut, second.plan.cut) == (6, 9)
    assert fitter.carried_cut == 9
    too_long = replace(fitter, budget=10)
    assert too_long.fit(turns_body(5)).plan.outcome == "too-long"
    assert too_long.carried_cut == 9, "a too-long request is not sent: its cut is not carried"
    fitter.reset()  # a new conversation
    assert fitter.carried_cut is None and fitter.fit(turns_body(2)).plan.options.carried_cut is None


def test_without_cut_steps_a_fitter_carries_nothing_unless_told() -> None:
    fitter = Fitter(1000, make_estimator(overhead=0.0), min_clear_ratio=1e9)
    assert fitter.fit(turns_body(4)).plan.cut == 6
    assert fitter.carried_cut is None
    told = Fitter(1000, make_estimator(overhead=0.0), min_clear_ratio=1e9, carried_cut=9)
    assert told.fit(turns_body(4)).plan.kept == ((9, 12),)  # it fits from 9: the cut stays


# --------------------------------------------------------------------------
# Issue 7 item 6: a fitted request that can be sent


def _sendable(body: dict[str, Any], dialect: Dialect) -> None:
    """The body passes the provider's structural rules (validate.py) and, if its
    messages call tools, defines tools."""
    transcript = transcript_from_body(body, dialect=dialect)
    assert transcript.dialect == dialect
    assert check_request(transcript, dialect) == ()
    if any(m.tool_calls for m in transcript.messages):
        assert body.get("tools")


@pytest.mark.parametrize("to", ["anthropic", "openai"])
@pytest.mark.parametrize("source", ["anthropic", "openai"])
def test_a_recorded_model_max_tokens_system_and_tools_reach_the_body(source: str, to: Dialect) -> None:
    body = anthropic_body() if source == "anthropic" else openai_body()
    body = {**body, "model": "m-1", "max_tokens": 321}
    transcript = transcript_from_body(body)
    written = body_from_transcript(transcript, to=to)
    _sendable(written, to)
    assert written["model"] == "m-1"
    # the same dialect keeps the recorded key; OpenAI's current name for the limit otherwise
    assert written["max_tokens" if to == "anthropic" or source == to else "max_completion_tokens"] == 321
    if to == "anthropic":
        assert [b["text"] for b in written["system"]] == ["You read files."]
        assert written["tools"] == [{"name": "read", "description": "Read a file.", "input_schema": SCHEMA}]
    else:
        assert written["messages"][0] == {"role": "system", "content": "You read files."}
        assert written["tools"] == [
            {"type": "function", "function": {"name": "read", "description": "Read a file.", "parameters": SCHEMA}}
        ]
    assert missing_parts(transcript, to=to) == ()


def test_only_the_keys_that_translate_cross_dialects() -> None:
    body = {**anthropic_body(), "model": "m-1", "max_tokens": 321, "stream": True, "metadata": {"user_id": "u"}}
    written = body_from_transcript(transcript_from_body(body), to="openai")
    assert [k for k in written if k not in ("messages", "tools")] == ["model", "max_completion_tokens"]
    # ... while the same dialect keeps every recorded key
    same = body_from_transcript(transcript_from_body(body), to="anthropic")
    assert {"model": "m-1", "max_tokens": 321, "stream": True, "metadata": {"user_id": "u"}}.items() <= same.items()


def test_missing_parts_names_what_the_file_does_not_record() -> None:
    body = anthropic_body()
    del body["system"], body["tools"], body["model"], body["max_tokens"]
    transcript = replace(transcript_from_body(body), format="claude_code")
    assert missing_parts(transcript, to="anthropic") == ("model", "max_tokens", "system", "tools")
    assert missing_parts(transcript, to="openai") == ("model", "system", "tools")
    # a request log records what was sent: no system prompt there means none was sent
    assert missing_parts(replace(transcript, format="anthropic_log"), to="openai") == ("model", "tools")


@pytest.mark.parametrize("to", ["anthropic", "openai"])
def test_given_parts_fill_the_gaps_and_tools_convert_to_the_target(to: Dialect) -> None:
    body = anthropic_body()
    del body["system"], body["tools"], body["model"], body["max_tokens"]
    transcript = replace(transcript_from_body(body), format="claude_code")
    openai_tool = {
        "type": "function",
        "function": {"name": "read", "description": "Read a file.", "parameters": SCHEMA},
    }
    tools = tools_from_json(orjson.dumps([openai_tool]), "tools.json")
    given = with_request_parts(transcript, system="You read files.", tools=tools, model="m-2", max_tokens=99)
    assert missing_parts(given, to=to) == ()
    written = body_from_transcript(given, to=to)
    _sendable(written, to)
    assert written["model"] == "m-2"
    assert written["max_tokens" if to == "anthropic" else "max_completion_tokens"] == 99
    expected_tool = (
        {"name": "read", "description": "Read a file.", "input_schema": SCHEMA} if to == "anthropic" else openai_tool
    )
    assert written["tools"] == [expected_tool]
    # the given parts count in the fit: the preamble is 38 tokens (module docstring)
    assert make_estimator().preamble(given) == 38


def test_tools_file_accepts_every_shape_and_a_request_body() -> None:
    anthropic_tool = {"name": "read", "description": "Read a file.", "input_schema": SCHEMA}
    chat_tool = {"type": "function", "function": {"name": "grep", "description": "", "parameters": SCHEMA}}
    responses_tool = {"type": "function", "name": "ls", "description": "List.", "parameters": SCHEMA, "strict": True}
    tools = tools_from_json(orjson.dumps([anthropic_tool, chat_tool, responses_tool]), "t.json")
    assert [(t.name, t.dialect, orjson.loads(t.schema_json)) for t in tools] == [
        ("read", "anthropic", SCHEMA),
        ("grep", "openai", SCHEMA),
        ("ls", "openai", SCHEMA),
    ]
    assert tools_from_json(orjson.dumps({"tools": [anthropic_tool]}), "body.json") == tools[:1]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{not json", "not JSON"),
        (b'{"name": "read"}', "expected a JSON array"),
        (b'[{"description": "no name"}]', "tool definition 0 has no name"),
        (b"[1]", "a tool definition must be an object"),
    ],
)
def test_a_bad_tools_file_is_bad_input(data: bytes, message: str) -> None:
    with pytest.raises(UnknownShape, match=message):
        tools_from_json(data, "tools.json")


# Issue 8: what the library sends


def interrupted_body() -> dict[str, Any]:
    """A session interrupted after a call: the call has no result."""
    return {
        "model": "claude-x",
        "max_tokens": 1024,
        "messages": [
            {"role": "user", "content": "Read a.txt."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {}}]},
        ],
    }


def test_an_interrupted_body_that_fits_comes_back_repaired_issue_8() -> None:
    # Issue 8: the body went out as it was, with the unanswered tool_use the provider rejects.
    body = interrupted_body()
    fitted = Fitter(100_000).fit(body)
    assert fitted.plan.outcome == "fits"
    assert [r.kind for r in fitted.plan.repairs] == ["synthetic-result"]
    assert fitted.body is not body
    last = fitted.body["messages"][-1]
    assert last["role"] == "user" and last["content"][0]["type"] == "tool_result"
    assert last["content"][0]["tool_use_id"] == "t1"
    assert body == interrupted_body()  # the caller's body is untouched


def test_a_body_of_only_an_orphan_result_is_refused_not_sent_empty_issue_8() -> None:
    body = {"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "y"}]}]}
    with pytest.raises(UnsendableRequest, match="holds no messages"):
        fit_request(body, budget=100_000)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged_transcripts(), st.floats(0.05, 1.2))
def test_the_fitted_body_obeys_the_providers_rules_when_repair_can_fix_the_input(
    transcript: Transcript, fraction: float
) -> None:
    assume(all(v.kind in DEFECT_OF.values() for v in check_messages(transcript.messages, transcript.dialect)))
    body = body_from_transcript(transcript)
    budget = max(1, int(make_estimator().request(transcript) * fraction))
    try:
        fitted = fit_request(body, budget=budget, dialect=transcript.dialect)
    except UnsendableRequest:
        assert unsendable(repair(transcript)[0]) is not None
        return
    sent = transcript_from_body(fitted.body, dialect=transcript.dialect)
    assert sent.messages, "the fitted request is never empty"
    assert check_request(sent) == ()


# --------------------------------------------------------------------------
# Issue 13 item 3: anchoring on the usage of the previous response
#
# anthropic_body: the previous response is message 3 (the last assistant message, 12 tokens), so the
# previous request held messages 0-2 (13 + 27 + 2016 = 2056) and only message 4 (110) came after it.
# openai_body: the previous response is message 4 (12), message 5 (110) came after it.


def test_last_usage_anchors_the_anthropic_size_on_the_measured_request() -> None:
    body = anthropic_body()
    usage = {
        "input_tokens": 100,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 5000,
        "output_tokens": 20,
    }
    fitted = Fitter(budget=100_000).fit(body, last_usage=usage)
    assert fitted.body is body
    size = fitted.plan.size
    assert size is not None and size.source == "anchored"
    # measured 5,100 + its reply 20 (recorded output, above the estimate 12) + the result after it 110
    assert (size.measured_tokens, size.reply_tokens, size.estimated_tokens) == (5100, 20, 110)
    assert fitted.plan.tokens_before == 5230
    # the preamble, inferred as report does: 5,100 - the estimate of the three messages it held (2,056)
    assert (size.preamble_source, size.preamble_tokens) == ("inferred", 3044)


def test_last_usage_reads_openai_usage_with_its_cached_part() -> None:
    usage = {"prompt_tokens": 3000, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 2500}}
    plan = Fitter(budget=100_000).fit(openai_body(), last_usage=usage).plan
    # measured 3,000 (the cached 2,500 are part of it) + the reply's estimate 12 (above 7) + 110
    assert plan.size is not None and plan.size.source == "anchored"
    assert plan.tokens_before == 3122


def test_without_last_usage_or_a_previous_response_the_size_is_the_estimate() -> None:
    assert Fitter(budget=100_000).fit(anthropic_body()).plan.tokens_before == 2216
    first = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "Hi there."}]}
    plan = Fitter(budget=100_000).fit(first, last_usage={"input_tokens": 999}).plan
    assert plan.size is not None and plan.size.source == "estimate"


def test_a_last_usage_without_an_input_count_is_an_option_error() -> None:
    with pytest.raises(OptionError, match="last_usage"):
        Fitter(budget=100_000).fit(anthropic_body(), last_usage={"output_tokens": 5})


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["anthropic", "openai"]), st.integers(0, 10**6), st.integers(0, 10**5))
def test_the_size_moves_token_for_token_with_the_measured_request(dialect: str, measured: int, more: int) -> None:
    make = anthropic_body if dialect == "anthropic" else openai_body
    fitter = Fitter(budget=10**8)

    def before(total: int) -> int:
        return fitter.fit(make(), last_usage={"input_tokens": total}).plan.tokens_before

    assert before(measured + more) - before(measured) == more


def test_a_fitted_previous_request_counts_what_its_fit_took_off() -> None:
    # The provider measured the request as sent (t1 and t2 cleared); the conversation still holds them.
    fitter = Fitter(budget=1500)
    first = fitter.fit(anthropic_body())
    assert [r.call_id for r in first.plan.cleared] == ["t1", "t2"]
    taken_off = first.plan.tokens_before - first.plan.tokens_after
    assert fitter.taken_off == taken_off > 0
    grown = anthropic_body()
    grown["messages"] += [
        {"role": "assistant", "content": "Both read."},  # 10 tokens: the reply, above its output count 3
        {"role": "user", "content": "Now summarise them."},  # 12
    ]
    measured = first.plan.tokens_after + 500  # what the provider counted for the cleared request
    second = fitter.fit(grown, last_usage={"input_tokens": measured, "output_tokens": 3}).plan
    assert second.size is not None and second.size.measured_tokens == measured + taken_off
    assert second.tokens_before == measured + taken_off + 10 + 12
    # t1 and t2 are cleared again, counted from below: never less than the measured request plus what came after
    assert [r.call_id for r in second.cleared] == ["t1", "t2"]
    assert second.tokens_after >= measured + 10 + 12
    fitter.reset()
    assert fitter.taken_off == 0


def _usage_json(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "output_tokens": usage.output_tokens,
    }


@pytest.mark.slow
def test_replaying_the_corpus_sessions_request_by_request_predicts_each_measured_request() -> None:
    # Every Claude Code session of the corpus, as a harness would: before each measured request, fit its
    # body with the usage of the previous response. One point per measured reply (per message.id: the
    # loader keeps one usage per assistant message).
    root = require_shared("corpus", "transcripts", "claude_code")
    ratios: list[float] = []
    for path in discover([str(root)]):
        for t in load(Input(str(path)), skip_invalid=True):
            live = t.live()
            measured = [u for u in live.usage if 0 < u.before <= len(live.messages)]
            report_sizes = {p.messages: p.predicted.tokens for p in backtest(live, make_estimator())}
            fitter = Fitter(budget=10**9)
            for previous, usage in itertools.pairwise(measured):
                if any(m.role == "assistant" for m in live.messages[previous.before + 1 : usage.before]):
                    continue  # a reply the provider did not measure (Claude Code's synthetic ones) came after it
                plan = fitter.fit(body_from_transcript(cut(live, usage.before)), last_usage=_usage_json(previous)).plan
                assert plan.size is not None and plan.size.anchored
                assert plan.size.tokens == report_sizes[usage.before], "the Fitter anchors as report does"
                ratios.append(plan.size.tokens / usage.total)
    assert len(ratios) > 500
    assert 0.97 <= statistics.median(ratios) <= 1.10
    assert sum(r < 0.95 for r in ratios) / len(ratios) <= 0.05
