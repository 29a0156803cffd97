"""A prompt cache per provider, and what each request costs under it (issue 14).

Pure: a run's steps (the tokens each request sent and the prefix it shared
with the one before), when each was sent, and a price row in; each step's
cache reads, cache writes and dollars out.

- **Anthropic** caches at explicit breakpoints. The harnesses replayed here
  (Claude Code; automatic caching in the API) put one at the end of each
  request, so the cache holds the previous request's whole prefix: a request
  reads the prefix it shares with the previous one and writes the rest, at the
  write premium of the lifetime (``5m`` or ``1h``: the row's own prices, not a
  multiplier). https://platform.claude.com/docs/en/build-with-claude/prompt-caching
  A prefix shorter than the model's minimum cacheable length is not cached
  (``ANTHROPIC_MINIMUM``): such a request reads and writes nothing.
- **OpenAI** caches the shared prefix automatically, for prompts of 1,024
  tokens or more, in increments of 128 tokens; no write premium.
  https://developers.openai.com/docs/guides/prompt-caching
- **Google** (Gemini 2.5) caches implicitly from 2,048 tokens; no write premium.
  https://ai.google.dev/gemini-api/docs/caching. A row with a long-context tier
  (Gemini 2.5 Pro, 3.1 Pro: prompts over 200k tokens) prices each request at the
  tier of its own size (``Price.at``).

A request sent more than the lifetime after the one before reads nothing.
The cost is the input side only: the output is the same under every policy."""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from dataclasses import replace

from .._frozen import frozen
from ..pricing import Price, Provider, Ttl
from .run import MISSING, Run, Step, Steps, narrowed

TTL_SECONDS: dict[str, float] = {"5m": 300.0, "1h": 3600.0}
MINIMUM: dict[str, int] = {"anthropic": 0, "openai": 1024, "google": 2048}
"""The smallest prefix a provider caches (Anthropic's depends on the model: ``ANTHROPIC_MINIMUM``)."""
ANTHROPIC_MINIMUM: dict[str, int] = {
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
    "claude-haiku-4-5": 4096,
    "claude-sonnet-4-6": 1024,
    "claude-sonnet-4-5": 1024,
    "claude-opus-4-1": 1024,
    "claude-opus-4": 1024,
    "claude-sonnet-4": 1024,
    "claude-3-7-sonnet": 1024,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
}
"""Anthropic's minimum cacheable prompt length, by price row: a prefix shorter than it is not cached, whatever
its breakpoint. The list of Anthropic's prompt-caching page, as quoted in anthropics/anthropic-sdk-python#1194
(https://github.com/anthropics/anthropic-sdk-python/issues/1194; the page itself:
https://platform.claude.com/docs/en/build-with-claude/prompt-caching). Rows it does not name (Opus 4.7, 4.8,
5, Sonnet 5) have no minimum here: sources disagree on theirs, and none is Anthropic's own."""
INCREMENT: dict[str, int] = {"anthropic": 1, "openai": 128, "google": 1}


@frozen
class CacheModel:
    """How a provider's prompt cache serves a run, and at what prices (``price`` None: unpriced)."""

    provider: Provider
    ttl: Ttl = "5m"
    price: Price | None = None

    def priced(
        self, run: Run, times: Mapping[int, float] | None = None, writes_1h: Mapping[int, float] | None = None
    ) -> Run:
        """``run`` with each step's cache reads, writes and cost filled in. ``times`` maps a step's
        ``line`` to when it was sent (seconds); without one, a step follows the previous within the lifetime.
        ``writes_1h`` maps a step's ``line`` to the share of the writes its reply recorded with the 1-hour
        lifetime (``times.LineFacts.writes_1h``): the step writes with the lifetimes the log records (a step
        whose line records none, those of the step before; the first, ``ttl``)."""
        return replace(run, steps=self.steps(run.steps, times or {}, writes_1h or {}), priced=self.price is not None)

    @property
    def minimum(self) -> int:
        """The smallest prefix this cache keeps, in tokens."""
        if self.provider == "anthropic":
            return ANTHROPIC_MINIMUM.get(self.price.model, 0) if self.price is not None else 0
        return MINIMUM[self.provider]

    def steps(
        self, steps: Sequence[Step], times: Mapping[int, float], writes_1h: Mapping[int, float] | None = None
    ) -> Sequence[Step]:
        """``steps`` priced: columns in, columns out (a ``Steps`` shares every other column); any other
        sequence gives a tuple of new ``Step``."""
        if isinstance(steps, Steps):
            lines, sent, shared = steps.requests.line, steps.sent, steps.shared
        else:
            lines = array("q", (MISSING if s.line is None else s.line for s in steps))
            sent = array("q", (s.sent_tokens for s in steps))
            shared = array("q", (s.shared_prefix_tokens for s in steps))
        reads, writes = array("q"), array("q")
        costs: array[float] | None = array("d") if self.price is not None else None
        minimum, increment = self.minimum, INCREMENT[self.provider]
        anthropic = self.provider == "anthropic"
        previous_at: float | None = None
        share = 1.0 if self.ttl == "1h" else 0.0  # of the writes, made with the 1-hour lifetime
        shares = writes_1h or {}
        for i in range(len(sent)):
            line, sent_tokens = lines[i], sent[i]
            at = times.get(line) if line != MISSING else None
            # The prefix read was written by the request before, with its lifetime (the longer one where
            # most of its writes had it).
            lifetime = TTL_SECONDS["1h" if share >= 0.5 else "5m"]
            expired = i == 0 or (at is not None and previous_at is not None and at - previous_at > lifetime)
            share = shares.get(line, share) if line != MISSING else share
            prefix = 0 if expired else shared[i]
            if anthropic:
                # The breakpoint ends the request: below the minimum nothing is kept, so nothing is read
                # back from it either (the previous request's prefix is read only if it was kept).
                cached = sent_tokens >= minimum
                read = prefix if cached and prefix >= minimum else 0
                write = sent_tokens - read if cached else 0
            else:
                read = prefix // increment * increment if prefix >= minimum else 0
                write = 0
            reads.append(read)
            writes.append(write)
            if costs is not None and self.price is not None:
                fresh = sent_tokens - read - write
                p = self.price.at(sent_tokens)
                per_write = share * p.write("1h") + (1 - share) * p.write("5m")
                costs.append((read * p.cache_read + write * per_write + fresh * p.input) / 1_000_000)
            if at is not None:
                previous_at = at
        if isinstance(steps, Steps):
            return steps.priced(narrowed(reads), narrowed(writes), costs)
        return tuple(
            replace(s, cache_read_tokens=reads[i], cache_write_tokens=writes[i], cost_usd=costs[i] if costs else None)
            for i, s in enumerate(steps)
        )


@frozen
class CacheCheck:
    """The cache model against what the provider recorded, over the steps whose usage the log records."""

    steps: int
    predicted_read: int
    recorded_read: int
    predicted_write: int
    recorded_write: int
    misses: int = 0
    """Recorded misses: requests (after the first) whose recorded read fell short of the prefix the request
    before had read and written, so that part was written again."""
    miss_recorded_write: int = 0
    """What those requests recorded writing."""
    miss_predicted_write: int = 0
    """What the model predicts they write (its own expiries are among them)."""
    turn_misses: int = 0
    """How many of the misses are the first request of a user turn that follows a turn with tool calls."""
    turn_miss_recorded_write: int = 0
    turn_starts: int = 0
    """How many such turn starts (a user turn after a turn with tool calls) the check covers, missed or not."""

    @property
    def read_error(self) -> float | None:
        """Predicted reads relative to recorded ones, minus one (None when nothing was recorded read)."""
        return self.predicted_read / self.recorded_read - 1 if self.recorded_read else None

    @property
    def tail_write_error(self) -> float | None:
        """Predicted writes relative to recorded ones on the requests that are not recorded misses, minus one:
        what the model writes where the provider kept the previous prefix (None when nothing was written)."""
        recorded = self.recorded_write - self.miss_recorded_write
        predicted = self.predicted_write - self.miss_predicted_write
        return predicted / recorded - 1 if recorded else None


def check(run: Run) -> CacheCheck | None:
    """How the priced ``run`` (replaying what the harness sent: ``send-everything``) compares with the
    cache reads and writes the log recorded; None when the log records none.

    The replay counts in estimated tokens and the provider in its own: each request's predicted reads and
    writes are taken at the provider's count of that request (its share of the estimate times the
    measured size), so what is compared is the cache model (which part of each request is read, which
    written, when the lifetime ran out), not the estimator's error."""
    steps = tuple(run.steps)  # built once: a ``Steps`` builds a new ``Step`` on every read, and ids are compared
    measured = [s for s in steps if s.recorded_cache_read is not None and s.measured_tokens and s.raw_tokens]
    if not measured:
        return None

    def at_provider(tokens: int, s: Step) -> int:
        return round(tokens * (s.measured_tokens or 0) / s.raw_tokens)

    measured_ids = {id(s) for s in measured}
    misses = miss_recorded = miss_predicted = turn_misses = turn_recorded = turn_starts = 0
    previous: Step | None = None
    requests_in_turn = 0
    for s in steps:
        after_tools = s.turn_start and requests_in_turn > 1
        requests_in_turn = 1 if s.turn_start else requests_in_turn + 1
        if id(s) not in measured_ids:
            continue
        turn_starts += after_tools
        if previous is not None and (s.recorded_cache_read or 0) < (previous.recorded_cache_read or 0) + (
            previous.recorded_cache_write or 0
        ):
            misses += 1
            miss_recorded += s.recorded_cache_write or 0
            miss_predicted += at_provider(s.cache_write_tokens, s)
            if after_tools:
                turn_misses += 1
                turn_recorded += s.recorded_cache_write or 0
        previous = s
    return CacheCheck(
        len(measured),
        sum(at_provider(s.cache_read_tokens, s) for s in measured),
        sum(s.recorded_cache_read or 0 for s in measured),
        sum(at_provider(s.cache_write_tokens, s) for s in measured),
        sum(s.recorded_cache_write or 0 for s in measured),
        misses,
        miss_recorded,
        miss_predicted,
        turn_misses,
        turn_recorded,
        turn_starts,
    )
