"""``windowfit mcp``: the store served over MCP's stdio transport, driven by the official SDK's own client
(``stdio_client`` + ``ClientSession``), on both store backends. The entry is made by hand, so the expected page
texts and headers below are written out, not computed by the server's code."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from store_backends import BACKENDS, require_psycopg, store_target
from typer.testing import Result

from windowfit.fitting.store import StoredResult, open_store
from windowfit.fitting.store.tool import TOOL_DESCRIPTION, handle_tool_call

try:
    import anyio
    import mcp  # noqa: F401  (the mcp extra, in the test extra)
except ImportError:
    if os.environ.get("CI"):  # CI installs the test extra: a missing SDK there is a failure, never a skip
        raise
    pytest.skip("the mcp extra is not installed (pip install -e '.[test]')", allow_module_level=True)

Run = Callable[..., Result]

ENTRY = StoredResult(
    tool="Read",
    call_id="toolu_01",
    text="chapter one\n[not markup] глава вторая\nTHE END",
    raw=None,
    source="session.jsonl",
    tokens=1200,
    pages=("chapter one\n", "[not markup] глава вторая\n", "THE END"),
    page_tokens=(400, 500, 300),
)


@pytest.fixture(params=BACKENDS)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store holding ``ENTRY``, on each backend."""
    with store_target(str(request.param), tmp_path) as target:
        with open_store(target) as store:
            store.put_many([ENTRY])
        yield target


def is_error(result: Any) -> bool:
    # mcp 2.x names the field is_error, 1.x isError.
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content]


def session_calls(target: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[Any, list[Any]]:
    """Starts ``windowfit mcp --store target`` as the SDK's client does, lists its tools, makes ``calls`` in order
    on one session, and returns the tool list and the results."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "windowfit", "mcp", "--store", target])

    async def run() -> tuple[Any, list[Any]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            results = [await session.call_tool(name, arguments) for name, arguments in calls]
            return tools, results

    outcome: tuple[Any, list[Any]] = anyio.run(run)
    return outcome


def page_of(answer: str) -> str:
    """The page inside a fetch answer: after the header line, before the line saying which page follows."""
    body = answer.split("\n", 1)[1]
    return body.split("\n[windowfit_fetch] page ", 1)[0]


def test_the_sdk_client_lists_the_tools_and_fetches_exact_pages(served: str) -> None:
    handle = ENTRY.handle
    calls: list[tuple[str, dict[str, Any]]] = [
        ("windowfit_fetch", {"handle": handle}),
        ("windowfit_fetch", {"handle": handle, "page": 2}),
        ("windowfit_fetch", {"handle": handle, "page": 3}),
        ("windowfit_fetch", {"handle": handle, "search": "the end"}),
        ("windowfit_list", {}),
    ]
    tools, results = session_calls(served, calls)
    by_name = {tool.name: tool for tool in tools.tools}
    assert set(by_name) == {"windowfit_fetch", "windowfit_list"}
    fetch_tool = by_name["windowfit_fetch"]
    schema = getattr(fetch_tool, "input_schema", None) or fetch_tool.inputSchema  # 2.x, 1.x
    assert set(schema["properties"]) == {"handle", "page", "search"}
    assert schema["required"] == ["handle"]
    assert fetch_tool.description == TOOL_DESCRIPTION

    assert not any(is_error(r) for r in results)
    answers = [texts(r) for r in results]
    assert all(len(a) == 1 for a in answers)
    first, second, third, found, listed = (a[0] for a in answers)
    assert [page_of(first), page_of(second), page_of(third)] == [
        "chapter one\n",
        "[not markup] глава вторая\n",
        "THE END",
    ]
    assert first.startswith(f"[windowfit_fetch] {handle}, page 1 of 3: the result of Read (call toolu_01)")
    assert third.startswith(f"[windowfit_fetch] {handle}, page 3 of 3:") and third.endswith("\nTHE END")
    assert found.endswith("\npage 3, line 3: THE END")
    # Over MCP the agent gets exactly what a harness calling the handler would send it.
    with open_store(served) as store:
        assert [first, second, third, found] == [handle_tool_call(store, args) for _, args in calls[:4]]
    assert listed == (
        "1 cleared result in the store, newest first:\n"
        f"{handle}  Read call toolu_01, about 1,200 tokens in 3 pages, from session.jsonl"
    )


def test_a_bad_fetch_is_a_tool_error_and_the_server_keeps_serving(served: str) -> None:
    missing = "wf-" + "0" * 32
    _, results = session_calls(
        served,
        [
            ("windowfit_fetch", {"handle": missing}),
            ("windowfit_fetch", {"handle": ENTRY.handle, "page": 4}),
            ("windowfit_fetch", {"handle": ENTRY.handle, "page": 3}),
        ],
    )
    unknown, out_of_range, after = results
    assert is_error(unknown) and f"no result is kept under {missing}" in texts(unknown)[0]
    assert is_error(out_of_range) and f"{ENTRY.handle} has 3 pages" in texts(out_of_range)[0]
    assert not is_error(after) and page_of(texts(after)[0]) == "THE END"


def test_a_file_that_is_not_a_store_stops_the_server_before_it_starts(run_cli: Run, tmp_path: Path) -> None:
    import sqlite3

    other = tmp_path / "app.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE users (name TEXT)")
    result = run_cli("mcp", "--store", str(other))
    assert result.exit_code == 3
    assert result.stdout == ""
    assert result.stderr.startswith(f"error: {other}: a SQLite database, but not a windowfit store")


def test_without_the_sdk_the_command_names_the_extra(run_cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    from windowfit.cli import mcp_cmd

    def missing() -> None:
        raise ModuleNotFoundError("No module named 'mcp'")

    monkeypatch.setattr(mcp_cmd, "_sdk", missing)
    result = run_cli("mcp", "--store", "unused.db")
    assert result.exit_code == 2
    assert result.stderr == "error: windowfit mcp needs the MCP SDK (No module named 'mcp')\n" \
        "hint: pip install 'windowfit[mcp]'\n"  # fmt: skip


def test_a_server_that_cannot_be_reached_is_exit_4_with_the_password_masked(run_cli: Run, tmp_path: Path) -> None:
    require_psycopg()
    url = f"postgresql://fleet:hunter2-pw@/store?host={tmp_path}&port=5999"
    result = run_cli("mcp", "--store", url)
    assert result.exit_code == 4
    assert result.stdout == ""
    assert result.stderr.startswith(f"error: postgresql://fleet:***@/store?host={tmp_path}&port=5999: cannot connect")
    assert "hunter2-pw" not in result.stderr
