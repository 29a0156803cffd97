"""``check``'s plan of a Claude Code session that fits its budget, from the fold of its lines
(``ccfold.fold_claude_code``), without loading it.

Where the fold vouches for a session, the loader would give one transcript with no system prompt, no tools and
no compaction whose rounds ``repair`` leaves as they are (the fold refuses a defective round), and check asks
for no notice. ``fit._plan`` then computes, for that transcript and the fold's predicted size:

- ``preamble_tokens``: the estimate of the (empty) system prompt and tools, 0, plus, for an ``inferred`` or
  ``given`` preamble, the size's preamble less that recorded estimate: ``size.preamble_tokens``; else 0;
- ``tokens_before``: with an anchored size, ``size.tokens`` plus what the notice and repairs add (nothing);
  else ``preamble_tokens`` plus the messages' estimates, which are ``size.estimated_tokens``;

and, when that is within the budget (and no carried cut), returns at once with ``outcome="fits"``,
``tokens_after == tokens_before``, no stages, no repairs and the size; ``check`` keeps only its summary
(``cli.fit_cmd.summary_plan``: no per-message or per-result detail). ``fits_plan`` builds that summary from
the fold's report. For anything else (the fold returns None, the session does not fit, options that change
the transcript) it returns None and the caller loads the file and plans it as before: the plan is the same
either way (tests/test_ccplan.py compares the two, and check's output, on the corpus and generated sessions).

A session over the budget is not worth folding: the fold would be thrown away and the file loaded after it.
When the last measured request the file's tail records is over the budget already (an anchored size is at
least that request), ``fits_plan`` returns None without folding. That test only saves time: it never changes
a plan, since the loaded path gives the same plan."""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from .ccfold import fold_claude_code
from .estimate import Estimator
from .fit import FitOptions, Plan
from .formats.base import Input
from .size import SizeMode

TAIL_BYTES = 256 * 1024
"""How much of a file's end is read for its last measured request (``last_measured``)."""


@dataclass(frozen=True, slots=True)
class FoldedFit:
    """A session ``fits_plan`` vouches for: where it is, its name, and check's summary of its plan."""

    path: str
    name: str
    plan: Plan
    messages: int | None = None
    """How many messages the session has (the fold's ``Report.messages``), for a row of it
    (``fitting.rows``); None where the maker of the plan does not say (the row is then made from the load)."""


def fits_plan(
    source: Input,
    estimator: Estimator,
    options: FitOptions,
    *,
    size_mode: SizeMode = "auto",
    preamble: int | None = None,
) -> FoldedFit | None:
    """The summary of ``fit._plan``'s plan of the one transcript ``claude_code.load`` reads from ``source`` (its
    size predicted with ``size_mode`` and ``preamble``), when the fold vouches for the file and the session fits
    ``options.budget``; None otherwise (see the module docstring)."""
    if options.add_notice or options.carried_cut is not None:
        return None  # the notice changes the request; a carried cut is checked against the messages
    if size_mode == "auto":
        measured = last_measured(source)
        if measured is not None and measured > options.budget:
            return None  # over the budget already: the fold would be read for nothing
    report = fold_claude_code(source, estimator, top=0, size_mode=size_mode, preamble=preamble)
    if report is None or report.size is None or report.defects:
        return None  # a defect (the fold reads branches and broken lines too): repair may change the request
    size = report.size
    # fit._plan with est.preamble(...) == 0 (no system prompt, no tools) and no notice or repairs.
    pre = size.preamble_tokens if size.preamble_source in ("inferred", "given") else 0
    before = size.tokens if size.anchored else pre + size.estimated_tokens
    if before > options.budget:
        return None
    plan = Plan(
        options=options,
        outcome="fits",
        tokens_before=before,
        tokens_after=before,
        stages=(),
        message_tokens=(),
        preamble_tokens=pre,
        results=(),
        protected=(),
        too_small=(),
        candidates=(),
        batches=(),
        size=size,
    )
    return FoldedFit(report.path, report.name, plan, report.messages)


def last_measured(source: Input) -> int | None:
    """The input tokens (cache writes and reads included) of the last assistant line with usage in the last
    ``TAIL_BYTES`` of ``source``, or None when that tail has none or cannot be read. A hint, not a size: the
    line may be off the chain, or the file damaged; only ``fits_plan``'s choice to fold rests on it."""
    try:
        if source.data is not None:
            tail = source.data[-TAIL_BYTES:]
            whole = len(source.data) <= TAIL_BYTES
        else:
            with source.open() as f:
                end = f.seek(0, 2)
                start = max(0, end - TAIL_BYTES)
                f.seek(start)
                tail = f.read()
                whole = start == 0
    except OSError:
        return None
    floor = 0 if whole else tail.find(b"\n") + 1  # before it, the end of a line cut in two
    at = len(tail)
    while (at := tail.rfind(b'"usage"', floor, at)) >= 0:
        start = tail.rfind(b"\n", floor, at) + 1 or floor
        end = tail.find(b"\n", at)
        raw = tail[start : end if end >= 0 else len(tail)]
        at = start
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if type(value) is not dict or value.get("type") != "assistant":
            continue
        message = value.get("message")
        usage = message.get("usage") if type(message) is dict else None
        if type(usage) is not dict:
            continue
        total = 0
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            n = usage.get(key)
            if type(n) is int:
                total += n
        return total
    return None
