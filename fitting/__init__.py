"""windowfit's pure core: transcripts, the token estimate, reports and fitting.

Nothing here prints, exits or reads files beyond the loaders.
"""

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
    "SAFE",
    "SEED",
    "Block",
    "CharClass",
    "CharCounts",
    "ClassRule",
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
    "Rule",
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
    "parse_rule",
    "split_turns",
    "split_units",
]
