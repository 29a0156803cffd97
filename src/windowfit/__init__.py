"""windowfit: keep long LLM agent conversations inside the context window.

The library lives in ``windowfit.fitting`` (pure: values in, values out); the
command line in ``windowfit.cli``.
"""

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    """``__version__``, read from the installed metadata on first use (``importlib.metadata`` costs a tenth of
    a second of every start-up otherwise)."""
    if name != "__version__":
        raise AttributeError(f"module 'windowfit' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("windowfit")
    except PackageNotFoundError:  # pragma: no cover - running from a tree that was never installed
        found = "0+unknown"
    globals()["__version__"] = found
    return found
