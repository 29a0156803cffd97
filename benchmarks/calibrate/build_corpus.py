"""Rebuild the calibration corpus for the ``safe`` estimator from real text
nobody on the team wrote: Debian packages (translated man pages and
documentation, UI translations, source code, JSON and numeric data, Unicode's
emoji tables) plus logs from this machine and from running real tools.

Run ``python benchmarks/calibrate/build_corpus.py`` on a Debian machine (needs
``apt-get``, ``dpkg-deb`` and ``man``; run ``apt-get update`` once first). It
writes ``benchmarks/out/calibration/corpus.jsonl`` (git-ignored): one JSON
object per document with its ``id``, ``kind`` (``prose:<lang>``, ``code:<lang>``,
``json``, ``logs``, ...), ``source`` package and ``text``. Nothing of it is
committed; ``calibrate.py`` turns it into numbers.
"""

from __future__ import annotations

import argparse
import base64
import difflib
import gettext
import gzip
import hashlib
import io
import json
import os
import random
import re
import subprocess
import sys
import textwrap
import unicodedata
import zipfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "out" / "calibration"

MIN_CHARS = 1_000
"""Documents shorter than this are skipped (or merged, for UI strings)."""
MAX_CHARS = 60_000
"""Longer documents are cut at the last line break before this many characters."""
MAX_DOCS = 30
"""Per kind: a deterministic sample (by hash of the id) of at most this many documents."""
EMOJI_CHARS = 1_000
"""Runs of emoji are cut into documents of about this many characters (spaces between them come on top)."""
BUNDLE_CHARS = 6_000
"""UI strings (Firefox, LibreOffice) are bundled into documents of about this size."""

# Writing system of each language, as the first word of its letters' Unicode names.
SCRIPTS: dict[str, tuple[str, ...]] = {
    "ar": ("ARABIC",),
    "fa": ("ARABIC",),
    "ur": ("ARABIC",),
    "he": ("HEBREW",),
    "hi": ("DEVANAGARI",),
    "mr": ("DEVANAGARI",),
    "ne": ("DEVANAGARI",),
    "bn": ("BENGALI",),
    "ta": ("TAMIL",),
    "te": ("TELUGU",),
    "gu": ("GUJARATI",),
    "pa": ("GURMUKHI",),
    "kn": ("KANNADA",),
    "ml": ("MALAYALAM",),
    "si": ("SINHALA",),
    "th": ("THAI",),
    "my": ("MYANMAR",),
    "km": ("KHMER",),
    "dz": ("TIBETAN",),
    "ka": ("GEORGIAN",),
    "hy": ("ARMENIAN",),
    "el": ("GREEK",),
    "ru": ("CYRILLIC",),
    "uk": ("CYRILLIC",),
    "bg": ("CYRILLIC",),
    "mk": ("CYRILLIC",),
    "sr": ("CYRILLIC",),
    "be": ("CYRILLIC",),
    "ko": ("HANGUL",),
    "ja": ("HIRAGANA", "KATAKANA", "CJK"),
    "zh": ("CJK",),
}

MANPAGES = {
    "manpages": ("en", "man"),
    **{
        f"manpages-{code}": (lang, loc)
        for code, lang, loc in (
            ("de", "de", "de"),
            ("fr", "fr", "fr"),
            ("es", "es", "es"),
            ("it", "it", "it"),
            ("pt-br", "pt", "pt_BR"),
            ("pl", "pl", "pl"),
            ("cs", "cs", "cs"),
            ("nl", "nl", "nl"),
            ("sv", "sv", "sv"),
            ("ro", "ro", "ro"),
            ("hu", "hu", "hu"),
            ("fi", "fi", "fi"),
            ("da", "da", "da"),
            ("tr", "tr", "tr"),
            ("vi", "vi", "vi"),
            ("id", "id", "id"),
            ("ru", "ru", "ru"),
            ("uk", "uk", "uk"),
            ("mk", "mk", "mk"),
            ("sr", "sr", "sr"),
            ("el", "el", "el"),
            ("ja", "ja", "ja"),
            ("zh", "zh", "zh_CN"),
        )
    },
}
HANDBOOK = {"en-US": "en", "ar-MA": "ar", "fa-IR": "fa", "ja-JP": "ja", "zh-CN": "zh", "ru-RU": "ru"}
INSTALL_GUIDE = {"el": "el", "ko": "ko", "ja": "ja", "zh_CN": "zh", "ru": "ru", "vi": "vi"}
LIBREOFFICE_HELP = {"hi": "hi", "ko": "ko", "el": "el", "km": "km", "dz": "dz"}
LIBREOFFICE_UI = {"he": "he", "th": "th", "ar": "ar", "bn": "bn", "ta": "ta", "ml": "ml", "ka": "ka"}
FIREFOX = {
    "he": "he",
    "ar": "ar",
    "fa": "fa",
    "ur": "ur",
    "th": "th",
    "hi-in": "hi",
    "mr": "mr",
    "ne-np": "ne",
    "bn": "bn",
    "ta": "ta",
    "te": "te",
    "gu-in": "gu",
    "pa-in": "pa",
    "kn": "kn",
    "si": "si",
    "my": "my",
    "km": "km",
    "ka": "ka",
    "hy-am": "hy",
    "el": "el",
    "ko": "ko",
    "be": "be",
    "bg": "bg",
}
CODE_PACKAGES = {
    "python3-docutils": "code:python",
    "python3-jinja2": "code:python",
    "python3-pygments": "code:python",
    "python3-requests": "code:python",
    "python3-sphinx": "code:python",
    "libcurl4-doc": "code:c",
    "libsqlite3-dev": "code:c",
    "zlib1g-dev": "code:c",
    "librust-regex-dev": "code:rust",
    "librust-serde-dev": "code:rust",
    "golang-github-spf13-cobra-dev": "code:go",
    "golang-github-gorilla-mux-dev": "code:go",
    "libjs-jquery": "code:js",
    "node-acorn": "code:js",
    "node-esprima": "code:js",
    "node-marked": "code:js",
    "node-semver": "code:js",
    "node-uglify-js": "code:js",
    "node-yargs": "code:js",
    "node-typescript": "code:ts",
    "bash-completion": "code:shell",
    "perl-modules-5.36": "code:perl",
}
AGENT_CODE_PACKAGES = {
    # more source packages for the agent-transcript kinds (diffs, line-numbered reads): a package split needs many
    "python3-attr": "python",
    "python3-click": "python",
    "python3-packaging": "python",
    "python3-yaml": "python",
    "librust-rand-dev": "rust",
    "librust-syn-dev": "rust",
    "golang-golang-x-text-dev": "go",
}
MINIFIED_PACKAGES = (
    "libjs-jquery",
    "libjs-bootstrap4",
    "libjs-bootstrap5",
    "libjs-jquery-ui",
    "libjs-underscore",
    "libjs-d3",
    "libjs-popper.js",
    "libjs-highlight.js",
    "libjs-sphinxdoc",
    "libjs-moment",
    "libjs-chart.js",
    "libjs-leaflet",
    "libjs-vue",
    "node-typescript",
)
DATA_PACKAGES = (
    "iso-codes",
    "node-mdn-data",
    "python3-numpy",
    "python3-statsmodels",
    "pci.ids",
    "usb.ids",
    "unicode-data",
    "tzdata",
    "ca-certificates",
    "libjs-bootstrap4",
)


def packages() -> list[str]:
    """Every Debian package the corpus is built from."""
    names = [*MANPAGES, "debian-handbook", "installation-guide-amd64"]
    names += [f"libreoffice-help-{c}" for c in LIBREOFFICE_HELP]
    names += [f"libreoffice-l10n-{c}" for c in LIBREOFFICE_UI]
    names += [f"firefox-esr-l10n-{c}" for c in FIREFOX]
    names += list(CODE_PACKAGES) + list(AGENT_CODE_PACKAGES) + list(DATA_PACKAGES)
    return list(dict.fromkeys([*names, *MINIFIED_PACKAGES]))


@dataclass(frozen=True, slots=True)
class Document:
    id: str
    kind: str
    source: str
    text: str


# --- fetching -----------------------------------------------------------------


def fetch(names: Iterable[str], out: Path) -> dict[str, Path]:
    """``apt-get download`` each package (once) and extract it; its root folder by name."""
    debs, trees = out / "debs", out / "pkgs"
    debs.mkdir(parents=True, exist_ok=True)
    trees.mkdir(parents=True, exist_ok=True)
    have = {p.name.split("_", 1)[0]: p for p in debs.glob("*.deb")}
    missing = [n for n in names if n not in have]
    if missing:
        print(f"apt-get download {len(missing)} packages", file=sys.stderr)
        subprocess.run(["apt-get", "download", *missing], cwd=debs, check=True, stdout=subprocess.DEVNULL)
        have = {p.name.split("_", 1)[0]: p for p in debs.glob("*.deb")}
    roots = {}
    for name in names:
        root = trees / name
        if not root.exists():
            subprocess.run(["dpkg-deb", "-x", str(have[name]), str(root)], check=True)
        roots[name] = root
    return roots


# --- text helpers ---------------------------------------------------------------


def script_of(char: str) -> str:
    name = unicodedata.name(char, "")
    return name.split(" ", 1)[0] if name else ""


def in_language(paragraph: str, lang: str) -> bool:
    """Whether most letters of ``paragraph`` are in ``lang``'s script (always true for Latin languages)."""
    scripts = SCRIPTS.get(lang)
    if scripts is None:
        return True
    letters = [c for c in paragraph if c.isalpha()]
    if not letters:
        return False
    ours = sum(1 for c in letters if script_of(c) in scripts)
    return ours >= 0.5 * len(letters)


def keep_language(text: str, lang: str) -> str:
    """The paragraphs of ``text`` written in ``lang``."""
    paragraphs = re.split(r"\n\s*\n", text)
    return "\n\n".join(p.strip("\n") for p in paragraphs if p.strip() and in_language(p, lang))


def cut(text: str, limit: int = MAX_CHARS) -> str:
    """At most ``limit`` characters, ending at a line break."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    return head[: head.rfind("\n") + 1] or head


class _HtmlText(HTMLParser):
    BLOCKS = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "pre", "dt", "dd", "table", "title"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self.skip += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self.skip = max(0, self.skip - 1)
        elif tag in self.BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def html_text(path: Path) -> str:
    parser = _HtmlText()
    parser.feed(path.read_text("utf-8", errors="replace"))
    text = "".join(parser.parts)
    text = "\n".join(line.strip() for line in text.splitlines())
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def man_text(path: Path) -> str:
    """A man page rendered by man-db to plain UTF-8, without its indentation (cached under ``OUT/man``)."""
    cached = OUT / "man" / (hashlib.sha1(str(path).encode()).hexdigest() + ".txt")
    if cached.exists():
        return cached.read_text(encoding="utf-8")
    text = _render_man(path)
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(text, encoding="utf-8")
    return text


def _render_man(path: Path) -> str:
    env = {**os.environ, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "MANWIDTH": "100", "MAN_KEEP_FORMATTING": ""}
    try:
        run = subprocess.run(
            ["man", "--no-hyphenation", "--no-justification", "-l", str(path)],
            capture_output=True,
            env=env,
            timeout=300,
        )
    except subprocess.TimeoutExpired:  # a busy machine: skip the page rather than the corpus
        print(f"man timed out: {path}", file=sys.stderr)
        return ""
    text = run.stdout.decode("utf-8", errors="replace")
    return "\n".join(line.strip() for line in text.splitlines()) + "\n"


def bundle(strings: Iterable[str], size: int = BUNDLE_CHARS) -> Iterator[str]:
    """Join short strings (one per line) into documents of about ``size`` characters."""
    part: list[str] = []
    n = 0
    for s in strings:
        part.append(s)
        n += len(s) + 1
        if n >= size:
            yield "\n".join(part) + "\n"
            part, n = [], 0
    if n >= MIN_CHARS:
        yield "\n".join(part) + "\n"


def ftl_values(text: str) -> Iterator[str]:
    """The translated strings of a Fluent (.ftl) or .properties file, without their ids."""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if line[:1].isspace() and not stripped.startswith("."):
            yield stripped  # continuation of a multi-line value
            continue
        _key, sep, value = stripped.partition("=")
        if sep and value.strip():
            yield value.strip()


def mo_strings(data: bytes) -> Iterator[str]:
    catalog = gettext.GNUTranslations(io.BytesIO(data))._catalog  # type: ignore[attr-defined]
    for key, value in catalog.items():
        if key and isinstance(value, str) and value:
            yield value


# --- sources ---------------------------------------------------------------------

Source = Callable[[dict[str, Path]], Iterator[Document]]


def man_pages(roots: dict[str, Path]) -> Iterator[Document]:
    for package, (lang, loc) in MANPAGES.items():
        base = roots[package] / "usr/share/man" / ("" if loc == "man" else loc)
        pages = sorted(p for p in base.glob("man[1-8]/*") if p.is_file())
        for page in sample(pages, lambda p: str(p), MAX_DOCS * 2):
            text = man_text(page)
            if lang in SCRIPTS:
                text = keep_language(text, lang)
            yield Document(f"{package}:{page.relative_to(base)}", f"prose:{lang}", package, text)


def handbook(roots: dict[str, Path]) -> Iterator[Document]:
    base = roots["debian-handbook"] / "usr/share/doc/debian-handbook/html"
    for loc, lang in HANDBOOK.items():
        for page in sorted((base / loc).glob("*.html")):
            text = html_text(page)
            yield Document(f"debian-handbook:{loc}/{page.name}", f"prose:{lang}", "debian-handbook", keep(text, lang))


def keep(text: str, lang: str) -> str:
    return keep_language(text, lang) if lang in SCRIPTS else text


def install_guide(roots: dict[str, Path]) -> Iterator[Document]:
    base = roots["installation-guide-amd64"] / "usr/share/doc/installation-guide-amd64"
    for loc, lang in INSTALL_GUIDE.items():
        for page in sorted((base / loc).glob("*.html")):
            text = html_text(page)
            yield Document(
                f"installation-guide:{loc}/{page.name}", f"prose:{lang}", "installation-guide-amd64", keep(text, lang)
            )


def libreoffice_help(roots: dict[str, Path]) -> Iterator[Document]:
    for code, lang in LIBREOFFICE_HELP.items():
        package = f"libreoffice-help-{code}"
        base = roots[package] / "usr/share/libreoffice/help" / code
        pages = sorted(base.rglob("*.html"))
        # One help page is short: join the pages of one folder into a document.
        by_dir: dict[Path, list[str]] = defaultdict(list)
        for page in pages:
            kept = keep_language(html_text(page), lang)
            if kept:
                by_dir[page.parent].append(kept)
        for folder, texts in sorted(by_dir.items()):
            for i, text in enumerate(bundle(texts, 12_000)):
                yield Document(f"{package}:{folder.relative_to(base)}#{i}", f"prose:{lang}", package, text)


def libreoffice_ui(roots: dict[str, Path]) -> Iterator[Document]:
    for code, lang in LIBREOFFICE_UI.items():
        package = f"libreoffice-l10n-{code}"
        for mo in sorted(roots[package].rglob("*.mo")):
            strings = [s for s in mo_strings(mo.read_bytes()) if in_language(s, lang)]
            for i, text in enumerate(bundle(sorted(strings))):
                yield Document(f"{package}:{mo.name}#{i}", f"prose:{lang}", package, text)


def firefox(roots: dict[str, Path]) -> Iterator[Document]:
    for code, lang in FIREFOX.items():
        package = f"firefox-esr-l10n-{code}"
        for xpi in sorted(roots[package].rglob("*.xpi")):
            with zipfile.ZipFile(xpi) as z:
                names = sorted(n for n in z.namelist() if n.endswith((".ftl", ".properties")))
                strings = [
                    s for n in names for s in ftl_values(z.read(n).decode("utf-8", "replace")) if in_language(s, lang)
                ]
            for i, text in enumerate(bundle(strings)):
                yield Document(f"{package}#{i}", f"prose:{lang}", package, text)


CODE_SUFFIXES = {
    "code:python": (".py",),
    "code:c": (".c", ".h"),
    "code:rust": (".rs",),
    "code:go": (".go",),
    "code:js": (".js",),
    "code:ts": (".ts",),
    "code:perl": (".pm", ".pl"),
}


def code(roots: dict[str, Path]) -> Iterator[Document]:
    for package, kind in CODE_PACKAGES.items():
        root = roots[package]
        if kind == "code:shell":
            files = sorted(p for p in (root / "usr/share/bash-completion/completions").glob("*") if p.is_file())
        else:
            files = sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(CODE_SUFFIXES[kind]))
        for f in files:
            if f.is_symlink() or f.name.endswith(".min.js"):
                continue
            yield Document(f"{package}:{f.relative_to(root)}", kind, package, f.read_text("utf-8", errors="replace"))


def json_data(roots: dict[str, Path]) -> Iterator[Document]:
    """JSON files as shipped (mostly pretty-printed), and the same data compact (as tool inputs are sent)."""
    for package in ("iso-codes", "node-mdn-data", "node-typescript"):
        root = roots[package]
        for f in sorted(root.rglob("*.json")):
            if f.is_symlink():
                continue
            raw = f.read_text("utf-8", errors="replace")
            doc_id = f"{package}:{f.relative_to(root)}"
            yield Document(doc_id, "json", package, raw)
            try:
                compact = json.dumps(json.loads(raw), ensure_ascii=False, separators=(",", ":"))
            except ValueError:
                continue
            yield Document(doc_id + "#compact", "json:compact", package, compact)


def xml_data(roots: dict[str, Path]) -> Iterator[Document]:
    root = roots["iso-codes"]
    for f in sorted(root.rglob("*.xml")):
        yield Document(f"iso-codes:{f.relative_to(root)}", "xml", "iso-codes", f.read_text("utf-8", errors="replace"))


def numeric_tables(roots: dict[str, Path]) -> Iterator[Document]:
    """Digits-heavy text: statistics data sets, numpy's test vectors (hex), hardware id tables."""
    root = roots["python3-statsmodels"]
    for f in sorted(root.rglob("*.csv")):
        yield Document(f"python3-statsmodels:{f.relative_to(root)}", "digits", "python3-statsmodels", f.read_text())
    root = roots["python3-numpy"]
    for f in sorted(root.rglob("*.csv")):
        yield Document(f"python3-numpy:{f.relative_to(root)}", "hex", "python3-numpy", f.read_text())
    for name in ("pci.ids", "usb.ids"):
        (path,) = (p for p in roots[name].rglob(name) if p.is_file() and not p.is_symlink())
        text = path.read_text("utf-8", errors="replace")
        for i, chunk in enumerate(chunks(text, 20_000)):
            yield Document(f"{name}#{i}", "hex", name, chunk)
    root = roots["unicode-data"] / "usr/share/unicode"
    for name in ("UnicodeData.txt", "EastAsianWidth.txt", "LineBreak.txt"):
        for i, chunk in enumerate(chunks((root / name).read_text(), 20_000)):
            yield Document(f"unicode-data:{name}#{i}", "hex", "unicode-data", chunk)
    tz = roots["tzdata"] / "usr/share/zoneinfo"
    for name in ("tzdata.zi", "leap-seconds.list"):
        if (tz / name).exists():
            for i, chunk in enumerate(chunks((tz / name).read_text(), 20_000)):
                yield Document(f"tzdata:{name}#{i}", "digits", "tzdata", chunk)


def hexdumps(roots: dict[str, Path]) -> Iterator[Document]:
    """``od`` and ``xxd``-style dumps of binary files: what a tool prints when it reads one."""
    binaries = sorted(p for p in roots["python3-numpy"].rglob("*.so") if p.is_file())[:12]
    for b in binaries:
        data = b.read_bytes()[4096 : 4096 + 3000]
        run = subprocess.run(["od", "-A", "x", "-t", "x1z", "-v"], input=data, capture_output=True, check=True)
        yield Document(f"od:{b.name}", "hex", "python3-numpy", run.stdout.decode("utf-8", "replace"))


def emoji(roots: dict[str, Path]) -> Iterator[Document]:
    """Unicode's emoji test file, as it is and as runs of the emoji alone, one group per document."""
    text = (roots["unicode-data"] / "usr/share/unicode/emoji/emoji-test.txt").read_text()
    for i, chunk in enumerate(chunks(text, 20_000)):
        yield Document(f"unicode-data:emoji-test.txt#{i}", "emoji:table", "unicode-data", chunk)
    group, seqs, part = "", [], 0
    for line in [*text.splitlines(), "# group: end"]:
        if line.startswith("# group:") or sum(map(len, seqs)) >= EMOJI_CHARS:
            if seqs:
                yield Document(f"unicode-data:emoji#{group}.{part}", "emoji", "unicode-data", " ".join(seqs) + "\n")
            seqs, part = [], part + 1
            if line.startswith("# group:"):
                group, part = line.split(":", 1)[1].strip().replace(" ", "_"), 0
        if "; fully-qualified" in line and "#" in line:
            seqs.append(line.split("#", 1)[1].split()[0])


def chunks(text: str, size: int) -> Iterator[str]:
    """Pieces of ``text`` of about ``size`` characters, cut at line breaks."""
    lines = text.splitlines(keepends=True)
    part: list[str] = []
    n = 0
    for line in lines:
        part.append(line)
        n += len(line)
        if n >= size:
            yield "".join(part)
            part, n = [], 0
    if n >= MIN_CHARS:
        yield "".join(part)


def logs(roots: dict[str, Path]) -> Iterator[Document]:
    """This machine's package logs, and the output of real tools run now."""
    for path in (
        Path("/var/log/dpkg.log"),
        Path("/var/log/apt/history.log"),
        Path("/var/log/apt/term.log"),
        Path("/var/log/alternatives.log"),
    ):
        if path.exists():
            text = path.read_text("utf-8", errors="replace")
            for i, chunk in enumerate(chunks(text, 20_000)):
                yield Document(f"log:{path}#{i}", "logs", "this machine", chunk)
    commands = {
        "apt-get -s install": ["apt-get", "-s", "-o", "Debug::NoLocking=1", "install", "libreoffice", "texlive-full"],
        "apt-cache policy": ["apt-cache", "policy", *sorted(roots)[:80]],
        "dpkg -l": ["dpkg", "-l"],
        "dpkg-deb -c": ["dpkg-deb", "-c", *(str(p) for p in sorted((OUT / "debs").glob("manpages-[dfr]*.deb")))],
        "python -X importtime": [sys.executable, "-X", "importtime", "-c", "import json, email, http.client, asyncio"],
    }
    for name, argv in commands.items():
        run = subprocess.run(argv, capture_output=True, timeout=300)
        out = (run.stdout + run.stderr).decode("utf-8", "replace")
        for i, chunk in enumerate(chunks(out, 20_000)):
            yield Document(f"tool:{name}#{i}", "logs", "this machine", chunk)


def encoded(roots: dict[str, Path]) -> Iterator[Document]:
    """Base64 (PEM certificates), hex digests (packages' md5sums, ``sha256sum`` output) and minified code."""
    root = roots["ca-certificates"]
    for f in sorted(root.rglob("*.crt")):
        yield Document(f"ca-certificates:{f.name}", "base64", "ca-certificates", f.read_text())
    for name in sorted(roots):
        md5sums = subprocess.run(["dpkg-deb", "-I", str(deb_of(name)), "md5sums"], capture_output=True)
        if md5sums.returncode == 0:
            yield Document(f"{name}:md5sums", "hashes", name, md5sums.stdout.decode("utf-8", "replace"))
    for name in ("python3-docutils", "python3-jinja2", "node-acorn", "libjs-bootstrap4"):
        files = sorted(str(p.relative_to(roots[name])) for p in roots[name].rglob("*") if p.is_file())
        run = subprocess.run(["sha256sum", *files], cwd=roots[name], capture_output=True, check=True)
        yield Document(f"sha256sum:{name}", "hashes", name, run.stdout.decode("utf-8", "replace"))
    for name in MINIFIED_PACKAGES:
        for f in sorted(roots[name].rglob("*.min.*")):
            if f.suffix in (".js", ".css") and not f.is_symlink():
                yield Document(f"{name}:{f.name}", "code:minified", name, f.read_text("utf-8", errors="replace"))


def deb_of(package: str) -> Path:
    (deb,) = (OUT / "debs").glob(f"{package}_*.deb")
    return deb


def package_docs(roots: dict[str, Path]) -> Iterator[Document]:
    """Debian changelogs and Markdown documentation shipped in the packages."""
    for name, root in sorted(roots.items()):
        for f in sorted(root.glob("usr/share/doc/*/changelog.Debian.gz")):
            text = gzip.decompress(f.read_bytes()).decode("utf-8", "replace")
            yield Document(f"{name}:changelog.Debian", "changelog", name, text)
        for f in sorted(root.glob("usr/share/doc/**/*.md*")):
            if f.suffix not in (".md", ".gz") or f.is_symlink() or not f.name.split(".gz")[0].endswith(".md"):
                continue
            data = f.read_bytes()
            text = (gzip.decompress(data) if f.suffix == ".gz" else data).decode("utf-8", "replace")
            yield Document(f"{name}:{f.name}", "markdown", name, text)


# --- what agent transcripts carry: tool results ------------------------------------


AGENT_SUFFIXES = {"python": (".py",), "c": (".c", ".h"), "rust": (".rs",), "go": (".go",), "js": (".js",)}


def source_files(roots: dict[str, Path]) -> Iterator[tuple[str, str, Path, Path]]:
    """(package, language, root, file) for the code packages' source files, minified code left out."""
    packages = {**{p: k.split(":")[1] for p, k in CODE_PACKAGES.items()}, **AGENT_CODE_PACKAGES}
    for package, lang in sorted(packages.items()):
        if lang not in AGENT_SUFFIXES:
            continue
        root = roots[package]
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(AGENT_SUFFIXES[lang]))
        for f in sample([f for f in files if not f.is_symlink() and ".min." not in f.name], str, 40):
            yield package, lang, root, f


def mutate(lines: list[str], seed: str) -> list[str]:
    """A plausible edit of a source file: some lines changed, some deleted, some added (deterministic)."""
    rng = random.Random(seed)
    out = []
    for line in lines:
        r = rng.random()
        if r < 0.03:
            continue  # deleted
        if r < 0.08 and line.strip():
            words = re.findall(r"[A-Za-z_]\w*", line)
            if words:  # rename one identifier, as a refactoring does
                word = rng.choice(words)
                line = re.sub(rf"\b{re.escape(word)}\b", word[: max(1, len(word) // 2)] + "_", line)
        out.append(line)
        if r > 0.97:
            out.append(rng.choice(lines))  # a line copied from elsewhere
    return out


def diffs(roots: dict[str, Path]) -> Iterator[Document]:
    """Unified diffs of real source files against a plausible edit of them (``git diff`` style)."""
    for package, lang, root, f in source_files(roots):
        old = f.read_text("utf-8", errors="replace").splitlines(keepends=True)
        new = mutate(old, str(f.relative_to(root)))
        name = str(f.relative_to(root))
        header = f"diff --git a/{name} b/{name}\n"
        body = "".join(difflib.unified_diff(old, new, f"a/{name}", f"b/{name}", n=3))
        yield Document(f"{package}:{name}#diff", f"diff:{lang}", package, header + body)


def numbered_reads(roots: dict[str, Path]) -> Iterator[Document]:
    """Source files as file-reading tools return them: ``cat -n`` and the ``N→`` style."""
    for package, _lang, root, f in source_files(roots):
        lines = f.read_text("utf-8", errors="replace").splitlines()
        name = str(f.relative_to(root))
        if hashlib.sha1(name.encode()).digest()[0] % 2:
            text = "".join(f"{i:6}\t{line}\n" for i, line in enumerate(lines, 1))
            yield Document(f"{package}:{name}#cat-n", "read:cat-n", package, text)
        else:
            text = "".join(f"{i:6}\u2192{line}\n" for i, line in enumerate(lines, 1))
            yield Document(f"{package}:{name}#arrow", "read:arrow", package, text)


def base64_files(roots: dict[str, Path]) -> Iterator[Document]:
    """Real binary files in base64, wrapped at 76 (MIME, PEM) or as one line (data URLs, JSON fields)."""
    for package in ("python3-numpy", "libjs-jquery-ui", "libjs-leaflet", "libjs-mathjax-unused", "libjs-highlight.js"):
        if package not in roots:
            continue
        files = [p for p in roots[package].rglob("*") if p.is_file() and not p.is_symlink()]
        binaries = [p for p in files if p.suffix in (".so", ".png", ".gif", ".gz", ".woff", ".ttf", ".npy")]
        for f in sample(binaries, str, 12):
            data = f.read_bytes()[:30_000]
            encoded = base64.b64encode(data).decode()
            wrapped = hashlib.sha1(f.name.encode()).digest()[0] % 2
            text = "\n".join(textwrap.wrap(encoded, 76)) + "\n" if wrapped else encoded
            yield Document(f"{package}:{f.relative_to(roots[package])}#base64", "base64:file", package, text)


def shell_output(roots: dict[str, Path]) -> Iterator[Document]:
    """What shell tools print inside an agent's session: ``ls -la``, ``find``, ``grep -rn``."""
    env = {**os.environ, "LC_ALL": "C.UTF-8", "TZ": "UTC"}
    for package in sorted({*CODE_PACKAGES, *AGENT_CODE_PACKAGES}):
        root = roots[package]
        for name, argv in (
            ("ls -laR", ["ls", "-laR", "--time-style=long-iso", "."]),
            ("find", ["find", ".", "-type", "f"]),
            ("grep -rn", ["grep", "-rn", "-E", r"(def |fn |func |function |return )", "."]),
        ):
            run = subprocess.run(argv, cwd=root, capture_output=True, env=env, timeout=120)
            out = run.stdout.decode("utf-8", "replace")
            for i, chunk in enumerate(chunks(out, 20_000)):
                if i < 3:
                    yield Document(f"shell:{name}:{package}#{i}", "shell", package, chunk)


TEST_MODULES = (
    "test_json",
    "test_csv",
    "test_textwrap",
    "test_difflib",
    "test_string",
    "test_heapq",
    "test_bisect",
    "test_fractions",
    "test_statistics",
    "test_shlex",
    "test_base64",
    "test_enum",
)


def test_runs(roots: dict[str, Path]) -> Iterator[Document]:
    """Test-runner output: CPython's own test suites run by unittest and by pytest, verbose."""
    env = {**os.environ, "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0"}
    pytest = ROOT / ".venv" / "bin" / "python"
    for module in TEST_MODULES:
        run = subprocess.run(
            [sys.executable, "-m", "unittest", "-v", f"test.{module}"], capture_output=True, env=env, timeout=600
        )
        out = (run.stdout + run.stderr).decode("utf-8", "replace")
        for i, chunk in enumerate(chunks(out, 20_000)):
            yield Document(f"unittest:{module}#{i}", "tests", f"cpython:{module}", chunk)
        if pytest.exists():
            run = subprocess.run(
                [str(pytest), "-m", "pytest", "-v", "-p", "no:cacheprovider", "--pyargs", f"test.{module}"],
                capture_output=True,
                env=env,
                timeout=600,
                cwd="/tmp",
            )
            out = (run.stdout + run.stderr).decode("utf-8", "replace")
            for i, chunk in enumerate(chunks(out, 20_000)):
                yield Document(f"pytest:{module}#{i}", "tests", f"cpython:{module}", chunk)


def lockfiles(roots: dict[str, Path]) -> Iterator[Document]:
    """Lock and checksum files: Rust's ``.cargo-checksum.json`` as shipped, and pip ``--require-hashes``
    requirements made from the packages' own file hashes."""
    for package in sorted(roots):
        if not package.startswith("librust-"):
            continue
        for f in sorted(roots[package].rglob(".cargo-checksum.json")):
            yield Document(f"{package}:{f.relative_to(roots[package])}", "lockfile", package, f.read_text())
    for package in sorted({*CODE_PACKAGES, *AGENT_CODE_PACKAGES, *MINIFIED_PACKAGES}):
        root = roots[package]
        lines = []
        for f in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())[:300]:
            digest = hashlib.sha256(f.read_bytes()).hexdigest()
            stem = re.sub(r"[^A-Za-z0-9]+", "-", f.stem).strip("-").lower() or "file"
            version = f"{len(f.name) % 7}.{f.stat().st_size % 20}.{len(str(f)) % 10}"
            lines.append(f"{stem}=={version} \\\n    --hash=sha256:{digest}\n")
        yield Document(f"{package}:requirements.txt", "lockfile", package, "".join(lines))


PROSE_EMOJI = (
    "\u2705",
    "\U0001f680",
    "\u26a0\ufe0f",
    "\U0001f4dd",
    "\U0001f527",
    "\u2728",
    "\U0001f41b",
    "\U0001f4a1",
    "\U0001f389",
    "\u274c",
    "\U0001f4e6",
    "\U0001f50d",
    "\U0001f44d",
    "\U0001f525",
    "\U0001f4ca",
    "\U0001f9ea",
)


def after_sentences(line: str, rng: random.Random) -> str:
    """``line`` with an emoji after some of its sentences."""
    return re.sub(r"\. ", lambda _m: ". " + rng.choice(PROSE_EMOJI) + " " if rng.random() < 0.3 else ". ", line)


def emoji_prose(roots: dict[str, Path]) -> Iterator[Document]:
    """English prose with emoji inside it, as chat models write status updates: at line starts and after sentences."""
    base = roots["manpages"] / "usr/share/man"
    pages = sorted(p for p in base.glob("man[1-8]/*") if p.is_file())
    for page in sample(pages, lambda p: "emoji:" + str(p), MAX_DOCS * 2):
        rng = random.Random(str(page))
        out = []
        for line in man_text(page).splitlines():
            if line and rng.random() < 0.25:
                line = rng.choice(PROSE_EMOJI) + " " + line
            line = after_sentences(line, rng)
            out.append(line)
        yield Document(
            f"manpages:{page.relative_to(base)}#emoji", "emoji:prose", f"manpages:{page.name}", "\n".join(out)
        )


SOURCES: tuple[Source, ...] = (
    man_pages,
    handbook,
    install_guide,
    libreoffice_help,
    libreoffice_ui,
    firefox,
    code,
    json_data,
    xml_data,
    numeric_tables,
    hexdumps,
    emoji,
    logs,
    encoded,
    package_docs,
    diffs,
    numbered_reads,
    base64_files,
    shell_output,
    test_runs,
    lockfiles,
    emoji_prose,
)


def sample(items: list[Path], key: Callable[[Path], str], n: int) -> list[Path]:
    return sorted(items, key=lambda p: hashlib.sha1(key(p).encode()).hexdigest())[:n]


def select(docs: Iterable[Document], max_docs: int) -> list[Document]:
    """Per kind, the first ``max_docs`` long-enough distinct documents in hash order, cut to ``MAX_CHARS``."""
    by_kind: dict[str, list[Document]] = defaultdict(list)
    seen: set[str] = set()
    for d in docs:
        text = cut(d.text.replace("\r\n", "\n").replace("\x00", ""))
        digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
        if len(text) >= MIN_CHARS and digest not in seen:  # one copy of pages shipped under several names
            seen.add(digest)
            by_kind[d.kind].append(Document(d.id, d.kind, d.source, text))
    chosen = []
    for kind in sorted(by_kind):
        ranked = sorted(by_kind[kind], key=lambda d: hashlib.sha1(d.id.encode()).hexdigest())
        chosen.extend(sorted(ranked[:max_docs], key=lambda d: d.id))
    return chosen


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=OUT, help="folder for packages and corpus.jsonl")
    parser.add_argument("--max-docs", type=int, default=MAX_DOCS, help="documents per kind")
    args = parser.parse_args(argv)
    out: Path = args.out
    roots = fetch(packages(), out)
    docs: list[Document] = []
    for source in SOURCES:
        print(f"reading {source.__name__}", file=sys.stderr)
        docs.extend(source(roots))
    chosen = select(docs, args.max_docs)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for d in chosen:
            f.write(json.dumps({"id": d.id, "kind": d.kind, "source": d.source, "text": d.text}, ensure_ascii=False))
            f.write("\n")
    kinds: dict[str, list[int]] = defaultdict(list)
    for d in chosen:
        kinds[d.kind].append(len(d.text))
    for kind, sizes in sorted(kinds.items()):
        print(f"{kind:16} {len(sizes):4} docs {sum(sizes):>10,} chars", file=sys.stderr)
    print(
        f"{len(chosen)} documents, {sum(len(d.text) for d in chosen):,} chars -> {out / 'corpus.jsonl'}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
