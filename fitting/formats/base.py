"""What a file format is (``Format``: a name, a sniffer, a loader and, for
formats that are requests, a writer) and the input a loader reads (``Input``:
a file, or stdin's bytes)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Protocol

from .._frozen import frozen
from ..transcript import Transcript

SNIFF_BYTES = 65536


@frozen
class Input:
    """A file on disk, or bytes already read (stdin); ``path`` names it in errors."""

    path: str
    data: bytes | None = None
    keep_text: bool = True
    """Whether the loader keeps each message's JSON text (and its tool inputs' spelling) for a writer, SPEC
    section 6, invariant 9. Commands that never write a transcript (report, check, audit, replay) pass False
    and hold only the parsed model: the text is as large as the file."""

    def open(self) -> BinaryIO:
        return io.BytesIO(self.data) if self.data is not None else open(self.path, "rb")

    def head(self, size: int = SNIFF_BYTES) -> bytes:
        """The first bytes, without a UTF-8 byte order mark."""
        if self.data is not None:
            head = self.data[:size]
        else:
            with open(self.path, "rb") as f:
                head = f.read(size)
        return head[3:] if head.startswith(b"\xef\xbb\xbf") else head

    def read_all(self) -> bytes:
        return self.data if self.data is not None else Path(self.path).read_bytes()

    def lines(self) -> Iterator[bytes]:
        with self.open() as f:
            yield from f

    def is_document(self) -> bool:
        """True if the input is one JSON document rather than JSON Lines: its
        first non-blank line is not a complete JSON value on its own."""
        import orjson

        from .._json import loads_or_lenient

        with self.open() as f:
            for number, line in enumerate(f):
                if number == 0 and line.startswith(b"\xef\xbb\xbf"):
                    line = line[3:]
                if not line.strip():
                    continue
                if line.lstrip().startswith(b"//"):
                    return False
                try:
                    value = loads_or_lenient(line)
                except orjson.JSONDecodeError:
                    # A document spread over lines, or JSON Lines whose first line is broken:
                    # in the second case the next non-blank line is a whole value. A broken
                    # first line opening an array is a document (a message line is an object).
                    if line.lstrip().startswith(b"["):
                        return True
                    if line.strip().startswith(b"{") and line.strip().endswith(b"}"):
                        return False  # shaped like a whole object: a broken JSON Lines line
                    for nxt in f:
                        if nxt.strip():
                            try:
                                return not isinstance(loads_or_lenient(nxt), dict)
                            except orjson.JSONDecodeError:
                                return True
                    return True
                if f.read(4096).strip():
                    return False
                return isinstance(value, list) or (isinstance(value, dict) and "role" not in value)
        return False


@frozen
class SkippedFile:
    """A file a folder scan passed over: not a transcript, or not one windowfit reads."""

    path: str
    reason: str
    """Why, in words (the error it would have been on its own, without the path)."""


class Sniffer(Protocol):
    """Whether an input's first bytes (at most ``SNIFF_BYTES``, without a byte
    order mark, possibly cut mid-line) are in this format. Must be cheap, must
    not raise, and must refuse what another format's sniffer accepts."""

    def __call__(self, head: bytes, /) -> bool: ...


class DirectorySniffer(Protocol):
    """Whether a folder is one input of this format, by its layout (a format stored as a folder of files, as
    opencode's storage is). Must not raise; ordinary folders are never claimed."""

    def __call__(self, path: Path, /) -> bool: ...


class Loader(Protocol):
    """Every transcript in one input (most files hold one). Raises the located
    ``InputError`` subclasses of ``errors``; with ``skip_invalid`` it records
    unreadable lines or items in ``Transcript.skipped`` instead."""

    def __call__(self, source: Input, *, skip_invalid: bool) -> tuple[Transcript, ...]: ...


class Writer(Protocol):
    """A (fitted) transcript written back in its own format: the bytes of
    ``windowfit fit --to same``."""

    def __call__(self, transcript: Transcript, /) -> bytes: ...


@frozen
class Format:
    """A transcript file format: how to recognise it, how to load it, and
    whether (and how) a fitted transcript is written back in it."""

    name: str
    """What ``--from`` takes, and the ``Transcript.format`` its loader gives."""
    description: str
    sniff: Sniffer
    load: Loader
    write: Writer | None = None
    """``--to same``: None for logs (a session, a rollout, a capture), which are not requests."""
    variants: tuple[str, ...] = ()
    """Other ``Transcript.format`` values its loader gives (``messages``: ``request``, a request body)."""
    directory: DirectorySniffer | None = None
    """For formats stored as a folder: recognises such a folder, which is then one input (never scanned file by
    file); ``load`` gets the folder's path."""
    scan_names: tuple[str, ...] = ()
    """Name patterns (``fnmatch``) a folder scan picks up for this format beyond the JSON suffixes every scan
    takes (aider's ``*.chat.history.md``)."""
    records_requests: bool = False
    """True for request logs (claude-trace, proxy captures, aider's LLM history): each transcript the loader gives
    is one request as it was sent, so ``replay`` replays the recorded requests of a conversation, not one per
    assistant reply."""
    records_system: bool = True
    """False for logs of harnesses that send a system prompt and tool definitions but do not record them
    (Claude Code, Codex): there, no system prompt in the file does not mean none was sent."""

    @property
    def writes_back(self) -> bool:
        """Whether ``--to same`` can write a transcript read in this format."""
        return self.write is not None
