"""The "http_capture" format: one HTTP request/response pair saved as a JSON
object with the request's parts at the top level: ``{"method", "path" (or
"url"), "headers", "body", "response": {"status", "headers", "body"}}``. The
body is an Anthropic Messages or OpenAI Chat Completions request (read by
``wire.bodies``, which tells them apart); the response's ``usage`` is the
request's measured size. (claude-trace's captures, which wrap the request in a
``request`` key, are ``anthropic_log``'s.)"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson

from .._json import InputTexts, check_depth, loads_or_lenient, member_spans
from ..errors import InvalidJson, Location, UnknownShape
from ..transcript import Defect, Source, Transcript, Usage, Verbatim
from ..wire import bodies
from ..wire.spelling import spelled_request_keys, spelled_tools
from ._sniff import scan_head
from .base import Format, Input

NAME = "http_capture"


def sniff(head: bytes) -> bool:
    shape = scan_head(head)
    keys = set(shape.keys)
    return (
        shape.opening == "{"
        and "request" not in keys
        and {"method", "body"} <= keys
        and bool(keys & {"path", "url"})
        and not shape.more
    )


def usage_of(response: Any, before: int, source: Source) -> Usage | None:
    """The measured input of the response's ``usage`` (``bodies.usage_from_json``)."""
    body = response.get("body") if isinstance(response, dict) else None
    if isinstance(body, str):
        try:
            body = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return None
    return bodies.usage_from_json(usage, before, source)


def _with_texts(t: Transcript, text: bytes) -> Transcript:
    """``t`` with each message's JSON text as the capture holds it, so a message written from the model
    keeps the blocks it still holds as the capture spelled them (``wire.spelling``), and with the body's own
    keys (``model``, ``max_tokens``, ...) as the capture spelled them."""
    try:
        top = member_spans(text)
        found = {key: (a, b) for key, a, b in top}  # a repeated key: the last one counts, as when parsed
        if "body" in found and text[found["body"][0] : found["body"][0] + 1] == b"{":
            top = member_spans(text, found["body"][0])
            found = {key: (a, b) for key, a, b in top}
        spans = member_spans(text, found["messages"][0])
    except (KeyError, ValueError):
        return t
    leading = len(spans) - len(t.messages)  # OpenAI system messages: the system prompt now
    if leading < 0:
        return t
    messages = tuple(
        replace(m, verbatim=Verbatim((text[a:b],), m.content))
        for m, (_, a, b) in zip(t.messages, spans[leading:], strict=True)
    )
    system = None  # the system prompt as captured: a body's system value, or its leading system messages
    if t.system and t.dialect == "anthropic" and "system" in found:
        system = Verbatim((text[slice(*found["system"])],), t.system)
    elif t.system and leading:
        system = Verbatim(tuple(text[a:b] for _, a, b in spans[:leading]), t.system)
    tools = t.tools
    if tools and "tools" in found:
        tools = spelled_tools(tools, text[slice(*found["tools"])], ())
    return replace(
        t,
        messages=messages,
        extra=spelled_request_keys(t.extra, ((k, text[a:b]) for k, a, b in top)),
        system_verbatim=system,
        tools=tools,
    )


def load(source: Input, *, skip_invalid: bool) -> tuple[Transcript, ...]:
    try:
        data = source.read_all()
        capture = check_depth(loads_or_lenient(data), Location(source.path), data)
    except orjson.JSONDecodeError as exc:
        raise InvalidJson(Location(source.path), f"invalid JSON: {exc}") from None
    where = Location(source.path, 1)
    if not isinstance(capture, dict) or "method" not in capture or "body" not in capture:
        raise UnknownShape(
            where, "an HTTP capture is an object with 'method', 'path', 'headers', 'body' and 'response'"
        )
    body = capture["body"]
    text: bytes | str = data
    if isinstance(body, str):  # the body as the JSON text sent
        try:
            body, text = loads_or_lenient(body), body
        except orjson.JSONDecodeError:
            raise UnknownShape(where, "the captured request's body is not JSON") from None
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        target = capture.get("path") or capture.get("url")
        raise UnknownShape(
            where,
            f"the captured request ({capture.get('method')} {target}) has no 'messages' list in its body",
            hint="windowfit reads captures of Anthropic Messages and OpenAI Chat Completions requests",
        )
    src = Source(source.path, 1)
    t = bodies.transcript_from_body(body, source=src, fmt=NAME)
    if source.keep_text and t.dialect == "anthropic" and any(m.tool_calls for m in t.messages):
        inputs = InputTexts(text)
        t = replace(t, messages=tuple(replace(m, content=inputs.blocks(m.content)) for m in t.messages))
    if source.keep_text:
        t = _with_texts(t, text.encode() if isinstance(text, str) else text)
    defects: list[Defect] = []
    response = capture.get("response")
    if isinstance(response, dict):
        status = response.get("status", response.get("status_code"))
        if isinstance(status, int) and status >= 400:
            defects.append(Defect(src, "error-response", f"the provider answered HTTP {status}"))
    measured = usage_of(response, len(t.messages), src)
    notes = ("the captured request is the transcript; the response is not part of it",)
    return (replace(t, usage=(measured,) if measured else (), defects=tuple(defects), notes=notes),)


FORMAT = Format(
    name=NAME,
    description="HTTP captures of one request/response pair ({method, path, headers, body, response})",
    sniff=sniff,
    load=load,
    records_requests=True,
)
