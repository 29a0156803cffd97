"""The other harnesses' context policies as replay presets (issue 14), each
named after what it models, with its defaults and where they are documented,
so that windowfit can be the neutral benchmark of a user's own logs.

Every preset here clears whole tool results (a stub in their place, as
``fit`` writes it; Gemini CLI's own snippet for ``gemini-cli-masking``) or
drops whole units; none reads windowfit's budget but
``langchain-trim-last`` (its ``max_tokens``) and ``send-everything`` (to say
"over-budget"): the others trigger on their own thresholds, as the harness does."""

from __future__ import annotations

import json
import re
from bisect import bisect_left

from ..content import block_texts
from ..fit import FitOptions
from ..transcript import Message, Text, ToolCall, ToolResult
from .session import Clearing, Sent, Session, Untouched, first_fitting

ANTHROPIC_TRIGGER = 100_000
ANTHROPIC_KEEP = 3
"""``clear_tool_uses_20250919``: trigger 100,000 input tokens, keep 3 tool uses, ``clear_at_least`` unset.
https://platform.claude.com/docs/en/build-with-claude/context-editing (defaults also in LangChain's
``ClearToolUsesEdit(trigger=100000, clear_at_least=0, keep=3)``, which mirrors it)."""
GEMINI_PROTECT = 50_000
GEMINI_PRUNABLE = 30_000
GEMINI_SHELL_TOOL = "run_shell_command"
"""Gemini CLI's tool-output masking: ``DEFAULT_TOOL_PROTECTION_THRESHOLD = 50000``,
``DEFAULT_MIN_PRUNABLE_TOKENS_THRESHOLD = 30000``, ``DEFAULT_PROTECT_LATEST_TURN = true``, the masked snippet
and its previews, and "mask an output only if its snippet is smaller" in google-gemini/gemini-cli
``packages/core/src/services/toolOutputMaskingService.ts``
(https://github.com/google-gemini/gemini-cli/blob/main/packages/core/src/services/toolOutputMaskingService.ts)."""
GEMINI_OUTPUT_PATH = "/home/user/.gemini/tmp/" + "0" * 64 + "/tool-outputs/{tool}_{call}_xxxxxx.txt"
"""Where Gemini CLI saves a masked output (its history dir, ``tool-outputs``, the tool, the call id and a
random suffix); the snippet names it. A stand-in of the same shape: the replay writes no file."""
IDLE_GAP_SECONDS = 3600.0
IDLE_KEEP = 5
IDLE_TOOLS = frozenset({"Bash", "Glob", "Grep", "Read", "WebFetch", "WebSearch", "Edit", "Write"})
"""Claude Code's time-based microcompact: after an idle gap of 60 minutes since the last reply, clear the
results of its compactable tools (Bash, Glob, Grep, FileRead, WebFetch, WebSearch, FileEdit, FileWrite: the
names its logs record) but the newest 5 of them, on the main thread only (subagents are short-lived). Read
from reports of Claude Code's source, not from its documentation: https://github.com/bug-ops/zeph/issues/2699,
https://github.com/lijunzh/koda/pull/660, https://github.com/tetsuo-ai/agenc-core/pull/463."""
SUBAGENT = "subagent "
"""How the Claude Code loader names a subagent's transcript (``Transcript.name``)."""
OPENHANDS_WINDOW = 100
"""OpenHands' ``ObservationMaskingCondenserConfig.attention_window``: observations outside the 100 most
recent events are masked (``default=100`` in openhands/core/config/condenser_config.py, All-Hands-AI/OpenHands;
older releases had 10). An event is an action (a tool call, or a message) or an observation (a result)."""


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


def _gemini_simple_preview(content: str) -> str:
    lines = content.split("\n")
    if len(lines) <= 20:
        return content
    return "\n".join(lines[:10]) + f"\n\n... [{len(lines) - 20} lines omitted] ...\n\n" + "\n".join(lines[-10:])


_SHELL_SECTION = re.compile(r"^(Output|Error|Exit Code|Signal|Background PIDs|Process Group PGID): ", re.MULTILINE)


def gemini_preview(tool: str, output: str) -> str:
    """What Gemini CLI keeps of a masked output: for its shell tool, the first and last 10 lines of the
    ``Output:`` section (whole when 20 lines or fewer) and the other sections whole; for any other tool,
    the first and last 250 characters of the response as JSON (``{"output": ...}``, indented by 2), whole
    when 500 characters or fewer."""
    if tool == GEMINI_SHELL_TOOL:
        parts = _SHELL_SECTION.split(output)
        if len(parts) < 3:
            return _gemini_simple_preview(output)
        previews = [_gemini_simple_preview(parts[0].strip())] if parts[0].strip() else []
        for i in range(1, len(parts), 2):
            name, section = parts[i], parts[i + 1].strip() if i + 1 < len(parts) else ""
            previews.append(f"Output: {_gemini_simple_preview(section)}" if name == "Output" else f"{name}: {section}")
        return "\n".join(previews)
    opening, closing = '{\n  "output": "', '"\n}'
    if len(output) <= 600:
        # ``json.dumps({"output": output}, indent=2, ensure_ascii=False)``, without the pure-Python
        # encoder that ``indent`` selects (a string is quoted the same either way).
        content = '{\n  "output": ' + json.dumps(output, ensure_ascii=False) + "\n}"
        return f"{content[:250]}\n... [TRUNCATED] ...\n{content[-250:]}" if len(content) > 500 else content
    # Longer than 500 once quoted: only its ends are kept, and JSON escapes each character on its own, so
    # the ends of the quoted whole are the quoted ends (no need to quote a whole large output).
    head = (opening + json.dumps(output[:250], ensure_ascii=False)[1:-1])[:250]
    tail = (json.dumps(output[-250:], ensure_ascii=False)[1:-1] + closing)[-250:]
    return f"{head}\n... [TRUNCATED] ...\n{tail}"


def gemini_snippet(tool: str, call_id: str, output: str) -> str:
    """The text Gemini CLI puts in a masked output's place."""
    path = GEMINI_OUTPUT_PATH.format(tool=(tool or "unknown_tool").lower(), call=call_id.lower())
    preview = gemini_preview(tool, output)
    return (
        f"<tool_output_masked>\n{preview}\n\nOutput too large. Full output available at: {path}\n</tool_output_masked>"
    )


class GeminiCliMasking(Clearing):
    """Gemini CLI's backward scan, before each request: the latest message is skipped (``protectLatestTurn``);
    going back from the one before, unmasked tool outputs are protected while their running total stays
    within ``protect`` tokens; the output that crosses it and every older unmasked one are prunable; once
    those hold ``prunable`` tokens or more, each is masked, its place taken by Gemini CLI's snippet (a preview
    and where the whole output was saved), but only where the snippet is smaller than the output: short
    outputs are never masked, and stay prunable (they count toward the next trigger again).

    Incremental: the protected window is the newest unmasked outputs, and it only moves forward, so each
    output enters, leaves and is masked at most once."""

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
        self.seen = 0  # outputs before the latest message
        self.protected_from = 0  # the protected window is results[protected_from:seen]
        self.window = 0  # its tokens
        self.prunable_tokens = 0  # unmasked outputs before the window
        self.mask_from = 0  # every output before it was masked, or is not worth masking
        self.masked: set[int] = set()
        self.snippets: dict[tuple[int, int], tuple[Message, int]] = {}

    def request(self, n: int) -> Sent:
        s = self.session
        while self.seen < len(s.results) and s.results[self.seen].message_index < n - 1:
            self.window += self.sizes_of[self.seen]
            self.seen += 1
        while self.window > self.protect:
            self.window -= self.sizes_of[self.protected_from]
            self.prunable_tokens += self.sizes_of[self.protected_from]
            self.protected_from += 1
        newly: list[int] = []
        if self.protected_from > self.mask_from and self.prunable_tokens >= self.prunable:
            for r in range(self.mask_from, self.protected_from):
                if self._mask(r):
                    newly.append(r)
                    self.prunable_tokens -= self.sizes_of[r]
            self.mask_from = self.protected_from
        return self._sent(n, tuple(newly))

    def _mask(self, r: int) -> bool:
        """Put Gemini CLI's snippet in result ``r``'s place if it makes the message smaller."""
        ref = self.session.results[r]
        stubbed = self.stubbed
        i = ref.message_index
        old = stubbed.messages[i]
        key = (r, id(old))
        known = self.snippets.get(key)
        if known is None:
            block = old.content[ref.block_index]
            output = "\n".join(block_texts(block))
            text = gemini_snippet(ref.tool, ref.call_id, output)
            if isinstance(block, ToolResult):
                new_block: ToolResult | Text = ToolResult(
                    block.call_id, (Text(text),), block.is_error, block.name, block.extra
                )
            else:
                assert isinstance(block, Text)
                new_block = Text(text, block.extra, block.observation_of)
            content = list(old.content)
            content[ref.block_index] = new_block
            message = Message(old.role, tuple(content), old.source, old.extra)
            known = (message, self.session.estimator.message(message).tokens)
            self.snippets[key] = known
        message, tokens = known
        if tokens >= stubbed.current[i]:
            return False  # Gemini CLI masks an output only when that saves tokens
        stubbed.messages[i] = message
        stubbed.resize(i, tokens)
        self.masked.add(r)
        self.cleared = len(self.masked)
        return True


class ClaudeCodeIdleClear(Clearing):
    """After an idle gap longer than ``gap`` seconds (the log's timestamps), every result of the ``tools``
    but the newest ``keep`` of them is cleared; without timestamps, or in a subagent's transcript (Claude
    Code clears on its main thread only), it never clears."""

    def __init__(
        self,
        session: Session,
        budget: int,
        *,
        gap: float = IDLE_GAP_SECONDS,
        keep: int = IDLE_KEEP,
        tools: frozenset[str] = IDLE_TOOLS,
        name: str = "claude-code-idle-clear",
    ) -> None:
        super().__init__(session, budget, name)
        self.gap, self.keep = gap, keep
        self.previous: float | None = None
        subagent = session.transcript.name.startswith(SUBAGENT)
        self.clearable = [] if subagent else [r for r, ref in enumerate(session.results) if ref.tool in tools]
        self.clearable_at = [session.results[r].message_index for r in self.clearable]
        self.done = 0  # clearable[:done] are cleared

    def request(self, n: int) -> Sent:
        at = self.session.step_times.get(n)
        newly: list[int] = []
        if at is not None and self.previous is not None and at - self.previous > self.gap:
            upto = max(0, bisect_left(self.clearable_at, n) - self.keep)
            for r in self.clearable[self.done : upto]:
                self.stubbed.clear(r)
                newly.append(r)
            self.done = max(self.done, upto)
            self.cleared = self.done
        if at is not None:
            self.previous = at
        return self._sent(n, tuple(newly))


class OpenHandsObservationMasking(Clearing):
    """Tool results (observations) outside the ``window`` most recent events are masked, always. Each tool
    call and each result is an event, and a message with neither is one."""

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
        messages = session.transcript.messages
        self.events = [0]  # events[i]: the events of messages[:i]
        for m in messages:
            parts = sum(1 for b in m.content if isinstance(b, (ToolCall, ToolResult)))
            self.events.append(self.events[-1] + max(1, parts))
        # Each result's event: its message's first, plus the calls and results before it in the message.
        self.result_events = [
            self.events[r.message_index]
            + sum(
                1 for b in messages[r.message_index].content[: r.block_index] if isinstance(b, (ToolCall, ToolResult))
            )
            for r in session.results
        ]

    def request(self, n: int) -> Sent:
        newly = self._clear_to(bisect_left(self.result_events, self.events[n] - self.window))
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
