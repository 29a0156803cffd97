"""What of a cleared block goes into the store: the text the model read, and
the block's JSON, so the exact original can be restored."""

from __future__ import annotations

from .._json import dumps
from ..estimate import Estimator
from ..transcript import Block, Image, Other, Text, Thinking, ToolCall, ToolResult
from ..wire.anthropic import block_to_json
from .base import PAGE_TOKENS, PAGING, StoredResult, handle_for, split_pages, stored_result


def _block_text(block: Block) -> str:
    if isinstance(block, (Text, Thinking)):
        return block.text
    if isinstance(block, ToolResult):
        return "\n".join(_block_text(b) for b in block.content)
    if isinstance(block, Image):
        size = f", {block.width}x{block.height}" if block.width and block.height else ""
        return f"[image {block.media_type}{size}, {block.byte_size:,} bytes: see the raw JSON]"
    if isinstance(block, ToolCall):
        return block.input_json
    assert isinstance(block, Other)
    return block.counted or block.raw


def result_text(block: ToolResult | Text) -> str:
    """The text a cleared result held, as the model read it: a text observation's
    text, or a tool result's text blocks joined by line breaks (an image is a
    one-line placeholder; its data is in ``result_raw``)."""
    return _block_text(block)


def result_raw(block: ToolResult | Text) -> str | None:
    """The block as compact JSON (Anthropic's shape, the neutral model's own),
    or ``None`` when the text is all of it: a plain text observation, or a
    tool result of one plain text block that is not an error."""
    if isinstance(block, Text):
        return dumps(block_to_json(block)) if block.extra else None
    if len(block.content) == 1 and not block.extra and not block.is_error and not block.name:
        only = block.content[0]
        if isinstance(only, Text) and not only.extra:
            return None
    return dumps(block_to_json(block))


def block_handle(block: ToolResult | Text, tool: str, call_id: str) -> str:
    """The handle ``stored_block`` stores ``block`` under."""
    return handle_for(tool, call_id, result_text(block), result_raw(block))


def block_pages(block: ToolResult | Text, page_tokens: int = PAGE_TOKENS) -> int:
    """How many pages ``stored_block`` cuts ``block`` into."""
    return len(split_pages(result_text(block), PAGING, page_tokens))


def stored_block(
    block: ToolResult | Text,
    *,
    tool: str,
    call_id: str,
    tokens: int,
    source: str = "",
    page_tokens: int = PAGE_TOKENS,
    estimator: Estimator | None = None,
) -> StoredResult:
    """The ``StoredResult`` of one cleared block: its text, paged, and its JSON."""
    return stored_result(
        tool,
        call_id,
        result_text(block),
        raw=result_raw(block),
        source=source,
        tokens=tokens,
        page_tokens=page_tokens,
        estimator=estimator,
    )
