"""The one list of replay policies. ``windowfit replay --policy`` offers exactly
these names, in this order, and its table, chart and JSON show the same names.
Each policy lives in its own module; adding one is that module plus one entry
here (docs/extending.md)."""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from .._frozen import frozen
from ..errors import OptionError
from ..fit import DEFAULTS, FitOptions
from . import keep_last, legacy, presets, windowfit
from .keep_last import KEEP_LAST
from .session import Policy, PolicyFactory, Session


class Builder(Protocol):
    """Makes a policy for a session from the fit's options (budget included) and
    keep-last's N; a policy reads the options that apply to it and ignores the rest."""

    def __call__(self, session: Session, options: FitOptions, *, keep: int) -> Policy: ...


@frozen
class NamedPolicy:
    """One entry of the list."""

    name: str
    """What ``--policy`` takes, and what the table, the chart and the JSON show."""
    description: str
    """What it does, in a few words for ``--help``."""
    build: Builder

    def factory(self, options: FitOptions = DEFAULTS, *, keep: int = KEEP_LAST) -> PolicyFactory:
        """This policy for ``replay``: built from ``options``' tunables and
        ``keep``, with the budget ``replay`` passes in place of ``options.budget``."""

        def make(session: Session, budget: int) -> Policy:
            policy = self.build(session, replace(options, budget=budget), keep=keep)
            policy.name = self.name
            return policy

        return make


POLICIES: tuple[NamedPolicy, ...] = (
    NamedPolicy(
        "windowfit",
        "clear old tool results in batches (--batch-size), then drop whole turns, then whole rounds",
        windowfit.build,
    ),
    NamedPolicy(
        "windowfit-cache",
        "the same with the step rules: batches by size (--batch-tokens), cuts at fixed steps (--cut-step)",
        windowfit.build_cache,
    ),
    NamedPolicy(
        "windowfit-batch-1",
        "the same, clearing one result at a time (the cache-hostile comparison)",
        windowfit.build_batch_1,
    ),
    NamedPolicy(
        "legacy",
        "the truncation before the fix: cut only where a user message starts",
        legacy.build,
    ),
    NamedPolicy(
        "keep-last",
        "once over the budget, clear every tool result but the newest N (--keep)",
        keep_last.build,
    ),
    NamedPolicy(
        "anthropic-clear-tool-uses",
        "Anthropic's clear_tool_uses_20250919 edit: over 100,000 input tokens, clear all tool results but the newest 3",
        presets.build_anthropic,
    ),
    NamedPolicy(
        "gemini-cli-masking",
        "Gemini CLI's tool-output masking: protect the newest 50,000 tool-output tokens, mask once 30,000 are prunable",
        presets.build_gemini,
    ),
    NamedPolicy(
        "claude-code-idle-clear",
        "Claude Code's time-based clearing: after a 60-minute idle gap, clear its own tools' results but the newest 5 "
        "(main thread only)",
        presets.build_idle,
    ),
    NamedPolicy(
        "openhands-observation-masking",
        "OpenHands' observation masking: mask tool results outside the 100 most recent events",
        presets.build_openhands,
    ),
    NamedPolicy(
        "langchain-trim-last",
        'LangChain\'s trim_messages(strategy="last"): the newest whole units that fit the budget',
        presets.build_langchain,
    ),
    NamedPolicy(
        "send-everything",
        "what the harness sent: the whole history, nothing cleared",
        presets.build_send_everything,
    ),
)
"""Every replay policy, in the order of the comparison table."""

POLICY_NAMES: tuple[str, ...] = tuple(p.name for p in POLICIES)


def policy_named(name: str) -> NamedPolicy:
    """The entry called ``name``."""
    for policy in POLICIES:
        if policy.name == name:
            return policy
    error = OptionError(f"no replay policy is called {name!r}")
    error.hint = "choose one of: " + ", ".join(POLICY_NAMES)
    raise error


def standard_policies(*, keep: int = KEEP_LAST, options: FitOptions = DEFAULTS) -> tuple[PolicyFactory, ...]:
    """Every policy of the list, as ``windowfit replay`` runs them when no ``--policy`` is given."""
    return tuple(policy.factory(options, keep=keep) for policy in POLICIES)
