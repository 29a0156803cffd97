"""``fit`` and ``check`` of a Claude Code session planned from the fold of its lines (``fitting.ccplan.fold_plan``),
against the loaded path (``claude_code.load``, ``predict_size`` and ``plan_fit``: the ground truth): wherever the
fold vouches for a file its plan is the loaded one, field for field, under budgets that force each stage and
too-long, batch options, protected fractions, cut steps, carried cuts and both size modes, and so is check's
(``summary``: planned on the fold's lists, without a skeleton, where repair changes nothing); its skeleton has the
loaded messages' roles and lines; and ``fit``'s diff and ``--json`` are the same with the fold and without it
(``WINDOWFIT_FASTFOLD=0``). On the corpus's Claude Code files and their prefixes, the test data, and generated
sessions (test_ccfold's, and sessions whose results are lists of text parts in every script)."""

from __future__ import annotations

import base64
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import DATA, require_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import texts
from test_ccfold import _example, sessions

from windowfit.cli import check_run, fit_cmd
from windowfit.cli.report_cmd import FAST_FOLD_ENV
from windowfit.fitting import make_estimator
from windowfit.fitting.ccfold import _fold_lines, _fold_tree, fold_claude_code
from windowfit.fitting.ccplan import fold_plan, fold_plans
from windowfit.fitting.errors import InputError, OptionError
from windowfit.fitting.fit import DEFAULTS, FitOptions, Plan, plan_fit, repaired
from windowfit.fitting.formats import Input, load
from windowfit.fitting.formats.claude_code import subagent_files
from windowfit.fitting.repair import NO_RESULT_TEXT
from windowfit.fitting.size import SizeMode, predict_size
from windowfit.fitting.transcript import Message, Source, Text, Transcript

SHARES = (2.0, 1.0, 0.9, 0.6, 0.3, 0.1, 0.02, 0.001)
"""Budgets as shares of the loaded size: fits, at it, stage 1, stages 2 and 3, too long."""

VARIANTS: tuple[dict[str, Any], ...] = (
    {},
    {"batch_size": 1},
    {"batch_size": 3, "protected_fraction": 0.0},
    {"protected_fraction": 1.0},
    {"min_clear_ratio": 0.0, "protected_fraction": 0.05},
    {"batch_size": 0, "batch_tokens": 700},
    {"cut_step": "quarter"},
)
"""Options besides the budget (``cut_step`` "quarter": a quarter of the budget)."""


_LOADED: dict[tuple[str, bytes | None, bool], tuple[Transcript, ...] | None] = {}
"""The last file loaded (``loaded``): a sweep plans one file many times."""


def loaded(item: Input, skip_invalid: bool = False) -> tuple[Transcript, ...] | None:
    """``load(item)``'s transcripts (with ``skip_invalid``), or None where the loader refuses the file."""
    key = (item.path, item.data, skip_invalid)
    if key not in _LOADED:
        _LOADED.clear()
        try:
            _LOADED[key] = load(item, skip_invalid=skip_invalid)
        except (InputError, ValueError):
            _LOADED[key] = None
    return _LOADED[key]


def loaded_plan(
    item: Input, options: FitOptions, size_mode: SizeMode, preamble: int | None, skip_invalid: bool = False
) -> Plan | None:
    """What ``fit`` plans of the loaded file (``fit_cmd.fit``: the live context, its predicted size)."""
    found = loaded(item, skip_invalid)
    if found is None:
        return None
    (session,) = found
    est = make_estimator()
    size = predict_size(session, est, mode=size_mode, preamble=preamble)
    o = options
    return plan_fit(
        session.live(), budget=o.budget, estimator=est, size=size, batch_size=o.batch_size,
        protected_fraction=o.protected_fraction, min_clear_ratio=o.min_clear_ratio, batch_tokens=o.batch_tokens,
        cut_step=o.cut_step, carried_cut=o.carried_cut,
    )  # fmt: skip


def refused(item: Input, skip_invalid: bool = False) -> bool:
    """Whether the fold leaves ``item`` to the loader as a plan: the one pass and the tree fold refuse it, or
    the tree fold reads several transcripts (sidechains beside the main chain, a subagents folder)."""
    if item.data is None and subagent_files(item.path):
        return True
    rule = make_estimator().rule
    if _fold_lines(item, rule) is not None:  # type: ignore[arg-type]
        return False
    tree = _fold_tree(item, rule, skip_invalid)  # type: ignore[arg-type]
    return tree is None or len(tree) > 1


def shape(messages: Sequence[Message]) -> list[tuple[str, Source, list[tuple[str, bool]], list[str]]]:
    """Each message's role, source, results (call id, whether synthetic) and calls: what repair changes."""
    return [
        (
            m.role,
            m.source,
            [(r.call_id, r.content == (Text(NO_RESULT_TEXT),)) for r in m.tool_results],
            [c.id for c in m.tool_calls],
        )
        for m in messages
    ]


def compare(
    item: Input,
    options: FitOptions,
    size_mode: SizeMode = "auto",
    preamble: int | None = None,
    skip_invalid: bool = False,
) -> Plan | None:
    """The fold's plan of ``item``, asserted equal to the loaded one (and its skeleton, as given and as repaired,
    to the loaded messages' roles and lines); None where the fold leaves the file to the loader, which it does
    only where neither the one pass (``_fold_lines``) nor the tree fold reads it as one transcript."""
    est = make_estimator()
    found = fold_plan(item, est, options, size_mode=size_mode, preamble=preamble, skip_invalid=skip_invalid)
    if found is None:
        assert refused(item, skip_invalid)
        return None
    want = loaded_plan(item, options, size_mode, preamble, skip_invalid)
    assert want is not None
    assert found.plan == want
    found_sessions = loaded(item, skip_invalid)
    assert found_sessions is not None
    (session,) = found_sessions
    assert found.skeleton is not None
    assert [(m.role, m.source.line) for m in found.skeleton.messages] == [
        (m.role, m.source.line) for m in session.messages
    ]
    assert shape(repaired(found.skeleton, want).messages) == shape(repaired(session.live(), want).messages)
    assert (found.skeleton.name, found.skeleton.source.path) == (session.name, session.source.path)
    summary = fold_plan(
        item, est, options, size_mode=size_mode, preamble=preamble, summary=True, skip_invalid=skip_invalid
    )
    assert summary is not None and fit_cmd.summary_plan(summary.plan) == fit_cmd.summary_plan(want)
    if want.outcome != "fits":
        # check's plan of a session over its budget is the whole plan: decided on the fold's lists, no skeleton
        # made, where repair leaves the session as it is (and no cut is carried); else on the skeleton.
        assert summary.plan == want
        assert (summary.skeleton is None) is (not want.repairs and options.carried_cut is None)
    return want


def options_of(budget: int, variant: dict[str, Any]) -> FitOptions:
    v = dict(variant)
    if v.get("cut_step") == "quarter":
        v["cut_step"] = max(1, budget // 4)
    return replace(DEFAULTS, budget=max(1, budget), **v)


def sweep(
    item: Input,
    modes: tuple[tuple[SizeMode, int | None], ...] = (("auto", None),),
    skip_invalid: bool = False,
    shares: tuple[float, ...] = SHARES,
    variants: tuple[dict[str, Any], ...] = VARIANTS,
) -> set[str]:
    """``compare`` over every share of the size and every variant; the outcomes met."""
    outcomes: set[str] = set()
    for size_mode, preamble in modes:
        first = compare(item, options_of(10**9, {}), size_mode, preamble, skip_invalid)
        if first is None:
            return outcomes
        for share in shares:
            budget = int(first.tokens_before * share)
            for variant in variants:
                plan = compare(item, options_of(budget, variant), size_mode, preamble, skip_invalid)
                assert plan is not None
                outcomes.add(plan.outcome)
                if plan.cut is not None and variant.get("cut_step") is None:
                    carried = replace(options_of(budget, variant), carried_cut=plan.cut)
                    assert compare(item, carried, size_mode, preamble, skip_invalid) is not None
    return outcomes


def corpus_files() -> list[Path]:
    files = sorted(require_shared("corpus", "transcripts", "claude_code").rglob("*.jsonl"))
    return files + sorted(DATA.joinpath("claude_code").rglob("*.jsonl"))


@pytest.mark.parametrize("skip_invalid", [False, True])
def test_the_fold_plans_the_corpus_as_loaded(skip_invalid: bool) -> None:
    taken = 0
    outcomes: set[str] = set()
    repairs: set[str] = set()
    for path in corpus_files():
        item = Input(str(path), keep_text=False)
        modes: tuple[tuple[SizeMode, int | None], ...] = (("auto", None), ("estimate", None), ("auto", 7_000))
        if path.stat().st_size > 300_000:  # the main sessions: fewer modes, shares and variants
            met = sweep(item, modes[:2], skip_invalid, (2.0, 0.9, 0.3, 0.02, 0.001), VARIANTS[::2])
        else:
            met = sweep(item, modes, skip_invalid)
        taken += bool(met)
        outcomes |= met
        if met:
            plan = loaded_plan(item, options_of(10**9, {}), "auto", None, skip_invalid)
            assert plan is not None
            repairs |= {r.kind for r in plan.repairs}
    # The files the fold plans: 4 of the corpus's and the tests' on 2026-12-02 from the one pass alone; with the
    # tree fold's sessions (branches, broken links, defective rounds) 13 of 21, 15 with --skip-invalid (left:
    # sidechains beside the main chain, a subagents folder, a compaction, broken lines without it).
    assert taken >= (15 if skip_invalid else 13)
    assert outcomes >= {"fits", "cleared", "turns-dropped", "rounds-dropped", "too-long"}
    assert "synthetic-result" in repairs  # unanswered calls (orphan results: the generated sessions below)


def test_every_prefix_of_a_corpus_session_plans_as_loaded() -> None:
    """The corpus's main sessions hold broken lines, branches, second roots, sidechains beside the main chain,
    images, unanswered calls, parallel calls' results hanging from their calls and comment lines; their
    prefixes (a quarter of the first 80 and 24 spread over the file, as test_ccfold cuts them) hold each, and
    cut the last line's round short (a reply's calls without their results, which repair answers)."""
    taken = cut = repaired_ones = 0
    for skip_invalid in (False, True):
        for path in sorted(require_shared("corpus", "transcripts", "claude_code").rglob("*.jsonl")):
            lines = path.read_bytes().splitlines(keepends=True)
            cuts = {*range(1, min(len(lines), 80) + 1, 4), *range(1, len(lines) + 1, max(1, len(lines) // 24))}
            for n in sorted(cuts):
                cut += 1
                item = Input(str(path), b"".join(lines[:n]), keep_text=False)
                first = compare(item, options_of(10**9, {}), skip_invalid=skip_invalid)
                if first is None:
                    continue
                taken += 1
                repaired_ones += bool(first.repairs)
                share = (0.6, 0.1, 0.001)[cut % 3]  # mid, small, tiny, in turns over the prefixes
                compare(item, options_of(int(first.tokens_before * share), {}), skip_invalid=skip_invalid)
    # 583 of 806 on 2026-12-02, 253 of them repaired (the one pass alone takes none with a defect)
    assert taken >= 540
    assert repaired_ones >= 220
    assert cut > taken


def test_a_carried_cut_the_transcript_cannot_have_is_refused_in_the_loader_s_words(tmp_path: Path) -> None:
    item = Input("s.jsonl", _example(tmp_path), keep_text=False)
    (session,) = load(item)
    bad = replace(DEFAULTS, budget=10, carried_cut=len(session.messages) + 5)
    with pytest.raises(OptionError) as folded:
        fold_plan(item, make_estimator(), bad)
    with pytest.raises(OptionError) as loaded:
        loaded_plan(item, bad, "auto", None)
    assert str(folded.value) == str(loaded.value)


def test_options_the_fold_does_not_plan_for_are_left_to_the_loader(tmp_path: Path) -> None:
    item = Input("s.jsonl", _example(tmp_path), keep_text=False)
    est = make_estimator()
    over = replace(DEFAULTS, budget=100)
    assert fold_plan(item, est, over) is not None
    assert fold_plan(item, est, replace(over, add_notice=True)) is None
    assert fold_plan(item, est, replace(over, page_tokens=500)) is None
    assert fold_plan(Input("s.jsonl", item.data, keep_text=True), est, over) is None
    assert fold_plan(item, make_estimator("safe"), over) is None


BUDGET_SHARE = st.sampled_from(SHARES)
VARIANT = st.sampled_from(VARIANTS)
MODE = st.sampled_from([("auto", None), ("estimate", None), ("auto", 3_000), ("estimate", 0)])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=sessions(), share=BUDGET_SHARE, variant=VARIANT, mode=MODE, skip_invalid=st.booleans())
def test_generated_sessions_plan_as_loaded(
    data: bytes, share: float, variant: dict[str, Any], mode: tuple[SizeMode, int | None], skip_invalid: bool
) -> None:
    """test_ccfold's sessions: branches, second roots, broken links, damaged lines, defective rounds, images."""
    item = Input("session.jsonl", data, keep_text=False)
    size_mode, preamble = mode
    first = compare(item, options_of(10**9, {}), size_mode, preamble, skip_invalid)
    if first is not None:
        compare(item, options_of(int(first.tokens_before * share), variant), size_mode, preamble, skip_invalid)


def test_the_generated_defects_are_mostly_planned() -> None:
    """The property above compares plans where the fold takes a session: make sure it takes each defect."""
    found: Counter[str] = Counter()

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
    @given(data=sessions())
    def count(data: bytes) -> None:
        item = Input("session.jsonl", data, keep_text=False)
        planned = fold_plan(item, make_estimator(), options_of(10**9, {}), skip_invalid=True)
        if planned is None:
            return
        found["planned"] += 1
        found["one pass"] += _fold_lines(item, make_estimator().rule) is not None  # type: ignore[arg-type]
        report = fold_claude_code(item, make_estimator(), skip_invalid=True)
        assert report is not None
        kinds = {d.kind for d in report.defects}
        found["branch"] += "branch" in kinds
        found["broken-link"] += "broken-link" in kinds
        found["image"] += b'"type":"image"' in data
        for r in planned.plan.repairs:
            found[r.kind] += 1

    count()
    # On 2026-12-02, in three runs: 143 to 198 of 300 planned, 100 to 145 of them by the one pass; 15 to 25 with
    # a branch left out, 7 to 21 with a broken link, 46 to 79 with images, 25 to 28 synthetic results; damaged
    # lines and orphan results came up 0 to 18 times (the seeded sessions above have each). The shapes depend
    # on hypothesis's seed and on the code around the test: the floors say each comes up, not how often.
    assert found["planned"] >= found["one pass"] + 20
    for shape in ("branch", "broken-link", "image", "synthetic-result"):
        assert found[shape] >= 3, (shape, dict(found))


@st.composite
def part_sessions(draw: st.DrawFn) -> bytes:
    """A prompt, then rounds of one reply line (text and calls) and one user line of their results, each a
    str or a list of text parts (empty ones too) in every script (what the floor counts part by part), and
    now and then a new user turn."""
    lines = []
    parent: str | None = None

    def line(kind: str, content: Any, **rest: Any) -> None:
        nonlocal parent
        uuid = f"u{len(lines)}"
        message = {"role": kind, "content": content, **rest}
        envelope = {"parentUuid": parent, "isSidechain": False, "userType": "external", "sessionId": "s"}
        lines.append(orjson.dumps({**envelope, "type": kind, "uuid": uuid, "message": message}))
        parent = uuid

    line("user", draw(texts(1, 200)))
    cached = draw(st.integers(0, 3000))
    for r in range(draw(st.integers(1, 8))):
        calls = [f"toolu_{r}_{k}" for k in range(draw(st.integers(1, 3)))]
        blocks: list[Any] = [{"type": "text", "text": draw(texts(1, 60))}]
        blocks += [{"type": "tool_use", "id": c, "name": "Read", "input": {"p": draw(texts(0, 30))}} for c in calls]
        usage = {"input_tokens": 3, "cache_creation_input_tokens": draw(st.integers(0, 2000)), "output_tokens": 7}
        usage["cache_read_input_tokens"] = cached
        cached += draw(st.integers(0, 4000))
        line("assistant", blocks, id=f"msg_{r}", usage=usage if draw(st.integers(0, 3)) else {})
        results = []
        for c in calls:
            # Repeated, so that most results are worth clearing (a stub's tokens twice over).
            if draw(st.booleans()):
                inner: Any = draw(texts(1, 40)) * draw(st.integers(1, 300))
            else:
                inner = [
                    {"type": "text", "text": draw(texts(0, 40)) * draw(st.integers(0, 150))}
                    for _ in range(draw(st.integers(1, 4)))
                ]
            results.append({"type": "tool_result", "tool_use_id": c, "content": inner})
        line("user", results)
        if draw(st.integers(0, 2)) == 0:
            line("user", draw(texts(1, 100)))
    return b"\n".join(lines) + b"\n"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=part_sessions(), share=BUDGET_SHARE, variant=VARIANT, mode=MODE)
def test_results_of_text_parts_plan_as_loaded(
    data: bytes, share: float, variant: dict[str, Any], mode: tuple[SizeMode, int | None]
) -> None:
    item = Input("session.jsonl", data, keep_text=False)
    size_mode, preamble = mode
    first = compare(item, options_of(10**9, {}), size_mode, preamble)
    assert first is not None  # a shape the fold vouches for
    compare(item, options_of(int(first.tokens_before * share), variant), size_mode, preamble)


def _rounds_session(turn_every: int) -> bytes:
    """A prompt and 8 rounds of two calls whose results are 2,000 to 9,000 characters (Latin, Cyrillic, CJK), a
    new user turn after every ``turn_every`` rounds (0: one long turn, a subagent's shape)."""
    lines = []
    parent: str | None = None

    def line(kind: str, content: Any, **rest: Any) -> None:
        nonlocal parent
        uuid = f"u{len(lines)}"
        envelope = {"parentUuid": parent, "isSidechain": False, "userType": "external", "sessionId": "s"}
        message = {"role": kind, "content": content, **rest}
        lines.append(orjson.dumps({**envelope, "type": kind, "uuid": uuid, "message": message}))
        parent = uuid

    line("user", "Read the files.")
    for r in range(8):
        calls = [f"toolu_{r}_{k}" for k in range(2)]
        blocks: list[Any] = [{"type": "text", "text": f"Round {r}."}]
        blocks += [{"type": "tool_use", "id": c, "name": "Read", "input": {"p": f"f{r}"}} for c in calls]
        line("assistant", blocks, id=f"msg_{r}")
        texts_of = (
            "a" * (2000 + 900 * r),
            [{"type": "text", "text": "Жук " * (500 + 200 * r)}, {"type": "text", "text": "字" * 700}],
        )
        line(
            "user",
            [{"type": "tool_result", "tool_use_id": c, "content": t} for c, t in zip(calls, texts_of, strict=True)],
        )
        if turn_every and r % turn_every == turn_every - 1:
            line("user", f"Now turn {r}.")
    return b"\n".join(lines) + b"\n"


def test_the_plans_compared_reach_every_outcome() -> None:
    """The properties above compare plans where the fold takes a session: these fixed sessions reach each
    outcome, under both size modes."""
    outcomes: set[str] = set()
    for turn_every in (0, 2):
        item = Input("session.jsonl", _rounds_session(turn_every), keep_text=False)
        first = compare(item, options_of(10**9, {}), "estimate")
        assert first is not None
        for share in (*SHARES, 0.15):  # 0.15: stage 3 in the long turn
            plan = compare(item, options_of(int(first.tokens_before * share), {}), "estimate")
            assert plan is not None
            outcomes.add(plan.outcome)
    assert outcomes == {"fits", "cleared", "turns-dropped", "rounds-dropped", "too-long"}


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("--json",),
        ("--batch-size", "1", "--protected-fraction", "0.1"),
        ("--json", "--cut-step", "2000", "--size", "estimate"),
        ("--window", "{window}", "--preamble", "500"),
        ("--batch-tokens", "3000", "--batch-size", "0", "--json"),
    ],
)
def test_fit_prints_the_same_with_the_fold_off(
    run_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(_example(tmp_path))
    (session,) = load(Input(str(path), keep_text=False))
    size = predict_size(session, make_estimator()).tokens
    planned = fit_cmd._fold_planned
    taken: list[bool] = []

    def counted(*a: Any, **k: Any) -> Any:
        found = planned(*a, **k)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(fit_cmd, "_fold_planned", counted)
    for share in SHARES:
        budget = max(1, int(size * share))
        argv = ["fit", str(path), "--budget", str(budget), *(a.format(window=2 * size + 1) for a in args)]
        monkeypatch.delenv(FAST_FOLD_ENV, raising=False)
        fast = run_cli(*argv)
        monkeypatch.setenv(FAST_FOLD_ENV, "0")
        general = run_cli(*argv)
        assert (fast.exit_code, fast.stdout, fast.stderr) == (general.exit_code, general.stdout, general.stderr)
        assert fast.exit_code in (0, 1), fast.stderr
    assert sum(taken) == len(SHARES)  # with the fold on, every time; with it off, never asked


@pytest.mark.parametrize("skip_invalid", [False, True])
def test_fit_and_check_of_the_corpus_print_the_same_with_the_fold_off(
    run_cli: Any, monkeypatch: pytest.MonkeyPatch, skip_invalid: bool
) -> None:
    """``fit`` (the diff, ``--json``) and ``check`` (text, JSON, GitHub annotations) of every corpus file, the
    tree fold's sessions with their repairs among them, with the fold on and off."""
    planned, checked = fit_cmd._fold_planned, fit_cmd._folded_check
    taken: Counter[str] = Counter()

    def counted_fit(*a: Any, **k: Any) -> Any:
        found = planned(*a, **k)
        taken["fit"] += found is not None
        return found

    def counted_check(*a: Any, **k: Any) -> Any:
        found = checked(*a, **k)
        taken["check"] += found is not None
        return found

    monkeypatch.setattr(fit_cmd, "_fold_planned", counted_fit)
    monkeypatch.setattr(check_run, "_folded_check", counted_check)  # where check_stream reads it
    skip = ("--skip-invalid",) if skip_invalid else ()
    for path in corpus_files():
        found = loaded(Input(str(path), keep_text=False), skip_invalid)
        size = 100_000 if not found else predict_size(found[0], make_estimator()).tokens
        runs = [("fit", "--budget", str(max(1, int(size * share))), *extra) for share, extra in
                ((0.6, ()), (0.1, ("--json",)), (0.01, ()))]  # fmt: skip
        runs += [("check", "--budget", str(max(1, int(size * share))), *extra) for share, extra in
                 ((2.0, ()), (0.3, ("--format", "json")), (0.3, ("--format", "github")), (0.01, ()))]  # fmt: skip
        for command, *rest in runs:
            argv = [command, str(path), *rest, *skip]
            monkeypatch.delenv(FAST_FOLD_ENV, raising=False)
            fast = run_cli(*argv)
            monkeypatch.setenv(FAST_FOLD_ENV, "0")
            general = run_cli(*argv)
            assert (fast.exit_code, fast.stdout, fast.stderr) == (general.exit_code, general.stdout, general.stderr)
    # The files fold_plan takes, 3 fits and 4 checks each: 13 of 21 (15 with --skip-invalid) on 2026-12-02
    assert taken["fit"] >= 3 * (15 if skip_invalid else 13)
    assert taken["check"] >= 4 * (15 if skip_invalid else 13)


# --------------------------------------------------------------------------
# Sessions with each defect the tree fold reads (and repair fixes)


DEFECTS = (
    "clean",
    "unanswered",
    "unanswered-before-a-prompt",
    "unanswered-at-the-end",
    "orphan",
    "orphan-alone",
    "broken-link",
    "branch",
    "second-root",
    "image",
    "cut-line",
    "duplicate-history",
)


def _defective(defect: str, seed: int = 0) -> bytes:
    """A prompt and 6 rounds of a reply (text and two calls, split over one line per block) and the results
    (Latin, Cyrillic and CJK, some lists of parts), a new prompt after every second round, with one ``defect``:
    a call without its result (followed by its round's other result, by a new prompt, or ending the file), a
    result of no call (beside others, or alone in its message), a parent not in the file, a branch left out,
    a second root, an image in a result, a line cut short, or a result written twice."""
    rng = random.Random(seed)
    lines: list[bytes] = []
    parent: str | None = None
    words = ("alpha beta ", "Жук жук ", "字字", "x = 1; ")

    def line(kind: str, content: Any, *, hang: str | None = None, **rest: Any) -> str:
        nonlocal parent
        uuid = f"u{len(lines)}"
        envelope = {"parentUuid": parent if hang is None else hang, "isSidechain": False, "sessionId": "s"}
        message = {"role": kind, "content": content, **rest}
        lines.append(orjson.dumps({**envelope, "type": kind, "uuid": uuid, "message": message}))
        parent = uuid
        return uuid

    def text(n: int) -> str:
        return rng.choice(words) * rng.randint(n // 2, n)

    line("user", "Read the files.")
    cached = 1000
    for r in range(6):
        calls = [f"toolu_{r}_{k}" for k in range(2)]
        usage = {"input_tokens": 3, "cache_creation_input_tokens": 500, "cache_read_input_tokens": cached}
        cached += 2000
        line("assistant", [{"type": "text", "text": f"Round {r}."}], id=f"msg_{r}", usage=usage)
        for c in calls:
            line("assistant", [{"type": "tool_use", "id": c, "name": "Read", "input": {"p": c}}], id=f"msg_{r}")
        if r == 2 and defect == "branch":
            line("assistant", [{"type": "text", "text": "a reply left on a branch"}], hang="u1", id="msg_b")
            parent = lines and orjson.loads(lines[-2])["uuid"]
        results: list[Any] = []
        for k, c in enumerate(calls):
            inner: Any = text(3000)
            if k == 1:
                inner = [{"type": "text", "text": text(1500)}, {"type": "text", "text": text(900)}]
            if r == 3 and defect == "image" and k == 1:
                inner = [{"type": "text", "text": "a screenshot"}, _image_block()]
            results.append({"type": "tool_result", "tool_use_id": c, "content": inner})
        if r == 2 and defect.startswith("unanswered"):
            results = results[:1] if defect == "unanswered" else []
        if r == 3 and defect == "orphan":
            results.append({"type": "tool_result", "tool_use_id": "toolu_gone", "content": text(800)})
        if r == 5 and defect == "unanswered-at-the-end":
            break
        if results:
            uuid = line("user", results)
            if r == 1 and defect == "duplicate-history":
                lines.append(lines[-1])
            if r == 3 and defect == "cut-line":
                lines[-1] = lines[-1][: len(lines[-1]) // 2]
                parent = uuid
        if r % 2 == 1 or (r == 2 and defect == "unanswered-before-a-prompt"):
            line("user", f"Now turn {r}. " + text(200))
            if r == 1 and defect == "orphan-alone":
                line("user", [{"type": "tool_result", "tool_use_id": "toolu_none", "content": text(600)}])
        if r == 4 and defect == "broken-link":
            parent = "gone"
        if r == 4 and defect == "second-root":
            parent = None
    return b"\n".join(lines) + b"\n"


def _image_block() -> dict[str, Any]:
    header = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + (800).to_bytes(4, "big") + (600).to_bytes(4, "big")
    data = base64.b64encode(header + b"\x08\x02\x00\x00\x00").decode()
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


WANT_REPAIRS = {
    "unanswered": {"synthetic-result"},
    "unanswered-before-a-prompt": {"synthetic-result"},
    "unanswered-at-the-end": {"synthetic-result"},
    "orphan": {"dropped-result"},
    "orphan-alone": {"dropped-result"},
    "cut-line": {"synthetic-result"},  # its round's results are on the line cut short
}


@pytest.mark.parametrize("defect", DEFECTS)
@pytest.mark.parametrize("seed", [0, 1])
def test_sessions_with_each_defect_plan_as_loaded(defect: str, seed: int) -> None:
    item = Input("session.jsonl", _defective(defect, seed), keep_text=False)
    skip_invalid = defect == "cut-line"
    outcomes: set[str] = set()
    for mode in (("auto", None), ("estimate", None)):
        first = compare(item, options_of(10**9, {}), *mode, skip_invalid)
        if defect == "duplicate-history":  # the loader keeps the first copy: left to it
            assert first is None
            return
        assert first is not None, defect
        assert {r.kind for r in first.repairs} == WANT_REPAIRS.get(defect, set())
        for share in (*SHARES, 0.15, 0.05):
            for variant in VARIANTS:
                plan = compare(item, options_of(int(first.tokens_before * share), variant), *mode, skip_invalid)
                assert plan is not None
                outcomes.add(plan.outcome)
    assert outcomes >= {"fits", "cleared", "too-long"}
    # Stage 2 or 3 too, as the last turn holds (but after a second root, where the loader's chain starts: two
    # rounds of large results, whose stubs fit or are too long).
    assert defect == "second-root" or outcomes & {"turns-dropped", "rounds-dropped"}


@pytest.mark.parametrize("defect", DEFECTS)
def test_fit_and_check_of_each_defect_print_the_same_with_the_fold_off(
    run_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, defect: str
) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(_defective(defect))
    skip = ("--skip-invalid",) if defect == "cut-line" else ()
    found = loaded(Input(str(path), keep_text=False), bool(skip))
    assert found is not None
    size = predict_size(found[0], make_estimator()).tokens
    for share in (2.0, 0.6, 0.2, 0.01):
        budget = str(max(1, int(size * share)))
        for argv in (
            ["fit", str(path), "--budget", budget],
            ["fit", str(path), "--budget", budget, "--json"],
            ["check", str(path), "--budget", budget],
            ["check", str(path), "--budget", budget, "--format", "github"],
        ):
            monkeypatch.delenv(FAST_FOLD_ENV, raising=False)
            fast = run_cli(*argv, *skip)
            monkeypatch.setenv(FAST_FOLD_ENV, "0")
            general = run_cli(*argv, *skip)
            assert (fast.exit_code, fast.stdout, fast.stderr) == (general.exit_code, general.stdout, general.stderr)
            assert fast.exit_code in (0, 1), fast.stderr


def test_check_s_summary_is_full_exactly_where_the_loaded_plan_repairs() -> None:
    """check's summary (``fold_plans`` with ``summary``) of a session that fits its budget has no skeleton where
    the loaded plan makes no repairs, and is the full plan where it does (repair changes the request): the tree
    fold's stand-ins, checked by ``ccplan._repaired``, say so as the loaded transcript's repair does. On each
    generated defect and the corpus's files of one transcript; without ``summary`` the folds keep no stand-ins."""
    items = [(Input("session.jsonl", _defective(d), keep_text=False), d == "cut-line") for d in DEFECTS]
    items += [(Input(str(p), keep_text=False), True) for p in corpus_files()]
    options = options_of(10**9, {})
    met: set[bool] = set()
    for item, skip_invalid in items:
        found = fold_plans(item, make_estimator(), options, summary=True, skip_invalid=skip_invalid)
        if found is None or len(found) != 1:
            continue  # left to the loader, or several transcripts (compared in test_ccplan.py)
        want = loaded_plan(item, options, "auto", None, skip_invalid)
        assert want is not None and want.outcome == "fits"
        (plan,) = found
        assert (plan.skeleton is not None) is bool(want.repairs), item.path
        assert (plan.plan.tokens_before, plan.plan.outcome) == (want.tokens_before, want.outcome)
        met.add(bool(want.repairs))
        full = fold_plans(item, make_estimator(), options, skip_invalid=skip_invalid)
        assert full is not None and full[0].plan == want
    assert met == {False, True}
    tree = _fold_tree(
        Input("session.jsonl", _defective("orphan-alone"), keep_text=False),
        make_estimator().rule,
        False,
        plan=True,
        stand_ins=False,
    )
    assert tree is not None and all(f.skeleton is None for f in tree)
