"""The keep-last-N policy: once over the budget, clear every tool result but the
newest N (the default of Anthropic's and LangChain's clear-tool-uses edits)."""

from __future__ import annotations

from bisect import bisect_left

from ..fit import FitOptions
from .session import Fenwick, Sent, Session, Stubbed

KEEP_LAST = 3
"""N when nobody says (replay's ``--keep``): the default of those edits."""


class KeepLastPolicy:
    """Clear every tool result but the newest ``keep`` once the request is over
    the budget (the default of Anthropic's and LangChain's clear-tool-uses edits)."""

    def __init__(self, session: Session, budget: int, *, keep: int = KEEP_LAST, name: str = "keep-last") -> None:
        self.name = name
        self.session, self.budget, self.keep = session, budget, keep
        self.stubbed = Stubbed(session)
        self.cleared = 0

    def sizes(self) -> Fenwick:
        return self.stubbed.tree

    def block_prefix(self, message_index: int, block_index: int) -> int:
        return self.stubbed.block_prefix(message_index, block_index)

    def request(self, n: int) -> Sent:
        s = self.session
        raw = s.preamble + s.before[n]
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


def build(session: Session, options: FitOptions, *, keep: int) -> KeepLastPolicy:
    """``keep-last``: the budget and N; none of the fit's tunables apply."""
    return KeepLastPolicy(session, options.budget, keep=keep)
