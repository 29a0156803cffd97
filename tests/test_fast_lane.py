"""The fast lane, ``pytest -m "not slow"``, still covers every test module:
``slow`` marks the long property runs and corpus sweeps, never a whole module
(issue 6)."""

from __future__ import annotations


def test_every_collected_test_module_has_tests_outside_the_slow_marker(not_slow_per_module: dict[str, int]) -> None:
    assert "tests/test_fast_lane.py" in not_slow_per_module  # the count saw this run's collection
    only_slow = sorted(module for module, count in not_slow_per_module.items() if count == 0)
    assert only_slow == [], f"these modules have no test outside @pytest.mark.slow: {only_slow}"
