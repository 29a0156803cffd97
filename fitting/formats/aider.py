"""The "aider" format: aider's ``.aider.chat.history.md``, a Markdown log of
every session in one repository. Each ``# aider chat started at`` line opens a
session (a transcript); ``####`` lines are the user's input, ``>`` lines aider's
own output (command output, lint errors, edits applied), and the plain text
between them the model's replies. aider's output is read as a text
observation, which stage 1 may clear."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from ..errors import EmptyTranscript, Location
from ..transcript import Message, Role, Source, Text, Transcript
from .base import Format, Input

NAME = "aider"
SESSION_HEADER = "# aider chat started at"
OBSERVER = "aider"
"""What a ``>`` block is the output of, as its stub names it."""


def sniff(head: bytes) -> bool:
    """Markdown with aider's session header among its first lines (JSON never starts so)."""
    text = head.lstrip()
    if text.startswith((b"{", b"[")):
        return False
    return b"\n" + SESSION_HEADER.encode() in b"\n" + head


@dataclass(slots=True)
class _Chunk:
    """Consecutive lines of one kind: ``user`` (####), ``output`` (>) or ``reply``."""

    kind: str
    line: int
    lines: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "\n".join(self.lines).strip("\n")


@dataclass(slots=True)
class _Session:
    line: int
    started: str
    chunks: list[_Chunk] = field(default_factory=list)


def _kind(line: str) -> tuple[str, str]:
    """A line's kind and its text without aider's prefix and Markdown line break."""
    body = line.rstrip("\n")
    body = body[:-2] if body.endswith("  ") else body
    if body.startswith("####"):
        return "user", body[5:] if body.startswith("#### ") else body[4:]
    if body.startswith("> ") or body == ">":
        # Not ">>>>>>> REPLACE": the end of an edit block in the model's reply.
        return "output", body[2:]
    return "reply", body


def _sessions(lines: Iterator[str]) -> Iterator[_Session]:
    session = _Session(1, "")
    blank = False
    for number, line in enumerate(lines, 1):
        if line.startswith(SESSION_HEADER):
            yield session
            session = _Session(number, line[len(SESSION_HEADER) :].strip())
            blank = False
            continue
        if not line.strip():
            blank = True
            if session.chunks and session.chunks[-1].kind == "reply":
                session.chunks[-1].lines.append("")
            continue
        kind, text = _kind(line)
        last = session.chunks[-1] if session.chunks else None
        # A blank line between two inputs starts a new one (aider writes each input after one).
        if last is None or last.kind != kind or (kind == "user" and blank):
            last = _Chunk(kind, number)
            session.chunks.append(last)
        last.lines.append(text)
        blank = False
    yield session


def _messages(session: _Session, path: str) -> list[Message]:
    """The session's messages from the person's first input on: what aider
    printed before it (its banner) is not part of the conversation."""
    start = next((i for i, c in enumerate(session.chunks) if c.kind == "user" and c.text().strip()), None)
    if start is None:
        return []
    messages: list[Message] = []
    for chunk in session.chunks[start:]:
        text = chunk.text()
        if not text.strip():
            continue
        role: Role = "assistant" if chunk.kind == "reply" else "user"
        block = Text(text, observation_of=OBSERVER if chunk.kind == "output" else "")
        if messages and messages[-1].role == role:
            last = messages[-1]
            messages[-1] = Message(role, (*last.content, block), last.source)
        else:
            messages.append(Message(role, (block,), Source(path, chunk.line)))
    return messages


def load(source: Input, *, skip_invalid: bool) -> tuple[Transcript, ...]:
    del skip_invalid  # Markdown has no line that cannot be read
    text = source.read_all().decode("utf-8", errors="replace")
    transcripts: list[Transcript] = []
    empty = 0
    for session in _sessions(iter(text.splitlines(keepends=True))):
        messages = _messages(session, source.path)
        if not messages:
            empty += session.line > 1 or bool(session.chunks)
            continue
        name = f"session {session.started} (line {session.line})" if session.started else "before the first session"
        transcripts.append(
            Transcript((), (), tuple(messages), Source(source.path, session.line), NAME, "anthropic", name=name)
        )
    if not transcripts:
        raise EmptyTranscript(Location(source.path), "no aider session with user input", hint="is this the right file?")
    notes = [
        "aider's chat history records the conversation as shown, not the requests: its system prompt, repository "
        "map and file contents are not in it, so the estimate leaves them out (.aider.llm.history has the requests)",
        "'>' lines are aider's own output, read as clearable tool output",
    ]
    if empty:
        notes.append(f"{empty} session(s) with no user input are left out")
    first = transcripts[0]
    transcripts[0] = Transcript(
        first.system,
        first.tools,
        first.messages,
        first.source,
        NAME,
        "anthropic",
        notes=tuple(notes),
        name=first.name,
    )
    return tuple(transcripts)


FORMAT = Format(
    name=NAME,
    description="aider's .aider.chat.history.md (every '# aider chat started at' a session)",
    sniff=sniff,
    load=load,
    scan_names=("*.chat.history.md", "*chat-history.md"),
    records_system=False,
)
