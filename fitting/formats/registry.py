"""The file formats windowfit reads, in the order detection tries them: the one
place a new format is added. Also choosing a format for an input, loading it,
and finding the transcript files in folders."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from .._lazy import submodule
from ..errors import EmptyTranscript, Location, NoTranscripts, UnknownFormat
from ..transcript import Transcript
from .base import Format, Input

SPECIFIC_NAMES: tuple[str, ...] = (
    "codex",
    "responses",
    "claude_code",
    "openai_chat",
    "anthropic_log",
    "cline",
    "openhands",
    "aider",
    "aider_llm",
    "inspect_ai",
    "http_capture",
    "atif",
    "gemini_cli",
    "copilot_cli",
    "opencode",
)
"""Formats recognised by marks of their own, by name (each the module ``<name>.py`` of this package, whose
``FORMAT`` it is), tried in this order. Their sniffers never overlap, so the order decides nothing but speed
and a stable answer: codex, responses and claude_code look for their line or item types (``payload``
envelopes, Responses item types, ``parentUuid``/``sessionId``), which the others never carry; openai_chat and
anthropic_log split request bodies and conversations by the same tests (``_sniff.head_dialect`` and
``_sniff.is_capture``), one taking each answer. tests/test_formats_registry.py checks every sample file and
corpus transcript is claimed by at most one. A module is imported when detection first tries it, or when
``SPECIFIC`` or ``FORMATS`` is read: a codex rollout loads one format, not sixteen, and a Claude Code session,
which detection asks first by its keys (``_claude_code_first``), one too."""

DIRECTORY_NAMES: tuple[str, ...] = ("opencode",)
"""The formats of ``SPECIFIC_NAMES`` that read a folder as one input (``Format.directory``), in detection order:
a folder scan asks only these of each folder it enters, so walking a folder imports no other format.
tests/test_formats_registry.py checks it against every format's ``directory``."""

SCAN_NAMES: tuple[str, ...] = ("*.chat.history.md", "*chat-history.md", "*.llm.history")
"""Every format's ``Format.scan_names`` (aider's, aider_llm's), for the same reason: a folder scan matches file
names against these without importing the formats that declare them (checked by the same test)."""

FALLBACK_NAME = "messages"
"""The fallback's name (``FALLBACK``)."""

NAMES: tuple[str, ...] = (*SPECIFIC_NAMES, FALLBACK_NAME)
"""Every format's name, in detection order (what ``--from`` lists), without importing one."""

SPECIFIC: tuple[Format, ...]
"""The formats of ``SPECIFIC_NAMES``, in that order (every one imported when this is first read)."""

FALLBACK: Format
"""Tried when no specific format claims the input: plain messages, one per
line, or one request body or message array (it accepts JSON with a ``role`` or
``messages`` anywhere in its first bytes, which is why it comes last)."""

FORMATS: dict[str, Format]
"""Every format by name, in detection order (what ``--from`` lists)."""

_LOADED: dict[str, Format] = {}


def _format(name: str) -> Format:
    """The format ``name`` (one of ``NAMES``), its module imported on first use."""
    found = _LOADED.get(name)
    if found is None:
        found = _LOADED[name] = submodule(__package__, name).FORMAT
    return found


def _specific() -> Iterator[Format]:
    """The specific formats in detection order, each imported as it is reached."""
    return (_format(name) for name in SPECIFIC_NAMES)


def __getattr__(name: str) -> Any:
    """``SPECIFIC``, ``FALLBACK`` and ``FORMATS``, built (importing their modules) when first read."""
    value: object
    if name == "SPECIFIC":
        value = tuple(_specific())
    elif name == "FALLBACK":
        value = _format(FALLBACK_NAME)
    elif name == "FORMATS":
        value = {n: _format(n) for n in NAMES}
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


SUFFIXES = (".jsonl", ".json", ".traj", ".eval")
"""File names a folder search picks up."""


_MAGIC: tuple[tuple[bytes, str, str], ...] = (
    (b"PK\x03\x04", "a zip archive (an Inspect .eval log?)", "windowfit reads the JSON inside: unzip it first"),
    (b"PK\x05\x06", "an empty zip archive", ""),
    (b"\x1f\x8b", "gzip-compressed", "decompress it first: gunzip -k FILE"),
    (b"BZh", "bzip2-compressed", "decompress it first: bunzip2 -k FILE"),
    (b"\xfd7zXZ\x00", "xz-compressed", "decompress it first: unxz -k FILE"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed", "decompress it first: unzstd FILE"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "extract it first"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image", ""),
    (b"\xff\xd8\xff", "a JPEG image", ""),
    (b"GIF8", "a GIF image", ""),
    (b"%PDF-", "a PDF document", ""),
    (b"SQLite format 3\x00", "an SQLite database", ""),
)
"""Leading bytes of files that are not text, what they are, and what to do."""


def binary_kind(head: bytes) -> tuple[str, str] | None:
    """What a file that is not text is (and a hint), from its first bytes; None for text.
    UTF-16 text (every other byte NUL) is text: its loader says to convert it."""
    for magic, what, hint in _MAGIC:
        if head.startswith(magic):
            return what, hint
    sample = head[:4096]
    if b"\x00" in sample and not (sample.startswith((b"\xff\xfe", b"\xfe\xff")) or _utf16(sample)):
        return "a binary file (it holds NUL bytes), not text", ""
    return None


def _utf16(sample: bytes) -> bool:
    """NULs on one side of the byte pairs only, as in UTF-16 text without a byte order mark."""
    return 0 not in sample[0::2] or 0 not in sample[1::2]


def refuse_binary(source: Input, head: bytes) -> None:
    """Raise ``UnknownFormat`` saying what a binary input is (an archive, compressed, an image)."""
    found = binary_kind(head)
    if found is not None:
        what, hint = found
        raise UnknownFormat(Location(source.path), f"{what}, not a transcript", hint=hint)


def directory_format(path: Path) -> Format | None:
    """The format that reads this folder as one input (opencode storage), by its layout; None for an ordinary
    folder, which is scanned for files."""
    for name in DIRECTORY_NAMES:
        fmt = _format(name)
        if fmt.directory is not None and fmt.directory(path):
            return fmt
    return None


def _folder(source: Input) -> bool:
    return source.data is None and Path(source.path).is_dir()


def detect(source: Input) -> Format:
    """The specific format whose sniffer accepts the input's first bytes, else
    the fallback if it does. A binary input no format claims (an archive,
    compressed, an image) is refused with what it is; a format may read a
    binary container of its own (an Inspect ``.eval`` is a zip). A folder is
    the format's that recognises its layout, if any."""
    if _folder(source):
        found = directory_format(Path(source.path))
        if found is None:
            raise UnknownFormat(Location(source.path), "is a directory that no format reads as one input")
        return found
    head = source.head()
    if not head.strip():
        raise EmptyTranscript(Location(source.path), "the file is empty")
    if _claude_code_first(source.path, head):
        first = _format(CLAUDE_CODE_NAME)
        if first.sniff(head):
            return first
    for fmt in _specific():
        if fmt.sniff(head):
            return fmt
    refuse_binary(source, head)
    fallback = _format(FALLBACK_NAME)
    if fallback.sniff(head):
        return fallback
    raise UnknownFormat(
        Location(source.path),
        "not a transcript format windowfit knows",
        hint=f"pass --from with one of: {', '.join(NAMES)}",
    )


CLAUDE_CODE_NAME = "claude_code"
PROJECTS_DIR = "projects"
"""A Claude Code session's folder above its project's: ``~/.claude/projects/<project>/<session>.jsonl``."""


CLAUDE_CODE_KEYS = (b'"sessionId"', b'"leafUuid"', b'"file-history-snapshot"')
"""What the first line of a Claude Code session carries, whatever its kind (``claude_code.sniff``): a message's
or a queued command's ``sessionId``, a summary's ``leafUuid``, a snapshot's type."""


def _claude_code_first(path: str, head: bytes) -> bool:
    """A ``.jsonl`` file somewhere under a ``projects`` folder, where Claude Code keeps its sessions, or a head
    with a key of Claude Code's lines: detection asks claude_code first, so a session imports neither codex nor
    responses (tried before it otherwise). The sniffers never overlap (``SPECIFIC_NAMES``), so the order changes
    no answer, and a file of another format that merely holds such a key only costs claude_code's import."""
    if path.endswith(".jsonl") and f"{os.sep}{PROJECTS_DIR}{os.sep}" in path:
        return True
    return any(key in head for key in CLAUDE_CODE_KEYS)


def get_format(name: str) -> Format:
    if name not in NAMES:
        raise UnknownFormat(Location(name), f"unknown format {name!r}", hint=f"known formats: {', '.join(NAMES)}")
    return _format(name)


def format_of(transcript: Transcript) -> Format | None:
    """The format whose loader gave ``transcript`` (None for a name no format owns)."""
    return next((f for f in map(_format, NAMES) if transcript.format in (f.name, *f.variants)), None)


def load(source: Input, *, fmt: str | None = None, skip_invalid: bool = False) -> tuple[Transcript, ...]:
    """Every transcript in one input (most files hold exactly one). A format
    forced with ``fmt`` must fit the input: when its sniffer refuses the first
    bytes and another specific format claims them, that is an error naming the line."""
    if not fmt:
        return detect(source).load(source, skip_invalid=skip_invalid)
    chosen = get_format(fmt)
    if _folder(source):
        if chosen.directory is None or not chosen.directory(Path(source.path)):
            found = directory_format(Path(source.path))
            raise UnknownFormat(
                Location(source.path),
                f"is a directory, not a {chosen.name} input" + (f" (it is {found.name} storage)" if found else ""),
                hint=f"leave out --from {chosen.name}" if found else "name the files in it",
            )
        return chosen.load(source, skip_invalid=skip_invalid)
    head = source.head()
    refuse_binary(source, head)
    if chosen.name != FALLBACK_NAME and head.strip() and not chosen.sniff(head):
        other = _claimed_by(head)
        if other is not None and other is not chosen:
            raise UnknownFormat(
                Location(source.path, _first_line(head)),
                f"not a {chosen.name} file: this is {other.description.split(' (')[0]} ({other.name})",
                hint=f"leave out --from {chosen.name} (detected: {other.name}), or pass --from {other.name}",
            )
    return chosen.load(source, skip_invalid=skip_invalid)


def _claimed_by(head: bytes) -> Format | None:
    """The specific format whose sniffer claims these first bytes, or None. (Plain messages, the fallback, are
    handed over by the specific loaders when forced, so they are not a mismatch.)"""
    return next((f for f in _specific() if f.sniff(head)), None)


def _first_line(head: bytes) -> int:
    """The 1-based number of the first line that is not blank."""
    for number, line in enumerate(head.split(b"\n"), start=1):
        if line.strip():
            return number
    return 1


def load_path(path: str | Path, *, fmt: str | None = None, skip_invalid: bool = False) -> tuple[Transcript, ...]:
    return load(Input(str(path)), fmt=fmt, skip_invalid=skip_invalid)


def _scanned(name: str) -> bool:
    """Whether a folder scan picks up a file of this name: the JSON suffixes, or a format's own names."""
    return Path(name).suffix in SUFFIXES or any(fnmatch(name, pattern) for pattern in SCAN_NAMES)


def _walk(root: Path) -> Iterator[Path]:
    """Transcript files under ``root``, and the folders a format reads as one input (not descended into)."""
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        kept = []
        for name in dirs:
            if directory_format(here / name) is not None:
                yield here / name
            else:
                kept.append(name)
        dirs[:] = kept
        yield from (here / name for name in files if _scanned(name) and (here / name).is_file())


def discover(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Files named, and transcript files found recursively in directories (sorted).
    A Claude Code ``<session>/subagents/`` file is left out when its session file
    is found too: loading the session loads it. A folder a format reads as one
    input (opencode storage, by its layout) is yielded itself, named or found."""
    for raw in paths:
        if str(raw) == "":
            # Path("") is Path("."): an empty name (an unset shell variable, say) would scan the current folder.
            raise NoTranscripts(Location("''"), "an empty file name names no transcript (use . for this folder)")
        path = Path(raw)
        if path.is_dir() and directory_format(path) is not None:
            yield path
        elif path.is_dir():
            found = sorted(_walk(path))
            if not found:
                raise NoTranscripts(Location(str(path)), "no transcript files (*.jsonl, *.json) in this directory")
            from .claude_code import session_of

            listed = set(found)
            yield from (p for p in found if session_of(p) == p or session_of(p) not in listed)
        else:
            yield path
