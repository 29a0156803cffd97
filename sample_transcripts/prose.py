"""Deterministic text from small hand-written vocabularies: code-like English,
Russian prose, Japanese and Chinese prose. Shared by ``generate.py`` and the
benchmarks; every function takes its own ``random.Random``."""

from __future__ import annotations

import random

# --------------------------------------------------------------------------
# English and code

NOUNS = (
    "budget", "window", "token", "message", "result", "session", "request", "record", "batch", "cache",
    "prefix", "turn", "round", "stub", "handle", "page", "store", "reader", "writer", "parser",
    "estimate", "report", "plan", "config", "source", "block", "call", "tool", "chapter", "index",
    "entry", "limit", "path", "line", "offset", "digest", "schema", "field", "option", "outcome",
)  # fmt: skip
VERBS = (
    "load", "parse", "build", "fit", "clear", "count", "merge", "split", "render", "write",
    "read", "check", "apply", "resolve", "format", "validate", "collect", "measure", "replay", "store",
    "fetch", "sort", "group", "trim", "encode",
)  # fmt: skip
TYPES = ("str", "int", "bool", "list[str]", "dict[str, int]", "Path", "bytes", "float", "tuple[int, ...]")
ADJECTIVES = (
    "oldest", "newest", "cleared", "protected", "pending", "empty", "largest", "current", "stale", "whole",
)  # fmt: skip
ENGLISH_TEMPLATES = (
    "The {n1} {v1}s the {n2} before it {v2}s the {n3}.",
    "Every {a} {n1} is {v1}ed once and kept in the {n2}.",
    "We {v1} the {n1} only when the {n2} is {a}.",
    "If the {n1} does not fit, {v1} the {a} {n2} first.",
    "A {n1} without a {n2} is reported, never silently dropped.",
    "This {v1}s each {n1} in order and returns the {a} {n2}.",
    "Note that the {n1} may be {a} after we {v1} the {n2}.",
    "Callers {v1} the {n1} and then {v2} the {n2} by hand.",
)
CODE_COMMENTS = (
    "keep the {a} {n1} so the {n2} stays stable",
    "{v1} before {v2}ing: the {n1} may be {a}",
    "the {n1} is never {v1}ed twice",
    "TODO: {v1} the {n1} lazily once the {n2} is {a}",
)
NON_ASCII_SPRINKLE = ("é", "—", "→", "“", "”", "ü", "…", "€", "ß", "✓", "😀", "ñ", "°", "×", "å")


def _slots(rng: random.Random) -> dict[str, str]:
    """Random fillers for the English templates."""
    return {
        "n1": rng.choice(NOUNS),
        "n2": rng.choice(NOUNS),
        "n3": rng.choice(NOUNS),
        "v1": rng.choice(VERBS),
        "v2": rng.choice(VERBS),
        "a": rng.choice(ADJECTIVES),
    }


def _fix_endings(text: str) -> str:
    """Crude spelling fixes for verbs glued to -s/-ed/-ing."""
    for bad, good in (("ees", "es"), ("eed ", "ed "), ("eing", "ing"), ("yed ", "ied "), ("ttes", "tes")):
        text = text.replace(bad, good)
    return text


def english_sentence(rng: random.Random) -> str:
    """One English sentence about the domain."""
    return _fix_endings(rng.choice(ENGLISH_TEMPLATES).format(**_slots(rng)))


def english_paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(english_sentence(rng) for _ in range(sentences))


def _python_function(rng: random.Random, indent: str = "") -> list[str]:
    """A plausible Python function of 4 to 14 lines."""
    s = _slots(rng)
    name = f"{s['v1']}_{s['n1']}"
    args = ", ".join(f"{rng.choice(NOUNS)}: {rng.choice(TYPES)}" for _ in range(rng.randint(1, 3)))
    body = [f'"""{_fix_endings(rng.choice(ENGLISH_TEMPLATES).format(**s))}"""']
    for _ in range(rng.randint(2, 8)):
        body.extend(_python_statement(rng))
    body.append(f"return {s['n2']}_{s['a']}")
    lines = [f"def {name}({args}) -> {rng.choice(TYPES)}:"]
    lines.extend("    " + line for line in body)
    return [indent + line for line in lines] + [""]


def _python_statement(rng: random.Random) -> list[str]:
    """One to three lines of a function body."""
    s = _slots(rng)
    kind = rng.randrange(6)
    if kind == 0:
        return [f"{s['n1']} = {s['n2']}.{s['v1']}({s['n3']}, {rng.randint(0, 64)})"]
    if kind == 1:
        return [f"if {s['n1']} is None:", f'    raise ValueError(f"no {s["n2"]} for {{{s["n3"]}!r}}")']
    if kind == 2:
        return [f"for {s['n1']} in {s['n2']}s:", f"    {s['n3']}s.append({s['n1']}.{s['v1']}())"]
    if kind == 3:
        return ["# " + _fix_endings(rng.choice(CODE_COMMENTS).format(**s))]
    if kind == 4:
        return [f"{s['n1']}_{s['a']} = [{s['n2']} for {s['n2']} in {s['n3']}s if {s['n2']}.{s['a']}]"]
    return [f'with open({s["n1"]}_path, encoding="utf-8") as f:', f"    {s['n2']} = f.read()"]


def _python_class(rng: random.Random) -> list[str]:
    """A small class with a docstring, fields and methods."""
    noun = rng.choice(NOUNS)
    lines = [f"class {noun.capitalize()}{rng.choice(NOUNS).capitalize()}:", f'    """{english_sentence(rng)}"""', ""]
    lines.extend(f"    {rng.choice(NOUNS)}: {rng.choice(TYPES)}" for _ in range(rng.randint(1, 4)))
    lines.append("")
    for _ in range(rng.randint(1, 3)):
        lines.extend(_python_function(rng, indent="    "))
    return lines


def python_module(rng: random.Random, n_chars: int) -> str:
    """Code-like text of about ``n_chars`` characters, cut at a line end."""
    lines = [f'"""{english_paragraph(rng, 2)}"""', "", "from __future__ import annotations", ""]
    lines.extend(f"from .{rng.choice(NOUNS)} import {rng.choice(NOUNS).capitalize()}" for _ in range(rng.randint(2, 5)))
    lines.append("")
    size = sum(len(line) + 1 for line in lines)
    while size < n_chars:
        chunk = _python_class(rng) if rng.random() < 0.3 else _python_function(rng)
        lines.extend(chunk)
        size += sum(len(line) + 1 for line in chunk)
    return _cut("\n".join(lines), n_chars)


def markdown_doc(rng: random.Random, n_chars: int) -> str:
    """An English design note in Markdown of about ``n_chars`` characters."""
    parts = [f"# The {rng.choice(NOUNS)} {rng.choice(NOUNS)}", ""]
    size = 0
    while size < n_chars:
        section = [f"## {rng.choice(VERBS).capitalize()} the {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}", ""]
        section.append(english_paragraph(rng, rng.randint(3, 7)))
        section.append("")
        section.extend(f"- {english_sentence(rng)}" for _ in range(rng.randint(0, 4)))
        section.append("")
        parts.extend(section)
        size += sum(len(line) + 1 for line in section)
    return _cut("\n".join(parts), n_chars)


def ascii_heavy_text(rng: random.Random, n_chars: int, non_ascii_share: float = 0.01) -> str:
    """Code and English prose with about ``non_ascii_share`` non-ASCII characters."""
    chunks: list[str] = []
    size = 0
    while size < n_chars:
        chunk = python_module(rng, 4000) if rng.random() < 0.6 else markdown_doc(rng, 3000)
        chars = list(chunk)
        for _ in range(round(len(chars) * non_ascii_share)):
            chars[rng.randrange(len(chars))] = rng.choice(NON_ASCII_SPRINKLE)
        chunks.append("".join(chars))
        size += len(chunks[-1]) + 1
    return "\n".join(chunks)


def _cut(text: str, n_chars: int) -> str:
    """``text`` cut to at most ``n_chars``, at the last line end if there is one."""
    if len(text) <= n_chars:
        return text
    end = text.rfind("\n", 0, n_chars)
    return text[: end if end > 0 else n_chars]


def numbered(text: str, first: int = 1) -> str:
    """``cat -n`` style line numbers, as a file-reading tool returns them."""
    return "\n".join(f"{i:>6}\t{line}" for i, line in enumerate(text.split("\n"), start=first))


# --------------------------------------------------------------------------
# Russian

RU_SUBJECTS: tuple[tuple[str, str], ...] = (
    ("Старый смотритель маяка", "m"),
    ("Анна", "f"),
    ("Её младший брат", "m"),
    ("Капитан баржи", "m"),
    ("Учительница из соседнего села", "f"),
    ("Мельник", "m"),
    ("Вера Павловна", "f"),
    ("Почтальон", "m"),
    ("Никто в деревне", "m"),
    ("Дети", "p"),
    ("Рыбаки", "p"),
    ("Соседка", "f"),
)
RU_NAMES = frozenset({"Анна", "Вера Павловна"})
"""Subjects that keep their capital letter after a leading clause."""
RU_PREDICATES: tuple[tuple[str, str, str], ...] = (
    ("долго смотрел на тёмную воду", "долго смотрела на тёмную воду", "долго смотрели на тёмную воду"),
    ("вспоминал прошлую зиму", "вспоминала прошлую зиму", "вспоминали прошлую зиму"),
    ("не решался сказать правду", "не решалась сказать правду", "не решались сказать правду"),
    ("вернулся домой затемно", "вернулась домой затемно", "вернулись домой затемно"),
    ("нашёл на пороге письмо без подписи", "нашла на пороге письмо без подписи", "нашли на пороге письмо без подписи"),
    ("молча зажёг лампу", "молча зажгла лампу", "молча зажгли лампу"),
    ("прислушивался к шагам на лестнице", "прислушивалась к шагам на лестнице", "прислушивались к шагам на лестнице"),
    ("понял, что лодка не вернётся", "поняла, что лодка не вернётся", "поняли, что лодка не вернётся"),
    ("перечитал старые записи", "перечитала старые записи", "перечитали старые записи"),
    ("отправился к пристани", "отправилась к пристани", "отправились к пристани"),
    ("ждал первого снега", "ждала первого снега", "ждали первого снега"),
    ("спрятал ключ под половицу", "спрятала ключ под половицу", "спрятали ключ под половицу"),
    ("сидел у окна до утра", "сидела у окна до утра", "сидели у окна до утра"),
    (
        "думал о том, кто мог знать про письмо",
        "думала о том, кто мог знать про письмо",
        "думали о том, кто мог знать про письмо",
    ),
)  # fmt: skip
RU_CLAUSES = (
    "когда над рекой поднялся туман",
    "пока в доме все спали",
    "едва за холмом погасла последняя полоска заката",
    "хотя никто его об этом не просил",
    "как будто ничего не случилось",
    "несмотря на холодный северный ветер",
    "после того как ушёл последний паром",
    "в ту самую ночь, когда замёрзла пристань",
)
RU_DESCRIPTIONS = (
    "Ветер гнал по небу низкие серые облака.",
    "В печи потрескивали сырые берёзовые поленья.",
    "Над крышами тянулся горький дым.",
    "Река в тот год встала рано, ещё до Покрова.",
    "На подоконнике лежали высохшие яблоки и старая газета.",
    "Где-то за оврагом лаяла собака, и лай разносился далеко по льду.",
    "Часы на стене отставали на четверть часа, но их никто не поправлял.",
    "Снег шёл всю ночь, и к утру дорогу совсем замело.",
)
RU_DIALOGUE = (
    "— Ты уверен? — тихо спросила она.",
    "— Завтра всё решится, — сказал он и отвернулся.",
    "— Не надо было открывать это письмо, — вздохнул мельник.",
    "— А если он не придёт? — Придёт. Он всегда приходит.",
    "— Сколько лет прошло… — Двенадцать. Ровно двенадцать.",
)
RU_TITLES = (
    "Письмо", "Пристань", "Первый снег", "Ключ", "Туман", "Маяк", "Паром", "Зимовье",
    "Лампа", "Половица", "Соседи", "Возвращение", "Ледостав", "Старые записи", "Ночь", "Мельница",
)  # fmt: skip


def russian_sentence(rng: random.Random) -> str:
    """One Russian sentence: narration, description or a line of dialogue."""
    roll = rng.random()
    if roll < 0.15:
        return rng.choice(RU_DESCRIPTIONS)
    if roll < 0.22:
        return rng.choice(RU_DIALOGUE)
    subject, gender = rng.choice(RU_SUBJECTS)
    forms = rng.choice(RU_PREDICATES)
    predicate = forms["mfp".index(gender)]
    if rng.random() < 0.5:
        return f"{subject} {predicate}, {rng.choice(RU_CLAUSES)}."
    clause = rng.choice(RU_CLAUSES)
    if subject not in RU_NAMES:
        subject = subject[0].lower() + subject[1:]
    return f"{clause[0].upper()}{clause[1:]}, {subject} {predicate}."


def russian_paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(russian_sentence(rng) for _ in range(sentences))


def russian_prose(rng: random.Random, n_chars: int) -> str:
    """Paragraphs of Russian prose, about ``n_chars`` characters."""
    paragraphs: list[str] = []
    size = 0
    while size < n_chars:
        paragraphs.append(russian_paragraph(rng, rng.randint(3, 8)))
        size += len(paragraphs[-1]) + 2
    return _cut("\n\n".join(paragraphs), n_chars)


def russian_chapter(rng: random.Random, number: int, n_chars: int) -> str:
    """A chapter with a heading, in Russian."""
    title = f"Глава {number}. {rng.choice(RU_TITLES)}"
    return f"{title}\n\n{russian_prose(rng, n_chars - len(title) - 2)}"


# --------------------------------------------------------------------------
# Japanese and Chinese

JA_TOPICS = (
    "この関数", "設定ファイルの読み込み処理", "キャッシュ", "トークンの見積もり", "ツールの結果", "会話の履歴",
    "テストスイート", "エラーメッセージ", "サブエージェント", "要約機能", "コンテキストウィンドウ", "古いツール結果",
)  # fmt: skip
JA_PREDICATES = (
    "は入力を検証してから結果を返します",
    "は古い順に四件ずつ削除されます",
    "が予算を超えると警告を表示します",
    "は一度だけ計算され、その後は再利用されます",
    "はメッセージごとに文字の種類を数えます",
    "を変更しても、保存された記録は書き換えられません",
    "がなければ、エージェントは同じファイルをもう一度読む必要があります",
    "は日本語や中国語の文字を一文字一トークンとして扱います",
    "について、ドキュメントの説明と実装が一致していません",
    "は最新の結果を必ず残します",
)
JA_OPENERS = ("ただし、", "そのため、", "例えば、", "なお、", "一方で、", "つまり、", "", "", "")
JA_NARRATIVE = (
    "彼女は窓の外を見ながら、昨日届いた手紙のことを考えていた。",
    "駅前の古い喫茶店には、今日も常連客が三人だけ座っていた。",
    "雨が止むと、商店街に夕方の光が差し込んだ。",
    "「明日の会議までに資料をまとめておきます」と田中さんは言った。",
    "桜の季節が終わり、町は少しずつ静けさを取り戻した。",
    "（注：この章の内容は第三版で大きく改訂された。）",
)
ZH_SUBJECTS = ("这个函数", "配置文件", "缓存", "上下文窗口", "工具结果", "模型", "子代理", "估算规则")
ZH_PREDICATES = (
    "会先检查输入，然后返回结果",
    "按照从旧到新的顺序被清除",
    "在超出预算时会给出提示",
    "只计算一次，之后直接复用",
    "把中文和日文字符按一个字符一个词元计算",
    "的说明与实际实现不一致",
    "必须保留最新的一条结果",
)
ZH_NARRATIVE = (
    "她站在窗前，想起了昨天收到的那封信。",
    "老街的茶馆里，今天也只有三位常客。",
    "雨停之后，夕阳照进了安静的小巷。",
    "“我们明天再讨论这个问题吧！”他说。",
)
JA_IDENTIFIERS = ("count_chars", "build_report", "--budget", "plan_fit", "JSONL", "API", "v0.2", "ToolResult")


def japanese_sentence(rng: random.Random) -> str:
    """One Japanese sentence, technical or narrative, sometimes with an ASCII identifier."""
    if rng.random() < 0.25:
        return rng.choice(JA_NARRATIVE)
    topic = rng.choice(JA_TOPICS)
    if rng.random() < 0.2:
        topic = f"{topic}（`{rng.choice(JA_IDENTIFIERS)}`）"
    return f"{rng.choice(JA_OPENERS)}{topic}{rng.choice(JA_PREDICATES)}。"


def chinese_sentence(rng: random.Random) -> str:
    """One Chinese sentence, technical or narrative."""
    if rng.random() < 0.3:
        return rng.choice(ZH_NARRATIVE)
    return f"{rng.choice(ZH_SUBJECTS)}{rng.choice(ZH_PREDICATES)}。"


def japanese_prose(rng: random.Random, n_chars: int, chinese_share: float = 0.0) -> str:
    """Paragraphs of Japanese (and, with ``chinese_share``, Chinese) prose."""
    paragraphs: list[str] = []
    size = 0
    while size < n_chars:
        sentence = chinese_sentence if rng.random() < chinese_share else japanese_sentence
        paragraphs.append("".join(sentence(rng) for _ in range(rng.randint(2, 6))))
        size += len(paragraphs[-1]) + 1
    return _cut("\n".join(paragraphs), n_chars)


def japanese_doc(rng: random.Random, n_chars: int) -> str:
    """A Japanese Markdown document with headings and bullet lists."""
    parts = [f"# {rng.choice(JA_TOPICS)}の設計メモ", ""]
    size = 0
    while size < n_chars:
        section = [f"## {rng.choice(JA_TOPICS)}について", "", japanese_prose(rng, rng.randint(150, 400)), ""]
        section.extend(f"・{japanese_sentence(rng)}" for _ in range(rng.randint(0, 3)))
        section.append("")
        parts.extend(section)
        size += sum(len(line) + 1 for line in section)
    return _cut("\n".join(parts), n_chars)
