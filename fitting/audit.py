"""Audit an estimator: compare its text estimate with real tokenizers (per
block, per script class, per kind of content) and with what the provider
counted; give a verdict; and fit per-class constants that never under-estimate
(``suggest_rule``).

What is compared, block by block: the characters the estimator counts, as
text, and the tokenizer's count of the same text. Text and thinking blocks:
their text. A tool call: its name and its compact input JSON (counted as two
texts). A tool result: each text inside it. An unmodelled block: its JSON with
base64 payloads cut out. Images and other binary payloads are left out on both
sides, and so are the structural overheads: the estimate is the estimator's
text tokens only, each block rounded up on its own. The system prompt and the
tool definitions (name, description, schema) count as two more "messages".
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from itertools import pairwise
from typing import Literal, TypeAlias

import orjson

from .errors import Unsuggestable
from .estimate import SEED, ZERO, CharCounts, Estimator, ScriptRule
from .report import UsageRow, build_report
from .tokenizers import Tokenizer, count_texts
from .transcript import Block, Image, Other, Text, Thinking, ToolCall, ToolResult, Transcript, block_kind

ScriptClass: TypeAlias = Literal["ascii", "cjk", "other"]
ContentKind: TypeAlias = Literal["prose", "code", "json", "logs"]
SCRIPT_CLASSES: tuple[ScriptClass, ...] = ("ascii", "cjk", "other")
CONTENT_KINDS: tuple[ContentKind, ...] = ("prose", "code", "json", "logs")
TOP = 10
"""How many of the worst blocks, messages and provider points to keep."""


# --------------------------------------------------------------------------
# What each block's text is, and what kind of content


def block_texts(block: Block) -> tuple[str, ...]:
    """The texts of a block that the estimator counts as characters (see the module docstring)."""
    if isinstance(block, (Text, Thinking)):
        return (block.text,)
    if isinstance(block, ToolCall):
        return (block.name, block.input_json)
    if isinstance(block, ToolResult):
        return tuple(t for inner in block.content for t in block_texts(inner))
    if isinstance(block, Other):
        return (block.counted or block.raw,)
    assert isinstance(block, Image)
    return ()


def dominant_class(counts: CharCounts) -> ScriptClass:
    """The class that holds most of the characters (ties: ascii, then cjk, then other)."""
    best = max(counts.ascii, counts.cjk, counts.other)
    return "ascii" if counts.ascii == best else "cjk" if counts.cjk == best else "other"


# Lines of `cat -n` and of Claude Code's Read tool start with a line number: look past it.
_LINE_NUMBER = re.compile(r"^\s*\d+(?:\t|→)")
_LOG_LINE = re.compile(
    r"""^(?:
        \[?\d{4}-\d{2}-\d{2}[T\ ]\d{2}:\d{2}                      # 2025-03-14 22:05 / ISO timestamp
      | \[?\d{2}:\d{2}:\d{2}                                       # 22:05:00
      | [A-Z][a-z]{2}\ [\ \d]\d\ \d{2}:\d{2}:\d{2}                 # syslog: Mar 14 22:05:00
      | \[?(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|FATAL|CRITICAL|PANIC)\b  # a level
      | [\w./\\-]+:\d+[:-]                                         # grep hit: path:line:
      | (?:PASSED|FAILED|FAIL|ERROR|SKIPPED|XFAIL|XPASS|ok)\b      # test runner verdicts
      | =+\ .*\ =+$ | -{3,}\ .*\ -{3,}$                            # ==== 1 failed in 2s ====
      | collected\ \d+\ items?                                     # pytest
      | [.FEsx]+(?:\ +\[\ *\d+%\])?$                               # .....F.. [ 40%]
      | Traceback\ \(most\ recent\ call\ last\) | \s*File\ ".*",\ line\ \d+
      | \$\ \S                                                     # a shell prompt
    )""",
    re.VERBOSE,
)
_CODE_START = re.compile(
    r"""^(?:def|class|import|from\s+[\w.]+\s+import|return|elif|else|except|finally|raise|yield|await|lambda
    |async\s+(?:def|fn|function)|function|const|let|var|fn|pub|impl|struct|enum|trait|mod|use\s+[\w:]+|package|func
    |public|private|protected|static|void|\#include|\#define|\#!|@[\w.]+|"{3}|'{3})(?:\b|\s|$)""",
    re.VERBOSE,
)
_CONTROL = re.compile(r"^(?:if|for|while|with|try|switch|case|match)\b.*[:{]$")  # `for x in y:`, `if (x) {`
_CODE_END = re.compile(r"(?:[{};(\[]|\)|\]|=>|->)$|^[}\])]")
_ASSIGN = re.compile(r"^[\w.\[\]'\"]+(?:\s*:\s*[\w\[\], .|]+)?\s*(?:[-+*/|&%]|\*\*|//)?=\s*\S")
_COMMENT = re.compile(r"^(?://|/\*|\*/|\*\s|<!--|-->)")
_JSON_KEY = re.compile(r"""^"[^"\n]*"\s*:""")
_FENCE = re.compile(r"^(?:```|~~~)")


def _is_code_line(line: str) -> bool:
    return bool(
        _CODE_START.match(line)
        or _CONTROL.match(line)
        or _CODE_END.search(line)
        or _ASSIGN.match(line)
        or _COMMENT.match(line)
    )


def _is_table(lines: Sequence[str]) -> bool:
    """Markdown tables (``| a | b |``), or CSV/TSV: at least 3 lines, 80% of them
    with the same number (at least 2) of commas or of tabs."""
    if sum(1 for s in lines if s.startswith("|") and s.endswith("|")) * 2 > len(lines):
        return True
    if len(lines) < 3:
        return False
    for sep in (",", "\t"):
        counts: dict[int, int] = {}
        for s in lines:
            counts[s.count(sep)] = counts.get(s.count(sep), 0) + 1
        n, most = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
        if n >= 2 and most * 5 >= len(lines) * 4:
            return True
    return False


def _parses_as_json(text: str) -> bool:
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True


def classify_content(text: str) -> ContentKind:
    """The kind of a text, by deterministic rules tried in this order:

    - ``json``: the whole text parses as JSON (an object or array), or every
      line does (JSONL), or most lines are JSON ``"key":`` lines, or it is a
      table (Markdown, CSV, TSV): JSON and other structured data.
    - ``logs``: at least half of the non-blank lines are records that tools
      print: a timestamp or a level first, a grep hit (``path:12:``), test
      runner lines (``PASSED``, ``==== 2 failed ====``, ``....F.``), a traceback.
    - ``code``: at least half of the non-blank lines look like code: inside a
      ``` fence, a keyword first (``def``, ``import``, ``const``, ...), a control
      line ending in ``:`` or ``{``, an assignment, a comment marker, or a line
      that ends in ``{ } ; ( ) [ ]``, ``=>`` or ``->``.
    - ``prose``: everything else (also the empty text).

    Line numbers that ``cat -n`` or a Read tool put first are looked past.
    """
    stripped = text.strip()
    if not stripped:
        return "prose"
    if stripped[0] in "{[" and stripped[-1] in "}]" and _parses_as_json(stripped):
        return "json"
    lines = [_LINE_NUMBER.sub("", line).strip() for line in stripped.splitlines()]
    fenced: list[bool] = []
    inside = False
    for line in lines:
        if _FENCE.match(line):
            fenced.append(True)
            inside = not inside
        else:
            fenced.append(inside)
    pairs = [(line, f) for line, f in zip(lines, fenced, strict=True) if line]
    content = [line for line, _ in pairs]
    half = len(content) / 2
    if len(content) > 1 and all(s[0] in "{[" and s[-1] in "}]" and _parses_as_json(s) for s in content):
        return "json"
    if sum(1 for s in content if _JSON_KEY.match(s) or s in ("{", "}", "[", "]", "},", "],")) > half:
        return "json"
    if _is_table(content):
        return "json"
    if sum(1 for s in content if _LOG_LINE.match(s)) >= half:
        return "logs"
    if sum(1 for s, f in pairs if f or _is_code_line(s)) >= half:
        return "code"
    return "prose"


# --------------------------------------------------------------------------
# The audit's values


@dataclass(frozen=True, slots=True)
class BlockAudit:
    """One block's text: the estimate next to a tokenizer's count."""

    message_index: int | None
    """None for the system prompt and the tool definitions."""
    block_index: int
    """Index in its message (or in the system prompt, or of the tool definition)."""
    kind: str
    """``text``, ``thinking``, ``tool_call``, ``tool_result``, ``other`` or ``tool_definition``."""
    line: int | None
    counts: CharCounts
    script: ScriptClass
    content: ContentKind
    estimate: int
    """The estimator's text tokens for this block alone, rounded up; no overheads."""
    real: int

    @property
    def shortfall(self) -> int:
        """How many tokens the estimate is short of the real count (negative: over)."""
        return self.real - self.estimate

    @property
    def ratio(self) -> float | None:
        return self.estimate / self.real if self.real else None


@dataclass(frozen=True, slots=True)
class MessageAudit:
    """One message's text (all its blocks), estimated once like the estimator does."""

    index: int | None
    role: str
    """The message's role; ``system`` for the system prompt, ``tool definitions`` for those."""
    line: int | None
    counts: CharCounts
    estimate: int
    real: int

    @property
    def shortfall(self) -> int:
        return self.real - self.estimate

    @property
    def ratio(self) -> float | None:
        return self.estimate / self.real if self.real else None

    @property
    def label(self) -> str:
        """``message 3``, ``system prompt`` or ``tool definitions``."""
        if self.index is None:
            return "system prompt" if self.role == "system" else self.role
        return f"message {self.index}"

    def where(self, path: str) -> str:
        """``message 3 (file.jsonl:4)``, or the label alone when the line is unknown."""
        return f"{self.label} ({path}:{self.line})" if self.line else self.label


@dataclass(frozen=True, slots=True)
class RatioRow:
    """Blocks of one script class or one kind of content, summed."""

    group: str
    blocks: int
    chars: int
    estimate: int
    real: int
    under: int
    """How many of these blocks are under-estimated."""

    @property
    def ratio(self) -> float | None:
        """Estimate over real: below 1 means the estimate is too low."""
        return self.estimate / self.real if self.real else None


@dataclass(frozen=True, slots=True)
class TokenizerAudit:
    """An estimator against one tokenizer on one transcript."""

    tokenizer: str
    source: str
    messages: tuple[MessageAudit, ...]
    blocks: tuple[BlockAudit, ...]
    by_script: tuple[RatioRow, ...]
    by_content: tuple[RatioRow, ...]
    worst_blocks: tuple[BlockAudit, ...]
    """Under-estimated blocks, the largest shortfall first."""
    worst_messages: tuple[MessageAudit, ...]
    """Under-estimated messages, the largest shortfall first."""

    @property
    def estimate(self) -> int:
        """The whole transcript's text: the sum of the message estimates."""
        return sum(m.estimate for m in self.messages)

    @property
    def real(self) -> int:
        return sum(m.real for m in self.messages)

    @property
    def ratio(self) -> float | None:
        return self.estimate / self.real if self.real else None

    @property
    def messages_under(self) -> int:
        return sum(1 for m in self.messages if m.shortfall > 0)

    @property
    def blocks_under(self) -> int:
        return sum(1 for b in self.blocks if b.shortfall > 0)

    @property
    def safe(self) -> bool:
        """No message (nor the system prompt, nor the tool definitions) is
        under-estimated. Then neither is the total, nor any request built from
        these messages, whatever fitting keeps: a sum of estimates that are
        each high enough is high enough."""
        return self.messages_under == 0

    def verdict(self, path: str) -> str:
        """One line: safe or not, and the worst message."""
        if self.safe:
            return f"safe for this transcript with {self.tokenizer}: no message is under-estimated"
        worst = min(self.messages, key=lambda m: -m.shortfall)  # the first of the largest shortfalls
        ratio = f" (ratio {worst.ratio:.2f})" if worst.ratio is not None else ""
        return (
            f"NOT safe for this transcript with {self.tokenizer}: {self.messages_under:,} of "
            f"{len(self.messages):,} messages under-estimated; the worst, {worst.where(path)}, by "
            f"{worst.shortfall:,} tokens{ratio}"
        )


@dataclass(frozen=True, slots=True)
class UsageAudit:
    """The estimate of each request the provider measured, next to its count."""

    points: tuple[UsageRow, ...]
    worst: tuple[UsageRow, ...]
    """The points with the lowest ratio, lowest first."""

    @property
    def ratios(self) -> tuple[float, ...]:
        return tuple(sorted(u.ratio for u in self.points))

    @property
    def min_ratio(self) -> float:
        return self.ratios[0]

    @property
    def median_ratio(self) -> float:
        """The middle ratio (the upper one of the two middle ones for an even count)."""
        return self.ratios[len(self.points) // 2]

    @property
    def max_ratio(self) -> float:
        return self.ratios[-1]

    @property
    def under(self) -> int:
        return sum(1 for u in self.points if u.estimated < u.measured)


@dataclass(frozen=True, slots=True)
class Sample:
    """One constraint for ``suggest_rule``: characters per class, the real
    tokens, and the tokens the estimator adds whatever the characters."""

    counts: CharCounts
    tokens: int
    fixed: int = 0
    where: str = field(default="", compare=False)
    """Where it comes from, for people: ``file.jsonl:4 message 3, cl100k_base``."""

    @property
    def needed(self) -> int:
        """Tokens the characters must account for."""
        return self.tokens - self.fixed


@dataclass(frozen=True, slots=True)
class TranscriptAudit:
    """One transcript against each tokenizer, and against the provider's counts."""

    path: str
    name: str
    estimator: str
    messages: int
    tokenizers: tuple[TokenizerAudit, ...]
    usage: UsageAudit | None
    usage_samples: tuple[Sample, ...] = ()
    """Growth between consecutive measured requests (see ``usage_growth_samples``)."""
    usage_discarded: int = 0
    """Growth steps left out of ``usage_samples``: more tokens than their text has bytes."""

    @property
    def label(self) -> str:
        return f"{self.path} [{self.name}]" if self.name else self.path

    def locate(self, message: MessageAudit) -> str:
        """``file.jsonl:12 [name] message 3``, or ``file.jsonl system prompt``."""
        at = f"{self.path}:{message.line}" if message.line else self.path
        at += f" [{self.name}]" if self.name else ""
        return f"{at} {message.label}"

    def tokenizer_samples(self) -> tuple[Sample, ...]:
        """Every message with text, once per tokenizer."""
        return tuple(
            Sample(m.counts, m.real, where=f"{self.locate(m)}, {t.tokenizer}")
            for t in self.tokenizers
            for m in t.messages
            if m.counts.total
        )


# --------------------------------------------------------------------------
# Building the audit


@dataclass(frozen=True, slots=True)
class _Unit:
    """A block's texts and everything about them that no tokenizer changes."""

    message: int  # position in the list of message units
    block_index: int
    kind: str
    line: int | None
    texts: tuple[str, ...]
    counts: CharCounts
    estimate: int


def _units(
    transcript: Transcript, estimator: Estimator
) -> tuple[list[tuple[int | None, str, int | None]], list[_Unit], list[CharCounts]]:
    """The messages (system prompt and tool definitions first) and their text blocks."""
    rule = estimator.rule
    heads: list[tuple[int | None, str, int | None]] = []
    units: list[_Unit] = []
    totals: list[CharCounts] = []

    def add(index: int | None, role: str, line: int | None, blocks: Iterable[tuple[int, str, tuple[str, ...]]]) -> None:
        position = len(heads)
        heads.append((index, role, line))
        total = ZERO
        for block_index, kind, texts in blocks:
            counts = ZERO
            for text in texts:
                counts = counts + rule.count(text)
            if not counts.total:
                continue
            total = total + counts
            units.append(_Unit(position, block_index, kind, line, texts, counts, rule.text_tokens(counts)))
        totals.append(total)

    if transcript.system:
        add(None, "system", None, ((i, block_kind(b), block_texts(b)) for i, b in enumerate(transcript.system)))
    if transcript.tools:
        add(
            None,
            "tool definitions",
            None,
            ((i, "tool_definition", (t.name, t.description, t.schema_json)) for i, t in enumerate(transcript.tools)),
        )
    for mi, message in enumerate(transcript.messages):
        add(
            mi,
            message.role,
            message.source.line,
            ((bi, block_kind(b), block_texts(b)) for bi, b in enumerate(message.content) if not isinstance(b, Image)),
        )
    return heads, units, totals


def _ratio_rows(
    blocks: Sequence[BlockAudit], groups: Sequence[str], key: Callable[[BlockAudit], str]
) -> tuple[RatioRow, ...]:
    rows = []
    for group in groups:
        members = [b for b in blocks if key(b) == group]
        rows.append(
            RatioRow(
                group,
                len(members),
                sum(b.counts.total for b in members),
                sum(b.estimate for b in members),
                sum(b.real for b in members),
                sum(1 for b in members if b.shortfall > 0),
            )
        )
    return tuple(rows)


def _content_of(unit: _Unit) -> ContentKind:
    """A block's kind of content is that of its longest text."""
    return classify_content(max(unit.texts, key=len))


def audit_tokenizer(
    transcript: Transcript, estimator: Estimator, tokenizer: Tokenizer, *, top: int = TOP
) -> TokenizerAudit:
    """One tokenizer on one transcript (see ``audit_transcript`` for several)."""
    return _audit_tokenizers(transcript, estimator, (tokenizer,), top=top)[0]


def _audit_tokenizers(
    transcript: Transcript, estimator: Estimator, tokenizers: Sequence[Tokenizer], *, top: int
) -> tuple[TokenizerAudit, ...]:
    heads, units, totals = _units(transcript, estimator)
    rule = estimator.rule
    flat = [text for unit in units for text in unit.texts]
    scripts = [dominant_class(u.counts) for u in units]
    contents = [_content_of(u) for u in units]
    audits = []
    for tokenizer in tokenizers:
        counted = count_texts(tokenizer, flat)
        blocks: list[BlockAudit] = []
        reals = [0] * len(heads)
        at = 0
        for unit, script, content in zip(units, scripts, contents, strict=True):
            real = sum(counted[at : at + len(unit.texts)])
            at += len(unit.texts)
            reals[unit.message] += real
            index = heads[unit.message][0]
            blocks.append(
                BlockAudit(
                    index, unit.block_index, unit.kind, unit.line, unit.counts, script, content, unit.estimate, real
                )
            )
        messages = tuple(
            MessageAudit(index, role, line, counts, rule.text_tokens(counts), real)
            for (index, role, line), counts, real in zip(heads, totals, reals, strict=True)
        )
        # Stable sorts: equal shortfalls stay in transcript order.
        under_blocks = sorted((b for b in blocks if b.shortfall > 0), key=lambda b: -b.shortfall)
        under_messages = sorted((m for m in messages if m.shortfall > 0), key=lambda m: -m.shortfall)
        source = getattr(tokenizer, "source", "")  # a LoadedTokenizer says where its vocabulary comes from
        audits.append(
            TokenizerAudit(
                tokenizer=tokenizer.name,
                source=source if isinstance(source, str) else "",
                messages=messages,
                blocks=tuple(blocks),
                by_script=_ratio_rows(blocks, SCRIPT_CLASSES, lambda b: b.script),
                by_content=_ratio_rows(blocks, CONTENT_KINDS, lambda b: b.content),
                worst_blocks=tuple(under_blocks[:top]),
                worst_messages=tuple(under_messages[:top]),
            )
        )
    return tuple(audits)


def usage_growth_samples(transcript: Transcript, estimator: Estimator) -> tuple[Sample, ...]:
    """Samples from the provider's counts: the growth between two consecutive
    measured requests of one context (no compaction between them) is the
    messages added in between. Differences cancel what the provider counts
    but the file does not hold at every request (a harness's hidden system
    prompt and tools); ``fixed`` is the estimator's overheads and images for
    the added messages."""
    points = sorted((u for u in transcript.usage if 0 < u.before <= len(transcript.messages)), key=lambda u: u.before)
    start = transcript.context_start
    samples = []
    for a, b in pairwise(points):
        if (a.before > start) != (b.before > start) or b.before <= a.before:
            continue
        counts, fixed = ZERO, 0
        for message in transcript.messages[a.before : b.before]:
            est = estimator.message(message)
            counts, fixed = counts + est.counts, fixed + est.fixed_tokens
        lines = f"{a.source.line}, {b.source.line}"
        where = f"{transcript.label}: messages {a.before}-{b.before - 1} (provider counts at lines {lines})"
        samples.append(Sample(counts, b.total - a.total, fixed, where))
    return tuple(samples)


def plausible(sample: Sample) -> bool:
    """Whether a tokenizer could count this many tokens for these characters: a
    byte-level tokenizer never counts more tokens than UTF-8 bytes (at most 1
    per ASCII character and 4 per other). A growth step over that holds text
    the file does not (injected context, content kept elsewhere)."""
    return sample.needed <= sample.counts.ascii + 4 * (sample.counts.cjk + sample.counts.other)


def audit_usage(transcript: Transcript, estimator: Estimator, *, top: int = TOP) -> UsageAudit | None:
    """The estimator against the provider's own counts, where the file has them
    (the rows of ``windowfit report``)."""
    rows = build_report(transcript, estimator).usage
    if not rows:
        return None
    return UsageAudit(rows, tuple(sorted(rows, key=lambda u: (u.ratio, u.before))[:top]))


def audit_transcript(
    transcript: Transcript, estimator: Estimator, tokenizers: Sequence[Tokenizer], *, top: int = TOP
) -> TranscriptAudit:
    """The whole session (every message, compacted or not) against each tokenizer,
    and against the provider's counts where the file has them."""
    growth = usage_growth_samples(transcript, estimator)
    return TranscriptAudit(
        path=transcript.source.path,
        name=transcript.name,
        estimator=estimator.rule.name,
        messages=len(transcript.messages),
        tokenizers=_audit_tokenizers(transcript, estimator, tokenizers, top=top),
        usage=audit_usage(transcript, estimator, top=top),
        usage_samples=tuple(s for s in growth if plausible(s)),
        usage_discarded=sum(1 for s in growth if not plausible(s)),
    )


# --------------------------------------------------------------------------
# Suggesting constants that never under-estimate

CEIL_MARGIN = Fraction(1, 100)
"""How far above ``tokens - fixed - 1`` a sample's unrounded estimate must be."""
MAX_TOKENS_PER_CHAR = (Fraction(1), Fraction(4), Fraction(4))
"""The most tokens per character, ascii, cjk and other: no byte-level tokenizer
counts more tokens than UTF-8 bytes. It keeps the program from loading one
class with what another could carry just as well."""
MAX_CHARS_PER_TOKEN = Fraction(8)
"""The most characters per token a suggested rule may count on, for any class:
it keeps a class the samples barely constrain from getting a constant of zero
tokens per character."""


def _solve_dual(rows: Sequence[tuple[tuple[int, ...], int]], weights: Sequence[int]) -> tuple[Fraction, ...]:
    """Minimise ``weights . x`` subject to ``a . x >= b`` for each ``(a, b)`` and
    ``x >= 0`` (``weights >= 0``; the program must be feasible), exactly, by the
    revised simplex on the dual: maximise ``b . y`` with ``sum_i y_i a_i <= weights``
    and ``y >= 0``, starting from the slack basis (feasible as ``weights >= 0``).

    The dual has one row per unknown (at most 3), so a basis is tiny and each
    pivot costs one pass over the samples; the prices of the optimal basis are
    the optimal ``x``. A column prices in exactly when its sample is violated by
    the current prices: each pivot adds the most violated sample (Bland's rule
    after a degenerate pivot, so it cannot cycle).
    """
    k = len(weights)
    n = len(rows)
    basis = list(range(n, n + k))  # the slack columns
    inverse = [[Fraction(int(i == j)) for j in range(k)] for i in range(k)]
    values = [Fraction(w) for w in weights]  # the basic variables' values, B^-1 w

    def column(q: int) -> tuple[int, ...]:
        return rows[q][0] if q < n else tuple(int(j == q - n) for j in range(k))

    def cost(q: int) -> int:
        return rows[q][1] if q < n else 0

    bland = False
    while True:
        prices = [sum((cost(basis[r]) * inverse[r][j] for r in range(k)), Fraction(0)) for j in range(k)]
        denominator = math.lcm(*(p.denominator for p in prices))
        scaled = [int(p * denominator) for p in prices]
        # Reduced costs in integers (times the prices' common denominator): a sample's is
        # positive when the prices under-estimate it, a slack's when its price is negative.
        reduced = (
            *(
                (q, b * denominator - sum(ai * pi for ai, pi in zip(a, scaled, strict=True)))
                for q, (a, b) in enumerate(rows)
            ),
            *((n + j, -scaled[j]) for j in range(k)),
        )
        positive = (qr for qr in reduced if qr[1] > 0)
        entering = next(positive, (-1, 0))[0] if bland else max(positive, key=lambda qr: qr[1], default=(-1, 0))[0]
        if entering < 0:
            return tuple(prices)
        a = column(entering)
        direction = [sum((inverse[r][j] * a[j] for j in range(k)), Fraction(0)) for r in range(k)]
        leaving, step = -1, Fraction(0)
        for r in range(k):
            if direction[r] > 0:
                ratio = values[r] / direction[r]
                if leaving < 0 or ratio < step or (ratio == step and basis[r] < basis[leaving]):
                    leaving, step = r, ratio
        if leaving < 0:
            raise Unsuggestable("the samples cannot all be covered")
        bland = step == 0
        pivot = direction[leaving]
        inverse[leaving] = [v / pivot for v in inverse[leaving]]
        values[leaving] /= pivot
        for r in range(k):
            if r != leaving and direction[r]:
                factor = direction[r]
                inverse[r] = [v - factor * p for v, p in zip(inverse[r], inverse[leaving], strict=True)]
                values[r] -= factor * values[leaving]
        basis[leaving] = entering


def _class_counts(counts: CharCounts) -> tuple[int, int, int]:
    return (counts.ascii, counts.cjk, counts.other)


def fit_tokens_per_char(
    samples: Sequence[Sample], *, max_chars_per_token: Fraction = MAX_CHARS_PER_TOKEN
) -> tuple[Fraction | None, Fraction | None, Fraction | None]:
    """Exact tokens per character for ascii, cjk and other that cover every
    sample with the least total estimate over the samples, each at least
    ``1 / max_chars_per_token`` and at most ``MAX_TOKENS_PER_CHAR``. A class no
    sample has characters of is None (the samples say nothing about it).

    The estimator rounds a message's text up, so a sample is covered when
    ``ceil(sum(chars * x)) >= tokens - fixed``, that is when the sum exceeds
    ``tokens - fixed - 1``; the program asks for ``CEIL_MARGIN`` more than that.
    """
    floor = 1 / Fraction(max_chars_per_token)
    present = [j for j in range(3) if any(_class_counts(s.counts)[j] for s in samples)]
    rows: dict[tuple[int, ...], int] = {}
    for s in samples:
        a = tuple(_class_counts(s.counts)[j] for j in present)
        least = s.needed - 1 + CEIL_MARGIN
        if least > sum(ai * MAX_TOKENS_PER_CHAR[j] for ai, j in zip(a, present, strict=True)):
            raise Unsuggestable(
                f"{s.where or 'a sample'}: {s.needed:,} tokens for {s.counts.total:,} characters is more tokens "
                "than the text has UTF-8 bytes (text the estimator does not see?)"
            )
        # Shift x = floor + x' (x' >= 0); a row already met at the floor constrains nothing.
        b = least - floor * sum(a)
        if b > 0:
            # Scale the row to integers: a . x' >= b  <=>  (a * d) . x' >= b * d.
            key = tuple(ai * b.denominator for ai in a)
            rows[key] = max(rows.get(key, 0), b.numerator)
    if rows:
        for i, j in enumerate(present):  # x'_j <= ceiling_j - floor, as -x'_j >= floor - ceiling_j
            room = MAX_TOKENS_PER_CHAR[j] - floor
            rows[tuple(-room.denominator * int(i == m) for m in range(len(present)))] = -room.numerator
    weights = [sum(_class_counts(s.counts)[j] for s in samples) for j in present]
    shifted = _solve_dual(sorted(rows.items()), weights) if rows else tuple(Fraction(0) for _ in present)
    result: list[Fraction | None] = [None, None, None]
    for j, x in zip(present, shifted, strict=True):
        result[j] = floor + x
    return result[0], result[1], result[2]


def _round_down(tokens_per_char: Fraction) -> Fraction:
    """Characters per token rounded down to 2 decimals (so the estimate only grows)."""
    return Fraction(max(math.floor(100 / tokens_per_char), 1), 100)


def covers(rule: ScriptRule, samples: Iterable[Sample]) -> bool:
    """Whether the rule's text estimate (rounded up, as the estimator does) plus
    the fixed tokens reaches every sample's real tokens."""
    return all(rule.text_tokens(s.counts) >= s.needed for s in samples)


def suggest_rule(
    samples: Sequence[Sample],
    *,
    base: ScriptRule = SEED,
    name: str = "custom",
    max_chars_per_token: Fraction = MAX_CHARS_PER_TOKEN,
) -> ScriptRule:
    """Per-class characters per token that never under-estimate any sample and
    over-estimate their total as little as possible (an exact linear program in
    3 unknowns), rounded down to 2 decimals. A class the samples do not
    constrain (none of its characters, or it sits at ``max_chars_per_token``
    because other classes already cover every sample) keeps ``base``'s
    constant, which only raises the estimate; so do the overheads."""
    if not samples:
        raise Unsuggestable("no samples to fit: the transcripts hold no text and no provider counts")
    exact = fit_tokens_per_char(samples, max_chars_per_token=max_chars_per_token)
    defaults = (base.ascii_chars_per_token, base.cjk_chars_per_token, base.other_chars_per_token)
    floor = 1 / Fraction(max_chars_per_token)
    ascii_, cjk, other = (
        d if x is None or x == floor else _round_down(x) for x, d in zip(exact, defaults, strict=True)
    )
    rule = replace(base, name=name, ascii_chars_per_token=ascii_, cjk_chars_per_token=cjk, other_chars_per_token=other)
    assert covers(rule, samples), "rounding characters per token down only raises the estimate"
    return rule


def tightest(rule: ScriptRule, samples: Sequence[Sample], n: int = 3) -> tuple[Sample, ...]:
    """The samples the rule covers with the least room: they bind the fit."""
    return tuple(sorted(samples, key=lambda s: (rule.text_tokens(s.counts) - s.needed, -s.needed))[:n])


def decimal_text(value: Fraction) -> str:
    """An exact decimal without trailing zeros: ``3.2``, ``0.87``, ``4``."""
    whole, rest = divmod(value.numerator * 100 // value.denominator, 100)
    return f"{whole}.{rest:02d}".rstrip("0").rstrip(".") if rest else str(whole)


def rule_spec(rule: ScriptRule) -> str:
    """The rule as ``--estimator`` takes it: ``custom:ascii=3.2,cjk=0.9,other=1.6``."""
    return (
        f"custom:ascii={decimal_text(rule.ascii_chars_per_token)},cjk={decimal_text(rule.cjk_chars_per_token)},"
        f"other={decimal_text(rule.other_chars_per_token)}"
    )


def estimate_over(rule: ScriptRule, samples: Sequence[Sample]) -> Fraction | None:
    """The samples' estimate over their real tokens, each summed (1 is exact)."""
    real = sum(s.tokens for s in samples)
    if real <= 0:
        return None
    return Fraction(sum(rule.text_tokens(s.counts) + s.fixed for s in samples), real)
