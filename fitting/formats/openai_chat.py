"""The "openai_chat" format: files holding many OpenAI chat conversations, one
transcript each: a JSON array of conversations (tau-bench results), one object
whose ``traj``/``history``/``conversation`` holds the messages (a SWE-agent
trajectory), or JSON Lines with one conversation per line."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from .._frozen import frozen
from .._json import dumps
from ..errors import EmptyTranscript, Location, UnknownShape
from ..transcript import (
    Block,
    Defect,
    Message,
    Skipped,
    Source,
    Text,
    ToolCall,
    ToolDef,
    ToolResult,
    Transcript,
    Verbatim,
)
from ..validate import check_messages
from ..wire import openai
from ..wire.anthropic import tool_from_json
from ..wire.spelling import ItemTexts, spelled_chat_message, spelled_tools
from . import messages
from ._document import is_document, iter_members, locate_members, locate_spans
from ._jsonl import LineReader
from ._sniff import head_dialect, is_capture, is_openhands_event, scan_head
from .base import Format, Input

NAME = "openai_chat"
CONVERSATION_KEYS = ("messages", "traj", "history", "conversation")
"""Where an object keeps its conversation, in order of preference (SWE-agent
trajectories have ``history``, the messages, and ``trajectory``, per-step logs)."""
REQUEST_KEYS = frozenset(
    {"model", "temperature", "top_p", "max_tokens", "max_completion_tokens", "tool_choice", "parallel_tool_calls"}
)
"""Keys of a conversation object that are request parameters, kept for the output body."""
AGENT_KEYS = frozenset({"agent", "message_type", "thought", "action"})
"""SWE-agent's bookkeeping on each history message: never sent to the model."""


# --------------------------------------------------------------------------
# Sniffing


def sniff(head: bytes) -> bool:
    shape = scan_head(head)
    if shape.opening == "[":
        if shape.item_opening == "[":
            return True  # an array of message arrays
        if shape.item_opening != "{":
            return False
        keys = shape.item_keys
        if "role" in keys:
            return shape.more  # lines that are message arrays (one alone is the messages format's)
        if is_capture(keys, shape.first_line) or is_openhands_event(keys):
            return False
        if "messages" in keys:
            return head_dialect(keys, shape.first_line) == "openai"
        # Items holding a conversation under a key of their own, or with other keys first (tau-bench).
        return any(k in keys for k in CONVERSATION_KEYS[1:]) or (bool(keys) and b'"role"' in head)
    if shape.opening == "{":
        keys = shape.keys
        if any(k in keys for k in CONVERSATION_KEYS[1:]) or (not shape.lines_of_values and "trajectory" in keys):
            return "messages" not in keys
        # Conversations one per line ({"messages": [...]}, fine-tuning data): OpenAI-shaped ones.
        return (
            "messages" in keys
            and shape.lines_of_values
            and not is_capture(keys, shape.first_line)
            and head_dialect(keys, shape.first_line) == "openai"
        )
    return False


# --------------------------------------------------------------------------
# Loading


@dataclass(slots=True)
class _File:
    """What one file's loading collects beside its transcripts."""

    path: str
    skip_invalid: bool
    keep_text: bool = True
    """Whether messages get the file's spelling of what windowfit does not model (``Input.keep_text``)."""
    transcripts: list[Transcript] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def reject(self, source: Source, reason: str) -> None:
        """An item that is not a conversation: an error, or skipped with --skip-invalid."""
        if not self.skip_invalid:
            raise UnknownShape(
                Location(source.path, source.line),
                reason,
                hint="pass --skip-invalid to skip it, or --from to choose another format",
            )
        self.skipped.append(Skipped(source, reason))


def _conversation_key(obj: dict[str, Any]) -> str | None:
    return next((k for k in CONVERSATION_KEYS if isinstance(obj.get(k), list)), None)


Located = Iterator[tuple[int, Any, str | bytes | None, Callable[[], bytes | None] | None]]
"""A conversation's messages: each one's line, value, a text holding it (its own, or its line's) and,
where that text is the line's, how to find its own (for the spelling of what windowfit does not model)."""


def _located_messages(text: str, line: int, key: str | None) -> Located:
    """The messages of a conversation with the line each starts on and its text: ``text`` is
    the conversation's JSON (starting on ``line``), a message array or an
    object holding it under ``key``."""
    start = 0
    if key is not None:
        start = next(offset for k, offset, _ in locate_members(text) if k == key)
    for _, offset, end, value in locate_spans(text, start):
        yield line + text.count("\n", 0, offset), value, text[offset:end], None


def _line_messages(raw: list[Any], line: int, text: bytes | None, key: str | None) -> Located:
    """The messages of a conversation read from one line (``text``): each is looked for in the line,
    and found in it (one walk of the line) only when a part of it is not there as compact JSON."""
    if text is None:
        for value in raw:
            yield line, value, None, None
        return
    items = ItemTexts(text, () if key is None else (key,))
    for i, value in enumerate(raw):
        yield line, value, text, partial(items.get, i)


def _name(item: Any, n: int, line: int) -> str:
    if isinstance(item, dict) and "task_id" in item:
        trial = f" trial {item['trial']}" if "trial" in item else ""
        return f"task {item['task_id']}{trial}"
    return f"conversation {n} (line {line})"


def _clean(obj: dict[str, Any], source: Source, defects: list[Defect], dropped: Counter[str]) -> dict[str, Any]:
    """The message as it is sent: SWE-agent's bookkeeping keys dropped (counted),
    a ``tool_call_ids`` list of several ids cut to the first (a defect)."""
    found = AGENT_KEYS.intersection(obj)
    if found:
        dropped.update(found)
        obj = {k: v for k, v in obj.items() if k not in AGENT_KEYS}
    ids = obj.get("tool_call_ids")
    if obj.get("role") == "tool" and "tool_call_id" not in obj and isinstance(ids, list) and len(ids) > 1:
        defects.append(
            Defect(
                source,
                "several-call-ids",
                f"one tool message answers {len(ids)} calls ({', '.join(map(str, ids))}): "
                "kept as the result of the first; the others have no result",
            )
        )
        obj = {**obj, "tool_call_ids": ids[:1]}
    return obj


def _text_action(obj: dict[str, Any]) -> str:
    """The command an assistant message runs in SWE-agent's text protocol (its
    ``action``, with no ``tool_calls``): its first word, or "" for other messages."""
    action = obj.get("action")
    if obj.get("role") != "assistant" or obj.get("tool_calls") or not isinstance(action, str):
        return ""
    words = action.split()
    return words[0] if words else ""


def _as_observation(message: Message, command: str) -> Message:
    """The user message that answers a text-protocol action: its text is the
    command's output, which stage 1 may clear like a tool result."""
    content = tuple(replace(b, observation_of=command) if isinstance(b, Text) else b for b in message.content)
    return replace(message, content=content)


def _with_own_text(message: Message, text: str | bytes, find: Callable[[], bytes | None] | None) -> Message:
    """``message`` holding its own JSON text as read (``text`` itself, or what ``find`` gives where ``text`` is
    its line's), so that a writer of its dialect can write it as it came while it is unchanged (SPEC section 6,
    invariant 9; ``wire.openai.messages_to_json``)."""
    if find is not None:  # found when a writer asks: a line whose parts are all compact JSON is never walked
        return replace(message, verbatim=Verbatim(_FoundText(find), message.content))
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return replace(message, verbatim=Verbatim(raw, message.content))


@frozen
class _FoundText:
    """A message's text in its line, found (one walk of the line) when it is first read; b"" if not found."""

    find: Callable[[], bytes | None]

    def read(self) -> bytes:
        return self.find() or b""

    def __reduce__(self) -> tuple[type[bytes], tuple[bytes]]:  # travels as its bytes
        return bytes, (self.read(),)


def _unique_call_ids(messages: list[Message], defects: list[Defect]) -> list[Message]:
    """Messages whose reused call ids are renamed ``<id>-dup<k>``, in the call
    and in the result that answers it (the tool message after it): providers
    reject a request that uses one id twice."""
    taken = {c.id for m in messages for c in m.tool_calls}
    seen: set[str] = set()
    renamed: dict[str, list[str]] = {}  # this round's ids as written -> as sent, in call order
    out: list[Message] = []
    for message in messages:
        if message.role == "assistant" and message.tool_calls:
            renamed = {}
            content: list[Block] = []
            for block in message.content:
                if isinstance(block, ToolCall):
                    written = block.id
                    if written in seen:
                        k = 2
                        while f"{written}-dup{k}" in taken:
                            k += 1
                        block = replace(block, id=f"{written}-dup{k}")
                        taken.add(block.id)
                        defects.append(
                            Defect(
                                message.source,
                                "duplicate-call-id",
                                f"tool call id {written} is used again: renamed {block.id} here and in its result",
                            )
                        )
                    seen.add(block.id)
                    renamed.setdefault(written, []).append(block.id)
                content.append(block)
            if any(
                a is not b for a, b in zip(content, message.content, strict=True)
            ):  # an unchanged message keeps its text
                message = replace(message, content=tuple(content))
        elif message.tool_results and renamed:
            content = []
            for block in message.content:
                if isinstance(block, ToolResult) and renamed.get(block.call_id):
                    sent = renamed[block.call_id].pop(0)
                    if sent != block.call_id:
                        block = replace(block, call_id=sent)
                content.append(block)
            if any(a is not b for a, b in zip(content, message.content, strict=True)):
                message = replace(message, content=tuple(content))
        out.append(message)
    return out


def _transcript(
    file: _File,
    located: Located,
    *,
    line: int,
    name: str,
    tools: tuple[ToolDef, ...] = (),
    extra: str = "",
) -> Transcript | None:
    """One conversation's transcript, or None when it holds no message."""
    defects: list[Defect] = []
    dropped: Counter[str] = Counter()
    parsed: list[Message] = []
    action = ""  # the command of the assistant message just read, in SWE-agent's text protocol
    for message_line, obj, text, find in located:
        source = Source(file.path, message_line)
        if not isinstance(obj, dict):
            file.reject(source, "a message must be an object")
            continue
        cleaned = _clean(obj, source, defects, dropped)
        try:
            message = openai.message_from_json(cleaned, source)
        except UnknownShape as exc:
            file.reject(source, exc.message)
            action = ""
            continue
        if text is not None and file.keep_text:
            message = spelled_chat_message(message, text, find=find, ignored=AGENT_KEYS)
        if action and message.role == "user":
            message = _as_observation(message, action)
        if text is not None and file.keep_text and cleaned is obj:
            message = _with_own_text(message, text, find)
        parsed.append(message)
        action = _text_action(obj)
    if not parsed:
        return None
    parsed = _unique_call_ids(parsed, defects)
    t = openai.transcript_from_messages(parsed, tools=tools, source=Source(file.path, line), fmt=NAME, extra=extra)
    leading = [m.exact_json for m in parsed[: len(parsed) - len(t.messages)]]  # now the system prompt
    if leading and all(leading):  # written as read while the fit leaves it alone
        t = replace(t, system_verbatim=Verbatim(tuple(x for x in leading if x), t.system))
    defects.extend(
        Defect(v.source, v.kind, v.detail)
        for v in check_messages(t.messages, "openai")
        if v.kind != "duplicate-call-id"  # renamed above
    )
    notes = []
    if dropped:
        keys = ", ".join(sorted(dropped))
        notes.append(f"SWE-agent bookkeeping keys ({keys}) are never sent to the model: left out")
    defects.sort(key=lambda d: d.source.line or 0)
    return replace(t, name=name, defects=tuple(defects), notes=tuple(notes))


def _add(
    file: _File, item: Any, line: int, text: str | None, *, name: str | None = None, raw_line: bytes | None = None
) -> None:
    """One conversation item: a message array, or an object holding one; ``text`` is its JSON in a
    document, ``raw_line`` the line it is in a JSON Lines file (kept only while it is read)."""
    source = Source(file.path, line)
    n = len(file.transcripts) + 1
    if isinstance(item, list):
        key = None
        raw: list[Any] = item
        tools: tuple[ToolDef, ...] = ()
        extra = ""
    elif isinstance(item, dict) and (key := _conversation_key(item)) is not None:
        raw = item[key]
        where = Location(file.path, line)
        tools = tuple(tool_from_json(t, where) for t in item.get("tools") or ())
        if tools and file.keep_text:
            tools = spelled_tools(tools, text if text is not None else raw_line, ("tools",))
        kept = {k: v for k, v in item.items() if k in REQUEST_KEYS}
        extra = dumps(kept) if kept else ""
    else:
        file.reject(source, f"not a conversation: expected a message array or an object with {_keys_text()}")
        return
    located = (
        _located_messages(text, line, key)
        if text is not None
        else _line_messages(raw, line, raw_line if file.keep_text else None, key)
    )
    t = _transcript(
        file, located, line=line, name=_name(item, n, line) if name is None else name, tools=tools, extra=extra
    )
    if t is None:
        file.kinds["empty conversation"] += 1
        return
    file.transcripts.append(t)


def _keys_text() -> str:
    return " or ".join(f"'{k}'" for k in CONVERSATION_KEYS)


def _usage_note(info: Any) -> str | None:
    """Why the cost or token fields in an ``info`` object are not measured usage."""
    if not isinstance(info, dict):
        return None
    stats = info.get("model_stats")
    if isinstance(stats, dict) and "tokens_sent" in stats:
        return (
            f"info.model_stats counts tokens over all {stats.get('api_calls', '?')} calls "
            f"(tokens_sent {stats.get('tokens_sent')}), not per request: no measured usage attached"
        )
    if "user_cost" in info:
        return "info.user_cost is the simulated user's cost, not the agent's prompt tokens: no measured usage"
    return None


def _load_document(source: Input, file: _File) -> bool:
    """Read a JSON document's conversations into ``file``; False when it is the
    messages format's own (one request body or one message array)."""
    with source.open() as stream:
        members = iter_members(stream, source.path)
        first = next(members, None)
        if first is None:
            raise EmptyTranscript(Location(source.path), "the document is empty")
        if first.key is None:  # an array of conversations
            if isinstance(first.value, dict) and "role" in first.value:
                return False
            note = _usage_note(first.value.get("info") if isinstance(first.value, dict) else None)
            _add(file, first.value, first.line, first.text)
            for member in members:
                _add(file, member.value, member.line, member.text)
        else:  # one object holding one conversation
            found = {m.key: m for m in (first, *members) if m.key is not None}
            key = next((k for k in CONVERSATION_KEYS if k in found and isinstance(found[k].value, list)), None)
            if key is None:
                raise UnknownShape(
                    Location(source.path, first.line),
                    f"no conversation in this object: expected a list under {_keys_text()}",
                    hint="see the README's list of formats, or pass --from",
                )
            if key == "messages":
                return False
            conversation = found[key]
            _add(file, conversation.value, conversation.line, conversation.text, name="")
            note = _usage_note(found["info"].value if "info" in found else None)
            if "trajectory" in found:
                file.notes.append(
                    f"the conversation is '{key}'; 'trajectory' (a log of each step's request) is not read"
                )
    if note:
        file.notes.append(note)
    return True


def _load_lines(source: Input, file: _File) -> None:
    reader = LineReader(source.path, file.skip_invalid)
    for line, value, text in reader.entries(source.lines()):
        _add(file, value, line, None, raw_line=text)
    file.skipped.extend(reader.skipped)


def load(source: Input, *, skip_invalid: bool) -> tuple[Transcript, ...]:
    file = _File(source.path, skip_invalid, source.keep_text)
    if is_document(source):
        if not _load_document(source, file):
            return messages.FORMAT.load(source, skip_invalid=skip_invalid)
    else:
        _load_lines(source, file)
    if not file.transcripts:
        raise EmptyTranscript(
            Location(source.path), "no conversation with messages found", hint="is this the right file?"
        )
    first = file.transcripts[0]
    notes = [*first.notes, *file.notes]
    if not any(t.tools for t in file.transcripts) and any(m.tool_calls for t in file.transcripts for m in t.messages):
        notes.append("the file records no tool definitions: requests also send them, the estimate leaves them out")
    if len(file.transcripts) > 1 and (file.kinds or file.skipped):
        notes.append("skipped items and empty conversations are counted on the file's first transcript")
    file.transcripts[0] = replace(
        first, skipped=tuple(file.skipped), line_kinds=tuple(sorted(file.kinds.items())), notes=tuple(notes)
    )
    return tuple(file.transcripts)


FORMAT = Format(
    name=NAME,
    description="OpenAI chat conversations, many per file: a JSON array of them (tau-bench), "
    "a SWE-agent trajectory's history, or one per line",
    sniff=sniff,
    load=load,
)
