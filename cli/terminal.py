"""A terminal that cannot be hijacked: text from transcripts and file names is
shown with its control characters made visible.

A tool name, a call id or a file name can carry escape sequences (retitle the
terminal, clear the screen, move the cursor) or bidi overrides (show text in
another order than it reads). ``visible`` turns each such character into its
Python escape (``\\x1b``, ``\\u202e``); ``SafeConsole`` applies it to every
piece of text it writes, so nothing a transcript holds reaches the terminal
raw, whichever renderable carried it. Rich's own control codes (colours, the
progress bar's cursor moves) are separate segments and pass unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.console import Console
from rich.markup import escape
from rich.segment import Segment

_UNSAFE = re.compile(
    "["
    "\x00-\x08\x0b-\x1f\x7f"  # C0 controls but tab and newline, and DEL
    "\x80-\x9f"  # C1 controls (a lone 0x9b is a CSI on some terminals)
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidi marks, embeddings, overrides and isolates
    "\u2028\u2029"  # line and paragraph separators
    "\ud800-\udfff"  # lone surrogates (read from a \\ud800 escape): no terminal encoding can write them
    "]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with control characters, escape sequences and bidi controls
    shown as escapes; everything else (any script, emoji, newlines, tabs) unchanged."""
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text


class SafeConsole(Console):
    """A rich ``Console`` that never writes a control character it did not make itself."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment
            if segment.control or not _UNSAFE.search(segment.text)
            else segment._replace(text=visible(segment.text))
            for segment in buffer
        )


def markup_safe(text: str) -> str:
    """``text`` ready for rich markup: control characters visible, brackets not read as markup."""
    return escape(visible(text))
