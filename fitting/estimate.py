"""The token estimate without a tokenizer (SPEC section 2): characters per
token by writing script, plus documented structural overheads.

Two kinds of rule: the field report's ``ScriptRule`` (ASCII, CJK, other) and
``ClassRule``, which splits characters into finer classes (ASCII letters,
digits, whitespace, punctuation; one class per script) for the ``safe``
estimator. Their constants live in ``rules.json`` beside this module.

Counting is done by C code. When the optional extension ``_classcount``
(``fitting/_classcount.c``) is built, one pass over the str's own storage
looks every code point up in a class table built once per rule; that serves
both kinds of rule. Without it (no compiler at install time, or
``WINDOWFIT_PURE=1`` in the environment) the pure-Python counters below give
the same counts with C-level str and bytes passes: ``str.isascii`` for pure
ASCII, the UTF-8 lead bytes (``bytes.translate``) for the rest, and one
compiled character class for CJK only when 3- or 4-byte characters are
present. The pure ``_ClassCounter`` deletes ASCII classes byte by byte
(``bytes.translate``) and sorts the rest by the UTF-16 high byte of each
character (its 256-code-point block), falling back to a compiled character
class only inside a block that two classes share. Estimates use integer
weights: exact, or fixed-point rounded up (never below the exact value) when
the exact denominator would be a big integer.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import cache
from itertools import pairwise
from operator import add, mul
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol, TypeAlias

import orjson

from ._frozen import frozen
from .errors import OptionError
from .transcript import (
    Block,
    Image,
    Message,
    Other,
    Text,
    Thinking,
    ToolCall,
    ToolDef,
    ToolResult,
    Transcript,
)

MESSAGE_OVERHEAD_TOKENS = 4
"""Per message: role markers and separators the provider wraps around it."""

BLOCK_OVERHEAD_TOKENS = 3
"""Per content block (nested blocks too): its type tag, ids and delimiters."""

TOOL_DEF_OVERHEAD_TOKENS = 8
"""Per tool definition: the wrapper around its name, description and schema."""

IMAGE_TOKENS_UNKNOWN = 1600
"""An image whose dimensions are unknown, and any other binary payload (a
base64 PDF, audio or file in a block windowfit does not model): such data is
never counted as characters. For an image whose dimensions are unknown: Anthropic's rule caps an image at
about 1,600 tokens (1.15 megapixels / 750); OpenAI high detail at 1024x1024 is
765. Erring high, like the text rule."""

IMAGE_PIXELS_PER_TOKEN = 750
IMAGE_MAX_EDGE = 1568
IMAGE_MAX_PIXELS = 1_150_000

# Han, Hiragana, Katakana, Hangul, and their punctuation and fullwidth forms.
# U+2E80-U+33FF takes the whole CJK radicals/symbols/kana/compatibility run
# (which includes Bopomofo and Kanbun); planes 2 and 3 hold only CJK ideographs.
CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x2E80, 0x33FF),  # radicals, CJK symbols and punctuation, kana, compatibility
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA960, 0xA97F),  # Hangul Jamo extended A
    (0xAC00, 0xD7FF),  # Hangul syllables, Jamo extended B
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFE10, 0xFE1F),  # vertical forms
    (0xFE30, 0xFE4F),  # CJK compatibility forms
    (0xFF00, 0xFFEF),  # halfwidth and fullwidth forms
    (0x1AFF0, 0x1B16F),  # kana extended and supplements
    (0x1F200, 0x1F2FF),  # enclosed ideographic supplement
    (0x20000, 0x3FFFF),  # CJK extensions B and later, compatibility supplement
)


# The character classes below are compiled when first used (the CJK class alone took 2 ms of every start-up):
# only the pure counters use them.
@cache
def _cjk_run() -> re.Pattern[str]:
    """Runs of CJK characters."""
    return re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in CJK_RANGES) + "]+")


@cache
def _below_u0800_run() -> re.Pattern[str]:
    """Runs of 1- and 2-byte characters (ASCII, Latin, Greek, Cyrillic, Arabic, ...): never CJK."""
    return re.compile("[\x00-\u07ff]+")


_BELOW_3_BYTE_LEADS = bytes(range(0xE0))
_BELOW_4_BYTE_LEADS = bytes(range(0xF0))


def is_cjk(char: str) -> bool:
    """Whether one character is in the CJK class."""
    cp = ord(char)
    return any(a <= cp <= b for a, b in CJK_RANGES)


@frozen
class CharCounts:
    """Characters per script class (the seed's three), and under a ``ClassRule``
    also per class of that rule, in the rule's order."""

    ascii: int = 0
    cjk: int = 0
    other: int = 0
    classes: tuple[int, ...] = ()
    """A ``ClassRule``'s finer split of the same characters; empty when counted
    for a ``ScriptRule`` (an empty split adds as zeros)."""

    def __add__(self, other: CharCounts) -> CharCounts:
        a, b = self.classes, other.classes
        if a and b:
            if len(a) != len(b):
                raise ValueError("cannot add counts made for rules with different classes")
            classes = tuple(map(add, a, b))
        else:
            classes = a or b
        return CharCounts(self.ascii + other.ascii, self.cjk + other.cjk, self.other + other.other, classes)

    @property
    def total(self) -> int:
        return self.ascii + self.cjk + self.other


ZERO = CharCounts()


def sum_counts(parts: Iterable[CharCounts]) -> CharCounts:
    """The sum of ``parts``: what adding them one by one gives (``ZERO`` for none), without the
    objects in between."""
    items = list(parts)
    if not items:
        return ZERO
    if len(items) == 1:
        return items[0]
    splits = [c.classes for c in items if c.classes]
    if not splits:
        classes: tuple[int, ...] = ()
    else:
        if any(len(c) != len(splits[0]) for c in splits):
            raise ValueError("cannot add counts made for rules with different classes")
        classes = splits[0] if len(splits) == 1 else tuple(map(sum, zip(*splits, strict=True)))
    return CharCounts(sum(c.ascii for c in items), sum(c.cjk for c in items), sum(c.other for c in items), classes)


def count_chars(text: str) -> CharCounts:
    """Count ASCII, CJK and other characters of ``text``."""
    if text.isascii():
        return CharCounts(len(text), 0, 0)
    if COMPILED:
        ascii_, cjk, other = (_SEED_COUNTER or _seed_counter()).count_groups(text)
        return CharCounts(ascii_, cjk, other)
    return _count_chars_pure(text)


def _groups(text: str) -> tuple[int, int, int]:
    """``count_chars`` as a tuple: ascii, cjk, other."""
    if text.isascii():
        return len(text), 0, 0
    if COMPILED:
        a, c, o = (_SEED_COUNTER or _seed_counter()).count_groups(text)
        return a, c, o
    counts = _count_chars_pure(text)
    return counts.ascii, counts.cjk, counts.other


def _count_chars_pure(text: str) -> CharCounts:
    """``count_chars`` without the compiled counter."""
    n = len(text)
    if text.isascii():
        return CharCounts(n, 0, 0)
    data = text.encode("utf-8", "surrogatepass")
    leads = data.translate(None, _BELOW_3_BYTE_LEADS)  # lead bytes of 3- and 4-byte chars
    four = len(leads.translate(None, _BELOW_4_BYTE_LEADS)) if leads else 0
    three = len(leads) - four
    # UTF-8: len(data) = a + 2*two + 3*three + 4*four and n = a + two + three + four
    two = len(data) - n - 2 * three - 3 * four
    ascii_ = n - two - three - four
    if not leads:
        cjk = 0
    elif 2 * (three + four) < n:
        # Mostly 1- and 2-byte text with a few others (dashes, arrows, emoji): look at the few only.
        wide = _below_u0800_run().sub("", text)
        cjk = len(wide) - len(_cjk_run().sub("", wide))
    else:
        cjk = n - len(_cjk_run().sub("", text))
    return CharCounts(ascii_, cjk, n - ascii_ - cjk)


def image_tokens(width: int | None, height: int | None, unknown: int = IMAGE_TOKENS_UNKNOWN) -> int:
    """Anthropic's documented rule, (w*h)/750 after scaling the image down to
    1568 px on its long edge and 1.15 megapixels; ``unknown`` without size."""
    if not width or not height or width <= 0 or height <= 0:
        return unknown
    scale = min(1.0, IMAGE_MAX_EDGE / max(width, height), math.sqrt(IMAGE_MAX_PIXELS / (width * height)))
    return max(1, math.ceil((width * scale) * (height * scale) / IMAGE_PIXELS_PER_TOKEN))


FIXED_POINT_BITS = 32
"""When a rule's exact common denominator would be a big integer, weights are fixed-point
with this many fraction bits, each rounded up: the estimate can only rise, by less than
one token per 2**32 characters, and the arithmetic stays in small integers."""


def _integer_weights(*chars_per_token: Fraction) -> tuple[int, ...]:
    """Integer weights and a common denominator D with ``w_i / D >= 1 / chars_per_token_i``:
    exact (``==``) when the least common denominator fits in ``FIXED_POINT_BITS`` bits,
    else ``D = 2**FIXED_POINT_BITS`` and each weight rounded up."""
    per_char = [1 / Fraction(c) for c in chars_per_token]
    denominator = math.lcm(*(f.denominator for f in per_char))
    if denominator.bit_length() > FIXED_POINT_BITS:
        denominator = 1 << FIXED_POINT_BITS
        return (*(math.ceil(f * denominator) for f in per_char), denominator)
    return (*(int(f * denominator) for f in per_char), denominator)


@frozen
class ScriptRule:
    """The estimator's constants. Characters per token are exact decimals."""

    name: str = "seed"
    ascii_chars_per_token: Fraction = Fraction(4)
    cjk_chars_per_token: Fraction = Fraction(1)
    other_chars_per_token: Fraction = Fraction(2)
    message_overhead_tokens: int = MESSAGE_OVERHEAD_TOKENS
    block_overhead_tokens: int = BLOCK_OVERHEAD_TOKENS
    tool_def_overhead_tokens: int = TOOL_DEF_OVERHEAD_TOKENS
    image_tokens_unknown: int = IMAGE_TOKENS_UNKNOWN
    _weights: tuple[int, ...] = field(init=False, repr=False, compare=False, hash=False, default=())

    def scaled_overhead(self, factor: float) -> ScriptRule:
        """The same rule with every structural overhead multiplied by
        ``factor`` (rounded to whole tokens); 0 leaves the pure text rule."""
        return replace(
            self,
            message_overhead_tokens=round(self.message_overhead_tokens * factor),
            block_overhead_tokens=round(self.block_overhead_tokens * factor),
            tool_def_overhead_tokens=round(self.tool_def_overhead_tokens * factor),
        )

    def class_tokens(self, counts: CharCounts) -> tuple[float, float, float]:
        """Unrounded tokens per class, for breakdowns."""
        return (
            float(counts.ascii / self.ascii_chars_per_token),
            float(counts.cjk / self.cjk_chars_per_token),
            float(counts.other / self.other_chars_per_token),
        )

    def __post_init__(self) -> None:
        for cpt in (self.ascii_chars_per_token, self.cjk_chars_per_token, self.other_chars_per_token):
            if cpt <= 0:
                raise ValueError(f"chars per token must be positive, not {cpt}")
        weights = _integer_weights(self.ascii_chars_per_token, self.cjk_chars_per_token, self.other_chars_per_token)
        object.__setattr__(self, "_weights", weights)

    def text_tokens(self, counts: CharCounts) -> int:
        """``ceil(ascii/a + cjk/c + other/o)``, computed exactly in integers."""
        wa, wc, wo, denominator = self._weights
        return -(-(counts.ascii * wa + counts.cjk * wc + counts.other * wo) // denominator)

    def count(self, text: str) -> CharCounts:
        """The characters of ``text`` in this rule's classes: ``count_chars``."""
        return count_chars(text)

    def class_rows(self, counts: CharCounts) -> tuple[ClassTokens, ...]:
        """Each class with its characters, chars per token and unrounded tokens."""
        return tuple(
            ClassTokens(name, chars, cpt, tokens)
            for name, chars, cpt, tokens in zip(
                ("ascii", "cjk", "other"),
                (counts.ascii, counts.cjk, counts.other),
                (self.ascii_chars_per_token, self.cjk_chars_per_token, self.other_chars_per_token),
                self.class_tokens(counts),
                strict=True,
            )
        )

    @property
    def constants(self) -> dict[str, Fraction]:
        """Chars per token by class name, as ``custom:`` rule strings write them."""
        return {
            "ascii": self.ascii_chars_per_token,
            "cjk": self.cjk_chars_per_token,
            "other": self.other_chars_per_token,
        }


SEED = ScriptRule()
"""The field report's rule: ASCII 4, CJK 1, everything else 2 chars/token."""


@frozen
class ClassTokens:
    """One class's share of a text, for breakdowns."""

    name: str
    chars: int
    chars_per_token: Fraction
    tokens: float
    """Unrounded: ``chars / chars_per_token``."""


Group = Literal["ascii", "cjk", "other"]
"""The seed class that a finer class lies in."""

ASCII_RANGE = (0x00, 0x7F)
MAX_CODE_POINT = 0x10FFFF


@frozen
class CharClass:
    """One class of a ``ClassRule``: the code points it holds, and its chars per token."""

    name: str
    ranges: tuple[tuple[int, int], ...]
    """Inclusive code point ranges; empty for the one class that takes every
    code point no other class names (it must lie outside ASCII and CJK)."""
    chars_per_token: Fraction

    @property
    def group(self) -> Group:
        """The seed class that holds all of this class's code points."""
        if not self.ranges:
            return "other"
        if all(b <= ASCII_RANGE[1] for _, b in self.ranges):
            return "ascii"
        return "cjk" if all(_covered(r, CJK_RANGES) for r in self.ranges) else "other"


def _covered(r: tuple[int, int], ranges: Iterable[tuple[int, int]]) -> bool:
    """Whether every code point of ``r`` lies in ``ranges``."""
    start, end = r
    for a, b in sorted(ranges):
        if a <= start <= b:
            start = b + 1
            if start > end:
                return True
    return False


def _overlaps(r: tuple[int, int], ranges: Iterable[tuple[int, int]]) -> bool:
    return any(a <= r[1] and r[0] <= b for a, b in ranges)


_HIGH_SURROGATE_BYTES = range(0xD8, 0xDC)
_LOW_SURROGATE_BYTES = range(0xDC, 0xE0)


@cache
def _astral_run() -> re.Pattern[str]:
    """Runs of code points past the BMP (compiled when first used)."""
    return re.compile("[\U00010000-\U0010ffff]+")


def _char_set(ranges: Iterable[tuple[int, int]]) -> str:
    return "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)


def _run_pattern(ranges: Iterable[tuple[int, int]]) -> re.Pattern[str]:
    return re.compile(f"[{_char_set(ranges)}]+")


def _count_runs(pattern: re.Pattern[str], text: str) -> int:
    """How many characters of ``text`` ``pattern`` (a run of a character class) matches."""
    return len(text) - len(pattern.sub("", text))


class _Split(NamedTuple):
    """Inside one 256-code-point block that several classes share: the classes
    other than the block's main one, each with its compiled character class."""

    main: int
    others: tuple[tuple[int, re.Pattern[str]], ...]


SURROGATES = (0xD800, 0xDFFF)
"""Lone surrogates (from broken JSON escapes) are characters of the fallback class: no class may name them."""

MAX_CLASSES = 127
"""The most classes a ``ClassRule`` may have (the counters keep a class index in 7 bits)."""


def _check_classes(classes: tuple[CharClass, ...]) -> tuple[int, list[tuple[int, tuple[int, int]]]]:
    """The fallback class's index and every named range with its class; ``ValueError`` for classes
    that do not partition the code points as a ``ClassRule`` needs."""
    if len(classes) > MAX_CLASSES:
        raise ValueError(f"at most {MAX_CLASSES} classes, not {len(classes)}")
    fallbacks = [i for i, c in enumerate(classes) if not c.ranges]
    if len(fallbacks) != 1:
        raise ValueError("exactly one class must have no ranges (it takes every code point no other class names)")
    explicit = [(i, r) for i, c in enumerate(classes) for r in c.ranges]
    for _, (a, b) in explicit:
        if not 0 <= a <= b <= MAX_CODE_POINT:
            raise ValueError(f"not a code point range: {a:04X}-{b:04X}")
        if _overlaps((a, b), [SURROGATES]):
            raise ValueError(f"{a:04X}-{b:04X}: surrogates (D800-DFFF) are the fallback class's alone")
    spans = sorted(r for _, r in explicit)
    for (_, b1), (a2, _) in pairwise(spans):
        if a2 <= b1:
            raise ValueError(f"classes overlap at U+{a2:04X}")
    if not _covered(ASCII_RANGE, spans) or not all(_covered(r, spans) for r in CJK_RANGES):
        raise ValueError("the classes must name every ASCII and every CJK code point")
    for c in classes:
        for r in c.ranges:
            if _overlaps(r, [ASCII_RANGE]) and not r[1] <= ASCII_RANGE[1]:
                raise ValueError(f"class {c.name!r}: a range may not cross from ASCII into U+0080 and above")
            if _overlaps(r, CJK_RANGES) and not _covered(r, CJK_RANGES):
                raise ValueError(f"class {c.name!r}: a range may not mix CJK and other code points")
        if len({_group_of(r) for r in c.ranges}) > 1:
            raise ValueError(f"class {c.name!r} mixes ASCII, CJK and other code points")
    return fallbacks[0], explicit


class _Counter(Protocol):
    """What a ``ClassRule`` counts with: the compiled ``_classcount.Counter`` or the pure ``_ClassCounter``."""

    def count(self, text: str, /) -> tuple[int, int, int, tuple[int, ...]]:
        """``(ascii, cjk, other, per_class)``: the seed's three classes and the rule's own."""
        ...

    def count_groups(self, text: str, /) -> tuple[int, int, int]:
        """``(ascii, cjk, other)`` alone."""
        ...

    def weighted(self, text: str, /) -> int:
        """``sum(count_i * weight_i)`` over the classes, with the weights the counter was made with."""
        ...


class _ClassCounter:
    """Counts characters per class with C-level str and bytes passes (see the module docstring):
    the counter when the compiled one is not there."""

    __slots__ = (
        "ascii_chain",
        "astral",
        "block_codes",
        "cjk",
        "codes",
        "fallback",
        "n",
        "other",
        "splits",
        "weights",
        "whole_run",
    )

    SPLIT_BASE = 0x80
    """Block codes from here on name a ``_Split``; below, a class index."""
    HIGH = 0xFE
    LOW = 0xFF

    def __init__(self, classes: tuple[CharClass, ...], weights: tuple[int, ...] = ()) -> None:
        if weights and len(weights) != len(classes):
            raise ValueError("one weight per class, or none")
        self.weights = weights
        self.n = len(classes)
        self.fallback, explicit = _check_classes(classes)
        self.cjk = tuple(i for i, c in enumerate(classes) if c.group == "cjk")
        self.other = tuple(i for i, c in enumerate(classes) if c.group == "other")

        # ASCII: one delete-set per class, most frequent classes first (each pass shrinks the bytes).
        ascii_of = bytearray(128)
        for i, (a, b) in explicit:
            for cp in range(a, min(b, 0x7F) + 1):
                ascii_of[cp] = i
        order = sorted({ascii_of[cp] for cp in range(128)}, key=lambda i: -sum(1 for x in ascii_of if x == i))
        self.ascii_chain = tuple((i, bytes(cp for cp in range(128) if ascii_of[cp] == i)) for i in order)

        # Above ASCII: a code per UTF-16 high byte (the block U+hh00-U+hhFF).
        codes = bytearray(256)
        splits: list[_Split] = []
        for hi in range(256):
            if hi in _HIGH_SURROGATE_BYTES:
                codes[hi] = self.HIGH
                continue
            if hi in _LOW_SURROGATE_BYTES:
                codes[hi] = self.LOW
                continue
            block = (max(hi << 8, 0x80), (hi << 8) | 0xFF)
            parts: dict[int, list[tuple[int, int]]] = {}
            for i, (a, b) in explicit:
                lo, up = max(a, block[0]), min(b, block[1])
                if lo <= up:
                    parts.setdefault(i, []).append((lo, up))
            named = sum(up - lo + 1 for rs in parts.values() for lo, up in rs)
            if named < block[1] - block[0] + 1:
                parts.setdefault(self.fallback, [])  # the fallback takes the rest of the block
            if len(parts) == 1:
                codes[hi] = next(iter(parts))
                continue
            main = max(parts, key=lambda i: (not parts[i], sum(up - lo + 1 for lo, up in parts[i])))
            others = tuple((i, _run_pattern(rs)) for i, rs in sorted(parts.items()) if i != main)
            codes[hi] = self.SPLIT_BASE + len(splits)
            splits.append(_Split(main, others))
        if len(splits) > self.HIGH - self.SPLIT_BASE:
            raise ValueError("too many 256-code-point blocks are shared between classes")
        self.block_codes = bytes(codes)
        self.codes = tuple(sorted(set(codes)))
        self.splits = tuple(splits)
        # Runs of characters whose block is one class: cut away before the character classes of shared blocks run.
        whole = [(max(hi << 8, 0x80), (hi << 8) | 0xFF) for hi in range(256) if codes[hi] < self.SPLIT_BASE]
        self.whole_run = _run_pattern(whole)
        astral: list[tuple[int, re.Pattern[str]]] = []
        for i, c in enumerate(classes):
            rs = [(max(a, 0x10000), b) for a, b in c.ranges if b >= 0x10000]
            if rs:
                astral.append((i, _run_pattern(rs)))
        self.astral = tuple(astral)

    def count(self, text: str, /) -> tuple[int, int, int, tuple[int, ...]]:
        """``(ascii, cjk, other, per_class)`` of ``text``."""
        per_class = tuple(self._per_class(text))
        if text.isascii():
            return len(text), 0, 0, per_class
        cjk = sum([per_class[i] for i in self.cjk])
        other = sum([per_class[i] for i in self.other])
        return len(text) - cjk - other, cjk, other, per_class

    def count_groups(self, text: str, /) -> tuple[int, int, int]:
        """``(ascii, cjk, other)`` of ``text``."""
        return self.count(text)[:3]

    def weighted(self, text: str, /) -> int:
        """``sum(count_i * weight_i)`` of ``text``."""
        if not self.weights:
            raise ValueError("this counter was made without weights")
        return sum(map(mul, self._per_class(text), self.weights))

    def _per_class(self, text: str) -> list[int]:
        """Characters of ``text`` per class."""
        out = [0] * self.n
        if text.isascii():
            rest = text.encode("ascii")
            last = len(self.ascii_chain) - 1
            for k, (i, delete) in enumerate(self.ascii_chain):
                if not rest:
                    break
                if k == last:
                    out[i] += len(rest)
                    break
                kept = rest.translate(None, delete)
                out[i] += len(rest) - len(kept)
                rest = kept
            return out
        rest = text.encode("utf-8", "surrogatepass")
        for i, delete in self.ascii_chain:
            kept = rest.translate(None, delete)
            out[i] += len(rest) - len(kept)
            rest = kept
        wide = rest.decode("utf-8", "surrogatepass")  # the characters above ASCII, in order
        self._count_wide(wide, out)
        return out

    def _count_wide(self, wide: str, out: list[int]) -> None:
        codes = wide.encode("utf-16-be", "surrogatepass")[::2].translate(self.block_codes)
        # Delete one code at a time, the likeliest first (a text is mostly in one or two blocks).
        first = (codes[0], codes[len(codes) // 2], codes[-1])
        tally: dict[int, int] = {}
        rest = codes
        for code in (*dict.fromkeys(first), *self.codes):
            if not rest:
                break
            if code in tally:
                continue
            kept = rest.translate(None, bytes((code,)))
            if len(kept) != len(rest):
                tally[code] = len(rest) - len(kept)
                rest = kept
            else:
                tally[code] = 0
        shared = 0
        for code, n in tally.items():
            if code < self.SPLIT_BASE:
                out[code] += n
            else:
                shared += n
        if not shared:
            return
        # Few characters in shared blocks: look at those alone (one pass over long runs of the others).
        narrow = self.whole_run.sub("", wide) if 4 * shared < len(codes) else wide
        for code, n in tally.items():
            if self.SPLIT_BASE <= code < self.HIGH and n:
                split = self.splits[code - self.SPLIT_BASE]
                for i, pattern in split.others:
                    k = _count_runs(pattern, narrow)
                    out[i] += k
                    n -= k
                out[split.main] += n
        surrogates = tally.get(self.HIGH, 0) + tally.get(self.LOW, 0)
        if surrogates:
            astral = _count_runs(_astral_run(), narrow)
            named = 0
            for i, pattern in self.astral:
                k = _count_runs(pattern, narrow)
                out[i] += k
                named += k
            # unnamed astral code points, and lone surrogates (two UTF-16 units per astral one)
            out[self.fallback] += astral - named + surrogates - 2 * astral


def _group_of(r: tuple[int, int]) -> Group:
    if r[1] <= ASCII_RANGE[1]:
        return "ascii"
    return "cjk" if _covered(r, CJK_RANGES) else "other"


PURE_ENV = "WINDOWFIT_PURE"
"""Set to anything but ``0`` or empty, the estimators count with the pure-Python counters even when the
compiled one is installed (the tests run both)."""

try:
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        raise ImportError(f"{PURE_ENV} is set")
    from ._classcount import Counter as _CompiledCounter
    from ._classcount import dot as _compiled_dot

    COMPILED = True
except ImportError:
    COMPILED = False
"""Whether counting is done by the compiled extension ``_classcount`` (see the module docstring)."""

_GROUP_CODES: dict[Group, int] = {"ascii": 0, "cjk": 1, "other": 2}


def compiled_counter(classes: tuple[CharClass, ...], weights: tuple[int, ...] = ()) -> _Counter:
    """The compiled counter for ``classes`` (``ImportError`` when it is not built or ``WINDOWFIT_PURE``
    is set), whose ``weighted`` uses ``weights``; the same counts as ``pure_counter``."""
    if not COMPILED:
        raise ImportError("windowfit.fitting._classcount is not built (or WINDOWFIT_PURE is set)")
    fallback, explicit = _check_classes(classes)
    ranges = [(a, b, i) for i, (a, b) in explicit]
    groups = bytes(_GROUP_CODES[c.group] for c in classes)
    counter: _Counter = _CompiledCounter(len(classes), fallback, ranges, groups, weights)
    return counter


def pure_counter(classes: tuple[CharClass, ...], weights: tuple[int, ...] = ()) -> _Counter:
    """The pure-Python counter for ``classes``, whose ``weighted`` uses ``weights``."""
    return _ClassCounter(classes, weights)


def _make_counter(classes: tuple[CharClass, ...], weights: tuple[int, ...]) -> _Counter:
    return compiled_counter(classes, weights) if COMPILED else pure_counter(classes, weights)


def _dot_pure(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    if len(a) != len(b):
        raise ValueError("dot() needs two tuples of one length")
    return sum(map(mul, a, b))


_dot = _compiled_dot if COMPILED else _dot_pure
"""``sum(a_i * b_i)``, exactly."""

_SEED_CLASSES = (
    CharClass("ascii", (ASCII_RANGE,), Fraction(4)),
    CharClass("cjk", CJK_RANGES, Fraction(1)),
    CharClass("other", (), Fraction(2)),
)
_SEED_COUNTER: _Counter | None = None
"""``count_chars``'s counter when the compiled one is there (the seed's classes as a ``ClassRule``'s), built by
``_seed_counter`` when a text that is not ASCII is first counted: its table of every code point took 1 ms of
each start-up."""


def _seed_counter() -> _Counter:
    global _SEED_COUNTER
    if _SEED_COUNTER is None:
        _SEED_COUNTER = compiled_counter(_SEED_CLASSES)
    return _SEED_COUNTER


@frozen
class ClassRule:
    """A rule with finer classes than the seed's: each class a set of code
    point ranges with its own exact-decimal chars per token. Estimates still
    sum every class's fraction and round up once per message."""

    name: str
    classes: tuple[CharClass, ...]
    message_overhead_tokens: int = MESSAGE_OVERHEAD_TOKENS
    block_overhead_tokens: int = BLOCK_OVERHEAD_TOKENS
    tool_def_overhead_tokens: int = TOOL_DEF_OVERHEAD_TOKENS
    image_tokens_unknown: int = IMAGE_TOKENS_UNKNOWN
    _weights: tuple[int, ...] = field(init=False, repr=False, compare=False, hash=False, default=())
    _denominator: int = field(init=False, repr=False, compare=False, hash=False, default=1)
    _counter: _Counter | None = field(init=False, repr=False, compare=False, hash=False, default=None)

    def __post_init__(self) -> None:
        names = [c.name for c in self.classes]
        if len(set(names)) != len(names):
            raise ValueError("class names must be unique")
        for c in self.classes:
            if c.chars_per_token <= 0:
                raise ValueError(f"chars per token must be positive, not {c.chars_per_token} ({c.name})")
        *weights, denominator = _integer_weights(*(c.chars_per_token for c in self.classes))
        object.__setattr__(self, "_weights", tuple(weights))
        object.__setattr__(self, "_denominator", denominator)
        object.__setattr__(self, "_counter", _make_counter(self.classes, self._weights))

    def scaled_overhead(self, factor: float) -> ClassRule:
        """The same rule with every structural overhead multiplied by ``factor``."""
        return replace(
            self,
            message_overhead_tokens=round(self.message_overhead_tokens * factor),
            block_overhead_tokens=round(self.block_overhead_tokens * factor),
            tool_def_overhead_tokens=round(self.tool_def_overhead_tokens * factor),
        )

    def count(self, text: str) -> CharCounts:
        """The characters of ``text`` per class of this rule, and per seed class."""
        assert self._counter is not None
        ascii_, cjk, other, per_class = self._counter.count(text)
        return CharCounts(ascii_, cjk, other, per_class)

    def text_tokens(self, counts: CharCounts) -> int:
        """``ceil(sum(chars_i / chars_per_token_i))`` in integers: exact, or never below the exact
        value when the rule's weights are fixed-point (``FIXED_POINT_BITS``)."""
        try:
            return -(-_dot(counts.classes, self._weights) // self._denominator)
        except ValueError:  # not one count per class
            if counts.total == 0:
                return 0
            raise ValueError(
                f"rule {self.name!r} needs counts made by its own count() ({len(self.classes)} classes)"
            ) from None

    def class_tokens(self, counts: CharCounts) -> tuple[float, ...]:
        """Unrounded tokens per class, for breakdowns."""
        per_class = counts.classes or (0,) * len(self.classes)
        return tuple(float(n / c.chars_per_token) for n, c in zip(per_class, self.classes, strict=True))

    def class_rows(self, counts: CharCounts) -> tuple[ClassTokens, ...]:
        """Each class that has characters, with its chars per token and unrounded tokens."""
        per_class = counts.classes or (0,) * len(self.classes)
        return tuple(
            ClassTokens(c.name, n, c.chars_per_token, tokens)
            for c, n, tokens in zip(self.classes, per_class, self.class_tokens(counts), strict=True)
            if n
        )

    @property
    def constants(self) -> dict[str, Fraction]:
        """Chars per token by class name, as ``custom:`` rule strings write them."""
        return {c.name: c.chars_per_token for c in self.classes}


Rule: TypeAlias = ScriptRule | ClassRule
"""Any estimator rule: what ``Estimator.rule`` holds."""


@frozen
class MessageEstimate:
    """A message's estimate with the parts it was made from."""

    tokens: int
    counts: CharCounts
    fixed_tokens: int
    """Overheads and images: tokens not derived from characters."""
    block_tokens: tuple[int, ...]
    """Each top-level block on its own (its text rounded up, plus its overheads)."""


@dataclass(slots=True)
class Estimator:
    """Estimates messages under one rule, memoising per message: a message
    never changes once written, so each is counted once."""

    rule: Rule = SEED
    _memo: dict[Message, MessageEstimate] = field(default_factory=dict, repr=False)
    _shared: dict[MessageEstimate, MessageEstimate] = field(default_factory=dict, repr=False)
    """Each distinct estimate once: the memo's values point here, so the many short messages of a long
    session that count alike (same characters per class, same blocks) share one estimate instead of
    holding a ``MessageEstimate``, its ``CharCounts`` and its tuple each (about 170 B a message)."""
    handles: dict[tuple[Block, str, str, int], tuple[str, int]] = field(default_factory=dict, repr=False)
    """Fitting with a store: each result's handle and page count (``fit.result_refs``),
    remembered like the estimates, so refitting a growing conversation hashes each result once."""
    _last: tuple[tuple[Message, ...], tuple[int, ...]] | None = field(default=None, repr=False, compare=False)
    """The messages ``message_tokens`` was last asked about (held, so that no other tuple takes their id) and
    their tokens: ``predict_size`` and ``plan_fit`` ask about the same messages, one after the other."""

    def block_parts(self, block: Block) -> tuple[CharCounts, int]:
        """Characters and fixed tokens of one block, overheads included."""
        overhead = self.rule.block_overhead_tokens
        count = self.rule.count
        if isinstance(block, (Text, Thinking)):
            return count(block.text), overhead
        if isinstance(block, ToolCall):
            return count(block.name) + count(block.input_json), overhead
        if isinstance(block, ToolResult):
            counts, fixed = ZERO, overhead
            for inner in block.content:
                c, f = self.block_parts(inner)
                counts, fixed = counts + c, fixed + f
            return counts, fixed
        if isinstance(block, Image):
            return ZERO, overhead + image_tokens(block.width, block.height, self.rule.image_tokens_unknown)
        if isinstance(block, Other):
            binary = block.binary_payloads * self.rule.image_tokens_unknown
            return count(block.counted or block.raw), overhead + binary
        raise TypeError(f"not a block: {block!r}")

    def block(self, block: Block) -> int:
        """One block's tokens on its own, rounded up."""
        rule = self.rule
        if type(rule) is ScriptRule:  # the seed: in integers, as ``_script_blocks``
            a, c, o, fixed = self._script_parts(rule, block)
            wa, wc, wo, denominator = rule._weights
            return -(-(a * wa + c * wc + o * wo) // denominator) + fixed
        if type(rule) is ClassRule:  # the same in integers, without a ``CharCounts`` (tests/test_estimate_fast.py)
            weighted = rule._counter.weighted  # type: ignore[union-attr]
            kind = type(block)
            if kind is Text or kind is Thinking:  # most blocks: no call to make
                return -(-weighted(block.text) // rule._denominator) + rule.block_overhead_tokens  # type: ignore[union-attr]
            total, fixed = self._class_parts(rule, weighted, block)
            return -(-total // rule._denominator) + fixed
        return self._block_general(block)

    def _class_parts(self, rule: ClassRule, weighted: Callable[[str], int], block: Block) -> tuple[int, int]:
        """``block_parts`` under a ``ClassRule`` as two integers: the weighted sum of its characters per class
        (its ``_denominator`` times its unrounded tokens) and its fixed tokens."""
        kind = type(block)
        if kind is Text or kind is Thinking:
            return weighted(block.text), rule.block_overhead_tokens  # type: ignore[union-attr]
        if kind is ToolCall:
            return weighted(block.name) + weighted(block.input_json), rule.block_overhead_tokens  # type: ignore[union-attr]
        if kind is ToolResult:
            total, fixed = 0, rule.block_overhead_tokens
            for inner in block.content:  # type: ignore[union-attr]
                w, f = self._class_parts(rule, weighted, inner)
                total, fixed = total + w, fixed + f
            return total, fixed
        counts, fixed = self.block_parts(block)
        return _dot(counts.classes, rule._weights) if counts.total else 0, fixed

    def _block_general(self, block: Block) -> int:
        """``block`` for any rule."""
        counts, fixed = self.block_parts(block)
        return self.rule.text_tokens(counts) + fixed

    def blocks(self, blocks: tuple[Block, ...]) -> MessageEstimate:
        """Estimate a sequence of blocks as one message (not memoised)."""
        rule = self.rule
        if type(rule) is ScriptRule:
            return self._script_blocks(rule, blocks)
        return self._blocks_general(blocks)

    def _script_parts(self, rule: ScriptRule, block: Block) -> tuple[int, int, int, int]:
        """``block_parts`` under a ``ScriptRule``, as plain integers: ascii, cjk, other and fixed tokens."""
        kind = type(block)
        if kind is Text or kind is Thinking:
            text = block.text  # type: ignore[union-attr]
            if text.isascii():
                return len(text), 0, 0, rule.block_overhead_tokens
            a, c, o = _groups(text)
            return a, c, o, rule.block_overhead_tokens
        if kind is ToolCall:
            a, c, o = _groups(block.name)  # type: ignore[union-attr]
            a2, c2, o2 = _groups(block.input_json)  # type: ignore[union-attr]
            return a + a2, c + c2, o + o2, rule.block_overhead_tokens
        if kind is ToolResult:
            a = c = o = 0
            fixed = rule.block_overhead_tokens
            for inner in block.content:  # type: ignore[union-attr]
                a2, c2, o2, f = self._script_parts(rule, inner)
                a, c, o, fixed = a + a2, c + c2, o + o2, fixed + f
            return a, c, o, fixed
        counts, fixed = self.block_parts(block)
        return counts.ascii, counts.cjk, counts.other, fixed

    def _script_blocks(self, rule: ScriptRule, blocks: tuple[Block, ...]) -> MessageEstimate:
        """``_blocks_general`` under a ``ScriptRule`` (the seed): the same estimate, summed in integers
        instead of a ``CharCounts`` per block (tests/test_estimate_fast.py compares the two)."""
        wa, wc, wo, denominator = rule._weights
        a = c = o = 0
        fixed = rule.message_overhead_tokens
        per_block = []
        for block in blocks:
            a2, c2, o2, f = self._script_parts(rule, block)
            a, c, o, fixed = a + a2, c + c2, o + o2, fixed + f
            per_block.append(-(-(a2 * wa + c2 * wc + o2 * wo) // denominator) + f)
        tokens = -(-(a * wa + c * wc + o * wo) // denominator) + fixed
        return MessageEstimate(tokens, CharCounts(a, c, o), fixed, tuple(per_block))

    def _blocks_general(self, blocks: tuple[Block, ...]) -> MessageEstimate:
        """``blocks`` for any rule."""
        rule = self.rule
        text_tokens = rule.text_tokens
        fixed = rule.message_overhead_tokens
        if len(blocks) == 1:  # most messages: no sum to make
            counts, f = self.block_parts(blocks[0])
            return MessageEstimate(text_tokens(counts) + fixed + f, counts, fixed + f, (text_tokens(counts) + f,))
        parts = [self.block_parts(block) for block in blocks]
        counts = sum_counts([c for c, _ in parts])
        fixed += sum(f for _, f in parts)
        return MessageEstimate(
            text_tokens(counts) + fixed, counts, fixed, tuple([text_tokens(c) + f for c, f in parts])
        )

    def message(self, message: Message) -> MessageEstimate:
        """A message's estimate, computed once per distinct message."""
        # No second memo by ``id``: its int keys and entries cost 86 B a message (a third of what a tiny
        # message costs in all), for 1 microsecond a repeated ask saves (benchmarks/README.md, bench_memory).
        hit = self._memo.get(message)
        if hit is None:
            made = self.blocks(message.content)
            hit = self._memo[message] = self._shared.setdefault(made, made)
        return hit

    def message_tokens(self, messages: tuple[Message, ...]) -> tuple[int, ...]:
        """Each message's tokens (``message``'s), the last tuple of messages asked about remembered by identity:
        a long session's messages are looked up in the memo once, not once per step that sums them (each
        lookup hashes every block of the message)."""
        last = self._last
        if last is not None and last[0] is messages:
            return last[1]
        memo, shared = self._memo, self._shared
        tokens: list[int] = []
        if not memo:  # a fresh memo holds none of them: each is estimated (a message met twice, twice) and kept
            for m in messages:
                made = self.blocks(m.content)
                kept = memo[m] = shared.setdefault(made, made)
                tokens.append(kept.tokens)
        else:
            for m in messages:
                hit = memo.get(m)
                if hit is None:  # as ``message`` does
                    made = self.blocks(m.content)
                    hit = memo[m] = shared.setdefault(made, made)
                tokens.append(hit.tokens)
        found = tuple(tokens)
        self._last = (messages, found)
        return found

    def tool_def(self, tool: ToolDef) -> MessageEstimate:
        count = self.rule.count
        counts = count(tool.name) + count(tool.description) + count(tool.schema_json)
        fixed = self.rule.tool_def_overhead_tokens
        tokens = self.rule.text_tokens(counts) + fixed
        return MessageEstimate(tokens, counts, fixed, (tokens,))

    def preamble(self, transcript: Transcript) -> int:
        """System prompt and tool definitions: sent with every request."""
        system = self.blocks(transcript.system).tokens if transcript.system else 0
        return system + sum(self.tool_def(t).tokens for t in transcript.tools)

    def request(self, transcript: Transcript) -> int:
        """The whole request: preamble plus every message."""
        return self.preamble(transcript) + sum(self.message_tokens(transcript.messages))


RULES_FILE = "rules.json"
"""The estimators' constants, shipped beside this module: every named rule's
classes, chars per token and overheads (``benchmarks/calibrate/calibrate.py``
rewrites the ``safe`` entry)."""

CUSTOM_PREFIX = "custom:"


def _decimal(value: object, where: str) -> Fraction:
    """An exact decimal (given as a string, as JSON and rule strings carry it), as a Fraction."""
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        raise ValueError(f"{where}: {value!r} is not a decimal number") from None
    if not number.is_finite() or number <= 0:
        raise ValueError(f"{where}: chars per token must be a positive number, not {value!r}")
    return Fraction(number)


def _code_range(text: str) -> tuple[int, int]:
    a, _, b = text.partition("-")
    return int(a, 16), int(b or a, 16)


def rule_from_data(name: str, data: Mapping[str, Any]) -> Rule:
    """A rule from its ``rules.json`` entry."""
    overheads = {
        key: int(data.get(key, default))
        for key, default in (
            ("message_overhead_tokens", MESSAGE_OVERHEAD_TOKENS),
            ("block_overhead_tokens", BLOCK_OVERHEAD_TOKENS),
            ("tool_def_overhead_tokens", TOOL_DEF_OVERHEAD_TOKENS),
            ("image_tokens_unknown", IMAGE_TOKENS_UNKNOWN),
        )
    }
    if data.get("type") == "script":
        cpt = data["chars_per_token"]
        return ScriptRule(
            name,
            _decimal(cpt["ascii"], f"{name}.ascii"),
            _decimal(cpt["cjk"], f"{name}.cjk"),
            _decimal(cpt["other"], f"{name}.other"),
            **overheads,
        )
    if data.get("type") == "classes":
        classes = tuple(
            CharClass(
                c["name"],
                tuple(_code_range(r) for r in c.get("ranges", ())),
                _decimal(c["chars_per_token"], f"{name}.{c['name']}"),
            )
            for c in data["classes"]
        )
        return ClassRule(name, classes, **overheads)
    raise ValueError(f"rule {name!r}: unknown type {data.get('type')!r} (script or classes)")


def load_rules(text: str | None = None) -> dict[str, Rule]:
    """The named rules of ``rules.json`` (or of ``text``, a document of the same shape)."""
    if text is None:
        text = _rules_text()
    document = json.loads(text)
    return {name: rule_from_data(name, data) for name, data in document["rules"].items()}


class _Rules(Mapping[str, Rule]):
    """The named rules of a ``rules.json`` document, each built the first time it is asked for: building every
    rule's counter and checking its classes cost each command's start-up, which uses one rule."""

    def __init__(self, document: Mapping[str, Mapping[str, Any]]) -> None:
        self._data = document
        self._built: dict[str, Rule] = {}

    def __getitem__(self, name: str) -> Rule:
        rule = self._built.get(name)
        if rule is None:
            rule = self._built[name] = rule_from_data(name, self._data[name])
        return rule

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def _rules_text() -> str:
    """``rules.json`` as shipped: read beside this module, where an installed package is (importlib.resources,
    and the zip and tempfile modules it imports, only for a package that is not files: every command reads the
    rules while it starts)."""
    try:
        return Path(__file__).with_name(RULES_FILE).read_text(encoding="utf-8")
    except OSError:  # pragma: no cover - a zipped package
        from importlib.resources import files

        return files(__package__ or "windowfit.fitting").joinpath(RULES_FILE).read_text(encoding="utf-8")


def _shipped_rules() -> _Rules:
    text = _rules_text()
    rules: dict[str, Mapping[str, Any]] = orjson.loads(text)["rules"]  # as json.loads reads it, 5x faster
    return _Rules(rules)


ESTIMATORS: Mapping[str, Rule] = _shipped_rules()
"""Named rules selectable with ``--estimator`` (``seed``, ``safe``), from ``rules.json``, in its order; each
is built on first use."""

SAFE: Rule
"""Calibrated never to under-estimate whole documents of the calibration corpus
for any tokenizer loaded there (``docs/calibration.md``). ``ESTIMATORS["safe"]``, built when first read."""


def __getattr__(name: str) -> Any:
    if name == "SAFE":
        return ESTIMATORS["safe"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_rule(spec: str) -> Rule:
    """A named rule, or a ``custom:class=chars_per_token,...`` rule string.

    A custom string naming only ``ascii``, ``cjk`` and ``other`` is a
    ``ScriptRule`` (classes it leaves out keep the seed's constants). Any other
    class name is one of the ``safe`` rule's classes: the string starts from
    ``safe``'s constants; ``ascii``, ``cjk`` or ``other`` then set every class
    in that seed class, and named classes override those.
    """
    if not spec.startswith(CUSTOM_PREFIX):
        try:
            return ESTIMATORS[spec]
        except KeyError:
            raise OptionError(
                f"unknown estimator {spec!r}; known: {', '.join(sorted(ESTIMATORS))}, "
                f"or {CUSTOM_PREFIX}ascii=4,cjk=1,other=2"
            ) from None
    body = spec[len(CUSTOM_PREFIX) :].strip()
    values: dict[str, Fraction] = {}
    for item in body.split(",") if body else ():
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise OptionError(f"estimator {spec!r}: {item.strip()!r} is not CLASS=CHARS_PER_TOKEN")
        if key in values:
            raise OptionError(f"estimator {spec!r}: {key} is given twice")
        try:
            values[key] = _decimal(value, key)
        except ValueError as exc:
            raise OptionError(f"estimator {spec!r}: {exc}") from None
    if not values:
        raise OptionError(f"estimator {spec!r}: name at least one class, as in {CUSTOM_PREFIX}ascii=4,cjk=1,other=2")
    seed_names = set(SEED.constants)
    if set(values) <= seed_names:
        seed = SEED.constants
        return replace(
            SEED,
            name=spec,
            ascii_chars_per_token=values.get("ascii", seed["ascii"]),
            cjk_chars_per_token=values.get("cjk", seed["cjk"]),
            other_chars_per_token=values.get("other", seed["other"]),
        )
    base = ESTIMATORS["safe"]
    assert isinstance(base, ClassRule)
    known = {c.name for c in base.classes}
    unknown = set(values) - known - seed_names
    if unknown:
        raise OptionError(
            f"estimator {spec!r}: unknown class {', '.join(sorted(unknown))}; "
            f"known: ascii, cjk, other, {', '.join(c.name for c in base.classes)}"
        )
    classes = tuple(
        replace(c, chars_per_token=values.get(c.name, values.get(c.group, c.chars_per_token))) for c in base.classes
    )
    return replace(base, name=spec, classes=classes)


MAX_OVERHEAD = 1000.0
"""The largest ``overhead`` factor: far beyond any real structure, small enough that scaled overheads stay
whole numbers (``inf`` or ``1e308`` would not)."""


def make_estimator(name: str = "seed", *, overhead: float = 1.0) -> Estimator:
    """An estimator for a named rule or a ``custom:`` rule string, with
    overheads scaled by ``overhead`` (0 to ``MAX_OVERHEAD``)."""
    if not (0 <= overhead <= MAX_OVERHEAD):  # also refuses nan
        raise OptionError(f"the overhead factor must be between 0 and {MAX_OVERHEAD:g}, not {overhead}")
    rule = parse_rule(name)
    return Estimator(rule.scaled_overhead(overhead) if overhead != 1.0 else rule)
