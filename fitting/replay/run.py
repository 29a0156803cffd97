"""The replay itself: every request of a session, one per assistant reply,
fitted by each policy in turn, with what a provider's prefix cache could reuse
between consecutive requests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ..estimate import Estimator
from ..repair import repair
from ..transcript import Transcript, Usage
from .requests import Recorded
from .session import NOTE, Fenwick, Policy, PolicyFactory, Sent, Session


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


@dataclass(frozen=True, slots=True)
class Run:
    """One policy's replay of a session, with its totals."""

    policy: str
    steps: tuple[Step, ...]
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
    def cache_read_tokens(self) -> int:
        return sum(s.cache_read_tokens for s in self.steps)

    @property
    def cache_write_tokens(self) -> int:
        return sum(s.cache_write_tokens for s in self.steps)

    @property
    def cache_hit_rate(self) -> float:
        """The share of the sent tokens the provider's cache served (see ``cache.CacheModel``)."""
        return self.cache_read_tokens / self.sent_tokens if self.sent_tokens else 0.0

    @property
    def cost_usd(self) -> float | None:
        """The input cost of every request, in dollars; None when unpriced."""
        return sum(s.cost_usd or 0.0 for s in self.steps) if self.priced else None

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
) -> tuple[Run, ...]:
    """Every request of ``transcript`` fitted by each policy, in order. Orphans
    are repaired first, as ``fit`` does, so each request is one a harness could send.
    ``preamble`` replaces the estimate of the system prompt and tools (an inferred
    or given one, for a file that does not record them); it counts in every request.
    ``requests`` are the requests a log recorded (``requests.replay_targets``): then
    each of them is a step, in order, rather than one per assistant reply. ``times`` are when
    each line of the file was written (``times.line_times``): policies that react to idle gaps
    read a step's time from its line."""
    original = transcript
    transcript, _ = repair(transcript)
    session = Session.of(transcript, estimator)
    if preamble is not None:
        session.preamble = preamble
    measured = _measured_at(original, transcript)
    lines: dict[int, int | None] = {}
    if requests:
        by_size = {u.before: u for u in original.usage}
        measured, session.steps = {}, []
        for r in requests:
            held = _held_after_repair(original, transcript, r.held)
            if session.steps and held <= session.steps[-1]:
                continue  # policies take growing requests; a repair can merge two (never in a valid log)
            session.steps.append(held)
            lines[held] = r.line
            if r.held in by_size:
                measured[held] = by_size[r.held]
    for n in session.steps:
        line = lines[n] if requests else transcript.messages[n].source.line
        if times and line is not None and line in times:
            session.step_times[n] = times[line]
    turn_starts = set(session.turn_starts)
    runs = []
    for factory in policies:
        policy = factory(session, budget)
        steps: list[Step] = []
        previous: Sent | None = None
        ever_cleared: set[int] = set()
        for index, n in enumerate(session.steps):
            sent = policy.request(n)
            ever_cleared.update(sent.newly_cleared)
            shared, broke = _shared_prefix(session, policy, previous, sent) if previous else (0, False)
            steps.append(
                Step(
                    index,
                    n,
                    lines[n] if requests else transcript.messages[n].source.line,
                    session.preamble + session.before[n],
                    sent.tokens,
                    sent.outcome,
                    sent.cleared,
                    shared,
                    broke,
                    window is not None and sent.tokens > window,
                    measured[n].total if n in measured else None,
                    measured[n].cache_read_tokens if n in measured else None,
                    measured[n].cache_creation_tokens if n in measured else None,
                    turn_start=n - 1 in turn_starts,
                )
            )
            previous = sent
        retrievable = sum(session.results[r].tokens for r in ever_cleared)
        runs.append(Run(policy.name, tuple(steps), retrievable, len(ever_cleared)))
    return tuple(runs)


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
