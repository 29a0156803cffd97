"""Replay: the incremental policies agree with plan_fit on every request, the
field report's claims hold on generated sessions, and small replays are
checked by hand."""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import EVERY_POLICY
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from strategies import subagents, transcripts

from windowfit.fitting import Message, Source, Text, ToolCall, ToolResult, Transcript, load_path, make_estimator
from windowfit.fitting.errors import OptionError
from windowfit.fitting.estimate import Estimator
from windowfit.fitting.fit import FitOptions, Plan, clear_results, plan_fit
from windowfit.fitting.replay import (
    POLICIES,
    POLICY_NAMES,
    KeepLastPolicy,
    LegacyPolicy,
    Run,
    Session,
    WindowfitPolicy,
    policy_named,
    replay,
    standard_policies,
)
from windowfit.fitting.replay.presets import SendEverything
from windowfit.fitting.replay.session import NOTE

PROPERTY = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def bare() -> Estimator:
    return make_estimator(overhead=0.0)


def subagent(result_chars: list[int]) -> Transcript:
    """One instruction "go" (1 token), then per result a call ``read({})``
    (2 tokens) and a result of ``n`` ASCII chars (n/4 tokens), overheads off."""
    messages = [Message("user", (Text("go"),), Source("t", 1))]
    for i, n in enumerate(result_chars):
        messages.append(Message("assistant", (ToolCall(f"c{i}", "read", "{}"),), Source("t", len(messages) + 1)))
        messages.append(Message("user", (ToolResult(f"c{i}", (Text("a" * n),)),), Source("t", len(messages) + 1)))
    return Transcript((), (), tuple(messages))


def run_of(transcript: Transcript, factory: object, budget: int, window: int | None = None) -> Run:
    (run,) = replay(transcript, [factory], budget=budget, estimator=bare(), window=window)  # type: ignore[list-item]
    return run


# --------------------------------------------------------------------------
# The incremental policy is plan_fit, request by request


def plan_segments(plan: Plan) -> tuple[tuple[int, int], ...]:
    """A plan's request as replay's segments: the head, the note, the kept ranges."""
    return (plan.head, (NOTE, NOTE), *plan.kept)


@pytest.mark.slow
@PROPERTY
@given(
    st.one_of(transcripts(), subagents()),
    st.floats(0.01, 1.2),
    st.sampled_from((1, 4)),
    st.sampled_from((None, None, 0.02, 0.125, 0.5)),
    st.sampled_from((None, None, 0.05, 0.25, 0.6)),
)
def test_incremental_windowfit_equals_plan_fit_on_every_request(
    t: Transcript, fraction: float, batch: int, batch_share: float | None, step_share: float | None
) -> None:
    # With the step rules on too (SPEC §3): batches by size, with or without a count limit, and cut steps.
    estimator = make_estimator()
    session = Session.of(t, estimator)
    budget = max(1, int(estimator.request(t) * fraction))
    batch_tokens = max(1, int(budget * batch_share)) if batch_share else None
    cut_step = max(1, int(budget * step_share)) if step_share else None
    batch = 0 if batch_tokens and batch == 1 else batch
    event(f"batch_tokens {batch_share}, cut_step {step_share}")
    policy = WindowfitPolicy(session, budget, batch_size=batch, batch_tokens=batch_tokens, cut_step=cut_step)
    carried = None  # with cut steps, the policy carries each cut to the next request
    for n in session.steps:
        sent = policy.request(n)
        plan = plan_fit(
            replace(t, messages=t.messages[:n]),
            budget=budget,
            batch_size=batch,
            estimator=estimator,
            batch_tokens=batch_tokens,
            cut_step=cut_step,
            carried_cut=carried,
        )
        event(plan.outcome)
        assert (sent.outcome, sent.tokens, sent.cleared) == (plan.outcome, plan.tokens_after, len(plan.cleared))
        if plan.outcome in ("turns-dropped", "rounds-dropped"):  # the same cut: the kept tail starts alike
            assert sent.segments[-1][0] == plan.kept[-1][0]
            assert sent.segments == plan_segments(plan)
        if cut_step is not None and plan.cut is not None:
            carried = plan.cut


@pytest.mark.slow
@PROPERTY
@given(
    st.one_of(
        transcripts(max_turns=8, sizes=st.integers(200, 8000)),
        subagents(min_rounds=8, max_rounds=40, sizes=st.integers(200, 8000)),
    ),
    st.floats(0.3, 0.95),
    st.sampled_from((None, 0.02, 0.125)),
    st.sampled_from((0.05, 0.25, 0.6)),
)
def test_incremental_windowfit_equals_plan_fit_where_the_step_rules_cut(
    t: Transcript, fraction: float, batch_share: float | None, step_share: float
) -> None:
    # A budget under the session with every clearable result cleared, so its later requests cut.
    estimator = make_estimator()
    every = plan_fit(t, budget=1, protected_fraction=0.0)
    cleared = replace(t, messages=tuple(clear_results(t.messages, every.candidates)))
    budget = max(1, int(estimator.request(cleared) * fraction))
    batch_tokens = max(1, int(budget * batch_share)) if batch_share else None
    cut_step = max(1, int(budget * step_share))
    session = Session.of(t, estimator)
    policy = WindowfitPolicy(
        session, budget, batch_size=0 if batch_tokens else 4, batch_tokens=batch_tokens, cut_step=cut_step
    )
    carried = None
    for n in session.steps:
        sent = policy.request(n)
        plan = plan_fit(
            replace(t, messages=t.messages[:n]),
            budget=budget,
            batch_size=0 if batch_tokens else 4,
            estimator=estimator,
            batch_tokens=batch_tokens,
            cut_step=cut_step,
            carried_cut=carried,
        )
        event(plan.outcome + (" from a carried cut" if carried is not None else ""))
        assert (sent.outcome, sent.tokens, sent.cleared) == (plan.outcome, plan.tokens_after, len(plan.cleared))
        if plan.outcome in ("turns-dropped", "rounds-dropped"):
            assert sent.segments[-1][0] == plan.kept[-1][0]
            assert sent.segments == plan_segments(plan)
        carried = plan.cut if plan.cut is not None else carried


@pytest.mark.slow
@PROPERTY
@given(st.one_of(transcripts(), subagents()), st.floats(0.01, 1.2), st.integers(1, 5))
def test_cleared_set_only_grows_and_in_batch_steps(t: Transcript, fraction: float, batch: int) -> None:
    # SPEC §6.8 over a replay: the cleared count never shrinks, and it is a whole
    # number of batches unless every candidate is cleared (the last batch may be short).
    estimator = make_estimator()
    session = Session.of(t, estimator)
    policy = WindowfitPolicy(session, max(1, int(estimator.request(t) * fraction)), batch_size=batch)
    previous = 0
    for n in session.steps:
        sent = policy.request(n)
        assert sent.cleared >= previous
        assert sent.cleared % batch == 0 or sent.cleared == len(policy.candidates)
        previous = sent.cleared


def clearing_breaks(run: Run) -> tuple[int, int, int]:
    """(prefix breaks, the final cleared count, breaks that grew an already short last batch)."""
    short_growth = sum(
        1 for a, b in zip(run.steps, run.steps[1:], strict=False) if b.cleared > a.cleared and a.cleared % 4 != 0
    )
    return run.prefix_breaks, run.steps[-1].cleared if run.steps else 0, short_growth


@PROPERTY
@given(st.lists(st.integers(400, 8000), min_size=8, max_size=60), st.integers(8_000, 30_000))
def test_batch_of_four_breaks_the_prefix_about_a_quarter_as_often(sizes: list[int], budget: int) -> None:
    """The bound we prove, for sessions stage 1 alone can fit: with batch size 4,
    B4 <= min(B1, ceil(N1 / 4)) + E, where B1 and B4 are the prefix breaks with
    batch sizes 1 and 4, N1 the results batch size 1 has cleared by the end, and E
    the requests where a short last batch (every candidate already cleared) grew.

    Why: batch 1 clears the fewest results that fit, c1(t), which never shrinks;
    batch 4 clears c4(t) = min(4 * ceil(c1(t) / 4), |C(t)|). Without short-batch
    growth, c4 grows only when ceil(c1 / 4) does, which needs c1 to grow (so at
    most B1 times) and happens at most ceil(N1 / 4) times. So when each request
    needs at most one more result cleared (B1 = N1), B4 <= ceil(B1 / 4)."""
    t = subagent(sizes)
    b4 = run_of(t, lambda s, b: WindowfitPolicy(s, b), budget)
    b1 = run_of(t, lambda s, b: WindowfitPolicy(s, b, batch_size=1), budget)
    if any(s.outcome not in ("fits", "cleared") for s in (*b4.steps, *b1.steps)):
        event("cut: not a clearing-only session")
        return  # the bound is about clearing; cuts (stages 2 and 3) break the prefix by design
    breaks4, _, short_growth = clearing_breaks(b4)
    breaks1, n1, _ = clearing_breaks(b1)
    event(f"B1 {'>= 8' if breaks1 >= 8 else '< 8'}")
    assert breaks4 <= min(breaks1, math.ceil(n1 / 4)) + short_growth


def test_a_long_steady_session_breaks_a_quarter_as_often_with_batches_of_four() -> None:
    # 120 chapters of 1,000 tokens, budget 40,000 (protected share 10,000: 10 results).
    # Batch 1 clears about one more result per request; batch 4 one batch every ~4 requests.
    t = subagent([4000] * 120)
    b4 = run_of(t, lambda s, b: WindowfitPolicy(s, b), 40_000)
    b1 = run_of(t, lambda s, b: WindowfitPolicy(s, b, batch_size=1), 40_000)
    breaks4, _, short4 = clearing_breaks(b4)
    breaks1, n1, _ = clearing_breaks(b1)
    assert short4 == 0
    assert breaks4 <= math.ceil(n1 / 4)
    assert breaks1 >= 4 * breaks4 - 4
    assert b4.cached_tokens > b1.cached_tokens


# --------------------------------------------------------------------------
# The field report's 8 subagents


def russian_subagent(n: int, rounds: int) -> Transcript:
    chapter = ("Глава о том, как агент читает длинные книги и сверяет их с заметками. " * 400)[:24_000]
    messages = [Message("user", (Text(f"Прочитай главы 1–{rounds}."),))]
    for i in range(rounds):
        messages.append(Message("assistant", (Text(f"Читаю главу {i + 1}."), ToolCall(f"s{n}c{i}", "read", "{}"))))
        messages.append(Message("user", (ToolResult(f"s{n}c{i}", (Text(chapter + str(i)),)),)))
    messages.append(Message("assistant", (Text("Готово."),)))
    return Transcript((Text("Ты субагент."),), (), tuple(messages))


def test_eight_long_subagents_legacy_rejects_every_one_windowfit_none() -> None:
    estimator = make_estimator()
    rejected_legacy = rejected_windowfit = 0
    for n in range(8):
        t = russian_subagent(n, rounds=100 + 5 * n)  # ~10,700 tokens a chapter: past 1,000,000 by the end
        assert estimator.request(t) > 1_000_000
        windowfit, legacy = replay(
            t, [lambda s, b: WindowfitPolicy(s, b), LegacyPolicy], budget=400_000, estimator=estimator, window=1_000_000
        )
        rejected_legacy += legacy.rejections > 0
        rejected_windowfit += windowfit.rejections > 0
        assert all(s.sent_tokens <= 400_000 for s in windowfit.steps)
    assert (rejected_legacy, rejected_windowfit) == (8, 0)


# --------------------------------------------------------------------------
# A small replay checked by hand

# subagent([4000] * 6) with overheads off: m0 "go" = 1 token; each call 2; each result 1,000.
# A stub for read/c<i>/1,000 tokens is 182 ASCII chars = 46 tokens (45.5 rounded up), so
# clearing a result saves 954. Requests hold messages[:n] for the assistant replies at
# n = 1, 3, 5, 7, 9, 11: raw sizes 1, 1,003, 2,005, 3,007, 4,009, 5,011. Budget 3,000:
# the protected share is 750, so only the newest result is protected.


def test_hand_checked_replay_windowfit_batch_of_four() -> None:
    run = run_of(subagent([4000] * 6), lambda s, b: WindowfitPolicy(s, b), 3000, window=4500)
    # n=7: candidates c0, c1 (a short batch) cleared: 3,007 - 2 * 954 = 1,099.
    # n=9: c2 joins the cleared short batch: 4,009 - 3 * 954 = 1,147.
    # n=11: c3 fills it: 5,011 - 4 * 954 = 1,195.
    assert [s.raw_tokens for s in run.steps] == [1, 1003, 2005, 3007, 4009, 5011]
    assert [s.sent_tokens for s in run.steps] == [1, 1003, 2005, 1099, 1147, 1195]
    assert [s.cleared for s in run.steps] == [0, 0, 0, 2, 3, 4]
    assert [s.outcome for s in run.steps] == ["fits", "fits", "fits", "cleared", "cleared", "cleared"]
    # Shared prefix: the whole previous request while nothing changes; then up to the first
    # changed message: m0 + m1 = 3; m0..m5 = 1 + 2 + 46 + 2 + 46 + 2 = 99; m0..m7 = 147.
    assert [s.shared_prefix_tokens for s in run.steps] == [0, 1, 1003, 3, 99, 147]
    assert [s.prefix_break for s in run.steps] == [False, False, False, True, True, True]
    assert (run.sent_tokens, run.cached_tokens, run.uncached_tokens) == (6450, 1253, 5197)
    assert run.rejections == 0
    # Issue 13: c0..c3 were cleared, 1,000 tokens each, all of it retrievable with a store.
    assert (run.retrievable_results, run.retrievable_tokens) == (4, 4000)


def test_hand_checked_replay_batch_of_one_and_legacy_and_keep_last() -> None:
    t = subagent([4000] * 6)
    one = run_of(t, lambda s, b: WindowfitPolicy(s, b, batch_size=1), 3000)
    # n=7: 3,007 - 954 = 2,053 (c0); n=9: 4,009 - 2 * 954 = 2,101 (c0, c1); n=11: 5,011 - 3 * 954 = 2,149.
    assert [s.sent_tokens for s in one.steps][3:] == [2053, 2101, 2149]
    assert [s.cleared for s in one.steps][3:] == [1, 2, 3]
    # first changes: c0 in m2 (shared 3), c1 in m4 (1 + 2 + 46 + 2 = 51), c2 in m6 (99)
    assert [s.shared_prefix_tokens for s in one.steps][3:] == [3, 51, 99]
    legacy = run_of(t, LegacyPolicy, 3000, window=4500)
    # one turn: nowhere to cut, everything is sent; 5,011 > 4,500 is rejected
    assert [s.sent_tokens for s in legacy.steps] == [1, 1003, 2005, 3007, 4009, 5011]
    assert [s.rejected for s in legacy.steps] == [False] * 5 + [True]
    assert legacy.prefix_breaks == 0
    keep = run_of(t, lambda s, b: KeepLastPolicy(s, b, keep=3), 3000)
    # over the budget from n=7: clear all but the newest 3 results: none, then c0, then c0 and c1
    assert [s.cleared for s in keep.steps][3:] == [0, 1, 2]
    assert [s.sent_tokens for s in keep.steps][3:] == [3007, 4009 - 954, 5011 - 2 * 954]
    assert [s.outcome for s in keep.steps][3:] == ["over-budget"] * 3
    # Retrievable with a store: what each cleared, each result once (legacy clears nothing, it drops).
    retrievable = [(r.retrievable_results, r.retrievable_tokens) for r in (one, legacy, keep)]
    assert retrievable == [(3, 3000), (0, 0), (2, 2000)]


def test_standard_policies_are_ours_then_the_other_harnesses_presets() -> None:
    runs = replay(subagent([4000] * 3), standard_policies(), budget=10_000, estimator=bare())
    assert [r.policy for r in runs] == EVERY_POLICY


# --------------------------------------------------------------------------
# The one list of policies


def test_policy_names_are_unique_and_each_entry_is_found_by_its_name() -> None:
    assert len(set(POLICY_NAMES)) == len(POLICIES)
    assert all(policy_named(p.name) is p for p in POLICIES)


def test_an_unknown_policy_name_is_an_option_error_listing_the_names() -> None:
    with pytest.raises(OptionError, match="keep-first") as caught:
        policy_named("keep-first")
    assert caught.value.hint == (
        "choose one of: windowfit, windowfit-cache, windowfit-batch-1, legacy, keep-last, anthropic-clear-tool-uses, "
        "gemini-cli-masking, claude-code-idle-clear, openhands-observation-masking, langchain-trim-last, "
        "send-everything"
    )


def steps_of(run: Run) -> list[tuple[int, str, int, int]]:
    return [(s.sent_tokens, s.outcome, s.cleared, s.shared_prefix_tokens) for s in run.steps]


def test_the_windowfit_entry_takes_its_tunables_from_the_options() -> None:
    t = subagent([4000] * 6)
    entry = policy_named("windowfit")
    # The budget replay passes wins over the options' own (a placeholder here).
    as_two = run_of(t, entry.factory(FitOptions(1, batch_size=2)), 3000)
    assert as_two.policy == "windowfit"
    assert steps_of(as_two) == steps_of(run_of(t, lambda s, b: WindowfitPolicy(s, b, batch_size=2), 3000))
    protected = run_of(t, entry.factory(FitOptions(1, protected_fraction=1.0)), 3000)
    direct = run_of(t, lambda s, b: WindowfitPolicy(s, b, protected_fraction=1.0), 3000)
    assert steps_of(protected) == steps_of(direct)
    assert steps_of(protected) != steps_of(run_of(t, entry.factory(), 3000))


def test_the_batch_1_entry_clears_one_at_a_time_whatever_the_batch_size() -> None:
    t = subagent([4000] * 6)
    run = run_of(t, policy_named("windowfit-batch-1").factory(FitOptions(1, batch_size=4)), 3000)
    assert run.policy == "windowfit-batch-1"
    assert steps_of(run) == steps_of(run_of(t, lambda s, b: WindowfitPolicy(s, b, batch_size=1), 3000))


def test_the_keep_last_entry_takes_its_n_from_keep() -> None:
    t = subagent([4000] * 6)
    run = run_of(t, policy_named("keep-last").factory(keep=1), 3000)
    assert run.policy == "keep-last"
    assert steps_of(run) == steps_of(run_of(t, lambda s, b: KeepLastPolicy(s, b, keep=1), 3000))
    assert steps_of(run) != steps_of(run_of(t, policy_named("keep-last").factory(), 3000))


def test_replay_repairs_orphans_like_fit() -> None:
    # An interrupted call (c1 has no result) and an orphan result (ghost) in the middle of a
    # session: every replayed request has the size fit gives the same prefix, repairs included.
    t = subagent([4000] * 5)
    messages = list(t.messages)
    messages[4] = Message("user", (ToolResult("ghost", (Text("x" * 400),)),))  # c1's result replaced by an orphan
    t = replace(t, messages=tuple(messages))
    estimator = bare()
    (run,) = replay(t, [lambda s, b: WindowfitPolicy(s, b)], budget=3000, estimator=estimator)
    ends = [i for i, m in enumerate(t.messages) if m.role == "assistant" and i > 0]
    expected = [plan_fit(replace(t, messages=t.messages[:n]), budget=3000, estimator=estimator) for n in ends]
    assert [s.sent_tokens for s in run.steps] == [p.tokens_after for p in expected]
    assert [s.outcome for s in run.steps] == [p.outcome for p in expected]


@given(st.lists(st.integers(0, 50), max_size=40), st.integers(-5, 2_100))
def test_fenwick_first_reaching_is_the_first_prefix_at_or_over_the_target(values: list[int], target: int) -> None:
    from windowfit.fitting.replay.session import Fenwick

    tree = Fenwick(values)
    sums = [sum(values[:p]) for p in range(len(values) + 1)]
    expected = next((p for p, total in enumerate(sums) if total >= target), len(values) + 1)
    assert tree.first_reaching(target) == expected


@given(
    st.lists(st.integers(0, 50), min_size=1, max_size=40),
    st.data(),
    st.integers(-5, 800),
)
def test_first_fitting_finds_the_first_start_whose_tail_fits(values: list[int], data: st.DataObject, room: int) -> None:
    # Issue 8/12: the search runs between indices (no slice copied per request), in one tree descent.
    from windowfit.fitting.replay.session import Fenwick, first_fitting

    n = data.draw(st.integers(0, len(values)))
    starts = sorted(data.draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=n)))
    lo = data.draw(st.integers(0, len(starts)))
    hi = data.draw(st.integers(lo, len(starts)))
    expected = next((k for k in range(lo, hi) if sum(values[starts[k] : n]) <= room), hi)
    assert first_fitting(starts, n, Fenwick(values), room, lo, hi) == expected


# --------------------------------------------------------------------------
# Issue 14 item 5, "done when": cuts that rarely move on a long single-turn session


def long_session(rounds: int, tmp: Path) -> Transcript:
    """``sample_transcripts/generate.py``'s long single-turn session, loaded as ``replay`` loads it."""
    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    from sample_transcripts.generate import long_single_turn, write_jsonl

    file = tmp / f"long_{rounds}.jsonl"
    write_jsonl(file, long_single_turn(rounds=rounds))
    (transcript,) = load_path(file)
    return transcript


def cache_runs(rounds: int, tmp: Path) -> dict[str, Run]:
    t = long_session(rounds, tmp)
    names = ("windowfit", "windowfit-cache")
    runs = replay(t, [policy_named(n).factory() for n in names], budget=60_000, estimator=make_estimator())
    return {r.policy: r for r in runs}


def test_windowfit_cache_breaks_the_prefix_on_at_most_a_tenth_of_a_long_single_turn_session(tmp_path: Path) -> None:
    # 450 rounds of the 600-round session's shape (same results, same 60,000 budget): long enough
    # that its last requests need stage 3, short enough to run in about a second.
    runs = cache_runs(450, tmp_path)
    cache, default = runs["windowfit-cache"], runs["windowfit"]
    assert cache.requests == 451
    shares = dict(cache.outcome_shares())
    assert shares.get("rounds-dropped", 0) > 0.05  # the cuts are exercised, not only stage 1
    assert cache.rejections == 0 and not any(s.outcome == "too-long" for s in cache.steps)
    assert all(s.sent_tokens <= 60_000 for s in cache.steps)
    assert cache.prefix_breaks <= 0.10 * cache.requests
    assert default.prefix_breaks > 2 * cache.prefix_breaks  # the contract's batches of 4 break far more often
    assert cache.uncached_tokens < default.uncached_tokens


@pytest.mark.parametrize("name", ["windowfit-cache", "windowfit --cut-step"])
def test_with_cut_steps_the_cut_never_moves_back_on_a_long_single_turn_session(tmp_path: Path, name: str) -> None:
    # SPEC invariant 10 with no exception left: the policies that cut at steps carry the cut, so
    # the kept tail's start never moves back (without the carried cut it moved back 18 times on the
    # 600-round session: docs/contract.md, "The cut is carried").
    t = long_session(450, tmp_path)
    session = Session.of(t, make_estimator())
    if name == "windowfit-cache":
        policy = policy_named(name).factory()(session, 60_000)
    else:
        policy = WindowfitPolicy(session, 20_000, cut_step=5_000)  # batches of 4 clear enough at 60,000
    cuts = []
    for n in session.steps:
        sent = policy.request(n)
        if sent.outcome in ("turns-dropped", "rounds-dropped"):
            cuts.append(sent.segments[-1][0])
        else:
            assert not cuts, f"request {n}: back to {sent.outcome} after a cut"
    assert len(cuts) > 50  # the cuts are exercised
    assert cuts == sorted(cuts)


@pytest.mark.slow
def test_the_600_round_session_of_the_issue_at_60000_tokens(tmp_path: Path) -> None:
    cache = cache_runs(600, tmp_path)["windowfit-cache"]
    assert cache.requests == 601 and cache.rejections == 0
    assert cache.prefix_breaks <= 0.10 * cache.requests


def test_legacy_never_sends_a_cut_that_drops_nothing() -> None:
    """A second user message right after the first (Codex rollouts open with an
    environment message, then the prompt) starts a turn at message 1; cutting
    there drops no message, so legacy must send the request untouched (no
    note, no prefix break) rather than the request plus a truncation note."""
    t = subagent([4000] * 4)
    second = Message("user", (Text("and more"),), Source("t", 2))
    t = Transcript((), (), (t.messages[0], second, *t.messages[1:]))
    untouched = run_of(t, SendEverything, 1500)
    legacy = run_of(t, LegacyPolicy, 1500)
    assert [s.sent_tokens for s in legacy.steps] == [s.sent_tokens for s in untouched.steps]
    assert [s.outcome for s in legacy.steps] == ["fits", "fits", "over-budget", "over-budget"]
    assert legacy.prefix_breaks == 0
