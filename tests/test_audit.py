"""The audit's numbers by hand with a fake tokenizer (one token per word), the
content-kind classifier, the provider's counts, and ``suggest_rule``: it never
under-estimates a sample, and it is as tight as the rounding allows (checked
against every vertex of the linear program on small cases)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowfit.fitting import SEED, CharCounts, Estimator, Message, ScriptRule, Source, load_path, make_estimator
from windowfit.fitting.audit import (
    CEIL_MARGIN,
    MAX_CHARS_PER_TOKEN,
    MAX_TOKENS_PER_CHAR,
    Sample,
    audit_tokenizer,
    audit_transcript,
    block_texts,
    classify_content,
    covers,
    dominant_class,
    estimate_over,
    fit_tokens_per_char,
    plausible,
    rule_spec,
    suggest_rule,
    tightest,
    usage_growth_samples,
)
from windowfit.fitting.errors import Unsuggestable
from windowfit.fitting.tokenizers import load_tokenizer
from windowfit.fitting.transcript import Image, Other, Text, Thinking, ToolCall, ToolDef, ToolResult, Transcript, Usage


@dataclass(frozen=True)
class Words:
    """A fake tokenizer: one token per whitespace-separated word."""

    name: str = "words"

    def count(self, text: str) -> int:
        return len(text.split())


SEED_ESTIMATOR = make_estimator("seed")


def message(role: str, *blocks: Text | Thinking | ToolCall | ToolResult | Image | Other, line: int) -> Message:
    return Message(role, tuple(blocks), Source("t.jsonl", line))  # type: ignore[arg-type]


HAND = Transcript(
    system=(Text("be brief"),),
    tools=(ToolDef("read", "Read a file", '{"type":"object"}'),),
    messages=(
        message("user", Text("one two three four"), line=1),
        message(
            "assistant",
            Text("a b c d e f g h"),
            ToolCall("c1", "read", '{"path":"x"}'),
            line=2,
        ),
        message(
            "user",
            ToolResult("c1", (Text("да да да да"), Image("image/png", 1000, 10, 10))),
            line=3,
        ),
        message("assistant", Text("日本語"), line=4),
    ),
    source=Source("t.jsonl"),
)
"""By hand, seed rule (ascii 4, cjk 1, other 2 chars per token), each block rounded up, no overheads;
real = words:

- system "be brief": 8 ascii -> 2; 2 words
- tool definition: "read" + "Read a file" + '{"type":"object"}' = 4 + 11 + 17 = 32 ascii -> 8; 1 + 3 + 1 = 5 words
- message 0 "one two three four": 18 ascii -> 5; 4 words
- message 1: "a b c d e f g h" 15 ascii -> 4, 8 words (short by 4); the call "read" + '{"path":"x"}'
  = 16 ascii -> 4, 2 words. The message: 31 ascii -> 8, 10 words: short by 2.
- message 2: "да да да да" = 8 other + 3 ascii spaces -> ceil(4 + 0.75) = 5; 4 words. The image is left out.
- message 3: "日本語" 3 cjk -> 3; 1 word

Totals: estimate 2 + 8 + 5 + 8 + 5 + 3 = 31, real 2 + 5 + 4 + 10 + 4 + 1 = 26.
"""


# --------------------------------------------------------------------------
# The audit, by hand


def test_hand_computed_blocks_messages_and_totals() -> None:
    audit = audit_tokenizer(HAND, SEED_ESTIMATOR, Words())
    assert [(b.message_index, b.block_index, b.kind, b.estimate, b.real) for b in audit.blocks] == [
        (None, 0, "text", 2, 2),
        (None, 0, "tool_definition", 8, 5),
        (0, 0, "text", 5, 4),
        (1, 0, "text", 4, 8),
        (1, 1, "tool_call", 4, 2),
        (2, 0, "tool_result", 5, 4),
        (3, 0, "text", 3, 1),
    ]
    assert [(m.index, m.role, m.estimate, m.real) for m in audit.messages] == [
        (None, "system", 2, 2),
        (None, "tool definitions", 8, 5),
        (0, "user", 5, 4),
        (1, "assistant", 8, 10),
        (2, "user", 5, 4),
        (3, "assistant", 3, 1),
    ]
    assert (audit.estimate, audit.real) == (31, 26)
    assert audit.messages_under == 1
    assert audit.blocks_under == 1


def test_script_class_and_content_kind_per_block() -> None:
    audit = audit_tokenizer(HAND, SEED_ESTIMATOR, Words())
    assert [(b.script, b.content) for b in audit.blocks] == [
        ("ascii", "prose"),
        ("ascii", "json"),  # the longest text of a tool definition is its schema
        ("ascii", "prose"),
        ("ascii", "prose"),
        ("ascii", "json"),  # a tool call's input
        ("other", "prose"),  # 8 Cyrillic letters beat 3 ASCII spaces
        ("cjk", "prose"),
    ]


def test_ratio_rows_sum_blocks_of_each_class_and_kind() -> None:
    audit = audit_tokenizer(HAND, SEED_ESTIMATOR, Words())
    by_script = {r.group: (r.blocks, r.chars, r.estimate, r.real, r.under) for r in audit.by_script}
    assert by_script == {
        "ascii": (5, 8 + 32 + 18 + 15 + 16, 2 + 8 + 5 + 4 + 4, 2 + 5 + 4 + 8 + 2, 1),
        "cjk": (1, 3, 3, 1, 0),
        "other": (1, 11, 5, 4, 0),
    }
    by_content = {r.group: (r.blocks, r.estimate, r.real) for r in audit.by_content}
    assert by_content == {"prose": (5, 19, 19), "code": (0, 0, 0), "json": (2, 12, 7), "logs": (0, 0, 0)}
    assert next(r for r in audit.by_content if r.group == "prose").ratio == 1.0
    assert next(r for r in audit.by_content if r.group == "code").ratio is None


def test_worst_blocks_and_messages_are_the_under_estimates_largest_first() -> None:
    audit = audit_tokenizer(HAND, SEED_ESTIMATOR, Words())
    (block,) = audit.worst_blocks
    assert (block.message_index, block.block_index, block.shortfall, block.line) == (1, 0, 4, 2)
    assert block.ratio == 0.5
    (worst,) = audit.worst_messages
    assert (worst.index, worst.shortfall, worst.ratio) == (1, 2, 0.8)


def test_verdict_names_the_worst_message_with_its_location() -> None:
    audit = audit_tokenizer(HAND, SEED_ESTIMATOR, Words())
    assert not audit.safe
    assert audit.verdict("t.jsonl") == (
        "NOT safe for this transcript with words: 1 of 6 messages under-estimated; "
        "the worst, message 1 (t.jsonl:2), by 2 tokens (ratio 0.80)"
    )


def test_safe_when_no_message_is_under_estimated_even_if_a_block_is() -> None:
    # One block short by 4 but its message over: the message is what a request is built from.
    transcript = Transcript(
        (), (), (message("user", Text("a b c d e f g h"), Text("x" * 60), line=1),), source=Source("t.jsonl")
    )
    audit = audit_tokenizer(transcript, SEED_ESTIMATOR, Words())
    assert audit.blocks_under == 1
    assert audit.safe
    assert audit.verdict("t.jsonl") == "safe for this transcript with words: no message is under-estimated"


def test_every_tokenizer_sees_the_same_blocks() -> None:
    audit = audit_transcript(HAND, SEED_ESTIMATOR, [Words(), Words("words-again")])
    first, second = audit.tokenizers
    assert first.blocks == second.blocks
    assert audit.estimator == "seed"
    assert audit.usage is None


def test_samples_are_the_messages_with_text_per_tokenizer() -> None:
    audit = audit_transcript(HAND, SEED_ESTIMATOR, [Words(), Words("w2")])
    samples = audit.tokenizer_samples()
    assert len(samples) == 2 * 6
    assert samples[3] == Sample(CharCounts(31, 0, 0), 10)
    assert samples[3].where == "t.jsonl:2 message 1, words"


def test_block_texts_follow_what_the_estimator_counts() -> None:
    assert block_texts(Text("hi")) == ("hi",)
    assert block_texts(Thinking("hm")) == ("hm",)
    assert block_texts(ToolCall("c", "grep", '{"q":1}')) == ("grep", '{"q":1}')
    assert block_texts(ToolResult("c", (Text("a"), Image("image/png", 5), Text("b")))) == ("a", "b")
    assert block_texts(Other("document", '{"data":"QUJD"}', counted='{"data":""}', binary_payloads=1)) == (
        '{"data":""}',
    )
    assert block_texts(Image("image/png", 5)) == ()


def test_the_estimate_equals_the_estimators_own_text_tokens() -> None:
    text_only = make_estimator("seed", overhead=0)
    audit = audit_tokenizer(HAND, SEED_ESTIMATOR, Words())
    for m in audit.messages:
        if m.index is not None and m.index != 2:  # message 2 holds an image: its fixed cost is not text
            assert m.estimate == text_only.message(HAND.messages[m.index]).tokens


def test_dominant_class_ties_go_to_ascii_then_cjk() -> None:
    assert dominant_class(CharCounts(2, 2, 2)) == "ascii"
    assert dominant_class(CharCounts(1, 2, 2)) == "cjk"
    assert dominant_class(CharCounts(1, 0, 2)) == "other"


# --------------------------------------------------------------------------
# The provider's counts


USAGE = Transcript(
    (),
    (),
    (message("user", Text("x" * 40), line=1), message("assistant", Text("y" * 80), line=2)),
    source=Source("u.jsonl"),
    usage=(
        Usage(1, 20, source=Source("u.jsonl", 2)),
        Usage(2, 20, cache_read_tokens=20, source=Source("u.jsonl", 3)),
    ),
)
"""Whole requests, overheads included (message 4, block 3): 40 ascii -> 10 + 7 = 17 vs 20
measured (0.85); then 17 + 80 / 4 + 7 = 44 vs 40 (1.1)."""


def test_provider_counts_ratio_distribution_and_worst_points() -> None:
    audit = audit_transcript(USAGE, SEED_ESTIMATOR, [])
    usage = audit.usage
    assert usage is not None
    assert [(u.before, u.estimated, u.measured) for u in usage.points] == [(1, 17, 20), (2, 44, 40)]
    assert (usage.min_ratio, usage.median_ratio, usage.max_ratio, usage.under) == (0.85, 1.1, 1.1, 1)
    assert [u.before for u in usage.worst] == [1, 2]


def test_growth_between_provider_counts_is_a_sample_without_the_hidden_preamble() -> None:
    (sample,) = usage_growth_samples(USAGE, SEED_ESTIMATOR)
    # message 1 alone: 80 ascii, overheads 4 + 3; the provider counted 40 - 20 more
    assert sample == Sample(CharCounts(80, 0, 0), 20, 7)
    assert sample.needed == 13
    assert "messages 1-1" in sample.where


def test_growth_with_more_tokens_than_bytes_is_implausible() -> None:
    assert plausible(Sample(CharCounts(3, 0, 0), 3))
    assert not plausible(Sample(CharCounts(3, 0, 0), 4))
    assert plausible(Sample(CharCounts(0, 1, 2), 12))
    assert plausible(Sample(CharCounts(1, 0, 0), 30, fixed=29))


# --------------------------------------------------------------------------
# Kinds of content


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("", "prose"),
        ("The store keeps the newest results whole.\nOld ones are cleared in batches of four.", "prose"),
        ("Старый смотритель маяка вспоминал прошлую зиму.", "prose"),
        ("駅前の古い喫茶店には、今日も常連客が三人だけ座っていた。", "prose"),
        ("# Notes\n\n- first point (see above)\n- second point\n\nSome closing words.", "prose"),
        ('{"city":"Paris","temp_c":12}', "json"),
        ('[{"id": 1}, {"id": 2}]', "json"),
        ('{"a": 1}\n{"a": 2}\n{"a": 3}', "json"),
        ('  "id": "m_1",\n  "date": "2025-03-31",\n  "likes": 3,\n}', "json"),
        ("| name | size |\n| --- | --- |\n| a | 1 |", "json"),
        ("id,name,size\n1,a,10\n2,b,20\n3,c,30", "json"),
        ("2025-03-14 22:05:00 INFO started\n2025-03-14 22:05:01 ERROR failed: disk full", "logs"),
        ("src/fit.py:130:    offset = entry.read()\ndocs/a.md:7:    offset = x", "logs"),
        ("collected 12 items\n\n....F.......\n==== 1 failed, 11 passed in 0.5s ====", "logs"),
        ("def f(x):\n    return x + 1\n\nclass A:\n    pass", "code"),
        ("     1\timport os\n     2\t\n     3\tdef main() -> None:\n     4\t    os.exit(0)", "code"),
        ("const x = 1;\nfunction f() {\n  return x;\n}", "code"),
        ("Here is the fix:\n```python\nx = 1\ny = 2\nprint(x + y)\n```", "code"),
        ("Mostly words here.\nAnd more words.\nStill prose.\nThe end.\n```\nx = 1\n```", "prose"),
    ],
)
def test_content_kind(text: str, kind: str) -> None:
    assert classify_content(text) == kind


def test_classifier_is_deterministic_and_total_on_odd_input() -> None:
    for text in ("{", "[1, 2", "   \n\n  ", "😀" * 10, "\x00\x01", "a" * 10_000):
        assert classify_content(text) == classify_content(text)
        assert classify_content(text) in ("prose", "code", "json", "logs")


# --------------------------------------------------------------------------
# suggest_rule


def test_suggest_one_class_by_hand() -> None:
    # 8 ascii chars are 4 tokens: ceil(8x) >= 4 needs 8x > 3; the program asks 8x >= 3.01,
    # x = 3.01 / 8, chars per token 8 / 3.01 = 2.657... -> 2.65 (rounded down)
    rule = suggest_rule([Sample(CharCounts(8, 0, 0), 4)])
    assert rule.ascii_chars_per_token == Fraction(265, 100)
    assert (rule.cjk_chars_per_token, rule.other_chars_per_token) == (1, 2)  # no such text: seed's
    assert rule.text_tokens(CharCounts(8, 0, 0)) == 4
    assert rule_spec(rule) == "custom:ascii=2.65,cjk=1,other=2"
    assert (rule.name, rule.message_overhead_tokens) == ("custom", SEED.message_overhead_tokens)


def test_suggest_two_independent_classes_by_hand() -> None:
    samples = [Sample(CharCounts(100, 0, 0), 30), Sample(CharCounts(0, 0, 10), 10)]
    exact = fit_tokens_per_char(samples)
    assert exact == (Fraction("29.01") / 100, None, Fraction("9.01") / 10)
    rule = suggest_rule(samples)
    assert (rule.ascii_chars_per_token, rule.other_chars_per_token) == (Fraction("3.44"), Fraction("1.10"))
    assert rule_spec(rule) == "custom:ascii=3.44,cjk=1,other=1.1"


def test_suggest_trades_classes_to_over_estimate_least() -> None:
    # A mixed sample could be covered by either class; a pure one pins ascii down.
    samples = [Sample(CharCounts(40, 0, 0), 10), Sample(CharCounts(40, 0, 40), 31)]
    ascii_, _, other = fit_tokens_per_char(samples)
    assert ascii_ is not None and other is not None
    assert 40 * ascii_ == 9 + CEIL_MARGIN  # tight
    assert 40 * ascii_ + 40 * other == 30 + CEIL_MARGIN  # tight


def test_fixed_tokens_lower_what_the_characters_must_cover() -> None:
    # 1 token left for 8 characters: any rule covers it, so ascii sits at the cap and keeps seed's 4
    assert fit_tokens_per_char([Sample(CharCounts(8, 0, 0), 4, fixed=3)])[0] == 1 / MAX_CHARS_PER_TOKEN
    assert suggest_rule([Sample(CharCounts(8, 0, 0), 4, fixed=3)]).ascii_chars_per_token == 4


def test_degenerate_trade_off_respects_tokens_per_char_ceilings() -> None:
    # 1 ascii + 26 cjk chars, 105 tokens: carrying it all on the ascii char would need 104 tokens per char
    ascii_, cjk, _ = fit_tokens_per_char([Sample(CharCounts(1, 26, 0), 105)])
    assert ascii_ is not None and cjk is not None
    assert ascii_ <= MAX_TOKENS_PER_CHAR[0] and cjk <= MAX_TOKENS_PER_CHAR[1]
    assert ascii_ + 26 * cjk == 104 + CEIL_MARGIN


def test_a_class_the_samples_do_not_constrain_keeps_the_base_constant() -> None:
    base = ScriptRule("mine", Fraction(3), Fraction("0.5"), Fraction("1.5"))
    # 1 cjk char beside 80 ascii: ascii alone covers the sample, cjk sits at the cap
    rule = suggest_rule([Sample(CharCounts(80, 1, 0), 30)], base=base)
    assert rule.cjk_chars_per_token == Fraction("0.5")
    assert rule.other_chars_per_token == Fraction("1.5")


def test_unsuggestable_inputs_are_domain_errors() -> None:
    with pytest.raises(Unsuggestable, match="no samples"):
        suggest_rule([])
    with pytest.raises(Unsuggestable, match="more tokens than the text has UTF-8 bytes"):
        suggest_rule([Sample(CharCounts(), 5)])
    with pytest.raises(Unsuggestable, match="here: 5 tokens for 4 characters"):
        suggest_rule([Sample(CharCounts(4, 0, 0), 5, where="here")])


def test_estimate_over_and_tightest() -> None:
    samples = [Sample(CharCounts(8, 0, 0), 4), Sample(CharCounts(80, 0, 0), 10)]
    rule = suggest_rule(samples)
    assert estimate_over(SEED, samples) == Fraction(2 + 20, 14)
    assert tightest(rule, samples, 1) == (samples[0],)
    assert estimate_over(rule, []) is None


@st.composite
def sample_lists(draw: st.DrawFn, max_size: int = 8) -> list[Sample]:
    """Samples a byte-level tokenizer could produce (no more tokens than UTF-8 bytes), some with fixed tokens."""
    samples = []
    for _ in range(draw(st.integers(1, max_size))):
        counts = CharCounts(*(draw(st.integers(0, 3000)) if draw(st.booleans()) else 0 for _ in range(3)))
        counts = counts if counts.total else CharCounts(1, 0, 0)
        tokens = draw(st.integers(0, counts.ascii + 4 * (counts.cjk + counts.other)))
        fixed = draw(st.sampled_from((0, 0, 0, 3, 10)))
        samples.append(Sample(counts, tokens, fixed))
    return samples


@settings(max_examples=200, deadline=None)
@given(sample_lists())
def test_suggested_rule_never_under_estimates_a_sample(samples: list[Sample]) -> None:
    rule = suggest_rule(samples)
    assert covers(rule, samples)
    assert all(rule.text_tokens(s.counts) + s.fixed >= s.tokens for s in samples)


@settings(max_examples=200, deadline=None)
@given(sample_lists())
def test_suggested_rule_is_not_looser_than_the_rounding(samples: list[Sample]) -> None:
    exact = fit_tokens_per_char(samples)
    floor = 1 / MAX_CHARS_PER_TOKEN
    rule = suggest_rule(samples)
    fitted = (rule.ascii_chars_per_token, rule.cjk_chars_per_token, rule.other_chars_per_token)
    for x, cpt in zip(exact, fitted, strict=True):
        if x is not None and x > floor:
            # 2 decimals rounded down: one more hundredth would count fewer tokens than the exact fit
            assert cpt <= 1 / x < cpt + Fraction(1, 100)
    constrained = [x for x in exact if x is not None and x > floor]
    if constrained:
        slack = [
            sum(c * (x or 0) for c, x in zip((s.counts.ascii, s.counts.cjk, s.counts.other), exact, strict=True))
            - (s.needed - 1 + CEIL_MARGIN)
            for s in samples
        ]
        assert min(slack) == 0  # some sample is tight at the exact optimum


def _brute_force_minimum(samples: list[Sample]) -> Fraction:
    """The least total estimate over every vertex of the feasible region (3x3 systems by Cramer's rule)."""
    floor = 1 / MAX_CHARS_PER_TOKEN
    present = [j for j in range(3) if any((s.counts.ascii, s.counts.cjk, s.counts.other)[j] for s in samples)]
    rows = [
        ([(s.counts.ascii, s.counts.cjk, s.counts.other)[j] for j in present], s.needed - 1 + CEIL_MARGIN)
        for s in samples
    ]
    bounds = [([int(i == j) for i in range(len(present))], floor) for j in range(len(present))]
    bounds += [([-int(i == j) for i in range(len(present))], -MAX_TOKENS_PER_CHAR[c]) for j, c in enumerate(present)]
    weights = [sum(a[j] for a, _ in rows) for j in range(len(present))]
    best: Fraction | None = None
    k = len(present)
    for chosen in itertools.combinations(rows + bounds, k):
        matrix = [[Fraction(v) for v in a] for a, _ in chosen]
        rhs = [Fraction(b) for _, b in chosen]
        x = _solve(matrix, rhs)
        if x is None:
            continue
        if all(floor <= v <= MAX_TOKENS_PER_CHAR[c] for v, c in zip(x, present, strict=True)) and all(
            sum(a * v for a, v in zip(ar, x, strict=True)) >= b for ar, b in rows
        ):
            value = sum((w * v for w, v in zip(weights, x, strict=True)), Fraction(0))
            best = value if best is None else min(best, value)
    assert best is not None
    return best


def _solve(matrix: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction] | None:
    """Gaussian elimination, exact; None when singular."""
    n = len(rhs)
    m = [[*row, b] for row, b in zip(matrix, rhs, strict=True)]
    for col in range(n):
        pivot = next((r for r in range(col, n) if m[r][col] != 0), None)
        if pivot is None:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(n):
            if r != col and m[r][col]:
                factor = m[r][col] / m[col][col]
                m[r] = [a - factor * b for a, b in zip(m[r], m[col], strict=True)]
    return [m[i][n] / m[i][i] for i in range(n)]


@settings(max_examples=100, deadline=None)
@given(sample_lists(max_size=5))
def test_exact_fit_is_the_optimum_over_every_vertex(samples: list[Sample]) -> None:
    exact = fit_tokens_per_char(samples)
    weights = [sum((s.counts.ascii, s.counts.cjk, s.counts.other)[j] for s in samples) for j in range(3)]
    value = sum((w * x for w, x in zip(weights, exact, strict=True) if x is not None), Fraction(0))
    assert value == _brute_force_minimum(samples)


def test_suggest_covers_real_cl100k_counts_of_the_samples() -> None:
    transcript = load_path(Path(__file__).parents[1] / "sample_transcripts" / "ja_tools_session.jsonl")[0]
    audit = audit_transcript(transcript, SEED_ESTIMATOR, [load_tokenizer("cl100k_base")])
    samples = audit.tokenizer_samples()
    rule = suggest_rule(samples)
    assert covers(rule, samples)
    audited = audit_tokenizer(transcript, make_estimator("seed"), load_tokenizer("cl100k_base"))
    assert not audited.safe  # the seed rule is not safe here, the suggested one is:
    again = audit_tokenizer(transcript, Estimator(rule), load_tokenizer("cl100k_base"))
    assert again.safe
    assert math.isclose(again.ratio or 0, float(estimate_over(rule, samples) or 0), rel_tol=0.01)
