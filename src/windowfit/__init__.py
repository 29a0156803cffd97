"""windowfit: keep long LLM agent conversations inside the context window.

The library lives in ``windowfit.fitting`` (pure: values in, values out); the
command line in ``windowfit.cli``.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("windowfit")
except PackageNotFoundError:  # pragma: no cover - running from a tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
