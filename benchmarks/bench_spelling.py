"""What keeping the file's spelling costs ``fit`` on a messages file. Reading costs nothing more: the walk
that finds the file's spelling of a message's extra keys, unmodelled blocks and images
(``wire.spelling.respelled``) runs only for the messages written from the model, when they are written.
The worst case is converting a whole file (``--to anthropic``: every message rebuilt, so every one
walked); it is timed against the same write without the messages' texts (nothing to respell), and
against loading the file, all in this process.

    python benchmarks/bench_spelling.py          # the bundled sessions 10 times over, best of 5
    python benchmarks/bench_spelling.py --quick  # 2 times over, best of 2
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from common import ROOT, best_of

from windowfit.fitting.formats import load_path
from windowfit.fitting.request import write_transcript

SESSIONS = ("en_coding_session.jsonl", "ru_subagent_chapters.jsonl", "ja_tools_session.jsonl")


def _file(folder: Path, times: int, extras: bool) -> Path:
    """The sessions' lines, ``times`` over; with ``extras``, every block carries a ``cache_control`` key
    spelled with a space after its colons (so every walk finds a spelling to keep)."""
    lines = [line for name in SESSIONS for line in (ROOT / "sample_transcripts" / name).read_bytes().splitlines()]
    if extras:
        lines = [line.replace(b'{"type":', b'{"cache_control": {"type": "ephemeral"},"type":') for line in lines]
    path = folder / ("extras.jsonl" if extras else "bundled.jsonl")
    path.write_bytes(b"".join(line + b"\n" for line in lines * times))
    return path


def main() -> None:
    quick = "--quick" in sys.argv
    times, repeat = (2, 2) if quick else (10, 5)
    with tempfile.TemporaryDirectory() as folder:
        for extras in (False, True):
            path = _file(Path(folder), times, extras)
            (transcript,) = load_path(path)
            bare = replace(transcript, messages=tuple(replace(m, verbatim=None) for m in transcript.messages))
            load = best_of(repeat, lambda: load_path(path))  # noqa: B023
            plain = best_of(repeat, lambda: write_transcript(bare, to="anthropic"))  # noqa: B023
            spelt = best_of(repeat, lambda: write_transcript(transcript, to="anthropic"))  # noqa: B023
            label = "every block with cache_control" if extras else "the sessions as bundled"
            print(f"{label}: {len(transcript.messages):,} messages, {path.stat().st_size / 1e6:.1f} MB")
            print(f"  load                          {load * 1e3:8.1f} ms  1.00")
            print(f"  write --to anthropic, bare    {plain * 1e3:8.1f} ms  {plain / load:.2f}")
            print(f"  write --to anthropic, spelled {spelt * 1e3:8.1f} ms  {spelt / load:.2f}")


if __name__ == "__main__":
    main()
