"""The single mapping from failures, and from jobs that outlast the wait, to MCP tool answers.

Every tool answers one of three shapes, and its output schema (``tools/list``) admits each:

- its own answer, a pydantic model (``structuredContent``, and the same JSON as text);
- ``{"status": "running", "job_id", "message"}`` (:class:`Running`) when it waits on a job that
  outlasts ``LMS_TOOL_WAIT_S``; ``get_job_status(job_id)`` follows it. Tools that never wait on
  a job (declared ``instant``) cannot answer it;
- ``{"error": {"type", "message"}}`` (:class:`ToolFailure`) with ``isError: true``, as text only:
  clients check ``structuredContent`` against the schema on success, and show the model an
  error's text.

Two paths lead to an error: our tools' own failures (:func:`guarded`, which the tool registry
puts around every tool), and the SDK's (arguments that fail the input schema, an unknown tool),
which reach us only as text and are rewritten by :class:`ToolErrorMiddleware`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any, Literal, ParamSpec

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from learning_memory.server.transport import JobStillRunning
from learning_memory.shared.errors import (
    ERROR_TYPES,
    InternalError,
    LmsError,
    NotFoundError,
    ValidationError,
)
from learning_memory.shared.log import get_logger

log = get_logger(__name__)
P = ParamSpec("P")
_SDK_PREFIX = "Error executing tool "
# Marks an error result as ours (its type), so the middleware tells it from the SDK's without
# reading its text back.
ERROR_META_KEY = "learning-memory/error"


def error_result(error: LmsError) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(error.to_payload()))],
        is_error=True,
        meta={ERROR_META_KEY: error.type},
    )


RUNNING_MESSAGE = "The job is still running; call get_job_status with this job_id for progress and result."


class Running(BaseModel):
    """A tool's answer when its job outlasts the wait budget."""

    status: Literal["running"] = "running"
    job_id: str
    message: str = RUNNING_MESSAGE


class ErrorDetail(BaseModel):
    type: str = Field(description=f"One of: {', '.join(sorted(ERROR_TYPES))}.")
    message: str


class ToolFailure(BaseModel):
    """A failed call's answer (``isError: true``), as text."""

    error: ErrorDetail


def guarded(fn: Callable[P, Awaitable[Any]]) -> Callable[P, Awaitable[Any]]:
    """``fn`` answering :class:`Running` for a job that outlasts the wait, and an error result
    (:func:`error_result`) for any failure: never the SDK's own error path, which would label a
    failure of ours a validation error."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> Any:
        try:
            return await fn(*args, **kwargs)
        except JobStillRunning as exc:
            return Running(job_id=exc.job_id)
        except LmsError as exc:
            log.info("tool.error", tool=fn.__name__, type=exc.type, message=exc.message)
            return error_result(exc)
        except Exception:
            log.exception("tool.unexpected_error", tool=fn.__name__)
            return error_result(InternalError())

    return wrapper


def _from_sdk_text(text: str) -> LmsError:
    if text.startswith("Unknown tool:"):
        return NotFoundError(text)
    if text.startswith(_SDK_PREFIX) and ": " in text:
        # The SDK's own wording for arguments that fail the tool's input schema.
        name, _, detail = text[len(_SDK_PREFIX) :].partition(": ")
        lines = [line.strip() for line in detail.splitlines() if line.strip()]
        lines = [line for line in lines if not line.startswith("For further information")]
        # pydantic's "[type=..., input_value=..., input_type=...]" tails echo the input back.
        lines = [re.sub(r"\s*\[type=[^\]]*\]$", "", line) for line in lines]
        return ValidationError(f"Invalid arguments for {name}: " + " ".join(lines))
    return InternalError()


class ToolErrorMiddleware:
    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        # By now the result is shaped for the wire: a dict in the protocol's own names.
        if ctx.method != "tools/call" or not isinstance(result, dict) or not result.get("isError"):
            return result
        if ERROR_META_KEY in (result.get("_meta") or {}):
            return result
        blocks = result.get("content") or []
        text = "".join(
            str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text"
        )
        return error_result(_from_sdk_text(text)).model_dump(by_alias=True, mode="json", exclude_none=True)
