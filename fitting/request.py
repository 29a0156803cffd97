"""The library entry point for harnesses: fit an Anthropic or OpenAI request
body (a dict) before sending it, and write fitted transcripts back out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias

import orjson

from ._frozen import frozen
from ._json import dumps, loads
from .errors import Location, OptionError, UnknownShape, UnsendableRequest
from .estimate import Estimator, make_estimator
from .fit import DEFAULTS, FitOptions, Plan, apply_plan, keep_cleared, plan_fit, sent
from .formats import format_of
from .size import Size, predict_size
from .store.base import PAGE_TOKENS, ResultStore
from .transcript import Dialect, Source, Text, ToolDef, Transcript, Usage
from .validate import unsendable
from .wire import anthropic
from .wire.bodies import body_from_transcript, messages_keeping, transcript_from_body, usage_from_json
from .wire.spelling import body_bytes

Target: TypeAlias = Literal["auto", "same", "anthropic", "openai"]
"""What ``fit`` writes: ``same`` keeps the input's shape (messages JSONL or a
request body; refused for logs), ``anthropic``/``openai`` a request body, and
``auto`` is ``same`` where the format writes back (``Format.write``) and the
transcript's own dialect's body for logs (Claude Code sessions, Codex rollouts, ...)."""


def refuse_unsendable(transcript: Transcript) -> None:
    """Raise ``UnsendableRequest`` when no provider would accept ``transcript``."""
    why = unsendable(transcript)
    if why is not None:
        raise UnsendableRequest(
            Location(transcript.source.path),
            f"nothing sendable to write: {why}",
            hint="run 'windowfit report' on the input to see its defects",
        )


def write_transcript(transcript: Transcript, *, to: Target = "auto") -> bytes:
    """The bytes ``windowfit fit`` writes (see ``Target``). An empty or
    unsendable request is never written: it raises ``UnsendableRequest``."""
    refuse_unsendable(transcript)
    transcript = as_sent(transcript)
    fmt = format_of(transcript)
    if to == "auto":
        to = "same" if fmt is not None and fmt.writes_back else transcript.dialect
    if to != "same":
        return body_bytes(body_from_transcript(transcript, to=to, exact=True), transcript.extra)
    if fmt is None or fmt.write is None:
        error = OptionError(f"{transcript.format} files are logs, not requests: '--to same' cannot write one")
        error.hint = f"leave --to out to write an {transcript.dialect} request body, or pass --to anthropic|openai"
        raise error
    return fmt.write(transcript)


def as_sent(transcript: Transcript) -> Transcript:
    """``transcript`` with its messages as a request sends them (``fit.sent``: the truncation note joins the
    user messages beside it)."""
    messages = sent(transcript.messages)
    return transcript if messages is transcript.messages else replace(transcript, messages=tuple(messages))


def writes_body(transcript: Transcript, to: Target) -> bool:
    """Whether ``write_transcript(transcript, to=to)`` writes a request body
    (not messages JSONL)."""
    return to in ("anthropic", "openai") or transcript.format != "messages"


def target_dialect(transcript: Transcript, to: Target) -> Dialect:
    """The dialect ``write_transcript(transcript, to=to)`` writes."""
    if to == "anthropic" or to == "openai":
        return to
    return transcript.dialect


def missing_parts(transcript: Transcript, *, to: Dialect | None = None) -> tuple[str, ...]:
    """What a request body written from ``transcript`` lacks for the API to
    accept it as the harness sent it: ``model``, ``max_tokens`` (Anthropic
    requires it), ``system`` (for logs of harnesses that send one but do not
    record it) and ``tools`` (when the messages call tools but no definitions
    are known: the APIs reject tool calls without tool definitions)."""
    dialect = to or transcript.dialect
    body = body_from_transcript(transcript, to=dialect)
    missing = []
    if "model" not in body:
        missing.append("model")
    if dialect == "anthropic" and "max_tokens" not in body:
        missing.append("max_tokens")
    fmt = format_of(transcript)
    if not transcript.system and fmt is not None and not fmt.records_system:
        missing.append("system")
    if not transcript.tools and any(m.tool_calls for m in transcript.messages):
        missing.append("tools")
    return tuple(missing)


def with_request_parts(
    transcript: Transcript,
    *,
    system: str | None = None,
    tools: tuple[ToolDef, ...] | None = None,
    model: str | None = None,
    max_tokens: int | None = None,
) -> Transcript:
    """``transcript`` with the parts of a request its file did not record, given
    by the user: they replace what the file recorded and count in every size."""
    extra = loads(transcript.extra) if transcript.extra else {}
    if model is not None:
        extra["model"] = model
    if max_tokens is not None:
        for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
            extra.pop(key, None)
        extra["max_tokens" if transcript.dialect == "anthropic" else "max_completion_tokens"] = max_tokens
    return replace(
        transcript,
        system=transcript.system if system is None else ((Text(system),) if system else ()),
        tools=transcript.tools if tools is None else tools,
        extra=dumps(extra) if extra else "",
    )


def tools_from_json(data: bytes, path: str) -> tuple[ToolDef, ...]:
    """Tool definitions from a JSON array, each in either provider's shape
    (Anthropic ``input_schema``, OpenAI ``function.parameters``), or from a
    request body's ``tools``."""
    where = Location(path)
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise UnknownShape(where, f"not JSON: {exc}") from None
    if isinstance(value, dict) and isinstance(value.get("tools"), list):
        value = value["tools"]
    if not isinstance(value, list):
        raise UnknownShape(where, "expected a JSON array of tool definitions (or a request body with 'tools')")
    tools = tuple(anthropic.tool_from_json(obj, where) for obj in value)
    unnamed = [i for i, t in enumerate(tools) if not t.name]
    if unnamed:
        raise UnknownShape(where, f"tool definition {unnamed[0]} has no name")
    return tools


@frozen
class FittedRequest:
    """A fitted request body and the plan that made it. When ``plan.outcome``
    is ``too-long`` the body is the smallest attempt and must not be sent."""

    body: dict[str, Any]
    plan: Plan


@dataclass(slots=True)
class Fitter:
    """Fit request bodies before every request. Keep one per conversation:
    its estimator memoises every message it has seen, and with cut steps it
    carries the cut: once ``fit`` leaves messages out, the next ``fit`` starts
    from what that request kept, so the cut only moves forward (SPEC invariant
    10). Pass the whole conversation each time, as the harness holds it (not the
    fitted body); for a new conversation make a new ``Fitter`` or ``reset`` it."""

    budget: int
    estimator: Estimator = field(default_factory=make_estimator)
    batch_size: int = DEFAULTS.batch_size
    protected_fraction: float = DEFAULTS.protected_fraction
    min_clear_ratio: float = DEFAULTS.min_clear_ratio
    add_notice: bool = DEFAULTS.add_notice
    store: ResultStore | None = None
    """Keep every cleared result here; the stubs then name their handles."""
    page_tokens: int | None = DEFAULTS.page_tokens
    """The store's page size (``PAGE_TOKENS`` when a store is given and this is None)."""
    batch_tokens: int | None = DEFAULTS.batch_tokens
    cut_step: int | None = DEFAULTS.cut_step
    carried_cut: int | None = DEFAULTS.carried_cut
    """Where the last request ``fit`` returned left messages out (``Plan.cut``),
    given to the next one: ``fit`` sets it when ``cut_step`` is on."""
    taken_off: int = 0
    """What the last request ``fit`` returned left out of the conversation, as
    its plan counted it (``tokens_before - tokens_after``; 0 when it was sent as
    given): the next ``fit`` adds it back to the measured size of that request."""
    measured: tuple[Usage, ...] = ()
    """Every ``last_usage`` given so far, where its request ended: the size
    anchors on the last and fits the session's growth (``growth_scale``) on all."""

    @classmethod
    def of(cls, options: FitOptions, estimator: Estimator | None = None, store: ResultStore | None = None) -> Fitter:
        """A fitter with every tunable taken from ``options``."""
        return cls(
            options.budget,
            estimator or make_estimator(),
            options.batch_size,
            options.protected_fraction,
            options.min_clear_ratio,
            options.add_notice,
            store,
            options.page_tokens,
            options.batch_tokens,
            options.cut_step,
            options.carried_cut,
        )

    def reset(self) -> None:
        """Forget the carried cut: the next ``fit`` is the first of a new conversation."""
        self.carried_cut = None
        self.taken_off = 0
        self.measured = ()

    @property
    def options(self) -> FitOptions:
        return FitOptions(
            self.budget,
            self.batch_size,
            self.protected_fraction,
            self.min_clear_ratio,
            self.add_notice,
            self._page_tokens,
            self.batch_tokens,
            self.cut_step,
            self.carried_cut,
        )

    @property
    def _page_tokens(self) -> int | None:
        if self.store is None:
            return self.page_tokens
        return self.page_tokens or PAGE_TOKENS

    def measured_with(self, transcript: Transcript, last_usage: Mapping[str, Any]) -> tuple[Usage, ...]:
        """``measured`` and ``last_usage``, each where its request ended, as a
        file records usage: the previous request held the messages before the
        last assistant message (the previous response), and counted
        ``taken_off`` less than the conversation holds when its fit cut."""
        roles = [m.role for m in transcript.messages]
        if "assistant" not in roles:
            return ()  # no previous response in this conversation
        reply = len(roles) - 1 - roles[::-1].index("assistant")
        usage = usage_from_json(last_usage, reply, Source("<last_usage>"))
        if usage is None:
            raise OptionError("last_usage holds no input count (input_tokens or prompt_tokens)")
        usage = replace(usage, input_tokens=usage.input_tokens + self.taken_off)
        return (*(u for u in self.measured if u.before < reply), usage)

    def plan(self, transcript: Transcript, size: Size | None = None) -> Plan:
        """The plan, pure: with a store, the stubs name handles, but nothing is put yet.
        ``size`` as in ``plan_fit``."""
        return plan_fit(
            transcript,
            size=size,
            budget=self.budget,
            estimator=self.estimator,
            batch_size=self.batch_size,
            protected_fraction=self.protected_fraction,
            min_clear_ratio=self.min_clear_ratio,
            add_notice=self.add_notice,
            page_tokens=self._page_tokens,
            batch_tokens=self.batch_tokens,
            cut_step=self.cut_step,
            carried_cut=self.carried_cut,
        )

    def fit(
        self, body: Mapping[str, Any], *, dialect: Dialect | None = None, last_usage: Mapping[str, Any] | None = None
    ) -> FittedRequest:
        """The body to send (same dialect), and the plan. A body that already
        fits and needed no repair is returned as it is, not copied; one that
        needed repairs (an interrupted call, an orphan result) comes back
        repaired, even when it fits (issue 8). With ``cut_step``, the cut it
        makes is carried to the next call (``carried_cut``); a too-long plan,
        which must not be sent, carries nothing. ``last_usage`` is the
        ``usage`` of the response to the previous request: the size then
        starts from it, as ``predict_size`` anchors a file (``measured_with``)."""
        transcript = transcript_from_body(body, dialect=dialect)
        if transcript.dialect == "anthropic":
            given = anthropic.keep_given_inputs(transcript.messages, body["messages"])
            transcript = replace(transcript, messages=given)
        size = None
        if last_usage is not None:
            measured = self.measured_with(transcript, last_usage)
            size = predict_size(replace(transcript, usage=measured), self.estimator)
        plan = self.plan(transcript, size)
        if last_usage is not None and plan.outcome != "too-long":
            self.measured = measured
        if plan.outcome == "fits" and not plan.notice_added and not plan.repairs:
            self.taken_off = 0
            return FittedRequest(body if isinstance(body, dict) else dict(body), plan)
        fitted = apply_plan(transcript, plan)
        refuse_unsendable(fitted)
        if self.store is not None:
            keep_cleared(transcript, plan, self.store)
        if self.cut_step is not None and plan.cut is not None:
            self.carried_cut = plan.cut
        if plan.outcome != "too-long":
            self.taken_off = max(0, plan.tokens_before - plan.tokens_after)
        return FittedRequest(body_keeping(body, transcript, fitted), plan)


def body_keeping(body: Mapping[str, Any], read: Transcript, fitted: Transcript) -> dict[str, Any]:
    """``fitted`` as a body in its dialect, where every message the fit did not
    touch (and the system prompt, if untouched) is the very object ``body`` held
    (SPEC section 6, invariant 9): same keys, same shape, same values. ``read``
    is the transcript ``body`` was read into, whose messages map to its own."""
    fitted = as_sent(fitted)
    out = body_from_transcript(fitted)
    originals = list(body["messages"])
    leading = len(originals) - len(read.messages)  # OpenAI system messages: the system prompt now
    by_identity = {id(m): o for m, o in zip(read.messages, originals[leading:], strict=True)}
    messages = messages_keeping(fitted, lambda m: by_identity.get(id(m)), exact=False)
    system_kept = fitted.system is read.system
    if fitted.dialect == "openai":
        system = originals[:leading] if system_kept else out["messages"][: 1 if fitted.system else 0]
        out["messages"] = [*system, *messages]
    else:
        if system_kept and "system" in body:
            out["system"] = body["system"]
        out["messages"] = messages
    return out


def fit_request(
    body: Mapping[str, Any],
    *,
    budget: int,
    dialect: Dialect | None = None,
    estimator: Estimator | None = None,
    batch_size: int = DEFAULTS.batch_size,
    protected_fraction: float = DEFAULTS.protected_fraction,
    min_clear_ratio: float = DEFAULTS.min_clear_ratio,
    add_notice: bool = DEFAULTS.add_notice,
    store: ResultStore | None = None,
    page_tokens: int | None = DEFAULTS.page_tokens,
    batch_tokens: int | None = DEFAULTS.batch_tokens,
    cut_step: int | None = DEFAULTS.cut_step,
    carried_cut: int | None = DEFAULTS.carried_cut,
    last_usage: Mapping[str, Any] | None = None,
) -> FittedRequest:
    """Fit one request body (see ``Fitter`` to reuse estimates across calls and
    carry the cut from one to the next). With ``store``, every cleared result is
    kept in it and the stubs name their handles; ``carried_cut`` is an earlier
    request's cut (``Plan.cut``); ``last_usage`` as in ``Fitter.fit`` (the
    previous request sent as given)."""
    fitter = Fitter(
        budget,
        estimator or make_estimator(),
        batch_size,
        protected_fraction,
        min_clear_ratio,
        add_notice,
        store,
        page_tokens,
        batch_tokens,
        cut_step,
        carried_cut,
    )
    return fitter.fit(body, dialect=dialect, last_usage=last_usage)
