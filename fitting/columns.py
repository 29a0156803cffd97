"""A columnar conversation: what the fit reads of a transcript of very many small messages, without a
``Message`` object for each (issue 11, item 5: memory at most 3x the file).

A message of plain text (no tool call, no tool result, no text observation) is read by the fit only for its
role and its estimate: ``Columns`` keeps those as machine integers (a byte and an ``array('q')`` slot) and
keeps the ``Message`` only of the messages the fit reads further (calls, results, observations), which are few
in a file of tiny lines. ``plan_columns`` gives the ``Plan`` that ``plan_fit`` gives on the loaded transcript
(``tests/test_columns.py``): the plan runs on a skeleton in which each plain message is a shared stand-in of
its role (no content), with its estimate taken from the column.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from ._frozen import frozen
from .estimate import Estimator, Rule
from .fit import DEFAULTS, FitOptions, Plan, _plan
from .size import Size
from .transcript import Message, Role, Source, Text, ToolCall, ToolResult, Transcript

ROLES: tuple[Role, ...] = ("system", "user", "assistant", "tool")
_CODE: dict[str, int] = {role: i for i, role in enumerate(ROLES)}

PLAIN_SOURCE = Source("<plain message>")
"""The source of every stand-in: a stand-in is told by this very object."""
_STAND_IN: tuple[Message, ...] = tuple(Message(role, (), PLAIN_SOURCE) for role in ROLES)


def is_plain(message: Message) -> bool:
    """Whether the fit reads ``message`` only for its role and estimate: no tool call, tool result or text
    observation in it (stage 1 clears only those; turns and rounds are told by them and by the role)."""
    for block in message.content:
        kind = type(block)
        if kind is ToolCall or kind is ToolResult or (kind is Text and block.observation_of):  # type: ignore[union-attr]
            return False
    return True


@frozen
class Columns:
    """A transcript's messages as columns: each message's role, the estimate of each plain one, in order,
    and the ``Message`` of every other one, by index. ``header`` is the transcript without its messages
    (system prompt, tools, dialect, source): it records no usage and no compaction."""

    header: Transcript
    roles: bytes
    """Each message's role, as its index in ``ROLES``."""
    plain_tokens: array[int]
    """The estimate (under ``rule``) of each plain message, in the order they come."""
    kept: Mapping[int, Message]
    """The messages that are not plain, by index."""
    rule: Rule
    """The estimator's rule the estimates were made with."""
    total: int
    """The sum of every message's estimate."""

    def __len__(self) -> int:
        return len(self.roles)

    def skeleton(self) -> Transcript:
        """The header with every message: the kept ones, and a stand-in of its role for each plain one
        (a tuple of references: 8 B a message)."""
        kept, stand_in = self.kept, _STAND_IN
        messages = tuple(kept[i] if i in kept else stand_in[code] for i, code in enumerate(self.roles))
        return replace(self.header, messages=messages)


def columns_of(messages: Iterable[Message], header: Transcript, estimator: Estimator) -> Columns:
    """``messages`` (read once, none of the plain ones kept) as columns, estimated with ``estimator``;
    ``header`` is the transcript without them."""
    return _build(messages, lambda: header, estimator)


def _build(messages: Iterable[Message], header: Callable[[], Transcript], estimator: Estimator) -> Columns:
    roles = bytearray()
    tokens = array("q")
    kept: dict[int, Message] = {}
    total = 0
    blocks, message_estimate = estimator.blocks, estimator.message
    for i, message in enumerate(messages):
        roles.append(_CODE[message.role])
        if is_plain(message):
            t = blocks(message.content).tokens  # not ``message``: its memo would keep every message
            tokens.append(t)
        else:
            kept[i] = message
            t = message_estimate(message).tokens
        total += t
    head = header()
    if head.messages or head.usage or head.context_start:
        raise ValueError("columns are for a transcript's messages alone, without usage or compaction")
    return Columns(head, bytes(roles), tokens, kept, estimator.rule, total)


def columns_from_stream(messages: Iterable[Message], header: Callable[[], Transcript], estimator: Estimator) -> Columns:
    """``columns_of`` with ``header`` a callable giving the header once ``messages`` is read
    (``MessageStream.header``)."""
    return _build(messages, header, estimator)


def columns_from_transcript(transcript: Transcript, estimator: Estimator) -> Columns:
    """A loaded transcript (without usage or compaction) as columns."""
    return columns_of(transcript.messages, replace(transcript, messages=()), estimator)


def _tokens_of(columns: Columns, estimator: Estimator) -> Callable[[Sequence[Message]], tuple[int, ...]]:
    def tokens_of(messages: Sequence[Message]) -> tuple[int, ...]:
        plain = iter(columns.plain_tokens)
        # A repair never drops or changes a plain message (it has no call or result), so the stand-ins
        # come in the order of the column; every other message (kept, repaired, synthetic) is estimated.
        return tuple(next(plain) if m.source is PLAIN_SOURCE else estimator.message(m).tokens for m in messages)

    return tokens_of


def plan_columns(
    columns: Columns,
    *,
    budget: int,
    estimator: Estimator,
    size: Size | None = None,
    batch_size: int = DEFAULTS.batch_size,
    protected_fraction: float = DEFAULTS.protected_fraction,
    min_clear_ratio: float = DEFAULTS.min_clear_ratio,
    add_notice: bool = DEFAULTS.add_notice,
    page_tokens: int | None = DEFAULTS.page_tokens,
    batch_tokens: int | None = DEFAULTS.batch_tokens,
    cut_step: int | None = DEFAULTS.cut_step,
    skeleton: Transcript | None = None,
) -> Plan:
    """``plan_fit`` of the transcript ``columns`` holds: the same ``Plan``. ``estimator`` must have the rule
    the columns were estimated with; ``size`` must not be anchored (the columns record no usage). No
    carried cut: its refusal names the line of a message, which a plain message here does not keep.
    ``skeleton`` is ``columns.skeleton()`` where the caller holds it already (it is 8 B a message)."""
    if estimator.rule != columns.rule:
        raise ValueError("the columns were estimated with another rule")
    if size is not None and size.anchored:
        raise ValueError("columns record no usage: a size anchored on it is not theirs")
    options = FitOptions(
        budget, batch_size, protected_fraction, min_clear_ratio, add_notice, page_tokens, batch_tokens, cut_step
    )
    tokens_of = _tokens_of(columns, estimator)
    return _plan(columns.skeleton() if skeleton is None else skeleton, options, estimator, size, tokens_of)
