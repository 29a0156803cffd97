"""Rich renderings of an audit: ratios by script class and kind of content, the
worst blocks, the verdict, the provider's counts, and a suggested rule."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from windowfit.fitting.audit import BlockAudit, RatioRow, TokenizerAudit, TranscriptAudit, UsageAudit
from windowfit.fitting.estimate import ScriptRule
from windowfit.fitting.suggest import HOLD_OUT_EVERY, Suggestion, estimate_over, tightest
from windowfit.fitting.suggest import rule_spec as _rule_spec

from .render import plural
from .tables import WholeTable


def _ratio(value: float | None) -> Text:
    """``0.87`` in red (an under-estimate), ``1.12`` plain, ``-`` when nothing was counted."""
    if value is None:
        return Text("-", style="dim")
    return Text(f"{value:.2f}", style="bold red" if value < 1 else "")


def ratio_table(title: str, header: str, rows: Sequence[RatioRow]) -> Table:
    table = WholeTable(title=title, title_justify="left", show_edge=False)
    table.add_column(header)
    for col in ("blocks", "chars", "estimate", "real", "ratio", "under"):
        table.add_column(col, justify="right")
    for r in rows:
        if not r.blocks:
            continue
        table.add_row(
            r.group,
            f"{r.blocks:,}",
            f"{r.chars:,}",
            f"{r.estimate:,}",
            f"{r.real:,}",
            _ratio(r.ratio),
            Text(f"{r.under:,}", style="red" if r.under else ""),
        )
    return table


def _message(block: BlockAudit) -> str:
    if block.message_index is not None:
        return str(block.message_index)
    return "tools" if block.kind == "tool_definition" else "system"


def worst_table(audit: TokenizerAudit, top: int) -> Table:
    shown = min(top, len(audit.worst_blocks))
    table = WholeTable(
        title=f"Worst blocks: the largest under-estimates ({shown} of {audit.blocks_under:,})",
        title_justify="left",
        show_edge=False,
    )
    for col in ("msg", "line", "block"):
        table.add_column(col, justify="right")
    for col in ("kind", "script", "content"):
        table.add_column(col)
    for col in ("estimate", "real", "short", "ratio"):
        table.add_column(col, justify="right")
    for b in audit.worst_blocks[:top]:
        table.add_row(
            _message(b),
            "" if b.line is None else str(b.line),
            str(b.block_index),
            b.kind,
            b.script,
            b.content,
            f"{b.estimate:,}",
            f"{b.real:,}",
            Text(f"{b.shortfall:,}", style="bold red"),
            _ratio(b.ratio),
        )
    return table


def render_tokenizer(audit: TokenizerAudit, path: str, *, top: int) -> RenderableType:
    parts: list[RenderableType] = [
        Text.assemble(("vs " + audit.tokenizer, "bold"), (f"  ({audit.source})" if audit.source else "", "dim")),
        ratio_table("Estimate / real by script class", "script", audit.by_script),
        Text(),
        ratio_table("Estimate / real by kind of content", "content", audit.by_content),
        Text(
            "Each block counts in the script class of most of its characters and in the kind of its longest text.",
            style="dim",
        ),
    ]
    if audit.worst_blocks and top:
        parts += [Text(), worst_table(audit, top)]
    total_ratio = f" (ratio {audit.ratio:.2f})" if audit.ratio is not None else ""
    parts += [
        Text(),
        Text(
            f"Total text: {audit.estimate:,} estimated vs {audit.real:,} real{total_ratio}; "
            f"{audit.messages_under:,} of {plural(audit.message_count, 'message')} and "
            f"{audit.blocks_under:,} of {plural(audit.block_count, 'block')} under-estimated"
        ),
        Text(audit.verdict(path), style="bold green" if audit.safe else "bold red"),
    ]
    return Group(*parts)


def render_usage_audit(usage: UsageAudit, *, top: int) -> RenderableType:
    summary = Text.assemble(
        f"Estimated vs provider-measured request size at {plural(len(usage.points), 'point')}: ratio min ",
        _ratio(usage.min_ratio),
        ", median ",
        _ratio(usage.median_ratio),
        ", max ",
        _ratio(usage.max_ratio),
        f"; {usage.under:,} under-estimated (whole requests, overheads included)",
    )
    if not top:
        return summary
    table = WholeTable(title="The points where the estimate is lowest", title_justify="left", show_edge=False)
    for col in ("msgs", "line", "estimated", "measured", "ratio"):
        table.add_column(col, justify="right")
    for u in usage.worst[:top]:
        table.add_row(
            str(u.before),
            "" if u.line is None else str(u.line),
            f"{u.estimated:,}",
            f"{u.measured:,}",
            _ratio(u.ratio),
        )
    return Group(summary, table)


def render_audit(audit: TranscriptAudit, *, top: int) -> RenderableType:
    parts: list[RenderableType] = [
        Text.assemble((audit.label, "bold"), f": {plural(audit.messages, 'message')}, estimator {audit.estimator}")
    ]
    for t in audit.tokenizers:
        parts += [Text(), render_tokenizer(t, audit.path, top=top)]
    if audit.usage is not None:
        parts += [Text(), render_usage_audit(audit.usage, top=top)]
    elif not audit.tokenizers:
        parts += [Text(), Text("no provider counts in this file: nothing to compare with", style="yellow")]
    return Group(*parts)


def _percent(value: float) -> str:
    return f"{(value - 1) * 100:.0f}%"


def render_suggestion(suggestion: Suggestion, base: ScriptRule, sources: str) -> RenderableType:
    rule, samples = suggestion.rule, suggestion.samples
    spec = _rule_spec(rule)
    over = estimate_over(rule, samples)
    base_over = estimate_over(base, samples)
    defaults = {
        "ascii": base.ascii_chars_per_token,
        "cjk": base.cjk_chars_per_token,
        "other": base.other_chars_per_token,
    }
    fitted = {
        "ascii": rule.ascii_chars_per_token,
        "cjk": rule.cjk_chars_per_token,
        "other": rule.other_chars_per_token,
    }
    constants = ", ".join(
        f"{name} {value}" + (f" (as in {base.name})" if fitted[name] == defaults[name] else "")
        for name, value in (part.split("=") for part in spec.removeprefix("custom:").split(","))
    )
    held = len(suggestion.held_out)
    lines = [
        Text(
            f"Suggested constants: fitted on {plural(len(suggestion.fit), 'sample')} ({sources}), "
            f"margin from {held} more held out (one in {HOLD_OUT_EVERY}, in file order)",
            "bold",
        ),
        Text(f"  characters per token: {constants}"),
        Text(f"  structural overheads and images: as in {base.name}"),
        Text(
            f"  held out: the fit alone under-estimates {suggestion.held_out_under_before} of {held}"
            + (
                f", which need {_percent(float(suggestion.needed_margin))} more"
                if suggestion.held_out_under_before
                else ""
            )
            + f"; the rule has {_percent(float(suggestion.margin))} more and under-estimates "
            f"{suggestion.held_out_under_after}"
        ),
    ]
    if suggestion.set_aside:
        lines.append(
            Text(
                f"  {plural(len(suggestion.set_aside), 'sample')} with more tokens per character than the "
                "plausible range allows set aside (not fitted, not covered)",
                style="yellow",
            )
        )
    if over is not None and base_over is not None:
        lines.append(
            Text.assemble(
                "  estimate / real on these samples: ",
                _ratio(float(over)),
                f" ({base.name}: ",
                _ratio(float(base_over)),
                ")",
            )
        )
    lines.append(Text("  tightest samples (they bind the fit):"))
    for sample in tightest(rule, samples):
        c = sample.counts
        chars = ", ".join(f"{n:,} {name}" for name, n in (("ascii", c.ascii), ("cjk", c.cjk), ("other", c.other)) if n)
        fixed = f" + {sample.fixed:,} fixed" if sample.fixed else ""
        lines.append(
            Text(
                f"    {sample.where}: {chars or 'no'} chars, {sample.tokens:,} tokens; "
                f"estimate {rule.text_tokens(c):,}{fixed}",
                style="dim",
            )
        )
    lines.append(Text(f"  guarantee: {suggestion.guarantee()}"))
    lines.append(Text(f"  --estimator {spec}", style="bold"))
    return Group(*lines)
