"""Write the sample transcripts in this folder, byte for byte reproducibly.

Run ``python sample_transcripts/generate.py``. Every file comes from a fixed
seed and the hand-written vocabularies in ``prose.py``: no third-party text.
"""

from __future__ import annotations

import json
import random
import string
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:  # run as a script: make the repository importable
    sys.path.insert(0, str(HERE.parent))

from sample_transcripts import prose  # noqa: E402  (after the sys.path fix above)

Json = dict[str, Any]
"""One message object, as written on one line."""


# --------------------------------------------------------------------------
# Message shapes


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call and the text its result carries."""

    name: str
    input: Json
    result: str


class Ids:
    """Unique, reproducible tool-call ids such as ``toolu_…`` or ``call_…``."""

    def __init__(self, rng: random.Random, prefix: str, length: int = 24) -> None:
        self.rng, self.prefix, self.length = rng, prefix, length
        self.seen: set[str] = set()

    def new(self) -> str:
        while True:
            new = self.prefix + "".join(self.rng.choices(string.ascii_letters + string.digits, k=self.length))
            if new not in self.seen:
                self.seen.add(new)
                return new


def system(text: str) -> Json:
    return {"role": "system", "content": text}


def user(text: str) -> Json:
    return {"role": "user", "content": text}


def assistant(text: str) -> Json:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def anthropic_round(ids: Ids, text: str, calls: Iterable[Call]) -> list[Json]:
    """An assistant message calling tools (in parallel if several) and the user
    message carrying every result."""
    pairs = [(ids.new(), call) for call in calls]
    uses = [{"type": "tool_use", "id": i, "name": c.name, "input": c.input} for i, c in pairs]
    results = [{"type": "tool_result", "tool_use_id": i, "content": c.result} for i, c in pairs]
    return [
        {"role": "assistant", "content": [{"type": "text", "text": text}, *uses]},
        {"role": "user", "content": results},
    ]


def openai_round(ids: Ids, calls: Iterable[Call]) -> list[Json]:
    """An OpenAI assistant message with parallel ``tool_calls`` and one ``tool`` message per call."""
    pairs = [(ids.new(), call) for call in calls]
    tool_calls = [
        {"id": i, "type": "function", "function": {"name": c.name, "arguments": compact(c.input)}} for i, c in pairs
    ]
    answers = [{"role": "tool", "tool_call_id": i, "content": c.result} for i, c in pairs]
    return [{"role": "assistant", "content": None, "tool_calls": tool_calls}, *answers]


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def write_jsonl(path: Path, messages: Iterable[Json]) -> int:
    """Write one message per line (UTF-8, ``\\n``); the number of bytes written."""
    data = "".join(compact(m) + "\n" for m in messages).encode("utf-8")
    path.write_bytes(data)
    return len(data)


# --------------------------------------------------------------------------
# 1. An English coding session: five human turns, many long file reads

EN_SYSTEM = (
    "You are a coding agent working in the repository at /home/dev/windowfit. "
    "Use the tools to read files, search the code, run commands and edit files. "
    "Prefer small, reviewed changes and run the tests after each edit. "
    "When the conversation outgrows what the model accepts, the oldest tool results are cleared and the "
    "newest are kept whole, so do not stop a long task to save space; re-read a file if you need "
    "something that was cleared."
)
EN_TURNS = (
    "The report command crashes on transcripts with parallel tool calls. Can you find out why and fix it?",
    "Thanks. Now make the estimator count CJK punctuation as CJK, and add tests for Japanese and Chinese text.",
    "Stage 1 clears results one at a time; the spec says batches of 4. Please read the fitting code and fix it.",
    "Add a --json flag to the fit command that prints the plan, and update the README.",
    "Last thing: run the whole test suite and the linters, fix anything that fails, and summarise what changed.",
)
EN_ROUNDS_PER_TURN = (17, 15, 14, 16, 14)
EN_DIRS = ("src/windowfit", "src/windowfit/formats", "src/windowfit/cli", "tests", "docs")
EN_READ_TEXTS = (
    "Let me read `{path}` to see how the {noun} is handled.",
    "Next I'll look at `{path}`, which builds the {noun}.",
    "The {noun} comes from `{path}`; reading it.",
    "I need the rest of the {noun} logic in `{path}`.",
)
EN_ANSWERS = (
    "Found it: the {noun} was read before its {noun2} was paired, so a parallel call lost its result. "
    "I fixed the pairing in `{path}` and added a regression test; the suite passes.",
    "Done. CJK punctuation and fullwidth forms now count as CJK; new tests cover Japanese and Chinese samples.",
    "Stage 1 now clears whole batches of 4, oldest first, and never clears the newest result. Tests updated.",
    "The fit command has a --json flag that prints the plan with sorted keys; the README documents it.",
    "All tests and linters pass. Summary: pairing fix, CJK punctuation, batch clearing, and the --json plan output.",
)


def en_files(seed: int) -> dict[str, str]:
    """The repository the agent reads: 30 paths, each with fixed content."""
    rng = random.Random(seed)
    files: dict[str, str] = {}
    while len(files) < 30:
        directory = rng.choice(EN_DIRS)
        suffix = ".md" if directory == "docs" else ".py"
        name = f"{rng.choice(prose.VERBS)}_{rng.choice(prose.NOUNS)}"
        if directory == "tests":
            name = f"test_{name}"
        path = f"{directory}/{name}{suffix}"
        size = max(rng.randint(2000, 12000), rng.randint(2000, 12000))
        body = prose.markdown_doc(rng, size) if suffix == ".md" else prose.python_module(rng, size)
        files[path] = prose.numbered(body)
    return files


def en_test_output(rng: random.Random) -> str:
    """About 200 characters of test-runner output."""
    passed, failed = rng.randint(120, 260), rng.choice((0, 0, 1, 2))
    lines = ["=" * 29 + " test session starts " + "=" * 30, f"collected {passed + failed} items", ""]
    if failed:
        lines.append(
            f"FAILED tests/test_fit.py::test_clears_{rng.choice(prose.ADJECTIVES)}_batch_first - AssertionError"
        )
    summary = f"{failed} failed, {passed} passed" if failed else f"{passed} passed"
    lines.append(f"==== {summary} in {rng.randint(1, 9)}.{rng.randint(10, 99)}s ====")
    return "\n".join(lines)


def en_grep_output(rng: random.Random, files: dict[str, str], noun: str) -> str:
    """A few ``path:line: code`` matches."""
    paths = sorted(files)
    return "\n".join(
        f"{rng.choice(paths)}:{rng.randint(1, 300)}:    {noun} = {rng.choice(prose.NOUNS)}.{rng.choice(prose.VERBS)}()"
        for _ in range(rng.randint(3, 12))
    )


def en_round(rng: random.Random, ids: Ids, files: dict[str, str]) -> list[Json]:
    """One tool round: mostly file reads, sometimes two in parallel, a test run, a search or an edit."""
    paths = sorted(files)
    path, noun = rng.choice(paths), rng.choice(prose.NOUNS)
    roll = rng.random()
    if roll < 0.62:
        text = rng.choice(EN_READ_TEXTS).format(path=path, noun=noun)
        return anthropic_round(ids, text, [Call("Read", {"file_path": path}, files[path])])
    if roll < 0.74:
        other = rng.choice(paths)
        text = f"Reading `{path}` and `{other}` together."
        calls = [Call("Read", {"file_path": p}, files[p]) for p in (path, other)]
        return anthropic_round(ids, text, calls)
    if roll < 0.88:
        text = "Running the tests to see where we stand."
        call = Call("Bash", {"command": "pytest -q"}, en_test_output(rng))
    elif roll < 0.95:
        text = f"Searching for every place that touches the {noun}."
        call = Call("Grep", {"pattern": noun, "path": "src"}, en_grep_output(rng, files, noun))
    else:
        text = f"Applying the fix to `{path}`."
        edit = {"file_path": path, "old_string": f"{noun} = None", "new_string": f"{noun} = {noun}_default"}
        call = Call("Edit", edit, f"The file {path} has been updated.")
    return anthropic_round(ids, text, [call])


def en_coding_session(seed: int = 1) -> Iterator[Json]:
    rng = random.Random(seed)
    ids = Ids(rng, "toolu_")
    files = en_files(seed + 1000)
    yield system(EN_SYSTEM)
    for ask, rounds, answer in zip(EN_TURNS, EN_ROUNDS_PER_TURN, EN_ANSWERS, strict=True):
        yield user(ask)
        for _ in range(rounds):
            yield from en_round(rng, ids, files)
        yield assistant(
            answer.format(noun=rng.choice(prose.NOUNS), noun2=rng.choice(prose.NOUNS), path=rng.choice(sorted(files)))
        )


# --------------------------------------------------------------------------
# 2. A Russian subagent: one instruction, then one long turn of chapter reads

RU_CHAPTERS = 35
RU_SYSTEM = (
    "Ты — субагент-редактор. Ты читаешь рукопись по главам с помощью инструмента Read "
    "и сверяешь текст с заметками автора. Отвечай по-русски, кратко и по делу."
)
RU_INSTRUCTION = (
    f"Прочитай главы с 1 по {RU_CHAPTERS} из папки chapters/ (файлы chapters/glava_01.md … "
    f"chapters/glava_{RU_CHAPTERS:02d}.md) и сверь каждую с заметками в notes.md: имена, даты, порядок событий. "
    "Читай все главы по порядку, ничего не пропускай. В конце перечисли все расхождения по главам."
)
RU_FINDINGS = (
    "всё совпадает с заметками",
    "имя соседки здесь другое, чем в заметках",
    "дата отъезда расходится с хронологией в notes.md",
    "письмо находят раньше, чем указано в заметках",
    "паром уходит утром, а в заметках — вечером",
    "расхождений нет, но повторяется сцена с лампой из прошлой главы",
    "возраст брата не совпадает с заметками",
)


def ru_notes(rng: random.Random) -> str:
    """The author's notes: one line per chapter."""
    lines = ["# Заметки к рукописи", ""]
    for n in range(1, RU_CHAPTERS + 1):
        lines.append(f"- Глава {n}: {prose.russian_sentence(rng)}")
    return prose.numbered("\n".join(lines))


def ru_subagent_chapters(seed: int = 2) -> Iterator[Json]:
    rng = random.Random(seed)
    ids = Ids(rng, "toolu_")
    yield system(RU_SYSTEM)
    yield user(RU_INSTRUCTION)
    yield from anthropic_round(
        ids, "Сначала прочитаю заметки.", [Call("Read", {"file_path": "notes.md"}, ru_notes(rng))]
    )
    findings: list[str] = []
    for n in range(1, RU_CHAPTERS + 1):
        if n == 1:
            text = "Заметки прочитал. Читаю главу 1."
        else:
            findings.append(f"Глава {n - 1}: {rng.choice(RU_FINDINGS)}.")
            text = f"{findings[-1]} Перехожу к главе {n}."
        chapter = prose.russian_chapter(rng, n, rng.randint(6000, 8000))
        call = Call("Read", {"file_path": f"chapters/glava_{n:02d}.md"}, prose.numbered(chapter))
        yield from anthropic_round(ids, text, [call])
    findings.append(f"Глава {RU_CHAPTERS}: {rng.choice(RU_FINDINGS)}.")
    yield assistant("Прочитал все главы. Итог сверки с заметками:\n" + "\n".join(findings))


# --------------------------------------------------------------------------
# 3. A Japanese session with tools (one document in Chinese)

JA_SYSTEM = (
    "あなたはリポジトリのドキュメントを管理するエージェントです。"
    "ツールでファイルを読み、検索し、コマンドを実行できます。回答は日本語でお願いします。"
)
JA_TURNS = (
    "docs/ja/ 以下の設計ドキュメントを読んで、用語の揺れ（「トークン」と「token」など）を一覧にしてください。",
    "ありがとうございます。では README.zh-CN.md の中国語版とも比較して、内容が古い箇所を教えてください。",
    "テストを実行して、ドキュメントの例が実際の出力と一致しているか確認してください。",
    "最後に、修正が必要な箇所をまとめて、変更案を日本語で書いてください。",
)
JA_ROUNDS_PER_TURN = (6, 4, 4, 3)
JA_DOCS = tuple(
    f"docs/ja/{name}.md" for name in ("概要", "見積もり", "削除の方針", "サブエージェント", "用語集", "設定")
)
JA_ANSWERS = (
    "用語の揺れを{n}件見つけました。「トークン」と「token」、「ツール結果」と「ツールの結果」が混在しています。",
    "中国語版は二つ前の版のままで、バッチ削除（四件ずつ）の説明が抜けています。",
    "テストは全て成功しましたが、ドキュメントの出力例のうち{n}件が実際の出力と一致していません。",
    "変更案：用語を「トークン」「ツール結果」に統一し、中国語版に削除の方針を追記し、出力例を更新します。",
)


def ja_files(rng: random.Random) -> dict[str, str]:
    files = {path: prose.numbered(prose.japanese_doc(rng, rng.randint(1500, 4000))) for path in JA_DOCS}
    files["README.zh-CN.md"] = prose.numbered(prose.japanese_prose(rng, 3000, chinese_share=1.0))
    return files


def ja_call(rng: random.Random, turn: int, files: dict[str, str]) -> tuple[str, Call]:
    """The assistant's sentence and one call, chosen to fit the turn's task."""
    if turn == 1 and rng.random() < 0.5:
        return "中国語版の README を読みます。", Call(
            "Read", {"file_path": "README.zh-CN.md"}, files["README.zh-CN.md"]
        )
    if turn == 2 and rng.random() < 0.6:
        passed = rng.randint(80, 200)
        seconds = f"{rng.randint(1, 9)}.{rng.randint(10, 99)}s"
        output = f"collected {passed} items\n\n{'.' * 40}\n==== {passed} passed in {seconds} ===="
        return "テストを実行します。", Call("Bash", {"command": "pytest -q"}, output)
    if rng.random() < 0.25:
        term = rng.choice(("トークン", "ツール結果", "予算", "キャッシュ"))
        lines = [
            f"{rng.choice(JA_DOCS)}:{rng.randint(1, 90)}:{term}{rng.choice(prose.JA_PREDICATES)}。"
            for _ in range(rng.randint(3, 9))
        ]
        return f"「{term}」の使われ方を検索します。", Call("Grep", {"pattern": term, "path": "docs"}, "\n".join(lines))
    path = rng.choice(JA_DOCS)
    return f"{path} を読みます。", Call("Read", {"file_path": path}, files[path])


def ja_tools_session(seed: int = 3) -> Iterator[Json]:
    rng = random.Random(seed)
    ids = Ids(rng, "toolu_")
    files = ja_files(rng)
    yield system(JA_SYSTEM)
    for turn, (ask, rounds, answer) in enumerate(zip(JA_TURNS, JA_ROUNDS_PER_TURN, JA_ANSWERS, strict=True)):
        yield user(ask)
        for _ in range(rounds):
            text, call = ja_call(rng, turn, files)
            yield from anthropic_round(ids, text, [call])
        yield assistant(answer.format(n=rng.randint(2, 9)))


# --------------------------------------------------------------------------
# 4. OpenAI chat shape with parallel tool calls

OA_SYSTEM = (
    "You are a travel assistant. Use the tools to answer questions about weather, local time and air quality. "
    "When you need several answers, call the tools in parallel."
)
OA_CONDITIONS = ("sunny", "cloudy", "light rain", "overcast", "clear", "showers", "windy")
OA_TURNS: tuple[tuple[str, tuple[tuple[tuple[str, Json], ...], ...], str], ...] = (
    (
        "What's the weather in Paris, Berlin and Rome right now?",
        ((("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Berlin"}), ("get_weather", {"city": "Rome"})),),
        "Right now Paris is {c0}, Berlin is {c1} and Rome is {c2}.",
    ),
    (
        "And what time is it in Tokyo and Sydney?",
        ((("get_local_time", {"city": "Tokyo"}), ("get_local_time", {"city": "Sydney"})),),
        "It is evening in Tokyo and late evening in Sydney.",
    ),
    (
        "Compare the air quality in Delhi, Beijing, Mexico City and São Paulo.",
        (
            (
                ("get_air_quality", {"city": "Delhi"}),
                ("get_air_quality", {"city": "Beijing"}),
                ("get_air_quality", {"city": "Mexico City"}),
                ("get_air_quality", {"city": "São Paulo"}),
            ),
        ),
        "São Paulo has the cleanest air of the four today; Delhi the worst.",
    ),
    (
        "I fly from Paris to Tokyo tomorrow. Weather at both ends, the local time in Tokyo, and a 3-day forecast?",
        (
            (
                ("get_weather", {"city": "Paris"}),
                ("get_weather", {"city": "Tokyo"}),
                ("get_local_time", {"city": "Tokyo"}),
            ),
            (("get_forecast", {"city": "Tokyo", "days": 3}), ("get_forecast", {"city": "Paris", "days": 3})),
        ),
        "Paris is {c0} for your departure; Tokyo will be {c1} on arrival. The forecast stays mild for three days.",
    ),
)


def oa_result(rng: random.Random, name: str, args: Json) -> str:
    """A small JSON result for one of the travel tools."""
    city = args["city"]
    if name == "get_weather":
        value: Json = {"city": city, "temp_c": rng.randint(-3, 31), "condition": rng.choice(OA_CONDITIONS)}
    elif name == "get_local_time":
        value = {"city": city, "local_time": f"2025-03-14T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00"}
    elif name == "get_air_quality":
        value = {"city": city, "aqi": rng.randint(15, 240), "dominant": rng.choice(("pm25", "pm10", "o3", "no2"))}
    else:
        days = [
            {"day": d + 1, "high_c": rng.randint(5, 25), "condition": rng.choice(OA_CONDITIONS)}
            for d in range(args["days"])
        ]
        value = {"city": city, "days": days}
    return compact(value)


def parallel_calls_openai(seed: int = 4) -> Iterator[Json]:
    rng = random.Random(seed)
    ids = Ids(rng, "call_")
    yield system(OA_SYSTEM)
    for ask, rounds, answer in OA_TURNS:
        yield user(ask)
        conditions: list[str] = []
        for round_calls in rounds:
            calls = [Call(name, args, oa_result(rng, name, args)) for name, args in round_calls]
            conditions.extend(json.loads(c.result).get("condition", "") for c in calls)
            yield from openai_round(ids, calls)
        fill = {f"c{i}": c for i, c in enumerate(conditions)}
        yield {"role": "assistant", "content": answer.format(**fill)}


# --------------------------------------------------------------------------
# 5. A data tool: search_mentions returns more records every call (SPEC section 5)

DT_SEARCHES = 8
DT_SYSTEM = (
    "You are a brand-monitoring assistant. search_mentions(query, days) returns every matching mention "
    "of the last `days` days as a JSON array; get_mention(id) returns one mention."
)
DT_SOURCES = ("forum", "blog", "news", "social", "review")
DT_OPINIONS = (
    ("positive", "boils faster than anything I have owned"),
    ("positive", "looks great on the counter"),
    ("neutral", "arrived on time, too early to judge"),
    ("negative", "the lid started to wobble after a week"),
    ("negative", "is louder than the ads suggest"),
    ("neutral", "costs about the same as the old model"),
    ("positive", "keeps water warm for ages"),
    ("negative", "support took five days to answer"),
)
DT_OPENERS = ("Honestly, the Lumen kettle", "My new Lumen kettle", "The Lumen kettle", "So far the Lumen kettle")


def dt_day(index: int) -> int:
    """How many days back the mention at ``index`` is: search k returns the first ``k*k*5``."""
    return next(k for k in range(1, index + 2) if index < k * k * 5)


def dt_records(rng: random.Random, count: int) -> list[Json]:
    """Mentions, newest first."""
    records = []
    for i in range(count):
        sentiment, opinion = rng.choice(DT_OPINIONS)
        records.append(
            {
                "id": f"m_{100000 + i:06d}",
                "date": f"2025-03-{32 - dt_day(i):02d}",
                "source": rng.choice(DT_SOURCES),
                "author": f"@{rng.choice(prose.ADJECTIVES)}_{rng.choice(prose.NOUNS)}{rng.randint(1, 999)}",
                "sentiment": sentiment,
                "text": f"{rng.choice(DT_OPENERS)} {opinion}.",
                "likes": rng.randint(0, 400),
            }
        )
    return records


def data_tool_search(seed: int = 5) -> Iterator[Json]:
    rng = random.Random(seed)
    ids = Ids(rng, "toolu_")
    records = dt_records(rng, DT_SEARCHES * DT_SEARCHES * 5)

    def search(k: int) -> list[Json]:
        found = records[: k * k * 5]
        text = f"Searching mentions of the last {k} day{'s' if k > 1 else ''}."
        return anthropic_round(
            ids,
            text,
            [Call("search_mentions", {"query": "lumen kettle", "days": k}, json.dumps(found, ensure_ascii=False))],
        )

    def lookup(k: int) -> list[Json]:
        record = records[rng.randrange(k * k * 5)]
        text = f"Looking at {record['id']} in detail."
        return anthropic_round(ids, text, [Call("get_mention", {"id": record["id"]}, compact(record))])

    yield system(DT_SYSTEM)
    yield user("How is the launch of the Lumen kettle being received? Start with the last day and widen the window.")
    for k in range(1, 6):
        yield from search(k)
        if k == 3:
            yield from lookup(k)
    yield assistant("Mostly positive so far; complaints are about the lid and the noise. Want a wider window?")
    yield user("Yes, keep widening it day by day up to 8 days and tell me whether the complaints grow.")
    for k in range(6, DT_SEARCHES + 1):
        yield from search(k)
    yield from lookup(DT_SEARCHES)
    yield assistant("Over 8 days the share of negative mentions stays steady; lid complaints grow with volume only.")


# --------------------------------------------------------------------------

SAMPLES: dict[str, Callable[[], Iterator[Json]]] = {
    "en_coding_session.jsonl": en_coding_session,
    "ru_subagent_chapters.jsonl": ru_subagent_chapters,
    "ja_tools_session.jsonl": ja_tools_session,
    "parallel_calls_openai.jsonl": parallel_calls_openai,
    "data_tool_search.jsonl": data_tool_search,
}


# --------------------------------------------------------------------------
# A long single-turn agent session (issue 14: cuts that rarely move). Not one of
# the samples written here (600 rounds are 3 MB): the tests and benchmarks/bench_steps.py
# make it with ``long_single_turn(rounds=...)``.

LONG_TEXTS = (
    "Reading `{path}` next.",
    "Checking `{path}` against the notes.",
    "Running the tests after the last change.",
    "Searching for the {noun} in the sources.",
)


def long_single_turn(seed: int = 6, rounds: int = 600, scale: float = 1.0) -> Iterator[Json]:
    """A coding agent's one long turn: an instruction, then ``rounds`` tool rounds,
    each a short remark and one call: file reads (1,000-12,000 chars, 60%),
    test runs (400-3,000, 25%) or searches (200-1,500, 15%), then a summary.
    Results come from a pool of generated texts, each made unique by its header;
    ``scale`` multiplies their lengths (a smaller session of the same shape)."""
    rng = random.Random(seed)
    ids = Ids(rng, "toolu_")

    def size(low: int, high: int) -> int:
        return max(1, int(rng.randint(low, high) * scale))

    reads = [prose.python_module(rng, size(1_000, 12_000)) for _ in range(40)]
    tests = [prose.ascii_heavy_text(rng, size(400, 3_000)) for _ in range(20)]
    greps = [prose.ascii_heavy_text(rng, size(200, 1_500)) for _ in range(20)]
    yield system(EN_SYSTEM)
    yield user("Go through every module under src/, check it against docs/spec.md, fix what disagrees, and test.")
    for i in range(rounds):
        path, noun = f"src/windowfit/m{rng.randint(0, 199):03d}.py", rng.choice(prose.NOUNS)
        roll = rng.random()
        if roll < 0.6:
            call = Call("Read", {"file_path": path}, f"{path} (round {i})\n{rng.choice(reads)}")
            text = LONG_TEXTS[rng.randint(0, 1)].format(path=path)
        elif roll < 0.85:
            call = Call("Bash", {"command": "pytest -q"}, f"round {i}: pytest -q\n{rng.choice(tests)}")
            text = LONG_TEXTS[2]
        else:
            call = Call("Grep", {"pattern": noun, "path": "src"}, f"round {i}: grep {noun}\n{rng.choice(greps)}")
            text = LONG_TEXTS[3].format(noun=noun)
        yield from anthropic_round(ids, text, [call])
    yield assistant("Every module is checked; the disagreements are fixed and the tests pass.")


def main() -> None:
    """Write every sample next to this script and print its size."""
    for name, make in SAMPLES.items():
        size = write_jsonl(HERE / name, make())
        print(f"{size:>9,} bytes  {name}")


if __name__ == "__main__":
    main()
