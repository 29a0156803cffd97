"""Every ``--json`` document the command line prints, built from typed shapes.

One TypedDict per JSON object (named as in ``docs/schema/*.schema.json``'s
``$defs``; they are in ``json_shapes``, and read here as well), one function per
document. Keys are documented in docs/json.md; a key is never renamed or removed
within a ``schema`` version.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from .estimate import SEED
from .size import Size

if TYPE_CHECKING:  # types only: the modules behind other commands' documents load when those run
    from .audit import BlockAudit, MessageAudit, RatioRow, TranscriptAudit
    from .estimate import ScriptRule
    from .fit import Cause, Outcome, Plan, ResultRef
    from .formats.base import SkippedFile
    from .json_shapes import (
        AuditBlockJson,
        AuditDocument,
        AuditMessageJson,
        ByContentJson,
        ByScriptJson,
        CacheCheckJson,
        CheckDocument,
        FetchDocument,
        FitDocument,
        InputViolationJson,
        OutputViolationJson,
        PricingJson,
        ProviderPointJson,
        RatioJson,
        RepairJson,
        ReplayDocument,
        ReportDocument,
        ResultStatus,
        SchemaVersion,
        SizeJson,
        SkippedFileJson,
        StoreDocument,
        SuggestionJson,
        TooLongJson,
        TranscriptAuditJson,
        TranscriptReportJson,
    )
    from .pricing import Price
    from .repair import Repair
    from .replay import Run
    from .replay.cache import CacheCheck, CacheModel
    from .report import Report, UsageRow
    from .size import PreambleSource
    from .store.base import Entry, Page
    from .suggest import Suggestion
    from .tokenizers import Tokenizer
    from .transcript import Transcript
    from .validate import Violation
    from .windows import WindowChoice

SCHEMA: SchemaVersion = 1
"""The version of every document's keys (``schema`` in each)."""


def __getattr__(name: str) -> Any:
    """The documents' shapes (``ReportDocument``, ...), read from ``json_shapes`` when first asked for here: no
    command builds them to write its document. (Not the import system's questions, such as ``__path__``.)"""
    if not name.startswith("__"):
        from . import json_shapes

        found = getattr(json_shapes, name, None)
        if found is not None:
            return found
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _ratio(value: float | Fraction | None) -> float | None:
    """A ratio to 4 decimals; null when there is nothing to divide by."""
    return None if value is None or value == math.inf else round(float(value), 4)


def _skipped(files: Sequence[SkippedFile]) -> list[SkippedFileJson]:
    return [{"path": f.path, "reason": f.reason} for f in files]


# --------------------------------------------------------------------------
# report --json


def _size(size: Size | None, *, tokens: int, preamble: int) -> SizeJson:
    """The parts of a predicted size; a value made without one is the estimate."""
    if size is None:
        source: PreambleSource = "recorded" if preamble else "none"
        size = Size(tokens, "estimate", preamble, source, estimated_tokens=tokens - preamble)
    return {
        "tokens": size.tokens,
        "source": size.source,
        "preamble_tokens": size.preamble_tokens,
        "preamble_source": size.preamble_source,
        "preamble_line": size.preamble_line,
        "measured_tokens": size.measured_tokens,
        "measured_line": size.anchor_line,
        "measured_messages": size.anchor_messages,
        "reply_tokens": size.reply_tokens,
        "estimated_tokens": size.estimated_tokens,
    }


def report_to_dict(report: Report) -> TranscriptReportJson:
    """One transcript's report."""
    size = _size(report.size, tokens=report.tokens, preamble=report.preamble_tokens)
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
        "preamble_source": size["preamble_source"],
        "size_source": size["source"],
        "size": size,
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
                "page_tokens": t.page_tokens,
                "paged_tokens": t.paged_tokens,
                "largest_pages": t.largest_pages,
            }
            for t in report.tools
        ],
        "budget": report.budget,
        "window": report.window,
        "window_model": report.window_model,
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
                "ratio": _ratio(u.ratio),
            }
            for u in report.usage
        ],
        "defects": [
            {"kind": d.kind, "path": d.source.path, "line": d.source.line, "detail": d.detail} for d in report.defects
        ],
        "line_kinds": dict(report.line_kinds),
        "notes": list(report.notes),
    }


def report_document(
    reports: Sequence[Report], *, estimator: str, skipped: Sequence[SkippedFile] = ()
) -> ReportDocument:
    """``windowfit report --json``; ``skipped``: the files a folder scan passed over."""
    return report_document_of([report_to_dict(r) for r in reports], estimator=estimator, skipped=skipped)


def report_document_of(
    transcripts: Sequence[TranscriptReportJson], *, estimator: str, skipped: Sequence[SkippedFile] = ()
) -> ReportDocument:
    """``report_document`` of reports already made into their objects (``report_to_dict``): a folder's workers
    send those back, plain values that cost a quarter of the reports' time to pickle both ways."""
    return {
        "schema": SCHEMA,
        "estimator": estimator,
        "transcripts": list(transcripts),
        "skipped_files": _skipped(skipped),
    }


# --------------------------------------------------------------------------
# fit --json (the plan)


def _too_long(cause: Cause | None) -> TooLongJson | None:
    if cause is None:
        return None
    a = cause.alone
    return {
        "budget": cause.budget,
        "tokens": cause.tokens,
        "parts": [
            {"kind": p.kind, "label": p.label, "tokens": p.tokens, "start": p.start, "stop": p.stop}
            for p in cause.parts
        ],
        "alone": {"kind": a.kind, "label": a.label, "tokens": a.tokens, "call_id": a.call_id or None} if a else None,
        "sentence": cause.sentence,
    }


def _repair(r: Repair) -> RepairJson:
    return {
        "kind": r.kind,
        "defect": r.defect,
        "call_id": r.call_id,
        "message_index": r.message_index,
        "line": r.source.line,
        "why": r.why,
    }


def _input_violation(v: Violation) -> InputViolationJson:
    return {
        "kind": v.kind,
        "message_index": v.message_index,
        "call_id": v.call_id,
        "line": v.source.line,
        "detail": v.detail,
    }


def _output_violation(v: Violation) -> OutputViolationJson:
    return {"kind": v.kind, "message_index": v.message_index, "call_id": v.call_id, "detail": v.detail}


def plan_document(
    plan: Plan,
    transcript: Transcript,
    *,
    estimator: str,
    window: int | None = None,
    input_violations: tuple[Violation, ...] = (),
    output_violations: tuple[Violation, ...] = (),
) -> FitDocument:
    """``windowfit fit --json``: the plan as one document, every decision and every estimate."""
    from .fit import crossed, repaired, too_long_message

    cleared = {r.call_id for r in plan.cleared}
    protected = {r.call_id for r in plan.protected}
    too_small = {r.call_id for r in plan.too_small}

    def status(ref: ResultRef) -> ResultStatus:
        if ref.call_id in cleared:
            return "cleared"
        if ref.call_id in protected:
            return "protected"
        if ref.call_id in too_small:
            return "too-small"
        return "candidate"

    size = _size(plan.size, tokens=plan.tokens_before, preamble=plan.preamble_tokens)
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
            "page_tokens": plan.options.page_tokens,
            "batch_tokens": plan.options.batch_tokens,
            "cut_step": plan.options.cut_step,
            "carried_cut": plan.options.carried_cut,
        },
        "window": window,
        "outcome": plan.outcome,
        "fits": plan.fits,
        "crossed": crossed(plan, window),
        "tokens_before": plan.tokens_before,
        "tokens_after": plan.tokens_after,
        "preamble_tokens": plan.preamble_tokens,
        "preamble_source": size["preamble_source"],
        "size_source": size["source"],
        "size": size,
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
                "handle": r.handle if r.handle and r.call_id in cleared else None,
                "pages": r.pages if r.handle and r.call_id in cleared else None,
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
        "cut_at": plan.cut_at,
        "cut": plan.cut,
        "dropped": [{"kind": d.kind, "start": d.start, "stop": d.stop, "tokens": d.tokens} for d in plan.dropped],
        "repairs": [_repair(r) for r in plan.repairs],
        "note": plan.note or None,
        "cause": plan.cause or None,
        "too_long": _too_long(plan.too_long),
        "person_message": too_long_message(plan) if plan.outcome == "too-long" else None,
        "violations": {
            "input": [_input_violation(v) for v in input_violations],
            "output": [_output_violation(v) for v in output_violations],
        },
    }


# --------------------------------------------------------------------------
# check --format json


def check_document(
    checked: Sequence[tuple[str, str, Plan, bool, WindowChoice]],
    *,
    estimator: str,
    budget: int,
    window: int | None,
    fail_on: Outcome,
    skipped: Sequence[SkippedFile] = (),
) -> CheckDocument:
    """``windowfit check --format json``: per transcript (its path, name, plan, whether it failed the check and
    the window it was checked against) its plan's outcome; ``window`` is ``--window``'s."""
    from .fit import crossed

    return {
        "schema": SCHEMA,
        "estimator": estimator,
        "budget": budget,
        "window": window,
        "fail_on": fail_on,
        "passed": not any(failed for *_, failed, _ in checked),
        "transcripts": [
            {
                "path": path,
                "name": name or None,
                "outcome": p.outcome,
                "tokens_before": p.tokens_before,
                "tokens_after": p.tokens_after,
                "failed": failed,
                "window": w.tokens,
                "window_model": w.model,
                "crossed": crossed(p, w.tokens),
                "cause": p.cause or None,
                "too_long": _too_long(p.too_long),
                "defects": [
                    {"kind": r.defect, "repair": r.kind, "call_id": r.call_id, "line": r.source.line, "detail": r.why}
                    for r in p.repairs
                ],
                "preamble_tokens": p.preamble_tokens,
                "preamble_source": _size(p.size, tokens=p.tokens_before, preamble=p.preamble_tokens)["preamble_source"],
                "size_source": p.size_source,
                "size": _size(p.size, tokens=p.tokens_before, preamble=p.preamble_tokens),
            }
            for path, name, p, failed, w in checked
        ],
        "skipped_files": _skipped(skipped),
    }


# --------------------------------------------------------------------------
# replay --json


def _usd(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def replay_document(
    runs: Sequence[Run],
    transcript: Transcript,
    *,
    budget: int,
    window: int | None,
    estimator: str,
    skipped: Sequence[SkippedFile] = (),
    pricing: tuple[str | None, str | None, Price | None, CacheModel] | None = None,
    cache_check: CacheCheck | None = None,
) -> ReplayDocument:
    """``windowfit replay --json``: per policy its totals and every step. ``pricing`` is the model the
    log records, the ``--model`` given, the price row used (None: unpriced) and the cache model."""
    pricing_json: PricingJson | None = None
    if pricing is not None:
        recorded, given, row, cache = pricing
        pricing_json = {
            "recorded_model": recorded,
            "model": given,
            "row": row.model if row else None,
            "provider": cache.provider,
            "cache_ttl": cache.ttl,
            "source": row.source if row else None,
            "read_on": row.read_on if row else None,
        }
    check_json: CacheCheckJson | None = None
    if cache_check is not None:
        error, tail = cache_check.read_error, cache_check.tail_write_error
        check_json = {
            "policy": "send-everything",
            "steps": cache_check.steps,
            "predicted_cache_read_tokens": cache_check.predicted_read,
            "recorded_cache_read_tokens": cache_check.recorded_read,
            "predicted_cache_write_tokens": cache_check.predicted_write,
            "recorded_cache_write_tokens": cache_check.recorded_write,
            "read_error": None if error is None else round(error, 4),
            "misses": cache_check.misses,
            "miss_predicted_cache_write_tokens": cache_check.miss_predicted_write,
            "miss_recorded_cache_write_tokens": cache_check.miss_recorded_write,
            "turn_start_misses": cache_check.turn_misses,
            "turn_start_miss_recorded_cache_write_tokens": cache_check.turn_miss_recorded_write,
            "turn_starts_after_tool_use": cache_check.turn_starts,
            "tail_write_error": None if tail is None else round(tail, 4),
        }
    return {
        "schema": SCHEMA,
        "path": transcript.source.path,
        "name": transcript.name or None,
        "estimator": estimator,
        "budget": budget,
        "window": window,
        "pricing": pricing_json,
        "cache_check": check_json,
        "runs": [
            {
                "policy": run.policy,
                "requests": run.requests,
                "rejections": run.rejections,
                "sent_tokens": run.sent_tokens,
                "cached_tokens": run.cached_tokens,
                "uncached_tokens": run.uncached_tokens,
                "prefix_breaks": run.prefix_breaks,
                "cache_read_tokens": run.cache_read_tokens,
                "cache_write_tokens": run.cache_write_tokens,
                "cache_hit_rate": round(run.cache_hit_rate, 4),
                "cost_usd": _usd(run.cost_usd),
                "outcomes": {name: round(share, 4) for name, share in run.outcome_shares()},
                "retrievable_tokens": run.retrievable_tokens,
                "retrievable_results": run.retrievable_results,
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
                        "measured_tokens": s.measured_tokens,
                        "cache_read_tokens": s.cache_read_tokens,
                        "cache_write_tokens": s.cache_write_tokens,
                        "cost_usd": _usd(s.cost_usd),
                    }
                    for s in run.steps
                ],
            }
            for run in runs
        ],
        "skipped_files": _skipped(skipped),
    }


# --------------------------------------------------------------------------
# audit --json (and --suggest)


def _audit_block(b: BlockAudit) -> AuditBlockJson:
    return {
        "message_index": b.message_index,
        "block_index": b.block_index,
        "kind": b.kind,
        "line": b.line,
        "script": b.script,
        "content": b.content,
        "chars": b.counts.total,
        "estimate": b.estimate,
        "real": b.real,
        "ratio": _ratio(b.ratio),
    }


def _audit_message(m: MessageAudit) -> AuditMessageJson:
    return {
        "message_index": m.index,
        "role": m.role,
        "line": m.line,
        "chars": m.counts.total,
        "estimate": m.estimate,
        "real": m.real,
        "ratio": _ratio(m.ratio),
    }


def _ratio_rows(rows: Sequence[RatioRow]) -> dict[str, RatioJson]:
    return {
        r.group: {
            "blocks": r.blocks,
            "chars": r.chars,
            "estimate": r.estimate,
            "real": r.real,
            "ratio": _ratio(r.ratio),
            "under": r.under,
        }
        for r in rows
    }


def _by_script(rows: Sequence[RatioRow]) -> ByScriptJson:
    by = _ratio_rows(rows)
    return {"ascii": by["ascii"], "cjk": by["cjk"], "other": by["other"]}


def _by_content(rows: Sequence[RatioRow]) -> ByContentJson:
    by = _ratio_rows(rows)
    return {"prose": by["prose"], "code": by["code"], "json": by["json"], "logs": by["logs"]}


def _provider_point(u: UsageRow) -> ProviderPointJson:
    return {
        "messages": u.before,
        "line": u.line,
        "estimated": u.estimated,
        "measured": u.measured,
        "ratio": _ratio(u.ratio),
    }


def audit_to_dict(audit: TranscriptAudit) -> TranscriptAuditJson:
    """One transcript's audit: per tokenizer, and against the provider's counts."""
    usage = audit.usage
    return {
        "path": audit.path,
        "name": audit.name or None,
        "messages": audit.messages,
        "tokenizers": [
            {
                "tokenizer": t.tokenizer,
                "source": t.source,
                "estimate": t.estimate,
                "real": t.real,
                "ratio": _ratio(t.ratio),
                "safe": t.safe,
                "verdict": t.verdict(audit.path),
                "messages_under": t.messages_under,
                "blocks": t.block_count,
                "blocks_under": t.blocks_under,
                "by_script": _by_script(t.by_script),
                "by_content": _by_content(t.by_content),
                "worst_blocks": [_audit_block(b) for b in t.worst_blocks],
                "worst_messages": [_audit_message(m) for m in t.worst_messages],
            }
            for t in audit.tokenizers
        ],
        "provider": None
        if usage is None
        else {
            "points": len(usage.points),
            "under": usage.under,
            "min_ratio": _ratio(usage.min_ratio),
            "median_ratio": _ratio(usage.median_ratio),
            "max_ratio": _ratio(usage.max_ratio),
            "worst": [_provider_point(u) for u in usage.worst],
        },
    }


def suggestion_to_dict(suggestion: Suggestion, base: ScriptRule) -> SuggestionJson:
    """``audit --suggest``'s rule, the samples it was fitted on and held out, its
    margin, what its guarantee covers, and how much it over-estimates next to ``base``."""
    from .suggest import decimal_text, estimate_over, rule_spec, tightest

    rule, samples = suggestion.rule, suggestion.samples
    return {
        "tightest": [
            {
                "where": s.where,
                "ascii": s.counts.ascii,
                "cjk": s.counts.cjk,
                "other": s.counts.other,
                "tokens": s.tokens,
                "fixed": s.fixed,
                "estimate": rule.text_tokens(s.counts) + s.fixed,
            }
            for s in tightest(rule, samples)
        ],
        "estimator": rule_spec(rule),
        "chars_per_token": {
            "ascii": decimal_text(rule.ascii_chars_per_token),
            "cjk": decimal_text(rule.cjk_chars_per_token),
            "other": decimal_text(rule.other_chars_per_token),
        },
        "samples": len(samples),
        "fit_samples": len(suggestion.fit),
        "held_out_samples": len(suggestion.held_out),
        "set_aside": len(suggestion.set_aside),
        "held_out_under_before": suggestion.held_out_under_before,
        "held_out_under_after": suggestion.held_out_under_after,
        "needed_margin": round(float(suggestion.needed_margin), 4),
        "margin": round(float(suggestion.margin), 4),
        "guarantee": suggestion.guarantee(),
        "over_estimate": _ratio(estimate_over(rule, samples)),
        "base_over_estimate": _ratio(estimate_over(base, samples)),
    }


def audit_document(
    audits: Sequence[TranscriptAudit],
    *,
    estimator: str,
    tokenizers: Sequence[Tokenizer],
    suggestion: Suggestion | None = None,
    base: ScriptRule = SEED,
    skipped: Sequence[SkippedFile] = (),
) -> AuditDocument:
    """``windowfit audit --json``; with a ``suggestion`` (``--suggest``), its rule
    and margin, compared with ``base``."""
    return {
        "schema": SCHEMA,
        "estimator": estimator,
        "tokenizers": [t.name for t in tokenizers],
        "transcripts": [audit_to_dict(a) for a in audits],
        "suggestion": None if suggestion is None else suggestion_to_dict(suggestion, base),
        "skipped_files": _skipped(skipped),
    }


def page_document(page: Page) -> FetchDocument:
    """``windowfit fetch --json``: one page of a stored result."""
    return {
        "schema": SCHEMA,
        "handle": page.handle,
        "page": page.page,
        "pages": page.pages,
        "text": page.text,
        "tool": page.tool,
        "call_id": page.call_id,
        "tokens": page.tokens,
    }


def store_document(target: str, entries: Sequence[Entry], *, dropped: int | None = None) -> StoreDocument:
    """``windowfit store --json``: every entry (after ``--older-than`` dropped some), and their totals."""
    return {
        "schema": SCHEMA,
        "store": target,
        "entries": [
            {
                "handle": e.handle,
                "tool": e.tool,
                "call_id": e.call_id,
                "tokens": e.tokens,
                "pages": e.pages,
                "chars": e.chars,
                "source": e.source,
                "created": e.created,
            }
            for e in entries
        ],
        "count": len(entries),
        "tokens": sum(e.tokens for e in entries),
        "pages": sum(e.pages for e in entries),
        "chars": sum(e.chars for e in entries),
        "dropped": dropped,
    }
