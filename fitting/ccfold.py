"""``report`` of a Claude Code session folded straight from its lines, without ``Message`` objects.

For the shape most sessions have, one pass gives what ``claude_code.load`` and ``build_report`` give: every
line a user or assistant line on one parentUuid chain (each line's parent the line before it, no sidechain),
blocks of the four kinds Claude Code writes, assistant replies split over lines that share a message id, and
every round of tool calls answered by the results line right after it. Each line is parsed with orjson, each
block is kept as its kind, its characters per script class and, for calls and results, its id; the split
replies and result lines are merged over those records as ``claude_code._build`` merges the messages, and the
sums of ``ReportFold`` and the predicted size are taken from them. Any line or shape this path cannot vouch
for (an unreadable line, a branch, a sidechain, a compaction, a bookkeeping line with a uuid, an empty
message, an unknown block, a tool call without its result, a subagent folder, an estimator that is not a
``ScriptRule``) gives None, and the caller loads the file as before: the report is the same either way
(tests/test_ccfold.py compares the two on the corpus, the samples and generated sessions)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import replace

import orjson

from ._json import MAX_DEPTH, bracket_count, dumps
from .estimate import CharCounts, Estimator, ScriptRule, _groups
from .formats.base import Input
from .formats.claude_code import NAME, NO_PREAMBLE_NOTE, subagent_files
from .report import TOP_RESULTS, Report, ReportFold, usage_rows
from .size import SIZE_MODES, PreambleSource, Size, SizeMode
from .transcript import Source, Transcript, Usage

# A block's record: (kind, ascii, cjk, other, fixed tokens, id, name). Kinds as ``block_kind`` names them.
_Block = tuple[str, int, int, int, int, str, str]


def fold_claude_code(
    source: Input,
    estimator: Estimator,
    *,
    budget: int | None = None,
    window: int | None = None,
    top: int = TOP_RESULTS,
    size_mode: SizeMode = "auto",
    preamble: int | None = None,
) -> Report | None:
    """The report ``build_report`` gives on the one transcript ``claude_code.load`` reads from ``source``,
    or None when the file is not of the shape this path vouches for (see the module docstring)."""
    rule = estimator.rule
    if type(rule) is not ScriptRule or source.keep_text or size_mode not in SIZE_MODES:
        return None
    if preamble is not None and preamble < 0:
        return None  # predict_size words the error
    if source.data is None and subagent_files(source.path):
        return None
    folded = _fold_lines(source, rule)
    if folded is None:
        return None
    return _report(source.path, folded, estimator, budget, window, top, size_mode, preamble)


class _Folded:
    """The merged messages of one file, as records."""

    __slots__ = ("kinds", "leaf_line", "messages", "unmeasured", "usage")

    def __init__(self) -> None:
        self.messages: list[tuple[str, int, list[_Block], list[_Block]]] = []
        """Per message: role, first line, its results, its other blocks (``_Draft``'s fields)."""
        self.usage: list[Usage] = []
        self.kinds: Counter[str] = Counter()
        self.unmeasured = 0
        self.leaf_line = 0
        """The last message line: where the chain ends."""


def _text(rule: ScriptRule, kind: str, text: str) -> _Block:
    if text.isascii():
        return (kind, len(text), 0, 0, rule.block_overhead_tokens, "", "")
    a, c, o = _groups(text)
    return (kind, a, c, o, rule.block_overhead_tokens, "", "")


def _blocks(rule: ScriptRule, raw: object, assistant: bool) -> list[_Block] | None:
    """The records of one line's content (as ``claude_code._block`` reads it), or None for a shape this path
    leaves to the loader: an empty message, a block of another kind or with a field of another type."""
    if type(raw) is str:
        return [_text(rule, "text", raw)] if raw else None
    if type(raw) is not list or not raw:
        return None
    out: list[_Block] = []
    bo = rule.block_overhead_tokens
    for b in raw:
        if type(b) is not dict:
            return None
        kind = b.get("type")
        if kind == "text":
            text = b.get("text")
            if type(text) is not str:
                return None
            out.append(_text(rule, "text", text))
        elif kind == "thinking":
            text = b.get("thinking")
            if type(text) is not str:
                return None
            out.append(_text(rule, "thinking", text))
        elif kind == "tool_use":
            call_id = b.get("id")
            name = b.get("name", "")
            if type(call_id) is not str or type(name) is not str:
                return None
            a, c, o = _groups(name)
            a2, c2, o2 = _groups(dumps(b.get("input", {})))
            out.append(("tool_call", a + a2, c + c2, o + o2, bo, call_id, name))
        elif kind == "tool_result" and not assistant:
            call_id = b.get("tool_use_id")
            inner = b.get("content", "")
            if type(call_id) is not str:
                return None
            if type(inner) is str:
                if inner:
                    _, a, c, o, f, _, _ = _text(rule, "text", inner)
                    out.append(("tool_result", a, c, o, bo + f, call_id, ""))
                else:
                    out.append(("tool_result", 0, 0, 0, bo, call_id, ""))
            elif type(inner) is list:
                a = c = o = 0
                fixed = bo
                for part in inner:  # text blocks only (an image's tokens are the loader's to work out)
                    if type(part) is not dict or part.get("type") != "text" or type(part.get("text")) is not str:
                        return None
                    _, a2, c2, o2, f, _, _ = _text(rule, "text", part["text"])
                    a, c, o, fixed = a + a2, c + c2, o + o2, fixed + f
                out.append(("tool_result", a, c, o, fixed, call_id, ""))
            else:
                return None
        else:
            return None
    return out


def _fold_lines(source: Input, rule: ScriptRule) -> _Folded | None:
    """One pass over the lines: each message line's blocks as records, merged as ``claude_code._build``
    merges them (split replies by message id, result lines into one user message, results first)."""
    out = _Folded()
    messages = out.messages
    usage = out.usage
    kinds = out.kinds
    loads = orjson.loads
    seen: set[str] = set()
    calls_seen: set[str] = set()
    answered: set[str] = set()
    previous: str | None = None
    last_role = ""
    last_id = ""
    last: tuple[str, int, list[_Block], list[_Block]] | None = None
    with source.open() as f:
        for line, raw in enumerate(f, start=1):
            try:
                value = loads(raw)
            except orjson.JSONDecodeError:
                return None  # blank, comment, BOM or broken lines: the loader's words and recovery
            if len(raw) > MAX_DEPTH and bracket_count(raw) > MAX_DEPTH:
                return None
            if type(value) is not dict:
                return None
            kind = value.get("type")
            uuid = value.get("uuid")
            parent = value.get("parentUuid")
            if kind != "user" and kind != "assistant":
                kinds[kind if type(kind) is str and kind else "unknown"] += 1
                if type(uuid) is not str:
                    continue  # only counted (summary, file-history-snapshot, ...)
                if kind == "system" and value.get("subtype") == "compact_boundary":
                    return None  # a compaction: the loader starts the live context there
            elif type(value.get("message")) is not dict or type(uuid) is not str:
                return None
            # A line of the tree (a message, or a bookkeeping line such as progress the chain passes through):
            # on the one chain, its parent the line before it.
            if uuid in seen or value.get("isSidechain") is True:
                return None
            if previous is None:
                if type(parent) is str:
                    return None  # a parent not in the file: a broken link
            elif parent != previous:
                return None  # a branch, or a line attached off the chain
            seen.add(uuid)
            previous = uuid
            if kind != "user" and kind != "assistant":
                continue
            message = value["message"]
            out.leaf_line = line
            assistant = kind == "assistant"
            blocks = _blocks(rule, message.get("content"), assistant)
            if blocks is None:
                return None
            if assistant:
                message_id = message.get("id")
                node_id = message_id if type(message_id) is str else f"line {line}"
                counts = None
                recorded = message.get("usage")
                if type(recorded) is dict:
                    i, w, r, o = (
                        recorded.get("input_tokens"),
                        recorded.get("cache_creation_input_tokens"),
                        recorded.get("cache_read_input_tokens"),
                        recorded.get("output_tokens"),
                    )
                    counts = (
                        i if type(i) is int else 0,
                        w if type(w) is int else 0,
                        r if type(r) is int else 0,
                        o if type(o) is int else 0,
                    )
                for b in blocks:
                    if b[0] == "tool_call":
                        if b[5] in calls_seen:
                            return None  # a call id used twice: the loader's duplicate defects
                        calls_seen.add(b[5])
                if last is None or last_role != "assistant" or last_id != node_id:
                    if counts is not None and (counts[0] or counts[1] or counts[2]):
                        usage.append(
                            Usage(len(messages), counts[0], counts[1], counts[2], Source(source.path, line), counts[3])
                        )
                    elif counts is not None:
                        out.unmeasured += 1
                    last = ("assistant", line, [], [])
                    messages.append(last)
                    last_role, last_id = "assistant", node_id
                elif (
                    counts is not None
                    and usage
                    and usage[-1].before == len(messages) - 1
                    and counts[3] > usage[-1].output_tokens
                ):
                    usage[-1] = replace(usage[-1], output_tokens=counts[3])
                last[3].extend(blocks)
                continue
            results = [b for b in blocks if b[0] == "tool_result"]
            for b in results:
                if b[5] in answered:
                    return None
                answered.add(b[5])
            if not results or last is None or last_role != "user" or not last[2]:
                last = ("user", line, [], [])
                messages.append(last)
                last_role, last_id = "user", ""
            if results:
                last[2].extend(results)
                last[3].extend(b for b in blocks if b[0] != "tool_result")
            else:
                last[3].extend(blocks)
    if not messages:
        return None
    if not _answered(messages):
        return None
    return out


def _answered(messages: list[tuple[str, int, list[_Block], list[_Block]]]) -> bool:
    """Whether ``check_messages`` and ``repair`` find nothing: every assistant message with calls is followed
    by a user message whose results answer exactly those calls, and no other message holds results (results
    come first by construction, and every call and result id is used once)."""
    n = len(messages)
    i = 0
    while i < n:
        role, _, results, blocks = messages[i]
        if role == "user":
            if results:
                return False  # results after no calls
            i += 1
            continue
        calls = {b[5] for b in blocks if b[0] == "tool_call"}
        if not calls:
            i += 1
            continue
        if i + 1 >= n:
            return False
        role2, _, results2, _ = messages[i + 1]
        if role2 != "user" or {b[5] for b in results2} != calls or len(results2) != len(calls):
            return False
        i += 2
    return True


def _report(
    path: str,
    folded: _Folded,
    estimator: Estimator,
    budget: int | None,
    window: int | None,
    top: int,
    size_mode: SizeMode,
    preamble: int | None,
) -> Report:
    """``build_report``'s report from the records: the fold's sums, the predicted size and the usage rows."""
    rule = estimator.rule
    assert type(rule) is ScriptRule
    wa, wc, wo, denominator = rule._weights
    mo = rule.message_overhead_tokens
    fold = ReportFold(estimator, keep_skeleton=False)
    by_role: defaultdict[str, int] = defaultdict(int)
    by_kind: defaultdict[str, int] = defaultdict(int)
    names: dict[str, str] = {}
    per_tool: defaultdict[str, int] = defaultdict(int)
    results = fold.results
    tokens: list[int] = []
    roles: list[str] = []
    ta = tc = to = 0
    turns = rounds = calls = 0
    for index, (role, line, message_results, others) in enumerate(folded.messages):
        a = c = o = 0
        fixed = mo
        has_call = False
        for block in (*message_results, *others):
            kind, a2, c2, o2, f, block_id, name = block
            a, c, o, fixed = a + a2, c + c2, o + o2, fixed + f
            block_tokens = -(-(a2 * wa + c2 * wc + o2 * wo) // denominator) + f
            by_kind[kind] += block_tokens
            if kind == "tool_call":
                has_call = True
                names[block_id] = name
                per_tool[name] += 1
                calls += 1
            elif kind == "tool_result":
                results.append((block_id, name, block_tokens, index, line))
        message_tokens = -(-(a * wa + c * wc + o * wo) // denominator) + fixed
        if mo:
            by_kind["message overhead"] += mo
        by_role[role] += message_tokens
        ta, tc, to = ta + a, tc + c, to + o
        if index == 0 or (role == "user" and not message_results):
            turns += 1
        if role == "assistant" and has_call:
            rounds += 1
        tokens.append(message_tokens)
        roles.append(role)
    fold.messages = len(tokens)
    fold.total = sum(tokens)
    fold.counts = CharCounts(ta, tc, to)
    fold.by_role = by_role
    fold.by_kind = by_kind
    fold.turns, fold.rounds, fold.calls = turns, rounds, calls
    fold.names = names
    fold.calls_per_tool = per_tool
    notes = [
        NO_PREAMBLE_NOTE,
        f"followed the parentUuid chain that ends at the last message (line {folded.leaf_line}); no other branches",
    ]
    if folded.unmeasured:
        notes.append(
            f"{folded.unmeasured} assistant message(s) record zero usage (e.g. model <synthetic>): not measured"
        )
    header = Transcript(
        system=(),
        tools=(),
        messages=(),
        source=Source(path),
        format=NAME,
        dialect="anthropic",
        usage=tuple(folded.usage),
        notes=tuple(notes),
        line_kinds=tuple(sorted(folded.kinds.items(), key=lambda kv: (-kv[1], kv[0]))),
    )
    size = _size(folded.usage, tokens, roles, size_mode, preamble)
    return fold.assemble(
        header,
        header,
        size,
        budget=budget,
        window=window,
        top=top,
        usage=usage_rows(header, tokens, 0) if folded.usage else (),
        session_tokens=None,
        defects=(),
    )


def _size(usage: list[Usage], tokens: list[int], roles: list[str], mode: SizeMode, given: int | None) -> Size:
    """``predict_size`` of a session without compaction, system prompt or tools, from its messages' tokens."""
    n = len(tokens)
    pre_source: PreambleSource
    pre_line: int | None
    if given is not None:
        pre_tokens, pre_source, pre_line = given, "given", None
    else:
        first = next((u for u in usage if 0 < u.before <= n), None)
        inferred = None if first is None else max(0, first.total - sum(tokens[: first.before]))
        if first is not None and inferred is not None and inferred > 0:
            pre_tokens, pre_source, pre_line = inferred, "inferred", first.source.line
        else:
            pre_tokens, pre_source, pre_line = 0, "none", None
    anchor = None
    if mode == "auto":
        for u in reversed(usage):
            if u.before > n or u.before < 1:
                continue
            if u.before == n or roles[u.before] == "assistant":
                anchor = u
                break
    if anchor is None:
        estimated = sum(tokens)
        return Size(pre_tokens + estimated, "estimate", pre_tokens, pre_source, pre_line, 0, estimated_tokens=estimated)
    b = anchor.before
    reply = max(anchor.output_tokens, tokens[b]) if b < n else 0
    estimated = sum(tokens[b + 1 :])
    return Size(
        anchor.total + reply + estimated,
        "anchored",
        pre_tokens,
        pre_source,
        pre_line,
        0,
        measured_tokens=anchor.total,
        anchor_line=anchor.source.line,
        anchor_messages=b,
        reply_tokens=reply,
        estimated_tokens=estimated,
    )
