"""``audit`` of a Claude Code session, loaded (the whole session held, as before the stream) against streamed
(``claude_code.stream``: the chain over stand-ins, then each message read again), timed turn about in one
process, best of ``--repeat``: the streamed time over the loaded time is the figure (a shared machine moves both
alike). The file is ``bench_memory.py``'s (c), generated if absent.

Run ``python benchmarks/bench_audit_stream.py`` (40 MB requested, as ``bench_memory.py``'s default; best of 3;
``-t o200k_base`` and no tokenizer (``--provider-only``) are both timed).
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from collections.abc import Callable

from bench_memory import generated

from windowfit.cli.audit_cmd import _audit_sessions, audit_work
from windowfit.fitting.formats import Input, load
from windowfit.fitting.tokenizers import load_tokenizer


def best(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=40_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    path = generated("claude-code", options.size)
    item = Input(str(path), keep_text=False)
    print(f"{path.name}: {path.stat().st_size / 1e6:.1f} MB; load average {os.getloadavg()[0]:.2f}")
    load_tokenizer("o200k_base")  # loaded once, outside the timings
    for names in (("o200k_base",), ()):

        def loaded(names: tuple[str, ...] = names) -> object:
            transcripts = load(item, fmt="claude_code", skip_invalid=False)
            return audit_work(transcripts, estimator="seed", tokenizers=names, top=5)

        def streamed(names: tuple[str, ...] = names) -> object:
            return _audit_sessions(item, False, "seed", names, 5, False)

        times = {"loaded": [], "streamed": []}  # turn about: each version once, then the other, ``repeat`` times
        for _ in range(options.repeat):
            times["loaded"].append(best(loaded, 1))
            times["streamed"].append(best(streamed, 1))
        a, b = min(times["loaded"]), min(times["streamed"])
        label = f"-t {names[0]}" if names else "--provider-only"
        print(f"audit {label}: loaded {a:.2f} s, streamed {b:.2f} s, streamed / loaded {b / a:.3f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
