"""Audit an estimator: compare its text estimate with real tokenizers (per
block, per script class, per kind of content) and with what the provider
counted, and give a verdict. The samples an audit gathers are what
``fitting.suggest`` fits constants to; ``fitting.content`` classifies the text.

What is compared, block by block: the characters the estimator counts, as
text, and the tokenizer's count of the same text. Text and thinking blocks:
their text. A tool call: its name and its compact input JSON (counted as two
texts). A tool result: each text inside it. An unmodelled block: its JSON with
base64 payloads cut out. Images and other binary payloads are left out on both
sides, and so are the structural overheads: the estimate is the estimator's
text tokens only, each block rounded up on its own. The system prompt and the
tool definitions (name, description, schema) count as two more "messages".
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Generic, TypeVar

from ._frozen import frozen
from .content import (
    CONTENT_KINDS,
    SCRIPT_CLASSES,
    ContentKind,
    ScriptClass,
    block_texts,
    classify_content,
    dominant_class,
)
from .estimate import ZERO, CharCounts, Estimator
from .report import UsageRow, build_report, usage_rows
from .suggest import Sample, growth_samples, plausible, usage_growth_samples
from .tokenizers import Tokenizer, count_texts
from .transcript import Image, Message, Transcript, block_kind

TOP = 10
"""How many of the worst blocks, messages and provider points to keep."""
R = TypeVar("R")


# --------------------------------------------------------------------------
# The audit's values


@frozen
class BlockAudit:
    """One block's text: the estimate next to a tokenizer's count."""

    message_index: int | None
    """None for the system prompt and the tool definitions."""
    block_index: int
    """Index in its message (or in the system prompt, or of the tool definition)."""
    kind: str
    """``text``, ``thinking``, ``tool_call``, ``tool_result``, ``other`` or ``tool_definition``."""
    line: int | None
    counts: CharCounts
    script: ScriptClass
    content: ContentKind
    estimate: int
    """The estimator's text tokens for this block alone, rounded up; no overheads."""
    real: int

    @property
    def shortfall(self) -> int:
        """How many tokens the estimate is short of the real count (negative: over)."""
        return self.real - self.estimate

    @property
    def ratio(self) -> float | None:
        return self.estimate / self.real if self.real else None


@frozen
class MessageAudit:
    """One message's text (all its blocks), estimated once like the estimator does."""

    index: int | None
    role: str
    """The message's role; ``system`` for the system prompt, ``tool definitions`` for those."""
    line: int | None
    counts: CharCounts
    estimate: int
    real: int

    @property
    def shortfall(self) -> int:
        return self.real - self.estimate

    @property
    def ratio(self) -> float | None:
        return self.estimate / self.real if self.real else None

    @property
    def label(self) -> str:
        """``message 3``, ``system prompt`` or ``tool definitions``."""
        if self.index is None:
            return "system prompt" if self.role == "system" else self.role
        return f"message {self.index}"

    def where(self, path: str) -> str:
        """``message 3 (file.jsonl:4)``, or the label alone when the line is unknown."""
        return f"{self.label} ({path}:{self.line})" if self.line else self.label


@frozen
class RatioRow:
    """Blocks of one script class or one kind of content, summed."""

    group: str
    blocks: int
    chars: int
    estimate: int
    real: int
    under: int
    """How many of these blocks are under-estimated."""

    @property
    def ratio(self) -> float | None:
        """Estimate over real: below 1 means the estimate is too low."""
        return self.estimate / self.real if self.real else None


@frozen
class AuditTotals:
    """What a tokenizer's audit sums over every message and block, kept beside the rows (or, for a streamed
    audit, instead of them: a file of a million messages holds no million rows)."""

    messages: int
    blocks: int
    estimate: int
    real: int
    messages_under: int
    blocks_under: int
    worst: MessageAudit | None = None
    """The first message of the largest shortfall, if any is under-estimated (the verdict names it)."""


@frozen
class TokenizerAudit:
    """An estimator against one tokenizer on one transcript."""

    tokenizer: str
    source: str
    messages: tuple[MessageAudit, ...]
    blocks: tuple[BlockAudit, ...]
    by_script: tuple[RatioRow, ...]
    by_content: tuple[RatioRow, ...]
    worst_blocks: tuple[BlockAudit, ...]
    """Under-estimated blocks, the largest shortfall first."""
    worst_messages: tuple[MessageAudit, ...]
    """Under-estimated messages, the largest shortfall first."""
    totals: AuditTotals | None = None
    """The sums over every row; None to sum ``messages`` and ``blocks``. A streamed audit without
    ``--suggest`` keeps only these (its ``messages`` and ``blocks`` are empty)."""

    @property
    def estimate(self) -> int:
        """The whole transcript's text: the sum of the message estimates."""
        return self.totals.estimate if self.totals else sum(m.estimate for m in self.messages)

    @property
    def real(self) -> int:
        return self.totals.real if self.totals else sum(m.real for m in self.messages)

    @property
    def ratio(self) -> float | None:
        return self.estimate / self.real if self.real else None

    @property
    def message_count(self) -> int:
        return self.totals.messages if self.totals else len(self.messages)

    @property
    def block_count(self) -> int:
        return self.totals.blocks if self.totals else len(self.blocks)

    @property
    def messages_under(self) -> int:
        return self.totals.messages_under if self.totals else sum(1 for m in self.messages if m.shortfall > 0)

    @property
    def blocks_under(self) -> int:
        return self.totals.blocks_under if self.totals else sum(1 for b in self.blocks if b.shortfall > 0)

    @property
    def safe(self) -> bool:
        """No message (nor the system prompt, nor the tool definitions) is
        under-estimated. Then neither is the total, nor any request built from
        these messages, whatever fitting keeps: a sum of estimates that are
        each high enough is high enough."""
        return self.messages_under == 0

    def verdict(self, path: str) -> str:
        """One line: safe or not, and the worst message."""
        if self.safe:
            return f"safe for this transcript with {self.tokenizer}: no message is under-estimated"
        # The first of the largest shortfalls.
        worst = (
            self.totals.worst if self.totals and self.totals.worst else min(self.messages, key=lambda m: -m.shortfall)
        )
        ratio = f" (ratio {worst.ratio:.2f})" if worst.ratio is not None else ""
        return (
            f"NOT safe for this transcript with {self.tokenizer}: {self.messages_under:,} of "
            f"{self.message_count:,} messages under-estimated; the worst, {worst.where(path)}, by "
            f"{worst.shortfall:,} tokens{ratio}"
        )


@frozen
class UsageAudit:
    """The estimate of each request the provider measured, next to its count."""

    points: tuple[UsageRow, ...]
    worst: tuple[UsageRow, ...]
    """The points with the lowest ratio, lowest first."""

    @property
    def ratios(self) -> tuple[float, ...]:
        return tuple(sorted(u.ratio for u in self.points))

    @property
    def min_ratio(self) -> float:
        return self.ratios[0]

    @property
    def median_ratio(self) -> float:
        """The middle ratio (the upper one of the two middle ones for an even count)."""
        return self.ratios[len(self.points) // 2]

    @property
    def max_ratio(self) -> float:
        return self.ratios[-1]

    @property
    def under(self) -> int:
        return sum(1 for u in self.points if u.estimated < u.measured)


@frozen
class TranscriptAudit:
    """One transcript against each tokenizer, and against the provider's counts."""

    path: str
    name: str
    estimator: str
    messages: int
    tokenizers: tuple[TokenizerAudit, ...]
    usage: UsageAudit | None
    usage_samples: tuple[Sample, ...] = ()
    """Growth between consecutive measured requests (see ``usage_growth_samples``)."""
    usage_discarded: int = 0
    """Growth steps left out of ``usage_samples``: more tokens than their text has bytes."""

    @property
    def label(self) -> str:
        return f"{self.path} [{self.name}]" if self.name else self.path

    def locate(self, message: MessageAudit) -> str:
        """``file.jsonl:12 [name] message 3``, or ``file.jsonl system prompt``."""
        at = f"{self.path}:{message.line}" if message.line else self.path
        at += f" [{self.name}]" if self.name else ""
        return f"{at} {message.label}"

    def tokenizer_samples(self) -> tuple[Sample, ...]:
        """Every message with text, once per tokenizer."""
        return tuple(
            Sample(m.counts, m.real, where=f"{self.locate(m)}, {t.tokenizer}")
            for t in self.tokenizers
            for m in t.messages
            if m.counts.total
        )


# --------------------------------------------------------------------------
# Building the audit


_Texts = Iterable[tuple[int, str, tuple[str, ...]]]
"""A message's blocks: index in the message, kind, and the texts the estimator counts."""


def _messages(transcript: Transcript) -> Iterator[tuple[int | None, str, int | None, _Texts]]:
    """Each message's index, role, line and blocks, the system prompt and the tool definitions first."""
    yield from _preamble_items(transcript)
    yield from _message_items(transcript.messages)


def _message_items(messages: Iterable[Message]) -> Iterator[tuple[int | None, str, int | None, _Texts]]:
    for mi, message in enumerate(messages):
        blocks = (
            (bi, block_kind(b), block_texts(b)) for bi, b in enumerate(message.content) if not isinstance(b, Image)
        )
        yield mi, message.role, message.source.line, blocks


def _preamble_items(transcript: Transcript) -> Iterator[tuple[int | None, str, int | None, _Texts]]:
    if transcript.system:
        yield None, "system", None, ((i, block_kind(b), block_texts(b)) for i, b in enumerate(transcript.system))
    if transcript.tools:
        definitions = (
            (i, "tool_definition", (t.name, t.description, t.schema_json)) for i, t in enumerate(transcript.tools)
        )
        yield None, "tool definitions", None, definitions


def audit_tokenizer(
    transcript: Transcript, estimator: Estimator, tokenizer: Tokenizer, *, top: int = TOP
) -> TokenizerAudit:
    """One tokenizer on one transcript (see ``audit_transcript`` for several)."""
    return _audit_tokenizers(transcript, estimator, (tokenizer,), top=top)[0]


def _audit_tokenizers(
    transcript: Transcript, estimator: Estimator, tokenizers: Sequence[Tokenizer], *, top: int
) -> tuple[TokenizerAudit, ...]:
    return _audit_items(_messages(transcript), estimator, tokenizers, top=top)


@dataclass(slots=True)
class _Worst(Generic[R]):
    """The ``top`` rows of largest shortfall, the earlier first among equals (a stable sort's order), kept
    as they come."""

    top: int
    heap: list[tuple[int, int, R]] = field(default_factory=list)
    seen: int = 0

    def add(self, shortfall: int, row: R) -> None:
        self.seen += 1
        if self.top <= 0:
            return
        item = (shortfall, -self.seen, row)
        if len(self.heap) < self.top:
            heapq.heappush(self.heap, item)
        elif item[:2] > self.heap[0][:2]:
            heapq.heapreplace(self.heap, item)

    def rows(self) -> tuple[R, ...]:
        return tuple(row for _, _, row in sorted(self.heap, key=lambda item: (-item[0], -item[1])))


@dataclass(slots=True)
class _Tally:
    """One tokenizer's audit as the rows come: their sums, per group and in all, and the worst ones."""

    top: int
    keep: bool
    messages: list[MessageAudit] = field(default_factory=list)
    blocks: list[BlockAudit] = field(default_factory=list)
    sums: list[int] = field(default_factory=lambda: [0] * 6)
    """Messages, blocks, estimate, real, messages under, blocks under."""
    groups: dict[str, list[int]] = field(default_factory=dict)
    """Per script class and per content kind: blocks, chars, estimate, real, under."""
    worst_blocks: _Worst[BlockAudit] = field(init=False)
    worst_messages: _Worst[MessageAudit] = field(init=False)
    worst: MessageAudit | None = None

    def __post_init__(self) -> None:
        self.worst_blocks = _Worst(self.top)
        self.worst_messages = _Worst(self.top)
        self.groups = {group: [0] * 5 for group in (*SCRIPT_CLASSES, *CONTENT_KINDS)}

    def block(self, row: BlockAudit) -> None:
        if self.keep:
            self.blocks.append(row)
        under = row.shortfall > 0
        self.sums[1] += 1
        self.sums[5] += under
        for group in (row.script, row.content):
            sums = self.groups[group]
            sums[0] += 1
            sums[1] += row.counts.total
            sums[2] += row.estimate
            sums[3] += row.real
            sums[4] += under
        if under:
            self.worst_blocks.add(row.shortfall, row)

    def message(self, row: MessageAudit) -> None:
        if self.keep:
            self.messages.append(row)
        self.sums[0] += 1
        self.sums[2] += row.estimate
        self.sums[3] += row.real
        if row.shortfall > 0:
            self.sums[4] += 1
            self.worst_messages.add(row.shortfall, row)
            if self.worst is None or row.shortfall > self.worst.shortfall:
                self.worst = row

    def rows(self, groups: Sequence[str]) -> tuple[RatioRow, ...]:
        return tuple(RatioRow(group, *self.groups[group]) for group in groups)

    def audit(self, tokenizer: Tokenizer) -> TokenizerAudit:
        source = getattr(tokenizer, "source", "")  # a LoadedTokenizer says where its vocabulary comes from
        return TokenizerAudit(
            tokenizer=tokenizer.name,
            source=source if isinstance(source, str) else "",
            messages=tuple(self.messages),
            blocks=tuple(self.blocks),
            by_script=self.rows(SCRIPT_CLASSES),
            by_content=self.rows(CONTENT_KINDS),
            worst_blocks=self.worst_blocks.rows(),
            worst_messages=self.worst_messages.rows(),
            totals=AuditTotals(
                messages=self.sums[0],
                blocks=self.sums[1],
                estimate=self.sums[2],
                real=self.sums[3],
                messages_under=self.sums[4],
                blocks_under=self.sums[5],
                worst=self.worst,
            ),
        )


def _audit_items(
    items: Iterable[tuple[int | None, str, int | None, _Texts]],
    estimator: Estimator,
    tokenizers: Sequence[Tokenizer],
    *,
    top: int,
    keep_rows: bool = True,
) -> tuple[TokenizerAudit, ...]:
    # One message at a time, every tokenizer on its texts in one batch: what is held grows with the audit's
    # rows (and without ``keep_rows``, not even with them), not with the tokenizations or the texts of the whole
    # transcript (memory, issue 8).
    rule = estimator.rule
    tallies = [_Tally(top, keep_rows) for _ in tokenizers]
    for index, role, line, texts_of in items:
        total = ZERO
        units: list[tuple[int, str, tuple[str, ...], CharCounts]] = []
        for block_index, kind, texts in texts_of:
            counts = ZERO
            for text in texts:
                counts = counts + rule.count(text)
            if counts.total:
                total = total + counts
                units.append((block_index, kind, texts, counts))
        described = [(dominant_class(c), classify_content(max(texts, key=len))) for _, _, texts, c in units]
        flat = [text for _, _, texts, _ in units for text in texts]
        for tally, tokenizer in zip(tallies, tokenizers, strict=True):
            counted = count_texts(tokenizer, flat) if flat else []
            at = real_total = 0
            for (block_index, kind, texts, counts), (script, content) in zip(units, described, strict=True):
                real = sum(counted[at : at + len(texts)])
                at += len(texts)
                real_total += real
                tally.block(
                    BlockAudit(index, block_index, kind, line, counts, script, content, rule.text_tokens(counts), real)
                )
            tally.message(MessageAudit(index, role, line, total, rule.text_tokens(total), real_total))
    return tuple(tally.audit(tokenizer) for tally, tokenizer in zip(tallies, tokenizers, strict=True))


def audit_usage(transcript: Transcript, estimator: Estimator, *, top: int = TOP) -> UsageAudit | None:
    """The estimator against the provider's own counts, where the file has them
    (the rows of ``windowfit report``)."""
    return _usage_audit(build_report(transcript, estimator).usage, top)


def _usage_audit(rows: tuple[UsageRow, ...], top: int) -> UsageAudit | None:
    if not rows:
        return None
    return UsageAudit(rows, tuple(sorted(rows, key=lambda u: (u.ratio, u.before))[:top]))


def audit_transcript(
    transcript: Transcript, estimator: Estimator, tokenizers: Sequence[Tokenizer], *, top: int = TOP
) -> TranscriptAudit:
    """The whole session (every message, compacted or not) against each tokenizer,
    and against the provider's counts where the file has them."""
    growth = usage_growth_samples(transcript, estimator)
    return TranscriptAudit(
        path=transcript.source.path,
        name=transcript.name,
        estimator=estimator.rule.name,
        messages=len(transcript.messages),
        tokenizers=_audit_tokenizers(transcript, estimator, tokenizers, top=top),
        usage=audit_usage(transcript, estimator, top=top),
        usage_samples=tuple(s for s in growth if plausible(s)),
        usage_discarded=sum(1 for s in growth if not plausible(s)),
    )


def audit_messages(
    messages: Iterator[Message],
    header: Callable[[], Transcript],
    estimator: Estimator,
    tokenizers: Sequence[Tokenizer],
    *,
    top: int = TOP,
    keep_rows: bool = True,
) -> TranscriptAudit:
    """``audit_transcript`` of a transcript without measured usage (the messages format) whose messages come
    one at a time and are dropped once counted; ``header()`` gives it without its messages once the first
    message is read (a stream puts leading system messages into its system prompt until then). Without
    ``keep_rows`` each tokenizer's audit keeps its sums and worst rows, not a row per message and block (what
    the output shows, but not the samples ``--suggest`` fits)."""
    first = next(messages, None)
    head = header()
    if head.usage:
        raise ValueError("a streamed audit is for a transcript without usage")
    seen = [0]

    def counted() -> Iterator[Message]:
        for message in chain(() if first is None else (first,), messages):
            seen[0] += 1
            yield message

    items = chain(_preamble_items(head), _message_items(counted()))
    audits = _audit_items(items, estimator, tokenizers, top=top, keep_rows=keep_rows)
    return TranscriptAudit(
        path=head.source.path,
        name=head.name,
        estimator=estimator.rule.name,
        messages=seen[0],
        tokenizers=audits,
        usage=None,
    )


def audit_session(
    header: Transcript,
    messages: Iterable[Message],
    estimator: Estimator,
    tokenizers: Sequence[Tokenizer],
    *,
    top: int = TOP,
    keep_rows: bool = True,
) -> TranscriptAudit:
    """``audit_transcript`` of a session whose messages are not held (``claude_code.SessionStream``):
    ``header`` is the transcript with stand-ins for its messages (their number, usage, compaction and name are
    read, not their blocks) and ``messages`` gives the real ones once, in order, each dropped once counted.
    What the provider's counts are compared with is kept per message (its estimate, not its text). Without
    ``keep_rows``, as ``audit_messages``."""
    estimates: list[tuple[int, CharCounts, int]] = []

    def counted() -> Iterator[Message]:
        for message in messages:
            est = estimator.blocks(message.content)  # ``message`` memoises, and would keep every message
            estimates.append((est.tokens, est.counts, est.fixed_tokens))
            yield message

    items = chain(_preamble_items(header), _message_items(counted()))
    audits = _audit_items(items, estimator, tokenizers, top=top, keep_rows=keep_rows)
    if len(estimates) != len(header.messages):
        raise ValueError(f"{header.label}: {len(estimates)} messages streamed, {len(header.messages)} expected")
    rows = usage_rows(header, [tokens for tokens, _, _ in estimates], estimator.preamble(header.live()))
    growth = growth_samples(header, lambda i: (estimates[i][1], estimates[i][2])) if header.usage else ()
    return TranscriptAudit(
        path=header.source.path,
        name=header.name,
        estimator=estimator.rule.name,
        messages=len(estimates),
        tokenizers=audits,
        usage=_usage_audit(rows, top),
        usage_samples=tuple(s for s in growth if plausible(s)),
        usage_discarded=sum(1 for s in growth if not plausible(s)),
    )
