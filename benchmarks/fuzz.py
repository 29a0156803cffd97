"""A long fuzz run of every loader and of the fit with mutated real lines (issue 8, item 8): the same test as
``tests/test_fuzz.py``, for as many examples as asked, over tests/data and the shared corpus when present.

Run ``python benchmarks/fuzz.py --examples 20000`` (``--no-corpus`` for tests/data only). A failure prints the
shrunk input and exits non-zero, as pytest would.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from test_fuzz import DATA, fuzz_test, sources  # noqa: E402 (tests/ joins the path first)

CORPUS = ROOT.parent.parent / "shared" / "corpus"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=int, default=5000)
    parser.add_argument("--no-corpus", action="store_true")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args()
    files = sources(DATA)
    if not args.no_corpus and args.corpus.is_dir():
        files += sources(args.corpus)
    print(f"fuzzing {len(files)} files, {args.examples} examples", file=sys.stderr)
    fuzz_test(files, max_examples=args.examples)()
    print("no failure", file=sys.stderr)


if __name__ == "__main__":
    main()
