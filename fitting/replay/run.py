"""The replay itself: every request of a session, one per assistant reply,
fitted by each policy in turn, with what a provider's prefix cache could reuse
between consecutive requests."""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import overload

from .._frozen import frozen
from ..columns import PLAIN_SOURCE, Columns, columns_from_stream
from ..estimate import Estimator
from ..repair import repair
from ..transcript import Message, Transcript, Usage
from .requests import Recorded
from .session import NOTE, Fenwick, Policy, PolicyFactory, Sent, Session


@frozen
class Step:
    """One request of a replay."""

    index: int
    messages: int
    """The request held ``messages[:messages]`` of the session."""
    line: int | None
    """Where the assistant reply this request produced sits in the file."""
    raw_tokens: int
    sent_tokens: int
    outcome: str
    cleared: int
    shared_prefix_tokens: int
    """The longest common prefix with the previous sent request, in tokens."""
    prefix_break: bool
    """The previous request is not a prefix of this one: the cleared or dropped part changed."""
    rejected: bool
    """The sent request exceeds the window."""
    measured_tokens: int | None = None
    """What the provider measured for this request (unfitted), where the file records it."""
    recorded_cache_read: int | None = None
    """The cache reads the provider recorded for this request (unfitted), where the file records them."""
    recorded_cache_write: int | None = None
    cache_read_tokens: int = 0
    """What the provider's cache served of this request (``cache.CacheModel``; 0 until priced)."""
    cache_write_tokens: int = 0
    """What this request wrote to the cache (Anthropic's breakpoints; 0 for automatic caches)."""
    cost_usd: float | None = None
    """The request's input cost in dollars; None when unpriced."""
    turn_start: bool = False
    """The request's newest message starts a user turn (a prompt, not a tool result): what
    ``cache.check`` groups recorded cache misses by."""


MISSING = -1
"""An optional integer column's None (lines, token counts and indices are never negative)."""


def _optional(value: int) -> int | None:
    return None if value == MISSING else value


def narrowed(column: array[int]) -> array[int]:
    """``column`` (of ``array("q")``) as a copy in the narrowest signed machine integer that holds each of its
    values, or itself when none is narrower. A column that is done growing: a replay of eleven policies over
    190,000 requests kept every token count of every step in 8 bytes, where 4 hold them (issue 11, item 5)."""
    if column.typecode != "q" or not column:
        return column
    lo, hi = min(column), max(column)
    for code in ("b", "h", "i"):
        bound = 1 << (array(code).itemsize * 8 - 1)
        if -bound <= lo and hi < bound:
            return array(code, column)
    return column


@dataclass(frozen=True, slots=True, eq=False)
class Requests:
    """What every policy's steps share, one entry per request: columns of machine integers, not objects
    (a replay of eleven policies over 190,000 requests kept 2 x 11 x 190,000 ``Step`` objects, issue 11)."""

    messages: array[int]
    line: array[int]
    raw: array[int]
    measured: array[int]
    recorded_read: array[int]
    recorded_write: array[int]
    turn_start: array[int]


BREAK, REJECTED = 1, 2
"""``Steps.flags`` bits."""


class Steps(Sequence[Step]):
    """One policy's steps as columns (``Requests`` shared between the policies of a replay); indexing or
    iterating builds each ``Step`` when it is read."""

    __slots__ = (
        "cache_read",
        "cache_write",
        "cleared",
        "cost",
        "flags",
        "outcome",
        "outcomes",
        "requests",
        "sent",
        "shared",
    )

    def __init__(self, requests: Requests, outcomes: Sequence[str]) -> None:
        self.requests = requests
        self.outcomes = list(outcomes)
        """The outcome names ``outcome`` indexes."""
        self.sent: array[int] = array("q")
        self.outcome: array[int] = array("B")
        self.cleared: array[int] = array("q")
        self.shared: array[int] = array("q")
        self.flags: array[int] = array("B")
        self.cache_read: array[int] | None = None
        """Filled by ``cache.CacheModel`` (None: every step 0), as ``cache_write`` and ``cost`` (NaN: None)."""
        self.cache_write: array[int] | None = None
        self.cost: array[float] | None = None

    def narrow(self) -> None:
        """Each integer column of the run in the narrowest machine integer that holds it (``narrowed``), once
        every step is in."""
        self.sent, self.cleared, self.shared = narrowed(self.sent), narrowed(self.cleared), narrowed(self.shared)

    def priced(self, read: array[int], write: array[int], cost: array[float] | None) -> Steps:
        """The same steps with the cache model's reads, writes and dollars (every other column shared)."""
        out = Steps.__new__(Steps)
        out.requests, out.outcomes = self.requests, self.outcomes
        out.sent, out.outcome, out.cleared, out.shared, out.flags = (
            self.sent,
            self.outcome,
            self.cleared,
            self.shared,
            self.flags,
        )
        out.cache_read, out.cache_write, out.cost = read, write, cost
        return out

    def __len__(self) -> int:
        return len(self.sent)

    def _step(self, i: int) -> Step:
        r, flags = self.requests, self.flags[i]
        cost = None
        if self.cost is not None and not math.isnan(self.cost[i]):
            cost = self.cost[i]
        return Step(
            i,
            r.messages[i],
            _optional(r.line[i]),
            r.raw[i],
            self.sent[i],
            self.outcomes[self.outcome[i]],
            self.cleared[i],
            self.shared[i],
            bool(flags & BREAK),
            bool(flags & REJECTED),
            _optional(r.measured[i]),
            _optional(r.recorded_read[i]),
            _optional(r.recorded_write[i]),
            self.cache_read[i] if self.cache_read is not None else 0,
            self.cache_write[i] if self.cache_write is not None else 0,
            cost,
            bool(r.turn_start[i]),
        )

    @overload
    def __getitem__(self, index: int) -> Step: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Step, ...]: ...
    def __getitem__(self, index: int | slice) -> Step | tuple[Step, ...]:
        if isinstance(index, slice):
            return tuple(self._step(i) for i in range(*index.indices(len(self))))
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("step index out of range")
        return self._step(index)

    def __iter__(self) -> Iterator[Step]:
        return (self._step(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]


@frozen
class Run:
    """One policy's replay of a session, with its totals."""

    policy: str
    steps: Sequence[Step]
    """A ``Steps`` from ``replay`` (columns); any sequence of ``Step`` otherwise."""
    retrievable_tokens: int = 0
    """Tokens of the results this policy cleared over the session (each counted
    once): what ``fit --store`` would keep retrievable by handle. What stages 2
    and 3 drop is not counted: dropped messages are not stored."""
    retrievable_results: int = 0
    """How many results that is."""
    priced: bool = False
    """Whether ``cache.CacheModel.priced`` gave its steps dollars."""

    @property
    def requests(self) -> int:
        return len(self.steps)

    @property
    def rejections(self) -> int:
        if isinstance(self.steps, Steps):
            return sum(1 for f in self.steps.flags if f & REJECTED)
        return sum(1 for s in self.steps if s.rejected)

    @property
    def sent_tokens(self) -> int:
        if isinstance(self.steps, Steps):
            return sum(self.steps.sent)
        return sum(s.sent_tokens for s in self.steps)

    @property
    def cached_tokens(self) -> int:
        """Tokens a prefix cache could serve: the prefix shared with the previous request."""
        if isinstance(self.steps, Steps):
            return sum(self.steps.shared)
        return sum(s.shared_prefix_tokens for s in self.steps)

    @property
    def uncached_tokens(self) -> int:
        return self.sent_tokens - self.cached_tokens

    @property
    def cache_read_tokens(self) -> int:
        if isinstance(self.steps, Steps):
            return sum(self.steps.cache_read or ())
        return sum(s.cache_read_tokens for s in self.steps)

    @property
    def cache_write_tokens(self) -> int:
        if isinstance(self.steps, Steps):
            return sum(self.steps.cache_write or ())
        return sum(s.cache_write_tokens for s in self.steps)

    @property
    def cache_hit_rate(self) -> float:
        """The share of the sent tokens the provider's cache served (see ``cache.CacheModel``)."""
        return self.cache_read_tokens / self.sent_tokens if self.sent_tokens else 0.0

    @property
    def cost_usd(self) -> float | None:
        """The input cost of every request, in dollars; None when unpriced."""
        if not self.priced:
            return None
        if isinstance(self.steps, Steps):
            return sum(0.0 if math.isnan(c) else c for c in self.steps.cost or ())
        return sum(s.cost_usd or 0.0 for s in self.steps)

    @property
    def prefix_breaks(self) -> int:
        if isinstance(self.steps, Steps):
            return sum(1 for f in self.steps.flags if f & BREAK)
        return sum(1 for s in self.steps if s.prefix_break)

    def outcome_shares(self) -> tuple[tuple[str, float], ...]:
        counts: dict[str, int] = {}
        if isinstance(self.steps, Steps):
            for code in self.steps.outcome:
                name = self.steps.outcomes[code]
                counts[name] = counts.get(name, 0) + 1
        else:
            for s in self.steps:
                counts[s.outcome] = counts.get(s.outcome, 0) + 1
        return tuple((k, v / max(len(self.steps), 1)) for k, v in sorted(counts.items()))


def _sequence_prefix(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> int:
    """How many leading message positions two segment lists share (same message, same order)."""
    shared = 0
    ia = ib = 0
    pa = a[0][0] if a else 0
    pb = b[0][0] if b else 0
    while ia < len(a) and ib < len(b):
        (sa, ea), (sb, eb) = a[ia], b[ib]
        if (sa, ea) == (NOTE, NOTE) or (sb, eb) == (NOTE, NOTE):
            if (sa, ea) != (sb, eb):
                return shared
            shared += 1
            ia, ib = ia + 1, ib + 1
            pa = a[ia][0] if ia < len(a) else 0
            pb = b[ib][0] if ib < len(b) else 0
            continue
        if pa != pb:
            return shared
        run = min(ea - pa, eb - pb)
        shared += run
        pa, pb = pa + run, pb + run
        if pa == ea:
            ia += 1
            pa = a[ia][0] if ia < len(a) else 0
        if pb == eb:
            ib += 1
            pb = b[ib][0] if ib < len(b) else 0
        if pa != pb and ia < len(a) and ib < len(b):
            return shared
    return shared


def _positions(segments: Sequence[tuple[int, int]]) -> int:
    return sum(1 if s == (NOTE, NOTE) else s[1] - s[0] for s in segments)


def _tokens_before(session: Session, tree: Fenwick, segments: Sequence[tuple[int, int]], position: int) -> int:
    """Tokens of the request's first ``position`` messages (preamble included)."""
    total = session.preamble
    for start, stop in segments:
        if position <= 0:
            break
        if (start, stop) == (NOTE, NOTE):
            total += session.note_tokens
            position -= 1
            continue
        take = min(position, stop - start)
        total += tree.range(start, start + take)
        position -= take
    return total


def _shared_prefix(session: Session, policy: Policy, previous: Sent, sent: Sent) -> tuple[int, bool]:
    """Tokens the two requests share from the start, and whether the previous
    one is not a prefix of this one (a prefix break)."""
    if len(previous.segments) == 1 == len(sent.segments) and not sent.newly_cleared:
        # Both whole histories from message 0, nothing newly cleared (most requests of most
        # policies): the shared prefix is the previous request, as ``_sequence_prefix`` finds.
        (a, m), (b, n) = previous.segments[0], sent.segments[0]
        if a == b == 0 and m <= n:
            return session.preamble + policy.sizes().prefix(m), False
    return _shared_prefix_of_segments(session, policy, previous, sent)


def _shared_prefix_of_segments(session: Session, policy: Policy, previous: Sent, sent: Sent) -> tuple[int, bool]:
    """``_shared_prefix`` for any two requests, message position by position."""
    common = _sequence_prefix(previous.segments, sent.segments)
    # A result cleared now changes its message: the shared prefix ends inside it.
    first: tuple[int, int, int] | None = None
    for r in sent.newly_cleared:
        info = session.results[r]
        position = _position_of(sent.segments, info.message_index)
        if position is not None and position < common:
            candidate = (position, info.message_index, info.block_index)
            first = candidate if first is None or candidate < first else first
    if first is not None:
        position, mi, bi = first
        return _tokens_before(session, policy.sizes(), sent.segments, position) + policy.block_prefix(mi, bi), True
    shared = _tokens_before(session, policy.sizes(), sent.segments, common)
    return shared, common < _positions(previous.segments)


Progress = Callable[[int, int], None]
"""Told the requests replayed so far, over every policy, and how many there are in all."""
PROGRESS_STEPS = 256
"""How often, in requests, ``replay`` tells its ``progress``."""


def replay(
    transcript: Transcript,
    policies: Sequence[PolicyFactory],
    *,
    budget: int,
    estimator: Estimator,
    window: int | None = None,
    preamble: int | None = None,
    requests: Sequence[Recorded] = (),
    times: Mapping[int, float] | None = None,
    progress: Progress | None = None,
    not_requests: Collection[int] = (),
) -> tuple[Run, ...]:
    """Every request of ``transcript`` fitted by each policy, in order. Orphans
    are repaired first, as ``fit`` does, so each request is one a harness could send.
    ``preamble`` replaces the estimate of the system prompt and tools (an inferred
    or given one, for a file that does not record them); it counts in every request.
    ``requests`` are the requests a log recorded (``requests.replay_targets``): then
    each of them is a step, in order, rather than one per assistant reply. ``times`` are when
    each line of the file was written (``times.line_times``): policies that react to idle gaps
    read a step's time from its line. ``not_requests``: the lines of replies no request produced
    (``times.LineFacts.synthetic``), which are not steps. ``progress(done, total)`` is told how many of the
    requests of every policy are replayed, now and then (``PROGRESS_STEPS``) and at the end of each policy's
    run."""
    original = transcript
    transcript, _ = repair(transcript)
    session = Session.of(transcript, estimator)
    measured = _measured_at(original, transcript)
    lines: dict[int, int | None] = {}
    if requests:
        by_size = {u.before: u for u in original.usage}
        measured, session.steps = {}, array("q")
        for r in requests:
            held = _held_after_repair(original, transcript, r.held)
            if session.steps and held <= session.steps[-1]:
                continue  # policies take growing requests; a repair can merge two (never in a valid log)
            session.steps.append(held)
            lines[held] = r.line
            if r.held in by_size:
                measured[held] = by_size[r.held]
    messages = transcript.messages
    line_of: Callable[[int], int | None] = lines.__getitem__ if requests else lambda n: messages[n].source.line
    return _replay(
        session, policies, line_of, measured, budget=budget, window=window, preamble=preamble, times=times,
        progress=progress, not_requests=not_requests,
    )  # fmt: skip


def replay_columns(
    lined: LinedColumns,
    policies: Sequence[PolicyFactory],
    *,
    budget: int,
    estimator: Estimator,
    window: int | None = None,
    preamble: int | None = None,
    times: Mapping[int, float] | None = None,
    progress: Progress | None = None,
    not_requests: Collection[int] = (),
) -> tuple[Run, ...]:
    """``replay`` of the transcript ``lined.columns`` holds (``fitting.columns``: a plain message is its role
    and its estimate; ``lined.lines`` each message's line): the same runs, without
    a ``Message`` for each plain message. The session is the skeleton's (a shared stand-in of its role for
    each plain message), repaired as ``replay`` repairs; a repair never drops or changes a plain message, so
    the stand-ins meet their estimates and lines in the columns' order. A policy reads a message's content
    only to clear or mask a result, never of a plain message. ``estimator`` must have the columns' rule."""
    columns, lines = lined.columns, lined.lines
    if estimator.rule != columns.rule:
        raise ValueError("the columns were estimated with another rule")
    if len(lines) != len(columns):
        raise ValueError("one line a message")
    repaired, _ = repair(columns.skeleton())
    kept = columns.kept
    plain_tokens = iter(columns.plain_tokens)
    plain_lines = (lines[i] for i in range(len(columns)) if i not in kept)
    tokens, at = array("q"), array("q")
    for m in repaired.messages:
        if m.source is PLAIN_SOURCE:
            tokens.append(next(plain_tokens))
            at.append(next(plain_lines))
        else:  # a kept message, or one the repair made: as ``Session.of`` estimates it
            tokens.append(estimator.message(m).tokens)
            at.append(MISSING if m.source.line is None else m.source.line)
    session = Session.of(repaired, estimator, tokens, compact=True)

    def line_of(n: int) -> int | None:
        return _optional(at[n])

    return _replay(
        session, policies, line_of, {}, budget=budget, window=window, preamble=preamble, times=times,
        progress=progress, not_requests=not_requests,
    )  # fmt: skip


@frozen
class LinedColumns:
    """A transcript as columns (``fitting.columns``) with each message's line (``MISSING``: none), which a
    plain message's stand-in does not keep: what ``replay_columns`` replays."""

    columns: Columns
    lines: array[int]


def lined_columns(messages: Iterable[Message], header: Callable[[], Transcript], estimator: Estimator) -> LinedColumns:
    """``columns_from_stream`` of ``messages`` (read once, none of the plain ones kept), each message's line
    taken as it passes."""
    lines = array("q")

    def tapped() -> Iterator[Message]:
        append = lines.append
        for message in messages:
            line = message.source.line
            append(MISSING if line is None else line)
            yield message

    columns = columns_from_stream(tapped(), header, estimator)
    return LinedColumns(columns, narrowed(lines))


def _replay(
    session: Session,
    policies: Sequence[PolicyFactory],
    line_of: Callable[[int], int | None],
    measured: Mapping[int, Usage],
    *,
    budget: int,
    window: int | None,
    preamble: int | None,
    times: Mapping[int, float] | None,
    progress: Progress | None = None,
    not_requests: Collection[int] = (),
) -> tuple[Run, ...]:
    """Each policy's run over ``session``'s steps; ``line_of(n)`` is where the request of ``messages[:n]``
    is in the file (its reply's line, or the recorded request's). A step whose line is in ``not_requests``
    (a reply the harness wrote itself) is no request, and is left out."""
    if preamble is not None:
        session.preamble = preamble
    if not_requests:
        kept = [n for n in session.steps if line_of(n) not in not_requests]
        if len(kept) != len(session.steps):
            session.steps = array("q", kept) if isinstance(session.steps, array) else kept
    for n in session.steps:
        line = line_of(n)
        if times and line is not None and line in times:
            session.step_times[n] = times[line]
    turn_starts = set(session.turn_starts)
    shared_columns = _requests(session, line_of, measured, turn_starts)
    del turn_starts
    runs = []
    total = len(policies) * len(session.steps)
    done = 0
    for factory in policies:
        policy = factory(session, budget)
        steps = Steps(shared_columns, OUTCOMES)
        codes = {name: i for i, name in enumerate(steps.outcomes)}
        sent_col, outcome_col, cleared_col = steps.sent, steps.outcome, steps.cleared
        shared_col, flags_col = steps.shared, steps.flags
        previous: Sent | None = None
        ever_cleared: set[int] = set()
        for n in session.steps:
            sent = policy.request(n)
            ever_cleared.update(sent.newly_cleared)
            shared, broke = _shared_prefix(session, policy, previous, sent) if previous else (0, False)
            code = codes.get(sent.outcome)
            if code is None:
                code = codes[sent.outcome] = len(steps.outcomes)
                steps.outcomes.append(sent.outcome)
            sent_col.append(sent.tokens)
            outcome_col.append(code)
            cleared_col.append(sent.cleared)
            shared_col.append(shared)
            flags_col.append((BREAK if broke else 0) | (REJECTED if window is not None and sent.tokens > window else 0))
            previous = sent
            done += 1
            if progress is not None and not done % PROGRESS_STEPS:
                progress(done, total)
        if progress is not None:
            progress(done, total)
        name = policy.name
        del policy, previous  # the next policy is built without this one's trees and stubs alive
        steps.narrow()
        retrievable = sum(session.results[r].tokens for r in ever_cleared)
        runs.append(Run(name, steps, retrievable, len(ever_cleared)))
    return tuple(runs)


OUTCOMES = ("fits", "cleared", "turns-dropped", "rounds-dropped", "too-long", "over-budget")
"""The outcomes the policies give (a policy giving another adds it to its ``Steps.outcomes``)."""


def _requests(
    session: Session,
    line_of: Callable[[int], int | None],
    measured: Mapping[int, Usage],
    turn_starts: set[int],
) -> Requests:
    """The columns every policy's steps share."""
    out = Requests(array("q"), array("q"), array("q"), array("q"), array("q"), array("q"), array("B"))
    for n in session.steps:
        line = line_of(n)
        usage = measured.get(n)
        out.messages.append(n)
        out.line.append(MISSING if line is None else line)
        out.raw.append(session.preamble + session.before[n])
        out.measured.append(MISSING if usage is None else usage.total)
        out.recorded_read.append(MISSING if usage is None else usage.cache_read_tokens)
        out.recorded_write.append(MISSING if usage is None else usage.cache_creation_tokens)
        out.turn_start.append(n - 1 in turn_starts)
    return Requests(*(narrowed(getattr(out, f.name)) for f in fields(Requests)))


def _held_after_repair(original: Transcript, repaired: Transcript, held: int) -> int:
    """How many of the repaired messages a request of ``original.messages[:held]`` holds once
    repaired as ``fit`` repairs it."""
    if repaired.messages is original.messages:
        return held
    alone, _ = repair(replace(original, messages=original.messages[:held]))
    return min(len(alone.messages), len(repaired.messages))


def _measured_at(original: Transcript, repaired: Transcript) -> dict[int, Usage]:
    """The measured usage of each request, by how many messages of ``repaired`` it
    held: placed by its reply, which repairs never change."""
    if repaired.messages is original.messages:
        return {u.before: u for u in original.usage}
    position = {id(m): i for i, m in enumerate(repaired.messages)}
    out = {}
    for u in original.usage:
        if 0 <= u.before < len(original.messages) and id(original.messages[u.before]) in position:
            out[position[id(original.messages[u.before])]] = u
    return out


def _position_of(segments: Sequence[tuple[int, int]], message_index: int) -> int | None:
    position = 0
    for start, stop in segments:
        if (start, stop) == (NOTE, NOTE):
            position += 1
            continue
        if start <= message_index < stop:
            return position + message_index - start
        position += stop - start
    return None
