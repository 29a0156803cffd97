"""windowfit's exit codes (listed in the README)."""

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    """Done; for ``check``, every transcript passed."""
    FAILED = 1
    """``fit``: the request is too long even after every stage; ``check``: a
    transcript had an outcome named by ``--fail-on`` (``too-long`` by default)."""
    USAGE = 2
    """Bad command line (Typer's own usage errors exit 2 too)."""
    BAD_INPUT = 3
    """An input could not be read as a transcript (invalid JSON or UTF-8,
    unknown shape, empty file, a directory with no transcripts); a store
    that is not ours, an unknown handle, a page out of range."""
    OUTPUT = 4
    """The output could not be written, or would overwrite the input; a
    store that is locked, read-only or unreachable."""
