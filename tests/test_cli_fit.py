"""``windowfit fit``: wiring, streams, exit codes, files written, golden diffs.

The fixtures in ``tests/data/fit/`` are built so that each ends in one
outcome; every number below is hand-computed from them (seed rule: ASCII
chars / 4, rounded up once per message; with ``--overhead 0`` nothing else;
with default overheads +4 per message, +3 per block, +3 more for the text
block nested in a tool result). Tool results are lines of 16 ASCII chars, so
``n`` lines are ``4n`` tokens.

Two strings recur in the hand computations:

- the truncation note is 166 ASCII chars: ``ceil(166/4) = 42`` tokens with
  ``--overhead 0``;
- a stub is 171 chars plus the tool name, the call id and the size written with
  thousands separators: ``read``/``t1``/``1,000`` is 171+4+2+5 = 182 chars,
  ``ceil(182/4) = 46`` tokens; ``read``/``t2``/``500`` is 180 chars = 45 tokens.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

from windowfit.cli.exit_codes import ExitCode
from windowfit.fitting.notice import NOTICE
from windowfit.fitting.transcript import Dialect

DATA = Path(__file__).parent / "data" / "fit"

Run = Callable[..., Result]
Golden = Callable[[str, str], None]

# file, options, outcome, exit code
CASES: dict[str, tuple[str, tuple[str, ...], str, int]] = {
    "fits": ("fits.jsonl", ("--budget", "100"), "fits", 0),
    "cleared": ("cleared.jsonl", ("--budget", "2000", "--overhead", "0"), "cleared", 0),
    "turns_dropped": ("turns.jsonl", ("--budget", "500", "--overhead", "0"), "turns-dropped", 0),
    "rounds_dropped": (
        "rounds.jsonl",
        ("--budget", "500", "--overhead", "0", "--min-clear-ratio", "10"),
        "rounds-dropped",
        0,
    ),
    "too_long": ("long/toolong.jsonl", ("--budget", "1000", "--overhead", "0"), "too-long", 1),
}
FITTING_CASES = [name for name, case in CASES.items() if case[2] != "too-long"]

# Hand-computed plans, per case: the keys of the JSON plan that matter.
EXPECTED: dict[str, dict[str, Any]] = {
    # fits.jsonl, default overheads. System "You are terse." 14 chars -> 4 + 4 + 3 = 11.
    # "Hi" 1+7=8; "Hello." 2+7=9; "List files." 3+7=10;
    # [text "Listing.", tool_use ls {}] 8+2+2=12 chars -> 3, + 4 + 3 + 3 = 13;
    # [tool_result "a.txt"] 2 + 4 + 3 + 3 = 12; "One file." 3+7=10.  11+62 = 73 <= 100.
    "fits": {
        "outcome": "fits",
        "tokens_before": 73,
        "tokens_after": 73,
        "preamble_tokens": 11,
        "stages": [],
        "message_tokens": [8, 9, 10, 13, 12, 10],
        # the result alone: 2 (text) + 3 (tool_result block) + 3 (nested text block)
        "results": [("f1", 8, "protected")],
        "batches": [],
        "dropped": [],
        "kept": [],
        "cause": None,
    },
    # cleared.jsonl, --overhead 0. System "You read files." 15 chars -> 4. User 19 chars -> 5.
    # Each call: "read" + '{"path":"a.txt"}' = 20 chars -> 5 (six of them). "Done." -> 2.
    # Results 250/125/100/75/50/40 lines -> 1000/500/400/300/200/160.
    # Before: 4 + 5 + 30 + 2560 + 2 = 2601 > 2000.
    # Protected (allowance 2000/4 = 500): t6 160, + t5 200 = 360, + t4 300 = 660 > 500 -> {t5, t6}.
    # Candidates t1..t4 (each >= 2 x its ~45-token stub); batch 1 = t1..t4.
    # Saved (1000-46) + (500-45) + (400-45) + (300-45) = 2019; after 2601 - 2019 = 582 <= 2000.
    "cleared": {
        "outcome": "cleared",
        "tokens_before": 2601,
        "tokens_after": 582,
        "preamble_tokens": 4,
        "stages": [1],
        "message_tokens": [5, 5, 1000, 5, 500, 5, 400, 5, 300, 5, 200, 5, 160, 2],
        "results": [
            ("t1", 1000, "cleared"),
            ("t2", 500, "cleared"),
            ("t3", 400, "cleared"),
            ("t4", 300, "cleared"),
            ("t5", 200, "protected"),
            ("t6", 160, "protected"),
        ],
        "batches": [{"index": 0, "call_ids": ["t1", "t2", "t3", "t4"], "tokens_saved": 2019}],
        "dropped": [],
        "kept": [],
        "cause": None,
    },
    # turns.jsonl, --overhead 0. Texts are 20-char units: x20 = 400 chars = 100, x10 = 50.
    # T1 = [Q1 100, A1 100]; T2 = [Q2 100, call ls '{"dir":"."}' 13 chars -> 4, result 11 chars -> 3, A2 100];
    # T3 = [Q3 100, A3 100]; T4 = [Q4 50, A4 50].  Before 707 > 500.
    # Stage 1: the only result is the newest (protected): nothing to clear, stage 1 does not count.
    # Stage 2: head = message 0 (100) + note 42 = 142; + T4 100 = 242; + T3 200 = 442; + T2 207 = 649 > 500.
    # Dropped: the tail of T1 (message 1, 100) and T2 (messages 2-5, 207).
    "turns_dropped": {
        "outcome": "turns-dropped",
        "tokens_before": 707,
        "tokens_after": 442,
        "preamble_tokens": 0,
        "stages": [2],
        "message_tokens": [100, 100, 100, 4, 3, 100, 100, 100, 50, 50],
        "results": [("s1", 3, "protected")],
        "batches": [],
        "dropped": [
            {"kind": "turn", "start": 1, "stop": 2, "tokens": 100},
            {"kind": "turn", "start": 2, "stop": 6, "tokens": 207},
        ],
        "kept": [[6, 10]],
        "cause": None,
    },
    # rounds.jsonl, --overhead 0, --min-clear-ratio 10. One user message of 40 chars -> 10, then four
    # rounds: call "read" + '{"path":"ch1.txt"}' = 22 chars -> 6, result 50 lines = 200.  Before 834 > 500.
    # Stubs are 180 chars = 45 tokens; 200 < 10 x 45, so c1..c3 are too small; c4 is the newest (protected).
    # Stage 2: one turn only, nothing after the head. Stage 3: 10 + 42 = 52; + 206 = 258; + 206 = 464;
    # + 206 = 670 > 500 -> keep the newest two rounds (messages 5-8), drop rounds 1-2 and 3-4.
    "rounds_dropped": {
        "outcome": "rounds-dropped",
        "tokens_before": 834,
        "tokens_after": 464,
        "preamble_tokens": 0,
        "stages": [2, 3],
        "message_tokens": [10, 6, 200, 6, 200, 6, 200, 6, 200],
        "results": [
            ("c1", 200, "too-small"),
            ("c2", 200, "too-small"),
            ("c3", 200, "too-small"),
            ("c4", 200, "protected"),
        ],
        "batches": [],
        "dropped": [
            {"kind": "round", "start": 1, "stop": 3, "tokens": 206},
            {"kind": "round", "start": 3, "stop": 5, "tokens": 206},
        ],
        "kept": [[5, 9]],
        "cause": None,
    },
    # long/toolong.jsonl, --overhead 0. "Read the log." 13 chars -> 4; call 22 chars -> 6;
    # result 750 lines = 12000 chars = 3000.  Before 3010 > 1000.
    # Nothing clearable (one result, the newest); no second turn; stage 3: 4 + 42 = 46, + the round 3006
    # = 3052 > 1000 -> too-long, and the smallest attempt (head, note, newest round) is 3052.
    # Cause: the newest result (3000) is, by itself, over the budget.
    "too_long": {
        "outcome": "too-long",
        "tokens_before": 3010,
        "tokens_after": 3052,
        "preamble_tokens": 0,
        "stages": [2, 3],
        "message_tokens": [4, 6, 3000],
        "results": [("r1", 3000, "protected")],
        "batches": [],
        "dropped": [],
        "kept": [[1, 3]],
        "cause": "the newest tool result alone is 3,000 tokens, over the 1,000 budget",
    },
}

PLAN_KEYS = {
    "schema",
    "outcome",
    "tokens_before",
    "tokens_after",
    "stages",
    "messages",
    "results",
    "batches",
    "dropped",
    "cause",
    "person_message",
    "violations",
}


@pytest.fixture
def in_data(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run from ``tests/data/fit`` so that paths in the output are short and stable."""
    monkeypatch.chdir(DATA)
    return DATA


@pytest.fixture
def data_copy(tmp_path: Path) -> Path:
    """A private copy of the fixtures, for tests that write next to them."""
    target = tmp_path / "fit"
    shutil.copytree(DATA, target)
    return target


def fit(run_cli: Run, case: str, *extra: str) -> Result:
    file, options, _, _ = CASES[case]
    return run_cli("fit", file, *options, *extra)


def flat(text: str) -> str:
    """Text with rich's line wrapping undone."""
    return " ".join(text.split())


def plan_json(run_cli: Run, case: str, *extra: str) -> dict[str, Any]:
    result = fit(run_cli, case, "--json", *extra)
    assert result.exit_code == CASES[case][3], result.stderr
    assert result.stderr == ""
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def result_texts(lines: list[dict[str, Any]]) -> dict[str, str]:
    """call id -> the text of its (Anthropic-shaped) tool result."""
    texts = {}
    for line in lines:
        content = line["content"]
        if isinstance(content, list):
            for block in content:
                if block.get("type") == "tool_result":
                    inner = block["content"]
                    texts[block["tool_use_id"]] = (
                        inner if isinstance(inner, str) else "".join(b["text"] for b in inner if b["type"] == "text")
                    )
    return texts


# --------------------------------------------------------------------------
# The diff and the plan, per outcome


@pytest.mark.parametrize("case", list(CASES))
def test_summary_diff_matches_golden(run_cli: Run, golden: Golden, in_data: Path, case: str) -> None:
    result = fit(run_cli, case)
    assert result.exit_code == CASES[case][3]
    assert result.stderr == ""
    assert flat(result.stdout).startswith(f"{CASES[case][0]} {CASES[case][2]}")
    golden(f"fit_{case}.txt", result.stdout)


def test_full_diff_matches_golden(run_cli: Run, golden: Golden, in_data: Path) -> None:
    result = fit(run_cli, "turns_dropped", "--diff", "full")
    assert result.exit_code == 0
    assert result.stderr == ""
    text = result.stdout
    # every input message has a row, and the note sits right after the head (message 0)
    assert "The request, message by message" in text
    fates = [cells[4].strip() for row in text.splitlines() if len(cells := row.split("│")) == 6 and cells[4].strip()]
    assert fates == ["head", "note"] + ["dropped"] * 5 + ["kept"] * 4
    golden("fit_turns_dropped_full.txt", text)


@pytest.mark.parametrize("case", list(CASES))
def test_json_plan_matches_golden_and_hand_computation(run_cli: Run, golden: Golden, in_data: Path, case: str) -> None:
    result = fit(run_cli, case, "--json")
    assert result.exit_code == CASES[case][3]
    assert result.stderr == ""
    plan = json.loads(result.stdout)
    assert plan.keys() >= PLAN_KEYS
    assert plan["schema"] == 1
    assert set(plan["violations"]) == {"input", "output"}
    want = EXPECTED[case]
    for key in ("outcome", "tokens_before", "tokens_after", "preamble_tokens", "stages", "cause", "kept"):
        assert plan[key] == want[key], key
    assert [m["tokens"] for m in plan["messages"]] == want["message_tokens"]
    assert [(r["call_id"], r["tokens"], r["status"]) for r in plan["results"]] == want["results"]
    assert plan["batches"] == want["batches"]
    assert plan["dropped"] == want["dropped"]
    assert plan["violations"] == {"input": [], "output": []}
    if want["outcome"] == "too-long":
        message = plan["person_message"]
        assert "grown too long for the model to read in one go" in message
        assert "Start a new chat" in message
        assert want["cause"] in message
    else:
        assert plan["person_message"] is None
    golden(f"fit_{case}.json", result.stdout)


def test_json_too_long_holds_the_smallest_request_part_by_part(run_cli: Run, in_data: Path) -> None:
    # toolong.jsonl at 1,000 (see EXPECTED): head 4 + note 42 + the newest round (6 + 3,000) = 3,052.
    plan = plan_json(run_cli, "too_long")
    assert plan["too_long"] == {
        "budget": 1000,
        "tokens": 3052,
        "parts": [
            {"kind": "preamble", "label": "system prompt and tools", "tokens": 0, "start": None, "stop": None},
            {"kind": "head", "label": "first message", "tokens": 4, "start": 0, "stop": 1},
            {"kind": "note", "label": "truncation note", "tokens": 42, "start": None, "stop": None},
            {"kind": "newest", "label": "newest tool round", "tokens": 3006, "start": 1, "stop": 3},
        ],
        "alone": {"kind": "result", "label": "the newest tool result", "tokens": 3000, "call_id": "r1"},
        "sentence": plan["cause"],
    }
    assert plan["crossed"] == "budget"


def test_json_message_fates_follow_the_plan(run_cli: Run, in_data: Path) -> None:
    # turns.jsonl at 500: message 0 is the head, 1-5 dropped, 6-9 kept (see EXPECTED)
    plan = plan_json(run_cli, "turns_dropped")
    assert [m["fate"] for m in plan["messages"]] == ["head"] + ["dropped"] * 5 + ["kept"] * 4
    # lines are 1-based and the file has no system line
    assert [m["line"] for m in plan["messages"]] == list(range(1, 11))


def test_budget_boundary_is_inclusive(run_cli: Run, in_data: Path) -> None:
    # fits.jsonl is 73 tokens with default overheads (see EXPECTED["fits"])
    assert plan_json(run_cli, "fits", "--budget", "73")["outcome"] == "fits"
    # At 72, stage 1 has nothing to clear (f1 is the newest) and the truncation note alone costs
    # ceil(166/4) + 4 + 3 = 49: head 11 + 8 + 49 = 68, + the opener "List files." 10 = 78 > 72.
    result = fit(run_cli, "fits", "--budget", "72", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["outcome"] == "too-long"


def test_rounds_case_clears_instead_with_the_default_ratio(run_cli: Run, in_data: Path) -> None:
    # rounds.jsonl with --min-clear-ratio 2: c1..c3 (200 each) are >= 2 x 45, one short batch of 3.
    # Saved 3 x (200 - 45) = 465; 834 - 465 = 369 <= 500.
    result = run_cli("fit", "rounds.jsonl", "--budget", "500", "--overhead", "0", "--json")
    plan = json.loads(result.stdout)
    assert plan["outcome"] == "cleared"
    assert plan["tokens_after"] == 369
    assert plan["batches"] == [{"index": 0, "call_ids": ["c1", "c2", "c3"], "tokens_saved": 465}]


def test_batch_size_one_clears_only_what_is_needed(run_cli: Run, in_data: Path) -> None:
    # cleared.jsonl at 2000: clearing t1 alone saves 1000 - 46 = 954, and 2601 - 954 = 1647 <= 2000,
    # so batches of 1 clear one result where batches of 4 clear four.
    one = plan_json(run_cli, "cleared", "--batch-size", "1")
    four = plan_json(run_cli, "cleared")
    assert one["batches"] == [{"index": 0, "call_ids": ["t1"], "tokens_saved": 954}]
    assert one["tokens_after"] == 1647
    assert [r["status"] for r in one["results"]] == ["cleared"] + ["candidate"] * 3 + ["protected"] * 2
    assert len(four["batches"][0]["call_ids"]) == 4


# --------------------------------------------------------------------------
# Writing the request


@pytest.mark.parametrize("case", FITTING_CASES)
def test_output_file_loads_again_and_reports_under_the_budget(
    run_cli: Run, in_data: Path, tmp_path: Path, case: str
) -> None:
    target = tmp_path / "out.jsonl"
    result = fit(run_cli, case, "-o", str(target))
    assert result.exit_code == 0
    assert f"wrote {target}" in flat(result.stdout)
    budget = CASES[case][1][1]
    overhead = ("--overhead", "0") if "--overhead" in CASES[case][1] else ()
    report = run_cli("report", str(target), "--budget", budget, *overhead, "--json")
    assert report.exit_code == 0, report.stderr
    (doc,) = json.loads(report.stdout)["transcripts"]
    assert doc["fits_budget"] is True
    # the reloaded request is estimated exactly as the plan said it would be
    assert doc["tokens"] == EXPECTED[case]["tokens_after"]


def test_cleared_output_keeps_pairs_and_stubs_the_oldest(run_cli: Run, in_data: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    assert fit(run_cli, "cleared", "-o", str(target)).exit_code == 0
    lines = read_jsonl(target)
    # system line first, then the 14 messages unchanged in number
    assert lines[0]["role"] == "system"
    assert len(lines) == 15
    texts = result_texts(lines)
    for cid, size in (("t1", "1,000"), ("t2", "500"), ("t3", "400"), ("t4", "300")):
        assert texts[cid].startswith("[windowfit: tool result cleared]")
        assert f"(call {cid}, about {size} tokens)" in texts[cid]
        assert "Run the tool again" in texts[cid]
    assert texts["t5"] == "".join(f"e.txt line {i:04d}\n" for i in range(1, 51))
    assert texts["t6"] == "".join(f"f.txt line {i:04d}\n" for i in range(1, 41))


def test_output_to_stdout_puts_the_diff_on_stderr(run_cli: Run, in_data: Path) -> None:
    result = fit(run_cli, "cleared", "-o", "-")
    assert result.exit_code == 0
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["role"] for line in lines[:3]] == ["system", "user", "assistant"]
    assert len(lines) == 15
    assert "cleared.jsonl  cleared" in result.stderr
    assert "wrote" not in result.stderr


def test_output_to_stdout_when_too_long_writes_nothing_there(run_cli: Run, in_data: Path) -> None:
    result = fit(run_cli, "too_long", "-o", "-")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "grown too long" in flat(result.stderr)


def test_to_anthropic_writes_a_request_body(run_cli: Run, in_data: Path, tmp_path: Path) -> None:
    target = tmp_path / "body.json"
    assert fit(run_cli, "cleared", "--to", "anthropic", "-o", str(target)).exit_code == 0
    body = json.loads(target.read_text(encoding="utf-8"))
    assert body["system"] == [{"type": "text", "text": "You read files."}]
    assert len(body["messages"]) == 14
    assert {m["role"] for m in body["messages"]} == {"user", "assistant"}
    assert result_texts(body["messages"])["t1"].startswith("[windowfit: tool result cleared]")


def test_to_openai_writes_tool_messages_and_system_first(run_cli: Run, in_data: Path, tmp_path: Path) -> None:
    target = tmp_path / "body.json"
    assert fit(run_cli, "cleared", "--to", "openai", "-o", str(target)).exit_code == 0
    body = json.loads(target.read_text(encoding="utf-8"))
    assert "system" not in body
    messages = body["messages"]
    assert messages[0] == {"role": "system", "content": "You read files."}
    tools = [m for m in messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tools] == ["t1", "t2", "t3", "t4", "t5", "t6"]
    assert tools[0]["content"].startswith("[windowfit: tool result cleared]")
    # each tool message follows the assistant message that called it
    for i, message in enumerate(messages):
        if message["role"] == "tool":
            assert messages[i - 1]["tool_calls"][0]["id"] == message["tool_call_id"]


def test_add_notice_puts_the_notice_in_the_written_system_prompt(run_cli: Run, in_data: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    result = fit(run_cli, "cleared", "--add-notice", "-o", str(target))
    assert result.exit_code == 0
    assert "added the context-management notice" in flat(result.stdout)
    system = read_jsonl(target)[0]
    assert system["role"] == "system"
    assert [b["text"] for b in system["content"]] == ["You read files.", NOTICE]
    # a second pass over the output finds the notice and adds nothing
    again = run_cli("fit", str(target), "--budget", "2000", "--overhead", "0", "--add-notice", "--json")
    assert json.loads(again.stdout)["notice_added"] is False


def test_refuses_to_overwrite_its_input(run_cli: Run, data_copy: Path) -> None:
    source = data_copy / "cleared.jsonl"
    before = source.read_bytes()
    # the same file spelled another way
    other_spelling = data_copy / "long" / ".." / "cleared.jsonl"
    for target in (source, other_spelling):
        result = run_cli("fit", str(source), "--budget", "2000", "--overhead", "0", "-o", str(target))
        assert result.exit_code == 4
        assert "refusing to overwrite the input" in flat(result.stderr)
        assert source.read_bytes() == before


def test_too_long_exits_1_tells_the_person_and_writes_nothing(run_cli: Run, in_data: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    result = fit(run_cli, "too_long", "-o", str(target))
    assert result.exit_code == 1
    text = flat(result.stdout)
    assert "grown too long for the model to read in one go" in text
    assert "Start a new chat" in text
    assert "the newest tool result alone is 3,000 tokens, over the 1,000 budget" in text
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_invalid_json_exits_3_with_file_line_column(run_cli: Run, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    # line 2, column 34 is the "o" of oops:
    # {"role": "assistant", "content": oops}
    # 1 + len('"role"') 6 + ':' + ' ' = 9; '"assistant"' ends at 20; ', ' 22; '"content"' ends at 31; ': ' 33; o 34
    bad.write_text('{"role":"user","content":"hi"}\n{"role": "assistant", "content": oops}\n', encoding="utf-8")
    result = run_cli("fit", str(bad), "--budget", "10")
    assert result.exit_code == 3
    assert f"{bad}:2:34" in flat(result.stderr)
    assert "invalid JSON" in result.stderr
    assert result.stdout == ""


def test_json_with_output_to_stdout_is_a_usage_error(run_cli: Run, in_data: Path) -> None:
    result = fit(run_cli, "cleared", "--json", "-o", "-")
    assert result.exit_code == 2
    assert "--json" in result.stderr
    assert result.stdout == ""


def test_missing_budget_is_a_usage_error(run_cli: Run, in_data: Path) -> None:
    result = run_cli("fit", "cleared.jsonl")
    assert result.exit_code == 2
    assert "--budget" in result.stderr


def test_writing_into_a_missing_directory_exits_4(run_cli: Run, in_data: Path, tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir" / "out.jsonl"
    result = fit(run_cli, "cleared", "-o", str(target))
    assert result.exit_code == 4
    assert "cannot write" in flat(result.stderr)
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("existing", [False, True])
def test_output_is_written_atomically(
    run_cli: Run, in_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, existing: bool
) -> None:
    target = tmp_path / "out.jsonl"
    if existing:
        target.write_bytes(b"old contents\n")

    def fail_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail_replace)
    result = fit(run_cli, "cleared", "-o", str(target))
    assert result.exit_code == 4
    assert "No space left on device" in flat(result.stderr)
    # no partial target, no temporary file left behind
    assert list(tmp_path.iterdir()) == ([target] if existing else [])
    if existing:
        assert target.read_bytes() == b"old contents\n"


def test_the_input_file_is_never_modified(run_cli: Run, data_copy: Path, tmp_path: Path) -> None:
    source = data_copy / "cleared.jsonl"
    before = source.read_bytes()
    out = tmp_path / "out.jsonl"
    assert run_cli("fit", str(source), "--budget", "2000", "--overhead", "0", "-o", str(out)).exit_code == 0
    assert source.read_bytes() == before


def test_same_input_gives_byte_identical_output(run_cli: Run, in_data: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert fit(run_cli, "rounds_dropped", "-o", str(a)).exit_code == 0
    assert fit(run_cli, "rounds_dropped", "-o", str(b)).exit_code == 0
    assert a.read_bytes() == b.read_bytes()


def test_written_file_gets_the_usual_permissions(run_cli: Run, in_data: Path, tmp_path: Path) -> None:
    # Regression: the temporary file behind the atomic write is created 0600; the
    # output must get the mode a plain open() gives (0666 less the umask).
    out = tmp_path / "out.jsonl"
    result = fit(run_cli, "cleared", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask


# --------------------------------------------------------------------------
# Issue 7 item 6: a request body that can be sent

SESSION = Path(__file__).parent / "data" / "claude_code" / "parallel.jsonl"
READ_TOOL = {
    "type": "function",
    "function": {"name": "Read", "description": "Read a file.", "parameters": {"type": "object"}},
}


def _body_passes_the_provider_rules(path: Path, dialect: Dialect) -> dict[str, Any]:
    from windowfit.fitting.validate import check_request
    from windowfit.fitting.wire.bodies import transcript_from_body

    body: dict[str, Any] = json.loads(path.read_bytes())
    transcript = transcript_from_body(body, dialect=dialect)
    assert check_request(transcript, dialect) == ()
    return body


@pytest.mark.parametrize("to", ["anthropic", "openai"])
def test_a_log_without_system_or_tools_warns_naming_what_the_body_lacks(
    run_cli: Run, tmp_path: Path, to: Dialect
) -> None:
    target = tmp_path / "request.json"
    result = run_cli("fit", str(SESSION), "--budget", "100000", "--to", to, "-o", str(target))
    assert result.exit_code == 0
    body = _body_passes_the_provider_rules(target, to)
    assert body["model"] == "claude-opus-4-5-20251101"  # Claude Code records the model on each reply
    assert "tools" not in body
    warning = flat(result.stderr)
    lacks = (
        "max_tokens, system prompt or tool definitions" if to == "anthropic" else "system prompt or tool definitions"
    )
    assert f"warning: the {to} request body has no {lacks}: {SESSION} does not record them" in warning
    assert "the API rejects tool calls without tool definitions" in warning
    assert "--system FILE and --tools FILE" in warning
    assert "warning" not in result.stdout


@pytest.mark.parametrize("to", ["anthropic", "openai"])
def test_given_system_tools_and_limits_reach_the_body_and_the_budget(run_cli: Run, tmp_path: Path, to: Dialect) -> None:
    system, tools, target = tmp_path / "system.txt", tmp_path / "tools.json", tmp_path / "request.json"
    system.write_text("You are a careful coding agent.")  # 31 chars: 8 tokens with --overhead 0
    tools.write_text(json.dumps([READ_TOOL]))
    given = ("--system", str(system), "--tools", str(tools), "--max-tokens", "4096", "--model", "claude-x")
    args = ("fit", str(SESSION), "--budget", "100000", "--overhead", "0", "--to", to, *given)
    result = run_cli(*args, "-o", str(target))
    assert result.exit_code == 0
    assert result.stderr == ""  # nothing is missing
    body = _body_passes_the_provider_rules(target, to)
    assert body["model"] == "claude-x"
    if to == "anthropic":
        assert body["max_tokens"] == 4096
        assert body["system"] == [{"type": "text", "text": "You are a careful coding agent."}]
        assert body["tools"] == [{"name": "Read", "description": "Read a file.", "input_schema": {"type": "object"}}]
    else:
        assert body["max_completion_tokens"] == 4096
        assert body["messages"][0] == {"role": "system", "content": "You are a careful coding agent."}
        assert body["tools"] == [READ_TOOL]
    # The given parts are counted: "Read" 4 + "Read a file." 12 + '{"type":"object"}' 17 = 33 chars -> 9; + 8.
    plan = json.loads(run_cli(*args, "--json").stdout)
    assert plan["preamble_tokens"] == 8 + 9


def test_a_bad_tools_file_exits_3(run_cli: Run, tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text('{"name": "Read"}')
    result = run_cli("fit", str(SESSION), "--budget", "100000", "--tools", str(tools))
    assert result.exit_code == 3
    assert "expected a JSON array of tool definitions" in flat(result.stderr)


# Issue 8: what fit -o writes

ONLY_AN_ORPHAN = b'{"role":"user","content":[{"type":"tool_result","tool_use_id":"t9","content":"x"}]}\n'
RESULT_TWICE = (
    b'{"role":"user","content":"hi"}\n'
    b'{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read","input":{}}]}\n'
    b'{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a"},'
    b'{"type":"tool_result","tool_use_id":"t1","content":"a"}]}\n'
)
ONLY_REASONING = (
    b'{"timestamp":"2025-12-04T09:00:00.000Z","type":"session_meta","payload":{"id":"s","timestamp":'
    b'"2025-12-04T09:00:00.000Z","cwd":"/","originator":"codex_cli_rs","cli_version":"0.58.0",'
    b'"instructions":null,"source":"cli","model_provider":"openai"}}\n'
    b'{"timestamp":"2025-12-04T09:00:01.000Z","type":"response_item","payload":{"type":"reasoning","id":"rs_1",'
    b'"summary":[{"type":"summary_text","text":"**Thinking**"}],"encrypted_content":"gAAAA"}}\n'
)


@pytest.mark.parametrize(
    ("name", "data", "why"),
    [
        ("orphan.jsonl", ONLY_AN_ORPHAN, "the request holds no messages"),
        ("rollout.jsonl", ONLY_REASONING, "no user message (only reasoning)"),
    ],
)
def test_an_unsendable_request_is_refused_and_nothing_is_written_issue_8(
    run_cli: Run, tmp_path: Path, name: str, data: bytes, why: str
) -> None:
    # Issue 8: an orphan alone gave "fits" and a 0-byte file; a reasoning item alone, a body no provider accepts.
    source = tmp_path / name
    source.write_bytes(data)
    target = tmp_path / "out.json"
    result = run_cli("fit", str(source), "--budget", "1000", "-o", str(target))
    assert result.exit_code == ExitCode.BAD_INPUT
    assert not target.exists()
    assert result.stdout == ""
    stderr = flat(result.stderr)
    assert f"{source}: nothing sendable to write" in stderr and why in stderr


def test_a_result_recorded_twice_is_repaired_not_a_crash_issue_8(run_cli: Run, tmp_path: Path) -> None:
    # Issue 8: an AssertionError; the repair dropped both copies and left the call unanswered.
    source = tmp_path / "twice.jsonl"
    source.write_bytes(RESULT_TWICE)
    target = tmp_path / "out.jsonl"
    result = run_cli("fit", str(source), "--budget", "1000", "-o", str(target), "--json")
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)
    assert [(r["kind"], r["defect"], r["line"]) for r in plan["repairs"]] == [
        ("dropped-duplicate-result", "duplicate-result", 3)
    ]
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    assert [b["tool_use_id"] for b in lines[2]["content"]] == ["t1"]


def test_a_body_with_a_system_prompt_and_no_messages_is_too_long_not_a_crash_issue_8(
    run_cli: Run, tmp_path: Path
) -> None:
    source = tmp_path / "system_only.json"
    source.write_text(json.dumps({"system": "You are a careful agent. " * 20, "messages": []}))
    target = tmp_path / "out.json"
    result = run_cli("fit", str(source), "--budget", "10", "-o", str(target))
    assert result.exit_code == ExitCode.FAILED
    assert not target.exists()
    assert "the system prompt and tool definitions alone are" in flat(result.stdout)


def test_fit_plan_says_which_size_it_used(run_cli: Run) -> None:
    parallel = str(Path(__file__).parent / "data" / "claude_code" / "parallel.jsonl")
    doc = json.loads(run_cli("fit", parallel, "--budget", "100000", "--json").stdout)
    assert (doc["size_source"], doc["preamble_source"], doc["tokens_before"]) == ("anchored", "inferred", 153)
    doc = json.loads(run_cli("fit", parallel, "--budget", "100000", "--json", "--size", "estimate").stdout)
    assert doc["size_source"] == "estimate"
    assert doc["tokens_before"] == doc["preamble_tokens"] + sum(m["tokens"] for m in doc["messages"])


# --------------------------------------------------------------------------
# The step rules (SPEC section 3, issue 14 item 5)


def test_cut_steps_move_the_cut_to_a_step_position_and_the_plan_records_it(run_cli: Run, in_data: Path) -> None:
    # turns.jsonl at 500 (--overhead 0): messages of 100, 100, 100, 4, 3, 100, 100, 100, 50, 50 tokens;
    # turns start at 0 (the head), 2, 4, 6, 8. Without steps the earliest tail that fits starts at 6.
    # Steps of 410: the size before 2, 4, 6 is 200, 304, 407 (under one step), before 8 it is 607,
    # so 8 is the first step position after 2 (always one); the request keeps the head (100),
    # the note (42) and messages 8-9 (100): 242 tokens.
    plain = plan_json(run_cli, "turns_dropped")
    assert (plain["cut_at"], plain["kept"], plain["options"]["cut_step"]) == (None, [[6, 10]], None)
    stepped = plan_json(run_cli, "turns_dropped", "--cut-step", "410")
    assert (stepped["outcome"], stepped["cut_at"], stepped["kept"]) == ("turns-dropped", 8, [[8, 10]])
    assert stepped["tokens_after"] == 242 and stepped["options"]["cut_step"] == 410
    # Steps of 1,000: no turn after 2 is a step position; stage 3 keeps the last turn's opening message
    # and its one round, from the first round start (always a step position).
    whole = plan_json(run_cli, "turns_dropped", "--cut-step", "1000")
    assert (whole["outcome"], whole["cut_at"], whole["kept"]) == ("rounds-dropped", 9, [[8, 9], [9, 10]])
    auto = plan_json(run_cli, "turns_dropped", "--cut-step", "auto", "--batch-tokens", "300")
    assert (auto["options"]["cut_step"], auto["options"]["batch_tokens"]) == (125, 300)
    text = flat(fit(run_cli, "turns_dropped", "--cut-step", "410").stdout)
    assert "step rules: cuts at steps of 410 tokens: this one at message 8 (line 9)" in text
    assert "step rules" not in flat(fit(run_cli, "turns_dropped").stdout)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--cut-step", "often"), "--cut-step takes a number of tokens or auto, not 'often'"),
        (("--cut-step", "0"), "--cut-step must be at least 1 token, not 0"),
        (("--batch-size", "0"), "the batch size must be at least 1 (0 only with batch tokens), not 0"),
    ],
)
def test_bad_step_options_are_a_usage_error(
    run_cli: Run, in_data: Path, options: tuple[str, ...], message: str
) -> None:
    for command in ("fit", "check"):
        result = run_cli(command, "turns.jsonl", "--budget", "500", *options)
        assert result.exit_code == 2
        assert message in flat(result.stderr) and "Traceback" not in result.stderr


def test_a_carried_cut_stays_while_the_request_fits_from_it(run_cli: Run, in_data: Path) -> None:
    # turns.jsonl at 500 (--overhead 0), as above: messages of 100, 100, 100, 4, 3, 100, 100, 100, 50, 50
    # tokens; turns start at 0 (the head), 2, 6 and 8. A fresh fit keeps messages 6-9 (442 tokens).
    # Carried from 8 (an earlier request was cut there): head 100 + note 42 + messages 8-9 (100) = 242
    # fits, so the cut stays at 8 and no stage runs.
    kept = plan_json(run_cli, "turns_dropped", "--carried-cut", "8")
    assert (kept["outcome"], kept["stages"], kept["kept"], kept["tokens_after"]) == (
        "turns-dropped",
        [],
        [[8, 10]],
        242,
    )
    assert (kept["options"]["carried_cut"], kept["cut_at"], kept["cut"]) == (8, 8, 8)
    # Carried from 3 (the round inside turn 2): 100 + 42 + "Q2" 100 + messages 3-9 (407) = 649 is over,
    # so stage 2 keeps the first turn from 3 on that fits: from 6, 100 + 42 + 300 = 442.
    moved = plan_json(run_cli, "turns_dropped", "--carried-cut", "3")
    assert (moved["stages"], moved["kept"], moved["tokens_after"], moved["cut"]) == ([2], [[6, 10]], 442, 6)
    plain = plan_json(run_cli, "turns_dropped")
    assert (plain["options"]["carried_cut"], plain["cut"]) == (None, 6)
    text = flat(fit(run_cli, "turns_dropped", "--carried-cut", "8").stdout)
    assert "carried cut: message 8 (line 9), an earlier request's: the messages before it stay out" in text


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--carried-cut", "4"), "turns.jsonl:5: the carried cut 4 is not a cut position of this transcript: it is"),
        (("--carried-cut", "10"), "it is past the last message (the transcript has 10)"),
        (("--carried-cut", "0"), "Invalid value for '--carried-cut'"),
        (("--carried-cut", "8", "--all", "-o", "out"), "--carried-cut is a message index of one conversation"),
    ],
)
def test_a_carried_cut_that_cannot_be_is_a_usage_error(
    run_cli: Run, in_data: Path, options: tuple[str, ...], message: str
) -> None:
    result = run_cli("fit", "turns.jsonl", "--budget", "500", *options)
    assert result.exit_code == ExitCode.USAGE, result.stderr
    assert message in flat(result.stderr) and "Traceback" not in result.stderr
