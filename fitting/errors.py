"""The domain's errors: one small tree, each carrying where the problem is."""

from __future__ import annotations

from ._frozen import frozen


class WindowfitError(Exception):
    """Base of every error windowfit raises on purpose."""

    hint: str = ""


@frozen
class Location:
    """Where in an input something is: file, 1-based line and column, message index."""

    path: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        text = self.path
        if self.line is not None:
            text += f":{self.line}"
            if self.column is not None:
                text += f":{self.column}"
        return text


class InputError(WindowfitError):
    """The input cannot be read as a transcript."""

    def __init__(self, location: Location, message: str, hint: str = "") -> None:
        super().__init__(f"{location}: {message}")
        self.location = location
        self.message = message
        self.hint = hint


class InvalidJson(InputError):
    """A line (or the whole file) is not valid JSON."""


class InvalidUtf8(InputError):
    """The bytes are not UTF-8."""


class EmptyTranscript(InputError):
    """The file holds no messages."""


class UnknownShape(InputError):
    """A JSON value is not a message (or request) windowfit knows."""


class NoTranscripts(InputError):
    """A directory holds no transcript files."""


class UnknownFormat(InputError):
    """The file's format could not be detected, or the requested one does not exist."""


class UnsendableRequest(InputError):
    """The request made from the input is one no provider accepts (for example, no messages)."""


class FileChanged(InputError):
    """A file changed while windowfit read it in two passes (``fit`` on columns reads a messages file again to
    write the messages it keeps): what the first pass planned on is no longer what the file holds."""


class OptionError(WindowfitError):
    """An option value makes no sense (for example a negative budget)."""


class TokenizerError(OptionError):
    """A tokenizer named with ``--tokenizer`` cannot be loaded: unknown name, unreadable file."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


class TokenizerUnavailable(TokenizerError):
    """A tokenizer's optional package (an extra of windowfit) is not installed."""


class Unsuggestable(WindowfitError):
    """No per-class constants can cover the samples (none given, or one needs tokens but has no characters)."""


class StoreError(WindowfitError):
    """A result store cannot do what was asked (the ``fitting.store`` package)."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UnknownHandle(StoreError):
    """No entry in the store has this handle (never stored, or dropped since)."""


class PageOutOfRange(StoreError):
    """The entry exists but has no page with this number (pages count from 1)."""


class NotAStore(StoreError):
    """The file or database named is not a windowfit result store (or is a newer one than this version reads)."""


class StoreUnavailable(StoreError):
    """The store exists but cannot be used now: locked, read-only, unreachable, or its backend is not installed."""
