"""Every replay policy on every corpus session, at budgets of 50% and 25% of
the session's peak request (issue 14): writes docs/policies.md.

Run from the checkout, with ../shared/corpus present:

    python benchmarks/policy_table.py

Each session is replayed with ``windowfit replay --json`` itself, so the table
is what a user gets. Every session is priced at one row, claude-opus-4-5
(``--model``), so that dollars compare across sessions and models; the window
is the budget, so "rejected" counts requests a policy sent over it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from windowfit.fitting.replay.cache import ANTHROPIC_MINIMUM

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "transcripts"
OUT = ROOT / "docs" / "policies.md"
MODEL = "claude-opus-4-5"
FRACTIONS = (0.5, 0.25)
MIN_REQUESTS = 10
COMMAND = "python benchmarks/policy_table.py"


def replay(path: Path, *args: str) -> dict[str, object] | None:
    cmd = [sys.executable, "-m", "windowfit", "replay", str(path), "--skip-invalid", "--json", *args]
    done = subprocess.run(cmd, capture_output=True, cwd=ROOT, check=False)
    if done.returncode not in (0, 1):
        return None
    doc = orjson.loads(done.stdout)
    return doc if isinstance(doc, dict) else None


def sessions() -> list[Path]:
    return sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json", ".traj"))


def main() -> int:
    if not CORPUS.exists():
        print(f"{CORPUS} is absent", file=sys.stderr)
        return 2
    parts = [
        "# Every policy on the real corpus",
        "",
        f"Written by `{COMMAND}` (benchmarks/policy_table.py): every corpus session of at least",
        f"{MIN_REQUESTS} requests, replayed by `windowfit replay --json` under every policy at budgets of 50%",
        "and 25% of its peak request (the largest request the harness sent, as estimated), with the window",
        "set to the budget, so **rejected** counts requests sent over it. Every session is priced at",
        f"`{MODEL}`'s prices (`--model {MODEL}`, fitting/prices.json) so that dollars compare across",
        "sessions; **cost** is the input side under Anthropic's prompt cache (5-minute lifetime, the log's",
        "timestamps), **cache hit** the share of sent tokens read from the cache, **breaks** the share of",
        "requests whose previous request is not a prefix of them. A prefix under the row's minimum cacheable",
        f"length ({ANTHROPIC_MINIMUM[MODEL]:,} tokens for `{MODEL}`) is not cached at all, so at budgets below it",
        "nothing is read (fitting/replay/cache.py). A rejected request is priced as if it had been sent and",
        "served (its reads and writes counted like any other's), so the dollars of a policy that rejects are",
        "not what it would cost: the provider would refuse those requests and the session would stop there.",
        "Compare dollars only between policies that reject nothing, as the summary at the end does.",
        "",
    ]
    summary: list[tuple[str, float, str, str]] = []
    breaks_by_policy: dict[str, list[float]] = {}
    rejected_by_policy: dict[str, int] = {}
    tables = 0
    rejected_not_too_long: dict[str, int] = {}
    no_cache_wins: list[str] = []
    cache_rejects_more: list[str] = []
    first_too_long = 0
    for path in sessions():
        probe = replay(path, "--budget", "1000000000", "-p", "send-everything", "--model", MODEL)
        if probe is None:
            continue
        runs = probe["runs"]
        assert isinstance(runs, list)
        steps = runs[0]["steps"]
        if len(steps) < MIN_REQUESTS:
            continue
        peak = max(s["raw_tokens"] for s in steps)
        name = path.relative_to(CORPUS)
        parts += [f"## {name}", "", f"{len(steps):,} requests; peak request {peak:,} tokens.", ""]
        for fraction in FRACTIONS:
            budget = max(1, int(peak * fraction))
            doc = replay(path, "--budget", str(budget), "--window", str(budget), "--model", MODEL)
            if doc is None:
                continue
            rows = doc["runs"]
            assert isinstance(rows, list)
            parts += [
                f"Budget {budget:,} ({fraction:.0%} of the peak):",
                "",
                "| policy | rejected | breaks | cache hit | cost $ |",
                "| --- | ---: | ---: | ---: | ---: |",
            ]
            for r in rows:
                cost = "-" if r["cost_usd"] is None else f"{r['cost_usd']:.2f}"
                breaks = r["prefix_breaks"] / max(r["requests"], 1)
                parts.append(
                    f"| {r['policy']} | {r['rejections']:,} | {breaks:.0%} | {r['cache_hit_rate']:.0%} | {cost} |"
                )
            parts.append("")
            tables += 1
            for r in rows:
                if r["rejections"] == 0:  # the break share of a policy that keeps within the budget
                    breaks_by_policy.setdefault(r["policy"], []).append(r["prefix_breaks"] / max(r["requests"], 1))
                rejected_by_policy[r["policy"]] = rejected_by_policy.get(r["policy"], 0) + (r["rejections"] > 0)
                if r["policy"].startswith("windowfit"):
                    other = sum(s["rejected"] and s["outcome"] != "too-long" for s in r["steps"])
                    rejected_not_too_long[r["policy"]] = rejected_not_too_long.get(r["policy"], 0) + other
            by_name = {r["policy"]: r for r in rows}
            plain, tuned = by_name.get("windowfit"), by_name.get("windowfit-cache")
            if plain and plain["steps"] and plain["steps"][0]["rejected"]:
                first_too_long += 1
            if plain and tuned and tuned["rejections"] > plain["rejections"]:
                cache_rejects_more.append(
                    f"{name} at {fraction:.0%}: {tuned['rejections']} against {plain['rejections']}"
                )
            fitting = [r for r in rows if r["rejections"] == 0 and r["cost_usd"] is not None]
            if fitting:
                best = min(fitting, key=lambda r: r["cost_usd"])
                summary.append((str(name), fraction, best["policy"], f"{best['cost_usd']:.2f}"))
                if best["cache_hit_rate"] == 0:
                    no_cache_wins.append(f"{name} at {fraction:.0%} (budget {budget:,})")
    wins: dict[str, int] = {}
    for _, _, policy, _ in summary:
        wins[policy] = wins.get(policy, 0) + 1
    mean_breaks = {p: sum(v) / len(v) for p, v in breaks_by_policy.items() if v}
    parts += [
        "## What the tables say",
        "",
        f"Of the {tables} tables (session and budget), {len(summary)} have a policy that rejects nothing;",
        "the cheapest of those is "
        + ", ".join(f"`{p}` in {n}" for p, n in sorted(wins.items(), key=lambda kv: -kv[1]))
        + ".",
        "In the rest, every policy sends some request over the budget; the windowfit policies' among them all",
        "have the outcome too-long ("
        + (
            "none has another"
            if not any(rejected_not_too_long.values())
            else "rejected with another outcome: " + ", ".join(f"`{p}` {n}" for p, n in rejected_not_too_long.items())
        )
        + "): the smallest request they can build is still over",
        f"the budget. In {first_too_long} of these tables `windowfit` rejects even the first request (the system",
        "prompt and tools, inferred from the log's usage, and the first message): a budget that small",
        "leaves no room to fit anything.",
        *(
            [
                "`windowfit-cache` rejects more than `windowfit` where its size-closed batch is not full yet: the",
                "results in it stay whole, so its smallest request can be over the budget where `windowfit`'s, whose",
                "batches of 4 close sooner, is not (" + "; ".join(cache_rejects_more) + ").",
            ]
            if cache_rejects_more
            else []
        ),
        "",
        "Why. A request costs least when most of it is read from the cache, and a read needs the previous",
        "request to be a prefix of this one. Sending everything never breaks the prefix, so its cache hit is",
        "the highest, but it is rejected once the session outgrows the budget (it was in "
        f"{rejected_by_policy.get('send-everything', 0)} of {tables} tables), and so are the presets whose own",
        "triggers come late: Anthropic's edit at 100,000 input tokens, Claude Code's clearing only after an hour",
        "idle, Gemini CLI's masking only past 80,000 tool-output tokens. The policies that change old messages",
        "request after request break the prefix often (mean share of requests, over the tables where the",
        "policy rejects nothing: "
        + ", ".join(
            f"`{p}` {mean_breaks[p]:.0%}"
            for p in ("keep-last", "openhands-observation-masking", "langchain-trim-last")
            if p in mean_breaks
        )
        + "), and every break rewrites the",
        "rest of the request at the cache-write price. windowfit clears in batches and cuts whole turns, so it",
        f"breaks the prefix on {mean_breaks.get('windowfit', 0):.0%} of requests on average and stays under the",
        "budget; its cache-tuned variant `windowfit-cache`, whose batches close by size and whose cuts sit at",
        f"fixed steps, breaks it on {mean_breaks.get('windowfit-cache', 0):.0%}: each break frees room for many",
        "requests, so more of each is read rather than written."
        + (
            " Where the budget is under the minimum cacheable length nothing is read by any policy, and the"
            " cheapest is simply the one that sends least (" + "; ".join(no_cache_wins) + ")."
            if no_cache_wins
            else ""
        ),
        "Where a session has many turns, the old",
        "whole-turn cut (`legacy`) breaks little too; on a one-turn subagent it has nowhere to cut.",
        "",
        "## Cheapest policy with no rejection",
        "",
        "| session | budget | cheapest | cost $ |",
        "| --- | ---: | --- | ---: |",
        *[f"| {n} | {f:.0%} | {p} | {c} |" for n, f, p, c in summary],
        "",
    ]
    OUT.write_text("\n".join(parts))
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
