"""``ccplan.fold_plans`` of an earlier commit against this checkout's, in turns, in one process: CPU seconds, best of
N, each also as a ratio to a bare ``orjson.loads`` loop over the file's lines (``bench_tree_plan.bare_loop``). The
plans are checked equal (their ``repr``) first.

The earlier commit's ``fitting`` package is imported as ``windowfit_base.fitting`` from a copy (its modules import
each other relatively; the compiled scanners are this checkout's, so the C code must be the same)::

    git archive COMMIT | tar -x -C /tmp/base && cp fitting/*.so /tmp/base/fitting/
    mkdir -p /tmp/basepkg/windowfit_base && cp -rL /tmp/base/fitting /tmp/basepkg/windowfit_base/
    touch /tmp/basepkg/windowfit_base/__init__.py
    python benchmarks/ab_fold_plans.py /tmp/basepkg FILE BUDGET [REPEAT]"""

from __future__ import annotations

import gc
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from bench_tree_plan import bare_loop

from windowfit.fitting import make_estimator
from windowfit.fitting.ccplan import fold_plans
from windowfit.fitting.fit import DEFAULTS
from windowfit.fitting.formats import Input


def main() -> int:
    base_dir, path, budget = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    repeat = int(sys.argv[4]) if len(sys.argv) > 4 else 7
    sys.path.insert(0, base_dir)
    from windowfit_base.fitting import make_estimator as base_estimator  # type: ignore[import-not-found]
    from windowfit_base.fitting.ccplan import fold_plans as base_fold_plans  # type: ignore[import-not-found]
    from windowfit_base.fitting.fit import DEFAULTS as BASE_DEFAULTS  # type: ignore[import-not-found]
    from windowfit_base.fitting.formats import Input as BaseInput  # type: ignore[import-not-found]

    after_options, before_options = replace(DEFAULTS, budget=budget), replace(BASE_DEFAULTS, budget=budget)

    def after() -> object:
        found = fold_plans(Input(str(path), keep_text=False), make_estimator(), after_options, skip_invalid=True)
        assert found is not None
        return [f.plan for f in found]

    def before() -> object:
        item = BaseInput(str(path), keep_text=False)
        return [f.plan for f in base_fold_plans(item, base_estimator(), before_options, skip_invalid=True)]

    assert repr(after()) == repr(before()), "the plans differ"
    works = {"baseline": lambda: bare_loop(path), "before": before, "after": after}
    best = {name: float("inf") for name in works}
    for _ in range(repeat):
        for name, work in works.items():
            gc.collect()
            start = time.process_time()
            work()
            best[name] = min(best[name], time.process_time() - start)
    print(f"{path.name}: budget {budget:,}, best of {repeat}, in turns, load average {os.getloadavg()[0]:.2f}")
    for name in works:
        print(f"  {name:<9} {best[name] * 1e3:8.1f} ms  {best[name] / best['baseline']:.2f}x the loop")
    print(f"  after / before  {best['after'] / best['before']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
