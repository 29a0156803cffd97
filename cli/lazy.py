"""A command group that imports a command's module only when that command runs: ``windowfit --help`` lists
every command from its one-line summary without loading the transcript model, the estimator's tables or the
formats' registry."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

import typer
from typer.core import TyperCommand, TyperGroup


class LazyCommand(NamedTuple):
    """A command by name: the module and function that define it, and its summary (its docstring's first
    paragraph, which ``tests/test_cli_startup.py`` checks against the function). A named tuple: ``--help``
    imports nothing of the library, not even its value classes."""

    name: str
    module: str
    function: str
    summary: str

    def load(self) -> Callable[..., Any]:
        function: Callable[..., Any] = getattr(importlib.import_module(self.module), self.function)
        return function


class _Summary(TyperCommand):
    """What a group's help shows of a command not loaded yet: its name and summary."""


class LazyGroup(TyperGroup):
    """A ``TyperGroup`` whose ``lazy`` commands are built from their functions on first use."""

    lazy: ClassVar[tuple[LazyCommand, ...]] = ()
    markup: ClassVar[Any] = "rich"

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for command in self.lazy:
            self.commands.setdefault(command.name, _Summary(name=command.name, help=command.summary))

    def real_command(self, name: str) -> typer.core.TyperCommand | None:
        """The command named ``name``, built (and kept) if it was only a summary."""
        current = self.commands.get(name)
        if not isinstance(current, _Summary):
            return current  # type: ignore[return-value]
        spec = next(c for c in self.lazy if c.name == name)
        info = typer.models.CommandInfo(name=name, callback=spec.load())
        built = typer.main.get_command_from_info(info, pretty_exceptions_short=True, rich_markup_mode=self.markup)
        self.commands[name] = built
        return built  # type: ignore[return-value]

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any, list[str]]:
        if args and args[0] in self.commands:
            self.real_command(args[0])
        return super().resolve_command(ctx, args)
