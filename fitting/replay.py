"""Replaying a session request by request (issue 4): every request the agent
sent — one per assistant reply, holding everything before it — fitted by a
policy, with what the provider's prefix cache could reuse between requests.

The replay is incremental: each message is estimated once, and a policy keeps
its state from one request to the next (a Fenwick tree of the current message
sizes, a protected-tail pointer, the candidate list), so a session of N steps
costs about one estimate of the session, not N.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .estimate import Estimator
from .fit import (
    BATCH_SIZE,
    MIN_CLEAR_RATIO,
    PROTECTED_FRACTION,
    TRUNCATION_NOTE,
    ResultRef,
    clear_into,
    result_refs,
)
from .repair import repair
from .transcript import Message, Round, Text, Transcript, iter_units

NOTE = -1
"""The truncation note's place in a request's message sequence."""


class Fenwick:
    """Prefix sums with point updates, both O(log n)."""

    def __init__(self, values: Sequence[int]) -> None:
        self.n = len(values)
        tree = [0] * (self.n + 1)
        for i, v in enumerate(values, start=1):
            tree[i] += v
            j = i + (i & -i)
            if j <= self.n:
                tree[j] += tree[i]
        self.tree = tree

    def add(self, index: int, delta: int) -> None:
        i = index + 1
        while i <= self.n:
            self.tree[i] += delta
            i += i & -i

    def prefix(self, stop: int) -> int:
        """Sum of values ``[0, stop)``."""
        total, i = 0, stop
        while i > 0:
            total += self.tree[i]
            i -= i & -i
        return total

    def range(self, start: int, stop: int) -> int:
        return self.prefix(stop) - self.prefix(start) if stop > start else 0


@dataclass(slots=True)
class Session:
    """What every policy reads: the transcript's messages, their estimates and
    structure, computed once for the whole session."""

    transcript: Transcript
    estimator: Estimator
    tokens: list[int] = field(default_factory=list)
    preamble: int = 0
    results: tuple[ResultRef, ...] = ()
    result_messages: list[int] = field(default_factory=list)
    """Each result's message index, in order (for bisecting)."""
    turn_starts: list[int] = field(default_factory=list)
    unit_starts: list[int] = field(default_factory=list)
    round_starts: list[int] = field(default_factory=list)
    head_stop: int = 1
    note_tokens: int = 0
    steps: list[int] = field(default_factory=list)
    """The requests: each is ``messages[:n]`` for an assistant reply at index ``n``."""

    @classmethod
    def of(cls, transcript: Transcript, estimator: Estimator) -> Session:
        s = cls(transcript, estimator)
        messages = transcript.messages
        s.tokens = [estimator.message(m).tokens for m in messages]
        s.preamble = estimator.preamble(transcript)
        s.results = result_refs(messages, estimator)
        s.result_messages = [r.message_index for r in s.results]
        s.turn_starts = [i for i, m in enumerate(messages) if m.starts_turn]
        if messages and (not s.turn_starts or s.turn_starts[0] != 0):
            s.turn_starts.insert(0, 0)
        for unit in iter_units(messages, 0, len(messages)):
            s.unit_starts.append(unit.start)
            if isinstance(unit, Round):
                s.round_starts.append(unit.start)
        first_units = s.unit_starts[1] if len(s.unit_starts) > 1 else len(messages)
        s.head_stop = first_units if s.round_starts[:1] == [0] else min(1, len(messages))
        s.note_tokens = estimator.message(Message("user", (Text(TRUNCATION_NOTE),))).tokens
        s.steps = [i for i, m in enumerate(messages) if m.role == "assistant" and i > 0]
        return s


@dataclass(frozen=True, slots=True)
class Sent:
    """The request a policy sends for ``messages[:n]``."""

    outcome: str
    tokens: int
    cleared: int
    segments: tuple[tuple[int, int], ...]
    """The message ranges sent, in order; ``(NOTE, NOTE)`` marks the note."""
    newly_cleared: tuple[int, ...] = ()
    """Indices (into ``Session.results``) of results this request clears that the previous one did not."""


class Policy(Protocol):
    """Fits each request of a replay, in order, keeping state between them."""

    name: str

    def request(self, n: int) -> Sent:
        """The request holding ``messages[:n]``; ``n`` only grows between calls."""
        ...

    def sizes(self) -> Fenwick:
        """Each message's size in the latest request (stubs applied)."""
        ...

    def block_prefix(self, message_index: int, block_index: int) -> int:
        """Tokens of a message's blocks before ``block_index``, as last sent."""
        ...


PolicyFactory = Callable[[Session, int], Policy]
"""Builds a policy for a session and a budget."""


class _Stubbed:
    """The messages as last sent (some results stubbed) and their sizes, as a Fenwick tree."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.messages = list(session.transcript.messages)
        self.tree = Fenwick(session.tokens)
        self.current = list(session.tokens)

    def clear(self, result_index: int) -> None:
        ref = self.session.results[result_index]
        clear_into(self.messages, [ref])
        new = self.session.estimator.message(self.messages[ref.message_index]).tokens
        self.tree.add(ref.message_index, new - self.current[ref.message_index])
        self.current[ref.message_index] = new

    def block_prefix(self, message_index: int, block_index: int) -> int:
        """Tokens of the message's blocks before ``block_index`` in their current version."""
        return sum(self.session.estimator.message(self.messages[message_index]).block_tokens[:block_index])


def _first_fitting(starts: Sequence[int], n: int, tree: Fenwick, room: int) -> int:
    """The first of ``starts`` whose tail ``[start, n)`` fits in ``room`` tokens
    (tails only shrink as the start moves on), or ``len(starts)`` if none does."""
    lo, hi = 0, len(starts)
    while lo < hi:
        mid = (lo + hi) // 2
        if tree.range(starts[mid], n) <= room:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _truncate(session: Session, tree: Fenwick, n: int, budget: int) -> tuple[str, int, tuple[tuple[int, int], ...]]:
    """Stages 2 and 3 of SPEC §3 on ``messages[:n]`` with the sizes in ``tree``."""
    s = session
    head = (0, min(s.head_stop, n))
    fixed = s.preamble + tree.range(*head) + s.note_tokens
    turns = s.turn_starts[bisect_right(s.turn_starts, head[1] - 1) : bisect_left(s.turn_starts, n)]
    # Stage 2: the smallest turn start whose tail fits (tails shrink as the start moves on).
    lo = _first_fitting(turns, n, tree, budget - fixed)
    if lo < len(turns):
        return "turns-dropped", fixed + tree.range(turns[lo], n), (head, (NOTE, NOTE), (turns[lo], n))
    # Stage 3: inside the last turn, the smallest unit start whose tail fits.
    last = s.turn_starts[bisect_right(s.turn_starts, n - 1) - 1] if s.turn_starts else 0
    opener = (last, last + 1) if last >= head[1] else None
    units_from = opener[1] if opener else head[1]
    units = s.unit_starts[bisect_left(s.unit_starts, units_from) : bisect_left(s.unit_starts, n)]
    floor = fixed + (tree.range(*opener) if opener else 0)
    lo = _first_fitting(units, n, tree, budget - floor)
    rounds = s.round_starts[bisect_left(s.round_starts, units_from) : bisect_left(s.round_starts, n)]
    newest = bisect_left(units, rounds[-1]) if rounds else len(units) - 1
    kept = ((opener,) if opener else ()) + ((units[lo], n),) if lo < len(units) else ()
    if lo < len(units) and lo <= newest:
        return "rounds-dropped", floor + tree.range(units[lo], n), (head, (NOTE, NOTE), *kept)
    take = units[newest] if units else n
    smallest = ((opener,) if opener else ()) + (((take, n),) if units else ())
    return "too-long", floor + tree.range(take, n), (head, (NOTE, NOTE), *smallest)


class WindowfitPolicy:
    """SPEC §3: clear candidates in batches, then whole turns, then whole rounds."""

    def __init__(
        self,
        session: Session,
        budget: int,
        *,
        batch_size: int = BATCH_SIZE,
        protected_fraction: float = PROTECTED_FRACTION,
        min_clear_ratio: float = MIN_CLEAR_RATIO,
    ) -> None:
        self.name = "windowfit" if batch_size == BATCH_SIZE else f"windowfit --batch-size {batch_size}"
        self.session, self.budget, self.batch_size = session, budget, batch_size
        self.allowance = budget * protected_fraction
        self.min_clear_ratio = min_clear_ratio
        self.stubbed = _Stubbed(session)
        self.raw = Fenwick(session.tokens)
        self.seen = 0  # results in the prefix
        self.protected_from = 0
        self.tail = 0  # tokens of results[protected_from:seen]
        self.scanned = 0  # results[:scanned] were considered for candidacy
        self.candidates: list[int] = []
        self.batches = 0
        self.cleared = 0

    def sizes(self) -> Fenwick:
        return self.stubbed.tree

    def block_prefix(self, message_index: int, block_index: int) -> int:
        return self.stubbed.block_prefix(message_index, block_index)

    def _advance(self, n: int) -> None:
        s = self.session
        while self.seen < len(s.results) and s.results[self.seen].message_index < n:
            self.tail += s.results[self.seen].tokens
            self.seen += 1
        while self.protected_from < self.seen - 1 and self.tail > self.allowance:
            self.tail -= s.results[self.protected_from].tokens
            self.protected_from += 1
        while self.scanned < self.protected_from:
            r = s.results[self.scanned]
            if r.tokens >= self.min_clear_ratio * r.stub_tokens:
                self.candidates.append(self.scanned)
            self.scanned += 1

    def _clear_upto(self, count: int) -> list[int]:
        new = self.candidates[self.cleared : count]
        for r in new:
            self.stubbed.clear(r)
        self.cleared = max(self.cleared, count)
        return new

    def request(self, n: int) -> Sent:
        s = self.session
        self._advance(n)
        raw = s.preamble + self.raw.prefix(n)
        if raw <= self.budget:
            return Sent("fits", raw, 0, ((0, n),))
        newly = self._clear_upto(min(self.batches * self.batch_size, len(self.candidates)))
        total = s.preamble + self.stubbed.tree.prefix(n)
        while total > self.budget and self.batches * self.batch_size < len(self.candidates):
            self.batches += 1
            newly += self._clear_upto(min(self.batches * self.batch_size, len(self.candidates)))
            total = s.preamble + self.stubbed.tree.prefix(n)
        if total <= self.budget:
            return Sent("cleared", total, self.cleared, ((0, n),), tuple(newly))
        outcome, tokens, segments = _truncate(s, self.stubbed.tree, n, self.budget)
        return Sent(outcome, tokens, self.cleared, segments, tuple(newly))


class LegacyPolicy:
    """The pre-fix truncation: cut only at the start of a user message, keeping
    the first message, a note and the newest whole turns that fit (at least the
    newest); with one turn there is nowhere to cut and everything is sent."""

    name = "legacy"

    def __init__(self, session: Session, budget: int) -> None:
        self.session, self.budget = session, budget
        self.tree = Fenwick(session.tokens)

    def sizes(self) -> Fenwick:
        return self.tree

    def block_prefix(self, message_index: int, block_index: int) -> int:
        return 0  # legacy never changes a message

    def request(self, n: int) -> Sent:
        s = self.session
        raw = s.preamble + self.tree.prefix(n)
        if raw <= self.budget:
            return Sent("fits", raw, 0, ((0, n),))
        turns = s.turn_starts[bisect_left(s.turn_starts, 1) : bisect_left(s.turn_starts, n)]
        if not turns:
            return Sent("over-budget", raw, 0, ((0, n),))
        fixed = s.preamble + self.tree.range(0, 1) + s.note_tokens
        lo = _first_fitting(turns, n, self.tree, self.budget - fixed)
        start = turns[min(lo, len(turns) - 1)]
        tokens = fixed + self.tree.range(start, n)
        return Sent(
            "turns-dropped" if tokens <= self.budget else "over-budget", tokens, 0, ((0, 1), (NOTE, NOTE), (start, n))
        )


class KeepLastPolicy:
    """Clear every tool result but the newest ``keep`` once the request is over
    the budget (the default of Anthropic's and LangChain's clear-tool-uses edits)."""

    def __init__(self, session: Session, budget: int, *, keep: int = 3) -> None:
        self.name = f"keep-last-{keep}"
        self.session, self.budget, self.keep = session, budget, keep
        self.raw = Fenwick(session.tokens)
        self.stubbed = _Stubbed(session)
        self.cleared = 0

    def sizes(self) -> Fenwick:
        return self.stubbed.tree

    def block_prefix(self, message_index: int, block_index: int) -> int:
        return self.stubbed.block_prefix(message_index, block_index)

    def request(self, n: int) -> Sent:
        s = self.session
        raw = s.preamble + self.raw.prefix(n)
        if raw <= self.budget:
            return Sent("fits", raw, 0, ((0, n),))
        seen = bisect_left(s.result_messages, n)
        target = max(0, seen - self.keep)
        newly = list(range(self.cleared, target))
        for r in newly:
            self.stubbed.clear(r)
        self.cleared = max(self.cleared, target)
        total = s.preamble + self.stubbed.tree.prefix(n)
        return Sent("cleared" if total <= self.budget else "over-budget", total, self.cleared, ((0, n),), tuple(newly))


# --------------------------------------------------------------------------
# The replay


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class Run:
    """One policy's replay of a session, with its totals."""

    policy: str
    steps: tuple[Step, ...]

    @property
    def requests(self) -> int:
        return len(self.steps)

    @property
    def rejections(self) -> int:
        return sum(1 for s in self.steps if s.rejected)

    @property
    def sent_tokens(self) -> int:
        return sum(s.sent_tokens for s in self.steps)

    @property
    def cached_tokens(self) -> int:
        """Tokens a prefix cache could serve: the prefix shared with the previous request."""
        return sum(s.shared_prefix_tokens for s in self.steps)

    @property
    def uncached_tokens(self) -> int:
        return self.sent_tokens - self.cached_tokens

    @property
    def prefix_breaks(self) -> int:
        return sum(1 for s in self.steps if s.prefix_break)

    def outcome_shares(self) -> tuple[tuple[str, float], ...]:
        counts: dict[str, int] = {}
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


def replay(
    transcript: Transcript,
    policies: Sequence[PolicyFactory],
    *,
    budget: int,
    estimator: Estimator,
    window: int | None = None,
) -> tuple[Run, ...]:
    """Every request of ``transcript`` fitted by each policy, in order. Orphans
    are repaired first, as ``fit`` does, so each request is one a harness could send."""
    transcript, _ = repair(transcript)
    session = Session.of(transcript, estimator)
    raw = Fenwick(session.tokens)
    runs = []
    for factory in policies:
        policy = factory(session, budget)
        steps: list[Step] = []
        previous: Sent | None = None
        for index, n in enumerate(session.steps):
            sent = policy.request(n)
            shared, broke = _shared_prefix(session, policy, previous, sent) if previous else (0, False)
            steps.append(
                Step(
                    index,
                    n,
                    transcript.messages[n].source.line,
                    session.preamble + raw.prefix(n),
                    sent.tokens,
                    sent.outcome,
                    sent.cleared,
                    shared,
                    broke,
                    window is not None and sent.tokens > window,
                )
            )
            previous = sent
        runs.append(Run(policy.name, tuple(steps)))
    return tuple(runs)


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


def standard_policies(*, keep: int = 3) -> tuple[PolicyFactory, ...]:
    """The four policies of the comparison table."""
    return (
        lambda s, b: WindowfitPolicy(s, b),
        lambda s, b: WindowfitPolicy(s, b, batch_size=1),
        lambda s, b: LegacyPolicy(s, b),
        lambda s, b: KeepLastPolicy(s, b, keep=keep),
    )
