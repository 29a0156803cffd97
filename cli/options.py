"""The options the commands share, as Typer reads them from their functions' signatures: apart from
``cli/shared.py`` and ``cli/scan.py``, so that those (and the fast path of ``report --json``, ``cli/fast.py``)
start without importing Typer."""

from __future__ import annotations

from typing import Annotated

import typer

from windowfit.fitting.estimate import ESTIMATORS
from windowfit.fitting.formats import NAMES

from .shared import SizeChoice

Files = Annotated[
    list[str],
    typer.Argument(help="Transcript files, directories (searched recursively), or - for stdin.", show_default=False),
]
Budget = Annotated[int | None, typer.Option("--budget", "-b", min=1, help="Your token budget per request.")]
Window = Annotated[int | None, typer.Option("--window", "-w", min=1, help="The model's context window (hard limit).")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout and nothing else.")]
EstimatorName = Annotated[
    str,
    typer.Option(
        "--estimator",
        "-e",
        help=f"Token estimator: {', '.join(ESTIMATORS)}, or custom:ascii=4,cjk=1,other=2 "
        "(chars per token by class, as audit --suggest prints it).",
    ),
]
Overhead = Annotated[
    float,
    typer.Option(
        "--overhead",
        min=0.0,
        help="Multiply the structural overheads (per message, block, tool "
        "definition) by this; 0 leaves the pure text rule.",
    ),
]
SkipInvalid = Annotated[
    bool, typer.Option("--skip-invalid", help="Skip lines that are not JSON (or not messages) and count them.")
]
Strict = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="In a folder, a file that is not a transcript windowfit reads is an error (exit 3), not a warning.",
    ),
]


def _known_format(name: str | None) -> str | None:
    if name is not None and name not in NAMES:
        raise typer.BadParameter(f"unknown format {name!r}; known formats: {', '.join(NAMES)}")
    return name


SizeModeOption = Annotated[
    SizeChoice,
    typer.Option(
        "--size",
        help="How to size the next request: auto anchors on the provider's measured usage where the file "
        "records it (last measured request + its reply + an estimate of what came after); estimate "
        "forces the pure estimate.",
    ),
]
PreambleOption = Annotated[
    int | None,
    typer.Option(
        "--preamble",
        min=0,
        help="Tokens of the system prompt and tool definitions when the file does not record them "
        "(default: inferred from the first measured request, else 0).",
    ),
]
FromFormat = Annotated[
    str | None,
    typer.Option("--from", callback=_known_format, help=f"Input format, instead of detecting it: {', '.join(NAMES)}."),
]


Index = Annotated[
    int | None, typer.Option("--index", min=0, help="Which transcript, in a folder or a file that holds several.")
]
Name = Annotated[
    str | None,
    typer.Option(
        "--name",
        help="Which transcript, by its name (as listed, e.g. 'subagent agent-a5bdbc1'), its file's path, or file name.",
    ),
]


Jobs = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        "-j",
        min=1,
        help="Worker processes for many files (default: one per CPU when the inputs pass 32 MB; 1 turns it off). "
        "The output is the same with any number.",
        show_default=False,
    ),
]
