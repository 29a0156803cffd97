"""Claude Code session logs (``~/.claude/projects/<project>/<session>.jsonl``):
one envelope per line, linked by ``parentUuid`` into a tree of messages and
bookkeeping lines. The conversation is the chain that ends at the last message;
sidechains and ``<session>/subagents/`` files are subagent transcripts of their own."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypedDict, cast

import orjson

from .._frozen import frozen
from .._json import (
    MAX_DEPTH,
    bracket_count,
    depth_error,
    dumps,
    extras,
    loads_or_lenient,
    other_block,
    str_field,
    with_input_texts,
)
from ..errors import EmptyTranscript, InvalidJson, InvalidUtf8, Location, UnknownShape
from ..transcript import (
    Block,
    Defect,
    Image,
    Message,
    Other,
    Skipped,
    Source,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Transcript,
    Usage,
)
from ..wire import anthropic
from ..wire.spelling import spelled_blocks
from ._jsonl import BOM, LineReader, _utf8_error
from .base import Format, Input

NAME = "claude_code"
NO_PREAMBLE_NOTE = "Claude Code does not record its system prompt or tools; estimates cover the messages only"
SUBAGENTS_DIR = "subagents"
COMPACTION_AGENT = "acompact"
"""A compaction's own API call is written as a subagent: ``agent-acompact-*.jsonl``, agentId ``acompact-*``."""
_NOT_INFERRED = Transcript((), (), ())
"""``Transcript.preamble_of`` of a compaction agent without its session: nothing to infer the preamble from."""


def compaction_agent(path: str, agent: str) -> bool:
    """A compaction agent's transcript (``agent`` its agentId): its one request holds the conversation it
    summarises, which its file does not record."""
    return agent.startswith(COMPACTION_AGENT) or Path(path).stem.startswith(f"agent-{COMPACTION_AGENT}")


class Envelope(TypedDict, total=False):
    """One line of a session file (the keys windowfit reads; values are checked, not trusted).
    Lines without a uuid (summary, file-history-snapshot, queue-operation) are only counted."""

    type: str
    uuid: str
    parentUuid: str | None
    logicalParentUuid: str
    """Across a ``compact_boundary`` (whose ``parentUuid`` is null): the line before the compaction."""
    isSidechain: bool
    agentId: str
    subtype: str
    message: dict[str, Any]
    """An Anthropic message (``role`` and ``content``); assistant lines add ``id`` and ``usage``."""
    compactMetadata: dict[str, Any]
    """On a ``compact_boundary``: ``trigger``, ``preTokens`` and (newer versions) ``postTokens``, the context
    left after the compaction without system prompt and tools."""


# Unreadable lines (the corpus has lines broken by a redaction tool) still carry their links:
# the envelope starts with parentUuid, and uuid comes after the (possibly cut) message.
_PARENT_RE = re.compile(rb'^\s*\{"parentUuid":(?:null|"([^"]*)")')
_UUID_RE = re.compile(rb'"uuid":"([^"]*)"')
_SIDECHAIN_RE = re.compile(rb'"isSidechain":(true|false)')

# The loader's own records (_Node, _File, _Tree, _Draft, _StandIns, and _Built, a named tuple) are plain
# slotted classes, not dataclasses: detection imports this module to sniff every session, and a dataclass's
# methods took about half a millisecond each to build there (issue 15). Nothing compares or prints them.


class _Node:
    """One line of the parentUuid tree: a message line, a bookkeeping line with a uuid (system, progress, ...),
    or an unreadable line whose links were recovered. ``kind`` is ``user``, ``assistant``, another line type, or
    ``""`` for an unreadable line; ``usage`` the input, cache write, cache read and output tokens; ``model`` the
    model that wrote an assistant message (``<synthetic>`` for Claude Code's own)."""

    __slots__ = (
        "agent_id",
        "blocks",
        "compact",
        "kind",
        "line",
        "message_id",
        "model",
        "parent",
        "post_tokens",
        "sidechain",
        "usage",
        "uuid",
    )

    def __init__(
        self,
        line: int,
        kind: str,
        uuid: str | None,
        parent: str | None,
        sidechain: bool,
        agent_id: str = "",
        message_id: str = "",
        blocks: tuple[Block, ...] = (),
        usage: tuple[int, int, int, int] | None = None,
        compact: bool = False,
        model: str = "",
        post_tokens: int = 0,
    ) -> None:
        self.line = line
        self.kind = kind
        self.uuid = uuid
        self.parent = parent
        self.sidechain = sidechain
        self.agent_id = agent_id
        self.message_id = message_id
        self.blocks = blocks
        self.usage = usage
        self.compact = compact
        self.model = model
        self.post_tokens = post_tokens
        """On a compaction: its ``compactMetadata.postTokens`` (0 when not recorded)."""

    @property
    def is_message(self) -> bool:
        return self.kind in ("user", "assistant")


class _File:
    """What one pass over a session file yields."""

    __slots__ = ("line_kinds", "nodes", "path", "skipped")

    def __init__(self, path: str) -> None:
        self.path = path
        self.nodes: list[_Node] = []
        self.line_kinds: Counter[str] = Counter()
        self.skipped: list[Skipped] = []


# --------------------------------------------------------------------------
# Reading lines


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _shape_error(source: Source, message: str) -> UnknownShape:
    return UnknownShape(
        Location(source.path, source.line),
        message,
        hint="pass --skip-invalid to skip lines windowfit cannot read",
    )


def _message_node(obj: Envelope, kind: str, source: Source, text: bytes | None = None) -> _Node:
    message = obj.get("message")
    if not isinstance(message, dict):
        raise _shape_error(source, f"a {kind} line without a 'message' object")
    raw = message.get("content")
    where = Location(source.path, source.line)
    blocks: tuple[Block, ...]
    if isinstance(raw, str):
        blocks = (Text(raw),) if raw else ()
    elif isinstance(raw, list):
        blocks = spelled_blocks(with_input_texts(tuple(anthropic.block_from_json(b, where) for b in raw), text), text)
    else:
        raise _shape_error(source, "message 'content' must be a string or a list of blocks")
    usage = message.get("usage")
    counts = (
        (
            _int(usage.get("input_tokens")),
            _int(usage.get("cache_creation_input_tokens")),
            _int(usage.get("cache_read_input_tokens")),
            _int(usage.get("output_tokens")),
        )
        if kind == "assistant" and isinstance(usage, dict)
        else None
    )
    uuid = obj.get("uuid")
    message_id = message.get("id")
    return _Node(
        source.line or 0,
        kind,
        uuid if isinstance(uuid, str) else None,
        _str_or_none(obj.get("parentUuid")),
        obj.get("isSidechain") is True,
        _str(obj.get("agentId")),
        message_id if isinstance(message_id, str) and kind == "assistant" else f"line {source.line}",
        blocks,
        counts,
        model=_str(message.get("model")) if kind == "assistant" else "",
    )


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _envelope_node(obj: Envelope, kind: str, line: int) -> _Node | None:
    """A bookkeeping line with a uuid is a node the conversation may pass through."""
    uuid = obj.get("uuid")
    if not isinstance(uuid, str):
        return None
    compact = kind == "system" and obj.get("subtype") == "compact_boundary"
    parent = _str_or_none(obj.get("parentUuid"))
    if parent is None and compact:
        parent = _str_or_none(obj.get("logicalParentUuid"))
    meta = obj.get("compactMetadata") if compact else None
    post = meta.get("postTokens") if isinstance(meta, dict) else None
    return _Node(
        line,
        kind,
        uuid,
        parent,
        obj.get("isSidechain") is True,
        _str(obj.get("agentId")),
        compact=compact,
        post_tokens=post if type(post) is int and post > 0 else 0,
    )


def _recovered_node(raw: bytes, line: int) -> _Node | None:
    """The links of an unreadable line, when its envelope can still be seen."""
    head = _PARENT_RE.match(raw)
    if head is None:
        return None
    uuids = _UUID_RE.findall(raw)
    side = _SIDECHAIN_RE.search(raw)
    return _Node(
        line,
        "",
        uuids[-1].decode("utf-8", "replace") if uuids else None,
        head.group(1).decode("utf-8", "replace") if head.group(1) is not None else None,
        side is not None and side.group(1) == b"true",
    )


def _read_general(source: Input, *, skip_invalid: bool) -> _File:
    """One pass over the lines: a node per linked line, a count per other line type (the general path, which
    ``_read`` must match)."""
    out = _File(source.path)
    reader = LineReader(source.path, skip_invalid)
    unread: dict[int, bytes] = {}
    seen_skipped = 0

    def tap(lines: Iterable[bytes]) -> Iterator[bytes]:
        for number, raw in enumerate(lines, start=1):
            unread[number] = raw
            yield raw

    def recover() -> None:
        nonlocal seen_skipped
        for skipped in reader.skipped[seen_skipped:]:
            raw = unread.get(skipped.source.line or 0)
            if raw is not None and skipped.reason != "comment line":
                node = _recovered_node(raw, skipped.source.line or 0)
                if node is not None:
                    out.nodes.append(node)
        seen_skipped = len(reader.skipped)
        unread.clear()

    for line, value, text in reader.entries(tap(source.lines())):
        recover()
        src = Source(source.path, line)
        if not isinstance(value, dict):
            error = _shape_error(src, "not a Claude Code line: expected a JSON object")
            if not skip_invalid:
                raise error
            reader.skipped.append(Skipped(src, error.message))
            seen_skipped += 1
            continue
        obj = cast(Envelope, value)
        kind = _str(obj.get("type")) or "unknown"
        if kind in ("user", "assistant"):
            try:
                out.nodes.append(_message_node(obj, kind, src, text if source.keep_text else None))
            except UnknownShape as exc:
                if not skip_invalid:
                    raise
                reader.skipped.append(Skipped(src, exc.message))
                seen_skipped += 1
                node = _envelope_node(obj, "", line)  # keep the links through it
                if node is not None:
                    out.nodes.append(node)
            continue
        out.line_kinds[kind] += 1
        node = _envelope_node(obj, kind, line)
        if node is not None:
            out.nodes.append(node)
    recover()
    out.skipped = reader.skipped
    return out


# --------------------------------------------------------------------------
# Reading lines, fast: the same nodes as ``_read_general`` (tests/test_format_claude_code_fast.py checks it on
# the corpus and on generated sessions), with each line parsed once and the blocks Claude Code writes built
# without the general block reader's checks: a line is read straight from the file, and only a line orjson
# refuses as it is (blank, a comment, a byte order mark, NaN, broken) goes the general way.


_TEXT_KEYS = frozenset({"type", "text"})
_TOOL_USE_KEYS = frozenset({"type", "id", "name", "input"})
_TOOL_RESULT_KEYS = frozenset({"type", "tool_use_id", "content", "is_error"})
_THINKING_KEYS = frozenset({"type", "thinking"})


def _block(raw: Any, path: str, line: int) -> Block:
    """``anthropic.block_from_json``, with the shapes Claude Code writes built directly."""
    if type(raw) is dict:
        kind = raw.get("type")
        if kind == "text":
            text = raw.get("text")
            if type(text) is str:
                return Text(text, "" if raw.keys() <= _TEXT_KEYS else extras(raw, _TEXT_KEYS))
        elif kind == "tool_use":
            call_id = raw.get("id")
            name = raw.get("name", "")
            if type(call_id) is str and type(name) is str:
                rest = "" if raw.keys() <= _TOOL_USE_KEYS else extras(raw, _TOOL_USE_KEYS)
                return ToolCall(call_id, name, dumps(raw.get("input", {})), rest)
        elif kind == "tool_result":
            call_id = raw.get("tool_use_id")
            if type(call_id) is str:
                inner = raw.get("content", "")
                content: tuple[Block, ...]
                if type(inner) is str:
                    content = (Text(inner),) if inner else ()
                elif type(inner) is list:
                    content = tuple([_block(b, path, line) for b in inner])
                else:
                    content = (other_block("content", inner),)
                rest = "" if raw.keys() <= _TOOL_RESULT_KEYS else extras(raw, _TOOL_RESULT_KEYS)
                return ToolResult(call_id, content, bool(raw.get("is_error", False)), "", rest)
        elif kind == "thinking":
            text = raw.get("thinking")
            if type(text) is str:
                return Thinking(text, "" if raw.keys() <= _THINKING_KEYS else extras(raw, _THINKING_KEYS))
    return anthropic.block_from_json(raw, Location(path, line))


def _fast_message_node(obj: dict[str, Any], kind: str, path: str, line: int, text: bytes | None) -> _Node:
    """``_message_node`` for one line, from the parsed envelope."""
    message = obj.get("message")
    if type(message) is not dict:
        return _message_node(cast(Envelope, obj), kind, Source(path, line), text)
    raw = message.get("content")
    blocks: tuple[Block, ...]
    if type(raw) is list:
        blocks = tuple([_block(b, path, line) for b in raw])
        if text is not None:
            blocks = spelled_blocks(with_input_texts(blocks, text), text)
    elif type(raw) is str:
        blocks = (Text(raw),) if raw else ()
    else:
        return _message_node(cast(Envelope, obj), kind, Source(path, line), text)
    uuid = obj.get("uuid")
    parent = obj.get("parentUuid")
    agent = obj.get("agentId")
    counts = None
    node_id = f"line {line}"
    model = ""
    if kind == "assistant":  # only a reply records its usage, its message id and its model
        usage = message.get("usage")
        if type(usage) is dict:
            i, w, r, o = (
                usage.get("input_tokens"),
                usage.get("cache_creation_input_tokens"),
                usage.get("cache_read_input_tokens"),
                usage.get("output_tokens"),
            )
            counts = (
                i if type(i) is int else 0,
                w if type(w) is int else 0,
                r if type(r) is int else 0,
                o if type(o) is int else 0,
            )
        message_id = message.get("id")
        if type(message_id) is str:
            node_id = message_id
        recorded = message.get("model")
        if type(recorded) is str:
            model = recorded
    return _Node(  # by position: a slots dataclass's __init__ takes keywords more slowly
        line,
        kind,
        uuid if type(uuid) is str else None,
        parent if type(parent) is str else None,
        obj.get("isSidechain") is True,
        agent if type(agent) is str else "",
        node_id,
        blocks,
        counts,
        False,
        model,
    )


def _entry(reader: LineReader, lineno: int, raw: bytes) -> tuple[Any, bytes] | None:
    """What ``LineReader.entries`` makes of the line ``raw`` (number ``lineno``): its value and JSON text, or
    None when the line is blank or skipped (recorded in ``reader.skipped``); raises as it does."""
    path = reader.path
    line = raw.strip()
    if lineno == 1 and line.startswith(BOM):
        line = line[len(BOM) :].strip()
    if not line:
        return None
    if line.startswith(b"//"):
        reader.skipped.append(Skipped(Source(path, lineno), "comment line"))
        return None
    try:
        value = loads_or_lenient(line)
    except orjson.JSONDecodeError as exc:
        bad = _utf8_error(raw, path, lineno)
        error: InvalidJson | InvalidUtf8 = bad or InvalidJson(
            Location(path, lineno, exc.colno + (len(raw) - len(raw.lstrip()))),
            f"invalid JSON: {exc.msg}",
            hint="pass --skip-invalid to skip lines that are not JSON",
        )
        if not reader.skip_invalid:
            raise error from None
        reader.skipped.append(Skipped(Source(path, lineno), error.message))
        return None
    deep = depth_error(value, Location(path, lineno), line)
    if deep is None:
        return value, line
    if not reader.skip_invalid:
        raise deep
    reader.skipped.append(Skipped(Source(path, lineno), deep.message))
    return None


def _read(source: Input, *, skip_invalid: bool) -> _File:
    """One pass over the lines: a node per linked line, a count per other line type (``_read_general``'s
    result, faster)."""
    path = source.path
    out = _File(path)
    reader = LineReader(path, skip_invalid)
    skipped = reader.skipped
    nodes = out.nodes
    kinds = out.line_kinds
    keep = source.keep_text
    loads = orjson.loads
    with source.open() as f:
        for line, raw in enumerate(f, start=1):
            try:
                value = loads(raw)
            except orjson.JSONDecodeError:
                before = len(skipped)
                entry = _entry(reader, line, raw)
                if entry is None:
                    if len(skipped) > before and skipped[-1].reason != "comment line":
                        node = _recovered_node(raw, line)
                        if node is not None:
                            nodes.append(node)
                    continue
                value, text = entry
            else:
                text = raw.strip() if keep else raw
                if len(raw) > MAX_DEPTH and bracket_count(raw) > MAX_DEPTH:
                    deep = depth_error(value, Location(path, line))
                    if deep is not None:
                        if not skip_invalid:
                            raise deep
                        skipped.append(Skipped(Source(path, line), deep.message))
                        node = _recovered_node(raw, line)
                        if node is not None:
                            nodes.append(node)
                        continue
            if not isinstance(value, dict):
                src = Source(path, line)
                error = _shape_error(src, "not a Claude Code line: expected a JSON object")
                if not skip_invalid:
                    raise error
                skipped.append(Skipped(src, error.message))
                continue
            kind = value.get("type")
            if type(kind) is not str or not kind:
                kind = "unknown"
            if kind == "user" or kind == "assistant":
                try:
                    nodes.append(_fast_message_node(value, kind, path, line, text if keep else None))
                except UnknownShape as exc:
                    if not skip_invalid:
                        raise
                    skipped.append(Skipped(Source(path, line), exc.message))
                    node = _envelope_node(cast(Envelope, value), "", line)  # keep the links through it
                    if node is not None:
                        nodes.append(node)
                continue
            kinds[kind] += 1
            if "uuid" in value:
                node = _envelope_node(cast(Envelope, value), kind, line)
                if node is not None:
                    nodes.append(node)
    out.skipped = skipped
    return out


# --------------------------------------------------------------------------
# The tree of lines


class _Tree:
    """Parent links between the nodes of one file, by index in file order: each node's ``parent`` (-1 for a
    root), whether it was ``guessed`` (the parent uuid is not in the file; the previous node of the same kind
    stands in), and each node's ``children``."""

    __slots__ = ("children", "guessed", "nodes", "parent")

    def __init__(
        self, nodes: list[_Node], parent: list[int], guessed: list[bool], children: dict[int, list[int]]
    ) -> None:
        self.nodes = nodes
        self.parent = parent
        self.guessed = guessed
        self.children = children

    @classmethod
    def build(cls, nodes: list[_Node]) -> _Tree:
        by_uuid: dict[str, int] = {}
        for i, node in enumerate(nodes):
            if node.uuid is not None:
                by_uuid.setdefault(node.uuid, i)
        parent: list[int] = []
        guessed: list[bool] = []
        children: dict[int, list[int]] = {}
        previous = {False: -1, True: -1}
        for i, node in enumerate(nodes):
            p, guess = -1, False
            if node.parent is not None:
                found = by_uuid.get(node.parent, -1)
                if found < 0:
                    p, guess = previous[node.sidechain], True
                elif found != i and nodes[found].sidechain == node.sidechain:
                    p = found  # a sidechain pointing into the main chain starts a subagent
            parent.append(p)
            guessed.append(guess)
            if p >= 0:
                children.setdefault(p, []).append(i)
            previous[node.sidechain] = i
        return cls(nodes, parent, guessed, children)

    def chain(self, leaf: int) -> list[int]:
        """The nodes from ``leaf`` back to its root (cycles cut)."""
        out: list[int] = []
        seen: set[int] = set()
        i = leaf
        while i >= 0 and i not in seen:
            seen.add(i)
            out.append(i)
            i = self.parent[i]
        return out

    def root(self, i: int, memo: dict[int, int]) -> int:
        path: list[int] = []
        seen: set[int] = set()
        while i not in memo and self.parent[i] >= 0 and i not in seen:
            seen.add(i)
            path.append(i)
            i = self.parent[i]
        top = memo.get(i, i)
        for j in path:
            memo[j] = top
        memo[i] = top
        return top

    def message_parent(self, i: int) -> int:
        """The nearest ancestor that is a message line, or -1."""
        seen: set[int] = set()
        p = self.parent[i]
        while p >= 0 and not self.nodes[p].is_message and p not in seen:
            seen.add(p)
            p = self.parent[p]
        return p if p >= 0 and self.nodes[p].is_message else -1


def _belongs(node: _Node, message_ids: set[str], call_ids: set[str]) -> bool:
    """A line off the chain that is part of it: another block of a chained assistant
    message (parallel tool calls chain one after another), or results of chained calls."""
    if node.kind == "assistant":
        return node.message_id in message_ids
    if node.kind == "user" and node.blocks:
        return all(isinstance(b, ToolResult) and b.call_id in call_ids for b in node.blocks)
    return False


def _select(tree: _Tree, leaf: int) -> tuple[list[int], set[int]]:
    """The chain ending at ``leaf``, and every node of the conversation it carries."""
    chain = tree.chain(leaf)
    selected = set(chain)
    nodes = tree.nodes
    message_ids: set[str] = set()
    call_ids: set[str] = set()
    for i in chain:  # one pass for both
        node = nodes[i]
        if node.kind == "assistant":
            message_ids.add(node.message_id)
        for b in node.blocks:
            if isinstance(b, ToolCall):
                call_ids.add(b.id)
    added = True
    while added:  # a result may hang off a call line that is itself added in this round
        added = False
        for i in sorted(selected):
            for c in tree.children.get(i, ()):
                if c not in selected and _belongs(nodes[c], message_ids, call_ids):
                    selected.add(c)
                    added = True
                    if nodes[c].kind == "assistant":
                        call_ids.update(b.id for b in nodes[c].blocks if isinstance(b, ToolCall))
    return chain, selected


# --------------------------------------------------------------------------
# Building one transcript


class _Draft:
    """A message being built from its lines: the results first, then the other blocks."""

    __slots__ = ("blocks", "line", "message_id", "results", "role")

    def __init__(self, role: Literal["user", "assistant"], line: int, message_id: str) -> None:
        self.role = role
        self.line = line
        self.message_id = message_id
        self.results: list[Block] = []
        self.blocks: list[Block] = []

    def message(self, path: str) -> Message:
        return Message(self.role, (*self.results, *self.blocks), Source(path, self.line))


class _Built(NamedTuple):
    messages: tuple[Message, ...]
    usage: tuple[Usage, ...]
    defects: list[Defect]
    context_start: int
    compacted_at: int
    compacted_tokens: int
    empty_lines: int
    unmeasured: int


def _duplicate(path: str, line: int, what: str, call_id: str) -> Defect:
    return Defect(Source(path, line), "duplicate-history", f"{what} {call_id} appears twice; kept the first")


def _first_copies(
    path: str, node: _Node, call_lines: dict[str, int], answered: set[str], defects: list[Defect]
) -> list[Block]:
    """The blocks of ``node`` but the calls and results already seen, each recorded as a defect."""
    blocks: list[Block] = []
    for b in node.blocks:
        t = type(b)
        if t is ToolCall:
            if cast(ToolCall, b).id in call_lines:
                defects.append(_duplicate(path, node.line, "tool call", cast(ToolCall, b).id))
                continue
        elif t is ToolResult and cast(ToolResult, b).call_id in answered:
            defects.append(_duplicate(path, node.line, "tool result for", cast(ToolResult, b).call_id))
            continue
        blocks.append(b)
    return blocks


def reply_line_joins(message_id: str, role: str, last_id: str, results: bool, before_id: str | None) -> int:
    """Which message an assistant line of reply ``message_id`` joins, the last one built being of ``role`` and
    ``last_id`` (holding tool ``results``, for a user message) after an assistant message ``before_id`` (None
    if the message before it is not one): 0 the last (the reply's lines so far), 1 the one before it (the
    reply, whose parallel calls' results Claude Code writes between its lines: the last message holds them),
    -1 neither (a new message). ``_build``'s rule, and the fold's (``ccfold``)."""
    if role == "assistant":
        return 0 if last_id == message_id else -1
    return 1 if results and before_id == message_id else -1


def assistant_messages_from_end(data: bytes, key: bytes, floor: int = 0) -> Iterator[dict[str, Any]]:
    """The ``message`` objects of the assistant lines of ``data`` (whole lines from ``floor`` on) that hold
    ``key`` (a quoted JSON key, such as ``b'"usage"'``), last line first; unreadable lines are passed over. The
    tail readers' one way back through a file (``windows.last_reply_model``, ``ccplan.last_measured``)."""
    at = len(data)
    while (at := data.rfind(key, floor, at)) >= 0:
        start = data.rfind(b"\n", floor, at) + 1 or floor
        end = data.find(b"\n", at)
        raw = data[start : end if end >= 0 else len(data)]
        at = start
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if type(value) is dict and value.get("type") == "assistant" and type(value.get("message")) is dict:
            yield value["message"]


def _build(path: str, nodes: list[_Node], selected: Iterable[int]) -> _Built:
    """Messages from the selected lines in file order: the lines of one reply (message id) merged into one
    assistant message, measured once, at its first line, even where its results are written between its lines;
    consecutive result lines merged into one user message (results first)."""
    drafts: list[_Draft] = []
    usage: list[Usage] = []
    defects: list[Defect] = []
    call_lines: dict[str, int] = {}
    result_lines: dict[tuple[int, str], int] = {}
    answered: set[str] = set()
    measured: dict[str, int] = {}
    """Each reply's measurement: its place in ``usage`` (-1 when it records none), by message id."""
    context_start = compacted_at = compacted_tokens = empty = unmeasured = 0
    for i in sorted(selected):
        node = nodes[i]
        if node.compact:
            context_start, compacted_at, compacted_tokens = len(drafts), node.line, node.post_tokens
            continue
        kind = node.kind
        if kind != "assistant" and kind != "user":
            continue
        # The reader builds the block types themselves (never a subclass), so ``type(b) is`` decides as
        # ``isinstance`` would, for less.
        blocks: tuple[Block, ...] | list[Block] = node.blocks  # the line's own, unless one is a second copy
        for b in node.blocks:
            t = type(b)
            if (t is ToolCall and cast(ToolCall, b).id in call_lines) or (
                t is ToolResult and cast(ToolResult, b).call_id in answered
            ):
                blocks = _first_copies(path, node, call_lines, answered, defects)
                break
        if not blocks:
            empty += 0 if node.blocks else 1
            continue
        last = drafts[-1] if drafts else None
        if node.kind == "assistant":
            before = drafts[-2].message_id if len(drafts) > 1 and drafts[-2].role == "assistant" else None
            joins = (
                -1
                if last is None
                else reply_line_joins(node.message_id, last.role, last.message_id, bool(last.results), before)
            )
            if joins >= 0:
                last = drafts[-1 - joins]
            else:
                if node.message_id not in measured:  # one measurement per reply, at its first line
                    k = -1
                    if node.usage is not None and any(node.usage[:3]):
                        read, write, cached, output = node.usage
                        k = len(usage)
                        usage.append(Usage(len(drafts), read, write, cached, Source(path, node.line), output))
                    elif node.usage is not None:
                        unmeasured += 1
                    measured[node.message_id] = k
                last = _Draft("assistant", node.line, node.message_id)
                drafts.append(last)
            k = measured.get(node.message_id, -1)
            if 0 <= k < len(usage) and node.usage is not None and node.usage[3] > usage[k].output_tokens:
                # A reply split over several lines records the output count as it
                # streamed: the largest (latest) value is the reply's own.
                usage[k] = replace(usage[k], output_tokens=node.usage[3])
            last.blocks.extend(blocks)
            for b in blocks:
                if type(b) is ToolCall:
                    call_lines[b.id] = node.line
            continue
        has_results = False
        for b in blocks:
            if type(b) is ToolResult:
                has_results = True
                break
        if not has_results or last is None or last.role != "user" or not last.results:
            last = _Draft("user", node.line, node.message_id)
            drafts.append(last)
        at = len(drafts) - 1
        for b in blocks:
            if type(b) is ToolResult:
                call_id = b.call_id
                last.results.append(b)
                answered.add(call_id)
                result_lines[(at, call_id)] = node.line
            else:
                last.blocks.append(b)
    messages = tuple(d.message(path) for d in drafts)
    defects.extend(message_defects(path, messages, call_lines, result_lines))
    if context_start >= len(messages):
        context_start = compacted_tokens = 0
    return _Built(messages, tuple(usage), defects, context_start, compacted_at, compacted_tokens, empty, unmeasured)


def message_defects(
    path: str,
    messages: tuple[Message, ...],
    call_lines: dict[str, int],
    result_lines: dict[tuple[int, str], int],
) -> list[Defect]:
    """``check_messages``'s violations in the built messages as defects, each at the line of its call (by id,
    ``call_lines``) or of its result (by message index and call id, ``result_lines``). ``ccfold`` calls it on
    stand-ins for the messages (their calls and results, without text)."""
    from ..validate import check_messages  # the loader's and the tree fold's: detection imports this module

    defects: list[Defect] = []
    for v in check_messages(messages, "anthropic"):
        line = (
            call_lines.get(v.call_id)
            if v.kind in ("unanswered-call", "duplicate-call-id")
            else result_lines.get((v.message_index, v.call_id))
        )
        detail = v.detail.replace("right after it", "in the file") if v.kind == "unanswered-call" else v.detail
        defects.append(Defect(Source(path, line or v.source.line), v.kind, detail))
    return defects


def broken_links(path: str, tree: _Tree, chain: list[int]) -> list[Defect]:
    """A ``broken-link`` defect for each line of the chain whose parent is not in the file."""
    nodes = tree.nodes
    defects: list[Defect] = []
    for i in chain:
        if tree.guessed[i]:
            p = tree.parent[i]
            after = f"continued with line {nodes[p].line}, the line before it" if p >= 0 else "the chain starts here"
            defects.append(
                Defect(
                    Source(path, nodes[i].line),
                    "broken-link",
                    f"parentUuid {nodes[i].parent} is not in the file (its line is unreadable or cut off, "
                    f"the id was redacted, or the file is an excerpt); {after}",
                )
            )
    return defects


def _lines_text(lines: list[int]) -> str:
    return f"line {lines[0]}" if len(lines) == 1 else f"lines {lines[0]}-{lines[-1]}"


def _left_out(path: str, tree: _Tree, members: list[int], selected: set[int], kept_ids: set[str]) -> list[Defect]:
    """One defect per left-out branch: ``duplicate-history`` when it repeats messages
    that are on the chain (same message or call ids), else ``branch``."""
    nodes = tree.nodes
    head_of: dict[int, int] = {}
    for i in members:
        if i in selected:
            continue
        path_: list[int] = []
        j = i
        while True:
            if j in head_of:
                head = head_of[j]
                break
            path_.append(j)
            p = tree.message_parent(j)
            if p < 0 or p in selected or p in path_:
                head = j
                break
            j = p
        for k in path_:
            head_of[k] = head
    groups: dict[int, list[int]] = {}
    for i, head in head_of.items():
        groups.setdefault(head, []).append(i)
    defects: list[Defect] = []
    for head, group in sorted(groups.items(), key=lambda kv: min(kv[1])):
        group.sort()
        lines = [nodes[i].line for i in group]
        ids = {nodes[i].message_id for i in group if nodes[i].kind == "assistant"}
        calls = {b.id for i in group for b in nodes[i].blocks if isinstance(b, ToolCall)}
        fork = tree.parent[head]
        where = f"forks from line {nodes[fork].line}" if fork >= 0 else "starts a tree of its own"
        repeated = (ids | calls) & kept_ids
        if repeated:
            extra = len(calls - kept_ids)
            detail = (
                f"{_lines_text(lines)}: {len(lines)} message line(s) repeat history that is on the chain "
                f"({len(calls & kept_ids)} tool call(s) with the same ids"
                + (f"; {extra} of its tool calls are not in the kept copy" if extra else "")
                + f"); this copy {where} and is left out"
            )
            defects.append(Defect(Source(path, nodes[head].line), "duplicate-history", detail))
        else:
            detail = (
                f"{_lines_text(lines)}: {len(lines)} message line(s) on another branch ({where}) "
                "are not on the chain to the last message; left out"
            )
            defects.append(Defect(Source(path, nodes[head].line), "branch", detail))
    return defects


def _transcript(path: str, tree: _Tree, members: list[int], name: str) -> Transcript | None:
    """The conversation among ``members`` (message node indexes of one group) that ends
    at the last one; None if it has no content."""
    nodes = tree.nodes
    leaf = members[-1]
    chain, selected = _select(tree, leaf)
    built = _build(path, nodes, selected)
    if not built.messages:
        return None
    defects = broken_links(path, tree, chain)
    kept_ids = {nodes[i].message_id for i in selected if nodes[i].kind == "assistant"}
    kept_ids |= {b.id for m in built.messages for b in m.content if isinstance(b, ToolCall)}
    left = _left_out(path, tree, members, selected, kept_ids)
    defects.extend(built.defects)
    defects.extend(left)
    defects.sort(key=lambda d: d.source.line or 0)

    leaf_line = nodes[leaf].line
    notes = [NO_PREAMBLE_NOTE]
    off_chain = sum(1 for i in members if i not in selected)
    if off_chain:
        notes.append(
            f"followed the parentUuid chain that ends at the last message (line {leaf_line}); "
            f"left out {off_chain} message line(s) on {len(left)} other branch(es)"
        )
    else:
        notes.append(
            f"followed the parentUuid chain that ends at the last message (line {leaf_line}); no other branches"
        )
    on_chain = set(chain)
    attached = sum(1 for i in selected if i not in on_chain and nodes[i].is_message)
    if attached:
        notes.append(
            f"took in {attached} line(s) off the chain: parallel tool calls and their results, which point at "
            "the call they follow or answer rather than at the line before them"
        )
    if built.compacted_at:
        recorded = (
            f"; the compaction recorded {built.compacted_tokens:,} tokens left (postTokens), which size the first "
            "request after it"
            if built.compacted_tokens
            else ""
        )
        notes.append(
            f"compacted at line {built.compacted_at}: the live context starts at message {built.context_start} "
            f"(the summary); the session holds {len(built.messages)} messages{recorded}"
        )
    if built.unmeasured:
        notes.append(
            f"{built.unmeasured} assistant message(s) record zero usage (e.g. model <synthetic>): not measured"
        )
    if built.empty_lines:
        notes.append(f"{built.empty_lines} message line(s) with no content left out")
    agent = next((nodes[i].agent_id for i in members if nodes[i].agent_id), "")
    # The session records the model on each reply (not max_tokens, system or tools): a request body gets it.
    model = next(
        (m for m in (nodes[i].model for i in sorted(selected, reverse=True)) if m and not m.startswith("<")), ""
    )  # the last reply's
    return Transcript(
        system=(),
        tools=(),
        messages=built.messages,
        source=Source(path),
        format=NAME,
        dialect="anthropic",
        extra=dumps({"model": model}) if model else "",
        defects=tuple(defects),
        usage=built.usage,
        notes=tuple(notes),
        context_start=built.context_start,
        compacted_tokens=built.compacted_tokens,
        compacted_line=built.compacted_at if built.compacted_tokens else None,
        preamble_of=_NOT_INFERRED if compaction_agent(path, agent) else None,
        name=name,
    )


def _subagent_name(tree: _Tree, members: list[int], number: int, stem: str) -> str:
    agent = next((tree.nodes[i].agent_id for i in members if tree.nodes[i].agent_id), "")
    if agent:
        return f"subagent agent-{agent}"
    if stem.startswith("agent-"):
        return f"subagent {stem}"
    return f"subagent {number}"


def _transcripts(read: _File) -> list[Transcript]:
    """The main conversation (non-sidechain lines), then one transcript per sidechain tree."""
    tree = _Tree.build(read.nodes)
    main: list[int] = []
    side: dict[int, list[int]] = {}
    memo: dict[int, int] = {}
    for i, n in enumerate(tree.nodes):
        if n.kind == "user" or n.kind == "assistant":  # ``is_message``
            if n.sidechain:
                side.setdefault(tree.root(i, memo), []).append(i)
            else:
                main.append(i)
    found: list[Transcript | None] = [_transcript(read.path, tree, main, "")] if main else []
    stem = Path(read.path).stem
    names: Counter[str] = Counter()
    for number, members in enumerate(side.values(), start=1):
        name = _subagent_name(tree, members, number, stem)
        names[name] += 1
        found.append(_transcript(read.path, tree, members, name if names[name] == 1 else f"{name} #{names[name]}"))
    return [t for t in found if t is not None]


# --------------------------------------------------------------------------
# Files


def session_of(path: Path) -> Path:
    """The session file whose loading also loads ``path`` (a ``<session>/subagents/*.jsonl``
    file), or ``path`` itself."""
    if path.parent.name == SUBAGENTS_DIR:
        session_dir = path.parent.parent
        return session_dir.with_name(session_dir.name + ".jsonl")
    return path


def subagent_files(path: str) -> list[Path]:
    """``<session>/subagents/agent-*.jsonl`` next to a session file, sorted."""
    folder = Path(path).with_suffix("") / SUBAGENTS_DIR
    return sorted(p for p in folder.glob("agent-*.jsonl") if p.is_file()) if folder.is_dir() else []


def _load_file(source: Input, *, skip_invalid: bool, read_file: Callable[..., _File] | None = None) -> list[Transcript]:
    """``read_file`` reads the lines (``_read``, or the stream's ``_StandIns``)."""
    read = (read_file or _read)(source, skip_invalid=skip_invalid)
    transcripts = _transcripts(read)
    if not transcripts:
        raise EmptyTranscript(Location(source.path), "no messages found", hint="is this the right file?")
    # Lines that belong to no one conversation are counted once, with the file's first transcript.
    kinds = tuple(sorted(read.line_kinds.items(), key=lambda kv: (-kv[1], kv[0])))
    transcripts[0] = replace(transcripts[0], skipped=tuple(read.skipped), line_kinds=kinds)
    return transcripts


def load(source: Input, *, skip_invalid: bool, read_file: Callable[..., _File] | None = None) -> tuple[Transcript, ...]:
    """The session's transcripts: the main conversation, inline sidechains, and the
    subagent files of a ``<session>/subagents/`` folder next to the file."""
    transcripts = [
        _compaction_preamble(t, None) for t in _load_file(source, skip_invalid=skip_invalid, read_file=read_file)
    ]
    if source.data is not None:
        return tuple(transcripts)
    extra: list[Transcript] = []
    empty: list[str] = []
    for f in subagent_files(source.path):
        try:
            item = Input(str(f), keep_text=source.keep_text)
            found = _load_file(item, skip_invalid=skip_invalid, read_file=read_file)
        except EmptyTranscript:  # a subagent that never got to write a message is no transcript, and no error
            empty.append(f.name)
            continue
        extra.extend(_compaction_preamble(t, transcripts[0]) for t in found)
    notes = list(transcripts[0].notes)
    if extra:
        named = [t if t.name else replace(t, name=f"subagent {Path(t.source.path).stem}") for t in extra]
        names = ", ".join(t.name for t in named)
        notes.append(f"loaded {len(named)} subagent transcript(s) from {SUBAGENTS_DIR}/: {names}")
        transcripts.extend(named)
    if empty:
        notes.append(f"left out {len(empty)} file(s) of {SUBAGENTS_DIR}/ without messages: {', '.join(empty)}")
    transcripts[0] = replace(transcripts[0], notes=tuple(notes))
    return tuple(transcripts)


def _compaction_preamble(t: Transcript, session: Transcript | None) -> Transcript:
    """A compaction agent's transcript with its session's first measured request to infer its preamble from
    (the compaction is sent with the session's system prompt and tools), and a note that says so; any other
    transcript as it is."""
    if t.preamble_of is not _NOT_INFERRED:
        return t
    first = None if session is None else next((u for u in session.usage if 0 < u.before <= len(session.messages)), None)
    held = "a compaction agent: its request holds the conversation it summarises, which this file does not record"
    if session is None or first is None:
        why = "its session is not loaded with it" if session is None else "its session records no usage"
        return replace(t, notes=(*t.notes, f"{held}; so its preamble is not inferred from it ({why})"))
    head = Transcript((), (), session.messages[: first.before], source=session.source, usage=(first,))
    line = first.source.line
    note = f"{held}; its preamble is its session's, inferred from usage at line {line} of {session.source.path}"
    return replace(t, preamble_of=head, notes=(*t.notes, note))


def _looks_like_line(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    kind = str_field(obj, "type")
    if "parentUuid" in obj and "sessionId" in obj:
        return True
    if kind == "summary":
        return "leafUuid" in obj
    if kind == "file-history-snapshot":
        return "messageId" in obj and "snapshot" in obj
    if kind == "queue-operation":
        return "sessionId" in obj and "operation" in obj
    return False


def sniff(head: bytes) -> bool:
    """The first whole line that is JSON looks like a Claude Code envelope."""
    lines = head.split(b"\n")
    complete = lines[:-1] if len(lines) > 1 else lines
    for raw in complete:
        line = raw.strip()
        if not line or line.startswith(b"//"):
            continue
        try:
            return _looks_like_line(loads_or_lenient(line))
        except orjson.JSONDecodeError:
            continue  # a broken line: look at the next one
    # A first line longer than the head: judge by how it starts.
    rest = lines[-1].lstrip()
    return rest.startswith((b'{"parentUuid":', b'{"type":"summary"', b'{"type":"file-history-snapshot"')) and (
        b'"sessionId":"' in rest or b'"leafUuid":"' in rest or b'"snapshot":{' in rest
    )


FORMAT = Format(
    name=NAME,
    description="Claude Code session JSONL (~/.claude/projects/<project>/<session>.jsonl), with subagents",
    sniff=sniff,
    load=load,
    records_system=False,
)


# --------------------------------------------------------------------------
# Streaming: the chain chosen over stand-ins for the blocks, then its messages read again one at a time
# (``audit``: a session's texts are never all held). The first pass reads every line as ``_read`` does, but
# keeps of each message line only stand-ins for its blocks (their kinds and ids: all ``_select``, ``_build``
# and ``_left_out`` look at); ``load`` on those gives the transcripts, defects, usage and notes. The second
# pass re-reads only the lines the chosen messages hold, in file order.


def _line_node(reader: LineReader, kinds: Counter[str], line: int, raw: bytes, keep: bool) -> _Node | None:
    """What ``_read`` makes of line ``line`` (``raw``): its node or None, the line's kind counted in ``kinds``
    and a skip recorded in ``reader``, raising where it raises (tests/test_format_claude_code_stream.py
    compares the two on the corpus and on generated sessions)."""
    path = reader.path
    skip_invalid = reader.skip_invalid
    skipped = reader.skipped
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        before = len(skipped)
        entry = _entry(reader, line, raw)
        if entry is None:
            if len(skipped) > before and skipped[-1].reason != "comment line":
                return _recovered_node(raw, line)
            return None
        value, text = entry
    else:
        text = raw.strip() if keep else raw
        if len(raw) > MAX_DEPTH and bracket_count(raw) > MAX_DEPTH:
            deep = depth_error(value, Location(path, line))
            if deep is not None:
                if not skip_invalid:
                    raise deep
                skipped.append(Skipped(Source(path, line), deep.message))
                return _recovered_node(raw, line)
    if not isinstance(value, dict):
        src = Source(path, line)
        error = _shape_error(src, "not a Claude Code line: expected a JSON object")
        if not skip_invalid:
            raise error
        skipped.append(Skipped(src, error.message))
        return None
    kind = value.get("type")
    if type(kind) is not str or not kind:
        kind = "unknown"
    if kind == "user" or kind == "assistant":
        try:
            return _fast_message_node(value, kind, path, line, text if keep else None)
        except UnknownShape as exc:
            if not skip_invalid:
                raise
            skipped.append(Skipped(Source(path, line), exc.message))
            return _envelope_node(cast(Envelope, value), "", line)  # keep the links through it
    kinds[kind] += 1
    return _envelope_node(cast(Envelope, value), kind, line) if "uuid" in value else None


def _stand_in(block: Block) -> Block:
    """``block`` without its text: the same kind, ids and error flag, the same for every block that has them."""
    if isinstance(block, ToolCall):
        return ToolCall(block.id, block.name, "")
    if isinstance(block, ToolResult):
        return ToolResult(block.call_id, tuple([_stand_in(b) for b in block.content]), block.is_error, block.name)
    if isinstance(block, Text):
        return Text("")
    if isinstance(block, Thinking):
        return Thinking("")
    if isinstance(block, Image):
        return Image(block.media_type, block.byte_size, block.width, block.height)
    return Other(block.kind, "")


_Origin = tuple[Block, int, int]
"""A stand-in (kept, so that its ``id`` is never reused), the line of its block and its place in the line."""


class _StandIns:
    """A reader for ``load`` (``read_file``): ``_read``'s nodes, each message line's blocks replaced by
    stand-ins as soon as it is read, and where each stand-in's block is (by the stand-in's ``id``)."""

    __slots__ = ("origin",)

    def __init__(self) -> None:
        self.origin: dict[int, _Origin] = {}

    def __call__(self, source: Input, *, skip_invalid: bool) -> _File:
        out = _File(source.path)
        reader = LineReader(source.path, skip_invalid)
        origin, nodes, kinds = self.origin, out.nodes, out.line_kinds
        with source.open() as f:
            for line, raw in enumerate(f, start=1):
                node = _line_node(reader, kinds, line, raw, False)
                if node is None:
                    continue
                if node.blocks:
                    stand = tuple([_stand_in(b) for b in node.blocks])
                    for k, b in enumerate(stand):
                        origin[id(b)] = (b, line, k)
                    node.blocks = stand
                nodes.append(node)
        out.skipped = reader.skipped
        return out


class ChangedWhileRead(ValueError):
    """The second pass did not find the blocks the first one read (the file changed in between)."""


@frozen
class SessionStream:
    """One of a session's transcripts, its messages read when ``messages()`` is iterated and not held.
    ``header`` is the transcript ``load`` gives (defects, usage, notes, context start, skipped lines), except
    that its messages hold stand-ins for their blocks (the same kinds, ids and number, no text); ``messages()``
    reads the file again and yields ``load``'s messages in order, each built from its own lines only."""

    header: Transcript
    source: Input
    skip_invalid: bool
    origin: dict[int, _Origin]

    def messages(self) -> Iterator[Message]:
        origin = self.origin
        reader = LineReader(self.source.path, self.skip_invalid)
        kinds: Counter[str] = Counter()
        keep = self.source.keep_text
        # A reply's lines and its results' lines may alternate: a line of a later message read on the way to
        # one of this message's is held until then.
        needed = {origin[id(b)][1] for m in self.header.messages for b in m.content}
        held: dict[int, bytes] = {}
        with self.source.open() as f:
            lines = enumerate(f, start=1)
            for message in self.header.messages:
                wants = [origin[id(b)] for b in message.content]
                got: dict[int, tuple[Block, ...]] = {}
                for number in sorted({line for _, line, _ in wants}):
                    raw = held.pop(number, None)
                    if raw is None:
                        for n, r in lines:  # the lines before it are unread, or held if a later message's
                            if n == number:
                                raw = r
                                break
                            if n in needed:
                                held[n] = r
                    if raw is None:
                        raise ChangedWhileRead(f"{self.source.path}: line {number} is gone")
                    line = number
                    node = _line_node(reader, kinds, line, raw, keep)
                    if node is None or not node.is_message:
                        raise ChangedWhileRead(f"{self.source.path}:{line} is no longer a message line")
                    got[line] = node.blocks
                blocks: list[Block] = []
                for stand, line, k in wants:
                    found = got[line]
                    if k >= len(found) or _stand_in(found[k]) != stand:
                        raise ChangedWhileRead(f"{self.source.path}:{line} holds other blocks than it did")
                    blocks.append(found[k])
                yield Message(message.role, tuple(blocks), message.source, message.extra)


def stream(source: Input, *, skip_invalid: bool) -> tuple[SessionStream, ...]:
    """``load``'s transcripts (subagent files too) as streams of their messages, in the same order. It raises
    what ``load`` raises, except that ``messages()`` raises ``ChangedWhileRead`` where the file changed
    between the passes: a caller falls back to ``load``."""
    stand_ins = _StandIns()
    headers = load(source, skip_invalid=skip_invalid, read_file=stand_ins)

    def input_of(path: str) -> Input:
        return source if path == source.path else Input(path, keep_text=source.keep_text)

    return tuple(SessionStream(h, input_of(h.source.path), skip_invalid, stand_ins.origin) for h in headers)
