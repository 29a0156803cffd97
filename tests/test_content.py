"""The content-kind classifier, the texts of each block that the estimator
counts, and the dominant script class of a block."""

from __future__ import annotations

import pytest

from windowfit.fitting import CharCounts
from windowfit.fitting.content import block_texts, classify_content, dominant_class
from windowfit.fitting.transcript import Image, Other, Text, Thinking, ToolCall, ToolResult


def test_block_texts_follow_what_the_estimator_counts() -> None:
    assert block_texts(Text("hi")) == ("hi",)
    assert block_texts(Thinking("hm")) == ("hm",)
    assert block_texts(ToolCall("c", "grep", '{"q":1}')) == ("grep", '{"q":1}')
    assert block_texts(ToolResult("c", (Text("a"), Image("image/png", 5), Text("b")))) == ("a", "b")
    assert block_texts(Other("document", '{"data":"QUJD"}', counted='{"data":""}', binary_payloads=1)) == (
        '{"data":""}',
    )
    assert block_texts(Image("image/png", 5)) == ()


def test_dominant_class_ties_go_to_ascii_then_cjk() -> None:
    assert dominant_class(CharCounts(2, 2, 2)) == "ascii"
    assert dominant_class(CharCounts(1, 2, 2)) == "cjk"
    assert dominant_class(CharCounts(1, 0, 2)) == "other"


# --------------------------------------------------------------------------
# Kinds of content


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("", "prose"),
        ("The store keeps the newest results whole.\nOld ones are cleared in batches of four.", "prose"),
        ("Старый смотритель маяка вспоминал прошлую зиму.", "prose"),
        ("駅前の古い喫茶店には、今日も常連客が三人だけ座っていた。", "prose"),
        ("# Notes\n\n- first point (see above)\n- second point\n\nSome closing words.", "prose"),
        ('{"city":"Paris","temp_c":12}', "json"),
        ('[{"id": 1}, {"id": 2}]', "json"),
        ('{"a": 1}\n{"a": 2}\n{"a": 3}', "json"),
        ('  "id": "m_1",\n  "date": "2025-03-31",\n  "likes": 3,\n}', "json"),
        ("| name | size |\n| --- | --- |\n| a | 1 |", "json"),
        ("id,name,size\n1,a,10\n2,b,20\n3,c,30", "json"),
        ("2025-03-14 22:05:00 INFO started\n2025-03-14 22:05:01 ERROR failed: disk full", "logs"),
        ("src/fit.py:130:    offset = entry.read()\ndocs/a.md:7:    offset = x", "logs"),
        ("collected 12 items\n\n....F.......\n==== 1 failed, 11 passed in 0.5s ====", "logs"),
        ("def f(x):\n    return x + 1\n\nclass A:\n    pass", "code"),
        ("     1\timport os\n     2\t\n     3\tdef main() -> None:\n     4\t    os.exit(0)", "code"),
        ("const x = 1;\nfunction f() {\n  return x;\n}", "code"),
        ("Here is the fix:\n```python\nx = 1\ny = 2\nprint(x + y)\n```", "code"),
        ("Mostly words here.\nAnd more words.\nStill prose.\nThe end.\n```\nx = 1\n```", "prose"),
    ],
)
def test_content_kind(text: str, kind: str) -> None:
    assert classify_content(text) == kind


def test_classifier_is_deterministic_and_total_on_odd_input() -> None:
    for text in ("{", "[1, 2", "   \n\n  ", "😀" * 10, "\x00\x01", "a" * 10_000):
        assert classify_content(text) == classify_content(text)
        assert classify_content(text) in ("prose", "code", "json", "logs")
