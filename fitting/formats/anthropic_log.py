"""The "anthropic_log" format: Anthropic Messages API requests logged one per
line, either as bare request bodies or as HTTP captures that wrap them
(claude-trace's ``{"request": {..., "body"}, "response": {...}}``). Each
request is a transcript; the response's ``usage`` is its measured size."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from itertools import chain
from typing import Any, TypedDict
from urllib.parse import urlsplit

import orjson

from .._json import InputTexts, encode, loads_or_lenient, str_field
from ..errors import EmptyTranscript, Location, UnknownShape
from ..transcript import Defect, Skipped, Source, Transcript, Usage, Verbatim
from ..validate import check_messages
from ..wire import anthropic, bodies
from ..wire.spelling import spelled_body_keys, spelled_messages, spelled_tools, value_text
from . import messages
from ._document import is_document, iter_members
from ._jsonl import LineReader
from ._sniff import HeadShape, head_dialect, is_capture, scan_head
from .base import Format, Input

NAME = "anthropic_log"


class CapturedRequest(TypedDict, total=False):
    """``request`` of a claude-trace line."""

    timestamp: float
    method: str
    url: str
    headers: dict[str, str]
    body: Any


# --------------------------------------------------------------------------
# Sniffing


def sniff(head: bytes) -> bool:
    shape: HeadShape = scan_head(head)
    if shape.opening == "{":
        if is_capture(shape.keys, shape.first_line):
            return True
        # Bodies one per line; a single body in a file is the messages format's document.
        return "messages" in shape.keys and shape.lines_of_values and _anthropic(shape.keys, shape.first_line)
    if shape.opening == "[" and shape.item_opening == "{":  # an array of captures or bodies
        return is_capture(shape.item_keys, shape.first_line) or (
            "messages" in shape.item_keys and _anthropic(shape.item_keys, shape.first_line)
        )
    return False


def _anthropic(keys: tuple[str, ...], text: bytes) -> bool:
    return head_dialect(keys, text) == "anthropic"


# --------------------------------------------------------------------------
# Loading


def _usage(response: Any) -> dict[str, Any] | None:
    """The response's ``usage``: in its JSON body, or in the ``message_start``
    event of a streamed (server-sent events) body, with the final output count
    of its last ``message_delta`` (``message_start`` holds a snapshot)."""
    if not isinstance(response, dict):
        return None
    body = response.get("body")
    if isinstance(body, dict) and isinstance(body.get("usage"), dict):
        return body["usage"]  # type: ignore[no-any-return]
    raw = response.get("body_raw")
    if not isinstance(raw, str):
        return None
    usage: dict[str, Any] | None = None
    for line in raw.splitlines():
        if not line.startswith("data:"):
            continue
        try:
            event = orjson.loads(line[5:])
        except orjson.JSONDecodeError:
            continue
        if not isinstance(event, dict):
            continue
        if event.get("type") == "message_start" and usage is None:
            start = (event.get("message") or {}).get("usage")
            if not isinstance(start, dict):
                return None
            usage = dict(start)
        elif event.get("type") == "message_delta" and usage is not None:
            delta = event.get("usage")
            if isinstance(delta, dict) and isinstance(delta.get("output_tokens"), int):
                usage["output_tokens"] = delta["output_tokens"]
    return usage


def _request_kind(method: str, url: str) -> str:
    """A line-kind label for a captured request that is not a Messages request."""
    path = urlsplit(url).path or url
    return f"{method} {path}".strip() or "request"


class _Loader:
    """Turns logged values into transcripts, counting what is not a request."""

    def __init__(self, path: str, skip_invalid: bool, keep_text: bool = True) -> None:
        self.path = path
        self.keep_text = keep_text
        self.skip_invalid = skip_invalid
        self.transcripts: list[Transcript] = []
        self.kinds: Counter[str] = Counter()
        self.skipped: list[Skipped] = []

    def add(self, line: int, value: Any, text: bytes | str | None = None) -> None:
        """One logged value; ``text``, the JSON it was read from, gives tool inputs their spelling."""
        source = Source(self.path, line)
        if isinstance(value, dict) and isinstance(value.get("request"), dict):
            self._capture(source, value["request"], value.get("response"), text)
        elif isinstance(value, dict) and "messages" in value:
            self._request(source, value, None, text, ("messages",))
        elif isinstance(value, dict):
            kind = str_field(value, "type")
            self.kinds[kind if isinstance(kind, str) else "object without messages"] += 1
        else:
            self.kinds[type(value).__name__ if value is not None else "null"] += 1

    def _capture(self, source: Source, request: CapturedRequest, response: Any, text: bytes | str | None) -> None:
        body = request.get("body")
        at: tuple[str, ...] = ("request", "body", "messages")
        if isinstance(body, str):  # some captures keep the body as the JSON text sent
            with contextlib.suppress(orjson.JSONDecodeError):
                body, text, at = loads_or_lenient(body), body, ("messages",)
        url = str(request.get("url") or "")
        path = urlsplit(url).path
        is_messages = not url or path.rstrip("/").endswith("/messages")
        if not is_messages or not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            label = _request_kind(str(request.get("method") or ""), url)
            self.kinds[f"{label} (no messages)" if is_messages else label] += 1
            return
        self._request(source, body, response if isinstance(response, dict) else None, text, at)

    def _request(
        self,
        source: Source,
        body: dict[str, Any],
        response: dict[str, Any] | None,
        text: bytes | str | None,
        path: tuple[str, ...],
    ) -> None:
        try:
            t = anthropic.request_from_json(body, source, NAME)
        except UnknownShape as exc:
            if not self.skip_invalid:
                raise
            self.skipped.append(Skipped(source, exc.message))
            return
        if text is not None and self.keep_text and any(m.tool_calls for m in t.messages):
            inputs = InputTexts(text)
            t = replace(t, messages=tuple(replace(m, content=inputs.blocks(m.content)) for m in t.messages))
        if text is not None and self.keep_text:
            t = replace(
                t,
                messages=spelled_messages(t.messages, text, path),
                extra=spelled_body_keys(t.extra, text, path[:-1]),
                tools=spelled_tools(t.tools, text, (*path[:-1], "tools")),
                system_verbatim=_system_text(t, text, (*path[:-1], "system")),
            )
        model = body.get("model")
        n = len(self.transcripts) + 1
        name = f"request {n} (line {source.line}{f', {model}' if isinstance(model, str) else ''})"
        defects = [
            Defect(v.source, v.kind, v.detail)
            for v in check_messages(t.messages, "anthropic")
            if v.kind in ("unanswered-call", "orphan-result", "duplicate-call-id", "result-in-wrong-role")
        ]
        usage: tuple[Usage, ...] = ()
        if response is not None:
            status = response.get("status_code")
            if isinstance(status, int) and status >= 400:
                defects.append(Defect(source, "error-response", f"the provider answered HTTP {status}"))
            measured = _usage(response)
            found = None if measured is None else bodies.usage_from_json(measured, len(t.messages), source)
            usage = () if found is None else (found,)
        self.transcripts.append(replace(t, name=name, usage=usage, defects=tuple(defects)))

    def result(self) -> tuple[Transcript, ...]:
        if not self.transcripts:
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.kinds.items()))
            raise EmptyTranscript(
                Location(self.path),
                "no Messages API request with messages found" + (f" (lines: {kinds})" if kinds else ""),
                hint="is this the right file?",
            )
        first = self.transcripts[0]
        notes = ["each logged request is a transcript of its own; the response is not part of it"]
        if self.kinds or self.skipped:
            notes.append("lines that are not requests, and skipped lines, are counted on the file's first request")
        self.transcripts[0] = replace(
            first,
            skipped=tuple(self.skipped),
            line_kinds=tuple(sorted(self.kinds.items())),
            notes=tuple(notes),
        )
        return tuple(self.transcripts)


def _values(source: Input, skip_invalid: bool, skipped: list[Skipped]) -> Iterator[tuple[int, Any, bytes | str | None]]:
    """The logged values with their lines and JSON texts: JSON Lines, or a
    document holding one capture or an array of them."""
    if not is_document(source):
        reader = LineReader(source.path, skip_invalid)
        yield from reader.entries(source.lines())
        skipped.extend(reader.skipped)
        return
    with source.open() as stream:
        members = iter_members(stream, source.path)
        first = next(members, None)
        if first is None:
            return
        if first.key is not None:  # one object: a capture
            yield first.line, {first.key: first.value, **{m.key: m.value for m in members if m.key is not None}}, None
            return
        yield first.line, first.value, first.text
        for member in members:
            yield member.line, member.value, member.text


def _system_text(t: Transcript, text: bytes | str, path: tuple[str, ...]) -> Verbatim | None:
    """The request's ``system`` value as the line spelled it, where writing it from the model would spell it
    otherwise: a string (the model writes a list of one text block) or blocks spaced or escaped otherwise than
    compact JSON. None where the model writes the same text, so a harness's compact lines keep none."""
    if not t.system:
        return None
    found = value_text(text, path)
    if found is None or found == encode([anthropic.block_to_json(b) for b in t.system]):
        return None
    return Verbatim(found, t.system)


def hands_over(source: Input) -> bool:
    """Whether ``load`` hands ``source`` to the messages format: one bare request body alone in a file."""
    shape = scan_head(source.head())
    return shape.opening == "{" and "request" not in shape.keys and is_document(source)


def load(source: Input, *, skip_invalid: bool) -> tuple[Transcript, ...]:
    if hands_over(source):
        # One bare request body alone in a file is the messages format's document: handed over before it
        # is streamed member by member here (which would hold its text twice over for nothing).
        return messages.FORMAT.load(source, skip_invalid=skip_invalid)
    loader = _Loader(source.path, skip_invalid, source.keep_text)
    values = _values(source, skip_invalid, loader.skipped)
    head = [v for v in (next(values, None), next(values, None)) if v is not None]
    if len(head) == 1 and isinstance(head[0][1], dict) and "request" not in head[0][1] and is_document(source):
        # One bare request body alone in a file is the messages format's document.
        return messages.FORMAT.load(source, skip_invalid=skip_invalid)
    for line, value, text in chain(head, values):
        loader.add(line, value, text)
    return loader.result()


FORMAT = Format(
    name=NAME,
    description="Anthropic request logs: request bodies one per line, or HTTP captures wrapping them (claude-trace)",
    sniff=sniff,
    load=load,
    records_requests=True,
)
