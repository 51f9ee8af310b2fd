"""Refinement-loop limits, read once from ``FSDD_LOOP_*`` variables.

Not ``LMS_*``: the refinement-loop tools keep the behaviour and the variable names of the
spec-driven workflow's loop server they stand in for (its plan, spec, build_plan and build_code
loops), so a set-up that already tunes its loops carries over unchanged.

Like the ``LMS_*`` settings, a value out of range stops start-up with a message naming the
variable: :func:`load_loop_settings` turns pydantic's error into a :class:`ConfigError`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal, get_args

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from learning_memory.shared.settings import config_error

LOOP_ENV_PREFIX = "FSDD_LOOP_"
LoopType = Literal["plan", "spec", "build_plan", "build_code"]
LOOP_TYPES: tuple[str, ...] = get_args(LoopType)


class LoopSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=LOOP_ENV_PREFIX, extra="ignore", frozen=True)

    plan_threshold: int = Field(default=85, ge=1, le=100)
    spec_threshold: int = Field(default=85, ge=1, le=100)
    build_plan_threshold: int = Field(default=80, ge=1, le=100)
    build_code_threshold: int = Field(default=95, ge=1, le=100)
    plan_max_iterations: int = Field(default=5, ge=1, le=20)
    spec_max_iterations: int = Field(default=5, ge=1, le=20)
    build_plan_max_iterations: int = Field(default=5, ge=1, le=20)
    build_code_max_iterations: int = Field(default=5, ge=1, le=20)

    def threshold(self, loop_type: LoopType) -> int:
        return int(getattr(self, f"{loop_type}_threshold"))

    def max_iterations(self, loop_type: LoopType) -> int:
        return int(getattr(self, f"{loop_type}_max_iterations"))


def load_loop_settings(**overrides: object) -> LoopSettings:
    """Read the loop limits from the environment; raise ConfigError naming the bad variables."""
    try:
        return LoopSettings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise config_error(exc, LOOP_ENV_PREFIX) from None


@lru_cache(maxsize=1)
def get_loop_settings() -> LoopSettings:
    """The process-wide loop limits (read once)."""
    return load_loop_settings()
