"""What the server and the worker agree on: settings, errors, job contracts, Redis keys."""

from __future__ import annotations


def __getattr__(name: str) -> str:
    # Computed on first use: importlib.metadata costs milliseconds that the stdio front and the
    # SessionStart hook, which import this package first, should not pay.
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("learning-memory-server")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0.0.0"
