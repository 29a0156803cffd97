"""The structures that keep replay linear (issue 15) give what the direct computation gives."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import subagents, transcripts

from windowfit.fitting import Transcript, make_estimator
from windowfit.fitting.pricing import default_table
from windowfit.fitting.replay import Fenwick, Sent, Session, replay, standard_policies
from windowfit.fitting.replay.cache import CacheModel, check
from windowfit.fitting.replay.presets import gemini_preview
from windowfit.fitting.replay.run import Steps, _shared_prefix, _shared_prefix_of_segments
from windowfit.fitting.replay.session import StaticSizes

sizes = st.lists(st.integers(min_value=0, max_value=50), max_size=40)


@given(sizes, st.data())
def test_static_sizes_answer_as_a_fenwick_tree_does(values: list[int], data: st.DataObject) -> None:
    tree, static = Fenwick(values), StaticSizes(values)
    total = sum(values)
    for stop in range(len(values) + 1):
        assert static.prefix(stop) == tree.prefix(stop) == sum(values[:stop])
    start = data.draw(st.integers(0, len(values)))
    stop = data.draw(st.integers(0, len(values)))
    assert static.range(start, stop) == tree.range(start, stop)
    target = data.draw(st.integers(-5, total + 5))
    assert static.first_reaching(target) == tree.first_reaching(target)


@given(st.text(max_size=700))
def test_gemini_preview_quotes_as_indented_json_does(output: str) -> None:
    content = json.dumps({"output": output}, indent=2, ensure_ascii=False)
    expected = f"{content[:250]}\n... [TRUNCATED] ...\n{content[-250:]}" if len(content) > 500 else content
    if len(output) <= 600:
        assert gemini_preview("read_file", output) == expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(transcripts(), subagents()), st.floats(0.01, 1.2))
def test_shared_prefix_fast_path_equals_the_segment_walk(t: Transcript, fraction: float) -> None:
    # Every default policy, every request: the shortcut for two whole histories gives what the
    # position-by-position walk gives.
    estimator = make_estimator()
    session = Session.of(t, estimator)
    budget = max(1, int(fraction * (session.preamble + session.before[-1])))
    for factory in standard_policies():
        policy = factory(session, budget)
        previous: Sent | None = None
        for n in session.steps:
            sent = policy.request(n)
            if previous is not None:
                assert _shared_prefix(session, policy, previous, sent) == _shared_prefix_of_segments(
                    session, policy, previous, sent
                )
            previous = sent


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(transcripts(), subagents()), st.floats(0.01, 1.2), st.integers(0, 2))
def test_columnar_steps_read_as_the_step_objects_they_replace(t: Transcript, fraction: float, which: int) -> None:
    # replay keeps its steps as columns (issue 11's memory): each totals and each priced step must be what
    # the same steps as plain Step objects give through the object path (a tuple of Step, as before).
    estimator = make_estimator()
    session = Session.of(t, estimator)
    budget = max(1, int(fraction * (session.preamble + session.before[-1])))
    times = {m.source.line: 600.0 * i for i, m in enumerate(t.messages) if m.source.line is not None}
    row = default_table().row(("claude-sonnet-4-5", "gpt-5-mini", "gemini-2.5-pro")[which])
    assert row is not None
    cache = CacheModel(row.provider, "5m", row)
    for run in replay(t, standard_policies(), budget=budget, estimator=estimator, window=budget, times=times):
        assert isinstance(run.steps, Steps)
        objects = replace(run, steps=tuple(run.steps))
        assert len(objects.steps) == len(run.steps) == len(session.steps)
        assert [s.index for s in objects.steps] == list(range(len(session.steps)))
        assert [s.messages for s in objects.steps] == list(session.steps)
        for name in ("requests", "rejections", "sent_tokens", "cached_tokens", "prefix_breaks"):
            assert getattr(run, name) == getattr(objects, name), name
        assert run.outcome_shares() == objects.outcome_shares()
        priced, priced_objects = cache.priced(run, times), cache.priced(objects, times)
        assert tuple(priced.steps) == priced_objects.steps
        assert check(priced) == check(priced_objects)
        for name in ("cache_read_tokens", "cache_write_tokens", "cost_usd", "cache_hit_rate"):
            assert getattr(priced, name) == pytest.approx(getattr(priced_objects, name)), name
        if run.steps:
            assert run.steps[-1] == objects.steps[-1] and run.steps[1:] == objects.steps[1:]
