"""Replay's prices (issue 14): the price table, the cache model per provider, the
other harnesses' presets and their invariants, and the cache model against the
cache reads real Claude Code and Codex sessions recorded."""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import require_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import TOOL_NAMES, subagents, transcripts
from typer.testing import Result

from windowfit.fitting import Message, ToolCall, ToolResult, Transcript, make_estimator
from windowfit.fitting.errors import InputError
from windowfit.fitting.pricing import Price, default_table, parse_table
from windowfit.fitting.repair import repair
from windowfit.fitting.replay import Run, Session, Step
from windowfit.fitting.replay.cache import CacheModel, check
from windowfit.fitting.replay.presets import (
    AnthropicClearToolUses,
    ClaudeCodeIdleClear,
    GeminiCliMasking,
    LangChainTrimLast,
    OpenHandsObservationMasking,
    SendEverything,
)

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --------------------------------------------------------------------------
# The price table


def test_every_shipped_row_names_its_page_and_the_day_it_was_read() -> None:
    table = default_table()
    assert table.rows
    for row in table.rows:
        assert row.source.startswith("https://") and len(row.read_on) == 10
        if row.provider == "anthropic":
            assert row.cache_write_5m is not None and row.cache_write_1h is not None


def test_a_row_matches_its_id_or_a_dated_snapshot_of_it_and_nothing_near() -> None:
    table = default_table()
    row = table.row("claude-opus-4-5-20251101")
    assert row is not None and row.model == "claude-opus-4-5"
    assert table.row("claude-opus-4") is not None and table.row("claude-opus-4").model == "claude-opus-4"  # type: ignore[union-attr]
    # Not priced rather than guessed: a newer minor version, or a model the table does not hold.
    assert table.row("claude-opus-4-5-preview") is None
    assert table.row("gpt-5.1-codex") is None
    assert table.row("claude-sonnet-4-5-preview") is None
    # Claude Code's Sonnet 4.5 and Haiku 4.5 sessions and Gemini CLI's logs have their rows.
    assert table.row("claude-sonnet-4-5-20250929").model == "claude-sonnet-4-5"  # type: ignore[union-attr]
    assert table.row("claude-haiku-4-5-20251001").model == "claude-haiku-4-5"  # type: ignore[union-attr]
    # An alias: the preview id a Gemini CLI log of December 2025 records, for the model the page lists.
    assert table.row("gemini-3-pro-image-preview").model == "gemini-3-pro-image"  # type: ignore[union-attr]
    assert table.row("gemini-2.5-pro").provider == "google"  # type: ignore[union-attr]


def test_a_long_context_tier_prices_the_whole_request_above_its_threshold() -> None:
    row = default_table().row("gemini-2.5-pro")
    assert row is not None and row.long_context is not None and row.long_context.above == 200_000
    assert row.at(200_000) is row
    long = row.at(200_001)
    assert (long.input, long.cache_read, long.output) == (2.5, 0.25, 15.0)  # the page's "prompts > 200k tokens"
    flat = default_table().row("gemini-2.5-flash")
    assert flat is not None and flat.at(10**6) is flat
    # Priced per request: a 100k-token request at the short tier, a 300k-token one at the long tier.
    g = CacheModel("google", "5m", row).priced(steps([100_000, 300_000], [0, 0]))
    assert [s.cost_usd for s in g.steps] == [pytest.approx(100_000 * 1.25 / 1e6), pytest.approx(300_000 * 2.5 / 1e6)]


def test_sonnet_4_and_4_5_price_a_request_over_200k_input_tokens_at_the_long_context_tier() -> None:
    for model in ("claude-sonnet-4-5-20250929", "claude-sonnet-4-20250514"):
        row = default_table().row(model)
        assert row is not None and row.at(200_000) is row
        long = row.at(200_001)
        assert (long.input, long.output, long.cache_read) == (6.0, 22.5, 0.6)
        assert (long.write("5m"), long.write("1h")) == (7.5, 12.0)
    # Priced per request: a 300k-token request written to the cache at the tier's write price, read at its read.
    row = default_table().row("claude-sonnet-4-5")
    run = CacheModel("anthropic", "5m", row).priced(steps([100_000, 300_000], [0, 100_000]))
    assert [s.cost_usd for s in run.steps] == [
        pytest.approx(100_000 * 3.75 / 1e6),
        pytest.approx((100_000 * 0.6 + 200_000 * 7.5) / 1e6),
    ]


def test_a_prices_file_amends_the_shipped_table_row_by_row() -> None:
    base = default_table()
    mine = parse_table(
        b'{"models": [{"model": "claude-opus-4-5", "provider": "anthropic", "input": 1, "cache_write_5m": 2, '
        b'"cache_write_1h": 3, "cache_read": 0.1, "output": 4, "read_on": "2026-12-07", '
        b'"source": "https://x.invalid"}, {"model": "my-model", "provider": "openai", "input": 1, '
        b'"cache_read": 0.5, "output": 2, '
        b'"read_on": "2026-12-07", "source": "https://x.invalid"}]}',
        "mine.json",
    )
    table = base.amended_by(mine)
    assert table.row("claude-opus-4-5-20251101").input == 1.0  # type: ignore[union-attr]  # replaced
    assert table.row("my-model") is not None  # added
    assert table.row("claude-haiku-4-5") == base.row("claude-haiku-4-5")  # every other row kept
    assert len(table.rows) == len(base.rows) + 1
    assert [p.model for p in table.rows].count("claude-opus-4-5") == 1


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        (b"{", "p.json:1", "not JSON"),
        (b'{"models": {}}', "p.json", '"models" list'),
        (b'{"models": [\n{"model": "m", "provider": "acme"}]}', "p.json:2", "provider"),
        (
            b'{"models": [\n{"model": "m", "provider": "openai", "input": -1, "cache_read": 0, "output": 1,'
            b' "read_on": "2026-12-01", "source": "https://x"}]}',
            "p.json:2",
            '"input"',
        ),
        (
            b'{"models": [\n{"model": "m", "provider": "anthropic", "input": 1, "cache_read": 0, "output": 1,'
            b' "read_on": "2026-12-01", "source": "https://x"}]}',
            "p.json:2",
            "both cache write prices",
        ),
        (
            b'{"models": [\n{"model": "m", "provider": "openai", "input": 1, "cache_read": 0, "output": 1,'
            b' "read_on": "today", "source": "https://x"}]}',
            "p.json:2",
            "read_on",
        ),
        (
            b'{"models": [\n{"model": "m", "provider": "google", "input": 1, "cache_read": 0, "output": 1,'
            b' "long_context": {"above": 0, "input": 1, "cache_read": 0, "output": 1},'
            b' "read_on": "2026-12-01", "source": "https://x"}]}',
            "p.json:2",
            "long_context",
        ),
        (
            b'{"models": [\n{"model": "m", "provider": "google", "input": 1, "cache_read": 0, "output": 1,'
            b' "aliases": "m2", "read_on": "2026-12-01", "source": "https://x"}]}',
            "p.json:2",
            "aliases",
        ),
    ],
)
def test_a_bad_prices_file_is_a_located_error(text: bytes, where: str, what: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_table(text, "p.json")
    assert str(caught.value).startswith(where + ":") or str(caught.value).startswith(where + " ")
    assert what in str(caught.value)


Run_ = Callable[..., Result]


def test_prices_and_model_options(run_cli: Run_, tmp_path: Path) -> None:
    data = Path(__file__).parent / "data" / "replay" / "six_reads.jsonl"
    bad = tmp_path / "prices.json"
    bad.write_text('{"models": [\n{"model": 1}]}')
    result = run_cli("replay", str(data), "--budget", "3000", "--prices", str(bad))
    assert result.exit_code == 3
    assert f"{bad}:2: models[0]" in result.stderr
    priced = run_cli("replay", str(data), "--budget", "3000", "--model", "claude-sonnet-4", "--json", "-p", "windowfit")
    assert priced.exit_code == 0, priced.stderr
    assert "priced as claude-sonnet-4 (--model" in priced.stderr
    doc = json.loads(priced.stdout)
    assert doc["pricing"]["row"] == "claude-sonnet-4" and doc["runs"][0]["cost_usd"] > 0
    # A prices file of one row amends the table: the shipped rows still price.
    one = tmp_path / "one.json"
    one.write_text(
        '{"models": [{"model": "claude-9", "provider": "anthropic", "input": 1, "cache_write_5m": 2, '
        '"cache_write_1h": 3, "cache_read": 0.1, "output": 4, "read_on": "2026-12-07", "source": "https://x.invalid"}]}'
    )
    for model in ("claude-9", "claude-sonnet-4"):
        amended = run_cli(
            "replay", str(data), "--budget", "3000", "--prices", str(one), "--model", model, "--json", "-p", "windowfit"
        )
        assert amended.exit_code == 0, amended.stderr
        assert json.loads(amended.stdout)["runs"][0]["cost_usd"] > 0, model
    unknown = run_cli("replay", str(data), "--budget", "3000", "--model", "claude-9", "--json", "-p", "windowfit")
    assert "claude-9 (--model) has no row" in unknown.stderr
    assert json.loads(unknown.stdout)["runs"][0]["cost_usd"] is None


# --------------------------------------------------------------------------
# The cache model, on hand-made steps

PRICE = Price("m", "anthropic", 3.0, 3.75, 6.0, 0.3, 15.0, "2026-12-01", "https://example.invalid")


def steps(sent: list[int], shared: list[int]) -> Run:
    return Run(
        "p",
        tuple(
            Step(i, i + 1, i + 1, s, s, "fits", 0, sh, False, False, s, None, None)
            for i, (s, sh) in enumerate(zip(sent, shared, strict=True))
        ),
    )


def test_anthropic_reads_the_shared_prefix_and_writes_the_rest_at_the_rows_prices() -> None:
    run = CacheModel("anthropic", "5m", PRICE).priced(steps([1000, 1500, 1200], [0, 1000, 800]))
    assert [(s.cache_read_tokens, s.cache_write_tokens) for s in run.steps] == [(0, 1000), (1000, 500), (800, 400)]
    # 1,000 x 3.75 + (1,000 x 0.3 + 500 x 3.75) + (800 x 0.3 + 400 x 3.75), per million
    assert run.cost_usd == pytest.approx((3750 + 300 + 1875 + 240 + 1500) / 1e6)
    assert run.cache_hit_rate == pytest.approx(1800 / 3700)
    one_hour = CacheModel("anthropic", "1h", PRICE).priced(steps([1000], [0]))
    assert one_hour.cost_usd == pytest.approx(1000 * 6.0 / 1e6)


def test_a_request_after_the_lifetime_reads_nothing() -> None:
    run = steps([1000, 1500, 1600], [0, 1000, 1500])
    times = {1: 0.0, 2: 301.0, 3: 400.0}  # by line: 301 s after the first, then 99 s
    five = CacheModel("anthropic", "5m", None).priced(run, times)
    assert [s.cache_read_tokens for s in five.steps] == [0, 0, 1500]
    assert five.cost_usd is None
    hour = CacheModel("anthropic", "1h", None).priced(run, times)
    assert [s.cache_read_tokens for s in hour.steps] == [0, 1000, 1500]


def test_each_request_writes_with_the_lifetimes_its_reply_recorded() -> None:
    # Lines 1-4: the log records 1-hour writes at line 2, a 5m/1h split at line 4, nothing at line 3.
    run = steps([1000, 1500, 1600, 2000], [0, 1000, 1500, 1600])
    shares = {2: 1.0, 4: 0.25}
    priced = CacheModel("anthropic", "5m", PRICE).priced(run, {}, shares)
    writes = [s.cache_write_tokens for s in priced.steps]
    assert writes == [1000, 500, 100, 400]
    # Line 1: the default 5m; line 2: 1h; line 3: as the request before (1h); line 4: a quarter at 1h.
    per_write = [3.75, 6.0, 6.0, 0.25 * 6.0 + 0.75 * 3.75]
    for s, w, p in zip(priced.steps, writes, per_write, strict=True):
        assert s.cost_usd == pytest.approx((s.cache_read_tokens * 0.3 + w * p) / 1e6)
    # What a 1-hour write keeps is still read 30 minutes on, under a 5m default.
    gap = CacheModel("anthropic", "5m", None).priced(steps([1000, 1500], [0, 1000]), {1: 0.0, 2: 1800.0}, {1: 1.0})
    assert [s.cache_read_tokens for s in gap.steps] == [0, 1000]
    short = CacheModel("anthropic", "5m", None).priced(steps([1000, 1500], [0, 1000]), {1: 0.0, 2: 1800.0}, {1: 0.0})
    assert [s.cache_read_tokens for s in short.steps] == [0, 0]


def test_openai_caches_from_1024_tokens_in_steps_of_128_without_a_write_premium() -> None:
    run = CacheModel("openai", "5m", None).priced(steps([1000, 2000, 3000], [0, 1000, 2000]))
    assert [s.cache_read_tokens for s in run.steps] == [0, 0, 1920]
    assert all(s.cache_write_tokens == 0 for s in run.steps)
    gemini = CacheModel("google", "5m", None).priced(steps([3000, 4000], [0, 2047]))
    assert [s.cache_read_tokens for s in gemini.steps] == [0, 0]


def test_anthropic_caches_nothing_below_the_models_minimum_cacheable_length() -> None:
    haiku = default_table().row("claude-haiku-4-5")
    assert CacheModel("anthropic", "5m", haiku).minimum == 4096  # the documented minimum for Haiku 4.5
    assert CacheModel("anthropic", "5m", default_table().row("claude-sonnet-4-5")).minimum == 1024
    run = CacheModel("anthropic", "5m", haiku).priced(steps([3000, 5000, 6000], [0, 3000, 5000]))
    # 3,000 tokens: not cached at all; then the 3,000 shared are not read (they were never kept), 5,000 written;
    # then the 5,000 are read back and the 1,000 new ones written.
    assert [(s.cache_read_tokens, s.cache_write_tokens) for s in run.steps] == [(0, 0), (0, 5000), (5000, 1000)]
    assert run.steps[0].cost_usd == pytest.approx(3000 * 1.0 / 1e6)  # plain input price, no write premium


def recorded(read: int, write: int, *, turn_start: bool = False, index: int = 0) -> Step:
    sent = read + write
    return Step(
        index, index + 1, index + 1, sent, sent, "fits", 0, 0, False, False, sent, read, write, turn_start=turn_start
    )


def test_the_check_tells_recorded_misses_apart_and_counts_those_at_a_turn_start_after_tool_calls() -> None:
    run = Run(
        "send-everything",
        (
            recorded(0, 1000, turn_start=True, index=0),
            recorded(1000, 100, index=1),  # a tool loop: reads what the one before cached
            recorded(1100, 100, index=2),
            recorded(300, 1000, turn_start=True, index=3),  # a new turn after tool calls: read fell to 300
            recorded(1300, 50, turn_start=True, index=4),  # a turn start after a single reply, no miss
        ),
    )
    c = check(CacheModel("anthropic", "5m", None).priced(run))
    assert c is not None
    assert (c.misses, c.miss_recorded_write, c.turn_misses, c.turn_miss_recorded_write) == (1, 1000, 1, 1000)
    assert c.turn_starts == 1  # only index 3 follows a turn with more than one request
    assert c.recorded_write == 2250


# --------------------------------------------------------------------------
# The presets' invariants


def session_of(t: Transcript) -> Session:
    repaired, _ = repair(t)
    return Session.of(repaired, make_estimator())


@PROPERTY
@given(st.one_of(transcripts(), subagents()), st.integers(0, 20_000), st.integers(0, 5))
def test_anthropic_never_clears_the_newest_kept_tool_uses_nor_under_its_trigger(
    t: Transcript, trigger: int, keep: int
) -> None:
    s = session_of(t)
    policy = AnthropicClearToolUses(s, 10**9, trigger=trigger, keep=keep)
    for n in s.steps:
        before = policy.cleared
        sent = policy.request(n)
        seen = bisect_left(s.result_messages, n)
        assert policy.cleared <= max(0, seen - keep)
        if s.preamble + sum(s.tokens[:n]) <= trigger:
            assert policy.cleared == before and sent.newly_cleared == ()


def test_the_presets_defaults_are_the_documented_ones() -> None:
    s = session_of(Transcript((), (), ()))
    anthropic = AnthropicClearToolUses(s, 1)
    assert (anthropic.trigger, anthropic.keep) == (100_000, 3)
    gemini = GeminiCliMasking(s, 1)
    assert (gemini.protect, gemini.prunable) == (50_000, 30_000)
    assert OpenHandsObservationMasking(s, 1).window == 100  # OpenHands' attention_window default
    idle = ClaudeCodeIdleClear(s, 1)
    assert (idle.gap, idle.keep) == (3600.0, 5)


def gemini_reference(s: Session, n: int, masked: set[int], protect: int, prunable: int, worth: set[int]) -> set[int]:
    """Gemini CLI's ToolOutputMaskingService.mask, as its source reads, on the history before request ``n``:
    the outputs it masks (``worth``: the outputs whose snippet is smaller, the only ones it replaces)."""
    cumulative, boundary, total, parts = 0, False, 0, []
    for r in reversed(range(len(s.results))):
        if s.results[r].message_index >= n - 1 or r in masked:  # the latest message is skipped; masked: skipped
            continue
        t = s.results[r].tokens
        if not boundary:
            cumulative += t
            if cumulative > protect:
                boundary = True
                total += t
                parts.append(r)
        else:
            total += t
            parts.append(r)
    if total < prunable:
        return set()
    return {r for r in parts if r in worth}


@PROPERTY
@given(st.one_of(transcripts(), subagents()), st.integers(1, 3_000), st.integers(0, 3_000))
def test_gemini_masks_what_gemini_clis_own_scan_masks(t: Transcript, protect: int, prunable: int) -> None:
    s = session_of(t)
    policy = GeminiCliMasking(s, 10**9, protect=protect, prunable=prunable)
    # Which outputs are worth masking (the snippet is smaller) is the policy's; the scan is checked against
    # the reference, the snippet's size below and by the tiny-output property.
    worth = set()
    for r in range(len(s.results)):
        probe = GeminiCliMasking(s, 10**9)
        if probe._mask(r):
            worth.add(r)
    masked: set[int] = set()
    for n in s.steps:
        expected = gemini_reference(s, n, masked, protect, prunable, worth)
        sent = policy.request(n)
        assert set(sent.newly_cleared) == expected
        masked |= expected
        assert policy.masked == masked
        for r in masked:  # never inside the latest message, never in the newest `protect` tokens of outputs
            assert s.results[r].message_index < n - 1


def test_gemini_never_masks_a_short_output_and_its_snippet_is_gemini_clis() -> None:
    from windowfit.fitting.replay.presets import gemini_snippet
    from windowfit.fitting.transcript import Message, Text, ToolCall, ToolResult

    short = "ok"
    long = "x" * 2000
    messages = [Message("user", (Text("go"),))]
    for i, out in enumerate([long, short, long, short, long]):
        messages.append(Message("assistant", (ToolCall(f"c{i}", "read_file", "{}"),)))
        messages.append(Message("user", (ToolResult(f"c{i}", (Text(out),)),)))
    messages.append(Message("assistant", (Text("done"),)))
    s = session_of(Transcript((), (), tuple(messages)))
    policy = GeminiCliMasking(s, 10**9, protect=1, prunable=1)
    for n in s.steps:
        policy.request(n)
    assert policy.masked == {0, 2}  # the long outputs before the protected newest one; the short never
    # A general tool: the response as indented JSON, its first and last 250 characters.
    body = '{\n  "output": "' + long + '"\n}'
    assert gemini_snippet("read_file", "C0", long) == (
        "<tool_output_masked>\n"
        + body[:250]
        + "\n... [TRUNCATED] ...\n"
        + body[-250:]
        + "\n\nOutput too large. Full output available at: /home/user/.gemini/tmp/"
        + "0" * 64
        + "/tool-outputs/read_file_c0_xxxxxx.txt\n</tool_output_masked>"
    )
    # The shell tool: the first and last 10 lines of its Output section, the other sections whole.
    shell = "Output: " + "\n".join(f"l{i}" for i in range(30)) + "\nExit Code: 1"
    snippet = gemini_snippet("run_shell_command", "c", shell)
    assert "Output: l0\nl1" in snippet and "l9\n\n... [10 lines omitted] ...\n\nl20" in snippet
    assert "l29\nExit Code: 1\n" in snippet and "l15" not in snippet


@PROPERTY
@given(
    st.one_of(transcripts(), subagents()),
    st.lists(st.floats(0, 7200), min_size=1),
    st.integers(0, 6),
    st.frozensets(st.sampled_from(TOOL_NAMES)),
)
def test_claude_code_clears_only_after_an_idle_gap_and_never_the_newest_kept(
    t: Transcript, gaps: list[float], keep: int, tools: frozenset[str]
) -> None:
    s = session_of(t)
    at = 0.0
    for i, n in enumerate(s.steps):
        at += gaps[i % len(gaps)]
        s.step_times[n] = at
    policy = ClaudeCodeIdleClear(s, 10**9, gap=3600.0, keep=keep, tools=tools)
    previous: float | None = None
    cleared: set[int] = set()
    for n in s.steps:
        sent = policy.request(n)
        if sent.newly_cleared:
            assert previous is not None and s.step_times[n] - previous > 3600.0
        cleared |= set(sent.newly_cleared)
        # Only its own tools' results, and never the newest `keep` of them before this request.
        assert all(s.results[r].tool in tools for r in cleared)
        own = [r for r in range(len(s.results)) if s.results[r].tool in tools and s.results[r].message_index < n]
        assert not cleared & set(own[len(own) - keep :] if keep else ())
        previous = s.step_times[n]
    untimed = session_of(t)
    never = ClaudeCodeIdleClear(untimed, 10**9)
    assert all(never.request(n).cleared == 0 for n in untimed.steps)
    # A subagent's transcript (Claude Code clears on its main thread only) is never cleared.
    sub = session_of(replace(t, name="subagent agent-a1"))
    sub.step_times.update(s.step_times)
    side = ClaudeCodeIdleClear(sub, 10**9, gap=3600.0, keep=keep, tools=tools)
    assert all(side.request(n).cleared == 0 for n in sub.steps)


def events_before(messages: tuple[Message, ...], index: int, block: int) -> int:
    """OpenHands' events before block ``block`` of message ``index``: a call or a result each, a message
    with neither one."""
    count = 0
    for m in messages[:index]:
        count += max(1, sum(isinstance(b, (ToolCall, ToolResult)) for b in m.content))
    return count + sum(isinstance(b, (ToolCall, ToolResult)) for b in messages[index].content[:block])


@PROPERTY
@given(st.one_of(transcripts(), subagents()), st.integers(1, 12))
def test_openhands_masks_exactly_the_results_outside_its_window_of_events(t: Transcript, window: int) -> None:
    s = session_of(t)
    policy = OpenHandsObservationMasking(s, 10**9, window=window)
    messages = s.transcript.messages
    for n in s.steps:
        policy.request(n)
        total = events_before(messages, n, 0)
        outside = {
            r
            for r, ref in enumerate(s.results)
            if ref.message_index < n and events_before(messages, ref.message_index, ref.block_index) < total - window
        }
        assert set(range(policy.cleared)) == outside


@PROPERTY
@given(st.one_of(transcripts(), subagents()), st.floats(0.05, 1.2))
def test_langchain_sends_the_newest_whole_units_within_the_budget_when_any_fit(t: Transcript, fraction: float) -> None:
    s = session_of(t)
    budget = max(1, int((s.preamble + sum(s.tokens)) * fraction))
    policy = LangChainTrimLast(s, budget)
    for n in s.steps:
        sent = policy.request(n)
        ((start, stop),) = sent.segments
        assert stop == n and (start == 0 or start in s.unit_starts)
        if sent.outcome != "over-budget":
            assert sent.tokens <= budget


@PROPERTY
@given(st.one_of(transcripts(), subagents()))
def test_send_everything_sends_every_request_whole(t: Transcript) -> None:
    s = session_of(t)
    policy = SendEverything(s, 1)
    for n in s.steps:
        assert policy.request(n).tokens == s.preamble + sum(s.tokens[:n])


# --------------------------------------------------------------------------
# Checked against reality: the cache reads real sessions recorded

CLAUDE_CODE = (
    "M-Thisness_M-Claude__21037e11-89de-484d-abba-8705254aa991.jsonl",
    "M-Thisness_M-Claude__3af9b1a7-6512-4883-ad18-320658ced099.jsonl",
    "M-Thisness_M-Claude__43391f62-680a-4688-9dd8-3637467d6b23.jsonl",
    "M-Thisness_M-Claude__agent-abc3cb6.jsonl",
    "M-Thisness_M-Claude__c76e5be5-ffd2-4901-a935-885527c83a61.jsonl",
    "d-kimuson_claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
    "d-kimuson_claude-code-viewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
    "moredip_session-share__0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl",
    "moredip_session-share__general-tool-calls.jsonl",
)


@pytest.mark.slow
@pytest.mark.parametrize("name", CLAUDE_CODE)
def test_replaying_what_claude_code_sent_reproduces_its_recorded_cache_reads(run_cli: Run_, name: str) -> None:
    session = require_shared("corpus", "transcripts", "claude_code", name)
    result = run_cli("replay", str(session), "--skip-invalid", "--budget", "40000", "--json", "-p", "send-everything")
    assert result.exit_code == 0, result.stderr
    checked = json.loads(result.stdout)["cache_check"]
    assert checked is not None and checked["steps"] >= 9
    assert abs(checked["read_error"]) <= 0.10, checked


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        "M-Thisness_M-Claude__c76e5be5-ffd2-4901-a935-885527c83a61.jsonl",
        "moredip_session-share__general-tool-calls.jsonl",
    ],
)
def test_claude_code_writes_are_reproduced_where_the_provider_kept_the_previous_prefix(
    run_cli: Run_, name: str
) -> None:
    # What writes reach: on the requests whose recorded read covers what the request before cached, predicted
    # writes are within 10% of the recorded ones. The rest of the recorded writes are misses the log records
    # (a request read less than the one before cached); on the Sonnet 4.5 session c76e5be5 they are most of
    # its writes, and every one is the first request of a user turn after a turn with tool calls.
    session = require_shared("corpus", "transcripts", "claude_code", name)
    result = run_cli("replay", str(session), "--skip-invalid", "--budget", "40000", "--json", "-p", "send-everything")
    checked = json.loads(result.stdout)["cache_check"]
    assert abs(checked["tail_write_error"]) <= 0.10, checked
    if name.startswith("M-Thisness"):
        assert checked["turn_start_misses"] == checked["misses"] >= 10, checked
        assert checked["miss_recorded_cache_write_tokens"] > checked["recorded_cache_write_tokens"] / 2, checked


@pytest.mark.slow
def test_replaying_what_codex_sent_reproduces_its_recorded_cached_input(run_cli: Run_) -> None:
    (session,) = require_shared("corpus", "transcripts", "codex").glob("*.jsonl")
    result = run_cli("replay", str(session), "--budget", "40000", "--json", "-p", "send-everything")
    checked = json.loads(result.stdout)["cache_check"]
    assert checked["predicted_cache_write_tokens"] == 0 == checked["recorded_cache_write_tokens"]
    assert abs(checked["read_error"]) <= 0.10, checked


def test_check_is_none_without_recorded_usage() -> None:
    assert check(steps([10], [0])) is None


@pytest.mark.slow
def test_replaying_the_recorded_requests_of_an_anthropic_log_reproduces_its_cache_reads_and_writes(
    run_cli: Run_,
) -> None:
    # The log holds the request bodies themselves (system prompt and tools included), so the writes
    # are checked too; a Claude Code session's transcript leaves out what Claude Code adds to each request.
    (log,) = require_shared("corpus", "transcripts", "anthropic_messages").glob("*.jsonl")
    result = run_cli("replay", str(log), "--budget", "40000", "--json", "-p", "send-everything")
    checked = json.loads(result.stdout)["cache_check"]
    assert abs(checked["read_error"]) <= 0.10, checked
    recorded = checked["recorded_cache_write_tokens"]
    assert abs(checked["predicted_cache_write_tokens"] / recorded - 1) <= 0.10, checked


@PROPERTY
@given(st.text(alphabet=st.sampled_from('ab\n"\\\té\u2028'), max_size=1500))
def test_gemini_preview_is_the_ends_of_the_response_as_indented_json(output: str) -> None:
    from windowfit.fitting.replay.presets import gemini_preview

    whole = json.dumps({"output": output}, indent=2, ensure_ascii=False)  # JSON.stringify(response, null, 2)
    expected = f"{whole[:250]}\n... [TRUNCATED] ...\n{whole[-250:]}" if len(whole) > 500 else whole
    assert gemini_preview("read_file", output) == expected
