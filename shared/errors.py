"""The one error tree shared by server and worker.

::

    LmsError                      internal_error (base; never shown with its own text)
     ├── ValidationError          validation_error   bad input the model can correct
     ├── NotFoundError            not_found          unknown id, no active entry, ...
     ├── InsufficientDataError    insufficient_data  too few items to cluster, ...
     ├── StorageError             storage_error      vector store / SQLite failed
     ├── EmbeddingError           embedding_error    the model could not embed
     ├── GitError                 git_error          not a repository, bad ref, ...
     ├── UnavailableError         unavailable        Redis or the worker cannot be reached
     ├── JobTimeoutError          timeout            a job ran past its time limit
     └── InternalError            internal_error     a bug; details stay in the log

Errors cross Redis as ``{"error": {"type", "message"}}`` (the same shape a tool
error has), and :func:`from_payload` turns that back into the right class.
"""

from __future__ import annotations

from typing import Any, ClassVar


class LmsError(Exception):
    type: ClassVar[str] = "internal_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_payload(self) -> dict[str, dict[str, str]]:
        return {"error": {"type": self.type, "message": self.message}}


class ValidationError(LmsError):
    type = "validation_error"


class NotFoundError(LmsError):
    type = "not_found"


class InsufficientDataError(LmsError):
    type = "insufficient_data"


class StorageError(LmsError):
    type = "storage_error"


class EmbeddingError(LmsError):
    type = "embedding_error"


class GitError(LmsError):
    type = "git_error"


class UnavailableError(LmsError):
    type = "unavailable"


class JobTimeoutError(LmsError):
    type = "timeout"


class InternalError(LmsError):
    type = "internal_error"

    def __init__(self, message: str = "Internal server error") -> None:
        super().__init__(message)


_BY_TYPE: dict[str, type[LmsError]] = {
    cls.type: cls
    for cls in (
        ValidationError,
        NotFoundError,
        InsufficientDataError,
        StorageError,
        EmbeddingError,
        GitError,
        UnavailableError,
        JobTimeoutError,
        InternalError,
    )
}
ERROR_TYPES = frozenset(_BY_TYPE)


def from_payload(payload: Any) -> LmsError:
    """Rebuild an error from ``{"error": {"type", "message"}}``; anything else is internal."""
    try:
        body = payload["error"]
        cls = _BY_TYPE[body["type"]]
        return cls(str(body["message"]))
    except (KeyError, TypeError):
        return InternalError()
