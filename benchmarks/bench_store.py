"""The result store: putting 100,000 cleared results and fetching random pages, on SQLite as a ratio to bare
``sqlite3`` inserts and selects of the same rows, and on PostgreSQL as a ratio to bare ``psycopg``.

Run ``python benchmarks/bench_store.py`` (``--quick`` for 10,000 results). PostgreSQL is measured when
``--postgres URL`` or ``WINDOWFIT_TEST_POSTGRES`` names a server (``.ci/postgres.sh start DIR`` starts a throwaway
one); each run uses a fresh schema there and drops it afterwards.

The results are generated (code and Russian prose, 200 to 12,000 characters, so some span several pages) and paged
before any clock starts. Both sides put them in batches of ``--batch`` (one fit clearing that many), one transaction
per batch, into the same two tables (entries, pages); the bare side is a plain ``INSERT`` of each row, ours is
``ResultStore.put_many`` (an upsert by handle that checks the pages already stored). Fetching is ``store.page``
against a bare ``SELECT`` by primary key, for the same random (handle, page) pairs.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from common import best_of
from rich.console import Console
from rich.table import Table

from sample_transcripts import prose
from windowfit.fitting.store import ResultStore, StoredResult, open_store, stored_result

POSTGRES_ENV = "WINDOWFIT_TEST_POSTGRES"


def results(n: int, seed: int = 7) -> list[StoredResult]:
    rng = random.Random(seed)
    makers: tuple[Callable[[random.Random, int], str], ...] = (prose.python_module, prose.russian_prose)
    pool = [make(rng, rng.choice((200, 800, 2000, 5000, 12000))) for make in makers for _ in range(60)]
    return [
        stored_result("Read", f"toolu_{i:08d}", f"read {i}\n{rng.choice(pool)}", source="bench.jsonl") for i in range(n)
    ]


def batches(items: Sequence[StoredResult], size: int) -> Iterator[Sequence[StoredResult]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def entry_row(item: StoredResult, now: float) -> tuple[object, ...]:
    return (item.handle, item.tool, item.call_id, item.tokens, len(item.pages), item.chars, item.source, now, item.raw)


def page_rows(item: StoredResult) -> list[tuple[object, ...]]:
    pages = zip(item.pages, item.page_tokens, strict=True)
    return [(item.handle, n, text, tokens) for n, (text, tokens) in enumerate(pages, 1)]


# The bare baselines: the same two tables, plain inserts and primary-key selects.

BARE_SQLITE = (
    "CREATE TABLE entries (handle TEXT PRIMARY KEY, tool TEXT, call_id TEXT, tokens INTEGER, pages INTEGER,"
    " chars INTEGER, source TEXT, created REAL, raw TEXT)",
    "CREATE TABLE pages (handle TEXT, page INTEGER, text TEXT, tokens INTEGER, PRIMARY KEY (handle, page))"
    " WITHOUT ROWID",
)


def bare_sqlite_put(path: str, items: Sequence[StoredResult], batch: int) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    for statement in BARE_SQLITE:
        db.execute(statement)
    for group in batches(items, batch):
        now = time.time()
        db.execute("BEGIN IMMEDIATE")
        db.executemany("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", [entry_row(i, now) for i in group])
        db.executemany("INSERT INTO pages VALUES (?, ?, ?, ?)", [row for i in group for row in page_rows(i)])
        db.execute("COMMIT")
    return db


def bare_sqlite_fetch(db: sqlite3.Connection, picks: Sequence[tuple[str, int]]) -> int:
    total = 0
    for handle, page in picks:
        (text,) = db.execute("SELECT text FROM pages WHERE handle = ? AND page = ?", (handle, page)).fetchone()
        total += len(text)
    return total


BARE_POSTGRES = (
    "CREATE TABLE entries (handle TEXT PRIMARY KEY, tool BYTEA, call_id BYTEA, tokens INTEGER, pages INTEGER,"
    " chars INTEGER, source BYTEA, created DOUBLE PRECISION, raw BYTEA)",
    "CREATE TABLE pages (handle TEXT, page INTEGER, text BYTEA, tokens INTEGER, PRIMARY KEY (handle, page))",
)


def _utf8(row: tuple[object, ...]) -> tuple[object, ...]:
    # The same column types as the backend's (BYTEA, so a NUL survives), so both sides send the same bytes.
    return tuple(v.encode() if isinstance(v, str) and k != 0 else v for k, v in enumerate(row))


def bare_postgres_put(url: str, items: Sequence[StoredResult], batch: int) -> Any:
    import psycopg

    db = psycopg.connect(url, autocommit=True)
    for statement in BARE_POSTGRES:
        db.execute(statement)
    for group in batches(items, batch):
        now = time.time()
        with db.transaction(), db.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO entries VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                [_utf8(entry_row(i, now)) for i in group],
            )
            cursor.executemany(
                "INSERT INTO pages VALUES (%s, %s, %s, %s)", [_utf8(row) for i in group for row in page_rows(i)]
            )
    return db


def bare_postgres_fetch(db: Any, picks: Sequence[tuple[str, int]]) -> int:
    total = 0
    for handle, page in picks:
        (text,) = db.execute("SELECT text FROM pages WHERE handle = %s AND page = %s", (handle, page)).fetchone()
        total += len(bytes(text).decode())
    return total


def store_put(target: str, items: Sequence[StoredResult], batch: int) -> ResultStore:
    store = open_store(target)
    for group in batches(items, batch):
        store.put_many(group)
    return store


def store_fetch(store: ResultStore, picks: Sequence[tuple[str, int]]) -> int:
    return sum(len(store.page(handle, page).text) for handle, page in picks)


@contextmanager
def postgres_schema(server: str) -> Iterator[str]:
    import psycopg

    schema = f"wf_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{server}{'&' if '?' in server else '?'}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def timed(run: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    kept = run()
    return time.perf_counter() - start, kept


def measure(
    name: str,
    items: Sequence[StoredResult],
    picks: Sequence[tuple[str, int]],
    args: argparse.Namespace,
    ours_target: Callable[[], Any],
    bare_target: Callable[[], Any],
    bare_put: Callable[[str, Sequence[StoredResult], int], Any],
    bare_fetch: Callable[[Any, Sequence[tuple[str, int]]], int],
) -> list[tuple[str, float, float, int]]:
    """(step, our seconds, bare seconds, rows) for put and fetch on one backend."""
    with ours_target() as ours_where, bare_target() as bare_where:
        put_ours, store = timed(lambda: store_put(ours_where, items, args.batch))
        put_bare, bare = timed(lambda: bare_put(bare_where, items, args.batch))
        try:
            assert store_fetch(store, picks) == bare_fetch(bare, picks), "both sides must read the same pages"
            fetch_ours = best_of(args.repeat, lambda: store_fetch(store, picks))
            fetch_bare = best_of(args.repeat, lambda: bare_fetch(bare, picks))
        finally:
            store.close()
            bare.close()
    pages = sum(len(i.pages) for i in items)
    return [
        (f"{name}: put {len(items):,} results ({pages:,} pages)", put_ours, put_bare, len(items)),
        (f"{name}: fetch {len(picks):,} random pages", fetch_ours, fetch_bare, len(picks)),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="10,000 results and 2,000 fetches")
    parser.add_argument("--results", type=int, default=100_000, help="how many results to put (default 100,000)")
    parser.add_argument("--fetches", type=int, default=20_000, help="how many random pages to fetch (default 20,000)")
    parser.add_argument("--batch", type=int, default=100, help="results per put, one transaction (default 100)")
    parser.add_argument("--repeat", type=int, default=3, help="fetches: best of N runs (puts run once)")
    parser.add_argument("--postgres", default=os.environ.get(POSTGRES_ENV, ""), help=f"server URL ({POSTGRES_ENV})")
    args = parser.parse_args(argv)
    if args.quick:
        args.results, args.fetches = 10_000, 2_000
    console = Console()
    with console.status(f"generating and paging {args.results:,} results"):
        items = results(args.results)
    rng = random.Random(3)
    chosen = (rng.choice(items) for _ in range(args.fetches))
    picks = [(item.handle, rng.randint(1, len(item.pages))) for item in chosen]

    rows: list[tuple[str, float, float, int]] = []
    with tempfile.TemporaryDirectory() as tmp:

        @contextmanager
        def file(name: str) -> Iterator[str]:
            yield str(Path(tmp) / name)

        with console.status("SQLite"):
            rows += measure(
                "SQLite",
                items,
                picks,
                args,
                lambda: file("store.db"),
                lambda: file("bare.db"),
                bare_sqlite_put,
                bare_sqlite_fetch,
            )
    if args.postgres:
        with console.status("PostgreSQL"):
            rows += measure(
                "PostgreSQL",
                items,
                picks,
                args,
                lambda: postgres_schema(args.postgres),
                lambda: postgres_schema(args.postgres),
                bare_postgres_put,
                bare_postgres_fetch,
            )
    table = Table(title=f"result store, batches of {args.batch} (fetch: best of {args.repeat})")
    for col in ("step", "ours s", "bare s", "ours rows/s", "bare rows/s", "ratio (ours / bare time)"):
        table.add_column(col, justify="left" if col == "step" else "right")
    for step, ours, bare, n in rows:
        table.add_row(step, f"{ours:.2f}", f"{bare:.2f}", f"{n / ours:,.0f}", f"{n / bare:,.0f}", f"{ours / bare:.2f}")
    console.print(table)
    if not args.postgres:
        console.print(
            f"PostgreSQL skipped: no server (pass --postgres URL or set {POSTGRES_ENV}; "
            "export WINDOWFIT_TEST_POSTGRES=$(.ci/postgres.sh start /tmp/wf-pg) starts one)"
        )


if __name__ == "__main__":
    main()
