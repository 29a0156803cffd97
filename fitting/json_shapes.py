"""The shape of every ``--json`` document: one TypedDict per JSON object, named as in
``docs/schema/*.schema.json``'s ``$defs`` (``tests/test_serialize.py`` holds the two together), which
``serialize`` builds. Keys are documented in docs/json.md; a key is never renamed or removed within a
``schema`` version.

``serialize`` imports this module for the type checker only, and at run time when one of these names is first
read from it (``serialize.ReportDocument`` still works): building the 48 classes was 3 ms of every
``report --json``'s start-up (issue 15)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypeAlias, TypedDict

if TYPE_CHECKING:
    from .content import ContentKind, ScriptClass
    from .fit import AloneKind, CausePartKind, Limit, MessageFate, Outcome
    from .repair import RepairKind
    from .size import PreambleSource, SizeSource
    from .transcript import Dialect, Role
    from .validate import ViolationKind

SchemaVersion: TypeAlias = Literal[1]
ResultStatus: TypeAlias = Literal["cleared", "protected", "too-small", "candidate"]


class SkippedFileJson(TypedDict):
    path: str
    reason: str


# --------------------------------------------------------------------------
# report --json


class ReportCountsJson(TypedDict):
    messages: int
    turns: int
    rounds: int
    tool_calls: int
    tool_results: int
    skipped_lines: int


# Functional syntax: "class" is a keyword.
ScriptJson = TypedDict(
    "ScriptJson", {"class": str, "chars": int, "chars_per_token": float, "tokens": float, "share": float}
)


class LargestResultJson(TypedDict):
    tool: str
    call_id: str
    tokens: int
    budget_share: float | None
    message_index: int
    line: int | None


class ToolJson(TypedDict):
    tool: str
    calls: int
    results: int
    result_tokens: int
    max_result_tokens: int
    grows_like_data: bool
    page_tokens: int | None
    paged_tokens: int | None
    largest_pages: int | None


class SessionJson(TypedDict):
    messages: int
    tokens: int


class MeasuredJson(TypedDict):
    before: int
    line: int | None
    estimated: int
    measured: int
    cache_read: int
    cache_creation: int
    ratio: float | None


class DefectJson(TypedDict):
    kind: str
    path: str
    line: int | None
    detail: str


class SizeJson(TypedDict):
    tokens: int
    source: SizeSource
    preamble_tokens: int
    preamble_source: PreambleSource
    preamble_line: int | None
    measured_tokens: int
    measured_line: int | None
    measured_messages: int
    reply_tokens: int
    estimated_tokens: int


class TranscriptReportJson(TypedDict):
    path: str
    format: str
    dialect: Dialect
    counts: ReportCountsJson
    tokens: int
    preamble_tokens: int
    preamble_source: PreambleSource
    size_source: SizeSource
    size: SizeJson
    scripts: list[ScriptJson]
    by_role: dict[str, int]
    by_kind: dict[str, int]
    largest_results: list[LargestResultJson]
    tools: list[ToolJson]
    budget: int | None
    window: int | None
    window_model: str | None
    fits_budget: bool
    fits_window: bool
    verdict: str
    name: str | None
    session: SessionJson
    measured: list[MeasuredJson]
    defects: list[DefectJson]
    line_kinds: dict[str, int]
    notes: list[str]


class ReportDocument(TypedDict):
    schema: SchemaVersion
    estimator: str
    transcripts: list[TranscriptReportJson]
    skipped_files: list[SkippedFileJson]


# --------------------------------------------------------------------------
# fit --json (the plan)


class FitOptionsJson(TypedDict):
    budget: int
    batch_size: int
    protected_fraction: float
    min_clear_ratio: float
    add_notice: bool
    page_tokens: int | None
    batch_tokens: int | None
    cut_step: int | None
    carried_cut: int | None


class PlanMessageJson(TypedDict):
    index: int
    role: Role
    line: int | None
    tokens: int
    fate: MessageFate


class PlanResultJson(TypedDict):
    message_index: int
    block_index: int
    call_id: str
    tool: str
    tokens: int
    stub_tokens: int
    status: ResultStatus
    handle: str | None
    pages: int | None


class BatchJson(TypedDict):
    index: int
    call_ids: list[str]
    tokens_saved: int


class DroppedJson(TypedDict):
    kind: Literal["turn", "round", "message"]
    start: int
    stop: int
    tokens: int


class RepairJson(TypedDict):
    kind: RepairKind
    defect: ViolationKind
    call_id: str
    message_index: int
    line: int | None
    why: str


class InputViolationJson(TypedDict):
    kind: ViolationKind
    message_index: int
    call_id: str
    line: int | None
    detail: str


class OutputViolationJson(TypedDict):
    kind: ViolationKind
    message_index: int
    call_id: str
    detail: str


class ViolationsJson(TypedDict):
    input: list[InputViolationJson]
    output: list[OutputViolationJson]


class CausePartJson(TypedDict):
    kind: CausePartKind
    label: str
    tokens: int
    start: int | None
    stop: int | None


class AloneJson(TypedDict):
    kind: AloneKind
    label: str
    tokens: int
    call_id: str | None


class TooLongJson(TypedDict):
    """Why a fit is too long, as numbers: the smallest request part by part
    (``tokens`` is their sum) and the piece that alone is over the budget."""

    budget: int
    tokens: int
    parts: list[CausePartJson]
    alone: AloneJson | None
    sentence: str


class FitDocument(TypedDict):
    schema: SchemaVersion
    path: str
    name: str | None
    format: str
    dialect: Dialect
    estimator: str
    options: FitOptionsJson
    window: int | None
    outcome: Outcome
    fits: bool
    crossed: Limit | None
    tokens_before: int
    tokens_after: int
    preamble_tokens: int
    preamble_source: PreambleSource
    size_source: SizeSource
    size: SizeJson
    stages: list[int]
    notice_added: bool
    messages: list[PlanMessageJson]
    results: list[PlanResultJson]
    protected: list[str]
    candidates: list[str]
    batches: list[BatchJson]
    head: list[int]
    kept: list[list[int]]
    cut_at: int | None
    cut: int | None
    dropped: list[DroppedJson]
    repairs: list[RepairJson]
    note: str | None
    cause: str | None
    too_long: TooLongJson | None
    person_message: str | None
    violations: ViolationsJson


# --------------------------------------------------------------------------
# check --format json


class CheckedDefectJson(TypedDict):
    kind: ViolationKind
    repair: RepairKind
    call_id: str
    line: int | None
    detail: str


class CheckedJson(TypedDict):
    path: str
    name: str | None
    outcome: Outcome
    tokens_before: int
    tokens_after: int
    failed: bool
    window: int | None
    window_model: str | None
    crossed: Limit | None
    cause: str | None
    too_long: TooLongJson | None
    defects: list[CheckedDefectJson]
    preamble_tokens: int
    preamble_source: PreambleSource
    size_source: SizeSource
    size: SizeJson


class CheckDocument(TypedDict):
    schema: SchemaVersion
    estimator: str
    budget: int
    window: int | None
    fail_on: Outcome
    passed: bool
    transcripts: list[CheckedJson]
    skipped_files: list[SkippedFileJson]


# --------------------------------------------------------------------------
# replay --json


class ReplayStepJson(TypedDict):
    index: int
    messages: int
    line: int | None
    raw_tokens: int
    sent_tokens: int
    outcome: str
    cleared: int
    shared_prefix_tokens: int
    prefix_break: bool
    rejected: bool
    measured_tokens: int | None
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float | None


class PricingJson(TypedDict):
    recorded_model: str | None
    model: str | None
    row: str | None
    provider: str
    cache_ttl: str
    source: str | None
    read_on: str | None


class CacheCheckJson(TypedDict):
    policy: str
    steps: int
    predicted_cache_read_tokens: int
    recorded_cache_read_tokens: int
    predicted_cache_write_tokens: int
    recorded_cache_write_tokens: int
    read_error: float | None
    misses: int
    miss_predicted_cache_write_tokens: int
    miss_recorded_cache_write_tokens: int
    turn_start_misses: int
    turn_start_miss_recorded_cache_write_tokens: int
    turn_starts_after_tool_use: int
    tail_write_error: float | None


class ReplayRunJson(TypedDict):
    policy: str
    requests: int
    rejections: int
    sent_tokens: int
    cached_tokens: int
    uncached_tokens: int
    prefix_breaks: int
    cache_read_tokens: int
    cache_write_tokens: int
    cache_hit_rate: float
    cost_usd: float | None
    outcomes: dict[str, float]
    retrievable_tokens: int
    retrievable_results: int
    steps: list[ReplayStepJson]


class ReplayDocument(TypedDict):
    schema: SchemaVersion
    path: str
    name: str | None
    estimator: str
    budget: int
    window: int | None
    pricing: PricingJson | None
    cache_check: CacheCheckJson | None
    runs: list[ReplayRunJson]
    skipped_files: list[SkippedFileJson]


# --------------------------------------------------------------------------
# audit --json (and --suggest)


class RatioJson(TypedDict):
    blocks: int
    chars: int
    estimate: int
    real: int
    ratio: float | None
    under: int


class ByScriptJson(TypedDict):
    ascii: RatioJson
    cjk: RatioJson
    other: RatioJson


class ByContentJson(TypedDict):
    prose: RatioJson
    code: RatioJson
    json: RatioJson
    logs: RatioJson


class AuditBlockJson(TypedDict):
    message_index: int | None
    block_index: int
    kind: str
    line: int | None
    script: ScriptClass
    content: ContentKind
    chars: int
    estimate: int
    real: int
    ratio: float | None


class AuditMessageJson(TypedDict):
    message_index: int | None
    role: str
    line: int | None
    chars: int
    estimate: int
    real: int
    ratio: float | None


class TokenizerAuditJson(TypedDict):
    tokenizer: str
    source: str
    estimate: int
    real: int
    ratio: float | None
    safe: bool
    verdict: str
    messages_under: int
    blocks: int
    blocks_under: int
    by_script: ByScriptJson
    by_content: ByContentJson
    worst_blocks: list[AuditBlockJson]
    worst_messages: list[AuditMessageJson]


class ProviderPointJson(TypedDict):
    messages: int
    line: int | None
    estimated: int
    measured: int
    ratio: float | None


class ProviderAuditJson(TypedDict):
    points: int
    under: int
    min_ratio: float | None
    median_ratio: float | None
    max_ratio: float | None
    worst: list[ProviderPointJson]


class TranscriptAuditJson(TypedDict):
    path: str
    name: str | None
    messages: int
    tokenizers: list[TokenizerAuditJson]
    provider: ProviderAuditJson | None


class TightSampleJson(TypedDict):
    where: str
    ascii: int
    cjk: int
    other: int
    tokens: int
    fixed: int
    estimate: int


class CharsPerTokenJson(TypedDict):
    ascii: str
    cjk: str
    other: str


class SuggestionJson(TypedDict):
    estimator: str
    chars_per_token: CharsPerTokenJson
    samples: int
    fit_samples: int
    held_out_samples: int
    set_aside: int
    held_out_under_before: int
    held_out_under_after: int
    needed_margin: float
    margin: float
    guarantee: str
    over_estimate: float | None
    base_over_estimate: float | None
    tightest: list[TightSampleJson]


class AuditDocument(TypedDict):
    schema: SchemaVersion
    estimator: str
    tokenizers: list[str]
    transcripts: list[TranscriptAuditJson]
    suggestion: SuggestionJson | None
    skipped_files: list[SkippedFileJson]


class FetchDocument(TypedDict):
    schema: SchemaVersion
    handle: str
    page: int
    pages: int
    text: str
    tool: str
    call_id: str
    tokens: int


class StoreEntryJson(TypedDict):
    handle: str
    tool: str
    call_id: str
    tokens: int
    pages: int
    chars: int
    source: str
    created: float


class StoreDocument(TypedDict):
    schema: SchemaVersion
    store: str
    entries: list[StoreEntryJson]
    count: int
    tokens: int
    pages: int
    chars: int
    dropped: int | None
