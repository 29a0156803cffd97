"""Stable JSON documents for reports (and, later, plans). Keys are documented
in docs/json.md; a key is never renamed within a ``schema`` version."""

from __future__ import annotations

from typing import Any

from .fit import Plan, ResultRef, repaired, too_long_message
from .replay import Run
from .report import Report
from .transcript import Transcript
from .validate import Violation

SCHEMA = 1


def report_to_dict(report: Report) -> dict[str, Any]:
    return {
        "path": report.path,
        "format": report.format,
        "dialect": report.dialect,
        "counts": {
            "messages": report.messages,
            "turns": report.turns,
            "rounds": report.rounds,
            "tool_calls": report.tool_calls,
            "tool_results": report.tool_results,
            "skipped_lines": report.skipped_lines,
        },
        "tokens": report.tokens,
        "preamble_tokens": report.preamble_tokens,
        "scripts": [
            {
                "class": c.name,
                "chars": c.chars,
                "chars_per_token": c.chars_per_token,
                "tokens": round(c.tokens, 2),
                "share": round(c.share, 4),
            }
            for c in report.classes
        ],
        "by_role": dict(report.by_role),
        "by_kind": dict(report.by_kind),
        "largest_results": [
            {
                "tool": r.tool,
                "call_id": r.call_id,
                "tokens": r.tokens,
                "budget_share": round(r.tokens / report.budget, 4) if report.budget else None,
                "message_index": r.message_index,
                "line": r.line,
            }
            for r in report.largest_results
        ],
        "tools": [
            {
                "tool": t.tool,
                "calls": t.calls,
                "results": t.results,
                "result_tokens": t.result_tokens,
                "max_result_tokens": t.max_result_tokens,
                "grows_like_data": t.grows_like_data,
            }
            for t in report.tools
        ],
        "budget": report.budget,
        "window": report.window,
        "fits_budget": report.fits_budget,
        "fits_window": report.fits_window,
        "verdict": report.verdict,
        "name": report.name or None,
        "session": {"messages": report.session_messages, "tokens": report.session_tokens},
        "measured": [
            {
                "before": u.before,
                "line": u.line,
                "estimated": u.estimated,
                "measured": u.measured,
                "cache_read": u.cache_read,
                "cache_creation": u.cache_creation,
                "ratio": round(u.ratio, 4),
            }
            for u in report.usage
        ],
        "defects": [
            {"kind": d.kind, "path": d.source.path, "line": d.source.line, "detail": d.detail} for d in report.defects
        ],
        "line_kinds": dict(report.line_kinds),
        "notes": list(report.notes),
    }


def reports_document(reports: list[Report], *, estimator: str) -> dict[str, Any]:
    return {"schema": SCHEMA, "estimator": estimator, "transcripts": [report_to_dict(r) for r in reports]}


def plan_to_dict(
    plan: Plan,
    transcript: Transcript,
    *,
    estimator: str,
    input_violations: tuple[Violation, ...] = (),
    output_violations: tuple[Violation, ...] = (),
) -> dict[str, Any]:
    """The plan as one JSON document: every decision and every estimate."""
    cleared = {r.call_id for r in plan.cleared}
    protected = {r.call_id for r in plan.protected}
    too_small = {r.call_id for r in plan.too_small}

    def status(ref: ResultRef) -> str:
        if ref.call_id in cleared:
            return "cleared"
        if ref.call_id in protected:
            return "protected"
        if ref.call_id in too_small:
            return "too-small"
        return "candidate"

    fates = plan.message_fates()
    messages = repaired(transcript, plan).messages
    return {
        "schema": SCHEMA,
        "path": transcript.source.path,
        "name": transcript.name or None,
        "format": transcript.format,
        "dialect": transcript.dialect,
        "estimator": estimator,
        "options": {
            "budget": plan.options.budget,
            "batch_size": plan.options.batch_size,
            "protected_fraction": plan.options.protected_fraction,
            "min_clear_ratio": plan.options.min_clear_ratio,
            "add_notice": plan.options.add_notice,
        },
        "outcome": plan.outcome,
        "fits": plan.fits,
        "tokens_before": plan.tokens_before,
        "tokens_after": plan.tokens_after,
        "preamble_tokens": plan.preamble_tokens,
        "stages": list(plan.stages),
        "notice_added": plan.notice_added,
        "messages": [
            {"index": i, "role": m.role, "line": m.source.line, "tokens": plan.message_tokens[i], "fate": fates[i]}
            for i, m in enumerate(messages)
        ],
        "results": [
            {
                "message_index": r.message_index,
                "block_index": r.block_index,
                "call_id": r.call_id,
                "tool": r.tool,
                "tokens": r.tokens,
                "stub_tokens": r.stub_tokens,
                "status": status(r),
            }
            for r in plan.results
        ],
        "protected": [r.call_id for r in plan.protected],
        "candidates": [r.call_id for r in plan.candidates],
        "batches": [
            {"index": b.index, "call_ids": [r.call_id for r in b.results], "tokens_saved": b.tokens_saved}
            for b in plan.batches
        ],
        "head": list(plan.head),
        "kept": [list(k) for k in plan.kept],
        "dropped": [{"kind": d.kind, "start": d.start, "stop": d.stop, "tokens": d.tokens} for d in plan.dropped],
        "repairs": [
            {"kind": r.kind, "call_id": r.call_id, "message_index": r.message_index, "why": r.why} for r in plan.repairs
        ],
        "note": plan.note or None,
        "cause": plan.cause or None,
        "person_message": too_long_message(plan) if plan.outcome == "too-long" else None,
        "violations": {
            "input": [
                {
                    "kind": v.kind,
                    "message_index": v.message_index,
                    "call_id": v.call_id,
                    "line": v.source.line,
                    "detail": v.detail,
                }
                for v in input_violations
            ],
            "output": [
                {"kind": v.kind, "message_index": v.message_index, "call_id": v.call_id, "detail": v.detail}
                for v in output_violations
            ],
        },
    }


def replay_to_dict(
    runs: tuple[Run, ...], transcript: Transcript, *, budget: int, window: int | None, estimator: str
) -> dict[str, Any]:
    """A replay: per policy its totals and every step."""
    return {
        "schema": SCHEMA,
        "path": transcript.source.path,
        "name": transcript.name or None,
        "estimator": estimator,
        "budget": budget,
        "window": window,
        "runs": [
            {
                "policy": run.policy,
                "requests": run.requests,
                "rejections": run.rejections,
                "sent_tokens": run.sent_tokens,
                "cached_tokens": run.cached_tokens,
                "uncached_tokens": run.uncached_tokens,
                "prefix_breaks": run.prefix_breaks,
                "outcomes": {name: round(share, 4) for name, share in run.outcome_shares()},
                "steps": [
                    {
                        "index": s.index,
                        "messages": s.messages,
                        "line": s.line,
                        "raw_tokens": s.raw_tokens,
                        "sent_tokens": s.sent_tokens,
                        "outcome": s.outcome,
                        "cleared": s.cleared,
                        "shared_prefix_tokens": s.shared_prefix_tokens,
                        "prefix_break": s.prefix_break,
                        "rejected": s.rejected,
                    }
                    for s in run.steps
                ],
            }
            for run in runs
        ],
    }
