"""``windowfit replay`` from the command line: the policy table, the chart,
--json, --plot, and the real corpus."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import require_shared
from typer.testing import Result

Run = Callable[..., Result]
Golden = Callable[[str, str], None]
DATA = Path(__file__).parent / "data" / "replay"


@pytest.fixture
def in_data(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(DATA)
    return DATA


# six_reads.jsonl is tests/test_replay.py's hand-checked session plus a final reply:
# with --overhead 0 and budget 3,000 the windowfit run sends 1, 1,003, 2,005, 1,099,
# 1,147, 1,195 tokens as there, and then a seventh request holding all six results:
# 6,013 raw; c5 is protected; batch 1 (c0..c3) is full and already cleared, and c4
# starts batch 2, which is not needed: 6,013 - 4 * 954 = 2,197 <= 3,000.


def test_table_and_chart_match_golden(run_cli: Run, golden: Golden, in_data: Path) -> None:
    result = run_cli("replay", "six_reads.jsonl", "--budget", "3000", "--window", "4500", "--overhead", "0")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    golden("replay_six_reads.txt", result.stdout)


def test_json_has_every_step_with_hand_checked_numbers(run_cli: Run, in_data: Path) -> None:
    result = run_cli("replay", "six_reads.jsonl", "--budget", "3000", "--window", "4500", "--overhead", "0", "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert set(doc) == {"schema", "path", "name", "estimator", "budget", "window", "runs", "skipped_files"}
    assert doc["skipped_files"] == []
    runs = {r["policy"]: r for r in doc["runs"]}
    assert list(runs) == ["windowfit", "windowfit-batch-1", "legacy", "keep-last"]
    ours = runs["windowfit"]
    # 7 requests: before each of the 7 assistant replies (see the comment above)
    assert [s["sent_tokens"] for s in ours["steps"]] == [1, 1003, 2005, 1099, 1147, 1195, 2197]
    assert [s["cleared"] for s in ours["steps"]] == [0, 0, 0, 2, 3, 4, 4]
    assert ours["rejections"] == 0
    # legacy sends everything: 6,013 > 4,500 and 5,011 > 4,500 are rejected
    assert runs["legacy"]["rejections"] == 2
    assert [s["rejected"] for s in runs["legacy"]["steps"]] == [False] * 5 + [True, True]


def test_one_policy_and_the_plot_image(run_cli: Run, in_data: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the test extra installs matplotlib; plain installs may not")
    image = tmp_path / "replay.png"
    result = run_cli("replay", "six_reads.jsonl", "--budget", "3000", "--policy", "legacy", "--plot", str(image))
    assert result.exit_code == 0, result.stderr
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "legacy" in result.stdout and "windowfit-batch-1" not in result.stdout


def test_bad_index_and_missing_budget_are_usage_errors(run_cli: Run, in_data: Path) -> None:
    assert run_cli("replay", "six_reads.jsonl", "--budget", "3000", "--index", "3").exit_code == 2
    assert run_cli("replay", "six_reads.jsonl").exit_code == 2


def test_replays_a_real_claude_code_session(run_cli: Run) -> None:
    session = require_shared(
        "corpus", "transcripts", "claude_code", "M-Thisness_M-Claude__c76e5be5-ffd2-4901-a935-885527c83a61.jsonl"
    )
    result = run_cli("replay", str(session), "--skip-invalid", "--budget", "20000", "--window", "60000", "--json")
    assert result.exit_code == 0, result.stderr
    runs = {r["policy"]: r for r in json.loads(result.stdout)["runs"]}
    assert runs["windowfit"]["requests"] > 100
    assert runs["windowfit"]["rejections"] == 0
    assert all(s["sent_tokens"] <= 20_000 or s["outcome"] == "too-long" for s in runs["windowfit"]["steps"])
    assert runs["windowfit"]["prefix_breaks"] <= runs["windowfit-batch-1"]["prefix_breaks"]


def test_plot_with_an_unknown_image_suffix_is_a_usage_error(run_cli: Run, in_data: Path, tmp_path: Path) -> None:
    # Regression: matplotlib raised (a traceback) for a suffix it cannot write.
    pytest.importorskip("matplotlib", reason="the test extra installs matplotlib; plain installs may not")
    result = run_cli("replay", "six_reads.jsonl", "--budget", "3000", "--plot", str(tmp_path / "chart.xyz"))
    assert result.exit_code == 2
    assert "cannot write .xyz files" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_policy_choices_are_the_one_list_in_fitting() -> None:
    from windowfit.cli.replay_cmd import PolicyName
    from windowfit.fitting.replay import POLICY_NAMES

    assert tuple(p.value for p in PolicyName) == POLICY_NAMES


@pytest.mark.parametrize("name", ["windowfit", "windowfit-batch-1", "legacy", "keep-last"])
def test_the_name_passed_to_policy_is_the_name_in_the_output(run_cli: Run, in_data: Path, name: str) -> None:
    args = ("replay", "six_reads.jsonl", "--budget", "3000", "--policy", name)
    doc = json.loads(run_cli(*args, "--json").stdout)
    assert [r["policy"] for r in doc["runs"]] == [name]
    text = run_cli(*args).stdout
    assert any(line.split()[:1] == [name] for line in text.splitlines())  # the table's row, whole
    assert f"{name}: sent tokens per request" in text  # the chart's title


def test_an_unknown_policy_is_a_usage_error(run_cli: Run, in_data: Path) -> None:
    result = run_cli("replay", "six_reads.jsonl", "--budget", "3000", "--policy", "keep-last-3")
    assert result.exit_code == 2
    assert "keep-last-3" in result.stderr
