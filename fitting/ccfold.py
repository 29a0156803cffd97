"""``report`` of a Claude Code session folded straight from its lines, without ``Message`` objects.

For the shape most sessions have, one pass (``_fold_lines``) gives what ``claude_code.load`` and
``build_report`` give: message lines on one parentUuid chain (each message's parent the message before it, or
bookkeeping lines such as progress that hang from it), all off the sidechain or all on it (a subagent's own
file), blocks of the kinds Claude Code writes, assistant replies split over lines that share a message id, and
every round of tool calls answered by the message right after it. Parallel calls' result lines may hang from
their call's line rather than the line before them, and the chain go on from one of them, as
``claude_code._select`` takes them in (each result line off its chain holds results only, hanging from a line
it takes); blank and comment lines are passed over as ``LineReader`` passes them. Each line is read by the
compiled scanner (fitting/_ccline.c, a chunk of lines at a time, where it is built) or else parsed with orjson
and read by ``_record`` (the reference, and the reader of every line the scanner is not sure of, such as a
line with an image); each block is summed into its message (characters per script class, fixed tokens) and
its tokens into its kind, calls and results are kept by id; the split replies and result lines are merged as
``claude_code._build`` merges the messages, and the sums of ``ReportFold`` and the predicted size are taken
from them.

Where the one pass gives up (another branch, a second root, a parent not in the file, a broken line, a
defective round, sidechains beside the main chain), ``_fold_tree`` reads the file as the loader does, going on
from the lines the one pass read (``_Reading``: each file is read once, each message line's tokens per block
kind kept for the lines it leaves out and the sidechain transcripts): a record and a text-less
``claude_code._Node`` per line, unreadable lines skipped and their links recovered with ``skip_invalid``
(without it the loader stops there, and so does the fold), the chain chosen by ``claude_code._select``, the
loader's defects and notes, and one fold per transcript (the main conversation, then each sidechain tree).
``fold_claude_code_all`` adds the files of a ``<session>/subagents/`` folder. What is still left to the loader
(None, the first reason in ``why``): a compaction, an empty message, a block of another kind, a message line
the loader skips as of an unknown shape, a call id used twice, an estimator that is not a ``ScriptRule``, kept
JSON text. The report is the same either way (tests/test_ccfold.py compares the two on the corpus, every
prefix of its sessions and generated sessions; benchmarks/probe_fold_coverage.py shows which files of a folder
fold, and why the others do not)."""

from __future__ import annotations

import itertools
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, cast

import orjson

from ._json import MAX_DEPTH, bracket_count, depth_error, dumps
from .errors import InputError, Location
from .estimate import (
    _GROUP_CODES,
    _SEED_CLASSES,
    PURE_ENV,
    CharCounts,
    Estimator,
    ScriptRule,
    _check_classes,
    _groups,
    image_tokens,
)
from .formats._jsonl import LineReader
from .formats.base import Input
from .formats.claude_code import (
    NAME,
    NO_PREAMBLE_NOTE,
    SUBAGENTS_DIR,
    _entry,
    _left_out,
    _Node,
    _recovered_node,
    _select,
    _shape_error,
    _subagent_name,
    _Tree,
    broken_links,
    compaction_agent,
    message_defects,
    reply_line_joins,
    subagent_files,
)
from .images import sniff_dimensions
from .report import TOP_RESULTS, Report, ReportFold, UsageRow, _defects
from .size import FLOOR_RULE, SIZE_MODES, PreambleSource, Size, SizeMode, growth_scale, scaled
from .transcript import Block, Defect, Message, Role, Skipped, Source, Text, ToolCall, ToolResult, Transcript

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
    skip_invalid: bool = False,
    why: list[str] | None = None,
) -> Report | None:
    """The report ``build_report`` gives on the one transcript ``claude_code.load`` reads from ``source``
    (with ``skip_invalid`` as given to it), or None when the file is not of the shape this path vouches for
    (see the module docstring); then the first reason is appended to ``why``, if given. The one pass
    (``_one_pass``) takes the common shape; where it gives up, ``_fold_tree`` goes on from the lines it read
    and folds the chain ``claude_code._select`` chooses (branches, second roots, broken links, skipped lines)."""
    rule = estimator.rule
    refused = _refused_options(estimator, source, size_mode, preamble)
    if refused is None and source.data is None and subagent_files(source.path):
        refused = "a subagents folder beside the file (several transcripts: fold_claude_code_all reads them)"
    if refused is not None or type(rule) is not ScriptRule:
        _no(why, refused or "")
        return None
    found = _fold_file(source, estimator, rule, budget, window, top, size_mode, preamble, skip_invalid, why)
    if found is not None and len(found) > 1:
        _no(why, "sidechain lines beside the main chain (several transcripts: fold_claude_code_all reads them)")
        return None
    return None if found is None else found[0]


def _refused_options(estimator: Estimator, source: Input, size_mode: str, preamble: int | None) -> str | None:
    """Why the fold leaves any file to the loader with these options, or None."""
    if type(estimator.rule) is not ScriptRule:
        return "the estimator is not a ScriptRule (the seed's kind)"
    if source.keep_text:
        return "kept JSON text"
    if size_mode not in SIZE_MODES or (preamble is not None and preamble < 0):
        return "an option predict_size refuses"  # it words the error
    return None


def fold_claude_code_all(
    source: Input,
    estimator: Estimator,
    *,
    budget: int | None = None,
    window: int | None = None,
    top: int = TOP_RESULTS,
    size_mode: SizeMode = "auto",
    preamble: int | None = None,
    skip_invalid: bool = False,
    why: list[str] | None = None,
) -> list[Report] | None:
    """The reports ``build_report`` gives on every transcript ``claude_code.load`` reads from ``source``: the
    session's (as ``fold_claude_code`` folds it) and, for a ``<session>/subagents/`` folder beside it, each
    subagent file's, named and noted as ``load`` names and notes them; None where the fold leaves any of the
    files to the loader (the first reason in ``why``)."""
    rule = estimator.rule
    refused = _refused_options(estimator, source, size_mode, preamble)
    if refused is not None or type(rule) is not ScriptRule:
        _no(why, refused or "")
        return None
    subagents = subagent_files(source.path) if source.data is None else []
    found: list[Report] = []
    first = 0
    for item in (source, *(Input(str(f), keep_text=source.keep_text) for f in subagents)):
        reports = _fold_file(item, estimator, rule, budget, window, top, size_mode, preamble, skip_invalid, why)
        if reports is None:
            if item is not source and why:
                why[0] = f"{Path(item.path).name} in {SUBAGENTS_DIR}/: {why[0]}"
            return None
        found.extend(reports)
        first = first or len(found)
    if subagents:  # as claude_code.load names the subagent files' transcripts and notes them on the session's
        named = [r if r.name else replace(r, name=f"subagent {Path(r.path).stem}") for r in found[first:]]
        names = ", ".join(r.name for r in named)
        note = f"loaded {len(named)} subagent transcript(s) from {SUBAGENTS_DIR}/: {names}"
        found = [replace(found[0], notes=(*found[0].notes, note)), *found[1:first], *named]
    return found


def _fold_file(
    source: Input,
    estimator: Estimator,
    rule: ScriptRule,
    budget: int | None,
    window: int | None,
    top: int,
    size_mode: SizeMode,
    preamble: int | None,
    skip_invalid: bool,
    why: list[str] | None,
) -> list[Report] | None:
    """The reports of the transcripts of the file ``source`` (its subagents folder aside), or None."""
    found = _fold_source(source, rule, skip_invalid, why)
    if found is None:
        return None
    reports = [_report(source.path, f, estimator, budget, window, top, size_mode, preamble) for f in found]
    return reports


def _fold_source(
    source: Input,
    rule: ScriptRule,
    skip_invalid: bool,
    why: list[str] | None = None,
    *,
    plan: bool = False,
    stand_ins: bool = True,
) -> list[_Folded] | None:
    """The folds of the transcripts of ``source`` in one read: the one pass's, or where it gives up the tree
    fold's, going on from the line the one pass got to (past ``_KEEP`` lines of the tree, from the file's
    start); ``plan`` and ``stand_ins`` as ``_one_pass`` and ``_fold_tree`` take them. None (the reason in
    ``why``) for a shape left to the loader."""
    if compaction_agent(source.path, ""):
        _no(why, COMPACTION_REFUSED)
        return None
    with source.open() as f:
        reading = _Reading(f, _scanner(rule))
        folded = _one_pass(source, rule, reading, plan=plan)
        found = [folded] if folded is not None else None
        if found is None:
            whole = reading if reading.whole else None
            found = _fold_tree(source, rule, skip_invalid, why, whole, plan=plan, stand_ins=stand_ins)
    if found is not None and any(compaction_agent("", f.agent or "") for f in found):
        _no(why, COMPACTION_REFUSED)
        return None
    return found


COMPACTION_REFUSED = "a compaction agent's file (its preamble is its session's: claude_code.load infers it)"


def _no(why: list[str] | None, reason: str) -> None:
    """Keep ``reason``, why the fold leaves a file to the loader, in ``why`` (the first only)."""
    if why is not None and not why:
        why.append(reason)


class _Folded:
    """What ``ReportFold`` sums over the messages, taken over one pass of the lines."""

    __slots__ = (
        "agent",
        "attached",
        "branches",
        "by_kind",
        "by_role",
        "calls",
        "calls_of",
        "chars",
        "counts",
        "defects",
        "floors",
        "kinds",
        "leaf_line",
        "lines",
        "name",
        "names",
        "off_chain",
        "one_pass",
        "parts",
        "path",
        "per_tool",
        "results",
        "roles",
        "rounds",
        "skeleton",
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
        self.path = ""
        """The file's path, as the stand-ins' sources name it."""
        self.name: str | None = None
        """The transcript's name where ``_fold_tree`` names it as the loader does (else from ``agent``)."""
        self.off_chain = self.branches = 0
        """Message lines the loader leaves out on other branches, and how many branches (``_fold_tree``)."""
        self.one_pass = False
        """Whether ``_one_pass`` folded it: a chain without defects, which ``repair`` leaves as it is."""
        self.defects: tuple[Defect, ...] = ()
        """The loader's and the repair check's defects (``_fold_tree``; the one pass vouches there are none); with
        ``plan``, the loader's other than ``check_messages``'s (ccplan checks ``skeleton`` where it needs to)."""
        self.skeleton: list[Message] | None = None
        """Each message's calls and results without text, kept by ``_Draft.close`` for the defects
        (``_fold_tree``; with ``plan`` and ``stand_ins``, kept for ccplan), else None."""
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
                for part in inner:  # text and image blocks (screenshots, pictures a tool read)
                    if type(part) is not dict:
                        return None
                    part_kind = part.get("type")
                    if part_kind == "image":
                        fixed += bo + _image(rule, part)
                        continue
                    if part_kind != "text":
                        return None
                    text = part.get("text")
                    if type(text) is not str:
                        return None
                    a2, c2, o2 = _groups(text)
                    a, c, o, fixed = a + a2, c + c2, o + o2, fixed + bo
                    block_floor += _floor(a2, c2, o2)
            else:
                return None
        elif kind == "image":
            a = c = o = 0
            fixed = bo + _image(rule, b)
            block_floor = 0  # an image has no text: ``size.floor_tokens`` counts none
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


def _image(rule: ScriptRule, block: dict[str, object]) -> int:
    """An image block's tokens (``wire.anthropic.image_from_json`` and ``Estimator.block_parts``): Anthropic's
    rule from the size its base64 header gives, else the rule's tokens for an image of unknown size."""
    found = block.get("source")
    dims = None
    if type(found) is dict and found.get("type") == "base64":
        data = found.get("data")
        if type(data) is str:
            dims = sniff_dimensions(data)
    return image_tokens(dims[0], dims[1], rule.image_tokens_unknown) if dims else rule.image_tokens_unknown


_CHUNK = 1 << 20
"""Bytes read at a time when the scanner reads the lines."""


def _lines(f: BinaryIO, scanner: Scanner | None, size: int = _CHUNK) -> Iterator[bytes | _Record]:
    """The lines of ``f`` as iterating it gives them, each as the scanner's record where it vouches for the
    line (``Scanner.scan_lines``, ``size`` bytes of lines at a time), else as its bytes.

    The bytes are read into one buffer, used again for every read (``readinto``): a fresh chunk per read cost
    more than the copy (new memory to fault in each time), and the scanner copies what it keeps. A line begun
    at the end of the buffer is moved to its start before the next read; a line longer than the buffer has
    the buffer doubled."""
    if scanner is None:
        yield from f
        return
    scan_lines = scanner.scan_lines
    readinto: Callable[[memoryview], int | None] = f.readinto  # type: ignore[attr-defined]  # files, BytesIO
    buffer = bytearray(size)
    view = memoryview(buffer)
    kept = 0  # the bytes at the start of the buffer: a line begun in the read before
    while True:
        got = readinto(view[kept:])
        final = not got
        end = kept + (got or 0)
        items, used = scan_lines(view[:end], final)
        yield from items
        if final:
            return
        kept = end - used
        if kept == len(buffer):  # one line fills the buffer: a larger one, the line moved into it
            larger = bytearray(2 * len(buffer))
            larger[:kept] = view
            view.release()
            buffer, view = larger, memoryview(larger)
        elif kept:
            view[:kept] = bytes(view[used:end])


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


_KEEP = 1 << 15
"""The most lines of the tree the one pass keeps for a hand-over (about 24 MB of records, the lines of a session of
50-100 MB): past them it drops them, so that a big session it takes does not hold them all, and the tree fold of
one it gives up on later reads the file from its start (once: its left-out and sidechain lines' tokens still come
from that one read)."""


class _Reading:
    """One read of a file's lines, shared by the one pass and the tree fold it hands the file over to when it
    gives up, so that each line is read once: the lines still to come (numbered from 1, each the scanner's
    record or its bytes), what the one pass kept of the lines it read (the lines of the tree: their numbers and
    records; the line kinds, comment lines and the blocks' tokens of the lines ``_record`` read), the line it
    gave up on before reading it (``pending``), and each message line's tokens per block kind (the scanner's
    ``kinds_of``, ``own`` for the lines read by ``_record``), which the tree fold takes off for the lines it
    leaves out and sums for each sidechain transcript."""

    __slots__ = ("by_kind", "kept", "kept_lines", "kinds", "lines", "own", "pending", "scanner", "skipped", "whole")

    def __init__(self, f: BinaryIO, scanner: Scanner | None) -> None:
        self.scanner = scanner
        self.lines: Iterator[tuple[int, bytes | _Record]] = enumerate(_lines(f, scanner), start=1)
        self.kept_lines: list[int] = []
        self.kept: list[_Record] = []
        """The records of the lines of the tree the one pass read (message lines, other lines with a uuid)."""
        self.whole = True
        """Whether ``kept`` holds every line of the tree the one pass read: it keeps no more than ``_KEEP``."""
        self.pending: list[tuple[int, bytes]] = []
        """The line the one pass gave up on unread (broken, too deep, refused by ``_record``), if any."""
        self.kinds: Counter[str] = Counter()
        self.skipped: list[Skipped] = []
        self.by_kind: defaultdict[str, int] = defaultdict(int)
        """The tokens per block kind of the lines ``_record`` read (the scanner keeps its own)."""
        self.own: dict[int, defaultdict[str, int]] = {}
        """Each message line ``_record`` read: its tokens per block kind."""

    def read(self, rule: ScriptRule, value: object, line: int) -> _Record | None:
        """``_record`` of line ``line`` (parsed: ``value``), its tokens per block kind kept in ``own`` and
        added to ``by_kind``."""
        mine: defaultdict[str, int] = defaultdict(int)
        record = _record(rule, value, mine)
        if record is not None and mine:
            self.own[line] = mine
            by_kind = self.by_kind
            for kind, tokens in mine.items():
                by_kind[kind] += tokens
        return record

    def kinds_of(self, lines: set[int]) -> defaultdict[str, int]:
        """The tokens by block kind of the message lines ``lines`` read so far (a kind met with no tokens
        included), without reading them again."""
        taken: defaultdict[str, int] = defaultdict(int)
        if self.scanner is not None:
            for kind, tokens in self.scanner.kinds_of(lines):
                taken[kind] += tokens
        own = self.own
        if own:
            for line in lines:
                mine = own.get(line)
                if mine is not None:
                    for kind, tokens in mine.items():
                        taken[kind] += tokens
        return taken


def _fold_lines(source: Input, rule: ScriptRule, *, compiled: bool = True, plan: bool = False) -> _Folded | None:
    """The one pass (``_one_pass``) over the file ``source``, the compiled scanner reading the lines it vouches
    for unless not ``compiled``."""
    with source.open() as f:
        return _one_pass(source, rule, _Reading(f, _scanner(rule) if compiled else None), plan=plan)


def _one_pass(source: Input, rule: ScriptRule, reading: _Reading, *, plan: bool = False) -> _Folded | None:
    """One pass over the lines of ``reading``: each line's record (``_record``; the compiled scanner's where it
    vouches for the line), message lines merged as ``claude_code._build`` merges them (split replies by
    message id, result lines into one user message, results first), each message summed as
    ``Estimator._script_blocks`` and ``ReportFold.add`` sum it, and the rounds checked as ``check_messages``
    checks them (``_Draft.close``). Where it gives up (None), ``reading`` holds what ``_fold_tree`` goes on
    from: the records of the lines of the tree so far, and the line it gave up on unread, if it did."""
    out = _Folded()
    out.one_pass = True
    out.kinds, out.by_kind, out.skipped = reading.kinds, reading.by_kind, reading.skipped
    tokens, usage, kinds = out.tokens, out.usage, out.kinds
    by_kind, names, per_tool, results = out.by_kind, out.names, out.per_tool, out.results
    kept_lines, kept = reading.kept_lines, reading.kept
    keeping = True
    loads = orjson.loads
    scanner = reading.scanner
    seen: set[str] = set()
    calls_seen: set[str] = set()
    answered: set[str] = set()
    head: str | None = None
    passing: set[str] = set()
    measured: dict[str, int] = {}
    """Each reply's place in ``usage`` (-1 when it records none), by message id (``claude_code._build``)."""
    reply: dict[str, int] = {}
    """The lines of the last reply (by uuid, their place in it from 1) while its results are read."""
    phase: list[tuple[str, int, bool, bool]] = []
    """The user lines with results after it: uuid, place of the reply line it hangs from (0 if from the chain's
    head), whether the loader would take it in off its chain (results only, each answering a call, hanging from
    a line it takes), whether it is off the chain here."""
    last_off: tuple[str, int] | None = None
    """The last message line, when it is off the chain: its uuid and line."""
    side = False
    draft = _Draft(rule, out, plan=plan)
    for line, item in reading.lines:
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
                reading.pending.append((line, raw))
                return None  # a byte order mark, NaN or a broken line: the loader's words and recovery
            deep = len(raw) > MAX_DEPTH and bracket_count(raw) > MAX_DEPTH
            if deep and depth_error(value, Location("<ccfold>")) is not None:
                reading.pending.append((line, raw))
                return None  # nested deeper than the loader reads
            read = reading.read(rule, value, line)
            if read is None:
                reading.pending.append((line, raw))
                return None
            record = read
        (kind, uuid, parent, on_side, agent, message_id, recorded, la, lc, lo, lf, special, shape, found, floor,
         parts) = record  # fmt: skip
        message = kind == "user" or kind == "assistant"
        if not message:
            kinds[kind] += 1
            if uuid is None:
                continue  # only counted (summary, file-history-snapshot, ...)
        assert uuid is not None
        if keeping:  # for the tree fold, should this pass give up
            kept_lines.append(line)
            kept.append(record)
            if len(kept) > _KEEP:
                keeping = reading.whole = False
                reading.kept_lines, reading.kept = [], []
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
        joins = 0
        if kind == "assistant":
            node_id = message_id if message_id is not None else f"line {line}"
            joins = draft.joins(node_id)
            if joins < 0:
                if not draft.close():
                    return None
                draft.open("assistant", line, node_id)
                reply, phase = {}, []
            elif joins == 1 and phase:
                # The reply goes on after results written between its lines: the result lines that may hang from
                # its lines from now on are those after its lines from here.
                reply, phase = {}, []
            _measure(measured, usage, node_id, recorded, line, len(tokens), out, first=joins < 0)
            reply[uuid] = len(reply) + 1
        elif not found or draft.role != "user" or not draft.results:
            if not draft.close():
                return None
            draft.open("user", line, "")
        if joins == 1:  # a line of the reply before the results being read
            if any(b[0] != "tool_call" for b in special):
                return None  # a result in a reply's line: the loader keeps it in the reply
            draft.extend_reply(la, lc, lo, lf, floor, special)
        else:
            draft.a += la
            draft.c += lc
            draft.o += lo
            draft.fixed += lf
        if plan:
            if joins != 1:
                draft.floor += floor
            if parts:
                out.parts.extend(parts)
        for block_kind, block_tokens, block_id, name in special:
            if block_kind == "tool_call":
                if block_id in calls_seen:
                    return None  # a call id used twice: the loader's duplicate defects
                calls_seen.add(block_id)
                if joins != 1:
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


def _fold_tree(
    source: Input,
    rule: ScriptRule,
    skip_invalid: bool,
    why: list[str] | None = None,
    reading: _Reading | None = None,
    *,
    plan: bool = False,
    stand_ins: bool = True,
) -> list[_Folded] | None:
    """The fold of a file the one pass gives up on, read as the loader reads it: each line's record (the
    scanner's, else ``_record``'s), each line of the tree a ``claude_code._Node`` with stand-ins for its
    calls and results (no text), unreadable lines skipped and their links recovered as ``_read`` does (with
    ``skip_invalid``), the chain and the lines it carries chosen by ``claude_code._select``, and the chosen
    message lines merged in file order as ``_build`` merges them; the defects are the loader's
    (``broken_links``, ``message_defects``, ``_left_out``) and the repair check's. One fold per transcript
    the loader reads from the file: the main conversation, then each tree of sidechain lines beside it
    (``_fold_group``), named as ``claude_code._transcripts`` names them. None, with the reason in ``why``,
    for a shape it leaves to the loader. With ``reading``, the read the one pass gave up on: the lines it read
    are not read again, and the lines left go on from it; without it, the file is read from its start. With
    ``plan``, each fold keeps what ``ccplan.fold_plan`` reads of each message and result (``_Draft.plan``), as
    ``_one_pass(plan=True)`` does, and the defects ``check_messages`` finds are not worded: each fold keeps its
    stand-ins (``_Folded.skeleton``) for ccplan to check where it needs to, only with ``stand_ins``."""
    if reading is None:
        with source.open() as f:
            reading = _Reading(f, _scanner(rule))
            return _fold_tree(source, rule, skip_invalid, why, reading, plan=plan, stand_ins=stand_ins)
    path = source.path
    keep = not plan or stand_ins
    out = _Folded()
    out.path = path
    out.skeleton = [] if keep else None
    out.by_kind, out.kinds = reading.by_kind, reading.kinds
    by_kind, kinds = out.by_kind, out.kinds
    loads = orjson.loads
    scanner = reading.scanner
    reader = LineReader(path, skip_invalid)
    skipped = reader.skipped
    skipped.extend(reading.skipped)  # the comment lines the one pass passed over
    nodes: list[_Node] = []
    records: list[_Record | None] = []
    text = Text("")
    for line, record in zip(reading.kept_lines, reading.kept, strict=True):  # the lines of the tree the one pass read
        _add_node(nodes, records, line, record, text)
    reading.kept_lines, reading.kept = [], []
    for line, item in itertools.chain(reading.pending, reading.lines):
        if isinstance(item, bytes):
            raw = item
            try:
                value = loads(raw)
            except orjson.JSONDecodeError:
                before = len(skipped)
                try:
                    entry = _entry(reader, line, raw)
                except InputError:
                    _no(why, f"line {line}: not JSON (the loader stops there without --skip-invalid)")
                    return None
                if entry is None:  # blank, a comment or skipped
                    if len(skipped) > before and skipped[-1].reason != "comment line":
                        recovered = _recovered_node(raw, line)
                        if recovered is not None:
                            nodes.append(recovered)
                            records.append(None)
                    continue
                value = entry[0]
            else:
                if len(raw) > MAX_DEPTH and bracket_count(raw) > MAX_DEPTH:
                    deep = depth_error(value, Location(path, line))
                    if deep is not None:
                        if not skip_invalid:
                            _no(why, f"line {line}: nested too deep (the loader stops there)")
                            return None
                        skipped.append(Skipped(Source(path, line), deep.message))
                        recovered = _recovered_node(raw, line)
                        if recovered is not None:
                            nodes.append(recovered)
                            records.append(None)
                        continue
            if type(value) is not dict:
                if not skip_invalid:
                    _no(why, f"line {line}: not a JSON object (the loader stops there)")
                    return None
                src = Source(path, line)
                error = _shape_error(src, "not a Claude Code line: expected a JSON object")
                skipped.append(Skipped(src, error.message))
                continue
            read = reading.read(rule, value, line)
            if read is None:
                _no(why, f"line {line}: {_refused(value)}")
                return None
            record = read
        else:
            record = item
        kind = record[0]
        if kind != "user" and kind != "assistant":
            kinds[kind] += 1
            if record[1] is None:
                continue
        _add_node(nodes, records, line, record, text)
    out.skipped = skipped
    if scanner is not None:
        for block_kind, added in scanner.kinds():  # the tokens of the blocks of the lines it read
            by_kind[block_kind] += added
    tree = _Tree.build(nodes)
    main = [i for i, n in enumerate(nodes) if n.is_message and not n.sidechain]
    sides: dict[int, list[int]] = {}
    memo: dict[int, int] = {}
    for i, n in enumerate(nodes):
        if n.is_message and n.sidechain:
            sides.setdefault(tree.root(i, memo), []).append(i)
    groups: list[tuple[list[int], str | None]] = [(main, None)] if main else []
    stem = Path(path).stem
    taken: Counter[str] = Counter()
    for number, members in enumerate(sides.values(), start=1):  # as claude_code._transcripts names them
        label = _subagent_name(tree, members, number, stem)
        taken[label] += 1
        groups.append((members, label if taken[label] == 1 else f"{label} #{taken[label]}"))
    if not groups:
        _no(why, "no message lines (the loader words the error)")
        return None
    found: list[_Folded] = []
    for members, title in groups:
        group = out if not found else _Folded()  # the first holds the file's skipped lines and line kinds
        group.path = path
        group.skeleton = [] if keep else None
        group.name = title
        if not _fold_group(source, rule, tree, records, members, group, why, not found, reading, plan):
            return None
        found.append(group)
    return found


def _add_node(nodes: list[_Node], records: list[_Record | None], line: int, record: _Record, text: Text) -> None:
    """Add line ``line`` of the tree (its ``record``: a message line, or another line with a uuid) to
    ``nodes`` as a ``claude_code._Node`` with stand-ins for its calls and results (``text`` for its other
    blocks), and its record to ``records`` (None for a line other than a message)."""
    kind = record[0]
    if kind == "user" or kind == "assistant":
        special = record[11]
        blocks: tuple[Block, ...]
        if special:
            blocks = tuple(
                ToolCall(block_id, name, "") if block_kind == "tool_call" else ToolResult(block_id, ())
                for block_kind, _, block_id, name in special
            )
            if not record[12]:
                blocks += (text,)  # the line's other blocks (a line of results only holds none)
        else:
            blocks = (text,)
        message_id = record[5]
        if kind == "assistant":
            node_id, usage = message_id if message_id is not None else f"line {line}", record[6]
        else:
            node_id, usage = f"line {line}", None
        uuid = record[1]
        assert uuid is not None
        nodes.append(_Node(line, kind, uuid, record[2], record[3], record[4] or "", node_id, blocks, usage))
        records.append(record)
    else:
        nodes.append(_Node(line, kind, record[1], record[2], record[3]))
        records.append(None)


def _fold_group(
    source: Input,
    rule: ScriptRule,
    tree: _Tree,
    records: list[_Record | None],
    members: list[int],
    out: _Folded,
    why: list[str] | None,
    first: bool,
    reading: _Reading,
    plan: bool = False,
) -> bool:
    """Fold into ``out`` the transcript of ``members`` (the message nodes of one group, as
    ``claude_code._transcript`` takes them): its chain and the lines it carries (``_select``), merged as
    ``_build`` merges them, with the loader's defects and the repair check's; False (the reason in ``why``) for
    a shape left to the loader. The first transcript of the file has the sums of the blocks' tokens of all its
    lines in ``out.by_kind`` (``first``), less the message lines it leaves out; the others sum their own lines'
    (``reading``'s tokens per line: no line is read again). With ``plan``, the floors and the results' parts
    are kept too (``_Draft.plan``)."""
    path = source.path
    nodes = tree.nodes
    by_kind = out.by_kind
    leaf = members[-1]
    chain, selected = _select(tree, leaf)
    if any(nodes[i].compact for i in selected):
        _no(why, "a compaction")  # refused by ``_record`` already
        return False
    tokens, usage_rows = out.tokens, out.usage
    names, per_tool, results = out.names, out.per_tool, out.results
    calls_seen: set[str] = set()
    answered: set[str] = set()
    call_lines: dict[str, int] = {}
    result_lines: dict[tuple[int, str], int] = {}
    measured: dict[str, int] = {}
    """Each reply's place in ``usage_rows`` (-1 when it records none), by message id (``claude_code._build``)."""
    draft = _Draft(rule, out, strict=False, plan=plan)
    order = sorted(selected)
    for i in order:
        kept = records[i]
        if kept is None:
            continue
        record = kept
        node = nodes[i]
        line = node.line
        kind, _, _, _, _, _, recorded, la, lc, lo, lf, special, _, found, floor, parts = record
        assert special is not None
        joins = 0
        if kind == "assistant":
            joins = draft.joins(node.message_id)
            if joins < 0:
                draft.close()
                draft.open("assistant", line, node.message_id)
            _measure(measured, usage_rows, node.message_id, recorded, line, len(tokens), out, first=joins < 0)
        elif not found or draft.role != "user" or not draft.results:
            draft.close()
            draft.open("user", line, "")
        if joins == 1:  # a line of the reply before the results being read
            if any(b[0] != "tool_call" for b in special):
                _no(why, f"line {line}: a tool result in a reply's line")
                return False
            draft.extend_reply(la, lc, lo, lf, floor, special)
        else:
            draft.a += la
            draft.c += lc
            draft.o += lo
            draft.fixed += lf
        if plan:
            if joins != 1:
                draft.floor += floor
            if parts:
                out.parts.extend(parts)
        for block_kind, block_tokens, block_id, name in special:
            if block_kind == "tool_call":
                if block_id in calls_seen:
                    _no(why, f"line {line}: tool call id {block_id} used twice (the loader drops a copy)")
                    return False
                calls_seen.add(block_id)
                if joins != 1:
                    draft.calls.append(block_id)
                names[block_id] = name
                per_tool[name] += 1
                if kind == "assistant":
                    call_lines[block_id] = line
            else:
                if block_id in answered:
                    _no(why, f"line {line}: a second result for {block_id} (the loader drops a copy)")
                    return False
                answered.add(block_id)
                draft.results.append(block_id)
                results.append((block_id, name, block_tokens, len(tokens), draft.line))
                result_lines[(len(tokens), block_id)] = line
    draft.close()
    out.calls = len(calls_seen)
    if first:  # the scanner's sums, less the lines left out
        left = [i for i, n in enumerate(nodes) if n.is_message and i not in selected]
        if left and not _take_back(reading, rule, {nodes[i].line for i in left}, by_kind):
            _no(why, "blocks of zero tokens on a left-out branch (which kinds remain is not known)")
            return False
    else:  # the tokens of its own lines
        out.by_kind = _kinds_of(reading, {nodes[i].line for i in selected if nodes[i].is_message})
    chosen = set(chain)
    out.leaf_line = nodes[leaf].line
    out.attached = sum(1 for i in selected if i not in chosen and nodes[i].is_message)
    out.off_chain = sum(1 for i in members if i not in selected)
    kept_ids = {nodes[i].message_id for i in selected if nodes[i].kind == "assistant"} | calls_seen
    branches = _left_out(path, tree, members, selected, kept_ids)
    out.branches = len(branches)
    defects = broken_links(path, tree, chain)
    if plan:
        # ccplan reads of the defects only whether repair changes the request, and only for check's summary of
        # a session that fits (``ccplan._repaired``): it checks the stand-ins kept (``out.skeleton``) then. The
        # fold refuses a call id used twice and a second result, so ``repair`` changes the request exactly
        # where ``check_messages`` finds a violation of the stand-ins that it repairs (``repair.DEFECT_OF``):
        # neither ``message_defects`` nor ``report._defects`` (two more passes) is needed to say so.
        defects.extend(branches)
        defects.sort(key=lambda d: d.source.line or 0)
        out.defects = tuple(defects)
        return True
    assert out.skeleton is not None
    skeleton = tuple(out.skeleton)
    defects.extend(message_defects(path, skeleton, call_lines, result_lines))
    defects.extend(branches)
    defects.sort(key=lambda d: d.source.line or 0)
    session = Transcript(system=(), tools=(), messages=skeleton, source=Source(path), defects=tuple(defects))
    out.defects = _defects(session, session)
    out.skeleton = None
    return True


def _take_back(reading: _Reading, rule: ScriptRule, lines: set[int], by_kind: defaultdict[str, int]) -> bool:
    """Take the tokens of the blocks of ``lines`` (message lines left out) back off ``by_kind``, dropping the
    kinds none is left of; False where a kind comes to zero while its blocks count nothing (no overhead per
    block), so that whether the kept lines hold one is not known."""
    for kind, tokens in _kinds_of(reading, lines).items():
        by_kind[kind] -= tokens
        if by_kind[kind] == 0:
            if not rule.block_overhead_tokens:
                return False
            del by_kind[kind]
    return True


def _kinds_of(reading: _Reading, lines: set[int]) -> defaultdict[str, int]:
    """The tokens of the blocks of the message lines ``lines`` by kind, as ``reading`` read them."""
    return reading.kinds_of(lines)


def _refused(value: dict[str, object]) -> str:
    """Why ``_record`` refuses a line (``value``, an object)."""
    kind = value.get("type")
    if kind != "user" and kind != "assistant":
        return "a compaction (compact_boundary)"
    message = value.get("message")
    if type(message) is not dict:
        return "a message line without a message object"
    if type(value.get("uuid")) is not str:
        return "a message line without a uuid"
    content = message.get("content")
    if not content:
        return "an empty message"
    if type(content) is list:
        for b in content:
            if type(b) is not dict:
                return "a content block that is not an object"
            kind = b.get("type")
            if kind not in ("text", "thinking", "tool_use", "tool_result", "image"):
                return f"a {kind!r} block"
            if kind == "tool_result" and type(b.get("content", "")) is list:
                for part in b.get("content", ""):
                    if type(part) is not dict or part.get("type") not in ("text", "image"):
                        return "a tool result holding a block other than text or an image"
    return "content of a shape the fold does not read"


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


def _measure(
    measured: dict[str, int],
    usage: list[list[int]],
    reply: str,
    recorded: tuple[int, int, int, int] | None,
    line: int,
    at: int,
    out: _Folded,
    *,
    first: bool,
) -> None:
    """One measurement per reply (message id), taken at its ``first`` line (``claude_code._build``'s rule) as a
    row of ``usage`` (``at``: the tokens before it), with the largest output its lines record: a split reply
    records its output as it streamed. The one pass's and the tree fold's."""
    if first and reply not in measured:
        k = -1
        if recorded is not None:
            i, w, r, o = recorded
            if i or w or r:
                k = len(usage)
                usage.append([at, i, w, r, line, o])
            else:
                out.unmeasured += 1
        measured[reply] = k
    k = measured.get(reply, -1)
    if k >= 0 and recorded is not None and recorded[3] > usage[k][5]:
        usage[k][5] = recorded[3]


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
        "before",
        "c",
        "calls",
        "expect",
        "fixed",
        "floor",
        "line",
        "message_id",
        "o",
        "out",
        "plan",
        "reply",
        "results",
        "role",
        "rule",
        "strict",
    )

    def __init__(self, rule: ScriptRule, out: _Folded, *, strict: bool = True, plan: bool = False) -> None:
        self.rule, self.out = rule, out
        self.plan = plan
        """Keep what ``ccplan.fold_plan`` reads of each message (``_Folded.lines``, ``chars``, ``floors``,
        ``calls_of``), which ``report`` does not."""
        self.strict = strict
        """Refuse a round with a defect (``close`` gives False); else keep the message's stand-in in
        ``out.skeleton``, and ``claude_code.message_defects`` words the defects."""
        self.role = ""
        self.line = 0
        self.message_id = ""
        self.a = self.c = self.o = self.fixed = self.floor = 0
        self.calls: list[str] = []
        self.results: list[str] = []
        self.expect: set[str] | None = None
        """The calls of the reply before this message, when it made any: its results must answer them."""
        self.before: str | None = None
        """The message id of the message before this one, when it is a reply (``claude_code.reply_line_joins``)."""
        self.reply: tuple[int, int, int, int, int, int, list[str]] = (0, 0, 0, 0, 0, 0, [])
        """The last reply's index, characters per class, fixed tokens, floor and calls (``extend_reply``)."""

    def joins(self, message_id: str) -> int:
        """Which message an assistant line of reply ``message_id`` joins: 0 this one, 1 the reply before it
        (``extend_reply``), -1 neither (``claude_code.reply_line_joins``)."""
        return reply_line_joins(message_id, self.role, self.message_id, bool(self.results), self.before)

    def extend_reply(self, a: int, c: int, o: int, fixed: int, floor: int, calls: tuple[()] | list[_Block]) -> None:
        """Add a line of the reply before this message to it (its characters per class, fixed tokens, floor and
        calls): the reply's parallel calls' results, which this message holds, were written between its lines."""
        out = self.out
        index, ra, rc, ro, rfixed, rfloor, rcalls = self.reply
        ra, rc, ro, rfixed, rfloor = ra + a, rc + c, ro + o, rfixed + fixed, rfloor + floor
        wa, wc, wo, denominator = self.rule._weights
        tokens = -(-(ra * wa + rc * wc + ro * wo) // denominator) + rfixed
        out.by_role["assistant"] += tokens - out.tokens[index]
        out.tokens[index] = tokens
        ta, tc, to = out.counts
        out.counts = (ta + a, tc + c, to + o)
        if calls:
            if not rcalls:
                out.rounds += 1
            rcalls.extend(b[2] for b in calls)  # ``calls_of[index]`` in a plan
            self.expect = set(rcalls)
            if not self.strict and out.skeleton is not None:
                stand_in = out.skeleton[index]
                added = tuple(ToolCall(b[2], b[3], "") for b in calls)
                out.skeleton[index] = Message(stand_in.role, (*stand_in.content, *added), stand_in.source)
        if self.plan:
            out.chars[index] = (ra, rc, ro, rfixed)
            out.floors[index] = rfloor
        self.reply = (index, ra, rc, ro, rfixed, rfloor, rcalls)

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
        if self.plan:
            out.lines.append(self.line)
            out.chars.append((self.a, self.c, self.o, self.fixed))
            out.floors.append(self.floor)
            out.calls_of.append(self.calls)
        if not self.strict:
            if out.skeleton is not None:
                names = out.names
                kept: list[Block] = [ToolResult(r, ()) for r in self.results]
                kept.extend(ToolCall(c, names[c], "") for c in self.calls)
                out.skeleton.append(Message(cast(Role, role), tuple(kept), Source(out.path, self.line)))
        elif self.results:
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
        if role == "assistant":
            self.before = self.message_id
            self.reply = (index, self.a, self.c, self.o, self.fixed, self.floor, self.calls)
        else:
            self.before = None
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
    followed = f"followed the parentUuid chain that ends at the last message (line {folded.leaf_line}); "
    if folded.off_chain:
        followed += f"left out {folded.off_chain} message line(s) on {folded.branches} other branch(es)"
    else:
        followed += "no other branches"
    notes = [NO_PREAMBLE_NOTE, followed]
    if folded.attached:
        notes.append(
            f"took in {folded.attached} line(s) off the chain: parallel tool calls and their results, which point "
            "at the call they follow or answer rather than at the line before them"
        )
    if folded.unmeasured:
        notes.append(
            f"{folded.unmeasured} assistant message(s) record zero usage (e.g. model <synthetic>): not measured"
        )
    name = folded.name or ""
    if folded.name is None:
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
        defects=folded.defects,
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
    scale = growth_scale([(u[0], u[1] + u[2] + u[3]) for u in usage], tokens)
    estimated = scaled(sum(tokens[b + 1 :]), scale)
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
        estimate_scale=scale,
    )
