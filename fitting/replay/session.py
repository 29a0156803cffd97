"""What every replay policy reads and returns: the session's messages with
their estimates and structure (computed once), the request a policy sends, the
policy protocol, and the shared machinery (prefix sums, stubbed messages)."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, MutableSequence, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Protocol, cast

from .._frozen import frozen
from ..estimate import Estimator
from ..fit import TRUNCATION_NOTE, ResultRef, clear_into, result_refs
from ..transcript import Message, Round, Text, Transcript, iter_units

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

    def first_reaching(self, target: int) -> int:
        """The smallest ``p`` with ``prefix(p) >= target`` (``n + 1`` if none),
        in one O(log n) descent of the tree; the values must not be negative."""
        if target <= 0:
            return 0
        position, remaining = 0, target
        step = 1 << self.n.bit_length()
        tree = self.tree
        while step:
            nxt = position + step
            if nxt <= self.n and tree[nxt] < remaining:
                position = nxt
                remaining -= tree[nxt]
            step >>= 1
        return position + 1


class StaticSizes(Fenwick):
    """A ``Fenwick`` whose values never change: prefix sums read from one list
    (O(1)) and searched by bisection, for policies that never change a message."""

    def __init__(self, values: Sequence[int], prefixes: Sequence[int] | None = None) -> None:
        self.n = len(values)
        self.sums = list(accumulate(values, initial=0)) if prefixes is None else prefixes

    def add(self, index: int, delta: int) -> None:
        raise TypeError("StaticSizes never changes")

    def prefix(self, stop: int) -> int:
        return self.sums[stop]

    def range(self, start: int, stop: int) -> int:
        return self.sums[stop] - self.sums[start] if stop > start else 0

    def first_reaching(self, target: int) -> int:
        if target <= 0:
            return 0
        return bisect_left(self.sums, target)


def _ints() -> array[int]:
    return array("q")


def _array(values: Iterable[int]) -> array[int]:
    """``values`` as ``array("q")``: itself when it is one (no copy)."""
    return values if isinstance(values, array) and values.typecode == "q" else array("q", values)


@dataclass(slots=True)
class Session:
    """What every policy reads: the transcript's messages, their estimates and
    structure, computed once for the whole session. The per-message values are lists,
    or with ``of(..., compact=True)`` columns of machine integers (``array("q")``)."""

    transcript: Transcript
    estimator: Estimator
    tokens: MutableSequence[int] = field(default_factory=_ints)
    preamble: int = 0
    results: tuple[ResultRef, ...] = ()
    result_messages: MutableSequence[int] = field(default_factory=_ints)
    """Each result's message index, in order (for bisecting)."""
    turn_starts: MutableSequence[int] = field(default_factory=_ints)
    unit_starts: MutableSequence[int] = field(default_factory=_ints)
    round_starts: MutableSequence[int] = field(default_factory=_ints)
    head_stop: int = 1
    note_tokens: int = 0
    steps: MutableSequence[int] = field(default_factory=_ints)
    """The requests: each is ``messages[:n]`` for an assistant reply at index ``n``."""
    before: MutableSequence[int] = field(default_factory=_ints)
    """``before[n]``: the tokens of ``messages[:n]`` unfitted (prefix sums: they never change)."""
    step_times: dict[int, float] = field(default_factory=dict)
    stubs: dict[tuple[int, int], tuple[Message, int]] = field(default_factory=dict)
    """Stubbing result ``r`` into a message version (by ``id``): the new version and its tokens, shared by
    every policy of the replay (each clears the same results into the same messages); the values keep
    every version alive, so the ids stay unique."""
    """When the request ``messages[:n]`` was sent (seconds since the epoch), where the log records it."""

    @classmethod
    def of(
        cls,
        transcript: Transcript,
        estimator: Estimator,
        tokens: Sequence[int] | None = None,
        *,
        compact: bool = False,
    ) -> Session:
        """The session of ``transcript``. ``tokens``: each message's estimate, where the caller has them
        (``replay_columns``: a plain message's from its column, its stand-in having no content); every
        other value is read from the messages' roles, calls and results alone, which a stand-in keeps.
        ``compact``: the per-message values (estimates, prefix sums, turn, unit and round starts, steps) as
        ``array("q")``, 8 B a value rather than a list's 36 B above 256, at
        the price of slower reads: an ``array`` read makes an int object, and the policies bisect the starts
        on every request (benchmarks/README.md, "Columns for ``replay``")."""
        column: Callable[[Iterable[int]], MutableSequence[int]] = _array if compact else list
        s = cls(transcript, estimator)
        messages = transcript.messages
        if tokens is None:
            s.tokens = column(estimator.message(m).tokens for m in messages)
        elif len(tokens) != len(messages):
            raise ValueError("one estimate a message")
        else:
            s.tokens = column(tokens)
        s.before = column(accumulate(s.tokens, initial=0))
        s.preamble = estimator.preamble(transcript)
        s.results = result_refs(messages, estimator)
        s.result_messages = column(r.message_index for r in s.results)
        s.turn_starts = column(i for i, m in enumerate(messages) if m.starts_turn)
        if messages and (not s.turn_starts or s.turn_starts[0] != 0):
            s.turn_starts.insert(0, 0)
        s.unit_starts, s.round_starts = column(()), column(())
        for unit in iter_units(messages, 0, len(messages)):
            s.unit_starts.append(unit.start)
            if isinstance(unit, Round):
                s.round_starts.append(unit.start)
        first_units = s.unit_starts[1] if len(s.unit_starts) > 1 else len(messages)
        s.head_stop = first_units if s.round_starts and s.round_starts[0] == 0 else min(1, len(messages))
        s.note_tokens = estimator.message(Message("user", (Text(TRUNCATION_NOTE),))).tokens
        s.steps = column(i for i, m in enumerate(messages) if m.role == "assistant" and i > 0)
        return s


@frozen
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
    """Fits each request of a replay, in order, keeping state between them.
    To add one to ``windowfit replay``, see ``policies.py`` (and docs/extending.md)."""

    name: str
    """The name replay's output shows (the registry sets it to the ``--policy`` name)."""

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


class Untouched:
    """What a policy that never changes a message (it only cuts, or sends everything) shares: every
    message keeps its own size, and no block of one was ever stubbed."""

    def __init__(self, session: Session, budget: int, *, name: str) -> None:
        self.name = name
        self.session, self.budget = session, budget
        fresh = len(session.before) == len(session.tokens) + 1
        self.tree: Fenwick = StaticSizes(session.tokens, session.before if fresh else None)

    def sizes(self) -> Fenwick:
        return self.tree

    def block_prefix(self, message_index: int, block_index: int) -> int:
        return 0  # no message is ever changed


class Stubbed:
    """The messages as last sent (some results stubbed) and their sizes: the session's own prefix sums
    (``StaticSizes``) until the first result is stubbed, a Fenwick tree from then on. A session whose results
    are never cleared (a file of tiny lines) never builds the tree: a prefix is read, not summed up the tree
    (most of a long replay's time), and the tree's list (36 B a message) is never held."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.messages = list(session.transcript.messages)
        fresh = len(session.before) == len(session.tokens) + 1
        self.tree: Fenwick = StaticSizes(session.tokens, session.before if fresh else None)
        self.current = list(session.tokens)

    def resize(self, i: int, new: int) -> None:
        """Message ``i`` is now ``new`` tokens."""
        if type(self.tree) is StaticSizes:
            self.tree = Fenwick(self.current)  # the first change: the sizes as they are (all the session's)
        self.tree.add(i, new - self.current[i])
        self.current[i] = new

    def clear(self, result_index: int) -> None:
        ref = self.session.results[result_index]
        i = ref.message_index
        key = (result_index, id(self.messages[i]))
        known = self.session.stubs.get(key)
        if known is None:
            # clear_into only indexes its list: the one message, at its own index (observation ids need it).
            one = {i: self.messages[i]}
            clear_into(cast("list[Message]", one), [ref])
            known = (one[i], self.session.estimator.message(one[i]).tokens)
            self.session.stubs[key] = known
        self.messages[i], new = known
        self.resize(i, new)

    def block_prefix(self, message_index: int, block_index: int) -> int:
        """Tokens of the message's blocks before ``block_index`` in their current version."""
        return sum(self.session.estimator.message(self.messages[message_index]).block_tokens[:block_index])


def first_fitting(starts: Sequence[int], n: int, tree: Fenwick, room: int, lo: int = 0, hi: int | None = None) -> int:
    """The index of the first of ``starts[lo:hi]`` whose tail ``[start, n)`` fits
    in ``room`` tokens, or ``hi`` if none does.

    A tail fits when ``prefix(start) >= prefix(n) - room``; prefixes only grow,
    so one descent of the tree finds the first position that reaches it, and a
    bisection finds the first start at or after it: O(log n), and no slice of
    ``starts`` is copied (a copy per request made replay quadratic, issue 8)."""
    hi = len(starts) if hi is None else hi
    return bisect_left(starts, tree.first_reaching(tree.prefix(n) - room), lo, hi)


class Clearing:
    """What a policy that clears whole results shares: the messages as last sent, results cleared oldest
    first and never restored."""

    def __init__(self, session: Session, budget: int, name: str) -> None:
        self.name = name
        self.session, self.budget = session, budget
        self.stubbed = Stubbed(session)
        self.cleared = 0

    def sizes(self) -> Fenwick:
        return self.stubbed.tree

    def block_prefix(self, message_index: int, block_index: int) -> int:
        return self.stubbed.block_prefix(message_index, block_index)

    def _clear_to(self, count: int) -> tuple[int, ...]:
        newly = tuple(range(self.cleared, count))
        for r in newly:
            self.stubbed.clear(r)
        self.cleared = max(self.cleared, count)
        return newly

    def _sent(self, n: int, newly: tuple[int, ...]) -> Sent:
        total = self.session.preamble + self.stubbed.tree.prefix(n)
        outcome = "over-budget" if total > self.budget else "cleared" if self.cleared else "fits"
        return Sent(outcome, total, self.cleared, ((0, n),), newly)
