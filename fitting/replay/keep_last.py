"""The keep-last-N policy: once over the budget, clear every tool result but the
newest N (the default of Anthropic's and LangChain's clear-tool-uses edits)."""

from __future__ import annotations

from bisect import bisect_left

from ..fit import FitOptions
from .session import Clearing, Sent, Session

KEEP_LAST = 3
"""N when nobody says (replay's ``--keep``): the default of those edits."""


class KeepLastPolicy(Clearing):
    """Clear every tool result but the newest ``keep`` once the request is over
    the budget (the default of Anthropic's and LangChain's clear-tool-uses edits)."""

    def __init__(self, session: Session, budget: int, *, keep: int = KEEP_LAST, name: str = "keep-last") -> None:
        super().__init__(session, budget, name)
        self.keep = keep

    def request(self, n: int) -> Sent:
        s = self.session
        raw = s.preamble + s.before[n]
        if raw <= self.budget:
            return Sent("fits", raw, 0, ((0, n),))
        return self._sent(n, self._clear_to(max(0, bisect_left(s.result_messages, n) - self.keep)))


def build(session: Session, options: FitOptions, *, keep: int) -> KeepLastPolicy:
    """``keep-last``: the budget and N; none of the fit's tunables apply."""
    return KeepLastPolicy(session, options.budget, keep=keep)
