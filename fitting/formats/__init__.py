"""Loaders per format. Adding a format is one module that defines ``FORMAT``
and one line in ``FORMATS``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from ..errors import EmptyTranscript, Location, NoTranscripts, UnknownFormat
from ..transcript import Transcript
from . import anthropic_log, claude_code, codex, messages, openai_chat, responses
from .registry import Format, Input

FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        codex.FORMAT,
        responses.FORMAT,
        claude_code.FORMAT,
        openai_chat.FORMAT,
        anthropic_log.FORMAT,
        messages.FORMAT,
    )
}
SUFFIXES = (".jsonl", ".json", ".traj")


def detect(source: Input) -> Format:
    """The format whose sniffer accepts the input's first bytes."""
    head = source.head()
    if not head.strip():
        raise EmptyTranscript(Location(source.path), "the file is empty")
    for fmt in FORMATS.values():
        if fmt.sniff(head):
            return fmt
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


__all__ = ["FORMATS", "Format", "Input", "detect", "discover", "get_format", "load", "load_path"]
