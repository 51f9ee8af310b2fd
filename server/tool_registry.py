"""How tools are declared: :func:`tool` records a module-level function as a tool, and
:func:`register` adds the tools of a list of modules to a server.

A tool is an ``async def`` named like the tool, whose return annotation is its answer: a pydantic
model, or a union of them. Registered, it is guarded (``server.tool_errors``) and its answer is
turned into the tool result here, so its output schema and its text stay in one place:

- ``outputSchema`` is an object schema whose ``anyOf`` admits the answer, ``Running`` (unless the
  tool is ``instant``) and ``ToolFailure``;
- ``structuredContent`` is the answer's JSON, never wrapped: Claude Code shows the model that
  JSON whenever it is present, in place of the text. Its MCP client (as the Python SDK's) checks
  it against ``outputSchema``, formats included (a time must carry its offset), and refuses a
  result that has a schema but no structured content, unless it is an error;
- the text is the same JSON, indented by two (the SDK's own rendering of a result), or what the
  answer writes itself (``answer_text()``: the hook tools' answers, read by Claude Code's hooks).
"""

from __future__ import annotations

import functools
import inspect
import operator
import types
import typing
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Annotated, Any, Protocol, TypeVar, Union, runtime_checkable

import pydantic_core
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, RootModel

from learning_memory.server.tool_errors import Running, ToolFailure, guarded

F = TypeVar("F", bound=Callable[..., Awaitable[BaseModel]])


@dataclass(frozen=True)
class Declared:
    fn: Callable[..., Awaitable[BaseModel]]
    name: str
    description: str
    instant: bool
    omit_none: bool


# Filled as tool modules are imported (``server.tools`` imports them all).
DECLARED: dict[str, Declared] = {}


def tool(name: str, *, description: str, instant: bool = False, omit_none: bool = False) -> Callable[[F], F]:
    """Declare ``fn`` as the tool ``name``; ``fn`` itself is returned unchanged.

    ``instant``: the tool answers without waiting on a job (or within a budget, failing open),
    so it never answers "running". ``omit_none``: fields that are None, its nested models' too,
    are left out of the answer (``get_job_status``)."""

    def declare(fn: F) -> F:
        if name in DECLARED and DECLARED[name].fn is not fn:
            raise ValueError(f"tool {name!r} is declared twice")
        DECLARED[name] = Declared(fn, name, description, instant, omit_none)
        return fn

    return declare


@runtime_checkable
class WritesOwnText(Protocol):
    def answer_text(self, structured: dict[str, Any]) -> str: ...


def answer_arms(fn: Callable[..., Any]) -> tuple[Any, ...]:
    """The models ``fn`` answers with (its return annotation, a model or a union of them)."""
    returns = inspect.signature(fn, eval_str=True).return_annotation
    if typing.get_origin(returns) in (Union, types.UnionType):
        return typing.get_args(returns)
    return (returns,)


def output_model(declared: Declared) -> type[BaseModel]:
    """The model whose schema is the tool's ``outputSchema`` (an object with ``anyOf`` the shapes
    it can answer) and against which the SDK checks each structured answer."""
    arms = (*answer_arms(declared.fn), *(() if declared.instant else (Running,)), ToolFailure)
    root: Any = RootModel[functools.reduce(operator.or_, arms)]  # type: ignore[misc]
    config = ConfigDict(title=f"{declared.name} answer", json_schema_extra={"type": "object"})
    return type(f"{declared.fn.__name__}Answer", (root,), {"model_config": config, "__module__": __name__})


def as_result(answer: BaseModel | CallToolResult, *, omit_none: bool = False) -> CallToolResult:
    if isinstance(answer, CallToolResult):
        return answer  # an error result, already shaped
    structured = answer.model_dump(mode="json", by_alias=True, exclude_none=omit_none)
    if isinstance(answer, WritesOwnText):
        text = answer.answer_text(structured)
    else:
        text = pydantic_core.to_json(structured, indent=2).decode()
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def registered(declared: Declared) -> Callable[..., Awaitable[CallToolResult]]:
    """The function the SDK registers: the tool, guarded, answering a tool result. It keeps the
    tool's name and parameters (its input schema) and declares the output model as its return."""
    fn = declared.fn
    safe = guarded(fn)
    returns = Annotated[CallToolResult, output_model(declared)]

    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> CallToolResult:
        return as_result(await safe(*args, **kwargs), omit_none=declared.omit_none)

    call.__annotations__ = {**typing.get_type_hints(fn, include_extras=True), "return": returns}
    call.__signature__ = inspect.signature(fn, eval_str=True).replace(  # type: ignore[attr-defined]
        return_annotation=returns
    )
    return call


def register(server: MCPServer[Any], modules: Sequence[ModuleType]) -> None:
    """Add the tools declared in ``modules``, in their order (each module's in declaration order):
    the order ``tools/list`` shows. A tool declared in a module not given is an error."""
    names = [module.__name__ for module in modules]
    strays = sorted(d.name for d in DECLARED.values() if d.fn.__module__ not in names)
    if strays:
        raise ValueError(f"tools declared outside the modules registered: {', '.join(strays)}")
    for module_name in names:
        for declared in DECLARED.values():
            if declared.fn.__module__ == module_name:
                server.add_tool(registered(declared), name=declared.name, description=declared.description)
