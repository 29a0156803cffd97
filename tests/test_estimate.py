"""The seed estimator (SPEC section 2): characters per token by script, one
rounding per message, documented overheads, images by their size, memoised."""

from __future__ import annotations

import base64
from fractions import Fraction

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import texts, transcripts

import windowfit.fitting.estimate
from windowfit.fitting import SEED, CharCounts, Estimator, Message, ScriptRule, Source, count_chars, make_estimator
from windowfit.fitting.errors import OptionError
from windowfit.fitting.estimate import (
    BLOCK_OVERHEAD_TOKENS,
    IMAGE_TOKENS_UNKNOWN,
    MESSAGE_OVERHEAD_TOKENS,
    TOOL_DEF_OVERHEAD_TOKENS,
    image_tokens,
    is_cjk,
)
from windowfit.fitting.formats import Input, load
from windowfit.fitting.images import decoded_size, sniff_dimensions
from windowfit.fitting.transcript import Image, Other, Text, Thinking, ToolCall, ToolDef, ToolResult, Transcript

TEXT_ONLY = Estimator(SEED.scaled_overhead(0))
"""The pure text rule: ceil(ascii/4 + cjk/1 + other/2), no structural overhead."""


def text_tokens(*texts_: str, estimator: Estimator = TEXT_ONLY) -> int:
    """Tokens of one message holding one text block per argument."""
    return estimator.blocks(tuple(Text(t) for t in texts_)).tokens


# --------------------------------------------------------------------------
# Characters per token by script


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("abcd", 1),  # 4 ASCII / 4 = 1
        ("abcde", 2),  # ceil(5 / 4) = 2
        ("a" * 400, 100),  # 400 / 4
        ("Привет", 3),  # 6 Cyrillic / 2 = 3
        ("Γειά", 2),  # 4 Greek / 2 = 2
        ("日本語", 3),  # 3 Han / 1 = 3
        ("ひらがな", 4),  # 4 Hiragana / 1
        ("カタカナ", 4),  # 4 Katakana / 1
        ("한국어", 3),  # 3 Hangul syllables / 1
        ("，", 1),  # U+FF0C fullwidth comma is CJK: 1 / 1
        ("。、", 2),  # U+3002, U+3001 CJK punctuation: 2 / 1
        ("é", 1),  # precomposed U+00E9 is "other": ceil(1 / 2) = 1
        ("😀", 1),  # one astral code point, "other": ceil(1 / 2) = 1
        ("😀😀😀😀", 2),  # 4 other / 2 = 2
        ("ab Пр", 2),  # 3 ASCII / 4 + 2 other / 2 = 0.75 + 1 = 1.75 -> 2
        ("Hello, 世界!", 4),  # 8 ASCII / 4 + 2 CJK = 2 + 2 = 4
    ],
)
def test_text_tokens_follow_chars_per_token_by_script(text: str, expected: int) -> None:
    assert text_tokens(text) == expected


@pytest.mark.parametrize(
    ("text", "ascii", "cjk", "other"),
    [
        ("abc", 3, 0, 0),
        ("\x00\x7f", 2, 0, 0),  # both ends of ASCII
        ("\x80", 0, 0, 1),  # first code point past ASCII
        ("é", 0, 0, 1),  # U+00E9
        ("e\u0301", 1, 0, 1),  # decomposed é: ASCII e + combining acute (other)
        ("Привет", 0, 0, 6),
        ("Ωμέγα", 0, 0, 5),
        ("مرحبا", 0, 0, 5),  # Arabic
        ("👍🏽", 0, 0, 2),  # thumbs up + skin tone modifier: two astral code points
        ("❤️", 0, 0, 2),  # U+2764 + variation selector U+FE0F: other, other
        ("ᄀ", 0, 1, 0),  # U+1100 first Hangul Jamo
        ("ᇿ", 0, 1, 0),  # U+11FF last Hangul Jamo
        ("ሀ", 0, 0, 1),  # U+1200 Ethiopic, just past the Jamo block
        ("\u2e7f", 0, 0, 1),  # just before the CJK radicals supplement
        ("⺀", 0, 1, 0),  # U+2E80 CJK radical
        ("　", 0, 1, 0),  # U+3000 ideographic space
        ("㏿", 0, 1, 0),  # U+33FF last of the CJK compatibility block
        ("䷀", 0, 0, 1),  # U+4DC0 Yijing hexagram: between extension A and the unified block
        ("一", 0, 1, 0),  # U+4E00
        ("\u9fff", 0, 1, 0),  # last unified ideograph
        ("ꀀ", 0, 0, 1),  # U+A000 Yi syllable
        ("가", 0, 1, 0),  # U+AC00 first Hangul syllable
        ("豈", 0, 1, 0),  # U+F900 compatibility ideograph
        ("Ａ", 0, 1, 0),  # U+FF21 fullwidth Latin A
        ("ｶ", 0, 1, 0),  # U+FF76 halfwidth katakana
        ("\ufff0", 0, 0, 1),  # past the halfwidth/fullwidth block
        ("𠀀", 0, 1, 0),  # U+20000 CJK extension B (astral)
        ("\U0003ffff", 0, 1, 0),  # end of plane 3
        ("\U00040000", 0, 0, 1),  # plane 4
        ("Привет — 日本", 2, 2, 7),  # few wide characters among many narrow ones: 6 Cyrillic + the dash are other
        ("日本語 text, Русский, 😀", 9, 3, 8),  # 3 Han; " text, " 7 + ", " 2 ASCII; 7 Cyrillic + 1 emoji
    ],
)
def test_count_chars_classifies_each_code_point(text: str, ascii: int, cjk: int, other: int) -> None:
    assert count_chars(text) == CharCounts(ascii, cjk, other)


def test_fractions_are_summed_within_a_message_and_rounded_once() -> None:
    # One block "abcd": 4 / 4 = 1. Two blocks "ab" + "cd": 2/4 + 2/4 = 1, rounded once -> 1, not 1 + 1.
    estimate = TEXT_ONLY.blocks((Text("ab"), Text("cd")))
    assert estimate.tokens == 1
    assert estimate.counts == CharCounts(4, 0, 0)
    # Each block on its own is rounded up: ceil(2/4) = 1 each (the per-block breakdown).
    assert estimate.block_tokens == (1, 1)
    # Mixed scripts in different blocks: "a" (0.25) + "П" (0.5) + "日" (1) = 1.75 -> 2.
    assert text_tokens("a", "П", "日") == 2


def test_rule_constants_are_exact_parameters() -> None:
    # 21 chars at 0.7 chars/token is exactly 30 tokens; float division gives 30.000000000000004 -> 31.
    rule = ScriptRule(name="audit", cjk_chars_per_token=Fraction("0.7")).scaled_overhead(0)
    assert text_tokens("日" * 21, estimator=Estimator(rule)) == 30
    # Other at 3 chars/token instead of 2: ceil(6 / 3) = 2 for "Привет".
    assert (
        text_tokens("Привет", estimator=Estimator(ScriptRule(other_chars_per_token=Fraction(3)).scaled_overhead(0)))
        == 2
    )


def test_field_report_reference_point() -> None:
    # SPEC 2: a chapter of 26,492 ASCII and 73,600 Cyrillic characters.
    ascii_part = ("The quick brown fox. " * 1262)[:26_492]  # 21 chars * 1262 = 26,502 >= 26,492
    cyrillic_part = ("Съешь же ещё этих мягких булок" * 2454)[:73_600]
    chapter = ascii_part + cyrillic_part
    # The Cyrillic sentence has 5 spaces per 30 chars: count them to split the classes by hand.
    spaces = cyrillic_part.count(" ")
    assert count_chars(chapter) == CharCounts(26_492 + spaces, 0, 73_600 - spaces)

    pure = ascii_part + "ж" * 73_600  # exactly 26,492 ASCII and 73,600 Cyrillic
    chars_over_4 = ScriptRule(
        name="chars/4",
        ascii_chars_per_token=Fraction(4),
        cjk_chars_per_token=Fraction(4),
        other_chars_per_token=Fraction(4),
    ).scaled_overhead(0)
    # (26,492 + 73,600) / 4 = 100,092 / 4 = 25,023
    assert text_tokens(pure, estimator=Estimator(chars_over_4)) == 25_023
    # 26,492 / 4 + 73,600 / 2 = 6,623 + 36,800 = 43,423
    assert text_tokens(pure) == 43_423


# --------------------------------------------------------------------------
# Structural overheads


def test_overhead_constants_are_the_documented_values() -> None:
    assert (MESSAGE_OVERHEAD_TOKENS, BLOCK_OVERHEAD_TOKENS, TOOL_DEF_OVERHEAD_TOKENS) == (4, 3, 8)
    assert IMAGE_TOKENS_UNKNOWN == 1600


def test_message_and_block_overheads_are_added() -> None:
    est = Estimator()
    # empty message: 4 (message)
    assert est.blocks(()).tokens == 4
    # "abcd": 1 text + 4 (message) + 3 (block) = 8
    assert est.blocks((Text("abcd"),)).tokens == 8
    # "ab" + "cd": 1 text (rounded once) + 4 + 3 * 2 = 11
    two = est.blocks((Text("ab"), Text("cd")))
    assert two.tokens == 11
    assert two.fixed_tokens == 10
    # Thinking counts like text: "abcd" -> 1 + 3 + 4 = 8
    assert est.blocks((Thinking("abcd"),)).tokens == 8


def test_tool_call_counts_name_and_compact_input_json() -> None:
    est = Estimator()
    call = ToolCall("toolu_1", "grep", '{"q":"x"}')
    # "grep" (4) + '{"q":"x"}' (9) = 13 ASCII -> ceil(13/4) = 4; + 3 (block) + 4 (message) = 11
    assert est.blocks((call,)).tokens == 11
    # the call id is not text the model reads as content: a longer id changes nothing
    assert est.blocks((ToolCall("toolu_" + "9" * 40, "grep", '{"q":"x"}'),)).tokens == 11


def test_tool_result_counts_its_own_and_its_blocks_overhead() -> None:
    est = Estimator()
    result = ToolResult("toolu_1", (Text("abcd"),))
    # text 1 + result block 3 + inner text block 3 + message 4 = 11
    assert est.blocks((result,)).tokens == 11
    assert est.block(result) == 7  # on its own: 1 + 3 + 3
    # empty result: its block overhead only
    assert est.block(ToolResult("toolu_1", ())) == 3
    # two inner blocks "ab", "cd": text 1 + 3 + 3 * 2 = 10
    assert est.block(ToolResult("toolu_1", (Text("ab"), Text("cd")))) == 10


def test_other_block_counts_its_raw_json() -> None:
    raw = '{"type":"x"}'  # 12 ASCII -> 3
    assert Estimator().block(Other("x", raw)) == 3 + 3


def test_tool_definitions_and_system_prompt_form_the_preamble() -> None:
    est = Estimator()
    tool = ToolDef("grep", "Search.", "{}")
    # "grep" 4 + "Search." 7 + "{}" 2 = 13 ASCII -> 4; + 8 (tool definition) = 12
    assert est.tool_def(tool).tokens == 12
    transcript = Transcript(
        system=(Text("You are helpful."),),  # 16 ASCII -> 4; + 4 (message) + 3 (block) = 11
        tools=(tool,),
        messages=(Message("user", (Text("abcd"),)),),  # 8
    )
    assert est.preamble(transcript) == 11 + 12
    assert est.request(transcript) == 11 + 12 + 8
    # no system prompt and no tools: no preamble at all
    assert est.preamble(Transcript((), (), ())) == 0


def test_scaled_overhead_multiplies_every_structural_constant() -> None:
    zero = SEED.scaled_overhead(0)
    assert (zero.message_overhead_tokens, zero.block_overhead_tokens, zero.tool_def_overhead_tokens) == (0, 0, 0)
    # the text rule and the image fallback are not overheads
    assert zero.ascii_chars_per_token == 4
    assert zero.image_tokens_unknown == IMAGE_TOKENS_UNKNOWN
    double = SEED.scaled_overhead(2)
    assert (double.message_overhead_tokens, double.block_overhead_tokens, double.tool_def_overhead_tokens) == (8, 6, 16)
    # with overhead 0 a message is its text: "abcd" -> 1
    assert Estimator(zero).blocks((Text("abcd"),)).tokens == 1


def test_make_estimator_by_name_with_overhead() -> None:
    assert make_estimator().rule == SEED
    assert make_estimator("seed", overhead=0).rule.message_overhead_tokens == 0
    with pytest.raises(OptionError, match="unknown estimator 'nope'"):
        make_estimator("nope")


# --------------------------------------------------------------------------
# Images


@pytest.mark.parametrize(
    ("width", "height", "expected"),
    [
        (None, None, IMAGE_TOKENS_UNKNOWN),
        (0, 100, IMAGE_TOKENS_UNKNOWN),
        (200, 100, 27),  # 20,000 / 750 = 26.67 -> 27
        (1000, 1000, 1334),  # 1,000,000 / 750 = 1,333.33 -> 1,334 (1 MP: no scaling)
        # long edge 3136 > 1568: scale 0.5 (the pixel cap would allow 0.61) -> 1568 x 500 = 784,000 / 750 = 1,045.3
        (3136, 1000, 1046),
        # 2.25 MP > 1.15 MP (edges fit): scaled to 1,150,000 px / 750 = 1,533.3 -> 1,534
        (1500, 1500, 1534),
    ],
)
def test_image_tokens_follow_the_provider_size_rule(width: int | None, height: int | None, expected: int) -> None:
    assert image_tokens(width, height) == expected


def test_image_block_costs_the_image_rule_plus_block_overhead() -> None:
    est = Estimator()
    assert est.block(Image("image/png", 12_345)) == IMAGE_TOKENS_UNKNOWN + 3
    assert est.block(Image("image/png", 12_345, 1000, 1000)) == 1334 + 3
    # a message holding one image and "abcd": 1334 + 3 + 1 + 3 + 4
    assert est.blocks((Image("image/png", 1, 1000, 1000), Text("abcd"))).tokens == 1345


# Byte by byte: PNG signature, IHDR length 13, "IHDR", width 123, height 45, depth 8, RGBA, 3 zero bytes, CRC.
PNG_123x45 = (
    b"\x89PNG\r\n\x1a\n"
    + b"\x00\x00\x00\x0d"
    + b"IHDR"
    + b"\x00\x00\x00\x7b"
    + b"\x00\x00\x00\x2d"
    + b"\x08\x06\x00\x00\x00"
) + b"\x00\x00\x00\x00"
# GIF89a, logical screen 640 (0x0280) x 480 (0x01E0) little-endian, flags, background, aspect.
GIF_640x480 = b"GIF89a" + b"\x80\x02" + b"\xe0\x01" + b"\x00\x00\x00"
# JPEG: SOI, an APP0 segment of length 16, then SOF0 (length 17, precision 8, height 480, width 640).
JPEG_640x480 = (
    b"\xff\xd8"
    + b"\xff\xe0\x00\x10"
    + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    + b"\xff\xc0\x00\x11\x08"
    + b"\x01\xe0"
    + b"\x02\x80"
    + b"\x03\x01\x22\x00"
)
# WebP extended: RIFF, size, WEBP, VP8X, chunk size 10, flags + 3 reserved, width-1 = 1023, height-1 = 767 (24-bit LE).
WEBP_1024x768 = (
    b"RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00" + b"\x00\x00\x00\x00" + b"\xff\x03\x00" + b"\xff\x02\x00"
)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (PNG_123x45, (123, 45)),
        (GIF_640x480, (640, 480)),
        (JPEG_640x480, (640, 480)),
        (WEBP_1024x768, (1024, 768)),
        (b"not an image at all", None),
        (b"", None),
    ],
)
def test_sniff_dimensions_reads_image_headers(data: bytes, expected: tuple[int, int] | None) -> None:
    assert sniff_dimensions(base64.b64encode(data).decode()) == expected


def test_sniff_dimensions_survives_garbage() -> None:
    assert sniff_dimensions("!!!! not base64 ~~~~") is None


@pytest.mark.parametrize(("b64", "size"), [("QUJD", 3), ("QUI=", 2), ("QQ==", 1), ("", 0)])
def test_decoded_size_counts_bytes_not_base64_chars(b64: str, size: int) -> None:
    assert decoded_size(b64) == size


def big_png_base64(width: int, height: int, *, chars: int) -> str:
    """A PNG header for ``width x height`` padded with zero bytes to about ``chars`` base64 characters."""
    header = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR" + width.to_bytes(4, "big") + height.to_bytes(4, "big")
    return base64.b64encode(header + b"\x00" * (chars * 3 // 4 - len(header))).decode()


def test_base64_image_data_is_never_counted_as_characters() -> None:
    data = big_png_base64(800, 600, chars=600_000)
    assert len(data) == 600_000
    line = {
        "role": "user",
        "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}],
    }
    (transcript,) = load(Input("big.jsonl", orjson.dumps(line) + b"\n"))
    (message,) = transcript.messages
    (image,) = message.content
    assert isinstance(image, Image)
    assert (image.width, image.height, image.byte_size) == (800, 600, 450_000)
    # 800 x 600 = 480,000 px / 750 = 640; + 3 (block) + 4 (message) = 647 -- not 600,000 / 4 = 150,000
    assert Estimator().message(message).tokens == 647
    assert Estimator().message(message).counts == CharCounts()


def test_base64_data_url_image_is_never_counted_as_characters() -> None:
    data = big_png_base64(1000, 1000, chars=600_000)
    line = {
        "role": "user",
        "content": [
            {"type": "text", "text": "abcd"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}},
        ],
    }
    (transcript,) = load(Input("big.jsonl", orjson.dumps(line) + b"\n"))
    # "abcd" 1 + 3, image 1,334 + 3, message 4 = 1,345
    assert Estimator().message(transcript.messages[0]).tokens == 1345


# --------------------------------------------------------------------------
# Memoisation


def test_a_message_is_estimated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = windowfit.fitting.estimate.count_chars

    def counting(text: str) -> CharCounts:
        calls.append(text)
        return real(text)

    real_groups = windowfit.fitting.estimate._groups

    def counting_groups(text: str) -> tuple[int, int, int]:  # the seed's counter as integers (its fast path)
        calls.append(text)
        return real_groups(text)

    monkeypatch.setattr(windowfit.fitting.estimate, "count_chars", counting)
    monkeypatch.setattr(windowfit.fitting.estimate, "_groups", counting_groups)
    est = Estimator()
    message = Message("user", (Text("Привет, world"), Text("日本語")), Source("a.jsonl", 1))
    first = est.message(message)
    assert len(calls) == 2
    assert est.message(message) is first
    assert len(calls) == 2
    # keyed by the message's value: an equal message read from another line is not recounted
    twin = Message("user", (Text("Привет, world"), Text("日本語")), Source("b.jsonl", 7))
    assert est.message(twin) is first
    assert len(calls) == 2
    # a different message is counted
    est.message(Message("assistant", (Text("ок"),)))  # not ASCII: the fast path counts ASCII by len()
    assert len(calls) == 3
    # another estimator has its own memo (its rule may differ)
    Estimator(SEED.scaled_overhead(0)).message(message)
    assert len(calls) == 5


# --------------------------------------------------------------------------
# Properties


@given(st.text(alphabet=st.characters(max_codepoint=0x7F)))
def test_ascii_text_is_ceil_len_over_4(text: str) -> None:
    assert text_tokens(text) == (len(text) + 3) // 4


def naive_counts(text: str) -> CharCounts:
    ascii_ = sum(1 for ch in text if ord(ch) < 0x80)
    cjk = sum(1 for ch in text if is_cjk(ch))
    return CharCounts(ascii_, cjk, len(text) - ascii_ - cjk)


ANY_TEXT = st.one_of(
    st.text(),  # any code point but surrogates
    st.text(st.characters(min_codepoint=0x10000)),  # astral only: 4-byte UTF-8
    st.text(st.characters(min_codepoint=0x800, max_codepoint=0xFFFF, exclude_categories=("Cs",))),  # 3-byte
    texts(),
)


@pytest.mark.slow
@given(ANY_TEXT)
def test_count_chars_agrees_with_naive_classification(text: str) -> None:
    assert count_chars(text) == naive_counts(text)


@st.composite
def mostly_narrow_texts(draw: st.DrawFn) -> str:
    """Cyrillic/Latin/Greek prose with a few 3- and 4-byte characters (CJK, dashes, emoji) spliced in."""
    narrow = draw(texts(10, 40, scripts=("ascii", "cyrillic", "greek", "accented")))
    for _ in range(draw(st.integers(0, 4))):
        wide = draw(st.sampled_from(["日", "本", "—", "→", "😀", "，", "\U00020000"]))
        at = draw(st.integers(0, len(narrow)))
        narrow = narrow[:at] + wide + narrow[at:]
    return narrow


@given(st.one_of(ANY_TEXT, mostly_narrow_texts()))
def test_count_chars_agrees_with_naive_classification_on_mostly_narrow_text(text: str) -> None:
    assert count_chars(text) == naive_counts(text)


@given(ANY_TEXT, ANY_TEXT)
def test_counts_are_additive_over_concatenation(a: str, b: str) -> None:
    assert count_chars(a + b) == count_chars(a) + count_chars(b)


@given(texts(), texts())
def test_splitting_a_text_into_two_blocks_keeps_the_text_tokens(a: str, b: str) -> None:
    est = Estimator()
    one = est.blocks((Text(a + b),))
    two = est.blocks((Text(a), Text(b)))
    assert two.counts == one.counts
    assert two.tokens == one.tokens + BLOCK_OVERHEAD_TOKENS
    assert text_tokens(a, b) == text_tokens(a + b)


@given(texts(), texts())
def test_splitting_a_text_into_two_messages_costs_at_most_one_rounding(a: str, b: str) -> None:
    whole = text_tokens(a + b)
    split = text_tokens(a) + text_tokens(b)
    assert whole <= split <= whole + 1
    est = Estimator()
    overheads = MESSAGE_OVERHEAD_TOKENS + BLOCK_OVERHEAD_TOKENS  # the second message and its block
    whole_full = est.blocks((Text(a + b),)).tokens
    split_full = est.blocks((Text(a),)).tokens + est.blocks((Text(b),)).tokens
    assert whole_full + overheads <= split_full <= whole_full + overheads + 1


@settings(deadline=None)
@given(st.integers(0, 200_000), st.sampled_from(["a", "Я", "字"]))
def test_large_texts_scale_exactly(n: int, char: str) -> None:
    per_token = {"a": 4, "Я": 2, "字": 1}[char]
    assert text_tokens(char * n) == -(-n // per_token)


def test_base64_payload_in_an_unmodelled_block_is_not_counted_as_text() -> None:
    # A 400,000-char base64 PDF in an Anthropic "document" block: as text it would be
    # 100,000 tokens. SPEC §2: binary payloads are never characters. With overheads off,
    # the block costs its JSON without the data plus one fixed payload cost (1,600).
    pdf = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "QUJD" * 100_000}}
    (t,) = load(Input("d.jsonl", orjson.dumps({"role": "user", "content": [pdf]})))
    block = t.messages[0].content[0]
    assert isinstance(block, Other) and block.binary_payloads == 1
    skeleton = '{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":""}}'
    assert block.counted == skeleton  # 87 ASCII chars -> 21.75 tokens
    assert make_estimator(overhead=0).message(t.messages[0]).tokens == 22 + 1600


@given(transcripts(max_turns=3, max_rounds=4), st.booleans())
def test_message_tokens_are_each_messages_estimate(transcript: Transcript, warm: bool) -> None:
    """``message_tokens`` (fresh memo, warm memo, the same tuple asked again) gives ``message``'s tokens, and
    leaves the memo as ``message`` would: a message repeated in the tuple included."""
    messages = (*transcript.messages, *transcript.messages[:2])
    est, reference = make_estimator(), make_estimator()
    if warm:
        est.message(messages[0])
    expected = tuple(reference.message(m).tokens for m in messages)
    assert est.message_tokens(messages) == expected
    assert est.message_tokens(messages) == expected  # remembered by identity
    assert est.message_tokens(tuple(list(messages))) == expected  # another tuple of the same messages
    assert all(est.message(m) == reference.message(m) for m in messages)
    assert len(est._memo) == len(reference._memo) and len(est._shared) == len(reference._shared)


def test_the_named_rules_are_rules_json_s_in_its_order_each_built_once() -> None:
    """``ESTIMATORS`` builds a rule when it is first asked for (start-up builds none of the class rules): the
    same names in the same order, and the same rules, as building every one from the file."""
    from windowfit.fitting.estimate import ESTIMATORS, load_rules

    eager = load_rules()
    assert list(ESTIMATORS) == list(eager) and len(ESTIMATORS) == len(eager)
    for name, rule in eager.items():
        assert ESTIMATORS[name] == rule
        assert ESTIMATORS[name] is ESTIMATORS[name]
    assert windowfit.fitting.estimate.SAFE is ESTIMATORS["safe"]
    with pytest.raises(KeyError):
        ESTIMATORS["no-such-rule"]


LAZY_RULES_PROBE = """
from windowfit.fitting.estimate import ESTIMATORS, make_estimator
make_estimator("seed")
print(sorted(ESTIMATORS._built))  # the rules built so far
"""


def test_a_seed_estimate_builds_no_class_rule() -> None:
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", LAZY_RULES_PROBE], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "['seed']"
