"""The "inspect_ai" format: Inspect AI eval logs (UK AISI's ``inspect_ai``),
either the ``.json`` log (one document: ``version``, ``status``, ``eval``, ...,
``samples``) or the ``.eval`` log (a zip: ``header.json``, ``samples/*.json``,
``_journal/``). Each sample's ``messages`` is a transcript named after its id
and epoch. Inspect's messages are Chat Completions-like (``system``, ``user``,
``assistant`` with ``tool_calls`` whose ``arguments`` is an object, ``tool``
with ``function`` and ``error``); they are rewritten to that shape and read by
``wire.openai``. Measured usage comes from the sample's ``model`` events (the
request's ``input`` and the response's ``usage``); the tool definitions from
the last of them."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import orjson

from .._json import InputTexts, check_depth, dumps, list_field, loads_or_lenient
from ..errors import EmptyTranscript, InvalidJson, Location, UnknownShape
from ..transcript import Message, Source, ToolDef, Transcript, Usage
from ..wire import openai
from ..wire.anthropic import tool_from_json
from ._sniff import scan_head
from .base import Format, Input

NAME = "inspect_ai"

_ZIP = b"PK\x03\x04"
_MARKS = (b"_journal/", b"header.json", b"samples/")


def sniff(head: bytes) -> bool:
    if head.startswith(_ZIP):  # a .eval log: its first member names are in the first bytes
        return any(mark in head[:4096] for mark in _MARKS)
    shape = scan_head(head)
    return shape.opening == "{" and shape.keys[:1] == ("version",) and "eval" in shape.keys


# --------------------------------------------------------------------------
# Messages


def _part(part: Any) -> Any:
    """An Inspect content part as a Chat Completions part (others kept as they are)."""
    if isinstance(part, dict) and part.get("type") == "image" and isinstance(part.get("image"), str):
        return {"type": "image_url", "image_url": {"url": part["image"]}}
    return part


def _chat_message(obj: dict[str, Any], inputs: InputTexts | None = None) -> dict[str, Any]:
    """An Inspect ``ChatMessage`` in the Chat Completions shape; Inspect's own
    keys (``id``, ``source``, ``metadata``, ``model``, ...) are not part of a request.
    ``inputs``: the log's text, where each call's ``arguments`` object is found as the file
    spelled it (written back so, SPEC section 6, invariant 9)."""
    role = obj.get("role")
    content = obj.get("content")
    reasoning: list[str] = []
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "reasoning" and isinstance(part.get("reasoning"), str):
                reasoning.append(part["reasoning"])
            else:
                parts.append(_part(part))
        content = parts
    out: dict[str, Any] = {"role": role, "content": content}
    if role == "assistant":
        calls = []
        for call in obj.get("tool_calls") or ():
            if not isinstance(call, dict):
                calls.append(call)
                continue
            args = call.get("arguments", {})
            calls.append(
                {
                    "id": call.get("id"),
                    "type": "function",
                    "function": {
                        "name": call.get("function", ""),
                        "arguments": args if isinstance(args, str) else _arguments(args, inputs),
                    },
                }
            )
        if calls:
            out["tool_calls"] = calls
        if reasoning:
            out["reasoning_content"] = "\n\n".join(reasoning)
    elif role == "tool":
        error = obj.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            out["content"] = f"Error: {error['message']}"  # what Inspect sends in its place
        out["tool_call_id"] = obj.get("tool_call_id")
        if isinstance(obj.get("function"), str):
            out["name"] = obj["function"]
    return out


def _arguments(args: Any, inputs: InputTexts | None) -> str:
    """A call's ``arguments`` object as a JSON string: the file's own text of it where found, else compact."""
    compact = dumps(args)
    return (inputs.find(compact) or compact) if inputs is not None else compact


def _message(obj: Any, source: Source, inputs: InputTexts | None = None) -> Message:
    if not isinstance(obj, dict):
        raise UnknownShape(Location(source.path, source.line), "a sample message must be an object")
    message = openai.message_from_json(_chat_message(obj, inputs), source)
    if message.role == "tool" and obj.get("error"):
        message = replace(message, content=tuple(replace(r, is_error=True) for r in message.tool_results))
        if not message.tool_results:
            raise UnknownShape(Location(source.path, source.line), "a tool message holds no result")
    return message


def _leading_system(messages: list[Any]) -> int:
    n = 0
    while n < len(messages) and isinstance(messages[n], dict) and messages[n].get("role") == "system":
        n += 1
    return n


def _events(sample: dict[str, Any]) -> list[Any]:
    events = sample.get("events")
    if not isinstance(events, list):
        transcript = sample.get("transcript")  # logs before Inspect 0.3.50: sample.transcript.events
        events = transcript.get("events") if isinstance(transcript, dict) else None
    return events if isinstance(events, list) else []


def _model_input(event: dict[str, Any], pool: Any) -> list[Any] | None:
    """A model event's input messages: ``input``, or (Inspect 0.3.1xx on) ``input_refs``,
    ``[start, end)`` ranges into the sample's message pool ``events_data.messages``."""
    given = event.get("input")
    refs = event.get("input_refs")
    if given or not isinstance(refs, list):
        return given if isinstance(given, list) else None
    if not isinstance(pool, list):
        return None
    out: list[Any] = []
    for ref in refs:
        if not (isinstance(ref, list) and len(ref) == 2 and all(isinstance(i, int) for i in ref)):
            return None
        out.extend(pool[ref[0] : ref[1]])
    return out


def _count(usage: dict[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) else 0


def sample_transcript(sample: Any, source: Source, inputs: InputTexts | None = None) -> Transcript:
    """One sample of an eval log as a transcript; ``inputs``: the text it was read from (see ``_chat_message``)."""
    where = Location(source.path, source.line)
    if not isinstance(sample, dict) or not isinstance(sample.get("messages"), list):
        raise UnknownShape(where, "an eval sample needs a 'messages' list")
    raw = sample["messages"]
    t = openai.transcript_from_messages([_message(m, source, inputs) for m in raw], source=source, fmt=NAME)
    usage: list[Usage] = []
    tools: tuple[ToolDef, ...] = ()
    data = sample.get("events_data")
    pool = data.get("messages") if isinstance(data, dict) else None
    for event in _events(sample):
        if not isinstance(event, dict) or event.get("event") != "model":
            continue
        given = _model_input(event, pool)
        output = event.get("output")
        measured = output.get("usage") if isinstance(output, dict) else None
        if isinstance(event.get("tools"), list):
            tools = tuple(
                tool_from_json({"type": "function", "function": tool}, where)
                for tool in event["tools"]
                if isinstance(tool, dict)
            )
        if isinstance(given, list) and isinstance(measured, dict):
            before = len(given) - _leading_system(given)
            if 0 < before <= len(t.messages):
                read = _count(measured, "input_tokens_cache_read")
                written = _count(measured, "input_tokens_cache_write")
                # Inspect's input_tokens include the cached part for OpenAI, not for Anthropic:
                # the uncached input is what is left once the cache counts are taken out.
                uncached = max(_count(measured, "input_tokens") - read - written, 0)
                if _count(measured, "input_tokens") < read + written:
                    uncached = _count(measured, "input_tokens")
                usage.append(Usage(before, uncached, written, read, source))
    sample_id = sample.get("id")
    epoch = sample.get("epoch")
    name = f"sample {sample_id}" + (f" epoch {epoch}" if epoch is not None else "")
    notes = ["each sample of the eval log is a transcript of its own"]
    if tools:
        notes.append("tool definitions are those of the sample's last model call")
    return replace(t, name=name, usage=tuple(usage), tools=tools, notes=tuple(notes))


# --------------------------------------------------------------------------
# Loading


def _json(data: bytes, path: str) -> Any:
    try:
        value = loads_or_lenient(data)
    except orjson.JSONDecodeError as exc:
        raise InvalidJson(Location(path), f"invalid JSON: {exc}") from None
    return check_depth(value, Location(path), data)


_ZSTD = 93
"""The zip compression method of zstd: Inspect AI writes ``.eval`` members with
it (older releases used deflate). ``zipfile`` reads it from Python 3.14; before
that, windowfit decompresses it with ``zstandard`` when installed (the
``inspect`` extra)."""


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, data: bytes, path: str) -> bytes:
    try:
        return archive.read(info)
    except NotImplementedError:
        if info.compress_type != _ZSTD:
            raise UnknownShape(
                Location(f"{path}:{info.filename}"),
                f"the .eval member is compressed with zip method {info.compress_type}, which windowfit cannot read",
            ) from None
    try:
        import zstandard  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise UnknownShape(
            Location(f"{path}:{info.filename}"),
            "this Inspect .eval log is compressed with zstd, which this Python's zipfile cannot read",
            hint="pip install zstandard (windowfit's inspect extra: pip install '.[inspect]'), use Python 3.14+, "
            "or convert it: inspect log convert --to json",
        ) from None
    # The member's bytes follow its local header: 30 fixed bytes, then its name and extra field.
    start = info.header_offset
    name_len = int.from_bytes(data[start + 26 : start + 28], "little")
    extra_len = int.from_bytes(data[start + 28 : start + 30], "little")
    begin = start + 30 + name_len + extra_len
    raw = data[begin : begin + info.compress_size]
    out: bytes = zstandard.ZstdDecompressor().decompress(raw, max_output_size=info.file_size)
    return out


def _inputs(source: Input, text: bytes) -> InputTexts | None:
    """Where ``fit`` finds the calls' ``arguments`` as spelled (None for commands that never write)."""
    return InputTexts(text, "arguments") if source.keep_text and b'"arguments"' in text else None


def _zip_samples(source: Input) -> Iterator[tuple[Any, InputTexts | None]]:
    data = source.read_all()
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise UnknownShape(
            Location(source.path), f"an Inspect .eval log is a zip archive, and this one is broken: {exc}"
        ) from None
    with archive:
        infos = sorted(
            (i for i in archive.infolist() if i.filename.startswith("samples/") and i.filename.endswith(".json")),
            key=lambda i: i.filename,
        )
        for info in infos:
            text = _member(archive, info, data, source.path)
            yield _json(text, f"{source.path}:{info.filename}"), _inputs(source, text)


def load(source: Input, *, skip_invalid: bool) -> tuple[Transcript, ...]:
    transcripts: list[Transcript] = []
    if source.head(4).startswith(_ZIP):
        for sample, inputs in _zip_samples(source):
            transcripts.append(sample_transcript(sample, Source(source.path), inputs))
    else:
        data = source.read_all()
        log = _json(data, source.path)
        inputs = _inputs(source, data)
        if not isinstance(log, dict) or "eval" not in log:
            raise UnknownShape(Location(source.path, 1), "an Inspect eval log is an object with 'version' and 'eval'")
        for sample in list_field(log, "samples", Location(source.path), "an eval log's 'samples'"):
            transcripts.append(sample_transcript(sample, Source(source.path), inputs))
    if not transcripts:
        raise EmptyTranscript(
            Location(source.path), "the eval log holds no samples", hint="was it written with samples?"
        )
    return tuple(transcripts)


FORMAT = Format(
    name=NAME,
    description="Inspect AI eval logs (.json, or the .eval zip): each sample's messages a transcript",
    sniff=sniff,
    load=load,
)
