"""Every ``--json`` document against its published schema (docs/schema/): each
command and variant validates; each schema rejects a document with a key
removed, renamed or added; the schemas, the TypedDicts of
``windowfit.fitting.json_shapes`` (which ``serialize`` gives too) and docs/json.md name the same keys."""

from __future__ import annotations

import copy
import functools
import re
import tempfile
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from windowfit.cli.exit_codes import ExitCode
from windowfit.fitting import json_shapes, serialize

ROOT = Path(__file__).parents[1]
SCHEMAS = ROOT / "docs" / "schema"
DOCS = ROOT / "docs" / "json.md"
COMMANDS = ("report", "fit", "check", "replay", "audit", "fetch", "store")

FIT = "tests/data/fit"
RESULTS_NOT_FIRST = (
    b'{"role":"user","content":"Run it."}\n'
    b'{"role":"assistant","content":[{"type":"tool_use","id":"r1","name":"run","input":{}}]}\n'
    b'{"role":"user","content":[{"type":"text","text":"Here:"},{"type":"tool_result","tool_use_id":"r1","content":"ok"}]}\n'
    b'{"role":"assistant","content":"Done."}\n'
)
"""A violation fit does not repair (Anthropic: text before the result in its message): kept in the output."""
JSON_CC = ("--skip-invalid", "--format", "json")
"""check's options for tests/data/claude_code, whose defects.jsonl has a truncated line."""
# Every variant of every command's --json: name -> (schema, expected exit code, arguments).
VARIANTS: dict[str, tuple[str, int, tuple[str, ...]]] = {
    "report-one": ("report", 0, ("report", "sample_transcripts/ru_subagent_chapters.jsonl", "--json")),
    "report-many": (
        "report",
        0,
        ("report", "sample_transcripts", "--budget", "100000", "--window", "200000", "--json"),
    ),
    # Claude Code sessions: provider counts (measured), branches (defects), notes, line kinds, names.
    "report-claude-code": (
        "report",
        0,
        ("report", "tests/data/claude_code", "--budget", "1000", "--skip-invalid", "--json"),
    ),
    "report-safe-estimator": (
        "report",
        0,
        ("report", "sample_transcripts/ja_tools_session.jsonl", "--estimator", "safe", "--json"),
    ),
    "fit-fits": ("fit", 0, ("fit", f"{FIT}/fits.jsonl", "--budget", "100", "--json")),
    "fit-cleared": ("fit", 0, ("fit", f"{FIT}/cleared.jsonl", "--budget", "2000", "--overhead", "0", "--json")),
    "fit-turns-dropped": ("fit", 0, ("fit", f"{FIT}/turns.jsonl", "--budget", "500", "--overhead", "0", "--json")),
    "fit-rounds-dropped": (
        "fit",
        0,
        ("fit", f"{FIT}/rounds.jsonl", "--budget", "500", "--overhead", "0", "--min-clear-ratio", "10", "--json"),
    ),
    "fit-too-long": (
        "fit",
        ExitCode.FAILED,
        ("fit", f"{FIT}/long/toolong.jsonl", "--budget", "1000", "--overhead", "0", "--json"),
    ),
    # Unanswered calls and an orphan result: repairs and input violations; and the notice.
    "fit-repaired-with-notice": (
        "fit",
        0,
        ("fit", "tests/data/claude_code/defects.jsonl", "--budget", "1000", "--add-notice", "--skip-invalid", "--json"),
    ),
    "fit-violation-kept": ("fit", 0, ("fit", "-", "--budget", "100", "--json")),
    # With a store: handles in the plan; then fetch one back, list the store, drop from it ({store}: a fresh file,
    # {handle}: the first handle fit-store's plan names).
    "fit-store": (
        "fit",
        0,
        ("fit", f"{FIT}/cleared.jsonl", "--budget", "2000", "--overhead", "0", "--store", "{store}", "--json"),
    ),
    "fetch": ("fetch", 0, ("fetch", "{handle}", "--store", "{store}", "--json")),
    "store": ("store", 0, ("store", "{store}", "--json")),
    "store-dropped": ("store", 0, ("store", "{store}", "--older-than", "0s", "--json")),
    "check": (
        "check",
        ExitCode.FAILED,
        ("check", FIT, "--budget", "2000", "--overhead", "0", "--format", "json"),
    ),
    "check-window-fail-on": (
        "check",
        ExitCode.FAILED,
        ("check", "tests/data/claude_code", "--budget", "60", "--window", "150", "--fail-on", "cleared", *JSON_CC),
    ),
    # A folder with files that are not transcripts: skipped_files.
    "check-skipped": ("check", 0, ("check", "tests/data/scan", "--budget", "100", "--format", "json")),
    "report-skipped": ("report", 0, ("report", "tests/data/scan", "--json")),
    "replay-skipped": ("replay", 0, ("replay", "tests/data/scan", "--budget", "100", "--json")),
    "replay-cache-check": (
        "replay",
        0,
        ("replay", "tests/data/claude_code/parallel.jsonl", "--budget", "3000", "--json", "-p", "windowfit"),
    ),
    "audit-skipped": ("audit", 0, ("audit", "tests/data/scan", "--provider-only", "--json")),
    "replay": (
        "replay",
        0,
        ("replay", "tests/data/replay/six_reads.jsonl", "--budget", "3000", "--window", "5000", "--json"),
    ),
    "audit-tokenizer": ("audit", 0, ("audit", "tests/data/report/bilingual.jsonl", "-t", "cl100k_base", "--json")),
    "audit-default-tokenizer": ("audit", 0, ("audit", "sample_transcripts", "--json")),
    "audit-suggest": (
        "audit",
        0,
        (
            "audit",
            "tests/data/report/bilingual.jsonl",
            *("-t", "cl100k_base", "-t", "mistral-tekken"),
            "--suggest",
            "--json",
        ),
    ),
    "audit-provider-only": (
        "audit",
        0,
        ("audit", "tests/data/claude_code/parallel.jsonl", "--provider-only", "--json"),
    ),
    "audit-provider-only-suggest": (
        "audit",
        0,
        ("audit", "tests/data/claude_code/parallel.jsonl", "--provider-only", "--suggest", "--json"),
    ),
}

OPEN_MAPS = frozenset({"by_role", "by_kind", "line_kinds", "outcomes"})
"""Objects keyed by data (a role, a kind of line, an outcome), not by a fixed set of keys."""


def load_schema(command: str) -> dict[str, Any]:
    schema: dict[str, Any] = orjson.loads((SCHEMAS / f"{command}.schema.json").read_bytes())
    return schema


@functools.cache
def validator(command: str) -> Draft202012Validator:
    return Draft202012Validator(load_schema(command))


def errors(command: str, document: object) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator(command).iter_errors(document)]


@pytest.fixture(scope="module")
def documents() -> Iterator[dict[str, Any]]:
    """Each variant's document (and, under ``"<variant> stdout"``, its text), each command run once
    (in-process, from the repository root)."""
    from windowfit.cli.app import app

    runner = CliRunner()
    found: dict[str, Any] = {}
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
        mp.chdir(ROOT)
        for name, (_, exit_code, args) in VARIANTS.items():
            stdin = RESULTS_NOT_FIRST if "-" in args else None
            places = {"{store}": str(Path(tmp) / "store.db")}
            if "fit-store" in found:
                places["{handle}"] = next(r["handle"] for r in found["fit-store"]["results"] if r["handle"])
            args = tuple(places.get(a, a) for a in args)
            result = runner.invoke(app, list(args), input=stdin, catch_exceptions=False)
            assert result.exit_code == exit_code, (name, result.stderr)
            found[name] = orjson.loads(result.stdout)
            found[f"{name} stdout"] = result.stdout
    yield found


def objects(value: object, key: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every JSON object in a document with a closed set of keys, with the key it sits under."""
    if isinstance(value, dict):
        if key not in OPEN_MAPS:
            yield key, value
        for k, v in value.items():
            yield from objects(v, k)
    elif isinstance(value, list):
        for item in value:
            yield from objects(item, key)


def shapes(command: str) -> dict[str, dict[str, Any]]:
    """The schema's object shapes: the document itself (its ``title``) and each ``$defs`` entry named ``*Json``."""
    schema = load_schema(command)
    found = {schema["title"]: schema}
    found.update({name: d for name, d in schema["$defs"].items() if name.endswith("Json")})
    return found


# --------------------------------------------------------------------------
# The schemas themselves


@pytest.mark.parametrize("command", COMMANDS)
def test_schema_is_valid_draft_2020_12(command: str) -> None:
    schema = load_schema(command)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_object_shape_is_closed_and_requires_every_key(command: str) -> None:
    for name, shape in shapes(command).items():
        assert shape["type"] == "object", name
        assert shape["additionalProperties"] is False, name
        assert sorted(shape["required"]) == sorted(shape["properties"]), name


@pytest.mark.parametrize("command", COMMANDS)
def test_schema_shapes_are_the_typed_dicts_of_serialize(command: str) -> None:
    for name, shape in shapes(command).items():
        typed = getattr(json_shapes, name, None)
        assert typed is not None and typing.is_typeddict(typed), f"json_shapes.{name} is not a TypedDict"
        assert getattr(serialize, name) is typed  # serialize gives the shapes it builds, as it did
        assert typed.__required_keys__ == set(shape["properties"]), name
        assert not typed.__optional_keys__, name


def test_every_typed_dict_of_serialize_has_a_schema() -> None:
    typed_dicts = {name for name, value in vars(json_shapes).items() if typing.is_typeddict(value)}
    in_schemas = {name for command in COMMANDS for name in shapes(command)}
    assert typed_dicts == in_schemas


# --------------------------------------------------------------------------
# Every command's output validates


@pytest.mark.parametrize("variant", VARIANTS)
def test_json_output_validates_against_its_schema(documents: dict[str, Any], variant: str) -> None:
    command = VARIANTS[variant][0]
    assert errors(command, documents[variant]) == []


@pytest.mark.parametrize("command", COMMANDS)
def test_the_variants_fill_every_shape_of_the_schema(documents: dict[str, Any], command: str) -> None:
    """Each object shape occurs at least once in the variants' output, so no part of a schema goes unchecked
    because the outputs happened to hold only empty lists or nulls there."""
    seen = {
        frozenset(obj)
        for variant, (schema, _, _) in VARIANTS.items()
        if schema == command
        for _, obj in objects(documents[variant])
    }
    missing = [name for name, shape in shapes(command).items() if frozenset(shape["properties"]) not in seen]
    assert missing == []


GOLDEN_VARIANTS = ("report-many", "report-claude-code", "replay", "audit-provider-only-suggest")
"""Documents no other golden file pins (fit's and check's are in test_cli_fit.py and test_cli_check.py);
audit's with a tokenizer name package versions, so only the provider-only one is pinned."""


@pytest.mark.parametrize("variant", GOLDEN_VARIANTS)
def test_json_output_matches_golden(
    documents: dict[str, Any], golden: Callable[[str, str], None], variant: str
) -> None:
    golden(f"json_{variant.replace('-', '_')}.json", documents[f"{variant} stdout"])


# --------------------------------------------------------------------------
# A wrong document is rejected (so the tests above can fail)


def accepted_mutations(command: str, document: dict[str, Any]) -> list[str]:
    """Mutate the first object of each shape in ``document``, one change at a time: each key removed, each key
    renamed, an unknown key added. The mutations the schema accepts (there should be none): only objects the
    schema closes are mutated."""
    check = validator(command)
    mutated = copy.deepcopy(document)
    seen: set[frozenset[str]] = set()
    accepted = []
    for where, obj in list(objects(mutated)):
        if frozenset(obj) in seen:
            continue
        seen.add(frozenset(obj))
        for key in sorted(obj):
            value = obj.pop(key)
            if check.is_valid(mutated):
                accepted.append(f"{where}: {key} removed")
            obj[f"{key}_renamed"] = value
            if check.is_valid(mutated):
                accepted.append(f"{where}: {key} renamed")
            del obj[f"{key}_renamed"]
            obj[key] = value
        obj["unexpected"] = 1
        if check.is_valid(mutated):
            accepted.append(f"{where}: key added")
        del obj["unexpected"]
    assert mutated == document
    return accepted


@pytest.mark.parametrize("variant", VARIANTS)
def test_schema_rejects_a_key_removed_renamed_or_added(documents: dict[str, Any], variant: str) -> None:
    assert accepted_mutations(VARIANTS[variant][0], documents[variant]) == []


def test_schema_rejects_a_wrong_enum_value_and_a_wrong_type(documents: dict[str, Any]) -> None:
    plan = copy.deepcopy(documents["fit-cleared"])
    plan["outcome"] = "trimmed"
    assert errors("fit", plan) == [
        "outcome: 'trimmed' is not one of ['fits', 'cleared', 'turns-dropped', 'rounds-dropped', 'too-long']"
    ]
    plan = copy.deepcopy(documents["fit-cleared"])
    plan["results"][0]["tokens"] = "1000"
    assert len(errors("fit", plan)) == 1


# --------------------------------------------------------------------------
# docs/json.md


def test_docs_name_every_key_of_every_schema() -> None:
    prose = re.sub(r"^```.*?^```", "", DOCS.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    quoted = set(re.findall(r"`([^`]+)`", prose))
    missing = sorted(
        f"{command}: {key}"
        for command in COMMANDS
        for shape in shapes(command).values()
        for key in shape["properties"]
        if key not in quoted
    )
    assert missing == []


def test_docs_link_every_schema() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for command in COMMANDS:
        assert f"(schema/{command}.schema.json)" in text
    assert "(schema/rows.schema.json)" in text  # --format jsonl|parquet rows, validated in test_rows.py
    assert sorted(p.name for p in SCHEMAS.iterdir()) == sorted(
        [*(f"{c}.schema.json" for c in COMMANDS), "rows.schema.json"]
    )
