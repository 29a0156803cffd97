"""windowfit's pure core: transcripts, the token estimate, reports and fitting.

Nothing here prints, exits or reads files beyond the loaders. The audit, the
rule suggestion and the tokenizers load on first use (``__getattr__``): most
commands never need them, and importing them cost every command's start-up.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .errors import InputError, Location, OptionError, WindowfitError
from .estimate import (
    SAFE,
    SEED,
    CharClass,
    CharCounts,
    ClassRule,
    Estimator,
    MessageEstimate,
    Rule,
    ScriptRule,
    count_chars,
    make_estimator,
    parse_rule,
)
from .fit import FitOptions, Fitted, Plan, apply_plan, fit, keep_cleared, plan_fit
from .formats import load, load_path
from .notice import has_notice, with_notice
from .replay import POLICIES, Run, Step, replay, standard_policies
from .report import Report, build_report
from .request import FittedRequest, Fitter, fit_request
from .size import Size, predict_size
from .store import Offloaded, ResultStore, handle_tool_call, offload, open_store
from .transcript import (
    Block,
    Image,
    Message,
    Other,
    Round,
    Single,
    Source,
    Text,
    Thinking,
    ToolCall,
    ToolDef,
    ToolResult,
    Transcript,
    Turn,
    split_turns,
    split_units,
)
from .validate import Violation, check_request

if TYPE_CHECKING:
    from .audit import TranscriptAudit, audit_transcript
    from .suggest import suggest_rule
    from .tokenizers import load_tokenizer

_LAZY = {
    "TranscriptAudit": "audit",
    "audit_transcript": "audit",
    "suggest_rule": "suggest",
    "load_tokenizer": "tokenizers",
}


def __getattr__(name: str) -> Any:
    """The names of ``_LAZY``, imported from their module the first time they are read."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "POLICIES",
    "SAFE",
    "SEED",
    "Block",
    "CharClass",
    "CharCounts",
    "ClassRule",
    "Estimator",
    "FitOptions",
    "Fitted",
    "FittedRequest",
    "Fitter",
    "Image",
    "InputError",
    "Location",
    "Message",
    "MessageEstimate",
    "Offloaded",
    "OptionError",
    "Other",
    "Plan",
    "Report",
    "ResultStore",
    "Round",
    "Rule",
    "Run",
    "ScriptRule",
    "Single",
    "Size",
    "Source",
    "Step",
    "Text",
    "Thinking",
    "ToolCall",
    "ToolDef",
    "ToolResult",
    "Transcript",
    "TranscriptAudit",
    "Turn",
    "Violation",
    "WindowfitError",
    "apply_plan",
    "audit_transcript",
    "build_report",
    "check_request",
    "count_chars",
    "fit",
    "fit_request",
    "handle_tool_call",
    "has_notice",
    "keep_cleared",
    "load",
    "load_path",
    "load_tokenizer",
    "make_estimator",
    "offload",
    "open_store",
    "parse_rule",
    "plan_fit",
    "predict_size",
    "replay",
    "split_turns",
    "split_units",
    "standard_policies",
    "suggest_rule",
    "with_notice",
]
