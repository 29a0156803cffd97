"""What kind of text a block holds: the texts the estimator counts in each
block, the script class most of their characters belong to, and the kind of
content (prose, code, JSON and tables, logs) by deterministic line rules. The
audit groups its ratios by both."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, TypeAlias

import orjson

from .estimate import CharCounts
from .transcript import Block, Image, Other, Text, Thinking, ToolCall, ToolResult

ScriptClass: TypeAlias = Literal["ascii", "cjk", "other"]
ContentKind: TypeAlias = Literal["prose", "code", "json", "logs"]
SCRIPT_CLASSES: tuple[ScriptClass, ...] = ("ascii", "cjk", "other")
CONTENT_KINDS: tuple[ContentKind, ...] = ("prose", "code", "json", "logs")


def block_texts(block: Block) -> tuple[str, ...]:
    """The texts of a block that the estimator counts as characters: text and
    thinking, their text; a tool call, its name and its compact input JSON; a
    tool result, each text inside it; an unmodelled block, its JSON with base64
    payloads cut out (``Other.counted``); an image, none."""
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
