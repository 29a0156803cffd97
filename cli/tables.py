"""Tables that never cut a number.

Rich shrinks every column of a table that is wider than the terminal, and cuts
what no longer fits with an ellipsis: at 80 columns (every piped run) a token
count became ``2,022,…``. A ``WholeTable`` keeps its figures whole whatever the
width: right-justified columns (figures) and ``no_wrap`` columns (verdicts)
never shrink; text columns fold. When even that is too wide it drops the
columns named decorative, then splits the figures over two or three tables that
each repeat the first column, and only then lists each row as ``header: value``
lines.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.table import Column, Table
from rich.text import Text

TEXT_MIN_WIDTH = 8
"""The narrowest a folding text column gets before the table changes shape instead."""
MAX_PARTS = 3
"""The most tables a split makes; past that, rows are listed as ``header: value`` lines."""


def _plain(cell: object) -> str:
    if isinstance(cell, Text):
        return cell.plain
    return cell if isinstance(cell, str) else ""


def _width(cell: object) -> int:
    text = _plain(cell)
    return max((Text.from_markup(line).cell_len if "[" in line else len(line) for line in text.split("\n")), default=0)


def _least_figure_width(column: Column) -> int:
    """A figure column's narrowest: its widest cell or header line."""
    return max([_width(column.header), *map(_width, column._cells)])


def _whole(column: Column) -> bool:
    """A column of figures or verdicts: never shrunk, never cut."""
    return column.justify == "right" or column.no_wrap


class WholeTable(Table):
    """A ``rich.table.Table`` whose figures are never cut; ``decorative`` names columns to drop first."""

    def __init__(self, *headers: str | Column, decorative: Sequence[str] = (), **kwargs: object) -> None:
        super().__init__(*headers, **kwargs)  # type: ignore[arg-type]
        self.decorative = tuple(decorative)

    def _shaped(self, dropped: Iterable[str] = (), *, compact: bool = False) -> Table:
        """A plain ``Table`` copy: figures kept whole, text folding, ``dropped`` columns left out."""
        table = Table.__new__(Table)
        table.__dict__.update(self.__dict__)
        gone = set(dropped)
        columns: list[Column] = []
        for column in self.columns:
            if str(column.header) in gone:
                continue
            column = copy.copy(column)
            column._index = len(columns)
            if _whole(column):
                if compact and isinstance(column.header, str):  # a figure's header, one word a line
                    column.header = "\n".join(column.header.split())
                column.no_wrap = True
                column.overflow = "fold"  # never reached at min_width; "ignore" would lose the justification
                column.min_width = _least_figure_width(column)
            else:
                column.overflow = "fold"
            columns.append(column)
        table.columns = columns
        if compact:  # columns apart by one space, a rule only under the header
            table.box, table.show_edge, table.padding = box.SIMPLE_HEAD, False, (0, 0)
        return table

    def _least_width(self, table: Table, *, fold: bool = True) -> int:
        """The narrowest ``table`` renders without cutting a figure (nor folding a text, unless ``fold``)."""
        total = table._extra_width
        for i, column in enumerate(table.columns):
            if _whole(column):
                least = _least_figure_width(column)
            else:
                widest = max([_width(column.header), *map(_width, column._cells)])
                least = max(column.min_width or 0, min(widest, TEXT_MIN_WIDTH) if fold else widest)
            total += least + table._get_padding_width(i)
        return total

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        dropped: list[str] = []
        for name in (None, *self.decorative):
            if name is not None:
                dropped.append(name)
            for compact in (False, True):
                table = self._shaped(dropped, compact=compact)
                if self._least_width(table) <= width:
                    yield table
                    return
        parts = self._split(width)
        if parts is None:
            yield self._stacked()
            return
        for number, part in enumerate(parts):
            if number:
                yield Text("")
            yield part

    def _split(self, width: int) -> list[Table] | None:
        """The compact table without its decorative columns, its columns spread over at most ``MAX_PARTS``
        tables that each repeat the first column (the row's name), every one within ``width`` with no text
        folded; None if that cannot be done."""
        base = self._shaped(self.decorative, compact=True)
        if len(base.columns) < 3:
            return None
        key, *rest = base.columns
        groups: list[list[Column]] = [[]]
        for column in rest:
            if self._least_width(_part(base, [key, *groups[-1], column], titled=len(groups) == 1), fold=False) <= width:
                groups[-1].append(column)
            elif groups[-1] and self._least_width(_part(base, [key, column], titled=False), fold=False) <= width:
                groups.append([column])
            else:
                return None
        if len(groups) > MAX_PARTS:
            return None
        return [_part(base, [key, *group], titled=number == 0) for number, group in enumerate(groups)]

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self._shaped())

    def _stacked(self) -> Group:
        """Each row as ``header: value`` lines: always fits, never cuts."""
        parts: list[Text | str] = []
        if self.title:
            parts.append(Text(_plain(self.title) or str(self.title), style="bold"))
        headers = [_plain(c.header) or str(c.header) for c in self.columns]
        for row in range(self.row_count):
            cells = [c._cells[row] if row < len(c._cells) else "" for c in self.columns]
            lines = [
                Text.assemble((f"{h}: ", "dim"), cell if isinstance(cell, Text) else Text.from_markup(str(cell)))
                for h, cell in zip(headers, cells, strict=True)
                if _plain(cell).strip()
            ]
            if not lines:
                continue
            first, *rest = lines
            parts.append(first)
            parts.extend(Text("  ") + line for line in rest)
        return Group(*parts)


def _part(table: Table, columns: list[Column], *, titled: bool) -> Table:
    """A copy of ``table`` with only ``columns`` (re-indexed), and its title only if ``titled``."""
    part = Table.__new__(Table)
    part.__dict__.update(table.__dict__)
    part.columns = []
    for index, column in enumerate(columns):
        column = copy.copy(column)
        column._index = index
        part.columns.append(column)
    if not titled:
        part.title = None
    return part
