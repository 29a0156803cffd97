"""How close ``report --json``'s ``tokens`` comes to the request size the
provider measured, on real sessions that record usage (Claude Code, Codex,
Anthropic logs).

Each session is cut just before each measured reply after the first (its
first ``before`` messages, and only the usage measured before them), the next
request is predicted as ``report`` would, and the prediction is divided by
what the provider measured for it. Three predictors per point:

- ``old``: the estimate of what the file records (windowfit before anchoring);
- ``estimate``: ``--size estimate``, the estimate plus the inferred preamble;
- ``seed-delta``: anchored, the part after the anchor estimated by the seed rule alone;
- ``anchored``: ``--size auto``, the default (that part scaled by the session's measured growth);
- ``fitter`` (with ``--fitter``): ``Fitter.fit(body, last_usage=...)`` replayed request by
  request, each body given the previous response's recorded usage.

The pooled rows come per format and per recorded model.

    python benchmarks/accuracy.py                      # the shared corpus
    python benchmarks/accuracy.py ~/.claude/projects   # your own sessions
    python benchmarks/accuracy.py FILE --points        # every point of one file
    python benchmarks/accuracy.py --fitter             # also replay the library's Fitter
    python benchmarks/accuracy.py --floor              # fit's floor rule vs real tokenizers
"""

from __future__ import annotations

import argparse
import itertools
import statistics
from collections.abc import Iterable, Sequence

from common import ROOT

from windowfit.fitting._json import loads
from windowfit.fitting.errors import WindowfitError
from windowfit.fitting.estimate import Estimator, count_chars, make_estimator
from windowfit.fitting.formats import Input, discover, load
from windowfit.fitting.request import Fitter
from windowfit.fitting.size import FLOOR_RULE, Backtest, backtest, cut, first_measured
from windowfit.fitting.transcript import Text, ToolResult, Transcript
from windowfit.fitting.wire.bodies import body_from_transcript

CORPUS = ROOT.parent / "shared" / "corpus"
PREDICTORS = ("old", "estimate", "seed-delta", "anchored", "fitter")


def sessions(paths: Sequence[str]) -> Iterable[Transcript]:
    """Every transcript with at least two measured requests, once each (a subagent
    file is also inside its session's file)."""
    seen: set[tuple[int, ...]] = set()
    for path in discover(list(paths)):
        try:
            loaded = load(Input(str(path)), skip_invalid=True)
        except WindowfitError:
            continue
        for t in loaded:
            key = tuple(u.total for u in t.usage)
            if len(t.usage) < 2 or key in seen:
                continue
            seen.add(key)
            yield t


def old_ratios(t: Transcript, points: Sequence[Backtest], est: Estimator) -> list[float]:
    """The estimate of what the file records: no anchor, no inferred preamble."""
    return [est.request(cut(t, p.messages).live()) / p.measured for p in points]


def seed_delta_ratios(t: Transcript, points: Sequence[Backtest], est: Estimator) -> list[float]:
    """The anchored size with the part after the anchor at the seed rule's estimate, unscaled."""
    ratios = []
    for p in points:
        s = p.predicted
        after = sum(est.message_tokens(cut(t, p.messages).live().messages)[s.anchor_messages + 1 :])
        ratios.append((s.measured_tokens + s.reply_tokens + after) / p.measured if s.anchored else p.ratio)
    return ratios


def fitter_ratios(t: Transcript) -> list[float]:
    """A harness's view: each measured request's body fitted with the previous response's usage. A reply
    the provider did not measure (Claude Code's synthetic ones) has no usage to give: skipped."""
    live, ratios = t.live(), []
    measured = [u for u in live.usage if 0 < u.before <= len(live.messages)]
    fitter = Fitter(budget=10**12)
    for previous, usage in itertools.pairwise(measured):
        if any(m.role == "assistant" for m in live.messages[previous.before + 1 : usage.before]):
            continue
        last = {
            "input_tokens": previous.input_tokens,
            "cache_creation_input_tokens": previous.cache_creation_tokens,
            "cache_read_input_tokens": previous.cache_read_tokens,
            "output_tokens": previous.output_tokens,
        }
        size = fitter.fit(body_from_transcript(cut(live, usage.before)), last_usage=last).plan.size
        ratios.append(size.tokens / usage.total if size is not None else float("nan"))
    return ratios


def model_of(t: Transcript) -> str:
    model = loads(t.extra).get("model") if t.extra else None
    return model if isinstance(model, str) else "(no model recorded)"


def summary(ratios: Sequence[float]) -> str:
    if not ratios:
        return "no points"
    under = sum(r < 0.95 for r in ratios) / len(ratios)
    median = statistics.median(ratios)
    return f"{len(ratios):4} points  median {median:.3f}  under 0.95 {under:6.1%}  min {min(ratios):.3f}"


def run(paths: Sequence[str], *, show_points: bool, with_fitter: bool) -> None:
    est = make_estimator()
    shown = [k for k in PREDICTORS if with_fitter or k != "fitter"]
    pooled: dict[str, dict[str, list[float]]] = {}
    for t in sessions(paths):
        anchored = backtest(t, est)
        estimate = backtest(t, est, mode="estimate")
        ratios = {
            "old": old_ratios(t, anchored, est),
            "estimate": [p.ratio for p in estimate],
            "seed-delta": seed_delta_ratios(t, anchored, est),
            "anchored": [p.ratio for p in anchored],
            "fitter": fitter_ratios(t) if with_fitter else [],
        }
        for key in (f"{t.format} sessions", f"{t.format} sessions of {model_of(t)}"):
            group = pooled.setdefault(key, {k: [] for k in PREDICTORS})
            for k in PREDICTORS:
                group[k] += ratios[k]
        first = first_measured(t)
        print(f"{t.label}  ({t.format}, {len(anchored)} points, first measured at line {first and first.source.line})")
        for k in shown:
            print(f"  {k:10} {summary(ratios[k])}")
        if show_points:
            print(f"  {'msgs':>5} {'line':>6} {'measured':>9} {'old':>9} {'estimate':>9} {'anchored':>9}  ratios")
            for i, (a, e) in enumerate(zip(anchored, estimate, strict=True)):
                old = round(ratios["old"][i] * a.measured)
                print(
                    f"  {a.messages:5} {a.line or '':>6} {a.measured:9,} {old:9,} {e.predicted.tokens:9,} "
                    f"{a.predicted.tokens:9,}  {ratios['old'][i]:.2f} {e.ratio:.2f} {a.ratio:.2f}"
                )
    print()
    for key, group in sorted(pooled.items()):
        print(f"all {key} ({len(group['anchored'])} points)")
        for k in shown:
            print(f"  {k:10} {summary(group[k])}")


def check_floor(paths: Sequence[str], tokenizers: Sequence[str]) -> None:
    """Characters per token of every tool result of 400+ characters under real
    tokenizers, and how often fit's floor rule exceeds the real count."""
    from windowfit.fitting.tokenizers import load_tokenizer

    floor = Estimator(FLOOR_RULE)
    texts = []
    for path in discover(list(paths)):
        try:
            loaded = load(Input(str(path)), skip_invalid=True)
        except WindowfitError:
            continue
        for t in loaded:
            for m in t.messages:
                for b in m.content:
                    if isinstance(b, ToolResult):
                        text = "".join(x.text for x in b.content if isinstance(x, Text))
                        if len(text) >= 400:
                            texts.append(text)
    for name in tokenizers:
        tok = load_tokenizer(name)
        counts = tok.count_batch(texts)
        cpt = sorted(count_chars(x).total / max(n, 1) for x, n in zip(texts, counts, strict=True))
        over = sum(floor.block(Text(x)) > n for x, n in zip(texts, counts, strict=True))
        print(
            f"{name}: {len(texts)} tool results; chars/token median {cpt[len(cpt) // 2]:.2f}, "
            f"p99 {cpt[int(0.99 * (len(cpt) - 1))]:.2f}, max {cpt[-1]:.2f}; floor above the real count: {over}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", help="files or directories (default: the shared corpus)")
    parser.add_argument("--points", action="store_true", help="print every point")
    parser.add_argument("--floor", action="store_true", help="check fit's floor rule against real tokenizers")
    parser.add_argument("--fitter", action="store_true", help="also replay Fitter.fit(body, last_usage=...)")
    parser.add_argument("--tokenizer", action="append", help="with --floor (default: cl100k_base, claude-legacy)")
    args = parser.parse_args()
    paths = args.paths or [str(CORPUS)]
    if args.floor:
        check_floor(paths, args.tokenizer or ["cl100k_base", "claude-legacy"])
    else:
        run(paths, show_points=args.points, with_fitter=args.fitter)


if __name__ == "__main__":
    main()
