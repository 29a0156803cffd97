"""Packages whose public names are imported on first use: ``import windowfit.fitting`` (which every
``windowfit.fitting.X`` import runs first) then loads none of the modules a command does not need.

A package calls ``lazy_package(__name__, NAMES)`` with each name's submodule, and imports the same names
under ``TYPE_CHECKING`` for the type checker. Reading a name imports its module and keeps the value, so
``from windowfit.fitting import fit`` and ``windowfit.fitting.fit`` work as when the package imported every
name itself."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any


class LazyPackage(ModuleType):
    """A package module that reads a missing public name from its submodule (``_LAZY`` maps each name to it)."""

    def __getattr__(self, name: str) -> Any:
        module = self.__dict__["_LAZY"].get(name)
        if module is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = getattr(submodule(self.__name__, module), name)
        self.__dict__[name] = value
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        # Importing a submodule binds it on its package; where a public name is also a submodule's (the
        # function ``fit`` of ``fit.py``, ``replay`` of ``replay/``), the name stays the function, as it did
        # when the package imported it after the submodule.
        if isinstance(value, ModuleType) and name in self.__dict__["_LAZY"]:
            return
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted({*self.__dict__, *self.__dict__["_LAZY"]})


def submodule(package: str, name: str) -> ModuleType:
    """``package.name``, imported by ``__import__`` (as an import statement does) rather than
    ``importlib.import_module``, which ``python -X importtime`` does not see."""
    full = f"{package}.{name}"
    __import__(full)
    return sys.modules[full]


def lazy_package(name: str, names: Mapping[str, str]) -> None:
    """Make the package ``name`` load each of ``names`` (a public name: the submodule, relative to the
    package, that defines it) on first use."""
    package = sys.modules[name]
    package.__dict__["_LAZY"] = dict(names)
    package.__class__ = LazyPackage
