"""This checkout's per-core cost over the Claude Code folder against another commit's, in one process: the
reader (``claude_code._load_file``: lines to transcripts), the seed estimator (``Estimator.blocks`` over every
message, file by file, its own time only) and the row function (``rows.file_rows`` with a budget, the collector
left as the caller has it), each timed for ``--ref``'s version of the module (read with ``git show`` and imported
beside this checkout's other modules) and for this checkout's, turn about, against a bare ``orjson.loads`` loop
over every line (1.0).
On a shared machine two runs minutes apart differ by a fifth; two versions timed turn about in one process do
not, so the last lines (this checkout ÷ ``--ref``) are the figures to compare.

Run ``python benchmarks/bench_against.py`` (200 sessions, best of 3, ``--ref main``; ``--quick``: 40, best of 1).
"""

from __future__ import annotations

import gc
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from bench_folder import bare_loop
from common import OUT
from rich.console import Console
from rich.table import Table
from sessions import benchmark_folder, folder_parser

from windowfit.fitting import estimate, rows
from windowfit.fitting.formats import Input, claude_code

ROOT = Path(__file__).resolve().parent.parent


def at_ref(ref: str, path: str, name: str, scratch: Path) -> ModuleType:
    """``path`` (a module of the package) as it is at ``ref``, imported as ``name`` inside the installed package
    so that its relative imports find this checkout's other modules."""
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:{path}"], check=True, capture_output=True).stdout
    file = scratch / (name.rsplit(".", 1)[1] + ".py")
    file.write_bytes(text)
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = folder_parser(__doc__.splitlines()[0])
    parser.add_argument("--ref", default="main", help="the commit to compare against (default main)")
    options = parser.parse_args()
    bench = benchmark_folder(options, OUT)
    files = [f for f in bench.files if "subagents" not in f.parts]
    with tempfile.TemporaryDirectory() as scratch:
        old_cc = at_ref(
            options.ref, "fitting/formats/claude_code.py", "windowfit.fitting.formats._ref_cc", Path(scratch)
        )
        old_est = at_ref(options.ref, "fitting/estimate.py", "windowfit.fitting._ref_estimate", Path(scratch))
        old_rows = at_ref(options.ref, "fitting/rows.py", "windowfit.fitting._ref_rows", Path(scratch))

    spent = [0.0]  # the estimator's own time, without the loading it needs first

    def load(module: ModuleType) -> Callable[[], object]:
        return lambda: [module._load_file(Input(str(f), keep_text=False), skip_invalid=False) for f in files]

    def blocks(module: ModuleType) -> Callable[[], object]:
        def run() -> object:  # file by file, as a scan has them: no folder of messages alive for the collector
            out = []
            for f in files:
                est = module.make_estimator()
                messages = [m for t in claude_code._load_file(Input(str(f)), skip_invalid=False) for m in t.messages]
                start = time.perf_counter()
                out.append([est.blocks(m.content) for m in messages])
                spent[0] += time.perf_counter() - start
            return out

        return run

    def file_rows(module: ModuleType) -> Callable[[], object]:
        return lambda: [module.file_rows(f, budget=100_000) for f in files]

    runs: dict[str, Callable[[], object]] = {
        "orjson.loads loop": lambda: bare_loop(files),
        f"reader ({options.ref})": load(old_cc),
        "reader (this checkout)": load(claude_code),
        f"estimator ({options.ref})": blocks(old_est),
        "estimator (this checkout)": blocks(estimate),
        f"file_rows ({options.ref})": file_rows(old_rows),
        "file_rows (this checkout)": file_rows(rows),
    }
    console = Console()
    console.print(
        f"{len(files)} sessions, {bench.size / 1e6:.0f} MB; "
        f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(bench.repeat):
        for name, run in runs.items():  # turn about, so that the machine's load falls on both versions alike
            gc.collect()
            spent[0] = 0.0
            start = time.perf_counter()
            kept = run()
            best[name] = min(best[name], spent[0] or time.perf_counter() - start)
            del kept
    base = best["orjson.loads loop"]
    table = Table("run", "seconds", "x bare loop")
    for name, seconds in best.items():
        table.add_row(name, f"{seconds:.2f}", f"{seconds / base:.2f}")
    console.print(table)
    for part in ("reader", "estimator", "file_rows"):
        ratio = best[f"{part} (this checkout)"] / best[f"{part} ({options.ref})"]
        console.print(f"{part}: this checkout / {options.ref} = {ratio:.3f}")
    console.print(f"best of {bench.repeat}; load average after {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
