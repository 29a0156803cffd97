"""Throughput of the ``safe`` rule's counter (``SAFE.count``) next to the seed
rule's (``count_chars``), timed in the same process on the same texts: the
three generated texts of ``bench_estimate.py``, words of every script class of
``safe`` (random letters of the script between spaces and full stops) and, when
the calibration corpus has been built, real documents of other kinds (code,
JSON, Greek, Hindi, Thai, emoji). A second table times one call on short
strings (count and estimate, as ``Estimator`` does per block), seed and safe,
and a real tokenizer (tiktoken's cl100k_base) for scale when it is installed.

Run ``python benchmarks/calibrate/bench_safe.py`` (``--quick`` for a short run).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for path in (ROOT, ROOT / "benchmarks"):
    if str(path) not in sys.path:  # run as a script: make the repository importable
        sys.path.insert(0, str(path))

from bench_estimate import BLOCK_CHARS, MB, TEXTS, best_of, make_text  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from windowfit.fitting.estimate import SAFE, SEED, count_chars  # noqa: E402

CORPUS = ROOT / "benchmarks" / "out" / "calibration" / "corpus.jsonl"
CORPUS_KINDS = {
    "code (Python, JS, C)": ("code:python", "code:js", "code:c"),
    "JSON (compact)": ("json:compact",),
    "logs": ("logs",),
    "Greek prose": ("prose:el",),
    "Hindi prose": ("prose:hi",),
    "Thai prose": ("prose:th",),
    "emoji (test file)": ("emoji:table",),
}


SCRIPTS = {
    "Latin-1 letters": (0x61, 0xFF),
    "Greek": (0x3B1, 0x3C9),
    "Cyrillic": (0x430, 0x44F),
    "Armenian": (0x561, 0x586),
    "Hebrew": (0x5D0, 0x5EA),
    "Arabic": (0x627, 0x64A),
    "Devanagari": (0x915, 0x939),
    "Thai": (0xE01, 0xE2E),
    "Georgian": (0x10D0, 0x10F0),
    "Khmer": (0x1780, 0x17B3),
    "symbols (arrows)": (0x2190, 0x21FF),
    "CJK ideographs": (0x4E00, 0x9FA5),
    "Hangul": (0xAC00, 0xD7A3),
    "emoji": (0x1F600, 0x1F64F),
}
"""One code point range per script class of ``safe``: words of random letters from it."""

SHORT = (
    "read_file",
    "ok",
    "hello world, this is a short message",
    '{"path":"src/main.py","limit":200}',
    "x = compute(a, b) + 1",
    "Привет, мир!",
    "שלום עולם",
    "✅ done 🚀",
)
"""Short strings of the kind a transcript has many of: tool names, ids, short replies."""


def script_text(lo: int, hi: int, target_bytes: int) -> str:
    rng = random.Random(lo)
    words: list[str] = []
    size = 0
    while size < target_bytes:
        word = "".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(2, 8)))
        words.append(word + (". " if rng.random() < 0.1 else " "))
        size += len(words[-1].encode())
    return "".join(words)


def per_call_ns(count: Callable[[str], object], repeat: int, rounds: int = 2000) -> float:
    def run() -> None:
        for _ in range(rounds):
            for s in SHORT:
                count(s)

    return best_of(repeat, run) / (rounds * len(SHORT)) * 1e9


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    megabytes: float
    seed_mb_s: float
    safe_mb_s: float
    seed_blocks_mb_s: float
    safe_blocks_mb_s: float


def corpus_text(kinds: tuple[str, ...], target_bytes: int) -> str | None:
    """The corpus documents of ``kinds`` joined, repeated up to about ``target_bytes``."""
    if not CORPUS.exists():
        return None
    parts = []
    with CORPUS.open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            if d["kind"] in kinds:
                parts.append(d["text"])
    if not parts:
        return None
    text = "\n".join(parts)
    size = len(text.encode())
    return text * max(1, target_bytes // size)


def measure(name: str, text: str, repeat: int) -> Row:
    size = len(text.encode()) / MB
    blocks = [text[i : i + BLOCK_CHARS] for i in range(0, len(text), BLOCK_CHARS)]
    safe_count = SAFE.count

    def over_blocks(count: Callable[[str], object]) -> Callable[[], None]:
        def run() -> None:
            for b in blocks:
                count(b)

        return run

    return Row(
        name,
        size,
        size / best_of(repeat, lambda: count_chars(text)),
        size / best_of(repeat, lambda: safe_count(text)),
        size / best_of(repeat, over_blocks(count_chars)),
        size / best_of(repeat, over_blocks(safe_count)),
    )


def render(rows: list[Row], repeat: int) -> Table:
    table = Table(title=f"seed count_chars vs SAFE.count, MB/s of UTF-8 (best of {repeat})")
    for header in ("text", "MB", "seed", "safe", "safe/seed", f"seed per {BLOCK_CHARS}", f"safe per {BLOCK_CHARS}"):
        table.add_column(header, justify="left" if header == "text" else "right")
    for r in rows:
        table.add_row(
            r.name,
            f"{r.megabytes:.1f}",
            f"{r.seed_mb_s:,.0f}",
            f"{r.safe_mb_s:,.0f}",
            f"{r.safe_mb_s / r.seed_mb_s:.2f}",
            f"{r.seed_blocks_mb_s:,.0f}",
            f"{r.safe_blocks_mb_s:,.0f}",
        )
    return table


DOC = ROOT / "docs" / "calibration.md"
README = ROOT / "benchmarks" / "README.md"
START, END = "<!-- bench_safe:start -->", "<!-- bench_safe:end -->"
"""The block of a page that ``--write-docs`` replaces (calibrate.py keeps it when it rewrites its page)."""


def markdown(
    rows: list[Row], repeat: int, seed_ns: float, safe_ns: float, tiktoken_ns: float | None, target: int
) -> str:
    lines = [
        START,
        "",
        f"Measured by `python benchmarks/calibrate/bench_safe.py --write-docs` ({target / MB:.0f} MB per text,",
        f"best of {repeat}, {platform.python_implementation()} {platform.python_version()},",
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} when it ran). Compare the ratio to",
        "the seed, measured in the same run: absolute MB/s move with the machine's load.",
        "",
        "| text | seed MB/s | safe MB/s | safe / seed | seed MB/s per 8,192 chars | safe MB/s per 8,192 chars |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r.name} | {r.seed_mb_s:,.0f} | {r.safe_mb_s:,.0f} | {r.safe_mb_s / r.seed_mb_s:.2f} | "
            f"{r.seed_blocks_mb_s:,.0f} | {r.safe_blocks_mb_s:,.0f} |"
        )
    lines += [
        "",
        f"One short string ({len(SHORT)} kinds of 2 to 37 characters), count and estimate, per call:",
        "",
        "| counter | ns per call | x seed |",
        "| --- | ---: | ---: |",
        f"| seed | {seed_ns:,.0f} | 1.00 |",
        f"| safe | {safe_ns:,.0f} | {safe_ns / seed_ns:.2f} |",
    ]
    if tiktoken_ns is not None:
        lines.append(f"| tiktoken cl100k_base (for scale) | {tiktoken_ns:,.0f} | {tiktoken_ns / seed_ns:.2f} |")
    return "\n".join([*lines, "", END])


def write_block(path: Path, block: str) -> None:
    """Replace the marked block of ``path``, or append it under a Speed heading."""
    text = path.read_text(encoding="utf-8")
    if START in text and END in text:
        head, rest = text.split(START, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n### `safe` speed\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="~4 MB per text and fewer repeats")
    parser.add_argument("--megabytes", type=float, help="UTF-8 size of each text (default 16, quick 4)")
    parser.add_argument("--repeat", type=int, help="best of N runs (default 5, quick 2)")
    parser.add_argument(
        "--write-docs", action="store_true", help="write the tables into docs/calibration.md and benchmarks/README.md"
    )
    args = parser.parse_args(argv)
    target = int((args.megabytes or (4 if args.quick else 16)) * MB)
    repeat = args.repeat or (2 if args.quick else 5)
    console = Console(width=130)
    rows = []
    for seed, (name, make) in enumerate(TEXTS.items()):
        rows.append(measure(name, make_text(make, seed, target), repeat))
    for name, (lo, hi) in SCRIPTS.items():
        rows.append(measure(f"script: {name}", script_text(lo, hi, target), repeat))
    for name, kinds in CORPUS_KINDS.items():
        text = corpus_text(kinds, target)
        if text is not None:
            rows.append(measure(f"{name} [corpus]", text, repeat))
    console.print(render(rows, repeat))
    seed_ns = per_call_ns(lambda s: SEED.text_tokens(count_chars(s)), repeat)
    safe_ns = per_call_ns(lambda s: SAFE.text_tokens(SAFE.count(s)), repeat)
    table = Table(title=f"one short string ({len(SHORT)} kinds, 1 to 37 chars): count + estimate, ns per call")
    for header in ("counter", "ns per call", "x seed"):
        table.add_column(header, justify="left" if header == "counter" else "right")
    table.add_row("seed", f"{seed_ns:,.0f}", "1.00")
    table.add_row("safe", f"{safe_ns:,.0f}", f"{safe_ns / seed_ns:.2f}")
    tiktoken_ns: float | None = None
    try:
        from windowfit.fitting.tokenizers import load_tokenizer

        tiktoken_ns = per_call_ns(load_tokenizer("cl100k_base").count, repeat)
        table.add_row("tiktoken cl100k_base (for scale)", f"{tiktoken_ns:,.0f}", f"{tiktoken_ns / seed_ns:.2f}")
    except Exception:  # the tokenizers extra is optional here
        pass
    console.print(table)
    if args.write_docs:
        block = markdown(rows, repeat, seed_ns, safe_ns, tiktoken_ns, target)
        for path in (DOC, README):
            write_block(path, block)
            console.print(f"wrote the speed figures into {path.relative_to(ROOT)}")
    if not CORPUS.exists():
        console.print("Build the calibration corpus (build_corpus.py) for rows of real code, JSON, logs and scripts.")


if __name__ == "__main__":
    main()
