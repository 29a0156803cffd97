"""Make tests/data/aider_real/ with the real aider, offline.

    python3 -m venv /tmp/aidervenv && /tmp/aidervenv/bin/pip install aider-chat
    python benchmarks/realfiles/make_aider.py --aider /tmp/aidervenv/bin/aider

It makes a throwaway git repository under /tmp holding calc.py and a test,
starts the fake OpenAI-compatible server of fakellm.py on 127.0.0.1, and runs
aider three times with ``--message``:

1. streamed: "make add() treat None as 0"; the fake model answers with a
   SEARCH/REPLACE block that returns None instead (aider applies it), the
   ``--auto-test`` run fails, aider sends the test output back (a reflection),
   and the fake model answers with a second block that fixes it;
2. not streamed (``--no-stream``), a question about the file, answered in text;
3. ``/run`` of the test command followed by a question, restoring the chat
   history so the request carries the earlier turns.

aider writes ``.aider.llm.history`` and ``.aider.chat.history.md`` in the
repository; they are copied to ``--out`` with the temporary directory's path
replaced by ``/tmp/aider-real``. Not run by the tests."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fakellm import Server, last_user_text

CALC = """def add(a, b):
    return a + b


def sub(a, b):
    return a - b
"""

TEST = """from calc import add

assert add(2, 3) == 5
assert add(None, 4) == 4, "add(None, 4) should be 4"
print("ok")
"""

FIRST_EDIT = """I'll make `add()` check for `None`.

calc.py
```python
<<<<<<< SEARCH
def add(a, b):
    return a + b
=======
def add(a, b):
    if a is None or b is None:
        return None
    return a + b
>>>>>>> REPLACE
```
"""

SECOND_EDIT = """The test expects `None` to count as 0, so treat it so.

calc.py
```python
<<<<<<< SEARCH
    if a is None or b is None:
        return None
    return a + b
=======
    return (a or 0) + (b or 0)
>>>>>>> REPLACE
```
"""


def reply(body: dict[str, Any]) -> dict[str, Any]:
    text = last_user_text(body)
    system = str(body.get("messages", [{}])[0].get("content", ""))
    if "commit message" in system.lower():
        return {"content": "fix: treat None as 0 in add()"}
    if "add(None, 4) should be 4" in text or "AssertionError" in text:
        return {"content": SECOND_EDIT}
    if "treat None as 0" in text:
        return {"content": FIRST_EDIT}
    if "sub()" in text:
        return {"content": "`sub(a, b)` returns `a - b`; it does not treat `None` as 0 the way `add()` now does."}
    return {"content": "The test passes now: `add(None, 4)` is 4."}


def run(aider: str, repo: Path, home: Path, port: int, *args: str) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "AIDER_ANALYTICS": "false",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    command = [
        aider,
        "--model", "openai/fake",
        "--openai-api-base", f"http://127.0.0.1:{port}/v1",
        "--openai-api-key", "x",
        "--edit-format", "diff",
        "--llm-history-file", ".aider.llm.history",
        "--chat-history-file", ".aider.chat.history.md",
        "--yes-always", "--no-auto-commits", "--no-check-update", "--analytics-disable",
        "--no-show-release-notes", "--no-show-model-warnings", "--no-pretty", "--no-fancy-input",
        "--no-detect-urls", "--no-gitignore", "--map-tokens", "512",
        *args,
    ]  # fmt: skip
    print("$", " ".join(command[1:]), file=sys.stderr)
    subprocess.run(command, cwd=repo, env=env, check=True, timeout=300, stdin=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aider", default="/tmp/aidervenv/bin/aider")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[2] / "tests/data/aider_real")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="aider-real-") as tmp:
        root = Path(tmp)
        repo, home = root / "repo", root / "home"
        repo.mkdir()
        home.mkdir()
        (repo / "calc.py").write_text(CALC)
        (repo / "test_calc.py").write_text(TEST)
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        subprocess.run([*git, "add", "."], cwd=repo, check=True)
        subprocess.run([*git, "commit", "-qm", "start"], cwd=repo, check=True)
        with Server(reply) as server:
            test = ["--test-cmd", f"{sys.executable} test_calc.py", "--auto-test"]
            run(options.aider, repo, home, server.port, "calc.py", *test, "--message", "make add() treat None as 0")
            run(options.aider, repo, home, server.port, "calc.py", "--no-stream",
                "--message", "what does sub() do with None?")  # fmt: skip
            run(options.aider, repo, home, server.port, "calc.py", "--restore-chat-history",
                "--message", f"/run {sys.executable} test_calc.py")  # fmt: skip
            run(options.aider, repo, home, server.port, "calc.py", "--restore-chat-history",
                "--message", "does the test pass now?")  # fmt: skip
            print(f"{len(server.requests)} requests served", file=sys.stderr)
        options.out.mkdir(parents=True, exist_ok=True)
        for name in (".aider.llm.history", ".aider.chat.history.md"):
            text = (repo / name).read_text(encoding="utf-8")
            text = text.replace(str(root), "/tmp/aider-real").replace(sys.executable, "python3")
            (options.out / name).write_text(text, encoding="utf-8")
            print(f"wrote {options.out / name} ({len(text)} chars)", file=sys.stderr)
        shutil.copy(repo / "calc.py", root / "calc.after.py")
        print((repo / "calc.py").read_text(), file=sys.stderr)


if __name__ == "__main__":
    main()
