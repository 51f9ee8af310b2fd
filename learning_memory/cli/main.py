"""``learning-memory serve | worker | call TOOL [JSON] | index PATH | status | demo | ui | claude ACTION |
hook EVENT``.

Imports are made inside each command: ``serve`` over stdio must start reading the
wire before anything heavy (pydantic, the MCP SDK) is loaded.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from learning_memory.server.stdio_front import StdioFront


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="learning-memory", description="A memory that learns, for Claude Code."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the MCP server (stdio by default)")
    serve.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    worker = sub.add_parser("worker", help="run the worker (both queues)")
    worker.add_argument(
        "--exit-when-idle",
        action="store_true",
        help="leave after LMS_WORKER_IDLE_EXIT_S with no job and no live session (as autostarted)",
    )
    worker.add_argument(
        "--check", action="store_true", help="exit 0 when a worker is alive, else 1 (a health check)"
    )
    call = sub.add_parser("call", help="call one tool through a fresh server over stdio; print JSON")
    call.add_argument("tool")
    call.add_argument("arguments", nargs="?", default="{}", help="tool arguments as a JSON object")
    index = sub.add_parser("index", help="index a codebase for search_code, with a progress bar")
    index.add_argument("path", help="the directory to index")
    index.add_argument("--project", help="the project name (default: the directory's name)")
    index.add_argument("--no-recursive", action="store_true", help="only the directory's own files")
    sub.add_parser("status", help="mode, Redis and worker health, queue depths, folders, versions")
    _porting_parsers(sub)
    sub.add_parser("demo", help="a scripted session over stdio (what `make run` runs)")
    hook = sub.add_parser("hook", help="what a Claude Code command hook runs (reads its JSON on stdin)")
    hook.add_argument("event", choices=["session-start", "session-end"])
    mine = sub.add_parser("mine", help="learn from one Claude Code session's log now (idempotent)")
    mine.add_argument("log", type=Path, help="a session log under <data_dir>/capture/")
    ui = sub.add_parser("ui", help="serve the local web view of the memory (127.0.0.1 by default)")
    ui.add_argument("--host", default="127.0.0.1", help="bind address; not loopback only with LMS_AUTH_TOKEN")
    ui.add_argument("--port", type=int, default=None, help="port (default $LMS_UI_PORT, else 8766)")
    ui.add_argument("--where", action="store_true", help="only say where the view is and whether it runs")
    claude = sub.add_parser("claude", help="install or remove this checkout's Claude Code plugin")
    claude.add_argument("action", choices=["install", "uninstall"])
    claude.add_argument("--scope", choices=["user", "project", "local"], default="user")
    return parser


def _porting_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    export = sub.add_parser("export", help="write memories, experiences, values and GHAP entries to a file")
    export.add_argument("file", type=Path, nargs="?", help="the JSON Lines file to write")
    export.add_argument("--values-md", type=Path, help="write the values alone, as Markdown, to this file")
    export.add_argument("--project", help="only this project's items (its id, or a folder of it: .)")
    export.add_argument("--vectors", action="store_true", help="with the vectors (importing needs no model)")
    imp = sub.add_parser("import", help="bring an export back (idempotent: twice changes nothing)")
    imp.add_argument("file", type=Path, nargs="?", help="a file `learning-memory export` wrote")
    imp.add_argument("--values-md", type=Path, help="a values Markdown file: its values come as suggestions")
    imp.add_argument("--project", help="the project importing (default: this folder's, for one project)")


def _serve(transport: str, host: str, port: int, front: StdioFront | None) -> int:
    from learning_memory.composition import build_server
    from learning_memory.shared.settings import get_settings

    server = build_server()
    if front is not None:
        import anyio

        anyio.run(front.serve, server)
    else:
        from learning_memory.server.http import serve_http

        serve_http(server, get_settings(), host, port)
    return 0


def _worker(exit_when_idle: bool, check: bool) -> int:
    # Before numpy loads OpenBLAS, which sets aside buffers for each thread it may use and keeps
    # them for the process's life (~30 MiB a core, first taken by clustering's one large matrix
    # product). The worker's other numpy work is small; its model runs on ONNX Runtime's threads.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from learning_memory.worker import main

    return main.check() if check else main.run(exit_when_idle)


async def _call(tool: str, arguments: str) -> int:
    from learning_memory.cli.client import result_payload, stdio_session

    try:
        args = json.loads(arguments)
    except ValueError as exc:
        print(f"arguments must be a JSON object: {exc}", file=sys.stderr)
        return 2
    if not isinstance(args, dict):
        print("arguments must be a JSON object", file=sys.stderr)
        return 2
    async with stdio_session() as client:
        result = await client.call_tool(tool, args)
    print(json.dumps(result_payload(result), indent=2))
    return 1 if result.is_error else 0


async def _status() -> int:
    from learning_memory.cli.status import collect_status
    from learning_memory.shared.settings import get_settings

    print(json.dumps(await collect_status(get_settings()), indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "hook":  # before anything heavy: Claude Code waits for this process
        if args.event == "session-end":
            from learning_memory.server.capture.session_end import main as session_end

            return session_end()
        from learning_memory.server.hooks.session_brief import main as session_start

        return session_start()
    if args.command == "claude":  # needs no settings: a bad LMS_* value must not block (un)installing
        from learning_memory.cli.claude import run

        return run(args.action, args.scope)
    front = None
    if args.command == "serve" and args.transport == "stdio":
        from learning_memory.server.stdio_front import StdioFront

        front = StdioFront.start()  # answers the handshake while the rest loads

    import asyncio  # here, not at the top: the hook command must not pay for it

    from learning_memory.shared.errors import LmsError
    from learning_memory.shared.log import configure_logging
    from learning_memory.shared.settings import ConfigError, get_settings

    try:
        configure_logging(get_settings().log_level)
        if args.command == "serve":
            from learning_memory.shared.loop_settings import get_loop_settings

            get_loop_settings()  # a bad FSDD_LOOP_* value stops start-up too, not the first loop
            return _serve(args.transport, args.host, args.port, front)
        if args.command == "worker":
            return _worker(args.exit_when_idle, args.check)
        if args.command == "ui":
            from learning_memory.cli.ui import default_port, serve_ui, where

            port = args.port or default_port()
            return where(args.host, port) if args.where else serve_ui(get_settings(), args.host, port)
        if args.command == "call":
            return asyncio.run(_call(args.tool, args.arguments))
        if args.command == "status":
            return asyncio.run(_status())
        if args.command == "mine":
            from learning_memory.cli.mine import run_mine

            return asyncio.run(run_mine(args.log))
        if args.command in ("export", "import"):
            from learning_memory.cli import porting

            if args.command == "export":
                return asyncio.run(porting.run_export(args.file, args.values_md, args.project, args.vectors))
            return asyncio.run(porting.run_import(args.file, args.values_md, args.project))
        if args.command == "index":
            from learning_memory.cli.index import run_index

            return asyncio.run(run_index(args.path, args.project, not args.no_recursive))
        from learning_memory.cli.demo import run_demo

        return asyncio.run(run_demo())
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    except LmsError as exc:  # e.g. a second worker on a locked embedded store: say why, no traceback
        print(f"learning-memory {args.command}: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
