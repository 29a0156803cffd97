"""Transcript file formats, one module each (named as ``--from`` names it), and
the registry that lists them. Adding a format is one module that defines
``FORMAT`` and one line in ``registry.SPECIFIC`` (see docs/extending.md).
Provider request shapes are in ``windowfit.fitting.wire``."""

from __future__ import annotations

from .base import Format, Input, Loader, SkippedFile, Sniffer, Writer
from .registry import FALLBACK, FORMATS, SPECIFIC, detect, discover, format_of, get_format, load, load_path

__all__ = [
    "FALLBACK",
    "FORMATS",
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
