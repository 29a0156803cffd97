"""What ``windowfit report`` shows, as a value: counts, tokens by script class,
role and block kind, the largest tool results, per-tool sizes, and the verdict
against a budget and a window."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from functools import cache
from itertools import pairwise

from ._frozen import frozen
from .estimate import CharCounts, Estimator, MessageEstimate
from .size import Size, SizeMode, predict_size
from .transcript import (
    Block,
    Defect,
    Dialect,
    Message,
    Role,
    ToolCall,
    ToolResult,
    Transcript,
    block_kind,
)

TOP_RESULTS = 10
DATA_TOOL_MIN_RESULTS = 4
DATA_TOOL_GROWTH = 4.0
"""A tool is flagged as a data tool when it has at least 4 results whose size
keeps growing: each at least as big as the one before, the newest at least 4x
the oldest (SPEC section 5)."""


@frozen
class ClassRow:
    """One script class's characters and tokens."""

    name: str
    chars: int
    chars_per_token: float
    tokens: float
    share: float


@frozen
class ResultRow:
    """One of the largest tool results."""

    tool: str
    call_id: str
    tokens: int
    message_index: int
    line: int | None


@frozen
class ToolRow:
    """One tool's calls and the sizes of its results."""

    tool: str
    calls: int
    results: int
    result_tokens: int
    max_result_tokens: int
    grows_like_data: bool
    page_tokens: int | None = None
    """For a data tool: the page size that would have bounded it (``offload``'s default)."""
    paged_tokens: int | None = None
    """For a data tool: what its results would have put in the context, paged
    (each at most one page), instead of ``result_tokens``."""
    largest_pages: int | None = None
    """For a data tool: how many pages its largest result would have taken, at the least."""


@frozen
class UsageRow:
    """One request the provider measured, next to our estimate of it."""

    before: int
    """The request held this many messages of the session."""
    line: int | None
    estimated: int
    measured: int
    cache_read: int
    cache_creation: int

    @property
    def ratio(self) -> float:
        """Estimated over measured: below 1 means the estimate was too low."""
        return self.estimated / self.measured if self.measured else float("inf")


@frozen
class Report:
    """What ``report`` shows for one transcript. Counts and tokens describe the
    live context (what the next request carries); ``session_*`` the whole file."""

    path: str
    format: str
    dialect: Dialect
    messages: int
    turns: int
    rounds: int
    tool_calls: int
    tool_results: int
    skipped_lines: int
    tokens: int
    """The predicted size of the next request, preamble included (see ``size``)."""
    preamble_tokens: int
    classes: tuple[ClassRow, ...]
    by_role: tuple[tuple[str, int], ...]
    by_kind: tuple[tuple[str, int], ...]
    largest_results: tuple[ResultRow, ...]
    tools: tuple[ToolRow, ...]
    budget: int | None
    window: int | None
    name: str = ""
    session_messages: int = 0
    session_tokens: int = 0
    usage: tuple[UsageRow, ...] = ()
    defects: tuple[Defect, ...] = ()
    line_kinds: tuple[tuple[str, int], ...] = ()
    notes: tuple[str, ...] = ()
    size: Size | None = None
    """How ``tokens`` was made: anchored on measured usage or estimated, part by part."""
    window_model: str | None = None
    """The model whose window ``window`` is (the table of models', for the model the file records); None when
    ``--window`` gave it or there is none (``fitting.windows``)."""

    @property
    def label(self) -> str:
        return f"{self.path} [{self.name}]" if self.name else self.path

    @property
    def fits_budget(self) -> bool:
        return self.budget is None or self.tokens <= self.budget

    @property
    def fits_window(self) -> bool:
        return self.window is None or self.tokens <= self.window

    @property
    def verdict(self) -> str:
        """One line: fits, or over by how much."""
        parts = []
        if self.budget is not None:
            if self.tokens <= self.budget:
                parts.append(f"fits the {self.budget:,} budget ({self.budget - self.tokens:,} tokens to spare)")
            else:
                parts.append(f"over the {self.budget:,} budget by {self.tokens - self.budget:,} tokens")
        if self.window is not None:
            model = f" of the model {self.window_model}" if self.window_model else ""
            if self.tokens <= self.window:
                parts.append(f"within the {self.window:,} window{model}")
            else:
                parts.append(
                    f"over the {self.window:,} window{model} by {self.tokens - self.window:,} tokens: "
                    "the provider would reject it"
                )
        return "; ".join(parts) if parts else f"{self.tokens:,} tokens"


def _grows(sizes: list[int]) -> bool:
    return (
        len(sizes) >= DATA_TOOL_MIN_RESULTS
        and all(a <= b for a, b in pairwise(sizes))
        and sizes[-1] >= DATA_TOOL_GROWTH * max(sizes[0], 1)
    )


def _tool_row(name: str, calls: int, sizes: list[int]) -> ToolRow:
    """A tool's sizes; a data tool also gets what paging its output (``offload``) would have bounded it to."""
    if not _grows(sizes):
        return ToolRow(name, calls, len(sizes), sum(sizes), max(sizes), False)
    from .store.base import PAGE_TOKENS  # a data tool's only: a report imports no store otherwise

    page = PAGE_TOKENS
    return ToolRow(
        name,
        calls,
        len(sizes),
        sum(sizes),
        max(sizes),
        True,
        page,
        sum(min(size, page) for size in sizes),
        -(-max(sizes) // page),
    )


def build_report(
    transcript: Transcript,
    estimator: Estimator,
    *,
    budget: int | None = None,
    window: int | None = None,
    top: int = TOP_RESULTS,
    size_mode: SizeMode = "auto",
    preamble: int | None = None,
    size: Size | None = None,
) -> Report:
    """Measure one transcript: its live context, plus the whole session and the
    provider's own counts where the file has them. ``tokens`` is the predicted
    size of the next request (``predict_size``); ``preamble`` gives the system
    prompt and tools when the file does not record them; a ``size`` already
    predicted replaces both."""
    if size is None:
        size = predict_size(transcript, estimator, mode=size_mode, preamble=preamble)
    session = transcript
    transcript = transcript.live()
    fold = ReportFold(estimator, keep_skeleton=False)
    for message in transcript.messages:
        fold.add(message, estimator.message(message))  # memoised: fit and size ask for the same messages
    # The provider's counts next to the estimate of what the file records: how the
    # estimator does on its own (audit reads these rows), without the inferred preamble.
    usage = _usage_rows(session, estimator, estimator.preamble(transcript))
    session_tokens = (
        None
        if session is transcript
        else size.preamble_tokens + sum(estimator.message(m).tokens for m in session.messages)
    )
    return fold.assemble(
        transcript,
        session,
        size,
        budget=budget,
        window=window,
        top=top,
        usage=usage,
        session_tokens=session_tokens,
        defects=_defects(session, transcript),
    )


def _add_header(
    transcript: Transcript,
    estimator: Estimator,
    size: Size,
    counts: CharCounts,
    by_role: defaultdict[str, int],
    by_kind: defaultdict[str, int],
) -> CharCounts:
    """``counts`` with the system prompt and the tool definitions added, which also go into ``by_role`` and
    ``by_kind``, as does the preamble the file does not record (its tokens are in ``size``)."""
    if transcript.system:
        system = estimator.blocks(transcript.system)
        counts = counts + system.counts
        by_role["system"] += system.tokens
    tool_defs = 0
    for tool in transcript.tools:
        est = estimator.tool_def(tool)
        counts = counts + est.counts
        tool_defs += est.tokens
    if tool_defs:
        by_role["tool definitions"] += tool_defs
        by_kind["tool definitions"] += tool_defs
    if size.preamble_source in ("inferred", "given") and size.preamble_tokens:
        by_role[f"system prompt and tools ({size.preamble_source})"] += size.preamble_tokens
    return counts


def _class_rows(estimator: Estimator, counts: CharCounts) -> tuple[ClassRow, ...]:
    rows = estimator.rule.class_rows(counts)
    text_total = sum(r.tokens for r in rows) or 1.0
    return tuple(ClassRow(r.name, r.chars, float(r.chars_per_token), r.tokens, r.tokens / text_total) for r in rows)


def _defects(session: Transcript, live: Transcript) -> tuple[Defect, ...]:
    """The loader's defects, then every defect ``fit`` would repair in the live
    context that the loader did not already list (same kind, same line)."""
    from .repair import repair_defects  # and the providers' rules: a loaded transcript's only, not the fold's

    known = {(d.kind, d.source.path, d.source.line) for d in session.defects}
    found = tuple(d for d in repair_defects(live) if (d.kind, d.source.path, d.source.line) not in known)
    return session.defects + found


def _usage_rows(session: Transcript, estimator: Estimator, preamble: int) -> tuple[UsageRow, ...]:
    """Each measured request next to the estimate of the same messages. A request
    after a compaction holds the messages from ``context_start`` on."""
    if not session.usage:
        return ()
    return usage_rows(session, [estimator.message(m).tokens for m in session.messages], preamble)


def usage_rows(session: Transcript, tokens: Sequence[int], preamble: int) -> tuple[UsageRow, ...]:
    """``_usage_rows`` from the estimate of each of the session's messages, ``tokens`` (a streamed session's
    messages are not held: its audit keeps only these)."""
    cumulative = [0]
    for estimate in tokens:
        cumulative.append(cumulative[-1] + estimate)
    start = session.context_start
    rows = []
    for u in session.usage:
        before = min(u.before, len(tokens))
        if before == 0:
            continue  # measured before any message the file holds (an excerpt): nothing to compare
        first = start if before > start else 0
        estimated = preamble + cumulative[before] - cumulative[first]
        rows.append(UsageRow(before, u.source.line, estimated, u.total, u.cache_read_tokens, u.cache_creation_tokens))
    return tuple(rows)


# --------------------------------------------------------------------------
# The same report, folded over messages that are not kept


@cache
def _plain(role: Role) -> Message:
    """What the repair check needs of a message without tool calls or results: its role and place (one message
    a role, made when first needed: the fold of a Claude Code session makes no message)."""
    return Message(role, ())


class ReportFold:
    """``build_report`` one message at a time, keeping only what the report shows (sums, the tool results'
    sizes, the calls' names) and, for the defects, each message's tool calls and results without their text:
    a file of a million messages is never held. For a transcript without measured usage or compaction (the
    messages format), ``fold_report`` gives what ``build_report`` gives on the loaded transcript. (A plain
    class, not a dataclass: a dataclass's methods cost every ``report`` start-up, issue 15.)"""

    __slots__ = (
        "by_kind",
        "by_role",
        "calls",
        "calls_per_tool",
        "counts",
        "estimator",
        "keep_skeleton",
        "messages",
        "names",
        "results",
        "rounds",
        "skeleton",
        "total",
        "turns",
    )

    def __init__(self, estimator: Estimator, keep_skeleton: bool = True) -> None:
        self.estimator = estimator
        self.keep_skeleton = keep_skeleton
        """Keep each message's calls and results for the defects (``build_report`` finds them on the
        transcript)."""
        self.messages = 0
        self.total = 0
        self.counts = CharCounts()
        self.by_role: dict[str, int] = defaultdict(int)
        self.by_kind: dict[str, int] = defaultdict(int)
        self.turns = 0
        self.rounds = 0
        self.names: dict[str, str] = {}
        self.calls_per_tool: dict[str, int] = defaultdict(int)
        self.calls = 0
        self.results: list[tuple[str, str, int, int, int | None]] = []
        """Each tool result: call id, the name it records, tokens, message index, line."""
        self.skeleton: list[Message] = []

    def add(self, message: Message, est: MessageEstimate | None = None) -> None:
        """Count ``message``, estimated as ``est`` if given."""
        if est is None:
            est = self.estimator.blocks(message.content)
        index = self.messages
        self.messages += 1
        self.total += est.tokens
        self.counts = self.counts + est.counts
        self.by_role[message.role] += est.tokens
        for block, tokens in zip(message.content, est.block_tokens, strict=True):
            self.by_kind[block_kind(block)] += tokens
        if self.estimator.rule.message_overhead_tokens:
            self.by_kind["message overhead"] += self.estimator.rule.message_overhead_tokens
        starts = message.starts_turn
        self.turns += 1 if starts or index == 0 else 0
        if message.role == "assistant" and any(isinstance(b, ToolCall) for b in message.content):
            self.rounds += 1  # a round opens at each (results are never in an assistant message: ``iter_units``)
        keep = self.keep_skeleton
        kept: list[Block] = []
        for bi, block in enumerate(message.content):
            if isinstance(block, ToolCall):
                self.names[block.id] = block.name
                self.calls_per_tool[block.name] += 1
                self.calls += 1
                if keep:
                    kept.append(ToolCall(block.id, block.name, ""))
            elif isinstance(block, ToolResult):
                self.results.append((block.call_id, block.name, est.block_tokens[bi], index, message.source.line))
                if keep:
                    kept.append(ToolResult(block.call_id, ()))
        if keep:
            self.skeleton.append(Message(message.role, tuple(kept), message.source) if kept else _plain(message.role))

    def report(
        self,
        header: Transcript,
        *,
        budget: int | None = None,
        window: int | None = None,
        top: int = TOP_RESULTS,
        size_mode: SizeMode = "auto",
        preamble: int | None = None,
    ) -> Report:
        """The report of ``header`` (the transcript without its messages) holding the messages added."""
        if header.messages or header.usage or header.context_start:
            raise ValueError("a folded report is for a transcript without usage or compaction")
        size = predict_size(header, self.estimator, mode=size_mode, preamble=preamble)
        size = replace(size, tokens=size.tokens + self.total, estimated_tokens=self.total)
        skeleton = replace(header, messages=tuple(self.skeleton))
        return self.assemble(
            header, header, size, budget=budget, window=window, top=top, defects=_defects(header, skeleton)
        )

    def assemble(
        self,
        live: Transcript,
        session: Transcript,
        size: Size,
        *,
        budget: int | None,
        window: int | None,
        top: int,
        defects: tuple[Defect, ...],
        usage: tuple[UsageRow, ...] = (),
        session_tokens: int | None = None,
    ) -> Report:
        """The report of the messages added, which are ``live``'s (the context since its last compaction)
        of ``session``; ``session_tokens`` counts the whole session where that is more than ``live``."""
        estimator = self.estimator
        by_role, by_kind = defaultdict(int, self.by_role), defaultdict(int, self.by_kind)
        counts = _add_header(live, estimator, size, self.counts, by_role, by_kind)
        total = self.total + size.preamble_tokens
        results: list[ResultRow] = []
        per_tool: dict[str, list[int]] = defaultdict(list)
        for call_id, recorded, tokens, index, line in self.results:
            name = self.names.get(call_id) or recorded or "?"
            results.append(ResultRow(name, call_id, tokens, index, line))
            per_tool[name].append(tokens)
        return Report(
            path=live.source.path,
            format=live.format,
            dialect=live.dialect,
            messages=self.messages,
            turns=self.turns,
            rounds=self.rounds,
            tool_calls=self.calls,
            tool_results=len(results),
            skipped_lines=len(live.skipped),
            tokens=size.tokens,
            preamble_tokens=size.preamble_tokens,
            classes=_class_rows(estimator, counts),
            by_role=tuple(sorted(by_role.items(), key=lambda kv: (-kv[1], kv[0]))),
            by_kind=tuple(sorted(by_kind.items(), key=lambda kv: (-kv[1], kv[0]))),
            largest_results=tuple(sorted(results, key=lambda r: (-r.tokens, r.message_index))[:top]),
            tools=tuple(
                _tool_row(name, self.calls_per_tool.get(name, 0), sizes)
                for name, sizes in sorted(per_tool.items(), key=lambda kv: (-sum(kv[1]), kv[0]))
            ),
            budget=budget,
            window=window,
            name=session.name,
            session_messages=len(session.messages) if session is not live else self.messages,
            session_tokens=total if session_tokens is None else session_tokens,
            usage=usage,
            defects=defects,
            line_kinds=session.line_kinds,
            notes=session.notes,
            size=size,
        )


def fold_report(
    messages: Iterable[Message],
    header: Transcript | Callable[[], Transcript],
    estimator: Estimator,
    *,
    budget: int | None = None,
    window: int | None = None,
    top: int = TOP_RESULTS,
    size_mode: SizeMode = "auto",
    preamble: int | None = None,
) -> Report:
    """``build_report`` of the transcript ``header`` with ``messages``, each message read once and dropped
    (``header`` may be a function that gives it once the messages are read, as a stream does)."""
    fold = ReportFold(estimator)
    for message in messages:
        fold.add(message)
    head = header() if callable(header) else header
    return fold.report(head, budget=budget, window=window, top=top, size_mode=size_mode, preamble=preamble)
