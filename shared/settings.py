"""Settings, read once from ``LMS_*`` environment variables.

A bad value must stop start-up with a message that names the variable, so
:func:`load_settings` turns pydantic's error into a :class:`ConfigError`.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from learning_memory.shared.paths import capture_dir, default_data_dir, default_models_dir

ENV_PREFIX = "LMS_"
QueueMode = Literal["auto", "arq", "inline"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
EmbeddingRuntime = Literal["onnx", "torch"]
SharedStateMode = Literal["auto", "local", "redis"]


class ConfigError(Exception):
    """The environment holds a value we cannot start with."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    redis_url: str = "redis://127.0.0.1:6379/0"
    queue: QueueMode = "auto"
    data_dir: Path = Field(default_factory=default_data_dir)
    journal_dir: Path = Path(".claude/journal")
    qdrant_url: str | None = None
    # Sent to that server on every request (Qdrant's api-key header).
    qdrant_api_key: SecretStr | None = None
    embedding_model: str = "all-MiniLM-L6-v2"
    # The model on ONNX Runtime (exported once into models_dir, checked against torch; torch if
    # that fails), or on torch.
    embedding_runtime: EmbeddingRuntime = "onnx"
    # Vectors kept in the embedding cache (so re-indexing unchanged text costs no model time);
    # ~1.6 KB each at 384 dimensions, the least recently used go first beyond this.
    embedding_cache_max_entries: int = Field(default=200_000, ge=1_000, le=100_000_000)
    # Where workers keep the embedding cache, the code index's keyword rows and file hashes, and
    # the commit watermarks: each in its own SQLite (local), or in Redis, shared by every worker of
    # the namespace, so that any worker answers a search on a project another indexed and nothing
    # is embedded twice. auto: Redis when the vectors are on a Qdrant server, else local.
    shared_state: SharedStateMode = "auto"
    # Exported models, shared by every data folder (an export takes a subprocess with torch).
    models_dir: Path = Field(default_factory=default_models_dir)
    repo_path: Path = Field(default_factory=Path.cwd)
    # Code units get the model's vectors in the background after index_codebase (dense matches in
    # search_code, find_similar_code); false keeps code search to keywords and the code ranking.
    code_vectors: bool = True
    log_level: LogLevel = "INFO"

    # Prefix of every Redis key and queue we own, so installations (and test runs)
    # can share one Redis without seeing each other's jobs.
    namespace: str = Field(default="lms", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    auth_token: SecretStr | None = None
    autostart_worker: bool = True
    # How long a tool waits for its job before answering with a job id instead.
    tool_wait_s: float = Field(default=45.0, gt=0, le=3600)
    # How long a job may sit with no live worker before the tool says so.
    worker_start_grace_s: float = Field(default=30.0, gt=0, le=600)
    heartbeat_interval_s: float = Field(default=2.0, gt=0, le=60)
    # A worker a server started for itself exits after this long with no job, no vector left to
    # fill and no live session; the next session starts one again. An operator's worker stays.
    worker_idle_exit_s: float = Field(default=900.0, gt=0, le=7 * 24 * 3600)
    # How often the server retries storing resolved GHAP entries that could not be stored yet.
    outbox_drain_interval_s: float = Field(default=30.0, gt=0, le=3600)
    interactive_concurrency: int = Field(default=8, ge=1, le=256)
    batch_concurrency: int = Field(default=1, ge=1, le=64)
    # Learning: hdbscan's parameters, k of the value threshold (mean + k·std of the
    # members' distances to the centroid), and the dimensions vectors are reduced to (by PCA)
    # before hdbscan, which slows sharply with dimension; 0 clusters the full vectors.
    min_cluster_size: int = Field(default=5, ge=2, le=10_000)
    min_samples: int = Field(default=3, ge=1, le=10_000)
    value_threshold_k: float = Field(default=1.0, ge=0.0, le=10.0)
    cluster_dimensions: int = Field(default=16, ge=0, le=4096)
    # A value's weight halves with each this many days without an experience that bears it out.
    value_half_life_days: float = Field(default=90.0, gt=0, le=36_500)
    # Claude Code hooks: the similarity (cosine) the best experience, value or memory needs before
    # anything is put in front of the agent unasked (others ranked with it may stand a little
    # lower), and how long a hook may take before it answers with nothing.
    context_min_score: float = Field(default=0.38, ge=0.0, le=1.0)
    premortem_min_score: float = Field(default=0.5, ge=0.0, le=1.0)
    hook_budget_s: float = Field(default=0.8, gt=0, le=10)
    # The hooks keep a log of each session (commands, outcomes, edits, commits) and learn from it;
    # false: they record nothing and only the agent's own GHAP entries are learned from.
    capture: bool = True
    # Days a session's log is kept after its last event (what was learned from it stays).
    capture_keep_days: int = Field(default=90, ge=1, le=36_500)
    # Small state the server keeps across restarts (refinement loops); unset: <data_dir>/state.
    state_dir: Path | None = None

    @field_validator("redis_url")
    @classmethod
    def _redis_scheme(cls, value: str) -> str:
        if not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        return value

    @field_validator("qdrant_url")
    @classmethod
    def _qdrant_scheme(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        assert value is not None
        if not value.startswith(("http://", "https://", ":memory:")):
            raise ValueError("must be an http(s):// URL of a Qdrant server")
        return value

    def to_env(self) -> dict[str, str]:
        """These settings as ``LMS_*`` variables, for a child process to read back."""
        env: dict[str, str] = {}
        for name, value in self.model_dump().items():
            if value is None:
                continue
            if isinstance(value, SecretStr):
                value = value.get_secret_value()
            env[f"{ENV_PREFIX}{name.upper()}"] = str(value).lower() if isinstance(value, bool) else str(value)
        return env

    @property
    def shares_state(self) -> bool:
        """Whether workers keep the embedding cache and the code index in Redis, once connected."""
        return self.shared_state == "redis" or (self.shared_state == "auto" and self.qdrant_url is not None)

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "logs"

    @property
    def heartbeat_ttl_s(self) -> float:
        # Several missed beats before a worker counts as dead: a busy loop is not a dead one.
        return self.heartbeat_interval_s * 5

    @property
    def state_folder(self) -> Path:
        return self.state_dir or self.data_dir / "state"

    @property
    def capture_dir(self) -> Path:
        """Session logs and the fix index: shared by every worktree and clone of a repository."""
        return capture_dir(self.data_dir)


def config_error(exc: ValidationError, prefix: str) -> ConfigError:
    """One message naming every bad environment variable (``prefix`` + field) and its value."""
    problems = []
    for err in exc.errors():
        field = ".".join(str(part) for part in err["loc"])
        got = err.get("input")
        shown = f" (got {got!r})" if got is not None and not isinstance(got, dict) else ""
        problems.append(f"{prefix}{field.upper()}: {err['msg']}{shown}")
    return ConfigError("Invalid configuration: " + "; ".join(problems))


def load_settings(**overrides: object) -> Settings:
    """Read settings from the environment; raise ConfigError naming the bad variables."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise config_error(exc, ENV_PREFIX) from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (read once)."""
    return load_settings()
