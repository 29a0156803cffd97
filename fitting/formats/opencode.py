"""The "opencode" format: opencode's (sst/opencode) session storage, a folder
rather than a file. Under ``~/.local/share/opencode/storage/`` it keeps
``session/<projectID>/<sessionID>.json`` (a session's title and times),
``message/<sessionID>/<messageID>.json`` (each message's role, model and
tokens) and ``part/<messageID>/<partID>.json`` (the content: ``text``,
``reasoning``, ``tool`` with ``state.input`` and ``state.output``, ``file``,
``step-start``/``step-finish`` with the step's ``tokens``, ...). Ids sort in the
order they were made. Each session is a transcript, its messages rebuilt as
opencode's ``MessageV2.toModelMessages`` sends them: an assistant message is
one model message per step (``step-start``), each followed by the results of
its tool parts, and each ``step-finish``'s tokens are the measured size of
that step's request."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from .._frozen import frozen
from .._json import InputTexts, dumps, loads_or_lenient
from ..errors import EmptyTranscript, InvalidJson, Location, UnknownShape
from ..transcript import Message, Skipped, Source, ToolCall, Transcript, Usage
from ..wire import anthropic
from .base import Format, Input

NAME = "opencode"

COMPACTED_OUTPUT = "[Old tool result content cleared]"
"""What opencode sends for a tool output it compacted (``state.time.compacted``)."""
INTERRUPTED_OUTPUT = "[Tool execution was interrupted]"
"""What opencode sends for a tool part left pending or running."""
COMPACTION_TEXT = "What did we do so far?"
SUBTASK_TEXT = "The following tool was executed by the user"


# --------------------------------------------------------------------------
# Recognising the folders


def _is_storage(path: Path) -> bool:
    return (path / "message").is_dir() and (path / "part").is_dir()


@frozen
class _Selection:
    """A storage root and which of its sessions an input names (None: every one)."""

    root: Path
    sessions: frozenset[str] | None = None
    project: str | None = None


def _selection(path: Path) -> _Selection | None:
    """What a folder is, by its layout: a storage root (``message/`` and ``part/``
    in it), opencode's data folder holding ``storage/``, a session's message
    folder (``message/<sessionID>``) or a project's sessions
    (``session/<projectID>``)."""
    if _is_storage(path):
        return _Selection(path)
    if _is_storage(path / "storage"):
        return _Selection(path / "storage")
    parent = path.parent
    if parent.name == "message" and _is_storage(parent.parent):
        return _Selection(parent.parent, frozenset({path.name}))
    if parent.name == "session" and _is_storage(parent.parent):
        return _Selection(parent.parent, project=path.name)
    return None


def claims_directory(path: Path) -> bool:
    """Whether a folder is opencode storage, or a session or project folder inside it."""
    try:
        return path.is_dir() and _selection(path) is not None
    except OSError:
        return False


def sniff(head: bytes) -> bool:
    """opencode storage is a folder (``claims_directory``); no single file is an opencode input."""
    return False


# --------------------------------------------------------------------------
# Loading


@dataclass(slots=True)
class _Reader:
    """Reads the storage's JSON files, recording unreadable ones with ``skip_invalid``."""

    skip_invalid: bool
    skipped: list[Skipped] = field(default_factory=list)
    keep_text: bool = True
    input_texts: dict[str, str] = field(default_factory=dict)
    """A tool part's ``state.input`` as its file spells it, by call id, where that is not compact JSON
    (for ``fit``, which writes it back so: SPEC section 6, invariant 9)."""

    def read(self, path: Path) -> dict[str, Any] | None:
        try:
            data = path.read_bytes()
            value = loads_or_lenient(data)
        except orjson.JSONDecodeError as exc:
            if not self.skip_invalid:
                raise InvalidJson(Location(str(path), exc.lineno, exc.colno), f"invalid JSON: {exc.msg}") from None
            self.skipped.append(Skipped(Source(str(path), exc.lineno), f"invalid JSON: {exc.msg}"))
            return None
        if not isinstance(value, dict):
            if not self.skip_invalid:
                raise UnknownShape(Location(str(path), 1), "an opencode storage file holds one JSON object")
            self.skipped.append(Skipped(Source(str(path), 1), "not a JSON object"))
            return None
        if self.keep_text and value.get("type") == "tool" and isinstance(value.get("callID"), str):
            state = value.get("state")
            if isinstance(state, dict) and isinstance(state.get("input"), dict):
                spelled = InputTexts(data).find(dumps(state["input"]))
                if spelled:
                    self.input_texts[value["callID"]] = spelled
        return value

    def folder(self, path: Path) -> list[tuple[Path, dict[str, Any]]]:
        """The objects of a folder's ``*.json`` files, in id order (ids sort by creation)."""
        if not path.is_dir():
            return []
        out = []
        for file in sorted(path.glob("*.json")):
            value = self.read(file)
            if value is not None:
                out.append((file, value))
        return out


def _sessions(root: Path, selection: _Selection, reader: _Reader) -> list[tuple[str, dict[str, Any]]]:
    """The sessions to load, each with its info (empty when ``session/`` has no file for it), oldest first."""
    infos: dict[str, dict[str, Any]] = {}
    projects = [root / "session" / selection.project] if selection.project else sorted((root / "session").glob("*"))
    for project in projects:
        for file, info in reader.folder(project):
            infos[str(info.get("id") or file.stem)] = info
    if selection.project is not None:
        ids = set(infos)
    else:
        ids = {p.name for p in (root / "message").iterdir() if p.is_dir()} | set(infos)
    if selection.sessions is not None:
        ids &= selection.sessions
        ids |= {s for s in selection.sessions if (root / "message" / s).is_dir()}

    def created(sid: str) -> tuple[float, str]:
        time = infos.get(sid, {}).get("time")
        value = time.get("created") if isinstance(time, dict) else None
        return (float(value) if isinstance(value, (int, float)) else float("inf"), sid)

    return [(sid, infos.get(sid, {})) for sid in sorted(ids, key=created)]


def _object(obj: dict[str, Any], key: str) -> dict[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def _text(part: dict[str, Any]) -> str:
    value = part.get("text")
    return value if isinstance(value, str) else ""


def _file_block(part: dict[str, Any]) -> dict[str, Any]:
    """A user's file part as sent: an image or document from its data URL, else a note of it."""
    mime = str(part.get("mime") or "")
    url = part.get("url")
    name = str(part.get("filename") or "file")
    if isinstance(url, str) and url.startswith("data:") and "," in url:
        data = url.split(",", 1)[1]
        try:
            base64.b64decode(data[:64] + "=" * (-len(data[:64]) % 4), validate=False)
        except binascii.Error:
            data = ""
        if data:
            kind = "image" if mime.startswith("image/") else "document"
            return {"type": kind, "source": {"type": "base64", "media_type": mime, "data": data}}
    return {"type": "text", "text": f"[Attached {mime}: {name}]"}


def _tool_result(part: dict[str, Any]) -> tuple[str, bool]:
    """The result opencode sends for a tool part: its output, its error, or the interruption note."""
    state = _object(part, "state")
    status = state.get("status")
    if status == "completed":
        time = state.get("time")
        if isinstance(time, dict) and time.get("compacted"):
            return COMPACTED_OUTPUT, False
        output = state.get("output")
        return (output if isinstance(output, str) else dumps(output)), False
    if status == "error":
        metadata = _object(state, "metadata")
        if metadata.get("interrupted") is True and isinstance(metadata.get("output"), str):
            return metadata["output"], False
        error = state.get("error")
        return (error if isinstance(error, str) else dumps(error)), True
    return INTERRUPTED_OUTPUT, True


@dataclass(slots=True)
class _Session:
    """One session's messages as they are sent, and what was counted on the way."""

    path: str
    messages: list[Message] = field(default_factory=list)
    usage: list[Usage] = field(default_factory=list)
    skipped_kinds: dict[str, int] = field(default_factory=dict)
    errored: int = 0
    model: str = ""
    input_texts: dict[str, str] = field(default_factory=dict)

    def count(self, kind: str) -> None:
        self.skipped_kinds[kind] = self.skipped_kinds.get(kind, 0) + 1

    def add(self, obj: dict[str, Any], file: Path) -> None:
        message = anthropic.message_from_json(obj, Source(str(file)))
        if self.input_texts and message.tool_calls:
            content = tuple(
                replace(b, input_text=self.input_texts.get(b.id, "")) if isinstance(b, ToolCall) else b
                for b in message.content
            )
            message = replace(message, content=content)
        self.messages.append(message)

    def user(self, file: Path, parts: list[dict[str, Any]]) -> None:
        blocks: list[dict[str, Any]] = []
        for part in parts:
            kind = part.get("type")
            if kind == "text" and not part.get("ignored"):
                blocks.append({"type": "text", "text": _text(part)})
            elif kind == "file" and part.get("mime") not in ("text/plain", "application/x-directory"):
                blocks.append(_file_block(part))
            elif kind == "compaction":
                blocks.append({"type": "text", "text": COMPACTION_TEXT})
            elif kind == "subtask":
                blocks.append({"type": "text", "text": SUBTASK_TEXT})
            else:
                self.count(f"user {kind} part" if kind != "text" else "ignored text part")
        if blocks:
            self.add({"role": "user", "content": blocks}, file)

    def assistant(self, file: Path, info: dict[str, Any], parts: list[dict[str, Any]]) -> None:
        error = info.get("error")
        if isinstance(error, dict) and not (
            error.get("name") == "MessageAbortedError"
            and any(p.get("type") not in ("step-start", "reasoning") for p in parts)
        ):
            self.errored += 1
            return
        if isinstance(info.get("modelID"), str):
            self.model = info["modelID"]
        steps: list[list[dict[str, Any]]] = [[]]
        for part in parts:
            if part.get("type") == "step-start" and steps[-1]:
                steps.append([])
            steps[-1].append(part)
        for step in steps:
            self._step(file, step)
        if not any(p.get("type") == "step-finish" for p in parts):
            # A message without step parts records its tokens only on itself.
            self._measure(info.get("tokens"), self._last_assistant(), file)

    def _last_assistant(self) -> int | None:
        for i in range(len(self.messages) - 1, -1, -1):
            if self.messages[i].role == "assistant":
                return i
        return None

    def _step(self, file: Path, step: list[dict[str, Any]]) -> None:
        content: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        finish: dict[str, Any] | None = None
        for part in step:
            kind = part.get("type")
            if kind == "text" and _text(part):
                content.append({"type": "text", "text": _text(part)})
            elif kind == "reasoning" and _text(part):
                content.append({"type": "thinking", "thinking": _text(part)})
            elif kind == "tool" and isinstance(part.get("callID"), str):
                tool_input = _object(_object(part, "state"), "input")
                name = str(part.get("tool", ""))
                content.append({"type": "tool_use", "id": part["callID"], "name": name, "input": tool_input})
                output, is_error = _tool_result(part)
                result: dict[str, Any] = {"type": "tool_result", "tool_use_id": part["callID"], "content": output}
                if is_error:
                    result["is_error"] = True
                results.append(result)
            elif kind == "step-finish":
                finish = part
            elif kind != "step-start":
                self.count(f"{kind} part")
        if not content:
            return
        self.add({"role": "assistant", "content": content}, file)
        at = len(self.messages) - 1
        if results:
            self.add({"role": "user", "content": results}, file)
        if finish is not None:
            self._measure(finish.get("tokens"), at, file)

    def _measure(self, tokens: Any, at: int | None, file: Path) -> None:
        if not isinstance(tokens, dict) or at is None:
            return
        cache = _object(tokens, "cache")

        def number(obj: dict[str, Any], key: str) -> int:
            value = obj.get(key)
            return int(value) if isinstance(value, (int, float)) and value >= 0 else 0

        measured = Usage(
            at,
            number(tokens, "input"),
            number(cache, "write"),
            number(cache, "read"),
            Source(str(file)),
            number(tokens, "output") + number(tokens, "reasoning"),
        )
        if measured.total:
            self.usage.append(measured)


def _load_session(root: Path, sid: str, info: dict[str, Any], reader: _Reader) -> Transcript | None:
    folder = root / "message" / sid
    session = _Session(str(folder), input_texts=reader.input_texts)
    for file, message in reader.folder(folder):
        mid = str(message.get("id") or file.stem)
        parts = [p for _, p in reader.folder(root / "part" / mid)]
        role = message.get("role")
        if role == "user":
            session.user(file, parts)
        elif role == "assistant":
            session.assistant(file, message, parts)
        else:
            where = Location(str(file), 1)
            raise UnknownShape(where, f"unknown message role {role!r} (expected 'user' or 'assistant')")
    if not session.messages:
        return None
    title = info.get("title")
    name = f"session {sid}" + (f" ({title})" if isinstance(title, str) and title else "")
    if isinstance(info.get("parentID"), str):
        name += f", subagent of {info['parentID']}"
    notes = [
        "messages rebuilt as opencode sends them: one assistant message per step, then that step's tool results",
        "opencode does not store the system prompt or the tool definitions it sends",
    ]
    if session.errored:
        notes.append(f"{session.errored} assistant message(s) that ended in an error are left out, as opencode does")
    return Transcript(
        (),
        (),
        tuple(session.messages),
        Source(str(folder)),
        NAME,
        "anthropic",
        extra=dumps({"model": session.model}) if session.model else "",
        usage=tuple(session.usage),
        line_kinds=tuple(sorted(session.skipped_kinds.items())),
        notes=tuple(notes),
        name=name,
    )


def load(source: Input, *, skip_invalid: bool) -> tuple[Transcript, ...]:
    path = Path(source.path)
    selection = _selection(path) if source.data is None and path.is_dir() else None
    if selection is None:
        raise UnknownShape(
            Location(source.path),
            "opencode storage is a folder (storage/, or message/<session>) holding message/ and part/",
            hint="name the folder ~/.local/share/opencode/storage, not one of its files",
        )
    reader = _Reader(skip_invalid, keep_text=source.keep_text)
    transcripts = []
    for sid, info in _sessions(selection.root, selection, reader):
        t = _load_session(selection.root, sid, info, reader)
        if t is not None:
            transcripts.append(t)
    if not transcripts:
        raise EmptyTranscript(Location(source.path), "no opencode session with messages in this folder")
    if reader.skipped:
        transcripts[0] = replace(transcripts[0], skipped=tuple(reader.skipped))
    return tuple(transcripts)


FORMAT = Format(
    name=NAME,
    description="opencode session storage (a folder: session/, message/, part/), one transcript per session",
    sniff=sniff,
    load=load,
    directory=claims_directory,
    records_system=False,
)
