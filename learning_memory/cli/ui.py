"""``learning-memory ui``: the local web view, served until interrupted; ``--where`` only says where
it is (the plugin's ``/memory`` skill runs that)."""

from __future__ import annotations

import os
import socket
import sys

from learning_memory.shared.settings import Settings

DEFAULT_PORT = 8766
PROBE_TIMEOUT_S = 0.3


def default_port() -> int:
    raw = os.environ.get("LMS_UI_PORT", "")
    return int(raw) if raw.isdigit() else DEFAULT_PORT


def address(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S):
            return True
    except OSError:
        return False


def where(host: str, port: int) -> int:
    url = address(host, port)
    if answers(host, port):
        sys.stdout.write(f"The memory view is running: open {url}\n")
    else:
        sys.stdout.write(
            f"The memory view is not running. Start it with `learning-memory ui --port {port}` "
            f"(it serves {url} until stopped).\n"
        )
    return 0


def serve_ui(settings: Settings, host: str, port: int) -> int:
    import uvicorn

    from learning_memory.composition import in_process_executor
    from learning_memory.server.ui.app import ui_app

    app = ui_app(settings, in_process_executor, host)
    # The address goes to stderr with the logs: this command's stdout carries nothing.
    sys.stderr.write(f"learning-memory ui: {address(host, port)} (Ctrl-C stops it)\n")
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_config=None, lifespan="on")).run()
    return 0
