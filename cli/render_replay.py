"""The replay's policy table and a terminal chart of sent tokens per step."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.containers import Lines
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from windowfit.fitting.replay import Run
from windowfit.fitting.replay.run import BREAK, REJECTED, Steps

from .tables import WholeTable

CHART_HEIGHT = 12
CHART_WIDTH = 64


class Items(Text):
    """Comma-separated items ("over-budget 70%") that wrap only between items,
    never inside one: a share alone on a line says nothing."""

    def __init__(self, items: Sequence[str], *, lead: str = "") -> None:
        """``lead``: words before the items, wrapping between words."""
        self.items = tuple(lead.split()) + tuple(f"{item}," for item in items[:-1]) + tuple(items[-1:])
        super().__init__(" ".join(self.items))

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(max(map(cell_len, self.items), default=0), cell_len(self.plain))

    def wrap(self, console: Console, width: int, **kwargs: object) -> Lines:
        packed: list[str] = []
        for item in self.items:
            if packed and cell_len(packed[-1]) + 1 + cell_len(item) <= width:
                packed[-1] += " " + item
            else:
                packed.append(item)
        lines = Lines()
        for line in packed or [""]:  # an item wider than the column still folds rather than being cut
            lines.extend(Text(line, style=self.style).wrap(console, width, **kwargs))  # type: ignore[arg-type]
        return lines


def _sent(run: Run) -> Sequence[int]:
    """Each step's sent tokens (a ``Steps``' own column: no ``Step`` is built)."""
    return run.steps.sent if isinstance(run.steps, Steps) else [s.sent_tokens for s in run.steps]


def over_budget_caption(runs: Sequence[Run], *, budget: int) -> Items | None:
    """Without ``--window`` nothing is rejected: say which policies still sent requests over the
    budget, which the outcomes column says too but narrow terminals drop."""
    over = [(run.policy, sum(tokens > budget for tokens in _sent(run))) for run in runs]
    listed = [f"{name} {n:,}" for name, n in over if n]
    lead = "No --window, so nothing is rejected; requests sent over the budget:"
    return Items(listed, lead=lead) if listed else None


def render_table(runs: Sequence[Run], *, budget: int, window: int | None) -> Table:
    table = WholeTable(
        title=f"Policies side by side (budget {budget:,}" + (f", window {window:,})" if window else ")"),
        title_justify="left",
        show_edge=False,
        # Narrow terminals drop these first (they stay in --json), so the
        # figures that compare policies (rejections, breaks, cache hit, dollars) stay a table.
        decorative=("outcomes", "requests"),
        caption=over_budget_caption(runs, budget=budget) if window is None else None,
        caption_justify="left",
    )
    for col in (
        "policy",
        "requests",
        "rejected",
        "sent tokens",
        "cacheable",
        "not cacheable",
        "prefix breaks",
        "cache hit",
        "cost $",
        "outcomes",
    ):
        # The policy column never wraps: its names are what --policy takes, and a cut one is no help.
        table.add_column(col, justify="left" if col in ("policy", "outcomes") else "right", no_wrap=col == "policy")
    for run in runs:
        shares = Items([f"{name} {share:.0%}" for name, share in run.outcome_shares()])
        table.add_row(
            run.policy,
            f"{run.requests:,}",
            Text(f"{run.rejections:,}", style="bold red" if run.rejections else "green"),
            f"{run.sent_tokens:,}",
            f"{run.cached_tokens:,}",
            f"{run.uncached_tokens:,}",
            f"{run.prefix_breaks:,}",
            f"{run.cache_hit_rate:.0%}",
            "-" if run.cost_usd is None else f"{run.cost_usd:,.2f}",
            shares,
        )
    return table


def render_retrievable(runs: Sequence[Run]) -> RenderableType:
    """Under the table: per policy, the cleared tokens a store would keep retrievable by handle."""
    listed = Items(
        [f"{run.policy} {run.retrievable_tokens:,}" for run in runs],
        lead="Cleared tokens retrievable by handle with a store (fit --store):",
    )
    listed.style = "dim"
    return Group(listed)  # printed alone, a Text would be joined into a plain one and wrap inside items


def render_chart(run: Run, *, budget: int, window: int | None) -> RenderableType:
    """Sent tokens per step (columns are groups of steps, each showing its
    largest request), the budget (``B``) and window (``W``) lines, and marks
    under the steps where the prefix broke (``▲``, whatever the policy changed:
    a clearing batch, a cut, a mask, a trim) or a request was rejected (``✗``)."""
    steps = run.steps
    if not steps:
        return Text("no requests to replay", style="dim")
    if isinstance(steps, Steps):  # read the columns: building every Step of a long replay costs its memory again
        sent: Sequence[int] = steps.sent
        flags: Sequence[int] = steps.flags
    else:
        sent = [s.sent_tokens for s in steps]
        flags = [(BREAK if s.prefix_break else 0) | (REJECTED if s.rejected else 0) for s in steps]
    width = min(CHART_WIDTH, len(steps))
    groups = [range(i * len(steps) // width, (i + 1) * len(steps) // width) for i in range(width)]
    peaks = [max(sent[j] for j in group) for group in groups]
    rejected = [any(flags[j] & REJECTED for j in group) for group in groups]
    broke = [any(flags[j] & BREAK for j in group) for group in groups]
    top = max([max(sent), budget, window or 0])
    rows: list[Text] = []

    def level_of(tokens: int) -> int:
        return round(CHART_HEIGHT * tokens / top)

    budget_row, window_row = level_of(budget), level_of(window) if window else None
    for level in range(CHART_HEIGHT, 0, -1):
        line = Text()
        label = "W " if level == window_row else "B " if level == budget_row else "  "
        line.append(label, style="bold")
        for g in range(width):
            peak = peaks[g]
            filled = level_of(peak) >= level
            if filled:
                line.append("█", style="red" if rejected[g] else "yellow" if peak > budget else "green")
            elif level in (budget_row, window_row):
                line.append("─", style="dim")
            else:
                line.append(" ")
        rows.append(line)
    marks = Text("  ")
    for g in range(width):
        if rejected[g]:
            marks.append("✗", style="bold red")
        elif broke[g]:
            marks.append("▲", style="cyan")
        else:
            marks.append(" ")
    rows.append(marks)
    caption = Text(
        f"{run.policy}: sent tokens per request, {len(steps):,} requests "
        f"({len(steps) / width:.1f} per column); peak {max(sent):,}; "
        "▲ prefix break (something sent before changed), ✗ rejected",
        style="dim",
    )
    return Group(*rows, caption)
