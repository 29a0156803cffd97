"""The provider-neutral transcript model: blocks, messages, transcripts, and
their derived structure (turns and tool rounds, SPEC section 1).

Every value is frozen; collections are tuples. Unknown JSON is kept verbatim
as compact JSON text so that writers can reproduce it.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from dataclasses import field, replace
from itertools import pairwise
from typing import Literal, Protocol, TypeAlias

from ._frozen import frozen

JsonText: TypeAlias = str
"""Compact JSON text (``orjson.dumps`` output decoded); ``""`` means nothing."""

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
Dialect: TypeAlias = Literal["anthropic", "openai"]


@frozen
class Source:
    """Where a message came from: file path and 1-based line (or None)."""

    path: str
    line: int | None = None


@frozen
class Text:
    """Plain text the model reads."""

    text: str
    extra: JsonText = ""
    """Keys of the original block windowfit does not model (e.g. cache_control)."""
    observation_of: str = ""
    """The tool or command whose output this text is, when the format returns tool
    output as plain text (SWE-agent's text protocol, aider's command output,
    XML-era Cline): stage 1 may clear it like a tool result. Empty otherwise."""


@frozen
class Thinking:
    """Model reasoning sent back to the provider."""

    text: str
    extra: JsonText = ""


@frozen
class ToolCall:
    """An assistant's request to run a tool."""

    id: str
    name: str
    input_json: JsonText
    """The call's input as compact JSON; counted as text by the estimator."""
    extra: JsonText = ""
    arguments: str = ""
    """The input exactly as the format sent it, when that is a string (OpenAI
    ``arguments``) that is not JSON; written back verbatim."""
    input_text: JsonText = ""
    """The input's JSON text exactly as the file spelled it, when that differs from
    ``input_json`` (spacing, number spellings such as ``1E+2``, integers past 64 bits,
    repeated keys, ``NaN``): every writer emits it as it came (SPEC section 6,
    invariant 9), while the estimator counts ``input_json``. Empty otherwise."""
    given: object = field(default=None, compare=False, repr=False)
    """The input as the very object a harness gave ``Fitter.fit`` (a dict), returned
    as that object; None for inputs read from a file."""


@frozen
class Image:
    """An image; its data is never counted as characters."""

    media_type: str
    byte_size: int
    width: int | None = None
    height: int | None = None
    raw: JsonText = ""
    """The original block, to write it back unchanged."""


@frozen
class Other:
    """A block of a kind windowfit does not model, kept verbatim."""

    kind: str
    raw: JsonText
    counted: JsonText = ""
    """``raw`` with binary payloads (base64 data) cut out: what the estimator
    counts as text. Empty when it equals ``raw``."""
    binary_payloads: int = 0
    """How many base64 payloads were cut out; each costs a fixed estimate."""


@frozen
class ToolResult:
    """What a tool returned, answering the call with ``call_id``."""

    call_id: str
    content: tuple[Block, ...]
    is_error: bool = False
    name: str = ""
    """The tool's name when the format records it on the result (OpenAI)."""
    extra: JsonText = ""


Block: TypeAlias = Text | Thinking | ToolCall | ToolResult | Image | Other


class StoredText(Protocol):
    """JSON text left where it was read (a span of a file kept mapped), read when a writer asks."""

    def read(self) -> bytes: ...


@frozen
class Verbatim:
    """JSON text exactly as a file held it (SPEC section 6, invariant 9), and the
    blocks read from it. Writers emit ``json`` only while the value still holds
    that very ``content`` tuple: a fit that changes a message builds a new tuple,
    so a changed message can never be written as its old text."""

    stored: tuple[bytes | StoredText, ...] | bytes | StoredText
    """One JSON value per item: a message's object; a system prompt's value or messages. Either its bytes,
    or where a loader read it from a mapped file, the span it spans there (``json`` reads it): the text is
    as large as the file, and a writer needs it only for the messages it writes. A single item may stand
    alone, without its tuple (48 B a message of a long session)."""
    content: tuple[Block, ...]

    @property
    def json(self) -> tuple[bytes, ...]:
        """The JSON texts, as bytes."""
        stored = self.stored
        if isinstance(stored, bytes):
            return (stored,)
        if isinstance(stored, tuple):
            return tuple(t if isinstance(t, bytes) else t.read() for t in stored)
        return (stored.read(),)

    def of(self, content: tuple[Block, ...]) -> tuple[bytes, ...] | None:
        """``json`` if ``content`` is still the tuple it was read into, else None."""
        return self.json if content is self.content else None

    def __eq__(self, other: object) -> bool:  # the same texts, wherever they are kept
        return isinstance(other, Verbatim) and self.content == other.content and self.json == other.json

    def __hash__(self) -> int:
        return hash((self.json, self.content))


@frozen
class Joined:
    """The messages a written message joins (``fit.sent``: the truncation note and the user messages beside
    it), in order: a writer spells each one's blocks as that message's own text has them."""

    parts: tuple[Message, ...]


@frozen
class Message:
    """One message: a role and its content blocks."""

    role: Role
    content: tuple[Block, ...]
    source: Source = field(default=Source("<memory>"), compare=False)
    extra: JsonText = ""
    verbatim: Verbatim | Joined | None = field(default=None, compare=False, repr=False)
    """The message as read, where the format keeps it (messages JSONL, request bodies); for a message
    written as several joined, those messages."""

    @property
    def exact_json(self) -> bytes | None:
        """The message's JSON text as it was read, if the message is unchanged since."""
        verbatim = self.verbatim
        found = verbatim.of(self.content) if isinstance(verbatim, Verbatim) else None
        return found[0] if found else None

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolCall))

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolResult))

    @property
    def starts_turn(self) -> bool:
        """A human user message: role user and no tool results in it.

        A user message that carries any tool result answers the previous
        assistant message, so a turn can never start there without orphaning
        that result (SPEC section 1).
        """
        return self.role == "user" and not any(isinstance(b, ToolResult) for b in self.content)


@frozen
class ToolDef:
    """A tool definition sent with every request."""

    name: str
    description: str
    schema_json: JsonText
    raw: JsonText = ""
    dialect: Dialect = "anthropic"
    text: JsonText = field(default="", compare=False)
    """The definition's JSON text exactly as the file spelled it, where that differs from ``raw`` (its
    compact JSON): written as it came in a body of its own dialect (SPEC section 6, invariant 9). Empty
    otherwise; it is the same value as ``raw``, so it takes no part in comparisons."""


@frozen
class Skipped:
    """An input line that was not turned into a message, and why."""

    source: Source
    reason: str


@frozen
class Defect:
    """Something wrong in a real file that the loader worked around, with where."""

    source: Source
    kind: str
    """E.g. ``unparseable-line``, ``comment-line``, ``truncated-line``, ``unanswered-call``,
    ``orphan-result``, ``duplicate-history``, ``branch``."""
    detail: str


@frozen
class Usage:
    """What the provider counted for one request, attached where it was measured:
    that request held ``messages[:before]`` of this transcript."""

    before: int
    input_tokens: int
    """Input the provider read without its prompt cache."""
    cache_creation_tokens: int = 0
    cache_read_tokens: int = 0
    source: Source = Source("<memory>")
    output_tokens: int = 0
    """What the provider generated for the reply ``messages[before]`` (thinking
    included); 0 when not recorded."""

    @property
    def total(self) -> int:
        """The whole request as the provider counted it."""
        return self.input_tokens + self.cache_creation_tokens + self.cache_read_tokens


@frozen
class Transcript:
    """A system prompt, tool definitions and ordered messages."""

    system: tuple[Block, ...]
    tools: tuple[ToolDef, ...]
    messages: tuple[Message, ...]
    source: Source = Source("<memory>")
    format: str = "messages"
    dialect: Dialect = "anthropic"
    skipped: tuple[Skipped, ...] = ()
    extra: JsonText = ""
    """Request-level keys windowfit does not model (model, max_tokens, ...)."""
    defects: tuple[Defect, ...] = ()
    """What the loader found wrong and worked around (reported, never silent)."""
    usage: tuple[Usage, ...] = ()
    """Measured request sizes, where the format records them."""
    line_kinds: tuple[tuple[str, int], ...] = ()
    """Lines that are not messages, by type (``summary``, ``progress``, ...), counted."""
    notes: tuple[str, ...] = ()
    """Decisions the loader took, in words (e.g. which branch it followed)."""
    context_start: int = 0
    """Index of the first message of the live context: a compaction restarts the
    context, and only the messages from here on are sent with the next request."""
    compacted_tokens: int = 0
    """The live context's size as the compaction that started it recorded it, system
    prompt and tools aside (Claude Code's ``compactMetadata.postTokens``): the first
    request after the compaction is sized on it. 0 when not recorded."""
    compacted_line: int | None = None
    """The line that recorded ``compacted_tokens``."""
    preamble_of: Transcript | None = None
    """Where the preamble is inferred from, when not from this transcript's own first measured request: a
    Claude Code compaction agent's requests hold the conversation it summarises, which its file does not
    record, so its preamble is its session's (the session's messages up to its first measured request, with
    that usage); a transcript without usage when the session is not at hand. None: its own."""
    name: str = ""
    """Which transcript of its file this is, when a file holds several (e.g.
    ``subagent agent-a5bdbc1``, ``trajectory 17``); empty otherwise."""
    system_verbatim: Verbatim | None = field(default=None, compare=False, repr=False)
    """The system prompt as read (a body's ``system`` value, or its system
    messages), where the format keeps it; valid while ``system`` is unchanged."""

    @property
    def label(self) -> str:
        """The file, and the transcript's name within it when it has one."""
        return f"{self.source.path} [{self.name}]" if self.name else self.source.path

    def live(self) -> Transcript:
        """The live context: what the next request would carry."""
        if not self.context_start:
            return self
        start = self.context_start
        usage = tuple(replace(u, before=u.before - start) for u in self.usage if u.before > start)
        return replace(self, messages=self.messages[start:], usage=usage, context_start=0)


def block_kind(block: Block) -> str:
    """``text``, ``thinking``, ``tool_call``, ``tool_result``, ``image`` or ``other``."""
    if isinstance(block, Text):
        return "text"
    if isinstance(block, Thinking):
        return "thinking"
    if isinstance(block, ToolCall):
        return "tool_call"
    if isinstance(block, ToolResult):
        return "tool_result"
    return "image" if isinstance(block, Image) else "other"


# --------------------------------------------------------------------------
# Derived structure


@frozen
class Turn:
    """Messages ``[start, stop)``: a human user message and all up to the next."""

    start: int
    stop: int


@frozen
class Round:
    """Messages ``[start, stop)``: an assistant message with tool calls and the
    message(s) carrying their results. Never split."""

    start: int
    stop: int
    call_ids: tuple[str, ...]


@frozen
class Single:
    """Messages ``[start, start + 1)``: a message that belongs to no round."""

    start: int

    @property
    def stop(self) -> int:
        return self.start + 1


Unit: TypeAlias = Round | Single
"""The smallest piece stage 3 keeps or drops."""


def split_turns(messages: Sequence[Message]) -> tuple[Turn, ...]:
    """Cut messages into turns. Messages before the first human message (a
    transcript that opens with an assistant) form a turn of their own."""
    return tuple(Turn(a, b) for a, b in pairwise(turn_bounds(messages)))


def turn_bounds(messages: Sequence[Message]) -> array[int]:
    """``split_turns`` as machine integers: each turn's start, then ``len(messages)`` (none for no messages):
    turn ``k`` is ``[bounds[k], bounds[k + 1])``. 8 B a turn where a ``Turn`` and its integers take about 100."""
    bounds = array("q")
    if not messages:
        return bounds
    if not messages[0].starts_turn:
        bounds.append(0)
    bounds.extend(i for i, m in enumerate(messages) if m.starts_turn)
    bounds.append(len(messages))
    return bounds


def _answered_by(message: Message) -> set[str]:
    return {b.call_id for b in message.content if isinstance(b, ToolResult)}


def iter_units(messages: Sequence[Message], start: int, stop: int) -> Iterator[Unit]:
    """Group ``messages[start:stop]`` into tool rounds and single messages.

    A round is an assistant message with calls followed by the consecutive
    messages that carry results for those calls (one user message in the
    Anthropic shape, one ``tool`` message per call in the OpenAI shape).
    """
    i = start
    while i < stop:
        message = messages[i]
        calls = message.tool_calls if message.role == "assistant" else ()
        if not calls:
            yield Single(i)
            i += 1
            continue
        pending = {c.id for c in calls}
        j = i + 1
        while j < stop and pending:
            answered = _answered_by(messages[j])
            if not answered or messages[j].role not in ("user", "tool"):
                break
            pending -= answered
            j += 1
        yield Round(i, j, tuple(c.id for c in calls))
        i = j


def split_units(messages: Sequence[Message], start: int = 0, stop: int | None = None) -> tuple[Unit, ...]:
    """The tool rounds and single messages of ``messages[start:stop]``."""
    return tuple(iter_units(messages, start, len(messages) if stop is None else stop))


def count_rounds(messages: Sequence[Message]) -> int:
    return sum(1 for u in iter_units(messages, 0, len(messages)) if isinstance(u, Round))


def iter_tool_results(messages: Sequence[Message]) -> Iterator[tuple[int, int, ToolResult]]:
    """Every tool result with its message index and block index, oldest first."""
    for mi, message in enumerate(messages):
        for bi, block in enumerate(message.content):
            if isinstance(block, ToolResult):
                yield mi, bi, block


def observation_id(message_index: int, block_index: int) -> str:
    """The stable id of a text observation, which has no call id of its own:
    ``obs-<message index>`` (``obs-<message index>.<block index>`` past the first block)."""
    return f"obs-{message_index}" if block_index == 0 else f"obs-{message_index}.{block_index}"


def tool_names(messages: Sequence[Message]) -> dict[str, str]:
    """Map each call id to the name of the tool it called."""
    return {b.id: b.name for m in messages for b in m.content if isinstance(b, ToolCall)}
