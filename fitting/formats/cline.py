"""The "cline" format: Cline's, Roo Code's and Kilo Code's
``api_conversation_history.json``, one JSON array of Anthropic-shaped messages.

These harnesses return tool output as plain user text headed
``[<tool> for '<what>'] Result:``. Where the assistant called the tool with a
``tool_use`` block, that text is the call's result and becomes a
``ToolResult`` (the request the provider gets then pairs every call); where
the call was XML written in the assistant's text (the older protocol), the
calls stay text and the output is marked as an observation that stage 1 may
clear (``Text.observation_of``)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from typing import Any

from .._json import with_input_texts
from ..errors import EmptyTranscript, Location, UnknownShape
from ..transcript import Block, Message, Skipped, Source, Text, ToolCall, ToolResult, Transcript, Usage
from ..wire import anthropic
from ._document import iter_members
from ._sniff import scan_head
from .base import Format, Input

NAME = "cline"

RESULT_HEADER = re.compile(r"\A\[(?P<tool>[A-Za-z_][\w-]*)(?: for '(?s:.*?)')?\] (?:Error )?Result:")
"""The first line of a tool's output as these harnesses write it (``formatResponse``'s
``toolDescription``): ``[read_file for 'src/a.ts'] Result:``, ``[attempt_completion] Result:``."""
_SNIFF_MARK = re.compile(rb"\"\[[A-Za-z_][\w-]*(?: for '[^\"]*)?\] (?:Error )?Result:|<environment_details>")
"""What a sniffer can see of it in the first bytes: a result header opening a JSON
string, or the ``<environment_details>`` block every user message of theirs carries."""
BOOKKEEPING_KEYS = frozenset(
    {"ts", "isSummary", "conversationHistoryIndex", "conversationHistoryDeletedRange", "modelInfo", "metrics"}
)
"""Keys these harnesses add to a stored message and never send to the model (newer Cline versions store the
model and ``metrics.tokens`` of each reply on it)."""
BLOCK_BOOKKEEPING_KEYS = frozenset({"reasoning_details", "call_id", "summary"})
"""Keys newer Cline versions add to stored text, thinking and tool_use blocks (for other providers' shapes); the
Messages API accepts none of them, so they are not part of the request."""


# --------------------------------------------------------------------------
# Sniffing


def sniff(head: bytes) -> bool:
    """A JSON array of messages (``role`` among the first item's keys) carrying
    Cline's marks. Only one array; JSON Lines of arrays are openai_chat's."""
    shape = scan_head(head)
    if shape.opening != "[" or shape.item_opening != "{" or "role" not in shape.item_keys:
        return False
    if shape.lines_of_values and shape.more:
        return False
    return _SNIFF_MARK.search(head) is not None


# --------------------------------------------------------------------------
# Loading


def tool_of_header(text: str) -> str | None:
    """The tool a ``[tool for 'x'] Result:`` text is the output of, or None."""
    match = RESULT_HEADER.match(text)
    return match.group("tool") if match else None


def _split_results(message: Message, pending: list[ToolCall]) -> tuple[Message, list[ToolCall]]:
    """A user message whose headed texts answer ``pending`` calls (in order, by
        tool name), turned into ``ToolResult`` blocks: each header text with the
        texts after it up to the next header or the environment details (images and
    other blocks stay outside: only text continues a result)."""
    content: list[Block] = []
    results: list[Block] = []
    current: tuple[ToolCall, list[Block]] | None = None
    left = list(pending)

    def close() -> None:
        nonlocal current
        if current is not None:
            call, blocks = current
            results.append(ToolResult(call.id, tuple(blocks), False, ""))
            current = None

    for block in message.content:
        tool = tool_of_header(block.text) if isinstance(block, Text) else None
        if tool is not None:
            close()
            call = next((c for c in left if c.name == tool), None)
            if call is not None:
                left.remove(call)
                current = (call, [block])
                continue
        elif current is not None and isinstance(block, Text) and not _is_environment(block):
            current[1].append(block)
            continue
        close()
        content.append(block)
    close()
    # Results first: the provider wants them at the start of the message.
    return replace(message, content=(*results, *content)), left


def _is_environment(block: Block) -> bool:
    return isinstance(block, Text) and block.text.lstrip().startswith("<environment_details>")


def _mark_observations(message: Message) -> Message:
    """The older protocol: the headed texts (and the text right after a header
    alone on its line) are tool output, which stage 1 may clear."""
    content: list[Block] = []
    tool: str | None = None
    for block in message.content:
        if isinstance(block, Text):
            header = tool_of_header(block.text)
            if header is not None:
                if block.text.rstrip().endswith("Result:"):
                    tool = header  # a header on its own: the output is the next block
                    content.append(block)
                    continue
                block = replace(block, observation_of=header)
            elif tool is not None and not _is_environment(block):
                block = replace(block, observation_of=tool)
        tool = None
        content.append(block)
    return replace(message, content=tuple(content))


def _without_bookkeeping(block: Any, dropped: Counter[str]) -> Any:
    """A stored content block without the keys Cline adds to it for other providers."""
    if not isinstance(block, dict) or block.get("type") not in ("text", "thinking", "tool_use"):
        return block
    found = BLOCK_BOOKKEEPING_KEYS.intersection(block)
    dropped.update(f"{block['type']}.{k}" for k in found)
    return {k: v for k, v in block.items() if k not in found} if found else block


def _metrics_usage(metrics: Any, before: int, where: Source) -> Usage | None:
    """A reply's ``metrics.tokens`` (``prompt``, ``completion``, ``cached``: cache writes plus reads, as Cline's
    ``metricsManager`` sums them) as the measured size of the request that produced it."""
    tokens = metrics.get("tokens") if isinstance(metrics, dict) else None
    if not isinstance(tokens, dict):
        return None

    def count(key: str) -> int:
        value = tokens.get(key)
        return int(value) if isinstance(value, (int, float)) and value >= 0 else 0

    usage = Usage(before, count("prompt"), 0, count("cached"), where, count("completion"))
    return usage if usage.total else None


def load(source: Input, *, skip_invalid: bool) -> tuple[Transcript, ...]:
    messages: list[Message] = []
    skipped: list[Skipped] = []
    dropped: Counter[str] = Counter()
    measured: list[Usage] = []
    with source.open() as stream:
        for member in iter_members(stream, source.path):
            where = Source(source.path, member.line)
            if member.key is not None:
                raise UnknownShape(
                    Location(source.path, member.line),
                    "not an api_conversation_history.json: expected a JSON array of messages",
                    hint="pass --from with another format",
                )
            obj: Any = member.value
            try:
                if not isinstance(obj, dict):
                    raise UnknownShape(Location(source.path, member.line), "a message must be an object")
                found = BOOKKEEPING_KEYS.intersection(obj)
                dropped.update(found)
                kept = {k: v for k, v in obj.items() if k not in found}
                if isinstance(kept.get("content"), list):
                    kept["content"] = [_without_bookkeeping(b, dropped) for b in kept["content"]]
                usage = _metrics_usage(obj.get("metrics"), len(messages), where)
                if usage is not None and obj.get("role") == "assistant":
                    measured.append(usage)
                message = anthropic.message_from_json(kept, where)
                if source.keep_text and message.tool_calls:  # each call's input as the file spelled it
                    message = replace(message, content=with_input_texts(message.content, member.text))
                messages.append(message)
            except UnknownShape as exc:
                if not skip_invalid:
                    raise
                skipped.append(Skipped(where, exc.message))
    if not messages:
        raise EmptyTranscript(Location(source.path), "no messages found", hint="is this the right file?")
    out: list[Message] = []
    pending: list[ToolCall] = []
    paired = observations = 0
    for message in messages:
        if message.role == "user" and pending:
            message, _ = _split_results(message, pending)
            paired += len(message.tool_results)
        elif message.role == "user" and out and out[-1].role == "assistant":
            marked = _mark_observations(message)
            observations += sum(1 for b in marked.content if isinstance(b, Text) and b.observation_of)
            message = marked
        pending = list(message.tool_calls) if message.role == "assistant" else []
        out.append(message)
    notes = [
        "Cline / Roo Code / Kilo Code do not store the system prompt or tool definitions in this file: "
        "the estimate leaves them out"
    ]
    if paired:
        notes.append(f"{paired} '[tool] Result:' texts read as the results of the tool_use calls before them")
    if observations:
        notes.append(f"{observations} '[tool] Result:' texts after XML tool calls read as clearable tool output")
    if dropped:
        notes.append(f"bookkeeping keys ({', '.join(sorted(dropped))}) are never sent to the model: left out")
    if measured:
        notes.append(
            "each reply's metrics.tokens is the measured size of its request: prompt read without the cache, "
            "cached (cache writes and reads together) counted as read from the cache"
        )
    return (
        Transcript(
            (),
            (),
            tuple(out),
            Source(source.path),
            NAME,
            "anthropic",
            tuple(skipped),
            usage=tuple(measured),
            notes=tuple(notes),
        ),
    )


FORMAT = Format(
    name=NAME,
    description="Cline / Roo Code / Kilo Code api_conversation_history.json (a JSON array of messages)",
    sniff=sniff,
    load=load,
    records_system=False,
)
