"""Answers the MCP handshake at once, while the SDK is still loading.

Importing mcp 2.x costs most of a second here (it builds hundreds of pydantic protocol
models), so a server that imports it before reading stdin keeps Claude Code waiting
that long at every session start. The front owns the stdio wire from the first byte:

- every line from the client is queued, in order, for the SDK to read once it is up;
- until then, ``initialize`` and ``tools/list`` are answered at once from a cache of
  the SDK's own earlier answers, and the SDK's later answers to those ids are dropped;
- the cache is learned from the SDK's answers whenever it misses, and is keyed by a
  fingerprint of the code (our sources and the installed SDK), so it cannot go stale.

This module must stay light: only the standard library and ``shared.paths``.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import sys
import threading
from pathlib import Path
from typing import Any

from learning_memory.shared.paths import data_dir_from_env

# server/discover opens a 2026-07-28 session; initialize opens the older ones.
CACHEABLE = frozenset({"initialize", "server/discover", "tools/list"})
_SOURCE_ROOTS = ("server", "shared")


def code_fingerprint() -> str:
    """Changes whenever a tool, a model or the SDK could answer the handshake differently."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parent.parent
    for package in _SOURCE_ROOTS:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(path.read_bytes())
    import importlib.util  # finds the SDK without importing it

    spec = importlib.util.find_spec("mcp")
    if spec is not None and spec.origin is not None:
        stat = os.stat(spec.origin)
        digest.update(f"{spec.origin}:{stat.st_mtime_ns}:{stat.st_size}".encode())
    return digest.hexdigest()


class HandshakeCache:
    def __init__(self, path: Path, fingerprint: str) -> None:
        self._path = path
        self._fingerprint = fingerprint
        self._lock = threading.Lock()
        self._entries: dict[str, Any] = {}
        try:
            stored = json.loads(path.read_text())
            if stored.get("fingerprint") == fingerprint:
                self._entries = dict(stored.get("entries", {}))
        except (OSError, ValueError, AttributeError):
            pass  # no cache yet, or unreadable: learn it again

    @staticmethod
    def key(method: str, params: Any, protocol_version: str | None) -> str:
        return json.dumps([method, params, protocol_version], sort_keys=True)

    def get(self, key: str) -> Any:
        return self._entries.get(key)

    def put(self, key: str, result: Any) -> None:
        with self._lock:
            if self._entries.get(key) == result:
                return
            self._entries[key] = result
            body = json.dumps({"fingerprint": self._fingerprint, "entries": self._entries})
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                tmp = self._path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(body)
                os.replace(tmp, self._path)  # atomic: a concurrent reader sees old or new
            except OSError:
                pass  # a cache that cannot be written only costs speed


def _claim_stdio() -> tuple[Any, Any]:
    """Take the wire for ourselves; fd 0 becomes /dev/null and fd 1 stderr, so that nothing
    else in the process (a library's print, a child) can read or corrupt the protocol."""
    wire_in = os.fdopen(os.dup(0), "rb", buffering=0)
    wire_out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return wire_in, wire_out


class StdioFront:
    def __init__(self, cache: HandshakeCache, wire_in: Any, wire_out: Any) -> None:
        self._cache = cache
        self._in = wire_in
        self._out = wire_out
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._write_lock = threading.Lock()
        self._sdk_ready = threading.Event()
        self._answered: set[Any] = set()  # ids answered here: the SDK's answers are dropped
        self._learning: dict[Any, tuple[str, Any]] = {}  # id -> (method, params) to cache
        self._protocol_version: str | None = None

    @classmethod
    def start(cls) -> StdioFront:
        cache = HandshakeCache(data_dir_from_env() / "cache" / "handshake.json", code_fingerprint())
        front = cls(cache, *_claim_stdio())
        threading.Thread(target=front._read_loop, name="stdio-front", daemon=True).start()
        return front

    # --- client -> server ------------------------------------------------------

    def _read_loop(self) -> None:
        try:
            for line in self._in:
                if line.strip():
                    self._on_client_line(line)
                    self._lines.put(line)
        finally:
            self._lines.put(None)

    def _on_client_line(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return  # the SDK reports malformed input itself
        if not isinstance(message, dict) or message.get("method") not in CACHEABLE or "id" not in message:
            return
        method, request_id = message["method"], message["id"]
        version = None if method == "initialize" else self._protocol_version
        key = HandshakeCache.key(method, message.get("params"), version)
        cached = None if self._sdk_ready.is_set() else self._cache.get(key)
        if cached is None:
            self._learning[request_id] = (method, message.get("params"))
            return
        self._answered.add(request_id)
        if method == "initialize":
            self._protocol_version = cached.get("protocolVersion")
        self._write({"jsonrpc": "2.0", "id": request_id, "result": cached})
        # structlog is not loaded yet; this line has the same JSON shape as its records.
        sys.stderr.write(json.dumps({"event": "handshake.answered_from_cache", "method": method}) + "\n")

    # --- server -> client ------------------------------------------------------

    def _write(self, message: dict[str, Any]) -> None:
        self._send(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def _send(self, data: bytes) -> None:
        with self._write_lock:
            self._out.write(data)
            self._out.flush()

    def _on_server_line(self, line: str) -> bool:
        """Learn from the SDK's answer; return False when it must not reach the client."""
        if not (self._answered or self._learning):
            return True
        try:
            message = json.loads(line)
        except ValueError:
            return True
        if not isinstance(message, dict) or "method" in message:
            return True  # a request or notification of the server's own
        request_id = message.get("id")
        if request_id in self._answered:
            self._answered.discard(request_id)
            return False
        learned = self._learning.pop(request_id, None)
        if learned is not None and isinstance(message.get("result"), dict):
            method, params = learned
            # Keyed as a later session will look it up: by then initialize has told the version.
            version = None if method == "initialize" else self._protocol_version
            if method == "initialize":
                self._protocol_version = message["result"].get("protocolVersion")
            self._cache.put(HandshakeCache.key(method, params, version), message["result"])
        return True

    # --- the SDK's side: duck-typed anyio.AsyncFile[str] streams ----------------

    async def serve(self, server: Any) -> None:
        """Run an ``MCPServer`` over this front (what ``MCPServer.run_stdio_async`` does)."""
        from mcp.server.stdio import stdio_server

        self._sdk_ready.set()
        lowlevel = server._lowlevel_server
        async with stdio_server(stdin=_SdkStdin(self), stdout=_SdkStdout(self)) as (read, write):  # type: ignore[arg-type]
            await lowlevel.run(read, write, lowlevel.create_initialization_options())


class _SdkStdin:
    def __init__(self, front: StdioFront) -> None:
        self._front = front

    def __aiter__(self) -> _SdkStdin:
        return self

    async def __anext__(self) -> str:
        import anyio

        line = await anyio.to_thread.run_sync(self._front._lines.get)
        if line is None:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _SdkStdout:
    def __init__(self, front: StdioFront) -> None:
        self._front = front

    async def write(self, text: str) -> None:
        for line in text.splitlines(keepends=True):
            if self._front._on_server_line(line):
                self._front._send(line.encode())

    async def flush(self) -> None:
        """Every write is flushed already."""
