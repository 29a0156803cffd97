"""Where cleared results are kept so the agent can fetch them again (SPEC section 5).

``open_store(target)`` opens a store: a ``postgresql://`` (or ``postgres://``)
URL opens the PostgreSQL backend (the ``postgres`` extra), anything else is
the path of a SQLite file, created on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .._lazy import lazy_package
from ..errors import StoreUnavailable

if TYPE_CHECKING:
    from .base import (
        HANDLE_PREFIX,
        PAGE_TOKENS,
        Entry,
        Page,
        ResultStore,
        StoredResult,
        full_text,
        handle_for,
        is_handle,
        split_pages,
        stored_result,
        text_tokens,
    )
    from .content import block_handle, result_raw, result_text, stored_block
    from .offload import Offloaded, offload
    from .sqlite import SqliteStore
    from .tool import ANTHROPIC_TOOL, OPENAI_TOOL, RESPONSES_TOOL, TOOL_NAME, handle_tool_call

lazy_package(
    __name__,
    {
        "HANDLE_PREFIX": "base",
        "PAGE_TOKENS": "base",
        "Entry": "base",
        "Page": "base",
        "ResultStore": "base",
        "StoredResult": "base",
        "full_text": "base",
        "handle_for": "base",
        "is_handle": "base",
        "split_pages": "base",
        "stored_result": "base",
        "text_tokens": "base",
        "block_handle": "content",
        "result_raw": "content",
        "result_text": "content",
        "stored_block": "content",
        "Offloaded": "offload",
        "offload": "offload",
        "SqliteStore": "sqlite",
        "ANTHROPIC_TOOL": "tool",
        "OPENAI_TOOL": "tool",
        "RESPONSES_TOOL": "tool",
        "TOOL_NAME": "tool",
        "handle_tool_call": "tool",
    },
)

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(target: str) -> bool:
    return target.startswith(POSTGRES_SCHEMES)


def open_store(target: str, *, create: bool = True) -> ResultStore:
    """The store at ``target``. ``create=False`` refuses to make a new one
    (``NotAStore``): reading commands use it, so a mistyped path is an error
    rather than an empty store."""
    if is_postgres_url(target):
        try:
            module = importlib.import_module(f"{__name__}.postgres")
        except ImportError as error:
            raise StoreUnavailable(
                f"a PostgreSQL store needs the postgres extra ({error})",
                "install windowfit's postgres extra from its checkout: pip install '.[postgres]'",
            ) from error
        opened: ResultStore = module.open_postgres(target, create=create)
        return opened
    from .sqlite import SqliteStore

    return SqliteStore(target, create=create)


__all__ = [
    "ANTHROPIC_TOOL",
    "HANDLE_PREFIX",
    "OPENAI_TOOL",
    "PAGE_TOKENS",
    "POSTGRES_SCHEMES",
    "RESPONSES_TOOL",
    "TOOL_NAME",
    "Entry",
    "Offloaded",
    "Page",
    "ResultStore",
    "SqliteStore",
    "StoredResult",
    "block_handle",
    "full_text",
    "handle_for",
    "handle_tool_call",
    "is_handle",
    "is_postgres_url",
    "offload",
    "open_store",
    "result_raw",
    "result_text",
    "split_pages",
    "stored_block",
    "stored_result",
    "text_tokens",
]
