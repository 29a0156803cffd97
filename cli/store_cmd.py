"""``windowfit fetch`` (one page of a cleared result, by handle) and
``windowfit store`` (list a store's entries, drop old ones)."""

from __future__ import annotations

import re
import sys
import time
from datetime import datetime, timezone
from typing import Annotated

import typer
from rich.text import Text

from windowfit.fitting import WindowfitError
from windowfit.fitting.errors import OptionError
from windowfit.fitting.serialize import page_document, store_document
from windowfit.fitting.store import Entry, ResultStore, open_store

from .options import JsonFlag
from .shared import err, fail, out, print_json
from .tables import WholeTable
from .terminal import markup_safe

StoreTarget = Annotated[
    str,
    typer.Option(
        "--store",
        "-s",
        help="The result store: a SQLite file, or a postgresql:// URL (the postgres extra).",
        show_default=False,
    ),
]

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> float:
    """``7d``, ``12h``, ``30m``, ``45s``, ``2w``: seconds."""
    match = _DURATION.match(text)
    if not match:
        raise OptionError(f"--older-than takes a duration like 7d, 12h, 30m, 45s or 2w, not {text!r}")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def opened(target: str, *, create: bool) -> ResultStore:
    """The store, or a one-line error and exit 3 (not a store) / 4 (cannot be used)."""
    try:
        return open_store(target, create=create)
    except WindowfitError as exc:
        fail(exc)


def fetch_command(
    handle: Annotated[str, typer.Argument(help="The handle a stub names (wf-...).", show_default=False)],
    store: StoreTarget,
    page: Annotated[int, typer.Option("--page", "-p", min=1, help="Which page (1 is the first).")] = 1,
    json_: JsonFlag = False,
) -> None:
    """Print one page of a cleared tool result, by the handle its stub names.

    The page's text goes to stdout as it was stored (through a pipe, byte for byte); where it is
    from and how many pages there are goes to stderr.

    Example: windowfit fetch wf-0123456789abcdef0123456789abcdef --store results.db --page 2
    """
    with opened(store, create=False) as kept:
        try:
            found = kept.page(handle.strip(), page)
        except WindowfitError as exc:
            fail(exc)
    if json_:
        print_json(page_document(found))
        return
    err.print(
        f"[dim]{markup_safe(found.handle)} page {found.page} of {found.pages} · {markup_safe(found.tool or 'a tool')} "
        f"call {markup_safe(found.call_id)} · {found.tokens:,} tokens[/]"
    )
    if sys.stdout.isatty():  # a terminal: control characters made visible
        out.print(Text(found.text), end="" if found.text.endswith("\n") else "\n", soft_wrap=True)
    else:
        # A lone surrogate (read from a JSON escape) has no UTF-8 form: it goes out as the escape it came as.
        sys.stdout.flush()
        sys.stdout.buffer.write(found.text.encode("utf-8", "backslashreplace"))
        sys.stdout.buffer.flush()


def _when(created: float) -> str:
    return datetime.fromtimestamp(created, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _table(entries: tuple[Entry, ...]) -> WholeTable:
    # Handles and times are copied whole; on a narrow terminal the source, then the time, then the call id go.
    table = WholeTable(title=None, show_edge=False, decorative=("source", "stored (UTC)", "call id"))
    for col in ("handle", "tool", "call id", "tokens", "pages", "stored (UTC)", "source"):
        table.add_column(
            col,
            justify="right" if col in ("tokens", "pages") else "left",
            no_wrap=col in ("handle", "stored (UTC)"),
        )
    for e in entries:
        table.add_row(
            e.handle,
            markup_safe(e.tool),
            markup_safe(e.call_id),
            f"{e.tokens:,}",
            f"{e.pages:,}",
            _when(e.created),
            markup_safe(e.source),
        )
    return table


def store_command(
    path: Annotated[str, typer.Argument(help="The store: a SQLite file, or a postgresql:// URL.", show_default=False)],
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            help="First drop the entries no fit has stored for this long: 7d, 12h, 30m, 45s, 2w.",
            show_default=False,
        ),
    ] = None,
    json_: JsonFlag = False,
) -> None:
    """List the cleared results a store keeps, with their totals; drop old ones with --older-than.

    Example: windowfit store results.db --older-than 7d
    """
    try:
        cutoff = time.time() - parse_duration(older_than) if older_than is not None else None
    except WindowfitError as exc:
        fail(exc)
    with opened(path, create=False) as kept:
        try:
            dropped = kept.drop_older_than(cutoff) if cutoff is not None else None
            entries = kept.entries()
        except WindowfitError as exc:
            fail(exc)
        target = kept.target
    if json_:
        print_json(store_document(target, entries, dropped=dropped))
        return
    if dropped is not None:
        out.print(
            f"dropped {dropped:,} entr{'y' if dropped == 1 else 'ies'} older than {markup_safe(older_than or '')}"
        )
    if entries:
        out.print(_table(entries))
    document = store_document(target, entries)
    out.print(
        f"{markup_safe(target)}: {document['count']:,} entr{'y' if document['count'] == 1 else 'ies'}, "
        f"{document['tokens']:,} tokens in {document['pages']:,} pages ({document['chars']:,} characters)",
        soft_wrap=True,
    )
