"""The window a transcript is checked against (issue 13): ``--window`` where given, else the context window the
shipped table of models (``prices.json``: each row's window with the page and day it was read) gives the model
the file records, else none. A longer window that needs a beta header (Claude Sonnet 4.5's 1M tokens) is never
taken: a transcript does not record the header, so the plain window is the one the model had, and the output
says how to pass the longer one."""

from __future__ import annotations

from functools import cache

from ._frozen import frozen
from .formats.base import Input
from .formats.claude_code import assistant_messages_from_end
from .pricing import BetaWindow, PriceTable, default_table, recorded_model
from .transcript import Transcript

TAIL_CHUNK = 1 << 16
"""How much of a Claude Code file ``last_reply_model`` reads at a time, from its end."""


@frozen
class WindowChoice:
    """The window one transcript is checked against, and where it came from."""

    tokens: int | None
    """None: no ``--window`` and no window in the table for the recorded model (nothing is over a window)."""
    model: str | None = None
    """The model whose row gave ``tokens``; None when ``--window`` gave it, or when there is none."""
    beta: BetaWindow | None = None
    """The model's longer window behind a beta header, where the table gives one (not used: see the module)."""

    def words(self) -> str:
        """Where the window came from, after its number in a sentence: `` from the model claude-sonnet-4-5``
        (and the longer window behind a beta header), or nothing when ``--window`` gave it."""
        if self.model is None:
            return ""
        beta = self.beta
        longer = f" ({beta.tokens:,} with the {beta.header} beta header: pass --window)" if beta is not None else ""
        return f" from the model {self.model}{longer}"


@cache
def _shipped() -> PriceTable:
    return default_table()


def window_for(given: int | None, model: str | None, table: PriceTable | None = None) -> WindowChoice:
    """``given`` (``--window``) if not None, else the table's window of ``model`` (a dated snapshot of a row's id
    matches it, as for prices), else no window."""
    if given is not None:
        return WindowChoice(given)
    row = (table or _shipped()).row(model) if model else None
    if row is None or row.window is None:
        return WindowChoice(None)
    return WindowChoice(row.window.tokens, row.model, row.window.beta)


def window_of(given: int | None, transcript: Transcript) -> WindowChoice:
    """``window_for`` the model ``transcript`` records (its request-level ``model``)."""
    return window_for(given, None if given is not None else recorded_model(transcript.extra))


def last_reply_model(source: Input) -> str | None:
    """The model the last assistant line of a Claude Code file records (not one of Claude Code's own, such as
    ``<synthetic>``), read from the file's end: the model ``claude_code.load`` gives a file of one transcript
    whose replies are all on its chain (the fold's one pass; tests/test_windows.py compares the two on the
    corpus). None when no line records one, or the file cannot be read."""
    try:
        if source.data is not None:
            return _model_in(source.data)
        with source.open() as f:
            end = f.seek(0, 2)
            tail = b""
            while end > 0:
                start = max(0, end - TAIL_CHUNK)
                f.seek(start)
                tail = f.read(end - start) + tail
                end = start
                cut = tail.find(b"\n") if start > 0 else -1  # before it, a line cut in two: read with the next chunk
                found = _model_in(tail[cut + 1 :])
                if found is not None:
                    return found
                tail = tail[: cut + 1] if cut >= 0 else b""
            return None
    except OSError:
        return None


def _model_in(data: bytes) -> str | None:
    """The model of the last assistant line of ``data`` (whole lines) that records a real one."""
    for message in assistant_messages_from_end(data, b'"model"'):
        model = message.get("model")
        if type(model) is str and model and not model.startswith("<"):
            return model
    return None
