"""Make tests/data/opencode_real/ with the real opencode, offline.

    mkdir /tmp/oc && cd /tmp/oc && npm install opencode-ai @ai-sdk/openai-compatible
    python benchmarks/realfiles/make_opencode.py --opencode /tmp/oc/node_modules/opencode-linux-x64/bin/opencode

It makes a throwaway project under /tmp with an opencode.json naming a custom
OpenAI-compatible provider at the fake server of fakellm.py, and runs
``opencode run`` with HOME and the XDG folders in the temporary directory, so
its storage lands there. The fake model answers first with a ``read`` tool call
and then with text. Not run by the tests."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fakellm import Server

PROJECT: list[Path] = []  # the project folder, set once it is made


def reply(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages", [])
    if any(m.get("role") == "tool" for m in messages):
        return {"content": "calc.py defines add(a, b), which returns a + b."}
    if not body.get("tools"):
        return {"content": "Reading calc.py"}  # a title or summary request
    args = json.dumps({"filePath": str(PROJECT[0] / "calc.py")})
    return {"tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read", "arguments": args}}]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opencode", default="/tmp/oc/node_modules/opencode-linux-x64/bin/opencode")
    parser.add_argument("--modules", type=Path, default=Path("/tmp/oc/node_modules"))
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[2] / "tests/data/opencode_real")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="opencode-real-") as tmp:
        root = Path(tmp)
        project, home = root / "project", root / "home"
        project.mkdir()
        home.mkdir()
        PROJECT.append(project)
        (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        with Server(reply) as server:
            config = {
                "$schema": "https://opencode.ai/config.json",
                "provider": {
                    "fake": {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "Fake",
                        "options": {"baseURL": f"http://127.0.0.1:{server.port}/v1", "apiKey": "x"},
                        "models": {"fake": {"name": "Fake", "tool_call": True}},
                    }
                },
                "model": "fake/fake",
                "autoupdate": False,
                "share": "disabled",
            }
            (project / "opencode.json").write_text(json.dumps(config, indent=2))
            env = {
                "PATH": os.environ.get("PATH", ""),
                "HOME": str(home),
                "XDG_DATA_HOME": str(root / "data"),
                "XDG_CONFIG_HOME": str(root / "config"),
                "XDG_CACHE_HOME": str(root / "cache"),
                "XDG_STATE_HOME": str(root / "state"),
                "OPENCODE_DISABLE_AUTOUPDATE": "true",
                "OPENCODE_DISABLE_MODELS_FETCH": "true",
                "OPENCODE_DISABLE_LSP_DOWNLOAD": "true",
                "NODE_PATH": str(options.modules),
            }
            # opencode installs a provider's npm package into its cache; give it the one npm installed
            cache = root / "cache" / "opencode" / "node_modules"
            cache.mkdir(parents=True)
            for name in ("@ai-sdk", "@standard-schema", "eventsource-parser", "json-schema", "zod"):
                if (options.modules / name).exists():
                    shutil.copytree(options.modules / name, cache / name, symlinks=True)
            command = [options.opencode, "run", "--model", "fake/fake", "What does calc.py define? Read it."]
            print("$", " ".join(command), file=sys.stderr)
            done = subprocess.run(command, cwd=project, env=env, timeout=240, stdin=subprocess.DEVNULL)
            print(f"exit {done.returncode}, {len(server.requests)} requests served", file=sys.stderr)
        data = root / "data" / "opencode"
        database = data / "opencode.db"
        if database.exists():  # opencode 1.x keeps its sessions here, not in storage/ JSON folders
            import sqlite3

            with sqlite3.connect(database) as db:
                for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
                    count = db.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
                    print(f"table {table}: {count} rows", file=sys.stderr)
                for kind, n in db.execute("SELECT json_extract(data, '$.type'), count(*) FROM part GROUP BY 1"):
                    print(f"part type {kind}: {n}", file=sys.stderr)
        for path in sorted(data.rglob("*")):
            print(path.relative_to(root), file=sys.stderr)
        storage = data / "storage"
        if storage.is_dir():
            if options.out.exists():
                shutil.rmtree(options.out)
            shutil.copytree(storage, options.out / "storage")
            for path in (options.out / "storage").rglob("*.json"):
                path.write_text(path.read_text(encoding="utf-8").replace(str(root), "/tmp/opencode-real"))


if __name__ == "__main__":
    main()
