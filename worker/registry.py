"""Job implementations by name, and the one function that runs a job into its result envelope.

The envelope is what crosses Redis (or stays in-process in inline mode):
``{"ok": <response>}`` or ``{"error": {"type", "message"}}``. Domain errors are
results, not crashes; anything else propagates so the caller logs a traceback.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pydantic

from learning_memory.shared.contracts import SPECS_BY_NAME
from learning_memory.shared.errors import LmsError, ValidationError
from learning_memory.shared.jobs import JobSpec
from learning_memory.worker.services import JobRun

Impl = Callable[[JobRun, Any], Awaitable[pydantic.BaseModel]]
F = TypeVar("F", bound=Impl)

_IMPLEMENTATIONS: dict[str, Impl] = {}


def job(spec: JobSpec[Any, Any]) -> Callable[[F], F]:
    """Register ``fn`` as the implementation of ``spec``."""

    def register(fn: F) -> F:
        if spec.name in _IMPLEMENTATIONS:
            raise RuntimeError(f"job {spec.name!r} registered twice")
        _IMPLEMENTATIONS[spec.name] = fn
        return fn

    return register


def implementations() -> dict[str, Impl]:
    import learning_memory.worker.jobs  # noqa: F401  (registers every job module)

    missing = set(SPECS_BY_NAME) - set(_IMPLEMENTATIONS)
    if missing:
        raise RuntimeError(f"job specs without an implementation: {sorted(missing)}")
    return dict(_IMPLEMENTATIONS)


async def execute(spec: JobSpec[Any, Any], payload: Any, run: JobRun) -> dict[str, Any]:
    impl = implementations()[spec.name]
    try:
        request = spec.request.model_validate(payload)
    except pydantic.ValidationError as exc:
        details = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'request'}: {e['msg']}" for e in exc.errors())
        return ValidationError(f"invalid {spec.name} request: {details}").to_payload()
    try:
        response = await impl(run, request)
    except LmsError as exc:
        return exc.to_payload()
    return {"ok": response.model_dump(mode="json")}
