"""The web view's application: one job transport for its lifetime (the server's own: Redis and the
worker in arq mode, the worker's jobs in this process in inline mode), pages, forms and JSON."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pydantic
import structlog
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from learning_memory.server.transport import create_transport
from learning_memory.server.ui import actions, api, pages
from learning_memory.server.ui.access import TokenGate, new_form_token, require_safe_bind
from learning_memory.server.ui.app_state import UiState
from learning_memory.server.ui.journal_view import JournalView
from learning_memory.server.ui.render import error_page
from learning_memory.shared.errors import InternalError, LmsError, ValidationError
from learning_memory.shared.jobs import ExecutorFactory
from learning_memory.shared.settings import Settings

log = structlog.get_logger(__name__)


async def _lms_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, LmsError)
    return error_page(request, exc)


async def _invalid(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, pydantic.ValidationError)
    details = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in exc.errors())
    return error_page(request, ValidationError(details))


async def _unexpected(request: Request, exc: Exception) -> Response:
    # The traceback goes to the log; the page says no more than that something failed.
    log.error("ui.unexpected_error", path=request.url.path, exc_info=exc)
    return error_page(request, InternalError())


def ui_app(settings: Settings, executor: ExecutorFactory | None, host: str = "127.0.0.1") -> ASGIApp:
    token = settings.auth_token.get_secret_value() if settings.auth_token else None
    require_safe_bind(host, token)
    state = UiState(settings=settings, form_token=new_form_token(), journal=JournalView(settings.journal_dir))

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        state.transport = await create_transport(settings, executor)
        log.info("ui.started", mode=state.transport.mode, data_dir=str(settings.data_dir))
        try:
            yield
        finally:
            await state.transport.close()

    app = Starlette(
        routes=[
            *pages.ROUTES,
            *actions.ROUTES,
            *api.ROUTES,
            Mount("/static", app=StaticFiles(directory=Path(__file__).parent / "static"), name="static"),
            Route("/{rest:path}", pages.not_found, methods=["GET", "POST"]),
        ],
        lifespan=lifespan,
        exception_handlers={
            LmsError: _lms_error,
            pydantic.ValidationError: _invalid,
            Exception: _unexpected,
            404: pages.not_found_handler,
            405: pages.not_allowed_handler,
        },
    )
    app.state.ui = state
    return TokenGate(app, token) if token else app
