"""The embedded result store: one SQLite file (standard-library ``sqlite3``).

The file is created with mode 0600 (cleared results can hold anything a tool
printed), in WAL mode so readers never block the writer, with a busy timeout
so concurrent writers wait for each other instead of failing. A ``meta``
table names the schema and its version: a file without it is ``NotAStore``.
Every put is one transaction, so nothing half-written is ever read.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from types import TracebackType

from ..errors import NotAStore, PageOutOfRange, StoreUnavailable, UnknownHandle
from .base import Entry, Page, StoredResult

SCHEMA_NAME = "windowfit-result-store"
SCHEMA_VERSION = 1
BUSY_TIMEOUT_SECONDS = 60.0
"""How long a writer waits for another's transaction before giving up as ``StoreUnavailable``."""

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS entries ("
    " handle TEXT PRIMARY KEY, tool TEXT NOT NULL, call_id TEXT NOT NULL, tokens INTEGER NOT NULL,"
    " pages INTEGER NOT NULL, chars INTEGER NOT NULL, source TEXT NOT NULL, created REAL NOT NULL, raw TEXT)",
    "CREATE TABLE IF NOT EXISTS pages ("
    " handle TEXT NOT NULL REFERENCES entries(handle) ON DELETE CASCADE, page INTEGER NOT NULL,"
    " text TEXT NOT NULL, tokens INTEGER NOT NULL, PRIMARY KEY (handle, page)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS entries_created ON entries (created)",
)

_ENTRY_COLUMNS = "handle, tool, call_id, tokens, pages, chars, source, created"


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _db(text: str) -> str | bytes:
    """``text`` as SQLite can bind it: a str, or (when it holds a lone surrogate, which a
    transcript's JSON escapes may carry and sqlite3 cannot encode) its bytes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _utf8(text)
    return text


def _str(value: object) -> str:
    """A text column's value as the text that was put (see ``_db``)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogatepass")
    return str(value)


def _unavailable(path: str, error: sqlite3.Error) -> StoreUnavailable:
    text = str(error)
    if "locked" in text or "busy" in text:
        return StoreUnavailable(f"{path}: the store is locked by another process ({text})", "try again when it is done")
    if "readonly" in text or "read-only" in text:
        return StoreUnavailable(f"{path}: the store is read-only ({text})", "use a store you can write to")
    return StoreUnavailable(f"{path}: the store cannot be used ({text})")


def _entry(row: tuple[str, object, object, int, int, int, object, float]) -> Entry:
    handle, tool, call_id, tokens, pages, chars, source, created = row
    return Entry(handle, _str(tool), _str(call_id), tokens, pages, chars, _str(source), created)


class SqliteStore:
    """A ``ResultStore`` in one SQLite file; safe to share between threads and processes."""

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True) -> None:
        self._path = os.fspath(path)
        self._lock = threading.Lock()
        if not os.path.exists(self._path):
            if not create:
                raise NotAStore(f"{self._path}: no store here", "a store is made by `windowfit fit --store PATH`")
            self._create_file()
        elif os.path.isdir(self._path):
            raise NotAStore(f"{self._path}: is a directory, not a store file")
        try:
            self._db = sqlite3.connect(
                self._path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as error:
            raise _unavailable(self._path, error) from error
        try:
            self._setup()
        except BaseException:
            self._db.close()
            raise

    @property
    def target(self) -> str:
        return self._path

    def _create_file(self) -> None:
        try:
            fd = os.open(self._path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            return  # another process made it first
        except OSError as error:
            raise StoreUnavailable(f"{self._path}: cannot create the store ({error.strerror})") from error
        os.close(fd)

    def _setup(self) -> None:
        db = self._db
        try:
            db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
            db.execute("PRAGMA foreign_keys = ON")
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as error:
            if isinstance(error, sqlite3.OperationalError):
                raise _unavailable(self._path, error) from error
            raise NotAStore(f"{self._path}: not a windowfit store ({error})") from error
        if tables and "meta" not in tables:
            raise NotAStore(f"{self._path}: a SQLite database, but not a windowfit store")
        if not tables:
            self._initialise()
        self._check_meta()
        # Switching to WAL takes the file for itself and does not wait on the busy timeout: processes that open a
        # new store at once race for it, and the losers retry until one of them has switched it.
        deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
        while True:
            try:
                mode = db.execute("PRAGMA journal_mode").fetchone()[0]
                if mode != "wal":
                    db.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.Error as error:
                # A read-only file can still be read in its current journal mode.
                if "readonly" in str(error):
                    return
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise _unavailable(self._path, error) from error
                time.sleep(0.02)

    def _initialise(self) -> None:
        try:
            with self._transaction() as db:
                for statement in _SCHEMA:
                    db.execute(statement)
                db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_NAME,))
                db.execute("INSERT OR IGNORE INTO meta VALUES ('version', ?)", (str(SCHEMA_VERSION),))
        except sqlite3.Error as error:
            raise _unavailable(self._path, error) from error

    def _check_meta(self) -> None:
        try:
            meta = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.Error as error:
            raise NotAStore(f"{self._path}: not a windowfit store ({error})") from error
        if meta.get("schema") != SCHEMA_NAME:
            raise NotAStore(f"{self._path}: a SQLite database, but not a windowfit store")
        version = meta.get("version", "")
        if version != str(SCHEMA_VERSION):
            raise NotAStore(
                f"{self._path}: a windowfit store of schema version {version}; this windowfit reads {SCHEMA_VERSION}",
                "upgrade windowfit",
            )

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` takes the write lock up front, so two writers
        queue on the busy timeout instead of failing on a lock upgrade."""
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def put_many(self, items: Iterable[StoredResult]) -> tuple[Entry, ...]:
        items = tuple(items)
        if not items:
            return ()
        now = time.time()
        entries = []
        try:
            with self._transaction() as db:
                for item in items:
                    handle = item.handle
                    stored = db.execute(
                        "SELECT length(CAST(text AS BLOB)) FROM pages WHERE handle = ? ORDER BY page", (handle,)
                    ).fetchall()
                    db.execute(
                        "INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                        " ON CONFLICT (handle) DO UPDATE SET created = MAX(created, excluded.created),"
                        " pages = excluded.pages",
                        (handle, _db(item.tool), _db(item.call_id), item.tokens, len(item.pages), item.chars,
                         _db(item.source), now, None if item.raw is None else _db(item.raw)),
                    )  # fmt: skip
                    if [n for (n,) in stored] != [len(_utf8(p)) for p in item.pages]:
                        # New, or cut differently (another page size): these pages are the ones its stub names.
                        db.execute("DELETE FROM pages WHERE handle = ?", (handle,))
                        db.executemany(
                            "INSERT INTO pages VALUES (?, ?, ?, ?)",
                            [(handle, n, _db(text), tokens)
                             for n, (text, tokens) in enumerate(zip(item.pages, item.page_tokens, strict=True), 1)],
                        )  # fmt: skip
                    row = db.execute(f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE handle = ?", (handle,)).fetchone()
                    entries.append(_entry(row))
        except sqlite3.Error as error:
            raise _unavailable(self._path, error) from error
        return tuple(entries)

    def _read(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        try:
            with self._lock:
                return self._db.execute(sql, params).fetchall()
        except sqlite3.Error as error:
            raise _unavailable(self._path, error) from error

    def entry(self, handle: str) -> Entry:
        rows = self._read(f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE handle = ?", (handle,))
        if not rows:
            raise UnknownHandle(f"{self._path}: no entry {handle}", "`windowfit store PATH` lists the handles")
        return _entry(rows[0])  # type: ignore[arg-type]

    def page(self, handle: str, number: int) -> Page:
        rows = self._read(
            "SELECT e.pages, e.tool, e.call_id, p.text, p.tokens FROM entries e"
            " LEFT JOIN pages p ON p.handle = e.handle AND p.page = ? WHERE e.handle = ?",
            (number, handle),
        )
        if not rows:
            raise UnknownHandle(f"{self._path}: no entry {handle}", "`windowfit store PATH` lists the handles")
        pages, tool, call_id, text, tokens = rows[0]
        assert isinstance(pages, int)
        if text is None or not 1 <= number <= pages:
            raise PageOutOfRange(f"{handle} has {pages} page{'s' if pages != 1 else ''}; there is no page {number}")
        return Page(handle, number, pages, _str(text), _str(tool), _str(call_id), int(tokens))  # type: ignore[call-overload]

    def raw(self, handle: str) -> str | None:
        rows = self._read("SELECT raw FROM entries WHERE handle = ?", (handle,))
        if not rows:
            raise UnknownHandle(f"{self._path}: no entry {handle}", "`windowfit store PATH` lists the handles")
        value = rows[0][0]
        return None if value is None else _str(value)

    def entries(self) -> tuple[Entry, ...]:
        rows = self._read(f"SELECT {_ENTRY_COLUMNS} FROM entries ORDER BY created, rowid")
        return tuple(_entry(row) for row in rows)  # type: ignore[arg-type]

    def drop_older_than(self, timestamp: float) -> int:
        try:
            with self._transaction() as db:
                db.execute(
                    "DELETE FROM pages WHERE handle IN (SELECT handle FROM entries WHERE created < ?)", (timestamp,)
                )
                return db.execute("DELETE FROM entries WHERE created < ?", (timestamp,)).rowcount
        except sqlite3.Error as error:
            raise _unavailable(self._path, error) from error

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
