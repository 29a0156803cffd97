"""The inspect_ai format: Inspect AI eval logs, ``.json`` and ``.eval`` (a zip),
each sample's messages a transcript. Fixtures written by Inspect AI itself (see
tests/data/inspect_ai/README.md), the real log of the shared corpus, sniffing."""

from __future__ import annotations

import json
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import DATA, require_shared
from typer.testing import Result

from windowfit.fitting.errors import EmptyTranscript, UnknownShape
from windowfit.fitting.formats import FORMATS, Input, detect, load_path
from windowfit.fitting.validate import check_request

Run = Callable[..., Result]
FIXTURES = DATA / "inspect_ai"
REAL = ("corpus", "new-formats", "inspect_ai", "UKGovernmentBEIS_inspect_ai__log_images_tc.json")
SNIFF = FORMATS["inspect_ai"].sniff


def raw_samples(path: Path) -> list[dict[str, Any]]:
    """The samples as the file holds them, read with the stdlib only."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            names = sorted(n for n in z.namelist() if n.startswith("samples/") and n.endswith(".json"))
            return [json.loads(z.read(n)) for n in names]
    return list(json.loads(path.read_text())["samples"])


ZSTD = FIXTURES / "mockllm_tools.eval"
"""As Inspect AI 0.3.285 wrote it: members compressed with zstd (read with the ``inspect`` extra)."""
DEFLATE = FIXTURES / "mockllm_tools_deflate.eval"
"""The same members, deflated (as older Inspect releases wrote them): the stdlib reads them here."""


def fixtures() -> list[Path]:
    return [FIXTURES / "mockllm_tools.json", DEFLATE]


@pytest.mark.parametrize("path", fixtures(), ids=lambda p: p.name)
def test_each_sample_is_a_transcript_with_its_calls_and_results(path: Path) -> None:
    samples = raw_samples(path)
    ts = load_path(path)
    assert detect(Input(str(path))).name == "inspect_ai"
    assert [t.name for t in ts] == [f"sample {s['id']} epoch {s['epoch']}" for s in samples]
    for t, s in zip(ts, samples, strict=True):
        calls = sum(len(m.get("tool_calls") or ()) for m in s["messages"])
        results = sum(1 for m in s["messages"] if m["role"] == "tool")
        assert sum(len(m.tool_calls) for m in t.messages) == calls
        assert sum(len(m.tool_results) for m in t.messages) == results
        errors = [f"Error: {m['error']['message']}" for m in s["messages"] if m["role"] == "tool" and m.get("error")]
        assert [r.content[0].text for m in t.messages for r in m.tool_results if r.is_error] == errors  # type: ignore[union-attr]
        system = sum(1 for m in s["messages"] if m["role"] == "system")
        assert len(t.messages) == len(s["messages"]) - system
        assert check_request(t) == ()
        assert t.dialect == "openai"


@pytest.mark.parametrize("path", fixtures(), ids=lambda p: p.name)
def test_usage_comes_from_the_model_events(path: Path) -> None:
    for t, s in zip(load_path(path), raw_samples(path), strict=True):
        events = s.get("events") or s.get("transcript", {}).get("events", [])
        model = [e for e in events if e["event"] == "model" and e["output"].get("usage")]
        assert len(t.usage) == len(model)
        for u, e in zip(t.usage, model, strict=True):
            assert u.total == e["output"]["usage"]["input_tokens"]
            # Inspect 0.3.285 stores a model call's input as [start, end) ranges into events_data.messages
            pool = s.get("events_data", {}).get("messages", [])
            given = e["input"] or [pool[i] for a, b in e["input_refs"] for i in range(a, b)]
            assert u.before == len([m for m in given if m["role"] != "system"]) > 0


def contents(path: Path) -> list[tuple[str, list[tuple[object, ...]]]]:
    return [(t.name, [m.content for m in t.messages]) for t in load_path(path)]


def test_the_json_and_eval_logs_of_one_task_hold_the_same_conversations() -> None:
    # Two runs of one task with the same scripted replies: only the tool call ids differ.
    a, b = contents(FIXTURES / "mockllm_tools.json"), contents(DEFLATE)
    assert [name for name, _ in a] == [name for name, _ in b] == ["sample answer epoch 1", "sample sum epoch 1"]
    assert [[len(c) for c in messages] for _, messages in a] == [[len(c) for c in messages] for _, messages in b]


def test_a_zstd_eval_log_reads_like_its_deflate_copy() -> None:
    pytest.importorskip("zstandard")
    assert contents(ZSTD) == contents(DEFLATE)


def test_a_zstd_eval_log_without_zstandard_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)
    if sys.version_info >= (3, 14):
        assert contents(ZSTD) == contents(DEFLATE)
        return
    with pytest.raises(UnknownShape, match="compressed with zstd") as info:
        load_path(ZSTD)
    assert "pip install zstandard" in info.value.hint


def test_the_real_log() -> None:
    path = require_shared(*REAL)
    (t,) = load_path(path)
    # The file (read with json): one sample, id 1 epoch 1, messages system + user (text, image) +
    # assistant "[hedgehog]"; its one model event measured input_tokens 323.
    assert t.name == "sample 1 epoch 1"
    assert [m.role for m in t.messages] == ["user", "assistant"]
    assert [type(b).__name__ for b in t.messages[0].content] == ["Text", "Image"]
    assert t.messages[0].content[1].byte_size > 0  # type: ignore[union-attr]
    assert [(u.before, u.total) for u in t.usage] == [(1, 323)]
    assert check_request(t) == ()


def test_report_and_fit_on_a_log(run_cli: Run, tmp_path: Path) -> None:
    path = DEFLATE
    assert run_cli("report", str(path)).exit_code == 0
    out = tmp_path / "out.json"
    result = run_cli("fit", str(path), "--index", "0", "--budget", "100000", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    (fitted,) = load_path(out)
    assert (fitted.format, fitted.dialect) == ("request", "openai")
    assert check_request(fitted) == ()


def test_a_log_without_samples_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "header_only.json"
    path.write_text(json.dumps({"version": 2, "status": "started", "eval": {"task": "t"}}))
    with pytest.raises(EmptyTranscript, match="no samples"):
        load_path(path)


def test_sniffing(tmp_path: Path) -> None:
    assert SNIFF(b'{\n  "version": 2,\n  "status": "success",\n  "eval": {"task": "x"')
    assert not SNIFF(b'{"eval": {}, "version": 2}')
    assert not SNIFF(b'{"version": 1, "messages": []}')
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("notes.txt", "hello")
    assert not SNIFF(other.read_bytes())
