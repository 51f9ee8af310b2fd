"""Streamable HTTP transport. Loopback by default; anywhere else only behind a bearer token."""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

from learning_memory.shared.settings import ConfigError, Settings


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class BearerAuth:
    """Rejects any HTTP request whose ``Authorization`` is not ``Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                    }
                )
                body = b'{"error": {"type": "unauthorized", "message": "missing or wrong bearer token"}}'
                await send({"type": "http.response.body", "body": body})
                return
        await self._app(scope, receive, send)


def http_app(server: MCPServer[Any], settings: Settings, host: str) -> ASGIApp:
    token = settings.auth_token.get_secret_value() if settings.auth_token else None
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"Refusing to serve HTTP on {host} without a token: set LMS_AUTH_TOKEN "
            "(clients then send 'Authorization: Bearer <token>'), or bind 127.0.0.1."
        )
    app: ASGIApp = server.streamable_http_app(host=host)
    return BearerAuth(app, token) if token else app


def serve_http(server: MCPServer[Any], settings: Settings, host: str, port: int) -> None:
    app = http_app(server, settings, host)
    # log_config=None: uvicorn logs through our stderr JSON handler; stdout stays unused.
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_config=None, lifespan="on")).run()
