"""Making a request valid before it is fitted: real transcripts have tool
calls with no result (an interrupted session), results whose call is missing,
a result recorded twice, and call ids used twice. A fitted request never
contains any of these, so a call id used again is renamed (in the call and in
its result), each call without a result is answered by a clear synthetic
result, and each result without its call (or a second copy of one) is
dropped. Every repair is recorded in the plan, and ``report``/``check`` list
the same repairs as defects (``repair_defects``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Literal, TypeAlias

from ._frozen import frozen
from .transcript import Block, Defect, Message, Source, Text, ToolCall, ToolResult, Transcript
from .validate import ViolationKind, check_messages

NO_RESULT_TEXT = (
    "[windowfit: no result was recorded] The transcript holds no result for this tool call "
    "(the session was probably interrupted). Run the tool again if you need its output."
)
REPAIR_SOURCE = Source("<windowfit repair>")

RepairKind: TypeAlias = Literal["synthetic-result", "dropped-result", "dropped-duplicate-result", "renamed-call-id"]

DEFECT_OF: dict[RepairKind, ViolationKind] = {
    "synthetic-result": "unanswered-call",
    "dropped-result": "orphan-result",
    "dropped-duplicate-result": "duplicate-result",
    "renamed-call-id": "duplicate-call-id",
}
"""The defect each repair fixes, as ``report`` and ``check`` name it."""


@frozen
class Repair:
    """One change made so the request obeys the providers' rules."""

    kind: RepairKind
    call_id: str
    message_index: int
    """Where, in the input's messages: the call's message, or the orphan result's."""
    why: str
    source: Source = REPAIR_SOURCE
    """Where that message is in its file (the line ``report`` shows)."""

    @property
    def defect(self) -> ViolationKind:
        """The defect this repair fixes."""
        return DEFECT_OF[self.kind]


def _synthetic(call_id: str, name: str) -> ToolResult:
    return ToolResult(call_id, (Text(NO_RESULT_TEXT),), True, name)


def _unique_call_ids(messages: Sequence[Message]) -> tuple[list[Message], list[Repair]]:
    """Rename each call id used again to ``<id>-dup<k>``, in the call and in the
    result that answers it in the messages right after (providers reject a
    request that uses one id twice)."""
    seen: set[str] = set()
    reused = False
    for message in messages:
        for block in message.content:  # not ``tool_calls``: a tuple of each message's calls
            if isinstance(block, ToolCall):
                reused = reused or block.id in seen
                seen.add(block.id)
    if not reused:
        return list(messages), []
    taken = set(seen)
    seen.clear()
    repairs: list[Repair] = []
    renamed: dict[str, list[str]] = {}  # this round's ids as written -> as sent, in call order
    out: list[Message] = []
    for i, message in enumerate(messages):
        if message.role == "assistant" and message.tool_calls:
            renamed = {}
            content: list[Block] = []
            for block in message.content:
                if isinstance(block, ToolCall):
                    written = block.id
                    if written in seen:
                        k = 2
                        while f"{written}-dup{k}" in taken:
                            k += 1
                        block = replace(block, id=f"{written}-dup{k}")
                        taken.add(block.id)
                        why = f"the call id is used again: renamed {block.id} here and in its result"
                        repairs.append(Repair("renamed-call-id", written, i, why, message.source))
                    seen.add(block.id)
                    renamed.setdefault(written, []).append(block.id)
                content.append(block)
            message = replace(message, content=tuple(content))
        elif message.tool_results and renamed:
            content = []
            for block in message.content:
                ids = renamed.get(block.call_id) if isinstance(block, ToolResult) else None
                if isinstance(block, ToolResult) and ids:
                    # In call order; a copy beyond the last stays with the last (a duplicate of it).
                    block = replace(block, call_id=ids.pop(0) if len(ids) > 1 else ids[0])
                content.append(block)
            message = replace(message, content=tuple(content))
        else:
            renamed = {}
        out.append(message)
    return out, repairs


def _drop_blocks(
    index: int, message: Message, drop: Counter[str], kinds: dict[str, RepairKind], repairs: list[Repair]
) -> Message:
    """``message`` without the last ``drop[id]`` results of each call id (the
    orphans, or the copies after the first), recording each drop."""
    left = Counter(b.call_id for b in message.content if isinstance(b, ToolResult))
    kept: list[Block] = []
    for b in message.content:
        if isinstance(b, ToolResult) and left[b.call_id] <= drop[b.call_id]:
            kind = kinds[b.call_id]
            why = (
                "a second copy of a result: the first is kept"
                if kind == "dropped-duplicate-result"
                else "a result whose call is not in the message before it"
            )
            repairs.append(Repair(kind, b.call_id, index, why, message.source))
        else:
            kept.append(b)
        if isinstance(b, ToolResult):
            left[b.call_id] -= 1
    return replace(message, content=tuple(kept))


def repair(transcript: Transcript) -> tuple[Transcript, tuple[Repair, ...]]:
    """The transcript with every orphan, duplicate and reused call id fixed, and
    what was done. A valid transcript comes back as the same object."""
    messages, repairs = _unique_call_ids(transcript.messages)
    violations = check_messages(messages, transcript.dialect)
    unanswered = [v for v in violations if v.kind == "unanswered-call"]
    extra = [v for v in violations if v.kind in ("orphan-result", "duplicate-result")]
    if not repairs and not unanswered and not extra:
        return transcript, ()
    drop: dict[int, Counter[str]] = {}
    kinds: dict[int, dict[str, RepairKind]] = {}
    for v in extra:
        drop.setdefault(v.message_index, Counter())[v.call_id] += 1
        kinds.setdefault(v.message_index, {})[v.call_id] = (
            "dropped-duplicate-result" if v.kind == "duplicate-result" else "dropped-result"
        )
    missing: dict[int, list[str]] = {}
    for v in unanswered:
        missing.setdefault(v.message_index, []).append(v.call_id)

    def kept(j: int) -> Message | None:
        """Message ``j`` without its dropped results; None when nothing is left of it."""
        message = messages[j]
        if j not in drop:
            return message
        message = _drop_blocks(j, message, drop[j], kinds[j], repairs)
        return message if message.content else None

    out: list[Message] = []
    i = 0
    while i < len(messages):
        message = kept(i)
        if message is not None:
            out.append(message)
        if i not in missing:
            i += 1
            continue
        assert message is not None  # a message with calls holds no result to drop
        names = {c.id: c.name for c in message.tool_calls}
        # The results that do exist follow right after; the synthetic ones join them.
        j = i + 1
        while j < len(messages) and messages[j].role in ("user", "tool") and messages[j].tool_results:
            answered = kept(j)
            if answered is not None:
                out.append(answered)
            j += 1
        synthetic = tuple(_synthetic(call_id, names.get(call_id, "")) for call_id in missing[i])
        for call_id in missing[i]:
            why = "the call has no recorded result; answered with a note saying so"
            repairs.append(Repair("synthetic-result", call_id, i, why, message.source))
        if transcript.dialect == "openai":
            out.extend(Message("tool", (r,), REPAIR_SOURCE) for r in synthetic)
        elif out[-1] is not message and out[-1].role == "user":
            last = out[-1]
            results = tuple(b for b in last.content if isinstance(b, ToolResult))
            rest = tuple(b for b in last.content if not isinstance(b, ToolResult))
            out[-1] = replace(last, content=(*results, *synthetic, *rest))
        else:
            out.append(Message("user", synthetic, REPAIR_SOURCE))
        i = j
    return replace(transcript, messages=tuple(out)), tuple(sorted(repairs, key=lambda r: r.message_index))


def repair_defects(transcript: Transcript) -> tuple[Defect, ...]:
    """What ``repair`` would fix in ``transcript``, as defects with their lines
    (``report`` and ``check`` list these: the same kinds and lines as a fit's repairs)."""
    return tuple(Defect(r.source, r.defect, f"{r.why} (call {r.call_id})") for r in repair(transcript)[1])
