"""``windowfit replay`` from the command line: the policy table, the chart,
--json, --plot, and the real corpus."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import EVERY_POLICY, require_shared
from hypothesis import given
from hypothesis import strategies as st
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
    # The file records no model: replay says it prices nothing rather than guess, and says nothing else.
    assert result.stderr == "note: the file records no model and no --model was given: dollars are not priced\n"
    golden("replay_six_reads.txt", result.stdout)


def test_json_has_every_step_with_hand_checked_numbers(run_cli: Run, in_data: Path) -> None:
    result = run_cli("replay", "six_reads.jsonl", "--budget", "3000", "--window", "4500", "--overhead", "0", "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert set(doc) == {
        "schema",
        "path",
        "name",
        "estimator",
        "budget",
        "window",
        "pricing",
        "cache_check",
        "runs",
        "skipped_files",
    }
    assert doc["skipped_files"] == []
    runs = {r["policy"]: r for r in doc["runs"]}
    assert list(runs) == EVERY_POLICY
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


@pytest.mark.parametrize("name", EVERY_POLICY)
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


# --------------------------------------------------------------------------
# Request logs: the recorded requests themselves (issue 12)

LOG = Path(__file__).parent / "data" / "anthropic_log" / "interleaved.jsonl"
# interleaved.jsonl (see tests/test_replay_requests.py): one conversation on lines 1, 3 and 4
# (usage 3+40+0, 3+110+40, 3+115+150), a title call on line 2, a quota probe on line 5.


def test_a_request_log_replays_its_longest_conversation_and_says_so(
    run_cli: Run, golden: Golden, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(LOG.parent)
    result = run_cli("replay", LOG.name, "--budget", "10000", "--overhead", "0", "--no-chart")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith(
        "note: interleaved.jsonl: replaying its longest conversation, conversation of 3 recorded requests, lines 1-4"
    )
    golden("replay_request_log.txt", result.stdout)


def test_request_log_json_steps_are_the_recorded_requests(run_cli: Run) -> None:
    result = run_cli("replay", str(LOG), "--budget", "10000", "--json", "-p", "windowfit")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["name"] == "conversation of 3 recorded requests, lines 1-4"
    steps = doc["runs"][0]["steps"]
    assert [(s["messages"], s["line"], s["measured_tokens"]) for s in steps] == [(1, 1, 43), (3, 3, 153), (5, 4, 268)]


def test_index_names_a_request_and_replays_its_conversation_up_to_it(run_cli: Run) -> None:
    result = run_cli("replay", str(LOG), "--budget", "10000", "--json", "-p", "windowfit", "--index", "2")
    assert result.exit_code == 0, result.stderr
    assert [s["line"] for s in json.loads(result.stdout)["runs"][0]["steps"]] == [1, 3]
    assert "is the newest of the 2 recorded requests" in result.stderr
    name = "request 2 (line 2, claude-3-5-haiku-20241022)"
    side = run_cli("replay", str(LOG), "--budget", "10000", "--json", "--name", name)
    assert side.exit_code == 0, side.stderr
    assert [s["line"] for s in json.loads(side.stdout)["runs"][0]["steps"]] == [2]


def test_a_log_of_equally_long_conversations_is_a_usage_error_listing_them(run_cli: Run, tmp_path: Path) -> None:
    # Lines 1 and 3 of the fixture (the conversation's first two requests) and the title call
    # twice more, extended: two conversations of 2 requests each, and the quota probe.
    rows = [json.loads(line) for line in LOG.read_text().splitlines()]
    title = json.loads(json.dumps(rows[1]))
    title["request"]["body"]["messages"] += [
        {"role": "assistant", "content": "A title"},
        {"role": "user", "content": "Shorter, please."},
    ]
    log = tmp_path / "two.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in (rows[0], rows[1], rows[2], title, rows[4])))
    result = run_cli("replay", str(log), "--budget", "10000")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[:3] == [
        "    2  conversation of 2 recorded requests, lines 1-3  (2 recorded requests, 3 messages)",
        "    3  conversation of 2 recorded requests, lines 2-4  (2 recorded requests, 3 messages)",
        "    4  request 5 (line 5, claude-3-5-haiku-20241022)  (1 recorded request, 1 messages)",
    ]
    assert lines[3].startswith(f"error: {log} holds 3 conversations, none longer than the others")
    assert result.stdout == ""


def test_replays_the_real_claude_trace_log(run_cli: Run) -> None:
    log = require_shared("corpus", "transcripts", "anthropic_messages", "zkcpku_claude-trace-dev__test-traffic.jsonl")
    result = run_cli("replay", str(log), "--budget", "20000", "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    # The Claude Code main loop: 13 sonnet requests on lines 6 to 33 (then its compaction at 35).
    assert doc["name"] == "conversation of 13 recorded requests, lines 6-33"
    for run in doc["runs"]:
        assert run["requests"] == 13
        assert all(s["measured_tokens"] is not None for s in run["steps"])


@given(
    st.lists(
        st.tuples(st.sampled_from(["fits", "cleared", "over-budget", "rounds-dropped"]), st.integers(0, 100)),
        min_size=1,
        max_size=5,
    ),
    st.integers(4, 60),
)
def test_outcome_shares_wrap_between_items_never_inside_one(shares: list[tuple[str, int]], width: int) -> None:
    from rich.console import Console, Group

    from windowfit.cli.render_replay import Items

    items = [f"{name} {share}%" for name, share in shares]
    console = Console(width=width, file=io.StringIO(), color_system=None)
    with console.capture() as captured:
        console.print(Group(Items(items)))  # as a table cell renders it (print would join it into a plain Text)
    lines = [line.rstrip() for line in captured.get().splitlines()]
    # nothing lost, nothing added (an item wider than the whole column folds, so compare without spaces)
    assert "".join(lines).replace(" ", "") == ", ".join(items).replace(" ", "")
    if all(len(item) + 1 <= width for item in items):  # room for each item: none is split
        pieces = [piece.rstrip(",") for line in lines for piece in line.split(", ")]
        assert pieces == items


def test_without_a_window_the_table_says_who_went_over_the_budget(run_cli: Run, in_data: Path) -> None:
    # six_reads at 3,000: legacy sends everything, so its last four requests (3,007, 4,009, 5,011 and 6,013)
    # are over the budget; windowfit's largest is 2,197. Nothing is rejected without --window: only this line says it.
    args = ("replay", "six_reads.jsonl", "--budget", "3000", "--no-chart", "-p", "windowfit", "-p", "legacy")
    result = run_cli(*args)
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "No --window, so nothing is rejected; requests sent over the budget: legacy 4" in text
    assert "budget: windowfit" not in text
    assert "sent over the budget" not in " ".join(run_cli(*args, "--window", "8000").stdout.split())


def test_a_reply_claude_code_wrote_itself_is_no_request(run_cli: Run) -> None:
    # The session's two "No response requested." replies (model <synthetic>, zero usage) were written by
    # Claude Code after an interruption: no request was sent for them, and the replay has no step there.
    session = require_shared("corpus", "transcripts", "claude_code", "moredip_session-share__general-tool-calls.jsonl")
    synthetic: set[int] = set()  # their lines
    replies: set[str] = set()  # the model's replies, by message id
    for number, line in enumerate(session.read_bytes().splitlines(), start=1):
        entry = json.loads(line) if line.startswith(b"{") else {}  # the corpus file opens with comment lines
        message = entry.get("message") if isinstance(entry, dict) else None
        if entry.get("type") == "assistant" and isinstance(message, dict):
            if message.get("model") == "<synthetic>":
                synthetic.add(number)
            else:
                replies.add(message["id"])
    result = run_cli("replay", str(session), "--budget", "40000", "-p", "send-everything", "--json")
    assert result.exit_code == 0, result.stderr
    (run,) = json.loads(result.stdout)["runs"]
    assert synthetic and not synthetic & {s["line"] for s in run["steps"]}
    assert run["requests"] == len(replies)  # one request a reply of the model's (one message id)
