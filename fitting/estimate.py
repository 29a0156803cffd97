"""The token estimate without a tokenizer (SPEC section 2): characters per
token by writing script, plus documented structural overheads.

Counting is done by C code: ``str.isascii`` for pure ASCII, the UTF-8 lead
bytes (``bytes.translate``) for the rest, and one compiled character class for
CJK only when 3- or 4-byte characters are present.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from fractions import Fraction

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

_CJK_RUN = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in CJK_RANGES) + "]+")
_BELOW_U0800_RUN = re.compile("[\x00-\u07ff]+")
"""Runs of 1- and 2-byte characters (ASCII, Latin, Greek, Cyrillic, Arabic, ...): never CJK."""
_BELOW_3_BYTE_LEADS = bytes(range(0xE0))
_BELOW_4_BYTE_LEADS = bytes(range(0xF0))


def is_cjk(char: str) -> bool:
    """Whether one character is in the CJK class."""
    cp = ord(char)
    return any(a <= cp <= b for a, b in CJK_RANGES)


@dataclass(frozen=True, slots=True)
class CharCounts:
    """Characters per script class."""

    ascii: int = 0
    cjk: int = 0
    other: int = 0

    def __add__(self, other: CharCounts) -> CharCounts:
        return CharCounts(self.ascii + other.ascii, self.cjk + other.cjk, self.other + other.other)

    @property
    def total(self) -> int:
        return self.ascii + self.cjk + self.other


ZERO = CharCounts()


def count_chars(text: str) -> CharCounts:
    """Count ASCII, CJK and other characters of ``text``."""
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
        wide = _BELOW_U0800_RUN.sub("", text)
        cjk = len(wide) - len(_CJK_RUN.sub("", wide))
    else:
        cjk = n - len(_CJK_RUN.sub("", text))
    return CharCounts(ascii_, cjk, n - ascii_ - cjk)


def image_tokens(width: int | None, height: int | None, unknown: int = IMAGE_TOKENS_UNKNOWN) -> int:
    """Anthropic's documented rule, (w*h)/750 after scaling the image down to
    1568 px on its long edge and 1.15 megapixels; ``unknown`` without size."""
    if not width or not height or width <= 0 or height <= 0:
        return unknown
    scale = min(1.0, IMAGE_MAX_EDGE / max(width, height), math.sqrt(IMAGE_MAX_PIXELS / (width * height)))
    return max(1, math.ceil((width * scale) * (height * scale) / IMAGE_PIXELS_PER_TOKEN))


def _integer_weights(*chars_per_token: Fraction) -> tuple[int, ...]:
    """Integer weights and a common denominator D with ``w_i / D == 1 / chars_per_token_i``."""
    per_char = [1 / Fraction(c) for c in chars_per_token]
    denominator = math.lcm(*(f.denominator for f in per_char))
    return (*(int(f * denominator) for f in per_char), denominator)


@dataclass(frozen=True, slots=True)
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


SEED = ScriptRule()
"""The field report's rule: ASCII 4, CJK 1, everything else 2 chars/token."""


@dataclass(frozen=True, slots=True)
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

    rule: ScriptRule = SEED
    _memo: dict[Message, MessageEstimate] = field(default_factory=dict, repr=False)

    def block_parts(self, block: Block) -> tuple[CharCounts, int]:
        """Characters and fixed tokens of one block, overheads included."""
        overhead = self.rule.block_overhead_tokens
        if isinstance(block, (Text, Thinking)):
            return count_chars(block.text), overhead
        if isinstance(block, ToolCall):
            return count_chars(block.name) + count_chars(block.input_json), overhead
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
            return count_chars(block.counted or block.raw), overhead + binary
        raise TypeError(f"not a block: {block!r}")

    def block(self, block: Block) -> int:
        """One block's tokens on its own, rounded up."""
        counts, fixed = self.block_parts(block)
        return self.rule.text_tokens(counts) + fixed

    def blocks(self, blocks: tuple[Block, ...]) -> MessageEstimate:
        """Estimate a sequence of blocks as one message (not memoised)."""
        counts, fixed = ZERO, self.rule.message_overhead_tokens
        per_block = []
        for block in blocks:
            c, f = self.block_parts(block)
            counts, fixed = counts + c, fixed + f
            per_block.append(self.rule.text_tokens(c) + f)
        return MessageEstimate(self.rule.text_tokens(counts) + fixed, counts, fixed, tuple(per_block))

    def message(self, message: Message) -> MessageEstimate:
        """A message's estimate, computed once per distinct message."""
        hit = self._memo.get(message)
        if hit is None:
            hit = self._memo[message] = self.blocks(message.content)
        return hit

    def tool_def(self, tool: ToolDef) -> MessageEstimate:
        counts = count_chars(tool.name) + count_chars(tool.description) + count_chars(tool.schema_json)
        fixed = self.rule.tool_def_overhead_tokens
        tokens = self.rule.text_tokens(counts) + fixed
        return MessageEstimate(tokens, counts, fixed, (tokens,))

    def preamble(self, transcript: Transcript) -> int:
        """System prompt and tool definitions: sent with every request."""
        system = self.blocks(transcript.system).tokens if transcript.system else 0
        return system + sum(self.tool_def(t).tokens for t in transcript.tools)

    def request(self, transcript: Transcript) -> int:
        """The whole request: preamble plus every message."""
        return self.preamble(transcript) + sum(self.message(m).tokens for m in transcript.messages)


ESTIMATORS: dict[str, ScriptRule] = {"seed": SEED}
"""Named rules selectable with ``--estimator``."""


def make_estimator(name: str = "seed", *, overhead: float = 1.0) -> Estimator:
    """An estimator for a named rule, with overheads scaled by ``overhead``."""
    try:
        rule = ESTIMATORS[name]
    except KeyError:
        from .errors import OptionError

        raise OptionError(f"unknown estimator {name!r}; known: {', '.join(sorted(ESTIMATORS))}") from None
    return Estimator(rule.scaled_overhead(overhead) if overhead != 1.0 else rule)
