"""Peak memory of every command as a ratio to the transcript it reads (issue 8: at most 3x).

Each command runs in a child process of its own; its peak resident set size comes from ``os.wait4`` (the
kernel's ``ru_maxrss`` of that child alone). A baseline child that only imports windowfit's CLI is measured the
same way, so the table shows both the peak over the file size and the part above the baseline over the file
size. ``--profile COMMAND CASE`` runs one command in this process under tracemalloc instead and lists where the
memory at its peak was allocated.

    python benchmarks/bench_memory.py            # ~40 MB files
    python benchmarks/bench_memory.py --quick    # ~10 MB files
    python benchmarks/bench_memory.py --profile audit tiny
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from common import OUT, ROOT, ensure_generated

sys.path.insert(0, str(ROOT / "sample_transcripts"))
from prose import ascii_heavy_text, markdown_doc, python_module

VERSION = 1
RU = "Съешь же ещё этих мягких французских булок, да выпей чаю. "
JA = "東京は晴れ。明日の会議は十時からです。資料を確認してください。"


def _result_text(rng: random.Random, size: int) -> str:
    kind = rng.randrange(4)
    if kind == 0:
        return python_module(rng, size)
    if kind == 1:
        return markdown_doc(rng, size)
    if kind == 2:
        return (RU * (size // len(RU) + 1))[:size]
    return ascii_heavy_text(rng, size // 2) + (JA * (size // len(JA) // 2 + 1))[: size // 2]


def _rounds(rng: random.Random, total: int) -> list[tuple[str, str, dict[str, object], str]]:
    """(call id, tool, input, result) until ``total`` characters of results."""
    out, size, k = [], 0, 0
    while size < total:
        n = rng.choice((200, 2_000, 20_000, 200_000))
        out.append(
            (f"call_{k}", rng.choice(("Read", "Bash", "Grep")), {"path": f"src/m{k}.py", "n": k}, _result_text(rng, n))
        )
        size += n
        k += 1
    return out


def write_single_line(out: BinaryIO, size: int) -> None:
    """One request body on one line: a system prompt and tool rounds, results 200 B to 200 KB."""
    rng = random.Random(1)
    messages: list[object] = [{"role": "user", "content": "Port the billing module."}]
    for call_id, tool, tool_input, result in _rounds(rng, size):
        messages.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": tool, "input": tool_input}]}
        )
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": result}]}
        )
    messages.append({"role": "assistant", "content": "Done."})
    body = {"model": "claude-sonnet-4-5", "max_tokens": 4096, "system": "You are terse.", "messages": messages}
    out.write(json.dumps(body, ensure_ascii=False).encode() + b"\n")


def write_tiny_lines(out: BinaryIO, size: int) -> None:
    """Messages JSONL of short alternating user/assistant lines (about 70 bytes each)."""
    line, i, written = "The quick brown fox. Съешь же ещё. 東京は晴れ。", 0, 0
    while written < size:
        role = "user" if i % 2 == 0 else "assistant"
        data = (json.dumps({"role": role, "content": f"{i} {line}"}, ensure_ascii=False) + "\n").encode()
        out.write(data)
        written += len(data)
        i += 1


def write_claude_code(out: BinaryIO, size: int) -> None:
    """A Claude Code session: envelopes with uuids, tool_use lines, tool_result lines with toolUseResult copies."""
    rng = random.Random(2)
    parent = None

    def line(uuid: str, kind: str, message: dict[str, object], **extra: object) -> None:
        nonlocal parent
        envelope = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/srv/app",
            "sessionId": "0ccf1a04",
            "version": "2.0.14",
            "type": kind,
            "message": message,
            "uuid": uuid,
            "timestamp": "2026-01-01T00:00:00.000Z",
            **extra,
        }
        out.write(json.dumps(envelope, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
        parent = uuid

    line("u0", "user", {"role": "user", "content": "Port the billing module."})
    usage = {
        "input_tokens": 3,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 1000,
        "output_tokens": 50,
    }
    for k, (call_id, tool, tool_input, result) in enumerate(_rounds(rng, size // 2)):
        call = {"type": "tool_use", "id": call_id, "name": tool, "input": tool_input}
        line(
            f"a{k}",
            "assistant",
            {"id": f"msg_{k}", "role": "assistant", "model": "claude-sonnet-4-5", "content": [call], "usage": usage},
        )
        answer = {"type": "tool_result", "tool_use_id": call_id, "content": result}
        line(f"r{k}", "user", {"role": "user", "content": [answer]}, toolUseResult={"stdout": result, "stderr": ""})
    line(
        "z",
        "assistant",
        {
            "id": "msg_z",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "Done."}],
            "usage": usage,
        },
    )


CASES: dict[str, tuple[str, Callable[[BinaryIO, int], None]]] = {
    "single-line": ("(a) one request body on a single line", write_single_line),
    "tiny": ("(b) very many tiny lines", write_tiny_lines),
    "claude-code": ("(c) a big Claude Code session", write_claude_code),
}


def commands(path: Path, out: Path) -> dict[str, list[str]]:
    budget = ["--budget", "100000"]
    return {
        "report": ["report", str(path)],
        "check": ["check", str(path), *budget],
        "fit": ["fit", str(path), *budget, "-o", str(out)],
        "replay": ["replay", str(path), *budget],
        "audit": ["audit", str(path)],
        "audit -t o200k_base": ["audit", str(path), "-t", "o200k_base"],
    }


ENTRY = "import sys; from windowfit.cli.fast import main; sys.argv = ['windowfit', *sys.argv[1:]]; main()"
BASELINE = "import windowfit.cli.app"


def peak_kb(args: list[str]) -> tuple[int, int]:
    """The peak resident set of a child ``python -c ENTRY args`` (KB), and its exit status."""
    proc = subprocess.Popen([sys.executable, "-c", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.stderr is not None:
        proc.stderr.close()
    return usage.ru_maxrss, proc.returncode


def generated(case: str, size: int) -> Path:
    """The file of ``case``, written by this script in a child of its own: a child's peak resident set starts
    at its parent's (the kernel keeps the forking process's high-water mark across exec), so the measuring
    process must stay small."""
    path = OUT / f"memory_{case}_{size}.jsonl"
    subprocess.run([sys.executable, __file__, "--generate", case, "--size", str(size)], check=True)
    return path


def measure(size: int, only: list[str]) -> None:
    paths = {case: generated(case, size) for case in CASES}
    base, _ = peak_kb([BASELINE])
    print(f"baseline (python -c '{BASELINE}'): {base:,} KB")
    for name in ("cl100k_base", "o200k_base"):  # audit's fixed cost: a vocabulary, whatever the file
        loaded, _ = peak_kb([f"{BASELINE}; from windowfit.fitting.tokenizers import load_tokenizer as f; f({name!r})"])
        print(f"baseline + load_tokenizer({name!r}): {loaded:,} KB")
    print()
    print("| file | command | peak RSS | x file | (peak - baseline) / file | exit | <= 3x |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
    for case, (label, _) in CASES.items():
        path = paths[case]
        file_kb = path.stat().st_size / 1024
        with tempfile.TemporaryDirectory() as tmp:
            for name, args in commands(path, Path(tmp) / "fitted.json").items():
                if only and name.split()[0] not in only:
                    continue
                kb, code = peak_kb([ENTRY, *args])
                print(
                    f"| {label}, {path.stat().st_size / 1e6:.1f} MB | `{name}` | {kb:,} KB | {kb / file_kb:.1f} | "
                    f"{(kb - base) / file_kb:.1f} | {code} | {'yes' if kb <= 3 * file_kb else 'no'} |",
                    flush=True,
                )


def profile(command: str, case: str, size: int) -> None:
    from windowfit.cli.app import main

    label, write = CASES[case]
    path = ensure_generated(f"memory_{case}_{size}.jsonl", VERSION, lambda f: write(f, size))
    with tempfile.TemporaryDirectory() as tmp:
        args = commands(path, Path(tmp) / "fitted.json")[command]
        tracemalloc.start(12)
        sys.argv = ["windowfit", *args]
        held: list[tracemalloc.Snapshot] = []
        done = threading.Event()

        def watch() -> None:  # a snapshot whenever the traced memory grew by a tenth: the last is near the peak
            best = 0
            while not done.wait(0.05):
                current = tracemalloc.get_traced_memory()[0]
                if current > best * 1.1:
                    best = current
                    held[:] = [tracemalloc.take_snapshot()]

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        with contextlib.suppress(SystemExit):
            main()
        done.set()
        watcher.join()
        current, peak = tracemalloc.get_traced_memory()
        snapshot = held[0] if held else tracemalloc.take_snapshot()
        tracemalloc.stop()
    sys.stdout = sys.__stdout__
    print(f"{command} on {label}: traced peak {peak / 1e6:.1f} MB, still held {current / 1e6:.1f} MB", file=sys.stderr)
    total = sum(stat.size for stat in snapshot.statistics("filename"))
    print(f"held at the last snapshot near the peak: {total / 1e6:.1f} MB", file=sys.stderr)
    for stat in snapshot.statistics("traceback")[:10]:
        print(f"{stat.size / 1e6:8.1f} MB  {stat.count:9,} blocks", file=sys.stderr)
        for frame in stat.traceback.format()[-10:]:
            print("    " + frame, file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="~10 MB files instead of ~40 MB")
    parser.add_argument("--size", type=int, help="bytes per file (default 40,000,000)")
    parser.add_argument("--only", nargs="*", default=[], help="commands to run (report, check, fit, replay, audit)")
    parser.add_argument(
        "--profile",
        nargs=2,
        metavar=("COMMAND", "CASE"),
        help=f"one command on one case ({', '.join(CASES)}) under tracemalloc",
    )
    parser.add_argument("--generate", choices=sorted(CASES), help=argparse.SUPPRESS)
    options = parser.parse_args()
    size = options.size or (10_000_000 if options.quick else 40_000_000)
    if options.generate:
        write = CASES[options.generate][1]
        ensure_generated(f"memory_{options.generate}_{size}.jsonl", VERSION, lambda f: write(f, size))
    elif options.profile:
        profile(options.profile[0], options.profile[1], size)
    else:
        measure(size, options.only)


if __name__ == "__main__":
    main()
