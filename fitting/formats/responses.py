"""The "responses" format: OpenAI Responses API input items in a file, as a
JSON array of items, a request body ``{"input": [...]}``, or JSON Lines with
one item per line (the items themselves are read by ``wire.responses``)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Any

import orjson

from .._json import dumps, str_field
from ..errors import EmptyTranscript, Location, UnknownShape
from ..transcript import Block, Skipped, Source, Text, Transcript
from ..wire.responses import ITEM_TYPES, ItemReader, defects_of, item_type, tool_from_json
from ._document import Member, is_document, iter_members, locate_members
from ._jsonl import BOM, LineReader
from ._sniff import scan_head
from .base import Format, Input

NAME = "responses"


def _transcript(
    items: Iterable[tuple[int | None, Any, bytes | str | None]],
    path: str,
    *,
    skip_invalid: bool,
    skipped: list[Skipped],
    body: dict[str, Any] | None = None,
) -> Transcript:
    reader = ItemReader()
    kinds: Counter[str] = Counter()
    for line, item, text in items:
        source = Source(path, line)
        try:
            if not isinstance(item, dict):
                raise UnknownShape(Location(path, line), "an input item must be an object")
            if not reader.add(item, source, text):
                kinds[item_type(item) or "unknown"] += 1
        except UnknownShape as exc:
            if not skip_invalid:
                raise
            skipped.append(Skipped(source, exc.message))
    messages = reader.finish()
    if not messages:
        raise EmptyTranscript(Location(path), "no Responses items found", hint="is this the right file?")
    body = body or {}
    where = Location(path)
    system: tuple[Block, ...] = ()
    if isinstance(body.get("instructions"), str) and body["instructions"]:
        system = (Text(body["instructions"]),)
    tools = [tool_from_json(t, where) for t in body.get("tools") or ()]
    kept = tuple(t for t in tools if t is not None)
    notes = []
    if len(kept) < len(tools):
        notes.append(f"{len(tools) - len(kept)} built-in tool(s) (not functions) are not kept")
    if reader.reasoning_items:
        notes.append(
            f"{reader.reasoning_items} reasoning item(s): their summaries count as thinking; "
            "encrypted reasoning is not readable and is not counted"
        )
    return Transcript(
        system=system,
        tools=kept,
        messages=tuple(messages),
        source=Source(path),
        format=NAME,
        dialect="openai",
        skipped=tuple(skipped),
        extra=dumps({"model": body["model"]}) if isinstance(body.get("model"), str) else "",
        defects=tuple(defects_of(messages, (), reader.call_lines)),
        line_kinds=tuple(sorted(kinds.items())),
        notes=tuple(notes),
    )


def _input_items(member: Member, path: str) -> Iterator[tuple[int | None, Any, str | None]]:
    """The items of a body's ``input`` (a list, or a string: one user message), each with its line and
    its text (from its start to the next item's: its JSON text, then blanks and a comma or the end)."""
    if isinstance(member.value, str):
        return iter([(member.line, {"role": "user", "content": member.value}, None)])
    if not isinstance(member.value, list):
        raise UnknownShape(Location(path, member.line), "'input' must be a list of items or a string")
    text = member.text
    found = list(locate_members(text))
    bounds = [at for _, at, _ in found[1:]] + ([text.rindex("]")] if found else [])
    return (
        (member.line + text.count("\n", 0, at), value, text[at:end].rstrip().removesuffix(",").rstrip())
        for (_, at, value), end in zip(found, bounds, strict=True)
    )


def load(source: Input, *, skip_invalid: bool) -> tuple[Transcript, ...]:
    path = source.path
    if not is_document(source):
        reader = LineReader(path, skip_invalid)
        lines = reader.entries(source.lines())
        return (_transcript(lines, path, skip_invalid=skip_invalid, skipped=reader.skipped),)
    with source.open() as stream:
        members = iter_members(stream, path)
        first = next(members, None)
        if first is None:
            raise EmptyTranscript(Location(path), "no Responses items found", hint="is this the right file?")
        if first.key is None:  # an array of items, read one by one
            items = ((m.line, m.value, m.text) for m in chain((first,), members))
            return (_transcript(items, path, skip_invalid=skip_invalid, skipped=[]),)
        fields = {m.key: m for m in chain((first,), members) if m.key is not None}
    body = {key: m.value for key, m in fields.items()}
    if "input" in fields:
        located = _input_items(fields["input"], path)
        return (_transcript(located, path, skip_invalid=skip_invalid, skipped=[], body=body),)
    if item_type(body):  # one item on its own: its text is the document's
        data = source.read_all() if source.keep_text else None
        text = data[len(BOM) :] if data is not None and data.startswith(BOM) else data
        return (_transcript([(first.line, body, text)], path, skip_invalid=skip_invalid, skipped=[]),)
    raise UnknownShape(
        Location(path), "not a list of Responses items or a body with an 'input' list", hint="pass --from"
    )


_ITEM_MARK = re.compile(
    rb'(?<!\\)"type"\s*:\s*"(?:message|reasoning|function_call|function_call_output|custom_tool_call'
    rb'|custom_tool_call_output|local_shell_call|local_shell_call_output|web_search_call)"'
)
_MESSAGE_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file", "refusal"})


def _is_item(obj: Any) -> bool:
    """A Responses item on its own (not an Anthropic message, which also says ``type: message``)."""
    if not isinstance(obj, dict) or "payload" in obj:
        return False
    kind = str_field(obj, "type")
    if kind in ITEM_TYPES - {"message"}:
        return True
    content = obj.get("content")
    return (
        kind == "message"
        and "stop_reason" not in obj
        and (
            isinstance(content, str)
            or (
                isinstance(content, list)
                and bool(content)
                and all(isinstance(p, dict) and str_field(p, "type") in _MESSAGE_PARTS for p in content)
            )
        )
    )


def sniff(head: bytes) -> bool:
    """An array holding Responses items, a body with ``input`` (and no
    ``messages``), or JSON Lines whose first line is an item."""
    shape = scan_head(head)
    if shape.opening == "[":
        return bool(_ITEM_MARK.search(shape.first_line))
    if shape.opening != "{":
        return False
    if shape.complete and not shape.multiline:
        try:
            obj = orjson.loads(shape.first_line)
        except orjson.JSONDecodeError:
            return False
        if isinstance(obj, dict) and "input" in obj and "messages" not in obj:
            items = obj["input"]
            return isinstance(items, str) or (
                isinstance(items, list) and any(_is_item(i) or (isinstance(i, dict) and "role" in i) for i in items)
            )
        return _is_item(obj)
    if "input" in shape.keys and "messages" not in shape.keys:
        return bool(_ITEM_MARK.search(shape.first_line))
    # one long item cut by the head: its type is its first key
    return shape.keys[:1] == ("type",) and bool(_ITEM_MARK.search(shape.first_line[:200]))


FORMAT = Format(
    name=NAME,
    description='OpenAI Responses API input items: a JSON array, a body {"input": [...]}, or one item per line',
    sniff=sniff,
    load=load,
)
