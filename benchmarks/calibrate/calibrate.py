"""Fit the ``safe`` estimator's constants to the calibration corpus and write
the tables: ``fitting/rules.json`` (the constants), ``tests/data/calibration/
documents.csv`` (numbers per document, no text) and ``docs/calibration.md``.

Run ``python benchmarks/calibrate/build_corpus.py`` first, then
``python benchmarks/calibrate/calibrate.py`` (needs ``windowfit[tokenizers]``
and the ``claude-legacy`` extra for the third tokenizer).

Each document is counted with the estimator's own code (``SAFE.count``) and
tokenized by every tokenizer. The constants minimise the average of
estimate/real over (tokenizer, kind) pairs, each pair weighing the same, under
one constraint per document: the unrounded estimate is at least ``1 + margin``
times the most tokens any tokenizer gives it. That is a small linear program
in tokens per character; it is solved exactly (rational arithmetic, the
simplex method on its dual) by ``windowfit.fitting.suggest.solve_lp``, the solver
``audit --suggest`` uses. Chars per token are then rounded *down* to
``--decimals`` places, which only raises estimates, and every document is
checked again in integers with ``text_tokens`` as the estimator computes it.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import hashlib
import io
import json
import math
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make the repository importable
    sys.path.insert(0, str(ROOT))

from windowfit.fitting.estimate import RULES_FILE, SAFE, SEED, CharCounts, ClassRule, load_rules  # noqa: E402
from windowfit.fitting.suggest import solve_lp  # noqa: E402
from windowfit.fitting.tokenizers import LoadedTokenizer, count_texts, load_tokenizer  # noqa: E402

CORPUS = ROOT / "benchmarks" / "out" / "calibration" / "corpus.jsonl"
RULES = ROOT / "fitting" / RULES_FILE
TABLE = ROOT / "tests" / "data" / "calibration" / "documents.csv"
DOC = ROOT / "docs" / "calibration.md"
TOKENIZERS = [
    "cl100k_base",
    "o200k_base",
    "llama3",
    "llama4",
    "qwen",
    "deepseek",
    "mistral-tekken",
    "mistral-v3",
    "claude-legacy",
]
"""Every tokenizer windowfit knows by name (``--tokenizer`` chooses others)."""
VARIANTS = {
    "safe": tuple(TOKENIZERS),
    "safe-openai": ("cl100k_base", "o200k_base"),
    "safe-llama": ("llama3", "llama4"),
    "safe-qwen": ("qwen",),
    "safe-deepseek": ("deepseek",),
    "safe-mistral": ("mistral-tekken", "mistral-v3"),
    "safe-claude": ("claude-legacy",),
}
"""The calibrated rules: ``safe`` for every tokenizer, and one per tokenizer family."""
SAFETY = Fraction(2, 100)
"""Added to the margin that the held-out documents call for: room for text that neither set holds."""
VALIDATION_SHARE = 3
"""One split unit in three (by a hash of its name) is held out for validation."""
MIN_PACKAGES = 3
"""A kind drawn from at least this many packages is split by package; a kind from fewer, by document."""
DECIMALS = 3
MAX_CHARS_PER_TOKEN = Fraction(8)
"""No class may count on more than 8 characters per token, whatever the corpus says."""
MIN_CHARS = 1000
"""A class with fewer characters than this in the corpus is not fitted: it
keeps the UTF-8 bound (one token per byte), which holds for any byte-level BPE."""
FALLBACK = "other"
COMMAND = "python benchmarks/calibrate/build_corpus.py && python benchmarks/calibrate/calibrate.py"


@dataclass(frozen=True, slots=True)
class Doc:
    id: str
    kind: str
    split: str
    """``fit`` or ``validation`` (held out: never used to fit the constants)."""
    chars: int
    counts: CharCounts
    real: tuple[int, ...]
    """Tokens per tokenizer, in ``TOKENIZERS`` order."""
    unit: str
    """What the split holds out whole: the document's package, or the document itself."""


# --------------------------------------------------------------------------
# Fitting the safe rule


def byte_bound(ranges: Sequence[tuple[int, int]]) -> Fraction:
    """Chars per token if every UTF-8 byte were one token, for the widest character in ``ranges``."""
    widest = max((len(chr(b).encode("utf-8", "surrogatepass")) for _, b in ranges), default=4)
    return Fraction(1, widest)


def unnamed(rule: ClassRule) -> list[tuple[int, int]]:
    """The code points no class of ``rule`` names: what its fallback class takes."""
    gaps, start = [], 0
    for a, b in sorted(r for c in rule.classes for r in c.ranges):
        if a > start:
            gaps.append((start, a - 1))
        start = max(start, b + 1)
    if start <= 0x10FFFF:
        gaps.append((start, 0x10FFFF))
    return gaps


def round_down(x: Fraction, decimals: int) -> Fraction:
    """``x`` rounded down to ``decimals`` places: an exact decimal never above ``x``."""
    q = Decimal(x.numerator) / Decimal(x.denominator)
    step = Decimal(1).scaleb(-decimals)
    down = q.quantize(step, rounding=ROUND_FLOOR)
    while Fraction(down) > x:  # Decimal division rounds; make sure
        down -= step
    return Fraction(down)


def fit_weights(docs: Sequence[Doc], rule: ClassRule, tokenizers: Sequence[int]) -> list[Fraction]:
    """Tokens per character for every class of ``rule``: the exact least-cost weights under which
    no document of ``docs`` is under-estimated for any of ``tokenizers`` (indices into ``TOKENIZERS``)."""
    names = [c.name for c in rule.classes]
    totals = [sum(d.counts.classes[i] for d in docs) for i in range(len(names))]
    fixed: dict[int, Fraction] = {}  # class index -> tokens per char
    for i, c in enumerate(rule.classes):
        if c.name == FALLBACK or totals[i] < MIN_CHARS:
            fixed[i] = 1 / round_down(byte_bound(c.ranges or unnamed(rule)), DECIMALS)
    free = [i for i in range(len(names)) if i not in fixed]
    floor = 1 / MAX_CHARS_PER_TOKEN
    kinds: dict[str, list[Doc]] = defaultdict(list)
    for d in docs:
        kinds[d.kind].append(d)
    pairs = len(kinds) * len(tokenizers)
    cost = []
    for i in free:
        total = 0.0
        for group in kinds.values():
            for t in tokenizers:
                total += sum(d.counts.classes[i] / d.real[t] for d in group) / len(group)
        cost.append(Fraction(total / pairs).limit_denominator(10**12))
    rows, needs = [], []
    for d in docs:
        need = Fraction(max(d.real[t] for t in tokenizers))
        need -= sum(d.counts.classes[i] * w for i, w in fixed.items())
        need -= sum(d.counts.classes[i] for i in free) * floor
        rows.append([d.counts.classes[i] for i in free])
        needs.append(need)
    start = time.perf_counter()
    v = solve_lp(rows, needs, cost)
    print(f"linear program: {len(rows)} documents x {len(free)} classes, {time.perf_counter() - start:.1f} s")
    weights = dict(fixed)
    for i, x in zip(free, v, strict=True):
        weights[i] = floor + x
    return [weights[i] for i in range(len(names))]


def constants_of(weights: Sequence[Fraction], rule: ClassRule, *, decimals: int) -> dict[str, Fraction]:
    """Chars per token from tokens per char, rounded down (which only raises estimates),
    and never more chars per token than the seed rule's class."""
    seed_cpt = SEED.constants
    return {
        c.name: min(round_down(1 / w, decimals), seed_cpt[c.group]) for c, w in zip(rule.classes, weights, strict=True)
    }


def unrounded(constants: dict[str, Fraction], rule: ClassRule, d: Doc) -> Fraction:
    """A document's estimate under ``constants`` before the one rounding up."""
    return sum(
        (Fraction(n) / constants[c.name] for c, n in zip(rule.classes, d.counts.classes, strict=True) if n),
        Fraction(0),
    )


@dataclass(frozen=True, slots=True)
class Variant:
    """One calibrated rule: its tokenizers, the held-out result of the exact fit, the margin chosen from it."""

    name: str
    tokenizers: tuple[int, ...]
    exact: dict[str, Fraction]
    """Chars per token of the exact fit on the fit set (no margin)."""
    worst_held_out: Fraction
    """The lowest estimate / real tokens of the exact fit on any held-out document, any of its tokenizers."""
    worst_doc: str
    margin: Fraction
    constants: dict[str, Fraction]
    """The published chars per token: the exact fit's tokens per char times ``1 + margin``."""
    uses_safe: bool = False
    """Its own fit, with its margin, was not tighter than ``safe`` on its held-out documents, nor
    ``safe`` scaled: it publishes ``safe``'s constants instead (which cover every tokenizer)."""
    own_margin: Fraction | None = None
    """Set when the published rule is ``safe``'s constants scaled by one factor (``scaled_safe``):
    the margin its own class-by-class fit needed, which made that fit looser than ``safe``."""


def held_out_total(constants: dict[str, Fraction], rule: ClassRule, docs: Sequence[Doc]) -> Fraction:
    return sum((unrounded(constants, rule, d) for d in docs if d.split == "validation"), Fraction(0))


def never_looser(v: Variant, safe: Variant, docs: Sequence[Doc], rule: ClassRule, safety: Fraction = SAFETY) -> Variant:
    """``v``; or, when ``safe``'s constants estimate its held-out documents lower, ``safe`` scaled for
    its tokenizers (``scaled_safe``) if that is lower still; else ``v`` with ``safe``'s constants."""
    safe_total = held_out_total(safe.constants, rule, docs)
    if held_out_total(v.constants, rule, docs) < safe_total:
        return v
    scaled = scaled_safe(v, safe, docs, rule, safety)
    if held_out_total(scaled.constants, rule, docs) < safe_total:
        return scaled
    return dataclasses.replace(v, constants=safe.constants, uses_safe=True)


def scaled_safe(v: Variant, safe: Variant, docs: Sequence[Doc], rule: ClassRule, safety: Fraction) -> Variant:
    """``safe``'s constants times one factor for ``v``'s tokenizers: the largest factor under which no
    fit document is under-estimated, then a margin from the held-out documents as ``calibrate`` does.
    One parameter keeps ``safe``'s shape, which nine tokenizers fitted: it generalises where a
    family's own class-by-class fit does not (digits between spaces for claude-legacy)."""
    fit_docs = [d for d in docs if d.split == "fit"]
    factor = min(unrounded(safe.constants, rule, d) / max(d.real[t] for t in v.tokenizers) for d in fit_docs)
    seed_cpt = SEED.constants
    exact = {
        c.name: min(round_down(safe.constants[c.name] * factor, DECIMALS), seed_cpt[c.group]) for c in rule.classes
    }
    for i, c in enumerate(rule.classes):  # a class not fitted keeps the UTF-8 bound, never above it
        if c.name == FALLBACK or sum(d.counts.classes[i] for d in fit_docs) < MIN_CHARS:
            exact[c.name] = min(exact[c.name], safe.exact[c.name])
    worst, worst_doc = Fraction(1), ""
    for d in docs:
        if d.split != "validation":
            continue
        est = unrounded(exact, rule, d)
        for t in v.tokenizers:
            if est / d.real[t] < worst:
                worst, worst_doc = est / d.real[t], f"{d.id} ({TOKENIZERS[t]})"
    margin = Fraction(math.ceil(((1 / worst - 1 if worst < 1 else Fraction(0)) + safety) * 1000), 1000)
    constants = {name: round_down(cpt / (1 + margin), DECIMALS) for name, cpt in exact.items()}
    return Variant(v.name, v.tokenizers, exact, worst, worst_doc, margin, constants, own_margin=v.margin)


def calibrate(name: str, docs: Sequence[Doc], rule: ClassRule, tokenizers: Sequence[int], safety: Fraction) -> Variant:
    """Fit on the fit set, measure the exact fit on the held-out set, and choose the margin from it."""
    fit_docs = [d for d in docs if d.split == "fit"]
    held_out = [d for d in docs if d.split == "validation"]
    exact = constants_of(fit_weights(fit_docs, rule, tokenizers), rule, decimals=DECIMALS)
    worst, worst_doc = Fraction(1), ""
    for d in held_out:
        est = unrounded(exact, rule, d)
        for t in tokenizers:
            if est / d.real[t] < worst:
                worst, worst_doc = est / d.real[t], f"{d.id} ({TOKENIZERS[t]})"
    # The margin covers the worst held-out under-estimate, plus a stated safety for documents not seen at all.
    margin = (1 / worst - 1 if worst < 1 else Fraction(0)) + safety
    margin = Fraction(math.ceil(margin * 1000), 1000)
    # Scale the exact fit's own constants (after its seed cap), so that every estimate is at
    # least 1 + margin times the exact fit's: the held-out minimum is then at least that times the worst.
    constants = {name: round_down(cpt / (1 + margin), DECIMALS) for name, cpt in exact.items()}
    return Variant(name, tuple(tokenizers), exact, worst, worst_doc, margin, constants)


# --------------------------------------------------------------------------
# The split


def _hash(unit: str) -> int:
    return int(hashlib.sha1(unit.encode()).hexdigest(), 16)


def assign_splits(meta: Sequence[tuple[str, str, str]]) -> list[tuple[str, str]]:
    """(split, unit) for each (id, kind, source): whole packages are held out, one in
    ``VALIDATION_SHARE`` by a hash of the package's name, so no package is on both sides
    of a kind; a kind drawn from fewer than ``MIN_PACKAGES`` packages is split by document.

    Stratified by kind: a kind split by package whose packages all hashed into the fit set
    (Arabic prose once did, with three packages) holds out one of them, the one with the
    fewest documents in the corpus, provided every kind it also serves keeps a fit package."""
    packages: dict[str, set[str]] = defaultdict(set)
    for _id, kind, source in meta:
        packages[kind].add(source)
    unit_of = [source if len(packages[kind]) >= MIN_PACKAGES else doc_id for doc_id, kind, source in meta]
    held = {u for u in unit_of if _hash(u) % VALIDATION_SHARE == 0}
    docs_of: dict[str, int] = defaultdict(int)
    kinds_of: dict[str, set[str]] = defaultdict(set)
    for unit, (_id, kind, _source) in zip(unit_of, meta, strict=True):
        docs_of[unit] += 1
        kinds_of[unit].add(kind)
    units_of_kind: dict[str, set[str]] = defaultdict(set)
    for unit, (_id, kind, _source) in zip(unit_of, meta, strict=True):
        units_of_kind[kind].add(unit)
    for kind in sorted(k for k in packages if len(packages[k]) >= MIN_PACKAGES):
        if units_of_kind[kind] & held:
            continue
        for unit in sorted(units_of_kind[kind], key=lambda u: (docs_of[u], _hash(u))):
            if all(units_of_kind[k] - held - {unit} for k in kinds_of[unit]):
                held.add(unit)
                break
    return [("validation" if unit in held else "fit", unit) for unit in unit_of]


Meta = tuple[str, str, str]
"""A document's id, kind and source (its package)."""


def docs_from_table(path: Path, rule: ClassRule) -> tuple[list[Meta], list[CharCounts], list[tuple[int, ...]]]:
    """Each document's (id, kind, source), counts and real tokens from a committed ``documents.csv``:
    enough to split and fit again without the corpus. A document split alone is its own source."""
    meta, counts, real = [], [], []
    names = [c.name for c in rule.classes]
    with path.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            meta.append((row["id"], row["kind"], row["unit"]))
            counts.append(
                CharCounts(
                    int(row["seed:ascii"]),
                    int(row["seed:cjk"]),
                    int(row["seed:other"]),
                    tuple(int(row[n]) for n in names),
                )
            )
            real.append(tuple(int(row[f"tokens:{t}"]) for t in TOKENIZERS))
    return meta, counts, real


# --------------------------------------------------------------------------
# Tables


def ratio(constants: dict[str, Fraction] | None, rule: ClassRule, d: Doc, t: int) -> float:
    """Estimate over real tokens of tokenizer ``t`` (the seed rule when ``constants`` is None):
    the estimator's own integer estimate, rounded up once."""
    c = d.counts
    if constants is None:
        est = SEED.text_tokens(CharCounts(c.ascii, c.cjk, c.other))
    else:
        est = math.ceil(unrounded(constants, rule, d))
    return est / d.real[t]


def family(kind: str) -> str:
    """A kind's row in the summary tables."""
    if not kind.startswith("prose:"):
        return kind.split(":")[0] if kind.startswith(("code:", "json", "diff:")) else kind
    lang = kind.split(":")[1]
    for name, langs in FAMILIES.items():
        if lang in langs:
            return f"prose: {name}"
    return "prose: other"


FAMILIES = {
    "English": {"en"},
    "Latin script": {"de", "fr", "es", "it", "pt", "pl", "cs", "nl", "sv", "ro", "hu", "fi", "da", "tr", "vi", "id"},
    "Cyrillic": {"ru", "uk", "mk", "sr", "be", "bg"},
    "Greek": {"el"},
    "Hebrew": {"he"},
    "Arabic script": {"ar", "fa", "ur"},
    "Armenian, Georgian": {"hy", "ka"},
    "Indic": {"hi", "mr", "ne", "bn", "ta", "te", "gu", "pa", "kn", "ml", "si"},
    "Thai, Khmer, Myanmar, Tibetan": {"th", "km", "my", "dz"},
    "CJK (zh, ja, ko)": {"zh", "ja", "ko"},
}


def fmt(x: float) -> str:
    return f"{x:.2f}"


def pct(x: Fraction | float) -> str:
    return f"{float(x) * 100:.1f}%"


HELD_OUT_HEADER = (
    "| kind | fit docs | held-out docs | held-out chars | seed min | seed under | exact fit min | exact fit under "
    "| safe min | safe median | safe avg over |\n"
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
)


def held_out_rows(groups: dict[str, list[Doc]], safe: Variant, rule: ClassRule, ts: Sequence[int]) -> list[str]:
    """One row per group: fit and held-out sizes, and on the held-out documents the seed rule, the
    exact fit (before the margin) and the published rule, worst over the tokenizers ``ts``."""
    lines = []
    for name, group in groups.items():
        fit_n = sum(1 for d in group if d.split == "fit")
        held = [d for d in group if d.split == "validation"]
        if not held:
            lines.append(f"| {name} | {fit_n} | 0 | 0 | | | | | | | |")
            continue
        seed = [min(ratio(None, rule, d, t) for t in ts) for d in held]
        exact = [min(ratio(safe.exact, rule, d, t) for t in ts) for d in held]
        final = [min(ratio(safe.constants, rule, d, t) for t in ts) for d in held]
        lines.append(
            f"| {name} | {fit_n} | {len(held)} | {sum(d.chars for d in held):,} | {fmt(min(seed))} | "
            f"{sum(1 for r in seed if r < 1)} | {fmt(min(exact))} | {sum(1 for r in exact if r < 1)} | "
            f"{fmt(min(final))} | {fmt(statistics.median(final))} | {(statistics.mean(final) - 1) * 100:+.0f}% |"
        )
    return lines


def grouped(docs: Sequence[Doc], key: Callable[[str], str]) -> dict[str, list[Doc]]:
    groups: dict[str, list[Doc]] = defaultdict(list)
    for d in docs:
        groups[key(d.kind)].append(d)
    return dict(sorted(groups.items(), key=lambda kv: (not kv[0].startswith("prose"), kv[0])))


def stratified_text(docs: Sequence[Doc]) -> str:
    """The units held out by the stratification rather than by their hash, with their documents' kinds."""
    extra: dict[str, list[str]] = defaultdict(list)
    for d in docs:
        if d.split == "validation" and _hash(d.unit) % VALIDATION_SHARE:
            extra[d.unit].append(d.kind)
    if not extra:
        return "no kind needed it"
    parts = []
    for unit, kinds in sorted(extra.items()):
        counted = ", ".join(f"{n} `{k}`" for k, n in sorted(Counter(kinds).items()))
        parts.append(f"`{unit}` with {counted} documents")
    return "held out that way: " + "; ".join(parts)


def write_doc(docs: Sequence[Doc], rule: ClassRule, variants: Sequence[Variant], sources: Sequence[str]) -> str:
    safe = variants[0]
    fit_docs = [d for d in docs if d.split == "fit"]
    held = [d for d in docs if d.split == "validation"]
    units = {s: {d.unit for d in docs if d.split == s} for s in ("fit", "validation")}
    by_package = sorted({d.kind for d in docs if d.unit != d.id.split("#")[0]})
    by_document = sorted({d.kind for d in docs} - set(by_package))
    out = [
        "# Calibration of the `safe` estimators",
        "",
        "<!-- Written by benchmarks/calibrate/calibrate.py: edit the script, not this file. -->",
        "",
        "`safe` is windowfit's estimator for people who need a guarantee: its text",
        "estimate is meant never to fall below the real token count of any tokenizer",
        "listed below. `safe-openai`, `safe-llama`, `safe-qwen`, `safe-deepseek`,",
        "`safe-mistral` and `safe-claude` are tighter variants, each for one family of",
        "tokenizers. `seed` (the default, SPEC section 2) is what a harness built on the",
        "field report sends, and the tables show where it under-estimates.",
        "",
        "Every figure on this page comes from these commands (Debian, with",
        "`windowfit[tokenizers]` and `windowfit[claude-legacy]` installed; the corpus",
        "is git-ignored, only numbers are committed):",
        "",
        "```sh",
        "apt-get update",
        "python benchmarks/calibrate/build_corpus.py   # -> benchmarks/out/calibration/corpus.jsonl",
        "python benchmarks/calibrate/calibrate.py      # -> fitting/rules.json, documents.csv, this page",
        "```",
        "",
        "`python benchmarks/calibrate/calibrate.py --from-table` splits and fits again from the committed",
        "`tests/data/calibration/documents.csv` (each document's counts and real tokens), without the corpus;",
        "it needs only the tokenizers' names and versions.",
        "",
        "## Method: fit on some packages, validate on others",
        "",
        f"The corpus ({len(docs):,} documents, {sum(d.chars for d in docs):,} characters) is split before",
        f"anything is fitted. Whole Debian packages are held out: one in {VALIDATION_SHARE}, chosen by a hash",
        "of the package's name, so no package gives documents to both sides of a kind. The split is",
        "stratified by kind: a kind whose packages all hash into the fit set holds out its package with",
        f"the fewest documents ({stratified_text(docs)}).",
        f"Kinds drawn from fewer than {MIN_PACKAGES} packages (one language's man pages, this machine's",
        "logs, Unicode's emoji file) are split by document instead. The fit set has",
        f"{len(fit_docs):,} documents from {len(units['fit']):,} units; the held-out set {len(held):,} documents",
        f"from {len(units['validation']):,} units.",
        "",
        "For each rule, in order:",
        "",
        "1. **Exact fit.** Chars per token per class are fitted on the fit set alone: the",
        "   least average over-estimate under which no fit document is under-estimated",
        "   by any of the rule's tokenizers (an exact linear program, rounded down to",
        f"   {DECIMALS} decimals).",
        "2. **Held-out check.** The exact fit is run on the held-out documents, which",
        "   played no part in it. Its lowest estimate / real ratio there is the",
        "   *held-out worst*: how far a calibration that fits its own data perfectly",
        "   falls short on text it has never seen.",
        "3. **Margin.** The margin is what that worst case needs (1 / worst - 1), plus a",
        f"   stated safety of {pct(SAFETY)}, rounded up to 0.1%. Every class's tokens per character are multiplied by",
        "   1 + margin, so the published rule's held-out minimum is at least",
        "   (1 + margin) x the held-out worst.",
        "",
        "The held-out worst is the figure to trust for unseen text: the published rule",
        "is that figure times 1 + margin. The margin is chosen from the held-out set, so the",
        "published rule's own held-out minimum is not a second, independent test.",
        "",
        "## The rules",
        "",
        "| rule | tokenizers | held-out worst (exact fit) | at | margin | held-out min (published) "
        "| held-out avg over |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: |",
    ]
    for v in variants:
        finals = [min(ratio(v.constants, rule, d, t) for t in v.tokenizers) for d in held]
        if v.uses_safe:
            margin = f"{pct(v.margin)}, looser than `safe`: publishes `safe`'s constants"
        elif v.own_margin is not None:
            margin = f"{pct(v.margin)} on `safe` scaled (its own fit needed {pct(v.own_margin)})"
        else:
            margin = pct(v.margin)
        out.append(
            f"| `{v.name}` | {', '.join(TOKENIZERS[t] for t in v.tokenizers)} | {float(v.worst_held_out):.3f} | "
            f"{v.worst_doc} | {margin} | {min(finals):.3f} | {(statistics.mean(finals) - 1) * 100:+.0f}% |"
        )
    out += [
        "",
        "A family's own fit can need a larger margin than `safe` (its exact fit is tighter, so",
        "unseen text can fall further below it); a variant that would end up looser than `safe`",
        "on its family's held-out documents is fitted again as `safe`'s constants times one factor",
        "(the largest under which no fit document of its tokenizers is under-estimated, then a margin",
        "from the held-out set as above), and publishes `safe`'s constants only if that is no tighter.",
        "",
        "*held-out avg over* is the mean over held-out documents of estimate / real - 1, for the",
        "tokenizer of the rule's family with the most tokens (the one the rule must cover).",
        "`tests/test_safe_estimator.py` checks, from `tests/data/calibration/documents.csv`,",
        "that no rule under-estimates any document of its tokenizers, fit or held out.",
        "",
        "## Tokenizers",
        "",
    ]
    out += [f"- `{name}`: {source}" for name, source in zip(TOKENIZERS, sources, strict=True)]
    out += ["", "## Summary per tokenizer, `safe`", ""]
    out.append(
        "| tokenizer | docs | seed under (all) | seed worst | exact fit held-out worst | exact fit held-out under "
        "| safe min (all) | safe avg over (all) |"
    )
    out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for t, name in enumerate(TOKENIZERS):
        seed = [ratio(None, rule, d, t) for d in docs]
        exact = [ratio(safe.exact, rule, d, t) for d in held]
        final = [ratio(safe.constants, rule, d, t) for d in docs]
        out.append(
            f"| `{name}` | {len(docs)} | {sum(1 for r in seed if r < 1)} | {fmt(min(seed))} | {min(exact):.3f} | "
            f"{sum(1 for r in exact if r < 1)} | {fmt(min(final))} | {(statistics.mean(final) - 1) * 100:+.0f}% |"
        )
    out += [
        "",
        "## Held out, by content family (`safe`, worst over the nine tokenizers)",
        "",
        "*min* and *median* are over the held-out documents of a row, each document at its",
        "worst tokenizer; *under* counts held-out documents under-estimated; *exact fit* is",
        "step 1's rule before the margin.",
        "",
        HELD_OUT_HEADER,
        *held_out_rows(grouped(docs, family), safe, rule, safe.tokenizers),
    ]
    for v in variants[1:]:
        out += [
            "",
            f"### `{v.name}` ({', '.join(TOKENIZERS[t] for t in v.tokenizers)}), held out, by content family",
            "",
            HELD_OUT_HEADER,
            *held_out_rows(grouped(docs, family), v, rule, v.tokenizers),
        ]
    for t, name in enumerate(TOKENIZERS):
        out += [
            "",
            f"### `safe` for `{name}` alone, held out, by content family",
            "",
            HELD_OUT_HEADER,
            *held_out_rows(grouped(docs, family), safe, rule, (t,)),
        ]
    out += ["", "## The constants (chars per token)", ""]
    out.append("| class | " + " | ".join(v.name for v in variants) + " | characters (fit set) | code points |")
    out.append("| --- | " + " | ".join("---:" for _ in variants) + " | ---: | --- |")
    for i, c in enumerate(rule.classes):
        chars = sum(d.counts.classes[i] for d in fit_docs)
        ranges = ", ".join(f"{a:04X}-{b:04X}" for a, b in c.ranges) if c.ranges else "everything else"
        if len(ranges) > 60:
            ranges = ranges[:57] + "..."
        values = " | ".join(f"{float(v.constants[c.name]):g}" for v in variants)
        out.append(f"| {c.name} | {values} | {chars:,} | {ranges} |")
    out += [
        "",
        f"Classes with fewer than {MIN_CHARS:,} characters in the fit set, and `other`, are not fitted:",
        "they keep the UTF-8 bound (one token per byte of their widest character),",
        "which no byte-level BPE tokenizer can exceed. No class counts on more than",
        f"{MAX_CHARS_PER_TOKEN} characters per token, nor on more than the seed rule's class.",
        "",
        "## Speed",
        "",
        "`safe` counts with the compiled extension `windowfit.fitting._classcount`",
        "(`fitting/_classcount.c`): one pass over the str's own storage, each code point",
        "looked up in a class table built once per rule, so every script class runs at",
        "about the same speed. Without a C compiler at install time (or with",
        "`WINDOWFIT_PURE=1`) it counts in pure Python: ASCII classes deleted with",
        "`bytes.translate`, the rest sorted by 256-code-point block, with",
        "regular-expression passes inside shared blocks (Hebrew, Armenian) and for emoji;",
        "that path is 10 to 40 times slower on those scripts. Both give identical counts",
        "(`tests/test_classcount.py`).",
        "",
        SPEED_START + SPEED_END,
        "",
        "## The corpus",
        "",
        "Real text nobody on the team wrote, from Debian packages and this machine:",
        "translated man pages (`manpages-*`), the Debian Administrator's Handbook and",
        "Installation Guide, LibreOffice help pages and UI translations, Firefox UI",
        "translations (Fluent strings), source code (Python, C, Rust, Go, JavaScript,",
        "TypeScript, Perl, shell), JSON (as shipped and compacted), XML, numeric tables,",
        "`od` hex dumps, PEM certificates, md5sums and `sha256sum` output, minified",
        "JavaScript and CSS (`libjs-*` packages), Debian changelogs, Markdown docs,",
        "Unicode's emoji test file, and logs. On top, the text agent transcripts carry",
        "in tool results: unified diffs of real source files against a plausible edit",
        "(`diff:*`), the same files as `cat -n` prints them and in the `N→` style of",
        "file-reading tools (`read:*`), real binary files in base64 (`base64:file`),",
        "`ls -laR`, `find` and `grep -rn` over the packages (`shell`), CPython's own test",
        "suites run by `unittest -v` and `pytest -v` (`tests`), Rust's",
        "`.cargo-checksum.json` and pip `--require-hashes` requirement files made from the",
        "packages' file hashes (`lockfile`), and English man pages with emoji inside",
        "the prose (`emoji:prose`). Per kind at most 30 documents of 1,000 to 60,000",
        "characters are drawn (by a hash of their id). `tests/data/calibration/",
        "documents.csv` has one row per document: id, kind, split, class counts and",
        "real tokens per tokenizer.",
        "",
        f"Split by package: {', '.join(f'`{k}`' for k in by_package)}.",
        "",
        f"Split by document: {', '.join(f'`{k}`' for k in by_document)}.",
        "",
        "## Every kind, held out (`safe`, worst over the nine tokenizers)",
        "",
        HELD_OUT_HEADER,
        *held_out_rows(grouped(docs, lambda k: k), safe, rule, safe.tokenizers),
    ]
    return "\n".join(out) + "\n"


SPEED_START, SPEED_END = "<!-- bench_safe:start -->", "<!-- bench_safe:end -->"


def keep_speed(page: str) -> str:
    """``page`` with the speed figures that ``bench_safe.py --write-docs`` wrote into the old page."""
    old = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    if SPEED_START in old and SPEED_END in old:
        block = SPEED_START + old.split(SPEED_START, 1)[1].split(SPEED_END, 1)[0] + SPEED_END
    else:
        block = f"{SPEED_START}\n\nRun `python benchmarks/calibrate/bench_safe.py --write-docs`.\n\n{SPEED_END}"
    return page.replace(SPEED_START + SPEED_END, block)


def write_table(docs: Sequence[Doc], rule: ClassRule) -> str:
    names = [c.name for c in rule.classes]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    seed = ("seed:ascii", "seed:cjk", "seed:other")  # the seed's classes; safe's follow, then real tokens
    writer.writerow(["id", "kind", "split", "unit", "chars", *seed, *names, *(f"tokens:{t}" for t in TOKENIZERS)])
    for d in docs:
        c = d.counts
        writer.writerow([d.id, d.kind, d.split, d.unit, d.chars, c.ascii, c.cjk, c.other, *c.classes, *d.real])
    return buffer.getvalue()


def decimal_text(value: Fraction) -> str:
    return str(Decimal(value.numerator) / Decimal(value.denominator))


def update_rules(variants: Sequence[Variant], sources: Sequence[str], docs: Sequence[Doc]) -> str:
    document = json.loads(RULES.read_text(encoding="utf-8"))
    rules = document["rules"]
    template = rules["safe"]
    for name in [n for n in rules if n.startswith("safe-")]:
        del rules[name]
    held = sum(1 for d in docs if d.split == "validation")
    for v in variants:
        entry = json.loads(json.dumps(template))
        family = ", ".join(TOKENIZERS[t] for t in v.tokenizers)
        entry["description"] = (
            f"Calibrated never to under-estimate {family} on the held-out documents of the calibration corpus "
            "(docs/calibration.md)."
        )
        for c in entry["classes"]:
            c["chars_per_token"] = decimal_text(v.constants[c["name"]])
        if v.uses_safe:
            entry["description"] += f" Its own fit (margin {decimal_text(v.margin)}) was looser: safe's constants."
        elif v.own_margin is not None:
            entry["description"] += (
                f" Its own fit (margin {decimal_text(v.own_margin)}) was looser than safe: safe's constants scaled by"
                " one factor fitted on its tokenizers."
            )
        entry["calibration"] = {
            "command": COMMAND,
            "documents": len(docs),
            "held_out_documents": held,
            "characters": sum(d.chars for d in docs),
            "held_out_worst_exact_fit": f"{float(v.worst_held_out):.4f}",
            "margin": decimal_text(v.margin),
            "tokenizers": {TOKENIZERS[t]: sources[t] for t in v.tokenizers},
        }
        rules[v.name] = entry
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def cache_path(corpus: Path) -> Path:
    """Token counts of ``corpus``, per tokenizer and source, beside it: valid while the corpus is unchanged."""
    digest = hashlib.sha1(corpus.read_bytes()).hexdigest()[:16]
    return corpus.with_name(f"tokens-{digest}.json")


def load_cache(corpus: Path) -> dict[str, list[int]]:
    path = cache_path(corpus)
    return json.loads(path.read_text()) if path.exists() else {}


def save_cache(corpus: Path, cache: dict[str, list[int]]) -> None:
    cache_path(corpus).write_text(json.dumps(cache))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--safety", type=Fraction, default=SAFETY, help="added to the held-out margin (0.02)")
    parser.add_argument("--dry-run", action="store_true", help="fit and print, write nothing")
    parser.add_argument(
        "--from-table",
        action="store_true",
        help=f"split and fit again from {TABLE.relative_to(ROOT)} (its counts and tokens) instead of the corpus",
    )
    args = parser.parse_args(argv)
    rule = SAFE
    assert isinstance(rule, ClassRule)
    if args.from_table:
        meta, counts, reals = docs_from_table(TABLE, rule)
        tokenizers = [load_tokenizer(name) for name in TOKENIZERS]
        docs = [
            Doc(doc_id, kind, split, c.total, c, r, unit)
            for (doc_id, kind, _src), c, r, (split, unit) in zip(meta, counts, reals, assign_splits(meta), strict=True)
        ]
        finish(docs, rule, tokenizers, args)
        return
    texts = []
    meta = []
    with args.corpus.open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            texts.append(d["text"])
            meta.append((d["id"], d["kind"], d["source"]))
    splits = assign_splits(meta)
    tokenizers = [load_tokenizer(name) for name in TOKENIZERS]
    cache = load_cache(args.corpus)
    real = []
    for tok in tokenizers:
        start = time.perf_counter()
        key = f"{tok.name} {tok.source}"
        if key not in cache or len(cache[key]) != len(texts):
            cache[key] = count_texts(tok, texts)
        real.append(cache[key])
        print(f"{tok.name}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    save_cache(args.corpus, cache)
    docs = [
        Doc(doc_id, kind, split, len(text), rule.count(text), tuple(r[i] for r in real), unit)
        for i, ((doc_id, kind, _source), text, (split, unit)) in enumerate(zip(meta, texts, splits, strict=True))
    ]
    del texts
    finish(docs, rule, tokenizers, args)


def finish(docs: list[Doc], rule: ClassRule, tokenizers: Sequence[LoadedTokenizer], args: argparse.Namespace) -> None:
    """Fit every variant on ``docs``, check the guarantee, and write the rules, the table and the page."""
    variants = [
        calibrate(name, docs, rule, [TOKENIZERS.index(t) for t in names], args.safety)
        for name, names in VARIANTS.items()
    ]
    variants = [variants[0], *(never_looser(v, variants[0], docs, rule) for v in variants[1:])]
    sources = [t.source for t in tokenizers]
    rules_text = update_rules(variants, sources, docs)
    loaded = load_rules(rules_text)
    for v in variants:  # the guarantee, checked as the estimator computes it
        fitted = loaded[v.name]
        assert isinstance(fitted, ClassRule)
        for d in docs:
            need = max(d.real[t] for t in v.tokenizers)
            if fitted.text_tokens(d.counts) < need:
                print(f"{v.name}: {d.id} ({d.split}) {fitted.text_tokens(d.counts)} < {need} tokens", file=sys.stderr)
        print(f"{v.name}: held-out worst {float(v.worst_held_out):.3f} at {v.worst_doc}, margin {pct(v.margin)}")
    if args.dry_run:
        return
    RULES.write_text(rules_text, encoding="utf-8")
    TABLE.parent.mkdir(parents=True, exist_ok=True)
    TABLE.write_text(write_table(docs, rule), encoding="utf-8")
    DOC.write_text(keep_speed(write_doc(docs, rule, variants, sources)), encoding="utf-8")
    print(f"wrote {RULES.relative_to(ROOT)}, {TABLE.relative_to(ROOT)}, {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
