"""The "openhands" format: OpenHands event streams, rebuilt as OpenHands'
ConversationMemory sends them (issue 9: a trajectory in a folder no longer
stops a scan, and openai_chat no longer claims it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import DATA, require_shared

from windowfit.fitting import Transcript
from windowfit.fitting.errors import UnknownShape
from windowfit.fitting.fit import fit
from windowfit.fitting.formats import FORMATS, Input, detect, load_path
from windowfit.fitting.transcript import Text
from windowfit.fitting.validate import check_request

FIXTURE = DATA / "openhands" / "trajectory.json"
CORPUS_FILE = "All-Hands-AI_OpenHands__basic.json"


def corpus_file() -> Path:
    return require_shared("corpus", "new-formats", "openhands", CORPUS_FILE)


def load_one(path: Path, **kwargs: bool) -> Transcript:
    (transcript,) = load_path(path, **kwargs)
    return transcript


def answered_calls(events: list[dict[str, Any]]) -> list[str]:
    """Call ids with an observation, counted from the events themselves."""
    return [
        e["tool_call_metadata"]["tool_call_id"] for e in events if "observation" in e and e.get("tool_call_metadata")
    ]


@pytest.mark.parametrize("which", ["fixture", "corpus"])
def test_calls_and_results_are_the_observed_tool_calls(which: str) -> None:
    path = FIXTURE if which == "fixture" else corpus_file()
    events = orjson.loads(path.read_bytes())
    t = load_one(path)
    assert (t.format, t.dialect) == ("openhands", "openai")
    assert detect(Input(str(path))).name == "openhands"
    assert not FORMATS["openai_chat"].sniff(Input(str(path)).head())
    expected = answered_calls(events)
    assert sorted(c.id for m in t.messages for c in m.tool_calls) == sorted(expected)
    assert sorted(r.call_id for m in t.messages for r in m.tool_results) == sorted(expected)
    assert check_request(t) == ()
    # finish is the agent's last text, not a call
    assert t.messages[-1].role == "assistant" and not t.messages[-1].tool_calls


def test_parallel_calls_of_one_response_form_one_round_with_measured_usage() -> None:
    t = load_one(FIXTURE)
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "tool", "assistant", "tool", "assistant"]
    assert [c.id for c in t.messages[1].tool_calls] == ["call_ls", "call_cat"]
    assert isinstance(t.system[0], Text) and t.system[0].text.startswith("You are OpenHands agent")
    assert [d.name for d in t.tools] == ["execute_bash"]
    # usage from each model_response: the request before that response; cached tokens split out
    assert [(u.before, u.input_tokens, u.cache_read_tokens) for u in t.usage] == [
        (1, 2400, 0),
        (4, 3900 - 2304, 2304),
        (6, 4600 - 3840, 3840),
    ]
    assert dict(t.line_kinds) == {"observation agent_state_changed": 2}


@pytest.mark.parametrize("which", ["fixture", "corpus"])
def test_fits_to_a_valid_request(which: str) -> None:
    t = load_one(FIXTURE if which == "fixture" else corpus_file())
    for budget in (300, 1_200, 100_000):
        fitted = fit(t, budget=budget)
        for dialect in ("anthropic", "openai"):
            assert check_request(fitted.transcript, dialect) == ()


def test_an_event_that_is_neither_action_nor_observation_is_located(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.json"
    events = orjson.loads(FIXTURE.read_bytes())[:2]
    path.write_bytes(orjson.dumps([*events, {"id": 9, "source": "agent", "what": "?"}], option=orjson.OPT_INDENT_2))
    with pytest.raises(UnknownShape, match="not an OpenHands event"):
        load_one(path)
    assert len(load_one(path, skip_invalid=True).skipped) == 1
