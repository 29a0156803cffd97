"""What keeping the file's spelling of unmodelled block parts costs the Claude Code reader
(``wire.spelling.spelled_blocks``, SPEC section 6, invariant 9), and the Codex reader (``spelled_parts`` and
``spelled_item``, for Responses items' unmodelled parts and items). Each line's blocks are looked for as
compact JSON in the line (a substring search); only a block not found so is walked. Loading is timed with
the function and with it replaced by one that returns the blocks as they are, in this process, over the
shared corpus's Claude Code sessions as they are, and over the same lines with every block carrying a
``cache_control`` key spelled with a space after its colons (the worst case: every block walked). The
Codex rollouts (one in the corpus, read 10 times a run) are timed as they are, with every reasoning item
made an unmodelled ``web_search_call`` item (its compact JSON found in the line), and with that item
spelled with ``1E+2`` (the worst case: every such item, the rollout's largest, walked). The OpenAI chat
logs (``openai_chat``: the corpus's tau-bench results and SWE-agent trajectory, ``spelled_chat_message``)
are timed as they are (indented; their messages carry no extra key, so none is walked), written again as
compact JSON (orjson), and with every message carrying a ``cache_control`` key spelled with spaces (the
worst case: every message walked).

    python benchmarks/bench_log_spelling.py          # best of 5
    python benchmarks/bench_log_spelling.py --quick  # best of 2
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
from common import ROOT, best_of

from windowfit.fitting.formats import claude_code, load_path, openai_chat
from windowfit.fitting.wire import responses, spelling

CORPUS = ROOT.parent / "shared" / "corpus" / "transcripts" / "claude_code"
CODEX = CORPUS.parent / "codex"
CHAT = CORPUS.parent / "openai_chat"


def _as_spelled(message: Any, *args: Any, **kwargs: Any) -> Any:
    return message


def _walked(paths: list[Path]) -> str:
    """How many messages of ``paths`` are walked (their parts not all found as compact JSON), of how many."""
    found = spelling._chat_as_read
    counts = [0, 0]

    def counted(message: Any, text: bytes) -> bool:
        counts[0] += 1
        as_read = found(message, text)
        counts[1] += not as_read
        return as_read

    spelling._chat_as_read = counted  # type: ignore[assignment]
    try:
        [load_path(p, fmt="openai_chat") for p in paths]
    finally:
        spelling._chat_as_read = found  # type: ignore[assignment]
    return f"{counts[1]:,} of {counts[0]:,} messages walked"


def _chat(repeat: int) -> None:
    files = sorted(p for p in CHAT.iterdir() if p.suffix in (".json", ".traj"))
    if not files:
        print(f"no OpenAI chat logs in {CHAT}: nothing to time")
        return
    spelled = openai_chat.spelled_chat_message
    with tempfile.TemporaryDirectory() as folder:
        compact = []
        for f in files:
            copy = Path(folder) / f.name
            value = orjson.loads(f.read_bytes())  # compact, one item (or member) a line: a document still
            if isinstance(value, list):
                copy.write_bytes(b"[\n" + b",\n".join(orjson.dumps(v) for v in value) + b"\n]\n")
            else:
                members = (orjson.dumps(k) + b":" + orjson.dumps(v) for k, v in value.items())
                copy.write_bytes(b"{\n" + b",\n".join(members) + b"\n}\n")
            compact.append(copy)
        marked = []
        for f in files:
            copy = Path(folder) / f"marked-{f.name}"
            copy.write_bytes(f.read_bytes().replace(b'"role": ', b'"cache_control": {"type": "ephemeral"}, "role": '))
            marked.append(copy)
        for label, paths in (
            ("the corpus's logs as they are (indented)", files),
            ("the same, compact", compact),
            ("every message with cache_control, spaced", marked),
        ):
            runs = paths * 3
            [load_path(p, fmt="openai_chat") for p in paths]  # warm
            openai_chat.spelled_chat_message = _as_spelled  # type: ignore[assignment]
            bare = best_of(repeat, lambda: [load_path(p, fmt="openai_chat") for p in runs])  # noqa: B023
            openai_chat.spelled_chat_message = spelled
            kept = best_of(repeat, lambda: [load_path(p, fmt="openai_chat") for p in runs])  # noqa: B023
            size = sum(p.stat().st_size for p in paths) / 1e6
            walked = _walked(paths)
            print(f"OpenAI chat, {label}: {len(paths)} file(s), {size:.2f} MB, read 3 times, {walked}")
            print(f"  load, messages as they are    {bare * 1e3:8.1f} ms  1.00")
            print(f"  load, spelling kept           {kept * 1e3:8.1f} ms  {kept / bare:.2f}")


def _as_they_are(blocks: Any, text: Any, *path: Any) -> Any:
    return blocks


def _load(paths: list[Path]) -> object:
    return [load_path(p, fmt="claude_code", skip_invalid=True) for p in paths]


def _as_read(block: Any, text: Any, *path: Any) -> Any:
    return block


def _codex(repeat: int) -> None:
    files = sorted(CODEX.glob("*.jsonl"))
    if not files:
        print(f"no Codex rollouts in {CODEX}: nothing to time")
        return
    parts, item = responses.spelled_parts, responses.spelled_item
    reasoning = b'"payload":{"type":"reasoning"'
    with tempfile.TemporaryDirectory() as folder:
        cases = [("the corpus's rollouts as they are", files)]
        for label, spelled in (
            ("every reasoning item an unmodelled item, compact", b'"payload":{"type":"web_search_call","n":100'),
            ("every reasoning item an unmodelled item, 1E+2", b'"payload":{"type":"web_search_call","n":1E+2'),
        ):
            copies = []
            for f in files:
                copy = Path(folder) / f"{len(cases)}-{f.name}"
                copy.write_bytes(f.read_bytes().replace(reasoning, spelled + b',"was":"reasoning"'))
                copies.append(copy)
            cases.append((label, copies))
        for label, paths in cases:
            runs = paths * 10
            [load_path(p, fmt="codex") for p in paths]  # warm: the first load of a process imports and caches
            responses.spelled_parts, responses.spelled_item = _as_they_are, _as_read  # type: ignore[assignment]
            bare = best_of(repeat, lambda: [load_path(p, fmt="codex") for p in runs])  # noqa: B023
            responses.spelled_parts, responses.spelled_item = parts, item  # type: ignore[assignment]
            kept = best_of(repeat, lambda: [load_path(p, fmt="codex") for p in runs])  # noqa: B023
            size = sum(p.stat().st_size for p in paths) / 1e6
            print(f"Codex, {label}: {len(paths)} file(s), {size:.2f} MB, read 10 times")
            print(f"  load, parts as they are       {bare * 1e3:8.1f} ms  1.00")
            print(f"  load, spelling kept           {kept * 1e3:8.1f} ms  {kept / bare:.2f}")


def main() -> None:
    repeat = 2 if "--quick" in sys.argv else 5
    _chat(repeat)
    _codex(repeat)
    files = sorted(CORPUS.glob("*.jsonl"))
    if not files:
        print(f"no Claude Code sessions in {CORPUS}: nothing to time")
        return
    spelled = claude_code.spelled_blocks
    with tempfile.TemporaryDirectory() as folder:
        odd = []
        for f in files:
            copy = Path(folder) / f.name
            copy.write_bytes(f.read_bytes().replace(b'{"type":', b'{"cache_control": {"type": "ephemeral"},"type":'))
            odd.append(copy)
        for label, paths in (("the corpus's sessions as they are", files), ("every block with cache_control", odd)):
            claude_code.spelled_blocks = _as_they_are  # type: ignore[assignment]
            bare = best_of(repeat, lambda: _load(paths))  # noqa: B023
            claude_code.spelled_blocks = spelled
            kept = best_of(repeat, lambda: _load(paths))  # noqa: B023
            size = sum(p.stat().st_size for p in paths) / 1e6
            print(f"{label}: {len(paths)} files, {size:.1f} MB")
            print(f"  load, blocks as they are      {bare * 1e3:8.1f} ms  1.00")
            print(f"  load, spelling kept           {kept * 1e3:8.1f} ms  {kept / bare:.2f}")


if __name__ == "__main__":
    main()
