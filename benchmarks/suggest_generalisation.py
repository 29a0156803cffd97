"""Does ``audit --suggest``'s rule hold on text it was not fitted on?

Reproduces the experiment of issue 7 item 5 on the committed calibration
numbers (``tests/data/calibration/documents.csv``: per document, its
characters per class and the real tokens of every tokenizer it lists; no corpus
needed). For every (kind of content, tokenizer) pair, the documents of the
kind are split in two halves (alternate rows in file order); a rule is fitted
on one half and tested on the other, then the other way round. A *miss* is a
test document the rule under-estimates. Compared: the exact fit alone
(``suggest_rule``, what ``--suggest`` printed before) and the held-out fit
with its margin (``suggest``, what it prints now).

    python benchmarks/suggest_generalisation.py
"""

from __future__ import annotations

import argparse
import csv
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path

from windowfit.fitting.estimate import CharCounts, ScriptRule
from windowfit.fitting.suggest import (
    HOLD_OUT_EVERY,
    PLAUSIBLE_CHARS_PER_TOKEN,
    SAFETY_FLOOR,
    Sample,
    covers,
    suggest,
    suggest_rule,
)

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "tests" / "data" / "calibration" / "documents.csv"


def tokenizers(path: Path) -> list[str]:
    """The tokenizers the table has counts for (its ``tokens:NAME`` columns)."""
    with path.open(encoding="utf-8", newline="") as f:
        header = next(csv.reader(f))
    return [c.removeprefix("tokens:") for c in header if c.startswith("tokens:")]


def load(path: Path) -> dict[tuple[str, str], list[Sample]]:
    """Samples per (kind, tokenizer), in file order."""
    groups: dict[tuple[str, str], list[Sample]] = defaultdict(list)
    names = tokenizers(path)
    with path.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            counts = CharCounts(int(row["seed:ascii"]), int(row["seed:cjk"]), int(row["seed:other"]))
            for t in names:
                groups[row["kind"], t].append(Sample(counts, int(row[f"tokens:{t}"]), where=row["id"]))
    return groups


CLASSES = ("ascii", "cjk", "other")
MOSTLY = (0.9, 0.6, 0.9)
"""A document is mostly one class when that class has this share of its characters
(CJK prose keeps ASCII spaces and punctuation, so 60% for cjk)."""


def densest(path: Path) -> list[tuple[str, float, str, str]]:
    """Per class, the most tokens per character any tokenizer counts on a document
    that is mostly that class: the evidence for ``PLAUSIBLE_CHARS_PER_TOKEN``."""
    best: dict[str, tuple[float, str, str]] = {}
    names = tokenizers(path)
    with path.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            counts = [int(row[f"seed:{c}"]) for c in CLASSES]
            total = sum(counts)
            for name, n, share in zip(CLASSES, counts, MOSTLY, strict=True):
                if total and n / total >= share:
                    for t in names:
                        density = int(row[f"tokens:{t}"]) / total
                        if density > best.get(name, (0.0, "", ""))[0]:
                            best[name] = (density, row["kind"], t)
    return [(name, *best[name]) for name in CLASSES if name in best]


def trial(
    fitter: Callable[[Sequence[Sample]], ScriptRule], fit: Sequence[Sample], test: Sequence[Sample]
) -> tuple[int, float, bool]:
    """Test documents under-estimated, the test half's summed estimate / real, and
    whether a constant is outside the plausible range (fewer characters per token)."""
    rule = fitter(fit)
    misses = sum(1 for s in test if not covers(rule, [s]))
    ratio = sum(rule.text_tokens(s.counts) for s in test) / max(1, sum(s.tokens for s in test))
    fitted = (rule.ascii_chars_per_token, rule.cjk_chars_per_token, rule.other_chars_per_token)
    return misses, ratio, any(c < low for c, low in zip(fitted, PLAUSIBLE_CHARS_PER_TOKEN, strict=True))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", type=Path, default=TABLE, help="documents.csv to read (default: the committed one)")
    parser.add_argument(
        "--every", type=int, default=HOLD_OUT_EVERY, help=f"hold out every N-th sample (default {HOLD_OUT_EVERY})"
    )
    parser.add_argument(
        "--safety",
        type=Fraction,
        default=SAFETY_FLOOR,
        help=f"the least safety on top of the held-out margin (default {SAFETY_FLOOR})",
    )
    args = parser.parse_args(argv)
    groups = load(args.table)
    print("Most tokens per character on a document mostly of one class, and the ceiling suggest uses:\n")
    print("| class | tokens per char | kind | tokenizer | ceiling |")
    print("| --- | ---: | --- | --- | ---: |")
    for (name, density, kind, t), low in zip(densest(args.table), PLAUSIBLE_CHARS_PER_TOKEN, strict=True):
        print(f"| {name} | {density:.2f} | {kind} | {t} | {float(1 / low):.2f} |")
    print()
    fitters: dict[str, Callable[[Sequence[Sample]], ScriptRule]] = {
        "exact fit (before)": suggest_rule,
        f"held-out margin (every {args.every}, safety {float(args.safety):.0%})": lambda samples: (
            suggest(samples, every=args.every, safety_floor=args.safety).rule
        ),
    }
    skipped = sum(1 for samples in groups.values() if len(samples) < 4)
    print(f"{len(groups)} (kind, tokenizer) pairs x 2 directions ({skipped} skipped: fewer than 4 documents)\n")
    print(
        "| rule | pairs | pairs with a miss | test documents | missed | median test estimate / real "
        "| fits out of range |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, fitter in fitters.items():
        pairs = pairs_missed = docs = missed = out_of_range = 0
        over: list[float] = []
        for samples in groups.values():
            if len(samples) < 4:
                continue
            halves = (samples[0::2], samples[1::2])
            for fit, test in (halves, halves[::-1]):
                misses, ratio, implausible = trial(fitter, fit, test)
                out_of_range += implausible
                pairs += 1
                pairs_missed += misses > 0
                docs += len(test)
                missed += misses
                over.append(ratio)
        print(
            f"| {label} | {pairs} | {pairs_missed} | {docs} | {missed} | {statistics.median(over):.2f} "
            f"| {out_of_range} |"
        )


if __name__ == "__main__":
    main()
