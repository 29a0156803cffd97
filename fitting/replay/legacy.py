"""The legacy policy: the truncation from before the fix (SPEC section 1), which
cuts only at the start of a user message and so cannot shorten a subagent."""

from __future__ import annotations

from bisect import bisect_left

from ..fit import FitOptions
from .session import NOTE, Sent, Session, Untouched, first_fitting


class LegacyPolicy(Untouched):
    """The pre-fix truncation: cut only at the start of a user message, keeping
    the first message, a note and the newest whole turns that fit (at least the
    newest); with one turn there is nowhere to cut and everything is sent."""

    def __init__(self, session: Session, budget: int, *, name: str = "legacy") -> None:
        super().__init__(session, budget, name=name)

    def request(self, n: int) -> Sent:
        s = self.session
        raw = s.preamble + self.tree.prefix(n)
        if raw <= self.budget:
            return Sent("fits", raw, 0, ((0, n),))
        turns = s.turn_starts  # searched between indices: a slice per request made replay quadratic
        # A cut at message 1 keeps every message and only adds the note: a turn
        # starting there (a second user message straight after the first, as
        # Codex rollouts open) is no place to cut.
        lo, hi = bisect_left(turns, 2), bisect_left(turns, n)
        if lo == hi:
            return Sent("over-budget", raw, 0, ((0, n),))
        fixed = s.preamble + self.tree.range(0, 1) + s.note_tokens
        start = turns[min(first_fitting(turns, n, self.tree, self.budget - fixed, lo, hi), hi - 1)]
        tokens = fixed + self.tree.range(start, n)
        return Sent(
            "turns-dropped" if tokens <= self.budget else "over-budget", tokens, 0, ((0, 1), (NOTE, NOTE), (start, n))
        )


def build(session: Session, options: FitOptions, *, keep: int) -> LegacyPolicy:
    """``legacy``: only the budget matters; it has no tunables."""
    return LegacyPolicy(session, options.budget)
