"""``fit --store``, ``windowfit fetch`` and ``windowfit store``: wiring, streams,
exit codes, goldens, and every bad store a clear one-line error."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import Result

from windowfit.cli.exit_codes import ExitCode
from windowfit.cli.store_cmd import parse_duration
from windowfit.fitting.errors import OptionError, StoreUnavailable

DATA = Path(__file__).parent / "data" / "fit"
CLEARED = "cleared.jsonl"
FIT_CLEARED = ("fit", CLEARED, "--budget", "2000", "--overhead", "0")
HANDLE = re.compile(r"wf-[0-9a-f]{32}")
FIXED_TIME = 1577836800.0  # 2020-01-01 00:00:00 UTC: long past

Run = Callable[..., Result]
Golden = Callable[[str, str], None]


@pytest.fixture(autouse=True)
def in_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from tests/data/fit, so paths in the output (the source of each entry) are the same everywhere."""
    monkeypatch.chdir(DATA)


def stored(run_cli: Run, tmp_path: Path) -> tuple[Path, list[str]]:
    """A store filled by ``fit --store`` on cleared.jsonl, its entries' times fixed; its handles, oldest first."""
    store = tmp_path / "s.db"
    result = run_cli(*FIT_CLEARED, "--store", str(store), "--json")
    assert result.exit_code == 0, result.stderr
    handles = [r["handle"] for r in json.loads(result.stdout)["results"] if r["handle"]]
    with sqlite3.connect(store) as db:
        db.execute("UPDATE entries SET created = ?", (FIXED_TIME,))
    return store, handles


# -- fit --store ----------------------------------------------------------------------------------------------


def test_fit_with_a_store_writes_stubs_naming_handles_and_keeps_the_results(run_cli: Run, tmp_path: Path) -> None:
    store, out = tmp_path / "s.db", tmp_path / "out.jsonl"
    result = run_cli(*FIT_CLEARED, "--store", str(store), "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert f"kept 4 cleared results in {store}" in " ".join(result.stdout.split())
    written = out.read_text(encoding="utf-8")
    handles = HANDLE.findall(written)
    assert len(set(handles)) == 4 and len(handles) == 4  # each stub names its own
    assert "windowfit_fetch tool" in written and "Run the tool again" not in written
    # Every page of every handle: the cleared result's text, exactly (the fixture's results are plain text).
    original = [json.loads(line) for line in (DATA / "cleared.jsonl").read_text(encoding="utf-8").splitlines()]
    texts = {
        block["tool_use_id"]: block["content"] if isinstance(block["content"], str) else block["content"][0]["text"]
        for message in original
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    }
    for handle in sorted(set(handles)):
        listing = json.loads(run_cli("fetch", handle, "--store", str(store), "--json").stdout)
        pages = [listing["text"]]
        for page in range(2, listing["pages"] + 1):
            fetched = run_cli("fetch", handle, "--store", str(store), "--page", str(page), "--json")
            pages.append(json.loads(fetched.stdout)["text"])
        assert "".join(pages) == texts[listing["call_id"]]


def test_a_second_fit_into_the_same_store_writes_a_byte_identical_request(run_cli: Run, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    for name in ("one.jsonl", "two.jsonl"):
        assert run_cli(*FIT_CLEARED, "--store", str(store), "-o", str(tmp_path / name)).exit_code == 0
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "two.jsonl").read_bytes()
    for to in ("anthropic", "openai"):
        a, b = tmp_path / f"a-{to}.json", tmp_path / f"b-{to}.json"
        for target in (a, b):
            assert run_cli(*FIT_CLEARED, "--store", str(store), "--to", to, "-o", str(target)).exit_code == 0
        assert a.read_bytes() == b.read_bytes()


def test_fit_store_diff_matches_golden(run_cli: Run, tmp_path: Path, golden: Golden) -> None:
    result = run_cli(*FIT_CLEARED, "--store", str(tmp_path / "s.db"))
    assert result.exit_code == 0
    golden("fit_cleared_store.txt", result.stdout.replace(str(tmp_path), "TMP"))


def test_fit_without_a_store_names_no_handle(run_cli: Run, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    assert run_cli(*FIT_CLEARED, "-o", str(out)).exit_code == 0
    assert not HANDLE.search(out.read_text(encoding="utf-8"))
    assert "Run the tool again if you need it." in out.read_text(encoding="utf-8")


def test_fit_all_with_a_store_keeps_every_transcripts_results(run_cli: Run, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    result = run_cli("fit", ".", "--all", "--budget", "2000", "--overhead", "0", "-o", str(tmp_path / "out"),
                     "--store", str(store))  # fmt: skip
    assert result.exit_code in (0, 1)
    named = {h for f in (tmp_path / "out").iterdir() for h in HANDLE.findall(f.read_text(encoding="utf-8"))}
    listing = json.loads(run_cli("store", str(store), "--json").stdout)
    assert named and named == {e["handle"] for e in listing["entries"]}


def test_fit_into_a_locked_store_fails_with_exit_4_and_writes_nothing(
    run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = stored(run_cli, tmp_path)
    with sqlite3.connect(store) as db:
        db.execute("DELETE FROM entries")
    monkeypatch.setattr("windowfit.fitting.store.sqlite.BUSY_TIMEOUT_SECONDS", 0.05)
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        result = run_cli(*FIT_CLEARED, "--store", str(store), "-o", str(tmp_path / "out.jsonl"))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.exit_code == ExitCode.OUTPUT
    assert result.stderr.startswith(f"error: {store}: the store is locked by another process")
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not (tmp_path / "out.jsonl").exists()  # no stub may name a handle the store does not hold


def test_fit_into_a_file_that_is_not_a_store_fails_with_exit_3(run_cli: Run, tmp_path: Path) -> None:
    not_a_store = tmp_path / "notes.txt"
    not_a_store.write_text("just some notes, not a database\n" * 20)
    result = run_cli(*FIT_CLEARED, "--store", str(not_a_store), "-o", str(tmp_path / "out.jsonl"))
    assert result.exit_code == ExitCode.BAD_INPUT
    assert result.stderr.splitlines()[0] == f"error: {not_a_store}: not a windowfit store (file is not a database)"
    assert not (tmp_path / "out.jsonl").exists()


# -- fetch ---------------------------------------------------------------------------------------------------


def test_fetch_prints_the_page_on_stdout_and_where_it_is_from_on_stderr(
    run_cli: Run, tmp_path: Path, golden: Golden
) -> None:
    store, handles = stored(run_cli, tmp_path)
    result = run_cli("fetch", handles[0], "--store", str(store))
    assert result.exit_code == 0
    assert result.stderr == f"{handles[0]} page 1 of 1 · read call t1 · 1,000 tokens\n"
    golden("fetch_page.txt", result.stdout)
    as_json = json.loads(run_cli("fetch", handles[0], "--store", str(store), "--json").stdout)
    assert as_json["text"] == result.stdout  # through a pipe: byte for byte
    assert {k: v for k, v in as_json.items() if k != "text"} == {
        "schema": 1,
        "handle": handles[0],
        "page": 1,
        "pages": 1,
        "tool": "read",
        "call_id": "t1",
        "tokens": 1000,
    }


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("wf-" + "0" * 32,), ExitCode.BAD_INPUT, "error: {store}: no entry wf-00000000000000000000000000000000"),
        (("{handle}", "--page", "2"), ExitCode.BAD_INPUT, "error: {handle} has 1 page; there is no page 2"),
        (("{handle}", "--page", "0"), ExitCode.USAGE, None),  # Typer's own check: --page is at least 1
    ],
)
def test_fetch_errors_are_one_line_with_the_right_exit_code(
    run_cli: Run, tmp_path: Path, args: tuple[str, ...], code: int, message: str | None
) -> None:
    store, handles = stored(run_cli, tmp_path)
    args = tuple(a.replace("{handle}", handles[0]) for a in args)
    result = run_cli("fetch", *args, "--store", str(store))
    assert result.exit_code == code
    assert "Traceback" not in result.stderr and result.stdout == ""
    if message:
        assert result.stderr.splitlines()[0] == message.format(store=store, handle=handles[0])


def test_fetch_from_a_store_that_is_missing_or_not_ours(run_cli: Run, tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    result = run_cli("fetch", "wf-" + "0" * 32, "--store", str(missing))
    assert result.exit_code == ExitCode.BAD_INPUT
    assert result.stderr.splitlines()[0] == f"error: {missing}: no store here"
    assert not missing.exists()  # reading never creates a store
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x)")
    result = run_cli("fetch", "wf-" + "0" * 32, "--store", str(other))
    assert result.exit_code == ExitCode.BAD_INPUT
    assert result.stderr.splitlines()[0] == f"error: {other}: a SQLite database, but not a windowfit store"


def test_a_store_that_cannot_be_written_is_exit_4(
    run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Root writes read-only files, so a read-only store is simulated where SQLite would report it.
    def read_only(self: object, items: object) -> None:
        raise StoreUnavailable("s.db: the store is read-only (attempt to write a readonly database)")

    monkeypatch.setattr("windowfit.fitting.store.sqlite.SqliteStore.put_many", read_only)
    result = run_cli(*FIT_CLEARED, "--store", str(tmp_path / "s.db"), "-o", str(tmp_path / "out.jsonl"))
    assert result.exit_code == ExitCode.OUTPUT
    assert result.stderr.splitlines()[0] == "error: s.db: the store is read-only (attempt to write a readonly database)"


# -- store ---------------------------------------------------------------------------------------------------


def test_store_lists_the_entries_and_their_totals(run_cli: Run, tmp_path: Path, golden: Golden) -> None:
    store, handles = stored(run_cli, tmp_path)
    result = run_cli("store", str(store))
    assert result.exit_code == 0
    golden("store_list.txt", result.stdout.replace(str(tmp_path), "TMP"))
    listing = json.loads(run_cli("store", str(store), "--json").stdout)
    assert [e["handle"] for e in listing["entries"]] == handles  # oldest first: in the order fit cleared them
    assert (listing["count"], listing["tokens"], listing["dropped"]) == (4, 1000 + 500 + 400 + 300, None)


def test_store_older_than_drops_old_entries(run_cli: Run, tmp_path: Path) -> None:
    store, handles = stored(run_cli, tmp_path)
    kept = run_cli("store", str(store), "--older-than", "100000w", "--json")
    assert json.loads(kept.stdout)["dropped"] == 0 and json.loads(kept.stdout)["count"] == 4
    result = run_cli("store", str(store), "--older-than", "7d")  # the fixed time is in the past
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0] == "dropped 4 entries older than 7d"
    assert result.stdout.splitlines()[-1] == f"{store}: 0 entries, 0 tokens in 0 pages (0 characters)"
    fetched = run_cli("fetch", handles[0], "--store", str(store))
    assert fetched.exit_code == ExitCode.BAD_INPUT


def test_store_with_a_bad_duration_is_a_usage_error(run_cli: Run, tmp_path: Path) -> None:
    store, _ = stored(run_cli, tmp_path)
    result = run_cli("store", str(store), "--older-than", "a week")
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr.splitlines()[0] == (
        "error: --older-than takes a duration like 7d, 12h, 30m, 45s or 2w, not 'a week'"
    )


@pytest.mark.parametrize(("text", "seconds"), [("7d", 604800), ("12h", 43200), ("30m", 1800), ("45s", 45),
                                               ("2w", 1209600), ("1.5h", 5400)])  # fmt: skip
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_a_bad_duration_is_an_option_error() -> None:
    for text in ("", "7", "d", "-1d", "7 days"):
        with pytest.raises(OptionError):
            parse_duration(text)


@pytest.mark.parametrize("width", [60, 80, 120])
def test_store_listing_keeps_handles_and_figures_whole_at_any_width(
    run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    import sys

    from rich.console import Console

    store, handles = stored(run_cli, tmp_path)
    for name, module in list(sys.modules.items()):
        if module is not None and name.startswith("windowfit.cli"):
            for attr, value in list(vars(module).items()):
                if isinstance(value, Console):
                    twin = type(value)(stderr=value.stderr, soft_wrap=value.soft_wrap, highlight=False, width=width)
                    monkeypatch.setattr(module, attr, twin)
    result = run_cli("store", str(store))
    assert result.exit_code == 0
    for handle in handles:
        assert handle in result.stdout  # a handle is copied into fetch: never folded
    for figure in ("1,000", "500", "400", "300", "2,200", "8,800"):
        assert figure in result.stdout
    assert all(len(line) <= width for line in result.stdout.splitlines()[:-1])


def test_a_result_holding_a_lone_surrogate_is_kept_and_fetched_as_its_escape(run_cli: Run, tmp_path: Path) -> None:
    """The loaders read a ``\\ud800`` escape as a lone surrogate, which has no UTF-8 form: the store keeps it
    and fetch gives it back (the escape through a pipe, the character itself in JSON), never a traceback."""
    lines = ['{"role":"user","content":"go"}']
    for i in range(6):
        lines.append(f'{{"role":"assistant","content":[{{"type":"tool_use","id":"t{i}","name":"read","input":{{}}}}]}}')
        body = "x\\ud800 " * 2000
        lines.append(f'{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t{i}","content":"{body}"}}]}}')
    transcript, store = tmp_path / "surrogates.jsonl", tmp_path / "s.db"
    transcript.write_text("\n".join(lines) + "\n", encoding="utf-8")
    fitted = run_cli("fit", str(transcript), "--budget", "3000", "--store", str(store), "--json")
    assert fitted.exit_code == 0, fitted.stderr
    handle = next(r["handle"] for r in json.loads(fitted.stdout)["results"] if r["handle"])
    piped = run_cli("fetch", handle, "--store", str(store))
    assert piped.exit_code == 0, piped.stderr
    assert piped.stdout == "x\\ud800 " * 2000
    as_json = json.loads(run_cli("fetch", handle, "--store", str(store), "--json").stdout)
    assert as_json["text"] == "x\ud800 " * 2000
