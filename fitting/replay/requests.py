"""Request logs for replay: a log of the requests a harness sent (claude-trace,
proxy captures, aider's LLM history) holds one transcript per request, several
conversations interleaved (a main loop, side calls to a small model, title
generation). ``replay_targets`` groups the recorded requests into
conversations, each replayed as the sequence of requests it holds.

The rule: a request continues a conversation when it has the same system
prompt and tool definitions as that conversation's newest request, and that
request's messages are a prefix of its own, with more messages after them.
Messages are compared without their ``cache_control`` marks, which harnesses
move to the newest message at every request. A request that continues none
starts a conversation of its own; where several could be continued, the one
whose newest request holds the most messages (then the most recent) wins."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import orjson

from .._frozen import frozen
from ..formats import format_of
from ..transcript import Block, Message, Text, Thinking, ToolCall, ToolDef, ToolResult, Transcript

Preamble = tuple[tuple[Block, ...], tuple[ToolDef, ...]]
"""A request's system prompt and tool definitions, compared between requests."""


@frozen
class Recorded:
    """One recorded request of a conversation."""

    held: int
    """The request held ``messages[:held]`` of the conversation's transcript."""
    line: int | None
    """Where the request is in its file."""
    index: int
    """Its place among the transcripts given to ``replay_targets``."""


@frozen
class ReplayTarget:
    """What one replay replays: a session (one request per assistant reply) or a
    conversation of recorded requests (each one a step)."""

    transcript: Transcript
    members: tuple[int, ...]
    """The transcripts (by index) it stands for: a session itself, or a conversation's requests in order."""
    requests: tuple[Recorded, ...] = ()
    """The recorded requests, in the order sent; empty for a session."""

    @property
    def recorded(self) -> bool:
        """A conversation of recorded requests, rather than a session."""
        return bool(self.requests)


def is_recorded_request(transcript: Transcript) -> bool:
    """Whether the transcript is one request as sent, from a request log."""
    fmt = format_of(transcript)
    return fmt is not None and fmt.records_requests and transcript.format == fmt.name


def replay_targets(transcripts: Sequence[Transcript]) -> tuple[ReplayTarget, ...]:
    """Every session in ``transcripts`` as itself, and the recorded requests
    grouped into conversations (the module docstring's rule), in the order of
    their first transcript."""
    groups: list[list[int]] = []
    conversations_by_head: dict[tuple[int, int], list[list[int]]] = {}  # (preamble, first message) -> groups
    keys: dict[int, tuple[int, ...]] = {}
    preambles: dict[int, Preamble] = {}
    for i, t in enumerate(transcripts):
        if not is_recorded_request(t) or not t.messages:
            groups.append([-1 - i])  # a session: not grouped
            continue
        keys[i] = tuple(hash(_unmarked(m)) for m in t.messages)
        preambles[i] = _preamble(t)
        head = (hash(preambles[i]), keys[i][0])
        best: list[int] | None = None
        for members in conversations_by_head.get(head, []):
            last = keys[members[-1]]
            extends = len(last) < len(keys[i]) and keys[i][: len(last)] == last
            longer = best is None or len(last) >= len(keys[best[-1]])
            if extends and longer and preambles[members[-1]] == preambles[i]:
                best = members
        if best is not None:
            best.append(i)
            continue
        group = [i]
        conversations_by_head.setdefault(head, []).append(group)
        groups.append(group)
    return tuple(
        ReplayTarget(transcripts[-1 - g[0]], (-1 - g[0],)) if g[0] < 0 else _conversation(transcripts, g)
        for g in groups
    )


def target_of(transcripts: Sequence[Transcript], index: int) -> ReplayTarget:
    """What replaying transcript ``index`` replays: its session, or its
    conversation up to and including that request."""
    for target in replay_targets(transcripts):
        if index in target.members:
            if not target.recorded:
                return target
            return _conversation(transcripts, list(target.members[: target.members.index(index) + 1]))
    raise IndexError(f"no transcript {index}")


def _conversation(transcripts: Sequence[Transcript], members: Sequence[int]) -> ReplayTarget:
    """The conversation of the requests ``members``: the newest one's system
    prompt, tools and messages, with every request's measured usage placed at
    its size (each request's usage is recorded after all of its messages)."""
    newest = transcripts[members[-1]]
    requests = tuple(Recorded(len(transcripts[j].messages), transcripts[j].source.line, j) for j in members)
    if len(members) == 1:
        return ReplayTarget(newest, tuple(members), requests)
    usage = tuple(sorted((u for j in members for u in transcripts[j].usage), key=lambda u: u.before))
    first, last = requests[0], requests[-1]
    where = (
        f"lines {first.line}-{last.line}"
        if first.line is not None and last.line is not None
        else f"{Path(transcripts[members[0]].source.path).name} to {Path(newest.source.path).name}"
    )
    name = f"conversation of {len(members)} recorded requests, {where}"
    return ReplayTarget(replace(newest, usage=usage, name=name), tuple(members), requests)


def _preamble(t: Transcript) -> Preamble:
    """The system prompt and tool definitions, cache marks aside."""
    return tuple(_unmark_block(b) for b in t.system), tuple(replace(d, raw=_strip(d.raw)) for d in t.tools)


def _unmarked(message: Message) -> Message:
    return Message(message.role, tuple(_unmark_block(b) for b in message.content), extra=_strip(message.extra))


def _unmark_block(block: Block) -> Block:
    if isinstance(block, ToolResult):
        return replace(block, content=tuple(_unmark_block(b) for b in block.content), extra=_strip(block.extra))
    if isinstance(block, (Text, Thinking, ToolCall)) and block.extra:
        return replace(block, extra=_strip(block.extra))
    return block


def _strip(extra: str) -> str:
    """A block's or message's extra keys without ``cache_control``."""
    if "cache_control" not in extra:
        return extra
    try:
        value = orjson.loads(extra)
    except orjson.JSONDecodeError:
        return extra
    if isinstance(value, dict):
        value.pop("cache_control", None)
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode() if value else ""
    return extra
