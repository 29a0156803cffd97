"""``report`` of a Claude Code session folded straight from its lines, without ``Message`` objects.

For the shape most sessions have, one pass gives what ``claude_code.load`` and ``build_report`` give: message
lines on one parentUuid chain (each message's parent the message before it, or bookkeeping lines such as
progress that hang from it), all off the sidechain or all on it (a subagent's own file), blocks of the four
kinds Claude Code writes, assistant replies split over lines that share a message id, and every round of
tool calls answered by the message right after it. Parallel calls' result lines may hang from their call's
line rather than the line before them, and the chain go on from one of them, as ``claude_code._select`` takes
them in (each result line off its chain holds results only, hanging from a line it takes); blank and comment
lines are passed over as ``LineReader`` passes them. Each line is read by the compiled scanner
(fitting/_ccline.c, a chunk of lines at a time, where it is built) or else parsed with orjson and read by
``_record`` (the reference, and the reader of every line the scanner is not sure of); each block is summed
into its message (characters per script class, fixed tokens) and its tokens into its kind, calls and results
are kept by id; the split replies and result lines are merged as ``claude_code._build`` merges the messages,
and the sums of ``ReportFold`` and the predicted size are taken from them. Any line or shape this path cannot
vouch for (an unreadable or too deep line, any other branch, a sidechain beside the main chain, a compaction, an empty
message, a block of another kind, a call id used twice, a call without its result, a subagent folder, an
estimator that is not a ``ScriptRule``, kept JSON text) gives None, and the caller loads the file as before:
the report is the same either way (tests/test_ccfold.py compares the two on the corpus, every prefix of its
sessions and generated sessions)."""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, cast

import orjson

from ._json import MAX_DEPTH, bracket_count, depth_error, dumps
from .errors import Location
from .estimate import _GROUP_CODES, _SEED_CLASSES, PURE_ENV, CharCounts, Estimator, ScriptRule, _check_classes, _groups
from .formats.base import Input
from .formats.claude_code import NAME, NO_PREAMBLE_NOTE, subagent_files
from .report import TOP_RESULTS, Report, ReportFold, UsageRow
from .size import FLOOR_RULE, SIZE_MODES, PreambleSource, Size, SizeMode
from .transcript import Skipped, Source, Transcript

_NOWHERE = Location("<ccfold>")

_Block = tuple[str, int, str, str]
"""A call's or a result's record: its kind (``tool_call`` or ``tool_result``), its tokens, its id and name."""
_Part = tuple[int, int, int, int, int]
"""A tool result's ascii, CJK and other characters, fixed tokens and floor (``_floor``): what ``ccplan`` needs
to estimate its message once the result is cleared."""
_Line = tuple[int, int, int, int, "tuple[()] | list[_Block]", int, "tuple[()] | list[_Part]"]
"""One line's content: its ascii, CJK and other characters, fixed tokens, its calls and results, its floor
(``_floor`` of each block's text, summed) and each of its results' ``_Part``."""
_Record = tuple[
    str,
    "str | None",
    "str | None",
    bool,
    "str | None",
    "str | None",
    "tuple[int, int, int, int] | None",
    int,
    int,
    int,
    int,
    "tuple[()] | list[_Block] | None",
    bool,
    bool,
    int,
    "tuple[()] | list[_Part] | None",
]
"""What the fold reads from one line (``_record``, or the compiled ``_ccline.Scanner.scan``): its kind (the
line kind it is counted under, for a line other than a message), uuid and parentUuid (None where not a str),
whether it is on the sidechain; for a message line its agentId ("" where not a str), message id (None where
not a str), usage (input, cache write, cache read and output tokens; None where not a dict), its content as
``_blocks`` sums it (None for a line other than a message), whether it is a user line of tool results only
and whether it holds a tool result; its floor and its results' parts (``_Line``; 0 and None for a line other
than a message)."""

if TYPE_CHECKING:
    from ._ccline import Scanner, Table

try:
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        raise ImportError(f"{PURE_ENV} is set")
    from ._ccline import Scanner as _Scanner
    from ._ccline import Table as _Table

    SCANNER = True
except ImportError:
    SCANNER = False
"""Whether message lines are read by the compiled scanner ``_ccline`` (fitting/_ccline.c) where it vouches
for them, rather than by orjson and ``_record`` (which read the lines it leaves, and every line without it)."""

_TABLE: list[Table] = []
"""The scanner's table of the seed's classes per code point, built once (about 1 MB)."""


def _scanner(rule: ScriptRule) -> Scanner | None:
    """A compiled scanner of lines for one fold with ``rule``, or None without one (or for weights past 64
    bits)."""
    if not SCANNER:
        return None
    if not _TABLE:
        fallback, explicit = _check_classes(_SEED_CLASSES)  # as estimate.compiled_counter builds the counter
        groups = bytes(_GROUP_CODES[c.group] for c in _SEED_CLASSES)
        _TABLE.append(_Table(len(_SEED_CLASSES), fallback, [(a, b, i) for i, (a, b) in explicit], groups))
    wa, wc, wo, denominator = rule._weights
    try:
        return _Scanner(_TABLE[0], wa, wc, wo, denominator, rule.block_overhead_tokens, *FLOOR_RULE._weights)
    except (OverflowError, ValueError):
        return None


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
    """What ``ReportFold`` sums over the messages, taken over one pass of the lines."""

    __slots__ = (
        "agent",
        "attached",
        "by_kind",
        "by_role",
        "calls",
        "calls_of",
        "chars",
        "counts",
        "floors",
        "kinds",
        "leaf_line",
        "lines",
        "names",
        "parts",
        "per_tool",
        "results",
        "roles",
        "rounds",
        "skipped",
        "tokens",
        "turns",
        "unmeasured",
        "usage",
    )

    def __init__(self) -> None:
        self.tokens: list[int] = []
        """Each message's estimate (``MessageEstimate.tokens``)."""
        self.roles: list[str] = []
        self.usage: list[list[int]] = []
        """Per measured request: before, input, cache write, cache read, line, output (``Usage``'s fields)."""
        self.kinds: Counter[str] = Counter()
        self.unmeasured = 0
        self.attached = 0
        """Message lines off the chain that the loader takes in (parallel calls' results and reply lines)."""
        self.leaf_line = 0
        """The last message line: where the chain ends."""
        self.by_kind: defaultdict[str, int] = defaultdict(int)
        self.by_role: defaultdict[str, int] = defaultdict(int)
        self.names: dict[str, str] = {}
        self.per_tool: defaultdict[str, int] = defaultdict(int)
        self.results: list[tuple[str, str, int, int, int | None]] = []
        self.counts = (0, 0, 0)
        self.turns = self.rounds = self.calls = 0
        self.skipped: list[Skipped] = []
        """The comment lines, as ``LineReader`` records them."""
        self.agent: str | None = None
        """None for a main conversation; for a file that is one sidechain (a subagent's), the first agentId
        of its message lines ("" if none)."""
        # For ccplan's plan of the fold (each message's, or each result's, as ``results``):
        self.lines: list[int] = []
        """Each message's line (its first)."""
        self.chars: list[tuple[int, int, int, int]] = []
        """Each message's ascii, CJK and other characters and fixed tokens (``Estimator._script_blocks``')."""
        self.floors: list[int] = []
        """Each message's floor (``size.floor_tokens`` under ``size.FLOOR_RULE``)."""
        self.calls_of: list[list[str]] = []
        """Each message's calls' ids, in order (names in ``names``)."""
        self.parts: list[_Part] = []
        """Each result's characters, fixed tokens and floor, as ``results``."""


def _blocks(rule: ScriptRule, raw: object, assistant: bool, by_kind: dict[str, int]) -> _Line | None:
    """One line's content (as ``claude_code._block`` reads it) summed: its characters per class and fixed
    tokens, each block's tokens added to ``by_kind``, and its calls and results as records; None for a shape
    this path leaves to the loader (an empty message, a block of another kind or with a field of another
    type). Counts are ``estimate._groups``'s, as ``Estimator._script_parts`` takes them."""
    bo = rule.block_overhead_tokens
    wa, wc, wo, denominator = rule._weights
    if type(raw) is str:
        if not raw:
            return None
        a, c, o = _groups(raw)
        by_kind["text"] += -(-(a * wa + c * wc + o * wo) // denominator) + bo
        return a, c, o, bo, (), _floor(a, c, o), ()
    if type(raw) is not list or not raw:
        return None
    la = lc = lo = lf = floor = 0
    special: list[_Block] = []
    parts: list[_Part] = []
    for b in raw:
        if type(b) is not dict:
            return None
        kind = b.get("type")
        fixed = bo
        if kind == "text" or kind == "thinking":
            text = b.get(kind)
            if type(text) is not str:
                return None
            a, c, o = _groups(text)
            block_floor = _floor(a, c, o)
        elif kind == "tool_use":
            call_id = b.get("id")
            name = b.get("name", "")
            if type(call_id) is not str or type(name) is not str:
                return None
            a, c, o = _groups(name)
            a2, c2, o2 = _groups(dumps(b.get("input", {})))
            a, c, o = a + a2, c + c2, o + o2
            block_floor = _floor(a, c, o)
            kind = "tool_call"
        elif kind == "tool_result" and not assistant:
            call_id = b.get("tool_use_id")
            inner = b.get("content", "")
            if type(call_id) is not str:
                return None
            name = ""
            block_floor = 0
            if type(inner) is str:
                if inner:
                    a, c, o = _groups(inner)
                    fixed = bo + bo
                    block_floor = _floor(a, c, o)
                else:
                    a = c = o = 0
            elif type(inner) is list:
                a = c = o = 0
                for part in inner:  # text blocks only (an image's tokens are the loader's to work out)
                    if type(part) is not dict or part.get("type") != "text":
                        return None
                    text = part.get("text")
                    if type(text) is not str:
                        return None
                    a2, c2, o2 = _groups(text)
                    a, c, o, fixed = a + a2, c + c2, o + o2, fixed + bo
                    block_floor += _floor(a2, c2, o2)
            else:
                return None
        else:
            return None
        tokens = -(-(a * wa + c * wc + o * wo) // denominator) + fixed
        by_kind[kind] += tokens
        la, lc, lo, lf, floor = la + a, lc + c, lo + o, lf + fixed, floor + block_floor
        if kind == "tool_call" or kind == "tool_result":
            special.append(cast(_Block, (kind, tokens, call_id, name)))
            if kind == "tool_result":
                parts.append((a, c, o, fixed, block_floor))
    return la, lc, lo, lf, special, floor, parts


def _floor(a: int, c: int, o: int) -> int:
    """The tokens of a text of these characters under ``size.FLOOR_RULE`` (``Estimator.block`` of it, which
    has no overheads): what ``size.floor_tokens`` sums, block by block and part by part of a result."""
    fa, fc, fo, denominator = FLOOR_RULE._weights
    return -(-(a * fa + c * fc + o * fo) // denominator)


_CHUNK = 1 << 20
"""Bytes read at a time when the scanner reads the lines."""


def _lines(f: BinaryIO, scanner: Scanner | None, size: int = _CHUNK) -> Iterator[bytes | _Record]:
    """The lines of ``f`` as iterating it gives them, each as the scanner's record where it vouches for the
    line (``Scanner.scan_lines``, ``size`` bytes of lines at a time), else as its bytes."""
    if scanner is None:
        yield from f
        return
    scan_lines = scanner.scan_lines
    rest = b""
    while True:
        chunk = f.read(size)
        final = not chunk
        view = memoryview(chunk)
        if rest:  # a line begun in the chunk before
            cut = chunk.find(b"\n")
            if cut < 0 and not final:
                rest += chunk
                continue
            items, _ = scan_lines(rest + chunk[: cut + 1], True)
            yield from items
            rest = b""
            view = view[cut + 1 :] if cut >= 0 else view[len(chunk) :]
        items, used = scan_lines(view, final)
        yield from items
        if final:
            return
        rest = bytes(view[used:])


def _record(rule: ScriptRule, value: object, by_kind: dict[str, int]) -> _Record | None:
    """What the fold reads from a line parsed by orjson (see ``_Record``), its blocks' tokens added to
    ``by_kind``; None for a line the fold leaves the file to the loader for (not an object, a compaction, a
    message line without a message or uuid, or content ``_blocks`` refuses). The reference the compiled
    scanner is tested against, and the reader of every line the scanner leaves."""
    if type(value) is not dict:
        return None
    kind = value.get("type")
    uuid = value.get("uuid")
    if type(uuid) is not str:
        uuid = None
    parent = value.get("parentUuid")
    if type(parent) is not str:
        parent = None
    side = value.get("isSidechain") is True
    if kind != "user" and kind != "assistant":
        if uuid is not None and kind == "system" and value.get("subtype") == "compact_boundary":
            return None  # a compaction: the loader starts the live context there
        key = kind if type(kind) is str and kind else "unknown"
        return key, uuid, parent, side, None, None, None, 0, 0, 0, 0, None, False, False, 0, None
    message = value.get("message")
    if type(message) is not dict or uuid is None:
        return None
    content = message.get("content")
    user = kind == "user"
    results_shape = user and _results_only(content)
    has_results = user and _has_results(content)
    summed = _blocks(rule, content, not user, by_kind)
    if summed is None:
        return None
    agent = value.get("agentId")
    message_id = message.get("id")
    recorded = message.get("usage")
    la, lc, lo, lf, special, floor, parts = summed
    if not special:
        special = ()  # as the scanner gives it
    if not parts:
        parts = ()
    return (
        kind,
        uuid,
        parent,
        side,
        agent if type(agent) is str else "",
        message_id if type(message_id) is str else None,
        _usage(recorded) if type(recorded) is dict else None,
        la,
        lc,
        lo,
        lf,
        special,
        results_shape,
        has_results,
        floor,
        parts,
    )


def _fold_lines(source: Input, rule: ScriptRule, *, compiled: bool = True) -> _Folded | None:
    """One pass over the lines: each line's record (``_record``; the compiled scanner's where it vouches for
    the line, unless not ``compiled``), message lines merged as ``claude_code._build`` merges them (split
    replies by message id, result lines into one user message, results first), each message summed as
    ``Estimator._script_blocks`` and ``ReportFold.add`` sum it, and the rounds checked as ``check_messages``
    checks them (``_Draft.close``)."""
    out = _Folded()
    tokens, usage, kinds = out.tokens, out.usage, out.kinds
    by_kind, names, per_tool, results = out.by_kind, out.names, out.per_tool, out.results
    loads = orjson.loads
    scanner = _scanner(rule) if compiled else None
    seen: set[str] = set()
    calls_seen: set[str] = set()
    answered: set[str] = set()
    head: str | None = None
    passing: set[str] = set()
    reply: dict[str, int] = {}
    """The lines of the last reply (by uuid, their place in it from 1) while its results are read."""
    phase: list[tuple[str, int, bool, bool]] = []
    """The user lines with results after it: uuid, place of the reply line it hangs from (0 if from the chain's
    head), whether the loader would take it in off its chain (results only, each answering a call, hanging from
    a line it takes), whether it is off the chain here."""
    last_off: tuple[str, int] | None = None
    """The last message line, when it is off the chain: its uuid and line."""
    side = False
    draft = _Draft(rule, out)
    with source.open() as f:
        for line, item in enumerate(_lines(f, scanner), start=1):
            if not isinstance(item, bytes):
                record = item
            else:
                raw = item
                try:
                    value = loads(raw)
                except orjson.JSONDecodeError:
                    text = raw.strip()
                    if not text:
                        continue  # a blank line, which the loader passes over without a word
                    if text.startswith(b"//"):
                        out.skipped.append(Skipped(Source(source.path, line), "comment line"))
                        continue  # a comment line (as ``LineReader`` skips it, a byte order mark before it aside)
                    return None  # a byte order mark, NaN or a broken line: the loader's words and recovery
                if len(raw) > MAX_DEPTH and bracket_count(raw) > MAX_DEPTH and depth_error(value, _NOWHERE) is not None:
                    return None  # nested deeper than the loader reads
                read = _record(rule, value, by_kind)
                if read is None:
                    return None
                record = read
            kind, uuid, parent, on_side, agent, message_id, recorded, la, lc, lo, lf, special, shape, found = record[
                :14
            ]
            floor, parts = record[14], record[15]
            message = kind == "user" or kind == "assistant"
            if not message:
                kinds[kind] += 1
                if uuid is None:
                    continue  # only counted (summary, file-history-snapshot, ...)
            assert uuid is not None
            # A line of the tree. Each message's parent is the message before it (``head``; None for the
            # first, a root), or a bookkeeping line (progress, system, ...) that hangs from it, directly or
            # through others (``passing``): one chain, through the lines it passes. Bookkeeping lines that no
            # message hangs from are leaves off the chain, which the loader leaves out without a word.
            if uuid in seen or on_side is not side:
                if not seen:  # the first line: a subagent's own file, every line of it on its sidechain
                    side = True
                    out.agent = ""
                else:
                    return None  # a sidechain beside the main chain: the loader's subagent transcripts
            if side and not out.agent and message:
                out.agent = agent
            seen.add(uuid)
            if not message:
                if parent == head or parent in passing:
                    passing.add(uuid)
                continue
            assert special is not None
            results_only = shape and all(b[2] in calls_seen for b in special)
            place = 0
            if parent == head or parent in passing:
                pass
            elif results_only and parent in reply:
                # Results of parallel calls, each line hanging from its call's line (one of the split reply's
                # lines): off the chain, but ``claude_code._select`` takes them with it (``_belongs``), and
                # ``_build`` reads them in file order, as here.
                place = reply[parent]
            elif parent is not None and (parent_place := _off_place(phase, parent)) is not None:
                # The next message hangs from such a line: the loader's chain goes through it and the reply
                # line it hangs from; the reply's later lines (same message id) and the other result lines
                # (results only) are off it, and taken in as well.
                if not _reroot(phase, parent):
                    return None
                out.attached += len(reply) - parent_place + sum(1 for p in phase if not p[3]) - 1
                reply, phase = {}, []
            else:
                return None  # a branch, a second root, or a parent not in the file (a broken link)
            if place:
                out.attached += 1
                phase.append((uuid, place, True, True))
                last_off = (uuid, line)
            else:
                head = uuid
                if passing:
                    passing = set()
                out.leaf_line = line
                last_off = None
                if kind == "user" and reply:
                    if found:
                        # taken in off the loader's chain only if it hangs from a line taken in (``_select``)
                        taken = results_only and (parent in reply or _taken(phase, parent))
                        phase.append((uuid, 0, taken, False))
                    else:
                        reply, phase = {}, []
            if kind == "assistant":
                node_id = message_id if message_id is not None else f"line {line}"
                if draft.role != "assistant" or draft.message_id != node_id:
                    if not draft.close():
                        return None
                    draft.open("assistant", line, node_id)
                    reply, phase = {}, []
                    if recorded is not None:
                        i, w, r, o = recorded
                        if i or w or r:
                            usage.append([len(tokens), i, w, r, line, o])
                        else:
                            out.unmeasured += 1
                elif recorded is not None and usage and usage[-1][0] == len(tokens):
                    output = recorded[3]
                    if output > usage[-1][5]:
                        usage[-1][5] = output  # a split reply records its output as it streamed: the largest is its own
                reply[uuid] = len(reply) + 1
            elif not found or draft.role != "user" or not draft.results:
                if not draft.close():
                    return None
                draft.open("user", line, "")
            draft.a += la
            draft.c += lc
            draft.o += lo
            draft.fixed += lf
            draft.floor += floor
            if parts:
                out.parts.extend(parts)
            for block_kind, block_tokens, block_id, name in special:
                if block_kind == "tool_call":
                    if block_id in calls_seen:
                        return None  # a call id used twice: the loader's duplicate defects
                    calls_seen.add(block_id)
                    draft.calls.append(block_id)
                    names[block_id] = name
                    per_tool[name] += 1
                else:
                    if block_id in answered:
                        return None
                    answered.add(block_id)
                    draft.results.append(block_id)
                    results.append((block_id, name, block_tokens, len(tokens), draft.line))
    if last_off is not None:  # the loader's chain ends at the last message, off the chain here
        leaf, out.leaf_line = last_off
        if not _reroot(phase, leaf):
            return None
        place = next(p[1] for p in phase if p[0] == leaf)
        out.attached += len(reply) - place + sum(1 for p in phase if not p[3]) - 1
    if not draft.close() or draft.expect is not None or not tokens:
        return None  # a reply's calls left without their results, or no message at all
    out.calls = len(calls_seen)
    if scanner is not None:
        for block_kind, added in scanner.kinds():  # the tokens of the blocks of the lines it read
            by_kind[block_kind] += added
    return out


def _results_only(raw: object) -> bool:
    """Whether a user line's content is tool results only, each with a str ``tool_use_id`` (``_blocks``
    checks the rest of their shape; the fold whether each answers a call on the chain so far, as
    ``claude_code._belongs`` asks)."""
    if type(raw) is not list or not raw:
        return False
    for b in raw:
        if type(b) is not dict or b.get("type") != "tool_result" or type(b.get("tool_use_id")) is not str:
            return False
    return True


def _has_results(raw: object) -> bool:
    """Whether a user line's content holds a tool result (``_build``'s ``has_results``)."""
    return type(raw) is list and any(type(b) is dict and b.get("type") == "tool_result" for b in raw)


def _off_place(phase: list[tuple[str, int, bool, bool]], uuid: str) -> int | None:
    """The place of the reply line an off-chain result line ``uuid`` hangs from, or None if it is not one."""
    for p in phase:
        if p[0] == uuid and p[3]:
            return p[1]
    return None


def _taken(phase: list[tuple[str, int, bool, bool]], uuid: str | None) -> bool:
    """Whether ``uuid`` is a result line after the reply that the loader would take in off its chain."""
    return any(p[0] == uuid and p[2] for p in phase)


def _reroot(phase: list[tuple[str, int, bool, bool]], uuid: str) -> bool:
    """Whether the loader, following the chain through the off-chain result line ``uuid``, takes in every
    other result line after the reply (each holds results only, answering calls: ``_belongs``)."""
    return all(p[2] for p in phase if p[0] != uuid)


def _usage(recorded: dict[str, object]) -> tuple[int, int, int, int]:
    """Input, cache write, cache read and output tokens, 0 where not an int (as the loader reads them)."""
    i, w, r, o = (
        recorded.get("input_tokens"),
        recorded.get("cache_creation_input_tokens"),
        recorded.get("cache_read_input_tokens"),
        recorded.get("output_tokens"),
    )
    return (
        i if type(i) is int else 0,
        w if type(w) is int else 0,
        r if type(r) is int else 0,
        o if type(o) is int else 0,
    )


class _Draft:
    """The message being read (``claude_code._Draft``): its sums, and its calls and results by id."""

    __slots__ = (
        "a",
        "c",
        "calls",
        "expect",
        "fixed",
        "floor",
        "line",
        "message_id",
        "o",
        "out",
        "results",
        "role",
        "rule",
    )

    def __init__(self, rule: ScriptRule, out: _Folded) -> None:
        self.rule, self.out = rule, out
        self.role = ""
        self.line = 0
        self.message_id = ""
        self.a = self.c = self.o = self.fixed = self.floor = 0
        self.calls: list[str] = []
        self.results: list[str] = []
        self.expect: set[str] | None = None
        """The calls of the reply before this message, when it made any: its results must answer them."""

    def open(self, role: str, line: int, message_id: str) -> None:
        self.role, self.line, self.message_id = role, line, message_id
        self.a = self.c = self.o = self.floor = 0
        self.fixed = self.rule.message_overhead_tokens
        self.calls = []
        self.results = []

    def close(self) -> bool:
        """Add the message to the sums; False if ``check_messages`` (or ``repair``) would find a defect in its
        round: results that do not answer exactly the calls of the reply right before them, or a reply's
        calls not answered by the message after it (results come first by construction, ids are unique)."""
        if not self.role:
            return True
        out, rule = self.out, self.rule
        wa, wc, wo, denominator = rule._weights
        tokens = -(-(self.a * wa + self.c * wc + self.o * wo) // denominator) + self.fixed
        role = self.role
        index = len(out.tokens)
        out.tokens.append(tokens)
        out.roles.append(role)
        out.by_role[role] += tokens
        a, c, o = out.counts
        out.counts = (a + self.a, c + self.c, o + self.o)
        out.lines.append(self.line)
        out.chars.append((self.a, self.c, self.o, self.fixed))
        out.floors.append(self.floor)
        out.calls_of.append(self.calls)
        if self.results:
            if self.expect is None or len(self.results) != len(self.expect) or set(self.results) != self.expect:
                return False
            self.expect = None
        elif self.expect is not None:
            return False
        if index == 0 or (role == "user" and not self.results):
            out.turns += 1
        if role == "assistant" and self.calls:
            out.rounds += 1
            self.expect = set(self.calls)
        self.role = ""
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
    """``build_report``'s report from the sums: the fold's, the predicted size and the usage rows."""
    rule = estimator.rule
    tokens = folded.tokens
    fold = ReportFold(estimator, keep_skeleton=False)
    fold.messages = len(tokens)
    fold.total = sum(tokens)
    fold.counts = CharCounts(*folded.counts)
    if rule.message_overhead_tokens:
        folded.by_kind["message overhead"] += rule.message_overhead_tokens * len(tokens)
    fold.by_role = folded.by_role
    fold.by_kind = folded.by_kind
    fold.turns, fold.rounds, fold.calls = folded.turns, folded.rounds, folded.calls
    fold.names = folded.names
    fold.calls_per_tool = folded.per_tool
    fold.results = folded.results
    notes = [
        NO_PREAMBLE_NOTE,
        f"followed the parentUuid chain that ends at the last message (line {folded.leaf_line}); no other branches",
    ]
    if folded.attached:
        notes.append(
            f"took in {folded.attached} line(s) off the chain: parallel tool calls and their results, which point "
            "at the call they follow or answer rather than at the line before them"
        )
    if folded.unmeasured:
        notes.append(
            f"{folded.unmeasured} assistant message(s) record zero usage (e.g. model <synthetic>): not measured"
        )
    name = subagent_name(path, folded.agent)
    header = Transcript(
        system=(),
        tools=(),
        messages=(),
        source=Source(path),
        format=NAME,
        dialect="anthropic",
        name=name,
        notes=tuple(notes),
        line_kinds=tuple(sorted(folded.kinds.items(), key=lambda kv: (-kv[1], kv[0]))),
        skipped=tuple(folded.skipped),
    )
    size = _size(folded.usage, tokens, folded.roles, size_mode, preamble)
    return fold.assemble(
        header,
        header,
        size,
        budget=budget,
        window=window,
        top=top,
        usage=_usage_rows(folded.usage, tokens),
        session_tokens=None,
        defects=(),
    )


def subagent_name(path: str, agent: str | None) -> str:
    """The transcript's name, as ``claude_code._subagent_name`` names the one sidechain tree of a file
    (``_Folded.agent``); "" for a main conversation."""
    if agent is None:
        return ""
    stem = Path(path).stem
    return f"subagent agent-{agent}" if agent else f"subagent {stem}" if stem.startswith("agent-") else "subagent 1"


def _usage_rows(usage: list[list[int]], tokens: list[int]) -> tuple[UsageRow, ...]:
    """``report.usage_rows`` of a session without compaction, system prompt or tools."""
    cumulative = [0]
    for estimate in tokens:
        cumulative.append(cumulative[-1] + estimate)
    rows = []
    for before, i, w, r, line, _ in usage:
        before = min(before, len(tokens))
        if before == 0:
            continue
        rows.append(UsageRow(before, line, cumulative[before], i + w + r, r, w))
    return tuple(rows)


def _size(usage: list[list[int]], tokens: list[int], roles: list[str], mode: SizeMode, given: int | None) -> Size:
    """``predict_size`` of a session without compaction, system prompt or tools, from its messages' tokens
    and its measured requests (``_Folded.usage``)."""
    n = len(tokens)
    pre_source: PreambleSource
    pre_line: int | None
    if given is not None:
        pre_tokens, pre_source, pre_line = given, "given", None
    else:
        first = next((u for u in usage if 0 < u[0] <= n), None)
        inferred = None if first is None else max(0, first[1] + first[2] + first[3] - sum(tokens[: first[0]]))
        if first is not None and inferred is not None and inferred > 0:
            pre_tokens, pre_source, pre_line = inferred, "inferred", first[4]
        else:
            pre_tokens, pre_source, pre_line = 0, "none", None
    anchor = None
    if mode == "auto":
        for u in reversed(usage):
            if u[0] > n or u[0] < 1:
                continue
            if u[0] == n or roles[u[0]] == "assistant":
                anchor = u
                break
    if anchor is None:
        estimated = sum(tokens)
        return Size(pre_tokens + estimated, "estimate", pre_tokens, pre_source, pre_line, 0, estimated_tokens=estimated)
    b, measured = anchor[0], anchor[1] + anchor[2] + anchor[3]
    reply = max(anchor[5], tokens[b]) if b < n else 0
    estimated = sum(tokens[b + 1 :])
    return Size(
        measured + reply + estimated,
        "anchored",
        pre_tokens,
        pre_source,
        pre_line,
        0,
        measured_tokens=measured,
        anchor_line=anchor[4],
        anchor_messages=b,
        reply_tokens=reply,
        estimated_tokens=estimated,
    )
