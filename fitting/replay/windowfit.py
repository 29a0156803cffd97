"""The windowfit policy: SPEC §3's three stages, kept incrementally from one
request of a replay to the next (the twin of ``plan_fit``)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from ..fit import DEFAULTS, FitOptions, auto_cut_step, clearable, closes_batch
from .session import NOTE, Fenwick, Sent, Session, Stubbed, first_fitting


def _step_from(starts: Sequence[int], lo: int, hi: int, k: int, tree: Fenwick, origin: int, step: int) -> int:
    """``fit.step_position`` on ``starts[lo:hi]`` with the sizes in ``tree``:
    the index of the earliest step position at or after ``starts[k]`` (sizes
    counted from message ``origin``), or ``hi``. One tree descent and one
    bisection: O(log n)."""
    if k >= hi:
        return hi
    base = tree.prefix(origin)
    reached = (tree.prefix(starts[k]) - base) // step
    if k == lo or reached > (tree.prefix(starts[k - 1]) - base) // step:
        return k
    return bisect_left(starts, tree.first_reaching(base + (reached + 1) * step), k, hi)


def _carried(session: Session, tree: Fenwick, n: int, cut: int) -> tuple[str, int, tuple[tuple[int, int], ...]]:
    """The request a carried cut keeps (``fit._carried``'s twin): the head, the
    note, the opening message of the cut's turn when the cut is inside it, and
    ``messages[cut:n]``."""
    s = session
    head = (0, min(s.head_stop, n))
    turn = s.turn_starts[bisect_right(s.turn_starts, cut) - 1]
    opener = ((turn, turn + 1),) if head[1] <= turn < cut else ()
    tokens = s.preamble + tree.range(*head) + s.note_tokens + sum(tree.range(*o) for o in opener)
    outcome = "turns-dropped" if turn == cut else "rounds-dropped"
    return outcome, tokens + tree.range(cut, n), (head, (NOTE, NOTE), *opener, (cut, n))


def _truncate(
    session: Session, tree: Fenwick, n: int, budget: int, cut_step: int | None = None, cut_from: int = 0
) -> tuple[str, int, tuple[tuple[int, int], ...]]:
    """Stages 2 and 3 of SPEC §3 on ``messages[:n]`` with the sizes in ``tree``
    (``plan_fit``'s, by searching prefix sums: see ``WindowfitPolicy``), cutting
    at ``cut_from`` or after (a carried cut). Every search is bounded by indices
    into the session's lists, never a slice of them: a slice costs O(n) per
    request (issue 8). The step positions are counted over every boundary, so a
    carried cut does not move them."""
    s = session
    head = (0, min(s.head_stop, n))
    fixed = s.preamble + tree.range(*head) + s.note_tokens
    turns = s.turn_starts
    t_lo, t_hi = bisect_right(turns, head[1] - 1), bisect_left(turns, n)
    # Stage 2: the smallest turn start whose tail fits (tails shrink as the start moves on).
    fitting_turn = k = first_fitting(turns, n, tree, budget - fixed, max(t_lo, bisect_left(turns, cut_from)), t_hi)
    if cut_step is not None:
        k = _step_from(turns, t_lo, t_hi, k, tree, 0, cut_step)
    if k < t_hi:
        return "turns-dropped", fixed + tree.range(turns[k], n), (head, (NOTE, NOTE), (turns[k], n))
    # Stage 3: inside the last turn, the smallest unit start whose tail fits.
    last = turns[bisect_right(turns, n - 1) - 1] if turns else 0
    opener = (last, last + 1) if last >= head[1] else None
    units_from = opener[1] if opener else head[1]
    units = s.unit_starts
    u_lo, u_hi = bisect_left(units, units_from), bisect_left(units, n)
    floor = fixed + (tree.range(*opener) if opener else 0)
    k = first_fitting(units, n, tree, budget - floor, max(u_lo, bisect_left(units, cut_from)), u_hi)
    rounds = s.round_starts
    r_lo, r_hi = bisect_left(rounds, units_from), bisect_left(rounds, n)
    newest = bisect_left(units, rounds[r_hi - 1], u_lo, u_hi) if r_hi > r_lo else u_hi - 1
    if cut_step is not None and k < u_hi:
        at = _step_from(units, u_lo, u_hi, k, tree, last, cut_step)
        k = at if at <= newest else k  # no step position at or before the newest round: no step
    kept = ((opener,) if opener else ()) + ((units[k], n),) if k < u_hi else ()
    if k < u_hi and k <= newest:
        return "rounds-dropped", floor + tree.range(units[k], n), (head, (NOTE, NOTE), *kept)
    if fitting_turn < t_hi:
        # With cut steps, no step position fits and stage 3 cannot either: the earliest turn that fits.
        start = turns[fitting_turn]
        return "turns-dropped", fixed + tree.range(start, n), (head, (NOTE, NOTE), (start, n))
    take = units[newest] if u_hi > u_lo else n
    smallest = ((opener,) if opener else ()) + (((take, n),) if u_hi > u_lo else ())
    return "too-long", floor + tree.range(take, n), (head, (NOTE, NOTE), *smallest)


class WindowfitPolicy:
    """SPEC §3: clear candidates in batches, then whole turns, then whole rounds.

    With cut steps, the cut is carried (SPEC invariant 10): once a request
    leaves messages out, the next one starts from what it kept, as a harness
    that does not resend dropped messages does (``plan_fit(carried_cut=...)``),
    so the cut only moves forward.

    This algorithm has a twin: ``plan_fit`` (``fitting/fit.py``) fits one
    request from scratch; this policy fits each request of a growing session
    incrementally. Change both together;
    ``tests/test_replay.py::test_incremental_windowfit_equals_plan_fit_on_every_request``
    keeps them equal.
    """

    def __init__(
        self,
        session: Session,
        budget: int,
        *,
        batch_size: int = DEFAULTS.batch_size,
        protected_fraction: float = DEFAULTS.protected_fraction,
        min_clear_ratio: float = DEFAULTS.min_clear_ratio,
        batch_tokens: int | None = DEFAULTS.batch_tokens,
        cut_step: int | None = DEFAULTS.cut_step,
        name: str = "windowfit",
    ) -> None:
        self.name = name
        self.session, self.budget, self.batch_size = session, budget, batch_size
        self.batch_tokens, self.cut_step = batch_tokens, cut_step
        self.allowance = budget * protected_fraction
        self.min_clear_ratio = min_clear_ratio
        self.stubbed = Stubbed(session)
        self.seen = 0  # results in the prefix
        self.protected_from = 0
        self.tail = 0  # tokens of results[protected_from:seen]
        self.scanned = 0  # results[:scanned] were considered for candidacy
        self.candidates: list[int] = []
        self.ends: list[int] = []  # where each closed batch of candidates ends
        self.open_tokens = 0  # tokens of the candidates after the last closed batch
        self.batches = 0
        self.cleared = 0
        self.cut: int | None = None
        """The carried cut: where the last request sent left messages out (only with cut steps)."""

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
            if clearable(r.tokens, r.stub_tokens, self.min_clear_ratio, rounding=1):
                self.candidates.append(self.scanned)
                self.open_tokens += r.tokens
                count = len(self.candidates) - (self.ends[-1] if self.ends else 0)
                if closes_batch(count, self.open_tokens, self.batch_size, self.batch_tokens):
                    self.ends.append(len(self.candidates))
                    self.open_tokens = 0
            self.scanned += 1

    def _bound(self, batches: int) -> int:
        """How many candidates the oldest ``batches`` batches hold."""
        if batches == 0:
            return 0
        if batches <= len(self.ends):
            return self.ends[batches - 1]
        # The short last batch: cleared by count only; by size it waits until it fills.
        return len(self.candidates) if self.batch_tokens is None else len(self.ends) and self.ends[-1]

    def _clear_upto(self, count: int) -> list[int]:
        new = self.candidates[self.cleared : count]
        for r in new:
            self.stubbed.clear(r)
        self.cleared = max(self.cleared, count)
        return new

    def _every_batch(self) -> int:
        """How many batches stage 1 can clear now: every full one, and by count the short last one."""
        short = self.batch_tokens is None and len(self.candidates) > (self.ends[-1] if self.ends else 0)
        return len(self.ends) + int(short)

    def request(self, n: int) -> Sent:
        s = self.session
        self._advance(n)
        if self.cut is not None:
            return self._from_cut(n, self.cut)
        raw = s.preamble + s.before[n]
        if raw <= self.budget:
            return Sent("fits", raw, 0, ((0, n),))
        newly = self._clear_upto(self._bound(self.batches))
        total = s.preamble + self.stubbed.tree.prefix(n)
        while total > self.budget and self._bound(self.batches) < self._bound(self.batches + 1):
            self.batches += 1
            newly += self._clear_upto(self._bound(self.batches))
            total = s.preamble + self.stubbed.tree.prefix(n)
        if total <= self.budget:
            return Sent("cleared", total, self.cleared, ((0, n),), tuple(newly))
        outcome, tokens, segments = _truncate(s, self.stubbed.tree, n, self.budget, self.cut_step)
        return self._sent(outcome, tokens, segments, newly)

    def _from_cut(self, n: int, cut: int) -> Sent:
        """A request after a carried cut: every batch cleared (the cutting request
        had them all), the kept part if it fits, else stages 2 and 3 from the cut on."""
        self.batches = max(self.batches, self._every_batch())
        newly = self._clear_upto(self._bound(self.batches))
        outcome, tokens, segments = _carried(self.session, self.stubbed.tree, n, cut)
        if tokens > self.budget:
            outcome, tokens, segments = _truncate(self.session, self.stubbed.tree, n, self.budget, self.cut_step, cut)
        return self._sent(outcome, tokens, segments, newly)

    def _sent(self, outcome: str, tokens: int, segments: tuple[tuple[int, int], ...], newly: list[int]) -> Sent:
        if self.cut_step is not None and outcome in ("turns-dropped", "rounds-dropped"):
            self.cut = segments[-1][0]  # a too-long request is not sent: its cut is not carried
        return Sent(outcome, tokens, self.cleared, segments, tuple(newly))


def build(session: Session, options: FitOptions, *, keep: int) -> WindowfitPolicy:
    """``windowfit``: the fit's own options (the step rules too, when given)."""
    return WindowfitPolicy(
        session,
        options.budget,
        batch_size=options.batch_size,
        protected_fraction=options.protected_fraction,
        min_clear_ratio=options.min_clear_ratio,
        batch_tokens=options.batch_tokens,
        cut_step=options.cut_step,
    )


CACHE_BATCH_FRACTION = 1 / 3
"""``windowfit-cache``'s default batch: candidates close a batch once they hold
a third of the budget (benchmarks/README.md, "Cuts that rarely move")."""


def build_cache(session: Session, options: FitOptions, *, keep: int) -> WindowfitPolicy:
    """``windowfit-cache``: the step rules on. Batches close by size only
    (``--batch-tokens``, default a third of the budget) and stages 2 and 3 cut
    at steps (``--cut-step``, default a quarter of the budget)."""
    return WindowfitPolicy(
        session,
        options.budget,
        batch_size=0,
        protected_fraction=options.protected_fraction,
        min_clear_ratio=options.min_clear_ratio,
        batch_tokens=options.batch_tokens or max(1, int(options.budget * CACHE_BATCH_FRACTION)),
        cut_step=options.cut_step or auto_cut_step(options.budget),
    )


def build_batch_1(session: Session, options: FitOptions, *, keep: int) -> WindowfitPolicy:
    """``windowfit-batch-1``: the fit's options with batches of one, the cache-hostile comparison."""
    return WindowfitPolicy(
        session,
        options.budget,
        batch_size=1,
        protected_fraction=options.protected_fraction,
        min_clear_ratio=options.min_clear_ratio,
    )
