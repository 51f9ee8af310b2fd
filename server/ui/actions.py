"""The curation forms (POST only): each change runs through the same jobs as the tools, is recorded,
and can be undone from the page it left."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from learning_memory.server.ui import params
from learning_memory.server.ui.access import same_secret
from learning_memory.server.ui.app_state import ui_state
from learning_memory.shared.errors import ValidationError

MAX_FORM_BYTES = 64 * 1024


async def read_form(request: Request) -> Mapping[str, Any]:
    """The posted fields, once the form token proves the form came from one of our pages."""
    if int(request.headers.get("content-length") or 0) > MAX_FORM_BYTES:
        raise ValidationError(f"the form is larger than {MAX_FORM_BYTES // 1024} KiB")
    form = await request.form()
    if not same_secret(params.text(form, "form_token", 200), ui_state(request).form_token):
        raise ValidationError(
            "the form is out of date (the view restarted since it was loaded): reload the page"
        )
    return form


def back(form: Mapping[str, Any], notice: str, default: str = "/") -> Response:
    """Back to the page the form was on (only a path of this view), with a notice."""
    target = params.text(form, "back", 500) or default
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/"):
        target = default
    separator = "&" if "?" in target else "?"
    return RedirectResponse(f"{target}{separator}notice={quote(notice)}", status_code=303)


ROUTES: list[Route] = []
