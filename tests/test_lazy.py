"""``fitting/_lazy.py``: the packages ``windowfit.fitting`` and ``windowfit.fitting.store`` load each public
name on first use, and give the same values as when they imported every name themselves."""

from __future__ import annotations

import importlib
import subprocess
import sys
from types import ModuleType

import pytest

from windowfit import fitting
from windowfit.fitting import store

PACKAGES = (fitting, store)


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.__name__)
def test_every_public_name_is_lazy_and_is_its_module_s_own(package: ModuleType) -> None:
    lazy = vars(package)["_LAZY"]
    assert set(lazy) <= set(package.__all__)
    assert all(name in lazy or name in vars(package) for name in package.__all__)  # the rest: its own
    for name, module in lazy.items():
        assert getattr(package, name) is getattr(importlib.import_module(f"{package.__name__}.{module}"), name)
        assert name in dir(package)


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.__name__)
def test_star_import_gives_every_public_name(package: ModuleType) -> None:
    namespace: dict[str, object] = {}
    exec(f"from {package.__name__} import *", namespace)
    assert set(package.__all__) <= set(namespace)


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        store.no_such_name  # type: ignore[attr-defined]  # noqa: B018


COLLISIONS = """
import types
import windowfit.fitting.fit, windowfit.fitting.replay.run, windowfit.fitting.store.offload
from windowfit import fitting
from windowfit.fitting import store
from windowfit.fitting import fit, replay
names = (fitting.fit, fitting.replay, store.offload, fit, replay)
print([isinstance(v, types.ModuleType) for v in names], fit.__module__, replay.__module__, store.offload.__module__)
"""


def test_a_name_shared_with_a_submodule_stays_the_function_after_the_submodule_is_imported() -> None:
    """``fit`` is a function and the module ``fit.py``, ``replay`` and ``offload`` too: importing the submodule
    first (as a command does) must not make the package's name the module, which the eager package never did."""
    result = subprocess.run([sys.executable, "-c", COLLISIONS], capture_output=True, text=True, check=True)
    assert result.stdout.split() == [
        "[False,", "False,", "False,", "False,", "False]",
        "windowfit.fitting.fit", "windowfit.fitting.replay.run", "windowfit.fitting.store.offload",
    ]  # fmt: skip


def test_an_ordinary_submodule_is_still_bound_on_its_package() -> None:
    import windowfit.fitting.estimate
    import windowfit.fitting.store.sqlite

    assert fitting.estimate is windowfit.fitting.estimate
    assert store.sqlite is windowfit.fitting.store.sqlite
