"""Request bodies as dicts, in either dialect: which dialect one is in, reading
one into a transcript, and writing a transcript as one."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import Location, UnknownShape
from ..transcript import Dialect, Message, Source, Transcript, Usage
from . import anthropic, openai

REQUEST_SOURCE = Source("<request>")


def _count(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and value >= 0 else 0


def usage_from_json(usage: Mapping[str, Any], before: int, source: Source = REQUEST_SOURCE) -> Usage | None:
    """A response's ``usage`` as the measured size of the request that held
    ``before`` messages: Anthropic's (``input_tokens`` and the cache counts
    beside it, ``output_tokens``) or OpenAI's (Chat's ``prompt_tokens``, of which
    ``prompt_tokens_details.cached_tokens`` were read from cache, and
    ``completion_tokens``; the Responses API's ``input_tokens`` already holds its
    cached ones). None when it holds no input count."""
    if "prompt_tokens" in usage:
        details = usage.get("prompt_tokens_details")
        cached = _count(details, "cached_tokens") if isinstance(details, Mapping) else 0
        prompt = max(_count(usage, "prompt_tokens") - cached, 0)
        return Usage(before, prompt, 0, cached, source, _count(usage, "completion_tokens"))
    if "input_tokens" in usage:
        return Usage(
            before,
            _count(usage, "input_tokens"),
            _count(usage, "cache_creation_input_tokens"),
            _count(usage, "cache_read_input_tokens"),
            source,
            _count(usage, "output_tokens"),
        )
    return None


def body_dialect(body: Mapping[str, Any]) -> Dialect:
    """Anthropic if the body has a top-level ``system`` or Anthropic blocks,
    OpenAI if it has OpenAI-only shapes; Anthropic when nothing tells."""
    if "system" in body:
        return "anthropic"
    messages, tools = body.get("messages"), body.get("tools")
    if isinstance(messages, list) and any(
        isinstance(m, dict) and (openai.looks_openai(m) or m.get("role") == "system") for m in messages
    ):
        return "openai"
    if isinstance(tools, list) and any(isinstance(t, dict) and t.get("type") == "function" for t in tools):
        return "openai"
    return "anthropic"


def body_from_transcript(transcript: Transcript, *, to: Dialect | None = None, exact: bool = False) -> dict[str, Any]:
    """A request body in ``to`` (default: the transcript's own dialect). ``exact``, for a body to be
    written as bytes: what the messages still hold as read is written as the file spelled it (fragments
    of its text; SPEC section 6, invariant 9)."""
    if (to or transcript.dialect) == "anthropic":
        return anthropic.request_to_json(transcript, exact=exact)
    return openai.request_to_json(transcript, exact=exact)


def messages_keeping(transcript: Transcript, kept: Callable[[Message], Any], *, exact: bool = True) -> list[Any]:
    """The transcript's messages in its own dialect, ``kept(message)`` standing for
    each message it returns something for (the message as it came, SPEC section 6,
    invariant 9) and the others built from the model (with ``exact``, what those still
    hold as read as the file's text: for bytes, not for a harness's dicts)."""
    build = anthropic.messages_to_json if transcript.dialect == "anthropic" else openai.messages_to_json
    out: list[Any] = []
    run: list[Message] = []
    for message in transcript.messages:
        original = kept(message)
        if original is None:
            run.append(message)
            continue
        out.extend(build(tuple(run), same_dialect=True, exact=exact))
        run.clear()
        out.append(original)
    out.extend(build(tuple(run), same_dialect=True, exact=exact))
    return out


def transcript_from_body(
    body: Mapping[str, Any], *, dialect: Dialect | None = None, source: Source = REQUEST_SOURCE, fmt: str = "request"
) -> Transcript:
    """A request body as a transcript."""
    if not isinstance(body, Mapping) or not isinstance(body.get("messages"), list):
        raise UnknownShape(Location(source.path, source.line), "a request body needs a 'messages' list")
    chosen = dialect or body_dialect(body)
    if chosen == "anthropic":
        return anthropic.request_from_json(dict(body), source, fmt)
    return openai.request_from_json(dict(body), source, fmt)
