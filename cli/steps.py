"""The step rules' options (SPEC section 3, "steps that rarely move"), shared
by ``fit``, ``check`` and ``replay``."""

from __future__ import annotations

from typing import Annotated

import typer

from .check_run import cut_step_of  # the workers' side, without Typer

__all__ = ["BatchTokens", "CutStep", "cut_step_of"]

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
