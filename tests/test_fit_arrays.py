"""Stage 1 on arrays (issue 15): ``fit._plan`` sums what clearing a batch takes off each message from its
blocks' parts and its stubs' instead of rebuilding and re-estimating the messages per batch, and the fit
command checks the fitted request's shape without stubbing it (``fit.fitted_shape``). The reference is the
algorithm as it was (``reference_plan``, copied from main at 7272a36): every Plan field must be the same,
for plan_fit over generated transcripts (tool results and text observations, both dialects) and options
(batch size and tokens, protected fraction, clear ratio, cut steps, carried cuts, the notice, a store's
pages, estimated, given-preamble and anchored sizes, a script and a class rule), and for fold_plan over
generated Claude Code sessions and the corpus."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from conftest import require_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import damaged_transcripts, measured, observed_transcripts, transcripts
from test_ccfold import sessions

from windowfit.fitting import ccplan
from windowfit.fitting.ccplan import fold_plan
from windowfit.fitting.estimate import Estimator, make_estimator
from windowfit.fitting.fit import (
    TRUNCATION_NOTE,
    Cause,
    CausePart,
    ClearBatch,
    FitOptions,
    Plan,
    ResultRef,
    _carried,
    _check_cut,
    _dropped_turns,
    _dropped_units,
    _head,
    _Messages,
    _note_message,
    _plan,
    _protected_tail,
    _Sizer,
    _too_long,
    _usage_in,
    apply_plan,
    batch_ranges,
    clear_into,
    fitted_shape,
    observation_stub_text,
    plan_fit,
    result_refs,
    step_position,
    stub_text,
)
from windowfit.fitting.formats import Input
from windowfit.fitting.notice import with_notice
from windowfit.fitting.repair import repair
from windowfit.fitting.size import FLOOR_RULE, Size, ceiling_tokens, predict_size
from windowfit.fitting.transcript import (
    Message,
    Round,
    ToolResult,
    Transcript,
    Turn,
    iter_units,
    split_units,
    turn_bounds,
)
from windowfit.fitting.validate import check_request

PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def reference_plan(
    transcript: Transcript,
    options: FitOptions,
    est: Estimator,
    size: Size | None,
    tokens_of: Callable[[Sequence[Message]], tuple[int, ...]],
    floors_of: Callable[[Sequence[Message], dict[tuple[int, int], int]], Sequence[int]] | None = None,
) -> Plan:
    """``fit._plan`` as it was before stage 1 worked on arrays (main at 7272a36), kept whole as the
    reference: each batch rebuilds its messages with the stubs (``clear_into``) and estimates them again, and
    stages 2 and 3 read the stubbed messages. Since issue 13, a candidate saves tokens in the count the fit
    uses, and an anchored fit's too-long cause is that count."""
    budget, batch_size, batch_tokens = options.budget, options.batch_size, options.batch_tokens
    protected_fraction, min_clear_ratio = options.protected_fraction, options.min_clear_ratio
    page_tokens, cut_step, carried_cut = options.page_tokens, options.cut_step, options.carried_cut
    noticed = with_notice(transcript) if options.add_notice else transcript
    notice_added = noticed is not transcript
    source, repairs = repair(noticed)
    messages = source.messages
    message_tokens = tokens_of(messages)
    preamble = est.preamble(source)
    if size is not None and size.preamble_source in ("inferred", "given"):
        preamble += size.preamble_tokens - est.preamble(transcript)  # what the file does not record
    before = preamble + sum(message_tokens)
    anchored = size is not None and size.anchored
    floor = Estimator(FLOOR_RULE)
    if size is not None and size.anchored:
        # The notice and repairs change the request after it was measured: add their estimate.
        before = size.tokens + before - est.request(transcript) - preamble + est.preamble(source)
    results = result_refs(messages, est, page_tokens)
    result_floors: dict[tuple[int, int], int] = {}
    known = floors_of(messages, result_floors) if anchored and floors_of is not None else None
    sizer = _Sizer.of(
        messages, message_tokens, floor if anchored else None, _usage_in(transcript, messages), result_floors, known
    )

    def stub_of(ref: ResultRef) -> str:
        if isinstance(messages[ref.message_index].content[ref.block_index], ToolResult):
            return stub_text(ref.tool, ref.call_id, ref.tokens, ref.handle, ref.pages)
        return observation_stub_text(ref.tool, ref.call_id, ref.tokens, ref.handle, ref.pages)

    def saves(ref: ResultRef) -> bool:
        """Issue 13: at least the ratio, and a saving, in the fit's count (an estimate: a block rounds up
        alone, its message once, so a message may save one token less per result than its blocks say)."""
        if anchored:
            removed, added = result_floors[(ref.message_index, ref.block_index)], ceiling_tokens(stub_of(ref))
            return removed >= min_clear_ratio * added and removed > added
        return ref.tokens >= min_clear_ratio * ref.stub_tokens and ref.tokens > ref.stub_tokens + 1

    first_protected = _protected_tail(results, budget * protected_fraction)
    older = results[:first_protected]
    base = Plan(
        options=options,
        outcome="fits",
        tokens_before=before,
        tokens_after=before,
        stages=(),
        message_tokens=message_tokens,
        preamble_tokens=preamble,
        results=results,
        protected=results[first_protected:],
        too_small=tuple(r for r in older if not saves(r)),
        candidates=tuple(r for r in older if saves(r)),
        batches=(),
        notice_added=notice_added,
        repairs=repairs,
        size=size,
    )
    if carried_cut is not None:
        _check_cut(source, carried_cut, _head(messages))
    elif before <= budget:
        return base

    # Stage 1: clear whole batches of candidates, oldest first, until it fits. With a
    # carried cut, every batch: the request that cut there had cleared all it could
    # (a cut comes only after stage 1 runs out), and taking a stub back would change
    # the prefix that request sent and shrink the cleared set (SPEC invariant 8).
    working = list(messages)
    tokens = list(message_tokens)
    total = before
    batches: list[ClearBatch] = []
    candidates = base.candidates
    for k, stop in batch_ranges(candidates, batch_size, batch_tokens):
        batch = candidates[k:stop]
        saved = 0
        if anchored:
            for ref in batch:
                # A text observation's stub: 7272a36 asserted here (an anchored fit of a Cline task raised).
                cut = result_floors[(ref.message_index, ref.block_index)] - ceiling_tokens(stub_of(ref))
                sizer.save(ref.message_index, cut)
                saved += cut
        for mi in sorted(clear_into(working, batch)):
            new = est.message(working[mi]).tokens
            if not anchored:
                sizer.save(mi, tokens[mi] - new)
                saved += tokens[mi] - new
            tokens[mi] = new
        total -= saved
        batches.append(ClearBatch(len(batches), batch, saved))
        if total <= budget and carried_cut is None:
            return replace(base, outcome="cleared", tokens_after=total, stages=(1,), batches=tuple(batches))
    stages = (1,) if batches else ()
    sizer.seal()

    note_tokens = est.message(_note_message()).tokens
    if not working:
        # Only the preamble, and it alone is over the budget (issue 8: an IndexError
        # here): no turn or round to keep, so nothing can fit.
        empty = (0, 0)
        cause = _too_long(
            tokens,
            results,
            base.candidates,
            (),
            0,
            budget=budget,
            preamble=preamble,
            head=empty,
            note=note_tokens,
            opener=None,
            preamble_source=size.preamble_source if size is not None else "recorded",
        )
        return replace(
            base,
            outcome="too-long",
            tokens_after=cause.tokens,
            stages=stages,
            head=empty,
            note=TRUNCATION_NOTE,
            too_long=cause,
        )

    # Stage 2: the head, a note, and the newest whole turns that fit. A request that
    # leaves messages out is the total so far, plus the note, minus what they held.
    head = _head(working)
    note_add = (
        ceiling_tokens(TRUNCATION_NOTE) + est.rule.message_overhead_tokens + est.rule.block_overhead_tokens
        if anchored
        else note_tokens
    )
    truncated = replace(base, batches=tuple(batches), head=head, note=TRUNCATION_NOTE)
    bounds = turn_bounds(working)  # the turns, as machine integers: a file of tiny lines has very many
    floor_at = 0 if carried_cut is None else carried_cut
    if carried_cut is not None:
        carried = _carried(truncated, _Messages(working), tokens, sizer, total + note_add, carried_cut, stages)
        if carried.tokens_after <= budget:
            return carried
    starts = bounds[bisect_left(bounds, head[1], 0, len(bounds) - 1) : len(bounds) - 1]  # turns after the head
    sizes = array("q", (total + note_add - sizer.removed(head[1], start) for start in starts))
    fitting_turn = next((i for i, size in enumerate(sizes) if size <= budget and starts[i] >= floor_at), None)
    kept_from = fitting_turn
    prefix = [0]
    if cut_step is not None:
        for t in tokens:
            prefix.append(prefix[-1] + t)
        if kept_from is not None:
            kept_from = step_position(starts, prefix, 0, kept_from, cut_step)

    def keep_turns(k: int, cut_at: int | None) -> Plan:
        start = starts[k]
        return replace(
            truncated,
            outcome="turns-dropped",
            tokens_after=sizes[k],
            stages=(*stages, 2),
            kept=((start, len(working)),),
            dropped=_dropped_turns(bounds, tokens, head[1], start),
            cut_at=cut_at,
        )

    if kept_from is not None:
        return keep_turns(kept_from, starts[kept_from] if cut_step is not None else None)

    # Stage 3: inside the last (long) turn, the newest whole tool rounds that fit.
    last = Turn(bounds[-2], bounds[-1])
    opener = (last.start, last.start + 1) if last.start >= head[1] else None
    units_from = opener[1] if opener else head[1]
    units = split_units(working, units_from, len(working))
    before_units = total + note_add - (sizer.removed(head[1], last.start) if opener else 0)

    def size_keeping(take: int) -> int:
        """The request with the newest ``take`` units of the last turn."""
        stop = units[len(units) - take].start if take else len(working)
        return before_units - sizer.removed(units_from, stop)

    most = len(units) - bisect_left([u.start for u in units], floor_at)  # never a unit before the carried cut
    keep_units = next((take for take in range(most, 0, -1) if size_keeping(take) <= budget), 0)
    # The tail must reach back to the newest tool round: a tail of only a trailing
    # assistant reply has not kept the work, so that request is too long too.
    rounds_at = [i for i, u in enumerate(units) if isinstance(u, Round)]
    newest = rounds_at[-1] if rounds_at else len(units) - 1
    cut_at = None
    if cut_step is not None and keep_units:
        # The earliest step position from the earliest fitting unit on; when none
        # is at or before the newest round, the earliest fitting unit (no step).
        at = step_position([u.start for u in units], prefix, last.start, len(units) - keep_units, cut_step)
        if at is not None and at <= newest:
            keep_units, cut_at = len(units) - at, units[at].start
    used = size_keeping(keep_units)
    stages = (*stages, 2, 3)
    fits = keep_units > 0 and len(units) - keep_units <= newest
    # Too long keeps what stage 3 would at the least: everything from the newest round on.
    take = keep_units if fits else len(units) - newest if units else 0
    start = units[len(units) - take].start if take else len(working)
    kept = ((opener,) if opener else ()) + (((start, len(working)),) if take else ())
    dropped = _dropped_turns(bounds, tokens, head[1], last.start if opener else head[1]) + _dropped_units(
        units[: len(units) - take], tokens
    )
    if fits:
        return replace(
            truncated,
            outcome="rounds-dropped",
            tokens_after=used,
            stages=stages,
            kept=kept,
            dropped=dropped,
            cut_at=cut_at,
        )
    if fitting_turn is not None:
        # With cut steps, no step position's tail fits and stage 3 cannot fit either
        # (the long turn is only its opening message, say): the earliest turn that fits.
        return keep_turns(fitting_turn, None)
    cause = _too_long(
        tokens,
        results,
        base.candidates,
        units,
        take,
        budget=budget,
        preamble=preamble,
        head=head,
        note=note_tokens,
        opener=opener,
        preamble_source=size.preamble_source if size is not None else "recorded",
    )
    after = size_keeping(take)
    if size is not None and size.anchored:
        # Issue 13: the anchored count, part by part (what the decision compared with the budget).
        changed = " and ".join(w for w, on in (("notice", notice_added), ("repairs", bool(repairs))) if on)
        removed, stage1 = before + note_add - after, before - total
        what = "cleared" if removed == stage1 else "left out" if not stage1 else "cleared and left out"
        parts = (
            ("measured", "measured request", size.measured_tokens),
            ("reply", "its reply", size.reply_tokens),
            ("estimated", "estimate of the messages after it", size.estimated_tokens),
            ("changes", f"estimate of the {changed}", before - size.tokens),
            ("note", "truncation note", note_add),
            ("removed", f"what is {what}, at least", -removed),
        )
        said = tuple(CausePart(k, label, n) for k, label, n in parts if n or k in ("measured", "note"))
        cause = Cause(budget, said, cause.alone)
    return replace(
        truncated,
        outcome="too-long",
        tokens_after=after,
        stages=stages,
        kept=kept,
        dropped=dropped,
        too_long=cause,
    )


Planner = Callable[..., Plan]
RULES = (("seed", 1.0), ("seed", 0.0), ("safe", 1.0), ("safe-openai", 2.0))
"""Estimator rules (name, overhead factor): the seed and its integer path, a class rule's general one."""
SHARES = (0.001, 0.02, 0.1, 0.3, 0.6, 0.8, 0.9, 0.95, 1.0, 1.5)
"""Budgets as shares of the request's size: too long, stages 3, 2 and 1, fits."""


def planned(
    planner: Planner, transcript: Transcript, options: FitOptions, rule: tuple[str, float], size: Size | None
) -> object:
    """``planner``'s plan of ``transcript`` with a fresh estimator, or the error it raised (by kind and words)."""
    est = make_estimator(rule[0], overhead=rule[1])
    try:
        return planner(transcript, options, est, size, lambda ms: est.message_tokens(tuple(ms)))
    except Exception as exc:  # a refused carried cut: in the same words
        return (type(exc).__name__, str(exc))


@st.composite
def cases(draw: st.DrawFn) -> tuple[Transcript, FitOptions, tuple[str, float], Size | None]:
    """A transcript, options of every kind, a rule and a size (none, estimated, with a preamble, anchored)."""
    transcript = draw(
        st.one_of(
            transcripts(),
            transcripts(max_turns=1, min_rounds=2, max_rounds=16),
            observed_transcripts(),
        )
    )
    rule = draw(st.sampled_from(RULES))
    est = make_estimator(rule[0], overhead=rule[1])
    kind = draw(st.sampled_from(("none", "estimate", "preamble", "anchored", "anchored")))
    size: Size | None = None
    if kind == "anchored":
        transcript = draw(measured(transcript, est))
        size = predict_size(transcript, est, mode="auto")
    elif kind != "none":
        size = predict_size(
            transcript, est, mode="estimate", preamble=draw(st.integers(0, 3000)) if kind == "preamble" else None
        )
    whole = size.tokens if size is not None else est.request(transcript)
    budget = max(1, int(whole * draw(st.sampled_from(SHARES))))
    batch_tokens = draw(st.one_of(st.none(), st.integers(1, max(1, budget // 2))))
    batch_size = draw(st.integers(0 if batch_tokens is not None else 1, 5))
    messages = repair(transcript)[0].messages
    carried = None
    if messages and draw(st.integers(0, 3)) == 0:
        head = _head(messages)[1]
        starts = [u.start for u in iter_units(messages, head, len(messages))]
        carried = draw(
            st.sampled_from(starts) if starts and draw(st.integers(0, 4)) else st.integers(1, len(messages) + 1)
        )
    options = FitOptions(
        budget,
        batch_size,
        draw(st.sampled_from((0.0, 0.1, 0.25, 1.0))),
        draw(st.sampled_from((0.0, 1.0, 2.0, 5.0))),
        draw(st.booleans()),
        draw(st.sampled_from((None, None, 7, 2_000))),
        batch_tokens,
        draw(st.one_of(st.none(), st.integers(1, max(1, budget // 2)))),
        carried,
    )
    return transcript, options, rule, size


def test_stage_one_on_arrays_plans_as_the_reference() -> None:
    """Every drawn case plans as the reference plans it; and the property is not vacuous: its cases clear,
    drop turns and rounds, and are too long, under the seed and a class rule, anchored or not (checked on the
    same cases after the run, which is why the property runs inside this test)."""
    met: set[tuple[str, str, bool]] = set()

    @settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(case=cases())
    def same(case: tuple[Transcript, FitOptions, tuple[str, float], Size | None]) -> None:
        transcript, options, rule, size = case
        plan = planned(_plan, transcript, options, rule, size)
        assert plan == planned(reference_plan, transcript, options, rule, size)
        if isinstance(plan, Plan):
            met.add((plan.outcome, rule[0] if rule[0] == "seed" else "class", bool(size and size.anchored)))

    def covered() -> bool:
        return {m[0] for m in met} >= {"fits", "turns-dropped"} and all(
            {kind for o, kind, _ in met if o == outcome} == {"seed", "class"}
            and {anchored for o, _, anchored in met if o == outcome} == {False, True}
            for outcome in ("cleared", "rounds-dropped", "too-long")
        )

    # One run of 400 draws covers every kind of case almost always (in six seeded runs, rounds dropped on an
    # anchored size came 3 to 26 times); a run that misses one (one full run did) draws 400 more, up to twice.
    for _ in range(3):
        same()
        if covered():
            break
    for outcome in ("cleared", "rounds-dropped", "too-long"):
        assert {kind for o, kind, _ in met if o == outcome} == {"seed", "class"}
        assert {anchored for o, _, anchored in met if o == outcome} == {False, True}
    assert {m[0] for m in met} >= {"fits", "turns-dropped"}


def fold_planned(planner: Planner, item: Input, options: FitOptions, mode: tuple[str, int | None]) -> object:
    """``fold_plan`` of ``item`` with ``ccplan``'s ``_plan`` being ``planner``: its plan, None, or its error."""
    was = ccplan._plan
    ccplan._plan = planner  # type: ignore[assignment]
    try:
        found = fold_plan(item, make_estimator(), options, size_mode=mode[0], preamble=mode[1])  # type: ignore[arg-type]
    except Exception as exc:
        return (type(exc).__name__, str(exc))
    finally:
        ccplan._plan = was
    return None if found is None else found.plan


MODES = (("auto", None), ("estimate", None), ("auto", 3_000), ("estimate", 0))
VARIANTS: tuple[dict[str, Any], ...] = (
    {},
    {"batch_size": 1},
    {"batch_size": 3, "protected_fraction": 0.0},
    {"min_clear_ratio": 0.0, "protected_fraction": 0.05},
    {"batch_size": 0, "batch_tokens": 700},
    {"cut_step": 500},
)


@PROPERTY
@given(data=sessions(), share=st.sampled_from(SHARES), variant=st.sampled_from(VARIANTS), mode=st.sampled_from(MODES))
def test_the_fold_s_plan_is_the_reference_s(
    data: bytes, share: float, variant: dict[str, Any], mode: tuple[str, int | None]
) -> None:
    item = Input("session.jsonl", data, keep_text=False)
    first = fold_planned(_plan, item, FitOptions(10**9), mode)
    if not isinstance(first, Plan):
        assert first == fold_planned(reference_plan, item, FitOptions(10**9), mode)
        return
    options = replace(FitOptions(max(1, int(first.tokens_before * share))), **variant)
    plan = fold_planned(_plan, item, options, mode)
    assert plan == fold_planned(reference_plan, item, options, mode)
    if isinstance(plan, Plan) and plan.cut is not None:
        carried = replace(options, carried_cut=plan.cut)
        assert fold_planned(_plan, item, carried, mode) == fold_planned(reference_plan, item, carried, mode)


def test_the_corpus_s_claude_code_sessions_plan_as_the_reference() -> None:
    files = sorted(require_shared("corpus", "transcripts", "claude_code").rglob("*.jsonl"))
    taken = 0
    for path in files:
        item = Input(str(path), keep_text=False)
        first = fold_planned(_plan, item, FitOptions(10**9), MODES[0])
        if not isinstance(first, Plan):
            continue
        taken += 1
        for share in SHARES:
            for variant in VARIANTS:
                options = replace(FitOptions(max(1, int(first.tokens_before * share))), **variant)
                assert fold_planned(_plan, item, options, MODES[0]) == fold_planned(
                    reference_plan, item, options, MODES[0]
                )
    assert taken >= 4


def shape_of(transcript: Transcript) -> list[tuple[object, ...]]:
    """All ``check_request`` reads of a request: each message's role and source, and each block's kind, with
    a call's id and name, a result's id and a text's being an observation."""
    return [
        (
            m.role,
            m.source,
            tuple(
                (type(b).__name__, getattr(b, "id", None), getattr(b, "name", None), getattr(b, "call_id", None))
                for b in m.content
            ),
        )
        for m in transcript.messages
    ]


def same_check(transcript: Transcript, plan: Plan) -> None:
    """``fitted_shape`` is ``apply_plan``'s request but for the stubs' text: the same shape, the same check."""
    fitted, shape = apply_plan(transcript, plan), fitted_shape(transcript, plan)
    assert shape_of(shape) == shape_of(fitted)
    assert len(shape.messages) == len(fitted.messages) and shape.dialect == fitted.dialect
    for dialect in (None, "anthropic", "openai"):
        assert check_request(shape, dialect) == check_request(fitted, dialect)  # type: ignore[arg-type]
    if plan.outcome in ("fits", "cleared") and not plan.repairs and not plan.notice_added:
        assert shape is transcript  # what _fit_folded takes for the input's check


@PROPERTY
@given(
    transcript=st.one_of(transcripts(), damaged_transcripts(), observed_transcripts()),
    share=st.sampled_from(SHARES),
    batch=st.integers(1, 4),
    notice=st.booleans(),
)
def test_the_fitted_shape_checks_as_the_fitted_request(
    transcript: Transcript, share: float, batch: int, notice: bool
) -> None:
    budget = max(1, int(make_estimator().request(transcript) * share))
    same_check(transcript, plan_fit(transcript, budget=budget, batch_size=batch, add_notice=notice))


@PROPERTY
@given(data=sessions(), share=st.sampled_from(SHARES), variant=st.sampled_from(VARIANTS))
def test_the_fitted_shape_of_a_fold_s_skeleton_checks_as_its_fitted_request(
    data: bytes, share: float, variant: dict[str, Any]
) -> None:
    item = Input("session.jsonl", data, keep_text=False)
    first = fold_plan(item, make_estimator(), FitOptions(10**9))
    if first is None:
        return
    found = fold_plan(
        item, make_estimator(), replace(FitOptions(max(1, int(first.plan.tokens_before * share))), **variant)
    )
    assert found is not None and found.skeleton is not None
    same_check(found.skeleton, found.plan)
