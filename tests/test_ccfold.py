"""``report``'s fold of a Claude Code session from its lines (``fitting.ccfold``) against the loader and
``build_report``: wherever the fold vouches for a file its report is equal to the loaded one (so are the text
and ``--json`` output, which are made from the report), and wherever it does not, the command reads the file
as before. On the corpus, every prefix of every session, and generated sessions of the shapes
benchmarks/sessions.py writes, with the branches, sidechains, compactions and damaged lines it must refuse."""

from __future__ import annotations

import base64
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import DATA, require_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import texts
from test_format_claude_code import interleaved_sessions
from typer.testing import Result

from windowfit.cli.report_cmd import FAST_FOLD_ENV, ReportOptions, report_file, report_work
from windowfit.cli.report_run import _windowed
from windowfit.cli.shared import SizeChoice
from windowfit.fitting import make_estimator
from windowfit.fitting.ccfold import fold_claude_code, fold_claude_code_all
from windowfit.fitting.errors import InputError
from windowfit.fitting.formats import Input, load
from windowfit.fitting.report import Report
from windowfit.fitting.windows import last_reply_model, window_for

SEED = ReportOptions("seed", 1.0, None, None, 10, SizeChoice.auto, None)


def loaded(item: Input, options: ReportOptions = SEED, skip_invalid: bool = False) -> list[Report] | str:
    """Today's reports of ``item`` (loader and ``build_report``), or the error the loader raised."""
    try:
        return report_work(load(item, skip_invalid=skip_invalid), options=options)
    except InputError as exc:
        return f"{type(exc).__name__}: {exc}"


def reported(item: Input, options: ReportOptions = SEED, skip_invalid: bool = False) -> list[Report] | str:
    """The reports ``report`` makes of ``item`` (folded where the fold vouches), or the loader's error."""
    try:
        return report_file(item, options, skip_invalid=skip_invalid)
    except InputError as exc:
        return f"{type(exc).__name__}: {exc}"


def folded(
    item: Input, options: ReportOptions = SEED, skip_invalid: bool = False, why: list[str] | None = None
) -> Report | None:
    o = options
    report = fold_claude_code(
        item,
        make_estimator(o.estimator, overhead=o.overhead),
        budget=o.budget,
        window=o.window,
        top=o.top,
        size_mode=o.size.value,
        preamble=o.preamble,
        skip_invalid=skip_invalid,
        why=why,
    )
    # report's window: --window, else the model the file's last reply records (as report_file does)
    return None if report is None else _windowed(report, window_for(o.window, last_reply_model(item)))


def corpus_files() -> list[Path]:
    return sorted(require_shared("corpus", "transcripts", "claude_code").rglob("*.jsonl"))


@pytest.mark.parametrize("skip_invalid", [False, True])
def test_reports_are_the_loaded_ones_on_the_corpus(skip_invalid: bool) -> None:
    files = corpus_files() + sorted(DATA.joinpath("claude_code").rglob("*.jsonl"))
    assert files
    taken = taken_all = 0
    for path in files:
        item = Input(str(path), keep_text=False)
        report = folded(item, skip_invalid=skip_invalid)
        taken += report is not None
        assert reported(item, skip_invalid=skip_invalid) == loaded(item, skip_invalid=skip_invalid), path
        if report is not None:
            assert [report] == loaded(item, skip_invalid=skip_invalid), path
        reports = fold_claude_code_all(item, make_estimator(), skip_invalid=skip_invalid)
        taken_all += reports is not None
        if reports is not None:
            reports = [_windowed(r, window_for(None, last_reply_model(Input(r.path)))) for r in reports]
            assert reports == loaded(item, skip_invalid=skip_invalid), path
    # Every transcript of a file (inline sidechains, a subagents folder): 18 of 23 on 2026-12-02, 21 with
    # --skip-invalid (left: three files' broken lines without it, a compaction, one of the tests' files).
    assert taken_all >= (20 if skip_invalid else 17)
    # 7 of 23 before the fold read trees and broken lines (the corpus's subagent files, one of the tests'); on
    # 2026-12-02 13 of 23, and 16 with --skip-invalid (the broken lines of two M-Thisness sessions skipped).
    assert taken >= (15 if skip_invalid else 12)


@pytest.mark.parametrize("skip_invalid", [False, True])
def test_every_prefix_of_a_corpus_session_folds_to_its_report(skip_invalid: bool) -> None:
    """The corpus's main sessions hold broken lines, branches, second roots, sidechains beside the main chain,
    images, parallel calls' results hanging from their calls and comment lines; their prefixes hold each."""
    vouched = 0
    for path in corpus_files():
        lines = path.read_bytes().splitlines(keepends=True)
        cuts = {*range(1, min(len(lines), 80) + 1), *range(1, len(lines) + 1, max(1, len(lines) // 40))}
        for n in sorted(cuts):  # the first 80 prefixes (the fold takes early ones), 40 more spread over the file
            item = Input(str(path), b"".join(lines[:n]), keep_text=False)
            report = folded(item, skip_invalid=skip_invalid)
            if report is not None:
                vouched += 1
                assert [report] == loaded(item, skip_invalid=skip_invalid), (path, n)
    # 282 of these on 2026-12-02 before the fold read trees and broken lines; 554 after (785 with --skip-invalid)
    assert vouched >= (700 if skip_invalid else 500)


# --------------------------------------------------------------------------
# Generated sessions


_SCRIPTS = ("ascii", "cyrillic", "han", "hiragana", "emoji")


class _Writer:
    """Lines of one session, each on the chain unless a draw breaks it."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.lines: list[bytes] = []
        self.n = 0
        self.parent: str | None = None
        self.side = draw(st.integers(0, 5)) == 0
        """A subagent's own file: every line on its sidechain, some with an agentId."""
        self.clean = draw(st.integers(0, 2)) == 0
        """No line of it breaks the chain (so that more of the other shapes are folded and compared)."""

    def line(self, kind: str, *, leaf: bool = False, hang: str | None = None, **rest: Any) -> str:
        """One line (its uuid); a ``leaf`` (a bookkeeping line no message hangs from) leaves the chain where it
        was; ``hang`` names its parent instead of the line before it (a parallel call's result, its call)."""
        draw = self.draw
        self.n += 1
        me = f"u{self.n}"
        parent = self.parent if hang is None else hang
        odd = 400 if self.clean else draw(st.integers(0, 300))
        if odd == 0 or (leaf and draw(st.booleans())):
            parent = draw(st.sampled_from([None, "gone", "u1"]))  # a root, a broken link or a branch
        if self.side and draw(st.integers(0, 3)) == 0:
            rest = {"agentId": draw(st.sampled_from(["a1", "a2", 7])), **rest}
        record: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": self.side != (odd == 1),
            "userType": "external",
            "sessionId": "s",
            "type": kind,
            "uuid": me if odd != 2 else "u1",
            **rest,
        }
        raw = orjson.dumps(record)
        if odd == 3 or odd == 4:  # a damaged line, cut after its uuid or (its links lost) before it
            raw = raw[: len(raw) // 2] if odd == 3 else raw[:30]
        self.lines.append(raw)
        if not leaf:
            self.parent = me
        return me


def _text(draw: st.DrawFn) -> str:
    return draw(texts(0, 30, scripts=_SCRIPTS))


def _image(draw: st.DrawFn) -> dict[str, Any]:
    """An image block: a PNG whose header gives its size, or a payload whose size cannot be read, or a URL."""
    shape = draw(st.integers(0, 3))
    if shape == 3:
        return {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    if shape == 2:
        return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    width, height = draw(st.integers(1, 4000)), draw(st.integers(1, 4000))
    header = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + width.to_bytes(4, "big") + height.to_bytes(4, "big")
    data = base64.b64encode(header + b"\x08\x02\x00\x00\x00").decode()
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


@st.composite
def sessions(draw: st.DrawFn) -> bytes:
    """A user prompt, then rounds of an assistant reply split into one line per block (thinking, text,
    tool_use) sharing a message id and usage, and the user line(s) with the results; now and then a
    progress line on the chain, a summary line, a compaction, a missing result, an image, an empty message."""
    w = _Writer(draw)
    if draw(st.integers(0, 4)):  # else an excerpt that starts with a reply
        w.line("user", message={"role": "user", "content": _text(draw) or "hi"})
    cached = draw(st.integers(0, 5000))
    for r in range(draw(st.integers(0, 6))):
        message_id = f"msg_{r}" if draw(st.integers(0, 20)) else f"msg_{r - 1}"
        calls = [f"toolu_{r}_{k}" for k in range(draw(st.integers(0, 3)))]
        if draw(st.integers(0, 30)) == 0 and calls:
            calls.append(calls[0])  # a call id used twice
        usage: Any = {
            "input_tokens": draw(st.integers(0, 10)),
            "cache_creation_input_tokens": draw(st.integers(0, 4000)),
            "cache_read_input_tokens": cached,
            "output_tokens": draw(st.integers(0, 900) | st.integers(0, 3)),  # a snapshot below the reply's own
        }
        if draw(st.integers(0, 10)) == 0:
            usage = {k: 0 for k in usage}  # <synthetic>: not measured
        cached += draw(st.integers(0, 3000))
        blocks: list[dict[str, Any]] = []
        if draw(st.booleans()):
            blocks.append({"type": "thinking", "thinking": _text(draw), "signature": "c2ln"})
        if draw(st.booleans()) or not calls:
            blocks.append({"type": "text", "text": _text(draw)})
        for c in calls:
            inp = {"file_path": _text(draw)} if draw(st.integers(0, 4)) else {}
            blocks.append(
                {"type": "tool_use", "id": c, "name": draw(st.sampled_from(["Read", "Bash", "Жук"])), "input": inp}
            )
        if draw(st.integers(0, 40)) == 0:
            blocks.append({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}})
        if r == 0 and draw(st.integers(0, 10)) == 0:  # an image pasted into the prompt
            w.line("user", message={"role": "user", "content": [{"type": "text", "text": "see"}, _image(draw)]})
        call_lines: dict[str, str] = {}
        for block in blocks:
            step = (
                {**usage, "output_tokens": draw(st.integers(0, 900) | st.integers(0, 3))}
                if draw(st.integers(0, 3)) == 0
                else usage
            )
            message = {"model": "claude-x", "id": message_id, "role": "assistant", "content": [block], "usage": step}
            me = w.line("assistant", message=message, requestId=f"req_{r}")
            if block["type"] == "tool_use":
                call_lines.setdefault(block["id"], me)
        if draw(st.integers(0, 8)) == 0:
            w.line("progress", data={"step": r})
        if draw(st.integers(0, 8)) == 0:
            w.line(draw(st.sampled_from(["progress", "system"])), leaf=True, subtype="turn_duration")
        if draw(st.integers(0, 10)) == 0:
            w.lines.append(orjson.dumps({"type": "summary", "summary": "s", "leafUuid": "u1"}))
        if draw(st.integers(0, 40)) == 0:
            w.line("system", subtype="compact_boundary", content="Conversation compacted")
        answered = calls[:-1] if calls and draw(st.integers(0, 15)) == 0 else calls
        results: list[dict[str, Any]] = []
        for c in answered:
            shape = draw(st.integers(0, 6))
            content: Any = [{"type": "text", "text": _text(draw)}] if shape == 0 else _text(draw)
            if shape == 1:
                content = []
            elif shape == 2:  # a screenshot (its size in its header, or none to be read), as Read returns it
                content = [{"type": "text", "text": _text(draw)}, _image(draw)]
            result: dict[str, Any] = {"tool_use_id": c, "type": "tool_result", "content": content}
            if draw(st.booleans()):
                result["is_error"] = False
            results.append(result)
        if results and draw(st.booleans()):
            # Parallel calls as Claude Code writes them: a result per line, each hanging from its call's line
            # (now and then from the line before it, through a progress line, or with a text block), in any
            # order; the next line hangs from the last result line, or now and then from another.
            written = []
            for result in draw(st.permutations(results)):
                if draw(st.integers(0, 4)) == 0:
                    w.line("progress", data={"step": r})
                hang = call_lines.get(result["tool_use_id"]) if draw(st.integers(0, 2)) else None
                content = [result, {"type": "text", "text": _text(draw)}] if draw(st.integers(0, 5)) == 0 else [result]
                written.append(
                    w.line("user", hang=hang, message={"role": "user", "content": content}, toolUseResult={})
                )
            if draw(st.integers(0, 5)) == 0:
                w.parent = draw(st.sampled_from(written))
        elif results:
            if len(results) > 1 and draw(st.booleans()):  # the results split over two lines
                w.line("user", message={"role": "user", "content": results[:1]}, toolUseResult={})
                results = results[1:]
            if draw(st.integers(0, 10)) == 0:
                results.append({"type": "text", "text": _text(draw)})
            w.line("user", message={"role": "user", "content": results}, toolUseResult={})
        if draw(st.integers(0, 4)) == 0:
            content = _text(draw) if draw(st.integers(0, 10)) else ""
            w.line("user", message={"role": "user", "content": content})
    if draw(st.integers(0, 4)) == 0:  # comment and blank lines, which the loader passes over
        for _ in range(draw(st.integers(1, 3))):
            w.lines.insert(draw(st.integers(0, len(w.lines))), draw(st.sampled_from([b"// a note", b"", b"  "])))
    return b"\n".join(w.lines) + (b"\n" if draw(st.booleans()) else b"")


OPTIONS = st.builds(
    ReportOptions,
    st.just("seed"),
    st.sampled_from([1.0, 0.0, 2.5]),
    st.sampled_from([None, 1000]),
    st.sampled_from([None, 50_000]),
    st.sampled_from([10, 0, 2]),
    st.sampled_from(list(SizeChoice)),
    st.sampled_from([None, 0, 12_000]),
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=sessions(), options=OPTIONS, skip_invalid=st.booleans())
def test_generated_sessions_fold_to_the_loaded_report(data: bytes, options: ReportOptions, skip_invalid: bool) -> None:
    item = Input("session.jsonl", data, keep_text=False)
    report = folded(item, options, skip_invalid)
    if report is not None:
        assert [report] == loaded(item, options, skip_invalid)
    assert reported(item, options, skip_invalid) == loaded(item, options, skip_invalid)  # fold_claude_code_all


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session=interleaved_sessions(), options=OPTIONS)
def test_a_reply_written_between_its_results_folds_to_the_loaded_report(session: Any, options: ReportOptions) -> None:
    """Issue 13 item 6: the lines of one reply with its results written between them are one message, measured
    once, in the fold as in the loader; the fold vouches for this layout."""
    item = Input("session.jsonl", session[0], keep_text=False)
    report = folded(item, options)
    assert report is not None
    assert [report] == loaded(item, options)


def test_the_generated_shape_is_mostly_folded() -> None:
    """The property above compares reports where the fold vouches: make sure it does on most sessions."""
    vouched = []
    parallel = []
    comments = []

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
    @given(data=sessions())
    def count(data: bytes) -> None:
        report = folded(Input("session.jsonl", data, keep_text=False))
        vouched.append(report is not None)
        parallel.append(report is not None and any(n.startswith("took in") for n in report.notes))
        comments.append(report is not None and report.skipped_lines > 0)

    count()
    # On 2026-12-02: 105 of 300, 29 with results off the chain (parallel calls), 19 with comment lines; after
    # the merges of that afternoon, 7 with comment lines, in a run whose sessions differed from the branch's
    # (which of the generated shapes come up depends on hypothesis's seed and on the code around the test):
    # the floors below say each shape comes up, not how often.
    assert sum(vouched) >= len(vouched) // 5
    assert sum(parallel) >= 10
    assert sum(comments) >= 3


def test_the_generated_trees_and_broken_lines_are_mostly_folded() -> None:
    """The property above compares the fold of trees (branches, second roots, broken links), defective rounds,
    broken lines (with --skip-invalid) and images: make sure each comes up folded."""
    found: dict[str, int] = defaultdict(int)

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
    @given(data=sessions())
    def count(data: bytes) -> None:
        item = Input("session.jsonl", data, keep_text=False)
        reports = fold_claude_code_all(item, make_estimator(), skip_invalid=True)
        found["sidechains"] += reports is not None and len(reports) > 1  # sidechain trees beside the main one
        report = folded(item, skip_invalid=True)
        if report is None:
            return
        why: list[str] = []
        found["folded"] += 1
        kinds = {d.kind for d in report.defects}
        found["branch"] += "branch" in kinds or "duplicate-history" in kinds
        found["broken-link"] += "broken-link" in kinds
        found["round"] += bool(kinds & {"unanswered-call", "orphan-result", "duplicate-result"})
        found["skipped"] += folded(item, why=why) is None and "not JSON" in why[0]
        found["image"] += b'"type":"image"' in data

    count()
    # On 2026-12-02: 141 of 300 folded as one transcript, 31 with a branch left out, 7 with a broken link, 29
    # with a defective round, 6 with broken lines skipped, 56 with images; 14 folded as several (sidechains
    # beside the main chain). The shapes depend on hypothesis's seed, which depends on ``count``'s source.
    assert found["folded"] >= 100
    for shape in ("branch", "broken-link", "round", "skipped", "image", "sidechains"):
        assert found[shape] >= 3, (shape, dict(found))


def test_it_leaves_other_estimators_and_kept_text_to_the_loader(tmp_path: Path) -> None:
    lines = [
        {"parentUuid": None, "type": "user", "uuid": "a", "message": {"role": "user", "content": "Привет"}},
        {"parentUuid": "a", "type": "assistant", "uuid": "b", "message": {"role": "assistant", "content": "hi"}},
    ]
    data = b"\n".join(orjson.dumps({**x, "sessionId": "s"}) for x in lines)
    assert folded(Input("s.jsonl", data, keep_text=False)) is not None
    assert folded(Input("s.jsonl", data, keep_text=True)) is None
    safe = ReportOptions("safe", 1.0, None, None, 10, SizeChoice.auto, None)
    assert folded(Input("s.jsonl", data, keep_text=False), safe) is None
    # A subagents folder beside the file: the loader reads it too.
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    assert folded(Input(str(path), keep_text=False)) is not None
    (tmp_path / "s" / "subagents").mkdir(parents=True)
    (tmp_path / "s" / "subagents" / "agent-x.jsonl").write_bytes(data)
    why: list[str] = []
    assert folded(Input(str(path), keep_text=False), why=why) is None
    assert why and "subagents folder" in why[0]
    # ... which ``report`` folds with the session (fold_claude_code_all), as the loader names and notes it.
    item = Input(str(path), keep_text=False)
    both = fold_claude_code_all(item, make_estimator())
    assert both is not None and [r.name for r in both] == ["", "subagent agent-x"]
    assert both == loaded(item) == reported(item)
    assert any(n.startswith("loaded 1 subagent transcript(s)") for n in both[0].notes)
    # A subagent file the fold leaves to the loader leaves the whole session to it, and says which.
    (tmp_path / "s" / "subagents" / "agent-y.jsonl").write_bytes(data.replace(b'"hi"', b'""'))
    why.clear()
    assert fold_claude_code_all(item, make_estimator(), why=why) is None
    assert why[0].startswith("agent-y.jsonl in subagents/: "), why
    assert reported(item) == loaded(item)


@pytest.mark.parametrize("args", [(), ("--json",), ("--budget", "100", "--window", "300", "--size", "estimate")])
def test_the_command_prints_the_same_with_the_fold_off(
    run_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(_example(tmp_path))
    assert folded(Input(str(path), keep_text=False)) is not None
    fast: Result = run_cli("report", str(path), *args)
    monkeypatch.setenv(FAST_FOLD_ENV, "0")
    general: Result = run_cli("report", str(path), *args)
    assert fast.exit_code == general.exit_code == 0, fast.stderr
    assert (fast.stdout, fast.stderr) == (general.stdout, general.stderr)


def _example(folder: Path) -> bytes:
    """A small session of the benchmark's shape (benchmarks/sessions.py, 3 rounds)."""
    import random
    import sys

    root = Path(__file__).resolve().parents[1]  # sessions.py imports sample_transcripts, from the repo's root
    for folder_on_path in (str(root), str(root / "benchmarks")):
        if folder_on_path not in sys.path:
            sys.path.insert(0, folder_on_path)
    from sessions import write_session

    out = folder / "example.scratch"
    write_session(out, random.Random(3), 3)
    return out.read_bytes()


def _parallel(through_progress: bool) -> bytes:
    """A reply of two parallel calls whose results hang from their calls' lines, the second result first, and
    the next reply hanging from the first result: Claude Code's shape (as in the corpus's moredip sessions)."""

    def line(uuid: str, parent: str | None, kind: str, **rest: Any) -> bytes:
        envelope = {"parentUuid": parent, "isSidechain": False, "userType": "external", "sessionId": "s"}
        return orjson.dumps({**envelope, "type": kind, "uuid": uuid, **rest})

    usage = {"input_tokens": 5, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 0, "output_tokens": 9}

    def reply(message_id: str, block: dict[str, Any]) -> dict[str, Any]:
        return {"message": {"id": message_id, "role": "assistant", "content": [block], "usage": usage}}

    def result(call_id: str) -> dict[str, Any]:
        content = [{"type": "tool_result", "tool_use_id": call_id, "content": "ok"}]
        return {"message": {"role": "user", "content": content}}

    lines = [
        line("u1", None, "user", message={"role": "user", "content": "hi"}),
        line("u2", "u1", "assistant", **reply("m1", {"type": "tool_use", "id": "c1", "name": "Read", "input": {}})),
        line("u3", "u2", "assistant", **reply("m1", {"type": "tool_use", "id": "c2", "name": "Read", "input": {}})),
        line("u4", "u3", "progress", data={}),
        line("u5", "u4" if through_progress else "u3", "user", **result("c2")),
        line("u6", "u2", "user", **result("c1")),
        line("u7", "u6", "assistant", **reply("m2", {"type": "text", "text": "done"})),
    ]
    return b"\n".join(lines) + b"\n"


def test_parallel_results_off_the_chain_fold_as_the_loader_takes_them_in() -> None:
    item = Input("s.jsonl", _parallel(through_progress=False), keep_text=False)
    report = folded(item)
    assert report is not None
    assert [report] == loaded(item)
    assert any(n.startswith("took in 2 line(s) off the chain") for n in report.notes)  # u3 and u5
    # The second result hangs from a progress line off the loader's chain (through u6): it leaves the result
    # out, as a branch, and the reply's call unanswered; the fold reads the tree as the loader does.
    item = Input("s.jsonl", _parallel(through_progress=True), keep_text=False)
    report = folded(item)
    assert report is not None
    assert [report] == loaded(item)
    assert {d.kind for d in report.defects} == {"branch", "unanswered-call"}


# --------------------------------------------------------------------------
# The tree fold reads each file once (issue #15)


def _tree_session(*, side_image: bool = False, broken: bytes | None = None, at: int = 8) -> bytes:
    """A session whose one pass gives up part way (a retried reply: its first try, of thinking, text, a call
    and its result, and a user line with an image, left on a branch), then a subagent's tree on the sidechain
    (an image in its prompt with ``side_image``) and, with ``broken``, that line (a broken line, a line that is
    not an object, ...) put in at index ``at`` (1 before the one pass gives up, 8 after; 0: the first line,
    a byte order mark before it, instead)."""

    def line(uuid: str, parent: str | None, kind: str, side: bool = False, **rest: Any) -> bytes:
        envelope = {"parentUuid": parent, "isSidechain": side, "userType": "external", "sessionId": "s"}
        return orjson.dumps({**envelope, "type": kind, "uuid": uuid, **rest})

    usage = {"input_tokens": 5, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 0, "output_tokens": 9}

    def reply(message_id: str, block: dict[str, Any]) -> dict[str, Any]:
        return {"message": {"id": message_id, "role": "assistant", "content": [block], "usage": usage}}

    png = base64.b64encode(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + (640).to_bytes(4, "big") * 2).decode()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
    result = [{"type": "tool_result", "tool_use_id": "c0", "content": "Жук " * 40}]
    lines = [
        line("u1", None, "user", message={"role": "user", "content": "hi there"}),
        # the first try, left out: every kind of block, and a line only the Python path reads (an image)
        line("b1", "u1", "assistant", **reply("m0", {"type": "thinking", "thinking": "hmm " * 30, "signature": "x"})),
        line("b2", "b1", "assistant", **reply("m0", {"type": "text", "text": "first try " * 20})),
        line("b3", "b2", "assistant", **reply("m0", {"type": "tool_use", "id": "c0", "name": "Grep", "input": {}})),
        line("b4", "b3", "user", message={"role": "user", "content": result}, toolUseResult={}),
        line("b5", "b4", "user", message={"role": "user", "content": [{"type": "text", "text": "see"}, image]}),
        # the second, kept
        line("u2", "u1", "assistant", **reply("m1", {"type": "text", "text": "second try"})),
        line("u3", "u2", "user", message={"role": "user", "content": "thanks " * 5}),
    ]
    if at == 0:
        lines[0] = b"\xef\xbb\xbf" + lines[0]
    elif broken is not None:
        lines.insert(at, broken)
    prompt: Any = [{"type": "text", "text": "look"}, image] if side_image else "a task for you"
    lines += [
        line("s1", None, "user", side=True, agentId="a1", message={"role": "user", "content": prompt}),
        line("s2", "s1", "assistant", side=True, agentId="a1", **reply("m9", {"type": "thinking", "thinking": "so"})),
        line("s3", "s2", "assistant", side=True, agentId="a1", **reply("m9", {"type": "text", "text": "done"})),
        line("u4", "u3", "assistant", **reply("m2", {"type": "text", "text": "ok"})),
    ]
    return b"\n".join(lines) + b"\n"


@pytest.mark.parametrize("at", [0, 1, 8])
@pytest.mark.parametrize("side_image", [False, True])
@pytest.mark.parametrize(
    "broken", [None, b'{"parentUuid": "u1", "type": "user", "uu', b"[1, 2]", b"// a note", b"", b"\xef\xbb\xbf{}"]
)
def test_a_left_out_branch_of_every_kind_and_sidechains_fold_as_loaded(
    side_image: bool, broken: bytes | None, at: int
) -> None:
    """The tree fold takes the left-out lines' tokens back (every block kind, a line the scanner leaves to
    Python) and sums each sidechain transcript's own, from what it read once; the one pass gives up at the
    branch and hands over what it read, also where a line before or after it is broken, not an object, a
    comment, blank or begins with a byte order mark, or the first line begins with one."""
    data = _tree_session(side_image=side_image, broken=broken, at=at)
    item = Input("s.jsonl", data, keep_text=False)
    for skip_invalid in (False, True):
        reports = fold_claude_code_all(item, make_estimator(), skip_invalid=skip_invalid)
        expected = loaded(item, skip_invalid=skip_invalid)
        if at == 0 or broken is None or broken.startswith(b"//") or not broken or skip_invalid:
            assert reports is not None, (broken, skip_invalid)
            assert len(reports) == 2
            assert {d.kind for d in reports[0].defects} >= {"branch"}
        if reports is not None:
            assert reports == expected
        assert reported(item, skip_invalid=skip_invalid) == expected


def test_a_kind_left_only_on_a_branch_is_refused_without_block_overhead() -> None:
    """``_take_back``'s refusal: with no overhead per block, a kind whose tokens come to zero once the
    left-out lines are taken back may still be held by a kept line (a block of no tokens), so the fold leaves
    the file to the loader; with the overhead, the kind is dropped."""
    data = _tree_session()
    item = Input("s.jsonl", data, keep_text=False)
    why: list[str] = []
    no_overhead = ReportOptions("seed", 0.0, None, None, 10, SizeChoice.auto, None)
    assert fold_claude_code_all(item, make_estimator(overhead=0.0), why=why) is None
    assert why == ["blocks of zero tokens on a left-out branch (which kinds remain is not known)"]
    assert reported(item, no_overhead) == loaded(item, no_overhead)
    reports = fold_claude_code_all(item, make_estimator())
    assert reports is not None and reports == loaded(item)
    kinds = dict(reports[0].by_kind)
    assert "tool_call" not in kinds and "tool_result" not in kinds and "image" not in kinds  # only on the branch


@pytest.mark.parametrize("keep", [0, 1, 3])
def test_past_the_lines_it_keeps_the_tree_fold_reads_the_file_from_its_start(
    keep: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one pass keeps at most ``ccfold._KEEP`` lines of the tree for a hand-over; past them, the tree fold
    of a file it gives up on reads it again from its start, to the same reports."""
    from windowfit.fitting import ccfold

    files = [p for p in corpus_files() if p.stat().st_size < 2_000_000]
    cases = [Input(str(p), keep_text=False) for p in files]
    cases += [Input("s.jsonl", _tree_session(broken=b"[1, 2]", at=8), keep_text=False)]
    before = [fold_claude_code_all(item, make_estimator(), skip_invalid=True) for item in cases]
    monkeypatch.setattr(ccfold, "_KEEP", keep)
    after = [fold_claude_code_all(item, make_estimator(), skip_invalid=True) for item in cases]
    assert after == before
    assert sum(r is not None for r in after) >= 3
    for item, reports in zip(cases, after, strict=True):
        if reports is not None:
            windowed = [_windowed(r, window_for(None, last_reply_model(Input(r.path, item.data)))) for r in reports]
            assert windowed == loaded(item, skip_invalid=True), item.path
