"""Templates (Jinja2, autoescaped: every text shown is the agent's or the user's) and the one error
page that every bad input and every failed job ends on."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from learning_memory.shared.contracts.curation import new_change_id
from learning_memory.shared.errors import LmsError

_STATUS = {
    "validation_error": 400,
    "not_found": 404,
    "insufficient_data": 409,
    "unavailable": 503,
    "timeout": 504,
}

NAV = [
    ("/", "Overview"),
    ("/ghap", "GHAP"),
    ("/experiences", "Experiences"),
    ("/clusters", "Clusters"),
    ("/values", "Values"),
    ("/memories", "Memories"),
    ("/audit", "Audit"),
    ("/code", "Code"),
    ("/changes", "Changes"),
]


def _age(value: datetime | str | None) -> str:
    """'3 days ago' reads faster than a timestamp in a list."""
    if value is None:
        return ""
    when = datetime.fromisoformat(value) if isinstance(value, str) else value
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    seconds = max(0.0, (datetime.now(UTC) - when).total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''} ago"
    return "just now"


def _short(text: str | None, limit: int = 140) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENV.filters["age"] = _age
_ENV.filters["short"] = _short
# A form's change id is made as its page is drawn: posted twice, it changes once.
_ENV.globals["change_id"] = new_change_id


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    state = request.app.state.ui
    body = _ENV.get_template(template).render(
        nav=NAV,
        path=request.url.path,
        form_token=state.form_token,
        mode=state.mode,
        notice=request.query_params.get("notice"),
        undo=request.query_params.get("undo"),
        here=request.url.path + (f"?{request.url.query}" if request.url.query else ""),
        **context,
    )
    return HTMLResponse(body, status_code=status)


def status_of(exc: LmsError) -> int:
    return _STATUS.get(exc.type, 500)


def error_page(request: Request, exc: LmsError) -> Response:
    if request.url.path.startswith("/api/"):
        return JSONResponse(exc.to_payload(), status_code=status_of(exc))
    return page(request, "error.html", status=status_of(exc), error=exc.to_payload()["error"])
