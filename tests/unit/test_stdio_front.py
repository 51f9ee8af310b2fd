"""The stdio front's cache and its routing of lines, with in-memory wires."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path
from typing import Any

from learning_memory.server.stdio_front import (
    HandshakeCache,
    StdioFront,
    _SdkStdin,
    _SdkStdout,
    code_fingerprint,
)

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def _front(tmp_path: Path, lines: list[bytes], fingerprint: str = "fp") -> tuple[StdioFront, io.BytesIO]:
    out = io.BytesIO()
    cache = HandshakeCache(tmp_path / "handshake.json", fingerprint)
    return StdioFront(cache, io.BytesIO(b"".join(lines)), out), out


def test_fingerprint_is_stable() -> None:
    assert code_fingerprint() == code_fingerprint()


def test_cache_survives_reload_and_ignores_other_fingerprints(tmp_path: Path) -> None:
    path = tmp_path / "c" / "handshake.json"
    cache = HandshakeCache(path, "one")
    key = HandshakeCache.key("tools/list", None, "v1")
    cache.put(key, {"tools": []})
    cache.put(key, {"tools": []})  # unchanged: no rewrite needed
    assert HandshakeCache(path, "one").get(key) == {"tools": []}
    assert HandshakeCache(path, "two").get(key) is None
    path.write_text("not json")
    assert HandshakeCache(path, "one").get(key) is None


def test_unwritable_cache_only_costs_speed(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    cache = HandshakeCache(blocker / "sub" / "handshake.json", "fp")
    cache.put("k", {"x": 1})
    assert cache.get("k") == {"x": 1}


async def test_a_miss_is_learned_from_the_sdk_and_a_hit_is_answered_early(tmp_path: Path) -> None:
    # First session: nothing cached, so both requests wait for the SDK, whose answers are learned.
    front, out = _front(tmp_path, [_line(INIT), b"not json\n", b"\n", _line(LIST)])
    front._read_loop()
    assert out.getvalue() == b""
    stdin, stdout = _SdkStdin(front), _SdkStdout(front)
    assert [line async for line in stdin] == [_line(INIT).decode(), "not json\n", _line(LIST).decode()]
    await stdout.write(
        json.dumps({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25"}}) + "\n"
    )
    await stdout.write(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": ["t"]}}) + "\n")
    await stdout.write("not json\n")
    await stdout.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/x"}) + "\n")
    await stdout.flush()
    assert len(out.getvalue().splitlines()) == 4

    # Second session: answered before the SDK is up; the SDK's own answers are then dropped.
    front, out = _front(tmp_path, [_line(INIT), _line(LIST)])
    front._read_loop()
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert answers == [
        {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25"}},
        {"jsonrpc": "2.0", "id": 1, "result": {"tools": ["t"]}},
    ]
    stdout = _SdkStdout(front)
    await stdout.write(
        json.dumps({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25"}}) + "\n"
    )
    await stdout.write(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": ["t"]}}) + "\n")
    await stdout.write(json.dumps({"jsonrpc": "2.0", "id": 2, "result": {}}) + "\n")
    assert len(out.getvalue().splitlines()) == 3  # only id 2 was added


def test_once_the_sdk_is_up_everything_goes_to_it(tmp_path: Path) -> None:
    front, out = _front(tmp_path, [])
    front._cache.put(HandshakeCache.key("initialize", INIT["params"], None), {"protocolVersion": "x"})
    front._sdk_ready.set()
    front._on_client_line(_line(INIT))
    assert out.getvalue() == b""


def test_writes_from_two_threads_never_interleave(tmp_path: Path) -> None:
    front, out = _front(tmp_path, [])
    payload = {"jsonrpc": "2.0", "id": 5, "result": {"blob": "x" * 10_000}}
    threads = [threading.Thread(target=front._write, args=(payload,)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(json.loads(line) == payload for line in out.getvalue().splitlines())
