"""The compiled counter (``fitting/_classcount.c``) counts exactly what the pure-Python counters do:
for every rule of ``rules.json``, for rules drawn at random, and for the seed's ``count_chars``, on any
code points of any plane (lone surrogates included), in each of a str's three storage widths. It is
built wherever a C compiler is, and ``WINDOWFIT_PURE=1`` switches it off."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from fractions import Fraction
from operator import mul

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import texts

from windowfit.fitting import estimate
from windowfit.fitting.estimate import (
    CJK_RANGES,
    ESTIMATORS,
    MAX_CODE_POINT,
    PURE_ENV,
    SURROGATES,
    CharClass,
    ClassRule,
    _count_chars_pure,
    compiled_counter,
    count_chars,
    pure_counter,
)

needs_compiled = pytest.mark.skipif(not estimate.COMPILED, reason="the compiled counter is not built here")

CLASS_RULES = {name: rule for name, rule in ESTIMATORS.items() if isinstance(rule, ClassRule)}


def naive(classes: tuple[CharClass, ...], text: str) -> tuple[int, int, int, tuple[int, ...]]:
    """What a rule's counter must return, one code point at a time."""
    fallback = next(i for i, c in enumerate(classes) if not c.ranges)
    out = [0] * len(classes)
    groups = {"ascii": 0, "cjk": 0, "other": 0}
    for ch in text:
        cp = ord(ch)
        i = next((i for i, c in enumerate(classes) if any(a <= cp <= b for a, b in c.ranges)), fallback)
        out[i] += 1
        groups[classes[i].group] += 1
    return groups["ascii"], groups["cjk"], groups["other"], tuple(out)


ANY_CODE_POINT = st.integers(0, MAX_CODE_POINT).map(chr)  # every plane, lone surrogates too
NEAR_EDGES = st.sampled_from(
    sorted(
        {
            cp
            for rule in CLASS_RULES.values()
            for c in rule.classes
            for a, b in c.ranges
            for cp in (a - 1, a, b, b + 1, a & ~0xFF, a | 0xFF)
            if 0 <= cp <= MAX_CODE_POINT
        }
        | {0x7F, 0x80, 0xFF, 0x100, 0xD7FF, 0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xE000, 0xFFFF, 0x10000, MAX_CODE_POINT}
    )
).map(chr)
WIDTHS = st.sampled_from(
    [
        st.integers(0, 0x7F).map(chr),  # ASCII: a 1-byte str
        st.integers(0, 0xFF).map(chr),  # Latin-1: a 1-byte str
        st.integers(0, 0xFFFF).map(chr),  # the BMP: a 2-byte str (surrogates included)
        ANY_CODE_POINT,  # a 4-byte str
        NEAR_EDGES,
    ]
)
ANY_TEXT = st.one_of(
    WIDTHS.flatmap(lambda chars: st.text(chars, max_size=300)),  # past the one-tally length (64) too
    texts(),
    st.text(st.characters(codec=None, exclude_categories=()), max_size=100),
)


@pytest.mark.skipif(
    PURE_ENV in os.environ or not shutil.which((sysconfig.get_config_var("CC") or "cc").split()[0]),
    reason="no C compiler here, or the pure counters are forced",
)
def test_the_compiled_counter_is_built_wherever_a_compiler_is() -> None:
    assert estimate.COMPILED
    from windowfit.fitting import _classcount

    assert _classcount.__file__ is not None
    assert os.path.dirname(_classcount.__file__) == os.path.dirname(estimate.__file__)


@needs_compiled
@settings(max_examples=500)
@given(ANY_TEXT, st.sampled_from(sorted(CLASS_RULES)))
def test_compiled_and_pure_counters_agree_on_every_rule(text: str, name: str) -> None:
    classes = CLASS_RULES[name].classes
    expected = pure_counter(classes).count(text)
    assert compiled_counter(classes).count(text) == expected
    assert compiled_counter(classes).count_groups(text) == expected[:3]
    assert expected == naive(classes, text)


@needs_compiled
@settings(max_examples=300)
@given(ANY_TEXT, st.sampled_from(sorted(CLASS_RULES)), st.sampled_from([1, 7, 2**40, 2**70]))
def test_weighted_is_the_dot_product_of_counts_and_weights(text: str, name: str, scale: int) -> None:
    classes = CLASS_RULES[name].classes
    weights = tuple(scale * (i + 1) for i in range(len(classes)))
    expected = sum(n * w for n, w in zip(naive(classes, text)[3], weights, strict=True))
    assert compiled_counter(classes, weights).weighted(text) == expected
    assert pure_counter(classes, weights).weighted(text) == expected


@needs_compiled
def test_weighted_needs_weights_one_per_class() -> None:
    classes = CLASS_RULES["safe"].classes
    for counter in (compiled_counter(classes), pure_counter(classes)):
        with pytest.raises(ValueError, match="without weights"):
            counter.weighted("x")
    for make in (compiled_counter, pure_counter):
        with pytest.raises(ValueError, match="one weight per class"):
            make(classes, (1, 2))
    with pytest.raises(ValueError, match="non-negative"):
        compiled_counter(classes, (-1,) * len(classes))


@needs_compiled
@settings(max_examples=300)
@given(ANY_TEXT)
def test_compiled_and_pure_seed_counts_agree(text: str) -> None:
    assert count_chars(text) == _count_chars_pure(text)


def _outside(lo: int, hi: int, holes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``lo..hi`` without the ranges of ``holes``."""
    out, start = [], lo
    for a, b in sorted(holes):
        if b < start or a > hi:
            continue
        if a > start:
            out.append((start, a - 1))
        start = max(start, b + 1)
    if start <= hi:
        out.append((start, hi))
    return out


SPARE = (0x10FFF0, MAX_CODE_POINT)
"""Code points random rules keep back: one each for a class that would otherwise name none."""


@st.composite
def random_rules(draw: st.DrawFn) -> tuple[CharClass, ...]:
    """Classes that partition the code points as a ``ClassRule`` needs (every ASCII and CJK code point
    named, each class in one group, no surrogate named), cut at random places, some 256-blocks shared."""
    n = draw(st.integers(3, 12))
    fallback = draw(st.integers(0, n - 1))
    named = [i for i in range(n) if i != fallback]
    ascii_classes, cjk_classes, other_classes = [named[0]], [named[1]], []
    for i in named[2:]:
        draw(st.sampled_from([ascii_classes, cjk_classes, other_classes])).append(i)
    ranges: dict[int, list[tuple[int, int]]] = {i: [] for i in range(n)}
    ascii_cuts = sorted(draw(st.sets(st.integers(1, 0x7F), max_size=6)))
    for a, b in zip([0, *ascii_cuts], [c - 1 for c in ascii_cuts] + [0x7F], strict=True):
        ranges[draw(st.sampled_from(ascii_classes))].append((a, b))
    for r in CJK_RANGES:
        ranges[draw(st.sampled_from(cjk_classes))].append(r)
    cut = st.one_of(st.integers(0x81, 0x3000), st.integers(0x81, MAX_CODE_POINT), NEAR_EDGES.map(ord))
    cuts = draw(st.sets(cut, max_size=20))
    for seg_lo, seg_hi in _outside(0x80, MAX_CODE_POINT, [*CJK_RANGES, SURROGATES, SPARE]):
        points = sorted(c for c in cuts if seg_lo < c <= seg_hi)
        for a, b in zip([seg_lo, *points], [p - 1 for p in points] + [seg_hi], strict=True):
            owner = draw(st.sampled_from([*other_classes, None]))  # None: left to the fallback class
            if owner is not None:
                ranges[owner].append((a, b))
    for i in named:
        if not ranges[i]:  # then an "other" class
            ranges[i].append((SPARE[0] + i, SPARE[0] + i))
    return tuple(CharClass(f"c{i}", tuple(ranges[i]), Fraction(1)) for i in range(n))


@needs_compiled
@settings(max_examples=200, deadline=None)
@given(st.data())
def test_compiled_and_pure_counters_agree_on_random_rules(data: st.DataObject) -> None:
    classes = data.draw(random_rules())
    pure = pure_counter(classes)
    compiled = compiled_counter(classes)
    near = {cp for c in classes for a, b in c.ranges for cp in (a - 1, a, a + 1, b - 1, b, b + 1)}
    edges = sorted(cp for cp in near if 0 <= cp <= MAX_CODE_POINT)
    own_edges = st.text(st.sampled_from([chr(cp) for cp in edges]), max_size=200)
    for text in (data.draw(ANY_TEXT), data.draw(own_edges), "".join(map(chr, edges))):
        assert compiled.count(text) == pure.count(text) == naive(classes, text)


@needs_compiled
@settings(max_examples=300)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.integers(0, 10**6), st.integers(-(2**70), 2**70), st.sampled_from([2**63 - 1, -(2**63)])),
            st.one_of(st.integers(0, 2**33), st.sampled_from([2**32, 2**62, 2**63 - 1])),
        ),
        max_size=40,
    )
)
def test_the_compiled_dot_product_is_exact(pairs: list[tuple[int, int]]) -> None:
    from windowfit.fitting._classcount import dot

    a, b = tuple(x for x, _ in pairs), tuple(y for _, y in pairs)
    assert dot(a, b) == sum(map(mul, a, b))


@needs_compiled
def test_the_compiled_counter_refuses_what_is_not_a_rule() -> None:
    from windowfit.fitting._classcount import Counter, dot

    with pytest.raises(ValueError):
        Counter(0, 0, [], b"")
    with pytest.raises(ValueError):
        Counter(2, 2, [], b"\0\2")
    with pytest.raises(ValueError):
        Counter(2, 1, [(5, 4, 0)], b"\0\2")
    with pytest.raises(ValueError):
        Counter(2, 1, [(0, MAX_CODE_POINT + 1, 0)], b"\0\2")
    with pytest.raises(ValueError):
        Counter(2, 1, [(0, 0x7F, 0)], b"\0\3")
    with pytest.raises(TypeError):
        Counter(2, 1, [(0, 0x7F)], b"\0\2")
    with pytest.raises(TypeError):
        Counter(2, 1, [(0, 0x7F, 0)], b"\0\2").count(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        dot((1, 2), (1,))
    with pytest.raises(TypeError):
        dot((1, "2"), (1, 1))  # type: ignore[arg-type]


def test_a_rule_may_not_name_surrogates() -> None:
    classes = (
        CharClass("ascii", ((0, 0x7F),), Fraction(4)),
        CharClass("cjk", CJK_RANGES, Fraction(1)),
        CharClass("bad", ((0xD000, 0xD900),), Fraction(1)),
        CharClass("rest", (), Fraction(2)),
    )
    with pytest.raises(ValueError, match="surrogates"):
        ClassRule("bad", classes)


def test_windowfit_pure_switches_the_compiled_counter_off() -> None:
    probe = (
        "from windowfit.fitting import estimate as e; "
        "print(e.COMPILED, e.SAFE.count('aé日😀\\ud800').classes == e.pure_counter(e.SAFE.classes).count("
        "'aé日😀\\ud800')[3])"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env={**os.environ, PURE_ENV: "1"}, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["False", "True"]
