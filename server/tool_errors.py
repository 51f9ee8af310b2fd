"""The single mapping from failures to MCP tool errors.

A failed call is ``isError: true`` with the text ``{"error": {"type", "message"}}``.
Two paths lead here: our tools' own failures (:func:`tool` declares every tool, guarded), and
the SDK's (arguments that fail the input schema, an unknown tool), which reach us only
as text and are rewritten by :class:`ToolErrorMiddleware`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar, cast

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent

from learning_memory.server.transport import JobStillRunning
from learning_memory.shared.errors import InternalError, LmsError, NotFoundError, ValidationError
from learning_memory.shared.log import get_logger

log = get_logger(__name__)
P = ParamSpec("P")
F = TypeVar("F", bound=Callable[..., Awaitable[Any]])
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


def still_running(job_id: str) -> dict[str, Any]:
    return {
        "status": "running",
        "job_id": job_id,
        "message": "The job is still running; call get_job_status with this job_id for progress and result.",
    }


def guarded(fn: Callable[P, Awaitable[Any]]) -> Callable[P, Awaitable[Any]]:
    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> Any:
        try:
            return await fn(*args, **kwargs)
        except JobStillRunning as exc:
            return still_running(exc.job_id)
        except LmsError as exc:
            log.info("tool.error", tool=fn.__name__, type=exc.type, message=exc.message)
            return error_result(exc)
        except Exception:
            log.exception("tool.unexpected_error", tool=fn.__name__)
            return error_result(InternalError())

    return wrapper


def tool(server: MCPServer[Any], *, name: str, description: str) -> Callable[[F], F]:
    """Register ``fn`` as the tool ``name``, guarded: the one way our tools are declared, so none
    can reach the SDK's own error path (which would label its failure a validation error)."""

    def register(fn: F) -> F:
        wrapped = cast(F, guarded(fn))
        server.tool(name=name, description=description)(wrapped)
        return wrapped

    return register


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
