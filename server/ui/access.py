"""Who may reach the view: loopback needs nothing; any other bind address needs ``LMS_AUTH_TOKEN``,
as the HTTP transport does. A browser cannot send a bearer header, so ``?token=`` once sets a
cookie. Every write also carries a form token only pages of this process know, so another site
open in the same browser cannot post to it."""

from __future__ import annotations

import hmac
import secrets

from starlette.datastructures import URL
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from learning_memory.server.http import is_loopback
from learning_memory.shared.settings import ConfigError

COOKIE = "lms_ui_token"


def require_safe_bind(host: str, token: str | None) -> None:
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"Refusing to serve the memory view on {host} without a token: set LMS_AUTH_TOKEN "
            "(then open the address with ?token=<token> once), or bind 127.0.0.1."
        )


def new_form_token() -> str:
    return secrets.token_urlsafe(24)


def same_secret(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


class TokenGate:
    """Lets a request through when it carries the token as a bearer header, the cookie or
    ``?token=`` (which is then moved into the cookie and out of the address bar)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        request = Request(scope)
        bearer = request.headers.get("authorization", "")
        if same_secret(bearer.removeprefix("Bearer "), self._token) or same_secret(
            request.cookies.get(COOKIE), self._token
        ):
            await self._app(scope, receive, send)
            return
        response: Response
        if same_secret(request.query_params.get("token"), self._token):
            kept = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            response = RedirectResponse(str(URL(str(request.url)).replace_query_params(**dict(kept))), 303)
            response.set_cookie(COOKIE, self._token, httponly=True, samesite="strict")
        else:
            response = JSONResponse(
                {
                    "error": {
                        "type": "unauthorized",
                        "message": "missing or wrong token: open the view with ?token=<LMS_AUTH_TOKEN>",
                    }
                },
                status_code=401,
            )
        await response(scope, receive, send)
