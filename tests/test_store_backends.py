"""The result store's behaviour, the same on every backend: each test runs on SQLite (a temp file) and on
PostgreSQL (a fresh schema on the server ``WINDOWFIT_TEST_POSTGRES`` names; see tests/store_backends.py).

The entries are made by hand (``StoredResult`` with its pages spelled out), so every expected value below is the
input itself, never something the store or the pager computed."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_backends import (
    BACKENDS,
    postgres_schema,
    postgres_server_url,
    require_psycopg,
    store_target,
    with_search_path,
)

from windowfit.fitting import make_estimator
from windowfit.fitting.errors import NotAStore, PageOutOfRange, StoreUnavailable, UnknownHandle
from windowfit.fitting.store import ResultStore, StoredResult, full_text, open_store, stored_result


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def target(backend: str, tmp_path: Path) -> Iterator[str]:
    with store_target(backend, tmp_path) as where:
        yield where


@pytest.fixture
def store(target: str) -> Iterator[ResultStore]:
    with open_store(target) as opened:
        yield opened


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """A settable clock: every backend stamps a put with ``time.time()``."""
    now = [1_000.0]
    monkeypatch.setattr(time, "time", lambda: now[0])
    return now


def result(
    pages: tuple[str, ...] = ("one\n", "two\n", "three"),
    *,
    tool: str = "Bash",
    call_id: str = "call_1",
    raw: str | None = None,
    source: str = "session.jsonl",
) -> StoredResult:
    return StoredResult(
        tool=tool,
        call_id=call_id,
        text="".join(pages),
        raw=raw,
        source=source,
        tokens=10 * len(pages),
        pages=pages,
        page_tokens=tuple(range(1, len(pages) + 1)),
    )


def sql(backend: str, target: str, statement: str) -> None:
    """Runs ``statement`` on the store's database directly (to make it foreign, or newer)."""
    if backend == "sqlite":
        with sqlite3.connect(target) as db:
            db.execute(statement)
        return
    import psycopg

    with psycopg.connect(target, autocommit=True) as db:
        db.execute(statement.replace("meta", "windowfit_meta"))


def test_a_put_entry_comes_back_page_by_page_exactly(store: ResultStore, clock: list[float]) -> None:
    item = result(("first line\n", "second: 日本語 и кириллица 🙂\n", "last"), raw='{"type":"text"}')
    (entry,) = store.put_many([item])
    assert (entry.handle, entry.tool, entry.call_id, entry.source) == (item.handle, "Bash", "call_1", "session.jsonl")
    assert (entry.tokens, entry.pages, entry.chars, entry.created) == (30, 3, len(item.text), 1_000.0)
    assert store.entry(item.handle) == entry
    pages = [store.page(item.handle, n) for n in (1, 2, 3)]
    assert [p.text for p in pages] == ["first line\n", "second: 日本語 и кириллица 🙂\n", "last"]
    assert [(p.page, p.pages, p.tokens) for p in pages] == [(1, 3, 1), (2, 3, 2), (3, 3, 3)]
    assert {(p.handle, p.tool, p.call_id) for p in pages} == {(item.handle, "Bash", "call_1")}
    assert full_text(store, item.handle) == "first line\nsecond: 日本語 и кириллица 🙂\nlast"
    assert store.raw(item.handle) == '{"type":"text"}'


def test_put_many_returns_each_items_entry_in_order(store: ResultStore) -> None:
    items = [result((f"result {n}\n",), call_id=f"call_{n}") for n in range(5)]
    entries = store.put_many(items)
    assert [e.call_id for e in entries] == ["call_0", "call_1", "call_2", "call_3", "call_4"]
    assert {e.handle for e in store.entries()} == {i.handle for i in items}
    assert store.put_many([]) == ()


def test_putting_a_handle_again_keeps_the_first_content_and_refreshes_its_time(
    store: ResultStore, clock: list[float]
) -> None:
    first = result(("a\n", "b"), source="first.jsonl")
    # The same result seen from another transcript: the same handle.
    again = StoredResult("Bash", "call_1", "a\nb", None, "second.jsonl", 99, ("a\n", "b"), (5, 6))
    assert again.handle == first.handle
    store.put_many([first])
    clock[0] = 2_000.0
    twice = store.put_many([again, again])
    assert twice[0] == twice[1]
    assert (twice[0].source, twice[0].pages, twice[0].tokens, twice[0].created) == ("first.jsonl", 2, 20, 2_000.0)
    assert [e.handle for e in store.entries()] == [first.handle]
    assert [(p.text, p.tokens) for p in (store.page(first.handle, 1), store.page(first.handle, 2))] == [
        ("a\n", 1),
        ("b", 2),
    ]
    clock[0] = 1_500.0  # a put with an older clock (another worker's) never moves the time back
    (entry,) = store.put_many([first])
    assert entry.created == 2_000.0


def test_a_handle_put_again_in_other_pages_gets_the_new_pages(store: ResultStore) -> None:
    first = result(("one\n", "two\n", "three"))
    # Cut under another page size: the newest stub names one page, so the store must hold one page.
    whole = StoredResult("Bash", "call_1", "one\ntwo\nthree", None, "session.jsonl", 30, ("one\ntwo\nthree",), (9,))
    assert whole.handle == first.handle
    store.put_many([first])
    (entry,) = store.put_many([whole])
    assert entry.pages == 1
    assert (store.page(first.handle, 1).text, store.page(first.handle, 1).tokens) == ("one\ntwo\nthree", 9)
    with pytest.raises(PageOutOfRange):
        store.page(first.handle, 2)
    (entry,) = store.put_many([first])
    assert [store.page(first.handle, n).text for n in (1, 2, 3)] == ["one\n", "two\n", "three"]


def test_an_unknown_handle_is_an_error_for_every_read(store: ResultStore) -> None:
    store.put_many([result()])
    missing = "wf-" + "0" * 32
    for read in (lambda: store.entry(missing), lambda: store.page(missing, 1), lambda: store.raw(missing)):
        with pytest.raises(UnknownHandle, match=missing):
            read()


@pytest.mark.parametrize("number", [0, -1, 4, 10**9])
def test_a_page_outside_the_entry_is_an_error(store: ResultStore, number: int) -> None:
    item = result()
    store.put_many([item])
    with pytest.raises(PageOutOfRange, match=f"has 3 pages; there is no page {number}$"):
        store.page(item.handle, number)


def test_an_entry_without_original_json_has_none(store: ResultStore) -> None:
    item = result(raw=None)
    store.put_many([item])
    assert store.raw(item.handle) is None


def test_entries_are_listed_oldest_first_then_in_the_order_put(store: ResultStore, clock: list[float]) -> None:
    late = result(("late",), call_id="late")
    early = [result((f"early {n}",), call_id=f"early_{n}") for n in range(3)]
    clock[0] = 2_000.0
    store.put_many([late])
    clock[0] = 1_000.0
    store.put_many(early)
    assert [e.handle for e in store.entries()] == [*(e.handle for e in early), late.handle]
    store.put_many(reversed(early))  # put again at the same time: each keeps its place
    assert [e.handle for e in store.entries()] == [*(e.handle for e in early), late.handle]


def test_drop_older_than_removes_only_older_entries_and_their_pages(store: ResultStore, clock: list[float]) -> None:
    old, new = result(("old\n", "entry"), call_id="old"), result(("new",), call_id="new")
    store.put_many([old])
    clock[0] = 2_000.0
    store.put_many([new])
    assert store.drop_older_than(1_000.0) == 0  # strictly older only
    assert store.drop_older_than(1_500.0) == 1
    assert [e.handle for e in store.entries()] == [new.handle]
    with pytest.raises(UnknownHandle):
        store.page(old.handle, 1)
    assert store.page(new.handle, 1).text == "new"
    (entry,) = store.put_many([old])  # it can be stored again, whole
    assert (entry.pages, full_text(store, old.handle)) == (2, "old\nentry")


def test_a_reopened_store_has_every_entry(target: str) -> None:
    items = [result((f"page {n}\n", "end"), call_id=f"c{n}") for n in range(3)]
    with open_store(target) as first:
        first.put_many(items)
    with open_store(target, create=False) as second:
        assert [full_text(second, i.handle) for i in items] == [i.text for i in items]
        assert len(second.entries()) == 3


def test_opening_without_create_refuses_a_missing_store(target: str) -> None:
    with pytest.raises(NotAStore, match="no store here"):
        open_store(target, create=False)


def test_a_database_with_other_tables_is_not_a_store(backend: str, target: str) -> None:
    if backend == "sqlite":
        with sqlite3.connect(target) as db:
            db.execute("CREATE TABLE users (name TEXT)")
    else:
        sql(backend, target, "CREATE TABLE users (name TEXT)")
    with pytest.raises(NotAStore, match="not a windowfit store"):
        open_store(target)


def test_a_store_of_a_newer_schema_version_is_not_read(backend: str, target: str) -> None:
    with open_store(target):
        pass
    sql(backend, target, "UPDATE meta SET value = '99' WHERE key = 'version'")
    with pytest.raises(NotAStore, match="schema version 99"):
        open_store(target)


def test_open_store_reaches_the_backend_that_the_target_names(backend: str, store: ResultStore) -> None:
    assert type(store).__name__ == {"sqlite": "SqliteStore", "postgres": "PostgresStore"}[backend]


# NUL, CR LF, CJK, emoji, combining marks and lone surrogates (a transcript's JSON escapes, such as
# \ud800, may carry them, and the loaders read them).
TEXTS = st.text(st.characters(), max_size=3000) | st.text("\x00\r\n a日🙂\u0301\ud800\udfff", max_size=99)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS, tool=st.text(max_size=20))
def test_any_text_comes_back_exactly(store: ResultStore, text: str, tool: str) -> None:
    item = stored_result(tool, "call", text, estimator=make_estimator("safe"), raw=text, page_tokens=50)
    (entry,) = store.put_many([item])
    assert entry.tool == tool
    assert full_text(store, item.handle) == text
    assert store.raw(item.handle) == text
    assert tuple(store.page(item.handle, n).text for n in range(1, len(item.pages) + 1)) == item.pages


# PostgreSQL only: what a server adds (a URL with a password, a role that may not write).


def test_an_unreachable_server_is_unavailable_and_its_password_never_shown(tmp_path: Path) -> None:
    require_psycopg()
    from windowfit.fitting.store.postgres import mask_url

    urls = (
        f"postgresql://windowfit:s3cret-pw@/store?host={tmp_path}&port=5999",  # no server on that socket
        "postgresql://windowfit:s3cret-pw@[broken/store",  # libpq quotes a malformed URL whole
        f"postgres:///store?host={tmp_path}&password=s3cret-pw",
    )
    for url in urls:
        with pytest.raises(StoreUnavailable) as caught:
            open_store(url)
        message = f"{caught.value} {caught.value.hint}"
        assert "s3cret-pw" not in message
        assert mask_url(url) in message and "***" in message
        assert "\n" not in message


def test_a_search_path_naming_no_schema_is_a_clear_error() -> None:
    url = with_search_path(postgres_server_url(), "wf_no_such_schema")
    with pytest.raises(StoreUnavailable, match="no schema to keep the store in") as caught:
        open_store(url)
    assert caught.value.hint == "create the schema first, e.g. CREATE SCHEMA windowfit"


def test_mask_url_hides_every_password() -> None:
    require_psycopg()
    from windowfit.fitting.store.postgres import mask_url

    assert mask_url("postgresql://u:pw@db.example:5432/s") == "postgresql://u:***@db.example:5432/s"
    assert mask_url("postgres://u@h/s?sslmode=require&password=pw") == "postgres://u@h/s?sslmode=require&password=***"
    assert mask_url("postgresql://u@h/s") == "postgresql://u@h/s"
    assert mask_url("postgresql:///s?host=/tmp/x") == "postgresql:///s?host=/tmp/x"


def test_a_role_that_cannot_write_finds_the_store_read_only() -> None:
    import psycopg

    server = postgres_server_url()
    with postgres_schema(server) as url:
        item = result()
        with open_store(url) as store:
            store.put_many([item])
        schema = url.rsplit("%3D", 1)[1]
        role = f"{schema}_reader"
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f"CREATE ROLE {role} LOGIN")
            admin.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
            admin.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}")
        try:
            reader_url = f"{url}&user={role}"
            with open_store(reader_url, create=False) as reader:
                assert full_text(reader, item.handle) == item.text
                with pytest.raises(StoreUnavailable, match="read-only"):
                    reader.put_many([result(("new",), call_id="new")])
        finally:
            with psycopg.connect(server, autocommit=True) as admin:
                admin.execute(f"DROP OWNED BY {role}")
                admin.execute(f"DROP ROLE {role}")
