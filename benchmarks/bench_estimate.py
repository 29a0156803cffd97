"""Throughput of ``fitting.estimate.count_chars`` on ASCII-heavy, Cyrillic and
CJK text, as a ratio to a naive per-character loop timed in the same process;
then the whole seed estimator (``Estimator.blocks`` over text blocks of 8,192
characters, as a transcript's are estimated) against tiktoken's cl100k_base on
the same blocks, where tiktoken is installed (``pip install '.[tokenizers]'``);
then ``Estimator.block`` on short blocks, ``safe`` against the seed in the same process.

Run ``python benchmarks/bench_estimate.py`` (``--quick`` for a short run).
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable
from dataclasses import dataclass

from common import best_of
from rich.console import Console
from rich.table import Table

from sample_transcripts import prose
from windowfit.fitting.estimate import CharCounts, Estimator, count_chars, is_cjk, make_estimator
from windowfit.fitting.transcript import Block, Text, ToolCall, ToolResult

MB = 1_000_000
BLOCK_CHARS = 8192
"""Chunk size for the per-block column: tool results arrive in pieces this big."""


def cjk_text(rng: random.Random, n_chars: int) -> str:
    """Japanese prose with about 40% Chinese paragraphs."""
    return prose.japanese_prose(rng, n_chars, chinese_share=0.4)


TEXTS: dict[str, Callable[[random.Random, int], str]] = {
    "ascii-heavy (1% non-ASCII)": prose.ascii_heavy_text,
    "cyrillic prose": prose.russian_prose,
    "cjk prose (ja+zh)": cjk_text,
}


@dataclass(frozen=True, slots=True)
class Row:
    """One text's measurements."""

    name: str
    megabytes: float
    non_ascii_share: float
    whole_mb_s: float
    blocks_mb_s: float
    naive_mb_s: float

    @property
    def speedup(self) -> float:
        return self.whole_mb_s / self.naive_mb_s


def naive_count(text: str) -> CharCounts:
    """The obvious loop: classify every character in Python."""
    ascii_ = cjk = other = 0
    for char in text:
        if ord(char) < 128:
            ascii_ += 1
        elif is_cjk(char):
            cjk += 1
        else:
            other += 1
    return CharCounts(ascii_, cjk, other)


def make_text(make: Callable[[random.Random, int], str], seed: int, target_bytes: int) -> str:
    """About ``target_bytes`` of UTF-8 text, sized from a small probe's bytes per character."""
    probe = make(random.Random(seed + 1), 100_000)
    bytes_per_char = len(probe.encode()) / len(probe)
    return make(random.Random(seed), int(target_bytes / bytes_per_char))


def count_blocks(blocks: list[str]) -> CharCounts:
    total = CharCounts()
    for block in blocks:
        total = total + count_chars(block)
    return total


def measure(name: str, text: str, *, repeat: int, naive_chars: int) -> Row:
    """Time ``count_chars`` on the whole text and on 8 K blocks, and the naive loop on a slice."""
    size = len(text.encode())
    blocks = [text[i : i + BLOCK_CHARS] for i in range(0, len(text), BLOCK_CHARS)]
    sample = text[:naive_chars]
    sample_size = len(sample.encode())
    whole = count_chars(text)
    if count_blocks(blocks) != whole:
        raise AssertionError(f"{name}: per-block counts differ from the whole text")
    if naive_count(sample) != count_chars(sample):
        raise AssertionError(f"{name}: count_chars and the naive loop disagree")
    return Row(
        name=name,
        megabytes=size / MB,
        non_ascii_share=1 - whole.ascii / whole.total,
        whole_mb_s=size / MB / best_of(repeat, lambda: count_chars(text)),
        blocks_mb_s=size / MB / best_of(repeat, lambda: count_blocks(blocks)),
        naive_mb_s=sample_size / MB / best_of(max(1, repeat // 2), lambda: naive_count(sample)),
    )


TIKTOKEN_BYTES = 2 * MB
"""tiktoken encodes the first blocks of a text up to this size; its MB/s is of those."""


@dataclass(frozen=True, slots=True)
class AgainstTokenizer:
    """One text's estimator and tokenizer throughput, over the same blocks."""

    name: str
    estimator_mb_s: float
    tokenizer_mb_s: float | None


def estimate_blocks(blocks: tuple[Text, ...]) -> int:
    """The seed estimator's tokens for ``blocks``, by a fresh estimator (nothing memoised)."""
    return make_estimator().blocks(blocks).tokens


def against_tokenizer(name: str, text: str, *, repeat: int, encode: Callable[[str], object] | None) -> AgainstTokenizer:
    """The estimator over the whole text's 8 K blocks, and ``encode`` over the first ``TIKTOKEN_BYTES`` of them."""
    blocks = tuple(Text(text[i : i + BLOCK_CHARS]) for i in range(0, len(text), BLOCK_CHARS))
    size = len(text.encode())
    estimator_mb_s = size / MB / best_of(repeat, lambda: estimate_blocks(blocks))
    if encode is None:
        return AgainstTokenizer(name, estimator_mb_s, None)
    head: list[str] = []
    head_size = 0
    for block in blocks:
        if head_size >= TIKTOKEN_BYTES:
            break
        head.append(block.text)
        head_size += len(block.text.encode())
    tokenizer_mb_s = head_size / MB / best_of(max(1, repeat // 2), lambda: [encode(b) for b in head])
    return AgainstTokenizer(name, estimator_mb_s, tokenizer_mb_s)


def tiktoken_encode() -> Callable[[str], object] | None:
    """cl100k_base's ``encode_ordinary`` (offline, as ``audit -t cl100k_base`` loads it), or None without tiktoken."""
    try:
        from windowfit.fitting.tokenizers import load_tokenizer

        return load_tokenizer("cl100k_base").count
    except Exception:  # not installed: the table says so
        return None


def render_against(rows: list[AgainstTokenizer], *, repeat: int) -> Table:
    table = Table(
        title=f"the seed estimator against tiktoken cl100k_base, per {BLOCK_CHARS} chars "
        f"(best of {repeat}; tiktoken on the first {TIKTOKEN_BYTES // MB} MB)"
    )
    for header in ("text", "estimator MB/s", "tiktoken MB/s", "estimator ÷ tiktoken"):
        table.add_column(header, justify="left" if header == "text" else "right")
    for r in rows:
        if r.tokenizer_mb_s is None:
            table.add_row(r.name, f"{r.estimator_mb_s:,.0f}", "not installed", "")
        else:
            table.add_row(
                r.name,
                f"{r.estimator_mb_s:,.0f}",
                f"{r.tokenizer_mb_s:,.1f}",
                f"{r.estimator_mb_s / r.tokenizer_mb_s:,.0f}x",
            )
    return table


SHORT_BLOCKS: tuple[Block, ...] = (
    Text("ok"),
    Text("hello world, this is a short message"),
    Text("x = compute(a, b) + 1"),
    Text("Привет, мир!"),
    Text("日本語のテキスト"),
    Text("שלום עולם ✅ done 🚀"),
    ToolCall("call_1", "read_file", '{"path":"src/main.py","limit":200}'),
    ToolResult("call_1", (Text("     1\timport os\n     2\timport sys"),)),
)
"""Short blocks of the kinds a transcript has many of: replies, tool calls and results (2 to 40 characters)."""


def block_ns(estimator: Estimator, repeat: int, rounds: int = 2000) -> float:
    """``estimator.block`` per short block, in ns (best of ``repeat`` runs over every block ``rounds`` times)."""
    block = estimator.block

    def run() -> None:
        for _ in range(rounds):
            for b in SHORT_BLOCKS:
                block(b)

    return best_of(repeat, run) / (rounds * len(SHORT_BLOCKS)) * 1e9


def render_short(repeat: int) -> Table:
    """``Estimator.block`` on short blocks: seed and safe timed alternately, the ratio of their best runs."""
    seed, safe = make_estimator("seed"), make_estimator("safe")
    seed_ns = min(block_ns(seed, 1) for _ in range(repeat))
    safe_ns = min(block_ns(safe, 1) for _ in range(repeat))
    for _ in range(repeat):  # alternate, so that both see the same load
        seed_ns, safe_ns = min(seed_ns, block_ns(seed, 1)), min(safe_ns, block_ns(safe, 1))
    table = Table(title=f"Estimator.block, {len(SHORT_BLOCKS)} short blocks (best of {2 * repeat})")
    for header in ("rule", "ns per block", "x seed"):
        table.add_column(header, justify="left" if header == "rule" else "right")
    table.add_row("seed", f"{seed_ns:,.0f}", "1.00")
    table.add_row("safe", f"{safe_ns:,.0f}", f"{safe_ns / seed_ns:.2f}")
    return table


def render(rows: list[Row], *, repeat: int, naive_chars: int) -> Table:
    table = Table(title=f"count_chars throughput (best of {repeat}; naive loop on the first {naive_chars:,} chars)")
    for header in ("text", "MB", "non-ASCII", "count_chars MB/s", f"per {BLOCK_CHARS} chars MB/s", "naive MB/s"):
        table.add_column(header, justify="left" if header == "text" else "right")
    table.add_column("speed-up", justify="right")
    for r in rows:
        table.add_row(
            r.name,
            f"{r.megabytes:.1f}",
            f"{r.non_ascii_share:.1%}",
            f"{r.whole_mb_s:,.0f}",
            f"{r.blocks_mb_s:,.0f}",
            f"{r.naive_mb_s:,.1f}",
            f"{r.speedup:,.0f}x",
        )
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="~4 MB per text and fewer repeats")
    parser.add_argument("--megabytes", type=float, help="UTF-8 size of each text (default 32, quick 4)")
    parser.add_argument("--repeat", type=int, help="best of N runs (default 5, quick 2)")
    args = parser.parse_args(argv)
    target = int((args.megabytes or (4 if args.quick else 32)) * MB)
    repeat = args.repeat or (2 if args.quick else 5)
    naive_chars = 200_000 if args.quick else 1_000_000
    console = Console(width=130)
    rows = []
    against = []
    encode = tiktoken_encode()
    for seed, (name, make) in enumerate(TEXTS.items()):
        with console.status(f"generating and timing {name}"):
            text = make_text(make, seed, target)
            rows.append(measure(name, text, repeat=repeat, naive_chars=naive_chars))
            against.append(against_tokenizer(name, text, repeat=repeat, encode=encode))
    console.print(render(rows, repeat=repeat, naive_chars=naive_chars))
    console.print("Counts agree with the naive loop on each slice, and per-block sums equal whole-text counts.")
    console.print(render_against(against, repeat=repeat))
    console.print(render_short(repeat))


if __name__ == "__main__":
    main()
