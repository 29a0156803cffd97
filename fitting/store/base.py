"""The result store's protocol and values (SPEC section 5: eviction is safe
only when what was removed can be fetched again).

A store keeps cleared tool results by *handle*: ``wf-`` and 32 hex digits of a
SHA-256 over the result's tool, call id, text and original JSON. The handle
is a pure function of the content, so the same result always gets the same
handle, on any machine, in any run, and a stub naming it stays byte-stable
(the provider's prompt cache depends on that). Each entry is split into pages
of a bounded estimated size, cut at line breaks where possible, so an agent
reads a large result a page at a time.

Backends (``sqlite``, ``postgres``) implement ``ResultStore``; every one of
them behaves the same: ``put_many`` is idempotent by handle and atomic (a
reader never sees half an entry), ``page`` and ``entry`` raise
``UnknownHandle`` / ``PageOutOfRange``, and a store that is locked, read-only
or unreachable raises ``StoreUnavailable``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from types import TracebackType
from typing import Protocol, runtime_checkable

from .._frozen import frozen
from ..errors import OptionError
from ..estimate import SEED, ZERO, Estimator

PAGE_TOKENS = 2000
"""The default page size, in estimated tokens (of the page's text alone)."""

PAGING = Estimator(SEED)
"""The estimator pages are cut under by default: always the seed rule, whatever
the fit's estimator, so a result is paged the same way by every fit (its stub
names its page count, and the handle does not depend on the estimator)."""

HANDLE_PREFIX = "wf-"
HANDLE_HEX = 32
"""Hex digits after the prefix: 128 bits of the SHA-256, ample against collisions."""


def handle_for(tool: str, call_id: str, text: str, raw: str | None = None) -> str:
    """The handle of a result: ``wf-`` and hex of a SHA-256 over a canonical
    encoding of its tool, call id, text and (when given) original JSON. The
    encoding is a JSON array with sorted nothing and no spaces, so it is the
    same bytes on every machine and Python version."""
    parts: list[str] = [tool, call_id, text] if raw is None else [tool, call_id, text, raw]
    import hashlib  # here, not at import: OpenSSL's start is a few ms of every command's, most never hash

    canonical = json.dumps(parts, ensure_ascii=True, separators=(",", ":"))
    return HANDLE_PREFIX + hashlib.sha256(canonical.encode("ascii")).hexdigest()[:HANDLE_HEX]


def is_handle(text: str) -> bool:
    """Whether ``text`` has a handle's shape (it may still be unknown to a store)."""
    digits = text[len(HANDLE_PREFIX) :]
    return text.startswith(HANDLE_PREFIX) and len(digits) == HANDLE_HEX and all(c in "0123456789abcdef" for c in digits)


def text_tokens(text: str, estimator: Estimator) -> int:
    """The estimated tokens of ``text`` alone (no block or message overhead)."""
    rule = estimator.rule
    return rule.text_tokens(rule.count(text))


def _cut_long(text: str, tokens_of: _TokensOf, bound: int) -> int:
    """The length of the longest prefix of ``text`` within ``bound`` tokens, at
    least 1 (a page always holds one character, even one that costs more)."""
    lo, hi = 1, 1
    # Grow the window until it overflows (or covers the text), then bisect.
    while hi < len(text) and tokens_of(text[:hi]) <= bound:
        lo, hi = hi, min(len(text), hi * 2)
    if tokens_of(text[:hi]) <= bound:
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if tokens_of(text[:mid]) <= bound:
            lo = mid
        else:
            hi = mid
    return lo


class _TokensOf(Protocol):
    def __call__(self, text: str, /) -> int: ...


def split_pages(text: str, estimator: Estimator, page_tokens: int = PAGE_TOKENS) -> tuple[str, ...]:
    """``text`` in pages of at most ``page_tokens`` estimated tokens each, cut
    after a line break where possible; a line longer than a page is cut inside
    it. The pages concatenate to ``text`` exactly. An empty text is one empty
    page (an entry always has page 1). A page holds at least one character,
    so only a character estimated above ``page_tokens`` on its own can exceed
    the bound."""
    if page_tokens < 1:
        raise OptionError(f"a page must hold at least 1 token, not {page_tokens}")
    if not text:
        return ("",)

    rule = estimator.rule

    def tokens_of(part: str) -> int:
        return rule.text_tokens(rule.count(part))

    if tokens_of(text) <= page_tokens:
        return (text,)
    # Characters are counted per class, so counts add: a page's count is the
    # sum of its lines' counts, and each line is counted once.
    pages: list[str] = []
    lines = text.splitlines(keepends=True)
    current: list[str] = []
    counts = ZERO
    i = 0
    while i < len(lines):
        line = lines[i]
        line_counts = rule.count(line)
        if current:
            if rule.text_tokens(counts + line_counts) <= page_tokens:
                current.append(line)
                counts = counts + line_counts
                i += 1
                continue
            pages.append("".join(current))
            current, counts = [], ZERO
        if rule.text_tokens(line_counts) <= page_tokens:
            current, counts = [line], line_counts
            i += 1
            continue
        # One line longer than a page: cut it, keep the rest for the next page.
        cut = _cut_long(line, tokens_of, page_tokens)
        pages.append(line[:cut])
        if cut < len(line):
            lines[i] = line[cut:]
        else:
            i += 1
    if current:
        pages.append("".join(current))
    return tuple(pages)


@frozen
class StoredResult:
    """What is put into a store: one cleared result, already paged.

    ``text`` is what the model read (the result's text blocks joined); ``raw``
    is the original result content as JSON, exactly as read, so a harness can
    restore the very block it sent (``None`` when the text is the whole of it,
    as for a text observation). Build one with ``stored_result``."""

    tool: str
    call_id: str
    text: str
    raw: str | None
    source: str
    """The transcript the result came from (a path or a name), for ``windowfit store``."""
    tokens: int
    """The result's estimate as fit counted it (the stub says "about N tokens")."""
    pages: tuple[str, ...]
    page_tokens: tuple[int, ...]

    @property
    def handle(self) -> str:
        return handle_for(self.tool, self.call_id, self.text, self.raw)

    @property
    def chars(self) -> int:
        return len(self.text)


def stored_result(
    tool: str,
    call_id: str,
    text: str,
    *,
    estimator: Estimator | None = None,
    raw: str | None = None,
    source: str = "",
    tokens: int | None = None,
    page_tokens: int = PAGE_TOKENS,
) -> StoredResult:
    """A ``StoredResult`` with its pages cut and counted under ``estimator``
    (default ``PAGING``, the seed rule); ``tokens`` defaults to the text's own estimate."""
    paging = estimator or PAGING
    pages = split_pages(text, paging, page_tokens)
    counted = tuple(text_tokens(p, paging) for p in pages)
    total = text_tokens(text, paging) if tokens is None else tokens
    return StoredResult(tool, call_id, text, raw, source, total, pages, counted)


@frozen
class Entry:
    """One stored result, without its text."""

    handle: str
    tool: str
    call_id: str
    tokens: int
    pages: int
    chars: int
    source: str
    created: float
    """Unix seconds of the latest put of this handle (so ``drop_older_than``
    drops what no fit has cleared lately)."""


@frozen
class Page:
    """One page of a stored result: what ``windowfit fetch`` and the fetch tool return."""

    handle: str
    page: int
    """1-based."""
    pages: int
    text: str
    tool: str
    call_id: str
    tokens: int
    """This page's estimated tokens."""


@runtime_checkable
class ResultStore(Protocol):
    """A place cleared results are kept and fetched back by handle."""

    @property
    def target(self) -> str:
        """Where the store is (a path, or a URL without its password), for messages."""
        ...

    def put_many(self, items: Iterable[StoredResult]) -> tuple[Entry, ...]:
        """Store every item in one transaction; an item whose handle is stored
        already keeps its content and has its ``created`` time refreshed (and,
        if it arrives cut into different pages, as under another page size,
        its pages are replaced: the newest stub names the right page count).
        Returns each item's entry, in order."""
        ...

    def entry(self, handle: str) -> Entry:
        """The entry with this handle; ``UnknownHandle`` if none."""
        ...

    def page(self, handle: str, number: int) -> Page:
        """Page ``number`` (1-based) of the entry; ``UnknownHandle``, ``PageOutOfRange``."""
        ...

    def raw(self, handle: str) -> str | None:
        """The original result content as JSON, exactly as read (``None`` when
        the text was the whole of it); ``UnknownHandle`` if none."""
        ...

    def entries(self) -> tuple[Entry, ...]:
        """Every entry, oldest first (entries put together: in the order they were put)."""
        ...

    def drop_older_than(self, timestamp: float) -> int:
        """Remove entries whose ``created`` is before ``timestamp``; how many were removed."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> ResultStore: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


def full_text(store: ResultStore, handle: str) -> str:
    """Every page of an entry, joined: the exact text that was stored."""
    first = store.page(handle, 1)
    return first.text + "".join(store.page(handle, n).text for n in range(2, first.pages + 1))
