"""Replaying a session request by request (issue 4): every request the agent
sent — one per assistant reply, holding everything before it — fitted by a
policy, with what the provider's prefix cache could reuse between requests.

The replay is incremental: each message is estimated once, and a policy keeps
its state from one request to the next (a Fenwick tree of the current message
sizes, a protected-tail pointer, the candidate list), so a session of N steps
costs about one estimate of the session, not N.

``session`` holds what every policy reads, ``run`` the replay itself,
``requests`` the conversations of a request log (each recorded request a step),
``policies`` the one list of policies, and each policy has its own module:
``windowfit``, ``legacy``, ``keep_last``.
"""

from .keep_last import KEEP_LAST, KeepLastPolicy
from .legacy import LegacyPolicy
from .policies import POLICIES, POLICY_NAMES, Builder, NamedPolicy, policy_named, standard_policies
from .requests import Recorded, ReplayTarget, is_recorded_request, replay_targets, target_of
from .run import LinedColumns, Run, Step, lined_columns, replay, replay_columns
from .session import NOTE, Fenwick, Policy, PolicyFactory, Sent, Session
from .windowfit import WindowfitPolicy

__all__ = [
    "KEEP_LAST",
    "NOTE",
    "POLICIES",
    "POLICY_NAMES",
    "Builder",
    "Fenwick",
    "KeepLastPolicy",
    "LegacyPolicy",
    "LinedColumns",
    "NamedPolicy",
    "Policy",
    "PolicyFactory",
    "Recorded",
    "ReplayTarget",
    "Run",
    "Sent",
    "Session",
    "Step",
    "WindowfitPolicy",
    "is_recorded_request",
    "lined_columns",
    "policy_named",
    "replay",
    "replay_columns",
    "replay_targets",
    "standard_policies",
    "target_of",
]
