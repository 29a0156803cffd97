"""Fitting a request to a budget (SPEC section 3): plan, then apply.

``plan_fit`` decides, stage by stage, and records every decision in a
``Plan``; ``apply_plan`` builds the fitted transcript from the plan alone.
Stage 1 clears the oldest tool results in fixed batches; stage 2 keeps the
newest whole user turns; stage 3 keeps the newest whole tool rounds of the
last turn. Each runs only when the previous one could not fit the request.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol, TypeAlias

from ._frozen import frozen
from .errors import Location, OptionError
from .estimate import CharCounts, Estimator, ScriptRule, _groups, make_estimator, sum_counts
from .repair import Repair, repair
from .size import FLOOR_RULE, PreambleSource, Size, SizeSource, ceiling_tokens, floor_tokens
from .transcript import (
    Joined,
    Message,
    Round,
    Source,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Transcript,
    Turn,
    Unit,
    Usage,
    iter_units,
    observation_id,
    split_units,
    tool_names,
    turn_bounds,
)

if TYPE_CHECKING:  # a store's types: the store's modules load where a plan uses one (issue 15: check's start-up)
    from .store.base import Entry, ResultStore

Outcome: TypeAlias = Literal["fits", "cleared", "turns-dropped", "rounds-dropped", "too-long"]
MessageFate: TypeAlias = Literal["kept", "head", "cleared", "dropped"]
OUTCOMES: tuple[Outcome, ...] = ("fits", "cleared", "turns-dropped", "rounds-dropped", "too-long")

TRUNCATION_NOTE = (
    "[windowfit] Earlier parts of this conversation were left out to fit the model's context. "
    "The first message is kept above; the newest part of the conversation follows."
)
"""The note inserted after the first message by stages 2 and 3. Its text is
constant, so it costs the same in every request and keeps the prefix stable."""

TOO_LONG_MESSAGE = (
    "This conversation has grown too long for the model to read in one go. "
    "Start a new chat for the next step — everything built so far is kept."
)
"""What the person sees when nothing fits (SPEC section 3)."""

NOTE_SOURCE = Source("<windowfit>")


def retrieval_text(handle: str, pages: int) -> str:
    """How a stub made with a store says to get the result back: by handle,
    page by page, with the fetch tool or the ``windowfit fetch`` command."""
    which = "page 1" if pages == 1 else f"pages 1 to {pages:,}"
    return (
        f"It is kept as {handle} ({pages:,} page{'s' if pages != 1 else ''}): read it back with the windowfit_fetch "
        f"tool (this handle, {which}) if you have it, or with `windowfit fetch` and this handle."
    )


def stub_text(tool: str, call_id: str, tokens: int, handle: str = "", pages: int = 0) -> str:
    """What replaces a cleared result: what was removed, why, and how to get it
    back: by ``handle`` when a store keeps it, else by running the tool again."""
    how = retrieval_text(handle, pages) if handle else "Run the tool again if you need it."
    return (
        f"[windowfit: tool result cleared] The result of {tool or 'a tool'} (call {call_id}, "
        f"about {tokens:,} tokens) was removed to keep this conversation within the model's context. " + how
    )


def observation_stub_text(tool: str, obs_id: str, tokens: int, handle: str = "", pages: int = 0) -> str:
    """What replaces a cleared text observation (tool output a format sends as plain text)."""
    how = retrieval_text(handle, pages) if handle else "Run it again if you need it."
    return (
        f"[windowfit: tool output cleared] The output of {tool or 'a command'} ({obs_id}, "
        f"about {tokens:,} tokens) was removed to keep this conversation within the model's context. " + how
    )


@frozen
class FitOptions:
    """The tunables of one fit, and the one home of their defaults: ``plan_fit``,
    ``fit``, ``Fitter``, ``fit_request``, replay's policies and the CLI's options
    all read them from here (through ``DEFAULTS``)."""

    budget: int
    batch_size: int = 4
    """Clear candidates this many at a time (1 is the cache-hostile behaviour)."""
    protected_fraction: float = 0.25
    """Share of the budget the newest tool results keep whole."""
    min_clear_ratio: float = 2.0
    """A result is clearable only if clearing it saves tokens and it is at least this many times its stub, in
    the count the fit uses (``clearable``)."""
    add_notice: bool = False
    """Add the safety-net notice (SPEC section 4) to the system prompt first."""
    page_tokens: int | None = None
    """With a store: its page size, and the stubs name the handle each cleared
    result is kept under and its page count. ``None``: no store, the stubs say
    to run the tool again."""
    batch_tokens: int | None = None
    """Also close a batch once its results reach this many estimated tokens
    (SPEC section 3, steps that rarely move). A batch ends at whichever limit
    comes first; with ``batch_size`` 0 only this one applies. With it, only
    full batches are cleared: a short last batch waits until it fills."""
    cut_step: int | None = None
    """Stages 2 and 3 cut only at step positions of this size (SPEC section 3);
    None cuts at the earliest turn or round whose tail fits."""
    carried_cut: int | None = None
    """An earlier request of this conversation was cut at this message index (its
    ``Plan.cut``): the messages that cut dropped are already gone, so the fit
    starts from what that request kept and the cut only moves forward (SPEC
    invariant 10; docs/contract.md, "The cut is carried"). None: a fresh fit."""

    def __post_init__(self) -> None:
        if self.budget < 1:
            raise OptionError(f"the budget must be at least 1 token, not {self.budget}")
        if self.batch_tokens is not None and self.batch_tokens < 1:
            raise OptionError(f"the batch tokens must be at least 1, not {self.batch_tokens}")
        if self.batch_size < (0 if self.batch_tokens is not None else 1):
            raise OptionError(f"the batch size must be at least 1 (0 only with batch tokens), not {self.batch_size}")
        if self.cut_step is not None and self.cut_step < 1:
            raise OptionError(f"the cut step must be at least 1 token, not {self.cut_step}")
        if not 0 <= self.protected_fraction <= 1:
            raise OptionError(f"the protected fraction must be between 0 and 1, not {self.protected_fraction}")
        if self.min_clear_ratio < 0:
            raise OptionError(f"the minimum clear ratio must not be negative, not {self.min_clear_ratio}")
        if self.page_tokens is not None and self.page_tokens < 1:
            raise OptionError(f"a page must hold at least 1 token, not {self.page_tokens}")
        if self.carried_cut is not None and self.carried_cut < 1:
            raise OptionError(f"a carried cut is a message index after the first message, not {self.carried_cut}")


DEFAULTS = FitOptions(budget=1)
"""``FitOptions``' defaults as one value, for signatures to read. A budget has no
default: the 1 here is a placeholder, read only the tunables."""


def auto_cut_step(budget: int) -> int:
    """The default step of stages 2 and 3: a quarter of the budget (SPEC section 3)."""
    return max(1, budget // 4)


def clearable(removed: int, added: int, min_clear_ratio: float, *, rounding: int = 0) -> bool:
    """Whether a result is a candidate of stage 1 (SPEC section 3, "too small to bother"), in the count the fit
    decides with: clearing it takes ``removed`` tokens off the request and its stub puts ``added`` back (an
    estimate: the result's and the stub's estimates; an anchored size: the floor of the result's content and
    the ceiling of the stub's text). It must be at least ``min_clear_ratio`` times its stub and save at least
    one token. ``rounding``: what the count may take back of that saving (an estimate rounds each block up
    alone but its message once, so a message saves at least one token less per result than its blocks say)."""
    return removed >= min_clear_ratio * added and removed - added - rounding > 0


def closes_batch(count: int, tokens: int, batch_size: int, batch_tokens: int | None) -> bool:
    """Whether a batch of ``count`` results holding ``tokens`` is full: at
    ``batch_size`` results (0: no count limit) or at ``batch_tokens`` tokens,
    whichever comes first."""
    return (batch_size > 0 and count >= batch_size) or (batch_tokens is not None and tokens >= batch_tokens)


def batch_ranges(
    candidates: Sequence[ResultRef], batch_size: int, batch_tokens: int | None = None
) -> tuple[tuple[int, int], ...]:
    """The batches stage 1 may clear, oldest first, as ``[start, stop)`` ranges
    of ``candidates``. By count only, the last may be short (SPEC section 3).
    With ``batch_tokens``, only full batches: the candidates after the last full
    one stay whole until their batch fills, so every clearing frees a batch's
    worth of room. Each batch's end depends only on the candidates up to it, and
    candidates only join at the new end, so batches never re-form as the
    session grows (SPEC invariants 5 and 8)."""
    ranges, start, tokens = [], 0, 0
    for i, ref in enumerate(candidates):
        tokens += ref.tokens
        if closes_batch(i + 1 - start, tokens, batch_size, batch_tokens):
            ranges.append((start, i + 1))
            start, tokens = i + 1, 0
    if start < len(candidates) and batch_tokens is None:
        ranges.append((start, len(candidates)))
    return tuple(ranges)


def step_position(starts: Sequence[int], prefix: Sequence[int], origin: int, first: int, step: int) -> int | None:
    """The earliest step position at or after ``starts[first]`` (SPEC section 3):
    among the boundaries ``starts`` (ascending), the ones where the size counted
    from ``origin`` (``prefix[b] - prefix[origin]``) first reaches a multiple of
    ``step``; ``starts[0]`` (size 0 counted, or the least) is always one. The
    index into ``starts``, or None when there is none from ``first`` on."""
    if first >= len(starts):
        return None

    def reached(i: int) -> int:
        return (prefix[starts[i]] - prefix[origin]) // step

    if first == 0 or reached(first) > reached(first - 1):
        return first
    target = reached(first) + 1
    for i in range(first + 1, len(starts)):
        if reached(i) >= target:
            return i
    return None


@frozen
class ResultRef:
    """One tool result of the input, with its estimate and its stub's."""

    message_index: int
    block_index: int
    call_id: str
    """The result's call id; for a text observation, its synthetic ``obs-...`` id."""
    tool: str
    tokens: int
    stub_tokens: int
    handle: str = ""
    """With a store: the handle the result is kept under once cleared (from its content)."""
    pages: int = 0
    """With a store: how many pages it is kept in."""


@frozen
class ClearBatch:
    """One batch of stage 1: candidates ``[first, first + len(results))``."""

    index: int
    results: tuple[ResultRef, ...]
    tokens_saved: int
    """How much smaller the whole request became when this batch was cleared."""


@frozen
class Dropped:
    """Messages ``[start, stop)`` of the input left out by stage 2 or 3."""

    kind: Literal["turn", "round", "message"]
    start: int
    stop: int
    tokens: int


CausePartKind: TypeAlias = Literal[
    "preamble", "head", "note", "opener", "newest", "after", "measured", "reply", "estimated", "changes", "removed"
]
AloneKind: TypeAlias = Literal["preamble", "result", "head", "note", "opener", "newest", "after"]


@frozen
class CausePart:
    """One part of the smallest request a too-long fit can build, as the fit counted it: on an estimate, what the
    request holds (the preamble, the first message, the note, ...); on an anchored size, the measured request
    and what the fit adds to it and takes off it (``removed`` is negative)."""

    kind: CausePartKind
    label: str
    tokens: int
    start: int | None = None
    """Messages ``[start, stop)`` of the input (as repaired) this part holds;
    None for the preamble and the truncation note, which are not input messages."""
    stop: int | None = None


@frozen
class Alone:
    """One piece that by itself is over the budget: no request can hold it."""

    label: str
    tokens: int
    kind: AloneKind
    call_id: str = ""
    """For a tool result: its call id."""


@frozen
class Cause:
    """Why a fit is too long: the smallest request, part by part (their sum is
    that request's size as the fit decided on it, its ``tokens_after``, over the
    budget), and the piece that alone is over the budget when there is one (by
    its estimate). The sentence is rendered from these numbers."""

    budget: int
    parts: tuple[CausePart, ...]
    alone: Alone | None = None

    @property
    def tokens(self) -> int:
        """The size of the smallest request: the sum of its parts."""
        return sum(p.tokens for p in self.parts)

    @property
    def sentence(self) -> str:
        if self.alone:
            a = self.alone
            verb = "are" if a.kind in ("preamble", "after") or " and " in a.label else "is"
            return f"{a.label} alone {verb} {a.tokens:,} tokens, over the {self.budget:,} budget"
        listed = " ".join(
            f"{'- ' if p.tokens < 0 else '+ ' if i else ''}{p.label} {abs(p.tokens):,}"
            for i, p in enumerate(self.parts)
        )
        # Counted from a measured request, what the fit takes off is a lower bound: the size is an upper one.
        how = "up to" if self.parts[0].kind == "measured" else "an estimated"
        return (
            f"the smallest request it can send is {how} {self.tokens:,} tokens ({listed}), "
            f"over the {self.budget:,} budget"
        )


@frozen
class Plan:
    """Every decision of one fit. ``apply_plan`` needs nothing else."""

    options: FitOptions
    outcome: Outcome
    tokens_before: int
    tokens_after: int
    stages: tuple[int, ...]
    """The stages that ran (1, 2, 3); empty when the request already fit."""
    message_tokens: tuple[int, ...]
    """Each input message's estimate (after ``--add-notice``, which only touches the system prompt)."""
    preamble_tokens: int
    results: tuple[ResultRef, ...]
    """Every tool result, oldest first."""
    protected: tuple[ResultRef, ...]
    """The newest results kept whole, by size (at least the newest one)."""
    too_small: tuple[ResultRef, ...]
    """Results never cleared: not much bigger than their stub, in the count the fit uses (``clearable``)."""
    candidates: tuple[ResultRef, ...]
    """The clearable results, oldest first; batches are ``candidates[k*b:(k+1)*b]``."""
    batches: tuple[ClearBatch, ...]
    """The batches cleared, oldest first: a prefix of the candidates."""
    head: tuple[int, int] = (0, 1)
    """Messages always kept at the start: the first message (and, if it calls tools, its results)."""
    cut_at: int | None = None
    """With ``options.cut_step``, for stages 2 and 3: the step position the
    kept tail starts at (a turn start, or a round start of the long turn).
    With ``options.carried_cut`` it is at or after the carried cut, and is the
    carried cut itself when the request fits from there."""
    kept: tuple[tuple[int, int], ...] = ()
    """For stages 2 and 3: the input ranges kept after the note, in order."""
    dropped: tuple[Dropped, ...] = ()
    note: str = ""
    """The truncation note inserted after the head (stages 2 and 3)."""
    notice_added: bool = False
    repairs: tuple[Repair, ...] = ()
    """Orphans fixed before fitting (message indices are the input's); every
    other index in the plan refers to the repaired messages."""
    too_long: Cause | None = None
    """For ``too-long``: the smallest request, part by part, and why it cannot fit."""
    size: Size | None = None
    """The predicted size the fit started from. When it is anchored on measured
    usage, what the fit removes is counted from below and what it adds from
    above, so ``tokens_after`` stays an upper bound whenever the anchor is exact."""

    @property
    def cause(self) -> str:
        """For ``too-long``: why, in words; empty otherwise."""
        return self.too_long.sentence if self.too_long else ""

    @property
    def size_source(self) -> SizeSource:
        return self.size.source if self.size is not None else "estimate"

    @property
    def cut(self) -> int | None:
        """Where the kept tail starts when stages 2 or 3 (or a carried cut) left
        messages out, step position or not; None when nothing was left out or
        the request is too long (it is not sent). What the next request of the
        conversation carries (``FitOptions.carried_cut``)."""
        if not self.note or self.outcome == "too-long" or not self.kept:
            return None
        return self.kept[-1][0]

    @property
    def cleared(self) -> tuple[ResultRef, ...]:
        return tuple(r for b in self.batches for r in b.results)

    @property
    def fits(self) -> bool:
        return self.outcome != "too-long"

    def message_fates(self) -> tuple[MessageFate, ...]:
        """What happens to each input message: kept, head (always kept),
        cleared (a result in it is stubbed) or dropped."""
        fates: list[MessageFate] = ["kept"] * len(self.message_tokens)
        for ref in self.cleared:
            fates[ref.message_index] = "cleared"
        if self.note:
            keep = {i for a, b in self.kept for i in range(a, b)}
            for i in range(len(fates)):
                if self.head[0] <= i < self.head[1]:
                    fates[i] = "head" if fates[i] == "kept" else fates[i]
                elif i not in keep:
                    fates[i] = "dropped"
        return tuple(fates)


def _stub(result: ToolResult | Text, ref: ResultRef) -> ToolResult | Text:
    return _stub_of(result, ref.tool, ref.call_id, ref.tokens, ref.handle, ref.pages)


def _stub_of(
    result: ToolResult | Text, tool: str, call_id: str, tokens: int, handle: str, pages: int
) -> ToolResult | Text:
    """``_stub`` from the parts of its ``ResultRef`` (``result_refs`` estimates a stub before it has the ref)."""
    # Constructors, not dataclasses.replace: this runs once per cleared result.
    if isinstance(result, Text):
        # A text observation: the stub takes the text's place in the same message.
        text = observation_stub_text(tool, call_id, tokens, handle, pages)
        return Text(text, result.extra, result.observation_of)
    stub = Text(stub_text(tool, call_id, tokens, handle, pages))
    return ToolResult(result.call_id, (stub,), result.is_error, result.name, result.extra)


def clear_into(messages: list[Message], refs: Sequence[ResultRef]) -> set[int]:
    """Replace the results named by ``refs`` with their stubs, in place; the
    indices of the messages that changed."""
    by_message: dict[int, list[ResultRef]] = {}
    for ref in refs:
        by_message.setdefault(ref.message_index, []).append(ref)
    for mi, group in by_message.items():
        content = list(messages[mi].content)
        for ref in group:
            block = content[ref.block_index]
            if isinstance(block, Text):
                assert block.observation_of and observation_id(mi, ref.block_index) == ref.call_id
            else:
                assert isinstance(block, ToolResult) and block.call_id == ref.call_id
            content[ref.block_index] = _stub(block, ref)
        old = messages[mi]
        messages[mi] = Message(
            old.role, tuple(content), old.source, old.extra, old.verbatim
        )  # its text, to respell what it kept
    return set(by_message)


def clear_results(messages: Sequence[Message], refs: Sequence[ResultRef]) -> list[Message]:
    """A copy of ``messages`` with the results named by ``refs`` replaced by their stubs."""
    out = list(messages)
    clear_into(out, refs)
    return out


def _note_message() -> Message:
    return Message("user", (Text(TRUNCATION_NOTE),), NOTE_SOURCE)


def sent(messages: Sequence[Message]) -> Sequence[Message]:
    """``messages`` (a fitted request's) as a request sends them: the truncation note is a text block, not a
    message of its own, so that roles still alternate where the request left messages out. It joins the user
    message before it and the one after it (one carrying no tool result, which must come first) into one
    message: their blocks, in order, each still spelled as its message's text has it (``Joined``; SPEC
    section 6, invariant 9). The plan counts the note as a message of its own: what is sent is no bigger."""
    at = next((i for i, m in enumerate(messages) if m.source is NOTE_SOURCE), None)
    if at is None:
        return messages
    start, stop = at, at + 1
    if start and messages[start - 1].role == "user":
        start -= 1
    if stop < len(messages) and messages[stop].role == "user" and not messages[stop].tool_results:
        stop += 1
    if stop - start == 1:
        return messages
    parts = tuple(messages[start:stop])
    extra = next((m.extra for m in parts if m.extra), "")
    content = tuple(b for m in parts for b in m.content)
    joined = Message("user", content, parts[0].source, extra, Joined(parts))
    return (*messages[:start], joined, *messages[stop:])


def result_refs(
    messages: Sequence[Message], estimator: Estimator, page_tokens: int | None = None
) -> tuple[ResultRef, ...]:
    """Every tool result, oldest first, with its estimate and its stub's. A text
    observation (``Text.observation_of``) counts as a result too, under the
    synthetic id ``observation_id`` gives it: it has no call to pair with. The
    first message is never one (SPEC invariant 3 keeps it unchanged). With
    ``page_tokens`` (a store), each has the handle and page count its stub names."""
    return _result_refs(messages, estimator, page_tokens)[0]


class _StubParts(NamedTuple):
    """What stage 1 needs of one result's stub, made once (``_result_refs``): its text's ceiling
    (``ceiling_tokens``: what an anchored fit adds for it) and its parts as ``_Stubbing`` sums them (a tuple:
    one a result, made quickly)."""

    ceiling: int
    script: tuple[int, int, int, int] | None
    """Under a ``ScriptRule``: ascii, cjk and other characters and fixed tokens."""
    general: tuple[CharCounts, int] | None
    """Under any other rule: ``Estimator.block_parts`` of the stub."""


def _result_refs(
    messages: Sequence[Message], estimator: Estimator, page_tokens: int | None
) -> tuple[tuple[ResultRef, ...], list[_StubParts]]:
    """``result_refs``, and each result's stub (its text and parts, for stage 1), in the same order. Under a
    ``ScriptRule`` the stub's parts and tokens come from its text (``_script_stub``), without making it."""
    names = tool_names(messages)
    refs = []
    stubs = []
    rule = estimator.rule
    script = rule if type(rule) is ScriptRule else None
    if page_tokens is not None:
        from .store.content import block_handle, block_pages
    for mi, message in enumerate(messages):
        estimate: tuple[int, ...] | None = None  # looked up once a message (a lookup hashes all its blocks)
        for bi, block in enumerate(message.content):
            if isinstance(block, ToolResult):
                call_id, tool = block.call_id, names.get(block.call_id) or block.name
                observation = False
            elif isinstance(block, Text) and block.observation_of and mi > 0:
                call_id, tool = observation_id(mi, bi), block.observation_of
                observation = True
            else:
                continue
            if estimate is None:
                estimate = estimator.message(message).block_tokens
            tokens = estimate[bi]
            handle, pages = "", 0
            if page_tokens is not None:
                key = (block, tool, call_id, page_tokens)
                found = estimator.handles.get(key)
                if found is None:
                    found = estimator.handles[key] = (
                        block_handle(block, tool, call_id),
                        block_pages(block, page_tokens),
                    )
                handle, pages = found
            if script is not None:
                text = (observation_stub_text if observation else stub_text)(tool, call_id, tokens, handle, pages)
                stub, parts = _script_stub(script, text, observation)
                stubs.append(parts)
            else:
                made = _stub_of(block, tool, call_id, tokens, handle, pages)
                stub = estimator.block(made)
                inner = made if isinstance(made, Text) else made.content[0]
                assert isinstance(inner, Text)
                stubs.append(_StubParts(ceiling_tokens(inner.text), None, estimator.block_parts(made)))
            refs.append(ResultRef(mi, bi, call_id, tool, tokens, stub, handle, pages))
    return tuple(refs), stubs


def _script_stub(rule: ScriptRule, text: str, observation: bool = False) -> tuple[int, _StubParts]:
    """The tokens and parts of the stub of ``text`` under ``rule``, as ``Estimator.block`` counts the block
    ``_stub_of`` makes of it (a text in a result, or the text alone for an observation), without making it."""
    a, c, o = _groups(text)
    overhead = rule.block_overhead_tokens
    fixed = overhead if observation else overhead + overhead  # the text's, and the result's
    wa, wc, wo, denominator = rule._weights
    parts = _StubParts(ceiling_tokens(text), (a, c, o, fixed), None)
    return -(-(a * wa + c * wc + o * wo) // denominator) + fixed, parts


@dataclass(slots=True)
class _Stubbing:
    """Stage 1's arithmetic: the estimate of a message with some of its results stubbed, summed from the
    parts (characters per class and fixed tokens) of its blocks as ``Estimator.message`` sums them for the
    message ``clear_into`` builds, without building it: a stubbed block's parts are its stub's
    (``_StubParts``), and every other block's are counted once, when its message's estimate is first asked
    for (a result cleared before that is never counted: its text is not read)."""

    est: Estimator
    messages: Sequence[Message]
    script: dict[int, list[tuple[int, int, int, int] | None]] = field(default_factory=dict)
    """Under a ``ScriptRule``: by message index, each block's parts as plain integers (None: not counted yet)."""
    general: dict[int, list[tuple[CharCounts, int] | None]] = field(default_factory=dict)
    """Under any other rule: by message index, each block's ``Estimator.block_parts`` (None: not counted yet)."""

    def clear(self, ref: ResultRef, stub: _StubParts) -> None:
        """Stub the result ``ref`` names (its message's other blocks as they are)."""
        mi = ref.message_index
        if type(self.est.rule) is ScriptRule:
            parts = self.script.get(mi)
            if parts is None:
                parts = self.script[mi] = [None] * len(self.messages[mi].content)
            assert stub.script is not None
            parts[ref.block_index] = stub.script
        else:
            counted = self.general.get(mi)
            if counted is None:
                counted = self.general[mi] = [None] * len(self.messages[mi].content)
            assert stub.general is not None
            counted[ref.block_index] = stub.general

    def tokens(self, mi: int) -> int:
        """Message ``mi``'s estimate with the results cleared so far stubbed (``Estimator.blocks``)."""
        est = self.est
        rule = est.rule
        fixed = rule.message_overhead_tokens
        content = self.messages[mi].content
        if type(rule) is ScriptRule:
            wa, wc, wo, denominator = rule._weights
            a = c = o = 0
            parts = self.script[mi]
            for k, got in enumerate(parts):
                if got is None:
                    got = parts[k] = est._script_parts(rule, content[k])
                a2, c2, o2, f = got
                a, c, o, fixed = a + a2, c + c2, o + o2, fixed + f
            return -(-(a * wa + c * wc + o * wo) // denominator) + fixed
        counted = self.general[mi]
        for k, made in enumerate(counted):
            if made is None:
                counted[k] = est.block_parts(content[k])
        each = [made for made in counted if made is not None]
        return rule.text_tokens(sum_counts([c for c, _ in each])) + fixed + sum(f for _, f in each)

    @property
    def touched(self) -> list[int]:
        """The messages a result was cleared in, in order."""
        return sorted(self.script or self.general)


def _protected_tail(results: Sequence[ResultRef], allowance: float) -> int:
    """Index of the first protected result: the newest results whose estimates
    fit together in ``allowance`` stay whole, and always the newest one."""
    if not results:
        return 0
    start, used = len(results) - 1, results[-1].tokens
    while start > 0 and used + results[start - 1].tokens <= allowance:
        start -= 1
        used += results[start].tokens
    return start


def _head(messages: Sequence[Message]) -> tuple[int, int]:
    """The first message, extended to its whole round if it calls tools."""
    if not messages:
        return (0, 0)
    first = next(iter_units(messages, 0, len(messages)))
    return (0, first.stop if isinstance(first, Round) else 1)


class _Stubber(Protocol):
    """Stage 1's arithmetic over the messages of a ``_Shape`` (``_Stubbing``'s)."""

    def clear(self, ref: ResultRef, stub: _StubParts) -> None:
        """Stub the result ``ref`` names (its message's other blocks as they are)."""

    def tokens(self, mi: int) -> int:
        """Message ``mi``'s estimate with the results cleared so far stubbed (a message with one, only)."""

    @property
    def touched(self) -> list[int]:
        """The messages a result was cleared in, in order."""


class _Shape(Protocol):
    """What ``_decide`` reads of the messages it plans (as repaired): their results and stubs, the sizes an
    anchored fit removes, stage 1's arithmetic, the head, the turns and the units. ``_Messages`` reads them of
    ``Message`` objects; ``fitting.ccplan`` of the fold of a session's lines, without making any (check's
    plan of a session over its budget: tests/test_fitfold.py and tests/test_ccplan.py keep the two equal)."""

    def __len__(self) -> int:
        """How many messages."""

    def result_refs(self, est: Estimator, page_tokens: int | None) -> tuple[tuple[ResultRef, ...], list[_StubParts]]:
        """``_result_refs`` of the messages."""

    def sizer(
        self, estimates: Sequence[int], floor: Estimator | None, result_floors: dict[tuple[int, int], int]
    ) -> _Sizer:
        """The ``_Sizer`` of the messages (``_Sizer.of``'s): with a ``floor`` (anchored), of their floors and
        measured requests, each result's floor put in ``result_floors``; else of ``estimates``."""

    def stubbing(self, est: Estimator) -> _Stubber:
        """Stage 1's arithmetic, nothing cleared yet."""

    def head(self) -> tuple[int, int]:
        """``_head`` of the messages (there is at least one)."""

    def turn_bounds(self) -> array[int]:
        """``turn_bounds`` of the messages."""

    def units(self, start: int, stop: int) -> tuple[Unit, ...]:
        """``split_units`` of messages ``[start, stop)``."""


@frozen
class _Messages:
    """``_Shape`` of ``Message`` objects: the messages as repaired of ``transcript`` (its usage is moved onto
    them, ``_usage_in``), with ``_plan``'s ``floors_of``."""

    messages: Sequence[Message]
    transcript: Transcript | None = None
    floors_of: Callable[[Sequence[Message], dict[tuple[int, int], int]], Sequence[int]] | None = None

    def __len__(self) -> int:
        return len(self.messages)

    def result_refs(self, est: Estimator, page_tokens: int | None) -> tuple[tuple[ResultRef, ...], list[_StubParts]]:
        return _result_refs(self.messages, est, page_tokens)

    def sizer(
        self, estimates: Sequence[int], floor: Estimator | None, result_floors: dict[tuple[int, int], int]
    ) -> _Sizer:
        messages = self.messages
        known = self.floors_of(messages, result_floors) if floor is not None and self.floors_of is not None else None
        usage = _usage_in(self.transcript, messages) if self.transcript is not None else ()
        return _Sizer.of(messages, estimates, floor, usage, result_floors, known)

    def stubbing(self, est: Estimator) -> _Stubber:
        return _Stubbing(est, self.messages)

    def head(self) -> tuple[int, int]:
        return _head(self.messages)

    def turn_bounds(self) -> array[int]:
        return turn_bounds(self.messages)

    def units(self, start: int, stop: int) -> tuple[Unit, ...]:
        return split_units(self.messages, start, stop)


def plan_fit(
    transcript: Transcript,
    *,
    budget: int,
    batch_size: int = DEFAULTS.batch_size,
    protected_fraction: float = DEFAULTS.protected_fraction,
    min_clear_ratio: float = DEFAULTS.min_clear_ratio,
    add_notice: bool = DEFAULTS.add_notice,
    estimator: Estimator | None = None,
    size: Size | None = None,
    page_tokens: int | None = DEFAULTS.page_tokens,
    batch_tokens: int | None = DEFAULTS.batch_tokens,
    cut_step: int | None = DEFAULTS.cut_step,
    carried_cut: int | None = DEFAULTS.carried_cut,
) -> Plan:
    """Decide how to fit ``transcript`` into ``budget`` tokens.

    ``size`` is the predicted size of ``transcript`` (``predict_size`` on the
    session it is the live context of): its preamble counts in the budget, and
    when it is anchored on measured usage the fit starts from it. Without it,
    the request is the pure estimate of what the file records.

    ``page_tokens`` plans for a store: the stubs name each cleared result's
    handle and page count, both derived from its content, so the plan stays
    pure (``keep_cleared`` or ``fit(store=...)`` puts the results in a store).

    ``carried_cut`` is the cut of an earlier request of this conversation (its
    ``Plan.cut``, an index into the messages as repaired): the fit starts from
    what that request kept (the head, the note, the opening message of the cut's
    turn when the cut is inside it, and every message from the cut on) with every
    clearable result cleared, as that request had them; stages 2 and 3 run only
    if that does not fit, and cut at or after it. It is refused (``OptionError``)
    when it is not a position stage 2 or 3 can cut at in this transcript.

    This algorithm has a twin: replay's ``WindowfitPolicy``
    (``fitting/replay/windowfit.py``) computes the same requests incrementally,
    one per step of a growing session. Change both together;
    ``tests/test_replay.py::test_incremental_windowfit_equals_plan_fit_on_every_request``
    keeps them equal (for the estimate: replay does not anchor).
    """
    options = FitOptions(
        budget,
        batch_size,
        protected_fraction,
        min_clear_ratio,
        add_notice,
        page_tokens,
        batch_tokens,
        cut_step,
        carried_cut,
    )
    est = estimator or make_estimator()
    return _plan(transcript, options, est, size, lambda messages: est.message_tokens(tuple(messages)))


def _plan(
    transcript: Transcript,
    options: FitOptions,
    est: Estimator,
    size: Size | None,
    tokens_of: Callable[[Sequence[Message]], tuple[int, ...]],
    floors_of: Callable[[Sequence[Message], dict[tuple[int, int], int]], Sequence[int]] | None = None,
) -> Plan:
    """``plan_fit``'s work. ``tokens_of`` gives each message's estimate, of the messages as repaired:
    ``est.message`` of each, or, for a columnar conversation (``fitting.columns``), the estimates it
    holds for the messages it holds no ``Message`` of (those that stand in for plain text). ``floors_of``
    gives what an anchored fit removes, as ``_floors`` does (each message's floor, and each result's in the
    dict, by message and block index): ``fitting.ccplan`` gives the floors the fold counted."""
    noticed = _with_notice(transcript) if options.add_notice else transcript
    notice_added = noticed is not transcript
    source, repairs = repair(noticed)
    messages = source.messages
    message_tokens = tokens_of(messages)
    preamble = est.preamble(source)
    if size is not None and size.preamble_source in ("inferred", "given"):
        preamble += size.preamble_tokens - est.preamble(transcript)  # what the file does not record
    before = preamble + sum(message_tokens)
    if size is not None and size.anchored:
        # The notice and repairs change the request after it was measured: add their estimate.
        before = size.tokens + before - est.request(transcript) - preamble + est.preamble(source)
    if options.carried_cut is not None:
        _check_cut(source, options.carried_cut, _head(messages))
    shape = _Messages(messages, transcript, floors_of)
    return _decide(shape, options, est, size, message_tokens, preamble, before, notice_added, repairs)


def _decide(
    shape: _Shape,
    options: FitOptions,
    est: Estimator,
    size: Size | None,
    message_tokens: tuple[int, ...],
    preamble: int,
    before: int,
    notice_added: bool = False,
    repairs: tuple[Repair, ...] = (),
) -> Plan:
    """``_plan``'s decisions, stage by stage, from what it reads of the messages (as repaired: ``shape``), their
    estimates, the preamble and the request's size (``before``); a carried cut is checked already."""
    budget, batch_size, batch_tokens = options.budget, options.batch_size, options.batch_tokens
    protected_fraction, min_clear_ratio = options.protected_fraction, options.min_clear_ratio
    page_tokens, cut_step, carried_cut = options.page_tokens, options.cut_step, options.carried_cut
    anchored = size is not None and size.anchored
    results, stubs = shape.result_refs(est, page_tokens)
    # An anchored fit removes the floor of a result's content and adds the ceiling of its stub's text: the
    # floors come with the sizes of what stages 2 and 3 leave out (``_Sizer``).
    result_floors: dict[tuple[int, int], int] = {}
    sizer = shape.sizer(message_tokens, Estimator(FLOOR_RULE) if anchored else None, result_floors)

    first_protected = _protected_tail(results, budget * protected_fraction)
    older = results[:first_protected]
    if anchored:
        clears = [
            clearable(result_floors[(r.message_index, r.block_index)], stubs[i].ceiling, min_clear_ratio)
            for i, r in enumerate(older)
        ]
    else:
        clears = [clearable(r.tokens, r.stub_tokens, min_clear_ratio, rounding=1) for r in older]
    candidate_at = [i for i, clear in enumerate(clears) if clear]
    base = Plan(
        options=options,
        outcome="fits",
        tokens_before=before,
        tokens_after=before,
        stages=(),
        message_tokens=message_tokens,
        preamble_tokens=preamble,
        results=results,
        protected=results[first_protected:],
        too_small=tuple(r for r, clear in zip(older, clears, strict=True) if not clear),
        candidates=tuple(results[i] for i in candidate_at),
        batches=(),
        notice_added=notice_added,
        repairs=repairs,
        size=size,
    )
    if carried_cut is None and before <= budget:
        return base

    # Stage 1: clear whole batches of candidates, oldest first, until it fits. With a
    # carried cut, every batch: the request that cut there had cleared all it could
    # (a cut comes only after stage 1 runs out), and taking a stub back would change
    # the prefix that request sent and shrink the cleared set (SPEC invariant 8).
    # No message is rebuilt: what clearing a batch takes off each of its messages is
    # summed from the parts of its blocks and of its stubs (``_Stubbing``); the
    # messages stubbed are built once, by ``apply_plan``. Stages 2 and 3 read only
    # roles, calls and results' ids of the messages, which a stub keeps as they were.
    tokens = list(message_tokens)
    total = before
    batches: list[ClearBatch] = []
    candidates = base.candidates
    stubbing = shape.stubbing(est)
    for k, stop in batch_ranges(candidates, batch_size, batch_tokens):
        batch = candidates[k:stop]
        saved = 0
        for j in range(k, stop):
            ref, stub = candidates[j], stubs[candidate_at[j]]
            if anchored:  # the floor of what the stub replaces: a result's content, an observation's text
                cut = result_floors[(ref.message_index, ref.block_index)] - stub.ceiling
                sizer.save(ref.message_index, cut)
                saved += cut
            stubbing.clear(ref, stub)
        if not anchored:
            for mi in sorted({ref.message_index for ref in batch}):
                new = stubbing.tokens(mi)
                sizer.save(mi, tokens[mi] - new)
                saved += tokens[mi] - new
                tokens[mi] = new
        total -= saved
        batches.append(ClearBatch(len(batches), batch, saved))
        if total <= budget and carried_cut is None:
            return replace(base, outcome="cleared", tokens_after=total, stages=(1,), batches=tuple(batches))
    if anchored:  # what the dropped parts hold is counted with the stubs (the sizes, from the floors)
        for mi in stubbing.touched:
            tokens[mi] = stubbing.tokens(mi)
    stages = (1,) if batches else ()
    sizer.seal()
    note_tokens = est.message(_note_message()).tokens
    n = len(shape)
    if not n:
        # Only the preamble, and it alone is over the budget (issue 8: an IndexError
        # here): no turn or round to keep, so nothing can fit.
        empty = (0, 0)
        cause = _too_long(
            tokens,
            results,
            base.candidates,
            (),
            0,
            budget=budget,
            preamble=preamble,
            head=empty,
            note=note_tokens,
            opener=None,
            preamble_source=size.preamble_source if size is not None else "recorded",
        )
        return replace(
            base,
            outcome="too-long",
            tokens_after=cause.tokens,
            stages=stages,
            head=empty,
            note=TRUNCATION_NOTE,
            too_long=cause,
        )

    # Stage 2: the head, a note, and the newest whole turns that fit. A request that
    # leaves messages out is the total so far, plus the note, minus what they held.
    head = shape.head()
    note_add = (
        ceiling_tokens(TRUNCATION_NOTE) + est.rule.message_overhead_tokens + est.rule.block_overhead_tokens
        if anchored
        else note_tokens
    )
    truncated = replace(base, batches=tuple(batches), head=head, note=TRUNCATION_NOTE)
    bounds = shape.turn_bounds()  # the turns, as machine integers: a file of tiny lines has very many
    floor_at = 0 if carried_cut is None else carried_cut
    if carried_cut is not None:
        carried = _carried(truncated, shape, tokens, sizer, total + note_add, carried_cut, stages)
        if carried.tokens_after <= budget:
            return carried
    starts = bounds[bisect_left(bounds, head[1], 0, len(bounds) - 1) : len(bounds) - 1]  # turns after the head
    sizes = array("q", (total + note_add - sizer.removed(head[1], start) for start in starts))
    fitting_turn = next((i for i, size in enumerate(sizes) if size <= budget and starts[i] >= floor_at), None)
    kept_from = fitting_turn
    prefix = [0]
    if cut_step is not None:
        for t in tokens:
            prefix.append(prefix[-1] + t)
        if kept_from is not None:
            kept_from = step_position(starts, prefix, 0, kept_from, cut_step)

    def keep_turns(k: int, cut_at: int | None) -> Plan:
        start = starts[k]
        return replace(
            truncated,
            outcome="turns-dropped",
            tokens_after=sizes[k],
            stages=(*stages, 2),
            kept=((start, n),),
            dropped=_dropped_turns(bounds, tokens, head[1], start),
            cut_at=cut_at,
        )

    if kept_from is not None:
        return keep_turns(kept_from, starts[kept_from] if cut_step is not None else None)

    # Stage 3: inside the last (long) turn, the newest whole tool rounds that fit.
    last = Turn(bounds[-2], bounds[-1])
    opener = (last.start, last.start + 1) if last.start >= head[1] else None
    units_from = opener[1] if opener else head[1]
    units = shape.units(units_from, n)
    before_units = total + note_add - (sizer.removed(head[1], last.start) if opener else 0)

    def size_keeping(take: int) -> int:
        """The request with the newest ``take`` units of the last turn."""
        stop = units[len(units) - take].start if take else n
        return before_units - sizer.removed(units_from, stop)

    most = len(units) - bisect_left([u.start for u in units], floor_at)  # never a unit before the carried cut
    keep_units = next((take for take in range(most, 0, -1) if size_keeping(take) <= budget), 0)
    # The tail must reach back to the newest tool round: a tail of only a trailing
    # assistant reply has not kept the work, so that request is too long too.
    rounds_at = [i for i, u in enumerate(units) if isinstance(u, Round)]
    newest = rounds_at[-1] if rounds_at else len(units) - 1
    cut_at = None
    if cut_step is not None and keep_units:
        # The earliest step position from the earliest fitting unit on; when none
        # is at or before the newest round, the earliest fitting unit (no step).
        at = step_position([u.start for u in units], prefix, last.start, len(units) - keep_units, cut_step)
        if at is not None and at <= newest:
            keep_units, cut_at = len(units) - at, units[at].start
    used = size_keeping(keep_units)
    stages = (*stages, 2, 3)
    fits = keep_units > 0 and len(units) - keep_units <= newest
    # Too long keeps what stage 3 would at the least: everything from the newest round on.
    take = keep_units if fits else len(units) - newest if units else 0
    start = units[len(units) - take].start if take else n
    kept = ((opener,) if opener else ()) + (((start, n),) if take else ())
    dropped = _dropped_turns(bounds, tokens, head[1], last.start if opener else head[1]) + _dropped_units(
        units[: len(units) - take], tokens
    )
    if fits:
        return replace(
            truncated,
            outcome="rounds-dropped",
            tokens_after=used,
            stages=stages,
            kept=kept,
            dropped=dropped,
            cut_at=cut_at,
        )
    if fitting_turn is not None:
        # With cut steps, no step position's tail fits and stage 3 cannot fit either
        # (the long turn is only its opening message, say): the earliest turn that fits.
        return keep_turns(fitting_turn, None)
    cause = _too_long(
        tokens,
        results,
        base.candidates,
        units,
        take,
        budget=budget,
        preamble=preamble,
        head=head,
        note=note_tokens,
        opener=opener,
        preamble_source=size.preamble_source if size is not None else "recorded",
    )
    after = size_keeping(take)
    if anchored:
        # The decision compared the anchored size with the budget: the cause says that size, as it was counted.
        assert size is not None
        changed = " and ".join(w for w, on in (("notice", notice_added), ("repairs", bool(repairs))) if on)
        counted = _measured_parts(size, before, before - total, note_add, after, changed)
        cause = Cause(budget, counted, cause.alone)
    return replace(
        truncated,
        outcome="too-long",
        tokens_after=after,
        stages=stages,
        kept=kept,
        dropped=dropped,
        too_long=cause,
    )


def _check_cut(transcript: Transcript, cut: int, head: tuple[int, int]) -> None:
    """Refuse a carried cut stage 2 or 3 could not have made in ``transcript``
    (the messages as repaired): past its end, inside the first message's round,
    or between a call and its results."""
    messages = transcript.messages
    where = transcript.source.path
    if cut >= len(messages):
        problem = f"it is past the last message (the transcript has {len(messages):,})"
    elif cut < head[1]:
        problem = "it is inside the first message's round, which is always kept"
    elif cut not in {u.start for u in iter_units(messages, head[1], len(messages))}:
        problem = "it is inside a tool round: the cut would separate a call from its results"
    else:
        return
    at = str(Location(where))
    if cut < len(messages):
        source = messages[cut].source  # a message's own file and line, where it has them
        at = str(Location(source.path or where, source.line))
    error = OptionError(f"{at}: the carried cut {cut} is not a cut position of this transcript: {problem}")
    error.hint = "pass the cut (Plan.cut, the plan JSON's kept tail start) of an earlier request of this conversation"
    raise error


def _carried(
    truncated: Plan,
    working: _Shape,
    tokens: Sequence[int],
    sizer: _Sizer,
    whole: int,
    cut: int,
    stages: tuple[int, ...],
) -> Plan:
    """The request a carried cut keeps, whether or not it fits: the head, the
    note, the opening message of the cut's turn when the cut is inside that turn
    (as stage 3 keeps it), and every message from the cut on. ``whole`` is the
    request with the note and stage 1's stubs (``tokens``), before anything is
    left out."""
    head = truncated.head
    bounds = working.turn_bounds()
    at = bisect_right(bounds, cut, 0, len(bounds) - 1) - 1
    turn = Turn(bounds[at], bounds[at + 1])
    opener = (turn.start, turn.start + 1) if head[1] <= turn.start < cut else None
    if opener:
        size = whole - sizer.removed(head[1], opener[0]) - sizer.removed(opener[1], cut)
    else:
        size = whole - sizer.removed(head[1], cut)
    if turn.start == cut:
        dropped = _dropped_turns(bounds, tokens, head[1], cut)
    else:
        units_from = opener[1] if opener else head[1]
        dropped = _dropped_turns(bounds, tokens, head[1], max(turn.start, head[1])) + _dropped_units(
            working.units(units_from, cut), tokens
        )
    return replace(
        truncated,
        outcome="turns-dropped" if turn.start == cut else "rounds-dropped",
        tokens_after=size,
        stages=stages,
        kept=((opener,) if opener else ()) + ((cut, len(working)),),
        dropped=dropped,
        cut_at=cut,
    )


def _usage_in(transcript: Transcript, messages: Sequence[Message]) -> tuple[Usage, ...]:
    """The transcript's usage with ``before`` moved to ``messages`` (the input after
    repairs, which insert synthetic results and drop orphans): each measured
    request is placed by its reply, a message repairs never change."""
    if messages is transcript.messages:
        return transcript.usage
    position = {id(m): i for i, m in enumerate(messages)}
    moved = []
    for u in transcript.usage:
        if u.before == len(transcript.messages):
            moved.append(replace(u, before=len(messages)))
        elif 0 <= u.before < len(transcript.messages) and id(transcript.messages[u.before]) in position:
            moved.append(replace(u, before=position[id(transcript.messages[u.before])]))
    return tuple(moved)


@dataclass(slots=True)
class _Sizer:
    """What leaving messages ``[a, b)`` out takes off a request: their estimate,
    or, from an anchored size, a lower bound: the larger of their text's floor and
    what the provider measured between two requests around them. Minus what
    stage 1 already took off them (``saved``), which the total no longer holds."""

    each: Sequence[int]
    """Each input message's estimate, or its floor: ``seal`` sums them into ``held`` (stage 1 reads neither: a
    fit that stage 1 fits never sums them)."""
    measured: Iterable[tuple[int, int]] | None
    """For an anchored size: each measured request's ``before`` and total, read once, by ``seal``; else None."""
    saved: dict[int, int] = field(default_factory=dict)
    """By message index: what clearing its results took off the total (only the messages stage 1 changed)."""
    held: array[int] = field(default_factory=lambda: array("q", [0]))
    """Prefix sums of ``each`` (machine integers: a list held an int object per message, 40 B of a tiny
    message's few hundred)."""
    measured_upto: list[int | None] | None = None
    """At ``i``: the largest measured request that held only messages before ``i``; None (for every ``i``)
    when the size is not anchored on measured usage."""
    measured_from: list[int | None] | None = None
    """At ``i``: the smallest measured request that held every message before ``i``."""
    saved_at: list[int] = field(default_factory=list)
    """The indices in ``saved``, in order (``seal``)."""
    saved_upto: array[int] = field(default_factory=lambda: array("q", [0]))
    """Prefix sums of ``saved`` in that order."""

    @classmethod
    def of(
        cls,
        messages: Sequence[Message],
        estimates: Sequence[int],
        floor: Estimator | None,
        usage: Sequence[Usage],
        result_floors: dict[tuple[int, int], int] | None = None,
        floors: Sequence[int] | None = None,
    ) -> _Sizer:
        """With a ``floor``, ``result_floors`` (if given) gets the floor of each tool result's content, by
        message and block index (what clearing it takes off the floor), counted once with its message's; or,
        with ``floors`` too, those are each message's floor, and ``result_floors`` holds the results' already."""
        each = estimates if floor is None else floors if floors is not None else _floors(messages, floor, result_floors)
        return cls(each, None if floor is None else ((u.before, u.total) for u in usage))

    def seal(self) -> None:
        """Stage 1 is done: sum each message's size and what stage 1 saved, and place the measured requests, for
        ``removed``."""
        each, measured = self.each, self.measured
        n = len(each)
        held = self.held = array("q", [0])
        for tokens in each:
            held.append(held[-1] + tokens)
        self.each = ()
        if measured is not None:  # else no list of None a message (16 B of a tiny one's few hundred)
            upto: list[int | None] = [None] * (n + 1)
            since: list[int | None] = [None] * (n + 1)
            for before, total in measured:
                if 0 <= before <= n:
                    at = upto[before]
                    upto[before] = total if at is None else max(at, total)
                    at = since[before]
                    since[before] = total if at is None else min(at, total)
            for i in range(1, n + 1):
                a, b = upto[i - 1], upto[i]
                upto[i] = b if a is None else a if b is None else max(a, b)
            for i in range(n - 1, -1, -1):
                a, b = since[i + 1], since[i]
                since[i] = b if a is None else a if b is None else min(a, b)
            self.measured_upto, self.measured_from = upto, since
        self.saved_at = sorted(self.saved)
        self.saved_upto = array("q", [0])
        for i in self.saved_at:
            self.saved_upto.append(self.saved_upto[-1] + self.saved[i])

    def removed(self, a: int, b: int) -> int:
        if a >= b:
            return 0
        held = self.held[b] - self.held[a]
        if self.measured_upto is not None and self.measured_from is not None:
            upto, since = self.measured_upto[b], self.measured_from[a]
            if upto is not None and since is not None:
                held = max(held, upto - since)
        at = self.saved_at
        return held - (self.saved_upto[bisect_left(at, b)] - self.saved_upto[bisect_left(at, a)])

    def save(self, index: int, tokens: int) -> None:
        """Stage 1 took ``tokens`` off message ``index``."""
        self.saved[index] = self.saved.get(index, 0) + tokens


def _floors(
    messages: Sequence[Message], floor: Estimator, result_floors: dict[tuple[int, int], int] | None
) -> list[int]:
    """``floor_tokens`` of each message's content, and in ``result_floors`` each tool result's content's and each
    text observation's (what stage 1 replaces with a stub: a result's content, an observation's whole text)."""
    if result_floors is None:
        return [floor_tokens(m.content, floor) for m in messages]
    each = []
    for mi, message in enumerate(messages):
        total = 0
        for bi, block in enumerate(message.content):
            if isinstance(block, ToolResult):
                inner = floor_tokens(block.content, floor)
                result_floors[(mi, bi)] = inner
                total += inner
            elif isinstance(block, Text) and block.observation_of:
                inner = floor.block(block)
                result_floors[(mi, bi)] = inner
                total += inner
            elif isinstance(block, (Text, Thinking, ToolCall)):
                total += floor.block(block)
        each.append(total)
    return each


def _dropped_turns(bounds: Sequence[int], tokens: Sequence[int], start: int, stop: int) -> tuple[Dropped, ...]:
    """The turns (``turn_bounds``), or their tails, inside ``[start, stop)``."""
    out = []
    last: int | None = None
    for k in range(max(bisect_right(bounds, start, 0, max(len(bounds) - 1, 0)) - 1, 0), len(bounds) - 1):
        a, b = max(bounds[k], start), min(bounds[k + 1], stop)
        if a >= stop:
            break
        if a < b:
            if last == a:
                a = last  # one integer object where a turn ends and the next starts
            out.append(Dropped("turn", a, b, sum(tokens[a:b])))
            last = b
    return tuple(out)


def _dropped_units(units: Sequence[Unit], tokens: Sequence[int]) -> tuple[Dropped, ...]:
    return tuple(
        Dropped("round" if isinstance(u, Round) else "message", u.start, u.stop, sum(tokens[u.start : u.stop]))
        for u in units
    )


def _too_long(
    tokens: Sequence[int],
    results: Sequence[ResultRef],
    candidates: Sequence[ResultRef],
    units: Sequence[Unit],
    take: int,
    *,
    budget: int,
    preamble: int,
    head: tuple[int, int],
    note: int,
    opener: tuple[int, int] | None,
    preamble_source: PreambleSource = "recorded",
) -> Cause:
    """The smallest request stage 3 builds, part by part as estimated (the preamble as ``preamble_source`` says),
    and the one part that alone is over the budget, if there is one."""

    def cost(a: int, b: int) -> int:
        return sum(tokens[a:b])

    said = {"inferred": "inferred ", "given": "given "}.get(preamble_source, "")
    parts = [
        CausePart("preamble", f"{said}system prompt and tools", preamble),
        CausePart(
            "head", "first message" + (" and its tool results" if head[1] > head[0] + 1 else ""), cost(*head), *head
        ),
        CausePart("note", "truncation note", note),
    ]
    if opener:
        parts.append(CausePart("opener", "the last turn's opening message", cost(*opener), *opener))
    tail = units[len(units) - take :] if take else ()
    if tail:
        first = tail[0]
        kind = "newest tool round" if isinstance(first, Round) else "newest message"
        parts.append(CausePart("newest", kind, cost(first.start, first.stop), first.start, first.stop))
        if len(tail) > 1:
            a, b = tail[1].start, tail[-1].stop
            parts.append(CausePart("after", "the messages after it", cost(a, b), a, b))
    return Cause(budget, tuple(parts), _alone(parts, results, candidates, budget=budget))


def _measured_parts(size: Size, before: int, stage1: int, note: int, after: int, changed: str) -> tuple[CausePart, ...]:
    """The smallest request of a fit from an anchored ``size``, part by part as ``_decide`` counted it: the
    request the provider measured, its reply and the estimate of what came after it (``Size``), the estimate
    of what ``changed`` it since (the notice, repairs: ``before`` is the size with them), the truncation note
    (``note``, counted from above), and less what stage 1 took off (``stage1``) and stages 2 and 3 left out,
    both counted from below. They add up to ``after``, the size the decision compared with the budget."""
    parts = [CausePart("measured", "measured request", size.measured_tokens)]
    if size.reply_tokens:
        parts.append(CausePart("reply", "its reply", size.reply_tokens))
    if size.estimated_tokens:
        parts.append(CausePart("estimated", "estimate of the messages after it", size.estimated_tokens))
    if before != size.tokens:
        parts.append(CausePart("changes", f"estimate of the {changed}", before - size.tokens))
    parts.append(CausePart("note", "truncation note", note))
    removed = before + note - after
    if removed:
        what = "cleared" if removed == stage1 else "left out" if not stage1 else "cleared and left out"
        parts.append(CausePart("removed", f"what is {what}, at least", -removed))
    return tuple(parts)


def _alone(
    parts: Sequence[CausePart], results: Sequence[ResultRef], candidates: Sequence[ResultRef], *, budget: int
) -> Alone | None:
    """The most specific piece of the smallest request that is, by itself,
    over the budget: the preamble, a tool result kept whole, or a whole part."""
    by_kind = {p.kind: p for p in parts}
    if by_kind["preamble"].tokens > budget:
        return Alone("the system prompt and tool definitions", by_kind["preamble"].tokens, "preamble")
    cleared = {(r.message_index, r.block_index) for r in candidates}  # stage 3 runs after every batch
    whole = [
        r
        for r in results
        if (r.message_index, r.block_index) not in cleared
        and any(p.start is not None and p.stop is not None and p.start <= r.message_index < p.stop for p in parts)
    ]
    if whole:
        largest = max(whole, key=lambda r: r.tokens)
        if largest.tokens > budget:
            which = "the newest tool result" if largest is results[-1] else f"tool result {largest.call_id}"
            return Alone(which, largest.tokens, "result", largest.call_id)
    for part in parts:
        if part.kind in ("head", "note", "opener", "newest", "after") and part.tokens > budget:
            label = f"the messages after the {by_kind['newest'].label}" if part.kind == "after" else part.label
            return Alone(label if label.startswith("the ") else f"the {label}", part.tokens, part.kind)
    return None


def _with_notice(transcript: Transcript) -> Transcript:
    """``notice.with_notice``, imported (with its patterns) only for a fit that adds the notice."""
    from .notice import with_notice

    return with_notice(transcript)


def repaired(transcript: Transcript, plan: Plan) -> Transcript:
    """The messages the plan's indices refer to: with the notice and the repairs applied."""
    source = _with_notice(transcript) if plan.notice_added else transcript
    return repair(source)[0] if plan.repairs else source


def apply_plan(transcript: Transcript, plan: Plan) -> Transcript:
    """The request ``plan`` describes. The input is never modified."""
    source = repaired(transcript, plan)
    if plan.outcome == "fits":
        return source
    messages = clear_results(source.messages, plan.cleared)
    if plan.outcome == "cleared":
        return replace(source, messages=tuple(messages))
    head = messages[plan.head[0] : plan.head[1]]
    rest = [m for start, stop in plan.kept for m in messages[start:stop]]
    return replace(source, messages=(*head, _note_message(), *rest))


def fitted_shape(transcript: Transcript, plan: Plan) -> Transcript:
    """The request ``apply_plan`` builds with its cleared results left as they were (no stub made): the same
    messages, in the same places, with the same roles, sources and blocks, but for a stub's text. What
    ``check_request`` reads of a request (roles, which blocks are calls, results or reasoning, the calls' ids
    and names, the results' ids, sources) a stub keeps as its result had it (``_stub_of`` keeps the result's
    call id, or the text observation a text), so ``check_request`` of this is ``check_request`` of
    ``apply_plan``'s (tests/test_fit_arrays.py compares them). Where nothing is left out (``fits``,
    ``cleared``) it is the input as repaired (``repaired``): the input itself when nothing was repaired."""
    source = repaired(transcript, plan)
    if plan.outcome in ("fits", "cleared"):
        return source
    messages = source.messages
    head = messages[plan.head[0] : plan.head[1]]
    rest = [m for start, stop in plan.kept for m in messages[start:stop]]
    return replace(source, messages=(*head, _note_message(), *rest))


@frozen
class Fitted:
    """A plan and the request it describes."""

    plan: Plan
    transcript: Transcript


def keep_cleared(transcript: Transcript, plan: Plan, store: ResultStore, *, source: str = "") -> tuple[Entry, ...]:
    """Put every result ``plan`` clears into ``store``, under the handles its
    stubs name (``plan_fit`` with ``page_tokens``), in one transaction; their
    entries, oldest first. ``source`` names the transcript (default its path)."""
    from .store.content import stored_block

    page_tokens = plan.options.page_tokens
    if page_tokens is None or not plan.cleared:
        return ()
    messages = repaired(transcript, plan).messages
    items = []
    for ref in plan.cleared:
        block = messages[ref.message_index].content[ref.block_index]
        assert isinstance(block, (ToolResult, Text))
        item = stored_block(
            block,
            tool=ref.tool,
            call_id=ref.call_id,
            tokens=ref.tokens,
            source=source or transcript.source.path,
            page_tokens=page_tokens,
        )
        assert item.handle == ref.handle and len(item.pages) == ref.pages, "the plan's handle is the content's"
        items.append(item)
    return store.put_many(items)


def fit(
    transcript: Transcript,
    *,
    budget: int,
    estimator: Estimator | None = None,
    batch_size: int = DEFAULTS.batch_size,
    protected_fraction: float = DEFAULTS.protected_fraction,
    min_clear_ratio: float = DEFAULTS.min_clear_ratio,
    add_notice: bool = DEFAULTS.add_notice,
    store: ResultStore | None = None,
    size: Size | None = None,
    page_tokens: int | None = DEFAULTS.page_tokens,
    batch_tokens: int | None = DEFAULTS.batch_tokens,
    cut_step: int | None = DEFAULTS.cut_step,
    carried_cut: int | None = DEFAULTS.carried_cut,
) -> Fitted:
    """``plan_fit`` then ``apply_plan``. With ``store``, every cleared result is
    put in it first, in pages of ``page_tokens`` (default ``PAGE_TOKENS``), and
    the stubs name their handles. ``size`` is as for ``plan_fit``: pass
    ``predict_size(session, estimator)`` of a recorded session so that the fit
    starts from the provider's measured count where the file records one (the
    estimator must be the one the size was predicted with)."""
    from .store.base import PAGE_TOKENS

    plan = plan_fit(
        transcript,
        budget=budget,
        estimator=estimator,
        size=size,
        batch_size=batch_size,
        protected_fraction=protected_fraction,
        min_clear_ratio=min_clear_ratio,
        add_notice=add_notice,
        page_tokens=(page_tokens or PAGE_TOKENS) if store is not None else None,
        batch_tokens=batch_tokens,
        cut_step=cut_step,
        carried_cut=carried_cut,
    )
    if store is not None:
        keep_cleared(transcript, plan, store)
    return Fitted(plan, apply_plan(transcript, plan))


Limit: TypeAlias = Literal["window", "budget"]


def crossed(plan: Plan, window: int | None = None) -> Limit | None:
    """Which limit the fitted request is over: the model's window (the provider
    rejects it), else the budget (too long, though the model would read it), or none."""
    if window is not None and plan.tokens_after > window:
        return "window"
    return "budget" if plan.tokens_after > plan.options.budget else None


def too_long_message(plan: Plan) -> str:
    """The person-facing words for ``too-long``, with the cause."""
    return f"{TOO_LONG_MESSAGE} (Cause: {plan.cause}.)"
