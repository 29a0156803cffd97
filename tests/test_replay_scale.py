"""The structures that keep replay linear (issue 15) give what the direct computation gives."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import subagents, transcripts

from windowfit.fitting import Transcript, make_estimator
from windowfit.fitting.replay import Fenwick, Sent, Session, standard_policies
from windowfit.fitting.replay.presets import gemini_preview
from windowfit.fitting.replay.run import _shared_prefix, _shared_prefix_of_segments
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
