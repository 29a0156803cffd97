"""The result store (SPEC section 5): handles, pages, and the backends' shared behaviour.

Every test taking ``store`` runs on each backend of ``STORE_BACKENDS``; a
backend adds itself there with a factory that returns a fresh, empty store.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import sys
from collections.abc import Callable, Iterator
from hashlib import sha256
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import texts

from windowfit.fitting.errors import NotAStore, OptionError, PageOutOfRange, StoreUnavailable, UnknownHandle
from windowfit.fitting.estimate import make_estimator
from windowfit.fitting.store import (
    ResultStore,
    SqliteStore,
    full_text,
    handle_for,
    is_handle,
    open_store,
    split_pages,
    stored_result,
    text_tokens,
)

ESTIMATOR = make_estimator()
SAFE = make_estimator("safe")


def _sqlite(tmp_path: Path) -> ResultStore:
    return open_store(str(tmp_path / "store.db"))


STORE_BACKENDS: dict[str, Callable[[Path], ResultStore]] = {"sqlite": _sqlite}


@pytest.fixture(params=sorted(STORE_BACKENDS))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ResultStore]:
    opened = STORE_BACKENDS[request.param](tmp_path)
    with opened:
        yield opened


# -- handles -------------------------------------------------------------------------------------------


def test_handle_is_pinned() -> None:
    # The handle is part of every stub, and so of the prompt cache: its encoding is fixed, written out here.
    assert handle_for("Bash", "toolu_1", "hello\n") == "wf-" + sha256(b'["Bash","toolu_1","hello\\n"]').hexdigest()[:32]
    assert (
        handle_for("Read", "c1", "é", '{"a":1}')
        == "wf-" + sha256(b'["Read","c1","\\u00e9","{\\"a\\":1}"]').hexdigest()[:32]
    )


@given(st.text(max_size=20), st.text(max_size=20), st.text(max_size=200))
def test_handles_are_deterministic_and_well_formed(tool: str, call_id: str, text: str) -> None:
    handle = handle_for(tool, call_id, text)
    assert handle == handle_for(tool, call_id, text)
    assert is_handle(handle)


@given(
    st.tuples(st.text(max_size=8), st.text(max_size=8), st.text(max_size=40), st.none() | st.text(max_size=8)),
    st.tuples(st.text(max_size=8), st.text(max_size=8), st.text(max_size=40), st.none() | st.text(max_size=8)),
)
def test_different_content_gets_a_different_handle(
    a: tuple[str, str, str, str | None], b: tuple[str, str, str, str | None]
) -> None:
    if a != b:
        assert handle_for(*a) != handle_for(*b)


def test_fields_do_not_run_together() -> None:
    # A naive concatenation would make these equal.
    assert handle_for("ab", "c", "d") != handle_for("a", "bc", "d")
    assert handle_for("a", "b", "c", None) != handle_for("a", "b", "c", "")


# -- pages ---------------------------------------------------------------------------------------------


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=150)
@given(
    st.lists(texts(0, 300) | st.just("\n") | st.just("x" * 700), max_size=30).map("".join),
    st.integers(min_value=1, max_value=300),
)
def test_pages_concatenate_back_and_stay_within_the_bound(text: str, page_tokens: int) -> None:
    for estimator in (ESTIMATOR, SAFE):
        pages = split_pages(text, estimator, page_tokens)
        assert "".join(pages) == text
        assert pages and (len(pages) == 1 or all(pages))  # no empty page but the only one
        for page in pages:
            tokens = text_tokens(page, estimator)
            # Only a lone character costing more than the bound may exceed it.
            assert tokens <= page_tokens or len(page) == 1


def test_pages_cut_at_line_breaks() -> None:
    text = "".join(f"line {i:04d} " + "x" * 60 + "\n" for i in range(500))
    pages = split_pages(text, ESTIMATOR, 200)
    assert len(pages) > 1
    assert all(page.endswith("\n") for page in pages)


def test_a_line_longer_than_a_page_is_cut_not_lost() -> None:
    text = "head\n" + "y" * 10_000 + "\ntail\n"
    pages = split_pages(text, ESTIMATOR, 100)
    assert "".join(pages) == text
    assert max(text_tokens(p, ESTIMATOR) for p in pages) <= 100
    assert len(pages) >= 10_000 // (100 * 4)


def test_a_small_text_is_one_page_and_empty_is_one_empty_page() -> None:
    assert split_pages("short", ESTIMATOR) == ("short",)
    assert split_pages("", ESTIMATOR) == ("",)
    with pytest.raises(OptionError):
        split_pages("x", ESTIMATOR, 0)


# -- behaviour every backend shares ---------------------------------------------------------------------


def _item(text: str = "alpha\n" * 3000, call_id: str = "c1", tool: str = "Bash", raw: str | None = None) -> object:
    return stored_result(tool, call_id, text, estimator=ESTIMATOR, raw=raw, source="t.jsonl", page_tokens=500)


def test_put_then_fetch_every_page(store: ResultStore) -> None:
    item = stored_result("Bash", "c1", "alpha\n" * 3000, estimator=ESTIMATOR, raw='[{"type":"text"}]', source="t")
    (entry,) = store.put_many([item])
    assert entry.handle == item.handle
    assert (entry.tool, entry.call_id, entry.pages, entry.chars, entry.source) == ("Bash", "c1", 3, 18000, "t")
    assert full_text(store, item.handle) == item.text
    page = store.page(item.handle, 2)
    assert (page.page, page.pages, page.tool, page.call_id) == (2, 3, "Bash", "c1")
    assert page.tokens == text_tokens(page.text, ESTIMATOR) <= 2000
    assert store.raw(item.handle) == '[{"type":"text"}]'
    assert store.entry(item.handle) == entry


def test_put_is_idempotent_by_handle(store: ResultStore) -> None:
    a = stored_result("Bash", "c1", "one", estimator=ESTIMATOR)
    b = stored_result("Bash", "c2", "two", estimator=ESTIMATOR)
    first = store.put_many([a, b])
    again = store.put_many([b, a, a])
    assert [e.handle for e in again] == [b.handle, a.handle, a.handle]
    assert len(store.entries()) == 2
    assert again[1].created >= first[0].created
    assert full_text(store, a.handle) == "one"


def test_unknown_handle_and_page_out_of_range(store: ResultStore) -> None:
    item = stored_result("Bash", "c1", "text", estimator=ESTIMATOR)
    store.put_many([item])
    with pytest.raises(UnknownHandle):
        store.page("wf-" + "0" * 32, 1)
    with pytest.raises(UnknownHandle):
        store.entry("wf-nope")
    with pytest.raises(UnknownHandle):
        store.raw("wf-nope")
    for number in (0, 2, -1):
        with pytest.raises(PageOutOfRange):
            store.page(item.handle, number)


def test_drop_older_than(store: ResultStore) -> None:
    (old,) = store.put_many([stored_result("Bash", "c1", "old", estimator=ESTIMATOR)])
    assert store.drop_older_than(old.created) == 0
    assert store.drop_older_than(old.created + 1) == 1
    assert store.entries() == ()
    with pytest.raises(UnknownHandle):
        store.page(old.handle, 1)


def test_empty_text_round_trips(store: ResultStore) -> None:
    item = stored_result("Bash", "c1", "", estimator=ESTIMATOR)
    store.put_many([item])
    assert store.page(item.handle, 1).text == ""
    assert store.entry(item.handle).pages == 1


# -- SQLite specifics ------------------------------------------------------------------------------------


def test_sqlite_file_is_private_and_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with open_store(str(path)) as store:
        store.put_many([stored_result("Bash", "c1", "x", estimator=ESTIMATOR)])
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_reopened_store_keeps_its_entries(tmp_path: Path) -> None:
    path = str(tmp_path / "s.db")
    item = stored_result("Bash", "c1", "kept\n" * 1000, estimator=ESTIMATOR, page_tokens=100)
    with open_store(path) as store:
        store.put_many([item])
    with open_store(path, create=False) as store:
        assert full_text(store, item.handle) == item.text


def test_a_file_that_is_not_a_store(tmp_path: Path) -> None:
    text_file = tmp_path / "notes.txt"
    text_file.write_text("hello, this is not SQLite at all" * 10)
    with pytest.raises(NotAStore):
        open_store(str(text_file))
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x)")
    with pytest.raises(NotAStore):
        open_store(str(other))
    with pytest.raises(NotAStore):
        open_store(str(tmp_path))
    with pytest.raises(NotAStore):
        open_store(str(tmp_path / "missing.db"), create=False)
    assert not (tmp_path / "missing.db").exists()


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    open_store(str(path)).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'version'")
    with pytest.raises(NotAStore, match="version 99"):
        open_store(str(path))


def test_a_locked_store_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.db"
    open_store(str(path)).close()
    monkeypatch.setattr("windowfit.fitting.store.sqlite.BUSY_TIMEOUT_SECONDS", 0.05)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with SqliteStore(path) as store, pytest.raises(StoreUnavailable, match="locked"):
            store.put_many([stored_result("Bash", "c1", "x", estimator=ESTIMATOR)])
    except StoreUnavailable as error:  # the lock may already bite while opening
        assert "locked" in str(error)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files")
def test_a_read_only_store_can_be_read_not_written(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    item = stored_result("Bash", "c1", "x", estimator=ESTIMATOR)
    with open_store(str(path)) as store:
        store.put_many([item])
    path.chmod(0o400)
    with open_store(str(path)) as store:
        assert store.page(item.handle, 1).text == "x"
        with pytest.raises(StoreUnavailable, match="read-only"):
            store.put_many([stored_result("Bash", "c2", "y", estimator=ESTIMATOR)])


def test_postgres_without_the_extra_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes the import fail, as it does when the extra is not installed.
    monkeypatch.setitem(sys.modules, "windowfit.fitting.store.postgres", None)
    with pytest.raises(StoreUnavailable, match="postgres extra"):
        open_store("postgresql://localhost/none")


def test_a_result_put_again_under_another_page_size_is_repaged(store: ResultStore) -> None:
    # Same content, same handle; the newest stub names the new page count, so the store must hold those pages.
    text = "row\n" * 4000
    coarse = stored_result("Bash", "c1", text, page_tokens=2000)
    fine = stored_result("Bash", "c1", text, page_tokens=500)
    assert coarse.handle == fine.handle and len(fine.pages) > len(coarse.pages)
    store.put_many([coarse])
    (entry,) = store.put_many([fine])
    assert entry.pages == len(fine.pages) == store.page(fine.handle, 1).pages
    assert [store.page(fine.handle, n).text for n in range(1, entry.pages + 1)] == list(fine.pages)
    with pytest.raises(PageOutOfRange):
        store.page(fine.handle, entry.pages + 1)
    (back,) = store.put_many([coarse])
    assert back.pages == len(coarse.pages) and full_text(store, coarse.handle) == text
