"""windowfit's pure core: transcripts, the token estimate, reports and fitting.

Nothing here prints, exits or reads files beyond the loaders.
"""

from .errors import InputError, Location, OptionError, WindowfitError
from .estimate import SEED, CharCounts, Estimator, MessageEstimate, ScriptRule, count_chars, make_estimator
from .formats import load, load_path
from .report import Report, build_report
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

__all__ = [
    "SEED",
    "Block",
    "CharCounts",
    "Estimator",
    "Image",
    "InputError",
    "Location",
    "Message",
    "MessageEstimate",
    "OptionError",
    "Other",
    "Report",
    "Round",
    "ScriptRule",
    "Single",
    "Source",
    "Text",
    "Thinking",
    "ToolCall",
    "ToolDef",
    "ToolResult",
    "Transcript",
    "Turn",
    "WindowfitError",
    "build_report",
    "count_chars",
    "load",
    "load_path",
    "make_estimator",
    "split_turns",
    "split_units",
]
