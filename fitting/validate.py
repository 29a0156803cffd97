"""The providers' structural rules for a request: every tool call answered by
results right after it, no result without its call, results only in user or
tool messages, and (Anthropic) results first in their user message."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias

from ._frozen import frozen
from .transcript import Dialect, Message, Source, Thinking, ToolCall, ToolResult, Transcript

ViolationKind: TypeAlias = Literal[
    "unanswered-call",
    "orphan-result",
    "duplicate-result",
    "result-in-wrong-role",
    "results-not-first",
    "duplicate-call-id",
]


@frozen
class Violation:
    """One broken rule, with where it is."""

    kind: ViolationKind
    message_index: int
    call_id: str
    source: Source
    detail: str

    @property
    def key(self) -> tuple[str, str]:
        """What identifies the defect across a fit (indices change, call ids do not)."""
        return (self.kind, self.call_id)

    def __str__(self) -> str:
        where = self.source.path + (f":{self.source.line}" if self.source.line else "")
        return f"{where}: message {self.message_index}: {self.detail}"


def _results_first(index: int, message: Message) -> list[Violation]:
    """Anthropic: in a user message, tool results come before any other block."""
    if message.role != "user":
        return []
    kinds = [isinstance(b, ToolResult) for b in message.content]
    if any(kinds) and not all(kinds) and kinds.index(False) < len(kinds) - 1 - kinds[::-1].index(True):
        return [
            Violation(
                "results-not-first",
                index,
                message.tool_results[0].call_id,
                message.source,
                "tool results must come before other content in their message",
            )
        ]
    return []


def check_messages(messages: Sequence[Message], dialect: Dialect = "anthropic") -> tuple[Violation, ...]:
    """Every violation in ``messages``, in order: ``check_messages_general``'s, found faster where there is
    none (a fit checks a long session up to four times: as it loads, as it is repaired, before and after the
    fit): one look at each block proves the messages valid, and anything else goes the general way.
    tests/test_validate.py compares the two."""
    if _valid(messages, dialect == "anthropic"):
        return ()
    return check_messages_general(messages, dialect)


def _valid(messages: Sequence[Message], anthropic: bool) -> bool:
    """True only where ``check_messages_general`` finds nothing wrong (False may still be valid)."""
    n = len(messages)
    i = 0
    call_ids: set[str] = set()
    while i < n:
        message = messages[i]
        role = message.role
        results = 0
        calls: list[str] = []
        for b in message.content:
            if isinstance(b, ToolResult):
                results += 1
            elif isinstance(b, ToolCall):
                calls.append(b.id)
        if role != "assistant" or not calls:
            if results:
                return False  # a result in a message that answers no call, or in the wrong role
            i += 1
            continue
        if results:
            return False  # a result in an assistant message
        pending = set(calls)
        if len(pending) != len(calls) or not call_ids.isdisjoint(pending):
            return False  # a call id used twice
        call_ids.update(pending)
        # The messages right after it that carry results must answer its calls, each once, results first.
        j = i + 1
        while j < n:
            follow = messages[j]
            if follow.role != "user" and follow.role != "tool":
                break
            answers = 0
            other = False
            for b in follow.content:
                if isinstance(b, ToolResult):
                    if b.call_id not in pending or (other and anthropic and follow.role == "user"):
                        return False  # an orphan or a second copy, or results after other content
                    pending.discard(b.call_id)
                    answers += 1
                else:
                    other = True
            if not answers:
                break
            j += 1
        if pending:
            return False  # an unanswered call
        i = j
    return True


def check_messages_general(messages: Sequence[Message], dialect: Dialect = "anthropic") -> tuple[Violation, ...]:
    """Every violation in ``messages``, in order (the general path, which ``check_messages`` must match)."""
    found: list[Violation] = []
    seen_calls: set[str] = set()
    i = 0
    n = len(messages)
    while i < n:
        message = messages[i]
        if not message.content:  # breaks no rule (a columns skeleton is mostly such stand-ins)
            i += 1
            continue
        results = [b for b in message.content if isinstance(b, ToolResult)]
        if results and message.role not in ("user", "tool"):
            found.extend(
                Violation(
                    "result-in-wrong-role",
                    i,
                    r.call_id,
                    message.source,
                    f"tool result {r.call_id} sits in a {message.role} message",
                )
                for r in results
            )
        if dialect == "anthropic":
            found.extend(_results_first(i, message))
        if message.role != "assistant" or not message.tool_calls:
            if results and message.role in ("user", "tool"):
                found.extend(
                    Violation(
                        "orphan-result",
                        i,
                        r.call_id,
                        message.source,
                        f"tool result {r.call_id} answers no call in the message before it",
                    )
                    for r in results
                )
            i += 1
            continue
        calls = message.tool_calls
        for call in calls:
            if call.id in seen_calls:
                found.append(
                    Violation("duplicate-call-id", i, call.id, message.source, f"tool call id {call.id} is used twice")
                )
            seen_calls.add(call.id)
        # A list, not a dict: a call id used twice in one message expects two results.
        pending = list(calls)
        answered: set[str] = set()
        j = i + 1
        while j < n and messages[j].role in ("user", "tool"):
            answers = [b for b in messages[j].content if isinstance(b, ToolResult)]
            if not answers:
                break
            for r in answers:
                answers_call = next((c for c in pending if c.id == r.call_id), None)
                if answers_call is not None:
                    pending.remove(answers_call)
                    answered.add(r.call_id)
                elif r.call_id in answered:
                    found.append(
                        Violation(
                            "duplicate-result",
                            j,
                            r.call_id,
                            messages[j].source,
                            f"tool call {r.call_id} is answered twice",
                        )
                    )
                else:
                    found.append(
                        Violation(
                            "orphan-result",
                            j,
                            r.call_id,
                            messages[j].source,
                            f"tool result {r.call_id} answers no call in the message before it",
                        )
                    )
            if dialect == "anthropic":
                found.extend(_results_first(j, messages[j]))
            j += 1
        for call in pending:
            found.append(
                Violation(
                    "unanswered-call",
                    i,
                    call.id,
                    message.source,
                    f"tool call {call.id} ({call.name}) has no result right after it",
                )
            )
        i = j
    # A round's unanswered calls are only known after its results were read: put them back in
    # message order (a stable sort keeps the order within one message).
    return tuple(sorted(found, key=lambda v: v.message_index))


def check_request(transcript: Transcript, dialect: Dialect | None = None) -> tuple[Violation, ...]:
    """Every violation of the providers' rules in a request."""
    return check_messages(transcript.messages, dialect or transcript.dialect)


def new_violations(before: Sequence[Violation], after: Sequence[Violation]) -> tuple[Violation, ...]:
    """Violations in ``after`` that ``before`` did not have (a fit must add none)."""
    known = {v.key for v in before}
    return tuple(v for v in after if v.key not in known)


def unsendable(transcript: Transcript) -> str | None:
    """Why no provider would accept ``transcript`` as a request, or None: it
    holds no message, or no user message for the model to answer (e.g. only
    reasoning, or only an orphan result that the repair dropped)."""
    messages = transcript.messages
    if not messages:
        return "the request holds no messages"
    if not any(m.role in ("user", "tool") for m in messages):
        roles = sorted({m.role for m in messages})
        only_thinking = all(isinstance(b, Thinking) for m in messages for b in m.content)
        what = "only reasoning" if only_thinking else "only " + " and ".join(roles) + " messages"
        return f"the request holds no user message ({what}): there is nothing for the model to answer"
    return None
