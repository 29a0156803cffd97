"""Hypothesis strategies shared by every property test (import with
``from strategies import transcripts``; pytest puts ``tests/`` on the path).

Texts mix the scripts the estimator distinguishes (ASCII, CJK, everything
else); transcripts are built directly from ``fitting``'s model classes with
parallel tool calls in both wire shapes, tiny to huge tool results, and
single-turn subagents. Big strings are built by repeating a short text, so a
50,000-character result costs no more to generate than a 50-character one.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from dataclasses import replace

import orjson
from hypothesis import strategies as st

from windowfit.fitting import Block, Message, Source, Text, ToolCall, ToolDef, ToolResult, Transcript
from windowfit.fitting.estimate import Estimator
from windowfit.fitting.transcript import Role, Usage


def _span(first: int, last: int) -> tuple[str, ...]:
    return tuple(chr(cp) for cp in range(first, last + 1))


POOLS: dict[str, tuple[str, ...]] = {
    "ascii": (*_span(0x20, 0x7E), "\n", "\t"),
    "cyrillic": _span(0x0410, 0x044F),  # А..я
    "greek": tuple("ΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΣΤΥΦΧΨΩαβγδεζηθικλμνξοπρςστυφχψωάέήίόύώ"),
    "accented": tuple("éèêëàâäçñöüßøåÉÀÇÑÖÜłžšćő"),
    "han": _span(0x4E00, 0x9FFF),
    "hiragana": _span(0x3041, 0x3096),
    "katakana": _span(0x30A1, 0x30FA),
    "hangul": _span(0xAC00, 0xD7A3),
    "cjk_punctuation": tuple(
        "，。、！？：；（）「」『』【】〜・\u3000"
    ),  # fullwidth forms, CJK symbols, ideographic space
    # Single astral characters and multi-code-point sequences (variation
    # selector, skin tone, flag, ZWJ): all "other" for the estimator.
    "emoji": ("😀", "🚀", "🎉", "🤖", "🔥", "✅", "❤️", "👍🏽", "🇯🇵", "👩‍💻", "𝄞"),
}
"""The pieces each script draws from: one character, or one emoji sequence."""

ALL_SCRIPTS: tuple[str, ...] = tuple(POOLS)
CJK_SCRIPTS: tuple[str, ...] = ("han", "hiragana", "katakana", "hangul", "cjk_punctuation")
"""The scripts the estimator counts at 1 char/token."""
RESULT_SCRIPTS: tuple[str, ...] = ("ascii", "cyrillic", "han")
"""The scripts tool results are written in: code and logs, a Russian book, a Chinese one."""

SCRIPTS: dict[str, st.SearchStrategy[str]] = {name: st.sampled_from(pool) for name, pool in POOLS.items()}
"""One strategy per script, drawing one piece."""


def texts(min_size: int = 0, max_size: int = 40, *, scripts: Sequence[str] = ALL_SCRIPTS) -> st.SearchStrategy[str]:
    """Text mixing the given scripts (default all: ASCII, Cyrillic, Greek,
    accented Latin, Han, Hiragana, Katakana, Hangul, fullwidth/CJK punctuation,
    emoji), piece by piece, so scripts alternate inside one text.

    ``min_size``/``max_size`` count pieces; emoji sequences are several code
    points, so ``len(text) >= min_size`` always but may exceed ``max_size``.
    ASCII is drawn twice as often as any other script. Never contains surrogates.
    """
    return _texts(min_size, max_size, tuple(scripts))


@functools.cache  # building a strategy costs more than drawing from it
def _texts(min_size: int, max_size: int, scripts: tuple[str, ...]) -> st.SearchStrategy[str]:
    chosen = [SCRIPTS[s] for s in scripts]
    if "ascii" in scripts:
        chosen.append(SCRIPTS["ascii"])
    return st.lists(st.one_of(chosen), min_size=min_size, max_size=max_size).map("".join)


def result_sizes(*, max_size: int = 60_000) -> st.SearchStrategy[int]:
    """Tool result lengths in characters: tiny (1-40), medium (40-4,000) or huge
    (4,000-``max_size``), each branch about equally likely."""
    branches = [st.integers(1, min(40, max_size))]
    if max_size > 40:
        branches.append(st.integers(40, min(4_000, max_size)))
    if max_size > 4_000:
        branches.append(st.integers(4_000, max_size))
    return st.one_of(branches)


_DEFAULT_SIZES = result_sizes()


@st.composite
def tool_outputs(
    draw: st.DrawFn,
    sizes: st.SearchStrategy[int] | None = None,
    *,
    scripts: Sequence[str] = RESULT_SCRIPTS,
) -> str:
    """A tool result's text of exactly the drawn size (``result_sizes()`` by
    default), in one script (ASCII, Cyrillic or Han by default): a unit of
    1-16 pieces, chosen by a drawn seed, repeated and cut to size. Four draws
    per result whatever its size."""
    size = draw(sizes if sizes is not None else _DEFAULT_SIZES)
    pool = POOLS[draw(st.sampled_from(tuple(scripts)))]
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    unit = "".join(rng.choice(pool) for _ in range(rng.randint(1, 16)))
    return (unit * (size // len(unit) + 1))[:size]


TOOL_NAMES: tuple[str, ...] = ("read_file", "grep", "run_tests", "search_docs", "list_dir")
"""The tool names generated calls use (a small set, so names repeat)."""


def tool_defs(names: Sequence[str] = TOOL_NAMES) -> tuple[ToolDef, ...]:
    """Fixed Anthropic-style definitions for ``names`` (a value, not a strategy)."""
    schema = orjson.dumps({"type": "object", "properties": {"arg": {"type": "string"}}}).decode()
    return tuple(ToolDef(name, f"The {name} tool.", schema) for name in names)


def _call_input(draw: st.DrawFn, name: str, n: int) -> str:
    if name == "read_file":
        value: dict[str, object] = {"path": f"docs/chapter_{n}.md"}
    elif name == "run_tests":
        value = {"args": ["-q", f"tests/test_{n}.py"]}
    else:
        value = {"query": draw(texts(0, 8))}
    return orjson.dumps(value).decode()


@st.composite
def transcripts(
    draw: st.DrawFn,
    *,
    min_turns: int = 1,
    max_turns: int = 4,
    min_rounds: int = 0,
    max_rounds: int = 8,
    max_parallel: int = 3,
    sizes: st.SearchStrategy[int] | None = None,
    shapes: Sequence[str] = ("anthropic", "openai"),
) -> Transcript:
    """A well-formed transcript built from the model classes.

    - an optional system prompt (one ``Text``) and optional tool definitions;
    - ``min_turns..max_turns`` turns, each: a human user message, then
      ``min_rounds..max_rounds`` tool rounds, then an optional final assistant
      text (always present when the turn has no round, so roles alternate);
    - a tool round is an assistant message (sometimes with text first) making
      ``1..max_parallel`` calls with unique ids ``call_<n>`` (``n`` counts from 1
      across the transcript), names from ``TOOL_NAMES`` and compact JSON
      inputs, followed by their results in the transcript's shape:
      ``anthropic`` puts all of them in one user message, ``openai`` sends one
      ``role="tool"`` message per result (named after its tool), in call order;
    - result texts come from ``tool_outputs(sizes)``: tiny to huge, in ASCII,
      Cyrillic or Han; about one result in four is an error.

    Every message's source is ``Source("<hypothesis>", index + 1)``, so reports
    show line numbers; ``dialect`` is the chosen shape.
    """
    shape = draw(st.sampled_from(tuple(shapes)))
    messages: list[Message] = []
    counter = 0

    def add(role: Role, content: tuple[Block, ...]) -> None:
        messages.append(Message(role, content, Source("<hypothesis>", len(messages) + 1)))

    system = (Text(draw(texts(1, 40))),) if draw(st.booleans()) else ()
    tools = tool_defs() if draw(st.booleans()) else ()
    for _ in range(draw(st.integers(min_turns, max_turns))):
        add("user", (Text(draw(texts(1, 24))),))
        n_rounds = draw(st.integers(min_rounds, max_rounds))
        for _ in range(n_rounds):
            calls: list[ToolCall] = []
            for _ in range(draw(st.integers(1, max_parallel))):
                counter += 1
                name = draw(st.sampled_from(TOOL_NAMES))
                calls.append(ToolCall(f"call_{counter}", name, _call_input(draw, name, counter)))
            lead = (Text(draw(texts(1, 12))),) if draw(st.booleans()) else ()
            add("assistant", (*lead, *calls))
            results = [
                ToolResult(
                    call.id,
                    (Text(draw(tool_outputs(sizes))),),
                    is_error=draw(st.sampled_from((False, False, False, True))),
                    name=call.name if shape == "openai" else "",
                )
                for call in calls
            ]
            if shape == "anthropic":
                add("user", tuple(results))
            else:
                for result in results:
                    add("tool", (result,))
        if n_rounds == 0 or draw(st.booleans()):
            add("assistant", (Text(draw(texts(1, 24))),))
    return Transcript(
        system=system,
        tools=tools,
        messages=tuple(messages),
        source=Source("<hypothesis>"),
        dialect="openai" if shape == "openai" else "anthropic",
    )


def subagents(
    *,
    min_rounds: int = 2,
    max_rounds: int = 24,
    max_parallel: int = 3,
    sizes: st.SearchStrategy[int] | None = None,
    shapes: Sequence[str] = ("anthropic", "openai"),
) -> st.SearchStrategy[Transcript]:
    """Single-turn transcripts with many tool rounds: one instruction, then
    ``min_rounds..max_rounds`` rounds (the long-turn case stage 3 exists for)."""
    return transcripts(
        min_turns=1,
        max_turns=1,
        min_rounds=min_rounds,
        max_rounds=max_rounds,
        max_parallel=max_parallel,
        sizes=sizes,
        shapes=shapes,
    )


@st.composite
def damaged_transcripts(draw: st.DrawFn, *, max_turns: int = 3, max_rounds: int = 5) -> Transcript:
    """A generated transcript with the defects real files have and ``repair``
    fixes (issue 8): calls and results deleted (an interrupted session, an
    orphan), a result recorded twice in its message, and a call id reused by a
    later call (in that call and its results). Sources keep their line numbers."""
    transcript = draw(transcripts(max_turns=max_turns, max_rounds=max_rounds))
    ids = [c.id for m in transcript.messages for c in m.tool_calls]
    reuse = {b: draw(st.sampled_from(ids[:k])) for k, b in enumerate(ids) if k and draw(st.integers(0, 7)) == 0}
    messages = []
    for m in transcript.messages:
        content: list[Block] = []
        for b in m.content:
            if isinstance(b, (ToolResult, ToolCall)) and draw(st.integers(0, 7)) == 0:
                continue  # deleted
            if isinstance(b, ToolCall) and b.id in reuse:
                b = ToolCall(reuse[b.id], b.name, b.input_json, b.extra, b.arguments)
            if isinstance(b, ToolResult) and b.call_id in reuse:
                b = ToolResult(reuse[b.call_id], b.content, b.is_error, b.name, b.extra)
            content.append(b)
            if isinstance(b, ToolResult) and draw(st.integers(0, 9)) == 0:
                content.append(b)  # recorded twice
        if content:
            messages.append(Message(m.role, tuple(content), m.source, m.extra))
    return Transcript(
        transcript.system, transcript.tools, tuple(messages), transcript.source, dialect=transcript.dialect
    )


@st.composite
def observed_transcripts(
    draw: st.DrawFn, *, max_turns: int = 3, max_steps: int = 12, sizes: st.SearchStrategy[int] | None = None
) -> Transcript:
    """Text-protocol transcripts (SWE-agent, aider, XML-era Cline): tool output
    sent as plain user text. Each turn is a human instruction, then steps of an
    assistant text naming a command and a user message holding that command's
    output as a ``Text`` with ``observation_of`` (sometimes after a short header
    block and before a short trailing block, as Cline writes them), and in one
    step of four a real tool round instead, so both kinds of result mix."""
    messages: list[Message] = []
    counter = 0

    def add(role: Role, content: tuple[Block, ...]) -> None:
        messages.append(Message(role, content, Source("<hypothesis>", len(messages) + 1)))

    system = (Text(draw(texts(1, 40))),) if draw(st.booleans()) else ()
    for _ in range(draw(st.integers(1, max_turns))):
        add("user", (Text(draw(texts(1, 24))),))
        for _ in range(draw(st.integers(0, max_steps))):
            name = draw(st.sampled_from(TOOL_NAMES))
            if draw(st.integers(0, 3)) == 0:
                counter += 1
                call = ToolCall(f"call_{counter}", name, _call_input(draw, name, counter))
                add("assistant", (call,))
                add("user", (ToolResult(call.id, (Text(draw(tool_outputs(sizes))),)),))
                continue
            add("assistant", (Text(f"{draw(texts(1, 12))}\n<{name}>x</{name}>"),))
            output = Text(draw(tool_outputs(sizes)), observation_of=name)
            header = (Text(f"[{name}] Result:"),) if draw(st.booleans()) else ()
            trailer = (Text(draw(texts(1, 12))),) if draw(st.booleans()) else ()
            add("user", (*header, output, *trailer))
        add("assistant", (Text(draw(texts(1, 24))),))
    return Transcript(system=system, tools=(), messages=tuple(messages), source=Source("<hypothesis>"))


@st.composite
def measured(draw: st.DrawFn, transcript: Transcript, est: Estimator) -> Transcript:
    """``transcript`` with usage measured before some of its assistant replies: about what the estimate says
    of the messages before each, give or take half (so anchored sizes lie both above and below it)."""
    messages = transcript.messages
    replies = [i for i, m in enumerate(messages) if m.role == "assistant"]
    if not replies:
        return transcript
    usage = []
    for before in sorted(set(draw(st.lists(st.sampled_from(replies), min_size=1, max_size=3)))):
        estimated = est.preamble(transcript) + sum(est.message_tokens(messages[:before]))
        total = max(1, int(estimated * draw(st.sampled_from((0.5, 0.9, 1.0, 1.2, 2.0)))))
        cached = draw(st.integers(0, total))
        usage.append(Usage(before, total - cached, 0, cached))
    return replace(transcript, usage=tuple(usage))
