"""What every benchmark shares: importing the checkout, best-of timing, and
generated inputs cached in ``benchmarks/out/`` behind a manifest."""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import orjson

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: make the repository importable
    sys.path.insert(0, str(ROOT))

OUT = Path(__file__).resolve().parent / "out"


def cache_bytecode() -> str:
    """Write the bytecode of windowfit's own modules, as ``pip install`` of a wheel does. An editable checkout
    run with ``PYTHONDONTWRITEBYTECODE`` (this machine sets it) otherwise compiles every module it imports on
    every start, about 0.1 s that one process pays before any worker starts. Says what it did."""
    import compileall
    import os

    missing = not any((ROOT / "fitting" / "__pycache__").glob("estimate.*.pyc"))
    quiet = compileall.compile_dir(ROOT / "fitting", quiet=1) and compileall.compile_dir(ROOT / "cli", quiet=1)
    how = "written by this script" if missing else "already there (refreshed)"
    flag = "set" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "unset"
    return f"bytecode of windowfit's modules: {how}{'' if quiet else ' (some failed)'}; PYTHONDONTWRITEBYTECODE {flag}"


def best_of(repeat: int, run: Callable[[], object]) -> float:
    """The fastest of ``repeat`` runs, in seconds. Garbage is collected before
    each run, and what a run returns is freed after its clock stops."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        kept = run()
        best = min(best, time.perf_counter() - start)
        del kept
    return best


def ensure_generated(name: str, version: int, write: Callable[[BinaryIO], object]) -> Path:
    """``benchmarks/out/<name>``, written by ``write`` unless a complete file of
    this generator ``version`` is already there (its manifest says so)."""
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / name
    manifest = path.with_suffix(".json")
    expected = {"bytes": path.stat().st_size if path.exists() else -1, "version": version}
    if manifest.exists() and orjson.loads(manifest.read_bytes()) == expected:
        return path
    partial = path.with_suffix(".partial")
    with open(partial, "wb") as out:
        write(out)
    partial.replace(path)
    manifest.write_bytes(orjson.dumps({"bytes": path.stat().st_size, "version": version}))
    return path
