"""Fitting with a store (issue 13, SPEC section 5 and invariant 9's second half):
stubs name content-derived handles, every cleared result can be fetched back
exactly, a second fit writes the same bytes, and the estimate stays honest
with the longer stubs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import observed_transcripts, subagents, transcripts

from windowfit.fitting import Fitter, Text, ToolResult, Transcript, fit_request, make_estimator
from windowfit.fitting._json import dumps
from windowfit.fitting.fit import apply_plan, fit, keep_cleared, plan_fit, repaired, stub_text
from windowfit.fitting.formats import load_path
from windowfit.fitting.request import with_request_parts, write_transcript
from windowfit.fitting.store import (
    PAGE_TOKENS,
    ResultStore,
    full_text,
    handle_for,
    open_store,
    result_raw,
    result_text,
    split_pages,
)
from windowfit.fitting.store.base import PAGING
from windowfit.fitting.wire.anthropic import block_to_json
from windowfit.fitting.wire.bodies import body_from_transcript

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ROOT = Path(__file__).parents[1]
HANDLE = re.compile(r"wf-[0-9a-f]{32}")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ResultStore]:
    with open_store(str(tmp_path / "store.db")) as opened:
        yield opened


@st.composite
def cases(draw: st.DrawFn) -> tuple[Transcript, int, int]:
    transcript = draw(st.one_of(transcripts(), subagents(), observed_transcripts()))
    size = make_estimator().request(transcript)
    budget = max(1, int(size * draw(st.floats(0.01, 1.0))))
    return transcript, budget, draw(st.sampled_from((1, 4)))


def _assert_every_cleared_result_comes_back_exactly(transcript: Transcript, store: ResultStore, plan: object) -> None:
    from windowfit.fitting.fit import Plan

    assert isinstance(plan, Plan)
    messages = repaired(transcript, plan).messages
    for ref in plan.cleared:
        block = messages[ref.message_index].content[ref.block_index]
        assert isinstance(block, (ToolResult, Text))
        assert ref.handle and ref.pages == store.entry(ref.handle).pages
        # Every page of every handle, joined, is the cleared result's text, and its JSON restores the block.
        assert full_text(store, ref.handle) == result_text(block)
        raw = store.raw(ref.handle)
        if raw is not None:
            assert raw == dumps(block_to_json(block))
        elif isinstance(block, Text):  # a plain text observation: its text is all of it
            assert not block.extra and block.text == full_text(store, ref.handle)
        else:  # one plain text block answering the call: the text and the call id are all of it
            (inner,) = block.content
            assert isinstance(inner, Text) and not inner.extra and inner.text == full_text(store, ref.handle)
            assert not (block.is_error or block.extra or block.name)


# -- properties ------------------------------------------------------------------------------------------


@PROPERTY
@given(cases())
def test_inv9_every_cleared_result_is_retrievable_exactly_by_the_handle_its_stub_names(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[Transcript, int, int]
) -> None:
    transcript, budget, batch = case
    with open_store(str(tmp_path_factory.mktemp("s") / "s.db")) as store:
        fitted = fit(transcript, budget=budget, batch_size=batch, store=store)
        plan = fitted.plan
        _assert_every_cleared_result_comes_back_exactly(transcript, store, plan)
        out = fitted.transcript.messages if plan.outcome == "cleared" else ()
        for ref in plan.cleared if plan.outcome == "cleared" else ():
            stub = out[ref.message_index].content[ref.block_index]
            text = stub.text if isinstance(stub, Text) else stub.content[0].text  # type: ignore[union-attr]
            assert HANDLE.findall(text) == [ref.handle]
            assert f"({ref.pages:,} page" in text
        assert {e.handle for e in store.entries()} == {r.handle for r in plan.cleared}


@PROPERTY
@given(cases())
def test_inv1_with_a_store_the_longer_stubs_are_counted_and_the_request_fits(case: tuple[Transcript, int, int]) -> None:
    transcript, budget, batch = case
    plan = plan_fit(transcript, budget=budget, batch_size=batch, page_tokens=PAGE_TOKENS)
    out = apply_plan(transcript, plan)
    assert plan.tokens_after == make_estimator().request(out)
    assert plan.tokens_after <= budget or plan.outcome == "too-long"
    est = make_estimator()
    for ref in plan.results:
        # The stub's estimate is of the stub with its handle, so min_clear_ratio compares like with like.
        block = repaired(transcript, plan).messages[ref.message_index].content[ref.block_index]
        assert isinstance(block, (ToolResult, Text))
        from windowfit.fitting.fit import _stub

        assert ref.stub_tokens == est.block(_stub(block, ref))
    for ref in plan.candidates:
        assert ref.tokens >= plan.options.min_clear_ratio * ref.stub_tokens


@PROPERTY
@given(cases())
def test_handles_and_page_counts_are_pure_functions_of_the_content(case: tuple[Transcript, int, int]) -> None:
    transcript, budget, batch = case
    one = plan_fit(transcript, budget=budget, batch_size=batch, page_tokens=PAGE_TOKENS)
    two = plan_fit(transcript, budget=budget, batch_size=batch, page_tokens=PAGE_TOKENS, estimator=make_estimator())
    assert one == two
    messages = repaired(transcript, one).messages
    for ref in one.results:
        block = messages[ref.message_index].content[ref.block_index]
        assert isinstance(block, (ToolResult, Text))
        assert ref.handle == handle_for(ref.tool, ref.call_id, result_text(block), result_raw(block))
        assert ref.pages == len(split_pages(result_text(block), PAGING, PAGE_TOKENS))


# -- the sample, through the library ---------------------------------------------------------------------

SAMPLE = ROOT / "sample_transcripts" / "ru_subagent_chapters.jsonl"


def sample() -> Transcript:
    (transcript,) = load_path(str(SAMPLE))
    return transcript


def test_a_second_fit_into_the_same_store_writes_a_byte_identical_request(store: ResultStore) -> None:
    transcript = sample()
    first = fit(transcript, budget=50_000, store=store)
    entries = store.entries()
    second = fit(sample(), budget=50_000, store=store)
    assert first.plan.outcome == "cleared" and len(first.plan.cleared) == 24
    for to in ("same", "anthropic", "openai"):
        assert write_transcript(first.transcript, to=to) == write_transcript(second.transcript, to=to)
    assert [e.handle for e in store.entries()] == [e.handle for e in entries]
    _assert_every_cleared_result_comes_back_exactly(transcript, store, second.plan)


def test_without_a_store_the_stub_is_as_before_and_names_no_handle() -> None:
    plan = plan_fit(sample(), budget=50_000)
    out = apply_plan(sample(), plan)
    ref = plan.cleared[0]
    block = out.messages[ref.message_index].content[ref.block_index]
    assert isinstance(block, ToolResult) and isinstance(block.content[0], Text)
    assert block.content[0].text == stub_text(ref.tool, ref.call_id, ref.tokens)
    assert "Run the tool again if you need it." in block.content[0].text
    assert not HANDLE.search(block.content[0].text) and ref.handle == "" and ref.pages == 0


def test_a_stub_with_a_store_says_what_how_big_and_how_to_fetch_it() -> None:
    text = stub_text("Read", "toolu_1", 12_345, "wf-" + "a" * 32, 7)
    assert "Read" in text and "toolu_1" in text and "12,345 tokens" in text
    assert "wf-" + "a" * 32 + " (7 pages)" in text
    assert "windowfit_fetch tool (this handle, pages 1 to 7)" in text
    assert "`windowfit fetch` and this handle" in text
    assert "Run the tool again" not in text
    assert "(this handle, page 1)" in stub_text("Read", "toolu_1", 10, "wf-" + "a" * 32, 1)


def test_stub_with_a_handle_is_longer_so_fewer_results_are_clearable() -> None:
    transcript = sample()
    plain = plan_fit(transcript, budget=50_000)
    stored = plan_fit(transcript, budget=50_000, page_tokens=PAGE_TOKENS)
    assert all(s.stub_tokens > p.stub_tokens for p, s in zip(plain.results, stored.results, strict=True))
    assert stored.tokens_after > plain.tokens_after  # the longer stubs are counted, not assumed away


def test_plan_fit_puts_nothing_keep_cleared_does(store: ResultStore) -> None:
    transcript = sample()
    plan = plan_fit(transcript, budget=50_000, page_tokens=PAGE_TOKENS)
    assert store.entries() == ()
    entries = keep_cleared(transcript, plan, store)
    assert [e.handle for e in entries] == [r.handle for r in plan.cleared]
    assert keep_cleared(transcript, plan_fit(transcript, budget=50_000), store) == ()  # planned without a store


def test_fitter_and_fit_request_keep_cleared_results(store: ResultStore) -> None:
    body = body_from_transcript(with_request_parts(sample(), model="m", max_tokens=100), to="anthropic")
    fitter = Fitter(50_000, store=store)
    first = fitter.fit(body)
    assert fitter.options.page_tokens == PAGE_TOKENS
    handles = [r.handle for r in first.plan.cleared]
    assert handles and {e.handle for e in store.entries()} == set(handles)
    again = fit_request(body, budget=50_000, store=store)
    assert again.body == first.body
    text = str(first.body["messages"][2]["content"])
    assert handles[0] in text


def test_an_observation_is_kept_and_its_stub_names_its_handle(store: ResultStore) -> None:
    from windowfit.fitting import Message, Source

    big = "line of output\n" * 2000
    messages = (
        Message("user", (Text("go"),), Source("t", 1)),
        Message("assistant", (Text("run ls"),), Source("t", 2)),
        Message("user", (Text(big, observation_of="ls"),), Source("t", 3)),
        Message("assistant", (Text("again"),), Source("t", 4)),
        Message("user", (Text(big + "more\n", observation_of="ls"),), Source("t", 5)),
        Message("assistant", (Text("done"),), Source("t", 6)),
    )
    transcript = Transcript((), (), messages)
    fitted = fit(transcript, budget=9000, store=store, batch_size=1)
    (ref,) = fitted.plan.cleared
    stub = fitted.transcript.messages[ref.message_index].content[0]
    assert isinstance(stub, Text) and stub.observation_of == "ls" and ref.handle in stub.text
    assert full_text(store, ref.handle) == big and store.raw(ref.handle) is None
    assert ref.pages == store.entry(ref.handle).pages > 1
