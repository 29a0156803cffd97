"""Stable JSON documents for reports (and, later, plans). Keys are documented
in docs/json.md; a key is never renamed within a ``schema`` version."""

from __future__ import annotations

from typing import Any

from .report import Report

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
    }


def reports_document(reports: list[Report], *, estimator: str) -> dict[str, Any]:
    return {"schema": SCHEMA, "estimator": estimator, "transcripts": [report_to_dict(r) for r in reports]}
