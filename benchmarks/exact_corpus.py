"""SPEC section 6, invariant 9 over real files: ``windowfit fit FILE --budget <huge> -o out`` on every file
of the shared corpus (``transcripts/``, ``new-formats/``) and ``sample_transcripts/``, and whether each
message line of the output is the input's line, byte for byte, where the format writes JSONL messages in
its own shape (``messages``). Other formats are logs, written as a request body: listed with their format.

    python benchmarks/exact_corpus.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from common import ROOT

from windowfit.fitting.formats import load_path

SHARED = ROOT.parent / "shared" / "corpus"
FOLDERS = (SHARED / "transcripts", SHARED / "new-formats", ROOT / "sample_transcripts")
SUFFIXES = (".jsonl", ".json", ".traj", ".md")
OPTIONS = ("--budget", "1000000000", "--index", "0", "--skip-invalid")
"""A budget everything fits in; a file's first transcript (most hold one); broken lines of real files skipped."""


def _lines(data: bytes) -> list[bytes]:
    """A JSONL file's message lines, as ``fit`` keeps them (blank and ``//`` lines are not messages)."""
    out = []
    for k, raw in enumerate(data.splitlines()):
        line = raw.strip()
        if k == 0 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:].strip()
        if line and not line.startswith(b"//"):
            out.append(line)
    return out


def main() -> int:
    files = sorted(p for folder in FOLDERS if folder.is_dir() for p in folder.rglob("*") if p.suffix in SUFFIXES)
    files = [p for p in files if p.name not in ("README.md", "SOURCES.md")]
    bad = 0
    with tempfile.TemporaryDirectory() as folder:
        for n, path in enumerate(files):
            out = Path(folder) / f"out-{n}"
            run = subprocess.run(
                [sys.executable, "-m", "windowfit", "fit", str(path), *OPTIONS, "-o", str(out)],
                capture_output=True,
                check=False,
            )
            name = path.relative_to(ROOT.parent) if path.is_relative_to(ROOT.parent) else path
            try:
                fmt = load_path(path, skip_invalid=True)[0].format
            except Exception as exc:  # listed, not raised
                fmt = f"not read: {exc}"
            if run.returncode != 0 or not out.exists():
                print(f"{name}: {fmt}: fit exited {run.returncode}: {run.stderr.decode().strip()[:200]}")
                bad += 1
                continue
            if fmt != "messages" or path.suffix != ".jsonl":
                print(f"{name}: {fmt}: written as a request body (not JSONL messages in its own shape)")
                continue
            given, written = _lines(path.read_bytes()), _lines(out.read_bytes())
            same = sum(a == b for a, b in zip(given, written, strict=False))
            ok = same == len(given) == len(written)
            bad += not ok
            print(f"{name}: {fmt}: {same} of {len(given)} message lines identical ({len(written)} written)")
    print(f"{len(files)} files, {bad} not as expected")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
