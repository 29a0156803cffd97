"""Suggest estimator constants from samples (characters per class next to the
tokens a tokenizer or the provider counted): per-class characters per token
that never under-estimate any sample and over-estimate their total as little
as possible. The exact linear-program solver behind it lives here too, and the
calibration of the ``safe`` rule (``benchmarks/calibrate/calibrate.py``) uses
the same one."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import field, replace
from fractions import Fraction
from itertools import pairwise

from ._frozen import frozen
from .errors import Unsuggestable
from .estimate import SEED, ZERO, CharCounts, Estimator, ScriptRule
from .transcript import Transcript


@frozen
class Sample:
    """One constraint for ``suggest_rule``: characters per class, the real
    tokens, and the tokens the estimator adds whatever the characters."""

    counts: CharCounts
    tokens: int
    fixed: int = 0
    where: str = field(default="", compare=False)
    """Where it comes from, for people: ``file.jsonl:4 message 3, cl100k_base``."""

    @property
    def needed(self) -> int:
        """Tokens the characters must account for."""
        return self.tokens - self.fixed


def usage_growth_samples(transcript: Transcript, estimator: Estimator) -> tuple[Sample, ...]:
    """Samples from the provider's counts: the growth between two consecutive
    measured requests of one context (no compaction between them) is the
    messages added in between. Differences cancel what the provider counts
    but the file does not hold at every request (a harness's hidden system
    prompt and tools); ``fixed`` is the estimator's overheads and images for
    the added messages."""
    messages = transcript.messages

    def parts(i: int) -> tuple[CharCounts, int]:
        est = estimator.message(messages[i])
        return est.counts, est.fixed_tokens

    return growth_samples(transcript, parts)


def growth_samples(transcript: Transcript, parts: Callable[[int], tuple[CharCounts, int]]) -> tuple[Sample, ...]:
    """``usage_growth_samples`` with ``parts(i)`` the counts and fixed tokens of message ``i`` (a streamed
    session's ``transcript.messages`` stand in for messages that are not held: only their number is read)."""
    points = sorted((u for u in transcript.usage if 0 < u.before <= len(transcript.messages)), key=lambda u: u.before)
    start = transcript.context_start
    samples = []
    for a, b in pairwise(points):
        if (a.before > start) != (b.before > start) or b.before <= a.before:
            continue
        counts, fixed = ZERO, 0
        for i in range(a.before, b.before):
            part_counts, part_fixed = parts(i)
            counts, fixed = counts + part_counts, fixed + part_fixed
        lines = f"{a.source.line}, {b.source.line}"
        where = f"{transcript.label}: messages {a.before}-{b.before - 1} (provider counts at lines {lines})"
        samples.append(Sample(counts, b.total - a.total, fixed, where))
    return tuple(samples)


def plausible(sample: Sample) -> bool:
    """Whether a tokenizer could count this many tokens for these characters: a
    byte-level tokenizer never counts more tokens than UTF-8 bytes (at most 1
    per ASCII character and 4 per other). A growth step over that holds text
    the file does not (injected context, content kept elsewhere)."""
    return sample.needed <= sample.counts.ascii + 4 * (sample.counts.cjk + sample.counts.other)


# --------------------------------------------------------------------------
# The exact linear program

CEIL_MARGIN = Fraction(1, 100)
"""How far above ``tokens - fixed - 1`` a sample's unrounded estimate must be."""
MAX_TOKENS_PER_CHAR = (Fraction(1), Fraction(4), Fraction(4))
"""The most tokens per character, ascii, cjk and other: no byte-level tokenizer
counts more tokens than UTF-8 bytes. It keeps the program from loading one
class with what another could carry just as well."""
MAX_CHARS_PER_TOKEN = Fraction(8)
"""The most characters per token a suggested rule may count on, for any class:
it keeps a class the samples barely constrain from getting a constant of zero
tokens per character."""


def solve_lp(
    rows: Sequence[Sequence[int | Fraction]], needs: Sequence[int | Fraction], cost: Sequence[int | Fraction]
) -> tuple[Fraction, ...]:
    """The exact minimum of ``cost . x`` over ``x >= 0`` with ``row . x >= need``
    for every row (``cost >= 0``; rows may have negative entries, as upper
    bounds written ``-x_j >= -bound``). Raises ``Unsuggestable`` when no ``x``
    satisfies every row.

    Solved by the revised simplex method on the dual: maximise ``needs . y``
    with ``sum_i y_i row_i <= cost`` and ``y >= 0``, starting from the slack
    basis (feasible as ``cost >= 0``). The dual has one row per unknown, so a
    basis is small and each pivot costs one pass over the rows; the prices of
    the optimal basis are the optimal ``x``. A column prices in exactly when
    its row is violated by the current prices: each pivot adds the most
    violated row (Bland's rule after a degenerate pivot, so it cannot cycle).
    Every row is first scaled to integers, so that pricing is exact integer
    arithmetic.
    """
    k = len(cost)
    scaled_rows: list[tuple[tuple[int, ...], int]] = []
    for row, need in zip(rows, needs, strict=True):
        values = [Fraction(v) for v in (*row, need)]
        scale = math.lcm(*(v.denominator for v in values))
        *a, b = (int(v * scale) for v in values)
        if len(a) != k:
            raise ValueError(f"a row has {len(a)} entries for {k} unknowns")
        scaled_rows.append((tuple(a), b))
    return _solve_dual(scaled_rows, [Fraction(c) for c in cost])


def _solve_dual(rows: Sequence[tuple[tuple[int, ...], int]], weights: Sequence[Fraction]) -> tuple[Fraction, ...]:
    """``solve_lp`` on rows already scaled to integers."""
    k = len(weights)
    n = len(rows)
    basis = list(range(n, n + k))  # the slack columns
    inverse = [[Fraction(int(i == j)) for j in range(k)] for i in range(k)]
    values = list(weights)  # the basic variables' values, B^-1 w

    def column(q: int) -> tuple[int, ...]:
        return rows[q][0] if q < n else tuple(int(j == q - n) for j in range(k))

    def cost(q: int) -> int:
        return rows[q][1] if q < n else 0

    bland = False
    while True:
        prices = [sum((cost(basis[r]) * inverse[r][j] for r in range(k)), Fraction(0)) for j in range(k)]
        denominator = math.lcm(*(p.denominator for p in prices))
        scaled = [int(p * denominator) for p in prices]
        # Reduced costs in integers (times the prices' common denominator): a sample's is
        # positive when the prices under-estimate it, a slack's when its price is negative.
        reduced = (
            *(
                (q, b * denominator - sum(ai * pi for ai, pi in zip(a, scaled, strict=True)))
                for q, (a, b) in enumerate(rows)
            ),
            *((n + j, -scaled[j]) for j in range(k)),
        )
        positive = (qr for qr in reduced if qr[1] > 0)
        entering = next(positive, (-1, 0))[0] if bland else max(positive, key=lambda qr: qr[1], default=(-1, 0))[0]
        if entering < 0:
            return tuple(prices)
        a = column(entering)
        direction = [sum((inverse[r][j] * a[j] for j in range(k)), Fraction(0)) for r in range(k)]
        leaving, step = -1, Fraction(0)
        for r in range(k):
            if direction[r] > 0:
                ratio = values[r] / direction[r]
                if leaving < 0 or ratio < step or (ratio == step and basis[r] < basis[leaving]):
                    leaving, step = r, ratio
        if leaving < 0:
            raise Unsuggestable("the samples cannot all be covered")
        bland = step == 0
        pivot = direction[leaving]
        inverse[leaving] = [v / pivot for v in inverse[leaving]]
        values[leaving] /= pivot
        for r in range(k):
            if r != leaving and direction[r]:
                factor = direction[r]
                inverse[r] = [v - factor * p for v, p in zip(inverse[r], inverse[leaving], strict=True)]
                values[r] -= factor * values[leaving]
        basis[leaving] = entering


def _class_counts(counts: CharCounts) -> tuple[int, int, int]:
    return (counts.ascii, counts.cjk, counts.other)


def fit_tokens_per_char(
    samples: Sequence[Sample],
    *,
    max_chars_per_token: Fraction = MAX_CHARS_PER_TOKEN,
    max_tokens_per_char: Sequence[Fraction] = MAX_TOKENS_PER_CHAR,
) -> tuple[Fraction | None, Fraction | None, Fraction | None]:
    """Exact tokens per character for ascii, cjk and other that cover every
    sample with the least total estimate over the samples, each at least
    ``1 / max_chars_per_token`` and at most ``max_tokens_per_char``. A class no
    sample has characters of is None (the samples say nothing about it).

    The estimator rounds a message's text up, so a sample is covered when
    ``ceil(sum(chars * x)) >= tokens - fixed``, that is when the sum exceeds
    ``tokens - fixed - 1``; the program asks for ``CEIL_MARGIN`` more than that.
    """
    floor = 1 / Fraction(max_chars_per_token)
    present = [j for j in range(3) if any(_class_counts(s.counts)[j] for s in samples)]
    rows: dict[tuple[int, ...], int] = {}
    for s in samples:
        a = tuple(_class_counts(s.counts)[j] for j in present)
        least = s.needed - 1 + CEIL_MARGIN
        if least > sum(ai * max_tokens_per_char[j] for ai, j in zip(a, present, strict=True)):
            raise Unsuggestable(
                f"{s.where or 'a sample'}: {s.needed:,} tokens for {s.counts.total:,} characters is more tokens "
                "than the text has UTF-8 bytes (text the estimator does not see?)"
            )
        # Shift x = floor + x' (x' >= 0); a row already met at the floor constrains nothing.
        b = least - floor * sum(a)
        if b > 0:
            # Scale the row to integers: a . x' >= b  <=>  (a * d) . x' >= b * d.
            key = tuple(ai * b.denominator for ai in a)
            rows[key] = max(rows.get(key, 0), b.numerator)
    if rows:
        for i, j in enumerate(present):  # x'_j <= ceiling_j - floor, as -x'_j >= floor - ceiling_j
            room = max_tokens_per_char[j] - floor
            rows[tuple(-room.denominator * int(i == m) for m in range(len(present)))] = -room.numerator
    weights = [sum(_class_counts(s.counts)[j] for s in samples) for j in present]
    ordered = sorted(rows.items())
    shifted = (
        solve_lp([a for a, _ in ordered], [b for _, b in ordered], weights)
        if rows
        else tuple(Fraction(0) for _ in present)
    )
    result: list[Fraction | None] = [None, None, None]
    for j, x in zip(present, shifted, strict=True):
        result[j] = floor + x
    return result[0], result[1], result[2]


def _round_down(tokens_per_char: Fraction) -> Fraction:
    """Characters per token rounded down to 2 decimals (so the estimate only grows)."""
    return Fraction(max(math.floor(100 / tokens_per_char), 1), 100)


def covers(rule: ScriptRule, samples: Iterable[Sample]) -> bool:
    """Whether the rule's text estimate (rounded up, as the estimator does) plus
    the fixed tokens reaches every sample's real tokens."""
    return all(rule.text_tokens(s.counts) >= s.needed for s in samples)


def suggest_rule(
    samples: Sequence[Sample],
    *,
    base: ScriptRule = SEED,
    name: str = "custom",
    max_chars_per_token: Fraction = MAX_CHARS_PER_TOKEN,
) -> ScriptRule:
    """Per-class characters per token that never under-estimate any sample and
    over-estimate their total as little as possible (an exact linear program in
    3 unknowns), rounded down to 2 decimals. A class the samples do not
    constrain (none of its characters, or it sits at ``max_chars_per_token``
    because other classes already cover every sample) keeps ``base``'s
    constant, which only raises the estimate; so do the overheads."""
    if not samples:
        raise Unsuggestable("no samples to fit: the transcripts hold no text and no provider counts")
    exact = fit_tokens_per_char(samples, max_chars_per_token=max_chars_per_token)
    defaults = (base.ascii_chars_per_token, base.cjk_chars_per_token, base.other_chars_per_token)
    floor = 1 / Fraction(max_chars_per_token)
    ascii_, cjk, other = (
        d if x is None or x == floor else _round_down(x) for x, d in zip(exact, defaults, strict=True)
    )
    rule = replace(base, name=name, ascii_chars_per_token=ascii_, cjk_chars_per_token=cjk, other_chars_per_token=other)
    assert covers(rule, samples), "rounding characters per token down only raises the estimate"
    return rule


def tightest(rule: ScriptRule, samples: Sequence[Sample], n: int = 3) -> tuple[Sample, ...]:
    """The samples the rule covers with the least room: they bind the fit."""
    return tuple(sorted(samples, key=lambda s: (rule.text_tokens(s.counts) - s.needed, -s.needed))[:n])


def decimal_text(value: Fraction) -> str:
    """An exact decimal without trailing zeros: ``3.2``, ``0.87``, ``4``."""
    whole, rest = divmod(value.numerator * 100 // value.denominator, 100)
    return f"{whole}.{rest:02d}".rstrip("0").rstrip(".") if rest else str(whole)


def rule_spec(rule: ScriptRule) -> str:
    """The rule as ``--estimator`` takes it: ``custom:ascii=3.2,cjk=0.9,other=1.6``."""
    return (
        f"custom:ascii={decimal_text(rule.ascii_chars_per_token)},cjk={decimal_text(rule.cjk_chars_per_token)},"
        f"other={decimal_text(rule.other_chars_per_token)}"
    )


def estimate_over(rule: ScriptRule, samples: Sequence[Sample]) -> Fraction | None:
    """The samples' estimate over their real tokens, each summed (1 is exact)."""
    real = sum(s.tokens for s in samples)
    if real <= 0:
        return None
    return Fraction(sum(rule.text_tokens(s.counts) + s.fixed for s in samples), real)


# --------------------------------------------------------------------------
# A rule that generalises: fit on part of the samples, pick the margin from the rest

HOLD_OUT_EVERY = 3
"""Every 3rd sample in the order given (the 3rd, 6th, ...: one in three) is held
out of the fit; the margin is picked from them. Samples come in file order, one
per message (tokenizer) or growth step (provider counts), so the held-out ones
are spread over the whole of the data."""
PLAUSIBLE_CHARS_PER_TOKEN = (Fraction(1), Fraction(4, 5), Fraction(3, 10))
"""The fewest characters per token a suggested rule may count on, ascii, cjk and
other (at most 1, 1.25 and 3.33 tokens per character). On the calibration
documents (``tests/data/calibration/documents.csv``) that are mostly one class,
the most tokens per character any tokenizer counts is ascii 1.00 (digits), cjk
1.10 (Japanese and Korean prose), other 2.86 (Tibetan prose, claude-legacy):
``python benchmarks/suggest_generalisation.py`` prints them. Without the
ceiling, the fit loads a class that has few characters in the fitted samples
with up to 4 tokens per character (the UTF-8 bytes), and text with more of that
class comes out far over while text with less of it comes out under."""
SAFETY_FLOOR = Fraction(10, 100)
"""The least safety on top of the margin the held-out samples need: 10%
(``benchmarks/suggest_generalisation.py`` shows what 5% and 20% would give)."""


@frozen
class Suggestion:
    """A suggested rule, the samples it was fitted on and held out, and the margin."""

    rule: ScriptRule
    fit: tuple[Sample, ...]
    held_out: tuple[Sample, ...]
    needed_margin: Fraction
    """The least uniform scale of the fitted tokens per character that covers
    every held-out sample (1 when the fit alone covers them)."""
    margin: Fraction
    """The scale applied: ``needed_margin * (1 + max(needed_margin - 1, SAFETY_FLOOR))``,
    so the next text may fall short of the fit as much again as the worst held-out one."""
    held_out_under_before: int
    """Held-out samples the fit alone (rounded, no margin) under-estimates."""
    held_out_under_after: int
    """Held-out samples the suggested rule under-estimates (0 unless a class reached its ceiling)."""
    set_aside: tuple[Sample, ...] = ()
    """Samples with more tokens than the plausible range allows for their characters: not fitted."""

    @property
    def samples(self) -> tuple[Sample, ...]:
        return self.fit + self.held_out

    def guarantee(self) -> str:
        """What the suggested rule's guarantee covers, in one sentence."""
        fitted = f"{len(self.fit)} fitted sample{'s' if len(self.fit) != 1 else ''}"
        n = len(self.held_out)
        if not n:
            return (
                f"Never under on the {fitted} of this data; too few samples to hold any out (fewer than "
                f"{HOLD_OUT_EVERY}), so the {_percent(self.margin - 1)} margin is untested: text unlike these "
                "samples may still come out under."
            )
        held = f"{n} held-out sample{'s' if n != 1 else ''}"
        if self.held_out_under_after:
            return (
                f"Under on {self.held_out_under_after} of the {held} even with the margin (a class is at its "
                "ceiling): no guarantee; fit on more data or use --estimator safe."
            )
        return f"Never under on the {fitted} and the {held} of this data; text unlike it may still come out under."


def _percent(value: Fraction) -> str:
    return f"{float(value) * 100:.0f}%"


def split_samples(samples: Sequence[Sample], every: int = HOLD_OUT_EVERY) -> tuple[tuple[Sample, ...], ...]:
    """``(fit, held_out)``: every ``every``-th sample in the order given is held out."""
    return (
        tuple(s for i, s in enumerate(samples) if i % every != every - 1),
        tuple(s for i, s in enumerate(samples) if i % every == every - 1),
    )


def _in_range(sample: Sample, ceilings: Sequence[Fraction]) -> bool:
    a = _class_counts(sample.counts)
    return sample.needed - 1 + CEIL_MARGIN <= sum(n * c for n, c in zip(a, ceilings, strict=True))


def _least_scale(
    sample: Sample, start: Sequence[Fraction], ceilings: Sequence[Fraction], scaled: Sequence[bool]
) -> Fraction | None:
    """The least ``m >= 1`` with ``sum(chars_j * min(start_j * m, ceiling_j))`` (``start_j``
    alone for a class not ``scaled``) at least the sample's ``needed - 1 + CEIL_MARGIN``;
    None when even the ceilings fall short."""
    a = _class_counts(sample.counts)
    least = sample.needed - 1 + CEIL_MARGIN

    def total(m: Fraction) -> Fraction:
        return sum(
            (n * (min(x * m, c) if s else x) for n, x, c, s in zip(a, start, ceilings, scaled, strict=True)),
            Fraction(0),
        )

    if total(Fraction(1)) >= least:
        return Fraction(1)
    # total(m) is piecewise linear and non-decreasing; its kinks are where a class reaches its ceiling.
    kinks = sorted({c / x for n, x, c, s in zip(a, start, ceilings, scaled, strict=True) if n and s and c / x > 1})
    low = Fraction(1)
    for high in kinks:
        if total(high) >= least:
            break
        low = high
    else:
        return None
    # Linear on [low, high]: solve total(low) + slope * (m - low) = least.
    slope = sum(
        (n * x for n, x, c, s in zip(a, start, ceilings, scaled, strict=True) if s and x * low < c), Fraction(0)
    )
    return low + (least - total(low)) / slope


def suggest(
    samples: Sequence[Sample],
    *,
    base: ScriptRule = SEED,
    name: str = "custom",
    every: int = HOLD_OUT_EVERY,
    min_chars_per_token: Sequence[Fraction] = PLAUSIBLE_CHARS_PER_TOKEN,
    safety_floor: Fraction = SAFETY_FLOOR,
) -> Suggestion:
    """A rule for text like ``samples``: fitted (``fit_tokens_per_char``, each class
    at most ``1 / min_chars_per_token``) on all but every ``every``-th sample; the
    held-out ones pick a uniform margin on the fitted tokens per character
    (capped at the ceilings); rounded down to 2 decimals of characters per token.
    A class the fit does not constrain starts from ``base``'s constant. Samples
    no rule in the range can cover are set aside and counted."""
    if not samples:
        raise Unsuggestable("no samples to fit: the transcripts hold no text and no provider counts")
    ceilings = tuple(1 / c for c in min_chars_per_token)
    usable = [s for s in samples if _in_range(s, ceilings)]
    set_aside = tuple(s for s in samples if not _in_range(s, ceilings))
    if not usable:
        raise Unsuggestable(
            f"every sample has more tokens per character than the plausible range allows ({len(samples)})"
        )
    fit, held_out = split_samples(usable, every)
    exact = fit_tokens_per_char(fit, max_tokens_per_char=ceilings)
    floor = 1 / MAX_CHARS_PER_TOKEN
    defaults = (base.ascii_chars_per_token, base.cjk_chars_per_token, base.other_chars_per_token)
    # A class the fit has no characters of keeps base's constant; one the fit does not
    # constrain (at the floor) starts from it, in the range, and takes the margin like the others.
    scaled = tuple(x is not None for x in exact)
    start = tuple(
        1 / d if x is None else min(1 / d, c) if x == floor else x
        for x, d, c in zip(exact, defaults, ceilings, strict=True)
    )
    scales = [_least_scale(s, start, ceilings, scaled) for s in held_out]
    needed = max((m for m in scales if m is not None), default=Fraction(1))
    margin = needed * (1 + max(needed - 1, safety_floor))

    def rule_at(m: Fraction) -> ScriptRule:
        # The ceilings' characters per token have 2 decimals, so rounding down keeps them in range.
        ascii_, cjk, other = (
            _round_down(min(x * m, c)) if s else d for x, c, s, d in zip(start, ceilings, scaled, defaults, strict=True)
        )
        return replace(
            base, name=name, ascii_chars_per_token=ascii_, cjk_chars_per_token=cjk, other_chars_per_token=other
        )

    plain = rule_at(Fraction(1))
    rule = rule_at(margin)
    assert covers(rule, fit), "the margin only raises the fitted estimate"
    return Suggestion(
        rule=rule,
        fit=fit,
        held_out=held_out,
        needed_margin=needed,
        margin=margin,
        held_out_under_before=sum(1 for s in held_out if not covers(plain, [s])),
        held_out_under_after=sum(1 for s in held_out if not covers(rule, [s])),
        set_aside=set_aside,
    )
