"""The agent's side of the store: the ``windowfit_fetch`` tool definitions, the
handler a harness calls with the model's input, and ``offload`` for data tools."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from strategies import texts

from windowfit.fitting.estimate import make_estimator
from windowfit.fitting.store import (
    ANTHROPIC_TOOL,
    OPENAI_TOOL,
    RESPONSES_TOOL,
    TOOL_NAME,
    ResultStore,
    full_text,
    handle_for,
    handle_tool_call,
    offload,
    open_store,
    split_pages,
    stored_result,
    text_tokens,
)
from windowfit.fitting.store.base import PAGING
from windowfit.fitting.store.tool import SEARCH_MAX_CHARS

CHAPTER = "".join(f"{i:04d} the quick brown fox jumps over the lazy dog\n" for i in range(1, 401))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ResultStore]:
    with open_store(str(tmp_path / "s.db")) as opened:
        yield opened


def put(store: ResultStore, text: str = CHAPTER, page_tokens: int = 500) -> str:
    item = stored_result("Read", "toolu_1", text, source="t.jsonl", page_tokens=page_tokens)
    store.put_many([item])
    return item.handle


# -- definitions -------------------------------------------------------------------------------------------


def test_the_definitions_name_the_tool_and_share_one_valid_input_schema() -> None:
    schemas = [ANTHROPIC_TOOL["input_schema"], OPENAI_TOOL["function"]["parameters"], RESPONSES_TOOL["parameters"]]
    assert ANTHROPIC_TOOL["name"] == OPENAI_TOOL["function"]["name"] == RESPONSES_TOOL["name"] == TOOL_NAME
    assert TOOL_NAME == "windowfit_fetch"
    assert OPENAI_TOOL["type"] == RESPONSES_TOOL["type"] == "function"
    for schema in schemas:
        Draft202012Validator.check_schema(schema)
        check = Draft202012Validator(schema)
        assert check.is_valid({"handle": "wf-" + "0" * 32})
        assert check.is_valid({"handle": "wf-" + "0" * 32, "page": 3, "search": "fox"})
        assert not check.is_valid({"page": 1})  # the handle is required
        assert not check.is_valid({"handle": "h", "page": 0})
        assert not check.is_valid({"handle": "h", "extra": 1})
    assert sorted(schemas[0]["properties"]) == ["handle", "page", "search"]
    # The API's own rules: a name of letters, digits, _ and -, at most 64; a description the model can act on.
    assert len(TOOL_NAME) <= 64 and TOOL_NAME.replace("_", "").isalnum()
    assert "handle" in ANTHROPIC_TOOL["description"] and "page" in ANTHROPIC_TOOL["description"]
    json.dumps([ANTHROPIC_TOOL, OPENAI_TOOL, RESPONSES_TOOL])  # plain JSON, ready to send


# -- the handler ---------------------------------------------------------------------------------------------


def test_a_page_comes_back_with_a_header_and_the_way_to_the_next(store: ResultStore) -> None:
    handle = put(store)
    pages = split_pages(CHAPTER, PAGING, 500)
    answer = handle_tool_call(store, {"handle": handle, "page": 1})
    header, rest = answer.split("\n", 1)
    assert header.startswith(f"[windowfit_fetch] {handle}, page 1 of {len(pages)}: the result of Read (call toolu_1)")
    assert rest == pages[0] + f"\n[windowfit_fetch] page 2 of {len(pages)} follows: call windowfit_fetch with page 2."
    last = handle_tool_call(store, {"handle": handle, "page": len(pages)})
    assert last.split("\n", 1)[1] == pages[-1]  # nothing follows the last page
    assert handle_tool_call(store, {"handle": handle}) == answer  # page 1 by default


def test_openai_arguments_arrive_as_a_json_string(store: ResultStore) -> None:
    handle = put(store)
    assert handle_tool_call(store, json.dumps({"handle": handle, "page": 2})) == handle_tool_call(
        store, {"handle": handle, "page": 2}
    )


@pytest.mark.parametrize(
    ("tool_input", "says"),
    [
        ({"handle": "wf-" + "0" * 32}, "no result is kept under wf-0000"),
        ({"handle": "{handle}", "page": 99}, "has 10 pages; ask for a page from 1 to 10"),
        ({"handle": "{handle}", "page": 0}, "has 10 pages"),
        ({"handle": "{handle}", "page": "two"}, "page must be a whole number"),
        ({"handle": "{handle}", "page": True}, "page must be a whole number"),
        ({"handle": "{handle}", "search": 3}, "search must be a text"),
        ({}, "handle is missing"),
        ({"handle": ""}, "handle is missing"),
        ("not json", "the input is not JSON"),
        ("[1, 2]", "the input must be an object"),
    ],
)
def test_what_the_model_gets_wrong_comes_back_as_text_it_can_act_on(
    store: ResultStore, tool_input: object, says: str
) -> None:
    handle = put(store)
    if isinstance(tool_input, dict):
        tool_input = {k: handle if v == "{handle}" else v for k, v in tool_input.items()}
    answer = handle_tool_call(store, tool_input)  # type: ignore[arg-type]
    assert answer.startswith("[windowfit_fetch error] ")
    assert says in answer
    assert "\n" not in answer


def test_search_returns_the_matching_lines_with_their_page_and_line_numbers(store: ResultStore) -> None:
    handle = put(store)
    pages = split_pages(CHAPTER, PAGING, 500)
    answer = handle_tool_call(store, {"handle": handle, "search": "0123 THE"})  # case-insensitive
    header, *rows = answer.split("\n")
    assert "1 line of the result of Read" in header and "10 pages" in header
    where = next(n for n, p in enumerate(pages, 1) if "0123 the" in p)
    assert rows == [f"page {where}, line 123: 0123 the quick brown fox jumps over the lazy dog"]
    nothing = handle_tool_call(store, {"handle": handle, "search": "cat"})
    assert nothing.startswith(f"[windowfit_fetch] {handle}: 0 lines")


def test_search_output_is_bounded_and_says_how_many_it_left_out(store: ResultStore) -> None:
    handle = put(store)
    answer = handle_tool_call(store, {"handle": handle, "search": "fox"})
    rows = [line for line in answer.split("\n") if line.startswith("page ")]
    assert 0 < len(rows) < 400
    assert len(answer) <= SEARCH_MAX_CHARS + 400
    assert answer.endswith(f"[windowfit_fetch] {400 - len(rows)} more not shown: search for something narrower, "
                           "or read a page.")  # fmt: skip
    assert "400 lines" in answer.split("\n")[0]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.one_of(texts(0, 30), st.just("needle"), st.just("x" * 300)), min_size=1, max_size=40),
    st.integers(min_value=5, max_value=80),
)
@example(["\n", "needle"], 5)
def test_search_finds_every_matching_line_on_the_page_it_starts(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str], page_tokens: int
) -> None:
    text = "\n".join(lines)
    with open_store(str(tmp_path_factory.mktemp("s") / "s.db")) as store:
        handle = put(store, text, page_tokens)
        answer = handle_tool_call(store, {"handle": handle, "search": "needle"})
    lines = text.split("\n")  # a drawn text may hold newlines of its own: the store's lines are the text's
    pages = split_pages(text, PAGING, page_tokens)
    starts, at = [], 0
    for page in pages:
        starts.append(at)
        at += len(page)
    expected = []
    offset = 0
    for number, line in enumerate(lines, 1):
        if "needle" in line.casefold():  # the page holding the line's first character
            expected.append((max(i for i, start in enumerate(starts, 1) if start <= offset), number))
        offset += len(line) + 1
    found = []
    for row in answer.split("\n")[1:]:
        if row.startswith("page "):
            where, _ = row.split(": ", 1)
            page_part, line_part = where.split(", ")
            found.append((int(page_part.split()[1]), int(line_part.split()[1])))
    assert found == expected[: len(found)]
    assert f": {len(expected)} line" in answer.split("\n")[0]


# -- offload ----------------------------------------------------------------------------------------------


def test_offload_keeps_the_whole_output_and_returns_a_bounded_first_page(store: ResultStore) -> None:
    big = CHAPTER * 5
    result = offload(big, store, tool="search", call_id="c9", source="harness")
    assert result.handle == handle_for("search", "c9", big)
    assert result.tokens == text_tokens(big, make_estimator())
    assert result.pages == len(split_pages(big, PAGING, 2000)) > 1
    assert result.first_page == split_pages(big, PAGING, 2000)[0]
    assert text_tokens(result.first_page, make_estimator()) <= 2000
    assert full_text(store, result.handle) == big
    entry = store.entry(result.handle)
    assert (entry.tool, entry.call_id, entry.source) == ("search", "c9", "harness")
    context = result.context_text
    assert context.startswith(result.first_page)
    assert result.handle in context and f"page 1 of {result.pages}" in context and "windowfit_fetch" in context
    assert offload(big, store, tool="search", call_id="c9").handle == result.handle  # same output, same handle


def test_offload_of_a_small_output_puts_it_in_the_context_whole(store: ResultStore) -> None:
    result = offload("3 matches\n", store, tool="search", call_id="c1", page_tokens=100)
    assert result.pages == 1 and result.context_text == "3 matches\n"
    assert store.entry(result.handle).pages == 1
