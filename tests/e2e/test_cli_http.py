"""The CLI (call, status, demo) and the streamable HTTP transport with its bearer token."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from learning_memory.cli.client import result_payload
from tests.helpers import stop_process

pytestmark = pytest.mark.slow


def _cli(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "learning_memory", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_call_prints_the_tool_result_as_json(lms_env: dict[str, str]) -> None:
    env = {**lms_env, "LMS_QUEUE": "inline"}
    done = _cli(env, "call", "ping")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "ok"
    failed = _cli(env, "call", "ping", '{"delay_ms": -4}')
    assert failed.returncode == 1
    assert json.loads(failed.stdout)["error"]["type"] == "validation_error"
    assert _cli(env, "call", "ping", "[1]").returncode == 2
    assert _cli(env, "call", "ping", "{nope").returncode == 2


def test_status_reports_redis_queues_and_workers(lms_env: dict[str, str]) -> None:
    done = _cli(lms_env, "status")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["redis"]["reachable"] is True
    assert report["queue_mode"] == {"configured": "arq", "effective": "arq"}
    assert report["queues"] == {"interactive": 0, "batch": 0}
    assert "hint" in report  # no worker running in this namespace
    offline = json.loads(
        _cli({**lms_env, "LMS_QUEUE": "auto", "LMS_REDIS_URL": "redis://127.0.0.1:1/0"}, "status").stdout
    )
    assert offline["redis"]["reachable"] is False
    assert offline["queue_mode"]["effective"] == "inline"


def assert_demo_ran(stdout: str) -> None:
    assert "demo finished: ok" in stdout
    assert "shop/payments/retry.py" in stdout  # search_code found the sample's backoff
    assert "Retry failed charges" in stdout  # search_commits found the sample's commit


def test_demo_session(lms_env: dict[str, str]) -> None:
    # What `make run` runs, from the checkout: the demo writes its sample project (with a git
    # history), indexes and searches it with the real model, and leaves nothing of it behind; the
    # learning step loads the model again in a session of its own.
    done = _cli({**lms_env, "LMS_QUEUE": "inline"}, "demo", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_demo_ran(done.stdout)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def http_server(env: dict[str, str], host: str, port: int) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "learning_memory",
            "serve",
            "--transport",
            "http",
            "--host",
            host,
            "--port",
            str(port),
        ],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        # uvicorn says it is up on stderr; wait for that line (bounded by the read timeout below).
        assert proc.stderr is not None
        for _ in range(200):
            line = proc.stderr.readline()
            if not line or b"Uvicorn running" in line:
                break
        yield proc
    finally:
        stop_process(proc)


async def test_http_on_loopback(lms_env: dict[str, str]) -> None:
    port = _free_port()
    with http_server({**lms_env, "LMS_QUEUE": "inline"}, "127.0.0.1", port):
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            assert result_payload(await client.call_tool("ping", {}))["status"] == "ok"


def test_http_elsewhere_needs_a_token(lms_env: dict[str, str]) -> None:
    done = _cli({**lms_env, "LMS_QUEUE": "inline"}, "serve", "--transport", "http", "--host", "0.0.0.0")
    assert done.returncode == 2
    assert "LMS_AUTH_TOKEN" in done.stderr


async def test_http_with_token(lms_env: dict[str, str]) -> None:
    port = _free_port()
    env = {**lms_env, "LMS_QUEUE": "inline", "LMS_AUTH_TOKEN": "t0ken"}
    with http_server(env, "0.0.0.0", port):
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx.AsyncClient() as plain:
            denied = await plain.post(url, json={})
            assert denied.status_code == 401
            assert denied.json()["error"]["type"] == "unauthorized"
        http = create_mcp_http_client(headers={"Authorization": "Bearer t0ken"})
        async with Client(streamable_http_client(url, http_client=http)) as client:
            assert result_payload(await client.call_tool("ping", {}))["status"] == "ok"


def test_index_command_prints_the_statistics(lms_env: dict[str, str], tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "a.py").write_text(
        "def alpha():\n    return 1\n\n\nclass Beta:\n    def gamma(self):\n        pass\n"
    )
    env = {**lms_env, "LMS_QUEUE": "inline", "LMS_EMBEDDING_MODEL": "hashing:64", "LMS_TOOL_WAIT_S": "0.01"}
    done = _cli(env, "index", str(project), "--project", "proj")
    assert done.returncode == 0, done.stdout + done.stderr
    stats = json.loads(done.stdout)
    assert stats["files_indexed"] == 1 and stats["units_indexed"] == 3
    assert stats["vectors_pending"] == 0  # the command follows the vectors to the end
    assert "files" in done.stderr  # the progress line
    missing = _cli(env, "index", str(tmp_path / "nowhere"))
    assert missing.returncode == 1 and "validation_error" in missing.stdout
