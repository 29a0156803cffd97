"""The predicted size of the next request (SPEC section 2, "measured beats
estimated"): the last request the provider measured, plus its reply, plus an
estimate of only what came after; and the hidden preamble (system prompt and
tool definitions) that a file does not record, inferred from the first
measured request."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction
from itertools import pairwise
from typing import Literal, TypeAlias

from ._frozen import frozen
from .errors import OptionError
from .estimate import Estimator, ScriptRule
from .transcript import Block, Message, Text, Thinking, ToolCall, ToolResult, Transcript, Usage

SizeMode: TypeAlias = Literal["auto", "estimate"]
SizeSource: TypeAlias = Literal["anchored", "estimate"]
PreambleSource: TypeAlias = Literal["recorded", "inferred", "given", "none"]
SIZE_MODES: tuple[SizeMode, ...] = ("auto", "estimate")

FLOOR_RULE = ScriptRule(
    name="floor",
    ascii_chars_per_token=Fraction(6),
    cjk_chars_per_token=Fraction(3, 2),
    other_chars_per_token=Fraction(4),
    message_overhead_tokens=0,
    block_overhead_tokens=0,
    tool_def_overhead_tokens=0,
    image_tokens_unknown=0,
)
"""A lower bound on what text costs, for what ``fit`` removes from an anchored
size. On every tool result of 400+ characters in the shared corpus, cl100k and
the legacy Claude tokenizer spend at most 5.5 ASCII characters per token (median
2.7), so 6 ASCII, 1.5 CJK and 4 other characters per token stay below them
(``python benchmarks/accuracy.py --floor`` checks it). Overheads are left out: a
cleared block keeps its own."""


GROWTH_PAIRS = 3
"""``growth_scale`` needs this many usable pairs of consecutive measured requests."""
GROWTH_MIN_TOKENS = 100
"""A pair whose messages are estimated at fewer tokens than this says too little."""
SCALE_LIMITS = (Fraction(1), Fraction(3))
"""``growth_scale`` stays within these: never below the estimate (erring low is the
unsafe side), and not past what any tokenizer we measured spends over the seed rule."""


def growth_scale(measured: Sequence[tuple[int, int]], tokens: Sequence[int]) -> Fraction:
    """The provider's tokens per estimated token on this session, fitted from its
    own measured growth: for each pair of consecutive measured requests
    (``(before, total)`` in the order measured, ``tokens`` each message's
    estimate), what the provider counted more against the estimate of the
    messages added between them. The median of those ratios weighted by the
    estimate, so that a few odd pairs do not move it; pairs that shrank (a
    compaction, dropped thinking) or added under ``GROWTH_MIN_TOKENS`` are left
    out. 1 with fewer than ``GROWTH_PAIRS`` pairs; within ``SCALE_LIMITS``. The
    growth holds what the harness adds to messages without writing it down
    (reminders, line numbers), so it can exceed the tokenizer's own ratio."""
    n = len(tokens)
    cumulative = [0]
    for estimate in tokens:
        cumulative.append(cumulative[-1] + estimate)
    points = [(before, total) for before, total in measured if 0 < before <= n]
    pairs = []
    for (a, total_a), (b, total_b) in pairwise(points):
        estimated, grown = cumulative[b] - cumulative[a], total_b - total_a
        if b > a and grown > 0 and estimated >= GROWTH_MIN_TOKENS:
            pairs.append((Fraction(grown, estimated), estimated))
    if len(pairs) < GROWTH_PAIRS:
        return Fraction(1)
    pairs.sort()
    half, weight = sum(w for _, w in pairs), 0
    for ratio, w in pairs:
        weight += w
        if 2 * weight >= half:
            return min(max(ratio, SCALE_LIMITS[0]), SCALE_LIMITS[1])
    raise AssertionError("unreachable: the weights sum to half")


def scaled(tokens: int, scale: Fraction) -> int:
    """``ceil(tokens * scale)``."""
    return -(-tokens * scale.numerator // scale.denominator)


@frozen
class Size:
    """The predicted size of the next request, part by part.

    Anchored: ``measured_tokens + reply_tokens + estimated_tokens``, where the
    measured request already holds the preamble. Estimate: ``preamble_tokens +
    estimated_tokens``."""

    tokens: int
    source: SizeSource
    preamble_tokens: int
    preamble_source: PreambleSource
    preamble_line: int | None = None
    """The line of the usage the preamble was inferred from."""
    preamble_recorded: int = 0
    """The estimate of the part of the preamble the file records (Codex writes the
    instructions but not the tools)."""
    measured_tokens: int = 0
    """The last measured request (the anchor); 0 when not anchored."""
    anchor_line: int | None = None
    anchor_messages: int = 0
    """The anchor request held this many messages of the live context."""
    reply_tokens: int = 0
    """The anchor's reply: its recorded output tokens, or its estimate if larger."""
    estimated_tokens: int = 0
    """The estimate of the messages the measurement does not cover (all of them
    when not anchored); when anchored, times ``estimate_scale``."""
    estimate_scale: Fraction = Fraction(1)
    """``growth_scale`` of the session, applied to ``estimated_tokens`` when anchored."""
    compacted_tokens: int = 0
    """Anchored on a compaction: the live context's size as the compaction recorded
    it, which ``measured_tokens`` adds to the preamble (``Transcript.compacted_tokens``)."""

    @property
    def anchored(self) -> bool:
        return self.source == "anchored"

    def describe(self) -> str:
        """One line that says which parts are measured, inferred or estimated."""
        if self.anchored:
            line = f" at line {self.anchor_line}" if self.anchor_line is not None else ""
            parts = [f"measured {self.measured_tokens:,}{line}"]
            if self.compacted_tokens:
                parts = [
                    f"system prompt and tools {self.preamble_tokens:,} ({self.preamble_source})",
                    f"the compacted context {self.compacted_tokens:,} (recorded by the compaction{line})",
                ]
            if self.reply_tokens:
                parts.append(f"its reply {self.reply_tokens:,}")
            scale = self.estimate_scale
            fitted = f" (×{float(scale):.2f}, this session's measured growth)" if scale != 1 else ""
            parts.append(f"estimated {self.estimated_tokens:,} after it{fitted}")
            return " + ".join(parts)
        preamble = {
            "recorded": f"system prompt and tools {self.preamble_tokens:,} (estimated)",
            "inferred": f"system prompt and tools {self.preamble_tokens:,} (inferred)",
            "given": f"system prompt and tools {self.preamble_tokens:,} (given)",
            "none": "",
        }[self.preamble_source]
        messages = f"messages {self.estimated_tokens:,} (estimated)"
        return f"{preamble} + {messages}" if preamble else messages

    def preamble_text(self) -> str:
        """The preamble in words, e.g. for ``report``."""
        if self.preamble_source == "inferred":
            at = f" at line {self.preamble_line}" if self.preamble_line is not None else ""
            where = (
                f"only {self.preamble_recorded:,} of them in the file" if self.preamble_recorded else "not in the file"
            )
            return f"system prompt and tools, {where}: ≈{self.preamble_tokens:,} tokens, inferred from usage{at}"
        if self.preamble_source == "given":
            return f"system prompt and tools, not in the file: {self.preamble_tokens:,} tokens, given with --preamble"
        if self.preamble_source == "recorded":
            return f"system prompt and tools, in the file: {self.preamble_tokens:,} tokens (estimated)"
        return "system prompt and tools: none in the file and no usage to infer them from (give --preamble N)"


def first_measured(session: Transcript) -> Usage | None:
    """The first usage that covers at least one message of the file."""
    return next((u for u in session.usage if 0 < u.before <= len(session.messages)), None)


def infer_preamble(session: Transcript, estimator: Estimator) -> tuple[int, Usage] | None:
    """What the first measured request held beyond its messages: the system
    prompt and tool definitions a harness sends but does not write down."""
    usage = first_measured(session)
    if usage is None:
        return None
    messages = sum(estimator.message(m).tokens for m in session.messages[: usage.before])
    return max(0, usage.total - messages), usage


def reply_tokens(reply: Message, usage: Usage, estimator: Estimator) -> int:
    """What the anchor's reply adds to the next request. Its recorded output
    counts thinking too; the API drops an earlier turn's thinking from later
    requests, but keeping it in errs high, which is the safe side. Some logs
    record only a streaming snapshot of the output count, so the estimate of the
    reply's text is the floor."""
    return max(usage.output_tokens, estimator.message(reply).tokens)


def predict_size(
    session: Transcript,
    estimator: Estimator,
    *,
    mode: SizeMode = "auto",
    preamble: int | None = None,
) -> Size:
    """The size of the next request after ``session``'s live context.

    ``mode="auto"`` anchors on the last measured request of the live context
    when there is one (a compaction starts a new context, so it resets the
    anchor; loaders keep only the usage of the branch they follow);
    ``"estimate"`` forces the pure estimate. ``preamble`` gives the system
    prompt and tools when the file does not record them. Anchored, the estimate
    of what came after the anchor is scaled by the session's own measured
    growth (``growth_scale``)."""
    if mode not in SIZE_MODES:
        raise OptionError(f"unknown size mode {mode!r}; choose {' or '.join(SIZE_MODES)}")
    if preamble is not None and preamble < 0:
        raise OptionError(f"the preamble must not be negative, not {preamble}")
    live = session.live()
    pre_tokens, pre_source, pre_line = _preamble(session, live, estimator, preamble)
    recorded = estimator.preamble(live) if live.system or live.tools else 0
    message_tokens = estimator.message_tokens(live.messages)
    anchor = _anchor(live) if mode == "auto" else None
    if anchor is None and mode == "auto" and session.compacted_tokens and live.messages:
        # Nothing measured since the compaction: its own count of what it left (the summary and what the
        # harness re-attaches, which the file may not record) stands in for the first request's messages.
        estimated = sum(message_tokens[1:])
        measured = pre_tokens + session.compacted_tokens
        return Size(
            measured + estimated,
            "anchored",
            pre_tokens,
            pre_source,
            pre_line,
            recorded,
            measured_tokens=measured,
            anchor_line=session.compacted_line,
            anchor_messages=1,
            estimated_tokens=estimated,
            compacted_tokens=session.compacted_tokens,
        )
    if anchor is None:
        estimated = sum(message_tokens)
        return Size(
            pre_tokens + estimated, "estimate", pre_tokens, pre_source, pre_line, recorded, estimated_tokens=estimated
        )
    n = anchor.before
    reply = reply_tokens(live.messages[n], anchor, estimator) if n < len(live.messages) else 0
    scale = growth_scale([(u.before, u.total) for u in live.usage], message_tokens)
    estimated = scaled(sum(message_tokens[n + 1 :]), scale)
    return Size(
        anchor.total + reply + estimated,
        "anchored",
        pre_tokens,
        pre_source,
        pre_line,
        recorded,
        measured_tokens=anchor.total,
        anchor_line=anchor.source.line,
        anchor_messages=n,
        reply_tokens=reply,
        estimated_tokens=estimated,
        estimate_scale=scale,
    )


def _preamble(
    session: Transcript, live: Transcript, estimator: Estimator, given: int | None
) -> tuple[int, PreambleSource, int | None]:
    if given is not None:
        return given, "given", None
    recorded = estimator.preamble(live) if live.system or live.tools else 0
    inferred = infer_preamble(session if session.preamble_of is None else session.preamble_of, estimator)
    # A file may record part of the preamble (Codex writes the instructions, not
    # the tools): the measured request says how much there really is.
    if inferred is not None and inferred[0] > recorded:
        # Inferred in another file (a compaction agent's session), the line is not this file's.
        return inferred[0], "inferred", inferred[1].source.line if session.preamble_of is None else None
    if live.system or live.tools:
        return recorded, "recorded", None
    return 0, "none", None


def _anchor(live: Transcript) -> Usage | None:
    """The last measured request whose messages are all in the live context and
    whose reply (if the file has it) is an assistant message."""
    for usage in reversed(live.usage):
        if usage.before > len(live.messages) or usage.before < 1:
            continue
        if usage.before == len(live.messages) or live.messages[usage.before].role == "assistant":
            return usage
    return None


def cut(session: Transcript, stop: int) -> Transcript:
    """The session as it stood before message ``stop`` was written: its first
    ``stop`` messages and only the usage measured before then (a request that
    held at most ``stop - 1`` messages; the request of exactly ``stop`` messages
    is the one being predicted)."""
    if not 0 <= stop <= len(session.messages):
        raise ValueError(f"cannot cut {len(session.messages)} messages at {stop}")
    usage = tuple(u for u in session.usage if u.before < stop)
    if session.context_start < stop:
        return replace(session, messages=session.messages[:stop], usage=usage)
    return replace(
        session, messages=session.messages[:stop], usage=usage, context_start=0, compacted_tokens=0, compacted_line=None
    )


def floor_tokens(blocks: tuple[Block, ...], floor: Estimator) -> int:
    """A lower bound on the tokens of the text in ``blocks`` (no overheads)."""
    total = 0
    for block in blocks:
        if isinstance(block, ToolResult):
            total += floor_tokens(block.content, floor)
        elif isinstance(block, (Text, Thinking, ToolCall)):
            total += floor.block(block)
    return total


def ceiling_tokens(text: str) -> int:
    """An upper bound on the tokens of ``text``: its UTF-8 bytes (a byte-level
    tokenizer never spends more than one token per byte)."""
    return len(text.encode("utf-8", "surrogatepass"))


@frozen
class Backtest:
    """One measured request, predicted from the session cut just before it."""

    messages: int
    """The request held this many messages of the session."""
    line: int | None
    predicted: Size
    measured: int

    @property
    def ratio(self) -> float:
        return self.predicted.tokens / self.measured if self.measured else float("inf")


def backtest(
    session: Transcript, estimator: Estimator, *, mode: SizeMode = "auto", preamble: int | None = None
) -> tuple[Backtest, ...]:
    """Every measured request after the first, predicted as ``report`` would
    from the session cut just before it: only usage measured earlier is seen."""
    first = first_measured(session)
    points = []
    for usage in session.usage:
        if first is None or usage is first or not 0 < usage.before <= len(session.messages):
            continue
        size = predict_size(cut(session, usage.before), estimator, mode=mode, preamble=preamble)
        points.append(Backtest(usage.before, usage.source.line, size, usage.total))
    return tuple(points)
