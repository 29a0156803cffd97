"""``fit`` keeps the file's JSON text only where it writes (``-o``, ``--store``): the plan, the ``--json``
document and the diff it shows must be the same whether the transcript was loaded with its text or without.
On the corpus, the sample transcripts and the fit fixtures, the library and the command are compared both ways."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import DATA, ROOT, SHARED, require_shared
from typer.testing import Result

from windowfit.fitting import make_estimator
from windowfit.fitting.errors import InputError
from windowfit.fitting.fit import plan_fit
from windowfit.fitting.formats import Input, load
from windowfit.fitting.serialize import plan_document
from windowfit.fitting.size import predict_size
from windowfit.fitting.transcript import Transcript

CORPUS = SHARED / "corpus" / "transcripts"


def files() -> list[Path]:
    found = sorted((ROOT / "sample_transcripts").glob("*.jsonl"))
    found += sorted((DATA / "fit").rglob("*.jsonl"))
    found += sorted((DATA / "claude_code").rglob("*.jsonl"))
    if CORPUS.is_dir():
        found += sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json", ".traj"))
    return found


def loaded(path: Path, keep_text: bool) -> tuple[Transcript, ...] | None:
    try:
        return load(Input(str(path), keep_text=keep_text), skip_invalid=True)
    except InputError:
        return None


def budgets(transcript: Transcript) -> tuple[int, ...]:
    """A budget it fits in, and ones that make each stage run."""
    total = predict_size(transcript, make_estimator()).tokens
    return (total + 1, max(1, total // 2), max(1, total // 10), 1)


def test_the_corpus_is_there_or_skipped() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"{CORPUS} is absent")
    assert any(p.suffix == ".jsonl" for p in files() if CORPUS in p.parents)


@pytest.mark.parametrize("path", files(), ids=lambda p: p.name)
def test_the_plan_is_the_same_without_the_files_text(path: Path) -> None:
    kept, bare = loaded(path, True), loaded(path, False)
    if kept is None:
        assert bare is None
        return
    assert bare is not None and len(kept) == len(bare)
    for with_text, without in zip(kept, bare, strict=True):
        for budget in budgets(with_text):
            est_a, est_b = make_estimator(), make_estimator()
            size_a, size_b = predict_size(with_text, est_a), predict_size(without, est_b)
            assert size_a == size_b
            a = plan_fit(with_text.live(), budget=budget, estimator=est_a, size=size_a)
            b = plan_fit(without.live(), budget=budget, estimator=est_b, size=size_b)
            assert a == b, (path, budget)
            assert plan_document(a, with_text.live(), estimator="seed") == plan_document(
                b, without.live(), estimator="seed"
            )


def test_the_texts_differ_somewhere() -> None:
    """The comparison above is not vacuous: some file's transcript is not the same without its text (the
    corpus's files do; the repository's own may all be the same either way)."""
    require_shared("corpus", "transcripts")
    differ = 0
    for path in files():
        kept, bare = loaded(path, True), loaded(path, False)
        differ += kept is not None and kept != bare
    assert differ


def shown(result: Result) -> list[str]:
    """What ``fit`` printed, but the line that names the file it wrote."""
    return [line for line in result.stdout.splitlines() if not line.startswith("wrote ")]


CLI_FILES = [
    ROOT / "sample_transcripts" / "ja_tools_session.jsonl",
    DATA / "fit" / "rounds.jsonl",
    *sorted((DATA / "claude_code").glob("*.jsonl"))[:4],
]


@pytest.mark.parametrize("path", CLI_FILES, ids=lambda p: p.name)
def test_fit_shows_the_same_diff_with_and_without_o(path: Path, run_cli: Callable[..., Result], tmp_path: Path) -> None:
    (transcript, *_) = load(Input(str(path)), skip_invalid=True)
    for budget in budgets(transcript)[1:3]:
        for extra in ((), ("--json",)):
            args = ("fit", str(path), "--budget", str(budget), "--skip-invalid", *extra)
            bare = run_cli(*args)
            written = run_cli(*args, "-o", str(tmp_path / f"out{path.suffix}"))
            assert bare.exit_code == written.exit_code
            assert shown(bare) == shown(written), (path, budget, extra)
