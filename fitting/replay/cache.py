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
- **OpenAI** caches the shared prefix automatically, for prompts of 1,024
  tokens or more, in increments of 128 tokens; no write premium.
  https://developers.openai.com/docs/guides/prompt-caching
- **Google** (Gemini 2.5) caches implicitly from 2,048 tokens; no write premium.
  https://ai.google.dev/gemini-api/docs/caching

A request sent more than the lifetime after the one before reads nothing.
The cost is the input side only: the output is the same under every policy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ..pricing import Price, Provider, Ttl
from .run import Run, Step

TTL_SECONDS: dict[str, float] = {"5m": 300.0, "1h": 3600.0}
MINIMUM: dict[str, int] = {"anthropic": 0, "openai": 1024, "google": 2048}
"""The smallest prefix a provider caches (Anthropic's minimum is not modelled: its breakpoints are the harness's)."""
INCREMENT: dict[str, int] = {"anthropic": 1, "openai": 128, "google": 1}


@dataclass(frozen=True, slots=True)
class CacheModel:
    """How a provider's prompt cache serves a run, and at what prices (``price`` None: unpriced)."""

    provider: Provider
    ttl: Ttl = "5m"
    price: Price | None = None

    def priced(self, run: Run, times: Mapping[int, float] | None = None) -> Run:
        """``run`` with each step's cache reads, writes and cost filled in. ``times`` maps a step's
        ``line`` to when it was sent (seconds); without one, a step follows the previous within the lifetime."""
        return replace(run, steps=self.steps(run.steps, times or {}), priced=self.price is not None)

    def steps(self, steps: Sequence[Step], times: Mapping[int, float]) -> tuple[Step, ...]:
        out = []
        lifetime = TTL_SECONDS[self.ttl]
        minimum, increment = MINIMUM[self.provider], INCREMENT[self.provider]
        previous_at: float | None = None
        for i, s in enumerate(steps):
            at = times.get(s.line) if s.line is not None else None
            expired = i == 0 or (at is not None and previous_at is not None and at - previous_at > lifetime)
            shared = 0 if expired else s.shared_prefix_tokens
            if self.provider == "anthropic":
                read, write = shared, s.sent_tokens - shared
            else:
                read = shared // increment * increment if shared >= minimum else 0
                write = 0
            fresh = s.sent_tokens - read - write
            cost = None
            if self.price is not None:
                p = self.price
                cost = (read * p.cache_read + write * p.write(self.ttl) + fresh * p.input) / 1_000_000
            out.append(replace(s, cache_read_tokens=read, cache_write_tokens=write, cost_usd=cost))
            if at is not None:
                previous_at = at
        return tuple(out)


@dataclass(frozen=True, slots=True)
class CacheCheck:
    """The cache model against what the provider recorded, over the steps whose usage the log records."""

    steps: int
    predicted_read: int
    recorded_read: int
    predicted_write: int
    recorded_write: int

    @property
    def read_error(self) -> float | None:
        """Predicted reads relative to recorded ones, minus one (None when nothing was recorded read)."""
        return self.predicted_read / self.recorded_read - 1 if self.recorded_read else None


def check(run: Run) -> CacheCheck | None:
    """How the priced ``run`` (replaying what the harness sent: ``send-everything``) compares with the
    cache reads and writes the log recorded; None when the log records none.

    The replay counts in estimated tokens and the provider in its own: each request's predicted reads and
    writes are taken at the provider's count of that request (its share of the estimate times the
    measured size), so what is compared is the cache model (which part of each request is read, which
    written, when the lifetime ran out), not the estimator's error."""
    measured = [s for s in run.steps if s.recorded_cache_read is not None and s.measured_tokens and s.raw_tokens]
    if not measured:
        return None

    def at_provider(tokens: int, s: Step) -> int:
        return round(tokens * (s.measured_tokens or 0) / s.raw_tokens)

    return CacheCheck(
        len(measured),
        sum(at_provider(s.cache_read_tokens, s) for s in measured),
        sum(s.recorded_cache_read or 0 for s in measured),
        sum(at_provider(s.cache_write_tokens, s) for s in measured),
        sum(s.recorded_cache_write or 0 for s in measured),
    )
