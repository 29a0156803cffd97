"""The compiled line scanner (``fitting/_ccline.c``) of this checkout against another commit's, in one process:
``--ref``'s source is built apart (its own ``setup.py``'s flags for the extension) and loaded beside this
checkout's build, and the two are timed turn about (ABAB) in CPU seconds (``process_time``, the collector off,
best of ``--repeat`` per build) over the generated folder of Claude Code sessions and over the 201 MB session:
the scan alone (``ccfold._lines``, 1 MB chunks) and the whole one pass (``ccfold._fold_lines`` with the build's
scanner). Before timing, every line's record (or the bytes it leaves to Python) and the tokens per block kind
are checked to be the same from both builds.

``--callgrind`` counts instead the instructions each build executes inside ``Scanner.scan_lines`` (valgrind's
callgrind, one child process per build): a figure that does not move with the machine's load.

Run ``python benchmarks/bench_scan_ab.py`` (after ``python benchmarks/bench_folder.py`` and ``python
benchmarks/bench_report.py --claude-code``, which write the inputs into ``benchmarks/out/``); ``--quick``: 40
sessions and no 201 MB session, best of 1.
"""

from __future__ import annotations

import argparse
import gc
import importlib.machinery
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from common import OUT

from windowfit.fitting import ccfold, make_estimator
from windowfit.fitting.formats import Input

ROOT = Path(__file__).resolve().parent.parent
SESSION = OUT / "report_claude_200mb.jsonl"


def build_ref(ref: str, scratch: Path) -> Path:
    """``fitting/_ccline.c`` as it is at ``ref``, built in ``scratch`` with the arguments ``ref``'s setup.py
    gives its extension (setuptools' own build, as ``pip install`` runs it): the path of the module."""
    sha = subprocess.run(["git", "rev-parse", ref], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    where = scratch / sha
    built = sorted(where.glob("_ccline*.so"))
    if built:
        return built[0]
    where.mkdir(parents=True, exist_ok=True)
    for name in ("fitting/_ccline.c", "setup.py"):
        text = subprocess.run(["git", "show", f"{sha}:{name}"], cwd=ROOT, capture_output=True, check=True).stdout
        (where / Path(name).name).write_bytes(text)
    script = """
import setuptools
kept = {}
real = setuptools.setup
setuptools.setup = lambda **kw: kept.update(kw)
exec(open("setup.py").read())
(ext,) = [e for e in kept["ext_modules"] if e.name.endswith("._ccline")]
ext.name, ext.sources, ext.optional = "_ccline", ["_ccline.c"], False
real(name="ref", ext_modules=[ext], script_args=["-q", "build_ext", "--inplace"])
"""
    subprocess.run([sys.executable, "-c", script], cwd=where, check=True)
    return sorted(where.glob("_ccline*.so"))[0]


def load(path: Path, name: str) -> ModuleType:
    """The extension module at ``path`` (its init function is ``PyInit__ccline``) under the name ``name``."""
    loader = importlib.machinery.ExtensionFileLoader("_ccline", str(path))
    spec = importlib.util.spec_from_file_location("_ccline", path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[name] = module
    return module


def current() -> ModuleType:
    """This checkout's build, refused when it is older than its source (rebuild: ``pip install -e .``)."""
    from windowfit.fitting import _ccline

    source = ROOT / "fitting" / "_ccline.c"
    if Path(_ccline.__file__).stat().st_mtime < source.stat().st_mtime:
        sys.exit(f"{_ccline.__file__} is older than {source}: rebuild it first")
    return _ccline


def use(module: ModuleType) -> None:
    """Make ``ccfold`` build its scanners from ``module``."""
    ccfold._Table, ccfold._Scanner = module.Table, module.Scanner  # type: ignore[attr-defined]
    ccfold._TABLE.clear()


def scan(files: list[Path]) -> Iterator[tuple[Path, list[Any], list[Any]]]:
    rule = make_estimator().rule
    for path in files:
        scanner = ccfold._scanner(rule)
        assert scanner is not None
        with open(path, "rb") as f:
            items = list(ccfold._lines(f, scanner))
        yield path, items, scanner.kinds()


def same_records(a: ModuleType, b: ModuleType, files: list[Path]) -> tuple[int, int]:
    """Asserts that both builds give every file the same items and kinds: the lines and the deferred ones."""
    lines = deferred = 0
    for path in files:
        use(a)
        ((_, items_a, kinds_a),) = scan([path])
        use(b)
        ((_, items_b, kinds_b),) = scan([path])
        assert items_a == items_b and kinds_a == kinds_b, f"the builds differ on {path}"
        lines += len(items_a)
        deferred += sum(isinstance(i, bytes) for i in items_a)
    return lines, deferred


def parts(files: list[Path]) -> dict[str, Callable[[], object]]:
    rule = make_estimator().rule

    def scan_alone() -> None:
        for path in files:
            with open(path, "rb") as f:
                for _ in ccfold._lines(f, ccfold._scanner(rule)):
                    pass

    def one_pass() -> None:
        for path in files:
            ccfold._fold_lines(Input(str(path), keep_text=False), rule)

    return {"scan alone": scan_alone, "whole one pass": one_pass}


def ab(builds: dict[str, ModuleType], inputs: dict[str, list[Path]], repeat: int) -> None:
    best: dict[tuple[str, str, str], float] = {}
    gc.disable()
    for _ in range(repeat):
        for label, files in inputs.items():
            for part, run in parts(files).items():
                for build, module in builds.items():
                    use(module)
                    start = time.process_time()
                    run()
                    took = time.process_time() - start
                    key = (label, part, build)
                    best[key] = min(best.get(key, float("inf")), took)
    gc.enable()
    ref, this = builds
    print(f"\nCPU seconds, best of {repeat}, {ref} and {this} in turns:")
    print(f"{'input':10s} {'part':16s} {ref:>10s} {this:>10s} {'ratio':>7s}")
    for label in inputs:
        for part in ("scan alone", "whole one pass"):
            a, b = best[(label, part, ref)], best[(label, part, this)]
            print(f"{label:10s} {part:16s} {a:10.3f} {b:10.3f} {b / a:7.3f}")


CHILD = """
import gc, sys
sys.path.insert(0, {bench!r})
from bench_scan_ab import load, use, parts
from pathlib import Path
use(load(Path({so!r}), "_ccline_under_test"))
gc.disable()
parts([Path(p) for p in {files!r}])["scan alone"]()
"""


def callgrind(builds: dict[str, Path], inputs: dict[str, list[Path]], scratch: Path) -> None:
    """Instructions inside ``Scanner.scan_lines`` (what it calls included), per build and input: the scan alone,
    the collector off, as ``ab`` times it."""
    counts: dict[tuple[str, str], int] = {}
    for label, files in inputs.items():
        for build, so in builds.items():
            out = scratch / f"callgrind.{build}.{label}.out"
            code = CHILD.format(bench=str(Path(__file__).parent), so=str(so), files=[str(p) for p in files])
            subprocess.run(
                [
                    "valgrind",
                    "--tool=callgrind",
                    "--toggle-collect=Scanner_scan_lines",
                    f"--callgrind-out-file={out}",
                    sys.executable,
                    "-c",
                    code,
                ],
                check=True,
                capture_output=True,
            )
            summary = re.search(rb"^(?:summary|totals): (\d+)", out.read_bytes(), re.M)
            assert summary is not None
            counts[(label, build)] = int(summary.group(1))
            print(f"{label:10s} {build:10s} {counts[(label, build)]:>16,d} instructions  ({out})", flush=True)
    ref, this = builds
    for label in inputs:
        print(f"{label:10s} {this} / {ref}: {counts[(label, this)] / counts[(label, ref)]:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", default="main", help="the commit to compare with (default main)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="40 sessions, no 201 MB session, best of 1")
    parser.add_argument("--callgrind", action="store_true", help="count instructions instead of timing")
    parser.add_argument("--no-session", action="store_true", help="the folder only")
    options = parser.parse_args()
    folder = sorted((OUT / "folder-200-200" / "projects").rglob("*.jsonl"))
    if not folder:
        sys.exit("no folder under benchmarks/out: run python benchmarks/bench_folder.py first")
    inputs = {"folder": folder[:40] if options.quick else folder}
    if not (options.quick or options.no_session) and SESSION.exists():
        inputs["session"] = [SESSION]
    scratch = Path(tempfile.gettempdir()) / "windowfit-bench-scan"
    ref_so = build_ref(options.ref, scratch)
    this = current()
    builds = {options.ref: load(ref_so, "_ccline_ref"), "this": this}
    load_avg = " ".join(f"{x:.2f}" for x in os.getloadavg())
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}  load {load_avg}  HEAD {head.strip()}  ref {options.ref}")
    for label, files in inputs.items():
        size = sum(p.stat().st_size for p in files)
        lines, deferred = same_records(builds[options.ref], this, files)
        print(
            f"{label}: {len(files)} files, {size / 1e6:.0f} MB, {lines} lines ({deferred} left to Python): same records"
        )
    if options.callgrind:
        callgrind({options.ref: ref_so, "this": Path(this.__file__)}, inputs, scratch)
    else:
        ab(builds, inputs, 1 if options.quick else options.repeat)
    print(f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")


if __name__ == "__main__":
    main()
