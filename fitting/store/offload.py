"""The data-tool boundary (SPEC section 5): a data tool's output goes to the
store whole, and the context gets a handle, the size and a bounded first page."""

from __future__ import annotations

from .._frozen import frozen
from ..estimate import Estimator
from .base import PAGE_TOKENS, ResultStore, stored_result


@frozen
class Offloaded:
    """What a harness puts in the context instead of a data tool's whole output."""

    handle: str
    tokens: int
    """The whole output's estimate."""
    pages: int
    first_page: str

    @property
    def context_text(self) -> str:
        """The first page, then a line saying how big the whole is and how to read on
        (the whole output when it is one page: nothing to fetch)."""
        if self.pages == 1:
            return self.first_page
        return (
            f"{self.first_page}\n[windowfit] This is page 1 of {self.pages} of this output (about {self.tokens:,} "
            f"tokens in all), kept as {self.handle}: call the windowfit_fetch tool with this handle and a page "
            f"from 2 to {self.pages} to read on, or with search to find lines."
        )


def offload(
    text: str,
    store: ResultStore,
    *,
    tool: str,
    call_id: str,
    source: str = "",
    page_tokens: int = PAGE_TOKENS,
    estimator: Estimator | None = None,
) -> Offloaded:
    """Put a data tool's whole output in ``store`` and return its handle, size and
    first page (at most ``page_tokens`` estimated tokens, cut at a line break where
    possible). The same output of the same call always gets the same handle."""
    item = stored_result(tool, call_id, text, estimator=estimator, source=source, page_tokens=page_tokens)
    (entry,) = store.put_many([item])
    return Offloaded(entry.handle, item.tokens, len(item.pages), item.pages[0])
