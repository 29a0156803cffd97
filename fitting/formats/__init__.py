"""Transcript file formats, one module each (named as ``--from`` names it), and
the registry that lists them. Adding a format is one module that defines
``FORMAT`` and one line in ``registry.SPECIFIC_NAMES`` (see docs/extending.md).
Provider request shapes are in ``windowfit.fitting.wire``.

Names load on first use (``.._lazy``), and the registry imports a format's module only when it is tried or
named: ``from windowfit.fitting.formats import detect`` imports no format."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_package

if TYPE_CHECKING:
    from .base import Format, Input, Loader, SkippedFile, Sniffer, Writer
    from .registry import (
        FALLBACK,
        FORMATS,
        NAMES,
        SPECIFIC,
        detect,
        discover,
        format_of,
        get_format,
        load,
        load_path,
    )

lazy_package(
    __name__,
    {
        "Format": "base",
        "Input": "base",
        "Loader": "base",
        "SkippedFile": "base",
        "Sniffer": "base",
        "Writer": "base",
        "FALLBACK": "registry",
        "FORMATS": "registry",
        "NAMES": "registry",
        "SPECIFIC": "registry",
        "detect": "registry",
        "discover": "registry",
        "format_of": "registry",
        "get_format": "registry",
        "load": "registry",
        "load_path": "registry",
    },
)

__all__ = [
    "FALLBACK",
    "FORMATS",
    "NAMES",
    "SPECIFIC",
    "Format",
    "Input",
    "Loader",
    "SkippedFile",
    "Sniffer",
    "Writer",
    "detect",
    "discover",
    "format_of",
    "get_format",
    "load",
    "load_path",
]
