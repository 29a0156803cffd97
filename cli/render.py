"""Rich renderings of fitting's values. Only this package imports rich."""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from fitting.report import Report

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


def render_report(report: Report) -> RenderableType:
    title = Text.assemble((report.path, "bold"), f"  ({report.format}, {report.dialect})")  # Text: not markup
    counts = Text(
        f"{plural(report.messages, 'message')} · {plural(report.turns, 'turn')} · "
        f"{plural(report.rounds, 'tool round')} · {plural(report.tool_calls, 'tool call')} · "
        f"{plural(report.tool_results, 'tool result')}"
        + (f" · {plural(report.skipped_lines, 'line')} skipped" if report.skipped_lines else "")
    )
    scripts = Table(title="Tokens by script", title_justify="left", show_edge=False)
    for col in ("class", "chars", "chars/token", "tokens", "share"):
        scripts.add_column(col, justify="left" if col == "class" else "right")
    for row in report.classes:
        scripts.add_row(
            row.name, f"{row.chars:,}", f"{row.chars_per_token:g}", f"{row.tokens:,.0f}", f"{row.share:.1%}"
        )

    def share_table(title: str, rows: tuple[tuple[str, int], ...]) -> Table:
        table = Table(title=title, title_justify="left", show_edge=False)
        table.add_column(title.split()[-1])
        table.add_column("tokens", justify="right")
        table.add_column("share", justify="right")
        for name, tokens in rows:
            table.add_row(escape(name), f"{tokens:,}", f"{tokens / max(report.tokens, 1):.1%}")
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
        largest = Table(title="Largest tool results", title_justify="left", show_edge=False)
        for col in ("tool", "call id", "line", "tokens", "of budget"):
            largest.add_column(col, justify="right" if col in ("line", "tokens", "of budget") else "left")
        for r in report.largest_results:
            largest.add_row(
                escape(r.tool),
                escape(r.call_id),
                "" if r.line is None else str(r.line),
                f"{r.tokens:,}",
                f"{r.tokens / report.budget:.1%}" if report.budget else "",
            )
        parts += [Text(), largest]
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
    verdict_style = "green" if report.fits_budget and report.fits_window else "red"
    parts += [
        Text(),
        Text.assemble(budget_bar(report.tokens, report.budget, report.window), f" {report.tokens:,} tokens"),
    ]
    if report.budget is not None or report.window is not None:
        parts.append(Text(report.verdict, style=verdict_style))
    return Group(*parts)


def render_summary(reports: list[Report]) -> Table:
    table = Table(title="All transcripts", title_justify="left", show_edge=False)
    for col in ("file", "format", "messages", "tool results", "tokens", "verdict"):
        table.add_column(col, justify="right" if col in ("messages", "tool results", "tokens") else "left")
    for r in reports:
        table.add_row(
            escape(r.path), r.format, f"{r.messages:,}", f"{r.tool_results:,}", f"{r.tokens:,}", escape(r.verdict)
        )
    return table


def print_reports(console: Console, reports: list[Report]) -> None:
    for i, report in enumerate(reports):
        if i:
            console.rule()
        console.print(render_report(report))
    if len(reports) > 1:
        console.rule()
        console.print(render_summary(reports))
