"""One home for the fit settings: ``FitOptions``' field defaults are the
defaults of ``plan_fit``, ``fit``, ``Fitter``, ``fit_request``, replay's
windowfit policy and every CLI option that sets one of them."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

import pytest
import typer.main

from windowfit.cli.app import app
from windowfit.cli.lazy import LazyGroup
from windowfit.fitting.fit import FitOptions, fit, plan_fit
from windowfit.fitting.replay import KeepLastPolicy, WindowfitPolicy
from windowfit.fitting.request import Fitter, fit_request

TUNABLES = {f.name: f.default for f in dataclasses.fields(FitOptions) if f.name != "budget"}


def test_fit_options_hold_the_spec_defaults() -> None:
    # SPEC §3: batches of 4, a quarter of the budget protected, clearable at 2x the stub; the notice is opt-in,
    # and so are the step rules (batches by size, cut steps).
    # No store unless one is given (issue 13): page_tokens is None, and the stubs say to run the tool again.
    # No carried cut (issue 14 item 5): a fit is fresh unless an earlier request's cut is given.
    assert TUNABLES == {
        "batch_size": 4,
        "protected_fraction": 0.25,
        "min_clear_ratio": 2.0,
        "add_notice": False,
        "page_tokens": None,
        "batch_tokens": None,
        "cut_step": None,
        "carried_cut": None,
    }


@pytest.mark.parametrize("function", [plan_fit, fit, fit_request, Fitter, WindowfitPolicy])
def test_library_keyword_defaults_are_the_fit_options_defaults(function: Callable[..., Any]) -> None:
    parameters = inspect.signature(function).parameters
    defaults = {name: parameters[name].default for name in TUNABLES if name in parameters}
    assert {"batch_size", "protected_fraction", "min_clear_ratio"} <= set(defaults)
    assert defaults == {name: TUNABLES[name] for name in defaults}


def cli_defaults(command: str) -> dict[str, object]:
    group = typer.main.get_command(app)
    assert isinstance(group, LazyGroup)
    built = group.real_command(command)  # the group holds only a summary until a command runs
    assert built is not None
    params = built.params
    return {p.name: p.default for p in params}


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (
            "fit",
            {"batch_size", "protected_fraction", "min_clear_ratio", "add_notice", "batch_tokens", "cut_step"}
            | {"carried_cut"},
        ),
        ("check", {"batch_size", "protected_fraction", "min_clear_ratio", "batch_tokens", "cut_step"}),
        ("replay", {"batch_size", "batch_tokens", "cut_step"}),
    ],
)
def test_cli_option_defaults_are_the_fit_options_defaults(command: str, expected: set[str]) -> None:
    params = cli_defaults(command)
    defaults = {name: params[name] for name in TUNABLES if name in params}
    assert set(defaults) == expected
    assert defaults == {name: TUNABLES[name] for name in defaults}


def test_replay_keep_default_is_the_keep_last_policy_default() -> None:
    assert cli_defaults("replay")["keep"] == inspect.signature(KeepLastPolicy).parameters["keep"].default


def test_fitter_built_from_options_gives_them_back() -> None:
    options = FitOptions(5000, batch_size=2, protected_fraction=0.5, min_clear_ratio=3.0, add_notice=True)
    fitter = Fitter.of(options)
    assert fitter.options == options
    assert (fitter.budget, fitter.batch_size, fitter.add_notice) == (5000, 2, True)
    assert Fitter(budget=7).options == FitOptions(7)
    carried = FitOptions(5000, cut_step=1000, carried_cut=9)
    assert Fitter.of(carried).options == carried and Fitter.of(carried).carried_cut == 9
