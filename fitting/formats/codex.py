"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``): the
``{timestamp, type, payload}`` lines of current versions and the older files
with no envelope (a session header, then one Responses item per line).

Shapes as the Codex source writes them (openai/codex, ``codex-rs``): the old
``core/src/rollout.rs`` wrote ``SessionMeta {id, timestamp, instructions?, git?}``
as the first line, then each ``ResponseItem`` serialised on its own line, later
with ``{"record_type": "state", ...}`` lines in between; ``protocol`` defines
``RolloutItem`` (``session_meta``, ``response_item``, ``compacted``,
``turn_context``, ``event_msg``), ``SessionMeta.base_instructions {text}``,
``CompactedItem {message, replacement_history?}``; ``core/src/compact.rs``
``build_compacted_history`` says what a compaction without a replacement
history leaves in the context.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from .._json import dumps, loads_or_lenient, str_field
from ..errors import EmptyTranscript, Location, UnknownShape
from ..transcript import Block, Defect, Message, Skipped, Source, Text, ToolDef, Transcript, Usage
from ..wire.responses import ItemReader, defects_of, item_type
from ..wire.spelling import item_texts
from ._jsonl import LineReader
from .base import Format, Input

ENVELOPE_TYPES = frozenset({"session_meta", "response_item", "compacted", "turn_context", "event_msg"})
LEGACY_HEADER_KEYS = frozenset({"id", "timestamp", "instructions", "git"})

SESSION_PREFIXES = ("<environment_context>", "<user_instructions>", "# agents.md instructions", "<instructions>")
"""User messages Codex injects itself; a compaction does not carry them over
as user messages (``collect_user_messages`` filters them out)."""
COMPACT_USER_MESSAGE_MAX_CHARS = 80_000
"""Codex keeps the newest user messages up to 20,000 of its approximate tokens
(4 bytes each) when it compacts without a replacement history."""
NO_SUMMARY = "(no summary available)"


def _instructions(meta: dict[str, Any]) -> str:
    base = meta.get("base_instructions")
    if isinstance(base, dict) and isinstance(base.get("text"), str):
        return str(base["text"])
    if isinstance(base, str):
        return base
    return meta["instructions"] if isinstance(meta.get("instructions"), str) else ""


def _dynamic_tools(meta: dict[str, Any]) -> list[ToolDef]:
    """Tools the session declared itself (MCP, dynamic); Codex's built-in tools are not recorded."""
    tools = []
    for spec in meta.get("dynamic_tools") or ():
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            continue
        schema: Any = next((spec[k] for k in ("input_schema", "inputSchema", "parameters") if k in spec), {})
        fn = {"name": spec["name"], "description": str(spec.get("description", "")), "parameters": schema}
        tools.append(
            ToolDef(fn["name"], fn["description"], dumps(schema), dumps({"type": "function", "function": fn}), "openai")
        )
    return tools


def _is_session_prefix(message: Message) -> bool:
    text = "".join(b.text for b in message.content if isinstance(b, Text)).lstrip().lower()
    return text.startswith(SESSION_PREFIXES)


@dataclass(slots=True)
class _Rollout:
    """The state of one rollout while its lines are read."""

    path: str
    items: ItemReader = field(default_factory=ItemReader)
    system: tuple[Block, ...] = ()
    tools: list[ToolDef] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)
    usage: list[Usage] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    """Where each compaction's live context starts."""
    summaries: set[int] = field(default_factory=set)
    model: str = ""
    meta_seen: bool = False
    instructions_found: bool = False
    token_events: int = 0
    repeats: int = 0
    last_total: Any = None
    mark: int = 0
    """How many messages had begun at the previous ``token_count`` event."""

    def read(self, lineno: int, obj: Any, text: bytes | None = None) -> None:
        """One line's value; ``text`` is the line (for the spelling of unmodelled parts, not kept)."""
        source = Source(self.path, lineno)
        if not isinstance(obj, dict):
            self.kinds["unknown"] += 1
            return
        kind = str_field(obj, "type")
        if "payload" in obj and isinstance(kind, str):
            self._envelope(kind, obj["payload"], source, text)
        elif "record_type" in obj:
            self.kinds[f"record_type/{obj['record_type']}"] += 1
        elif item_type(obj):
            if not self.items.add(obj, source, text):
                self.kinds[f"response_item/{item_type(obj)}"] += 1
        elif not self.meta_seen and {"id", "timestamp"} <= obj.keys():
            self.kinds["session_meta"] += 1
            self._meta(obj)
        else:
            self.kinds["unknown"] += 1

    def _envelope(self, kind: str, payload: Any, source: Source, text: bytes | None = None) -> None:
        if not isinstance(payload, dict):
            self.kinds[kind] += 1
            return
        if kind == "response_item":
            if not self.items.add(payload, source, text, ("payload",)):
                self.kinds[f"response_item/{item_type(payload) or 'unknown'}"] += 1
            return
        if kind == "event_msg":
            self.kinds[f"event_msg/{payload.get('type')}"] += 1
            if payload.get("type") == "token_count":
                self._token_count(payload, source)
            return
        self.kinds[kind] += 1
        if kind == "session_meta":
            self._meta(payload)
        elif kind == "turn_context":
            if isinstance(payload.get("model"), str):
                self.model = payload["model"]
            if isinstance(payload.get("base_instructions"), str) and payload["base_instructions"]:
                # a turn that overrides the instructions: the next request sends these
                self.system = (Text(payload["base_instructions"]),)
                self.instructions_found = True
        elif kind == "compacted":
            self._compacted(payload, source, text)

    def _meta(self, meta: dict[str, Any]) -> None:
        if self.meta_seen:  # a resumed or forked session repeats it: the first one holds
            return
        self.meta_seen = True
        text = _instructions(meta)
        if text:
            self.system = (Text(text),)
            self.instructions_found = True
        self.tools = _dynamic_tools(meta)

    def _token_count(self, payload: dict[str, Any], source: Source) -> None:
        """One measured request. ``last_token_usage`` is the latest request's counts;
        Codex repeats an event with unchanged totals (not a new request), and the
        request measured holds the messages before the newest model reply read since
        the previous event, or all of them (0.58 records a response's items after
        its event, with a repeat event after them; later versions before it)."""
        mark, self.mark = self.mark, self.items.begun
        info = payload.get("info")
        if not isinstance(info, dict):
            return
        self.token_events += 1
        total = info.get("total_token_usage")
        if total is not None and total == self.last_total:
            self.repeats += 1
            return
        self.last_total = total
        last = info.get("last_token_usage")
        if not isinstance(last, dict) or not last.get("input_tokens"):
            return  # after a compaction Codex writes its own estimate here, with input_tokens 0
        begun = self.items.begun
        before = next((i for i in range(begun - 1, mark - 1, -1) if self.items.role_at(i) == "assistant"), begun)
        # OpenAI counts cached tokens inside input_tokens: the part read without the
        # cache is the difference.
        read = int(last.get("input_tokens") or 0)
        cached = min(int(last.get("cached_input_tokens") or 0), read)
        output = int(last.get("output_tokens") or 0)
        self.usage.append(Usage(before, read - cached, 0, cached, source, output))

    def _compacted(self, payload: dict[str, Any], source: Source, line: bytes | None = None) -> None:
        """A compaction restarts the context: the next request holds its replacement
        history, or (without one) the newest user messages and the summary."""
        self.items.close()
        messages = self.items.messages
        previous = self.starts[-1] if self.starts else 0
        start = len(messages)
        self.starts.append(start)
        history = payload.get("replacement_history")
        if isinstance(history, list):
            skipped: Counter[str] = Counter()
            texts = item_texts(line, ("payload", "replacement_history"))
            texts = texts if texts is not None and len(texts) == len(history) else None
            for i, item in enumerate(history):
                own = None if texts is None else texts[i]
                if not isinstance(item, dict) or not self.items.add(item, source, own):
                    skipped[item_type(item) if isinstance(item, dict) else "unknown"] += 1
            self.items.close()
            rest = "".join(f"; {n} {kind} item(s) not modelled" for kind, n in sorted(skipped.items()))
            self.notes.append(
                f"compaction at line {source.line}: the live context starts at message {start}, "
                f"its replacement history ({len(history)} items{rest})"
            )
            return
        kept: list[str] = []
        room = COMPACT_USER_MESSAGE_MAX_CHARS
        for i in range(start - 1, previous - 1, -1):
            m = messages[i]
            if room <= 0:
                break
            if not m.starts_turn or i in self.summaries or _is_session_prefix(m):
                continue
            text = "\n".join(b.text for b in m.content if isinstance(b, Text))
            kept.append(text[:room])
            room -= len(text)
        for text in reversed(kept):
            messages.append(Message("user", (Text(text),), source))
        summary = payload.get("message")
        self.summaries.add(len(messages))
        messages.append(
            Message("user", (Text(summary if isinstance(summary, str) and summary else NO_SUMMARY),), source)
        )
        self.notes.append(
            f"compaction at line {source.line}: the live context starts at message {start}, rebuilt as Codex does: "
            f"{len(kept)} recent user message(s) and the summary as a user message "
            "(the environment context Codex adds again is not reconstructed)"
        )

    def transcript(self, skipped: list[Skipped]) -> Transcript:
        messages = self.items.finish()
        if not messages:
            raise EmptyTranscript(
                Location(self.path), "no messages in this Codex rollout", hint="is the session empty?"
            )
        notes = [
            "system prompt: the instructions the rollout records (session_meta, or a turn_context that overrides them)"
            if self.instructions_found
            else "the rollout does not record the instructions (system prompt) Codex sent: not counted",
            "Codex's built-in tool definitions are not recorded in rollouts: not counted",
        ]
        if self.items.reasoning_items:
            notes.append(
                f"{self.items.reasoning_items} reasoning item(s): their summaries count as thinking; encrypted "
                "reasoning is not readable and is not counted (a Chat Completions body does not carry it)"
            )
        if self.token_events:
            notes.append(
                f"{self.token_events} token_count event(s) with counts, {len(self.usage)} distinct request(s) "
                f"measured ({self.repeats} repeat(s) of the previous totals)"
            )
        return Transcript(
            system=self.system,
            tools=tuple(self.tools),
            messages=tuple(messages),
            source=Source(self.path),
            format="codex",
            dialect="openai",
            skipped=tuple(skipped),
            extra=dumps({"model": self.model}) if self.model else "",
            defects=tuple(defects_of(messages, self.starts, self.items.call_lines)),
            usage=tuple(self.usage),
            line_kinds=tuple(sorted(self.kinds.items())),
            notes=tuple(notes + self.notes),
            context_start=self.starts[-1] if self.starts else 0,
        )


@dataclass(slots=True)
class _Tail:
    """Remembers the last line read, to tell a cut-off last line from a broken one."""

    lines: int = 0
    ends_with_newline: bool = True

    def follow(self, lines: Iterator[bytes]) -> Iterator[bytes]:
        for raw in lines:
            self.lines += 1
            self.ends_with_newline = raw.endswith(b"\n")
            yield raw


def line_defects(skipped: list[Skipped], tail: _Tail) -> list[Defect]:
    """Each skipped line as a defect: a comment, a line that is not JSON, or a
    last line cut off (a file still being written)."""
    defects = []
    for s in skipped:
        if s.reason == "comment line":
            kind = "comment-line"
        elif s.source.line == tail.lines and not tail.ends_with_newline:
            kind = "truncated-line"
        else:
            kind = "unparseable-line"
        defects.append(Defect(s.source, kind, s.reason))
    return defects


def load(source: Input, *, skip_invalid: bool) -> tuple[Transcript, ...]:
    reader = LineReader(source.path, skip_invalid)
    rollout = _Rollout(source.path)
    tail = _Tail()
    for lineno, obj, text in reader.entries(tail.follow(source.lines())):
        try:
            rollout.read(lineno, obj, text)
        except UnknownShape as exc:
            if not skip_invalid:
                raise
            reader.skipped.append(Skipped(Source(source.path, lineno), exc.message))
    transcript = rollout.transcript(reader.skipped)
    found = line_defects(reader.skipped, tail)
    return (replace(transcript, defects=tuple(sorted((*found, *transcript.defects), key=_where))),)


def _where(defect: Defect) -> int:
    return defect.source.line or 0


_ENVELOPE = re.compile(
    rb'\{\s*"timestamp"\s*:\s*"[^"]*"\s*,\s*"type"\s*:\s*"(?:session_meta|response_item|compacted|turn_context|event_msg)"'
)
_LEGACY = re.compile(rb'\{\s*"id"\s*:\s*"[^"]*"\s*,\s*"timestamp"\s*:\s*"[^"]*"\s*[,}]')


def _lines(head: bytes) -> Iterator[bytes]:
    for line in head.splitlines():
        line = line.strip()
        if line and not line.startswith(b"//"):
            yield line


def sniff(head: bytes) -> bool:
    first = next(_lines(head), b"")
    try:
        obj = loads_or_lenient(first)
    except orjson.JSONDecodeError:  # a first line longer than the head (long instructions)
        return bool(_ENVELOPE.match(first) or _LEGACY.match(first))
    if not isinstance(obj, dict):
        return False
    if isinstance(obj.get("type"), str) and obj["type"] in ENVELOPE_TYPES and "payload" in obj:
        return True
    return {"id", "timestamp"} <= obj.keys() and obj.keys() <= LEGACY_HEADER_KEYS


FORMAT = Format(
    name="codex",
    description="Codex CLI rollout (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl), current and legacy layouts",
    sniff=sniff,
    load=load,
    records_system=False,
)
