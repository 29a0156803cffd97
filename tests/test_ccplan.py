"""``check``'s plan of a Claude Code session that fits, from the fold of its lines (``fitting.ccplan``),
against the loaded check (``check_work``: the loader, ``predict_size`` and ``plan_fit``, the ground truth):
wherever the fast path gives a check it is the loaded one, it gives one for every session the fold vouches for
that fits, and check's output (text, github, --format json and jsonl) is the same with it and without it. On
the corpus's Claude Code files and their prefixes, and generated sessions, with budgets on both sides of their
size, both size modes and a given preamble. Over its budget, check's plan is decided on the fold's lists
(``ccplan._FoldShape``): each read the plan makes of them is the same read of the skeleton's messages."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import DATA, require_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_ccfold import _example, sessions

from windowfit.cli import check_run, fit_cmd
from windowfit.cli.report_cmd import FAST_FOLD_ENV
from windowfit.cli.shared import SizeChoice
from windowfit.fitting import ccplan, make_estimator
from windowfit.fitting.ccfold import fold_claude_code, fold_claude_code_all
from windowfit.fitting.ccplan import TAIL_BYTES, fits_plan, last_measured
from windowfit.fitting.errors import InputError
from windowfit.fitting.estimate import Estimator, ScriptRule
from windowfit.fitting.fit import DEFAULTS, OUTCOMES, _Messages, stub_text
from windowfit.fitting.formats import Input, load
from windowfit.fitting.formats.claude_code import subagent_files
from windowfit.fitting.repair import DEFECT_OF, repair
from windowfit.fitting.report import Report
from windowfit.fitting.size import FLOOR_RULE


def settings_of(
    budget: int, size: SizeChoice, preamble: int | None, window: int | None = None, overhead: float = 1.0
) -> dict[str, Any]:
    """``check``'s settings for ``check_work`` and ``_folded_check`` (fail on too-long)."""
    return {
        "estimator": "seed",
        "overhead": overhead,
        "window": window,
        "threshold": OUTCOMES.index("too-long"),
        "fit_options": replace(DEFAULTS, budget=budget),
        "size": size,
        "preamble": preamble,
    }


def loaded_check(item: Input, s: dict[str, Any]) -> list[fit_cmd.Checked] | None:
    """The check of the loaded file, or None when the loader refuses it."""
    try:
        transcripts = load(item)
    except InputError:
        return None
    return fit_cmd.check_work(transcripts, budget=s["fit_options"].budget, **s)


def fast_check(item: Input, s: dict[str, Any]) -> list[fit_cmd.Checked] | None:
    return fit_cmd._folded_check(item, **s)


def compare(
    item: Input, budget: int, size: SizeChoice, preamble: int | None, window: int | None = None, overhead: float = 1.0
) -> bool:
    """Whether the fast path took ``item`` at ``budget``; asserts it gave the loaded check, and that it took
    every session the fold vouches for, fitting or not (``ccplan.fold_plan`` plans one over its budget too)."""
    s = settings_of(budget, size, preamble, window, overhead)
    fast = fast_check(item, s)
    slow = loaded_check(item, s)
    if fast is not None:
        assert fast == slow
        return True
    est = make_estimator(overhead=overhead)
    # ``fold_plans`` takes every file the fold takes (the one pass's, and the tree fold's, defects, sidechains
    # and all; not a subagents folder beside it), but one whose repairs it cannot floor exactly (blocks of no
    # overhead).
    reports = folded_all(item, est)
    unfloored = not est.rule.block_overhead_tokens and any(d.kind in REPAIRED for r in reports or [] for d in r.defects)
    several = window is None and reports is not None and len(reports) > 1  # loaded for each transcript's model
    assert reports is None or unfloored or several
    return False


def folded_all(item: Input, est: Estimator | None = None) -> list[Report] | None:
    """The reports of every transcript the fold takes from ``item``, or None (a subagents folder too)."""
    if item.data is None and subagent_files(item.path):
        return None
    return fold_claude_code_all(item, est or make_estimator())


REPAIRED = frozenset(DEFECT_OF.values())


def loaded_size(item: Input, size: SizeChoice, preamble: int | None, overhead: float = 1.0) -> int:
    """The loaded check's ``tokens_before``: a budget of exactly this fits, one less does not."""
    slow = loaded_check(item, settings_of(10**9, size, preamble, overhead=overhead))
    assert slow is not None
    return slow[0].plan.tokens_before


MODES = [(SizeChoice.auto, None), (SizeChoice.estimate, None), (SizeChoice.auto, 7_000), (SizeChoice.estimate, 0)]


def test_the_fast_check_is_the_loaded_one_on_the_corpus() -> None:
    files = sorted(require_shared("corpus", "transcripts", "claude_code").rglob("*.jsonl"))
    files += sorted(DATA.joinpath("claude_code").rglob("*.jsonl"))
    taken = 0
    for path in files:
        item = Input(str(path), keep_text=False)
        if folded_all(item) is None:
            assert fast_check(item, settings_of(10**9, SizeChoice.auto, None)) is None
            continue
        for size, preamble in MODES:
            tokens = loaded_size(item, size, preamble)
            for budget in (tokens - 1, tokens, tokens + 1, 10**9):
                taken += compare(item, max(1, budget), size, preamble, window=tokens)
            # over the budget: planned from the fold too (with a window: without one, a file of sidechains beside its
            # chain is loaded for each transcript's model, windows.last_reply_model naming only one)
            assert compare(item, max(1, tokens - 1), size, preamble, window=10**9)
    # 4 budgets x 4 modes on each file the fold takes as one transcript: 208 on 2026-12-02 once fold_plan read the
    # tree fold's sessions (branches, broken links, defective rounds); the floor was 16 before
    assert taken >= 240  # 256 once fold_plans checked each transcript of a file of sidechains too


def test_every_few_prefixes_of_a_corpus_session_check_as_loaded() -> None:
    """The corpus's main sessions and their prefixes: branches, broken links, defective rounds (see test_ccfold)."""
    taken = 0
    for path in sorted(require_shared("corpus", "transcripts", "claude_code").rglob("*.jsonl")):
        lines = path.read_bytes().splitlines(keepends=True)
        for n in range(1, len(lines) + 1, max(1, len(lines) // 12)):
            item = Input(str(path), b"".join(lines[:n]), keep_text=False)
            if folded_all(item) is None:
                continue
            tokens = loaded_size(item, SizeChoice.auto, None)
            for budget in (max(1, tokens - 1), tokens):
                taken += compare(item, budget, SizeChoice.auto, None, window=10**9)
    # 38 on the corpus of 2026-12-02; 192 once fold_plan read the tree fold's sessions, 236 with sidechains
    assert taken >= 220


BUDGET_SIDE = st.sampled_from([-1, 0, 1, 5_000])
"""The budget against the loaded size: just under (never taken), at, just over, well over."""


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=sessions(),
    side=BUDGET_SIDE,
    mode=st.sampled_from(MODES),
    window=st.sampled_from([None, 10**9]),
    overhead=st.sampled_from([1.0, 0.0, 2.5]),
)
def test_generated_sessions_check_as_loaded(
    data: bytes, side: int, mode: tuple[SizeChoice, int | None], window: int | None, overhead: float
) -> None:
    item = Input("session.jsonl", data, keep_text=False)
    size, preamble = mode
    slow = loaded_check(item, settings_of(10**9, size, preamble, overhead=overhead))
    if slow is None or not slow:
        assert fast_check(item, settings_of(10**9, size, preamble, overhead=overhead)) is None
        return
    budget = max(1, slow[0].plan.tokens_before + side)
    compare(item, budget, size, preamble, window, overhead)


def test_the_fast_path_takes_most_generated_sessions_that_fit() -> None:
    """The property above compares checks where the fast path takes a session: make sure it often does."""
    taken = []

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
    @given(data=sessions())
    def count(data: bytes) -> None:
        item = Input("session.jsonl", data, keep_text=False)
        slow = loaded_check(item, settings_of(10**9, SizeChoice.auto, None))
        if slow:
            taken.append(compare(item, max(1, slow[0].plan.tokens_before), SizeChoice.auto, None, window=10**9))

    count()
    assert sum(taken) >= len(taken) // 5  # the fold vouches for about a third of them (test_ccfold)


def test_options_that_change_the_request_are_left_to_the_loader(tmp_path: Path) -> None:
    item = Input("s.jsonl", _example(tmp_path), keep_text=False)
    est = make_estimator()
    fits = replace(DEFAULTS, budget=10**9)
    assert fits_plan(item, est, fits) is not None
    assert fits_plan(item, est, replace(fits, add_notice=True)) is None
    assert fits_plan(item, est, replace(fits, carried_cut=1)) is None
    assert fits_plan(Input("s.jsonl", item.data, keep_text=True), est, fits) is None
    assert fits_plan(item, make_estimator("safe"), fits) is None


def _assistant(total: int) -> bytes:
    usage = {"input_tokens": 1, "cache_creation_input_tokens": total - 1, "cache_read_input_tokens": 0}
    return orjson.dumps({"type": "assistant", "message": {"role": "assistant", "content": "x", "usage": usage}})


def test_last_measured_reads_the_last_assistant_usage_of_the_tail(tmp_path: Path) -> None:
    user = orjson.dumps({"type": "user", "message": {"role": "user", "content": "y", "usage": {}}})
    data = b"\n".join([_assistant(10), _assistant(20), user, b"{broken", b""])
    assert last_measured(Input("s.jsonl", data)) == 20
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    assert last_measured(Input(str(path))) == 20
    assert last_measured(Input("s.jsonl", user)) is None
    # A line cut in two at the tail's start is not read: the usage before it is out of the tail.
    pad = orjson.dumps({"type": "assistant", "pad": "z" * TAIL_BYTES, "message": {"usage": {"input_tokens": 9}}})
    big = tmp_path / "big.jsonl"
    big.write_bytes(_assistant(30) + b"\n" + pad + b"\n" + user + b"\n")
    assert last_measured(Input(str(big))) is None
    assert last_measured(Input(str(big), big.read_bytes())) is None
    assert last_measured(Input(str(tmp_path / "absent.jsonl"))) is None


def _folder(tmp_path: Path) -> tuple[Path, list[int]]:
    """A folder of sessions of the benchmark's shape (some of 3 rounds, some of 12) and their loaded sizes."""
    import random

    _example(tmp_path)  # puts benchmarks/ on sys.path
    from sessions import write_session

    folder = tmp_path / "projects" / "-home-dev"
    folder.mkdir(parents=True)
    for k, rounds in enumerate([3, 12, 3, 12, 5]):
        write_session(folder / f"{k:02}.jsonl", random.Random(k), rounds)
    sizes = []
    for path in sorted(folder.glob("*.jsonl")):
        item = Input(str(path), keep_text=False)
        assert fold_claude_code(item, make_estimator()) is not None
        sizes.append(loaded_size(item, SizeChoice.auto, None))
    return folder, sorted(sizes)


@pytest.mark.parametrize(
    "args",
    [
        ("--format", "text"),
        ("--format", "json"),
        ("--format", "github"),
        ("--format", "jsonl"),
        ("--format", "json", "--size", "estimate"),
        ("--format", "text", "--preamble", "3000", "--window", "{window}"),
        ("--format", "json", "--jobs", "2"),
        ("--format", "text", "--quiet", "--fail-on", "cleared"),
    ],
)
def test_check_prints_the_same_with_the_fast_path_off(
    run_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    folder, sizes = _folder(tmp_path)
    middle = sizes[len(sizes) // 2]
    folded = fit_cmd._folded_check
    taken: list[bool] = []

    def counted(item: Input, **s: Any) -> list[fit_cmd.Checked] | None:
        found = folded(item, **s)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(check_run, "_folded_check", counted)  # where check_stream reads it
    for budget in (middle, middle - 1, sizes[-1] + 1):
        argv = ["check", str(folder), "--budget", str(budget), *(a.format(window=sizes[-1] + 1) for a in args)]
        monkeypatch.delenv(FAST_FOLD_ENV, raising=False)
        fast = run_cli(*argv)
        monkeypatch.setenv(FAST_FOLD_ENV, "0")
        general = run_cli(*argv)
        assert (fast.exit_code, fast.stdout, fast.stderr) == (general.exit_code, general.stdout, general.stderr)
        assert fast.exit_code in (0, 1), fast.stderr
        if "github" not in args and "--quiet" not in args:
            assert "fits" in general.stdout
    if "jsonl" not in args and "--jobs" not in args:  # rows are made by fitting.rows; workers count elsewhere
        assert sum(taken) >= 5  # (at least) every session at a budget over the largest one


def test_one_switch_turns_the_fold_off_for_report_and_check() -> None:
    assert fit_cmd.FAST_FOLD_ENV == FAST_FOLD_ENV


# --------------------------------------------------------------------------
# check's plan over the budget: what fit._decide reads of the fold's lists, against the skeleton's messages


def shape_reads_as_skeleton(item: Input, skip_invalid: bool = False) -> int:
    """Each read ``fit._decide`` makes of the ``_FoldShape`` of each transcript of ``item`` that repair leaves as
    it is, asserted equal to the same read of the ``_Messages`` of its skeleton as ``ccplan._plan_of`` plans it
    (under ``_Counted``, with the fold's floors): the results and their stubs, the sizer (estimated and anchored),
    the turns, the head, the units from each turn and a few other places, and stage 1's arithmetic with every
    result cleared a few at a time. How many transcripts it compared (0 where the fold leaves the file)."""
    est = make_estimator()
    rule = est.rule
    assert type(rule) is ScriptRule
    found = ccplan._folds(item, est, DEFAULTS, "auto", None, skip_invalid, True)
    compared = 0
    for folded in found or ():
        counted = ccplan._Counted(rule)
        skeleton = ccplan._skeleton(item.path, "", folded, counted)
        changed = repair(skeleton)[0] is not skeleton
        # check asks the stand-ins (_repaired), fit the skeleton, unless the one pass vouches for its fold
        assert ccplan._repaired(folded) is changed
        assert not (folded.one_pass and changed)
        if changed:
            continue  # planned on the skeleton, as repaired
        fold = ccplan._FoldShape.of(folded, rule)
        messages = _Messages(skeleton.messages, skeleton, ccplan._floors_for(skeleton, folded))
        n = len(messages)
        assert len(fold) == n
        refs, stubs = fold.result_refs(est, None)
        assert (refs, stubs) == messages.result_refs(counted, None)
        tokens = counted.message_tokens(skeleton.messages)
        for floor in (None, Estimator(FLOOR_RULE)):
            got: dict[tuple[int, int], int] = {}
            want: dict[tuple[int, int], int] = {}
            a, b = fold.sizer(tokens, floor, got), messages.sizer(tokens, floor, want)
            a.seal()
            b.seal()
            assert (a.held, a.measured_upto, a.measured_from, got) == (b.held, b.measured_upto, b.measured_from, want)
        bounds = fold.turn_bounds()
        assert bounds == messages.turn_bounds()
        if n:
            head = fold.head()
            assert head == messages.head()
            for start in {*bounds[:-1][:12], *bounds[-4:-1], head[1], n // 3, n - 1}:
                assert fold.units(start, n) == messages.units(start, n)
        cleared, stubbed = fold.stubbing(est), messages.stubbing(counted)
        for k in range(0, len(refs), 3):
            for ref, stub in zip(refs[k : k + 3], stubs[k : k + 3], strict=True):
                cleared.clear(ref, stub)
                stubbed.clear(ref, stub)
            for mi in {ref.message_index for ref in refs[k : k + 3]}:
                assert cleared.tokens(mi) == stubbed.tokens(mi)
        assert cleared.touched == stubbed.touched
        compared += 1
    return compared


def test_the_fold_s_shape_reads_as_its_skeleton_on_the_corpus() -> None:
    compared = 0
    for path in sorted(require_shared("corpus", "transcripts", "claude_code").rglob("*.jsonl")):
        for skip_invalid in (False, True):
            compared += shape_reads_as_skeleton(Input(str(path), keep_text=False), skip_invalid)
    for path in sorted(DATA.joinpath("claude_code").rglob("*.jsonl")):
        compared += shape_reads_as_skeleton(Input(str(path), keep_text=False))
    # 38 transcripts (sidechains beside their main chains among them, twice where --skip-invalid reads more) on
    # 2026-12-06
    assert compared >= 36


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=sessions(), skip_invalid=st.booleans())
def test_the_fold_s_shape_reads_as_its_skeleton_on_generated_sessions(data: bytes, skip_invalid: bool) -> None:
    """test_ccfold's sessions: branches, broken links, images, unanswered calls (repaired: skipped), tools named
    in Cyrillic."""
    shape_reads_as_skeleton(Input("session.jsonl", data, keep_text=False), skip_invalid)


def _stub_session() -> bytes:
    """A prompt and rounds of three calls (an ASCII id to a tool named in ASCII, a Cyrillic id to one named in
    Cyrillic, a longer id with an accent to one named in Japanese) whose results are 9 and 10, 99 and 100, 999 and
    1,000, 9,999 and 10,000 tokens (CJK text: a character a token, and 6 of overheads), so that each tool's stubs
    have sizes of each number of digits and commas."""
    lines = []
    parent: str | None = None

    def line(kind: str, content: Any) -> None:
        nonlocal parent
        uuid = f"u{len(lines)}"
        envelope = {"parentUuid": parent, "isSidechain": False, "userType": "external", "sessionId": "s"}
        message = {"role": kind, "content": content, **({"id": f"m{len(lines)}"} if kind == "assistant" else {})}
        lines.append(orjson.dumps({**envelope, "type": kind, "uuid": uuid, "message": message}))
        parent = uuid

    line("user", "Read them all.")
    for r, size in enumerate((3, 4, 93, 94, 993, 994, 9_993, 9_994)):
        calls = [("Read", f"toolu_01_{r}"), ("Чтение", f"вызов_{r}"), ("読む", f"toolu_0123456789é_{r}")]
        line("assistant", [{"type": "tool_use", "id": c, "name": tool, "input": {}} for tool, c in calls])
        line("user", [{"type": "tool_result", "tool_use_id": c, "content": "字" * size} for _, c in calls])
    return b"\n".join(lines) + b"\n"


def test_a_stub_counted_once_a_shape_is_each_result_s_own() -> None:
    """``_FoldShape.result_refs`` counts a stub once for every result of its tool, call id length (an ASCII id)
    and number of digits: each result's stub tokens and parts are those of its own stub's text."""
    item = Input("session.jsonl", _stub_session(), keep_text=False)
    assert shape_reads_as_skeleton(item) == 1
    est = make_estimator()
    (folded,) = ccplan._folds(item, est, DEFAULTS, "auto", None, False, True) or []
    refs, _ = ccplan._FoldShape.of(folded, est.rule).result_refs(est, None)  # type: ignore[arg-type]
    assert sorted({ref.tokens for ref in refs}) == [9, 10, 99, 100, 999, 1_000, 9_999, 10_000]
    assert any(not ref.call_id.isascii() for ref in refs) and any(not ref.tool.isascii() for ref in refs)
    for ref in refs:
        stub = stub_text(ref.tool, ref.call_id, ref.tokens)
        assert ref.stub_tokens == est.block(ccplan.ToolResult(ref.call_id, (ccplan.Text(stub),)))
