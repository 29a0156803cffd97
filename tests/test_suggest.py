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
from hypothesis import given, settings
from hypothesis import strategies as st

from windowfit.fitting import SAFE, SEED, CharCounts, ClassRule, Estimator, ScriptRule, load_path, make_estimator
from windowfit.fitting.audit import audit_tokenizer, audit_transcript
from windowfit.fitting.errors import Unsuggestable
from windowfit.fitting.estimate import ESTIMATORS
from windowfit.fitting.suggest import (
    CEIL_MARGIN,
    MAX_CHARS_PER_TOKEN,
    MAX_TOKENS_PER_CHAR,
    Sample,
    covers,
    estimate_over,
    fit_tokens_per_char,
    rule_spec,
    solve_lp,
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
