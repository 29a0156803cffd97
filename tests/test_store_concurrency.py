"""Eight processes fitting into one store and fetching from it at once, on each backend: every fit succeeds,
nothing is lost (every handle any worker's stubs name is in the store, and its pages give back the result
exactly), and nothing is corrupted (the store holds exactly those entries, each once).

Each worker fits a transcript of its own rounds and of rounds every worker shares (the same calls and results, so
the same handles: eight writers race on the same rows), twice, reading back its own and the shared handles while
the others write. The results are text the test writes, so the expected fetches are the inputs themselves."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import ROOT
from store_backends import BACKENDS, store_target

from windowfit.fitting import fit, load
from windowfit.fitting.formats import Input
from windowfit.fitting.store import full_text, open_store

WORKERS = 8
SHARED_ROUNDS = 4
OWN_ROUNDS = 6
PAGE_TOKENS = 300


def result_text(owner: str, round_: int) -> str:
    lines = [f"{owner} round {round_} line {n}: {'данные データ data ' * 3}{n * round_}" for n in range(120)]
    return "\n".join(lines) + "\n"


def transcript_jsonl(worker: int) -> tuple[bytes, dict[str, str]]:
    """An OpenAI chat transcript for ``worker``: the shared rounds first (oldest, so cleared first), then its own;
    and each call id's result text."""
    results: dict[str, str] = {}
    lines: list[object] = [
        {"role": "system", "content": "You are a research agent."},
        {"role": "user", "content": f"Worker {worker}: read every document."},
    ]
    rounds = [("shared", f"call_shared_{r}", r) for r in range(SHARED_ROUNDS)]
    rounds += [(f"worker{worker}", f"call_w{worker}_{r}", r) for r in range(OWN_ROUNDS)]
    for owner, call_id, round_ in rounds:
        text = result_text(owner, round_)
        results[call_id] = text
        call = {"id": call_id, "type": "function", "function": {"name": "read_doc", "arguments": "{}"}}
        lines.append({"role": "assistant", "content": None, "tool_calls": [call]})
        lines.append({"role": "tool", "tool_call_id": call_id, "content": text})
    lines.append({"role": "assistant", "content": "Done."})
    return b"".join(orjson.dumps(line) + b"\n" for line in lines), results


def fit_and_fetch(target: str, worker: int, start: Any) -> list[tuple[str, str]]:
    """One worker: fit twice into the store, then fetch back every result its stubs name (and check them here, while
    the other workers still write). Returns (handle, expected text) for each cleared result."""
    data, results = transcript_jsonl(worker)
    (transcript,) = load(Input(f"worker{worker}.jsonl", data))
    cleared: list[tuple[str, str]] = []
    start.wait()  # all eight loaded and ready: they open, create and write the store at the same moment
    with open_store(target) as store:
        for _ in range(2):
            fitted = fit(transcript, budget=6_000, store=store, page_tokens=PAGE_TOKENS)
            assert fitted.plan.outcome != "too-long", fitted.plan.outcome
            cleared = [(ref.handle, results[ref.call_id]) for ref in fitted.plan.cleared]
            assert len(cleared) >= SHARED_ROUNDS + 2, len(cleared)
            for handle, expected in cleared:
                assert full_text(store, handle) == expected, handle
    return cleared


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with store_target(str(request.param), tmp_path) as where:
        yield where


def test_eight_processes_fit_into_one_store_and_lose_nothing(target: str) -> None:
    # spawn, not fork: each worker starts clean, as separate harness processes would, with its own connection.
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, context.Pool(WORKERS) as pool:
        start = manager.Barrier(WORKERS, timeout=120)
        outcomes = pool.starmap(fit_and_fetch, [(target, w, start) for w in range(WORKERS)])
    expected = {handle: text for cleared in outcomes for handle, text in cleared}
    shared = set.intersection(*({h for h, _ in cleared} for cleared in outcomes))
    assert len(shared) >= SHARED_ROUNDS  # the workers did race on the same handles
    with open_store(target, create=False) as store:
        entries = store.entries()
        assert sorted(e.handle for e in entries) == sorted(expected)
        for handle, text in expected.items():
            assert full_text(store, handle) == text
        assert all(store.entry(h).chars == len(t) for h, t in expected.items())


SAMPLES = (
    ("en_coding_session.jsonl", "100000"),
    ("ru_subagent_chapters.jsonl", "30000"),
    ("ja_tools_session.jsonl", "30000"),
    ("data_tool_search.jsonl", "30000"),
)


def fit_args(sample: str, budget: str, store: str, output: Path) -> list[str]:
    return ["fit", f"sample_transcripts/{sample}", "--budget", budget, "--store", store, "--json", "-o", str(output)]


@pytest.mark.slow
def test_eight_fit_commands_at_once_build_the_store_one_after_another_would(
    target: str, tmp_path: Path, run_cli: Any
) -> None:
    """Eight ``windowfit fit --store`` processes, two on each bundled sample (racing on the same handles), against
    the same eight fits run one by one in this process into a fresh SQLite store: the same entries, and every one
    holds the same text and original JSON."""
    commands = [(sample, budget, n) for sample, budget in SAMPLES for n in range(2)]
    running = [
        subprocess.Popen(
            [sys.executable, "-m", "windowfit", *fit_args(s, b, target, tmp_path / f"out{s}{n}.json")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
        )
        for s, b, n in commands
    ]
    outputs = [process.communicate(timeout=120) for process in running]
    assert [(p.returncode, err) for p, (_, err) in zip(running, outputs, strict=True)] == [(0, b"")] * len(running)
    named = {r["handle"] for out, _ in outputs for r in orjson.loads(out)["results"] if r["handle"]}

    reference = str(tmp_path / "one_by_one.db")
    for sample, budget in SAMPLES:
        assert run_cli(*fit_args(sample, budget, reference, tmp_path / "ref.json")).exit_code == 0
    with open_store(target, create=False) as store, open_store(reference, create=False) as expected:
        handles = sorted(e.handle for e in expected.entries())
        assert sorted(e.handle for e in store.entries()) == handles == sorted(named)
        assert len(handles) > 40
        for handle in handles:
            assert full_text(store, handle) == full_text(expected, handle)
            assert store.raw(handle) == expected.raw(handle)
            assert store.entry(handle).pages == expected.entry(handle).pages
