"""The request a plan on columns describes (``fitting.columns``), a message at a time (issue 11, item 5).

``plan_columns`` plans on a skeleton in which every plain message is a shared stand-in of its role. The
request ``apply_plan`` would make of the loaded transcript is the skeleton's fitted messages with each
surviving stand-in replaced by its plain message, read again from the file in order: a repair, a cleared
result and the note never touch a plain message, so the k-th stand-in of the repaired skeleton is the k-th
plain message of the file. ``fitted_messages`` yields those messages; only the ones the plan changes or adds
are built, and the untouched ones keep the text they were read with (SPEC section 6, invariant 9).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace

from .columns import PLAIN_SOURCE, is_plain
from .fit import Plan, _note_message, apply_plan, clear_results, repaired
from .notice import with_notice
from .transcript import Message, Source, Transcript


class ChangedWhileRead(ValueError):
    """The file's plain messages read again are not the ones the columns were made of."""


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


def lined(skeleton: Transcript, plan: Plan, plain_lines: Sequence[int]) -> Transcript:
    """``skeleton`` with a stand-in that carries its line (``plain_lines``: each plain message's line, -1
    for none) for each plain message whose line the diff names: the first and last message of what is
    dropped, the cut and the head and kept bounds. What ``render_plan`` reads of the loaded transcript."""
    messages = repaired(skeleton, plan).messages
    wanted = [plan.cut_at if plan.cut_at is not None else -1, *plan.head, plan.head[1] - 1]
    for d in plan.dropped:
        wanted += [d.start, d.stop - 1]
    for a, b in plan.kept:
        wanted += [a, b - 1]
    ordinals = _plain_ordinals(messages, wanted)
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


def plain_lines_of(messages: Iterable[Message], lines: array[int]) -> Iterator[Message]:
    """``messages``, appending the line of each plain one to ``lines`` (-1 for none) as it passes."""
    for m in messages:
        if is_plain(m):
            line = m.source.line
            lines.append(-1 if line is None else line)
        yield m


def fitted_header(skeleton: Transcript, plan: Plan) -> Transcript:
    """The fitted request without its messages (the notice, if the plan adds it, in its system prompt)."""
    header = replace(skeleton, messages=())
    return with_notice(header) if plan.notice_added else header


def fitted_skeleton(skeleton: Transcript, plan: Plan) -> Transcript:
    """``apply_plan`` of the skeleton: the fitted request with stand-ins (for ``check_request``)."""
    return apply_plan(skeleton, plan)


def fitted_messages(skeleton: Transcript, plan: Plan, messages: Iterable[Message]) -> Iterator[Message]:
    """The messages of ``apply_plan(transcript, plan)``, one at a time, where ``skeleton`` is the columns'
    skeleton of ``transcript`` and ``messages`` its messages read again (every one, or only the plain ones).
    Raises ``ChangedWhileRead`` when they are not the messages the stand-ins stand for."""
    source = repaired(skeleton, plan).messages
    shown: Sequence[Message] = source if plan.outcome == "fits" else clear_results(source, plan.cleared)
    n = len(shown)
    note = plan.outcome not in ("fits", "cleared")
    ranges = [plan.head, *plan.kept] if note else [(0, n)]
    plain = (m for m in messages if is_plain(m))

    def next_plain(stand_in: Message) -> Message:
        found = next(plain, None)
        if found is None or found.role != stand_in.role:
            raise ChangedWhileRead("the file's messages changed since they were read")
        return found

    i = 0
    for r, (start, stop) in enumerate(ranges):
        if start < i:
            raise AssertionError("a plan's kept ranges come in order")
        for j in range(i, start):
            if shown[j].source is PLAIN_SOURCE:
                next_plain(shown[j])
        for j in range(start, stop):
            m = shown[j]
            yield next_plain(m) if m.source is PLAIN_SOURCE else m
        i = stop
        if note and r == 0:
            yield _note_message()
    for j in range(i, n):
        if shown[j].source is PLAIN_SOURCE:
            next_plain(shown[j])
    if next(plain, None) is not None:
        raise ChangedWhileRead("the file's messages changed since they were read")
