"""A tiny OpenAI-compatible chat server on 127.0.0.1 for producing real agent
files offline (see make_aider.py, make_opencode.py). It answers
``POST /v1/chat/completions`` (streamed as server-sent events when the request
asks for ``stream``, else one JSON document) and ``GET /v1/models``. What it
answers is decided by ``reply(request) -> dict`` given to ``serve``: a dict
with ``content`` (text) and/or ``tool_calls`` (OpenAI shape). Every request is
kept in ``Server.requests`` so the script can say what was sent.

Not run by the tests: it documents how the fixtures under tests/data/*_real/
were made."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any]], dict[str, Any]]


class Server:
    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                outer.requests.append(body)
                answer = outer.reply(body)
                if body.get("stream"):
                    self._stream(body, answer)
                else:
                    self._json(200, _completion(body, answer))

            def _stream(self, body: dict[str, Any], answer: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                for chunk in _chunks(body, answer):
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _usage(body: dict[str, Any], answer: dict[str, Any]) -> dict[str, int]:
    prompt = len(json.dumps(body.get("messages", []))) // 4
    completion = len(json.dumps(answer)) // 4
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _completion(body: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.get("content")}
    if answer.get("tool_calls"):
        message["tool_calls"] = answer["tool_calls"]
    return {
        "id": f"chatcmpl-{int(time.time() * 1000)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if answer.get("tool_calls") else "stop"}
        ],
        "usage": _usage(body, answer),
    }


def _chunks(body: dict[str, Any], answer: dict[str, Any]) -> list[dict[str, Any]]:
    base = {
        "id": f"chatcmpl-{int(time.time() * 1000)}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
    }
    chunks: list[dict[str, Any]] = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    text = answer.get("content") or ""
    for start in range(0, len(text), 40):
        chunks.append({**base, "choices": [{"index": 0, "delta": {"content": text[start : start + 40]}}]})
    for i, call in enumerate(answer.get("tool_calls") or []):
        delta = {"tool_calls": [{"index": i, "id": call["id"], "type": "function", "function": call["function"]}]}
        chunks.append({**base, "choices": [{"index": 0, "delta": delta}]})
    finish = "tool_calls" if answer.get("tool_calls") else "stop"
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    chunks.append({**base, "choices": [], "usage": _usage(body, answer)})
    return chunks


def last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content or "")
    return ""
