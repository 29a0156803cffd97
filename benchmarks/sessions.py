"""A folder of real-shaped Claude Code sessions (``~/.claude/projects/<project>/<session>.jsonl``): a user
prompt, then rounds of an assistant message split into one line per block (thinking, text, tool_use) sharing
a message id and usage, and the user line carrying the tool results; English code, Russian and Japanese prose.
Shared by bench_folder.py and bench_ccusage.py."""

from __future__ import annotations

import argparse
import random
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from sample_transcripts import prose

GENERATOR_VERSION = 1
ROUNDS = (20, 200)
"""Tool rounds per session: 200 sessions come to about 300 MB, the size of the folder issue 15 measured."""


def _line(kind: str, session: str, parent: str | None, stamp: str, **rest: Any) -> tuple[str, bytes]:
    me = str(uuid.UUID(int=random.getrandbits(128), version=4))
    record = {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/project",
        "sessionId": session,
        "version": "2.1.16",
        "gitBranch": "main",
        "type": kind,
        "uuid": me,
        "timestamp": stamp,
        **rest,
    }
    return me, orjson.dumps(record) + b"\n"


def write_session(path: Path, rng: random.Random, rounds: int, *, defects: bool = False) -> None:
    """A session of ``rounds`` tool rounds into ``path``. With ``defects``, the shape of real main sessions, all
    of which the one pass of ``report``'s fold gives up on (``fitting/ccfold.py``): every 40th round a retried
    reply (the first try, thinking, text and a call, left on a branch), every 50th a reply whose calls go
    unanswered (the user writes instead), a broken link at the third round (a parent not in the file, so the
    first two are left out) and four subagent trees on the sidechain (a prompt and a reply each). Without it,
    the same session as before (the defects draw from a random generator of their own)."""
    random.seed(rng.random())
    extra = random.Random(rounds)
    sidechains = {rounds * k // 5 for k in range(1, 5)} if defects else set()
    session = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    makers = (prose.python_module, prose.russian_prose, prose.japanese_doc)
    lines: list[bytes] = []
    seconds = 0

    def stamp() -> str:
        nonlocal seconds
        seconds += rng.randint(1, 20)
        day, hour, minute = 1 + seconds // 86400 % 28, seconds // 3600 % 24, seconds // 60 % 60
        return f"2026-11-{day:02d}T{hour:02d}:{minute:02d}:{seconds % 60:02d}.000Z"

    parent, line = _line(
        "user", session, None, stamp(), message={"role": "user", "content": prose.english_sentence(rng)}
    )
    lines.append(line)
    context = 12_000
    for r in range(rounds):
        if defects and r == 2:
            parent = str(uuid.UUID(int=extra.getrandbits(128), version=4))  # a broken link: not in the file
        if defects and r % 40 == 20:  # a first try of the reply, left on a branch
            tried = parent
            for block in (
                {"type": "thinking", "thinking": prose.english_sentence(extra), "signature": "c2ln"},
                {"type": "text", "text": prose.english_sentence(extra)},
                {"type": "tool_use", "id": f"toolu_b{r:015x}", "name": "Grep", "input": {"pattern": "def "}},
            ):
                message = {"id": f"msg_b{r:015x}", "role": "assistant", "content": [block], "usage": {}}
                tried, line = _line("assistant", session, tried, stamp(), message=message)
                lines.append(line)
        message_id = f"msg_{rng.getrandbits(64):016x}"
        request = f"req_{rng.getrandbits(64):016x}"
        calls = [f"toolu_{rng.getrandbits(64):016x}" for _ in range(rng.randint(1, 2))]
        output = rng.randint(50, 800)
        usage = {
            "input_tokens": rng.randint(1, 10),
            "cache_creation_input_tokens": rng.randint(100, 4000),
            "cache_read_input_tokens": context,
            "output_tokens": output,
            "service_tier": "standard",
        }
        blocks: list[dict[str, Any]] = [
            {"type": "thinking", "thinking": prose.english_sentence(rng), "signature": "c2ln"},
            {"type": "text", "text": prose.english_sentence(rng)},
        ]
        blocks += [
            {"type": "tool_use", "id": c, "name": "Read", "input": {"file_path": f"/home/dev/project/f{r}_{i}.py"}}
            for i, c in enumerate(calls)
        ]
        for block in blocks:
            message = {
                "model": "claude-sonnet-4-5-20250929",
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            }
            parent, line = _line("assistant", session, parent, stamp(), message=message, requestId=request)
            lines.append(line)
        if defects and r % 50 == 35:  # the calls go unanswered: the user writes instead
            parent, line = _line(
                "user", session, parent, stamp(), message={"role": "user", "content": prose.english_sentence(extra)}
            )
            lines.append(line)
            continue
        results = []
        for c in calls:
            body = prose.numbered(rng.choice(makers)(rng, rng.randint(1000, 6000)))
            results.append({"tool_use_id": c, "type": "tool_result", "content": body})
            context += len(body) // 3
        parent, line = _line(
            "user", session, parent, stamp(), message={"role": "user", "content": results}, toolUseResult={}
        )
        lines.append(line)
        if r in sidechains:  # a subagent's tree on the sidechain, beside the main chain
            agent = f"a{r:06x}"
            prompt = {"role": "user", "content": prose.english_sentence(extra)}
            side, line = _line("user", session, None, stamp(), message=prompt, isSidechain=True, agentId=agent)
            lines.append(line)
            for block in (
                {"type": "thinking", "thinking": prose.english_sentence(extra), "signature": "c2ln"},
                {"type": "text", "text": prose.english_sentence(extra)},
            ):
                message = {"id": f"msg_s{r:015x}", "role": "assistant", "content": [block], "usage": usage}
                side, line = _line(
                    "assistant", session, side, stamp(), message=message, isSidechain=True, agentId=agent
                )
                lines.append(line)
    path.write_bytes(b"".join(lines))


def ensure_folder(root: Path, sessions: int, *, seed: int = 15, rounds: tuple[int, int] = (10, 120)) -> Path:
    """``root/projects/-home-dev-project-N/<session>.jsonl``, ``sessions`` files, written once per version."""
    marker = root / f".complete-{GENERATOR_VERSION}-{sessions}-{seed}-{rounds[0]}-{rounds[1]}"
    if marker.exists():
        return root / "projects"
    rng = random.Random(seed)
    for i in range(sessions):
        project = root / "projects" / f"-home-dev-project-{i % 7}"
        project.mkdir(parents=True, exist_ok=True)
        write_session(project / f"{i:04d}-{rng.getrandbits(32):08x}.jsonl", rng, rng.randint(*rounds))
    marker.touch()
    return root / "projects"


def folder_parser(description: str) -> argparse.ArgumentParser:
    """The options every folder benchmark takes: ``--quick``, ``--sessions``, ``--repeat``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="40 sessions, best of 1")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    return parser


@dataclass(frozen=True)
class Folder:
    """The generated folder of Claude Code sessions the options name, and how often to time each run."""

    root: Path
    """The folder holding ``projects/`` (a ``~/.claude``, for ``CLAUDE_CONFIG_DIR``)."""
    folder: Path
    """``root/projects``: what the commands are pointed at."""
    files: list[Path]
    size: int
    repeat: int


def benchmark_folder(options: argparse.Namespace, out: Path) -> Folder:
    """``folder_parser``'s options as a folder under ``out``, written once (``ensure_folder``)."""
    sessions, repeat = (40, 1) if options.quick else (options.sessions, options.repeat)
    root = out / f"folder-{sessions}-{ROUNDS[1]}"
    folder = ensure_folder(root, sessions, rounds=ROUNDS)
    files = sorted(folder.rglob("*.jsonl"))
    return Folder(root, folder, files, sum(f.stat().st_size for f in files), repeat)
