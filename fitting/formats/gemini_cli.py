"""Gemini CLI chat recordings (``~/.gemini/tmp/<project hash>/chats/session-*.json``
and the newer ``session-*.jsonl``).

Shapes as Gemini CLI writes them (google-gemini/gemini-cli,
``packages/core/src/services/chatRecordingService.ts`` and
``chatRecordingTypes.ts``): a ``ConversationRecord {sessionId, projectHash,
startTime, lastUpdated, messages[]}``; each ``MessageRecord`` has an ``id``, a
``type`` (``user``, ``gemini``, ``info``, ``error``, ``warning``) and
``content`` (a string or a list of parts); a ``gemini`` record also carries
``toolCalls[] {id, name, args, result (parts with a functionResponse),
status}``, ``thoughts[]`` (summaries) and ``tokens {input, output, cached,
thoughts, tool, total}`` (the response's usage metadata).

The JSONL session starts with that record's metadata on one line, then appends
each message record whenever it changes (the last copy of an ``id`` wins, in
the place of its first copy), ``{"$set": {...}}`` metadata updates and
``{"$rewindTo": id}`` lines that drop that message and every later one.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from .._json import InputTexts, dumps, other_block
from ..errors import EmptyTranscript, Location, UnknownShape
from ..transcript import Block, Defect, Message, Skipped, Source, Text, ToolCall, ToolResult, Transcript, Usage
from ..validate import check_messages
from ._jsonl import LineReader, loads_document
from ._sniff import scan_head
from .base import Format, Input
from .codex import _Tail, line_defects

NAME = "gemini_cli"
SPOKEN = frozenset({"user", "gemini"})
"""Record types that are messages of the conversation; ``info``, ``error`` and
``warning`` are shown to the user only and never sent to the model."""


def _parts(raw: Any, where: Location) -> list[Block]:
    """Blocks of a ``PartListUnion``: a string, a part, or a list of them."""
    if raw is None:
        return []
    if isinstance(raw, str):
        return [Text(raw)] if raw else []
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list):
        raise UnknownShape(where, f"message content is a {type(raw).__name__}, not text or a list of parts")
    blocks: list[Block] = []
    for part in raw:
        if isinstance(part, str):
            blocks.append(Text(part))
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            if not part.get("thought"):
                blocks.append(Text(part["text"]))
        elif isinstance(part, dict):
            blocks.append(other_block(next(iter(part), "part"), part))
        else:
            raise UnknownShape(where, f"a content part is a {type(part).__name__}")
    return blocks


def _result(call: dict[str, Any], where: Location) -> tuple[tuple[Block, ...], bool]:
    """The content of a tool call's result, and whether it is an error."""
    blocks: list[Block] = []
    error = call.get("status") in ("error", "cancelled")
    raw = call.get("result")
    for part in raw if isinstance(raw, list) else [raw]:
        response = part.get("functionResponse") if isinstance(part, dict) else None
        if isinstance(response, dict):
            body = response.get("response")
            if isinstance(body, dict) and isinstance(body.get("output"), str) and len(body) == 1:
                blocks.append(Text(body["output"]))
            elif isinstance(body, dict) and isinstance(body.get("error"), str) and len(body) == 1:
                blocks.append(Text(body["error"]))
                error = True
            else:
                blocks.append(Text(dumps(body)))
        else:
            blocks.extend(_parts(part, where))
    return tuple(blocks), error


def _count(value: Any) -> int:
    """A token count as recorded: a non-negative integer, else 0 (a missing, null or mistyped count)."""
    return value if type(value) is int and value > 0 else 0


@dataclass(slots=True)
class _Session:
    """The messages of one recording while its records are read."""

    path: str
    messages: list[Message] = field(default_factory=list)
    usage: list[Usage] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)
    thoughts: int = 0
    measured: int = 0
    model: str = ""

    def add(self, record: dict[str, Any], line: int | None, inputs: InputTexts | None = None) -> None:
        """Read one message record; ``inputs``: the text it was read from, to find each call's ``args``
        as the file spelled them (written back so, SPEC section 6, invariant 9)."""
        kind = record.get("type")
        source = Source(self.path, line)
        where = Location(self.path, line)
        if not isinstance(kind, str):
            raise UnknownShape(where, "not a Gemini CLI message record: no type")
        if kind not in SPOKEN:
            self.kinds[f"message/{kind}"] += 1
            return
        content = _parts(record.get("content"), where)
        if kind == "user":
            self.messages.append(Message("user", tuple(content) or (Text(""),), source))
            return
        if isinstance(record.get("model"), str):
            self.model = record["model"]
        thoughts = record.get("thoughts")
        self.thoughts += len(thoughts) if isinstance(thoughts, list) else 0
        calls = record.get("toolCalls") or []
        if not isinstance(calls, list) or not all(isinstance(c, dict) and isinstance(c.get("id"), str) for c in calls):
            raise UnknownShape(where, "toolCalls is not a list of calls with an id")
        if not content and not calls:
            self.kinds["message/gemini-empty"] += 1
            return
        tokens = record.get("tokens")
        if isinstance(tokens, dict) and isinstance(tokens.get("input"), int) and tokens["input"] > 0:
            # Gemini counts cached tokens inside promptTokenCount: the part read without the cache is the difference.
            cached = min(_count(tokens.get("cached")), tokens["input"])
            # Gemini counts thoughts apart from the candidates: the reply's output is both.
            output = _count(tokens.get("output")) + _count(tokens.get("thoughts"))
            self.usage.append(Usage(len(self.messages), tokens["input"] - cached, 0, cached, source, output))
            self.measured += 1
        blocks = list(content)
        for call in calls:
            name = str(call.get("name", ""))
            blocks.append(ToolCall(call["id"], name, dumps(call.get("args", {}))))
        spelled = inputs.blocks(tuple(blocks)) if inputs is not None and calls else tuple(blocks)
        self.messages.append(Message("assistant", spelled, source))
        for call in calls:
            if call.get("result") is None:
                continue  # never answered (interrupted): left for the repair, reported as a defect
            result, error = _result(call, where)
            self.messages.append(
                Message("tool", (ToolResult(call["id"], result, error, str(call.get("name", ""))),), source)
            )

    def transcript(self, skipped: list[Skipped], notes: list[str]) -> Transcript:
        if not self.messages:
            raise EmptyTranscript(Location(self.path), "no messages in this Gemini CLI session")
        defects = [Defect(v.source, v.kind, v.detail) for v in check_messages(self.messages, "openai")]
        notes = [
            "Gemini CLI does not record its system prompt or tool definitions: not counted",
            *notes,
        ]
        if self.thoughts:
            notes.append(
                f"{self.thoughts} thought summary(ies) not counted: Gemini CLI does not send them back to the model"
            )
        if self.measured:
            notes.append(f"{self.measured} response(s) record their tokens: input (cached part apart) as usage")
        return Transcript(
            system=(),
            tools=(),
            messages=tuple(self.messages),
            source=Source(self.path),
            format=NAME,
            dialect="openai",
            skipped=tuple(skipped),
            extra=dumps({"model": self.model}) if self.model else "",
            defects=tuple(defects),
            usage=tuple(self.usage),
            line_kinds=tuple(sorted(self.kinds.items())),
            notes=tuple(notes),
        )


@dataclass(slots=True)
class _Lines:
    """Finds the line of each message record's ``id`` in a document, reading forward."""

    text: str
    pos: int = 0
    line: int = 1

    def of(self, message_id: str) -> int | None:
        match = re.compile(r'"id"\s*:\s*' + re.escape(dumps(message_id))).search(self.text, self.pos)
        if match is None:
            return None
        self.line += self.text.count("\n", self.pos, match.start())
        self.pos = match.start()
        return self.line


def _load_document(source: Input, skip_invalid: bool) -> Transcript:
    data = source.read_all()
    doc = loads_document(data, source.path)
    if isinstance(doc, dict) and "messages" not in doc and isinstance(doc.get("sessionId"), str):
        raise EmptyTranscript(Location(source.path), "no messages in this Gemini CLI session (its metadata only)")
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        raise UnknownShape(Location(source.path, 1), "not a Gemini CLI session: no messages list")
    lines = _Lines(data.decode("utf-8", "replace"))
    inputs = InputTexts(data, "args") if source.keep_text and b'"args"' in data else None
    session = _Session(source.path)
    skipped: list[Skipped] = []
    for record in doc["messages"]:
        line = lines.of(record["id"]) if isinstance(record, dict) and isinstance(record.get("id"), str) else None
        try:
            if not isinstance(record, dict):
                raise UnknownShape(Location(source.path, line), "a message record is not an object")
            session.add(record, line, inputs)
        except UnknownShape as exc:
            if not skip_invalid:
                raise
            skipped.append(Skipped(Source(source.path, line), exc.message))
    return session.transcript(skipped, [])


def _load_lines(source: Input, skip_invalid: bool) -> Transcript:
    reader = LineReader(source.path, skip_invalid)
    tail = _Tail()
    records: dict[str, tuple[int, dict[str, Any], bytes | None]] = {}
    """Each message record by id: its line, its value and (for ``fit``) its text, where it has calls."""
    kinds: Counter[str] = Counter()
    rewinds = 0
    replaced = 0
    listed: list[Any] | None = None
    first = True
    for lineno, obj, text in reader.entries(tail.follow(source.lines())):
        if first and not (isinstance(obj, dict) and isinstance(obj.get("sessionId"), str)):
            raise UnknownShape(
                Location(source.path, lineno),
                "not a Gemini CLI session: the first line is not its metadata (sessionId, projectHash)",
            )
        first = False
        if not isinstance(obj, dict):
            error = UnknownShape(Location(source.path, lineno), "a line is not a JSON object")
            if not skip_invalid:
                raise error
            reader.skipped.append(Skipped(Source(source.path, lineno), error.message))
            continue
        if isinstance(obj.get("$rewindTo"), str):
            kinds["$rewindTo"] += 1
            rewinds += 1
            ids = list(records)
            cut = ids.index(obj["$rewindTo"]) if obj["$rewindTo"] in ids else 0
            for key in ids[cut:]:
                del records[key]
        elif isinstance(obj.get("id"), str):
            kept = text if source.keep_text and b'"args"' in text else None
            if obj["id"] in records:
                replaced += 1
            records[obj["id"]] = (lineno, obj, kept)  # the last copy wins, in the first copy's place
        elif isinstance(obj.get("$set"), dict):
            kinds["$set"] += 1
            if isinstance(obj["$set"].get("messages"), list):
                listed = obj["$set"]["messages"]
        elif isinstance(obj.get("sessionId"), str):
            kinds["metadata"] += 1
        else:
            kinds["unknown"] += 1
    session = _Session(source.path, kinds=kinds)
    items: list[tuple[int | None, Any, bytes | None]] = (
        [(None, m, None) for m in listed] if listed else list(records.values())
    )
    for line, record, spelt in items:
        try:
            if not isinstance(record, dict):
                raise UnknownShape(Location(source.path, line), "a message record is not an object")
            session.add(record, line, InputTexts(spelt, "args") if spelt is not None else None)
        except UnknownShape as exc:
            if not skip_invalid:
                raise
            reader.skipped.append(Skipped(Source(source.path, line), exc.message))
    notes = []
    if replaced:
        notes.append(f"{replaced} message record(s) written again later: the last copy of each id is read")
    if rewinds:
        notes.append(f"{rewinds} rewind(s): the messages from each rewind point on were dropped")
    transcript = session.transcript(reader.skipped, notes)
    found = line_defects(reader.skipped, tail)
    return replace(transcript, defects=(*found, *transcript.defects))


def load(source: Input, *, skip_invalid: bool) -> tuple[Transcript, ...]:
    if source.is_document():
        return (_load_document(source, skip_invalid),)
    return (_load_lines(source, skip_invalid),)


def sniff(head: bytes) -> bool:
    """The session's metadata opens the file: ``sessionId`` and ``projectHash``,
    as a document's first keys or the JSONL file's first line."""
    shape = scan_head(head)
    return shape.opening == "{" and shape.keys[:2] in (("sessionId", "projectHash"), ("projectHash", "sessionId"))


FORMAT = Format(
    name=NAME,
    description="Gemini CLI chat recording (~/.gemini/tmp/<hash>/chats/session-*.json and the newer .jsonl)",
    sniff=sniff,
    load=load,
    records_system=False,
)
