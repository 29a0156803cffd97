"""``windowfit audit``: golden output (a bilingual fixture, a sample transcript,
a Claude Code session with the provider's counts), the JSON document's keys,
``--suggest``, and the errors: a missing extra, an unknown tokenizer, bad input."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest
from conftest import require_shared
from typer.testing import Result

from windowfit.cli.exit_codes import ExitCode
from windowfit.fitting.tokenizers import load_tokenizer

Run = Callable[..., Result]
Golden = Callable[[str, str], None]

ROOT = Path(__file__).parents[1]
BILINGUAL = "tests/data/report/bilingual.jsonl"
"""Six messages, Russian and English (tests/test_cli_report.py counts them by hand)."""
WITH_USAGE = "tests/data/claude_code/parallel.jsonl"
"""A Claude Code session whose assistant lines carry the provider's usage: 2 measured requests."""


@pytest.fixture
def at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def versionless(text: str) -> str:
    """Package versions (shown beside each tokenizer) replaced, so a new release changes no golden file."""
    return re.sub(r"\b\d+\.\d+\.\d+\b", "X.Y.Z", text)


# --------------------------------------------------------------------------
# Output


def test_bilingual_two_tokenizers_and_suggestion_match_golden(run_cli: Run, golden: Golden, at_root: None) -> None:
    result = run_cli("audit", BILINGUAL, "-t", "cl100k_base", "-t", "mistral-tekken", "--suggest")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    golden("audit_bilingual.txt", versionless(result.stdout))
    text = " ".join(result.stdout.split())
    assert "Total text: 1,399 estimated vs 1,870 real (ratio 0.75)" in text  # cl100k_base
    assert "Total text: 1,399 estimated vs 1,561 real (ratio 0.90)" in text  # mistral-tekken
    assert "NOT safe for this transcript with cl100k_base: 6 of 6 messages under-estimated" in text
    assert re.search(r"--estimator custom:ascii=[\d.]+,cjk=1,other=[\d.]+$", result.stdout.strip())


def test_sample_transcript_with_the_default_tokenizer_matches_golden(
    run_cli: Run, golden: Golden, at_root: None
) -> None:
    result = run_cli("audit", "sample_transcripts/ja_tools_session.jsonl")
    assert result.exit_code == 0, result.stderr
    golden("audit_ja_tools.txt", versionless(result.stdout))
    assert "vs cl100k_base" in result.stdout
    for row in ("ascii", "cjk", "prose", "json", "logs"):
        assert re.search(rf"^ {row} ", result.stdout, re.MULTILINE), row


def test_provider_counts_are_compared_where_the_file_has_them(run_cli: Run, golden: Golden, at_root: None) -> None:
    result = run_cli("audit", WITH_USAGE, "-t", "claude-legacy")
    assert result.exit_code == 0, result.stderr
    golden("audit_provider.txt", versionless(result.stdout))
    assert "provider-measured request size at 2 points: ratio min 0.11, median 0.62, max 0.62" in " ".join(
        result.stdout.split()
    )


def test_provider_only_needs_no_tokenizer(run_cli: Run, at_root: None) -> None:
    result = run_cli("audit", WITH_USAGE, "--provider-only")
    assert result.exit_code == 0
    assert "\nvs " not in result.stdout
    assert "; 2 under-estimated" in " ".join(result.stdout.split())
    result = run_cli("audit", BILINGUAL, "--provider-only")
    assert result.exit_code == 0
    assert "no provider counts in this file" in result.stdout


def test_top_zero_leaves_out_the_worst_blocks(run_cli: Run, at_root: None) -> None:
    result = run_cli("audit", BILINGUAL, "--top", "0")
    assert result.exit_code == 0
    assert "Worst blocks" not in result.stdout
    assert "NOT safe" in result.stdout


# --------------------------------------------------------------------------
# JSON

AUDIT_KEYS = {"path", "name", "messages", "tokenizers", "provider"}
TOKENIZER_KEYS = {
    "tokenizer",
    "source",
    "estimate",
    "real",
    "ratio",
    "safe",
    "verdict",
    "messages_under",
    "blocks",
    "blocks_under",
    "by_script",
    "by_content",
    "worst_blocks",
    "worst_messages",
}


def test_json_document_keys_and_hand_checked_values(run_cli: Run, at_root: None) -> None:
    result = run_cli("audit", BILINGUAL, "-t", "cl100k_base", "--suggest", "--json")
    assert result.exit_code == 0
    assert result.stderr == ""
    doc = orjson.loads(result.stdout)
    assert set(doc) == {"schema", "estimator", "tokenizers", "transcripts", "suggestion", "skipped_files"}
    assert doc["skipped_files"] == []
    assert (doc["schema"], doc["estimator"], doc["tokenizers"]) == (1, "seed", ["cl100k_base"])
    (audit,) = doc["transcripts"]
    assert set(audit) == AUDIT_KEYS
    assert (audit["path"], audit["name"], audit["messages"], audit["provider"]) == (BILINGUAL, None, 6, None)
    (cl100k,) = audit["tokenizers"]
    assert set(cl100k) == TOKENIZER_KEYS
    assert (cl100k["estimate"], cl100k["real"], cl100k["ratio"]) == (1399, 1870, 0.7481)
    assert (cl100k["safe"], cl100k["messages_under"], cl100k["blocks"], cl100k["blocks_under"]) == (False, 6, 8, 7)
    assert set(cl100k["by_script"]) == {"ascii", "cjk", "other"}
    assert set(cl100k["by_content"]) == {"prose", "code", "json", "logs"}
    assert cl100k["by_script"]["other"] == {
        "blocks": 3,
        "chars": 1037,
        "estimate": 467,
        "real": 825,
        "ratio": 0.5661,
        "under": 3,
    }
    assert cl100k["by_script"]["cjk"]["ratio"] is None
    worst = cl100k["worst_blocks"][0]
    assert set(worst) == {
        "message_index",
        "block_index",
        "kind",
        "line",
        "script",
        "content",
        "chars",
        "estimate",
        "real",
        "ratio",
    }
    assert (worst["message_index"], worst["line"], worst["kind"], worst["estimate"], worst["real"]) == (
        2,
        3,
        "tool_result",
        450,
        801,
    )
    assert set(cl100k["worst_messages"][0]) == {
        "message_index",
        "role",
        "line",
        "chars",
        "estimate",
        "real",
        "ratio",
    }
    suggestion = doc["suggestion"]
    assert set(suggestion) == {
        "estimator",
        "chars_per_token",
        "samples",
        "fit_samples",
        "held_out_samples",
        "set_aside",
        "held_out_under_before",
        "held_out_under_after",
        "needed_margin",
        "margin",
        "guarantee",
        "over_estimate",
        "base_over_estimate",
        "tightest",
    }
    assert suggestion["samples"] == 6
    # Every 3rd message is held out: messages 3 and 6.
    assert (suggestion["fit_samples"], suggestion["held_out_samples"], suggestion["set_aside"]) == (4, 2, 0)
    assert suggestion["held_out_under_after"] == 0
    assert suggestion["margin"] >= suggestion["needed_margin"] * 1.1 - 1e-4
    assert suggestion["guarantee"].startswith("Never under on the 4 fitted samples and the 2 held-out samples")
    assert suggestion["base_over_estimate"] == 0.7481
    assert suggestion["estimator"].startswith("custom:ascii=")
    assert set(suggestion["tightest"][0]) == {"where", "ascii", "cjk", "other", "tokens", "fixed", "estimate"}


def test_json_provider_section(run_cli: Run, at_root: None) -> None:
    doc = orjson.loads(run_cli("audit", WITH_USAGE, "--provider-only", "--json").stdout)
    assert doc["tokenizers"] == []
    (audit,) = doc["transcripts"]
    assert audit["tokenizers"] == []
    provider = audit["provider"]
    assert set(provider) == {"points", "under", "min_ratio", "median_ratio", "max_ratio", "worst"}
    assert (provider["points"], provider["under"]) == (2, 2)
    assert provider["worst"][0] == {"messages": 1, "line": 3, "estimated": 12, "measured": 110, "ratio": 0.1091}
    assert doc["suggestion"] is None


# --------------------------------------------------------------------------
# Errors and exit codes


@pytest.fixture
def no_tiktoken(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As if the tokenizers extra were not installed."""
    load_tokenizer.cache_clear()
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    yield
    load_tokenizer.cache_clear()


def test_missing_extra_is_a_usage_error_with_the_pip_command(run_cli: Run, no_tiktoken: None, at_root: None) -> None:
    result = run_cli("audit", BILINGUAL)
    assert result.exit_code == ExitCode.USAGE
    assert result.stdout == ""
    assert "error: this tokenizer needs the tiktoken package" in result.stderr
    assert "hint: install windowfit's tokenizers extra from its checkout: pip install '.[tokenizers]'" in result.stderr


def test_unknown_tokenizer_is_a_usage_error(run_cli: Run, at_root: None) -> None:
    result = run_cli("audit", BILINGUAL, "-t", "gpt-17")
    assert result.exit_code == ExitCode.USAGE
    assert "unknown tokenizer 'gpt-17'" in result.stderr
    assert (
        "known tokenizers: cl100k_base, o200k_base, llama3, llama4, qwen, deepseek, mistral-tekken, mistral-v3, "
        "claude-legacy" in result.stderr
    )


def test_bad_input_exits_3(run_cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n{not json\n')
    result = run_cli("audit", str(path))
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "broken.jsonl:2" in result.stderr


def test_provider_only_and_a_tokenizer_contradict(run_cli: Run, at_root: None) -> None:
    result = run_cli("audit", BILINGUAL, "--provider-only", "-t", "cl100k_base")
    assert result.exit_code == ExitCode.USAGE
    assert "--provider-only" in result.stderr


def test_nothing_to_suggest_from_is_a_usage_error(run_cli: Run, at_root: None) -> None:
    result = run_cli("audit", BILINGUAL, "--provider-only", "--suggest")
    assert result.exit_code == ExitCode.USAGE
    assert "no samples to fit" in result.stderr


GROWTH = "tests/data/suggest/claude_code/growth.jsonl"
"""A Claude Code session with 10 measured requests: 9 growth steps of the provider's counts."""


def test_suggest_with_no_tokenizer_fits_the_provider_counts(run_cli: Run, at_root: None) -> None:
    # Claude 3+ has no offline tokenizer: with no --tokenizer, the growth between measured requests is the truth.
    result = run_cli("audit", GROWTH, "--suggest")
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "fitted on 6 samples (the growth between consecutive provider counts), margin from 3 more held out" in text
    assert "guarantee: Never under on the 6 fitted samples and the 3 held-out samples of this data" in text
    match = re.search(r"--estimator (custom:\S+)", result.stdout)
    assert match is not None
    assert run_cli("report", GROWTH, "--estimator", match.group(1)).exit_code == 0
    # A tokenizer named on the command line is fitted instead (one sample per message: 20).
    named = run_cli("audit", GROWTH, "-t", "cl100k_base", "--suggest")
    assert "fitted on 14 samples (every message, for cl100k_base), margin from 6 more" in " ".join(named.stdout.split())
    provider_only = run_cli("audit", GROWTH, "--provider-only", "--suggest", "--json")
    assert orjson.loads(provider_only.stdout)["suggestion"]["samples"] == 9


def test_suggest_from_a_corpus_claude_code_session(run_cli: Run) -> None:
    folder = require_shared("corpus", "transcripts", "claude_code")
    path = folder / "M-Thisness_M-Claude__c76e5be5-ffd2-4901-a935-885527c83a61.jsonl"
    result = run_cli("audit", str(path), "--provider-only", "--suggest", "--skip-invalid", "--json")
    assert result.exit_code == 0, result.stderr
    suggestion = orjson.loads(result.stdout)["suggestion"]
    assert suggestion["held_out_samples"] == suggestion["samples"] // 3 > 30
    assert suggestion["held_out_under_after"] == 0


def test_help_names_the_tokenizers_and_gives_an_example(run_cli: Run) -> None:
    result = run_cli("audit", "--help")
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "Example: windowfit audit" in text
    assert "mistral-tekken" in text
    assert "windowfit[tokenizers]" in text  # rich markup would eat an unescaped [tokenizers]


def test_suggested_rule_pastes_back_and_is_safe_for_that_transcript(run_cli: Run, at_root: None) -> None:
    # The loop the issue asks for: audit --suggest prints an --estimator value; fed back,
    # the same audit finds no message under-estimated.
    suggested = run_cli("audit", BILINGUAL, "-t", "cl100k_base", "--suggest")
    assert suggested.exit_code == 0, suggested.stderr
    match = re.search(r"--estimator (custom:\S+)", suggested.stdout)
    assert match is not None
    again = run_cli("audit", BILINGUAL, "-t", "cl100k_base", "--estimator", match.group(1))
    assert again.exit_code == 0, again.stderr
    text = " ".join(again.stdout.split())
    assert "NOT safe" not in text and "safe for this transcript with cl100k_base" in text
    assert run_cli("report", BILINGUAL, "--estimator", match.group(1)).exit_code == 0
