"""The audit's numbers by hand with a fake tokenizer (one token per word), and
the provider's counts: their ratios, and the growth samples they give
``suggest_rule`` (tested in ``test_suggest.py``; the classifier in
``test_content.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from windowfit.fitting import CharCounts, Message, Source, make_estimator
from windowfit.fitting.audit import audit_tokenizer, audit_transcript
from windowfit.fitting.suggest import Sample, plausible, usage_growth_samples
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


def test_the_estimate_equals_the_estimators_own_text_tokens() -> None:
    text_only = make_estimator("seed", overhead=0)
    audit = audit_tokenizer(HAND, SEED_ESTIMATOR, Words())
    for m in audit.messages:
        if m.index is not None and m.index != 2:  # message 2 holds an image: its fixed cost is not text
            assert m.estimate == text_only.message(HAND.messages[m.index]).tokens


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
