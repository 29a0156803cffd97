"""The shared result store: a PostgreSQL database (``psycopg`` 3, the ``postgres`` extra), for a fleet of harness
workers that clear into one store and fetch from it.

It behaves as the SQLite store does: a put is one transaction and idempotent by handle (``ON CONFLICT``: the
content stored first stays, the time is refreshed, and pages cut differently replace the old ones), a reader never
sees half an entry, and a ``windowfit_meta`` table names the schema and its version, so a database (or schema) that
holds other tables but not ours is ``NotAStore``. What came from a transcript is kept as UTF-8 in ``BYTEA`` columns,
because PostgreSQL's ``TEXT`` cannot hold the NUL character that a tool's output (and SQLite) can, and a fetch must
give back exactly what was cleared.
The tables live in the connection's current schema: ``?options=-csearch_path%3Dwindowfit`` in the URL puts them in a
schema of their own inside a shared database. A server that cannot be reached, a role that cannot write, a lost
connection: each is ``StoreUnavailable``, and every message shows the URL with its password masked.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from types import TracebackType

import psycopg
from psycopg import errors as pg_errors

from ..errors import NotAStore, PageOutOfRange, StoreUnavailable, UnknownHandle
from .base import Entry, Page, StoredResult

SCHEMA_NAME = "windowfit-result-store"
SCHEMA_VERSION = 1
CONNECT_TIMEOUT_SECONDS = 10
TABLES = ("windowfit_meta", "windowfit_entries", "windowfit_pages")
_INIT_LOCK = 0x77660001
"""A transaction-level advisory lock key, so two workers creating the store at once do not race on the DDL."""
_WRITE_LOCK = 0x77660002
"""The advisory lock every write transaction takes first: writers queue one behind another, as SQLite's
``BEGIN IMMEDIATE`` makes them, so two puts of overlapping handles can never deadlock on the rows they lock, and a
put never interleaves with ``drop_older_than``. Readers take no lock and never wait."""

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS windowfit_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS windowfit_entries ("
    " handle TEXT PRIMARY KEY, tool BYTEA NOT NULL, call_id BYTEA NOT NULL, tokens INTEGER NOT NULL,"
    " pages INTEGER NOT NULL, chars INTEGER NOT NULL, source BYTEA NOT NULL, created DOUBLE PRECISION NOT NULL,"
    " raw BYTEA, seq BIGINT GENERATED ALWAYS AS IDENTITY)",
    "CREATE TABLE IF NOT EXISTS windowfit_pages ("
    " handle TEXT NOT NULL REFERENCES windowfit_entries(handle) ON DELETE CASCADE, page INTEGER NOT NULL,"
    " text BYTEA NOT NULL, tokens INTEGER NOT NULL, PRIMARY KEY (handle, page))",
    "CREATE INDEX IF NOT EXISTS windowfit_entries_created ON windowfit_entries (created)",
)

_ENTRY_COLUMNS = "handle, tool, call_id, tokens, pages, chars, source, created"
_NO_ENTRY_HINT = "`windowfit store URL` lists the handles"

_USERINFO_PASSWORD = re.compile(r"^(?P<head>[a-z]+://[^:@/?#]*:)(?P<password>[^@/?#]*)(?=@)", re.IGNORECASE)
_QUERY_PASSWORD = re.compile(r"(?P<head>[?&]password=)(?P<password>[^&#]*)", re.IGNORECASE)


def mask_url(url: str) -> str:
    """``url`` with any password (in the user part or a ``password=`` parameter) shown as ``***``."""
    masked = _USERINFO_PASSWORD.sub(r"\g<head>***", url)
    return _QUERY_PASSWORD.sub(r"\g<head>***", masked)


def _passwords(url: str) -> tuple[str, ...]:
    found = [m.group("password") for m in (_USERINFO_PASSWORD.search(url), *_QUERY_PASSWORD.finditer(url)) if m]
    return tuple(p for p in found if p)


def _one_line(text: str) -> str:
    return " ".join(text.split())


class PostgresStore:
    """A ``ResultStore`` in a PostgreSQL database; one connection, shared safely between threads."""

    def __init__(self, url: str, *, create: bool = True) -> None:
        self._url = url
        self._target = mask_url(url)
        self._lock = threading.Lock()
        try:
            self._db = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS)
        except psycopg.Error as error:
            raise StoreUnavailable(
                f"{self._target}: cannot connect to the store ({self._clean(error)})",
                "check that the server is running and the URL names it",
            ) from error
        try:
            self._setup(create)
        except BaseException:
            self._db.close()
            raise

    @property
    def target(self) -> str:
        return self._target

    def _clean(self, error: BaseException) -> str:
        """The error's text on one line, with the URL and its password masked (libpq quotes a bad URL whole)."""
        text = str(error).replace(self._url, self._target)
        for password in _passwords(self._url):
            text = text.replace(password, "***")
        return _one_line(text) or type(error).__name__

    def _unavailable(self, error: psycopg.Error) -> StoreUnavailable:
        text = self._clean(error)
        if isinstance(error, pg_errors.InsufficientPrivilege | pg_errors.ReadOnlySqlTransaction):
            return StoreUnavailable(f"{self._target}: the store is read-only ({text})", "use a role that can write")
        if isinstance(error, pg_errors.LockNotAvailable | pg_errors.DeadlockDetected):
            return StoreUnavailable(f"{self._target}: the store is locked ({text})", "try again when it is done")
        return StoreUnavailable(f"{self._target}: the store cannot be used ({text})")

    def _setup(self, create: bool) -> None:
        try:
            ours = self._tables()
            if len(ours) < len(TABLES):
                if not create and not ours:
                    raise NotAStore(f"{self._target}: no store here", "a store is made by `windowfit fit --store URL`")
                self._initialise()
            self._check_meta()
        except psycopg.Error as error:
            raise self._unavailable(error) from error

    def _tables(self) -> set[str]:
        """Our tables in the current schema; ``NotAStore`` if the schema holds tables and none of them is ours."""
        schema = self._db.execute("SELECT current_schema()").fetchone()
        if schema is None or schema[0] is None:
            raise StoreUnavailable(
                f"{self._target}: no schema to keep the store in (none on the search path exists)",
                "create the schema first, e.g. CREATE SCHEMA windowfit",
            )
        rows = self._db.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        ).fetchall()
        names = {str(row[0]) for row in rows}
        ours = names & set(TABLES)
        if names and not ours:
            raise NotAStore(
                f"{self._target}: a database with other tables, not a windowfit store",
                "use an empty database, or a schema of its own (?options=-csearch_path%3Dwindowfit)",
            )
        if ours and "windowfit_meta" not in ours:
            raise NotAStore(f"{self._target}: windowfit tables without their schema record; not a windowfit store")
        return ours

    def _initialise(self) -> None:
        with self._lock, self._db.transaction():
            self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_INIT_LOCK,))
            for statement in _SCHEMA:
                self._db.execute(statement)
            self._db.execute(
                "INSERT INTO windowfit_meta VALUES ('schema', %s), ('version', %s) ON CONFLICT (key) DO NOTHING",
                (SCHEMA_NAME, str(SCHEMA_VERSION)),
            )

    def _check_meta(self) -> None:
        try:
            rows = self._db.execute("SELECT key, value FROM windowfit_meta").fetchall()
        except pg_errors.UndefinedColumn as error:
            raise NotAStore(f"{self._target}: not a windowfit store ({self._clean(error)})") from error
        meta = {str(key): str(value) for key, value in rows}
        if meta.get("schema") != SCHEMA_NAME:
            raise NotAStore(f"{self._target}: a windowfit_meta table, but not a windowfit store")
        version = meta.get("version", "")
        if version != str(SCHEMA_VERSION):
            raise NotAStore(
                f"{self._target}: a windowfit store of schema version {version}; this windowfit reads {SCHEMA_VERSION}",
                "upgrade windowfit",
            )

    @contextmanager
    def _transaction(self, *, write: bool = False) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
        with self._lock, self._db.transaction():
            if write:
                self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITE_LOCK,))
            yield self._db

    def put_many(self, items: Iterable[StoredResult]) -> tuple[Entry, ...]:
        items = tuple(items)
        if not items:
            return ()
        try:
            return self._put(items)
        except psycopg.Error as error:
            raise self._unavailable(error) from error

    def _put(self, items: tuple[StoredResult, ...]) -> tuple[Entry, ...]:
        """One transaction of a few round trips whatever the batch's size: upsert every entry (in the order put,
        which ``entries`` lists them in), read the pages stored for them, replace those cut differently. The first
        put's content stays; a later put of a handle refreshes its time and, if it comes cut into other pages
        (another page size), its pages, since the newest stub names those."""
        now = time.time()
        entries: list[Entry] = []
        with self._transaction(write=True) as db, db.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO windowfit_entries ({_ENTRY_COLUMNS}, raw) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (handle) DO UPDATE"
                " SET created = GREATEST(windowfit_entries.created, excluded.created), pages = excluded.pages"
                f" RETURNING {_ENTRY_COLUMNS}",
                [_entry_params(item, now) for item in items],
                returning=True,
            )
            for position in range(len(items)):
                if position:
                    cursor.nextset()
                row = cursor.fetchone()
                assert row is not None
                entries.append(_entry(row))
            last = {item.handle: item for item in items}  # a handle put twice in one batch: the later decides
            handles = sorted(last)
            cursor.execute(
                "SELECT handle, length(text) FROM windowfit_pages WHERE handle = ANY(%s) ORDER BY handle, page",
                (handles,),
            )
            stored: dict[str, list[int]] = {}
            for handle, length in cursor.fetchall():
                assert isinstance(length, int)
                stored.setdefault(str(handle), []).append(length)
            changed = [last[h] for h in handles if stored.get(h, []) != [len(_bytes(p)) for p in last[h].pages]]
            if changed:
                cursor.execute("DELETE FROM windowfit_pages WHERE handle = ANY(%s)", ([c.handle for c in changed],))
                cursor.executemany(
                    "INSERT INTO windowfit_pages VALUES (%s, %s, %s, %s)",
                    [(item.handle, n, _bytes(text), tokens)
                     for item in changed
                     for n, (text, tokens) in enumerate(zip(item.pages, item.page_tokens, strict=True), 1)],
                )  # fmt: skip
        return tuple(entries)

    def _read(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        try:
            with self._lock:
                return self._db.execute(sql, params).fetchall()
        except psycopg.Error as error:
            raise self._unavailable(error) from error

    def _unknown(self, handle: str) -> UnknownHandle:
        return UnknownHandle(f"{self._target}: no entry {handle}", _NO_ENTRY_HINT)

    def entry(self, handle: str) -> Entry:
        rows = self._read(f"SELECT {_ENTRY_COLUMNS} FROM windowfit_entries WHERE handle = %s", (handle,))
        if not rows:
            raise self._unknown(handle)
        return _entry(rows[0])

    def page(self, handle: str, number: int) -> Page:
        rows = self._read(
            "SELECT e.pages, e.tool, e.call_id, p.text, p.tokens FROM windowfit_entries e"
            " LEFT JOIN windowfit_pages p ON p.handle = e.handle AND p.page = %s WHERE e.handle = %s",
            (number, handle),
        )
        if not rows:
            raise self._unknown(handle)
        pages, tool, call_id, text, tokens = rows[0]
        assert isinstance(pages, int)
        if text is None or not 1 <= number <= pages:
            raise PageOutOfRange(f"{handle} has {pages} page{'s' if pages != 1 else ''}; there is no page {number}")
        assert isinstance(tokens, int)
        return Page(handle, number, pages, _text(text), _text(tool), _text(call_id), tokens)

    def raw(self, handle: str) -> str | None:
        rows = self._read("SELECT raw FROM windowfit_entries WHERE handle = %s", (handle,))
        if not rows:
            raise self._unknown(handle)
        value = rows[0][0]
        return None if value is None else _text(value)

    def entries(self) -> tuple[Entry, ...]:
        rows = self._read(f"SELECT {_ENTRY_COLUMNS} FROM windowfit_entries ORDER BY created, seq")
        return tuple(_entry(row) for row in rows)

    def drop_older_than(self, timestamp: float) -> int:
        try:
            with self._transaction(write=True) as db:
                # The pages go with their entries (ON DELETE CASCADE).
                return db.execute("DELETE FROM windowfit_entries WHERE created < %s", (timestamp,)).rowcount
        except psycopg.Error as error:
            raise self._unavailable(error) from error

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _entry_params(item: StoredResult, now: float) -> tuple[object, ...]:
    raw = None if item.raw is None else _bytes(item.raw)
    return (item.handle, _bytes(item.tool), _bytes(item.call_id), item.tokens, len(item.pages), item.chars,
            _bytes(item.source), now, raw)  # fmt: skip


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # a transcript's JSON escapes may carry lone surrogates


def _text(value: object) -> str:
    """A ``BYTEA`` column's value (psycopg gives ``bytes``) as the text that was stored."""
    assert isinstance(value, bytes | bytearray | memoryview)
    return bytes(value).decode("utf-8", "surrogatepass")


def _entry(row: tuple[object, ...]) -> Entry:
    handle, tool, call_id, tokens, pages, chars, source, created = row
    assert isinstance(tokens, int) and isinstance(pages, int) and isinstance(chars, int)
    assert isinstance(created, float)
    return Entry(str(handle), _text(tool), _text(call_id), tokens, pages, chars, _text(source), created)


def open_postgres(url: str, *, create: bool = True) -> PostgresStore:
    """The store in the PostgreSQL database at ``url`` (``postgresql://`` or ``postgres://``); ``create=False``
    refuses to make a new one (``NotAStore``)."""
    return PostgresStore(url, create=create)
