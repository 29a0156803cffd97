"""Throughput of the ``safe`` rule's counter (``SAFE.count``) next to the seed
rule's (``count_chars``), timed in the same process on the same texts: the
three generated texts of ``bench_estimate.py`` and, when the calibration corpus
has been built, real documents of other kinds (code, JSON, Greek, Hindi, Thai,
emoji).

Run ``python benchmarks/calibrate/bench_safe.py`` (``--quick`` for a short run).
"""

from __future__ import annotations

import argparse
import json
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

from windowfit.fitting.estimate import SAFE, count_chars  # noqa: E402

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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="~4 MB per text and fewer repeats")
    parser.add_argument("--megabytes", type=float, help="UTF-8 size of each text (default 16, quick 4)")
    parser.add_argument("--repeat", type=int, help="best of N runs (default 5, quick 2)")
    args = parser.parse_args(argv)
    target = int((args.megabytes or (4 if args.quick else 16)) * MB)
    repeat = args.repeat or (2 if args.quick else 5)
    console = Console(width=130)
    rows = []
    for seed, (name, make) in enumerate(TEXTS.items()):
        rows.append(measure(name, make_text(make, seed, target), repeat))
    for name, kinds in CORPUS_KINDS.items():
        text = corpus_text(kinds, target)
        if text is not None:
            rows.append(measure(f"{name} [corpus]", text, repeat))
    console.print(render(rows, repeat))
    if not CORPUS.exists():
        console.print("Build the calibration corpus (build_corpus.py) for rows of real code, JSON, logs and scripts.")


if __name__ == "__main__":
    main()
