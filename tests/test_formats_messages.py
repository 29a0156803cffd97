"""The "messages" format: Anthropic- and OpenAI-shaped JSONL, request bodies
and message arrays; located errors; writing request bodies back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from windowfit.fitting import Image, Message, Other, Source, Text, Thinking, ToolCall, ToolDef, ToolResult, Transcript
from windowfit.fitting.errors import (
    EmptyTranscript,
    InvalidJson,
    InvalidUtf8,
    NoTranscripts,
    UnknownFormat,
    UnknownShape,
)
from windowfit.fitting.formats import Input, discover, load, load_path
from windowfit.fitting.transcript import Skipped
from windowfit.fitting.wire import anthropic, openai


def jsonl(*values: Any) -> bytes:
    """One JSON value per line; ``bytes`` values are written as they are (for broken lines)."""
    return b"".join((v if isinstance(v, bytes) else orjson.dumps(v)) + b"\n" for v in values)


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def load_one(path: Path, **kwargs: Any) -> Transcript:
    (transcript,) = load_path(path, **kwargs)
    return transcript


def lines(transcript: Transcript) -> list[int | None]:
    return [m.source.line for m in transcript.messages]


# --------------------------------------------------------------------------
# JSON Lines, one message per line

ANTHROPIC_LINES = (
    {"role": "user", "content": "Прочитай README."},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Need the file.", "signature": "sig=="},
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "README.md", "n": 1}},
        ],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "# windowfit\n"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "Готово."}]},
)


def test_loads_anthropic_jsonl(tmp_path: Path) -> None:
    path = write(tmp_path, "a.jsonl", jsonl(*ANTHROPIC_LINES))
    t = load_one(path)
    assert (t.format, t.dialect, t.system, t.tools, t.skipped) == ("messages", "anthropic", (), (), ())
    assert t.source == Source(str(path))
    assert t.messages == (
        Message("user", (Text("Прочитай README."),)),
        Message(
            "assistant",
            (
                Thinking("Need the file.", '{"signature":"sig=="}'),
                Text("Reading."),
                ToolCall("toolu_1", "read_file", '{"path":"README.md","n":1}'),
            ),
        ),
        Message("user", (ToolResult("toolu_1", (Text("# windowfit\n"),)),)),
        Message("assistant", (Text("Готово."),)),
    )
    assert lines(t) == [1, 2, 3, 4]
    assert all(m.source.path == str(path) for m in t.messages)


def test_source_lines_count_blank_and_crlf_lines(tmp_path: Path) -> None:
    data = b"\r\n" + jsonl(ANTHROPIC_LINES[0]).replace(b"\n", b"\r\n") + b"\n   \n" + jsonl(*ANTHROPIC_LINES[1:])
    # line 1 blank, line 2 message, line 3 blank, line 4 spaces, lines 5-7 messages
    t = load_one(write(tmp_path, "crlf.jsonl", data))
    assert lines(t) == [2, 5, 6, 7]


def test_loads_openai_jsonl_with_leading_system_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "o.jsonl",
        jsonl(
            {"role": "system", "content": "You are a careful agent."},
            {"role": "user", "content": "Read a.md and b.md"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "a.md"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path":"b.md"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "name": "read_file", "content": "A"},
            {"role": "tool", "tool_call_id": "call_2", "content": "B"},
            {"role": "assistant", "content": "Both read."},
        ),
    )
    t = load_one(path)
    assert (t.dialect, t.format) == ("openai", "messages")
    assert t.system == (Text("You are a careful agent."),)
    assert t.messages == (
        Message("user", (Text("Read a.md and b.md"),)),
        Message(
            "assistant",
            (
                # arguments arrive as a JSON string; the model keeps compact JSON (what the estimator counts)
                # and, where the sent string spells it otherwise, that string to write back verbatim
                ToolCall("call_1", "read_file", '{"path":"a.md"}', input_text='{"path": "a.md"}'),
                ToolCall("call_2", "read_file", '{"path":"b.md"}'),
            ),
        ),
        Message("tool", (ToolResult("call_1", (Text("A"),), name="read_file"),)),
        Message("tool", (ToolResult("call_2", (Text("B"),)),)),
        Message("assistant", (Text("Both read."),)),
    )
    assert lines(t) == [2, 3, 4, 5, 6]  # line 1 became the system prompt


def test_leading_system_line_in_anthropic_jsonl_is_the_system_prompt(tmp_path: Path) -> None:
    system = {
        "role": "system",
        "content": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
    }
    t = load_one(write(tmp_path, "s.jsonl", jsonl(system, *ANTHROPIC_LINES)))
    assert t.system == (Text("Be brief.", '{"cache_control":{"type":"ephemeral"}}'),)
    assert t.dialect == "anthropic"
    assert lines(t) == [2, 3, 4, 5]


def test_system_line_later_in_the_file_stays_a_message(tmp_path: Path) -> None:
    t = load_one(
        write(
            tmp_path, "s.jsonl", jsonl(ANTHROPIC_LINES[0], {"role": "system", "content": "Note."}, ANTHROPIC_LINES[3])
        )
    )
    assert t.system == ()
    assert [m.role for m in t.messages] == ["user", "system", "assistant"]


@pytest.mark.parametrize(
    ("values", "dialect"),
    [
        (({"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}), "anthropic"),  # undecided
        (ANTHROPIC_LINES, "anthropic"),
        (({"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c", "content": "x"}), "openai"),
        (({"role": "developer", "content": "Be brief."}, {"role": "user", "content": "hi"}), "openai"),
        (({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png"}}]},), "openai"),
    ],
)
def test_dialect_detection(tmp_path: Path, values: tuple[Any, ...], dialect: str) -> None:
    assert load_one(write(tmp_path, "d.jsonl", jsonl(*values))).dialect == dialect


def test_blocks_windowfit_does_not_model_are_kept_verbatim(tmp_path: Path) -> None:
    doc = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "hi"}}
    image = {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}}
    t = load_one(write(tmp_path, "o.jsonl", jsonl({"role": "user", "content": [doc, image]})))
    (message,) = t.messages
    assert message.content == (
        Other("document", orjson.dumps(doc).decode()),
        Image("", 0, None, None, orjson.dumps(image).decode()),
    )


def test_comment_lines_are_skipped_and_recorded(tmp_path: Path) -> None:
    path = write(tmp_path, "c.jsonl", b"// exported by some tool\n" + jsonl(*ANTHROPIC_LINES))
    t = load_one(path)
    assert t.skipped == (Skipped(Source(str(path), 1), "comment line"),)
    assert lines(t) == [2, 3, 4, 5]


# --------------------------------------------------------------------------
# One JSON document: a request body or a message array


def test_loads_anthropic_request_body_with_system_string(tmp_path: Path) -> None:
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": "You are a careful agent.",
        "tools": [{"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}}],
        "messages": list(ANTHROPIC_LINES),
    }
    t = load_one(write(tmp_path, "body.json", orjson.dumps(body, option=orjson.OPT_INDENT_2)))
    assert (t.format, t.dialect) == ("request", "anthropic")
    assert t.system == (Text("You are a careful agent."),)
    assert t.tools == (
        ToolDef("read_file", "Read a file.", '{"type":"object"}', orjson.dumps(body["tools"][0]).decode(), "anthropic"),
    )
    assert len(t.messages) == 4
    assert orjson.loads(t.extra) == {"model": "claude-sonnet-4-5", "max_tokens": 1024}
    assert lines(t) == [None] * 4  # one document: messages have no line of their own


def test_loads_anthropic_request_body_with_system_blocks(tmp_path: Path) -> None:
    body = {
        "system": [
            {"type": "text", "text": "You are Claude Code."},
            {"type": "text", "text": "Be careful.", "cache_control": {"type": "ephemeral"}},
        ],
        "messages": [ANTHROPIC_LINES[0]],
    }
    t = load_one(write(tmp_path, "body.json", orjson.dumps(body)))
    assert t.system == (Text("You are Claude Code."), Text("Be careful.", '{"cache_control":{"type":"ephemeral"}}'))
    assert t.dialect == "anthropic"


def test_loads_openai_request_body(tmp_path: Path) -> None:
    tool = {
        "type": "function",
        "function": {"name": "grep", "description": "Search.", "parameters": {"type": "object"}},
    }
    body = {
        "model": "gpt-4o",
        "messages": [{"role": "system", "content": "Sys."}, {"role": "user", "content": "hi"}],
        "tools": [tool],
    }
    t = load_one(write(tmp_path, "body.json", orjson.dumps(body)))
    assert (t.format, t.dialect) == ("request", "openai")
    assert t.system == (Text("Sys."),)
    assert t.messages == (Message("user", (Text("hi"),)),)
    assert t.tools == (ToolDef("grep", "Search.", '{"type":"object"}', orjson.dumps(tool).decode(), "openai"),)
    assert orjson.loads(t.extra) == {"model": "gpt-4o"}


def test_loads_a_json_array_of_messages(tmp_path: Path) -> None:
    path = write(tmp_path, "arr.json", orjson.dumps(list(ANTHROPIC_LINES), option=orjson.OPT_INDENT_2))
    t = load_one(path)
    assert (t.format, t.dialect, len(t.messages)) == ("messages", "anthropic", 4)
    assert lines(t) == [None] * 4


def test_loads_a_json_array_written_one_message_per_line(tmp_path: Path) -> None:
    # "[" alone on the first line, then a line that is a whole message: still one document, not JSON Lines
    data = b"[\n" + orjson.dumps(ANTHROPIC_LINES[0]) + b"\n]\n"
    t = load_one(write(tmp_path, "arr.json", data))
    assert t.messages == (Message("user", (Text("Прочитай README."),)),)


def test_loads_from_bytes_without_a_file() -> None:
    (t,) = load(Input("<stdin>", jsonl(*ANTHROPIC_LINES)))
    assert t.source.path == "<stdin>"
    assert lines(t) == [1, 2, 3, 4]


# --------------------------------------------------------------------------
# Errors: type and location


def test_line_that_is_not_json_is_located(tmp_path: Path) -> None:
    path = write(
        tmp_path, "bad.jsonl", jsonl(ANTHROPIC_LINES[0], b'{"role": "user", "content": "hi"', ANTHROPIC_LINES[3])
    )
    with pytest.raises(InvalidJson) as info:
        load_path(path)
    # the line is 32 characters long and ends early: the error is at column 33
    assert f"{path}:2:33: invalid JSON" in str(info.value)
    assert "--skip-invalid" in info.value.hint


def test_column_counts_leading_whitespace_and_characters_not_bytes(tmp_path: Path) -> None:
    # two spaces, then {"t": "Привет", x}: the stray x is character 17 of the stripped line -> column 19
    path = write(
        tmp_path,
        "bad.jsonl",
        jsonl(ANTHROPIC_LINES[0], b'  {"t": "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82", x}'),
    )
    with pytest.raises(InvalidJson) as info:
        load_path(path)
    assert f"{path}:2:19:" in str(info.value)


def test_skip_invalid_skips_and_records_bad_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.jsonl", jsonl(ANTHROPIC_LINES[0], b"not json at all", {"foo": 1}, ANTHROPIC_LINES[3]))
    t = load_one(path, skip_invalid=True)
    assert [m.role for m in t.messages] == ["user", "assistant"]
    assert lines(t) == [1, 4]
    assert [s.source for s in t.skipped] == [Source(str(path), 2), Source(str(path), 3)]
    assert t.skipped[0].reason.startswith("invalid JSON")
    assert t.skipped[1].reason.startswith("not a message")


def test_skip_invalid_works_when_the_first_two_lines_are_broken(tmp_path: Path) -> None:
    # regression: two broken lines at the top made the file look like one multi-line JSON document,
    # so --skip-invalid still failed on line 1 (redaction tools break lines this way)
    broken = b'{"role":"user","content":[REDACTED]}'
    path = write(tmp_path, "redacted.jsonl", jsonl(broken, broken, *ANTHROPIC_LINES))
    t = load_one(path, skip_invalid=True)
    assert lines(t) == [3, 4, 5, 6]
    assert [s.source.line for s in t.skipped] == [1, 2]
    with pytest.raises(InvalidJson) as info:
        load_path(path)
    # {"role":"user","content": is 26 characters: the stray [ is at column 27
    assert f"{path}:1:27:" in str(info.value)


def test_document_with_invalid_json_is_located(tmp_path: Path) -> None:
    data = b'{\n  "messages": [\n    {"role": "user", "content": "hi"},,\n  ]\n}\n'
    path = write(tmp_path, "body.json", data)
    with pytest.raises(InvalidJson) as info:
        load_path(path)
    # line 3: four spaces, the 33-character message, a comma at 38, the stray comma at 39
    assert f"{path}:3:39:" in str(info.value)


@pytest.mark.parametrize("data", [b"", b"\n  \n\t\n"], ids=["empty", "blank-lines"])
def test_empty_file_is_an_empty_transcript(tmp_path: Path, data: bytes) -> None:
    path = write(tmp_path, "empty.jsonl", data)
    with pytest.raises(EmptyTranscript) as info:
        load_path(path)
    assert str(info.value).startswith(f"{path}: ")
    with pytest.raises(EmptyTranscript):
        load_path(path, fmt="messages")


def test_only_invalid_lines_skipped_is_an_empty_transcript(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.jsonl", jsonl({"role": "robot", "content": "beep"}, b'{"role": broken'))
    with pytest.raises(EmptyTranscript):
        load_path(path, skip_invalid=True)


def test_object_that_is_not_a_message_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "foo.jsonl", jsonl(ANTHROPIC_LINES[0], {"foo": 1}))
    with pytest.raises(UnknownShape) as info:
        load_path(path)
    assert f"{path}:2: not a message" in str(info.value)


def test_unknown_role_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "role.jsonl", jsonl(ANTHROPIC_LINES[0], {"role": "robot", "content": "beep"}))
    with pytest.raises(UnknownShape) as info:
        load_path(path)
    assert f"{path}:2: unknown message role 'robot'" in str(info.value)


def test_invalid_utf8_names_its_line_and_column(tmp_path: Path) -> None:
    # line 3 is {"role":"user","content":"caf<0xE9>"}: the Latin-1 byte is byte 30 of the line
    path = write(tmp_path, "latin1.jsonl", jsonl(*ANTHROPIC_LINES[:2], b'{"role":"user","content":"caf\xe9"}'))
    with pytest.raises(InvalidUtf8) as info:
        load_path(path)
    assert f"{path}:3:30: invalid UTF-8 (byte 0xe9)" in str(info.value)


def test_file_that_is_no_known_format(tmp_path: Path) -> None:
    path = write(tmp_path, "x.jsonl", b"hello world\n")
    with pytest.raises(UnknownFormat) as info:
        load_path(path)
    assert str(info.value).startswith(f"{path}: ")
    assert "--from" in info.value.hint


def test_directory_without_transcripts(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("nothing here")
    with pytest.raises(NoTranscripts) as info:
        list(discover([tmp_path]))
    assert str(info.value).startswith(f"{tmp_path}: no transcript files")


def test_an_empty_name_is_not_the_current_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``Path("")`` is ``Path(".")``: an unset shell variable must not scan the folder the user stands in."""
    write(tmp_path, "session.jsonl", b'{"role": "user", "content": "hi"}\n')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NoTranscripts, match="empty file name"):
        list(discover([""]))
    assert [p.name for p in discover(["."])] == ["session.jsonl"]


def test_discover_finds_transcripts_recursively_in_order(tmp_path: Path) -> None:
    for name in ("b.json", "a/x.jsonl", "a/deep/y.traj", "c.txt", "a/z.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    single = tmp_path / "c.txt"
    found = list(discover([tmp_path, single]))
    assert found == [tmp_path / "a/deep/y.traj", tmp_path / "a/x.jsonl", tmp_path / "b.json", single]


# --------------------------------------------------------------------------
# Writing request bodies back


def test_anthropic_request_round_trips_in_block_form() -> None:
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "You are a careful agent.", "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "read_file", "description": "Read a file", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Прочитай README"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Need it.", "signature": "c2ln"},
                    {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "README.md"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "text", "text": "# windowfit\n"}],
                        "cache_control": {"type": "ephemeral"},
                    }
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "Готово."}]},
        ],
        "metadata": {"user_id": "u1"},
    }
    (t,) = load(Input("body.json", orjson.dumps(body)))
    assert anthropic.request_to_json(t) == body


def test_anthropic_request_string_contents_come_back_as_text_blocks() -> None:
    # What differs on a typical body: string message content, string tool_result content and a
    # string system prompt are written as one text block each (same meaning for the API), and an
    # explicit "is_error": false is dropped (the default).
    body = {
        "model": "claude-sonnet-4-5",
        "system": "You are a careful agent.",
        "messages": [
            {"role": "user", "content": "Прочитай README"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "# w", "is_error": False}],
            },
        ],
    }
    (t,) = load(Input("body.json", orjson.dumps(body)))
    assert anthropic.request_to_json(t) == {
        "model": "claude-sonnet-4-5",
        "system": [{"type": "text", "text": "You are a careful agent."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Прочитай README"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "# w"}]}
                ],
            },
        ],
    }


OPENAI_BODY: dict[str, Any] = {
    "model": "gpt-4o",
    "temperature": 0,
    "messages": [
        {"role": "system", "content": "You are a careful agent."},
        {"role": "user", "content": "Прочитай README и LICENSE"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path":"README.md"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path":"LICENSE"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "name": "read_file", "content": "# windowfit\n"},
        {"role": "tool", "tool_call_id": "call_2", "content": "MIT"},
        {"role": "assistant", "content": "Готово."},
    ],
    "tools": [
        {
            "type": "function",
            "function": {"name": "read_file", "description": "Read a file", "parameters": {"type": "object"}},
        }
    ],
}


def test_openai_request_round_trips() -> None:
    (t,) = load(Input("body.json", orjson.dumps(OPENAI_BODY)))
    assert openai.request_to_json(t) == OPENAI_BODY


def test_openai_text_parts_are_not_glued_together() -> None:
    # Two system messages (or two text parts) must not come back as one string "A.B.".
    body = {
        "messages": [
            {"role": "system", "content": "You are X."},
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
        ]
    }
    (t,) = load(Input("body.json", orjson.dumps(body)))
    out = openai.request_to_json(t)["messages"]
    assert out == [
        {"role": "system", "content": [{"type": "text", "text": "You are X."}, {"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
    ]


def test_openai_tool_call_arguments_are_written_back_verbatim() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"path": "a b"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c", "content": "ok"},
        ]
    }
    (t,) = load(Input("body.json", orjson.dumps(body)))
    assert openai.request_to_json(t) == body


def test_anthropic_request_written_as_openai_pairs_calls_and_results() -> None:
    body = {
        "system": "Sys.",
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Two reads."},
                    {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}},
                    {"type": "tool_use", "id": "t2", "name": "read_file", "input": {"path": "b"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "B"},
                ],
            },
        ],
    }
    (t,) = load(Input("body.json", orjson.dumps(body)))
    assert openai.request_to_json(t) == {
        "messages": [
            {"role": "system", "content": "Sys."},
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": "Two reads.",
                "tool_calls": [
                    {"id": "t1", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"a"}'}},
                    {"id": "t2", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"b"}'}},
                ],
            },
            {"role": "tool", "tool_call_id": "t1", "content": "A"},
            {"role": "tool", "tool_call_id": "t2", "content": "B"},
        ]
    }


def test_a_utf8_byte_order_mark_is_not_content(tmp_path: Path) -> None:
    path = write(
        tmp_path, "bom.jsonl", b'\xef\xbb\xbf{"role":"user","content":"hi"}\n{"role":"assistant","content":"yo"}\n'
    )
    assert [m.role for m in load_one(path).messages] == ["user", "assistant"]
    body = write(tmp_path, "bom.json", b'\xef\xbb\xbf{"messages":[{"role":"user","content":"hi"}]}')
    assert load_one(body).format == "request"
