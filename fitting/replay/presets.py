"""The other harnesses' context policies as replay presets (issue 14), each
named after what it models, with its defaults and where they are documented,
so that windowfit can be the neutral benchmark of a user's own logs.

Every preset here clears whole tool results (a stub in their place, as
``fit`` writes it) or drops whole units; none reads windowfit's budget but
``langchain-trim-last`` (its ``max_tokens``) and ``send-everything`` (to say
"over-budget"): the others trigger on their own thresholds, as the harness does."""

from __future__ import annotations

from bisect import bisect_left

from ..fit import FitOptions
from .session import Clearing, Sent, Session, Untouched, first_fitting

ANTHROPIC_TRIGGER = 100_000
ANTHROPIC_KEEP = 3
"""``clear_tool_uses_20250919``: trigger 100,000 input tokens, keep 3 tool uses, ``clear_at_least`` unset.
https://platform.claude.com/docs/en/build-with-claude/context-editing (defaults also in LangChain's
``ClearToolUsesEdit(trigger=100000, clear_at_least=0, keep=3)``, which mirrors it)."""
GEMINI_PROTECT = 50_000
GEMINI_PRUNABLE = 30_000
"""Gemini CLI's tool-output masking: ``DEFAULT_TOOL_PROTECTION_THRESHOLD = 50000``,
``DEFAULT_MIN_PRUNABLE_TOKENS_THRESHOLD = 30000`` and ``DEFAULT_PROTECT_LATEST_TURN = true`` in
google-gemini/gemini-cli ``packages/core/src/services/toolOutputMaskingService.ts``."""
IDLE_GAP_SECONDS = 3600.0
IDLE_KEEP = 5
"""Claude Code's time-based microcompact: after an idle gap of 60 minutes since the last reply, clear old
tool results but the newest 5. Read from reports of Claude Code's source, not from its documentation:
https://github.com/bug-ops/zeph/issues/2699, https://github.com/lijunzh/koda/pull/660."""
OPENHANDS_WINDOW = 10
"""OpenHands' ``ObservationMaskingCondenserConfig.attention_window``: observations outside the 10 most
recent events are masked (openhands/core/config/condenser_config.py, All-Hands-AI/OpenHands)."""


class AnthropicClearToolUses(Clearing):
    """Once the request's input exceeds ``trigger`` tokens, every tool result but the newest ``keep`` is
    cleared (server-side, on the full history the client sends: the trigger reads the raw request)."""

    def __init__(
        self,
        session: Session,
        budget: int,
        *,
        trigger: int = ANTHROPIC_TRIGGER,
        keep: int = ANTHROPIC_KEEP,
        name: str = "anthropic-clear-tool-uses",
    ) -> None:
        super().__init__(session, budget, name)
        self.trigger, self.keep = trigger, keep

    def request(self, n: int) -> Sent:
        s = self.session
        newly: tuple[int, ...] = ()
        if s.preamble + s.before[n] > self.trigger:
            newly = self._clear_to(max(0, bisect_left(s.result_messages, n) - self.keep))
        return self._sent(n, newly)


class GeminiCliMasking(Clearing):
    """Gemini CLI's backward scan: the latest message is skipped (``protectLatestTurn``); going back from
    the one before, tool outputs are protected while their running total stays within ``protect``
    tokens; the output that crosses it and every older unmasked one are prunable, and once they hold
    ``prunable`` tokens or more they are all masked (a stub in their place, here as ``fit`` writes it)."""

    def __init__(
        self,
        session: Session,
        budget: int,
        *,
        protect: int = GEMINI_PROTECT,
        prunable: int = GEMINI_PRUNABLE,
        name: str = "gemini-cli-masking",
    ) -> None:
        super().__init__(session, budget, name)
        self.protect, self.prunable = protect, prunable
        self.sizes_of = [r.tokens for r in session.results]
        self.seen = 0  # results before the latest message
        self.protected_from = 0
        self.tail = 0  # tokens of results[protected_from:seen]
        self.before = [0]  # prefix sums of result tokens
        for t in self.sizes_of:
            self.before.append(self.before[-1] + t)

    def request(self, n: int) -> Sent:
        s = self.session
        while self.seen < len(s.results) and s.results[self.seen].message_index < n - 1:
            self.tail += self.sizes_of[self.seen]
            self.seen += 1
        while self.protected_from < self.seen and self.tail > self.protect:
            self.tail -= self.sizes_of[self.protected_from]
            self.protected_from += 1
        newly: tuple[int, ...] = ()
        start = min(self.cleared, self.protected_from)
        if self.protected_from > start and self.before[self.protected_from] - self.before[start] >= self.prunable:
            newly = self._clear_to(self.protected_from)
        return self._sent(n, newly)


class ClaudeCodeIdleClear(Clearing):
    """After an idle gap longer than ``gap`` seconds (the log's timestamps), every tool result but the
    newest ``keep`` is cleared; without timestamps it never clears."""

    def __init__(
        self,
        session: Session,
        budget: int,
        *,
        gap: float = IDLE_GAP_SECONDS,
        keep: int = IDLE_KEEP,
        name: str = "claude-code-idle-clear",
    ) -> None:
        super().__init__(session, budget, name)
        self.gap, self.keep = gap, keep
        self.previous: float | None = None

    def request(self, n: int) -> Sent:
        s = self.session
        at = s.step_times.get(n)
        newly: tuple[int, ...] = ()
        if at is not None and self.previous is not None and at - self.previous > self.gap:
            newly = self._clear_to(max(0, bisect_left(s.result_messages, n) - self.keep))
        if at is not None:
            self.previous = at
        return self._sent(n, newly)


class OpenHandsObservationMasking(Clearing):
    """Tool results (observations) outside the ``window`` most recent messages are masked, always."""

    def __init__(
        self,
        session: Session,
        budget: int,
        *,
        window: int = OPENHANDS_WINDOW,
        name: str = "openhands-observation-masking",
    ) -> None:
        super().__init__(session, budget, name)
        self.window = window

    def request(self, n: int) -> Sent:
        newly = self._clear_to(bisect_left(self.session.result_messages, n - self.window))
        return self._sent(n, newly)


class LangChainTrimLast(Untouched):
    """``trim_messages(strategy="last", max_tokens=budget, include_system=True)``: the newest messages that
    fit the budget with the system prompt; cut only where a unit starts, so no tool result loses its call
    (LangChain leaves that to ``start_on``/``end_on``). https://python.langchain.com/docs/how_to/trim_messages/"""

    def __init__(self, session: Session, budget: int, *, name: str = "langchain-trim-last") -> None:
        super().__init__(session, budget, name=name)

    def request(self, n: int) -> Sent:
        s = self.session
        raw = s.preamble + s.before[n]
        if raw <= self.budget:
            return Sent("fits", raw, 0, ((0, n),))
        units = s.unit_starts
        hi = bisect_left(units, n)
        if hi == 0:
            return Sent("over-budget", raw, 0, ((0, n),))
        k = min(first_fitting(units, n, self.tree, self.budget - s.preamble, 0, hi), hi - 1)
        tokens = s.preamble + self.tree.range(units[k], n)
        return Sent("rounds-dropped" if tokens <= self.budget else "over-budget", tokens, 0, ((units[k], n),))


class SendEverything(Untouched):
    """Every request as the harness sent it: the whole history, nothing cleared (what the log records)."""

    def __init__(self, session: Session, budget: int, *, name: str = "send-everything") -> None:
        super().__init__(session, budget, name=name)

    def request(self, n: int) -> Sent:
        raw = self.session.preamble + self.session.before[n]
        return Sent("fits" if raw <= self.budget else "over-budget", raw, 0, ((0, n),))


def build_anthropic(session: Session, options: FitOptions, *, keep: int) -> AnthropicClearToolUses:
    return AnthropicClearToolUses(session, options.budget)


def build_gemini(session: Session, options: FitOptions, *, keep: int) -> GeminiCliMasking:
    return GeminiCliMasking(session, options.budget)


def build_idle(session: Session, options: FitOptions, *, keep: int) -> ClaudeCodeIdleClear:
    return ClaudeCodeIdleClear(session, options.budget)


def build_openhands(session: Session, options: FitOptions, *, keep: int) -> OpenHandsObservationMasking:
    return OpenHandsObservationMasking(session, options.budget)


def build_langchain(session: Session, options: FitOptions, *, keep: int) -> LangChainTrimLast:
    return LangChainTrimLast(session, options.budget)


def build_send_everything(session: Session, options: FitOptions, *, keep: int) -> SendEverything:
    return SendEverything(session, options.budget)
