"""What keeping the file's spelling of unmodelled block parts costs the Claude Code reader
(``wire.spelling.spelled_blocks``, SPEC section 6, invariant 9). Each line's blocks are looked for as
compact JSON in the line (a substring search); only a block not found so is walked. Loading is timed with
the function and with it replaced by one that returns the blocks as they are, in this process, over the
shared corpus's Claude Code sessions as they are, and over the same lines with every block carrying a
``cache_control`` key spelled with a space after its colons (the worst case: every block walked).

    python benchmarks/bench_log_spelling.py          # best of 5
    python benchmarks/bench_log_spelling.py --quick  # best of 2
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from common import ROOT, best_of

from windowfit.fitting.formats import claude_code, load_path

CORPUS = ROOT.parent / "shared" / "corpus" / "transcripts" / "claude_code"


def _as_they_are(blocks: Any, text: Any, *path: Any) -> Any:
    return blocks


def _load(paths: list[Path]) -> object:
    return [load_path(p, fmt="claude_code", skip_invalid=True) for p in paths]


def main() -> None:
    repeat = 2 if "--quick" in sys.argv else 5
    files = sorted(CORPUS.glob("*.jsonl"))
    if not files:
        print(f"no Claude Code sessions in {CORPUS}: nothing to time")
        return
    spelled = claude_code.spelled_blocks
    with tempfile.TemporaryDirectory() as folder:
        odd = []
        for f in files:
            copy = Path(folder) / f.name
            copy.write_bytes(f.read_bytes().replace(b'{"type":', b'{"cache_control": {"type": "ephemeral"},"type":'))
            odd.append(copy)
        for label, paths in (("the corpus's sessions as they are", files), ("every block with cache_control", odd)):
            claude_code.spelled_blocks = _as_they_are  # type: ignore[assignment]
            bare = best_of(repeat, lambda: _load(paths))  # noqa: B023
            claude_code.spelled_blocks = spelled
            kept = best_of(repeat, lambda: _load(paths))  # noqa: B023
            size = sum(p.stat().st_size for p in paths) / 1e6
            print(f"{label}: {len(paths)} files, {size:.1f} MB")
            print(f"  load, blocks as they are      {bare * 1e3:8.1f} ms  1.00")
            print(f"  load, spelling kept           {kept * 1e3:8.1f} ms  {kept / bare:.2f}")


if __name__ == "__main__":
    main()
