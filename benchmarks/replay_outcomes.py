"""What each default policy does on bench_replay_scaling.py's sessions at both sizes: how many results it
clears and its share of each outcome. A policy that only starts clearing at the big size (a trigger the
small session never reaches) does more work per request there: growth above 8 without a worse algorithm.

Run ``python benchmarks/replay_outcomes.py`` after ``bench_replay_scaling.py --quick`` generated the files.
"""

from __future__ import annotations

from pathlib import Path

from windowfit import fitting
from windowfit.fitting.replay import replay, standard_policies

OUT = Path(__file__).parent / "out"
CASES = (("tiny", (2_500, 20_000), 2_000), ("tiny_subagent", (2_500, 20_000), 2_000), ("sized", (625, 5_000), 400_000))


def main() -> None:
    for name, sizes, budget in CASES:
        for size in sizes:
            path = OUT / f"scaling_{name}_{size}.jsonl"
            if not path.exists():
                print(f"{path} is missing: run bench_replay_scaling.py --quick first")
                continue
            (transcript,) = fitting.load_path(path)
            runs = replay(transcript, standard_policies(), budget=budget, estimator=fitting.make_estimator())
            print(f"{path.name}, budget {budget:,}: {runs[0].steps[-1].raw_tokens:,} tokens at the last request")
            for run in runs:
                shares = ", ".join(f"{k} {v:.0%}" for k, v in run.outcome_shares())
                print(f"  {run.policy:30} cleared {run.retrievable_results:6,}  {shares}")


if __name__ == "__main__":
    main()
