"""Rich renderings of fitting's values. Only this package imports rich."""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from windowfit.fitting.report import Report

from .tables import WholeTable
from .terminal import markup_safe

BAR_WIDTH = 50


def plural(n: int, noun: str) -> str:
    """``1 turn``, ``2 turns``, ``1,204 turns``."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def budget_bar(tokens: int, budget: int | None, window: int | None) -> Text:
    """``[██████░░░░|░░░░░]`` with the budget marked ``|`` and the window as the end."""
    scale = max(x for x in (tokens, budget or 0, window or 0))
    scale = max(scale, 1)
    filled = round(BAR_WIDTH * tokens / scale)
    marks = {round(BAR_WIDTH * budget / scale): "B"} if budget else {}
    if window:
        marks[round(BAR_WIDTH * window / scale)] = "W"
    bar = Text("[")
    over_budget = budget is not None and tokens > budget
    for i in range(BAR_WIDTH + 1):
        if i in marks:
            bar.append(marks[i], style="bold")
        elif i < filled:
            bar.append("█", style="red" if over_budget else "green")
        else:
            bar.append("░", style="dim")
    bar.append("]")
    return bar


MAX_DEFECTS_SHOWN = 8


def render_provenance(report: Report) -> list[RenderableType]:
    """What the loader decided and found: the whole session vs the live context,
    lines that are not messages, defects, and the provider's own counts."""
    parts: list[RenderableType] = []
    if report.session_messages != report.messages:
        parts += [
            Text(),
            Text(
                f"Whole session: {plural(report.session_messages, 'message')}, "
                f"{report.session_tokens:,} tokens; the live context after the last compaction: "
                f"{plural(report.messages, 'message')}, {report.tokens:,} tokens (shown above)"
            ),
        ]
    for note in report.notes:
        parts.append(Text(f"note: {note}", style="dim"))
    if report.line_kinds:
        kinds = ", ".join(f"{kind} {n:,}" for kind, n in report.line_kinds)
        parts.append(Text(f"Lines that are not messages (skipped): {kinds}", style="dim"))
    if report.defects:
        counts: dict[str, int] = {}
        for d in report.defects:
            counts[d.kind] = counts.get(d.kind, 0) + 1
        parts += [Text(), Text("Defects: " + ", ".join(f"{k} {n:,}" for k, n in counts.items()), style="yellow")]
        for d in report.defects[:MAX_DEFECTS_SHOWN]:
            where = f"{d.source.path}:{d.source.line}" if d.source.line else d.source.path
            parts.append(Text(f"  {where}: {d.kind}: {d.detail}", style="yellow"))
        if len(report.defects) > MAX_DEFECTS_SHOWN:
            parts.append(
                Text(f"  … {len(report.defects) - MAX_DEFECTS_SHOWN:,} more (--json lists all)", style="yellow")
            )
    if report.usage:
        parts += [Text(), render_usage(report)]
    return parts


def render_usage(report: Report) -> RenderableType:
    rows = report.usage
    ratios = sorted(u.ratio for u in rows)
    median = ratios[len(ratios) // 2]
    low = sum(1 for r in ratios if r < 1)
    measured = sum(u.measured for u in rows)
    cached = sum(u.cache_read for u in rows)
    table = WholeTable(
        title=f"Estimated vs measured request size at {plural(len(rows), 'point')}: median ratio "
        f"{median:.2f}, {low:,} under-estimated; the provider served {cached / max(measured, 1):.0%} "
        "of the measured input from its prompt cache",
        title_justify="left",
        show_edge=False,
    )
    for col in ("msgs", "line", "estimated", "measured", "ratio", "cache read"):
        table.add_column(col, justify="right")
    shown = sorted(rows, key=lambda u: u.ratio)[:5] if len(rows) > 10 else list(rows)
    for u in shown:
        table.add_row(
            str(u.before),
            "" if u.line is None else str(u.line),
            f"{u.estimated:,}",
            f"{u.measured:,}",
            Text(f"{u.ratio:.2f}", style="red" if u.ratio < 1 else ""),
            f"{u.cache_read:,}",
        )
    if len(rows) > 10:
        table.caption = "the 5 points where the estimate is lowest; --json lists all"
    return table


def render_report(report: Report) -> RenderableType:
    title = Text.assemble((report.label, "bold"), f"  ({report.format}, {report.dialect})")  # Text: not markup
    counts = Text(
        f"{plural(report.messages, 'message')} · {plural(report.turns, 'turn')} · "
        f"{plural(report.rounds, 'tool round')} · {plural(report.tool_calls, 'tool call')} · "
        f"{plural(report.tool_results, 'tool result')}"
        + (f" · {plural(report.skipped_lines, 'line')} skipped" if report.skipped_lines else "")
    )
    scripts = WholeTable(title="Tokens by script", title_justify="left", show_edge=False)
    for col in ("class", "chars", "chars/token", "tokens", "share"):
        scripts.add_column(col, justify="left" if col == "class" else "right")
    for row in report.classes:
        scripts.add_row(
            row.name, f"{row.chars:,}", f"{row.chars_per_token:g}", f"{row.tokens:,.0f}", f"{row.share:.1%}"
        )

    def share_table(title: str, rows: tuple[tuple[str, int], ...]) -> Table:
        table = WholeTable(title=title, title_justify="left", show_edge=False)
        table.add_column(title.split()[-1])
        table.add_column("tokens", justify="right")
        table.add_column("share", justify="right")
        for name, tokens in rows:
            table.add_row(markup_safe(name), f"{tokens:,}", f"{tokens / max(report.tokens, 1):.1%}")
        return table

    parts: list[RenderableType] = [
        title,
        counts,
        Text(),
        scripts,
        Text(),
        share_table("Tokens by role", report.by_role),
        Text(),
        share_table("Tokens by block kind", report.by_kind),
    ]
    if report.largest_results:
        largest = WholeTable(title="Largest tool results", title_justify="left", show_edge=False)
        for col in ("tool", "call id", "line", "tokens", "of budget"):
            largest.add_column(col, justify="right" if col in ("line", "tokens", "of budget") else "left")
        for r in report.largest_results:
            largest.add_row(
                markup_safe(r.tool),
                markup_safe(r.call_id),
                "" if r.line is None else str(r.line),
                f"{r.tokens:,}",
                f"{r.tokens / report.budget:.1%}" if report.budget else "",
            )
        parts += [Text(), largest]
    parts += render_provenance(report)
    data_tools = [t for t in report.tools if t.grows_like_data]
    if data_tools:
        parts += [
            Text(),
            Text(
                "Data tools (results grow with the data; page them by handle instead): "
                + ", ".join(t.tool for t in data_tools),
                style="yellow",
            ),
        ]
        for t in data_tools:
            parts.append(
                Text(
                    f"  {t.tool}: paged at {t.page_tokens:,} tokens (windowfit's offload), its {t.results} results "
                    f"would have put {t.paged_tokens:,} tokens in the context instead of {t.result_tokens:,} "
                    f"(the largest: at least {t.largest_pages} pages)",
                    style="yellow",
                )
            )
    verdict_style = "green" if report.fits_budget and report.fits_window else "red"
    parts += [
        Text(),
        Text.assemble(budget_bar(report.tokens, report.budget, report.window), f" {report.tokens:,} tokens"),
        *render_size(report),
    ]
    if report.budget is not None or report.window is not None:
        parts.append(Text(report.verdict, style=verdict_style))
    return Group(*parts)


def render_size(report: Report) -> list[RenderableType]:
    """Which parts of the total are measured, inferred or estimated."""
    size = report.size
    if size is None:
        return []
    lines: list[RenderableType] = []
    if size.anchored:
        lines.append(Text(f"next request: {size.describe()}", style="dim"))
    lines.append(Text(size.preamble_text(), style="dim"))
    return lines


def short_verdict(report: Report) -> Text:
    """``fits``, or how far over the budget (and the window) in a few words."""
    if report.window is not None and not report.fits_window:
        return Text(f"{report.tokens - report.window:+,} over window", style="bold red")
    if report.budget is not None and not report.fits_budget:
        return Text(f"{report.tokens - report.budget:+,} over budget", style="red")
    return Text("fits" if report.budget is not None or report.window is not None else "", style="green")


def render_summary(reports: list[Report]) -> Table:
    table = WholeTable(title="All transcripts", title_justify="left", show_edge=False, decorative=("format",))
    table.add_column("transcript", overflow="fold", min_width=24, ratio=1)
    table.add_column("format")
    for col in ("msgs", "results", "tokens"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    for r in reports:
        table.add_row(
            Text(r.label), r.format, f"{r.messages:,}", f"{r.tool_results:,}", f"{r.tokens:,}", short_verdict(r)
        )
    return table


DETAILS_UP_TO = 5
"""With more transcripts than this, ``report`` shows only the per-transcript table unless --details."""


def print_reports(console: Console, reports: list[Report], *, details: bool | None = None) -> None:
    if details is None:
        details = len(reports) <= DETAILS_UP_TO
    if not details:
        console.print(render_summary(reports))
        console.print(Text(f"{len(reports):,} transcripts: one line each; --details shows every report", "dim"))
        return
    for i, report in enumerate(reports):
        if i:
            console.rule()
        console.print(render_report(report))
    if len(reports) > 1:
        console.rule()
        console.print(render_summary(reports))
