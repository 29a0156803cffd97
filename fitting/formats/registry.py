"""The file formats windowfit reads, in the order detection tries them: the one
place a new format is added. Also choosing a format for an input, loading it,
and finding the transcript files in folders."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from ..errors import EmptyTranscript, Location, NoTranscripts, UnknownFormat
from ..transcript import Transcript
from . import (
    aider,
    anthropic_log,
    atif,
    claude_code,
    cline,
    codex,
    copilot_cli,
    gemini_cli,
    http_capture,
    inspect_ai,
    messages,
    openai_chat,
    openhands,
    responses,
)
from .base import Format, Input

SPECIFIC: tuple[Format, ...] = (
    codex.FORMAT,
    responses.FORMAT,
    claude_code.FORMAT,
    openai_chat.FORMAT,
    anthropic_log.FORMAT,
    cline.FORMAT,
    openhands.FORMAT,
    aider.FORMAT,
    inspect_ai.FORMAT,
    http_capture.FORMAT,
    atif.FORMAT,
    gemini_cli.FORMAT,
    copilot_cli.FORMAT,
)
"""Formats recognised by marks of their own, tried in this order. Their
sniffers never overlap, so the order decides nothing but speed and a stable
answer: codex, responses and claude_code look for their line or item types
(``payload`` envelopes, Responses item types, ``parentUuid``/``sessionId``),
which the others never carry; openai_chat and anthropic_log split request
bodies and conversations by the same tests (``_sniff.head_dialect`` and
``_sniff.is_capture``), one taking each answer. tests/test_formats_registry.py
checks every sample file and corpus transcript is claimed by at most one."""

FALLBACK: Format = messages.FORMAT
"""Tried when no specific format claims the input: plain messages, one per
line, or one request body or message array (it accepts JSON with a ``role`` or
``messages`` anywhere in its first bytes, which is why it comes last)."""

FORMATS: dict[str, Format] = {f.name: f for f in (*SPECIFIC, FALLBACK)}
"""Every format by name, in detection order (what ``--from`` lists)."""

SUFFIXES = (".jsonl", ".json", ".traj", ".eval")
"""File names a folder search picks up."""


def detect(source: Input) -> Format:
    """The specific format whose sniffer accepts the input's first bytes, else
    the fallback if it does."""
    head = source.head()
    if not head.strip():
        raise EmptyTranscript(Location(source.path), "the file is empty")
    for fmt in SPECIFIC:
        if fmt.sniff(head):
            return fmt
    if FALLBACK.sniff(head):
        return FALLBACK
    raise UnknownFormat(
        Location(source.path),
        "not a transcript format windowfit knows",
        hint=f"pass --from with one of: {', '.join(FORMATS)}",
    )


def get_format(name: str) -> Format:
    try:
        return FORMATS[name]
    except KeyError:
        raise UnknownFormat(
            Location(name), f"unknown format {name!r}", hint=f"known formats: {', '.join(FORMATS)}"
        ) from None


def format_of(transcript: Transcript) -> Format | None:
    """The format whose loader gave ``transcript`` (None for a name no format owns)."""
    return next((f for f in FORMATS.values() if transcript.format in (f.name, *f.variants)), None)


def load(source: Input, *, fmt: str | None = None, skip_invalid: bool = False) -> tuple[Transcript, ...]:
    """Every transcript in one input (most files hold exactly one)."""
    chosen = get_format(fmt) if fmt else detect(source)
    return chosen.load(source, skip_invalid=skip_invalid)


def load_path(path: str | Path, *, fmt: str | None = None, skip_invalid: bool = False) -> tuple[Transcript, ...]:
    return load(Input(str(path)), fmt=fmt, skip_invalid=skip_invalid)


def discover(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Files named, and transcript files found recursively in directories (sorted).
    A Claude Code ``<session>/subagents/`` file is left out when its session file
    is found too: loading the session loads it."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
            if not found:
                raise NoTranscripts(Location(str(path)), "no transcript files (*.jsonl, *.json) in this directory")
            listed = set(found)
            yield from (p for p in found if claude_code.session_of(p) == p or claude_code.session_of(p) not in listed)
        else:
            yield path
