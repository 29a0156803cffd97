"""``suggest_rule`` never under-estimates a sample and is as tight as the
rounding allows (checked against every vertex of the linear program on small
cases); ``solve_lp``, the one exact solver, also on programs of other shapes;
and the calibration of the ``safe`` rule, which uses the same solver."""

from __future__ import annotations

import csv
import importlib.util
import itertools
import math
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from conftest import require_shared
from hypothesis import given, settings
from hypothesis import strategies as st

from windowfit.fitting import SAFE, SEED, CharCounts, ClassRule, Estimator, ScriptRule, load_path, make_estimator
from windowfit.fitting.audit import audit_tokenizer, audit_transcript
from windowfit.fitting.errors import Unsuggestable
from windowfit.fitting.estimate import ESTIMATORS
from windowfit.fitting.suggest import (
    CEIL_MARGIN,
    HOLD_OUT_EVERY,
    MAX_CHARS_PER_TOKEN,
    MAX_TOKENS_PER_CHAR,
    PLAUSIBLE_CHARS_PER_TOKEN,
    SAFETY_FLOOR,
    Sample,
    covers,
    estimate_over,
    fit_tokens_per_char,
    rule_spec,
    solve_lp,
    split_samples,
    suggest,
    suggest_rule,
    tightest,
)
from windowfit.fitting.tokenizers import load_tokenizer

SEED_ESTIMATOR = make_estimator("seed")


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


# --------------------------------------------------------------------------
# solve_lp: the one exact solver, on programs of any shape


def test_solve_lp_four_unknowns_fractional_needs_and_costs_by_hand() -> None:
    # x2 covers rows 1 and 3 at once; x4 could share row 3 but costs twice as much.
    rows = [(1, 1, 0, 0), (0, 0, 1, 0), (0, 1, 0, 1)]
    needs = [Fraction(3, 2), Fraction(1, 3), 2]
    x = solve_lp(rows, needs, [1, 1, Fraction(1), 2])
    assert x == (0, 2, Fraction(1, 3), 0)


def test_solve_lp_takes_fractional_rows() -> None:
    # x / 2 >= 3/4  <=>  x >= 3/2
    assert solve_lp([(Fraction(1, 2),)], [Fraction(3, 4)], [1]) == (Fraction(3, 2),)


def test_solve_lp_raises_when_no_point_satisfies_every_row() -> None:
    with pytest.raises(Unsuggestable):
        solve_lp([(1,), (-1,)], [2, -1], [1])  # x >= 2 and x <= 1


def test_solve_lp_rejects_a_row_of_the_wrong_length() -> None:
    with pytest.raises(ValueError, match="2 entries for 3 unknowns"):
        solve_lp([(1, 2)], [1], [1, 1, 1])


@st.composite
def covering_programs(draw: st.DrawFn) -> tuple[list[list[int]], list[Fraction], list[Fraction]]:
    """Small covering programs (non-negative rows, so always feasible) with fractional needs and costs."""
    k = draw(st.integers(1, 4))
    rows = []
    for _ in range(draw(st.integers(1, 5))):
        row = draw(st.lists(st.integers(0, 6), min_size=k, max_size=k))
        if not any(row):
            row[draw(st.integers(0, k - 1))] = 1
        rows.append(row)
    needs = [Fraction(draw(st.integers(-5, 60)), draw(st.integers(1, 7))) for _ in rows]
    cost = [Fraction(draw(st.integers(1, 20)), draw(st.integers(1, 5))) for _ in range(k)]
    return rows, needs, cost


@settings(max_examples=150, deadline=None)
@given(covering_programs())
def test_solve_lp_is_feasible_and_optimal_over_every_vertex(
    program: tuple[list[list[int]], list[Fraction], list[Fraction]],
) -> None:
    rows, needs, cost = program
    x = solve_lp(rows, needs, cost)
    assert all(v >= 0 for v in x)
    assert all(sum(a * v for a, v in zip(row, x, strict=True)) >= b for row, b in zip(rows, needs, strict=True))
    k = len(cost)
    constraints = [(list(map(Fraction, r)), b) for r, b in zip(rows, needs, strict=True)]
    constraints += [([Fraction(int(i == j)) for i in range(k)], Fraction(0)) for j in range(k)]
    best = None
    for chosen in itertools.combinations(constraints, k):
        vertex = _solve([a for a, _ in chosen], [b for _, b in chosen])
        if vertex is None or any(v < 0 for v in vertex):
            continue
        if all(sum(a * v for a, v in zip(r, vertex, strict=True)) >= b for r, b in constraints):
            value = sum((c * v for c, v in zip(cost, vertex, strict=True)), Fraction(0))
            best = value if best is None else min(best, value)
    assert best is not None
    assert sum((c * v for c, v in zip(cost, x, strict=True)), Fraction(0)) == best


# --------------------------------------------------------------------------
# The calibration of the safe rule uses the same solver


@pytest.mark.slow
def test_refitting_the_calibration_table_gives_the_committed_safe_constants() -> None:
    """``benchmarks/calibrate/calibrate.py`` fits ``rules.json``'s safe rules with
    ``solve_lp``; run its fit on the committed per-document numbers (no corpus
    needed; the same fit and held-out split) and get exactly the constants that
    ``rules.json`` holds, for ``safe`` and every ``safe-*`` variant."""
    root = Path(__file__).parents[1]
    spec = importlib.util.spec_from_file_location("calibrate", root / "benchmarks" / "calibrate" / "calibrate.py")
    assert spec is not None and spec.loader is not None
    calibrate = importlib.util.module_from_spec(spec)
    sys.modules["calibrate"] = calibrate  # dataclasses look their module up while the class is made
    try:
        spec.loader.exec_module(calibrate)
    finally:
        del sys.modules["calibrate"]
    assert calibrate.solve_lp is solve_lp
    assert isinstance(SAFE, ClassRule)
    names = [c.name for c in SAFE.classes]
    with (root / "tests" / "data" / "calibration" / "documents.csv").open(encoding="utf-8", newline="") as f:
        docs = [
            calibrate.Doc(
                row["id"],
                row["kind"],
                row["split"],
                int(row["chars"]),
                CharCounts(
                    int(row["seed:ascii"]),
                    int(row["seed:cjk"]),
                    int(row["seed:other"]),
                    tuple(int(row[n]) for n in names),
                ),
                tuple(int(row[f"tokens:{t}"]) for t in calibrate.TOKENIZERS),
                row["unit"],
            )
            for row in csv.DictReader(f)
        ]
    tokenizers = calibrate.TOKENIZERS
    variants = [
        calibrate.calibrate(name, docs, SAFE, [tokenizers.index(t) for t in family], calibrate.SAFETY)
        for name, family in calibrate.VARIANTS.items()
    ]
    variants = [variants[0], *(calibrate.never_looser(v, variants[0], docs, SAFE) for v in variants[1:])]
    for v in variants:
        rule = ESTIMATORS[v.name]
        assert isinstance(rule, ClassRule)
        assert v.constants == {c.name: c.chars_per_token for c in rule.classes}, v.name


# --------------------------------------------------------------------------
# suggest: fit on two thirds, margin from the held-out third, constants in range

CEILINGS = tuple(1 / c for c in PLAUSIBLE_CHARS_PER_TOKEN)


def test_margin_by_hand() -> None:
    # Fit on the 1st and 2nd: x = (25 - 1 + 0.01) / 100 = 0.2401 tokens per char. The 3rd (held out) needs
    # 0.2901: needed margin 0.2901 / 0.2401; margin = needed * (1 + (needed - 1)) = needed ** 2, so
    # 0.2401 * needed ** 2 = 0.2901 ** 2 / 0.2401 = 0.35051... tokens per char = 2.85 chars per token.
    samples = [Sample(CharCounts(100, 0, 0), 25), Sample(CharCounts(100, 0, 0), 25), Sample(CharCounts(100, 0, 0), 30)]
    result = suggest(samples)
    assert (result.fit, result.held_out) == (tuple(samples[:2]), (samples[2],))
    assert result.needed_margin == Fraction(2901, 2401)
    assert result.margin == Fraction(2901, 2401) ** 2
    assert result.rule.ascii_chars_per_token == Fraction(285, 100)
    assert (result.rule.cjk_chars_per_token, result.rule.other_chars_per_token) == (1, 2)  # none: the seed's
    # Without the margin: 4.16 chars per token, ceil(100 / 4.16) = 25 < 30; with it, ceil(100 / 2.85) = 36.
    assert (result.held_out_under_before, result.held_out_under_after) == (1, 0)
    assert result.guarantee() == (
        "Never under on the 2 fitted samples and the 1 held-out sample of this data; "
        "text unlike it may still come out under."
    )


def test_too_few_samples_to_hold_out_get_the_floor_margin() -> None:
    samples = [Sample(CharCounts(100, 0, 0), 25), Sample(CharCounts(100, 0, 0), 20)]
    result = suggest(samples)
    assert result.held_out == ()
    assert (result.needed_margin, result.margin) == (1, 1 + SAFETY_FLOOR)
    # 0.2401 * 1.1 = 0.26411 tokens per char: 3.78 chars per token
    assert result.rule.ascii_chars_per_token == Fraction(378, 100)
    assert "too few samples to hold any out (fewer than 3)" in result.guarantee()


def test_split_is_every_third_sample_in_order() -> None:
    samples = [Sample(CharCounts(i + 1, 0, 0), 0) for i in range(7)]
    fit, held_out = split_samples(samples)
    assert [s.counts.ascii for s in held_out] == [3, 6]
    assert [s.counts.ascii for s in fit] == [1, 2, 4, 5, 7]


def test_samples_beyond_the_plausible_range_are_set_aside() -> None:
    # 2 tokens per ASCII character: no calibration text comes near it (bytes would allow only 1 anyway).
    dense = Sample(CharCounts(10, 0, 0), 20, where="dense")
    result = suggest([Sample(CharCounts(100, 0, 0), 25), dense])
    assert result.set_aside == (dense,)
    assert result.fit == (Sample(CharCounts(100, 0, 0), 25),)
    with pytest.raises(Unsuggestable, match="plausible range"):
        suggest([dense])


def test_the_exact_fit_loads_a_rare_class_the_range_does_not() -> None:
    # The second sample sets ascii to (200 - 1 + 0.01) / 1000; the first is 38 tokens short of that. Adding
    # them through 'other' costs 10 characters per unit, through ascii 2,000: the exact fit gives 'other'
    # 38 / 10 = 3.8 tokens per character (0.26 chars per token), past any calibration text; the range
    # stops it at 1 / 0.3 and puts the rest on ascii.
    samples = [Sample(CharCounts(1000, 0, 10), 238), Sample(CharCounts(1000, 0, 0), 200)]
    assert suggest_rule(samples).other_chars_per_token == Fraction(26, 100)
    assert suggest(samples).rule.other_chars_per_token == PLAUSIBLE_CHARS_PER_TOKEN[2]


@st.composite
def same_class_samples(draw: st.DrawFn) -> list[Sample]:
    """Samples with characters in the same classes (so the fitted part has every class the held-out
    part has), each within the plausible range, some with fixed tokens."""
    present = draw(st.lists(st.booleans(), min_size=3, max_size=3).filter(any))
    samples = []
    for _ in range(draw(st.integers(1, 12))):
        counts = CharCounts(*(draw(st.integers(1, 3000)) if p else 0 for p in present))
        bound = math.floor(sum(n * c for n, c in zip((counts.ascii, counts.cjk, counts.other), CEILINGS, strict=True)))
        fixed = draw(st.sampled_from((0, 0, 3, 10)))
        samples.append(Sample(counts, draw(st.integers(0, bound)) + fixed, fixed))
    return samples


@settings(max_examples=200, deadline=None)
@given(same_class_samples())
def test_suggested_rule_covers_every_held_out_sample_after_the_margin(samples: list[Sample]) -> None:
    result = suggest(samples)
    assert result.set_aside == ()
    assert len(result.held_out) == len(samples) // HOLD_OUT_EVERY
    assert result.held_out_under_after == 0
    assert covers(result.rule, result.held_out)
    assert covers(result.rule, result.fit)
    assert result.margin >= result.needed_margin * (1 + SAFETY_FLOOR)
    assert "Never under on" in result.guarantee()


@settings(max_examples=200, deadline=None)
@given(sample_lists(max_size=12))
def test_fitted_constants_stay_in_the_plausible_range(samples: list[Sample]) -> None:
    try:
        result = suggest(samples)
    except Unsuggestable:
        assert not any(
            s.needed - 1 + CEIL_MARGIN
            <= sum(n * c for n, c in zip((s.counts.ascii, s.counts.cjk, s.counts.other), CEILINGS, strict=True))
            for s in samples
        )
        return
    fitted = (result.rule.ascii_chars_per_token, result.rule.cjk_chars_per_token, result.rule.other_chars_per_token)
    for j, cpt in enumerate(fitted):
        if any((s.counts.ascii, s.counts.cjk, s.counts.other)[j] for s in result.fit):
            assert PLAUSIBLE_CHARS_PER_TOKEN[j] <= cpt <= MAX_CHARS_PER_TOKEN
        else:
            assert cpt == (SEED.ascii_chars_per_token, SEED.cjk_chars_per_token, SEED.other_chars_per_token)[j]
    assert covers(result.rule, result.fit)
    assert len(result.fit) + len(result.held_out) + len(result.set_aside) == len(samples)


GROWTH = Path(__file__).parent / "data" / "suggest" / "claude_code" / "growth.jsonl"
"""A Claude Code session of 10 turns, English and Russian, whose provider counts grow by made-up
amounts (1 token per 3 ASCII characters, 2 per 3 others, 6 per message) over a hidden 3,000."""


def test_usage_only_suggestion_from_a_small_claude_code_file() -> None:
    (transcript,) = load_path(GROWTH)
    audit = audit_transcript(transcript, SEED_ESTIMATOR, [])
    samples = audit.usage_samples
    assert len(samples) == 9  # 10 measured requests: 9 growth steps, each a reply and the next user message
    result = suggest(samples)
    assert (len(result.fit), len(result.held_out)) == (6, 3)
    assert covers(result.rule, samples)
    # The made-up counts: 1 token per 3 ASCII chars; the seed's 4 would under-estimate.
    assert result.rule.ascii_chars_per_token < 4


def test_usage_only_suggestion_from_a_corpus_claude_code_session() -> None:
    folder = require_shared("corpus", "transcripts", "claude_code")
    path = folder / "M-Thisness_M-Claude__c76e5be5-ffd2-4901-a935-885527c83a61.jsonl"
    transcripts = load_path(path, skip_invalid=True)
    samples = [s for t in transcripts for s in audit_transcript(t, SEED_ESTIMATOR, []).usage_samples]
    assert len(samples) > 100
    result = suggest(samples)
    assert len(result.held_out) == len(samples) // HOLD_OUT_EVERY
    assert result.held_out_under_after == 0
    assert covers(result.rule, samples)
