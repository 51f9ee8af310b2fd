"""A stand-in for the Anthropic Messages API that answers from a script, so that real Claude Code
can be driven with no network and no account.

Each request that offers tools (a turn of the main conversation) gets the script's next turn:
some text, tool calls, or both. When the script runs out, the model says ``done.`` and stops.
A script is a list of turns, or a generator that decides as it goes: it yields a turn and is
sent the next request, whose last message holds that turn's tool results (see
:func:`last_tool_result`). Requests without ``tools`` are Claude Code's side calls (titles,
summaries, checks): they get a short text and never advance the script. Every request body is
recorded, in order, for tests to read what the model was shown.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SIDE_REPLY = "ok"
DONE_REPLY = "done."


@dataclass(frozen=True)
class ToolUse:
    """One tool call the model makes."""

    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class Turn:
    """One assistant message: text first, then tool calls (stop reason ``tool_use`` if any)."""

    text: str = ""
    tools: tuple[ToolUse, ...] = ()


def say(text: str) -> Turn:
    return Turn(text=text)


def call(name: str, /, **arguments: Any) -> Turn:
    """A turn calling one tool; ``name`` is as Claude Code lists it (``Bash``, ``mcp__…``). Every
    keyword is an argument of the tool (``Turn`` adds text to a call)."""
    return Turn(tools=(ToolUse(name, arguments),))


def last_tool_result(request: Request) -> str:
    """The text of the last tool result in a request: what the previous turn's call returned."""
    for message in reversed(request.body.get("messages", [])):
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block in reversed(content):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, str):
                    return inner
                return "".join(b.get("text", "") for b in inner or [] if isinstance(b, dict))
    return ""


@dataclass(frozen=True)
class Request:
    """One request Claude Code made, as received."""

    path: str
    body: dict[str, Any]

    @property
    def is_main(self) -> bool:
        """A turn of the conversation (it offers tools), not a side call."""
        return (
            self.path.startswith("/v1/messages") and "count_tokens" not in self.path and "tools" in self.body
        )


# A fixed list of turns, or a generator sent each following request.
Script = Sequence[Turn] | Generator[Turn, "Request", None]


@dataclass
class ScriptedModel:
    """The HTTP server, in a thread of this process. Use as a context manager."""

    script: Script = ()
    model_name: str = "claude-scripted"
    requests: list[Request] = field(default_factory=list)
    script_errors: list[Exception] = field(default_factory=list)
    _turns: Iterator[Turn] = field(init=False)
    _started: bool = field(default=False, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _ids: Iterator[int] = field(default_factory=itertools.count, init=False)
    _httpd: ThreadingHTTPServer | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._turns = iter(self.script)

    @property
    def url(self) -> str:
        assert self._httpd is not None, "the model is not running"
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def set_script(self, script: Script) -> None:
        """Replace what is left of the script (between sessions that share one model)."""
        with self._lock:
            self._turns = iter(script)
            self._started = False

    def main_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.is_main]

    def __enter__(self) -> ScriptedModel:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, name="scripted-model", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def _answer(self, request: Request) -> Turn:
        with self._lock:
            self.requests.append(request)
            if not request.is_main:
                return Turn(text=SIDE_REPLY)
            try:
                if isinstance(self._turns, Generator) and self._started:
                    turn: Turn = self._turns.send(request)
                    return turn
                self._started = True
                return next(self._turns)
            except StopIteration:
                return Turn(text=DONE_REPLY)
            except Exception as exc:  # a broken script ends the session; the test reads why
                self.script_errors.append(exc)
                return Turn(text=f"script failed: {exc!r}")

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}_scripted{next(self._ids):06d}"


def _message(model: ScriptedModel, turn: Turn) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    for tool in turn.tools:
        content.append(
            {"type": "tool_use", "id": model._next_id("toolu"), "name": tool.name, "input": tool.input}
        )
    return {
        "id": model._next_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": model.model_name,
        "content": content,
        "stop_reason": "tool_use" if turn.tools else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _events(message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The server-sent events that stream ``message``: one delta per content block."""
    start = {**message, "content": [], "stop_reason": None}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            empty: dict[str, Any] = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            empty = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": empty}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": 1},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _handler(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the requests list is the log; stderr belongs to the test runner

        def do_HEAD(self) -> None:
            self._send_json({})

        def do_GET(self) -> None:
            self._send_json({"data": [], "has_more": False})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b"{}"
            try:
                body = json.loads(raw)
            except ValueError:
                body = {}
            path = self.path.split("?", 1)[0]
            if path.endswith("/count_tokens"):
                model._record(Request(path, body))
                self._send_json({"input_tokens": max(1, len(raw) // 4)})
                return
            if not path.endswith("/v1/messages"):
                self._send_json({})
                return
            message = _message(model, model._answer(Request(path, body)))
            if body.get("stream"):
                self._send_stream(message)
            else:
                self._send_json(message)

        def _send_json(self, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send_stream(self, message: dict[str, Any]) -> None:
            data = b"".join(
                f"event: {name}\ndata: {json.dumps(event)}\n\n".encode() for name, event in _events(message)
            )
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
