"""The request a plan on columns describes (``fitting.columns``), a message at a time (issue 11, item 5).

``plan_columns`` plans on a skeleton in which every plain message is a shared stand-in of its role. The
request ``apply_plan`` would make of the loaded transcript is the skeleton's fitted messages with each
surviving stand-in replaced by its plain message, read again from the file in order: a repair, a cleared
result and the note never touch a plain message, so the k-th stand-in of the repaired skeleton is the k-th
plain message of the file. ``fitted_messages`` yields those messages; only the ones the plan changes or adds
are built, and the untouched ones are their text, read again (SPEC section 6, invariant 9), checked against
what the first reading found (``formats.messages.LineTexts``).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import TypeVar

from .columns import PLAIN_SOURCE, is_plain
from .fit import NOTE_SOURCE, Dropped, Plan, _note_message, apply_plan, clear_results, repaired, sent
from .formats.messages import MessageStream
from .notice import with_notice
from .transcript import Message, Source, Transcript

T = TypeVar("T")


def _plain_ordinals(messages: Sequence[Message], wanted: Iterable[int]) -> set[int]:
    """The ordinals among the stand-ins of ``messages`` of those at the indices ``wanted``."""
    want = {i for i in wanted if 0 <= i < len(messages)}
    found: set[int] = set()
    k = 0
    for i, m in enumerate(messages):
        if m.source is PLAIN_SOURCE:
            if i in want:
                found.add(k)
            k += 1
    return found


def _named_lines(plan: Plan) -> list[int]:
    """The message indices (after repairs) whose lines the diff names: the cut, and the first and last message
    of each row of dropped turns or rounds (``render_dropped`` merges neighbours of a kind into one row)."""
    wanted = [plan.cut_at if plan.cut_at is not None else -1]
    last: Dropped | None = None
    for d in plan.dropped:
        if last is None or last.kind != d.kind or last.stop != d.start:
            if last is not None:
                wanted.append(last.stop - 1)
            wanted.append(d.start)
        last = d
    if last is not None:
        wanted.append(last.stop - 1)
    return wanted


def lined(skeleton: Transcript, plan: Plan, plain_lines: Sequence[int]) -> Transcript:
    """``skeleton`` with a stand-in that carries its line (``plain_lines``: each plain message's line, -1
    for none) for each plain message whose line the diff names (``_named_lines``): what ``render_plan``
    reads of the loaded transcript."""
    ordinals = _plain_ordinals(repaired(skeleton, plan).messages, _named_lines(plan))
    if not ordinals:
        return skeleton
    path = skeleton.source.path
    out: list[Message] = []
    k = 0
    for m in skeleton.messages:
        if m.source is PLAIN_SOURCE:
            if k in ordinals:
                line = plain_lines[k]
                m = Message(m.role, (), Source(path, None if line < 0 else line))
            k += 1
        out.append(m)
    return replace(skeleton, messages=tuple(out))


def plain_lines_of(found: MessageStream, lines: array[int], checks: array[int]) -> Iterator[Message]:
    """``found``'s messages (streamed with ``plain=is_plain``), appending the line of each plain one to
    ``lines`` (-1 for none) and the check of its JSON text (``MessageStream.check``) to ``checks`` as it
    passes."""
    for m in found.messages:
        if is_plain(m):
            line = m.source.line
            lines.append(-1 if line is None else line)
            checks.append(found.check)
        yield m


def fitted_header(skeleton: Transcript, plan: Plan) -> Transcript:
    """The fitted request without its messages (the notice, if the plan adds it, in its system prompt)."""
    header = replace(skeleton, messages=())
    return with_notice(header) if plan.notice_added else header


def fitted_skeleton(skeleton: Transcript, plan: Plan) -> Transcript:
    """``apply_plan`` of the skeleton: the fitted request with stand-ins (for ``check_request``)."""
    return apply_plan(skeleton, plan)


def fitted_messages(
    skeleton: Transcript, plan: Plan, plain: Callable[[int], T], message: Callable[[T], Message]
) -> Iterator[Message | T]:
    """The messages of ``apply_plan(transcript, plan)`` as the request sends them (``fit.sent``), one at a time,
    where ``skeleton`` is the columns' skeleton of ``transcript``: each message the plan changed or added, and for
    the k-th plain message of the transcript, where it is kept, ``plain(k)`` (asked for in increasing k: its
    text, read again), or where the truncation note joins it, ``message`` of that."""
    items = _fitted_messages(skeleton, plan, plain)
    held: list[Message | T] = []  # the message before the note
    for item in items:
        if isinstance(item, Message) and item.source is NOTE_SOURCE:
            after = next(items, None)
            window = [*held, item, *([] if after is None else [after])]
            parsed = [w if isinstance(w, Message) else message(w) for w in window]
            for out in sent(parsed):
                kept = next((w for w, p in zip(window, parsed, strict=True) if p is out), None)
                yield out if kept is None else kept  # a message not joined: as it was given
            break
        yield from held
        held = [item]
    else:
        yield from held
        return
    yield from items


def _fitted_messages(skeleton: Transcript, plan: Plan, plain: Callable[[int], T]) -> Iterator[Message | T]:
    """``fitted_messages`` with the note a message of its own (``apply_plan``'s)."""
    source = repaired(skeleton, plan).messages
    shown: Sequence[Message] = source if plan.outcome == "fits" else clear_results(source, plan.cleared)
    n = len(shown)
    note = plan.outcome not in ("fits", "cleared")
    ranges = [plan.head, *plan.kept] if note else [(0, n)]
    k = 0  # the ordinal of the next stand-in
    i = 0
    for r, (start, stop) in enumerate(ranges):
        if start < i:
            raise AssertionError("a plan's kept ranges come in order")
        for j in range(i, start):
            if shown[j].source is PLAIN_SOURCE:
                k += 1
        for j in range(start, stop):
            m = shown[j]
            if m.source is PLAIN_SOURCE:
                yield plain(k)
                k += 1
            else:
                yield m
        i = stop
        if note and r == 0:
            yield _note_message()
