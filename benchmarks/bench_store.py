"""The result store: putting 100,000 cleared results and fetching random pages, on SQLite as a ratio to bare
``sqlite3`` inserts and selects of the same rows, and on PostgreSQL as a ratio to bare ``psycopg``.

Run ``python benchmarks/bench_store.py`` (``--quick`` for 10,000 results). PostgreSQL is measured when
``--postgres URL`` or ``WINDOWFIT_TEST_POSTGRES`` names a server (``.ci/postgres.sh start DIR`` starts a throwaway
one); each run uses a fresh schema there and drops it afterwards.

The results are generated (code and Russian prose, 200 to 12,000 characters, so some span several pages) and paged
before any clock starts. Both sides put them in batches of ``--batch`` (one fit clearing that many), one transaction
per batch, into the same two tables (entries, pages); the bare side is a plain ``INSERT`` of each row, ours is
``ResultStore.put_many`` (an upsert by handle that checks the pages already stored). Fetching is ``store.page``
against a bare ``SELECT`` by primary key, for the same random (handle, page) pairs. The two sides take turns (batch
by batch, 500 fetches at a time, each first every other time), so a shared machine's changing load falls on both.
"""

from __future__ import annotations

import argparse
import gc
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

import common  # noqa: F401  (puts the checkout on sys.path, for sample_transcripts)
from rich.console import Console
from rich.table import Table

from sample_transcripts import prose
from windowfit.fitting.store import ResultStore, StoredResult, open_store, stored_result

POSTGRES_ENV = "WINDOWFIT_TEST_POSTGRES"
FETCH_CHUNK = 500
"""Fetches are timed in chunks of this many pages, the two sides taking turns."""


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


def bare_sqlite_open(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    for statement in BARE_SQLITE:
        db.execute(statement)
    return db


def bare_sqlite_put(db: sqlite3.Connection, group: Sequence[StoredResult]) -> None:
    now = time.time()
    db.execute("BEGIN IMMEDIATE")
    db.executemany("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", [entry_row(i, now) for i in group])
    db.executemany("INSERT INTO pages VALUES (?, ?, ?, ?)", [row for i in group for row in page_rows(i)])
    db.execute("COMMIT")


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


def bare_postgres_open(url: str) -> Any:
    import psycopg

    db = psycopg.connect(url, autocommit=True)
    for statement in BARE_POSTGRES:
        db.execute(statement)
    return db


def bare_postgres_put(db: Any, group: Sequence[StoredResult]) -> None:
    now = time.time()
    with db.transaction(), db.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO entries VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [_utf8(entry_row(i, now)) for i in group],
        )
        cursor.executemany(
            "INSERT INTO pages VALUES (%s, %s, %s, %s)", [_utf8(row) for i in group for row in page_rows(i)]
        )


def bare_postgres_fetch(db: Any, picks: Sequence[tuple[str, int]]) -> int:
    total = 0
    for handle, page in picks:
        (text,) = db.execute("SELECT text FROM pages WHERE handle = %s AND page = %s", (handle, page)).fetchone()
        total += len(bytes(text).decode())
    return total


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


def alternating(
    run_ours: Callable[[], object], run_bare: Callable[[], object], ours_first: bool
) -> tuple[float, float]:
    """Seconds of each, run back to back (in the order given), so both see the same load on a shared machine."""
    runs = [(0, run_ours), (1, run_bare)] if ours_first else [(1, run_bare), (0, run_ours)]
    seconds = [0.0, 0.0]
    for side, run in runs:
        start = time.perf_counter()
        run()
        seconds[side] = time.perf_counter() - start
    return seconds[0], seconds[1]


def measure(
    name: str,
    items: Sequence[StoredResult],
    picks: Sequence[tuple[str, int]],
    args: argparse.Namespace,
    targets: Callable[[], Any],
    bare_open: Callable[[str], Any],
    bare_put: Callable[[Any, Sequence[StoredResult]], None],
    bare_fetch: Callable[[Any, Sequence[tuple[str, int]]], int],
) -> list[tuple[str, float, float, int]]:
    """(step, our seconds, bare seconds, rows) for put and fetch on one backend. The two sides take turns, batch
    by batch and chunk by chunk, each going first every other time, so a change in the machine's load hits both."""
    with targets() as (ours_where, bare_where):
        store, bare = open_store(ours_where), bare_open(bare_where)
        try:
            put_ours = put_bare = 0.0
            for n, group in enumerate(batches(items, args.batch)):
                ours, base = alternating(
                    lambda g=group: store.put_many(g), lambda g=group: bare_put(bare, g), n % 2 == 0
                )
                put_ours, put_bare = put_ours + ours, put_bare + base
            assert store_fetch(store, picks) == bare_fetch(bare, picks), "both sides must read the same pages"
            chunks = [picks[i : i + FETCH_CHUNK] for i in range(0, len(picks), FETCH_CHUNK)]
            fetch_ours = fetch_bare = float("inf")
            for _ in range(args.repeat):
                gc.collect()
                rounds = [
                    alternating(lambda c=c: store_fetch(store, c), lambda c=c: bare_fetch(bare, c), n % 2 == 0)
                    for n, c in enumerate(chunks)
                ]
                fetch_ours = min(fetch_ours, sum(r[0] for r in rounds))
                fetch_bare = min(fetch_bare, sum(r[1] for r in rounds))
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
    parser.add_argument("--repeat", type=int, default=3, help="fetches: best of N rounds (puts run once)")
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

    @contextmanager
    def files() -> Iterator[tuple[str, str]]:
        with tempfile.TemporaryDirectory() as tmp:
            yield str(Path(tmp) / "store.db"), str(Path(tmp) / "bare.db")

    @contextmanager
    def schemas() -> Iterator[tuple[str, str]]:
        with postgres_schema(args.postgres) as ours, postgres_schema(args.postgres) as bare:
            yield ours, bare

    with console.status("SQLite"):
        rows += measure("SQLite", items, picks, args, files, bare_sqlite_open, bare_sqlite_put, bare_sqlite_fetch)
    if args.postgres:
        with console.status("PostgreSQL"):
            rows += measure(
                "PostgreSQL", items, picks, args, schemas, bare_postgres_open, bare_postgres_put, bare_postgres_fetch
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
