"""Making a request valid before it is fitted: real transcripts have tool
calls with no result (an interrupted session) and results whose call is
missing. A fitted request never contains an orphan, so each call without a
result is answered by a clear synthetic result, and each result without its
call is dropped. Every repair is recorded in the plan."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from .transcript import Block, Message, Source, Text, ToolResult, Transcript
from .validate import check_messages

NO_RESULT_TEXT = (
    "[windowfit: no result was recorded] The transcript holds no result for this tool call "
    "(the session was probably interrupted). Run the tool again if you need its output."
)
REPAIR_SOURCE = Source("<windowfit repair>")


@dataclass(frozen=True, slots=True)
class Repair:
    """One change made so the request obeys the providers' rules."""

    kind: Literal["synthetic-result", "dropped-result"]
    call_id: str
    message_index: int
    """Where, in the input's messages: the call's message, or the orphan result's."""
    why: str


def _synthetic(call_id: str, name: str) -> ToolResult:
    return ToolResult(call_id, (Text(NO_RESULT_TEXT),), True, name)


def repair(transcript: Transcript) -> tuple[Transcript, tuple[Repair, ...]]:
    """The transcript with every orphan fixed, and what was done. A valid
    transcript comes back as the same object."""
    violations = check_messages(transcript.messages, transcript.dialect)
    unanswered = [v for v in violations if v.kind == "unanswered-call"]
    orphans = [v for v in violations if v.kind == "orphan-result"]
    if not unanswered and not orphans:
        return transcript, ()
    repairs: list[Repair] = []
    drop = {(v.message_index, v.call_id) for v in orphans}
    missing: dict[int, list[str]] = {}
    for v in unanswered:
        missing.setdefault(v.message_index, []).append(v.call_id)
    out: list[Message] = []
    messages = transcript.messages
    i = 0
    while i < len(messages):
        message = messages[i]
        if any((i, b.call_id) in drop for b in message.content if isinstance(b, ToolResult)):
            kept: list[Block] = []
            for b in message.content:
                if isinstance(b, ToolResult) and (i, b.call_id) in drop:
                    repairs.append(
                        Repair("dropped-result", b.call_id, i, "a result whose call is not in the message before it")
                    )
                else:
                    kept.append(b)
            message = replace(message, content=tuple(kept))
            if not kept:
                i += 1
                continue  # nothing left of it
        out.append(message)
        if i in missing:
            names = {c.id: c.name for c in message.tool_calls}
            # The results that do exist follow right after; the synthetic ones join them.
            j = i + 1
            while j < len(messages) and messages[j].role in ("user", "tool") and messages[j].tool_results:
                kept_results = [
                    b for b in messages[j].content if not (isinstance(b, ToolResult) and (j, b.call_id) in drop)
                ]
                if kept_results:
                    out.append(replace(messages[j], content=tuple(kept_results)))
                for b in messages[j].content:
                    if isinstance(b, ToolResult) and (j, b.call_id) in drop:
                        repairs.append(
                            Repair(
                                "dropped-result", b.call_id, j, "a result whose call is not in the message before it"
                            )
                        )
                j += 1
            synthetic = tuple(_synthetic(call_id, names.get(call_id, "")) for call_id in missing[i])
            for call_id in missing[i]:
                repairs.append(
                    Repair(
                        "synthetic-result",
                        call_id,
                        i,
                        "the call has no recorded result; answered with a note saying so",
                    )
                )
            if transcript.dialect == "openai":
                out.extend(Message("tool", (r,), REPAIR_SOURCE) for r in synthetic)
            elif j > i + 1 and out[-1].role == "user":
                last = out[-1]
                results = tuple(b for b in last.content if isinstance(b, ToolResult))
                rest = tuple(b for b in last.content if not isinstance(b, ToolResult))
                out[-1] = replace(last, content=(*results, *synthetic, *rest))
            else:
                out.append(Message("user", synthetic, REPAIR_SOURCE))
            i = j
            continue
        i += 1
    return replace(transcript, messages=tuple(out)), tuple(repairs)
