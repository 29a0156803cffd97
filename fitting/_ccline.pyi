"""Types of the compiled scanner of Claude Code lines (fitting/_ccline.c)."""

from collections.abc import Iterable

_Record = tuple[
    str,
    str | None,
    str | None,
    bool,
    str | None,
    str | None,
    tuple[int, int, int, int] | None,
    int,
    int,
    int,
    int,
    tuple[()] | list[tuple[str, int, str, str]] | None,
    bool,
    bool,
    int,
    tuple[()] | list[tuple[int, int, int, int, int]] | None,
]

class Table:
    def __init__(self, n: int, fallback: int, ranges: Iterable[tuple[int, int, int]], groups: bytes) -> None: ...
    def groups(self, text: str, /) -> tuple[int, int, int]: ...

class Scanner:
    def __init__(
        self,
        table: Table,
        wa: int,
        wc: int,
        wo: int,
        denominator: int,
        block_overhead: int,
        fa: int = 0,
        fc: int = 0,
        fo: int = 0,
        fden: int = 1,
    ) -> None: ...
    def scan(self, line: bytes, /) -> _Record | None: ...
    def scan_lines(self, data: bytes | memoryview, final: bool, /) -> tuple[list[bytes | _Record], int]: ...
    def kinds(self) -> list[tuple[str, int]]: ...
    def kinds_of(self, lines: Iterable[int], /) -> list[tuple[str, int]]: ...
