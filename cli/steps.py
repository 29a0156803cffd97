"""The step rules' options (SPEC section 3, "steps that rarely move"), shared
by ``fit``, ``check`` and ``replay``."""

from __future__ import annotations

from typing import Annotated

import typer

from windowfit.fitting.errors import OptionError
from windowfit.fitting.fit import auto_cut_step

BatchTokens = Annotated[
    int | None,
    typer.Option(
        "--batch-tokens",
        min=1,
        help="Also close a clearing batch once its results reach N tokens (whichever of this and "
        "--batch-size comes first; --batch-size 0: by size only).",
    ),
]
CutStep = Annotated[
    str | None,
    typer.Option(
        "--cut-step",
        help="Drop turns and rounds only at fixed steps of N tokens, so the cut rarely moves as the "
        "session grows; auto: a quarter of the budget.",
    ),
]


def cut_step_of(value: str | None, budget: int) -> int | None:
    """``--cut-step``'s tokens: a number, ``auto`` (a quarter of the budget), or None (off)."""
    if value is None:
        return None
    if value.strip().lower() == "auto":
        return auto_cut_step(budget)
    try:
        step = int(value.replace(",", "").replace("_", ""))
    except ValueError:
        raise OptionError(f"--cut-step takes a number of tokens or auto, not {value!r}") from None
    if step < 1:
        raise OptionError(f"--cut-step must be at least 1 token, not {step}")
    return step
