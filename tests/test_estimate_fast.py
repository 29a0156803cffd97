"""The estimator's fast paths against its general ones: a ``ScriptRule`` message summed in integers
(``Estimator._script_blocks``) against a ``CharCounts`` per block (``Estimator._blocks_general``), the
memo found by identity against the one found by equality, and ``sum_counts`` against adding one by one."""

from __future__ import annotations

from functools import reduce
from operator import add

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import texts, transcripts

from windowfit.fitting import Estimator, Image, Message, Other, Text, Thinking, ToolCall, ToolResult, Transcript
from windowfit.fitting.estimate import SAFE, SEED, ZERO, CharCounts, make_estimator, sum_counts

RULES = ("seed", "custom:ascii=3.7,cjk=1.1,other=2.5", "custom:ascii=4")

_text = texts(0, 12) | st.text(max_size=40)  # long ASCII runs too
_leaf = st.one_of(
    _text.map(Text),
    _text.map(Thinking),
    st.builds(ToolCall, st.sampled_from(["a", "b"]), _text, _text),
    st.builds(Image, st.just("image/png"), st.integers(0, 9), st.integers(1, 3000) | st.none(), st.integers(1, 3000)),
    st.builds(Other, st.just("document"), _text, _text, st.integers(0, 2)),
)
_blocks = st.one_of(_leaf, st.builds(ToolResult, st.sampled_from(["a", "b"]), st.lists(_leaf, max_size=3).map(tuple)))


@settings(max_examples=200, deadline=None)
@given(
    blocks=st.lists(_blocks, max_size=5).map(tuple),
    rule=st.sampled_from(RULES),
    overhead=st.sampled_from([0.0, 1.0, 2.5]),
)
def test_script_rule_fast_path_matches_the_general_one(
    blocks: tuple[Text | Thinking | ToolCall | ToolResult | Image | Other, ...], rule: str, overhead: float
) -> None:
    est = make_estimator(rule, overhead=overhead)
    assert type(est.rule) is type(SEED)
    fast = est.blocks(blocks)
    assert fast == est._blocks_general(blocks)
    assert [est.block(b) for b in blocks] == [est._block_general(b) for b in blocks] == list(fast.block_tokens)


CLASS_RULES = ("safe", "custom:ascii=3,devanagari=0.5", "custom:ascii=0.0000000001,devanagari=0.5")
"""Rules with finer classes: the last one's weights do not fit in 64 bits."""


@settings(max_examples=200, deadline=None)
@given(blocks=st.lists(_blocks, max_size=5).map(tuple), rule=st.sampled_from(CLASS_RULES))
def test_class_rule_block_fast_path_matches_the_general_one(
    blocks: tuple[Text | Thinking | ToolCall | ToolResult | Image | Other, ...], rule: str
) -> None:
    est = make_estimator(rule)
    assert type(est.rule) is type(SAFE)
    assert [est.block(b) for b in blocks] == [est._block_general(b) for b in blocks]
    assert [est.block(b) for b in blocks] == list(est.blocks(blocks).block_tokens)


@settings(max_examples=50, deadline=None)
@given(transcripts())
def test_fast_path_on_generated_transcripts(t: Transcript) -> None:
    est = Estimator(SEED)
    for m in t.messages:
        assert est.blocks(m.content) == est._blocks_general(m.content)


@settings(max_examples=50, deadline=None)
@given(transcripts())
def test_memo_gives_the_estimate_computed_afresh_and_shares_equal_ones(t: Transcript) -> None:
    est = Estimator(SEED)
    first = [est.message(m) for m in t.messages]
    again = [est.message(m) for m in t.messages]  # found in the memo
    copies = [est.message(Message(m.role, tuple(m.content), m.source, m.extra)) for m in t.messages]  # by equality
    assert first == again == copies == [est._blocks_general(m.content) for m in t.messages]
    assert all(a is b for a, b in zip(first, again, strict=True))
    assert all(est._shared[e] is e for e in first)  # one object for each distinct estimate
    assert len({id(e) for e in first}) == len(set(first))  # equal estimates are the same object
    assert len(est._memo) == len(set(t.messages))  # an equal copy is not remembered twice


@given(st.lists(texts(0, 8), max_size=6), st.booleans())
def test_sum_counts_is_adding_one_by_one(parts: list[str], fine: bool) -> None:
    count = SAFE.count if fine else SEED.count
    counts = [count(p) for p in parts]
    assert sum_counts(counts) == reduce(add, counts, ZERO)
    assert sum_counts([]) == ZERO == CharCounts()
